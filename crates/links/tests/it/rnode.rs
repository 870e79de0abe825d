//! The `rnode` driver against scripted fake RNodes on ptys (`skywave_links::rnode::fake`).

use std::time::Duration;

use crate::common::*;
use bytes::Bytes;
use skywave_links::rnode::{self, RnodeConfig, fake::FakeRnodes, wire};
use skywave_links::{LinkCounters, LinkEvent, LinkHandle};
use skywave_node::lora::max_window_air;

/// SF7 at 500 kHz: a 254-byte frame is about 0.1 s on the air, so tests take seconds.
fn link(fakes: &FakeRnodes, i: usize) -> RnodeConfig {
    RnodeConfig {
        sf: 7,
        bandwidth: 500_000,
        ready_timeout: Duration::from_secs(1),
        config_timeout: Duration::from_secs(1),
        ..RnodeConfig::new(fakes.path(i), 868_100_000)
    }
}

async fn pair(fakes: &FakeRnodes, a: RnodeConfig, b: RnodeConfig) -> (LinkHandle, LinkHandle) {
    let mut a = rnode::spawn(a).unwrap();
    let mut b = rnode::spawn(b).unwrap();
    expect_up(&mut a, 5.0).await;
    expect_up(&mut b, 5.0).await;
    assert!(fakes.radio_on(0) && fakes.radio_on(1));
    (a, b)
}

