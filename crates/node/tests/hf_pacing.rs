//! HF modems driven by the link adapter layer's pacer (the daemon's `serial` and
//! `hf-modem` drivers, the lab's modem ports), end to end in the simulator: no modem
//! buffer is ever overrun (an overrun drops the call for a minute), and a two-way sync
//! stays near the link's floor over rates, latencies and buffer sizes.
//! Deterministic: virtual time, seeded; every failure message names the cell and seed.

use std::time::Duration;

use skywave_bundle::{Manifest, SecretKey, hash_payload};
use skywave_node::{SimNode, adapter_for};
use skywave_proto::{Config, MemStore};
use skywave_sim::config::LinkConfig;
use skywave_sim::sim::{LinkId, NodeId, Simulator};
use skywave_sim::time::SimTime;
use skywave_sim::trace::write_trace;

const DATE: u64 = 1_795_305_600;

fn key(n: u64) -> SecretKey {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&n.to_le_bytes());
    seed[9] = 0x48;
    SecretKey::from_bytes(&seed)
}

fn bundle(i: u64, size: usize) -> (skywave_bundle::SignedManifest, Vec<u8>) {
    let k = key(i);
    let payload: Vec<u8> = (0..size).map(|j| (i as usize * 7 + j) as u8).collect();
    let mut m = Manifest::new(k.bundle_id(), 1, size as u64, hash_payload(&payload), DATE);
    m.service = Some("file".into());
    m.name = Some(format!("obs-{i:06}.txt"));
    (m.sign(&k).unwrap(), payload)
}

struct Pair {
    sim: Simulator,
    a: NodeId,
    b: NodeId,
    link: LinkId,
    total: usize,
}

/// A and B over `spec`: `shared` bundles at both, `unique` more at each (100 B payloads).
fn pair(spec: &str, seed: u64, shared: u64, unique: u64) -> Pair {
    let cfg = LinkConfig::parse_spec(spec).unwrap();
    let mut stores = [MemStore::new(), MemStore::new()];
    for i in 0..shared {
        let (m, p) = bundle(i, 100);
        stores[0].insert(m.clone(), p.clone());
        stores[1].insert(m, p);
    }
    for (n, s) in stores.iter_mut().enumerate() {
        for i in 0..unique {
            let (m, p) = bundle(1_000_000 * (n as u64 + 1) + i, 100);
            s.insert(m, p);
        }
    }
    let [sa, sb] = stores;
    let mut sim = Simulator::new(seed);
    let node_key = |n: u64| key(9_000_000 + n).public();
    let a = sim.add_node(SimNode::new(Config::default(), node_key(1), seed ^ 1, sa));
    let b = sim.add_node(SimNode::new(Config::default(), node_key(2), seed ^ 2, sb));
    let link = sim.connect(a, b, &cfg).unwrap();
    // Each side sees the link from its end: b sends on the `down` direction.
    let mut seen_b = cfg.clone();
    std::mem::swap(&mut seen_b.up, &mut seen_b.down);
    for (n, seen) in [(a, &cfg), (b, &seen_b)] {
        let port = sim.port(n, link).unwrap();
        sim.node_mut::<SimNode<MemStore>>(n)
            .unwrap()
            .attach(port, adapter_for(seen));
    }
    Pair {
        sim,
        a,
        b,
        link,
        total: (shared + 2 * unique) as usize,
    }
}

fn held(p: &Pair, n: NodeId) -> usize {
    p.sim.node::<SimNode<MemStore>>(n).unwrap().store.held.len()
}

fn call_drops(p: &Pair) -> u64 {
    [p.a, p.b]
        .iter()
        .map(|&n| p.sim.link_stats(p.link, n).unwrap().call_drops)
        .sum()
}

/// Runs until both nodes hold everything, a call drops, or `limit` passes.
fn run(p: &mut Pair, limit: Duration) -> Option<Duration> {
    let end = SimTime::from_nanos(limit.as_nanos() as u64);
    while p.sim.now() < end && call_drops(p) == 0 {
        if held(p, p.a) == p.total && held(p, p.b) == p.total {
            return Some(Duration::from_nanos(p.sim.now().as_nanos()));
        }
        if !p.sim.step() {
            break;
        }
    }
    None
}

