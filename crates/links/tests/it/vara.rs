//! The `vara` driver against a scripted fake VARA pair over TCP
//! (`skywave_links::vara::fake`): sessions, credit, and bad input from the modem.

use std::time::Duration;

use crate::common::*;
use bytes::Bytes;
use skywave_links::vara::fake::{FakeVaraConfig, FakeVaras};
use skywave_links::vara::{self, VaraConfig};
use skywave_links::{LinkCounters, LinkEvent, LinkHandle};

fn link(f: &FakeVaras, i: usize) -> VaraConfig {
    let mut c = VaraConfig::new(f.cmd_addr(i), &format!("N0CALL-{}", i + 1));
    c.data = Some(f.data_addr(i));
    c.amateur = true;
    if i == 0 {
        c.station = Some("N0CALL-2".into());
    }
    c.air_rate = 8000;
    c.idle_timeout = Duration::from_secs(2);
    c.alive_timeout = Duration::from_secs(2);
    c.command_timeout = Duration::from_secs(1);
    c.stall_timeout = Duration::from_secs(2);
    c.call_timeout = Duration::from_secs(5);
    c
}

async fn fakes() -> FakeVaras {
    FakeVaras::start(FakeVaraConfig {
        rate: 2000.0,
        alive_interval: Duration::from_millis(500),
        ..FakeVaraConfig::default()
    })
    .await
    .unwrap()
}

async fn pair(f: &FakeVaras) -> (LinkHandle, LinkHandle) {
    let mut a = vara::spawn(link(f, 0)).unwrap();
    let mut b = vara::spawn(link(f, 1)).unwrap();
    expect_up(&mut a, 5.0).await;
    expect_up(&mut b, 5.0).await;
    (a, b)
}

/// Down events until one whose reason contains `what`.
async fn down_because(h: &mut LinkHandle, what: &str, secs: f64) -> String {
    loop {
        match next_event(h, secs).await {
            LinkEvent::Down { reason } if reason.contains(what) => return reason,
            LinkEvent::Down { .. } | LinkEvent::Up(_) => continue,
            other => panic!("{}: expected down ({what}), got {other:?}", h.name),
        }
    }
}

