//! The `ardop` driver against scripted fake ardopcf modems (`skywave_links::ardop::fake`).

use std::time::Duration;

use crate::common::*;
use skywave_links::ardop::{self, ArdopConfig, ArdopMode, fake::FakeArdops};
use skywave_links::{LinkCounters, LinkEvent, LinkHandle};

/// Bytes a second the fake channel carries (ARDOP's ARQ carries about 80; the fakes run
/// faster so that the tests take seconds).
const FAST: f64 = 2000.0;

fn link(m: &FakeArdops, i: usize, me: &str, call: Option<&str>) -> ArdopConfig {
    let mut c = ArdopConfig::new(m.addr(i), me);
    c.call = call.map(String::from);
    c.buffer = Some(4000);
    c.stall_timeout = Duration::from_secs(3);
    c.watchdog = Duration::from_secs(10);
    c
}

/// Events until the link is up; the reasons it gave while down.
async fn until_up(h: &mut LinkHandle, secs: f64) -> Vec<String> {
    let mut downs = Vec::new();
    loop {
        match next_event(h, secs).await {
            LinkEvent::Up(_) => return downs,
            LinkEvent::Down { reason } => downs.push(reason),
            other => panic!("{}: expected Up, got {other:?}", h.name),
        }
    }
}

/// Events until the link goes down; its reason.
async fn until_down(h: &mut LinkHandle, secs: f64) -> String {
    loop {
        match next_event(h, secs).await {
            LinkEvent::Down { reason } => return reason,
            LinkEvent::Up(_) | LinkEvent::Frame(_) => continue,
            other => panic!("{}: expected Down, got {other:?}", h.name),
        }
    }
}

