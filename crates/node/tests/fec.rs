//! Transfers by forward error correction in the simulator: over a lossy radio between
//! two nodes, and broadcast to several neighbours on one shared channel, where every
//! symbol serves each neighbour that lacks the bundle. Deterministic: virtual time,
//! seeded; every failure message names the seed.

use std::time::Duration;

use skywave_bundle::{Manifest, SecretKey, hash_payload};
use skywave_node::{SimNode, adapter_for};
use skywave_proto::{Config, FecMode, MemStore, Stats};
use skywave_sim::config::LinkConfig;
use skywave_sim::link::Adjacency;
use skywave_sim::sim::{NodeId, Simulator};
use skywave_sim::time::SimTime;

const DATE: u64 = 1_795_305_600;

fn key(n: u64) -> SecretKey {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&n.to_le_bytes());
    seed[9] = 0x42;
    SecretKey::from_bytes(&seed)
}

fn store_with(first: u64, count: u64, size: usize) -> MemStore {
    let mut s = MemStore::new();
    for i in first..first + count {
        let k = key(i);
        let payload: Vec<u8> = (0..size)
            .map(|j| (i as usize * 13 + j * 7 + j / 251) as u8)
            .collect();
        let mut m = Manifest::new(k.bundle_id(), 1, size as u64, hash_payload(&payload), DATE);
        m.service = Some("file".into());
        s.insert(m.sign(&k).unwrap(), payload);
    }
    s
}

struct Run {
    /// Virtual time when every node held every bundle, if it did.
    done: Option<Duration>,
    stats: Vec<Stats>,
}

/// `n` radios that all hear each other on `profile`; node 0 starts with `count`
/// bundles of `size` bytes, the others with nothing.
fn clique(profile: &str, n: usize, count: u64, size: usize, fec: FecMode, seed: u64) -> Run {
    let cfg = LinkConfig::profile(profile).unwrap();
    let mut sim = Simulator::new(seed);
    let proto = Config {
        fec,
        ..Config::default()
    };
    let ids: Vec<NodeId> = (0..n)
        .map(|i| {
            let store = if i == 0 {
                store_with(0, count, size)
            } else {
                MemStore::new()
            };
            let k = key(1_000_000 + i as u64).public();
            sim.add_node(SimNode::new(proto.clone(), k, seed ^ (i as u64 + 3), store))
        })
        .collect();
    let link = sim.add_medium(&ids, Adjacency::full(n), &cfg).unwrap();
    for &id in &ids {
        let port = sim.port(id, link).unwrap();
        sim.node_mut::<SimNode<MemStore>>(id)
            .unwrap()
            .attach(port, adapter_for(&cfg));
    }
    let all = |sim: &Simulator| {
        ids.iter().all(|&id| {
            sim.node::<SimNode<MemStore>>(id).unwrap().store.held.len() == count as usize
        })
    };
    let end = SimTime::from_secs(300);
    let mut done = None;
    while sim.now() < end {
        if all(&sim) {
            done = Some(Duration::from_nanos(sim.now().as_nanos()));
            break;
        }
        if !sim.step() {
            break;
        }
    }
    let stats = ids
        .iter()
        .map(|&id| {
            sim.node::<SimNode<MemStore>>(id)
                .unwrap()
                .ep
                .stats()
                .clone()
        })
        .collect();
    Run { done, stats }
}

fn on_air(r: &Run) -> u64 {
    r.stats.iter().map(|s| s.bytes_sent).sum()
}

/// Seeds compared together: a seed's time swings by 20% with its collisions, so six
/// seeds (a standard error near 8%) could not tell FEC from pieces.
const SEEDS: u64 = 24;

