//! `skywave demo` as a real process: a small workload so the test stays quick.

use std::process::{Command, Output};

fn skywave(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skywave"))
        .args(args)
        .env_remove("SKYWAVE_HOME")
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> (String, String) {
    let out = skywave(args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "skywave {args:?} failed: {stderr}");
    (String::from_utf8(out.stdout).unwrap(), stderr)
}

const SMALL: [&str; 5] = ["demo", "--shared", "200", "--bundles", "20"];

fn json(extra: &[&str]) -> serde_json::Value {
    let mut args = SMALL.to_vec();
    args.extend_from_slice(extra);
    args.push("--json");
    let (stdout, _) = ok(&args);
    assert_eq!(stdout.lines().count(), 1, "one JSON object on stdout");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn hf_demo_syncs_everything_and_reports_against_capacity_and_lbard() {
    let v = json(&["--seed", "3"]);
    let r = &v["report"];
    assert_eq!(v["profile"], "hf-modem");
    assert_eq!(r["agent"], "skywave");
    assert_eq!(r["seed"], 3);
    assert_eq!(r["complete"], true);
    // 20 new bundles each way, plus B's message.
    assert_eq!(r["bundles_delivered"]["A->B"], 20);
    assert_eq!(r["bundles_delivered"]["B->A"], 21);
    assert_eq!(v["delivered_by_1000s"]["A->B"], 20);
    assert_eq!(r["dropped_calls"], 0);
    assert_eq!(r["capacity_bps"], 1475);
    let sync = v["sync_seconds"].as_f64().unwrap();
    // The half-duplex modem with 4 s one-way cannot sync in under a few round trips,
    // and skywave does it far inside LBARD's 4-5 hours.
    assert!(sync > 20.0 && sync < 3600.0, "sync at {sync} s");
    let latency = v["message_latency_seconds"].as_f64().unwrap();
    let written = v["workload"]["message_at_seconds"].as_f64().unwrap();
    assert!(latency > 4.0 && written + latency <= sync + 1e-6);
    let useful = r["useful_bytes"].as_u64().unwrap();
    let air = r["bytes_on_air"].as_u64().unwrap();
    assert!(air > useful && r["recon_bytes"].as_u64().unwrap() > 0);
    let eff = r["efficiency"].as_f64().unwrap();
    assert!(eff > 0.0 && eff < 1.0, "efficiency {eff}");
    // The live timeline: counts only grow, and on the modem everything sent went on air.
    let tl = v["timeline"].as_array().unwrap();
    assert!(tl.len() >= 2, "{tl:?}");
    for w in tl.windows(2) {
        for k in ["virtual_seconds", "a_to_b", "b_to_a", "bytes_sent"] {
            assert!(w[0][k].as_f64() <= w[1][k].as_f64(), "{k} went down: {w:?}");
        }
    }
    let last = tl.last().unwrap();
    assert_eq!(last["a_to_b"], 20);
    assert_eq!(last["b_to_a"], 21);
    // Handed to the link: what went on the air, plus at most the two frames the modem may
    // still hold at the moment of sync.
    let handed = last["bytes_sent"].as_u64().unwrap();
    assert!(
        handed >= air && handed - air <= 2 * 260,
        "{handed} handed, {air} on air"
    );
    let measures: Vec<&str> = v["lbard"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["measure"].as_str().unwrap())
        .collect();
    assert!(
        measures.iter().all(|m| m.starts_with("HF:")),
        "{measures:?}"
    );
    assert_eq!(measures.len(), 3);

    // Same seed, same figures (except wall time).
    let mut again = json(&["--seed", "3"]);
    let mut first = v.clone();
    for x in [&mut first, &mut again] {
        x["report"]["wall_seconds"] = serde_json::Value::Null;
    }
    assert_eq!(first, again);
}

#[test]
fn text_output_has_live_progress_and_the_closing_table() {
    let (stdout, stderr) = ok(&SMALL);
    assert!(stderr.contains("virtual time"), "{stderr}");
    let last = stderr.lines().last().unwrap();
    assert!(
        last.contains("20") && last.contains("21") && last.contains("full sync"),
        "{stderr}"
    );
    for want in [
        "synced         yes: both hold all 241 bundles",
        "A->B: 20 bundles",
        "B->A: 21 bundles",
        "capacity         1475 bit/s (half duplex",
        "bytes on air",
        "reconciliation",
        "against LBARD's published figures",
        "4-5 h",
        "33 at best",
        "LBARD's figures are for 100 new bundles per side; this run had 20",
    ] {
        assert!(stdout.contains(want), "{want:?} missing from:\n{stdout}");
    }
}

#[test]
fn other_profiles_compare_with_the_matching_lbard_figures() {
    let v = json(&["--profile", "uhf-csma"]);
    assert_eq!(v["report"]["complete"], true);
    assert_eq!(v["report"]["link"], "uhf-csma");
    assert_eq!(v["report"]["capacity_bps"], 128_000);
    let lbard = v["lbard"].to_string();
    assert!(
        lbard.contains("345.9") && lbard.contains("306,944"),
        "{lbard}"
    );
    assert!(!lbard.contains("4-5 h"), "{lbard}");

    let v = json(&["--profile", "formant-90-1"]);
    assert_eq!(v["report"]["complete"], true);
    assert_eq!(v["report"]["bundles_delivered"]["A->B"], 20);
}

#[test]
fn bad_input_names_the_field() {
    let out = skywave(&["demo", "--profile", "moon"]);
    assert!(!out.status.success());
    let e = String::from_utf8(out.stderr).unwrap();
    assert!(
        e.contains("'--profile'") && e.contains("'moon'") && e.contains("hf-modem"),
        "{e}"
    );
    let out = skywave(&["demo", "--bundles", "0"]);
    assert!(!out.status.success());
    let e = String::from_utf8(out.stderr).unwrap();
    assert!(
        e.contains("--bundles") && e.contains("from 1 to 100000"),
        "{e}"
    );
}

/// The demo with 100 new bundles each way over 1,000 shared: the message's latency and
/// the time to full sync, in seconds.
fn message_and_sync(extra: &[&str]) -> (f64, f64) {
    let mut args = vec!["demo", "--shared", "1000", "--json"];
    args.extend_from_slice(extra);
    let (stdout, _) = ok(&args);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    (
        v["message_latency_seconds"].as_f64().unwrap(),
        v["sync_seconds"].as_f64().unwrap(),
    )
}

/// B's message (service `message`, high priority) goes ahead of the 100 bundles in
/// flight; written as an ordinary file it waits behind them. The bulk takes as long
/// either way.
#[test]
fn the_message_goes_ahead_of_the_bulk_and_the_bulk_is_not_slowed() {
    let (urgent, sync) = message_and_sync(&["--seed", "4"]);
    let (plain, sync_plain) = message_and_sync(&["--seed", "4", "--message-as-file"]);
    // One over of the other side at most (60 s on this modem), not the whole bulk.
    assert!(urgent < 70.0, "message after {urgent} s");
    assert!(
        plain > 3.0 * urgent,
        "as a file: {plain} s, with priority {urgent} s"
    );
    assert!(sync <= sync_plain * 1.1, "bulk {sync} s vs {sync_plain} s");
}

/// Wherever in the overs B's message is written while the bulk is in flight on the HF
/// modem, it arrives within 30 s (`Config::urgent_latency`): each over is bounded so
/// that the message waits out no more than that of A's turn. With 30 s overs the worst
/// write times here waited 45-48 s. The bulk pays a change of turn per shorter over, at
/// most a tenth of its time.
#[test]
fn a_message_written_anywhere_in_the_overs_arrives_within_30_s() {
    // Three cycles of two overs (about 35 s each), every 4.1 s.
    let mut worst = (0.0, 0.0);
    let mut slowest_sync: f64 = 0.0;
    for i in 0..26 {
        let at = 60.0 + 4.1 * f64::from(i);
        let (latency, sync) = message_and_sync(&["--message-at", &format!("{at:.1}")]);
        if latency > worst.1 {
            worst = (at, latency);
        }
        slowest_sync = slowest_sync.max(sync);
    }
    assert!(
        worst.1 <= 30.0,
        "a message written at t={} s arrived {} s later",
        worst.0,
        worst.1
    );
    let (_, plain) = message_and_sync(&["--message-at", "100.0", "--message-as-file"]);
    assert!(
        slowest_sync <= plain * 1.1,
        "bulk {slowest_sync} s with the message, {plain} s without priority"
    );
}