/// Waits until fake modem `i` has handled its host's setup (`STATE` comes last): its
/// host is connected on both ports, so what the script makes the modem say reaches it,
/// and it has its `MYCALL` (a call to it before then fails).
async fn set_up(m: &FakeArdops, i: usize) {
    let t = tokio::time::Instant::now();
    loop {
        let s = m.stats(i);
        if s.commands.iter().any(|c| c == "STATE") && s.data_connections > 0 {
            return;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "modem {i}: {s:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A calls B; both come up.
async fn pair(m: &FakeArdops) -> (LinkHandle, LinkHandle) {
    pair_with(m, |_| {}).await
}

/// [`pair`], both links' settings changed by `tweak`.
async fn pair_with(m: &FakeArdops, tweak: impl Fn(&mut ArdopConfig)) -> (LinkHandle, LinkHandle) {
    let cfg = |i: usize, me: &str, call: Option<&str>| {
        let mut c = link(m, i, me, call);
        tweak(&mut c);
        c
    };
    let mut b = ardop::spawn(cfg(1, "N0CALL-2", None)).unwrap();
    // B listens before A calls.
    let downs = until_down(&mut b, 5.0).await;
    assert!(
        downs.contains("listening for a call to N0CALL-2"),
        "{downs}"
    );
    set_up(m, 1).await;
    let mut a = ardop::spawn(cfg(0, "N0CALL-1", Some("N0CALL-2"))).unwrap();
    until_up(&mut a, 10.0).await;
    until_up(&mut b, 10.0).await;
    (a, b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arq_call_connects_and_frames_cross_both_ways_within_the_buffer() {
    init_tracing();
    let m = FakeArdops::start(2, FAST).await.unwrap();
    let (a, mut b) = pair(&m).await;
    let s = m.stats(0);
    for c in [
        "INITIALIZE",
        "MYCALL N0CALL-1",
        "PROTOCOLMODE ARQ",
        "LISTEN TRUE",
        "ARQCALL N0CALL-2 5",
    ] {
        assert!(
            s.commands.iter().any(|x| x == c),
            "{c} not in {:?}",
            s.commands
        );
    }
    let n = 40;
    let send_a = send_all(a, (0..n).map(|i| frame(i, 500)).collect(), 20.0);
    for i in 0..n {
        assert_eq!(frame_from(&mut b, 20.0).await, frame(i, 500));
    }
    let mut a = send_a.await.unwrap();
    for i in 0..5 {
        send(&mut b, frame(100 + i, 300), 20.0).await;
    }
    for i in 0..5 {
        assert_eq!(frame_from(&mut a, 20.0).await, frame(100 + i, 300));
    }
    // Never more than the configured buffer in the modem, nothing discarded.
    let s = m.stats(0);
    assert!(s.max_buffer <= 4000, "{} bytes buffered", s.max_buffer);
    assert!(s.max_buffer > 1000, "the buffer was used: {}", s.max_buffer);
    assert_eq!(s.discarded, 0);
    assert_eq!(LinkCounters::get(&b.counters.frames_in), u64::from(n));
    assert_eq!(LinkCounters::get(&b.counters.garbage_bytes), 0);
}

/// The modem's account of itself reaches the daemon (for `skywave status`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_modem_status_names_the_station_and_the_buffer() {
    init_tracing();
    let m = FakeArdops::start(2, FAST).await.unwrap();
    let mut b = ardop::spawn(link(&m, 1, "N0CALL-2", None)).unwrap();
    set_up(&m, 1).await;
    let mut a = ardop::spawn(link(&m, 0, "N0CALL-1", Some("N0CALL-2"))).unwrap();
    let mut lines = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::time::Instant::now() < deadline {
        match tokio::time::timeout_at(deadline, a.events.recv()).await {
            Ok(Some(LinkEvent::Modem(l))) => {
                let done = l.contains("connected to N0CALL-2");
                lines.push(l);
                if done {
                    break;
                }
            }
            Ok(Some(_)) => {}
            _ => break,
        }
    }
    let last = lines.last().cloned().unwrap_or_default();
    assert!(
        last.contains("connected to N0CALL-2 (2000 Hz)")
            && last.contains("BUFFER 0 B")
            && last.contains("channel clear"),
        "{lines:?}"
    );
    drop(b.events.try_recv());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_either_port_is_counted_and_dropped() {
    init_tracing();
    let m = FakeArdops::start(2, FAST).await.unwrap();
    let (mut a, mut b) = pair(&m).await;
    m.inject_command(1, b"\x00\xff\xfe garbage\rBUFFER lots\r\x1b[2J\r");
    // An ERR frame, an unknown tag, and ARQ bytes that are not a skywave frame.
    m.inject_data(1, b"\x00\x05ERRxy\x00\x04XYZ!\x00\x09ARQnoise\x00");
    send(&mut a, frame(7, 200), 5.0).await;
    assert_eq!(frame_from(&mut b, 5.0).await, frame(7, 200));
    let g = LinkCounters::get(&b.counters.garbage_bytes);
    assert!(g >= 20, "garbage counted: {g}");
    assert!(LinkCounters::get(&b.counters.dropped_frames) >= 1);
    // The link stayed up and still carries.
    send(&mut b, frame(8, 200), 5.0).await;
    assert_eq!(frame_from(&mut a, 5.0).await, frame(8, 200));
}

/// A modem that stops answering: the watchdog drops it with why, the driver reconnects
/// with backoff, and the session comes back once it answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modem_that_stops_answering_is_reconnected() {
    init_tracing();
    let m = FakeArdops::start(2, FAST).await.unwrap();
    let (mut a, _b) = pair(&m).await;
    m.answering(0, false);
    let why = until_down(&mut a, 25.0).await;
    assert!(why.contains("stopped answering"), "{why}");
    assert_eq!(*a.room.borrow(), 0);
    m.answering(0, true);
    let t = tokio::time::Instant::now();
    loop {
        if m.stats(0).connections >= 2 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no reconnection");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let s = m.stats(0);
    let inits = s.commands.iter().filter(|c| *c == "INITIALIZE").count();
    assert_eq!(
        inits, 2,
        "set up again on the new connection: {:?}",
        s.commands
    );
}

/// A buffer that never drains: the session is closed with why (the protocol resends
/// what the modem held), and no more is written meanwhile than the buffer allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buffer_that_never_drains_ends_the_session_and_says_why() {
    init_tracing();
    let m = FakeArdops::start(2, FAST).await.unwrap();
    let (mut a, _b) = pair(&m).await;
    m.sending(0, false);
    // Frames while there is room; then the room stays shut. (Room comes back within
    // milliseconds of a write while there is any: 2 s leaves a loaded machine time.)
    let mut sent = 0;
    while tokio::time::timeout(Duration::from_secs(2), a.room.wait_for(|&r| r >= 500))
        .await
        .is_ok()
    {
        a.send_frame(frame(sent, 500)).await.unwrap();
        sent += 1;
    }
    let why = until_down(&mut a, 30.0).await;
    assert!(why.contains("BUFFER not draining"), "{why}");
    assert!(m.stats(0).max_buffer <= 4000, "{}", m.stats(0).max_buffer);
    // The session is closed (the protocol resends what the modem held).
    let why = until_down(&mut a, 5.0).await;
    assert!(
        why.contains("BUFFER not draining") && why.contains("calling N0CALL-2 in"),
        "{why}"
    );
    assert!(m.stats(0).commands.iter().any(|c| c == "DISCONNECT"));
    assert!(m.stats(0).commands.iter().any(|c| c == "PURGEBUFFER"));
    assert!(sent > 0);
}

/// A buffer that waits while the far station holds the turn (its frames keep coming)
/// is no stall: the session stays up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buffer_waiting_while_frames_arrive_is_no_stall() {
    init_tracing();
    let m = FakeArdops::start(2, FAST).await.unwrap();
    let (mut a, b) = pair(&m).await;
    m.sending(0, false);
    send(&mut a, frame(0, 300), 5.0).await;
    // B sends a frame every 500 ms for twice the stall timeout (3 s).
    let sender = tokio::spawn(async move {
        let mut b = b;
        for i in 1..=12 {
            send(&mut b, frame(i, 200), 5.0).await;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        b
    });
    for i in 1..=12 {
        assert_eq!(frame_from(&mut a, 5.0).await, frame(i, 200));
    }
    let _b = sender.await.unwrap();
    assert!(
        m.buffered(0) > 0,
        "A's modem still holds its frame: {:?}",
        m.stats(0)
    );
    assert!(
        !m.stats(0).commands.iter().any(|c| c == "DISCONNECT"),
        "{:?}",
        m.stats(0).commands
    );
    // Once nothing comes either, it is a stall.
    let why = until_down(&mut a, 10.0).await;
    assert!(why.contains("BUFFER not draining"), "{why}");
}

/// Two modems connected and both stuck (one in IRS, the other in IRStoISS, as two real
/// ardopcf once were for minutes): the driver resets the session with why (DISCONNECT,
/// which the stuck modem answers without effect, then ABORT), calls again after its
/// backoff, and frames cross again; the frame that waited in the driver for room goes
/// first in the new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_session_is_reset_and_frames_cross_again() {
    init_tracing();
    let m = FakeArdops::start(2, FAST).await.unwrap();
    let (mut a, mut b) = pair(&m).await;
    send(&mut a, frame(0, 300), 5.0).await;
    assert_eq!(frame_from(&mut b, 5.0).await, frame(0, 300));
    m.freeze(0, "IRStoISS");
    m.freeze(1, "IRS");
    // Frames while there is room (they wait in A's modem), then one past it.
    let mut sent = 1;
    while tokio::time::timeout(Duration::from_secs(2), a.room.wait_for(|&r| r >= 500))
        .await
        .is_ok()
    {
        a.send_frame(frame(sent, 500)).await.unwrap();
        sent += 1;
    }
    assert!(sent > 2, "{sent}");
    let waiting = bytes::Bytes::from(vec![0x5a; 510]);
    a.send_frame(waiting.clone()).await.unwrap();
    let why = until_down(&mut a, 20.0).await;
    // The stall clock starts when something waits: as A's driver hears of IRStoISS, or
    // just before if the frames sent at once reach it first. So "state IRStoISS for N s"
    // or "state now IRStoISS, for N s": both true.
    let secs = why
        .strip_prefix("ardopcf session with N0CALL-2 stalled: state IRStoISS for ")
        .or_else(|| {
            why.strip_prefix("ardopcf session with N0CALL-2 stalled: state now IRStoISS, for ")
        })
        .and_then(|r| r.split_once(" s with nothing moving ("))
        .and_then(|(n, _)| n.parse::<u32>().ok());
    assert!(
        secs.is_some_and(|n| n >= 3) && why.contains("limit 3 s") && why.ends_with("; reset"),
        "{why}"
    );
    let why = until_down(&mut a, 20.0).await;
    assert!(
        why.contains("stalled") && why.contains("; reset; calling N0CALL-2 in "),
        "{why}"
    );
    assert_eq!(
        a.counters.device_state.lock().unwrap()["session_resets"],
        1.0
    );
    // B's side ends as its modem times out; A calls again within its backoff (10 s,
    // and up to half again at random).
    assert!(until_down(&mut b, 5.0).await.contains("ended"));
    until_up(&mut a, 25.0).await;
    until_up(&mut b, 5.0).await;
    assert_eq!(frame_from(&mut b, 5.0).await, waiting);
    let cmds = m.stats(0).commands;
    let at = |c: &str| cmds.iter().position(|x| x == c);
    let (d, ab) = (at("DISCONNECT").unwrap(), at("ABORT").unwrap());
    assert!(d < ab, "{cmds:?}");
    assert!(
        cmds[ab..].iter().any(|c| c == "PURGEBUFFER")
            && cmds[ab..].iter().any(|c| c.starts_with("ARQCALL")),
        "{cmds:?}"
    );
    send(&mut a, frame(1000, 300), 5.0).await;
    assert_eq!(frame_from(&mut b, 5.0).await, frame(1000, 300));
    send(&mut b, frame(1001, 300), 5.0).await;
    assert_eq!(frame_from(&mut a, 5.0).await, frame(1001, 300));
    assert_eq!(
        a.counters.device_state.lock().unwrap()["session_resets"],
        1.0
    );
}

/// A session that moves slowly (the modem sends a long frame every 2 s, the watchdog's
/// limit here being 4 s: twice the gap, so that a loaded machine's delays are not taken
/// for a stall) is not reset, however long it lasts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_but_moving_session_is_not_reset() {
    init_tracing();
    let m = FakeArdops::start(2, 300.0).await.unwrap();
    let (a, mut b) = pair_with(&m, |c| c.stall_timeout = Duration::from_secs(4)).await;
    m.bursts(0, Some(Duration::from_secs(2)));
    // 6,000 B at 600 B every 2 s: about 20 s of a buffer never empty.
    let n = 20;
    let send_a = send_all(a, (0..n).map(|i| frame(i, 300)).collect(), 40.0);
    for i in 0..n {
        assert_eq!(frame_from(&mut b, 40.0).await, frame(i, 300));
    }
    let a = send_a.await.unwrap();
    assert!(m.stats(0).max_buffer >= 1000, "{:?}", m.stats(0));
    assert!(
        !m.stats(0).commands.iter().any(|c| c == "DISCONNECT"),
        "{:?}",
        m.stats(0).commands
    );
    assert_eq!(
        a.counters.device_state.lock().unwrap()["session_resets"],
        0.0
    );
    assert!(m.connected(0));
}

/// BUSY TRUE: no call while the channel is busy, and (FEC) nothing handed to the
/// modem; a BUSY TRUE left from before a session does not hold the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_sent_or_called_while_the_channel_is_busy() {
    init_tracing();
    let m = FakeArdops::start(2, FAST).await.unwrap();
    let mut b = ardop::spawn(link(&m, 1, "N0CALL-2", None)).unwrap();
    until_down(&mut b, 5.0).await;
    // A's modem hears the channel busy as its host connects.
    m.busy_at_connect(0, true);
    let mut a = ardop::spawn(link(&m, 0, "N0CALL-1", Some("N0CALL-2"))).unwrap();
    // Until the driver's next state query (its watchdog's, 5 s on): its commands go in
    // order, so a call made on the setup's answer would come before it. What it showed
    // meanwhile says the channel is busy.
    let mut lines = Vec::new();
    let t = tokio::time::Instant::now();
    loop {
        let done = m.stats(0).commands.iter().filter(|c| *c == "STATE").count() >= 2;
        // (A status line goes out before the query that follows it.)
        while let Ok(e) = a.events.try_recv() {
            if let LinkEvent::Modem(l) = e {
                lines.push(l);
            }
        }
        if done {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", m.stats(0));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !m.stats(0).commands.iter().any(|c| c.starts_with("ARQCALL")),
        "called on a busy channel: {:?}",
        m.stats(0).commands
    );
    assert!(
        lines.iter().any(|l| l.contains("BUSY (channel busy)")),
        "{lines:?}"
    );
    m.busy(0, false);
    until_up(&mut a, 5.0).await;
    until_up(&mut b, 5.0).await;
    // In the session: ardopcf sends no BUSY FALSE after a BUSY TRUE from before it.
    m.busy(1, true);
    m.set_state(1, "IRS");
    send(&mut b, frame(1, 200), 5.0).await;
    assert_eq!(frame_from(&mut a, 5.0).await, frame(1, 200));

    // FEC: nothing is written while busy.
    let m = FakeArdops::start(2, FAST).await.unwrap();
    let mut c = link(&m, 0, "N0CALL-1", None);
    c.mode = ArdopMode::Fec;
    let mut f = ardop::spawn(c).unwrap();
    until_up(&mut f, 5.0).await;
    // Room comes once the modem has answered its setup: it has its host, and what it is
    // made to say next reaches the driver.
    tokio::time::timeout(Duration::from_secs(10), f.room.wait_for(|&r| r > 0))
        .await
        .unwrap()
        .unwrap();
    m.busy(0, true);
    tokio::time::timeout(Duration::from_secs(10), f.room.wait_for(|&r| r == 0))
        .await
        .expect("room 0 while busy")
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(*f.room.borrow(), 0);
    m.busy(0, false);
    send(&mut f, frame(1, 200), 5.0).await;
}

/// A port that refuses connections: down with why, retried until ardopcf listens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_that_refuses_connection_is_retried_and_said_why() {
    init_tracing();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let c = ArdopConfig::new(format!("127.0.0.1:{port}"), "N0CALL-1");
    let mut a = ardop::spawn(c).unwrap();
    let why = until_down(&mut a, 5.0).await;
    assert!(
        why.contains(&format!(
            "cannot reach ardopcf's command port 127.0.0.1:{port}"
        )) && why.contains("retrying"),
        "{why}"
    );
    let l = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    let _d = tokio::net::TcpListener::bind(("127.0.0.1", port + 1))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), l.accept())
        .await
        .expect("the driver tries again within its backoff")
        .unwrap();
}

