//! The set sketch a HELLO carries, the estimate of the difference two sketches give,
//! and the size of reconciliation's first burst from it (docs/protocol.md, "Sessions and
//! reconciliation").

use std::collections::BTreeSet;

use skywave_bundle::BundleId;

use super::{HELLO_CELLS, LinkParams};

/// Hashes kept in the set sketch.
pub(super) const SKETCH_K: usize = 8;

/// Count cells in the set sketch.
pub(crate) const CELLS: usize = 32;

/// The bottom-k hash of a bundle version, and the cells it counts in (one bit each).
pub(super) fn sketch_hash(id: &BundleId, version: u64) -> (u64, u32) {
    let mut h = blake3::Hasher::new_derive_key("skywave set sketch v1");
    h.update(id.as_bytes());
    h.update(&version.to_le_bytes());
    let out = h.finalize();
    let b = out.as_bytes();
    (
        u64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
        u32::from_le_bytes(b[8..12].try_into().expect("4 bytes")),
    )
}

/// The HELLO sketch words: the count cells (u16 each, modulo 2^16, four per word),
/// then the bottom-k hashes.
pub(super) fn sketch_words(cells: &[u32; CELLS], hashes: &BTreeSet<u64>) -> Vec<u64> {
    let mut v: Vec<u64> = cells
        .chunks(4)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u64, |w, (i, &n)| w | (u64::from(n as u16) << (16 * i)))
        })
        .collect();
    v.extend(hashes.iter().copied());
    v
}

/// Splits a peer's HELLO sketch into count cells (if flagged) and bottom-k hashes.
pub(super) fn split_sketch(flags: u8, words: Vec<u64>) -> (Option<[u16; CELLS]>, Vec<u64>) {
    if flags & HELLO_CELLS == 0 || words.len() < CELLS / 4 {
        return (None, words);
    }
    let mut cells = [0u16; CELLS];
    for (i, c) in cells.iter_mut().enumerate() {
        *c = (words[i / 4] >> (16 * (i % 4))) as u16;
    }
    (Some(cells), words[CELLS / 4..].to_vec())
}

/// Estimated size of the symmetric difference of two sets from their sketches.
///
/// Bottom-k hashes measure the fraction of the union that differs, exactly when the
/// sets are disjoint but blind to a difference of a few percent. Count cells see small
/// differences: each element counts in a cell with probability 1/2, so a cell's count
/// difference has mean `(na − nb)/2` and variance `d/4`; `d ≈ 4·mean(Δ²) − (na − nb)²`
/// (relative error about `sqrt(2/CELLS)`). Large differing fractions take the hashes,
/// the rest the cells. Symmetric: both ends get the same estimate.
pub(super) fn estimate_set_difference(
    (a_cells, a): (&[u32; CELLS], &BTreeSet<u64>),
    na: u64,
    (b_cells, b): (Option<&[u16; CELLS]>, &[u64]),
    nb: u64,
) -> u64 {
    let from_hashes = estimate_difference(a, na, b, nb);
    let Some(b_cells) = b_cells else {
        return from_hashes;
    };
    let union = (na.saturating_add(nb)).max(1) as f64;
    if from_hashes as f64 >= 0.5 * union {
        return from_hashes;
    }
    let delta = na.abs_diff(nb).min(1 << 24) as f64;
    let mean_sq = a_cells
        .iter()
        .zip(b_cells)
        .map(|(&x, &y)| {
            let d = f64::from((x as u16).wrapping_sub(y) as i16);
            d * d
        })
        .sum::<f64>()
        / CELLS as f64;
    (4.0 * mean_sq - delta * delta).max(0.0).round() as u64
}

/// Estimated size of the symmetric difference from two bottom-k sketches.
pub(super) fn estimate_difference(a: &BTreeSet<u64>, na: u64, b: &[u64], nb: u64) -> u64 {
    if a.is_empty() || b.is_empty() {
        return na.max(nb);
    }
    // A claimed size is only a hint; an absurd one must not size anything.
    let nb = nb.min(na.saturating_add(1 << 24));
    let bset: BTreeSet<u64> = b.iter().copied().collect();
    // The k smallest of the union, k the fewer either sketch holds: each of them is then
    // in a sketch if in its set (a HELLO that had room for a few hashes carries its
    // smallest); with more, one past the shorter sketch's last counted as not shared.
    let k = SKETCH_K.min(a.len()).min(bset.len());
    let union: Vec<u64> = a.union(&bset).copied().take(k).collect();
    let both = union
        .iter()
        .filter(|h| a.contains(h) && bset.contains(h))
        .count();
    let j = both as f64 / union.len() as f64;
    (na.saturating_add(nb) as f64 * (1.0 - j) / (1.0 + j)).round() as u64
}

