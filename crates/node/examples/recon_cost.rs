//! Reconciliation cost: 10,000 shared + 100 unique bundles at each of two nodes (issue
//! 4's target: at most 4 KB and one round trip, median over seeds).
//!
//! `cargo run --release -p skywave-node --example recon_cost [PROFILE] [SEEDS] [SHARED] [UNIQUE]`
//!
//! Runs the endpoints over the simulator until both sides know the difference: the
//! decoder has decoded (it knows both sides of it) and the streamer has heard its
//! answer (RECON_DONE or WANT: it knows what the peer lacks). Reports the bytes of
//! HELLO, SYMBOLS, RECON_DONE, RECON_MORE and WANT both sent by then, the one-way
//! messages, and the time from the first symbol to that point in round trips.

use std::time::Duration;

use skywave_bundle::{Manifest, SecretKey, SignedManifest, hash_payload};
use skywave_node::{SimNode, adapter_for};
use skywave_proto::{Config, Event, MemStore};
use skywave_sim::config::LinkConfig;
use skywave_sim::sim::Simulator;

const DATE: u64 = 1_795_305_600;

fn bundle(n: u64) -> (SignedManifest, Vec<u8>) {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&n.to_le_bytes());
    seed[9] = 0x52;
    let k = SecretKey::from_bytes(&seed);
    let payload = n.to_le_bytes().repeat(4);
    let m = Manifest::new(k.bundle_id(), 1, 32, hash_payload(&payload), DATE);
    (m.sign(&k).expect("valid manifest"), payload)
}

fn node_key(n: u8) -> [u8; 32] {
    let mut seed = [0u8; 32];
    seed[0] = n;
    seed[9] = 0x99;
    SecretKey::from_bytes(&seed).public()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let profile = args.next().unwrap_or_else(|| "lfn".into());
    let seeds: u64 = args.next().map_or(5, |a| a.parse().expect("SEEDS"));
    let shared: u64 = args.next().map_or(10_000, |a| a.parse().expect("SHARED"));
    let unique: u64 = args.next().map_or(100, |a| a.parse().expect("UNIQUE"));
    let cfg = LinkConfig::profile(&profile).expect("a link profile");
    let rtt = (cfg.up.delay + cfg.down.delay).as_secs_f64();
    let common: Vec<_> = (0..shared).map(bundle).collect();
    let mut rows = Vec::new();
    for seed in 1..=seeds {
        // Different bundles per seed for the unique ones.
        let base = 1_000_000 * seed;
        let mut stores = [MemStore::new(), MemStore::new()];
        for (i, s) in stores.iter_mut().enumerate() {
            for (m, p) in &common {
                s.insert(m.clone(), p.clone());
            }
            for j in 0..unique {
                let (m, p) = bundle(base + i as u64 * 100_000 + j);
                s.insert(m, p);
            }
        }
        let [a, b] = stores;
        let mut sim = Simulator::new(seed);
        let na = sim.add_node(SimNode::new(Config::default(), node_key(1), seed ^ 1, a));
        let nb = sim.add_node(SimNode::new(Config::default(), node_key(2), seed ^ 2, b));
        let link = sim.connect(na, nb, &cfg).expect("link");
        let mut seen_b = cfg.clone();
        std::mem::swap(&mut seen_b.up, &mut seen_b.down);
        for (n, seen) in [(na, &cfg), (nb, &seen_b)] {
            let port = sim.port(n, link).expect("port");
            sim.node_mut::<SimNode<MemStore>>(n)
                .expect("node")
                .attach(port, adapter_for(seen));
        }
        let mut decoded = false;
        let mut first_symbol: Option<f64> = None;
        let limit = Duration::from_secs(120);
        let mut result = None;
        let mut breakdown = String::new();
        while sim.step() {
            let now = Duration::from_nanos(sim.now().as_nanos());
            if now > limit {
                break;
            }
            let nodes = [na, nb].map(|n| sim.node::<SimNode<MemStore>>(n).expect("node"));
            if first_symbol.is_none() && nodes.iter().any(|n| n.ep.stats().sent_by_type[2] > 0) {
                first_symbol = Some(now.as_secs_f64());
            }
            decoded = decoded
                || nodes.iter().any(|n| {
                    n.events
                        .iter()
                        .any(|(_, e)| matches!(e, Event::Reconciled { .. }))
                });
            // The streamer has heard the answer when its session reports it stopped.
            let stopped = nodes.iter().any(|n| {
                n.ep.describe_sessions()
                    .iter()
                    .any(|s| s.contains("streamer true") && s.contains("stopped true"))
            });
            if decoded && stopped {
                let bytes: u64 = nodes.iter().map(|n| n.ep.stats().recon_bytes()).sum();
                let msgs: u64 = nodes.iter().map(|n| n.ep.recon_totals().1).sum::<u64>() / 2;
                let symbols = nodes
                    .iter()
                    .flat_map(|n| n.events.iter())
                    .find_map(|(_, e)| match e {
                        Event::Reconciled { symbols, .. } => Some(*symbols),
                        _ => None,
                    })
                    .unwrap_or(0);
                let sent_symbols: u64 = nodes.iter().map(|n| n.ep.stats().sent_by_type[2]).sum();
                let by =
                    |t: usize| -> u64 { nodes.iter().map(|n| n.ep.stats().sent_by_type[t]).sum() };
                breakdown = format!(
                    "HELLO {} B, SYMBOLS {} B, RECON_DONE {} B, RECON_MORE {} B, WANT {} B",
                    by(1),
                    by(2),
                    by(3),
                    by(11),
                    by(4)
                );
                let t = now.as_secs_f64() - first_symbol.unwrap_or(0.0);
                result = Some((bytes, msgs, symbols, sent_symbols, t / rtt));
                break;
            }
        }
        let (bytes, msgs, symbols, sent_sym, rts) = result.expect("reconciled within 120 s");
        println!(
            "{profile} seed {seed}: {bytes} B of reconciliation ({sent_sym} B of SYMBOLS, {symbols} symbols used), {msgs} messages, {rts:.2} round trips from the first symbol\n  {breakdown}"
        );
        rows.push((bytes, rts));
    }
    rows.sort_by_key(|r| r.0);
    let bytes: Vec<u64> = rows.iter().map(|r| r.0).collect();
    let mut rts: Vec<f64> = rows.iter().map(|r| r.1).collect();
    rts.sort_by(f64::total_cmp);
    let mid = rows.len() / 2;
    println!(
        "{shared} shared + {unique} unique each over {profile}: bytes min/median/max {}/{}/{}; round trips median {:.2} (target <= 4000 B, 1 round trip)",
        bytes[0],
        bytes[mid],
        bytes[bytes.len() - 1],
        rts[mid]
    );
}
