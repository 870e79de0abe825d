//! Two real daemons over an HF modem whose buffer drains faster than a side can learn
//! that the turn came to it: 9600 bit/s, 256 B, 4 s one way (`skywave emulate`'s stream
//! model of the `hf-modem` profile, the modem's far end a pty). Daemon A runs the
//! `emulated` link, daemon B a `serial` driver paced for the same profile. Without the
//! drivers' over-end announcements (`skywave_node::modem_tx`) each over carried one
//! buffer and 30+30 small bundles were not through after 240 s; with them, 39 s. The
//! bound is generous (wall clock on a shared machine); a buffer overrun drops the call for
//! a minute, which it would not survive.

use std::time::{Duration, Instant};

use crate::support::*;

const PROFILE: &str = "profile=hf-modem,rate=9600bps,buffer=256B";

#[test]
fn two_daemons_pass_the_turn_on_a_small_buffered_hf_modem() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let modem = root.join("modem");
    let conf_a = root.join("a.toml");
    std::fs::write(
        &conf_a,
        format!(
            "[[link]]\ntype = \"emulated\"\nprofile = \"{PROFILE}\"\npeer_device = \"{}\"\n",
            modem.display()
        ),
    )
    .unwrap();
    let conf_b = root.join("b.toml");
    std::fs::write(
        &conf_b,
        format!(
            "[[link]]\ntype = \"serial\"\ndevice = \"{}\"\nprofile = \"{PROFILE}\"\n",
            modem.display()
        ),
    )
    .unwrap();
    let a = Daemon::start(root, "a", &["--config", &conf_a.display().to_string()]);
    let b = Daemon::start(root, "b", &["--config", &conf_b.display().to_string()]);

    let each = 30;
    for i in 0..each {
        let n = 90 + (i * 7) % 20;
        a.add(&payload(n, 3000 + i as u64), &format!("a{i}"));
        b.add(&payload(n, 4000 + i as u64), &format!("b{i}"));
    }
    let all = 2 * each as u64;
    let start = Instant::now();
    let limit = Duration::from_secs(120);
    let mut done = false;
    while start.elapsed() < limit {
        a.check_alive();
        b.check_alive();
        if a.status().store.bundles == all && b.status().store.bundles == all {
            done = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let (sa, sb) = (a.status(), b.status());
    eprintln!(
        "{PROFILE}: {each}+{each} bundles {} in {:?}; A sent {} B, B sent {} B; links {:?} {:?}",
        if done { "complete" } else { "NOT complete" },
        start.elapsed(),
        sa.links[0].bytes_out,
        sb.links[0].bytes_out,
        sa.links[0],
        sb.links[0],
    );
    assert!(
        done,
        "A holds {}, B holds {} of {all}",
        sa.store.bundles, sb.store.bundles
    );
    assert_eq!(sa.protocol.bundles_received, each as u64);
    assert_eq!(sb.protocol.bundles_received, each as u64);
    assert_eq!(sb.links[0].kind, "serial");
    // Each side passed the turn and heard the other pass it, and status says so.
    for (name, s) in [("a", &sa), ("b", &sb)] {
        let l = &s.links[0];
        assert!(
            l.over_ends_sent.is_some_and(|n| n >= 1) && l.over_ends_heard.is_some_and(|n| n >= 1),
            "{name}: over ends sent {:?}, heard {:?}",
            l.over_ends_sent,
            l.over_ends_heard
        );
    }
}
