//! Two real daemons taking turns on a shared radio channel: daemon A runs an `emulated`
//! link (`uhf-csma`: two emulated RFD900 radios at 128 kbit/s), daemon B drives the far
//! radio through its pty with the `rfd900` driver. Both take turns on the channel in
//! software (the default for shared radios, `channel_access = "driver"`) and keep one
//! frame in the radio. 100 small bundles on each side reach the other.
//!
//! The emulated radios sense the carrier themselves (frames never collide), so this
//! checks that the daemon's turn-taking gets a two-way exchange of many small bundles
//! done on a real radio driver, not that it avoids collisions (the lab's unqueued radio
//! model does that).

mod support;

use std::time::{Duration, Instant};

use support::*;

const EACH: usize = 100;

#[test]
fn two_daemons_take_turns_on_a_shared_radio() {
    let tmp = tempfile::tempdir().unwrap();
    let radio = tmp.path().join("radio");
    let a = Daemon::start(
        tmp.path(),
        "a",
        &[
            "--link",
            &format!("emulated:profile=uhf-csma,peer_device={}", radio.display()),
        ],
    );
    let b = Daemon::start(
        tmp.path(),
        "b",
        &[
            "--link",
            &format!("rfd900:device={},air_rate=128000", radio.display()),
        ],
    );

    let start = Instant::now();
    let mut useful = 0u64;
    for i in 0..EACH {
        let n = 60 + (i * 37) % 140;
        a.add(&payload(n, 1000 + i as u64), &format!("a{i}"));
        b.add(&payload(n, 2000 + i as u64), &format!("b{i}"));
        useful += 2 * n as u64;
    }
    wait_for(
        "both daemons to hold all 200 bundles",
        Duration::from_secs(50),
        || {
            a.check_alive();
            b.check_alive();
            let (sa, sb) = (a.status(), b.status());
            (sa.store.bundles == 2 * EACH as u64 && sb.store.bundles == 2 * EACH as u64)
                .then_some(())
        },
    );
    let took = start.elapsed();
    let (sa, sb) = (a.status(), b.status());
    let on_air = sa.links[0].bytes_out + sb.links[0].bytes_out;
    eprintln!(
        "{EACH}+{EACH} bundles ({useful} B of payload) in {took:?}; {on_air} B sent on the radio \
         (A {} B, B {} B); received A {} B {}",
        sa.links[0].bytes_out,
        sb.links[0].bytes_out,
        sa.protocol.bundles_received,
        sb.protocol.bundles_received
    );
    assert_eq!(sa.protocol.bundles_received, EACH as u64);
    assert_eq!(sb.protocol.bundles_received, EACH as u64);
    assert_eq!(sb.links[0].kind, "rfd900");
}
