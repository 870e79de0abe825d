//! The QUIC baseline over skywave-sim links: completion, goodput bounds derived from the
//! link parameters, loss recovery, determinism and bad input.

use std::time::Duration;

use skywave_baseline::quic::{self, BaselineReport, Congestion, Settings};
use skywave_sim::config::LinkConfig;
use skywave_sim::time::SimTime;
use skywave_sim::trace::TraceRecord;

const MB: u64 = 1_000_000;

fn link(spec: &str) -> LinkConfig {
    spec.parse().expect("valid link")
}

/// The fastest any protocol can deliver `bytes` A->B: one round trip before data may flow
/// (QUIC's 1-RTT handshake), the payload's serialization at the link rate, one more
/// one-way delay.
fn lower_bound_secs(cfg: &LinkConfig, bytes: u64) -> f64 {
    let d = (cfg.up.delay + cfg.down.delay).as_secs_f64();
    d + cfg.up.delay.as_secs_f64() + bytes as f64 * 8.0 / cfg.up.rate_bps as f64
}

fn assert_sane(r: &BaselineReport, cfg: &LinkConfig) {
    assert!(r.complete, "incomplete: {r:?}");
    assert_eq!(r.delivered_bytes, r.bytes);
    assert!(r.failure.is_none(), "{r:?}");
    let lb = lower_bound_secs(cfg, r.bytes);
    assert!(
        r.virtual_seconds >= lb,
        "faster than physics: {} s < {lb} s",
        r.virtual_seconds
    );
    assert!(r.goodput_bps < cfg.up.rate_bps as f64);
    // Every payload byte crossed the link at least once, inside QUIC packets.
    assert!(r.bytes_on_air > r.bytes, "{r:?}");
    let hs = r.handshake_seconds.expect("handshake completed");
    // The client sees the handshake complete after one round trip, not before.
    assert!(hs >= (cfg.up.delay + cfg.down.delay).as_secs_f64());
    assert!(hs < r.virtual_seconds);
}

#[test]
fn lan_small_transfer_completes() {
    let cfg = LinkConfig::profile("lan").unwrap();
    let r = quic::run(&cfg, 2 * MB, 1, SimTime::from_secs(10)).unwrap();
    assert_sane(&r, &cfg);
    assert_eq!(r.congestion, "bbr");
    // 2 MB take 16 ms at 1 Gbit/s; slow start from a 14.7 kB window on a 100 us RTT
    // adds well under a millisecond per doubling, so 10% of the rate is a loose floor.
    assert!(r.goodput_bps > 100e6, "{r:?}");
}

/// `lfn`: 30 Mbit/s, 230 ms RTT, BDP = queue = 862,500 B. For 12 MB the ideal time is
/// 3 x 115 ms + 3.2 s = 3.545 s (27 Mbit/s). Slow start from 14.7 kB needs
/// ceil(log2(862500 / 14720)) = 6 round trips (~1.4 s) to reach the BDP, during which
/// about 2 BDP (~0.46 s of link time) are sent: ~1 s lost, ~4.5 s in all (21 Mbit/s).
/// Above 50% of capacity (6.4 s) leaves room for recovering the overshoot into the
/// 1-BDP drop-tail queue; below it quinn would be window- or timer-limited.
#[test]
fn lfn_leaves_slow_start_above_half_capacity() {
    let cfg = LinkConfig::profile("lfn").unwrap();
    for cc in [Congestion::Bbr, Congestion::Cubic] {
        let r = quic::run_with(&cfg, 12 * MB, 1, SimTime::from_secs(60), cc).unwrap();
        assert_sane(&r, &cfg);
        assert_eq!(r.congestion, cc.as_str());
        assert!(
            r.goodput_bps > 0.5 * 30e6,
            "{cc}: {:.2} Mbit/s",
            r.goodput_bps / 1e6
        );
        assert!(
            r.settings.contains("stream_receive_window=3450000B"),
            "{}",
            r.settings
        );
    }
}

#[test]
fn lossy_links_complete() {
    // 1% loss on the long path; 3% on cellular, with the loss-sensitive controller.
    let lfn = LinkConfig::profile("lfn-lossy").unwrap();
    let r = quic::run(&lfn, 2 * MB, 3, SimTime::from_secs(60)).unwrap();
    assert_sane(&r, &lfn);
    assert!(r.lost_packets > 0 && r.resent_bytes > 0, "{r:?}");

    let cell = LinkConfig::profile("cellular").unwrap();
    let r = quic::run_with(&cell, MB, 3, SimTime::from_secs(120), Congestion::Cubic).unwrap();
    assert_sane(&r, &cell);
    assert!(r.lost_packets > 0, "{r:?}");

    // Burst loss, reordering and duplication on one link.
    let rough = link("rate=10Mbps,delay=40ms,ge=1%,30%,reorder=1%,dup=1%");
    let r = quic::run(&rough, MB, 5, SimTime::from_secs(120)).unwrap();
    assert_sane(&r, &rough);
}

