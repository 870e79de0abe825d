//! Trust with real daemons over loopback: a node not on a `trust = "keys"` list reads
//! and pushes nothing over UDP or TCP, `skywave trust rm` ends a session at once, a
//! stranger that completes a handshake with its own key cannot take an honest peer's
//! session by claiming that peer's node key, and captures of encrypted UDP and TCP
//! syncs hold none of the payload's or the name's bytes (while plaintext ones do: the
//! capture test can fail).
//!
//! The refused node keeps trying for `SKYWAVE_TRUST_TRY_SECS` seconds (10 by default;
//! the closing figure is 600).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::*;
use skywave_bundle::SecretKey;
use skywave_node::secure::{Channel, Policy, Sealed};
use skywave_proto::wire::{FrameWriter, Header};

fn write_config(root: &Path, name: &str, text: &str) -> PathBuf {
    let p = root.join(format!("{name}.toml"));
    std::fs::write(&p, text).unwrap();
    p
}

/// The node id `skywave init` prints for a new directory `root/name`.
fn init(root: &Path, name: &str) -> String {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let v: serde_json::Value = serde_json::from_str(&cli(&dir, &["--json", "init"])).unwrap();
    v["node"].as_str().unwrap().to_string()
}

fn dropped(d: &Daemon, why: &str) -> u64 {
    d.status().protocol.dropped.get(why).copied().unwrap_or(0)
}

