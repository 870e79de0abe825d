//! Byte-stream links (serial, HF modem): COBS/CRC deframing of any bytes, framing round
//! trips, and a half-duplex modem's transmit side fed hostile announcements.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_node::fuzzing::stream(data));