#[test]
fn lossy_radio_pair_completes_by_fec() {
    // Collisions make each seed's figures swing by 20%: FEC and pieces are compared
    // over SEEDS seeds together, each seed only against fixed ceilings.
    let (mut fec_air, mut arq_air) = (0u64, 0u64);
    let (mut fec_time, mut arq_time) = (Duration::ZERO, Duration::ZERO);
    for seed in 1..=SEEDS {
        let r = clique("uhf-csma-lossy", 2, 8, 3000, FecMode::Always, seed);
        let arq = clique("uhf-csma-lossy", 2, 8, 3000, FecMode::Off, seed);
        let (a, b) = (&r.stats[0], &r.stats[1]);
        eprintln!(
            "seed {seed}: pieces {:?} {} B on air, {} B from the source; FEC {:?}, {} B on air, {} B from the source; A: {} FEC transfers, {} symbols, {} B repair; B: {} decoded, {} symbols received",
            arq.done,
            on_air(&arq),
            arq.stats[0].bytes_sent,
            r.done,
            on_air(&r),
            a.bytes_sent,
            a.fec_transfers,
            a.fec_symbols_sent,
            a.fec_repair_bytes_sent,
            b.fec_decoded,
            b.fec_symbols_received
        );
        let t = r.done.unwrap_or_else(|| panic!("seed {seed}: not synced"));
        assert!(t < Duration::from_secs(20), "seed {seed}: took {t:?}");
        assert_eq!(a.fec_transfers, 8, "seed {seed}: every bundle by FEC");
        assert_eq!(b.bundles_received, 8, "seed {seed}");
        // 10% loss: the receiver lacks some source symbols of nearly every bundle and
        // completes those from repair symbols.
        assert!(a.fec_repair_bytes_sent > 0, "seed {seed}: no repair sent");
        assert!(b.fec_decoded >= 4, "seed {seed}: {} decoded", b.fec_decoded);
        // 24 KB of payload: the channel loses 10% and collisions more (reports and
        // data contend).
        assert!(on_air(&r) < 64_000, "seed {seed}: {} B on air", on_air(&r));
        let t_arq = arq
            .done
            .unwrap_or_else(|| panic!("seed {seed}: pieces not synced"));
        fec_air += on_air(&r);
        arq_air += on_air(&arq);
        fec_time += t;
        arq_time += t_arq;
    }
    // With one receiver, FEC keeps up with pieces and costs a little more on air: pieces
    // resend only what a report shows lost, so they are about as frugal, and FEC's gain
    // is where one symbol serves several receivers (the next test). Over 24 seeds FEC
    // measured 120.1 s and 1,041,917 B against pieces' 113.2 s and 935,463 B (1.06x time,
    // 1.11x air). Pieces gained when WANTs repeated for want of an answer began to be
    // served (117.2 s and 959,959 B before; FEC 119.8 s, 1,043,520 B): FEC's figures did
    // not move, and the bounds follow the gap as measured. A streamer that nudges a
    // silent decoder (docs/protocol.md) moved FEC to 122.4 s against pieces' 113.1 s
    // (1.082x time). Reports sent as soon as the frame ending the sender's over arrives
    // (`OVER_END`) took both down, pieces further: FEC 112.8 s, pieces 97.6 s (1.156x):
    // a piece's report frees its resend at once, while FEC's answer is the symbols owed.
    // Pieces continued across frames: FEC 113.9 s, pieces 97.4 s (1.170x).
    assert!(
        fec_time.as_secs_f64() <= arq_time.as_secs_f64() * 1.18,
        "FEC {fec_time:?} vs pieces {arq_time:?} over seeds 1-{SEEDS}"
    );
    assert!(
        fec_air * 100 <= arq_air * 114,
        "FEC {fec_air} B vs pieces {arq_air} B on air over seeds 1-{SEEDS}"
    );
}

#[test]
fn one_transmission_serves_every_neighbour() {
    // Four neighbours on one lossy channel: by FEC, symbols sent to one are heard and
    // used by all, so the sender's airtime grows far less than fourfold.
    for seed in 1..=3 {
        let fec = clique("uhf-csma-lossy", 5, 10, 2000, FecMode::Auto, seed);
        let arq = clique("uhf-csma-lossy", 5, 10, 2000, FecMode::Off, seed);
        let sent = |r: &Run| r.stats[0].bytes_sent;
        eprintln!(
            "seed {seed}: FEC {:?} {} B from the source ({} B on air), {} overheard symbols used; pieces {:?} {} B ({} B on air)",
            fec.done,
            sent(&fec),
            on_air(&fec),
            fec.stats[1..]
                .iter()
                .map(|s| s.fec_symbols_received)
                .sum::<u64>(),
            arq.done,
            sent(&arq),
            on_air(&arq),
        );
        for (i, st) in fec.stats.iter().enumerate() {
            eprintln!(
                "  node {i}: sent {} B, {} FEC transfers, {} symbols ({} B repair), {} received, {} dropped, {} decoded, bundles in {} out {}, recon {} B, manifests {}",
                st.bytes_sent,
                st.fec_transfers,
                st.fec_symbols_sent,
                st.fec_repair_bytes_sent,
                st.fec_symbols_received,
                st.fec_symbols_dropped,
                st.fec_decoded,
                st.bundles_received,
                st.bundles_delivered,
                st.recon_bytes(),
                st.manifests_sent,
            );
        }
        assert!(fec.done.is_some(), "seed {seed}: FEC run not synced");
        assert!(arq.done.is_some(), "seed {seed}: piece run not synced");
        // 20 KB to each of 4 neighbours: 80 KB unicast before any loss.
        assert!(
            sent(&fec) < 100_000,
            "seed {seed}: the source sent {} B",
            sent(&fec)
        );
        assert!(
            sent(&fec) * 4 < sent(&arq) * 3,
            "seed {seed}: FEC {} B vs pieces {} B from the source",
            sent(&fec),
            sent(&arq)
        );
        assert!(
            on_air(&fec) * 4 < on_air(&arq) * 3,
            "seed {seed}: FEC {} B vs pieces {} B on air",
            on_air(&fec),
            on_air(&arq)
        );
    }
}

/// When the sender finds the peer empty it pushes every bundle while the round still
/// runs; the peer's decoder then asked for them too, transfers under way included. No
/// manifest answers such a request, so it was repeated by the whole short id, and the
/// sender, asked again after the peer had said it held the bundle, sent it again: in
/// these seeds (5 of seeds 1-400) one bundle went by FEC twice. A request never names a
/// transfer under way now.
#[test]
fn a_bundle_pushed_while_the_round_runs_goes_once() {
    for seed in [52, 55, 278, 305, 323] {
        let r = clique("uhf-csma-lossy", 2, 8, 3000, FecMode::Always, seed);
        assert!(r.done.is_some(), "seed {seed}: not synced");
        assert_eq!(r.stats[1].bundles_received, 8, "seed {seed}");
        assert_eq!(
            r.stats[0].fec_transfers, 8,
            "seed {seed}: a bundle went by FEC twice"
        );
    }
}
