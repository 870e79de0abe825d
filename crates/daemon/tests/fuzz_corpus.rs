//! The daemon's fuzz targets on stable: every file of `fuzz/corpus/<target>/` for
//! `config`, `beacon`, `tcp_frames` and `http` is replayed.
//!
//! `cargo test -p skywave-daemon --test fuzz_corpus -- --ignored write_seed_corpus`
//! rewrites the seed files.

use skywave_daemon::fuzzing;

#[path = "../../../fuzz/corpus.rs"]
mod corpus;

use corpus::replay;

#[test]
fn config_corpus() {
    replay("config", fuzzing::config);
}

#[test]
fn beacon_corpus() {
    replay("beacon", fuzzing::beacon);
}

#[test]
fn tcp_frames_corpus() {
    replay("tcp_frames", fuzzing::tcp_frames);
}

#[test]
fn http_corpus() {
    replay("http", fuzzing::http);
}

fn seed_config() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = vec![skywave_daemon::config::EXAMPLE.as_bytes().to_vec()];
    for s in [
        "serial:device=/dev/ttyUSB0,baud=57600",
        "hf-modem:device=/dev/ttyS0,station=1234,channels=1+2",
        "rfd900:device=/dev/ttyUSB1,channel_access=radio",
        "udp://127.0.0.1:7474",
        "tcp://[::1]:7475",
        "30Mbit/s",
        "100MiB",
        "250ms",
        "quota = \"2GB\"\nhttp = \"127.0.0.1:7473\"\nhttp_hosts = [\"node.local\"]\n[[link]]\ntype = \"udp\"\nbind = \"0.0.0.0:7474\"\nmtu = 20\n",
        "[[link]]\ntype = \"tcp\"\nlisten = \"0.0.0.0:7475\"\nreconnect_max = \"1m\"\n[[link]]\ntype = \"emulated\"\n",
    ] {
        v.push(s.as_bytes().to_vec());
    }
    v
}

fn seed_beacon() -> Vec<Vec<u8>> {
    let b = b"SKYWAVE\x01"
        .iter()
        .copied()
        .chain([7u8; 32])
        .collect::<Vec<u8>>();
    let mut flipped = b.clone();
    flipped[7] = 2;
    vec![
        b.clone(),
        b[..39].to_vec(),
        flipped,
        [b.clone(), vec![0]].concat(),
    ]
}

fn seed_tcp_frames() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for sel in [4u8, 9, 23, 255] {
        let mut b = vec![sel];
        for len in [1u16, 40, 300] {
            b.extend_from_slice(&len.to_be_bytes());
            b.extend((0..len).map(|i| i as u8));
        }
        v.push(b);
    }
    v.push(vec![4, 0, 0, 1]);
    v.push(vec![3, 0xff, 0xff, 1, 2]);
    v
}

/// Requests: method index, flags (1 token, 2 Host, 4 Origin), route index, a path suffix
/// line, header lines, an empty line, the body.
fn seed_http() -> Vec<Vec<u8>> {
    let req = |m: u8, flags: u8, route: u8, suffix: &str, headers: &str, body: &[u8]| {
        let mut b = vec![m, flags, route];
        b.extend_from_slice(suffix.as_bytes());
        b.push(b'\n');
        b.extend_from_slice(headers.as_bytes());
        b.push(b'\n');
        b.extend_from_slice(body);
        b
    };
    let multipart = b"--XyZ\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nnotes.txt\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--XyZ--\r\n";
    vec![
        req(0, 3, 0, "", "", b""),
        req(0, 3, 0, "?limit=2&since=0&service=file", "", b""),
        req(0, 2, 0, "", "", b""),
        req(0, 1, 2, "", "", b""),
        req(0, 3, 9, "", "range: bytes=10-20\n", b""),
        req(2, 3, 9, "", "range: bytes=-5\n", b""),
        req(0, 3, 1, "zz", "", b""),
        req(0, 3, 8, "", "", b""),
        req(0, 3, 7, "", "", b""),
        req(0, 3, 6, "?since=0", "", b""),
        req(
            1,
            3,
            0,
            "",
            "content-type: multipart/form-data; boundary=XyZ\n",
            multipart,
        ),
        req(
            1,
            2,
            0,
            "",
            "content-type: multipart/form-data; boundary=XyZ\n",
            multipart,
        ),
        req(
            1,
            7,
            0,
            "",
            "content-type: multipart/form-data; boundary=XyZ\n",
            multipart,
        ),
        req(1, 3, 10, "", "", b"more lines\n"),
        req(1, 3, 10, "", "", b""),
        req(4, 3, 0, "", "", b""),
        req(0, 3, 0, "", "authorization: bearer x\n", b""),
    ]
}

#[test]
#[ignore = "writes fuzz/corpus/{config,beacon,tcp_frames,http}/seed-*; run by hand"]
fn write_seed_corpus() {
    for (target, seeds) in [
        ("config", seed_config()),
        ("beacon", seed_beacon()),
        ("tcp_frames", seed_tcp_frames()),
        ("http", seed_http()),
    ] {
        corpus::write_seeds(target, &seeds);
    }
}

#[test]
fn seeds_run_clean() {
    for s in seed_config() {
        fuzzing::config(&s);
    }
    for s in seed_beacon() {
        fuzzing::beacon(&s);
    }
    for s in seed_tcp_frames() {
        fuzzing::tcp_frames(&s);
    }
    for s in seed_http() {
        fuzzing::http(&s);
    }
}
