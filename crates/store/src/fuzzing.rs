//! Body of the `stored` fuzz target: what the store reads back from its database
//! besides manifests (which the `manifest` target covers) — partial-transfer
//! checkpoints (the byte ranges held) and journal hash states. Replayed on stable by
//! `tests/fuzz_corpus.rs`. Not part of the API: hidden, no stability.

#![doc(hidden)]

use skywave_bundle::{JournalState, RangeSet, hash_payload};

/// The first byte picks what the rest is read as:
///
/// - even: a checkpoint's ranges. What decodes is sorted, non-empty, separated ranges
///   whose encoding is exactly the bytes read; its coverage adds up and what it lacks
///   of its extent is the complement.
/// - odd: a journal hash state. What decodes re-encodes to the same bytes and can go on
///   hashing. Separately, the bytes as a journal: a state saved after any prefix and
///   read back hashes the rest to the payload's own hash.
pub fn stored(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    if sel & 1 == 0 {
        ranges(rest);
    } else {
        journal(sel, rest);
    }
}

fn ranges(b: &[u8]) {
    let Some((r, n)) = RangeSet::decode(b) else {
        return;
    };
    assert!(n <= b.len());
    assert_eq!(r.encode(), b[..n], "a checkpoint decoded from other bytes");
    let v: Vec<(u64, u64)> = r.iter().collect();
    for w in v.windows(2) {
        assert!(w[0].1 < w[1].0, "ranges overlap or touch: {w:?}");
    }
    let mut sum = 0u64;
    for &(s, e) in &v {
        assert!(s < e);
        sum += e - s;
    }
    assert_eq!(r.covered(), sum);
    if let Some(&(_, end)) = v.last() {
        let missing: u64 = r.missing(end).iter().map(|(s, e)| e - s).sum();
        assert_eq!(missing + sum, end);
        assert_eq!(r.is_complete(end), missing == 0);
    }
}

fn journal(sel: u8, b: &[u8]) {
    if let Ok(s) = JournalState::decode(b) {
        assert_eq!(s.encode(), b, "a journal state decoded from other bytes");
        let mut s = s;
        let before = s.len();
        s.update(&b[..b.len().min(3000)]);
        assert_eq!(s.len(), before + b.len().min(3000) as u64);
        let _ = s.finalize();
    }
    // A journal of 0..=4 KiB, cut anywhere: the saved state resumes to the right hash.
    let payload: Vec<u8> = b
        .iter()
        .cycle()
        .take(usize::from(sel) * 17)
        .copied()
        .collect();
    let cut = b
        .first()
        .map_or(0, |&c| usize::from(c) * 17)
        .min(payload.len());
    let mut s = JournalState::new();
    s.update(&payload[..cut]);
    let mut resumed = JournalState::decode(&s.encode()).expect("our own state decodes");
    assert_eq!(resumed, s);
    resumed.update(&payload[cut..]);
    assert_eq!(resumed.finalize(), hash_payload(&payload));
}
