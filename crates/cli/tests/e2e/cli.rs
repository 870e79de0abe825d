//! The offline CLI, run as a real process.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::assert_clean;

fn skywave(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skywave"))
        .arg("--dir")
        .arg(dir)
        .args(args)
        .env_remove("SKYWAVE_HOME")
        .output()
        .unwrap()
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = skywave(dir, args);
    assert!(
        out.status.success(),
        "skywave {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn err(dir: &Path, args: &[&str]) -> String {
    let out = skywave(dir, args);
    assert!(!out.status.success(), "skywave {args:?} should fail");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn add_list_show_get_append_fsck() {
    let tmp = tempfile::tempdir().unwrap();
    let node = tmp.path().join("node");
    let created: serde_json::Value = serde_json::from_str(&ok(&node, &["init", "--json"])).unwrap();
    assert_eq!(created["created"], true);
    assert!(ok(&node, &["init"]).contains("already exists"));

    let file = tmp.path().join("obs-2026-11-22.csv");
    let content: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
    std::fs::write(&file, &content).unwrap();
    let id = ok(
        &node,
        &[
            "add",
            file.to_str().unwrap(),
            "--service",
            "telemetry",
            "--field",
            "site=north",
        ],
    )
    .trim()
    .to_owned();
    assert_eq!(id.len(), 64);

    let ls: serde_json::Value = serde_json::from_str(&ok(&node, &["ls", "--json"])).unwrap();
    assert_eq!(ls.as_array().unwrap().len(), 1);
    assert_eq!(ls[0]["name"], "obs-2026-11-22.csv");
    assert_eq!(ls[0]["service"], "telemetry");
    assert_eq!(ls[0]["fields"]["site"], "north");
    assert_eq!(ls[0]["length"], 400_000);
    let text = ok(&node, &["ls"]);
    assert!(
        text.contains(&id[..16]) && text.contains("telemetry"),
        "{text}"
    );
    assert!(ok(&node, &["ls", "--service", "file", "--json"]).trim() == "[]");

    // Short ids resolve.
    let show = ok(&node, &["show", &id[..8]]);
    assert!(show.contains("version:   1"), "{show}");
    let out = tmp.path().join("copy.csv");
    ok(&node, &["get", &id[..8], "-o", out.to_str().unwrap()]);
    assert_eq!(std::fs::read(&out).unwrap(), content);
    let stdout = skywave(&node, &["get", &id]).stdout;
    assert_eq!(stdout, content);

    // Journals.
    let log = tmp.path().join("log.txt");
    std::fs::write(&log, b"first line\n").unwrap();
    let jid = ok(&node, &["add", "--journal", log.to_str().unwrap()])
        .trim()
        .to_owned();
    std::fs::write(&log, b"second line\n").unwrap();
    let appended: serde_json::Value = serde_json::from_str(&ok(
        &node,
        &["append", &jid, log.to_str().unwrap(), "--json"],
    ))
    .unwrap();
    assert_eq!(appended["version"], 23);
    assert_eq!(ok(&node, &["get", &jid]), "first line\nsecond line\n");
    // Appending to a plain bundle is refused with the reason.
    assert!(err(&node, &["append", &id, log.to_str().unwrap()]).contains("not a journal"));

    let fsck: serde_json::Value = serde_json::from_str(&ok(&node, &["fsck", "--json"])).unwrap();
    assert_eq!(fsck["bundles_checked"], 2);
    assert!(fsck["quarantined"].as_array().unwrap().is_empty());
}

/// A name or field a peer wrote never reaches the terminal as control characters: an
/// escape sequence cannot clear the screen, a newline cannot forge a row, a bidi
/// override cannot reorder what follows. `--json` keeps the exact text.
#[test]
fn names_are_printed_without_control_characters() {
    let tmp = tempfile::tempdir().unwrap();
    let node = tmp.path().join("node");
    ok(&node, &["init"]);
    let file = tmp.path().join("x.bin");
    std::fs::write(&file, b"x").unwrap();
    let evil = "evil\x1b[2J\nfake row";
    ok(
        &node,
        &[
            "add",
            file.to_str().unwrap(),
            "--name",
            evil,
            "--field",
            "k\u{9b}=v\u{202e}\t",
        ],
    );
    let ls = ok(&node, &["ls"]);
    assert_clean(&ls);
    assert_eq!(ls.lines().count(), 2, "a header and one row: {ls:?}");
    assert!(ls.contains(r"evil\x1b[2J\nfake row"), "{ls:?}");
    let show = ok(&node, &["show", &ls.lines().nth(1).unwrap()[..8]]);
    assert_clean(&show);
    assert!(
        show.lines()
            .any(|l| l.starts_with("name:") && l.ends_with(r"evil\x1b[2J\nfake row")),
        "{show:?}"
    );
    assert!(show.contains(r"field:     k\u{9b}=v\u{202e}\t"), "{show:?}");
    let json: serde_json::Value = serde_json::from_str(&ok(&node, &["ls", "--json"])).unwrap();
    assert_eq!(json[0]["name"], evil);
    assert_eq!(json[0]["fields"]["k\u{9b}"], "v\u{202e}\t");
}

#[test]
fn errors_name_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let node = tmp.path().join("node");
    assert!(err(&node, &["ls"]).contains("skywave init"));
    ok(&node, &["init"]);
    // The same words as the daemon's API gives (one helper, skywave_store::Store).
    assert!(err(&node, &["show", "zzzz"]).contains("invalid bundle id 'zzzz'"));
    assert!(err(&node, &["show", "ab"]).contains("at least 4 hex digits"));
    assert!(err(&node, &["show", "abcd"]).contains("no bundle matches 'abcd'"));
    assert!(err(&node, &["get", &"ab".repeat(32)]).contains("no bundle"));
    assert!(err(&node, &["add", "/nonexistent/file"]).contains("/nonexistent/file"));
    assert!(err(&node, &["add", "--recipient", "xyz", "/etc/hostname"]).contains("64 hex digits"));
    assert!(err(&node, &["add", "--service", "Bad Service", "/etc/hostname"]).contains("service"));
}

#[test]
fn a_store_in_use_by_another_process_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let node = tmp.path().join("node");
    ok(&node, &["init"]);
    // This test process holds the store; the CLI is a second process.
    let _held = skywave_store::Store::open(&node, Default::default()).unwrap();
    assert!(err(&node, &["ls"]).contains("in use by another skywave process"));
}

