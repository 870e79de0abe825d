//! Sealed bundles end to end: `skywave add --to` (and the HTTP `to` field) seal a
//! payload to one node; a relay holds and forwards it but cannot read it; only the
//! recipient's `skywave get` gives the plaintext, and everyone else is told whose it is.

use std::path::Path;

use crate::support::*;
use skywave_bundle::sealed::{KEY_BOX_LEN, sealed_len};

/// Runs a verb that must fail; its standard error.
fn fails(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args);
    assert!(!out.status.success(), "skywave {args:?} should fail");
    assert!(out.stdout.is_empty(), "nothing on standard output: {out:?}");
    String::from_utf8(out.stderr).unwrap()
}

/// Whether any 32-byte run of `plain` (sampled) shows in `bytes`.
fn shows_plaintext(bytes: &[u8], plain: &[u8]) -> bool {
    (0..plain.len().saturating_sub(32))
        .step_by(4093)
        .any(|i| bytes.windows(32).any(|w| w == &plain[i..i + 32]))
}

/// A adds a bundle sealed to B; R, between them, carries it: R serves the sealed bytes,
/// refuses to `get` it naming B, and B reads the plaintext. The HTTP `to` field seals
/// the other way.
#[test]
fn a_sealed_bundle_crosses_a_relay_that_cannot_read_it() {
    let tmp = tempfile::tempdir().unwrap();
    let r = Daemon::start(tmp.path(), "relay", &["--listen", "udp://127.0.0.1:0"]);
    let peer = format!("udp://{}", r.udp());
    let a = Daemon::start(
        tmp.path(),
        "a",
        &["--listen", "udp://127.0.0.1:0", "--peer", &peer],
    );
    let b = Daemon::start(
        tmp.path(),
        "b",
        &["--listen", "udp://127.0.0.1:0", "--peer", &peer],
    );
    let (node_a, node_b) = (a.status().node, b.status().node);

    // Three chunks' worth, so the stream is opened across chunk boundaries.
    let secret = payload(150_000, 7);
    let file = tmp.path().join("orders.txt");
    std::fs::write(&file, &secret).unwrap();
    let id = cli(&a.dir, &["add", "--to", &node_b, file.to_str().unwrap()])
        .trim()
        .to_string();
    assert_eq!(id.len(), 64, "{id}");

    // The relay holds the sealed bytes: the manifest's length, no plaintext.
    let held = r.wait_bundle(&id, LONG);
    assert_eq!(held.len() as u64, sealed_len(secret.len() as u64));
    assert!(!shows_plaintext(&held, &secret));
    let v: serde_json::Value = r.client.get_json(&format!("/v1/bundles/{id}")).unwrap();
    assert_eq!(v["sealed"], 1);
    assert_eq!(v["recipient"], node_b.as_str());
    assert_eq!(v["plain_length"], 150_000);
    assert_eq!(v["name"], "orders.txt", "the name stays in clear");
    // `get` on the relay names the recipient and prints nothing.
    let err = fails(&r.dir, &["get", &id]);
    assert!(err.contains(&format!("sealed to node {node_b}")), "{err}");
    assert!(err.contains("cannot read it"), "{err}");
    let out = tmp.path().join("relay-copy");
    fails(&r.dir, &["get", &id, "-o", out.to_str().unwrap()]);
    assert!(!out.exists() && !out.with_extension("skywave-part").exists());
    // `ls` and `show` say it is sealed, and to whom.
    let ls = cli(&r.dir, &["ls"]);
    assert!(
        ls.contains(&format!("orders.txt (sealed to {})", &node_b[..16])),
        "{ls}"
    );
    // (The same text as offline: the relay carries it and cannot read it.)
    let show = cli(&r.dir, &["show", &id]);
    assert!(
        show.contains("sealed:    to the recipient, ")
            && show.contains("only the recipient can read it")
            && show.contains(&format!("recipient: {node_b}")),
        "{show}"
    );

    // The author cannot read it back either: it is sealed to B alone.
    let err = fails(&a.dir, &["get", &id]);
    assert!(err.contains(&format!("sealed to node {node_b}")), "{err}");

    // B reads the plaintext, to a file and to standard output.
    b.wait_bundle(&id, LONG);
    let got = tmp.path().join("got.txt");
    cli(&b.dir, &["get", &id, "-o", got.to_str().unwrap()]);
    assert_eq!(read(&got), secret);
    let stdout = run(&b.dir, &["get", &id]);
    assert!(stdout.status.success(), "{stdout:?}");
    assert_eq!(stdout.stdout, secret);
    let ls = cli(&b.dir, &["ls"]);
    assert!(ls.contains("orders.txt (sealed to this node)"), "{ls}");

    // The API opens the payload on the recipient's node, streamed, ranges included;
    // `?sealed=raw` gives the bytes as held; other nodes are refused, naming the
    // recipient, and get the sealed bytes only by asking for them.
    let path = format!("/v1/bundles/{id}/payload");
    let api = |d: &Daemon, path: &str, headers: &[(&str, &str)]| {
        let mut out = Vec::new();
        d.client.get_bytes(path, headers, &mut out).map(|_| out)
    };
    assert_eq!(api(&b, &path, &[]).unwrap(), secret);
    assert_eq!(
        api(&b, &path, &[("Range", "bytes=70000-70009")]).unwrap(),
        &secret[70_000..70_010],
        "a range of the opened payload, past its first chunk"
    );
    assert_eq!(
        api(&b, &path, &[("Range", "bytes=-5")]).unwrap(),
        &secret[secret.len() - 5..]
    );
    let raw = api(&b, &format!("{path}?sealed=raw"), &[]).unwrap();
    assert_eq!(raw, held, "?sealed=raw: the bytes as held");
    assert_eq!(
        api(&b, &format!("{path}?sealed=open"), &[]).unwrap(),
        secret
    );
    for d in [&r, &a] {
        let err = format!("{:#}", api(d, &path, &[]).unwrap_err());
        assert!(
            err.contains(&format!("sealed to node {node_b}"))
                && err.contains("sealed=raw")
                && err.contains("HTTP 403"),
            "{err}"
        );
        assert_eq!(api(d, &format!("{path}?sealed=raw"), &[]).unwrap(), held);
    }
    let err = format!(
        "{:#}",
        api(&b, &format!("{path}?sealed=maybe"), &[]).unwrap_err()
    );
    assert!(err.contains("HTTP 400") && err.contains("sealed"), "{err}");

    // The HTTP upload's `to` field: B seals a reply to A.
    let reply = b"received; two jerrycans on the way".to_vec();
    let v = b
        .client
        .post_reader(
            &format!("/v1/bundles?name=reply&to={node_a}"),
            &mut &reply[..],
        )
        .unwrap();
    assert_eq!(v["sealed"], 1);
    assert_eq!(v["recipient"], node_a.as_str());
    let rid = v["id"].as_str().unwrap().to_string();
    let sealed_reply = a.wait_bundle(&rid, LONG);
    assert_eq!(sealed_reply.len(), KEY_BOX_LEN + reply.len() + 16);
    assert_eq!(cli(&a.dir, &["get", &rid]).as_bytes(), reply);
    let err = fails(&r.dir, &["get", &rid]);
    assert!(err.contains(&format!("sealed to node {node_a}")), "{err}");

    // `to` and a different `recipient` contradict each other. (An empty body: the
    // daemon answers before reading one, and a body still being sent would race it.)
    let err = b
        .client
        .post_reader(
            &format!("/v1/bundles?to={node_a}&recipient={node_b}"),
            &mut &b""[..],
        )
        .unwrap_err();
    assert!(format!("{err:#}").contains("different nodes"), "{err:#}");
}

