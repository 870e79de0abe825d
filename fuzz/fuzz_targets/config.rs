//! Configuration text, `--link` flags, `--peer`/`--listen` URLs, sizes, rates and
//! durations: no panic, deterministic, and what validates is within the protocol's floor.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_daemon::fuzzing::config(data));