async fn wait_until(what: &str, secs: f64, mut f: impl FnMut() -> bool) {
    let until = tokio::time::Instant::now() + Duration::from_secs_f64(secs);
    while !f() {
        assert!(
            tokio::time::Instant::now() < until,
            "{what}: not within {secs} s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_carries_frames_both_ways_ends_when_idle_and_is_called_back() {
    init_tracing();
    let f = fakes().await;
    let (a, mut b) = pair(&f).await;
    assert_eq!(*b.room.borrow(), 0, "no one to call yet");
    // A frame at A starts a call to N0CALL-2.
    let n = 30;
    let sender = send_all(a, (0..n).map(|i| frame(i, 400)).collect(), 20.0);
    for i in 0..n {
        assert_eq!(frame_from(&mut b, 20.0).await, frame(i, 400), "frame {i}");
    }
    let mut a = sender.await.unwrap();
    send(&mut b, Bytes::from_static(&[7u8; 100]), 5.0).await;
    assert_eq!(
        frame_from(&mut a, 5.0).await,
        Bytes::from_static(&[7u8; 100])
    );
    // Idle for 2 s with the queue empty: A or B hangs up, and nothing was discarded.
    wait_until("the idle session ended", 10.0, || !f.connected()).await;
    let (sa, sb) = (f.stats(0), f.stats(1));
    assert_eq!((sa.discarded, sb.discarded), (0, 0));
    assert_eq!(
        sa.commands[..4],
        ["MYCALL N0CALL-1", "LISTEN ON", "COMPRESSION OFF", "BW2300"]
    );
    assert!(sa.commands.contains(&"CWID ON".to_string()));
    assert!(
        sa.max_buffered <= VaraConfig::new("x:1", "N0CALL").buffer,
        "{}",
        sa.max_buffered
    );
    // B learnt who called: it calls back when it has something to send.
    send(&mut b, Bytes::from_static(&[9u8; 80]), 5.0).await;
    assert_eq!(
        frame_from(&mut a, 10.0).await,
        Bytes::from_static(&[9u8; 80])
    );
    assert!(
        f.stats(1)
            .commands
            .iter()
            .any(|c| c == "CONNECT N0CALL-2 N0CALL-1"),
        "{:?}",
        f.stats(1).commands
    );
    assert_eq!(LinkCounters::get(&a.counters.garbage_bytes), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_the_command_port_is_counted_and_the_link_carries_on() {
    init_tracing();
    let f = fakes().await;
    let (mut a, mut b) = pair(&f).await;
    f.inject(0, b"\x00\xff\xfe\x01binary\rBUFFER many\rCONNECTED\r");
    f.inject(0, &[b'X'; 5000]);
    f.inject(0, b"\r");
    send(&mut a, frame(1, 200), 5.0).await;
    assert_eq!(frame_from(&mut b, 10.0).await, frame(1, 200));
    let g = LinkCounters::get(&a.counters.garbage_bytes);
    assert!(g > 4000, "{g}");
    assert_eq!(LinkCounters::get(&a.counters.downs), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_replies_are_named_and_a_refused_callsign_takes_the_link_down() {
    init_tracing();
    let f = fakes().await;
    // A refused setting is a warning: the modem keeps its own.
    f.refuse(1, &["BW", "CWID"]);
    f.refuse(0, &["MYCALL"]);
    let mut a = vara::spawn(link(&f, 0)).unwrap();
    let mut b = vara::spawn(link(&f, 1)).unwrap();
    expect_up(&mut b, 5.0).await;
    let reason = down_because(&mut a, "MYCALL", 5.0).await;
    assert!(
        reason.contains("'MYCALL N0CALL-1' (WRONG)") && reason.contains("callsign"),
        "{reason}"
    );
    // Retried: once the modem takes it the link comes up and carries frames.
    f.refuse(0, &[]);
    expect_up(&mut a, 10.0).await;
    send(&mut a, frame(2, 200), 5.0).await;
    assert_eq!(frame_from(&mut b, 10.0).await, frame(2, 200));
    assert!(f.stats(0).clients >= 2, "reconnected to the modem");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modem_that_stops_answering_is_left_and_reconnected() {
    init_tracing();
    let f = fakes().await;
    let (mut a, _b) = pair(&f).await;
    f.silent(0, true);
    let reason = down_because(&mut a, "IAMALIVE", 5.0).await;
    assert!(
        reason.contains("2 s") && reason.contains("reconnecting"),
        "{reason}"
    );
    let clients = f.stats(0).clients;
    f.silent(0, false);
    expect_up(&mut a, 10.0).await;
    assert!(f.stats(0).clients > clients);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buffer_that_never_drains_holds_the_link_says_why_and_loses_nothing() {
    init_tracing();
    let f = fakes().await;
    let (mut a, mut b) = pair(&f).await;
    // A session first.
    send(&mut a, frame(0, 300), 5.0).await;
    assert_eq!(frame_from(&mut b, 10.0).await, frame(0, 300));
    f.sending(0, false);
    let cap = link(&f, 0).buffer;
    let n = 20;
    let counters = a.counters.clone();
    let sender = send_all(a, (1..=n).map(|i| frame(i, 300)).collect(), 60.0);
    wait_until("the link went down for the stall", 10.0, || {
        LinkCounters::get(&counters.downs) >= 1
    })
    .await;
    assert!(
        f.buffered(0) > cap / 2 && f.buffered(0) <= cap,
        "{} of {cap}",
        f.buffered(0)
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(f.buffered(0) <= cap, "{} > {cap}", f.buffered(0));
    f.sending(0, true);
    for i in 1..=n {
        assert_eq!(frame_from(&mut b, 30.0).await, frame(i, 300), "frame {i}");
    }
    let mut a = sender.await.unwrap();
    let reason = down_because(&mut a, "BUFFER not draining", 1.0).await;
    assert!(reason.contains("without sending"), "{reason}");
    assert_eq!(f.stats(0).discarded, 0);
    assert!(f.stats(0).max_buffered <= cap);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_call_while_the_channel_is_busy() {
    init_tracing();
    let f = fakes().await;
    let (mut a, mut b) = pair(&f).await;
    f.busy(0, true);
    tokio::time::sleep(Duration::from_millis(100)).await;
    send(&mut a, frame(3, 200), 5.0).await;
    let reason = down_because(&mut a, "busy", 5.0).await;
    assert!(
        reason.contains("BUSY ON") && reason.contains("N0CALL-2"),
        "{reason}"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!f.connected());
    f.busy(0, false);
    assert_eq!(frame_from(&mut b, 10.0).await, frame(3, 200));
    assert_eq!(f.stats(0).connects_while_busy, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_that_refuses_connections_is_retried_with_backoff() {
    init_tracing();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let mut c = VaraConfig::new(addr.to_string(), "N0CALL-1");
    c.data = Some(addr.to_string());
    let mut h = vara::spawn(c).unwrap();
    let reason = expect_down(&mut h, 5.0).await;
    assert!(
        reason.contains(&format!("cannot reach VARA's command port at {addr}"))
            && reason.contains("Retrying in"),
        "{reason}"
    );
    // The same failure is said once, not at every retry.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(LinkCounters::get(&h.counters.downs), 1);
    assert!(h.events.try_recv().is_err());
}

#[tokio::test]
async fn a_missing_callsign_is_refused_at_start() {
    let mut c = VaraConfig::new("127.0.0.1:8300", "N0CALL");
    c.callsign = None;
    let e = vara::spawn(c).unwrap_err().to_string();
    assert!(
        e.contains("'callsign'") && e.contains("(not set)") && e.contains("MYCALL"),
        "{e}"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    /// Any bytes on the command port, in any chunking, mixed with the lines VARA sends:
    /// never a panic, the same lines, the cap held (the `vara` fuzz target's body).
    #[test]
    fn any_bytes_on_the_command_port(
        chunk in 0u8..32,
        parts in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
                proptest::sample::select(vec![
                    b"OK\r".to_vec(), b"WRONG\r".to_vec(), b"BUFFER 300\r".to_vec(),
                    b"BUFFER 0\r".to_vec(), b"CONNECTED N0CALL-1 N0CALL-2 2300\r".to_vec(),
                    b"DISCONNECTED\r".to_vec(), b"BUSY ON\r".to_vec(), b"BUSY OFF\r".to_vec(),
                    b"PENDING\r".to_vec(), b"IAMALIVE\r".to_vec(),
                ]),
            ],
            0..40,
        ),
    ) {
        let mut data = vec![chunk];
        for p in parts {
            data.extend(p);
        }
        skywave_links::fuzzing::vara(&data);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_call_is_retried_with_backoff_and_the_link_says_why() {
    init_tracing();
    let f = FakeVaras::start(FakeVaraConfig {
        call_timeout: Duration::from_millis(500),
        alive_interval: Duration::from_millis(500),
        ..FakeVaraConfig::default()
    })
    .await
    .unwrap();
    let mut a = vara::spawn(link(&f, 0)).unwrap();
    // The far station does not listen.
    let mut b = vara::spawn(VaraConfig {
        listen: false,
        ..link(&f, 1)
    })
    .unwrap();
    expect_up(&mut a, 5.0).await;
    expect_up(&mut b, 5.0).await;
    send(&mut a, frame(4, 200), 5.0).await;
    let reason = down_because(&mut a, "failed", 5.0).await;
    assert!(
        reason.contains("the call to N0CALL-2 failed (no answer): calling again in 2 s"),
        "{reason}"
    );
    // Called again after 2 s, then 4 s: the link stays down meanwhile (no flapping).
    tokio::time::sleep(Duration::from_secs(4)).await;
    let calls = f
        .stats(0)
        .commands
        .iter()
        .filter(|c| c.starts_with("CONNECT"))
        .count();
    assert_eq!(calls, 2, "{:?}", f.stats(0).commands);
    assert_eq!(LinkCounters::get(&a.counters.downs), 1);
    assert_eq!(*a.room.borrow(), 0);
}
