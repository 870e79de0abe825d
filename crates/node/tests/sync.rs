//! The protocol end to end in the simulator, over the design's link profiles.
//! Deterministic: virtual time, seeded; every failure message names the seed.

use std::time::Duration;

use skywave_bundle::{Manifest, SecretKey, hash_payload};
use skywave_node::adapter::{LinkAdapter, device_params};
use skywave_node::{SimNode, adapter_for};
use skywave_proto::{Config, MemStore};
use skywave_sim::config::{LinkConfig, LinkKind};
use skywave_sim::link::Adjacency;
use skywave_sim::sim::{NodeId, Simulator};
use skywave_sim::time::SimTime;

const DATE: u64 = 1_795_305_600;

fn key(n: u64) -> SecretKey {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&n.to_le_bytes());
    seed[9] = 0x77;
    SecretKey::from_bytes(&seed)
}

/// A store holding `count` bundles of `size` bytes, keys numbered from `first`.
fn store_with(first: u64, count: u64, size: usize) -> MemStore {
    let mut s = MemStore::new();
    fill(&mut s, first, count, size);
    s
}

/// Adds bundles `first..first + count` of `size` bytes to `s`.
fn fill(s: &mut MemStore, first: u64, count: u64, size: usize) {
    for i in first..first + count {
        let k = key(i);
        let payload: Vec<u8> = (0..size).map(|j| (i as usize * 7 + j) as u8).collect();
        let mut m = Manifest::new(k.bundle_id(), 1, size as u64, hash_payload(&payload), DATE);
        m.service = Some("file".into());
        m.name = Some(format!("obs-{i:06}.txt"));
        s.insert(m.sign(&k).unwrap(), payload);
    }
}

fn node_key(n: u8) -> [u8; 32] {
    key(1_000_000 + u64::from(n)).public()
}

struct Pair {
    sim: Simulator,
    a: NodeId,
    b: NodeId,
}

fn pair(profile: &str, seed: u64, a: MemStore, b: MemStore) -> Pair {
    pair_with(profile, seed, a, b, adapter_for)
}

/// [`pair`] with each side's driver made by `adapter`.
fn pair_with(
    profile: &str,
    seed: u64,
    a: MemStore,
    b: MemStore,
    adapter: impl Fn(&LinkConfig) -> LinkAdapter,
) -> Pair {
    let cfg = if profile.contains('=') {
        LinkConfig::parse_spec(profile).unwrap()
    } else {
        LinkConfig::profile(profile).unwrap()
    };
    let mut sim = Simulator::new(seed);
    let na = sim.add_node(SimNode::new(Config::default(), node_key(1), seed ^ 1, a));
    let nb = sim.add_node(SimNode::new(Config::default(), node_key(2), seed ^ 2, b));
    let link = if cfg.kind == LinkKind::Csma {
        sim.add_medium(&[na, nb], Adjacency::full(2), &cfg).unwrap()
    } else {
        sim.connect(na, nb, &cfg).unwrap()
    };
    // Each side sees the link from its end: b sends on the `down` direction.
    let mut seen_b = cfg.clone();
    std::mem::swap(&mut seen_b.up, &mut seen_b.down);
    for (n, seen) in [(na, &cfg), (nb, &seen_b)] {
        let port = sim.port(n, link).unwrap();
        sim.node_mut::<SimNode<MemStore>>(n)
            .unwrap()
            .attach(port, adapter(seen));
    }
    Pair { sim, a: na, b: nb }
}

/// [`pair_with`], each side holding 100 bundles of 100 B the other lacks.
fn hundred_each(profile: &str, seed: u64, adapter: impl Fn(&LinkConfig) -> LinkAdapter) -> Pair {
    pair_with(
        profile,
        seed,
        store_with(0, 100, 100),
        store_with(1000, 100, 100),
        adapter,
    )
}

fn held(p: &Pair, n: NodeId) -> usize {
    p.sim.node::<SimNode<MemStore>>(n).unwrap().store.held.len()
}

/// Runs until both nodes hold `total` bundles or `limit` passes; returns the time taken.
fn run_until_synced(p: &mut Pair, total: usize, limit: Duration) -> Option<Duration> {
    let end = SimTime::from_nanos(limit.as_nanos() as u64);
    while p.sim.now() < end {
        if held(p, p.a) == total && held(p, p.b) == total {
            return Some(Duration::from_nanos(p.sim.now().as_nanos()));
        }
        if !p.sim.step() {
            break;
        }
    }
    (held(p, p.a) == total && held(p, p.b) == total)
        .then(|| Duration::from_nanos(p.sim.now().as_nanos()))
}

#[test]
fn lan_pair_syncs_both_ways() {
    let mut p = pair("lan", 1, store_with(0, 20, 2000), store_with(100, 30, 500));
    let t = run_until_synced(&mut p, 50, Duration::from_secs(5));
    let a = p.sim.node::<SimNode<MemStore>>(p.a).unwrap();
    let b = p.sim.node::<SimNode<MemStore>>(p.b).unwrap();
    eprintln!(
        "{t:?} steps {} now {} held {} {}\n{:?}\n{:?}",
        p.sim.steps(),
        p.sim.now(),
        a.store.held.len(),
        b.store.held.len(),
        a.ep.stats(),
        b.ep.stats()
    );
    let t = t.expect("seed 1: not synced");
    assert!(t < Duration::from_millis(200), "seed 1: took {t:?}");
}

