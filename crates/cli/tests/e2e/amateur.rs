//! Amateur links carry no encryption: two real daemons over a link one of them marks
//! `amateur = true`; a bundle sealed to a recipient does not cross it (from the amateur
//! side, nor into it), plain bundles do.

use std::time::Duration;

use crate::support::*;

#[test]
fn a_sealed_bundle_does_not_cross_an_amateur_link() {
    let tmp = tempfile::tempdir().unwrap();
    // B listens in the clear; A reaches it over a link marked amateur.
    let conf_b = tmp.path().join("b.toml");
    std::fs::write(
        &conf_b,
        "[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\nplaintext = true\n",
    )
    .unwrap();
    let b = Daemon::start(
        tmp.path(),
        "b",
        &["--config", &conf_b.display().to_string()],
    );
    let conf = tmp.path().join("a.toml");
    std::fs::write(
        &conf,
        format!(
            "[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\npeers = [\"{}\"]\nplaintext = true\namateur = true\ncallsign = \"N0CALL-7\"\n",
            b.udp()
        ),
    )
    .unwrap();
    let a = Daemon::start(tmp.path(), "a", &["--config", &conf.display().to_string()]);
    let node_b = b.status().node;
    let node_a = a.status().node;

    // A holds a bundle sealed to B (the one node that could read it) and a plain one.
    let file = tmp.path().join("orders.txt");
    let secret = payload(3_000, 11);
    std::fs::write(&file, &secret).unwrap();
    let sealed = cli(&a.dir, &["add", "--to", &node_b, file.to_str().unwrap()])
        .trim()
        .to_string();
    let plain = a.add(&payload(2_000, 12), "plain-from-a");
    // B holds one sealed to A and a plain one: B's side is not amateur and offers it,
    // A does not take it.
    std::fs::write(&file, payload(3_000, 13)).unwrap();
    let sealed_b = cli(&b.dir, &["add", "--to", &node_a, file.to_str().unwrap()])
        .trim()
        .to_string();
    let plain_b = b.add(&payload(2_000, 14), "plain-from-b");

    b.wait_bundle(&plain, LONG);
    a.wait_bundle(&plain_b, LONG);
    // Time for anything else to cross, had it been offered.
    std::thread::sleep(Duration::from_secs(5));
    assert!(
        !b.has(&sealed),
        "the sealed bundle crossed the amateur link"
    );
    assert!(
        !a.has(&sealed_b),
        "a sealed bundle was taken over the amateur link"
    );
    let dropped = &a
        .client
        .get_json::<serde_json::Value>("/v1/status")
        .unwrap()["protocol"]["dropped"];
    assert!(
        dropped["withheld_offer"].as_u64().unwrap_or(0) >= 1,
        "the refused offer was not counted: {dropped}"
    );
    // Both ends reach "in sync" all the same.
    a.wait_synced(1, LONG);
    b.wait_synced(1, LONG);
}
