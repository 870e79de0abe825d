//! The network-key frame tag: `verify` never panics, a tagged frame verifies to itself,
//! and a flipped bit, a cut, another key or another tag length is refused.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_node::fuzzing::netkey(data));
