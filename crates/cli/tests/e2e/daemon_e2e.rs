//! End-to-end: real `skywave daemon` processes syncing over UDP and TCP loopback, over a
//! pty through the real-clock emulator (serial framing, RFD900 framing against the
//! emulated radios), events seen live on another node, and a receiver killed with
//! SIGKILL mid-transfer that resumes without fetching again what it held.
//!
//! Every address is on loopback and every port is picked by the kernel (the daemons
//! report theirs in `DIR/daemon.json`). Waits poll with generous deadlines; nothing here
//! asserts on speed.

use std::time::Duration;

use crate::support::*;

/// Two daemons over UDP: a bundle added with `skywave add` on A arrives whole at B
/// (read back with `skywave get` and over HTTP), and one added over HTTP on B reaches A.
#[test]
fn two_daemons_over_udp() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Daemon::start(tmp.path(), "a", &["--listen", "udp://127.0.0.1:0"]);
    let peer = format!("udp://{}", a.udp());
    let b = Daemon::start(
        tmp.path(),
        "b",
        &["--listen", "udp://127.0.0.1:0", "--peer", &peer],
    );

    let data = payload(300_000, 1);
    let file = tmp.path().join("obs.bin");
    std::fs::write(&file, &data).unwrap();
    // The store verbs go through the running daemon.
    let id = cli(&a.dir, &["add", file.to_str().unwrap(), "--service", "e2e"])
        .trim()
        .to_string();
    assert_eq!(id.len(), 64, "{id}");
    assert!(a.has(&id));
    assert_eq!(b.wait_bundle(&id, SHORT), data);
    let out = tmp.path().join("got.bin");
    cli(&b.dir, &["get", &id, "-o", out.to_str().unwrap()]);
    assert_eq!(read(&out), data);
    let ls: serde_json::Value = serde_json::from_str(&cli(&b.dir, &["ls", "--json"])).unwrap();
    assert_eq!(ls[0]["id"], id.as_str());
    assert_eq!(ls[0]["name"], "obs.bin");
    assert_eq!(ls[0]["own"], false);

    let back = payload(5_000, 2);
    let id2 = b.add(&back, "back");
    assert_eq!(a.wait_bundle(&id2, SHORT), back);

    a.wait_synced(1, SHORT);
    b.wait_synced(1, SHORT);
    let (sa, sb) = (a.status(), b.status());
    assert_eq!(sa.peers[0].node, sb.node);
    assert_eq!(sb.peers[0].node, sa.node);
    assert_eq!(sb.links[0].kind, "udp");
    assert!(sb.links[0].up);
    assert_eq!(sb.protocol.bundles_received, 1);
    assert_eq!(
        sb.protocol.useful_bytes_received,
        300_000 + manifest_bytes(&a, &id)
    );
    assert_eq!(sa.protocol.bundles_received, 1);
    assert_eq!(sb.store.bundles, 2);
    assert_eq!(sb.store.partials, 0);
    // `skywave status --json` renders the same status.
    let st: serde_json::Value = serde_json::from_str(&cli(&b.dir, &["status", "--json"])).unwrap();
    assert_eq!(st["node"], sb.node.as_str());
}

/// A chain A - B - C over UDP, where A and C know nothing of each other: bundles from
/// either end reach the other through B.
#[test]
fn three_daemons_chained_over_udp_store_and_forward() {
    let tmp = tempfile::tempdir().unwrap();
    let b = Daemon::start(tmp.path(), "b", &["--listen", "udp://127.0.0.1:0"]);
    let peer = format!("udp://{}", b.udp());
    let a = Daemon::start(
        tmp.path(),
        "a",
        &["--listen", "udp://127.0.0.1:0", "--peer", &peer],
    );
    let c = Daemon::start(
        tmp.path(),
        "c",
        &["--listen", "udp://127.0.0.1:0", "--peer", &peer],
    );
    b.wait_synced(2, SHORT);

    let from_a = payload(200_000, 3);
    let id_a = a.add(&from_a, "from-a");
    let from_c = payload(70_000, 4);
    let id_c = c.add(&from_c, "from-c");
    assert_eq!(c.wait_bundle(&id_a, SHORT), from_a);
    assert_eq!(a.wait_bundle(&id_c, SHORT), from_c);
    assert_eq!(b.payload(&id_a).unwrap(), from_a);
    assert_eq!(b.payload(&id_c).unwrap(), from_c);

    // The ends were never peers: each heard only B.
    let (sa, sb, sc) = (a.status(), b.status(), c.status());
    assert!(sa.peers.iter().all(|p| p.node == sb.node), "{:?}", sa.peers);
    assert!(sc.peers.iter().all(|p| p.node == sb.node), "{:?}", sc.peers);
    assert_eq!(sc.protocol.bundles_received, 1);
    assert_eq!(sa.protocol.bundles_received, 1);
    assert_eq!(sb.protocol.bundles_received, 2);
}