fn try_secs() -> u64 {
    std::env::var("SKYWAVE_TRUST_TRY_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10)
}

#[test]
fn a_node_not_on_the_trust_list_reads_and_pushes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let b_id = init(root, "b");
    let c_id = init(root, "c");
    let cfg = write_config(
        root,
        "a",
        "[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\ntrust = \"keys\"\n\n\
         [[link]]\ntype = \"tcp\"\nlisten = \"127.0.0.1:0\"\ntrust = \"keys\"\n",
    );
    let a = Daemon::start(root, "a", &["--config", cfg.to_str().unwrap()]);
    let out = cli(&a.dir, &["trust", "add", &b_id, "base", "camp"]);
    assert!(out.contains("trusted"), "{out}");
    let ls = cli(&a.dir, &["trust", "ls"]);
    assert!(ls.contains(&b_id) && ls.contains("base camp"), "{ls}");

    let at_a = payload(40_000, 1);
    let x = a.add(&at_a, "held-at-a");
    let (udp_a, tcp_a) = (format!("udp://{}", a.udp()), format!("tcp://{}", a.tcp()));
    let b = Daemon::start(
        root,
        "b",
        &["--listen", "udp://127.0.0.1:0", "--peer", &udp_a],
    );
    let c = Daemon::start(
        root,
        "c",
        &[
            "--listen",
            "udp://127.0.0.1:0",
            "--peer",
            &udp_a,
            "--peer",
            &tcp_a,
        ],
    );
    let y = c.add(&payload(30_000, 2), "pushed-by-c");
    let at_b = payload(20_000, 3);
    let z = b.add(&at_b, "from-b");
    // The trusted node syncs both ways.
    assert_eq!(b.wait_bundle(&x, LONG), at_a);
    assert_eq!(a.wait_bundle(&z, LONG), at_b);
    let sa = a.status();
    let pb = sa
        .peers
        .iter()
        .find(|p| p.node == b_id)
        .expect("b is a peer");
    assert_eq!(pb.identity, "verified");

    // The stranger keeps trying (UDP retries, TCP reconnects) and gets nowhere.
    let start = Instant::now();
    let window = Duration::from_secs(try_secs());
    while start.elapsed() < window {
        c.check_alive();
        a.check_alive();
        assert!(!c.has(&x), "a bundle reached the untrusted node");
        assert!(!a.has(&y), "the untrusted node pushed a bundle");
        let sa = a.status();
        assert!(
            sa.peers.iter().all(|p| p.node != c_id),
            "the untrusted node became a peer: {:?}",
            sa.peers
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let (sa, sc) = (a.status(), c.status());
    assert!(
        dropped(&a, "untrusted_peer") >= 2,
        "{:?}",
        sa.protocol.dropped
    );
    assert_eq!(sc.protocol.bundles_received, 0);
    assert_eq!(sa.protocol.bundles_received, 1, "only b's bundle");
    assert_eq!(sc.store.bundles, 1);
    // C completes its half of an XX handshake (the responder judges the initiator's key
    // last) but never hears a frame from A: it has no peer at all.
    assert!(sc.peers.is_empty(), "{:?}", sc.peers);
    eprintln!(
        "untrusted node over {} s: {} refusals counted at a, {} bundles received by c",
        window.as_secs(),
        dropped(&a, "untrusted_peer"),
        sc.protocol.bundles_received
    );

    // C is told why it hears nothing: no answer, and A may not trust it.
    let l = wait_for("c to say why a does not answer", LONG, || {
        c.status()
            .links
            .into_iter()
            .find(|l| l.state == "no answer")
    });
    let why = l.reason.unwrap_or_default();
    assert!(
        why.contains("no answer from") && why.contains("trusts this node"),
        "{why}"
    );

    // Removing the trusted key ends its session: what it writes next does not arrive.
    let out = cli(&a.dir, &["trust", "rm", &b_id[..12]]);
    assert!(out.contains("removed"), "{out}");
    // Applied within a second: the session's link drops out of `established`.
    let b_port = b.udp().port().to_string();
    wait_for("a to end b's session", LONG, || {
        let s = a.status();
        let l = s.links.iter().find(|l| l.name.ends_with(&b_port))?;
        (l.encryption.as_deref() != Some("established")).then_some(())
    });
    let refused_before = dropped(&a, "untrusted_peer");
    let w = b.add(&payload(10_000, 4), "after-rm");
    wait_for("a to refuse b's new handshake", LONG, || {
        (dropped(&a, "untrusted_peer") > refused_before).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(!a.has(&w), "a bundle arrived from a removed key");
    // A says it is refusing on that link, and how to admit the peer.
    let l = wait_for("a to show the refusal", LONG, || {
        a.status().links.into_iter().find(|l| l.state == "refusing")
    });
    assert!(l.reason.unwrap_or_default().contains("trust add"));
}

/// Builds a HELLO frame naming `node` as the sender's key.
fn forged_hello(node: &[u8; 32]) -> Vec<u8> {
    let mut w = FrameWriter::new(Header::unaddressed(1), 1200);
    assert!(w.hello(node, 0x5eed, 0, 0, &[]));
    w.finish()
}

#[test]
fn a_stranger_claiming_an_honest_peers_key_does_not_move_its_session() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let a = Daemon::start(root, "a", &["--listen", "udp://127.0.0.1:0"]);
    let b = Daemon::start(
        root,
        "b",
        &[
            "--listen",
            "udp://127.0.0.1:0",
            "--peer",
            &format!("udp://{}", a.udp()),
        ],
    );
    b.wait_synced(1, LONG);
    let a_key: [u8; 32] = hex::decode(&a.status().node).unwrap().try_into().unwrap();
    let b_key: [u8; 32] = hex::decode(&b.status().node).unwrap().try_into().unwrap();
    // A transfer under way from A to B.
    let big = payload(3_000_000, 5);
    let id = a.add(&big, "big");

    // The stranger: its own key, a real handshake, then a HELLO claiming B's key.
    let me = SecretKey::from_bytes(&[0x77; 32]);
    let policy = Policy::new(me.x25519_secret(), me.x25519_public());
    let a_x = skywave_bundle::x25519_public_of(&a_key).unwrap();
    let mut chan = Channel::new(Some(a_x));
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let t0 = Instant::now();
    let now = || t0.elapsed();
    let mut established = false;
    let mut buf = [0u8; 2048];
    for _ in 0..20 {
        let mut out = Vec::new();
        let s = chan.seal(&policy, now(), &forged_hello(&b_key), &mut out);
        if !out.is_empty() {
            sock.send_to(&out, a.udp()).unwrap();
        }
        if s == Sealed::Data {
            established = true;
        }
        while let Ok((n, _)) = sock.recv_from(&mut buf) {
            let (mut frame, mut reply) = (Vec::new(), Vec::new());
            if let Ok(o) = chan.open(&policy, now(), &buf[..n], &mut frame, &mut reply)
                && o.established.is_some()
            {
                established = true;
            }
            if !reply.is_empty() {
                sock.send_to(&reply, a.udp()).unwrap();
            }
        }
        if established && dropped(&a, "wrong_identity") >= 3 {
            break;
        }
    }
    assert!(established, "the stranger's own handshake completes");
    assert!(
        dropped(&a, "wrong_identity") >= 1,
        "{:?}",
        a.status().protocol.dropped
    );
    // The honest session kept its link and finished its transfer.
    assert_eq!(b.wait_bundle(&id, LONG), big);
    let sa = a.status();
    let pb: Vec<_> = sa
        .peers
        .iter()
        .filter(|p| p.node == b.status().node)
        .collect();
    assert_eq!(pb.len(), 1, "{:?}", sa.peers);
    assert_eq!(pb[0].identity, "verified");
    let link = sa.links.iter().find(|l| l.id == pb[0].link).unwrap();
    assert!(
        link.name.contains(&b.udp().port().to_string()),
        "b's session stays on b's address: {link:?}"
    );
}

/// Every byte one way and the other between a peer and A, as relayed.
type Capture = Arc<Mutex<Vec<u8>>>;

/// A UDP relay: datagrams from anyone but `to` go to `to`; `to`'s go back to the last
/// sender. Runs until `stop`.
fn udp_relay(to: SocketAddr, cap: Capture, stop: Arc<AtomicBool>) -> SocketAddr {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let addr = s.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut back: Option<SocketAddr> = None;
        let mut buf = vec![0u8; 65536];
        while !stop.load(Ordering::Relaxed) {
            let Ok((n, from)) = s.recv_from(&mut buf) else {
                continue;
            };
            cap.lock().unwrap().extend_from_slice(&buf[..n]);
            if from == to {
                if let Some(b) = back {
                    let _ = s.send_to(&buf[..n], b);
                }
            } else {
                back = Some(from);
                let _ = s.send_to(&buf[..n], to);
            }
        }
    });
    addr
}

/// A TCP relay to `to`, copying (and capturing) both directions of each connection.
fn tcp_relay(to: SocketAddr, cap: Capture) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for inbound in l.incoming() {
            let Ok(inbound) = inbound else { continue };
            let Ok(outbound) = TcpStream::connect(to) else {
                continue;
            };
            for (mut r, mut w) in [
                (inbound.try_clone().unwrap(), outbound.try_clone().unwrap()),
                (outbound, inbound),
            ] {
                let cap = cap.clone();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 65536];
                    while let Ok(n) = r.read(&mut buf) {
                        if n == 0 || w.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        cap.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                    let _ = w.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
    addr
}

/// How many of `needles` occur in `hay`.
fn found(hay: &[u8], needles: &[&[u8]]) -> usize {
    needles
        .iter()
        .filter(|n| hay.windows(n.len()).any(|w| w == **n))
        .count()
}

/// Syncs one named bundle from A to B through a capturing relay (UDP or TCP); returns
/// how many of the name and 8 slices of the payload appear in the capture.
fn capture_sync(tcp: bool, plaintext: bool, seed: u64) -> (usize, usize) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let extra = if plaintext { "plaintext = true\n" } else { "" };
    let cfg = if tcp {
        format!("[[link]]\ntype = \"tcp\"\nlisten = \"127.0.0.1:0\"\n{extra}")
    } else {
        format!("[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\n{extra}")
    };
    let a = Daemon::start(
        root,
        "a",
        &["--config", write_config(root, "a", &cfg).to_str().unwrap()],
    );
    let cap: Capture = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let relay = if tcp {
        tcp_relay(a.tcp(), cap.clone())
    } else {
        udp_relay(a.udp(), cap.clone(), stop.clone())
    };
    let cfg_b = if tcp {
        format!("[[link]]\ntype = \"tcp\"\npeers = [\"{relay}\"]\n{extra}")
    } else {
        format!("[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\npeers = [\"{relay}\"]\n{extra}")
    };
    let b = Daemon::start(
        root,
        "b",
        &[
            "--config",
            write_config(root, "b", &cfg_b).to_str().unwrap(),
        ],
    );
    let name = format!("field-report-{seed}-do-not-leak");
    let data = payload(200_000, seed);
    let id = a.add(&data, &name);
    assert_eq!(b.wait_bundle(&id, LONG), data);
    stop.store(true, Ordering::Relaxed);
    let cap = cap.lock().unwrap().clone();
    assert!(cap.len() > data.len(), "the relay carried the sync");
    let slices: Vec<&[u8]> = (0..8).map(|i| &data[i * 25_000..i * 25_000 + 16]).collect();
    // A manifest's text travels packed (`skywave_bundle::text`): look for that form
    // (its whole bytes, without the length and the last, shared, byte) and the raw one.
    let mut packed = Vec::new();
    skywave_bundle::text::put(&mut packed, &name);
    let packed = &packed[1..packed.len() - 1];
    (
        found(&cap, &[name.as_bytes()]) + found(&cap, &[packed]),
        found(&cap, &slices),
    )
}

#[test]
fn captures_of_udp_and_tcp_syncs_hold_no_payload_or_name_bytes() {
    for tcp in [false, true] {
        let what = if tcp { "tcp" } else { "udp" };
        assert_eq!(
            capture_sync(tcp, false, 11),
            (0, 0),
            "{what}: bytes in clear"
        );
        // The same sync in plaintext shows them: the search finds what is there.
        let (names, slices) = capture_sync(tcp, true, 12);
        assert_eq!(names, 1, "{what} plaintext: the name is visible");
        assert_eq!(slices, 8, "{what} plaintext: the payload is visible");
    }
}

/// The kind byte of each first message the dialler sent, in order: for UDP each datagram
/// from anyone but `to` that starts a handshake; for TCP the first frame of each
/// connection (after its 2-byte length).
type Kinds = Arc<Mutex<Vec<u8>>>;

fn first_kinds_relay(tcp: bool, to: SocketAddr, kinds: Kinds) -> SocketAddr {
    if tcp {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for inbound in l.incoming() {
                let Ok(mut inbound) = inbound else { continue };
                let Ok(mut outbound) = TcpStream::connect(to) else {
                    continue;
                };
                let mut head = [0u8; 3];
                if inbound.read_exact(&mut head).is_err() || outbound.write_all(&head).is_err() {
                    continue;
                }
                kinds.lock().unwrap().push(head[2]);
                for (mut r, mut w) in [
                    (inbound.try_clone().unwrap(), outbound.try_clone().unwrap()),
                    (outbound, inbound),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut r, &mut w);
                        let _ = w.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        return addr;
    }
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = s.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut back: Option<SocketAddr> = None;
        let mut buf = vec![0u8; 65536];
        loop {
            let Ok((n, from)) = s.recv_from(&mut buf) else {
                continue;
            };
            if from == to {
                if let Some(b) = back {
                    let _ = s.send_to(&buf[..n], b);
                }
            } else {
                if n > 0 && skywave_node::secure::kind::is_first(buf[0]) {
                    kinds.lock().unwrap().push(buf[0]);
                }
                back = Some(from);
                let _ = s.send_to(&buf[..n], to);
            }
        }
    });
    addr
}

