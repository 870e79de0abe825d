//! VARA's command port: any bytes, in any chunking, give the same lines and garbage
//! count, never a panic, and never more than the cap handed to the modem.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_links::fuzzing::vara(data));