/// Two daemons over one long-lived TCP connection.
#[test]
fn two_daemons_over_tcp() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Daemon::start(tmp.path(), "a", &["--listen", "tcp://127.0.0.1:0"]);
    let peer = format!("tcp://{}", a.tcp());
    let b = Daemon::start(tmp.path(), "b", &["--peer", &peer]);

    let data = payload(500_000, 5);
    let id = a.add(&data, "over-tcp");
    assert_eq!(b.wait_bundle(&id, SHORT), data);
    let back = payload(3_000, 6);
    let id2 = b.add(&back, "back");
    assert_eq!(a.wait_bundle(&id2, SHORT), back);

    let sb = b.status();
    let l = &sb.links[0];
    assert_eq!((l.kind.as_str(), l.up), ("tcp", true), "{l:?}");
    assert_eq!(l.name, format!("tcp:{}", a.tcp()));
    let sa = a.status();
    assert!(
        sa.links.iter().any(|l| l.kind == "tcp" && l.up),
        "{:?}",
        sa.links
    );
    assert_eq!(sa.peers[0].node, sb.node);
}

/// A full-duplex byte stream at 115200 bit/s with 20 ms of delay, emulated on the real
/// clock between two ptys; both daemons frame with `serial` (COBS + CRC).
#[test]
fn two_daemons_over_a_pty_through_the_emulator_with_serial_framing() {
    let tmp = tempfile::tempdir().unwrap();
    let pty = tmp.path().join("line");
    // The modem's buffer is 8 KiB rather than the default 1 BDP (576 B here): the
    // driver keeps two frames (over 500 B) queued in it, so on a loaded machine a late
    // emulator wake-up would overrun a 1 BDP buffer and drop the call. A spec has
    // commas, which `--link` splits on: it goes in a configuration file.
    let profile = "kind=stream,rate=115200bps,delay=20ms,buffer=8KiB,redial=1s";
    let ca = tmp.path().join("a.toml");
    std::fs::write(
        &ca,
        format!(
            "[[link]]\ntype = \"emulated\"\nprofile = \"{profile}\"\npeer_device = \"{}\"\n",
            pty.display()
        ),
    )
    .unwrap();
    let cb = tmp.path().join("b.toml");
    std::fs::write(
        &cb,
        format!(
            "[[link]]\ntype = \"serial\"\ndevice = \"{}\"\nbaud = 115200\nprofile = \"{profile}\"\n",
            pty.display()
        ),
    )
    .unwrap();
    let a = Daemon::start(tmp.path(), "a", &["-c", ca.to_str().unwrap()]);
    let b = Daemon::start(tmp.path(), "b", &["-c", cb.to_str().unwrap()]);

    let data = payload(12_000, 7);
    let id = a.add(&data, "over-serial");
    let back = payload(3_000, 8);
    let id2 = b.add(&back, "back");
    assert_eq!(b.wait_bundle(&id, LONG), data);
    assert_eq!(a.wait_bundle(&id2, LONG), back);

    let (sa, sb) = (a.status(), b.status());
    assert_eq!(sa.links[0].kind, "emulated");
    let l = &sb.links[0];
    assert_eq!((l.kind.as_str(), l.up), ("serial", true), "{l:?}");
    assert_eq!(l.rate_bps, Some(115_200));
    assert!(l.bytes_in > 12_000, "{l:?}");
    // The driver reports the frames it could not decode (none unless the emulated
    // modem dropped a call, which a badly late wake-up on a loaded machine can cause).
    assert!(l.dropped.contains_key("driver"), "{l:?}");
}

/// RFD900 framing against the emulated radios: daemon A runs an `emulated` link with
/// the `uhf-csma` profile (two radios on a 128 kbit/s channel), daemon B drives the far
/// radio through its pty with the `rfd900` driver.
#[test]
fn two_daemons_over_emulated_rfd900_radios() {
    let tmp = tempfile::tempdir().unwrap();
    let radio = tmp.path().join("radio");
    let a = Daemon::start(
        tmp.path(),
        "a",
        &[
            "--link",
            &format!("emulated:profile=uhf-csma,peer_device={}", radio.display()),
        ],
    );
    let b = Daemon::start(
        tmp.path(),
        "b",
        &["--link", &format!("rfd900:device={}", radio.display())],
    );

    let data = payload(16_000, 9);
    let id = a.add(&data, "over-radio");
    let back = payload(2_000, 10);
    let id2 = b.add(&back, "back");
    assert_eq!(b.wait_bundle(&id, LONG), data);
    assert_eq!(a.wait_bundle(&id2, LONG), back);

    let sb = b.status();
    let l = &sb.links[0];
    assert_eq!((l.kind.as_str(), l.up), ("rfd900", true), "{l:?}");
    assert_eq!(l.mtu, 223);
    // The radio's trailers reached the driver: RSSI is reported.
    assert!(l.rssi.is_some(), "{l:?}");
}

