//! Wall-clock speed of the simulator on the three reference workloads.
//!
//! `cargo run --release -p skywave-sim --example bench [hf|lan|mesh|mesh-paced]...`
//! (no argument: all). Exits non-zero if a budget is missed.

// Measuring wall time is the point of this binary; the library itself never reads a clock.
#![allow(clippy::disallowed_methods)]

use std::process::ExitCode;
use std::time::Instant;

use rand_core::RngCore;
use skywave_sim::{Adjacency, DropReason, LinkConfig, NodeId, RefEndpoint, SimTime, Simulator};

const SEED: u64 = 1;

struct Outcome {
    name: &'static str,
    virtual_s: f64,
    wall_s: f64,
    budget_s: f64,
    steps: u64,
    detail: String,
}

fn hf() -> Outcome {
    let cfg = LinkConfig::profile("hf-modem").unwrap();
    let start = Instant::now();
    let mut sim = Simulator::new(SEED);
    let a = sim.add_node(RefEndpoint::saturating(256));
    let b = sim.add_node(RefEndpoint::sink());
    let l = sim.connect(a, b, &cfg).unwrap();
    sim.run_until(SimTime::from_secs(1000));
    let wall = start.elapsed().as_secs_f64();
    let got = sim.node::<RefEndpoint>(b).unwrap().stats().recv_bytes;
    let st = sim.link_stats(l, a).unwrap();
    Outcome {
        name: "hf-modem, saturating sender, 1000 s virtual",
        virtual_s: 1000.0,
        wall_s: wall,
        budget_s: 0.5,
        steps: sim.steps(),
        detail: format!(
            "{got} B delivered ({:.1} B/s), {} call drops",
            got as f64 / 1000.0,
            st.call_drops
        ),
    }
}

fn lan() -> Outcome {
    let cfg = LinkConfig::profile("lan").unwrap();
    let total: u64 = 1_000_000_000;
    let start = Instant::now();
    let mut sim = Simulator::new(SEED);
    let a = sim.add_node(RefEndpoint::saturating(1500).with_limit(total));
    let b = sim.add_node(RefEndpoint::sink());
    sim.connect(a, b, &cfg).unwrap();
    while sim.node::<RefEndpoint>(b).unwrap().stats().recv_bytes < total && sim.step() {}
    let wall = start.elapsed().as_secs_f64();
    let v = sim.now().as_secs_f64();
    Outcome {
        name: "lan, 1 GB, saturating sender",
        virtual_s: v,
        wall_s: wall,
        budget_s: 10.0,
        steps: sim.steps(),
        detail: format!(
            "{:.3} Gbit/s virtual goodput, {:.0} MB/s simulated per wall second",
            total as f64 * 8.0 / v / 1e9,
            total as f64 / wall / 1e6
        ),
    }
}

fn mesh(paced: bool) -> Outcome {
    let cfg = LinkConfig::profile("uhf-csma").unwrap();
    let start = Instant::now();
    let mut sim = Simulator::new(SEED);
    let nodes: Vec<_> = (0..100u32)
        .map(|i| {
            // A random phase per radio: synchronised pacers would all collide.
            let phase = sim.node_rng(NodeId(i)).next_u64() % 892_000_000;
            sim.add_node(if paced {
                RefEndpoint::paced(2_000, 223).starting_at(SimTime::from_nanos(phase))
            } else {
                RefEndpoint::saturating(223)
            })
        })
        .collect();
    // 10 x 10 grid, radius 1.5: each radio hears its 8 surrounding radios (3 or 5 at the
    // edges), so there are hidden terminals two hops apart everywhere.
    let l = sim
        .add_medium(&nodes, Adjacency::grid(10, 10, 1.5), &cfg)
        .unwrap();
    sim.run_until(SimTime::from_secs(3600));
    let wall = start.elapsed().as_secs_f64();
    let (mut sent, mut delivered, mut coll, mut busy) = (0, 0, 0, 0);
    for &n in &nodes {
        let s = sim.link_stats(l, n).unwrap();
        sent += s.sent.frames;
        delivered += s.delivered.frames;
        coll += s.dropped(DropReason::Collision).frames;
        busy += s.dropped(DropReason::ReceiverBusy).frames;
    }
    Outcome {
        name: if paced {
            "uhf-csma 10x10 grid, 100 radios paced at 2 kbit/s, 1 h virtual"
        } else {
            "uhf-csma 10x10 grid, 100 saturating radios, 1 h virtual"
        },
        virtual_s: 3600.0,
        wall_s: wall,
        budget_s: 60.0,
        steps: sim.steps(),
        detail: format!(
            "{sent} transmissions, {delivered} receptions, {coll} lost to collisions, {busy} to busy receivers"
        ),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let want = |n: &str| args.is_empty() || args.iter().any(|a| a == n);
    let mut results = Vec::new();
    if want("hf") {
        results.push(hf());
    }
    if want("lan") {
        results.push(lan());
    }
    if want("mesh") {
        results.push(mesh(false));
    }
    if want("mesh-paced") {
        results.push(mesh(true));
    }
    let mut ok = true;
    for r in &results {
        let pass = r.wall_s < r.budget_s;
        ok &= pass;
        println!(
            "{}: {:.3} s wall for {:.1} s virtual (budget {} s, {}), {} events ({:.2} M events/s); {}",
            r.name,
            r.wall_s,
            r.virtual_s,
            r.budget_s,
            if pass { "ok" } else { "MISSED" },
            r.steps,
            r.steps as f64 / r.wall_s / 1e6,
            r.detail
        );
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
