//! The committed corpus as the stable test suites read and write it: each crate's
//! `fuzz_corpus` test includes this file (`#[path]`), so the replay loop and the seed
//! writer are one piece of code for every target. Paths are from the including crate's
//! manifest (`crates/<crate>/`).

use std::path::PathBuf;

/// `fuzz/corpus/<target>/`.
pub fn dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../fuzz/corpus/{target}"))
}

/// Runs `run` on every file of the target's corpus, in name order; a panic names the
/// file (the input to debug). An empty or missing corpus fails.
pub fn replay(target: &str, run: fn(&[u8])) {
    let dir = dir(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("readable dir entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: empty corpus", dir.display());
    for f in files {
        let data = std::fs::read(&f).expect("readable corpus file");
        let ok = std::panic::catch_unwind(|| run(&data));
        assert!(ok.is_ok(), "{target} fails on {}", f.display());
    }
}

/// Writes `seeds` as the target's `seed-NNN` files.
pub fn write_seeds(target: &str, seeds: &[Vec<u8>]) {
    let dir = dir(target);
    std::fs::create_dir_all(&dir).expect("corpus dir");
    for (i, s) in seeds.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i:03}")), s).expect("write seed");
    }
}
