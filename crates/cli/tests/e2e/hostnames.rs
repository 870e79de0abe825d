//! Peers by host name, end to end with real daemons: `--peer udp://localhost:PORT` and
//! `tcp://localhost:PORT` sync; a name that does not resolve is a reason in status and
//! a retry with backoff, never an exit; a name in a configuration file works as one on
//! the command line.

use crate::support::*;

#[test]
fn peers_named_localhost_sync_over_udp_and_tcp() {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Daemon::start(
        tmp.path(),
        "rx",
        &[
            "--listen",
            "udp://127.0.0.1:0",
            "--listen",
            "tcp://127.0.0.1:0",
        ],
    );
    let udp = format!("udp://localhost:{}", rx.udp().port());
    let tx = Daemon::start(
        tmp.path(),
        "tx",
        &["--listen", "udp://127.0.0.1:0", "--peer", &udp],
    );
    let data = payload(200_000, 21);
    let id = tx.add(&data, "by-name");
    assert_eq!(rx.wait_bundle(&id, SHORT), data);
    let s = tx.status();
    let l = &s.links[0];
    assert_eq!(
        l.name,
        format!(
            "udp:localhost:{} (127.0.0.1:{})",
            rx.udp().port(),
            rx.udp().port()
        ),
        "{l:?}"
    );
    assert!(l.up, "{l:?}");
    assert!(
        tx.log_tail().contains("peer name resolved"),
        "{}",
        tx.log_tail()
    );

    // TCP: the name is looked up at each connection attempt.
    let tcp = format!("tcp://localhost:{}", rx.tcp().port());
    let t2 = Daemon::start(tmp.path(), "t2", &["--peer", &tcp]);
    assert_eq!(t2.wait_bundle(&id, SHORT), data);
    let l = &t2.status().links[0];
    assert_eq!(
        (l.name.as_str(), l.up),
        (&*format!("tcp:localhost:{}", rx.tcp().port()), true)
    );

    // The same names in a configuration file.
    let conf = tmp.path().join("c.toml");
    std::fs::write(
        &conf,
        format!(
            "[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\npeers = [\"localhost:{}\"]\n",
            rx.udp().port()
        ),
    )
    .unwrap();
    let c = Daemon::start(tmp.path(), "c", &["-c", conf.to_str().unwrap()]);
    assert_eq!(c.wait_bundle(&id, SHORT), data);
}

#[test]
fn a_name_that_does_not_resolve_is_a_reason_and_a_retry_not_an_exit() {
    let tmp = tempfile::tempdir().unwrap();
    // .invalid never resolves (RFC 2606).
    let a = Daemon::start(
        tmp.path(),
        "a",
        &[
            "--listen",
            "udp://127.0.0.1:0",
            "--peer",
            "udp://nosuch.invalid:7474",
            "--peer",
            "tcp://nosuch.invalid:7475",
        ],
    );
    let (udp, tcp) = wait_for("both links to say why they are down", SHORT, || {
        let s = a.status();
        let reason = |name: &str| {
            s.links
                .iter()
                .find(|l| l.name == name)
                .and_then(|l| l.reason.clone())
        };
        let u = reason("udp:nosuch.invalid:7474").filter(|r| r.contains("cannot resolve"))?;
        let t = reason("tcp:nosuch.invalid:7475").filter(|r| r.contains("nosuch.invalid"))?;
        Some((u, t))
    });
    assert!(
        udp.contains("cannot resolve nosuch.invalid:7474") && udp.contains("trying again in"),
        "{udp}"
    );
    assert!(
        tcp.contains("resolving and connecting to nosuch.invalid:7475"),
        "{tcp}"
    );
    // It keeps trying (1 s, then about 2 s) and keeps running.
    wait_for("a second look-up", SHORT, || {
        a.check_alive();
        (a.log_tail()
            .matches("cannot resolve nosuch.invalid:7474")
            .count()
            >= 2)
            .then_some(())
    });
    let text = cli(&a.dir, &["status"]);
    assert!(
        text.contains("cannot resolve nosuch.invalid:7474"),
        "{text}"
    );
    a.check_alive();
}

#[test]
fn bad_peer_addresses_are_refused_naming_the_form() {
    let tmp = tempfile::tempdir().unwrap();
    for (url, why) in [
        ("udp://localhost", "no port"),
        ("udp://localhost:99999", "port"),
        ("tcp://bad_host!:7474", "host name"),
        ("udp://:7474", "no host"),
    ] {
        let out = std::process::Command::new(BIN)
            .arg("--dir")
            .arg(tmp.path().join("n"))
            .args(["daemon", "--http", "127.0.0.1:0", "--peer", url])
            .env_remove("SKYWAVE_HOME")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{url}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--peer")
                && err.contains(url)
                && err.contains(why)
                && err.contains("HOST:PORT"),
            "{url}: {err}"
        );
    }
}

/// A peer's name comes to point at another node: when the old one falls silent the
/// daemon looks the name up again and syncs with the new address. The daemon runs in
/// its own mount namespace with a hosts file of the test's bind-mounted on /etc/hosts
/// (root only: skipped elsewhere), so the name changes as DNS would change it.
#[test]
fn a_peer_whose_name_moves_is_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let hosts = tmp.path().join("hosts");
    std::fs::write(&hosts, "127.0.0.1 localhost\n127.0.0.1 movingpeer.test\n").unwrap();
    let mount = format!("mount --bind '{}' /etc/hosts", hosts.display());
    let probe = std::process::Command::new("unshare")
        .args(["--mount", "sh", "-c", &mount])
        .output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!(
            "skipped: cannot bind-mount a hosts file in a mount namespace here (needs root and unshare): {probe:?}"
        );
        return;
    }
    let mut old = Daemon::start(tmp.path(), "old", &["--listen", "udp://127.0.0.1:0"]);
    let port = old.udp().port();
    // The same port on another loopback address.
    let new = Daemon::start(
        tmp.path(),
        "new",
        &["--listen", &format!("udp://127.0.0.2:{port}")],
    );
    let script = format!("{mount} && exec \"$0\" \"$@\"");
    let tx = Daemon::start_wrapped(
        tmp.path(),
        "tx",
        &["unshare", "--mount", "sh", "-c", &script],
        &[
            "--listen",
            "udp://127.0.0.1:0",
            "--peer",
            &format!("udp://movingpeer.test:{port}"),
        ],
    );
    let first = payload(10_000, 31);
    let id1 = tx.add(&first, "first");
    assert_eq!(old.wait_bundle(&id1, SHORT), first);

    // Written in place: the bind mount follows the file's inode.
    std::fs::write(&hosts, "127.0.0.1 localhost\n127.0.0.2 movingpeer.test\n").unwrap();
    old.kill9();
    let second = payload(10_000, 32);
    let id2 = tx.add(&second, "second");
    assert_eq!(new.wait_bundle(&id2, LONG), second);
    assert_eq!(new.wait_bundle(&id1, SHORT), first);
    let l = &tx.status().links[0];
    assert_eq!(
        l.name,
        format!("udp:movingpeer.test:{port} (127.0.0.2:{port})"),
        "{l:?}"
    );
    let log = tx.log_tail();
    assert!(
        log.contains("peer silent: looking its name up again") && log.contains("peer moved"),
        "{log}"
    );
}
