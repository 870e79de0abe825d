//! A peer not on a trust list gets `limits.untrusted_bundles_per_hour` bundles taken per
//! hour; past it, its offers wait for the next hour and then go through. (The hour is
//! shortened for the test: `limits.untrusted_budget_window`.)

use std::time::{Duration, Instant};

use crate::support::*;

#[test]
fn an_untrusted_peer_past_its_hourly_budget_waits_for_the_next_hour() {
    const WINDOW: u64 = 20;
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("a.toml");
    std::fs::write(
        &cfg,
        format!(
            "[limits]\nuntrusted_bundles_per_hour = 5\nuntrusted_budget_window = \"{WINDOW}s\"\n\n\
             [[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\n"
        ),
    )
    .unwrap();
    let a = Daemon::start(tmp.path(), "a", &["--config", cfg.to_str().unwrap()]);
    let peer = format!("udp://{}", a.udp());
    let b = Daemon::start(
        tmp.path(),
        "b",
        &["--listen", "udp://127.0.0.1:0", "--peer", &peer],
    );
    let start = Instant::now();
    let ids: Vec<String> = (0..12)
        .map(|i| b.add(&payload(2_000, i), &format!("n{i}")))
        .collect();
    let held = |d: &Daemon| ids.iter().filter(|id| d.has(id)).count();
    wait_for("a to take its budget", LONG, || {
        (held(&a) >= 5).then_some(())
    });
    std::thread::sleep(Duration::from_secs(5));
    let within = held(&a);
    let s = a.status();
    assert!(
        start.elapsed() < Duration::from_secs(WINDOW) || within == 12,
        "the test was too slow to see the budget"
    );
    // Transfers under way when it ran out finish; no new one starts.
    assert!((5..12).contains(&within), "{within} taken within the hour");
    assert!(s.protocol.dropped.get("paused_offer").copied().unwrap_or(0) > 0);
    let m = a
        .client
        .get_json::<serde_json::Value>("/v1/status")
        .unwrap();
    assert!(m["protocol"]["dropped"]["paused_offer"].as_u64().unwrap() > 0);
    // The next hour: the rest arrives.
    wait_for("the rest after the hour", LONG * 2, || {
        (held(&a) == 12).then_some(())
    });
}
