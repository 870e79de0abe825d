//! A peer lacking thousands of bundles: the transfers under way stay few (the rest wait
//! in a backlog whose operations do not grow with it), and the sending order is that of
//! the whole queue sorted (small bundles first).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::Net;
use skywave_proto::fuzzing::{Pair, Profile, held};

#[test]
fn thousands_queued_keep_few_transfers_under_way_and_small_ones_go_first() {
    const N: u64 = 3000;
    let mut pair = Pair::new(Profile::pick(0));
    let size = |i: u64| 100 + ((i * 7919) % 20) as usize * 100;
    for i in 0..N {
        pair.insert(0, i, 1, size(i));
    }
    // Arrival order, by the step in which each bundle was first seen held.
    let mut arrived: BTreeMap<_, usize> = BTreeMap::new();
    let mut most_under_way = 0;
    for step in 0..20_000 {
        if pair.run_clean(Duration::from_millis(5)) {
            break;
        }
        for k in held(&pair.nodes[1].store) {
            arrived.entry(k).or_insert(step);
        }
        for q in pair.nodes[0].queue_lengths() {
            most_under_way = most_under_way.max(q["out"]);
        }
    }
    assert!(pair.synced(), "not synced");
    for k in held(&pair.nodes[1].store) {
        arrived.entry(k).or_insert(usize::MAX);
    }
    // With every transfer under way, each frame would sort and scan all 3,000.
    assert!(
        most_under_way <= 400,
        "{most_under_way} transfers under way at once"
    );
    // Sizes of the bundles in arrival order: the first tenth is the smallest.
    let mut order: Vec<(usize, u64)> = arrived
        .iter()
        .map(|((id, _), step)| {
            let len = pair.nodes[1].store.held[id].1.len() as u64;
            (*step, len)
        })
        .collect();
    order.sort();
    let tenth = order.len() / 10;
    let mean = |s: &[(usize, u64)]| s.iter().map(|x| x.1).sum::<u64>() / s.len() as u64;
    let (first, last) = (mean(&order[..tenth]), mean(&order[order.len() - tenth..]));
    assert!(
        first * 4 < last,
        "first tenth averages {first} B, last tenth {last} B: not smallest first"
    );
}

/// A side whose HELLO counted nothing skips reconciliation, and the other, seeing an
/// empty peer, skips it too and leaves its set unbuilt. When the empty side stores
/// bundles between its HELLO and the session, it begins the round after all: the other
/// side then builds its set and both converge, whichever of them streams the symbols.
#[test]
fn a_round_begun_after_the_other_side_skipped_it_still_converges() {
    for profile in [0, 1, 3] {
        for empty in [0, 1] {
            let mut net = Net::new(2, profile);
            let full = 1 - empty;
            let mut want = Vec::new();
            for n in 0..40 {
                want.push(net.peers[full].insert(Duration::ZERO, 1000 + n, 1, 300));
            }
            net.connect(0, 1);
            // The empty side's HELLO goes out counting nothing; then it stores its own.
            net.run_until(Duration::from_secs(5), |n| {
                !n.log.is_empty() || n.now > Duration::from_millis(1)
            });
            let now = net.now;
            for n in 0..6 {
                want.push(net.peers[empty].insert(now, 2000 + n, 1, 200));
            }
            let converged = net.run_until(Duration::from_secs(600), |n| {
                want.iter()
                    .all(|id| n.peers[0].holds(id) && n.peers[1].holds(id))
            });
            assert!(
                converged,
                "profile {profile}, empty side {empty}: {} and {} of {} held",
                want.iter().filter(|id| net.peers[0].holds(id)).count(),
                want.iter().filter(|id| net.peers[1].holds(id)).count(),
                want.len()
            );
            for p in &net.peers {
                assert!(
                    p.received.values().all(|&n| n == 1),
                    "profile {profile}, empty side {empty}: a bundle received twice"
                );
            }
        }
    }
}
