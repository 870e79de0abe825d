use super::*;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// Runs a reconciliation: returns (symbols needed, difference).
fn reconcile(local: &[u64], remote: &[u64]) -> (usize, Difference) {
    let mut l = Encoder::new();
    local.iter().for_each(|&x| {
        l.insert(x);
    });
    let mut r = Encoder::new();
    remote.iter().for_each(|&x| {
        r.insert(x);
    });
    let mut d = Decoder::new();
    for i in 0.. {
        d.push(r.symbol(i), &mut l);
        if d.is_decoded() {
            return (i + 1, d.difference());
        }
        assert!(
            i < 10 * (local.len() + remote.len()) + 100,
            "no convergence"
        );
    }
    unreachable!()
}

fn sets(seed: u64, shared: usize, a: usize, b: usize) -> (Vec<u64>, Vec<u64>, Vec<u64>, Vec<u64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut draw = |n: usize| (0..n).map(|_| rng.next_u64() & ID_MASK).collect::<Vec<_>>();
    let (s, ao, bo) = (draw(shared), draw(a), draw(b));
    let local = [s.clone(), ao.clone()].concat();
    let remote = [s, bo.clone()].concat();
    (local, remote, ao, bo)
}

#[test]
fn equal_sets_decode_from_one_symbol() {
    let (l, r, _, _) = sets(1, 1000, 0, 0);
    let (n, diff) = reconcile(&l, &r);
    assert_eq!(n, 1);
    assert_eq!(diff, Difference::default());
}

#[test]
fn finds_both_sides_of_the_difference() {
    let (l, r, mut lo, mut ro) = sets(2, 10_000, 100, 100);
    let (n, diff) = reconcile(&l, &r);
    lo.sort_unstable();
    ro.sort_unstable();
    assert_eq!(diff.local_only, lo);
    assert_eq!(diff.remote_only, ro);
    // ~1.35-1.7 d symbols of 9 bytes: well within the 4 KB budget for d = 200.
    assert!(n * SYMBOL_LEN <= 3200, "{n} symbols");
    assert!(n >= 200);
}

#[test]
fn overhead_is_near_the_paper() {
    let mut total = 0;
    for seed in 0..20 {
        let (l, r, _, _) = sets(100 + seed, 500, 50, 50);
        total += reconcile(&l, &r).0;
    }
    let per = total as f64 / 20.0 / 100.0;
    assert!((1.0..1.9).contains(&per), "{per} symbols per differing id");
}

#[test]
fn incremental_updates_match_a_fresh_encoder() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let ids: Vec<u64> = (0..500).map(|_| rng.next_u64()).collect();
    let mut inc = Encoder::new();
    for &x in &ids[..300] {
        inc.insert(x);
    }
    inc.extend_to(200);
    for &x in &ids[300..] {
        inc.insert(x);
    }
    for &x in &ids[..50] {
        inc.remove(x);
    }
    inc.extend_to(400);
    let mut fresh = Encoder::new();
    for &x in &ids[50..] {
        fresh.insert(x);
    }
    for i in 0..400 {
        assert_eq!(inc.symbol(i), fresh.symbol(i), "symbol {i}");
    }
}

#[test]
fn symbols_round_trip_on_the_wire() {
    let s = Symbol {
        sum: 0x0000_0304_0506_0708,
        checksum: 0x00bb_ccdd,
    };
    let mut out = Vec::new();
    s.encode(&mut out);
    assert_eq!(out, [8, 7, 6, 5, 4, 3, 0xdd, 0xcc, 0xbb]);
    assert_eq!(Symbol::decode(out.as_slice().try_into().unwrap()), s);
}

#[test]
fn large_one_sided_difference_decodes() {
    // 600 ids only on the remote side: no count tells the sides apart, set membership does.
    let (l, r, _, mut ro) = sets(4, 100, 0, 600);
    let (_, diff) = reconcile(&l, &r);
    ro.sort_unstable();
    assert_eq!(diff.remote_only, ro);
    assert!(diff.local_only.is_empty());
}

#[test]
fn ids_are_48_bits() {
    let mut e = Encoder::new();
    assert!(e.insert(0xffff_0000_0000_0001));
    assert!(!e.insert(1), "the same 48-bit id");
    assert!(e.contains(1));
    assert_eq!(e.symbol(0).sum, 1);
}

#[test]
fn both_sides_decode_in_a_mixed_stream() {
    // Many seeds of a 10,000 + 100/100 difference: no false peel, exact difference.
    for seed in 10..20 {
        let (l, r, mut lo, mut ro) = sets(seed, 2000, 100, 100);
        let (n, diff) = reconcile(&l, &r);
        lo.sort_unstable();
        ro.sort_unstable();
        assert_eq!(diff.local_only, lo, "seed {seed}");
        assert_eq!(diff.remote_only, ro, "seed {seed}");
        assert!(n < 400, "seed {seed}: {n}");
    }
}

proptest::proptest! {
    #[test]
    fn converges_to_the_true_difference(
        seed: u64, shared in 0usize..300, a in 0usize..60, b in 0usize..60,
    ) {
        let (l, r, mut lo, mut ro) = sets(seed, shared, a, b);
        let (_, diff) = reconcile(&l, &r);
        lo.sort_unstable();
        ro.sort_unstable();
        proptest::prop_assert_eq!(diff.local_only, lo);
        proptest::prop_assert_eq!(diff.remote_only, ro);
    }
}

/// Symbols may come with gaps and late: lost frames of 8 symbols (every third, symbol 0
/// among them) that never come still decode, to the same difference; and when each lost
/// frame comes a frame late, decoding needs at most a frame more than without loss.
#[test]
fn symbols_with_gaps_decode_and_late_ones_fill_in() {
    for seed in 1..=20 {
        let (l, r, ao, bo) = sets(seed, 2000, 30, 25);
        let (clean, want) = reconcile(&l, &r);
        assert_eq!(want.local_only.len(), ao.len());
        assert_eq!(want.remote_only.len(), bo.len());
        for late in [false, true] {
            let mut le = Encoder::new();
            l.iter().for_each(|&x| {
                le.insert(x);
            });
            let mut re = Encoder::new();
            r.iter().for_each(|&x| {
                re.insert(x);
            });
            let mut d = Decoder::new();
            let mut held = Vec::new();
            let mut i = 0u64;
            while !d.is_decoded() {
                assert!(i < 5000, "seed {seed}, late {late}: no convergence");
                // With late symbols, symbol 0 is among the lost ones; without, it
                // alone of its frame arrives (it tells that the difference is whole).
                if (i / 8).is_multiple_of(3) && (late || i != 0) {
                    held.push(i);
                } else {
                    d.insert(i, re.symbol(i as usize), &mut le);
                }
                if late && i % 8 == 7 && (i / 8) % 3 == 1 {
                    for j in held.drain(..) {
                        d.insert(j, re.symbol(j as usize), &mut le);
                    }
                }
                i += 1;
            }
            assert_eq!(d.difference(), want, "seed {seed}, late {late}");
            if late {
                assert!(
                    d.received() <= clean + 16,
                    "seed {seed}: decoded at index {} against {clean} without loss",
                    d.received()
                );
            } else {
                assert!(d.first_gap().is_some());
            }
            // A symbol given twice changes nothing.
            d.insert(1, re.symbol(1), &mut le);
            assert_eq!(d.difference(), want);
        }
    }
}