/// Frames until one arrives (skipping ups and downs).
async fn frame_from(h: &mut LinkHandle, secs: f64) -> Bytes {
    loop {
        match next_event(h, secs).await {
            LinkEvent::Frame(f) => return f,
            LinkEvent::Up(_) | LinkEvent::Down { .. } => continue,
            other => panic!("{}: expected a frame, got {other:?}", h.name),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_radio_is_configured_then_frames_cross_one_at_a_time() {
    init_tracing();
    let fakes = FakeRnodes::start(2, 18).unwrap();
    let (mut a, mut b) = pair(&fakes, link(&fakes, 0), link(&fakes, 1)).await;
    // The configuration sequence, with Reticulum's encodings, before anything else.
    let cmds = fakes.stats(0).commands;
    assert_eq!(
        cmds[..6],
        [
            (wire::cmd::FREQUENCY, 868_100_000u32.to_be_bytes().to_vec()),
            (wire::cmd::BANDWIDTH, 500_000u32.to_be_bytes().to_vec()),
            (wire::cmd::TXPOWER, vec![14]),
            (wire::cmd::SF, vec![7]),
            (wire::cmd::CR, vec![5]),
            (wire::cmd::RADIO_STATE, vec![1]),
        ]
    );
    let n = 30;
    let sender = tokio::spawn(async move {
        for i in 0..n {
            send(&mut a, frame(i, 254), 10.0).await;
        }
        a
    });
    for i in 0..n {
        assert_eq!(frame_from(&mut b, 10.0).await, frame(i, 254), "frame {i}");
    }
    let mut a = sender.await.unwrap();
    send(&mut b, Bytes::from_static(&[0xC0; 100]), 5.0).await;
    assert_eq!(
        frame_from(&mut a, 5.0).await,
        Bytes::from_static(&[0xC0; 100])
    );
    let s = fakes.stats(0);
    assert_eq!(s.frames_in, u64::from(n));
    assert_eq!(s.max_held, 1, "never two frames outstanding in the radio");
    // The air log never overlaps: each frame went after the last one's READY.
    for w in s.air_log.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "{w:?}");
    }
    assert_eq!(LinkCounters::get(&b.counters.frames_in), u64::from(n));
    assert_eq!(LinkCounters::get(&b.counters.dropped_frames), 0);
    // The channel statistics reach the link's state.
    let st = a.counters.device_state.lock().unwrap().clone();
    assert!(st.contains_key("airtime_short_pct"), "{st:?}");
    assert_eq!(st["noise_floor_dbm"], -120.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_duty_cycle_budget_holds_on_the_air() {
    init_tracing();
    let fakes = FakeRnodes::start(2, 18).unwrap();
    // 20% of any 3 s: 0.6 s of air, about five largest frames.
    let budget = |i| RnodeConfig {
        duty_cycle: Some(0.2),
        duty_window: Duration::from_secs(3),
        duty_guard: Duration::from_millis(200),
        ..link(&fakes, i)
    };
    let (mut a, mut b) = pair(&fakes, budget(0), budget(1)).await;
    let n = 24;
    let start = std::time::Instant::now();

    let sender = tokio::spawn(async move {
        let mut held = false;
        for i in 0..n {
            // The room closes while the budget is spent: back-pressure.
            held |= *a.room.borrow() == 0;
            send(&mut a, frame(i, 254), 20.0).await;
        }
        (a, held)
    });
    for i in 0..n {
        assert_eq!(frame_from(&mut b, 20.0).await, frame(i, 254), "frame {i}");
    }
    let (a, held) = sender.await.unwrap();
    assert!(held, "the link never said no");
    let took = start.elapsed().as_secs_f64();
    let log: Vec<(u64, u64)> = fakes
        .stats(0)
        .air_log
        .iter()
        .map(|&(s, d)| (s.as_nanos() as u64, d.as_nanos() as u64))
        .collect();
    let air: u64 = log.iter().map(|l| l.1).sum();
    let busiest = max_window_air(&log, 3_000_000_000);
    assert!(
        busiest <= 600_000_000,
        "{:.3} s on the air in some 3 s window (allowed 0.6 s)",
        busiest as f64 / 1e9
    );
    // It was needed: the frames' air time is well past one window's allowance, and the
    // sender waited for the budget.
    assert!(air > 1_500_000_000, "{air}");
    assert!(took >= air as f64 / 1e9 / 0.2 - 3.0, "{took} s");
    let st = a.counters.device_state.lock().unwrap().clone();
    assert_eq!(st["duty_cycle_limit_pct"], 20.0);
    assert!(st["duty_cycle_used_s"] <= 0.6 + 1e-9, "{st:?}");
    assert!(st.contains_key("duty_cycle_remaining_s"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_a_full_queue_lose_nothing() {
    init_tracing();
    let fakes = FakeRnodes::start(2, 18).unwrap();
    let (mut a, mut b) = pair(&fakes, link(&fakes, 0), link(&fakes, 1)).await;
    // Noise, a broken escape, an empty data frame, an unknown command, a setting of the
    // wrong length, in front of the host.
    let mut junk = noise(5, 300);
    junk.extend([wire::FEND, 0x00, 0x41, 0xDB, 0x42, wire::FEND]);
    junk.extend([
        wire::FEND,
        0x00,
        wire::FEND,
        wire::FEND,
        0x77,
        1,
        2,
        wire::FEND,
    ]);
    junk.extend([wire::FEND, wire::cmd::SF, 7, 7, wire::FEND]);
    fakes.inject(0, &junk).await;
    // The radio refuses the next two frames: they are sent again at READY.
    fakes.refuse_next(0, 2);
    for i in 0..6 {
        send(&mut a, frame(i, 254), 10.0).await;
    }
    for i in 0..6 {
        assert_eq!(frame_from(&mut b, 10.0).await, frame(i, 254), "frame {i}");
    }
    let s = fakes.stats(0);
    assert_eq!(s.refused, 2);
    assert_eq!(s.frames_in, 8, "6 frames and the 2 refused, again");
    assert!(LinkCounters::get(&a.counters.garbage_bytes) > 0);
    assert!(LinkCounters::get(&a.counters.dropped_frames) >= 3);
    assert_eq!(a.counters.device_state.lock().unwrap()["queue_full"], 2.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_that_stops_answering_is_reopened() {
    init_tracing();
    let fakes = FakeRnodes::start(2, 18).unwrap();
    let (mut a, mut b) = pair(&fakes, link(&fakes, 0), link(&fakes, 1)).await;
    send(&mut a, frame(0, 254), 5.0).await;
    assert_eq!(frame_from(&mut b, 5.0).await, frame(0, 254));
    fakes.silent(0, true);
    send(&mut a, frame(1, 254), 5.0).await;
    let why = expect_down(&mut a, 5.0).await;
    assert!(why.contains("READY") && why.contains("reopening"), "{why}");
    // Reopened while still silent: the configuration is not confirmed.
    let why = expect_down(&mut a, 5.0).await;
    assert!(why.contains("did not confirm its configuration"), "{why}");
    fakes.silent(0, false);
    loop {
        match next_event(&mut a, 10.0).await {
            LinkEvent::Up(_) => break,
            LinkEvent::Down { .. } => continue,
            other => panic!("{other:?}"),
        }
    }
    // The link works again.
    send(&mut a, frame(2, 254), 5.0).await;
    assert_eq!(frame_from(&mut b, 5.0).await, frame(2, 254));
    assert!(LinkCounters::get(&a.counters.downs) >= 2);
}

#[tokio::test]
async fn a_missing_device_is_retried_and_bad_settings_are_refused() {
    let e = rnode::spawn(RnodeConfig {
        sf: 4,
        ..RnodeConfig::new("/dev/null", 868_100_000)
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("'sf'") && e.contains("7 to 12"), "{e}");
    let mut h = rnode::spawn(RnodeConfig::new("/nonexistent/rnode", 868_100_000)).unwrap();
    // No device: nothing comes up, and the room stays shut.
    assert!(
        tokio::time::timeout(Duration::from_millis(600), h.events.recv())
            .await
            .is_err()
    );
    assert_eq!(*h.room.borrow(), 0);
}