/// A bundle inserted over HTTP on A is announced in B's event stream once B has it:
/// followed with `skywave events` (a process) and with the library client.
#[test]
fn an_insert_on_one_daemon_is_an_event_on_another() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Daemon::start(tmp.path(), "a", &["--listen", "udp://127.0.0.1:0"]);
    let peer = format!("udp://{}", a.udp());
    let b = Daemon::start(tmp.path(), "b", &["--peer", &peer]);
    b.wait_synced(1, SHORT);

    // `--since 0` replays what happened so far (the link and the peer coming up): the
    // first line proves the follower is connected, so what follows is live.
    let cli_follower = Follower::start(&b.dir, &["--json", "events", "--since", "0"]);
    cli_follower.expect("a first event", SHORT, |_| true);
    let (tx, rx) = std::sync::mpsc::channel();
    let client = b.client.clone();
    std::thread::spawn(move || {
        let _ = client.follow_events(Some(0), |v| tx.send(v).is_ok());
    });
    rx.recv_timeout(SHORT)
        .expect("a first event from the client");

    let data = payload(40_000, 11);
    let id = a.add(&data, "announced");
    let is_ours = |v: &serde_json::Value| {
        v["kind"] == "bundle" && v["data"]["id"] == id.as_str() && v["data"]["source"] == "peer"
    };
    let line = cli_follower.expect("the bundle event", SHORT, |l| {
        serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| is_ours(&v))
    });
    let ev: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(ev["data"]["length"], 40_000);
    assert_eq!(ev["data"]["from"], a.status().node.as_str());
    let mut last = 0;
    let seen = wait_for("the bundle event from the client", SHORT, || {
        let v = rx.recv_timeout(Duration::from_millis(100)).ok()?;
        let n = v["id"].as_u64().unwrap();
        assert!(n > last, "event ids must increase: {n} after {last}");
        last = n;
        is_ours(&v).then_some(v)
    });
    assert_eq!(seen["id"], ev["id"]);
    // The event was sent once the bundle was committed: it is there to read.
    assert_eq!(b.payload(&id).unwrap(), data);
}

