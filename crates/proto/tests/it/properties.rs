//! Properties of transfer: each bundle is delivered exactly once over a lossy,
//! duplicating, reordering link; the pieces of a bundle reassemble in any order.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use proptest::prelude::*;
use skywave_bundle::BundleId;
use skywave_proto::fuzzing::{self, Op, Pair, Profile, Side};
use skywave_proto::store::{BundleStore, Offer, Written};
use skywave_proto::wire::BundleRef;
use skywave_proto::{Event, MemStore};

fn side() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::A), Just(Side::B)]
}

/// Link trouble without corruption: every frame that arrives is one that was sent.
fn lossy_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (side(), any::<u16>()).prop_map(|(from, max_len)| Op::Send { from, max_len }),
        8 => (side(), any::<u8>()).prop_map(|(to, index)| Op::Deliver { to, index }),
        2 => (side(), any::<u8>()).prop_map(|(to, index)| Op::Drop { to, index }),
        2 => (side(), any::<u8>()).prop_map(|(to, index)| Op::Duplicate { to, index }),
        1 => (side(), any::<u8>()).prop_map(|(to, index)| Op::Replay { to, index }),
        2 => (0u16..500).prop_map(|ms| Op::Advance { ms }),
        1 => (side(), 0u8..12, 0u8..2, 1u16..3000).prop_map(|(side, bundle, version, size)| {
            Op::Insert { side, bundle, version, size }
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// Whatever the link did before, a clean phase brings both sides to the union, and
    /// each side reports the newest version of each bundle it lacked exactly once (and
    /// never one it inserted itself).
    #[test]
    fn each_bundle_is_delivered_exactly_once(
        profile in 0u8..3,
        initial in prop::collection::vec((side(), 0u8..12, 1u16..1500), 1..8),
        ops in prop::collection::vec(lossy_op(), 0..150),
    ) {
        let mut p = Pair::new(Profile::pick(profile));
        // What each side inserted itself: it must never report receiving those.
        let mut own: [BTreeSet<(BundleId, u64)>; 2] = Default::default();
        let mut insert = |p: &mut Pair, side: Side, bundle: u8, version: u8, size: u16| {
            let i = side as usize;
            let before = fuzzing::held(&p.nodes[i].store);
            p.apply(&Op::Insert { side, bundle, version, size });
            own[i].extend(fuzzing::held(&p.nodes[i].store).difference(&before));
        };
        for (side, bundle, size) in initial {
            insert(&mut p, side, bundle, 0, size);
        }
        for op in &ops {
            if let Op::Insert { side, bundle, version, size } = *op {
                insert(&mut p, side, bundle, version, size);
            } else {
                p.apply(op);
            }
        }
        for side in [Side::A, Side::B] {
            p.apply(&Op::LinkUp { side });
        }
        prop_assert!(p.run_clean(Duration::from_secs(600)), "not synced: {:?}", p.inserted);
        for (i, n) in p.nodes.iter().enumerate() {
            // No version twice (collect_events also panics on that).
            prop_assert!(n.received.values().all(|&c| c == 1));
            for (id, v) in &p.inserted {
                let got = n.received.contains_key(&(*id, *v));
                let mine = own[i].contains(&(*id, *v));
                prop_assert_eq!(got, !mine, "node {} bundle {} v{}", i, id, v);
            }
        }
    }
}

/// Cuts `0..len` at `cuts` and returns the pieces, each `(offset, len)`.
fn pieces(len: usize, mut cuts: Vec<usize>) -> Vec<(usize, usize)> {
    cuts.iter_mut().for_each(|c| *c %= len.max(1));
    cuts.push(0);
    cuts.push(len);
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2).map(|w| (w[0], w[1] - w[0])).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The store: pieces in any order, with duplicates and overlaps, complete the bundle
    /// exactly once, with the right bytes.
    #[test]
    fn any_order_of_pieces_reassembles_in_the_store(
        len in 1usize..6000,
        cuts in prop::collection::vec(any::<usize>(), 0..40),
        extra in prop::collection::vec((any::<usize>(), 1usize..600), 0..10),
        order in any::<u64>(),
    ) {
        let (m, payload) = fuzzing::bundle(5, 1, len);
        let mut list = pieces(len, cuts);
        for (s, l) in extra {
            let s = s % len;
            list.push((s, l.min(len - s)));
        }
        shuffle(&mut list, order);
        let mut store = MemStore::new();
        prop_assert_eq!(store.offer(&m), Offer::Partial(Default::default()));
        let mut complete = 0;
        for (i, &(s, l)) in list.iter().enumerate() {
            let w = store.write(&m.id(), 1, s as u64, &payload[s..s + l]);
            match w {
                Written::Complete => complete += 1,
                Written::Stored => prop_assert_eq!(complete, 0, "stored after completion"),
                Written::Duplicate => {}
                other => prop_assert!(false, "piece {} ({}+{}): {:?}", i, s, l, other),
            }
        }
        prop_assert_eq!(complete, 1);
        prop_assert_eq!(&store.held[&m.id()].1, &payload);
        prop_assert!(store.partial.is_empty());
    }

}

