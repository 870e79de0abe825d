//! `emulated` links: each framing carried through a link profile on the real clock, with
//! a second driver on the exposed far end (as a second daemon would be).

use std::time::Duration;

use crate::common::*;
use skywave_links::emulated::{self, EmulatedConfig, Framing};
use skywave_links::hf::{self, HfModemConfig};
use skywave_links::rfd900::{self, Rfd900Config};
use skywave_links::serial::{self, SerialConfig};
use skywave_links::{LinkCounters, LinkHandle};

async fn one_way(from: &mut LinkHandle, to: &mut LinkHandle, base: u32, n: u32, max: usize) {
    let sender = async {
        for i in 0..n {
            send(from, frame(base + i, max), 20.0).await;
        }
    };
    let receiver = async {
        for i in 0..n {
            assert_eq!(expect_frame(to, 20.0).await, frame(base + i, max));
        }
    };
    tokio::join!(sender, receiver);
}

async fn both_ways(a: &mut LinkHandle, b: &mut LinkHandle, n: u32, max: usize) {
    one_way(a, b, 0, n, max).await;
    one_way(b, a, 1000, n, max).await;
}

/// Serial framing through the `hf-modem` stream model (rates ten times the profile's,
/// latency and turnaround a tenth), both ends paced for it: no call drops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serial_framing_through_the_hf_modem_profile() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let peer = dir.path().join("peer");
    let profile = "profile=hf-modem,rate=14750bps,delay=400ms,turnaround=200ms";
    let mut a = emulated::spawn(EmulatedConfig::new(profile, &peer)).unwrap();
    let mut b = serial::spawn(SerialConfig {
        profile: Some(profile.into()),
        ..SerialConfig::new(&peer, 115_200)
    })
    .unwrap();
    let p = expect_up(&mut a, 5.0).await;
    assert!(p.half_duplex && !p.shared);
    assert_eq!(p.mtu, 250);
    expect_up(&mut b, 5.0).await;
    both_ways(&mut a, &mut b, 12, 250).await;
    // A drop would have lost frames above; nothing was garbled either.
    assert_eq!(LinkCounters::get(&b.counters.dropped_frames), 0);
    assert_eq!(LinkCounters::get(&a.counters.dropped_frames), 0);
}

/// The real `hf-modem` profile, at its own rate and delays: a few frames each way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serial_framing_through_the_real_hf_modem_profile() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let peer = dir.path().join("peer");
    let mut a = emulated::spawn(EmulatedConfig::new("hf-modem", &peer)).unwrap();
    let mut b = serial::spawn(SerialConfig {
        profile: Some("hf-modem".into()),
        ..SerialConfig::new(&peer, 115_200)
    })
    .unwrap();
    expect_up(&mut a, 5.0).await;
    expect_up(&mut b, 5.0).await;
    let start = std::time::Instant::now();
    send(&mut a, frame(1, 250), 5.0).await;
    assert_eq!(expect_frame(&mut b, 20.0).await, frame(1, 250));
    // 4 s latency plus serialization at 184 B/s, plus the first turnaround.
    assert!(
        start.elapsed() >= Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    send(&mut b, frame(2, 250), 5.0).await;
    assert_eq!(expect_frame(&mut a, 20.0).await, frame(2, 250));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rfd900_framing_through_the_uhf_csma_profile() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let peer = dir.path().join("radio");
    let mut a = emulated::spawn(EmulatedConfig::new("uhf-csma", &peer)).unwrap();
    let mut b = rfd900::spawn(Rfd900Config::new(&peer)).unwrap();
    let p = expect_up(&mut a, 5.0).await;
    assert!(p.shared);
    expect_up(&mut b, 5.0).await;
    both_ways(&mut a, &mut b, 20, 223).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hf_modem_framing_through_emulated_modems() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let peer = dir.path().join("modem");
    let profile = "profile=hf-modem,rate=14750bps,delay=400ms,turnaround=200ms";
    let mut a = emulated::spawn(EmulatedConfig {
        framing: Some(Framing::HfModem),
        ..EmulatedConfig::new(profile, &peer)
    })
    .unwrap();
    let mut b = hf::spawn(HfModemConfig {
        profile: profile.into(),
        ..HfModemConfig::new(&peer)
    })
    .unwrap();
    // Set-up with one-second escape guard times, then a 15 s call set-up.
    expect_up(&mut a, 30.0).await;
    expect_up(&mut b, 30.0).await;
    both_ways(&mut a, &mut b, 4, 250).await;
}

#[tokio::test]
async fn a_profile_of_the_wrong_kind_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let e = emulated::spawn(EmulatedConfig {
        framing: Some(Framing::Rfd900),
        ..EmulatedConfig::new("hf-modem", dir.path().join("x"))
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("profile") && e.contains("csma"), "{e}");
    let e = emulated::spawn(EmulatedConfig::new("no-such-profile", dir.path().join("x")))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no-such-profile") && e.contains("hf-modem"),
        "{e}"
    );
}