/// Lengths and times of every frame event; hashes are left out because the TLS key
/// shares (and so the ciphertext) come from the OS.
fn shape(trace: &[TraceRecord]) -> Vec<(u32, u64, u32, String, u32)> {
    trace
        .iter()
        .map(|t| {
            (
                t.link,
                t.event.time.as_nanos(),
                t.event.from,
                format!("{:?}", t.event.kind),
                t.event.len,
            )
        })
        .collect()
}

#[test]
fn same_seed_same_result() {
    let cfg = LinkConfig::profile("cellular").unwrap();
    let run = |seed| {
        quic::run_traced(&cfg, 300_000, seed, SimTime::from_secs(60), Congestion::Bbr).unwrap()
    };
    let (r1, t1) = run(9);
    let (r2, t2) = run(9);
    assert_sane(&r1, &cfg);
    assert_eq!(r1, r2);
    assert!(!t1.is_empty());
    assert_eq!(shape(&t1), shape(&t2));
    // Full-sized datagrams: the link MTU less the IPv4 and UDP headers, never more.
    assert_eq!(t1.iter().map(|t| t.event.len).max(), Some(1372));
    // A different seed draws different losses.
    let (r3, t3) = run(10);
    assert_ne!(shape(&t1), shape(&t3));
    assert_ne!(r1.seed, r3.seed);
}

#[test]
fn deadline_stops_an_unfinished_transfer() {
    let cfg = LinkConfig::profile("lfn").unwrap();
    let r = quic::run(&cfg, 50 * MB, 1, SimTime::from_secs(1)).unwrap();
    assert!(!r.complete);
    assert!(r.delivered_bytes < r.bytes);
    assert!((r.virtual_seconds - 1.0).abs() < 1e-9, "{r:?}");
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let lfn = LinkConfig::profile("lfn").unwrap();
    let t = SimTime::from_secs(10);

    let e = quic::run(&lfn, 0, 1, t).unwrap_err();
    assert!(e.contains("bytes"), "{e}");

    let e = quic::run(&lfn, 1000, 1, SimTime::ZERO).unwrap_err();
    assert!(e.contains("deadline"), "{e}");

    // An IP MTU of 1227 B leaves 1199 B for a UDP payload (28 B of IPv4 and UDP headers).
    let small = link("profile=lfn,mtu=1227B");
    let e = quic::run(&small, 1000, 1, t).unwrap_err();
    assert!(e.contains("1199") && e.contains("1200"), "{e}");

    let asym = link("profile=lfn,down.mtu=576B");
    let e = quic::run(&asym, 1000, 1, t).unwrap_err();
    assert!(e.contains("548"), "{e}");

    for name in ["uhf-csma", "hf-modem"] {
        let e = quic::run(&LinkConfig::profile(name).unwrap(), 1000, 1, t).unwrap_err();
        assert!(e.contains("kind=frame"), "{name}: {e}");
    }

    let e = "cubic2".parse::<Congestion>().unwrap_err();
    assert!(e.contains("bbr, cubic, newreno"), "{e}");
}

#[test]
fn exactly_the_minimum_mtu_works() {
    // 1228 B of IP MTU: 1200 B of UDP payload.
    let cfg = link("rate=10Mbps,delay=10ms,mtu=1228B");
    let r = quic::run(&cfg, 200_000, 1, SimTime::from_secs(30)).unwrap();
    assert_sane(&r, &cfg);
    assert!(r.settings.contains("mtu=1200B"), "{}", r.settings);
}

#[test]
fn settings_follow_the_link() {
    let s = Settings::for_link(&LinkConfig::profile("lfn").unwrap(), Congestion::Bbr).unwrap();
    assert_eq!(s.bdp_bytes, 862_500);
    assert_eq!(s.queue_bytes, 862_500);
    assert_eq!(s.stream_receive_window, 2 * (862_500 + 862_500));
    assert_eq!(s.send_window, 10_000_000);
    assert_eq!(s.mtu, 1472);
    // 230 ms + 1472 B at 30 Mbit/s (392.5 us) + a 50 B ack (13.3 us).
    assert_eq!(s.initial_rtt, Duration::from_nanos(230_405_868));
    assert_eq!(s.idle_timeout, Duration::from_secs(30));

    // A short, slow path keeps quinn's (larger) defaults.
    let cell =
        Settings::for_link(&LinkConfig::profile("cellular").unwrap(), Congestion::Cubic).unwrap();
    assert_eq!(cell.stream_receive_window, 1_250_000);
    assert_eq!(cell.mtu, 1372);

    // The satellite path's data direction is its 2 Mbit/s uplink, 600 ms RTT.
    let sat =
        Settings::for_link(&LinkConfig::profile("satellite").unwrap(), Congestion::Bbr).unwrap();
    assert_eq!(sat.bdp_bytes, 150_000);

    for cc in Congestion::ALL {
        assert_eq!(cc.as_str().parse::<Congestion>().unwrap(), cc);
    }
}