#[test]
fn uhf_100x100() {
    for seed in 1..=3 {
        let mut p = pair(
            "uhf-csma",
            seed,
            store_with(0, 100, 100),
            store_with(1000, 100, 100),
        );
        let t = run_until_synced(&mut p, 200, Duration::from_secs(120));
        let a = p.sim.node::<SimNode<MemStore>>(p.a).unwrap();
        let b = p.sim.node::<SimNode<MemStore>>(p.b).unwrap();
        let on_air = a.ep.stats().bytes_sent + b.ep.stats().bytes_sent;
        eprintln!(
            "seed {seed}: {t:?}, {on_air} bytes sent, refused {}/{}",
            a.refused, b.refused
        );
        eprintln!(
            "A {:?}\nB {:?}",
            a.ep.describe_sessions(),
            b.ep.describe_sessions()
        );
        eprintln!("A {:?}\nB {:?}", a.ep.stats(), b.ep.stats());
        eprintln!(
            "by type A {:?}\nB {:?}",
            a.ep.stats().sent_by_type,
            b.ep.stats().sent_by_type
        );
        let link = p.sim.link_stats(skywave_sim::sim::LinkId(0), p.a);
        eprintln!(
            "link A {link:?}\nlink B {:?}",
            p.sim.link_stats(skywave_sim::sim::LinkId(0), p.b)
        );
        let t = t.unwrap_or_else(|| panic!("seed {seed}: not synced"));
        assert!(t <= Duration::from_secs(15), "seed {seed}: took {t:?}");
        assert!(on_air <= 75_000, "seed {seed}: {on_air} bytes on air");
    }
}

/// On a radio that puts every frame on the air at once (no carrier sense, no queue;
/// overlapping frames are lost at every receiver), the driver's turn-taking is what keeps
/// the two sides' frames apart. The same exchange with the driver writing whenever the
/// radio has room takes over three times as long and as many bytes, or does not complete
/// (seeds 1-3: 5.6 s and 63 KB against 41-54 s and 460-562 KB).
#[test]
fn turn_taking_beats_a_free_for_all_on_an_unqueued_radio() {
    let profile = "profile=uhf-csma,txqueue=none";
    let limit = Duration::from_secs(120);
    for seed in 1..=3 {
        let run = |mac: bool| {
            let mut p = hundred_each(profile, seed, |cfg| {
                if mac {
                    adapter_for(cfg)
                } else {
                    LinkAdapter::device(device_params(cfg))
                }
            });
            let t = run_until_synced(&mut p, 200, limit);
            let a = p.sim.node::<SimNode<MemStore>>(p.a).unwrap();
            let b = p.sim.node::<SimNode<MemStore>>(p.b).unwrap();
            let sent = a.ep.stats().bytes_sent + b.ep.stats().bytes_sent;
            eprintln!("seed {seed}, turn-taking {mac}: {t:?}, {sent} B sent");
            (t, sent)
        };
        let (with_t, with_sent) = run(true);
        let with_t = with_t.unwrap_or_else(|| panic!("seed {seed}: turn-taking did not complete"));
        assert!(
            with_t <= Duration::from_secs(30),
            "seed {seed}: took {with_t:?}"
        );
        let (without_t, without_sent) = run(false);
        if let Some(t) = without_t {
            assert!(
                t > with_t * 3 && without_sent > with_sent * 3,
                "seed {seed}: without turn-taking {t:?} {without_sent} B, with {with_t:?} \
                 {with_sent} B"
            );
        }
    }
}

