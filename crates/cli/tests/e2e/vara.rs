//! Two real `skywave daemon` processes, each on a `vara` link to one of a pair of fake
//! VARA modems (`skywave_links::vara::fake`, written from VARA's published host commands)
//! that carry a session's bytes one direction at a time at a set byte rate: 10+10 small
//! bundles sync through them. Daemon 0 calls N0CALL-2 when it has something to send;
//! daemon 1 listens. Real time, about half a minute.
//!
//! `cargo test --release -p skywave --test e2e vara:: -- --nocapture` prints the time against
//! the air floor; `scripts/vara-pair.sh figures` runs it three times (min/median/max).

use std::time::{Duration, Instant};

use crate::support::*;
use skywave_links::vara::fake::{FakeVaraConfig, FakeVaras};

/// The fake air's rate (bytes a second, one direction at a time): VARA HF's 2300 Hz
/// mode on a fair channel.
const RATE: f64 = 600.0;

struct Outcome {
    took: Duration,
    useful: u64,
    /// Most bytes either modem held, and bytes a modem threw away.
    max_buffered: usize,
    discarded: u64,
    report: String,
}

/// `each` bundles of `size` bytes inserted at each daemon; `None` if they are not all
/// through within `limit`.
fn exchange(each: usize, size: usize, limit: Duration) -> (Option<Outcome>, String) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let air = FakeVaraConfig {
        rate: RATE,
        turnaround: Duration::from_millis(300),
        connect_delay: Duration::from_secs(2),
        ..FakeVaraConfig::default()
    };
    let fakes = rt.block_on(FakeVaras::start(air)).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let daemons: Vec<Daemon> = (0..2)
        .map(|i| {
            let conf = root.join(format!("d{i}.toml"));
            let station = if i == 0 { "station = \"N0CALL-2\"\n" } else { "" };
            std::fs::write(
                &conf,
                format!(
                    "[[link]]\ntype = \"vara\"\nmodem = \"{}\"\ndata = \"{}\"\ncallsign = \"N0CALL-{}\"\n{station}amateur = true\nair_rate = {}\nidle_timeout = \"10s\"\n",
                    fakes.cmd_addr(i),
                    fakes.data_addr(i),
                    i + 1,
                    (RATE * 8.0) as u64,
                ),
            )
            .unwrap();
            Daemon::start(root, &format!("d{i}"), &["--config", &conf.display().to_string()])
        })
        .collect();
    wait_links_up(&daemons, Duration::from_secs(20));
    let start = Instant::now();
    insert_each(&daemons, each, size);
    let all = 2 * each as u64;
    let mut done = false;
    while start.elapsed() < limit {
        for d in &daemons {
            d.check_alive();
        }
        if daemons.iter().all(|d| d.status().store.bundles == all) {
            done = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = start.elapsed();
    let st: Vec<_> = daemons.iter().map(|d| d.status()).collect();
    let (s0, s1) = (fakes.stats(0), fakes.stats(1));
    let useful = st
        .iter()
        .map(|s| s.protocol.useful_bytes_received)
        .sum::<u64>();
    let report = format!(
        "vara at {RATE} B/s: {each}+{each} bundles of {size} B {} in {:.1} s; useful {useful} B, on the air {} B ({} + {}); sessions {}; most buffered {} / {} B; discarded {} / {} B; link rates {:?} bit/s; stored {:?}",
        if done { "complete" } else { "NOT complete" },
        took.as_secs_f64(),
        s0.bytes_sent + s1.bytes_sent,
        s0.bytes_sent,
        s1.bytes_sent,
        s0.sessions,
        s0.max_buffered,
        s1.max_buffered,
        s0.discarded,
        s1.discarded,
        st.iter().map(|s| s.links[0].rate_bps).collect::<Vec<_>>(),
        st.iter().map(|s| s.store.bundles).collect::<Vec<_>>(),
    );
    eprintln!("{report}");
    if !done {
        for d in &daemons {
            eprintln!("---- {} ----\n{}", d.name, d.log_tail());
        }
    }
    // No daemon log line is a panic.
    for d in &daemons {
        assert!(!d.log_tail().contains("panicked"), "{}", d.log_tail());
    }
    drop(daemons);
    drop(rt);
    (
        done.then_some(Outcome {
            took,
            useful,
            max_buffered: s0.max_buffered.max(s1.max_buffered),
            discarded: s0.discarded + s1.discarded,
            report: report.clone(),
        }),
        report,
    )
}

/// The least time the air allows: the useful bytes both ways at the fake's rate (one
/// direction at a time), plus the call's set-up (2 s).
fn floor(useful: u64) -> f64 {
    useful as f64 / RATE + 2.0
}

#[test]
fn two_daemons_sync_10_and_10_bundles_through_fake_vara_modems() {
    let (o, report) = exchange(10, 100, Duration::from_secs(150));
    let o = o.unwrap_or_else(|| panic!("10+10 bundles did not sync: {report}"));
    let f = floor(o.useful);
    let ratio = o.took.as_secs_f64() / f;
    eprintln!(
        "vara: {:.1} s for {} useful bytes; floor {f:.1} s at {RATE} B/s: {ratio:.2} x the floor",
        o.took.as_secs_f64(),
        o.useful
    );
    // The driver's default cap (VaraConfig::buffer) holds, and no session was ended
    // with bytes still in a modem.
    assert!(o.max_buffered <= 2048, "{}", o.report);
    assert_eq!(o.discarded, 0, "{}", o.report);
    assert!(ratio < 6.0, "{ratio:.2} x the floor: {}", o.report);
}

/// Three runs, for min/median/max (`--ignored --nocapture`).
#[test]
#[ignore = "real time, about two minutes"]
fn vara_figures_over_three_runs() {
    let mut times = Vec::new();
    let mut ratios = Vec::new();
    for _ in 0..3 {
        let (o, report) = exchange(10, 100, Duration::from_secs(200));
        match o {
            Some(o) => {
                times.push(o.took.as_secs_f64());
                ratios.push(o.took.as_secs_f64() / floor(o.useful));
            }
            None => eprintln!("run failed: {report}"),
        }
    }
    let mmm = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.first().map(|lo| (*lo, v[v.len() / 2], v[v.len() - 1]))
    };
    eprintln!(
        "FIGURES vara at {RATE} B/s: time s (min, median, max) {:?}; x floor {:?}",
        mmm(&mut times),
        mmm(&mut ratios)
    );
}

/// A daemon whose VARA is not running says so in `skywave status`, and keeps trying.
#[test]
fn status_says_why_a_vara_link_is_down() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("d.toml");
    std::fs::write(
        &conf,
        format!("[[link]]\ntype = \"vara\"\nmodem = \"{addr}\"\ncallsign = \"N0CALL-1\"\n"),
    )
    .unwrap();
    let d = Daemon::start(tmp.path(), "d", &["--config", &conf.display().to_string()]);
    let reason = wait_for("the link's reason", Duration::from_secs(10), || {
        let s = d.status();
        let l = s.links.first()?;
        (l.state == "down").then(|| l.reason.clone()).flatten()
    });
    assert!(
        reason.contains(&format!("cannot reach VARA's command port at {addr}"))
            && reason.contains("is VARA running"),
        "{reason}"
    );
    // A missing callsign is refused at start, naming the setting.
    std::fs::write(
        &conf,
        format!("[[link]]\ntype = \"vara\"\nmodem = \"{addr}\"\n"),
    )
    .unwrap();
    let out = run(
        tmp.path(),
        &["config", "check", &conf.display().to_string()],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("callsign of link #1 (type = \"vara\")") && err.contains("MYCALL"),
        "{err}"
    );
}
