//! What people expect of a command-line program beyond its verbs: a closed pipe on
//! standard output ends it quietly (never a panic), and its shell completions, man page,
//! service unit and container file are there and say what the verbs are.

use std::process::{Command, ExitStatus};

use crate::support::BIN;

/// Runs `skywave ARGS...` with standard output a pipe whose reading end is closed
/// before the program starts, so its first write fails; returns how it ended and its
/// standard error.
fn run_into_closed_pipe(dir: &std::path::Path, args: &[&str]) -> (ExitStatus, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(BIN)
        .arg("--dir")
        .arg(dir)
        .args(args)
        .env_remove("SKYWAVE_HOME")
        // A verb ended mid-way leaves its scratch directories (`example`) here, in
        // the test's own directory, which is removed.
        .env("TMPDIR", dir.parent().unwrap_or(dir))
        .stdout(writer)
        .output()
        .unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_pipe_ends_any_verb_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let node = tmp.path().join("node");
    let ok = Command::new(BIN)
        .arg("--dir")
        .arg(&node)
        .arg("init")
        .env_remove("SKYWAVE_HOME")
        .output()
        .unwrap();
    assert!(ok.status.success());
    let file = tmp.path().join("f.txt");
    std::fs::write(&file, "hello").unwrap();
    let add = Command::new(BIN)
        .arg("--dir")
        .arg(&node)
        .args(["add", file.to_str().unwrap()])
        .env_remove("SKYWAVE_HOME")
        .output()
        .unwrap();
    assert!(add.status.success());
    let id = String::from_utf8(add.stdout).unwrap().trim().to_string();

    for args in [
        &["example"][..],
        &["lab", "list"],
        &["config", "example"],
        &["--help"],
        &["daemon", "--help"],
        &["ls"],
        &["--json", "ls"],
        &["show", &id],
        &["get", &id],
    ] {
        let (status, err) = run_into_closed_pipe(&node, args);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "skywave {args:?} into a closed pipe: {status}\n{err}"
        );
        // Ended by SIGPIPE (no exit code), as `cat` is; never Rust's panic status.
        assert_ne!(
            status.code(),
            Some(101),
            "skywave {args:?}: {status}\n{err}"
        );
        use std::os::unix::process::ExitStatusExt;
        assert!(
            status.signal() == Some(13) || status.success(),
            "skywave {args:?}: {status}\n{err}"
        );
    }
}

/// Every verb, as `skywave --help` lists them.
const VERBS: &[&str] = &[
    "demo",
    "example",
    "emulate",
    "lab",
    "init",
    "add",
    "append",
    "ls",
    "show",
    "get",
    "fsck",
    "daemon",
    "config",
    "status",
    "peers",
    "events",
    "trust",
    "completions",
    "man",
];

fn stdout_of(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "skywave {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A shell that parses `script` without running it (`-n`), if that shell is installed.
fn shell_parses(shell: &str, script: &str) -> Option<std::process::Output> {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("completion");
    std::fs::write(&f, script).unwrap();
    Command::new(shell).arg("-n").arg(&f).output().ok()
}

#[test]
fn completions_cover_every_verb_for_bash_zsh_and_fish() {
    for (shell, marker) in [
        ("bash", "complete -F _skywave"),
        ("zsh", "#compdef skywave"),
        ("fish", "complete -c skywave"),
    ] {
        let script = stdout_of(&["completions", shell]);
        assert!(script.contains(marker), "{shell}: no '{marker}'");
        for verb in VERBS {
            assert!(script.contains(verb), "{shell} completion lacks '{verb}'");
        }
        // Flags of a verb are completed too.
        let peer_flag = if shell == "fish" { "-l peer" } else { "--peer" };
        assert!(script.contains(peer_flag), "{shell}: no {peer_flag}");
        match shell_parses(shell, &script) {
            Some(out) => assert!(
                out.status.success(),
                "{shell} -n refuses the script: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
            None => eprintln!("{shell} is not installed: its script is not syntax-checked"),
        }
    }
    // bash completes for real: a verb from its start, a flag of a verb.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("skywave.bash");
    std::fs::write(&f, stdout_of(&["completions", "bash"])).unwrap();
    for (words, cword, want) in [
        ("skywave da", 1, "daemon"),
        ("skywave daemon --pe", 2, "--peer"),
        ("skywave completions f", 2, "fish"),
    ] {
        let script = format!(
            "source '{}'; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{words}'; COMP_POINT={}; \
             _skywave skywave \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            f.display(),
            words.len()
        );
        let out = Command::new("bash").args(["-c", &script]).output().unwrap();
        let got = String::from_utf8_lossy(&out.stdout);
        assert_eq!(got.trim(), want, "completing '{words}': {got}");
    }

    let out = Command::new(BIN)
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tcsh") && err.contains("bash"), "{err}");
}

#[test]
fn the_man_page_renders_and_names_the_verbs() {
    let page = stdout_of(&["man"]);
    assert!(
        page.starts_with(".ie") || page.contains(".TH skywave 1"),
        "{page}"
    );
    let Ok(out) = Command::new("groff")
        .args(["-man", "-Tutf8", "-P", "-cbou"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(page.as_bytes())?;
            c.wait_with_output()
        })
    else {
        eprintln!("groff is not installed: checking the roff source only");
        for verb in VERBS {
            assert!(page.contains(verb), "the man page lacks '{verb}'");
        }
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Justified lines: words apart by one space or more.
    let text = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(text.contains("NAME") && text.contains("SYNOPSIS"), "{text}");
    for verb in VERBS {
        assert!(
            text.contains(&format!("skywave-{verb}(1)")),
            "the rendered page lacks '{verb}':\n{text}"
        );
    }
    assert!(
        text.contains("Keep sets of signed bundles in sync"),
        "{text}"
    );
}

#[test]
fn the_systemd_unit_verifies() {
    let Ok(v) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("skipped: systemd-analyze is not installed");
        return;
    };
    assert!(v.status.success());
    // The unit names the installed path; verify it against this build's binary.
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../dist/skywave.service"
    ))
    .unwrap();
    for must in [
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "StateDirectory=skywave",
        "Restart=on-failure",
        "DynamicUser=yes",
    ] {
        assert!(unit.contains(must), "the unit lacks {must}");
    }
    assert!(unit.contains("/usr/local/bin/skywave "), "{unit}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("skywave.service");
    std::fs::write(
        &path,
        unit.replace("/usr/local/bin/skywave ", &format!("{BIN} ")),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.trim().is_empty(),
        "systemd-analyze verify: {}\n{err}",
        out.status
    );
}

#[test]
fn the_container_file_builds_locked_and_runs_unprivileged() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../dist/Containerfile"
    ))
    .unwrap();
    let froms = text.lines().filter(|l| l.starts_with("FROM ")).count();
    assert_eq!(froms, 2, "a build stage and a runtime stage:\n{text}");
    for must in [
        "cargo build --locked --release",
        "COPY --from=build",
        "USER skywave",
        "VOLUME [\"/var/lib/skywave\"]",
        "bookworm-slim",
    ] {
        assert!(text.contains(must), "the Containerfile lacks {must}");
    }
    // The toolchain it builds with is the one the manifest asks for.
    let manifest =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml")).unwrap();
    let rv = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap();
    assert!(
        text.contains(&format!("rust:{rv}-")),
        "builder is not rust {rv}"
    );
}
