//! `skywave lab real`: real daemons through the emulators beside the lab, on short cells.
//!
//! Asserts that the cells complete and that every figure is there and sane; never that
//! the real and lab figures agree within 10% (on a loaded machine real timers are late).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_skywave");

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                found.push(format!("{name}: {cmd}"));
            }
        }
    }
    found
}

fn f(v: &serde_json::Value, what: &str) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("{what} is not a number: {v}"))
}

/// Three short cells (UDP through `skywave emulate`, RFD900 framing through the emulated
/// radios with and without a transmit queue) complete with real and lab figures; nothing
/// is left behind.
#[test]
fn short_cells_complete_with_real_and_lab_figures() {
    let scratch = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["--json", "lab", "real"])
        .args([
            "--cell",
            "lfn",
            "--cell",
            "rfd900",
            "--cell",
            "rfd900-unqueued",
        ])
        .args(["--scale", "0.05", "--timeout", "45s", "--store-dir"])
        .arg(scratch.path())
        .env_remove("SKYWAVE_HOME")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "lab real failed:\n{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not one JSON object ({e}):\n{stderr}"));
    assert!(v["command"].as_str().unwrap().contains("lab real"), "{v}");
    assert_eq!(v["scale"], 0.05);
    let cells = v["cells"].as_array().unwrap();
    let names: Vec<&str> = cells.iter().map(|c| c["cell"].as_str().unwrap()).collect();
    assert_eq!(names, ["lfn", "rfd900", "rfd900-unqueued"], "{v}");

    for c in cells {
        let name = c["cell"].as_str().unwrap();
        assert_eq!(c["status"], "complete", "{name}: {c}\n{stderr}");
        let real = &c["real"];
        let lab = &c["lab"];
        assert_eq!(lab["complete"], true, "{name}: {c}");
        for (who, x) in [("real", real), ("lab", lab)] {
            let t = f(&x["seconds"], "seconds");
            assert!(t > 0.0 && t < 600.0, "{name} {who} seconds {t}");
            let b = f(&x["bytes_on_air"], "bytes_on_air");
            // At least the useful bytes crossed: 1 MB one way, or 16 x 100 B.
            assert!(b >= 1_000.0, "{name} {who} bytes_on_air {b}");
            assert!(f(&x["useful_bytes"], "useful_bytes") > 0.0, "{name} {who}");
        }
        let ratio = &c["ratio"];
        for k in ["time", "bytes"] {
            let r = f(&ratio[k], k);
            assert!(r.is_finite() && r > 0.0, "{name} ratio {k} {r}");
        }
        // The flag follows the ratios (whatever they are on this machine).
        let off = ["time", "bytes"]
            .iter()
            .any(|k| (f(&ratio[k], k) - 1.0).abs() > 0.10);
        assert_eq!(c["differs"], off, "{name}: {c}");
    }

    // lfn: one bundle of 1 MB, IP figures from the emulator's summary.
    let lfn = &cells[0];
    assert_eq!(lfn["workload"], "1 x 1,000,000 B A->B");
    let real = &lfn["real"];
    assert!(f(&real["useful_bytes"], "useful") >= 1_000_000.0, "{real}");
    assert!(f(&real["bytes_on_air"], "bytes") >= 1_000_000.0, "{real}");
    for x in [&real["dropped_fraction"], &lfn["lab"]["dropped_fraction"]] {
        let d = f(x, "dropped_fraction");
        assert!((0.0..=1.0).contains(&d), "dropped {d}");
    }
    let emu = &real["emulator"];
    assert!(
        emu["a_to_b"]["sent_bytes"].as_u64().unwrap() >= 1_000_000,
        "{emu}"
    );
    assert_eq!(emu["a_to_b"]["refused_mtu"], 0, "{emu}");

    // rfd900: frames plus the driver's parity.
    let rfd = &cells[1];
    assert_eq!(rfd["workload"], "8 x 100 B each way");
    let real = &rfd["real"];
    let frames = f(&real["frame_bytes"], "frame_bytes");
    let air = f(&real["bytes_on_air"], "bytes_on_air");
    assert!(frames >= 1_600.0 && air > frames, "{real}");

    // The unqueued radio: the same workload, frames kept apart by the daemons.
    let unq = &cells[2];
    assert_eq!(unq["workload"], "8 x 100 B each way");
    assert!(
        f(&unq["real"]["frame_bytes"], "frame_bytes") >= 1_600.0,
        "{unq}"
    );

    // Every process stopped, every temporary directory removed.
    let dir = scratch.path().to_str().unwrap();
    let left = processes_mentioning(dir);
    assert!(left.is_empty(), "processes left behind: {left:?}");
    let files: Vec<_> = std::fs::read_dir(scratch.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(files.is_empty(), "left in the store dir: {files:?}");
}

#[test]
fn unknown_cells_are_refused_with_the_accepted_names() {
    let out = Command::new(BIN)
        .args(["lab", "real", "--cell", "moon"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("'moon'") && e.contains("--cell") && e.contains("hf-modem"),
        "{e}"
    );
}