proptest! {
    // Each case signs and verifies a manifest, which is slow in debug builds.
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The endpoint: a peer's PIECE frames in any order, with duplicates, complete the
    /// bundle and report it received once.
    #[test]
    fn any_order_of_piece_frames_reassembles_in_the_endpoint(
        len in 1usize..5000,
        cuts in prop::collection::vec(any::<usize>(), 0..30),
        dups in prop::collection::vec(any::<usize>(), 0..10),
        order in any::<u64>(),
    ) {
        let (m, payload) = fuzzing::bundle(6, 1, len);
        let mut net = common::Net::new(1, 1);
        net.peers[0].ep.link_up(net.now, 0, Profile::pick(1).params);
        let sender = [0xfe; 32];
        net.inject(0, 0, &common::hello(&sender, 1, 1));
        net.inject(0, 0, &common::frame(1, |w| {
            assert!(w.manifest(m.as_bytes()));
        }));
        let r = BundleRef::new(&m.id(), 1);
        // Pieces that fit a frame.
        let mut list: Vec<(usize, usize)> = pieces(len, cuts)
            .into_iter()
            .flat_map(|(s, l)| (s..s + l).step_by(1200).map(move |a| (a, 1200.min(s + l - a))))
            .collect();
        let n = list.len();
        for d in dups {
            list.push(list[d % n]);
        }
        shuffle(&mut list, order);
        for (i, &(s, l)) in list.iter().enumerate() {
            let f = common::frame(2 + i as u64, |w| {
                assert!(w.piece(&r, s as u64, &payload[s..s + l]));
            });
            net.inject(0, 0, &f);
        }
        let p = &net.peers[0];
        prop_assert!(p.holds(&m.id()), "not reassembled: {:?}", p.ep.stats());
        prop_assert_eq!(&p.store.held[&m.id()].1, &payload);
        let received = p
            .events
            .iter()
            .filter(|e| matches!(e, Event::Received { id, .. } if *id == m.id()))
            .count();
        prop_assert_eq!(received, 1);
        prop_assert_eq!(p.ep.stats().failed_transfers, 0);
    }
}

/// Fisher-Yates with a SplitMix64 stream from `seed`.
fn shuffle<T>(v: &mut [T], mut seed: u64) {
    for i in (1..v.len()).rev() {
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        v.swap(i, (z % (i as u64 + 1)) as usize);
    }
}

/// Two radios on one shared channel; from `jam_from` on, every frame either sends is
/// lost (they collide, again and again). Returns the instants at which each side put a
/// frame on the air while jammed.
fn retries_under_collisions(nonces: (u64, u64), jam_from: Duration) -> [Vec<Duration>; 2] {
    let mut pair = common::RadioPair::new(common::shared_radio(223, 0.0), nonces);
    for (side, n) in [(0usize, 10u64), (1, 20)] {
        for k in 0..5 {
            pair.insert(side, n + k, 600);
        }
    }
    let mut sends: [Vec<Duration>; 2] = Default::default();
    pair.run(jam_from + Duration::from_secs(300), |side, now, _| {
        if now >= jam_from {
            sends[side].push(now);
            false
        } else {
            true
        }
    });
    sends
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// No sequence of collisions makes a radio repeat itself: while every frame is lost,
    /// the waits between a side's transmissions never repeat exactly (random jitter),
    /// and they grow (exponential backoff) instead of hammering the channel.
    #[test]
    fn collided_retries_never_repeat_in_lockstep(
        n0 in any::<u64>(),
        n1 in any::<u64>(),
        jam_ms in 0u64..20_000,
    ) {
        let sends = retries_under_collisions((n0, n1), Duration::from_millis(jam_ms));
        for (side, s) in sends.iter().enumerate() {
            let mut instants: Vec<Duration> = s.clone();
            instants.dedup();
            let gaps: Vec<Duration> = instants.windows(2).map(|w| w[1] - w[0]).collect();
            for w in gaps.windows(2) {
                prop_assert_ne!(w[0], w[1], "side {}: two retries {:?} apart in a row ({:?})", side, w[0], gaps);
            }
            // Jammed for 300 s: a trickle, not a flood.
            prop_assert!(instants.len() <= 40, "side {}: {} transmissions in 300 s: {:?}", side, instants.len(), gaps);
        }
        // The two sides do not keep transmitting at the same instants.
        let mut both: Vec<&Duration> = sends[0].iter().filter(|t| sends[1].contains(t)).collect();
        both.dedup();
        prop_assert!(both.len() <= 2, "simultaneous sends {:?}", both);
    }
}
