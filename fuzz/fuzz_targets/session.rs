//! Two endpoints through a lossy, reordering, duplicating, corrupting link, driven by a
//! list of operations; then a clean phase after which both stores must hold the union.
//!
//! The input's first byte picks the link profile; the rest is the operation list, read
//! by `skywave_proto::fuzzing::Op::decode_all` (every byte string is a valid list, as
//! with `arbitrary::Unstructured`). The format is the crate's own so that each input the
//! fuzzer saves replays byte for byte in the stable test suite
//! (`crates/proto/tests/it/fuzz_corpus.rs`), which has no `arbitrary` dependency.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_proto::fuzzing::session_bytes(data));