/// The floor of the exchange: the useful bytes (manifest + payload of every bundle
/// each side lacks) at the link's rate, a round trip and two turnarounds.
fn floor(spec: &str, unique: u64) -> f64 {
    let cfg = LinkConfig::parse_spec(spec).unwrap();
    let (m, _) = bundle(0, 100);
    let useful = 2 * unique * (m.as_bytes().len() as u64 + 100);
    useful as f64 * 8.0 / cfg.up.rate_bps as f64
        + (cfg.up.delay + cfg.down.delay).as_secs_f64()
        + 2.0 * cfg.turnaround.as_secs_f64()
}

/// Syncs one cell; returns time over floor, or what went wrong (a dropped call comes
/// with the link's trace before it).
fn cell(spec: &str, seed: u64, unique: u64) -> Result<f64, String> {
    cell_with(spec, seed, 300, unique)
}

fn cell_with(spec: &str, seed: u64, shared: u64, unique: u64) -> Result<f64, String> {
    let floor = floor(spec, unique);
    let mut p = pair(spec, seed, shared, unique);
    p.sim.set_trace(true);
    let t = run(&mut p, Duration::from_secs_f64(floor * 20.0));
    if call_drops(&p) > 0 {
        let trace = p.sim.take_trace();
        let mut text = String::new();
        write_trace(&trace[trace.len().saturating_sub(80)..], &mut text);
        return Err(format!(
            "{spec} seed {seed}: a modem buffer was overrun\n{text}"
        ));
    }
    let t = t.ok_or_else(|| format!("{spec} seed {seed}: not synced within 20 floors"))?;
    Ok(t.as_secs_f64() / floor)
}

/// Whether a modem's buffer holds what it sends from the moment the turn comes to it
/// until its driver could know without being told (a latency less the turnaround, and
/// the end of the other side's stream), and a frame more. The drivers announce the ends
/// of their overs, so a smaller buffer no longer limits an over to its size per latency;
/// it still limits frames to its size, and costs a latency per handover.
fn bridges_the_handover(rate_bps: f64, delay_s: f64, buffer: f64) -> bool {
    let rate = rate_bps / 8.0;
    let gap = 2.0 * 64.0 / rate + 0.1;
    buffer - 64.0 >= rate * ((delay_s - 2.0).max(0.0) + gap) + 254.0
}

