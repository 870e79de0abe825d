//! HTTP requests through the API's router on a temporary store: no panic, no internal
//! error, and nothing succeeds without the token.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_daemon::fuzzing::http(data));
