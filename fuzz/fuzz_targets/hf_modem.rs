//! An HF modem's serial port: command-mode lines, CONNECT, the call's data and NO
//! CARRIER read in any chunking give the same lines, data and end of call.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_links::fuzzing::hf_modem(data));