/// A radio with its own queue and carrier sense backs off before every frame, so one
/// station's burst has gaps (up to `cw_min` slots: 107 ms at 9.6 kbit/s). A driver that
/// took such a gap for the end of the burst would hand its radio a frame, which then
/// collides with the burst's next one. Knowing the radio's backoff, the driver waits it
/// out: no frame is lost to a collision, and nothing is sent twice. Without it (seeds
/// 1-3 at 9.6 kbit/s, 100 B frames): 50-56 frames lost, 126-133 s against 94-96 s.
#[test]
fn the_driver_waits_out_its_queued_radios_backoff() {
    let profile = "profile=uhf-csma,rate=9600bps,mtu=100B";
    let limit = Duration::from_secs(600);
    for seed in 1..=3 {
        let run = |knows_backoff: bool| {
            let mut p = hundred_each(profile, seed, |cfg| {
                let a = adapter_for(cfg);
                if knows_backoff {
                    a
                } else {
                    let params = skywave_proto::LinkParams {
                        handoff: Duration::ZERO,
                        ..a.params()
                    };
                    LinkAdapter::device(params).without_channel_access()
                }
            });
            let t = run_until_synced(&mut p, 200, limit);
            let collided: u64 = [p.a, p.b]
                .iter()
                .map(|&n| {
                    p.sim
                        .link_stats(skywave_sim::sim::LinkId(0), n)
                        .unwrap()
                        .dropped_total()
                        .frames
                })
                .sum();
            let a = p.sim.node::<SimNode<MemStore>>(p.a).unwrap();
            let b = p.sim.node::<SimNode<MemStore>>(p.b).unwrap();
            let resent = a.ep.stats().piece_bytes_resent
                + b.ep.stats().piece_bytes_resent
                + a.ep.stats().manifests_resent
                + b.ep.stats().manifests_resent;
            eprintln!(
                "seed {seed}, knows the backoff {knows_backoff}: {t:?}, {collided} frames \
                 lost, {resent} resent"
            );
            (t, collided, resent)
        };
        let (t, collided, resent) = run(true);
        let t = t.unwrap_or_else(|| panic!("seed {seed}: not synced"));
        assert_eq!((collided, resent), (0, 0), "seed {seed}");
        let (t_blind, collided_blind, _) = run(false);
        assert!(
            collided_blind > 10 && t_blind.is_none_or(|b| b > t),
            "seed {seed}: without the backoff known, {collided_blind} frames lost, {t_blind:?} \
             against {t:?}"
        );
    }
}

#[test]
fn hf_100x100() {
    let seed = 1;
    let mut p = pair(
        "hf-modem",
        seed,
        store_with(0, 10_100, 100),
        store_with(0, 10_000, 100),
    );
    // B also holds 100 unique bundles of its own.
    {
        let extra = store_with(20_000, 100, 100);
        let b = p.sim.node_mut::<SimNode<MemStore>>(p.b).unwrap();
        for (m, payload) in extra.held.into_values() {
            b.store.insert(m, payload);
        }
    }
    let t = run_until_synced(&mut p, 10_200, Duration::from_secs(3600));
    let a = p.sim.node::<SimNode<MemStore>>(p.a).unwrap();
    let b = p.sim.node::<SimNode<MemStore>>(p.b).unwrap();
    eprintln!(
        "seed {seed}: {t:?}, sent {} + {} bytes, recon {:?} {:?}, refused {}/{}",
        a.ep.stats().bytes_sent,
        b.ep.stats().bytes_sent,
        a.ep.recon_totals(),
        b.ep.recon_totals(),
        a.refused,
        b.refused
    );
    let t = t.unwrap_or_else(|| panic!("seed {seed}: not synced"));
    // The design's target is 8 minutes; with the modem paced by the driver's estimate,
    // as the daemon paces it (docs/lab.md), seed 1 takes 920 s: missed, and tracked.
    // This bound catches a regression beyond that.
    assert!(t <= Duration::from_secs(1000), "seed {seed}: took {t:?}");
}

#[test]
#[ignore = "debugging aid: prints a frame trace"]
fn uhf_trace() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("skywave_proto=trace")
        .with_test_writer()
        .try_init();
    let mut p = pair(
        "uhf-csma",
        1,
        store_with(0, 5, 100),
        store_with(1000, 5, 100),
    );
    let t = run_until_synced(&mut p, 10, Duration::from_secs(30));
    eprintln!("{t:?}");
}

// Bounds of `ip_paths_near_capacity` (seed 1, the honest lab: 26.95, 26.53 and 17.52
// Mbit/s, 13.4% resent on cellular, satellite 1.04x up and 1.57x down). Where the
// design's target is met the bound is the target; where not (lfn >= 28 Mbit/s,
// cellular resent <= 5%, satellite down <= 1.2x) it is today's figure less a margin.
const HONEST_LFN: f64 = 25.5e6;
const HONEST_LFN_LOSSY: f64 = 26e6;
const HONEST_CELLULAR: f64 = 17e6;
const HONEST_CELLULAR_RESENT: f64 = 0.16;
const HONEST_SAT_UP: f64 = 1.2;
const HONEST_SAT_DOWN: f64 = 1.7;

/// One bundle of `mb` megabytes from A to B over `profile`: (seconds, goodput bit/s,
/// piece bytes resent / payload).
fn one_way(profile: &str, mb: u64, seed: u64) -> (f64, f64, f64) {
    transfer(profile, mb, seed, false)
}

/// As [`one_way`]; with `down`, from b to a (the `down` direction of the profile).
fn transfer(profile: &str, mb: u64, seed: u64, down: bool) -> (f64, f64, f64) {
    let size = (mb * 1_000_000) as usize;
    let (a, b) = (store_with(0, 1, size), MemStore::new());
    let (a, b) = if down { (b, a) } else { (a, b) };
    let mut p = pair(profile, seed, a, b);
    let t = run_until_synced(&mut p, 1, Duration::from_secs(600))
        .unwrap_or_else(|| panic!("seed {seed}: {profile} not done"));
    let sender = if down { p.b } else { p.a };
    let a = p.sim.node::<SimNode<MemStore>>(sender).unwrap();
    let secs = t.as_secs_f64();
    let resent = a.ep.stats().piece_bytes_resent as f64 / size as f64;
    eprintln!(
        "{profile} seed {seed}: {secs:.2} s, {:.2} Mbit/s, resent {:.2}%",
        8.0 * size as f64 / secs / 1e6,
        resent * 100.0
    );
    (secs, 8.0 * size as f64 / secs, resent)
}

