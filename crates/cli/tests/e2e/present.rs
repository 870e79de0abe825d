//! One presentation: `ls` and `show` print the same whether they read the store or go
//! through a running daemon (they used to differ: raw epochs, quoted values, columns).

use crate::support::*;

#[test]
fn ls_and_show_print_the_same_with_and_without_a_daemon() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("n");
    cli(&dir, &["init"]);
    let big = tmp.path().join("big.bin");
    std::fs::write(&big, payload(50_000, 1)).unwrap();
    let hi = tmp.path().join("hi.txt");
    std::fs::write(&hi, "hi").unwrap();
    cli(&dir, &["add", big.to_str().unwrap()]);
    let id = cli(
        &dir,
        &[
            "add",
            "--service",
            "message",
            "--name",
            "a rather long name",
            "--expires",
            "7d",
            hi.to_str().unwrap(),
        ],
    );
    let id = id.trim();
    let offline = (cli(&dir, &["ls"]), cli(&dir, &["show", id]));
    let d = Daemon::start(tmp.path(), "n", &[]);
    let online = (cli(&d.dir, &["ls"]), cli(&d.dir, &["show", id]));
    assert_eq!(offline, online);
    // Columns line up: every row's DATE starts where the header's does.
    let at = offline.0.lines().next().unwrap().find("DATE").unwrap();
    for row in offline.0.lines().skip(1) {
        assert!(row[at..].starts_with("20"), "{row}");
    }
    for k in [
        "priority:  high",
        "expires:",
        "date:      20",
        "token:     2 (authored here)",
    ] {
        assert!(offline.1.contains(k), "{k} in {}", offline.1);
    }
}