/// Symbols in the streamer's first burst, from the estimated difference `d_est`.
/// Rateless IBLT decodes a difference of d from about 1.35 d symbols.
pub(super) fn first_burst(
    params: Option<&LinkParams>,
    d_est: u64,
    streamer_set: u64,
    initial_burst: u64,
) -> u64 {
    if params.is_some_and(|l| l.half_duplex) {
        // Each extra burst costs two turnarounds: size the first generously.
        return (d_est.min(1 << 20) * 8 / 5 + initial_burst).min(8192);
    }
    // Full duplex: asking for more costs a round trip, and symbols sent past the
    // point of decoding are wasted airtime. Bounded by what the streamer's own set
    // can justify, not by a peer's claim: an honest decoder that needs more asks.
    let generous = d_est
        .min(1 << 24)
        .saturating_mul(3)
        .div_ceil(2)
        .saturating_add(32)
        .min(streamer_set.saturating_mul(2).saturating_add(4096));
    // Under a duty cycle a symbol costs its air many times over (at 1%, a second of air
    // is 100 s of waiting): there the burst is sized by cost. Elsewhere the generous
    // rule: a short burst on a contended channel costs more rounds than `rtt_hint`
    // counts (a chain of radios with hidden terminals took twice as long).
    match params.filter(|l| l.duty_limit().is_some()) {
        Some(l) => generous.min(burst_for_cost(l, d_est)),
        None => generous,
    }
}

/// Symbols decoding takes per id of the difference, about.
pub(super) const SYMBOLS_PER_ID: f64 = 1.38;

