//! FEC symbols, honest, corrupted or arbitrary, into a payload decoder: errors are the
//! right ones, memory stays bounded, and honest symbols rebuild the payload.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_proto::fuzzing::fec(data));