/// Without a daemon: a bundle sealed to this node opens here; one sealed to another is
/// refused with its recipient named; bad `--to` values are refused before anything is
/// stored.
#[test]
fn sealed_bundles_in_an_offline_store() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    let id_of = |dir: &Path| {
        let v: serde_json::Value = serde_json::from_str(&cli(dir, &["init", "--json"])).unwrap();
        v["node"].as_str().unwrap().to_string()
    };
    let (node_a, node_b) = (id_of(&a), id_of(&b));
    let secret = payload(70_000, 9);
    let file = tmp.path().join("note.bin");
    std::fs::write(&file, &secret).unwrap();

    let mine = cli(&a, &["add", "--to", &node_a, file.to_str().unwrap()])
        .trim()
        .to_string();
    let out = tmp.path().join("mine.bin");
    cli(&a, &["get", &mine[..8], "-o", out.to_str().unwrap()]);
    assert_eq!(read(&out), secret);
    let show = cli(&a, &["show", &mine]);
    assert!(
        show.contains("sealed:    to the recipient, 70000 bytes inside (this node can read it)"),
        "{show}"
    );

    let theirs = cli(&a, &["add", "--to", &node_b, file.to_str().unwrap()])
        .trim()
        .to_string();
    let err = fails(&a, &["get", &theirs]);
    assert!(
        err.contains(&format!("bundle {theirs} is sealed to node {node_b}")),
        "{err}"
    );
    let show = cli(&a, &["show", &theirs]);
    assert!(show.contains("carried sealed"), "{show}");
    let ls = cli(&a, &["ls"]);
    assert!(ls.contains("note.bin (sealed to this node)"), "{ls}");
    assert!(
        ls.contains(&format!("note.bin (sealed to {})", &node_b[..16])),
        "{ls}"
    );
    let json: serde_json::Value = serde_json::from_str(&cli(&a, &["ls", "--json"])).unwrap();
    assert!(json.as_array().unwrap().iter().all(|b| b["sealed"] == 1));

    // Refused before anything is stored: a point of small order, a journal, and
    // `--to` with a different `--recipient`.
    let neutral = format!("01{}", "0".repeat(62));
    let err = fails(&a, &["add", "--to", &neutral, file.to_str().unwrap()]);
    assert!(err.contains("not a usable node key"), "{err}");
    fails(
        &a,
        &["add", "--to", &node_b, "--journal", file.to_str().unwrap()],
    );
    fails(
        &a,
        &[
            "add",
            "--to",
            &node_b,
            "--recipient",
            &node_a,
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&cli(&a, &["ls", "--json"]))
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert!(cli(&a, &["fsck"]).contains("store is clean"));
}

