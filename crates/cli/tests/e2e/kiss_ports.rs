//! Several KISS ports over one TNC connection, under real daemons: node A's two `kiss`
//! links name the same two-port fake TNC (ports 0 and 1: two radio channels), node B is
//! on channel 1 only and node C on channel 0 only. A syncs with both over its one
//! connection, and B and C get each other's bundles through it. B's and C's TNCs hear
//! the other channel too: those frames, for a port no link of theirs is on, are
//! counted as dropped.

use crate::support::*;

/// Bytes per second on the fake channels: fast, so the test takes seconds.
const RATE: f64 = 4_000.0;

fn kiss_link(tnc: &str, port: u8, call: &str) -> String {
    format!(
        "[[link]]\ntype = \"kiss\"\ntnc = \"{tnc}\"\nport = {port}\ncallsign = \"N0CALL-{call}\"\namateur = true\nair_rate = 9600\n\n"
    )
}

#[test]
fn two_daemons_sync_over_port_1_of_a_shared_tnc_while_port_0_carries_a_third() {
    let (rt, tncs) = fake_tncs(3, RATE);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let confs = [
        kiss_link(&tncs.url(0), 0, "1") + &kiss_link(&tncs.url(0), 1, "11"),
        kiss_link(&tncs.url(1), 1, "2"),
        kiss_link(&tncs.url(2), 0, "3"),
    ];
    let daemons = start_configured(root, &confs);
    insert_each(&daemons, 3, 300);
    // A with both; B and C with each other, through A.
    daemons[0].wait_synced(2, LONG);
    wait_for("every node to hold all 9 bundles", LONG, || {
        daemons
            .iter()
            .all(|d| {
                d.check_alive();
                d.status().store.bundles == 9
            })
            .then_some(())
    });
    let a = daemons[0].status();
    assert_eq!(a.links.len(), 2);
    assert!(a.links.iter().all(|l| l.up), "{:?}", a.links);
    // Each peer on its own link: C on port 0 (link 0), B on port 1.
    let node = |d: &Daemon| d.status().node;
    let on = |n: &str| a.peers.iter().find(|p| p.node == n).map(|p| p.link);
    let (b_link, c_link) = (on(&node(&daemons[1])), on(&node(&daemons[2])));
    assert!(
        b_link.is_some() && c_link.is_some() && b_link != c_link,
        "{:?}",
        a.peers
    );
    assert_eq!(tncs.accepted(0), 1, "A opened its TNC once, for both ports");
    let s = tncs.stats(0);
    assert!(s.frames_in_port[0] > 0 && s.frames_in_port[1] > 0, "{s:?}");
    // B and C sent only on their own channel.
    assert_eq!(tncs.stats(1).frames_in_port[0], 0);
    assert_eq!(tncs.stats(2).frames_in_port[1], 0);
    // Each heard the other channel, on a port no link of theirs is on: counted.
    for d in &daemons[1..] {
        let l = &d.status().links[0];
        assert!(
            l.dropped.get("not_ours").copied().unwrap_or(0) > 0,
            "{}: {:?}",
            d.name,
            l.dropped
        );
    }
    drop(rt);
}

/// Two links on the same port of one TNC are refused before anything starts, naming
/// both; so is a serial device given two rates.
#[test]
fn links_clashing_on_a_tnc_are_refused_naming_both() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("d.toml");
    let tnc = "tcp://127.0.0.1:8001";
    for (text, want) in [
        (
            kiss_link(tnc, 1, "1")
                + &kiss_link("tcp://127.0.0.1:8002", 1, "2")
                + &kiss_link(tnc, 1, "3"),
            "port of link #3 (type = \"kiss\"), the same TNC as link #1",
        ),
        (
            kiss_link("/dev/ttyUSB9", 0, "1")
                + &kiss_link("/dev/ttyUSB9", 1, "2").replace("port = 1", "port = 1\nbaud = 19200"),
            "baud of link #2 (type = \"kiss\"), the same TNC as link #1",
        ),
    ] {
        std::fs::write(&conf, text).unwrap();
        let out = run(tmp.path(), &["config", "check", conf.to_str().unwrap()]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{err}");
        // The daemon refuses to start on it (killed if it ran instead).
        let mut child = std::process::Command::new(BIN)
            .arg("--dir")
            .arg(tmp.path().join("node"))
            .args(["daemon", "--http", "127.0.0.1:0", "--config"])
            .arg(&conf)
            .env_remove("SKYWAVE_HOME")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if started.elapsed() > SHORT {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert!(status.is_some_and(|s| !s.success()), "the daemon started");
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert!(err.contains(want), "{err}");
    }
}
