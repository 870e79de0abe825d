//! "Why is it not syncing?": a peer address where nothing answers is named as such in
//! status, in `status --why` (exit status 1) and the TRANSFERS line never claims "in
//! sync"; once a daemon answers there, the same node says nothing is wrong.

use std::time::Duration;

use crate::support::*;

fn why(dir: &std::path::Path) -> (bool, String) {
    let out = run(dir, &["status", "--why"]);
    (out.status.success(), String::from_utf8(out.stdout).unwrap())
}

#[test]
fn a_peer_that_never_answers_is_named_and_the_node_never_says_in_sync() {
    let tmp = tempfile::tempdir().unwrap();
    // A port with nothing behind it (taken, then given back).
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let peer = format!("udp://127.0.0.1:{port}");
    let a = Daemon::start(
        tmp.path(),
        "a",
        &["--listen", "udp://127.0.0.1:0", "--peer", &peer],
    );
    let link = wait_for("the link to say no answer", Duration::from_secs(30), || {
        a.status()
            .links
            .into_iter()
            .find(|l| l.state == "no answer")
    });
    let reason = link.reason.unwrap();
    assert!(
        reason.contains(&format!("no answer from 127.0.0.1:{port}")),
        "{reason}"
    );
    let screen = cli(&a.dir, &["status"]);
    assert!(!screen.contains("in sync"), "{screen}");
    assert!(screen.contains("why: no answer from"), "{screen}");
    let (ok, text) = why(&a.dir);
    assert!(!ok, "--why exits 1 when something is wrong: {text}");
    assert!(
        text.contains("no answer from") && text.contains("no peer has answered"),
        "{text}"
    );

    // A daemon appears at that address: the same node is in sync and says so.
    let b = Daemon::start(
        tmp.path(),
        "b",
        &["--listen", &format!("udp://127.0.0.1:{port}")],
    );
    a.wait_synced(1, Duration::from_secs(60));
    wait_for("the link to be up again", Duration::from_secs(30), || {
        a.status()
            .links
            .iter()
            .all(|l| l.state == "up")
            .then_some(())
    });
    let (ok, text) = why(&a.dir);
    assert!(ok, "{text}");
    assert!(
        text.contains("nothing keeps this node from syncing: 1 of 1"),
        "{text}"
    );
    assert!(cli(&a.dir, &["status"]).contains("in sync with 1 peer(s)"));
    // Units are in the field names (bits/s on links and peers, bytes/s on transfers).
    let v: serde_json::Value = a.client.get_json("/v1/status").unwrap();
    let link = &v["links"][0];
    for k in ["out_bits_per_s", "in_bits_per_s"] {
        assert!(link[k].is_number(), "{k} in {link}");
    }
    assert!(link.get("out_bps").is_none(), "{link}");

    // The peer goes away: the link says so again (it does not stay "up").
    drop(b);
    let l = wait_for(
        "the link to say no answer again",
        Duration::from_secs(120),
        || {
            a.status()
                .links
                .into_iter()
                .find(|l| l.state == "no answer")
        },
    );
    assert!(l.reason.unwrap().contains("no answer from"));
    let (ok, _) = why(&a.dir);
    assert!(!ok);
}