/// The first burst where one more symbol costs what it is expected to save, on a link
/// of known rate. The need is about `SYMBOLS_PER_ID * d + 2`, uncertain by the
/// estimate's error (`sqrt(2 / CELLS)`, relative) and a few symbols. A symbol costs its
/// air time, divided by the duty cycle where one applies (at 1% a second of air is 100 s
/// of waiting); a burst that falls short costs a round trip and about as many symbols
/// again (the decoder then asks for a burst as long as the first). The margin `z`
/// standard deviations above the mean need is where `pdf(z) = symbol cost x sd /
/// shortfall cost`: on fast paths it is wide (and the generous rule above binds), on a
/// duty-cycled LoRa channel under one standard deviation.
pub(super) fn burst_for_cost(l: &LinkParams, d_est: u64) -> u64 {
    let Some(rate) = l.rate_bps.filter(|&r| r > 0) else {
        return u64::MAX;
    };
    let duty = l.duty.unwrap_or(1.0).clamp(1e-4, 1.0);
    let symbol = crate::recon::riblt::SYMBOL_LEN as f64 * 8.0 / rate as f64 / duty;
    let mean = SYMBOLS_PER_ID * d_est.min(1 << 24) as f64 + 2.0;
    let sd = mean * (2.0 / CELLS as f64).sqrt() + 3.0;
    let short = l.rtt_hint.as_secs_f64() + mean * symbol;
    let pdf =
        (symbol * sd / short.max(f64::MIN_POSITIVE)).min(1.0 / (2.0 * std::f64::consts::PI).sqrt());
    let z = (-2.0 * (pdf * (2.0 * std::f64::consts::PI).sqrt()).ln())
        .max(0.0)
        .sqrt();
    (mean + z * sd).ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A HELLO with room for only a few hashes carries the smallest: the estimate takes
    /// as many of the union as the shorter sketch holds. Taking eight, the hashes past
    /// the third counted as not shared, and two equal sets of 1,000 looked ~900 apart.
    #[test]
    fn a_short_sketch_is_read_for_what_it_holds() {
        let hashes: BTreeSet<u64> = (1..=8u64).map(|i| i * 1000).collect();
        let short: Vec<u64> = hashes.iter().copied().take(3).collect();
        assert_eq!(estimate_difference(&hashes, 1000, &short, 1000), 0);
        // Disjoint sets still read as such.
        let other: Vec<u64> = vec![500, 1500, 2500];
        assert_eq!(estimate_difference(&hashes, 1000, &other, 1000), 2000);
    }

    #[test]
    fn a_duty_cycle_trims_the_first_burst_toward_the_need() {
        let mut l = crate::fuzzing::Profile::pick(2).params;
        l.rate_bps = Some(1758);
        l.rtt_hint = Duration::from_secs(3);
        for d in [5u64, 40, 200] {
            let need = (SYMBOLS_PER_ID * d as f64 + 2.0) as u64;
            let generous = first_burst(None, d, 1000, 48);
            // No duty cycle: the generous rule, whatever the rate.
            assert_eq!(first_burst(Some(&l), d, 1000, 48), generous);
            let mut last = generous;
            for duty in [0.1, 0.01, 0.001] {
                l.duty = Some(duty);
                let b = first_burst(Some(&l), d, 1000, 48);
                // Dearer symbols, never a larger burst; never below the mean need.
                assert!(
                    b <= last && b >= need,
                    "d {d}, duty {duty}: {b} ({need}..{last})"
                );
                last = b;
            }
            // At 1% the margin is under one standard deviation of the estimate.
            l.duty = Some(0.01);
            let b = first_burst(Some(&l), d, 1000, 48);
            let sd = need as f64 * (2.0 / CELLS as f64).sqrt() + 3.0;
            assert!((b as f64) < need as f64 + sd + 1.0, "d {d}: {b}");
            // Small differences, where the generous rule's 32 spare symbols weigh most.
            assert!(d >= 100 || b < generous, "d {d}: {b} vs {generous}");
            l.duty = None;
        }
        // Half duplex keeps its own rule.
        l.half_duplex = true;
        l.duty = Some(0.01);
        assert_eq!(first_burst(Some(&l), 40, 1000, 48), 40 * 8 / 5 + 48);
    }

    /// Cells and bottom-k hashes of bundles `ids` (version 1).
    fn sketch_of(ids: impl Iterator<Item = u64>) -> ([u32; CELLS], BTreeSet<u64>, u64) {
        let mut cells = [0u32; CELLS];
        let mut all = BTreeSet::new();
        let mut n = 0;
        for i in ids {
            let mut b = [0u8; 32];
            b[..8].copy_from_slice(&i.to_le_bytes());
            let (h, bits) = sketch_hash(&BundleId(b), 1);
            for (k, c) in cells.iter_mut().enumerate() {
                *c += (bits >> k) & 1;
            }
            all.insert(h);
            n += 1;
        }
        let hashes = all.into_iter().take(SKETCH_K).collect();
        (cells, hashes, n)
    }

    fn estimate(a: impl Iterator<Item = u64>, b: impl Iterator<Item = u64>) -> (u64, u64) {
        let (ac, ah, na) = sketch_of(a);
        let (bc, bh, nb) = sketch_of(b);
        // Through the HELLO encoding, both ways.
        let flags = HELLO_CELLS;
        let (bc16, bhv) = split_sketch(flags, sketch_words(&bc, &bh));
        let (ac16, ahv) = split_sketch(flags, sketch_words(&ac, &ah));
        (
            estimate_set_difference((&ac, &ah), na, (bc16.as_ref(), &bhv), nb),
            estimate_set_difference((&bc, &bh), nb, (ac16.as_ref(), &ahv), na),
        )
    }

    #[test]
    fn small_difference_of_large_sets_is_estimated_by_the_cells() {
        // 10,000 shared + 100 unique each: d = 200, invisible to 8 bottom hashes.
        for run in 0..4u64 {
            let base = run * 1_000_000;
            let (x, y) = estimate(
                (base..base + 10_100).map(|i| i * 3),
                (base..base + 10_000)
                    .chain(base + 20_000..base + 20_100)
                    .map(|i| i * 3),
            );
            assert_eq!(x, y, "run {run}: symmetric");
            assert!((80..=400).contains(&x), "run {run}: estimate {x}");
        }
    }

    #[test]
    fn disjoint_and_equal_sets_are_estimated_exactly() {
        let (x, y) = estimate(0..100, 1000..1100);
        assert_eq!((x, y), (200, 200));
        let (x, y) = estimate(0..5000, 0..5000);
        assert_eq!((x, y), (0, 0));
        // One side empty: everything the other holds.
        let (x, _) = estimate(0..0, 0..300);
        assert_eq!(x, 300);
    }
}
