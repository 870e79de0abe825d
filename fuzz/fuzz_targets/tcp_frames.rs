//! A TCP link's length-prefixed frames: any bytes in any chunking give the same frames
//! or the same error, within bounds; frames sent come back intact.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_daemon::fuzzing::tcp_frames(data));
