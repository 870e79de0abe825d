//! Any bytes as a frame: parse never panics, and what parses re-encodes to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_proto::fuzzing::frame(data));