/// IP paths as a daemon sees them: no view of the path's rate, loss or queue (docs/lab.md,
/// "What a node sees"). See the bounds' comment for which targets are met.
#[test]
fn ip_paths_near_capacity() {
    let mut out = Vec::new();
    let (_, lfn, _) = one_way("lfn", 50, 1);
    out.push(("lfn", lfn));
    let (_, lossy, _) = one_way("lfn-lossy", 50, 1);
    out.push(("lfn-lossy", lossy));
    let (_, cell, resent) = one_way("cellular", 20, 1);
    out.push(("cellular", cell));
    let (sat_up, _, _) = one_way("satellite", 10, 1);
    let (sat_down, _, _) = transfer("satellite", 10, 1, true);
    eprintln!(
        "{out:?} cellular resent {resent:.3} satellite up {sat_up:.2} s down {sat_down:.2} s"
    );
    assert!(lfn >= HONEST_LFN, "lfn: {lfn}");
    assert!(lossy >= HONEST_LFN_LOSSY, "lfn-lossy: {lossy}");
    assert!(cell >= HONEST_CELLULAR, "cellular: {cell}");
    assert!(resent <= HONEST_CELLULAR_RESENT, "cellular resent {resent}");
    // The 2 Mbit/s uplink and the 20 Mbit/s downlink: completion within a factor of
    // (size / rate + RTT).
    assert!(
        sat_up <= HONEST_SAT_UP * (80e6 / 2e6 + 0.6),
        "satellite: {sat_up} s"
    );
    assert!(
        sat_down <= HONEST_SAT_DOWN * (80e6 / 20e6 + 0.6),
        "satellite down: {sat_down} s"
    );
}

#[test]
fn hf_lbard_table() {
    let mut p = pair(
        "hf-modem",
        1,
        store_with(0, 500, 0),
        store_with(10_000, 500, 0),
    );
    p.sim.run_until(SimTime::from_secs(1000));
    let a = p.sim.node::<SimNode<MemStore>>(p.a).unwrap();
    let b = p.sim.node::<SimNode<MemStore>>(p.b).unwrap();
    let first = |n: &SimNode<MemStore>| {
        n.events
            .iter()
            .find(|(_, e)| matches!(e, skywave_proto::Event::Received { .. }))
            .map(|(t, _)| t.as_secs_f64())
    };
    eprintln!(
        "A got {} (first {:?}), B got {} (first {:?}); by type A {:?} B {:?}; recon {:?} {:?}",
        a.store.held.len() - 500,
        first(a),
        b.store.held.len() - 500,
        first(b),
        a.ep.stats().sent_by_type,
        b.ep.stats().sent_by_type,
        a.ep.recon_totals(),
        b.ep.recon_totals()
    );
    let link = p.sim.link_stats(skywave_sim::sim::LinkId(0), p.a).unwrap();
    assert_eq!(link.call_drops, 0, "the modem buffer was overrun");
    // Target: 300 each way. Seed 1: all 500 each way.
    let (got_a, got_b) = (a.store.held.len() - 500, b.store.held.len() - 500);
    assert!(got_a.min(got_b) >= 300, "A got {got_a}, B got {got_b}");
    // The first bundle comes in the other side's first whole over: the overs run to the
    // endpoint's longest (30 s of air) now that each side knows when its turn comes.
    // Seed 1: B's first at 16.9 s, A's at 52.4 s (it was 11.4 s while each over was one
    // modem buffer, and the whole exchange slower).
    for (name, n) in [("A", a), ("B", b)] {
        let t = first(n).unwrap_or(f64::MAX);
        assert!(t <= 60.0, "{name}'s first bundle at {t} s");
    }
}

#[test]
fn uhf_chain_relays_within_30s() {
    // A - B - C, A and C out of range of each other (hidden terminals at B): C gets
    // A's 20 bundles only through B's store-and-forward.
    let cfg = LinkConfig::profile("uhf-csma").unwrap();
    for seed in 1..=5 {
        let mut sim = Simulator::new(seed);
        let stores = [store_with(0, 20, 100), MemStore::new(), MemStore::new()];
        let ids: Vec<NodeId> = stores
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                let k = node_key(10 + i as u8);
                sim.add_node(SimNode::new(Config::default(), k, seed ^ (i as u64 + 7), s))
            })
            .collect();
        let mut adj = Adjacency::new(3);
        adj.connect(0, 1);
        adj.connect(1, 2);
        let link = sim.add_medium(&ids, adj, &cfg).unwrap();
        for &n in &ids {
            let port = sim.port(n, link).unwrap();
            sim.node_mut::<SimNode<MemStore>>(n)
                .unwrap()
                .attach(port, adapter_for(&cfg));
        }
        let end = SimTime::from_secs(30);
        while sim.now() < end
            && sim
                .node::<SimNode<MemStore>>(ids[2])
                .unwrap()
                .store
                .held
                .len()
                < 20
        {
            if !sim.step() {
                break;
            }
        }
        let c = sim.node::<SimNode<MemStore>>(ids[2]).unwrap();
        eprintln!(
            "seed {seed}: C holds {} at {:?}",
            c.store.held.len(),
            sim.now()
        );
        assert_eq!(c.store.held.len(), 20, "seed {seed}: C incomplete at 30 s");
    }
}

