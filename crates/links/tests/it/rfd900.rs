//! `rfd900` driver against the emulated radios, over real ptys.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::common::*;
use bytes::Bytes;
use skywave_links::rfd900::{self, MediumConfig, Rfd900Config, Rfd900Medium};
use skywave_links::{LinkCounters, LinkEvent, LinkHandle};

fn radio(medium: &Rfd900Medium, i: usize, air_rate: u64) -> LinkHandle {
    let mut cfg = Rfd900Config::new(medium.path(i));
    cfg.air_rate = air_rate;
    rfd900::spawn(cfg).unwrap()
}

/// Collects frames (and remembers statuses) until `n` frames or `secs`.
async fn frames(h: &mut LinkHandle, n: usize, secs: f64) -> (Vec<Bytes>, Vec<LinkEvent>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(secs);
    let mut got = Vec::new();
    let mut statuses = Vec::new();
    while got.len() < n {
        match tokio::time::timeout_at(deadline, h.events.recv()).await {
            Ok(Some(LinkEvent::Frame(f))) => got.push(f),
            Ok(Some(e @ LinkEvent::Status(_))) => statuses.push(e),
            Ok(Some(other)) => panic!("{}: unexpected {other:?}", h.name),
            Ok(None) => panic!("driver stopped"),
            Err(_) => break,
        }
    }
    (got, statuses)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_pass_both_ways_and_every_radio_hears_them() {
    init_tracing();
    let medium = Rfd900Medium::start(MediumConfig::new(3)).unwrap();
    let mut a = radio(&medium, 0, 128_000);
    let mut b = radio(&medium, 1, 128_000);
    let mut c = radio(&medium, 2, 128_000);
    let p = expect_up(&mut a, 5.0).await;
    assert_eq!(
        (p.mtu, p.shared, p.paced, p.half_duplex),
        (223, true, false, false)
    );
    assert_eq!(p.rate_bps, Some(128_000));
    expect_up(&mut b, 5.0).await;
    expect_up(&mut c, 5.0).await;

    let n = 30;
    let sent: Vec<Bytes> = (0..n).map(|i| frame(i, 223)).collect();
    let s = sent.clone();
    let sender = async move {
        for f in s {
            send(&mut a, f, 5.0).await;
        }
        a
    };
    let (mut a, (got_b, st_b), (got_c, _)) = tokio::join!(
        sender,
        frames(&mut b, n as usize, 10.0),
        frames(&mut c, n as usize, 10.0)
    );
    assert_eq!(got_b, sent);
    assert_eq!(got_c, sent);
    let st = status_seen(&st_b).expect("the radio's figures");
    assert_eq!((st.rssi, st.remote_rssi, st.temperature), (200, 100, 28));
    assert!(st.buffer_space > 3000 && st.buffer_space <= 4096, "{st:?}");

    for i in 0..5 {
        send(&mut b, frame(200 + i, 223), 5.0).await;
    }
    let (back, _) = frames(&mut a, 5, 10.0).await;
    assert_eq!(
        back,
        (0..5).map(|i| frame(200 + i, 223)).collect::<Vec<_>>()
    );
    assert_eq!(LinkCounters::get(&b.counters.dropped_frames), 0);
    assert_eq!(LinkCounters::get(&b.counters.garbage_bytes), 0);
    assert_eq!(medium.stats(0).frames_sent, u64::from(n));
    assert_eq!(medium.stats(0).overrun_bytes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parity_corrects_byte_errors_and_drops_what_it_cannot() {
    init_tracing();
    let medium = Rfd900Medium::start(MediumConfig::new(2)).unwrap();
    let mut a = radio(&medium, 0, 128_000);
    let mut b = radio(&medium, 1, 128_000);
    expect_up(&mut a, 5.0).await;
    expect_up(&mut b, 5.0).await;
    // 10 corrupted bytes per frame: within the 16 the parity corrects.
    medium.set_corrupt_bytes(10).await;
    for i in 0..10 {
        send(&mut a, frame(i, 223), 5.0).await;
    }
    let (got, _) = frames(&mut b, 10, 10.0).await;
    assert_eq!(got, (0..10).map(|i| frame(i, 223)).collect::<Vec<_>>());
    // 40: beyond it. Frames are dropped and counted, never delivered wrong.
    medium.set_corrupt_bytes(40).await;
    for i in 0..5 {
        send(&mut a, frame(100 + i, 223), 5.0).await;
    }
    let (got, _) = frames(&mut b, 1, 1.5).await;
    assert!(got.is_empty(), "{got:?}");
    assert_eq!(LinkCounters::get(&b.counters.dropped_frames), 5);
    medium.set_corrupt_bytes(0).await;
    send(&mut a, frame(7, 223), 5.0).await;
    assert_eq!(frames(&mut b, 1, 5.0).await.0, vec![frame(7, 223)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_bytes_and_broken_escapes_are_counted_and_dropped() {
    init_tracing();
    let medium = Rfd900Medium::start(MediumConfig::new(2)).unwrap();
    let mut a = radio(&medium, 0, 128_000);
    let mut b = radio(&medium, 1, 128_000);
    expect_up(&mut a, 5.0).await;
    expect_up(&mut b, 5.0).await;
    // Noise on the radio-to-host line of B.
    medium.inject(1, noise(3, 3000)).await;
    // Noise and broken escapes on the host-to-radio line of A (a second writer on the
    // port, as a misbehaving program would be).
    let mut port = std::fs::OpenOptions::new()
        .write(true)
        .open(medium.path(0))
        .unwrap();
    let mut junk = noise(5, 2000);
    junk.retain(|&b| b != b'!');
    junk.extend_from_slice(b"!x!q");
    port.write_all(&junk).unwrap();
    drop(port);
    tokio::time::sleep(Duration::from_millis(200)).await;
    for i in 0..10 {
        send(&mut a, frame(i, 223), 5.0).await;
    }
    let (got, _) = frames(&mut b, 10, 10.0).await;
    assert_eq!(got, (0..10).map(|i| frame(i, 223)).collect::<Vec<_>>());
    assert!(LinkCounters::get(&b.counters.garbage_bytes) >= 2900);
    assert_eq!(medium.stats(0).broken_escapes, 2);
    // The junk never went on the air: the driver's `!C` cleared it first.
    assert_eq!(medium.stats(0).frames_sent, 10);

    // Random bytes that include `!!`: junk frames go on the air, fail the parity at B,
    // and are counted.
    let mut port = std::fs::OpenOptions::new()
        .write(true)
        .open(medium.path(0))
        .unwrap();
    port.write_all(&[b"junk!!".as_slice(), &noise(9, 300), b"!!"].concat())
        .unwrap();
    drop(port);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(LinkCounters::get(&b.counters.dropped_frames) >= 2);
    send(&mut a, frame(50, 223), 5.0).await;
    assert_eq!(frames(&mut b, 1, 5.0).await.0, vec![frame(50, 223)]);
}

/// Both radios send as fast as their drivers allow on a slow channel with small radio
/// buffers: airtime pacing keeps every buffer within bounds, and the air stays busy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn greedy_senders_never_overrun_the_radio_buffer() {
    init_tracing();
    let air = 19_200;
    let mut cfg = MediumConfig::new(2);
    cfg.air_rate = air;
    cfg.buffer = 700;
    let medium = Rfd900Medium::start(cfg).unwrap();
    let mut a = radio(&medium, 0, air);
    let mut b = radio(&medium, 1, air);
    expect_up(&mut a, 5.0).await;
    expect_up(&mut b, 5.0).await;
    let secs = 3.0;
    let start = Instant::now();
    let greedy = |mut h: LinkHandle, seed: u32| async move {
        let mut i = 0;
        let mut heard = 0;
        while start.elapsed().as_secs_f64() < secs {
            while let Ok(ev) = h.events.try_recv() {
                if let LinkEvent::Frame(_) = ev {
                    heard += 1;
                }
            }
            if *h.room.borrow() >= 223 {
                h.send_frame(frame(seed + i, 224)).await.unwrap();
                i += 1;
            } else {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        (i, heard, h)
    };
    let ((sa, _, a), (sb, _, b)) = tokio::join!(greedy(a, 0), greedy(b, 10_000));
    for i in 0..2 {
        let st = medium.stats(i);
        assert_eq!(st.overrun_bytes, 0, "radio {i}: {st:?}");
        assert!(st.max_used <= 700, "radio {i}: {st:?}");
    }
    // The channel carries 19200 bit/s (2400 B/s), shared; it stays mostly busy.
    let capacity = secs * air as f64 / 8.0;
    let on_air: u64 = (0..2)
        .map(|i| medium.stats(i).bytes_sent + 8 * medium.stats(i).frames_sent)
        .sum();
    assert!(
        on_air as f64 > capacity * 0.6,
        "{on_air} bytes on air of {capacity}"
    );
    assert!(
        on_air as f64 <= capacity + 600.0,
        "{on_air} bytes on air of {capacity}"
    );
    assert!(sa > 3 && sb > 3, "{sa} {sb}");
    assert_eq!(LinkCounters::get(&a.counters.over_room), 0);
    assert_eq!(LinkCounters::get(&b.counters.over_room), 0);
}
