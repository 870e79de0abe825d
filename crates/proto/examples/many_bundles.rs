//! CPU cost of syncing many small bundles to an empty peer: two endpoints with in-memory
//! stores over an ideal 1 Gbit/s, 1 ms link in virtual time, so that only the protocol's
//! own work is measured (no sockets, no disk). Per-bundle work that grows with the set
//! shows as CPU time growing faster than the count.
//!
//! ```sh
//! cargo run --release -p skywave-proto --example many_bundles -- 10000 30000 100000
//! ```
//!
//! The bundles start on the node whose key sorts first; `FROM=1` puts them on the other
//! (one sender pushes what reconciliation found missing, the other is asked by WANT).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use skywave_proto::fuzzing::{Node, Profile, bundle};

fn main() {
    let counts: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("counts are whole numbers"))
        .collect();
    for n in if counts.is_empty() {
        vec![10_000]
    } else {
        counts
    } {
        run(n);
    }
}

fn run(count: u64) {
    let mut profile = Profile::pick(0);
    profile.rate_bps = 1_000_000_000;
    profile.params.rate_bps = Some(profile.rate_bps);
    profile.latency = Duration::from_millis(1);
    profile.params.rtt_hint = Duration::from_millis(2);
    let mut nodes = [Node::new(1, 0x1111), Node::new(2, 0x2222)];
    let from: usize = std::env::var("FROM").map_or(0, |v| v.parse().expect("FROM is 0 or 1"));
    let to = 1 - from;
    let t0 = Instant::now();
    for i in 0..count {
        let (m, p) = bundle(i, 1, 100);
        nodes[from].store.insert(m, p);
    }
    let fill = t0.elapsed();
    let mut now = Duration::ZERO;
    for n in &mut nodes {
        n.ep.link_up(now, 0, profile.params);
    }
    let mut queues: [VecDeque<(Duration, Vec<u8>)>; 2] = Default::default();
    let mut busy = [Duration::ZERO; 2];
    let t1 = Instant::now();
    let mut frames = 0u64;
    let limit = Duration::from_secs(3600);
    while (nodes[to].store.held.len() as u64) < count && now < limit {
        for to in 0..2 {
            while queues[to].front().is_some_and(|f| f.0 <= now) {
                let (_, f) = queues[to].pop_front().expect("checked");
                let n = &mut nodes[to];
                n.ep.handle_frame(now, 0, &f, &mut n.store);
                while n.ep.poll_event().is_some() {}
            }
        }
        for side in 0..2 {
            while busy[side] <= now {
                let n = &mut nodes[side];
                let Some(f) = n.ep.poll_transmit(now, 0, profile.params.mtu, &mut n.store) else {
                    break;
                };
                frames += 1;
                let ser = Duration::from_secs_f64(f.len() as f64 * 8.0 / profile.rate_bps as f64);
                busy[side] = now.max(busy[side]) + ser;
                queues[1 - side].push_back((busy[side] + profile.latency, f.to_vec()));
            }
        }
        let mut next = limit;
        for side in 0..2 {
            if let Some(f) = queues[side].front() {
                next = next.min(f.0);
            }
            if busy[side] > now {
                next = next.min(busy[side]);
            }
            if let Some(t) = nodes[side].ep.poll_timeout() {
                next = next.min(t);
            }
        }
        now = next.max(now + Duration::from_micros(10));
        for n in &mut nodes {
            n.ep.handle_timeout(now);
            while n.ep.poll_event().is_some() {}
        }
    }
    let cpu = t1.elapsed();
    println!(
        "{count} bundles: {} received in {:.2} s virtual, {:.2} s CPU ({:.1} us per bundle, {frames} frames); store fill {:.2} s",
        nodes[to].store.held.len(),
        now.as_secs_f64(),
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / count as f64,
        fill.as_secs_f64()
    );
}
