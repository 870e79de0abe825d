//! Scripts against two encrypted channels on a hostile path: nothing forged, altered,
//! reflected or replayed opens, and a clean path afterwards always carries frames.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_node::fuzzing::handshake(data));