/// Signs version `len` of journal `k` (version = length) for `payload[..len]`.
fn journal_version(k: &SecretKey, payload: &[u8]) -> skywave_bundle::SignedManifest {
    let len = payload.len() as u64;
    let mut m = Manifest::new(k.bundle_id(), len, len, hash_payload(payload), DATE);
    m.journal = true;
    m.service = Some("telemetry".into());
    m.sign(k).unwrap()
}

/// A journal at A appended with 1 KiB records every 4.096 ms (2 Mbit/s) for `secs`:
/// the lag of each record (time until B holds a version that includes it), sorted,
/// and A's piece bytes resent.
fn journal_stream(profile: &str, seed: u64, secs: f64) -> (Vec<f64>, u64) {
    const RECORD: usize = 1024;
    let k = key(77);
    let id = k.bundle_id();
    let records = (secs / 0.004096) as usize;
    let payload: Vec<u8> = (0..RECORD * (records + 1))
        .map(|j| (j * 31 + j / 977) as u8)
        .collect();
    let mut a = MemStore::new();
    a.insert(
        journal_version(&k, &payload[..RECORD]),
        payload[..RECORD].to_vec(),
    );
    let mut p = pair(profile, seed, a, MemStore::new());
    let mut written = Vec::new();
    for i in 1..=records {
        let at = SimTime::from_nanos(4_096_000 * i as u64);
        p.sim.run_until(at);
        let len = RECORD * (i + 1);
        let m = journal_version(&k, &payload[..len]);
        let node = p.sim.node_mut::<SimNode<MemStore>>(p.a).unwrap();
        node.store.insert(m, payload[..len].to_vec());
        node.ep.bundle_stored(dur(at), id, &mut node.store);
        written.push((at, len as u64));
    }
    let total = (RECORD * (records + 1)) as u64;
    let limit = p.sim.now() + Duration::from_secs(30);
    while len_held_by(&p, p.b, &id) < total && p.sim.now() < limit && p.sim.step() {}
    let b = p.sim.node::<SimNode<MemStore>>(p.b).unwrap();
    assert_eq!(
        len_held_by(&p, p.b, &id),
        total,
        "seed {seed}: {profile}: B lacks the final version"
    );
    // Versions B published, in order of arrival.
    let got: Vec<(SimTime, u64)> = b
        .events
        .iter()
        .filter_map(|(t, e)| match e {
            skywave_proto::Event::Received { version, .. } => Some((*t, *version)),
            _ => None,
        })
        .collect();
    let mut lags: Vec<f64> = written
        .iter()
        .map(|&(at, len)| {
            let (t, _) = got
                .iter()
                .find(|&&(t, v)| v >= len && t >= at)
                .unwrap_or_else(|| panic!("seed {seed}: {profile}: record to {len} never held"));
            (t.as_nanos() - at.as_nanos()) as f64 / 1e9
        })
        .collect();
    lags.sort_by(f64::total_cmp);
    let a = p.sim.node::<SimNode<MemStore>>(p.a).unwrap();
    (lags, a.ep.stats().piece_bytes_resent)
}

fn dur(t: SimTime) -> Duration {
    Duration::from_nanos(t.as_nanos())
}

fn len_held_by(p: &Pair, n: NodeId, id: &skywave_bundle::BundleId) -> u64 {
    p.sim
        .node::<SimNode<MemStore>>(n)
        .unwrap()
        .store
        .held
        .get(id)
        .map_or(0, |(m, _)| m.version())
}

#[test]
fn journal_stream_lag_stays_within_a_round_trip_and_a_second() {
    // Each record's lag stays within RTT + 1 s at the p99 even at 5% loss (a newer
    // version continues the older one's transfer; B publishes every prefix it holds
    // whole), and only lost pieces are sent again.
    for (profile, rtt, loss) in [("formant-360-5", 0.36, 0.05), ("formant-90-1", 0.09, 0.01)] {
        let seed = 1;
        let (lags, resent) = journal_stream(profile, seed, 2.0);
        let p99 = lags[(lags.len() * 99).div_ceil(100) - 1];
        let p50 = lags[lags.len() / 2];
        eprintln!("{profile} seed {seed}: lag p50 {p50:.3} s p99 {p99:.3} s, resent {resent} B");
        assert!(p99 <= rtt + 1.0, "seed {seed}: {profile}: lag p99 {p99} s");
        assert!(p50 <= rtt + 0.25, "seed {seed}: {profile}: lag p50 {p50} s");
        let sent = (lags.len() * 1024) as f64;
        assert!(
            (resent as f64) <= sent * (3.0 * loss + 0.01),
            "seed {seed}: {profile}: resent {resent} B of {sent}"
        );
    }
}

