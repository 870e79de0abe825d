//! Same seed, same bytes; different seed, different bytes. Plus invariants that hold for
//! any seed and any traffic.

mod common;

use std::time::Duration;

use bytes::Bytes;
use proptest::prelude::*;
use skywave_sim::{
    Adjacency, DropReason, Link, LinkConfig, LinkModel, RefEndpoint, SimTime, Simulator,
    write_trace,
};

/// A bit of everything: an impaired IP path, an HF modem both ways, a CSMA grid.
fn scenario(seed: u64) -> String {
    let mut sim = Simulator::new(seed);
    sim.set_trace(true);
    let path = LinkConfig::parse_spec(
        "rate=2Mbps,delay=40ms,jitter=5ms,corr=25%,ge=2%,20%,0.1,1,reorder=1%,dup=1%,corrupt=1%",
    )
    .unwrap();
    let a = sim.add_node(RefEndpoint::paced(1_500_000, 1200));
    let b = sim.add_node(RefEndpoint::saturating(1200));
    sim.connect(a, b, &path).unwrap();
    let hf = LinkConfig::parse_spec("profile=hf-modem,over=20s").unwrap();
    let c = sim.add_node(RefEndpoint::saturating(100));
    let d = sim.add_node(RefEndpoint::saturating(100));
    sim.connect(c, d, &hf).unwrap();
    let radios: Vec<_> = (0..9)
        .map(|_| sim.add_node(RefEndpoint::paced(20_000, 223)))
        .collect();
    let uhf = LinkConfig::profile("uhf-csma-lossy").unwrap();
    sim.add_medium(&radios, Adjacency::grid(3, 3, 1.0), &uhf)
        .unwrap();
    sim.run_until(SimTime::from_secs(60));
    let mut out = String::new();
    write_trace(sim.trace(), &mut out);
    out
}

#[test]
fn same_seed_gives_identical_trace_bytes() {
    for seed in [1, 42, 0xdead_beef] {
        let (x, y) = (scenario(seed), scenario(seed));
        assert!(x.lines().count() > 10_000, "seed {seed}: trace too short");
        assert!(x == y, "seed {seed}: traces differ");
        for kind in [
            "deliver",
            "drop:loss",
            "drop:collision",
            "deliver-corrupt",
            "turnaround",
            "send",
        ] {
            assert!(
                x.contains(&format!(" {kind} ")),
                "seed {seed}: no {kind} event"
            );
        }
    }
}

#[test]
fn different_seeds_give_different_traces() {
    let (x, y) = (scenario(1), scenario(2));
    assert_ne!(x, y);
}

#[derive(Debug, Clone)]
struct Op {
    gap_us: u32,
    port: usize,
    len: usize,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(
        (0u32..20_000, 0usize..2, 1usize..1600).prop_map(|(gap_us, port, len)| Op {
            gap_us,
            port,
            len,
        }),
        1..300,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every frame offered is accounted for exactly once: refused, dropped at the queue,
    /// lost or corrupted on the way, or delivered (plus duplicates); nothing is truncated.
    #[test]
    fn frames_are_conserved(seed in any::<u64>(), ops in ops(), half in any::<bool>()) {
        let spec = format!(
            "rate=1Mbps,delay=10ms,jitter=3ms,loss=5%,dup=5%,corrupt=5%,crc=on,reorder=5%,buffer=8KB,mtu=1500,duplex={}",
            if half { "half,turnaround=1ms" } else { "full" }
        );
        let mut l = Link::new(&LinkConfig::parse_spec(&spec).unwrap(), seed, 0).unwrap();
        let mut t = SimTime::ZERO;
        let mut seen = Vec::new();
        for op in &ops {
            t += Duration::from_micros(u64::from(op.gap_us));
            l.handle_timeout(t);
            common::collect(&mut l, t, &mut seen);
            let _ = l.handle_transmit(t, op.port, Bytes::from(vec![op.len as u8; op.len]));
            common::collect(&mut l, t, &mut seen);
        }
        let mut rest = common::drain(&mut l, SimTime::MAX);
        seen.append(&mut rest);
        for p in 0..2 {
            let s = l.stats(p);
            let attempts = ops.iter().filter(|o| o.port == p).count() as u64;
            prop_assert_eq!(attempts, s.offered.frames + s.refused.frames, "seed {}", seed);
            prop_assert_eq!(
                s.offered.frames,
                s.sent.frames + s.dropped(DropReason::QueueFull).frames,
                "seed {}", seed
            );
            prop_assert_eq!(
                s.sent.frames + s.duplicated,
                s.delivered.frames
                    + s.dropped(DropReason::Loss).frames
                    + s.dropped(DropReason::Corrupt).frames,
                "seed {}", seed
            );
            let arrived = seen.iter().filter(|x| x.port == 1 - p).count() as u64;
            prop_assert_eq!(arrived, s.delivered.frames, "seed {}", seed);
        }
        for s in &seen {
            prop_assert!(s.frame.len() <= 1500);
            prop_assert!(s.frame.iter().all(|&b| b == s.frame.len() as u8), "seed {}", seed);
        }
    }

    /// Two radios that never overlap in time never collide, whatever the seed.
    #[test]
    fn spaced_frames_never_collide(seed in any::<u64>(), n in 1usize..50) {
        let cfg = LinkConfig::profile("uhf-csma").unwrap();
        let mut m = skywave_sim::CsmaMedium::new(&cfg, Adjacency::full(3), seed, 0).unwrap();
        let mut t = SimTime::ZERO;
        for i in 0..n {
            m.handle_timeout(t);
            m.handle_transmit(t, i % 2, Bytes::from(vec![1u8; 223])).unwrap();
            // Backoff < 8 ms + 14.4 ms airtime < 25 ms.
            t += Duration::from_millis(25);
        }
        common::drain(&mut m, SimTime::MAX);
        prop_assert_eq!(m.stats(2).received.frames, n as u64, "seed {}", seed);
    }
}
