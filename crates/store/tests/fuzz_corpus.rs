//! The `stored` fuzz target on stable: every file of `fuzz/corpus/stored/` is replayed.
//!
//! `cargo test -p skywave-store --test fuzz_corpus -- --ignored write_seed_corpus`
//! rewrites the seed files.

use skywave_bundle::{JournalState, RangeSet};
use skywave_store::fuzzing;

#[path = "../../../fuzz/corpus.rs"]
mod corpus;

#[test]
fn stored_corpus() {
    corpus::replay("stored", fuzzing::stored);
}

/// Checkpoints of a few shapes and journal states after a few lengths (a chunk, a
/// chunk and a byte, several subtrees), and truncated copies.
fn seeds() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    let mut r = RangeSet::new();
    v.push([vec![0], r.encode()].concat());
    r.insert(0, 1000);
    v.push([vec![0], r.encode()].concat());
    r.insert(5000, 5001);
    r.insert(1 << 40, (1 << 40) + 7);
    v.push([vec![2], r.encode()].concat());
    for len in [0usize, 1, 1024, 1025, 5000, 9 * 1024 + 3] {
        let mut s = JournalState::new();
        s.update(&vec![0x5a; len]);
        v.push([vec![1], s.encode()].concat());
    }
    v.push(vec![0xff, 3, 1, 4, 1, 5, 9, 2, 6]);
    let base = v.clone();
    for b in &base {
        if b.len() > 2 {
            v.push(b[..b.len() - 1].to_vec());
        }
    }
    v
}

#[test]
#[ignore = "writes fuzz/corpus/stored/seed-*; run by hand after a format change"]
fn write_seed_corpus() {
    corpus::write_seeds("stored", &seeds());
}

#[test]
fn seeds_run_clean() {
    for s in seeds() {
        fuzzing::stored(&s);
    }
}