#[tokio::test]
async fn a_missing_callsign_is_refused_at_start() {
    let mut c = ArdopConfig::new("127.0.0.1:8515", "N0CALL");
    c.callsign = None;
    let e = ardop::spawn(c).unwrap_err().to_string();
    assert!(e.contains("callsign") && e.contains("amateur radio"), "{e}");
}

/// FEC: up without a session; frames are broadcast (`FECSEND TRUE` after the data is in
/// the buffer) and heard by the other modem.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fec_broadcasts_reach_the_other_station() {
    init_tracing();
    let m = FakeArdops::start(2, FAST).await.unwrap();
    let cfg = |i: usize, me: &str| {
        let mut c = link(&m, i, me, None);
        c.mode = ArdopMode::Fec;
        c
    };
    let mut a = ardop::spawn(cfg(0, "N0CALL-1")).unwrap();
    let mut b = ardop::spawn(cfg(1, "N0CALL-2")).unwrap();
    until_up(&mut a, 5.0).await;
    until_up(&mut b, 5.0).await;
    // (A broadcast reaches only the modems already in FEC mode.)
    set_up(&m, 1).await;
    for i in 0..3 {
        send(&mut a, frame(i, 200), 5.0).await;
    }
    for i in 0..3 {
        assert_eq!(frame_from(&mut b, 5.0).await, frame(i, 200));
    }
    let s = m.stats(0);
    assert!(
        s.commands.iter().any(|c| c == "PROTOCOLMODE FEC"),
        "{:?}",
        s.commands
    );
    assert!(
        s.commands.iter().any(|c| c == "FECSEND TRUE"),
        "{:?}",
        s.commands
    );
}
