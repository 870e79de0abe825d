//! Profiles, the spec grammar, TOML link files, and the errors for bad input.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;
use skywave_sim::config::{IP_UDP_HEADER, TxQueue};
use skywave_sim::{
    BufferSize, ConfigError, DirConfig, Duplex, GilbertElliott, LinkConfig, LinkKind, LossModel,
    PROFILES, Side,
};

#[test]
fn every_listed_profile_builds() {
    for p in PROFILES {
        let name = p
            .name
            .replace("RTT-LOSS", "180-5")
            .replace("sfSF-BW", "sf9-125");
        let cfg = LinkConfig::profile(&name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(cfg.name, name);
    }
}

#[test]
fn profiles_match_the_design_table() {
    let hf = LinkConfig::profile("hf-modem").unwrap();
    assert_eq!(hf.kind, LinkKind::Stream);
    assert_eq!(hf.duplex, Duplex::Half);
    assert_eq!(hf.up.rate_bps, 1475);
    assert_eq!(hf.up.delay, Duration::from_secs(4));
    assert_eq!(hf.turnaround, Duration::from_secs(2));
    assert_eq!(hf.buffer_bytes(Side::A), 1024);
    assert_eq!(hf.redial, Duration::from_secs(60));
    assert_eq!(
        LinkConfig::profile("hf-modem-slow").unwrap().up.delay,
        Duration::from_secs(8)
    );
    let uhf = LinkConfig::profile("uhf-csma-lossy").unwrap();
    assert_eq!(uhf.kind, LinkKind::Csma);
    assert_eq!((uhf.up.mtu, uhf.up.overhead), (223, 8));
    assert_eq!(uhf.up.loss, LossModel::Bernoulli(0.1));
    assert_eq!(uhf.buffer_bytes(Side::A), 4096);
    let sat = LinkConfig::profile("satellite").unwrap();
    assert_eq!(
        (sat.up.rate_bps, sat.down.rate_bps),
        (2_000_000, 20_000_000)
    );
    assert_eq!(sat.up.delay, Duration::from_millis(300));
    let cell = LinkConfig::profile("cellular").unwrap();
    assert_eq!(
        (cell.up.mtu, cell.up.loss),
        (1400, LossModel::Bernoulli(0.03))
    );
    let f = LinkConfig::profile("formant-180-5").unwrap();
    assert_eq!(f.up.rate_bps, 10_000_000);
    assert_eq!(f.up.delay, Duration::from_millis(90));
    assert_eq!(f.up.loss, LossModel::Bernoulli(0.05));
    assert_eq!(
        LinkConfig::profile("formant-20-0").unwrap().up.loss,
        LossModel::None
    );
    let lan = LinkConfig::profile("lan").unwrap();
    assert_eq!(lan.up.delay, Duration::from_micros(50));
    assert_eq!(lan.buffer_bytes(Side::A), 12_500);
}

#[test]
fn the_issue_example_spec_parses() {
    let c = LinkConfig::parse_spec("rate=1475bps,delay=4s,duplex=half,turnaround=2s,buffer=1KiB")
        .unwrap();
    assert_eq!(c.up.rate_bps, 1475);
    assert_eq!(c.down.delay, Duration::from_secs(4));
    assert_eq!(c.duplex, Duplex::Half);
    assert_eq!(c.turnaround, Duration::from_secs(2));
    assert_eq!(c.up.buffer, BufferSize::Bytes(1024));
}

#[test]
fn spec_starts_from_a_profile_and_overrides() {
    let c = LinkConfig::parse_spec("profile=lfn,loss=2%,jitter=10ms,corr=25%").unwrap();
    assert_eq!(c.up.rate_bps, 30_000_000);
    assert_eq!(c.up.loss, LossModel::Bernoulli(0.02));
    assert_eq!(c.down.jitter, Duration::from_millis(10));
    assert_eq!(c.up.jitter_corr, 0.25);
    assert_eq!(c.name, "profile=lfn,loss=2%,jitter=10ms,corr=25%");
}

#[test]
fn gilbert_elliott_as_a_list_or_named_keys() {
    let a = LinkConfig::parse_spec("rate=1Mbps,ge=1%,30%,0.1,1,delay=5ms").unwrap();
    let b = LinkConfig::parse_spec("rate=1Mbps,ge-p=1%,ge-r=30%,ge-h=0.1,delay=5ms").unwrap();
    let ge = LossModel::GilbertElliott(GilbertElliott {
        p: 0.01,
        r: 0.3,
        h: 0.1,
        k: 1.0,
    });
    assert_eq!(a.up.loss, ge);
    assert_eq!(b.up.loss, ge);
    assert_eq!(a.up.delay, Duration::from_millis(5));
}

#[test]
fn asymmetric_and_per_direction_keys() {
    let c = LinkConfig::parse_spec("up=2Mbps,down=20Mbps,delay=300ms,up.loss=1%,down.mtu=9000")
        .unwrap();
    assert_eq!((c.up.rate_bps, c.down.rate_bps), (2_000_000, 20_000_000));
    assert_eq!(
        (c.up.loss, c.down.loss),
        (LossModel::Bernoulli(0.01), LossModel::None)
    );
    assert_eq!((c.up.mtu, c.down.mtu), (1500, 9000));
    assert_eq!(c.capacity_bps(), 20_000_000);
}

#[test]
fn units() {
    let c = LinkConfig::parse_spec(
        "rate=1.5Mbit/s,delay=1.5s,jitter=250us,mtu=9KB,buffer=0.5bdp,reorder=0.5%,reorder-delay=2ms",
    )
    .unwrap();
    assert_eq!(c.up.rate_bps, 1_500_000);
    assert_eq!(c.up.delay, Duration::from_millis(1500));
    assert_eq!(c.up.jitter, Duration::from_micros(250));
    assert_eq!(c.up.mtu, 9000);
    assert_eq!(c.up.buffer, BufferSize::Bdp(0.5));
    assert_eq!(c.up.reorder, 0.005);
    assert_eq!(c.up.reorder_delay, Duration::from_millis(2));
}

fn expect_err(spec: &str) -> String {
    let e = LinkConfig::parse_spec(spec).expect_err(spec);
    e.to_string()
}

#[test]
fn bad_spec_errors_name_the_field_and_accepted_values() {
    let e = expect_err("rate=12parsecs");
    assert!(
        e.contains("'rate'") && e.contains("kbps") && e.contains("12parsecs"),
        "{e}"
    );
    let e = expect_err("rate=1Mbps,colour=blue");
    assert!(
        e.contains("'colour'") && e.contains("jitter") && e.contains("ge-p"),
        "{e}"
    );
    let e = expect_err("rate=1Mbps,delay=4");
    assert!(e.contains("'delay'") && e.contains("ms"), "{e}");
    let e = expect_err("rate=1Mbps,loss=150%");
    assert!(e.contains("'loss'") && e.contains("probability"), "{e}");
    let e = expect_err("rate=1Mbps,duplex=quarter");
    assert!(e.contains("'duplex'") && e.contains("full, half"), "{e}");
    let e = expect_err("rate=1Mbps,kind=smoke");
    assert!(
        e.contains("'kind'") && e.contains("frame, stream, csma"),
        "{e}"
    );
    let e = expect_err("rate=1Mbps,ge=1%");
    assert!(e.contains("'ge'") && e.contains("p,r"), "{e}");
    let e = expect_err("delay=4s");
    assert!(e.contains("'rate'") && e.contains("profile="), "{e}");
    let e = expect_err("rate=1Mbps,buffer=lots");
    assert!(e.contains("'buffer'") && e.contains("bdp"), "{e}");
    let e = expect_err("rate=1Mbps,up.colour=1");
    assert!(e.contains("'up.colour'"), "{e}");
    let e = expect_err("rate=1Mbps,4s");
    assert!(e.contains("key=value"), "{e}");
    let e = expect_err("profile=uhf-csma,down.loss=1%");
    assert!(e.contains("'down'") && e.contains("symmetric"), "{e}");
    let e = expect_err("rate=1Mbps,profile=lfn");
    assert!(e.contains("'profile'") && e.contains("first"), "{e}");
    let e = expect_err("rate=0bps");
    assert!(e.contains("rate"), "{e}");
}

#[test]
fn bad_profile_names_list_the_profiles() {
    for name in ["hf", "formant-x-5", "formant-180", "formant-180-500"] {
        let e = LinkConfig::profile(name).unwrap_err();
        assert!(matches!(e, ConfigError::UnknownProfile { .. }), "{name}");
        let s = e.to_string();
        assert!(
            s.contains(name) && s.contains("hf-modem") && s.contains("formant-RTT-LOSS"),
            "{s}"
        );
    }
    let e = expect_err("profile=nope,loss=1%");
    assert!(e.contains("'nope'") && e.contains("lan"), "{e}");
}

#[test]
fn lookup_resolves_specs_custom_names_and_profiles() {
    let mut custom = BTreeMap::new();
    custom.insert(
        "mine".to_string(),
        LinkConfig::parse_spec("rate=9600bps").unwrap(),
    );
    assert_eq!(
        LinkConfig::lookup("mine", &custom).unwrap().up.rate_bps,
        9600
    );
    assert_eq!(
        LinkConfig::lookup("lan", &custom).unwrap().up.rate_bps,
        1_000_000_000
    );
    assert_eq!(
        LinkConfig::lookup("rate=1kbps", &custom)
            .unwrap()
            .up
            .rate_bps,
        1000
    );
    assert!("nope".parse::<LinkConfig>().is_err());
}

const TOML: &str = r#"
[links.my-hf]
profile = "hf-modem"
delay = "6s"
over = "30s"

[links.sat-lossy]
kind = "frame"
rate = "2Mbps"
delay = "280ms"
ge = ["1%", "30%"]
[links.sat-lossy.down]
rate = "20Mbps"

[links.mesh]
profile = "uhf-csma"
cw-min = 32
crc = true
"#;

#[test]
fn toml_file_defines_named_links() {
    let links = LinkConfig::parse_toml(TOML).unwrap();
    assert_eq!(links.len(), 3);
    let hf = &links["my-hf"];
    assert_eq!(hf.kind, LinkKind::Stream);
    assert_eq!(hf.up.delay, Duration::from_secs(6));
    assert_eq!(hf.max_over, Some(Duration::from_secs(30)));
    let sat = &links["sat-lossy"];
    assert_eq!(
        (sat.up.rate_bps, sat.down.rate_bps),
        (2_000_000, 20_000_000)
    );
    assert!(matches!(sat.up.loss, LossModel::GilbertElliott(_)));
    assert_eq!(links["mesh"].csma.cw_min, 32);
    assert!(links["mesh"].crc);
}

#[test]
fn bad_toml_errors_name_the_field() {
    let e = LinkConfig::parse_toml("[links.x]\nrate = \"fast\"\n").unwrap_err();
    let s = e.to_string();
    assert!(s.contains("'links.x.rate'") && s.contains("bps"), "{s}");
    let e = LinkConfig::parse_toml("[links.x]\nrate = \"1Mbps\"\nspeed = 3\n").unwrap_err();
    let s = e.to_string();
    assert!(
        s.contains("'links.x.speed'") && s.contains("accepted fields") && s.contains("ge-p"),
        "{s}"
    );
    let e = LinkConfig::parse_toml("[link.x]\nrate = \"1Mbps\"\n").unwrap_err();
    assert!(
        e.to_string().contains("'link'") && e.to_string().contains("links"),
        "{e}"
    );
    let e = LinkConfig::parse_toml("[links.x\nrate = 1").unwrap_err();
    assert!(matches!(e, ConfigError::Toml { .. }), "{e}");
    let e = LinkConfig::parse_toml("[links.x]\nprofile = \"moon\"\n").unwrap_err();
    assert!(
        e.to_string().contains("'moon'") && e.to_string().contains("satellite"),
        "{e}"
    );
    let e = LinkConfig::parse_toml("[links.x]\nprofile = \"lan\"\nup = { loss = \"2\" }\n")
        .unwrap_err();
    assert!(e.to_string().contains("'links.x.up.loss'"), "{e}");
    let e = LinkConfig::parse_toml("[links.x]\nrate = \"1Mbps\"\nloss = 0.1\nge-p = 0.1\n")
        .unwrap_err();
    assert!(
        e.to_string().contains("'links.x.loss'") && e.to_string().contains("ge-p"),
        "{e}"
    );
}

fn prob() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        0.0..=1.0f64,
        (0u32..=100).prop_map(|p| f64::from(p) / 100.0)
    ]
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        (0u64..10_000).prop_map(Duration::from_millis),
        (0u64..u64::from(u32::MAX)).prop_map(Duration::from_nanos),
    ]
}