/// The receiver is killed with SIGKILL halfway through a 32 MB bundle (carried through
/// the UDP emulator at 48 Mbit/s so the transfer lasts a few seconds), then restarted on
/// the same port: the transfer completes, the payload is identical, and the bytes it
/// had made durable were not sent again.
#[test]
fn a_receiver_killed_mid_transfer_resumes_without_refetching_what_it_held() {
    const TOTAL: usize = 32_000_000;
    const MIB: u64 = 1 << 20;
    let tmp = tempfile::tempdir().unwrap();
    let ca = tmp.path().join("a.toml");
    std::fs::write(
        &ca,
        "[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\nrate = \"48Mbit/s\"\n",
    )
    .unwrap();
    let a = Daemon::start(tmp.path(), "a", &["-c", ca.to_str().unwrap()]);
    // B sends to the emulator, which forwards to A (A sees every datagram from the
    // emulator's own socket, B's restart included).
    let emu = Emulator::udp(
        tmp.path(),
        "rate=48Mbps,delay=2ms,mtu=1500,buffer=1MiB",
        a.udp(),
    );
    let peer = format!("udp://{}", emu.listen);
    let mut b = Daemon::start(
        tmp.path(),
        "b",
        &["--listen", "udp://127.0.0.1:0", "--peer", &peer],
    );
    b.wait_synced(1, SHORT);

    let data = payload(TOTAL, 12);
    let id = a.add(&data, "big");
    // Kill once past the store's automatic checkpoint (every 8 MiB of unsynced pieces).
    let (held, received_before) = wait_for("the receiver to hold 40% of the bundle", LONG, || {
        b.check_alive();
        let s = b.status();
        assert_eq!(s.store.bundles, 0, "the transfer finished before the kill");
        let t = s
            .transfers
            .iter()
            .find(|t| t.id == id && t.direction == "receive")?;
        (t.held_bytes >= TOTAL as u64 * 2 / 5)
            .then_some((t.held_bytes, s.protocol.piece_bytes_received))
    });
    let sent_at_kill = a.status().protocol.piece_bytes_sent;
    b.kill9();

    // What survived the crash: the checkpointed ranges of the partial transfer. Pieces
    // are durable (and count as held after a restart) once a checkpoint has fsynced
    // them; the store checkpoints at the latest every 8 MiB of unsynced pieces.
    let durable = {
        let mut st = skywave_store::Store::open(&b.dir, Default::default()).unwrap();
        let p = st.partials().unwrap();
        assert_eq!(p.len(), 1, "one partial transfer after the kill");
        p[0].held.covered()
    };
    assert!(
        durable > 0 && durable < TOTAL as u64 && durable + 9 * MIB >= held,
        "durable {durable} of {held} held at the kill"
    );

    let same_port = format!("udp://{}", b.udp());
    b.restart(Some(&["--listen", &same_port, "--peer", &peer]));
    assert_eq!(b.status().store.partials, 1);
    assert_eq!(b.wait_bundle(&id, LONG), data);

    let (sa, sb) = (a.status(), b.status());
    let missing = TOTAL as u64 - durable;
    let got = sb.protocol.piece_bytes_received;
    let sent_after = sa.protocol.piece_bytes_sent - sent_at_kill;
    eprintln!(
        "held {held} at the kill, {durable} durable; after the restart {got} received \
         ({} duplicate), {sent_after} sent ({} resent in all)",
        sb.protocol.duplicate_bytes_received, sa.protocol.piece_bytes_resent
    );
    // The restarted receiver was sent what it lacked and little more. Slack: pieces of
    // the first session still in flight when the new one began may arrive twice (the
    // emulator queues at most 1 MiB; the sender's window at 48 Mbit/s on a few ms of
    // round trip is smaller), plus 2% for loss recovery on a loaded machine.
    let slack = 2 * MIB + TOTAL as u64 / 50;
    assert!(
        got >= missing && got <= missing + slack,
        "received {got} after the restart; {missing} were missing (durable {durable})"
    );
    // The sender's view: after the kill it sent the missing bytes, plus what was in
    // flight to the dead receiver.
    assert!(
        sent_after <= missing + slack,
        "sent {sent_after} after the kill; {missing} were missing (durable {durable})"
    );
    // In all, not much more than the bundle crossed the link: at most the pieces held
    // but not yet checkpointed at the kill (under 8 MiB) came twice.
    assert!(
        received_before + got <= TOTAL as u64 + 9 * MIB + slack,
        "received {received_before} before and {got} after the restart"
    );
    assert_eq!(sb.store.partials, 0);
    assert_eq!(sb.protocol.bundles_received, 1);

    // Nothing is damaged on disk (fsck fails unless the store is clean).
    b.kill9();
    let fsck: serde_json::Value = serde_json::from_str(&cli(&b.dir, &["--json", "fsck"])).unwrap();
    assert_eq!(fsck["bundles_checked"], 1, "{fsck}");
    drop(emu);
}

/// The verbs that read through a running daemon send its token, and print peer-authored
/// text (a bundle's name, fields) without control characters; `--json` keeps it exact.
#[test]
fn verbs_through_the_daemon_send_the_token_and_print_no_control_characters() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Daemon::start(tmp.path(), "a", &["--listen", "udp://127.0.0.1:0"]);
    let file = tmp.path().join("x.bin");
    std::fs::write(&file, b"x").unwrap();
    let evil = "evil\x1b[2J\nfake row";
    let id = cli(
        &a.dir,
        &[
            "add",
            file.to_str().unwrap(),
            "--name",
            evil,
            "--field",
            "k=\u{202e}v\u{9b}",
        ],
    )
    .trim()
    .to_string();
    assert_eq!(id.len(), 64, "{id}");
    let ls = cli(&a.dir, &["ls"]);
    assert_clean(&ls);
    assert_eq!(ls.lines().count(), 2, "a header and one row: {ls:?}");
    assert!(ls.contains(r"evil\x1b[2J\nfake row"), "{ls:?}");
    let show = cli(&a.dir, &["show", &id[..8]]);
    assert_clean(&show);
    assert!(show.contains(r"\u{202e}v\u{9b}"), "{show:?}");
    let json: serde_json::Value = serde_json::from_str(&cli(&a.dir, &["ls", "--json"])).unwrap();
    assert_eq!(json[0]["name"], evil);
    assert_eq!(json[0]["fields"]["k"], "\u{202e}v\u{9b}");
    for verb in [
        &["status"][..],
        &["peers"],
        &["events", "--since", "0", "--count", "1"],
    ] {
        let out = cli(&a.dir, verb);
        assert_clean(&out);
        assert!(!out.is_empty(), "{verb:?}");
    }
    let mut got = Vec::new();
    assert_eq!(a.client.payload(&id, &mut got).unwrap(), 1);
    cli(&a.dir, &["get", &id]);
}

fn manifest_bytes(d: &Daemon, id: &str) -> u64 {
    let v: serde_json::Value = d.client.get_json(&format!("/v1/bundles/{id}")).unwrap();
    v["manifest_bytes"].as_u64().unwrap()
}
