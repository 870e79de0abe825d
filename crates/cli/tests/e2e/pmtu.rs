//! Path MTU discovery end to end: two real daemons over UDP through `skywave emulate`
//! set to a path MTU of 1280 (IPv4 + UDP headers counted: datagrams above 1252 B are
//! refused, as on a don't-fragment path); the bundle syncs and the sender's status shows
//! the path MTU found, with `--mtu 1472` or none (then the route's bound, 16,384 B on
//! loopback). Without the emulator, loopback's large datagrams arrive, sealed ones too.
//! And an `mtu` below the protocol's floor is refused at start-up.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::*;

#[test]
fn path_mtu_is_found_through_a_1280_byte_path() {
    found_through_a_1280_byte_path(&["--mtu", "1472"]);
}

/// With no `mtu` set, the search starts from what loopback's route carries (16,384 B),
/// ten times the path's: it still ends in time.
#[test]
fn path_mtu_is_found_through_a_1280_byte_path_from_the_routes_bound() {
    found_through_a_1280_byte_path(&[]);
}

fn found_through_a_1280_byte_path(mtu: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Daemon::start(tmp.path(), "rx", &["--listen", "udp://127.0.0.1:0"]);
    let emu = Emulator::udp(
        tmp.path(),
        "rate=50Mbps,delay=5ms,mtu=1280,buffer=256KiB",
        rx.udp(),
    );
    let peer = format!("udp://{}", emu.listen);
    let start = Instant::now();
    // --mtu: what discovery probes up to (the default, 1472, said explicitly).
    let tx = Daemon::start(
        tmp.path(),
        "tx",
        &["--listen", "udp://127.0.0.1:0", "--peer", &peer]
            .into_iter()
            .chain(mtu.iter().copied())
            .collect::<Vec<_>>(),
    );
    let data = payload(1_000_000, 41);
    let id = tx.add(&data, "big");

    let (mtu, found_at) = settled_path_mtu(&tx, start);
    eprintln!("path MTU {mtu} B settled {found_at:?} after start");
    assert!((1200..=1252).contains(&mtu), "path MTU {mtu}");
    assert!(
        found_at <= Duration::from_secs(5),
        "found after {found_at:?}"
    );

    assert_eq!(rx.wait_bundle(&id, SHORT), data);
    eprintln!("1 MB synced {:?} after start", start.elapsed());

    // The same figure in `skywave status` and `skywave peers --json`.
    let text = cli(&tx.dir, &["status"]);
    assert!(text.contains(&format!("mtu {mtu:>6}")), "{text}");
    let peers: serde_json::Value =
        serde_json::from_str(&cli(&tx.dir, &["--json", "peers"])).unwrap();
    assert_eq!(peers[0]["path_mtu"], mtu);
    assert_eq!(peers[0]["path_mtu_searching"], false);
}

#[test]
fn an_mtu_below_the_protocol_floor_is_refused_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("--dir")
        .arg(tmp.path().join("n"))
        .args(["daemon", "--http", "127.0.0.1:0"])
        .args(["--listen", "udp://127.0.0.1:0", "--mtu", "40"])
        .env_remove("SKYWAVE_HOME")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mtu") && err.contains("48"), "{err}");
    // Encrypted links need room for a handshake's keys besides.
    assert!(err.contains("at least 145 bytes"), "{err}");

    // On TCP links too (the largest frame); and with no IP link, --mtu has nothing to
    // set: refused rather than ignored.
    let run = |extra: &[&str]| {
        Command::new(BIN)
            .arg("--dir")
            .arg(tmp.path().join("n"))
            .args(["daemon", "--http", "127.0.0.1:0"])
            .args(extra)
            .env_remove("SKYWAVE_HOME")
            .output()
            .unwrap()
    };
    let out = run(&["--peer", "tcp://localhost:9", "--mtu", "100"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tcp") && err.contains("at least 145 bytes") && err.contains("48"),
        "{err}"
    );
    let out = run(&["--link", "serial:device=/dev/null", "--mtu", "500"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--mtu") && err.contains("UDP or TCP link"),
        "{err}"
    );

    let file = tmp.path().join("c.toml");
    std::fs::write(
        &file,
        "[[link]]\ntype = \"tcp\"\nlisten = \"127.0.0.1:0\"\nmtu = 32\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["config", "check"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tcp") && err.contains("48"), "{err}");
}

/// With no `mtu` set, what the route carries bounds the search: on loopback (MTU 65536)
/// the path settles at the most a node takes, far above Ethernet's 1472, and a sealed
/// datagram of that size (frame, counter and tag) is still taken whole (it was dropped
/// as oversize when the frame, not the datagram, was held to the limit).
#[test]
fn loopback_is_not_held_to_ethernet_and_its_largest_sealed_datagrams_arrive() {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Daemon::start(tmp.path(), "rx", &["--listen", "udp://127.0.0.1:0"]);
    let peer = format!("udp://{}", rx.udp());
    let tx = Daemon::start(
        tmp.path(),
        "tx",
        &["--listen", "udp://127.0.0.1:0", "--peer", &peer],
    );
    let data = payload(4_000_000, 43);
    let id = tx.add(&data, "big");
    assert_eq!(rx.wait_bundle(&id, SHORT), data);
    let (mtu, _) = settled_path_mtu(&tx, Instant::now());
    let max = skywave_node::adapter::MAX_DATAGRAM as u64;
    assert!(
        mtu + skywave_node::secure::DATA_OVERHEAD as u64 <= max,
        "path MTU {mtu}"
    );
    // Linux's loopback carries 65536 B unless set otherwise.
    let lo: u64 = std::fs::read_to_string("/sys/class/net/lo/mtu")
        .map_or(65536, |s| s.trim().parse().unwrap());
    if lo > 1500 {
        assert!(mtu > 1472, "path MTU {mtu} on a loopback of MTU {lo}");
    }
    let s = rx.status();
    let oversize: u64 = s.protocol.dropped.get("oversize").copied().unwrap_or(0)
        + s.links
            .iter()
            .map(|l| l.dropped.get("oversize").copied().unwrap_or(0))
            .sum::<u64>();
    assert_eq!(oversize, 0, "datagrams dropped as too large");
}

/// `tx`'s first peer's path MTU once its search has ended, and when that was seen
/// (from `start`).
fn settled_path_mtu(tx: &Daemon, start: Instant) -> (u64, Duration) {
    wait_for(
        "the sender to settle the peer's path MTU",
        Duration::from_secs(10),
        || {
            tx.check_alive();
            let s = tx.status();
            let p = s.peers.first()?;
            (p.path_mtu_searching == Some(false)).then(|| (p.path_mtu.unwrap(), start.elapsed()))
        },
    )
}