#[test]
fn example_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("ex");
    let out = Command::new(env!("CARGO_BIN_EXE_skywave"))
        .args(["example", "--workdir", work.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("fsck B: 3 bundles checked, clean: true"),
        "{text}"
    );
    assert!(text.contains("fetched only the 35 new bytes"), "{text}");
    // The nodes it left behind are usable by the other verbs.
    let ls = ok(&work.join("node-b"), &["ls", "--json"]);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&ls)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn config_check_prints_a_summary_and_refuses_a_tcp_link_that_cannot_connect() {
    let tmp = tempfile::tempdir().unwrap();
    let example = ok(tmp.path(), &["config", "example"]);
    let file = tmp.path().join("c.toml");
    std::fs::write(
        &file,
        format!(
            "{example}\n[[link]]\ntype = \"tcp\"\nlisten = \"127.0.0.1:7475\"\npeers = [\"relay.example:7475\"]\n"
        ),
    )
    .unwrap();
    let text = ok(tmp.path(), &["config", "check", file.to_str().unwrap()]);
    // Words, not Rust's Debug output.
    assert!(!text.contains("Udp(") && !text.contains("{ bind"), "{text}");
    assert!(
        text.contains("valid") && text.contains("http://127.0.0.1:7473"),
        "{text}"
    );
    assert!(
        text.contains("link 1")
            && text.contains("bind 0.0.0.0:7474")
            && text.contains("peers 192.0.2.10:7474")
            && text.contains("encrypted (trust any)"),
        "{text}"
    );
    assert!(
        text.contains("link 2")
            && text.contains("listen 127.0.0.1:7475")
            && text.contains("relay.example:7475"),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_str(&ok(
        tmp.path(),
        &["--json", "config", "check", file.to_str().unwrap()],
    ))
    .unwrap();
    assert_eq!(v["links"], 2);
    assert_eq!(v["link_settings"][0]["type"], "udp");
    assert_eq!(v["link_settings"][1]["peers"], "relay.example:7475");

    std::fs::write(&file, "[[link]]\ntype = \"tcp\"\nmtu = 1400\n").unwrap();
    let e = err(tmp.path(), &["config", "check", file.to_str().unwrap()]);
    assert!(
        e.contains("link #1") && e.contains("listen") && e.contains("peers"),
        "{e}"
    );
}

#[test]
fn offline_add_and_append_keep_to_a_quota() {
    let tmp = tempfile::tempdir().unwrap();
    let node = tmp.path().join("node");
    ok(&node, &["init"]);
    let big = tmp.path().join("big.bin");
    std::fs::write(&big, vec![7u8; 5000]).unwrap();
    let e = err(&node, &["add", big.to_str().unwrap(), "--quota", "1KiB"]);
    assert!(e.contains("quota of 1024 bytes"), "{e}");
    assert_eq!(ok(&node, &["ls"]).lines().count(), 1, "only the header");

    let small = tmp.path().join("small.txt");
    std::fs::write(&small, vec![b'a'; 600]).unwrap();
    let id = ok(
        &node,
        &[
            "add",
            "--journal",
            small.to_str().unwrap(),
            "--quota",
            "2KiB",
        ],
    );
    let id = id.trim();
    let e = err(
        &node,
        &["append", id, big.to_str().unwrap(), "--quota", "2KiB"],
    );
    assert!(e.contains("quota of 2048 bytes"), "{e}");
    let e = err(&node, &["add", big.to_str().unwrap(), "--quota", "lots"]);
    assert!(e.contains("--quota") && e.contains("100MiB"), "{e}");
    // Without a quota the store takes it.
    ok(&node, &["append", id, big.to_str().unwrap()]);

    // Through a running daemon its own quota applies: --quota is refused, not ignored.
    let _d = crate::support::Daemon::start(tmp.path(), "node", &[]);
    let e = err(&node, &["add", small.to_str().unwrap(), "--quota", "1MiB"]);
    assert!(
        e.contains("--quota") && e.contains("skywave daemon --quota"),
        "{e}"
    );
}

#[test]
fn errors_in_json_mode_are_json() {
    let tmp = tempfile::tempdir().unwrap();
    let node = tmp.path().join("node");
    let parse = |e: &str| -> serde_json::Value {
        serde_json::from_str(e.trim()).unwrap_or_else(|x| panic!("not JSON ({x}): {e}"))
    };
    let v = parse(&err(&node, &["--json", "ls"]));
    assert!(v["error"].as_str().unwrap().contains("skywave init"), "{v}");
    ok(&node, &["init"]);
    let v = parse(&err(&node, &["--json", "show", "abcd"]));
    assert!(
        v["error"].as_str().unwrap().contains("no bundle matches"),
        "{v}"
    );
    assert!(v["causes"].is_array(), "{v}");
    let missing = tmp.path().join("missing.txt");
    let v = parse(&err(&node, &["--json", "add", missing.to_str().unwrap()]));
    assert!(v["error"].as_str().unwrap().contains("missing.txt"), "{v}");
    // Without --json, for people.
    let e = err(&node, &["show", "abcd"]);
    assert!(e.starts_with("error: no bundle matches"), "{e}");
}

#[test]
fn ls_and_show_print_the_same_offline_and_through_the_daemon() {
    let tmp = tempfile::tempdir().unwrap();
    let node = tmp.path().join("node");
    let init: serde_json::Value = serde_json::from_str(&ok(&node, &["--json", "init"])).unwrap();
    let me = init["node"].as_str().unwrap().to_string();
    let f = tmp.path().join("notes.txt");
    std::fs::write(&f, "some notes\n").unwrap();
    let f = f.to_str().unwrap();
    let ids: Vec<String> = [
        &["add", f, "--field", "site=north", "--field", "k=\u{202e}v"][..],
        &["add", f, "--journal", "--service", "log"],
        &["add", f, "--to", &me],
    ]
    .iter()
    .map(|args| ok(&node, args).trim().to_string())
    .collect();
    let views = |node: &Path| {
        let mut out = vec![ok(node, &["ls"])];
        out.extend(ids.iter().map(|id| ok(node, &["show", id])));
        out
    };
    // Ids that name nothing: too short, and well formed but held by no bundle.
    let bad = |node: &Path| [err(node, &["show", "ab"]), err(node, &["get", "abcd0123"])];
    let offline_bad = bad(&node);
    let offline = views(&node);
    assert!(
        offline[1].contains("field:     site=north"),
        "{}",
        offline[1]
    );
    assert!(
        offline[3].contains("this node can read it"),
        "{}",
        offline[3]
    );
    let _d = crate::support::Daemon::start(tmp.path(), "node", &[]);
    let through = views(&node);
    for (a, b) in offline.iter().zip(&through) {
        assert_eq!(a, b, "offline:\n{a}\nthrough the daemon:\n{b}");
        assert_clean(a);
    }
    // The same words (through the daemon, after the HTTP call that failed).
    let through_bad = bad(&node);
    for (i, words) in [
        "invalid bundle id 'ab': give the full 64-digit hex id or a unique prefix of at least 4 hex digits",
        "no bundle matches 'abcd0123' (or the prefix matches more than one): give the full 64-digit id or a unique prefix (`skywave ls` lists them)",
    ]
    .iter()
    .enumerate()
    {
        let (a, b) = (&offline_bad[i], &through_bad[i]);
        assert!(
            a.contains(words) && b.contains(words),
            "offline: {a}\nthrough the daemon: {b}"
        );
    }
}

#[test]
fn appending_nothing_leaves_the_journal_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let node = tmp.path().join("node");
    ok(&node, &["init"]);
    let f = tmp.path().join("log.txt");
    std::fs::write(&f, "first line\n").unwrap();
    let id = ok(&node, &["add", "--journal", f.to_str().unwrap()]);
    let id = id.trim();
    let before = ok(&node, &["--json", "show", id]);
    let empty = tmp.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    // A second later a new signature would differ in its date: none is made.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    ok(&node, &["append", id, empty.to_str().unwrap()]);
    assert_eq!(ok(&node, &["--json", "show", id]), before);
    let _d = crate::support::Daemon::start(tmp.path(), "node", &[]);
    ok(&node, &["append", id, empty.to_str().unwrap()]);
    assert_eq!(ok(&node, &["--json", "show", id]), before);
}
