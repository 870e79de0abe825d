//! Reconciliation symbols: honest sets peel to their exact difference; a peer's
//! arbitrary symbols leave the decoder consistent with the local set.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_proto::fuzzing::riblt(data));
