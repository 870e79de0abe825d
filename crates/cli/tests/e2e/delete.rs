//! Delete, replace and expire, between real daemons: `skywave rm` publishes a tombstone
//! that frees the payload on every node it reaches, `add --replace` publishes a new
//! version, `add --expires` drops the bundle everywhere when its time comes, and adding
//! the same file twice names the bundle that already holds it.

use std::path::Path;
use std::time::Duration;

use crate::support::*;

fn payload_files(dir: &Path) -> usize {
    match std::fs::read_dir(dir.join("payloads")) {
        Ok(rd) => rd
            .flatten()
            .map(|e| {
                if e.path().is_dir() {
                    std::fs::read_dir(e.path()).map_or(0, |d| d.count())
                } else {
                    1
                }
            })
            .sum(),
        Err(_) => 0,
    }
}

fn pair(root: &Path) -> (Daemon, Daemon) {
    let a = Daemon::start(root, "a", &["--listen", "udp://127.0.0.1:0"]);
    let peer = format!("udp://{}", a.udp());
    let b = Daemon::start(
        root,
        "b",
        &["--listen", "udp://127.0.0.1:0", "--peer", &peer],
    );
    (a, b)
}

#[test]
fn a_deleted_bundle_is_gone_from_every_node_and_a_replaced_one_is_the_new_version() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = pair(tmp.path());
    let file = tmp.path().join("report.bin");
    std::fs::write(&file, payload(200_000, 3)).unwrap();
    let id = cli(&a.dir, &["add", file.to_str().unwrap()])
        .trim()
        .to_string();
    b.wait_bundle(&id, Duration::from_secs(60));
    assert_eq!(payload_files(&b.dir), 1);

    // Only the author can delete.
    let out = run(&b.dir, &["rm", &id]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("only its author"),
        "{out:?}"
    );

    let tomb = cli(&a.dir, &["rm", &id[..12]]);
    assert_eq!(tomb.trim(), id);
    wait_for("the tombstone at b", Duration::from_secs(60), || {
        let v: serde_json::Value = b.client.get_json(&format!("/v1/bundles/{id}")).ok()?;
        (v["deleted"].as_bool() == Some(true)).then_some(())
    });
    assert_eq!(payload_files(&a.dir), 0, "freed at the author");
    assert_eq!(
        payload_files(&b.dir),
        0,
        "freed where the tombstone arrived"
    );
    assert!(!cli(&b.dir, &["ls"]).contains(&id[..16]), "hidden from ls");
    let all = cli(&b.dir, &["ls", "--all"]);
    assert!(
        all.lines()
            .any(|l| l.starts_with(&id[..16]) && l.contains("(deleted)")),
        "{all}"
    );

    // A new version of a bundle replaces the old one everywhere.
    let note = tmp.path().join("note.txt");
    std::fs::write(&note, "first").unwrap();
    let nid = cli(&a.dir, &["add", note.to_str().unwrap()])
        .trim()
        .to_string();
    assert_eq!(b.wait_bundle(&nid, Duration::from_secs(60)), b"first");
    std::fs::write(&note, "second, longer").unwrap();
    let again = cli(
        &a.dir,
        &["add", "--replace", &nid[..12], note.to_str().unwrap()],
    );
    assert_eq!(again.trim(), nid, "the same bundle, a new version");
    wait_for("version 2 at b", Duration::from_secs(60), || {
        (b.payload(&nid)? == b"second, longer").then_some(())
    });
}

#[test]
fn a_bundle_with_a_lifetime_is_dropped_on_every_node_when_it_expires() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = pair(tmp.path());
    let file = tmp.path().join("alert.txt");
    std::fs::write(&file, "road closed until noon").unwrap();
    let keep = tmp.path().join("keep.txt");
    std::fs::write(&keep, "stays").unwrap();
    let id = cli(&a.dir, &["add", "--expires", "8s", file.to_str().unwrap()])
        .trim()
        .to_string();
    let kept = cli(&a.dir, &["add", keep.to_str().unwrap()])
        .trim()
        .to_string();
    b.wait_bundle(&id, Duration::from_secs(6));
    let shown = cli(&b.dir, &["show", &id]);
    assert!(shown.contains("expires"), "{shown}");
    wait_for("expiry on both nodes", Duration::from_secs(20), || {
        (!a.has(&id) && !b.has(&id)).then_some(())
    });
    assert!(a.has(&kept) && b.has(&kept));
    // Offered again by nobody, accepted by nobody: it stays gone.
    std::thread::sleep(Duration::from_secs(3));
    assert!(!b.has(&id));
}

#[test]
fn adding_the_same_file_twice_names_the_bundle_that_holds_it() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("photo.jpg");
    std::fs::write(&file, payload(10_000, 9)).unwrap();
    let f = file.to_str().unwrap();
    // Offline, then through a daemon.
    let dir = tmp.path().join("offline");
    cli(&dir, &["init"]);
    let first = cli(&dir, &["add", f]);
    let out = run(&dir, &["add", f]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), first);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("already held as bundle") && err.contains("--force"),
        "{err}"
    );
    assert_ne!(cli(&dir, &["add", "--force", f]), first);
    // Priority: as given, else the service's default; a wrong one is named.
    let urgent = cli(&dir, &["add", "--force", "--priority", "high", f]);
    assert!(cli(&dir, &["show", urgent.trim()]).contains("priority:  high"));
    let msg = cli(&dir, &["add", "--force", "--service", "message", f]);
    assert!(cli(&dir, &["show", msg.trim()]).contains("priority:  high"));
    assert!(cli(&dir, &["show", first.trim()]).contains("priority:  normal"));
    let out = run(&dir, &["add", "--priority", "urgent", f]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("use bulk, normal or high"));

    let a = Daemon::start(tmp.path(), "a", &["--listen", "udp://127.0.0.1:0"]);
    let first = cli(&a.dir, &["add", f]);
    let out = run(&a.dir, &["add", f]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), first);
    assert!(String::from_utf8_lossy(&out.stderr).contains("already held as bundle"));
    let listed = cli(&a.dir, &["ls"]);
    assert_eq!(
        listed.lines().count(),
        2,
        "a header and one bundle: {listed}"
    );
}