/// Two empty radios; each stores one bundle at its own moment around session set-up
/// (before, during and after the HELLOs), as a daemon's first insert over HTTP does.
/// Whatever the moments, both bundles arrive.
#[test]
fn inserts_racing_the_session_setup_still_arrive() {
    let mut failures = Vec::new();
    for seed in 1..=6u64 {
        for ta in (0..400u64).step_by(7) {
            for tb in [0u64, 13, 60, 150, 333] {
                let (ka, kb) = (key(500 + seed), key(900 + seed));
                let pa: Vec<u8> = (0..16_000).map(|j| (j * 13 + 1) as u8).collect();
                let pb: Vec<u8> = (0..2_000).map(|j| (j * 7 + 5) as u8).collect();
                let ma = Manifest::new(ka.bundle_id(), 1, 16_000, hash_payload(&pa), DATE)
                    .sign(&ka)
                    .unwrap();
                let mb = Manifest::new(kb.bundle_id(), 1, 2_000, hash_payload(&pb), DATE)
                    .sign(&kb)
                    .unwrap();
                let cfg = LinkConfig::profile("uhf-csma").unwrap();
                let mut sim = Simulator::new(seed);
                let na = sim.add_node(SimNode::new(
                    Config::default(),
                    key(2_000 + seed).public(),
                    seed ^ 1,
                    MemStore::new(),
                ));
                let nb = sim.add_node(SimNode::new(
                    Config::default(),
                    key(3_000 + seed).public(),
                    seed ^ 2,
                    MemStore::new(),
                ));
                let link = sim.add_medium(&[na, nb], Adjacency::full(2), &cfg).unwrap();
                for n in [na, nb] {
                    let port = sim.port(n, link).unwrap();
                    sim.node_mut::<SimNode<MemStore>>(n)
                        .unwrap()
                        .attach(port, adapter_for(&cfg));
                }
                let mut inserts = vec![(ta, na, ma.clone(), pa.clone()), (tb, nb, mb, pb)];
                inserts.sort_by_key(|x| x.0);
                for (t, n, m, payload) in inserts {
                    let at = SimTime::from_nanos(t * 1_000_000);
                    sim.run_until(at);
                    let id = m.id();
                    let node = sim.node_mut::<SimNode<MemStore>>(n).unwrap();
                    node.store.insert(m, payload);
                    node.ep.bundle_stored(dur(at), id, &mut node.store);
                }
                let end = SimTime::from_nanos(20_000_000_000);
                let both = |sim: &Simulator| {
                    sim.node::<SimNode<MemStore>>(na).unwrap().store.held.len() == 2
                        && sim.node::<SimNode<MemStore>>(nb).unwrap().store.held.len() == 2
                };
                while !both(&sim) && sim.now() < end && sim.step() {}
                // 18 KB at 128 kbit/s is 1.2 s of air; the channel's backoffs and the
                // pauses for reports take the rest (seeds 1-6: median 2.8 s, worst 10.0 s).
                if !both(&sim) || sim.now() > SimTime::from_nanos(12_000_000_000) {
                    failures.push((seed, ta, tb));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "(seed, ms A stored, ms B stored) that never synced: {failures:?}"
    );
}

/// Each side stores bundles of random sizes at random moments of the first 3 s, over
/// every kind of link: all of them arrive, within a bound set by the link's capacity
/// (a stalled transfer or a lost report that is never repeated fails this).
#[test]
fn random_inserts_at_random_moments_converge_over_every_profile() {
    let profiles = [
        ("uhf-csma", 30_000u64, 4u64),
        ("uhf-csma-lossy", 30_000, 4),
        ("cellular", 30_000, 4),
        ("lfn-lossy", 30_000, 4),
        ("satellite", 30_000, 4),
        ("hf-modem", 3_000, 2),
    ];
    for (profile, max_size, seeds) in profiles {
        for seed in 1..=seeds {
            let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let mut next = || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng
            };
            let mut p = pair(profile, seed, MemStore::new(), MemStore::new());
            let mut inserts = Vec::new();
            let mut total = 0u64;
            for i in 0..6u64 {
                let k = key(50_000 + 100 * seed + i);
                let size = next() % max_size;
                total += size;
                let payload: Vec<u8> = (0..size).map(|j| (j * 13 + i) as u8).collect();
                let m = Manifest::new(k.bundle_id(), 1, size, hash_payload(&payload), DATE)
                    .sign(&k)
                    .unwrap();
                let node = if i % 2 == 0 { p.a } else { p.b };
                inserts.push((next() % 3000, node, m, payload));
            }
            inserts.sort_by_key(|x| x.0);
            for (ms, n, m, payload) in inserts {
                let at = SimTime::from_nanos(ms * 1_000_000);
                p.sim.run_until(at);
                let id = m.id();
                let node = p.sim.node_mut::<SimNode<MemStore>>(n).unwrap();
                node.store.insert(m, payload);
                node.ep.bundle_stored(dur(at), id, &mut node.store);
            }
            let cfg = LinkConfig::profile(profile).unwrap();
            let rate = cfg.up.rate_bps.min(cfg.down.rate_bps) as f64 / 8.0;
            // Six times the air time of the payloads, plus set-up: far above what any
            // profile needs (uhf-csma, the slowest for its rate, takes about 3x).
            // The modem, paced by the driver's estimate (which counts its drain only a
            // latency and a turnaround later), gets 8 times.
            let factor = if cfg.kind == LinkKind::Stream {
                8.0
            } else {
                6.0
            };
            let bound = Duration::from_secs_f64(3.0 + factor * total as f64 / rate + 20.0);
            let t = run_until_synced(&mut p, 6, bound * 2);
            eprintln!("{profile} seed {seed}: {total} B: {t:?}");
            assert!(
                t.is_some_and(|t| t <= bound),
                "seed {seed}: {profile}: {total} B in 6 bundles took {t:?} (bound {bound:?})"
            );
        }
    }
}

/// A bottleneck queue far below one BDP (30 KB on lfn, 0.035 BDP) drops much of what a
/// sender paced at its estimate sends; the transfer must still finish, without resending
/// what the receiver holds over and over.
#[test]
fn a_shallow_bottleneck_buffer_does_not_livelock() {
    let size = 15_000_000;
    let mut p = pair(
        "profile=lfn,buffer=30000B",
        1,
        store_with(0, 1, size),
        MemStore::new(),
    );
    let t = run_until_synced(&mut p, 1, Duration::from_secs(60));
    let a = p.sim.node::<SimNode<MemStore>>(p.a).unwrap();
    let b = p.sim.node::<SimNode<MemStore>>(p.b).unwrap();
    eprintln!(
        "{t:?} path drops {}\nA {:?}\nB {:?}\n{:?}",
        a.path_drops,
        a.ep.stats(),
        b.ep.stats(),
        a.ep.describe_sessions()
    );
    let t = t.expect("not done in 60 s");
    assert!(t < Duration::from_secs(20), "took {t:?}");
}

/// A side that holds nothing has nothing to reconcile: the other side pushes its whole
/// set, and neither sends reconciliation symbols (an empty set's symbols only describe
/// what the push carries anyway), whichever side's key makes it the one that streams
/// them. (Point-to-point links; see `start_session` for shared channels.)
#[test]
fn an_empty_side_skips_reconciliation() {
    for (seed, a_full) in [(1, true), (2, false), (3, true), (4, false)] {
        let (sa, sb) = if a_full {
            (store_with(0, 20, 100), MemStore::new())
        } else {
            (MemStore::new(), store_with(0, 20, 100))
        };
        let mut p = pair("lan", seed, sa, sb);
        let t = run_until_synced(&mut p, 20, Duration::from_secs(60));
        assert!(t.is_some(), "seed {seed}: no sync in 60 s");
        for n in [p.a, p.b] {
            let st = p
                .sim
                .node::<SimNode<MemStore>>(n)
                .unwrap()
                .ep
                .stats()
                .clone();
            assert_eq!(st.sent_by_type[2], 0, "seed {seed}: symbols sent: {st:?}");
        }
    }
}

/// Frames of 150 B hold no HELLO with its whole sketch (174 B): the HELLO goes with
/// what fits, and the session starts (it used to stay silent forever).
#[test]
fn frames_too_small_for_the_whole_sketch_still_sync() {
    let mut p = pair(
        "profile=uhf-csma,mtu=150B",
        1,
        store_with(0, 20, 100),
        store_with(1000, 20, 100),
    );
    let t = run_until_synced(&mut p, 40, Duration::from_secs(60));
    let t = t.expect("seed 1: 150 B frames did not sync in 60 s");
    assert!(t < Duration::from_secs(10), "took {t:?}");
}

/// Connects two nodes by `cfg`'s path with UDP links of `link_mtu` B datagrams that
/// discover the path's MTU.
fn attach_udp(sim: &mut Simulator, cfg: &LinkConfig, na: NodeId, nb: NodeId, link_mtu: usize) {
    let link = sim.connect(na, nb, cfg).unwrap();
    for n in [na, nb] {
        let port = sim.port(n, link).unwrap();
        sim.node_mut::<SimNode<MemStore>>(n).unwrap().attach(
            port,
            LinkAdapter::udp(skywave_node::IpLinkConfig {
                mtu: link_mtu,
                rate_bps: None,
                rtt: Duration::from_millis(100),
                discover_mtu: true,
            }),
        );
    }
}

/// Two nodes, 20 small bundles and one of 1 MB each, over the cellular profile's path
/// (MTU 1400) with UDP links configured for `link_mtu` B datagrams: the time to sync,
/// and the datagrams the path dropped as too large.
fn sync_through_a_1400_path(link_mtu: usize, seed: u64) -> (Duration, u64) {
    let cfg = LinkConfig::profile("cellular").unwrap();
    let mut sim = Simulator::new(seed);
    let mut a = store_with(0, 20, 200);
    fill(&mut a, 100, 1, 1_000_000);
    let mut b = store_with(1000, 20, 200);
    fill(&mut b, 1100, 1, 1_000_000);
    let na = sim.add_node(SimNode::new(Config::default(), node_key(1), 1, a));
    let nb = sim.add_node(SimNode::new(Config::default(), node_key(2), 2, b));
    attach_udp(&mut sim, &cfg, na, nb, link_mtu);
    let mut p = Pair { sim, a: na, b: nb };
    let t = run_until_synced(&mut p, 42, Duration::from_secs(60));
    let too_big: u64 = [p.a, p.b]
        .iter()
        .map(|&n| p.sim.node::<SimNode<MemStore>>(n).unwrap().path_too_big)
        .sum();
    let t = t.unwrap_or_else(|| panic!("link MTU {link_mtu}, seed {seed}: no sync in 60 s"));
    (t, too_big)
}

/// Path MTU probes (padded frames larger than the path may carry) are lost whenever the
/// size does not cross: a link whose MTU is far above the path's (loopback's route, a
/// jumbo-frame LAN: 16 KB) must sync as fast as one configured near the path's. A
/// probe once carried the session's HELLO and symbols (each lost cost a retry timer, 2 s
/// after a restart), and a 16 KB probe in a first window of 12 KB held every other frame
/// back until a timeout declared it lost.
#[test]
fn path_mtu_probes_cost_no_time_whatever_the_interface_mtu() {
    for seed in 1..=3 {
        let (near, _) = sync_through_a_1400_path(1472, seed);
        let (far, too_big) = sync_through_a_1400_path(16_359, seed);
        eprintln!("seed {seed}: link MTU 1472 {near:?}, 16359 {far:?} ({too_big} too big)");
        assert!(
            far.as_secs_f64() <= near.as_secs_f64() * 1.15 + 0.1,
            "seed {seed}: a 16 KB link MTU took {far:?} against {near:?}"
        );
        // The search's probes, two per size tried, for both sides.
        assert!(
            too_big <= 2 * 2 * 8,
            "seed {seed}: {too_big} datagrams too large"
        );
    }
}

/// A UDP link configured for 1472 B datagrams (the daemon's default) over a path whose
/// MTU is 1400 (cellular): every full-sized datagram is dropped on the way. The sender
/// starts at 1200 B and probes up to what the path carries (it used to hang, reporting
/// nothing).
#[test]
fn a_path_mtu_smaller_than_configured_is_found() {
    let cfg = LinkConfig::profile("cellular").unwrap();
    let mut sim = Simulator::new(1);
    let size = 2_000_000;
    let na = sim.add_node(SimNode::new(
        Config::default(),
        node_key(1),
        1,
        store_with(0, 1, size),
    ));
    let nb = sim.add_node(SimNode::new(
        Config::default(),
        node_key(2),
        2,
        MemStore::new(),
    ));
    attach_udp(&mut sim, &cfg, na, nb, 1472);
    let mut p = Pair { sim, a: na, b: nb };
    let t = run_until_synced(&mut p, 1, Duration::from_secs(60));
    let a = p.sim.node::<SimNode<MemStore>>(p.a).unwrap();
    eprintln!("{t:?} path drops {} {:?}", a.path_drops, a.ep.stats());
    let t = t.expect("a 2 MB bundle did not cross a 1400 B path in 60 s");
    assert!(t < Duration::from_secs(10), "took {t:?}");
    // Found by probing up from 1200 B within 5 s (what the transfer's startup leaves
    // unsearched, `PING`s finish): within the search's end (1.5%) of the 1372 B the path
    // carries (1400 less the IPv4 and UDP headers), and never above it.
    p.sim.run_until(SimTime::from_nanos(5_000_000_000));
    let a = p.sim.node::<SimNode<MemStore>>(p.a).unwrap();
    let (mtu, settled) = a.ep.peer_infos()[0].path_mtu.expect("an IP path");
    assert!(
        settled && (1372 - 1372 / 64..=1372).contains(&mtu),
        "path MTU {mtu}"
    );
    // The probes that were too large are the only datagrams the path dropped for size:
    // each size above the path's tried at most twice, four at a time (10 at seed 1; 8
    // before startup waited for three pairs, which moves where the probes fall).
    assert!(
        a.path_too_big <= 12,
        "{} datagrams too large",
        a.path_too_big
    );
    // Startup's overshoot into the 1 BDP queue (startup goes on through the path's 3%
    // random loss, and its last round sends up to 2.9 BDP before the first loss is
    // seen): 10% of the frames sent, for a transfer of 8 BDP.
    let sent = a.ep.stats().frames_sent;
    assert!(
        a.path_drops * 100 <= sent * 12,
        "{} of {sent} datagrams dropped",
        a.path_drops
    );
}