fn dir() -> impl Strategy<Value = DirConfig> {
    let loss = prop_oneof![
        Just(LossModel::None),
        prob()
            .prop_filter("nonzero", |p| *p > 0.0)
            .prop_map(LossModel::Bernoulli),
        (prob(), prob(), prob(), prob())
            .prop_map(|(p, r, h, k)| LossModel::GilbertElliott(GilbertElliott { p, r, h, k })),
    ];
    let buffer = prop_oneof![
        (1u64..1 << 30).prop_map(BufferSize::Bytes),
        (1u32..400).prop_map(|k| BufferSize::Bdp(f64::from(k) / 4.0)),
    ];
    (
        (1u64..10_000_000_000, duration(), duration(), prob(), loss),
        (
            prob(),
            duration(),
            prob(),
            prob(),
            1usize..65536,
            0usize..64,
            0usize..64,
            buffer,
        ),
    )
        .prop_map(
            |(
                (rate_bps, delay, jitter, jitter_corr, loss),
                (reorder, rd, dup, cor, mtu, oh, header, buffer),
            )| {
                DirConfig {
                    rate_bps,
                    delay,
                    jitter,
                    jitter_corr,
                    loss,
                    reorder,
                    reorder_delay: rd,
                    duplicate: dup,
                    corrupt: cor,
                    mtu,
                    overhead: oh,
                    // Below the MTU; the round-trip test zeroes it for streams.
                    header: header.min(mtu - 1),
                    buffer,
                }
            },
        )
}