/// A node that dialled a peer before remembers the peer's key across a restart
/// (`known_peers`): its first handshake after the restart is IK, which carries its HELLO
/// in the first message, where first contact was XX, a round trip longer. (Before: the
/// keys lived in memory only, and every start met every peer with XX.)
#[test]
fn a_restarted_node_meets_a_peer_it_knew_with_the_one_round_trip_handshake() {
    use skywave_node::secure::kind;
    for tcp in [false, true] {
        let what = if tcp { "tcp" } else { "udp" };
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let cfg = if tcp {
            "[[link]]\ntype = \"tcp\"\nlisten = \"127.0.0.1:0\"\n".to_string()
        } else {
            "[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\n".to_string()
        };
        let a = Daemon::start(
            root,
            "a",
            &["--config", write_config(root, "a", &cfg).to_str().unwrap()],
        );
        let kinds: Kinds = Arc::default();
        let relay = first_kinds_relay(tcp, if tcp { a.tcp() } else { a.udp() }, kinds.clone());
        let cfg_b = if tcp {
            format!("[[link]]\ntype = \"tcp\"\npeers = [\"{relay}\"]\n")
        } else {
            format!("[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\npeers = [\"{relay}\"]\n")
        };
        let cfg_b = write_config(root, "b", &cfg_b);
        let mut b = Daemon::start(root, "b", &["--config", cfg_b.to_str().unwrap()]);
        let data = payload(10_000, 41);
        let id = a.add(&data, "before");
        assert_eq!(b.wait_bundle(&id, SHORT), data);
        let known = b.dir.join("known_peers");
        wait_for("b to write its known peers", SHORT, || {
            std::fs::read_to_string(&known)
                .ok()
                .filter(|t| t.contains(&relay.to_string()))
        });
        let before = kinds.lock().unwrap().clone();
        assert!(
            matches!(before.first(), Some(&(kind::XX1 | kind::XX1_AES))),
            "{what}: first contact is XX: {before:x?}"
        );
        b.restart(None);
        let data = payload(10_000, 42);
        let id = a.add(&data, "after");
        assert_eq!(b.wait_bundle(&id, SHORT), data);
        let after = kinds.lock().unwrap()[before.len()..].to_vec();
        assert!(
            matches!(after.first(), Some(&(kind::IK1 | kind::IK1_AES))),
            "{what}: after the restart: {after:x?}"
        );
    }
}
