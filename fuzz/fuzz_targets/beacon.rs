//! Datagrams as LAN discovery beacons: one parses exactly when it is a key's beacon.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| skywave_daemon::fuzzing::beacon(data));