proptest! {
    #[test]
    fn to_spec_round_trips(
        up in dir(),
        down in dir(),
        stream in any::<bool>(),
        half in any::<bool>(),
        turnaround in duration(),
        over in proptest::option::of(duration()),
        chunk in 1usize..4096,
        crc in any::<bool>(),
    ) {
        let (mut up, mut down) = (up, down);
        if stream {
            up.header = 0;
            down.header = 0;
        }
        let cfg = LinkConfig {
            name: String::new(),
            kind: if stream { LinkKind::Stream } else { LinkKind::Frame },
            duplex: if half { Duplex::Half } else { Duplex::Full },
            turnaround,
            max_over: over,
            redial: Duration::from_secs(60),
            chunk,
            crc,
            csma: Default::default(),
            lora: None,
            duty: None,
            up,
            down,
        };
        let spec = cfg.to_spec();
        let mut back = LinkConfig::parse_spec(&spec).map_err(|e| TestCaseError::fail(format!("{spec}: {e}")))?;
        back.name = String::new();
        prop_assert_eq!(back, cfg, "{}", spec);
    }

    #[test]
    fn spec_parser_never_panics(s in "[a-z.=,%0-9-]{0,60}") {
        let _ = LinkConfig::parse_spec(&s);
    }
}

#[test]
fn csma_specs_round_trip_with_and_without_a_transmit_queue() {
    for (spec, q) in [
        ("profile=uhf-csma", TxQueue::Bytes),
        ("profile=uhf-csma,txqueue=bytes", TxQueue::Bytes),
        ("profile=uhf-csma,txqueue=none", TxQueue::None),
        ("profile=uhf-csma,txqueue=1,buffer=256B", TxQueue::Frames(1)),
        (
            "profile=uhf-csma-lossy,txqueue=3,cw-min=8",
            TxQueue::Frames(3),
        ),
        (
            "kind=csma,rate=9600bps,mtu=255,overhead=12,txqueue=1",
            TxQueue::Frames(1),
        ),
    ] {
        let cfg = LinkConfig::parse_spec(spec).unwrap();
        assert_eq!(cfg.csma.txqueue, q, "{spec}");
        assert_eq!(cfg.up.header, 0, "{spec}: radios have no IP header");
        let out = cfg.to_spec();
        // The default is not written, so csma specs read as they did before the option.
        assert_eq!(out.contains("txqueue="), q != TxQueue::Bytes, "{out}");
        assert!(!out.contains("header="), "{out}");
        let mut back = LinkConfig::parse_spec(&out).unwrap();
        back.name = cfg.name.clone();
        assert_eq!(back, cfg, "{out}");
    }
    assert!(
        LinkConfig::parse_spec("profile=uhf-csma,txqueue=none")
            .unwrap()
            .to_spec()
            .contains(",txqueue=none,")
    );
}

