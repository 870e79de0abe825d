//! A peer lacking thousands of bundles: the transfers under way stay few (the rest wait
//! in a backlog whose operations do not grow with it), and the sending order is that of
//! the whole queue sorted (small bundles first).

use std::collections::BTreeMap;
use std::time::Duration;

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
