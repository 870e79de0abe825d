//! What the store reads back from disk besides manifests: partial-transfer checkpoints
//! and journal hash states decode canonically and stay consistent.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_store::fuzzing::stored(data));
