//! `hf-modem` driver against the emulated HF modems, over real ptys, with rates scaled up
//! and times scaled down tenfold so that calls take seconds.

use std::time::{Duration, Instant};

use crate::common::*;
use skywave_links::hf::{self, HfConfig, HfModemConfig, HfModems};
use skywave_links::{LinkCounters, LinkEvent, LinkHandle};

/// The `hf-modem` profile, ten times faster.
const PROFILE: &str = "profile=hf-modem,rate=14750bps,delay=400ms,turnaround=200ms";

fn modems() -> HfModems {
    let cfg = HfConfig {
        rate_bps: 14_750,
        latency: Duration::from_millis(400),
        latency_compressed: Duration::from_millis(800),
        turnaround: Duration::from_millis(200),
        call_setup: Duration::from_millis(300),
        answer_timeout: Duration::from_secs(3),
        guard: Duration::from_millis(50),
        ..HfConfig::default()
    };
    HfModems::start(cfg, ["ALPHA", "BRAVO"]).unwrap()
}

fn driver(m: &HfModems, i: usize, station: Option<&str>) -> LinkHandle {
    let mut c = HfModemConfig::new(m.path(i));
    c.station = station.map(str::to_string);
    c.self_id = Some(["ALPHA", "BRAVO"][i].to_string());
    c.channels = vec![["1", "2"][i].to_string(), "7".to_string()];
    c.profile = PROFILE.into();
    c.guard = Duration::from_millis(50);
    c.redial = Duration::from_millis(300);
    c.call_timeout = Duration::from_secs(5);
    c.command_timeout = Duration::from_secs(2);
    hf::spawn(c).unwrap()
}

async fn exchange(a: &mut LinkHandle, b: &mut LinkHandle, from: u32, n: u32) {
    let sender = async {
        for i in 0..n {
            send(a, frame(from + i, 250), 10.0).await;
        }
    };
    let receiver = async {
        for i in 0..n {
            assert_eq!(
                expect_frame(b, 10.0).await,
                frame(from + i, 250),
                "frame {i}"
            );
        }
    };
    tokio::join!(sender, receiver);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dial_carry_data_both_ways_and_hang_up() {
    init_tracing();
    let m = modems();
    let mut a = driver(&m, 0, Some("BRAVO"));
    let mut b = driver(&m, 1, None);
    let p = expect_up(&mut a, 10.0).await;
    expect_up(&mut b, 10.0).await;
    assert_eq!(
        (p.mtu, p.shared, p.paced, p.half_duplex),
        (250, false, false, true)
    );
    assert_eq!(p.rate_bps, Some(14_750));
    for i in 0..2 {
        let st = m.stats(i);
        assert!(!st.compression, "AT%C0 turns compression off: {st:?}");
        assert_eq!(st.id, ["ALPHA", "BRAVO"][i]);
        assert_eq!(
            st.channels,
            vec![["1", "2"][i].to_string(), "7".to_string()]
        );
        assert_eq!(st.connects, 1);
    }
    assert_eq!(m.stats(0).dialled.as_deref(), Some("BRAVO"));

    exchange(&mut a, &mut b, 0, 15).await;
    exchange(&mut b, &mut a, 100, 8).await;
    assert_eq!(LinkCounters::get(&b.counters.dropped_frames), 0);

    // Dropping the handle hangs up: the other side hears NO CARRIER.
    drop(a);
    let reason = expect_down(&mut b, 5.0).await;
    assert!(reason.contains("NO CARRIER"), "{reason}");
    assert_eq!(m.stats(0).hangups, 1);
    assert_eq!(m.stats(0).overruns + m.stats(1).overruns, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_is_detected_and_redialled() {
    init_tracing();
    let m = modems();
    let mut a = driver(&m, 0, Some("BRAVO"));
    let mut b = driver(&m, 1, None);
    expect_up(&mut a, 10.0).await;
    expect_up(&mut b, 10.0).await;
    exchange(&mut a, &mut b, 0, 3).await;

    m.drop_call().await;
    assert!(expect_down(&mut a, 5.0).await.contains("NO CARRIER"));
    assert!(expect_down(&mut b, 5.0).await.contains("NO CARRIER"));
    assert_eq!(*a.room.borrow(), 0);
    expect_up(&mut a, 10.0).await;
    expect_up(&mut b, 10.0).await;
    assert_eq!(m.stats(0).connects, 2);
    exchange(&mut a, &mut b, 10, 3).await;
    exchange(&mut b, &mut a, 20, 3).await;
    assert_eq!(LinkCounters::get(&a.counters.downs), 1);
}

/// Both sides write as fast as their drivers allow for 9 s: the modems never overrun
/// (an overrun would drop the call), the channel carries a good share of its rate, and
/// neither side keeps the turn past the longest over (ten handovers of 0.6 s here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn greedy_writers_never_overrun_the_modem() {
    init_tracing();
    let m = modems();
    let a = driver(&m, 0, Some("BRAVO"));
    let b = driver(&m, 1, None);
    let secs = 9.0;
    let greedy = |mut h: LinkHandle, seed: u32| async move {
        expect_up(&mut h, 10.0).await;
        let start = Instant::now();
        let (mut sent, mut heard, mut told) = (0u64, 0u64, 0u64);
        while start.elapsed().as_secs_f64() < secs {
            while let Ok(ev) = h.events.try_recv() {
                match ev {
                    LinkEvent::Frame(f) => heard += f.len() as u64,
                    LinkEvent::Heard { .. } => told += 1,
                    LinkEvent::Down { reason } => panic!("{}: down: {reason}", h.name),
                    _ => {}
                }
            }
            let room = *h.room.borrow();
            if room >= 64 {
                let f = frame(seed, room.min(250) + 1);
                sent += f.len() as u64;
                h.send_frame(f).await.unwrap();
            } else {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        (sent, heard, told, h)
    };
    let ((sa, ha, ta, a), (sb, hb, tb, b)) = tokio::join!(greedy(a, 1), greedy(b, 2));
    for i in 0..2 {
        let st = m.stats(i);
        assert_eq!(st.overruns, 0, "modem {i}: {st:?}");
        assert_eq!(st.connects, 1, "modem {i}: {st:?}");
        assert!(st.max_used <= 1024, "modem {i}: {st:?}");
    }
    // 1843 B/s shared, less turnarounds and the pacing's confirmation window.
    let capacity = secs * 14_750.0 / 8.0;
    assert!(
        ((ha + hb) as f64) > capacity * 0.3,
        "heard {ha}+{hb} of {capacity}"
    );
    // The side holding the turn keeps it while it has data, so shares are uneven.
    assert!(sa > 400 && sb > 400, "sent {sa} {sb}");
    assert_eq!(LinkCounters::get(&a.counters.dropped_frames), 0);
    assert_eq!(LinkCounters::get(&b.counters.dropped_frames), 0);
    // The turn went over by announcement (the holder's longest over ended), and the
    // other side heard it.
    let sent = LinkCounters::get(&a.counters.over_ends_sent)
        + LinkCounters::get(&b.counters.over_ends_sent);
    let heard = LinkCounters::get(&a.counters.over_ends_heard)
        + LinkCounters::get(&b.counters.over_ends_heard);
    assert!(
        sent >= 1 && heard >= 1,
        "over ends sent {sent}, heard {heard}"
    );
    // Each announcement heard is told to the daemon (the peer is there: its resend
    // timeouts stop backing off), at most once per read.
    assert!(
        ta + tb >= 1 && ta + tb <= heard,
        "told the daemon {ta} + {tb} times of {heard} announcements heard"
    );
}
