//! Sealed payloads: opening arbitrary bytes never panics and agrees whole and streamed;
//! sealed bytes open to the plaintext and to nothing once altered.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_proto::fuzzing::sealed(data));
