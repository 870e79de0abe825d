//! Logs and events as people read them, from real daemons: the start-up lines (node id,
//! API address, each link and where it listens or dials), no colour codes where the log
//! is not a terminal, `--log-file` and `--log-format json`, and `skywave events` lines
//! that end with a message and a failure status when the daemon goes away.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::support::*;

#[test]
fn start_up_lines_name_the_node_the_api_and_each_link_without_colour() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file.log");
    // Standard error is a file here (support::Daemon), so no colour either.
    let a = Daemon::start(
        tmp.path(),
        "a",
        &[
            "--listen",
            "udp://127.0.0.1:0",
            "--peer",
            "tcp://127.0.0.1:9",
        ],
    );
    let log = a.log_tail();
    let started = log
        .lines()
        .find(|l| l.contains("daemon started"))
        .unwrap_or_else(|| panic!("no start-up line:\n{log}"));
    assert!(started.contains(&a.info.node), "{started}");
    assert!(
        started.contains(&format!("api=http://{}", a.info.http)),
        "{started}"
    );
    assert!(
        log.contains(&format!("udp link: listening listen={}", a.udp())),
        "{log}"
    );
    assert!(
        log.contains("tcp link: connecting dial=127.0.0.1:9"),
        "{log}"
    );
    assert!(!log.contains('\x1b'), "colour codes in a log file:\n{log}");

    // --log-file: appended to, never coloured; the daemon logs at info by default.
    std::fs::write(&file, "a line from before\n").unwrap();
    let out = Command::new(BIN)
        .arg("--dir")
        .arg(tmp.path().join("b"))
        .args([
            "daemon",
            "--http",
            "127.0.0.1:0",
            "--listen",
            "udp://127.0.0.1:0",
        ])
        .arg("--log-file")
        .arg(&file)
        .env_remove("SKYWAVE_HOME")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(out);
    let text = wait_for("the start-up line in the log file", SHORT, || {
        let t = std::fs::read_to_string(&file).unwrap();
        t.contains("daemon started").then_some(t)
    });
    assert!(text.starts_with("a line from before\n"), "{text}");
    assert!(
        !text.contains('\x1b'),
        "colour codes in --log-file:\n{text}"
    );
    assert!(text.contains("udp link: listening"), "{text}");
    let _ = child.0.kill();
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        !err.contains("daemon started"),
        "with --log-file, standard error has no log lines: {err}"
    );

    // A log file that cannot be opened is refused, naming it.
    let out = Command::new(BIN)
        .arg("--dir")
        .arg(tmp.path().join("c"))
        .args(["daemon", "--log-file", "/nonexistent-dir/x.log"])
        .env_remove("SKYWAVE_HOME")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent-dir/x.log") && err.contains("--log-file"),
        "{err}"
    );
}

#[test]
fn json_log_lines_parse_and_carry_the_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("json.log");
    let a = Daemon::start(
        tmp.path(),
        "a",
        &[
            "--listen",
            "udp://127.0.0.1:0",
            "--log-format",
            "json",
            "--log-file",
            file.to_str().unwrap(),
        ],
    );
    let text = wait_for("the start-up line in the JSON log", SHORT, || {
        let t = std::fs::read_to_string(&file).unwrap();
        t.contains("daemon started").then_some(t)
    });
    let mut started = None;
    for line in text.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        assert!(v["timestamp"].is_string() && v["level"].is_string(), "{v}");
        if v["message"] == "daemon started" {
            started = Some(v);
        }
    }
    let v = started.expect("a start-up object");
    assert_eq!(v["level"], "INFO");
    assert_eq!(v["node"], a.info.node.as_str());
    assert_eq!(v["api"], format!("http://{}", a.info.http));
    assert!(!text.contains('\x1b'));
}

/// Kills the child when dropped (a failing test leaves no daemon behind).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `skywave --dir DIR ARGS...` (an `events` follower): its output lines on a channel,
/// its standard error kept for when it exits.
struct Followed {
    child: KillOnDrop,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Followed {
    fn start(dir: &std::path::Path, args: &[&str]) -> Followed {
        let mut child = KillOnDrop(
            Command::new(BIN)
                .arg("--dir")
                .arg(dir)
                .args(args)
                .env_remove("SKYWAVE_HOME")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let out = child.0.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { return };
                if tx.send(l).is_err() {
                    return;
                }
            }
        });
        Followed { child, lines }
    }

    /// The first line that contains `text`.
    fn line_with(&self, text: &str) -> String {
        let end = Instant::now() + SHORT;
        loop {
            let l = self
                .lines
                .recv_timeout(end.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|e| panic!("no line with {text} from `skywave events`: {e}"));
            if l.contains(text) {
                return l;
            }
        }
    }

    /// Waits for the process to exit: its status and standard error.
    fn exit(mut self) -> (std::process::ExitStatus, String) {
        let status = wait_for("`skywave events` to exit", SHORT, || {
            self.child.0.try_wait().unwrap()
        });
        let mut err = String::new();
        self.child
            .0
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status, err)
    }
}

#[test]
fn events_are_lines_for_people_and_a_stopped_daemon_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Daemon::start(tmp.path(), "a", &["--listen", "udp://127.0.0.1:0"]);
    let events = Followed::start(&a.dir, &["events", "--since", "0"]);
    // A name with an escape character in it: printed escaped, never raw.
    let v = a
        .client
        .post_reader(
            "/v1/bundles?service=message&name=bad%1Bname.txt",
            &mut &b"hello"[..],
        )
        .unwrap();
    let id = v["id"].as_str().unwrap().to_string();
    let line = events.line_with(&id[..8]);
    assert!(!line.contains('{'), "not raw JSON: {line}");
    assert!(!line.contains(&id), "ids are shortened: {line}");
    assert!(line.contains("bundle"), "{line}");
    assert!(line.contains(r#""bad\x1bname.txt""#), "{line}");
    assert!(!line.contains('\x1b'), "{line}");
    assert!(line.contains("5 B"), "{line}");
    // Local time first: HH:MM:SS.
    let t: Vec<char> = line.chars().take(8).collect();
    assert!(
        t.len() == 8
            && t[2] == ':'
            && t[5] == ':'
            && t.iter()
                .enumerate()
                .all(|(i, c)| i == 2 || i == 5 || c.is_ascii_digit()),
        "{line}"
    );

    // The daemon goes away: the follower says so and fails.
    a.kill9();
    let (status, err) = events.exit();
    assert!(!status.success(), "{status}: {err}");
    assert!(
        err.contains("stopped") && err.contains("skywave daemon --dir"),
        "{err}"
    );
    assert!(err.contains("--since"), "{err}");

    // A clean stop (SIGTERM closes the stream: no read error at all) is no different;
    // with --json the message is a JSON object.
    let b = Daemon::start(tmp.path(), "b", &["--listen", "udp://127.0.0.1:0"]);
    // From the first event on, so the probe is seen even if it was written before the
    // follower connected: it has surely connected once the probe's line is out.
    let events = Followed::start(&b.dir, &["--json", "events", "--since", "0"]);
    b.add(b"x", "probe");
    events.line_with("probe");
    let term = Command::new("kill")
        .args(["-TERM", &b.pid().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let (status, err) = events.exit();
    assert!(!status.success(), "{status}: {err}");
    let v: serde_json::Value =
        serde_json::from_str(err.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {err}"));
    assert!(v["error"].as_str().unwrap().contains("stopped"), "{v}");
}
