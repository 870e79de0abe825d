//! The node's fuzz targets on stable: every file of `fuzz/corpus/{stream,handshake,netkey}/`
//! is replayed.
//!
//! `cargo test -p skywave-node --test fuzz_corpus -- --ignored write_seed_corpus`
//! rewrites the seed files.

use skywave_node::framing::{self, OverEnd};
use skywave_node::fuzzing;

#[path = "../../../fuzz/corpus.rs"]
mod corpus;

use corpus::replay;

#[test]
fn stream_corpus() {
    replay("stream", fuzzing::stream);
}

#[test]
fn handshake_corpus() {
    replay("handshake", fuzzing::handshake);
}

#[test]
fn netkey_corpus() {
    replay("netkey", fuzzing::netkey);
}

/// Frame tags: each tag length's extremes and the default, over frames of every kind of
/// length (empty, one byte, shorter and longer than the tag), raw and already tagged.
fn netkey_seeds() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for (len, key) in [(0u8, 0u8), (4, 7), (28, 0xff), (200, 0x5a)] {
        for body in [&b""[..], b"x", b"short", &[0xc0; 40], &[0x11; 700]] {
            let mut b = vec![len, key, 0x34, 0x12, 0x07, 0x00];
            b.extend_from_slice(body);
            v.push(b);
        }
        // A frame that carries its own good tag: the raw read accepts it.
        let tag_len = skywave_node::netkey::MIN_TAG
            + usize::from(len)
                % (skywave_node::netkey::MAX_TAG - skywave_node::netkey::MIN_TAG + 1);
        let t = skywave_node::netkey::FrameTag::new(&[key; 32], tag_len).expect("in range");
        let mut f = b"a frame of the protocol".to_vec();
        t.append(&mut f);
        let mut b = vec![len, key, 0xff, 0xff, 0xff, 0xff];
        b.extend_from_slice(&f);
        v.push(b);
    }
    v
}

/// Handshake scripts: each set-up (XX, IK, a stale key; with and without a network key)
/// clean, then with losses, replays, forgeries, alterations and restarts.
fn handshake_seeds() -> Vec<Vec<u8>> {
    // Ops (see `fuzzing::handshake`): 0 seal, 1 deliver, 3 drop, 4 reorder, 5 replay,
    // 6 forge, 7 alter, 8 time, 9 restart, 10 duplicate; +128 for side B.
    let clean = [0u8, 1, 129, 1, 129, 128, 1, 8, 20, 0, 1];
    let hostile = [
        0u8, 10, 1, 1, 129, 5, 0, 1, 6, 40, 0x71, 1, 2, 3, 7, 5, 0, 9, 1, 3, 128, 132, 129, 8, 200,
        137, 0, 1, 129, 5, 3, 1, 135, 9, 0, 1, 0,
    ];
    let mut v = Vec::new();
    for cfg in 0u8..6 {
        for script in [&clean[..], &hostile[..]] {
            let mut b = vec![cfg];
            b.extend_from_slice(script);
            v.push(b);
        }
    }
    v
}

/// Framed protocol frames and announcements with noise between, and operation lists for
/// the modem (offers, takes, time, received announcements).
fn seeds() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    let mut s = b"\x00noise\x00".to_vec();
    framing::encode(&[skywave_proto::wire::VERSION, 0, 1, 2, 3], &mut s);
    OverEnd {
        after: 300,
        seq: 2,
        heard: 1,
        rank: 77,
        idle: false,
    }
    .encode(&mut s);
    framing::encode(&[0; 300], &mut s);
    s.extend_from_slice(&[1, 2, 3]);
    for (chunk, modem) in [(0u8, 0u8), (7, 0x21), (63, 0xc5)] {
        let mut b = vec![chunk, modem];
        b.extend_from_slice(&s);
        v.push(b);
    }
    // Offers, takes, time, a received announcement, idle, a reset.
    let ops = [
        0, 100, 4, 3, 200, 0, 4, 6, 10, 0, 1, 0, 0, 0, 0, 2, 3, 100, 0, 4, 1, 50, 4, 7, 4,
    ];
    for modem in [0u8, 0x3f, 0xe0] {
        let mut b = vec![5, modem];
        b.extend_from_slice(&ops);
        v.push(b);
    }
    let base = v.clone();
    for b in &base {
        let mut g = b.clone();
        let mid = g.len() / 2;
        g[mid] ^= 0x10;
        v.push(g);
    }
    v
}

#[test]
#[ignore = "writes fuzz/corpus/{stream,handshake,netkey}/seed-*; run by hand after a change"]
fn write_seed_corpus() {
    for (target, seeds) in [
        ("stream", seeds()),
        ("handshake", handshake_seeds()),
        ("netkey", netkey_seeds()),
    ] {
        corpus::write_seeds(target, &seeds);
    }
}

#[test]
fn seeds_run_clean() {
    for s in seeds() {
        fuzzing::stream(&s);
    }
    for s in handshake_seeds() {
        fuzzing::handshake(&s);
    }
    for s in netkey_seeds() {
        fuzzing::netkey(&s);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    /// Random scripts against the handshake: no panic, no forged or replayed frame
    /// opened, and a clean path afterwards always carries frames both ways.
    #[test]
    fn random_handshake_scripts(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
        fuzzing::handshake(&data);
    }

    /// Random scripts against the modem driver's writer (see `fuzzing::stream`): frames
    /// written whole, in order, and all of them once the call goes quiet.
    #[test]
    fn random_stream_scripts(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600)) {
        fuzzing::stream(&data);
    }

    /// Random inputs against the frame tag (see `fuzzing::netkey`).
    #[test]
    fn random_netkey_inputs(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
        fuzzing::netkey(&data);
    }
}