/// A sealed payload damaged on disk: `get` stops at the damaged chunk with an error
/// naming it, and leaves no output file behind.
#[test]
fn a_damaged_sealed_payload_is_an_error_not_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("n");
    let v: serde_json::Value = serde_json::from_str(&cli(&dir, &["init", "--json"])).unwrap();
    let me = v["node"].as_str().unwrap().to_string();
    let file = tmp.path().join("big.bin");
    std::fs::write(&file, payload(140_000, 5)).unwrap();
    let id = cli(&dir, &["add", "--to", &me, file.to_str().unwrap()])
        .trim()
        .to_string();
    let v: serde_json::Value = serde_json::from_str(&cli(&dir, &["show", &id, "--json"])).unwrap();
    let hash = v["hash"].as_str().unwrap();
    let stored = dir.join("payloads").join(&hash[..2]).join(hash);
    let mut bytes = std::fs::read(&stored).unwrap();
    // In chunk 1 (after the key box and chunk 0's 64 KiB and tag).
    bytes[KEY_BOX_LEN + 65_536 + 16 + 100] ^= 1;
    std::fs::write(&stored, &bytes).unwrap();
    let out = tmp.path().join("out.bin");
    let err = fails(&dir, &["get", &id, "-o", out.to_str().unwrap()]);
    assert!(
        err.contains("chunk 1 of the sealed payload does not authenticate"),
        "{err}"
    );
    assert!(!out.exists() && !out.with_extension("skywave-part").exists());
}
