//! `skywave lab` as a real process.

use std::process::{Command, Output};

fn skywave(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skywave"))
        .args(args)
        .env_remove("SKYWAVE_HOME")
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = skywave(args);
    assert!(
        out.status.success(),
        "skywave {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn err(args: &[&str]) -> String {
    let out = skywave(args);
    assert!(!out.status.success(), "skywave {args:?} should fail");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn list_shows_scenarios_and_profiles() {
    let out = ok(&["lab", "list"]);
    for name in [
        "hf-lbard-table",
        "uhf-chain",
        "formant-stream",
        "satellite-10mb",
        "uhf-lossy-star",
        "satellite-50x20k",
        "hf-modem",
        "lfn-lossy",
        "formant-RTT-LOSS",
        "lora-sf9-1pct",
        "lora-sfSF-BW",
    ] {
        assert!(out.contains(name), "{name} missing from:\n{out}");
    }
    let v: serde_json::Value = serde_json::from_str(&ok(&["lab", "list", "--json"])).unwrap();
    assert_eq!(v["scenarios"].as_array().unwrap().len(), 13);
    assert!(
        v["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "uhf-csma")
    );
}

#[test]
fn run_json_has_the_required_keys() {
    let out = skywave(&["lab", "run", "uhf-chain", "--seed", "1", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one JSON object on stdout");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    for key in [
        "scenario",
        "seed",
        "link",
        "virtual_seconds",
        "wall_seconds",
        "complete",
        "bundles_delivered",
        "useful_bytes",
        "bytes_on_air",
        "goodput_bps",
        "capacity_bps",
        "efficiency",
        "recon_bytes",
        "recon_messages",
        "dropped_calls",
        "links",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    assert_eq!(v["scenario"], "uhf-chain");
    assert_eq!(v["agent"], "skywave", "skywave is the default agent");
    assert_eq!(v["fec"], "auto", "FEC auto by default");
    assert_eq!(v["seed"], 1);
    assert_eq!(v["complete"], true);
    assert_eq!(v["bundles_delivered"]["A->C"], 20);
    // Progress went to stderr.
    assert!(String::from_utf8_lossy(&out.stderr).contains("uhf-chain"));
}

#[test]
fn agent_choice() {
    let v: serde_json::Value = serde_json::from_str(&ok(&[
        "lab",
        "run",
        "uhf-chain",
        "--agent",
        "reference",
        "--json",
    ]))
    .unwrap();
    assert_eq!(v["agent"], "reference");
    assert_eq!(
        v["fec"],
        serde_json::Value::Null,
        "the reference agent has no FEC"
    );
    assert_eq!(v["bundles_delivered"]["A->C"], 20);
    let tmp = tempfile::tempdir().unwrap();
    // A --store-dir that does not exist yet is made, not a failure of the run.
    let stores = tmp.path().join("not/yet");
    let v: serde_json::Value = serde_json::from_str(&ok(&[
        "lab",
        "run",
        "hf-live",
        "--scale",
        "0.1",
        "--agent",
        "skywave",
        "--store-dir",
        stores.to_str().unwrap(),
        "--fec",
        "off",
        "--json",
    ]))
    .unwrap();
    assert_eq!(v["agent"], "skywave");
    assert_eq!(v["fec"], "off");
    assert_eq!(v["complete"], true);
    // The stores' temporary directories are gone after the run.
    assert_eq!(std::fs::read_dir(&stores).unwrap().count(), 0);
    let e = err(&["lab", "run", "uhf-chain", "--agent", "moon"]);
    assert!(
        e.contains("--agent") && e.contains("skywave") && e.contains("reference"),
        "{e}"
    );
}

#[test]
fn run_text_and_link_override() {
    let out = ok(&[
        "lab",
        "run",
        "uhf-100x100",
        "--seed",
        "2",
        "--link",
        "profile=uhf-csma-lossy",
        "--scale",
        "0.2",
    ]);
    assert!(
        out.contains("goodput") && out.contains("A->B") && out.contains("efficiency"),
        "{out}"
    );
}

#[test]
fn baseline_side_by_side_or_refused() {
    let out = skywave(&[
        "lab",
        "run",
        "cellular-20mb",
        "--scale",
        "0.05",
        "--baseline",
        "quic",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["baseline"]["protocol"], "quic");
    assert_eq!(v["baseline"]["bytes"], 1_000_000);
    assert!(v["baseline"]["goodput_bps"].as_f64().unwrap() > 0.0);
    let e = err(&["lab", "run", "uhf-chain", "--baseline", "quic"]);
    assert!(e.contains("--baseline") && e.contains("lfn-50mb"), "{e}");
    let e = err(&["lab", "run", "lfn-50mb", "--baseline", "tcp"]);
    assert!(e.contains("--baseline") && e.contains("quic"), "{e}");
}

#[test]
fn bad_input_names_the_field_and_the_accepted_values() {
    let e = err(&["lab", "run", "moon-bounce"]);
    assert!(
        e.contains("'moon-bounce'") && e.contains("uhf-chain") && e.contains("hf-live"),
        "{e}"
    );
    let e = err(&["lab", "run", "uhf-chain", "--link", "rate=12parsecs"]);
    assert!(
        e.contains("--link") && e.contains("'rate'") && e.contains("bps"),
        "{e}"
    );
    let e = err(&["lab", "run", "uhf-chain", "--link", "moon"]);
    assert!(e.contains("'moon'") && e.contains("hf-modem"), "{e}");
    let e = err(&["lab", "run", "uhf-chain", "--seed", "1.5"]);
    assert!(e.contains("--seed") && e.contains("integer"), "{e}");
    for args in [
        &["lab", "run", "uhf-chain", "--fec", "sometimes"][..],
        &[
            "lab",
            "matrix",
            "--scenarios",
            "uhf-chain",
            "--fec",
            "sometimes",
        ],
    ] {
        let e = err(args);
        assert!(
            e.contains("'sometimes'")
                && e.contains("--fec")
                && e.contains("off")
                && e.contains("auto")
                && e.contains("always"),
            "{e}"
        );
    }
    let e = err(&["lab", "matrix", "--seeds", "5-1"]);
    assert!(e.contains("--seeds") && e.contains("1-5"), "{e}");
    let e = err(&[
        "lab",
        "matrix",
        "--scenarios",
        "uhf-chain,nope",
        "--seeds",
        "1",
    ]);
    assert!(e.contains("'nope'") && e.contains("uhf-100x100"), "{e}");
}

#[test]
fn matrix_writes_csv_and_svgs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("m");
    let table = ok(&[
        "lab",
        "matrix",
        "--scenarios",
        "uhf-chain,hf-live",
        "--seeds",
        "1-2",
        "--scale",
        "0.2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        table.contains("uhf-chain") && table.contains("hf-live"),
        "{table}"
    );
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5);
    assert!(
        csv.lines()
            .skip(1)
            .all(|l| l.split(',').nth(1) == Some("skywave")),
        "{csv}"
    );
    let s = std::fs::read_to_string(out.join("scenarios.svg")).unwrap();
    assert!(s.starts_with("<?xml") && s.trim_end().ends_with("</svg>"));
    // uhf-chain by its completion time, hf-live by the lag of its live write.
    assert_eq!(s.matches(r#"<g class="panel""#).count(), 2, "{s}");
    assert!(s.contains("write-to-delivery lag") && s.contains("time to complete"));
}
