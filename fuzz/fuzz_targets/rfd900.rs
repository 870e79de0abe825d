//! The RFD900 serial protocol (radio to host and host to radio) and its Reed-Solomon
//! code: chunking never changes what is parsed, frames round-trip, errors within the
//! code's reach are corrected.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_links::fuzzing::rfd900(data));
