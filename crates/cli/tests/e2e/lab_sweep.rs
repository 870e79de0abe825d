//! `skywave lab sweep` as a real process: a small explicit grid (the `--quick` grid takes
//! about a minute; docs/lab.md has its figures).

use std::process::{Command, Output};

fn skywave(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skywave"))
        .args(args)
        .env_remove("SKYWAVE_HOME")
        .output()
        .unwrap()
}

/// Two radio cells (one cannot be built: 40 B frames, under the 48 B floor) and two IP
/// cells, one seed.
const GRID: &[&str] = &[
    "lab",
    "sweep",
    "--family",
    "radio,ip",
    "--axis",
    "radio.rate=128k",
    "--axis",
    "radio.mtu=40,223",
    "--axis",
    "radio.loss=0",
    "--axis",
    "txqueue=queued",
    "--axis",
    "ip.rate=1M",
    "--axis",
    "rtt=60ms",
    "--axis",
    "ip.loss=0,1",
    "--axis",
    "ip.buffer=1bdp",
    "--axis",
    "ip.mtu=1500",
    "--seeds",
    "1",
    "--log",
    "error",
];

#[test]
fn sweep_json_is_one_object_with_every_cell() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("sweep.csv");
    let plots = dir.path().join("plots");
    let mut args = GRID.to_vec();
    let (csv_s, plots_s) = (csv.display().to_string(), plots.display().to_string());
    args.extend(["--json", "--csv", &csv_s, "--plots", &plots_s]);
    let out = skywave(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("[cells 4/4, runs 3/3]"),
        "progress: {stderr}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(stdout.trim().lines().count(), 1);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4, "every cell, the unbuildable one too");
    assert_eq!(cells[0]["status"], "error");
    assert!(cells[0]["error"].as_str().unwrap().contains("48 B"));
    for c in &cells[1..] {
        assert!(c["floor"]["seconds"].as_f64().unwrap() > 0.0, "{c}");
        assert_eq!(c["results"].as_array().unwrap().len(), 1, "{c}");
        assert!(c["stats"].is_object());
        assert!(c["axes"]["rate"].is_string());
    }
    assert_eq!(cells[1]["status"], "complete", "{}", cells[1]);
    let ip = &cells[2]["results"][0];
    assert!(ip["dropped_at_bottleneck"].is_number(), "{ip}");
    assert_eq!(v["seeds"], serde_json::json!([1]));
    assert!(v["floor_formula"].as_str().unwrap().contains("RTT"));

    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 1 + 4, "{text}");
    for f in [
        "radio-time-over-floor.svg",
        "radio-overhead.svg",
        "ip-time-over-floor.svg",
        "ip-overhead.svg",
    ] {
        let svg = std::fs::read_to_string(plots.join(f)).unwrap();
        assert!(svg.contains("</svg>"), "{f}");
    }
}

#[test]
fn sweep_table_lists_every_cell() {
    let out = skywave(GRID);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(t.contains("radio:") && t.contains("ip:"), "{t}");
    assert!(
        t.contains("error (1)") && t.contains("(1) frame budget"),
        "{t}"
    );
    assert!(t.contains("time/floor") && t.contains("queue drop"), "{t}");
}

#[test]
fn bad_sweeps_name_what_is_wrong() {
    for (args, needle) in [
        (vec!["--axis", "colour=red"], "'colour'"),
        (vec!["--family", "radio", "--axis", "rtt=60ms"], "'rtt'"),
        (vec!["--axis", "rate="], "empty"),
        (vec!["--axis", "mtu=huge"], "'huge'"),
        (vec!["--family", "moon"], "'moon'"),
        (vec!["--family", ""], "--family"),
        (vec!["--seeds", "5-1"], "--seeds"),
        (
            vec!["--family", "radio", "--axis", "mtu=16"],
            "no cell of the grid can be built",
        ),
    ] {
        let mut a = vec!["lab", "sweep", "--plan"];
        a.extend(args.iter().copied());
        let out = skywave(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{a:?} should fail");
        assert!(err.contains(needle), "{a:?}: {err}");
    }
    // --plan lists the cells without running them.
    let out = skywave(&["lab", "sweep", "--quick", "--plan"]);
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(t.contains("floor") && t.contains("runs"), "{t}");
}
