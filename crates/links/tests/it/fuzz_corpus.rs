//! The `rfd900`, `hf_modem` and `vara` fuzz targets on stable: every file of their
//! `fuzz/corpus/<target>/` is replayed.
//!
//! `cargo test -p skywave-links --test it fuzz_corpus:: -- --ignored write_seed_corpus`
//! rewrites the seed files.

use skywave_links::RadioStatus;
use skywave_links::fuzzing;
use skywave_links::rfd900::{rs::Rs, wire};

#[path = "../../../../fuzz/corpus.rs"]
mod corpus;

use corpus::replay;

#[test]
fn rfd900_corpus() {
    replay("rfd900", fuzzing::rfd900);
}

#[test]
fn hf_modem_corpus() {
    replay("hf_modem", fuzzing::hf_modem);
}

#[test]
fn vara_corpus() {
    replay("vara", fuzzing::vara);
}

/// What a radio sends its host: coded frames with their trailers, status frames, noise.
fn seed_rfd900() -> Vec<Vec<u8>> {
    let st = RadioStatus {
        rssi: 200,
        remote_rssi: 150,
        temperature: 30,
        buffer_space: 2000,
    };
    let mut rs = Rs::new();
    let mut v = Vec::new();
    for (chunk, len) in [(0u8, 10usize), (5, 100), (39, 223)] {
        let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        let mut air = Vec::new();
        rs.encode(&data, &mut air);
        let mut b = vec![chunk];
        b.extend_from_slice(b"noise");
        b.extend_from_slice(&wire::heartbeat([1, 2, 3, 4, 5, 6]));
        wire::encode_rx(&air, st, &mut b);
        wire::encode_rx(&air[..20], st, &mut b);
        v.push(b);
    }
    let base = v.clone();
    for b in &base {
        for pos in [3, b.len() / 2, b.len() - 2] {
            let mut g = b.clone();
            g[pos] ^= 0x41;
            v.push(g);
        }
    }
    v
}

/// A modem's port: results of set-up commands, a ring, CONNECT, framed data, and
/// NO CARRIER, in a few chunkings and line endings.
fn seed_hf_modem() -> Vec<Vec<u8>> {
    let mut data = Vec::new();
    skywave_node::framing::encode(&[skywave_proto::wire::VERSION, 1, 2, 3, 0, 4], &mut data);
    let mut v = Vec::new();
    for (chunk, connect) in [
        (0u8, &b"CONNECT 2400\r\n"[..]),
        (3, b"CONNECT\r"),
        (7, b"CONNECT 300\n"),
        (31, b"CONNECT\r\n"),
    ] {
        let mut b = vec![chunk];
        b.extend_from_slice(b"\r\nOK\r\nOK\r\nERROR\r\nRING\r\n");
        b.extend_from_slice(connect);
        b.extend_from_slice(&data);
        b.extend_from_slice(&data);
        b.extend_from_slice(b"\r\nNO CARRIER\r\n");
        v.push(b);
    }
    // A call dropped at once: NO CARRIER in the same read as CONNECT.
    v.push(b"\x20CONNECT\r\nNO CARRIER\r\n".to_vec());
    v.push(b"\x05RING\r\nCONNECT\r\n\nxyNO CARR".to_vec());
    v
}

/// VARA's command port: set-up answers, a call, a session with BUFFER reports, busy,
/// pending, IAMALIVE, refusals and noise, in a few chunkings.
fn seed_vara() -> Vec<Vec<u8>> {
    let session: &[u8] = b"OK\rOK\rOK\rOK\rIAMALIVE\rBUSY ON\rBUSY OFF\rOK\rPENDING\rCONNECTED N0CALL-1 N0CALL-2 2300\rPTT ON\rBUFFER 306\rBUFFER 0\rPTT OFF\rBUFFER 306\rBUFFER 306\rDISCONNECTED\rVERSION 4.8\r";
    let mut v = Vec::new();
    for chunk in [0u8, 4, 17, 31] {
        let mut b = vec![chunk];
        b.extend_from_slice(session);
        v.push(b);
    }
    v.push(
        b"\x03WRONG\rOK\r\x00\xff\rBUFFER x\rCONNECTED\rOK\rOK\rOK\rWRONG\rDISCONNECTED\r".to_vec(),
    );
    let mut long = vec![9u8];
    long.extend(std::iter::repeat_n(b'A', 600));
    long.extend_from_slice(b"\r\nOK\n");
    v.push(long);
    v
}

#[test]
#[ignore = "writes fuzz/corpus/{rfd900,hf_modem,vara}/seed-*; run by hand after a format change"]
fn write_seed_corpus() {
    for (target, seeds) in [
        ("rfd900", seed_rfd900()),
        ("hf_modem", seed_hf_modem()),
        ("vara", seed_vara()),
    ] {
        corpus::write_seeds(target, &seeds);
    }
}

#[test]
fn seeds_run_clean() {
    for s in seed_rfd900() {
        fuzzing::rfd900(&s);
    }
    for s in seed_hf_modem() {
        fuzzing::hf_modem(&s);
    }
    for s in seed_vara() {
        fuzzing::vara(&s);
    }
}