#[test]
fn txqueue_in_a_toml_file() {
    let links = LinkConfig::parse_toml(
        "[links.fake]\nprofile = \"uhf-csma\"\ntxqueue = \"none\"\n\
         [links.one]\nprofile = \"uhf-csma\"\ntxqueue = 1\n",
    )
    .unwrap();
    assert_eq!(links["fake"].csma.txqueue, TxQueue::None);
    assert_eq!(links["one"].csma.txqueue, TxQueue::Frames(1));
    let e = LinkConfig::parse_toml("[links.x]\nprofile = \"uhf-csma\"\ntxqueue = -1\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("'links.x.txqueue'") && e.contains("none"), "{e}");
}

#[test]
fn bad_txqueue_values_name_the_field_and_the_accepted_values() {
    for v in ["banana", "0", "-1", "1.5", ""] {
        let e = expect_err(&format!("profile=uhf-csma,txqueue={v}"));
        assert!(
            e.contains("'txqueue'") && e.contains("none") && e.contains("frames"),
            "{v}: {e}"
        );
    }
    let e = expect_err("profile=uhf-csma,txqueue=banana");
    assert!(e.contains("'banana'") && e.contains("bytes"), "{e}");
    let e = expect_err("rate=1Mbps,txqueue=none");
    assert!(
        e.contains("'txqueue'") && e.contains("kind csma") && e.contains("frame"),
        "{e}"
    );
    let e = expect_err("profile=hf-modem,txqueue=2");
    assert!(e.contains("'txqueue'") && e.contains("stream"), "{e}");
    // The default is accepted for any kind.
    LinkConfig::parse_spec("rate=1Mbps,txqueue=bytes").unwrap();
}

#[test]
fn ip_profiles_and_frame_specs_carry_an_ip_udp_header() {
    assert_eq!(IP_UDP_HEADER, 28);
    for name in [
        "satellite",
        "cellular",
        "lfn",
        "lfn-lossy",
        "formant-180-5",
        "formant-20-0",
        "lan",
    ] {
        let c = LinkConfig::profile(name).unwrap();
        assert_eq!((c.up.header, c.down.header), (28, 28), "{name}");
        assert_eq!(c.up.max_datagram(), c.up.mtu - 28, "{name}");
    }
    assert_eq!(
        LinkConfig::profile("cellular").unwrap().up.max_datagram(),
        1372
    );
    for name in ["hf-modem", "hf-modem-slow", "uhf-csma", "uhf-csma-lossy"] {
        let c = LinkConfig::profile(name).unwrap();
        assert_eq!((c.up.header, c.down.header), (0, 0), "{name}");
    }
    // Parsed specs: frame links default to 28, radios and modems to 0.
    let header = |spec: &str| {
        let c = LinkConfig::parse_spec(spec).unwrap();
        (c.up.header, c.down.header)
    };
    assert_eq!(header("rate=1Mbps"), (28, 28));
    assert_eq!(header("rate=1Mbps,header=0B"), (0, 0));
    assert_eq!(header("rate=1Mbps,header=48"), (48, 48));
    assert_eq!(header("rate=1Mbps,up.header=48B"), (48, 28));
    assert_eq!(header("profile=lan,down.header=0"), (28, 0));
    assert_eq!(header("kind=stream,rate=1475bps"), (0, 0));
    assert_eq!(header("kind=csma,rate=9600bps"), (0, 0));
    assert_eq!(header("profile=uhf-csma,kind=frame"), (28, 28));
    assert_eq!(header("profile=lfn,kind=stream"), (0, 0));
    // Round trips, including a header of 0 on a frame link.
    for spec in [
        "profile=lfn",
        "rate=1Mbps,header=0B",
        "up=2Mbps,down=20Mbps,up.header=48B",
        "profile=satellite,mtu=576",
        "rate=10Mbps,delay=40ms,mtu=1500,header=0B",
    ] {
        let cfg = LinkConfig::parse_spec(spec).unwrap();
        let out = cfg.to_spec();
        assert!(out.contains("header="), "{out}");
        let mut back = LinkConfig::parse_spec(&out).unwrap();
        back.name = cfg.name.clone();
        assert_eq!(back, cfg, "{out}");
    }
    assert!(
        LinkConfig::profile("lfn")
            .unwrap()
            .to_spec()
            .contains(",mtu=1500B,overhead=0B,header=28B,")
    );
}

#[test]
fn bad_header_values_name_the_field() {
    let e = expect_err("rate=1Mbps,header=lots");
    assert!(e.contains("'header'") && e.contains("KiB"), "{e}");
    let e = expect_err("rate=1Mbps,mtu=1500,header=1500B");
    assert!(e.contains("'up.header'") && e.contains("mtu"), "{e}");
    let e = expect_err("profile=uhf-csma,header=28B");
    assert!(
        e.contains("header") && e.contains("kind csma") && e.contains("overhead"),
        "{e}"
    );
    let e = expect_err("profile=hf-modem,down.header=28B");
    assert!(e.contains("'down.header'") && e.contains("stream"), "{e}");
}