#[test]
fn no_modem_is_overrun_and_overs_run_at_the_modems_rate() {
    let mut failed = Vec::new();
    for (rate, rate_bps) in [("300bps", 300.0), ("1475bps", 1475.0), ("9600bps", 9600.0)] {
        for (delay, delay_s) in [("1s", 1.0), ("4s", 4.0), ("8s", 8.0)] {
            for (buffer, bytes) in [("256B", 256.0), ("1KiB", 1024.0), ("8KiB", 8192.0)] {
                let spec = format!("profile=hf-modem,rate={rate},delay={delay},buffer={buffer}");
                let unique = if rate_bps < 1000.0 { 10 } else { 30 };
                // Measured (seed 1): 1.36-1.60 where the buffer bridges the handover,
                // 1.54-2.43 where it does not (256 B at 9600 bit/s and 8 s: 2.43).
                let limit = if bridges_the_handover(rate_bps, delay_s, bytes) {
                    2.0
                } else {
                    2.75
                };
                match cell(&spec, 1, unique) {
                    Ok(x) => {
                        eprintln!("{spec}: {x:.2} x floor");
                        if x > limit {
                            failed.push(format!("{spec}: {x:.2} x floor, above {limit}"));
                        }
                    }
                    Err(e) => failed.push(e),
                }
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// One cell over many seeds: `HF_SPEC=... HF_SEEDS=20 cargo test --release --test
/// hf_pacing -- --ignored one_spec --nocapture`.
#[test]
#[ignore = "debugging aid"]
fn one_spec() {
    if let Ok(filter) = std::env::var("RUST_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .without_time()
            .with_ansi(false)
            .try_init();
    }
    let spec = std::env::var("HF_SPEC").unwrap_or_else(|_| "profile=hf-modem".into());
    let seeds: u64 = std::env::var("HF_SEEDS").map_or(5, |s| s.parse().unwrap());
    let unique: u64 = std::env::var("HF_UNIQUE").map_or(30, |s| s.parse().unwrap());
    let shared: u64 = std::env::var("HF_SHARED").map_or(300, |s| s.parse().unwrap());
    for seed in 1..=seeds {
        match cell_with(&spec, seed, shared, unique) {
            Ok(x) => eprintln!("{spec} seed {seed}: {x:.2} x floor"),
            Err(e) => eprintln!("{e}"),
        }
    }
}

/// Once the two drivers pass the turn to each other, a change of turn costs the modem's
/// turnaround and nothing more: each over's end is announced a latency before it comes
/// (the announcement goes in front of that much), so the other side's modem is loaded
/// when the turn reaches it. Waiting to hear the end instead costs most of a latency
/// per turn (4.7 s of dead air on `hf-modem` where the turnaround is 2 s).
#[test]
fn a_change_of_turn_costs_a_turnaround_when_the_buffer_covers_the_latency() {
    let spec = "profile=hf-modem";
    let cfg = LinkConfig::parse_spec(spec).unwrap();
    let rate = cfg.up.rate_bps as f64 / 8.0;
    let turnaround = cfg.turnaround.as_secs_f64();
    let mut p = pair(spec, 1, 300, 60);
    p.sim.set_trace(true);
    let floor = floor(spec, 60);
    assert!(
        run(&mut p, Duration::from_secs_f64(floor * 20.0)).is_some(),
        "not synced"
    );
    // Overs as sent: (sender, first byte, end of the last byte on the air).
    let mut overs: Vec<(u32, f64, f64)> = Vec::new();
    for r in p.sim.take_trace() {
        let e = r.event;
        if e.kind != skywave_sim::trace::TraceKind::Send {
            continue;
        }
        let t = e.time.as_secs_f64();
        let end = t + f64::from(e.len) / rate;
        match overs.last_mut() {
            Some(o) if o.0 == e.from => o.2 = end,
            _ => overs.push((e.from, t, end)),
        }
    }
    assert!(overs.len() >= 5, "too few overs to judge: {overs:?}");
    // The first overs greet and agree on the turn (no announcement heard yet); the last
    // one may be a short reply.
    let mut gaps: Vec<f64> = overs.windows(2).skip(3).map(|w| w[1].1 - w[0].2).collect();
    gaps.pop();
    assert!(gaps.len() >= 3, "too few changes of turn: {overs:?}");
    let worst = gaps.iter().copied().fold(0.0, f64::max);
    assert!(
        worst <= turnaround + 1.0,
        "dead air between overs up to {worst:.2} s (turnaround {turnaround} s): {gaps:.2?}"
    );
}

/// Whichever side gets the first turn after the greetings describes its set (on a
/// half-duplex link either side may stream the reconciliation's symbols): the sync does
/// not wait a round trip longer when that side is not the one the key order names. With
/// the roles fixed by key order, the seeds where the decoder got the first turn took a
/// whole round trip (two latencies and two turnarounds) more than the others.
#[test]
fn the_first_turn_after_the_greetings_starts_the_reconciliation() {
    let spec = "profile=hf-modem,rate=9600bps,delay=8s,buffer=1KiB";
    let cfg = LinkConfig::parse_spec(spec).unwrap();
    let round_trip = (cfg.up.delay + cfg.down.delay + cfg.turnaround * 2).as_secs_f64();
    let floor = floor(spec, 30);
    let times: Vec<f64> = (1..=6)
        .map(|seed| cell(spec, seed, 30).unwrap() * floor)
        .collect();
    let (lo, hi) = times
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &t| (l.min(t), h.max(t)));
    assert!(
        hi - lo < round_trip / 2.0,
        "sync times over seeds 1-6 {times:.1?} s spread by {:.1} s (a round trip is {round_trip:.1} s)",
        hi - lo
    );
}
