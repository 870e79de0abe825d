//! `serial` driver over real ptys joined by a null-modem cable.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::common::*;
use skywave_links::{LinkCounters, NullModem, SerialConfig, serial};

fn pair(
    dir: &std::path::Path,
    baud: u32,
) -> (
    NullModem,
    skywave_links::LinkHandle,
    skywave_links::LinkHandle,
) {
    let cable = NullModem::open(dir).unwrap();
    let a = serial::spawn(SerialConfig::new(cable.path(0), baud)).unwrap();
    let b = serial::spawn(SerialConfig::new(cable.path(1), baud)).unwrap();
    (cable, a, b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_cross_both_ways_in_order() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let (_cable, mut a, mut b) = pair(dir.path(), 115_200);
    let pa = expect_up(&mut a, 5.0).await;
    expect_up(&mut b, 5.0).await;
    assert_eq!(pa.mtu, 250);
    assert!(!pa.shared && !pa.paced && !pa.half_duplex);
    assert_eq!(pa.rate_bps, Some(92_160));

    let n = 40;
    let send_a = async {
        for i in 0..n {
            send(&mut a, frame(i, 250), 3.0).await;
        }
        a
    };
    let recv_b = async {
        let mut got = Vec::new();
        for _ in 0..n {
            got.push(expect_frame(&mut b, 5.0).await);
        }
        (b, got)
    };
    let (a, (mut b, got)) = tokio::join!(send_a, recv_b);
    for (i, f) in got.iter().enumerate() {
        assert_eq!(f, &frame(i as u32, 250), "frame {i}");
    }
    // And back.
    let mut a = a;
    for i in 0..5 {
        send(&mut b, frame(100 + i, 250), 5.0).await;
        assert_eq!(expect_frame(&mut a, 5.0).await, frame(100 + i, 250));
    }
    let c = &a.counters;
    assert_eq!(LinkCounters::get(&c.frames_out), u64::from(n));
    assert_eq!(LinkCounters::get(&c.frames_in), 5);
    assert_eq!(LinkCounters::get(&c.garbage_bytes), 0);
    assert_eq!(b.counters.over_room.load(Ordering::Relaxed), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_paced_by_the_baud_rate() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let (_cable, mut a, mut b) = pair(dir.path(), 38_400);
    expect_up(&mut a, 5.0).await;
    expect_up(&mut b, 5.0).await;
    // 20 frames of 250 bytes = 5080 bytes on the line; 3840 B/s at 38400 baud 8N1.
    let start = Instant::now();
    let frames: Vec<_> = (0..20)
        .map(|i| bytes::Bytes::from(vec![i as u8 + 1; 250]))
        .collect();
    let sender = async {
        for f in &frames {
            send(&mut a, f.clone(), 5.0).await;
            assert!(*a.room.borrow() <= 250);
        }
    };
    let receiver = async {
        for f in &frames {
            assert_eq!(&expect_frame(&mut b, 5.0).await, f);
        }
    };
    tokio::join!(sender, receiver);
    let secs = start.elapsed().as_secs_f64();
    // All but the first two frames' worth waited for the line.
    let floor = (5080.0 - 2.0 * 254.0) / 3840.0;
    assert!(secs >= floor * 0.95, "{secs} s < {floor} s");
    assert!(secs < floor + 1.5, "{secs} s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn line_noise_is_counted_and_dropped() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let (cable, mut a, mut b) = pair(dir.path(), 115_200);
    expect_up(&mut a, 5.0).await;
    expect_up(&mut b, 5.0).await;
    for i in 0..10u32 {
        cable.inject(1, noise(u64::from(i) + 7, 300)).await;
        // A delimiter ends the noise, as the next frame's would.
        cable.inject(1, vec![0]).await;
        send(&mut a, frame(i, 250), 5.0).await;
        assert_eq!(expect_frame(&mut b, 5.0).await, frame(i, 250));
    }
    assert!(LinkCounters::get(&b.counters.garbage_bytes) >= 2000);
    assert_eq!(LinkCounters::get(&b.counters.frames_in), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_that_disappears_goes_down_and_comes_back() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let (cable, mut a, mut b) = pair(dir.path(), 115_200);
    expect_up(&mut a, 5.0).await;
    expect_up(&mut b, 5.0).await;
    send(&mut a, frame(1, 250), 5.0).await;
    assert_eq!(expect_frame(&mut b, 5.0).await, frame(1, 250));

    cable.unplug().await;
    let reason = expect_down(&mut a, 5.0).await;
    assert!(
        reason.contains("end of file") || reason.contains("failed"),
        "{reason}"
    );
    expect_down(&mut b, 5.0).await;
    assert_eq!(*a.room.borrow(), 0);
    // Away for a while: the drivers keep trying.
    tokio::time::sleep(Duration::from_millis(700)).await;
    cable.plug().await.unwrap();
    expect_up(&mut a, 10.0).await;
    expect_up(&mut b, 10.0).await;
    send(&mut b, frame(2, 250), 5.0).await;
    assert_eq!(expect_frame(&mut a, 5.0).await, frame(2, 250));
    assert_eq!(LinkCounters::get(&a.counters.downs), 1);
}
