//! Any bytes as a signed manifest: what decodes is canonical and decodes again the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_proto::fuzzing::manifest(data));
