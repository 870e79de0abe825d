//! The `kiss` driver against scripted fake TNCs over TCP (`skywave_links::kiss::fake`).

use std::time::Duration;

use crate::common::*;
use bytes::Bytes;
use skywave_links::kiss::{self, KissConfig, ax25, fake::FakeTncs, wire};
use skywave_links::{LinkCounters, LinkEvent, LinkHandle};

/// 1200 bit/s AFSK carries about 134 payload bytes a second; the fakes run 20 times
/// faster so that the tests take seconds.
const FAST: f64 = 150.0 * 20.0;

fn link(tncs: &FakeTncs, i: usize, call: &str) -> KissConfig {
    let mut c = KissConfig::new(tncs.url(i));
    c.callsign = Some(call.into());
    c.amateur = true;
    c.air_rate = 24_000;
    c.stall_timeout = Duration::from_secs(2);
    // Short key-ups: airtime pacing counts one per frame.
    c.txdelay = Duration::from_millis(50);
    c.txtail = Duration::from_millis(10);
    c
}

async fn pair(tncs: &FakeTncs) -> (LinkHandle, LinkHandle) {
    let mut a = kiss::spawn(link(tncs, 0, "N0CALL-1")).unwrap();
    let mut b = kiss::spawn(link(tncs, 1, "N0CALL-2")).unwrap();
    expect_up(&mut a, 5.0).await;
    expect_up(&mut b, 5.0).await;
    // (The driver is up once connected; the fake may not have taken the connection yet.)
    for _ in 0..100 {
        if tncs.clients(0) > 0 && tncs.clients(1) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (a, b)
}

/// Frame `i`, `len` bytes long.
fn blob(i: u32, len: usize) -> Bytes {
    let mut v: Vec<u8> = (0..len).map(|k| (k as u32 * 7 + i) as u8).collect();
    v[..4].copy_from_slice(&i.to_le_bytes());
    Bytes::from(v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_cross_both_ways_within_the_tnc_buffer() {
    init_tracing();
    let tncs = FakeTncs::start(2, FAST).await.unwrap();
    let (a, mut b) = pair(&tncs).await;
    let n = 40;
    let sender = send_all(a, (0..n).map(|i| frame(i, 256)).collect(), 10.0);
    for i in 0..n {
        assert_eq!(frame_from(&mut b, 10.0).await, frame(i, 256), "frame {i}");
    }
    let mut a = sender.await.unwrap();
    send(&mut b, Bytes::from_static(&[7u8; 100]), 5.0).await;
    assert_eq!(
        frame_from(&mut a, 5.0).await,
        Bytes::from_static(&[7u8; 100])
    );

    let s = tncs.stats(0);
    assert_eq!(s.frames_in, u64::from(n));
    let buffer = KissConfig::new("x").buffer();
    assert!(
        s.max_queued <= buffer,
        "the TNC held {} bytes, more than the {buffer} allowed",
        s.max_queued
    );
    assert!(s.answers > 0, "TXBUF was asked");
    // The KISS parameters went first: TXDELAY 50 ms, P 63, slot 100 ms, TXTAIL 10 ms,
    // half duplex.
    assert_eq!(
        s.parameters,
        [(0, 1, 5), (0, 2, 63), (0, 3, 10), (0, 4, 1), (0, 5, 0)]
    );
    assert_eq!(LinkCounters::get(&b.counters.frames_in), u64::from(n));
    assert_eq!(LinkCounters::get(&b.counters.dropped_frames), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_other_stations_frames_are_counted_and_dropped() {
    init_tracing();
    let tncs = FakeTncs::start(2, FAST).await.unwrap();
    let (mut a, mut b) = pair(&tncs).await;
    let mut junk = Vec::new();
    // Noise between FENDs, a broken escape, a data frame that is not AX.25, a frame for
    // another destination, an APRS frame, a frame on another port, an unknown command.
    wire::encode(0, wire::cmd::DATA, &noise(3, 200), &mut junk);
    junk.extend_from_slice(&[wire::FEND, 0x00, 0x41, wire::FESC, 0x42, wire::FEND]);
    wire::encode(0, wire::cmd::DATA, b"hello", &mut junk);
    let src = ax25::Callsign::parse("W1AW").unwrap();
    for (dest, pid) in [("APRS", 0xCF), ("SKYWAV", 0xF0)] {
        let mut f = Vec::new();
        ax25::encode_ui(
            &ax25::Callsign::parse(dest).unwrap(),
            &src,
            pid,
            b"x",
            &mut f,
        );
        wire::encode(0, wire::cmd::DATA, &f, &mut junk);
    }
    let mut other_port = Vec::new();
    ax25::encode_ui(
        &ax25::Callsign::parse("SKYWAV").unwrap(),
        &src,
        0xCF,
        b"x",
        &mut other_port,
    );
    wire::encode(3, wire::cmd::DATA, &other_port, &mut junk);
    wire::encode(0, 0x0E, b"?", &mut junk);
    tncs.inject(1, &junk);
    // Still in step: a real frame after all that.
    send(&mut a, Bytes::from_static(&[1u8; 80]), 5.0).await;
    assert_eq!(
        frame_from(&mut b, 5.0).await,
        Bytes::from_static(&[1u8; 80])
    );
    let c = b.counters.clone();
    assert_eq!(
        LinkCounters::get(&c.foreign_frames),
        3,
        "another destination, APRS, another port (dropped: {})",
        LinkCounters::get(&c.dropped_frames)
    );
    // Those, and the noise, the broken escape, "hello" and the unknown command.
    assert_eq!(LinkCounters::get(&c.dropped_frames), 7);
    let garbage = LinkCounters::get(&c.garbage_bytes);
    assert!(garbage >= 200, "{garbage}");
    // Raw noise on the line, then a frame: still in step.
    tncs.inject(1, &noise(9, 3000));
    tncs.inject(1, &[wire::FEND]);
    send(&mut a, Bytes::from_static(&[2u8; 80]), 5.0).await;
    assert_eq!(
        frame_from(&mut b, 5.0).await,
        Bytes::from_static(&[2u8; 80])
    );
    assert!(LinkCounters::get(&c.garbage_bytes) > garbage + 1000);
    assert_eq!(LinkCounters::get(&c.frames_in), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tnc_that_stops_answering_txbuf_is_paced_by_airtime() {
    init_tracing();
    let tncs = FakeTncs::start(2, FAST).await.unwrap();
    let (mut a, mut b) = pair(&tncs).await;
    send(&mut a, frame(0, 256), 5.0).await;
    assert_eq!(frame_from(&mut b, 5.0).await, frame(0, 256));
    tncs.answer_txbuf(0, false);
    let answers = tncs.stats(0).answers;
    let n = 30;
    let sender = send_all(a, (1..=n).map(|i| frame(i, 256)).collect(), 10.0);
    for i in 1..=n {
        assert_eq!(frame_from(&mut b, 10.0).await, frame(i, 256), "frame {i}");
    }
    let _a = sender.await.unwrap();
    let s = tncs.stats(0);
    assert_eq!(s.answers, answers, "no answers after it stopped");
    assert!(s.queries > answers, "it was asked, and did not answer");
    // Airtime at the configured rate (24 kbit/s less stuffing and a key-up per frame,
    // slower than the fake) keeps within the buffer.
    assert!(
        s.max_queued <= KissConfig::new("x").buffer(),
        "{}",
        s.max_queued
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_that_never_drains_holds_the_link_and_says_why() {
    init_tracing();
    let tncs = FakeTncs::start(2, FAST).await.unwrap();
    let (mut a, mut b) = pair(&tncs).await;
    tncs.sending(0, false);
    let buffer = KissConfig::new("x").buffer();
    // Fill it: two frames fit (the default buffer is two largest frames), then the room
    // stays 0.
    for i in 0..2 {
        send(&mut a, blob(i, 200), 5.0).await;
    }
    let reason = loop {
        match next_event(&mut a, 10.0).await {
            LinkEvent::Down { reason } => break reason,
            LinkEvent::Up(_) => continue,
            other => panic!("{other:?}"),
        }
    };
    assert!(
        reason.contains("TXBUF not draining") && reason.contains("without sending"),
        "{reason}"
    );
    assert_eq!(*a.room.borrow(), 0);
    assert!(tncs.queued(0) <= buffer);
    // It sends again: the link comes back and what was held arrives.
    tncs.sending(0, true);
    expect_up(&mut a, 5.0).await;
    for i in 0..2 {
        assert_eq!(frame_from(&mut b, 5.0).await, blob(i, 200));
    }
    assert_eq!(LinkCounters::get(&a.counters.downs), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_measured_drain_rate_becomes_the_link_rate() {
    init_tracing();
    // A channel slower than configured: 600 B/s against 24 kbit/s.
    let tncs = FakeTncs::start(2, 600.0).await.unwrap();
    let (a, mut b) = pair(&tncs).await;
    let n = 40;
    let sender = send_all(a, (0..n).map(|i| blob(i, 240)).collect(), 30.0);
    for i in 0..n {
        assert_eq!(frame_from(&mut b, 30.0).await, blob(i, 240));
    }
    let mut a = sender.await.unwrap();
    let mut rates = Vec::new();
    while let Ok(ev) = a.events.try_recv() {
        if let LinkEvent::Up(p) = ev {
            rates.push(p.rate_bps.unwrap());
        }
    }
    // AX.25 bytes (info and 16-byte header) at 600 B/s: 4800 bit/s.
    let r = *rates.first().expect("a measured rate was reported") as f64;
    assert!((r - 4800.0).abs() < 4800.0 * 0.15, "{rates:?}");
}

/// Over a serial line (ptys joined by a null-modem cable) with no TNC at all: each end
/// sees the other's KISS frames, nothing answers `TXBUF:`, so both pace by airtime; the
/// other end's parameter frames and queries are counted as dropped, never taken as data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kiss_over_a_serial_line_without_a_tnc_paces_by_airtime() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let cable = skywave_links::NullModem::open(dir.path()).unwrap();
    let cfg = |end: usize, call: &str| {
        let mut c = KissConfig::new(cable.path(end).display().to_string());
        c.callsign = Some(call.into());
        c.baud = 115_200;
        c.air_rate = 9600;
        c.txdelay = Duration::from_millis(10);
        c.txtail = Duration::from_millis(10);
        c
    };
    let mut a = kiss::spawn(cfg(0, "N0CALL-1")).unwrap();
    let mut b = kiss::spawn(cfg(1, "N0CALL-2")).unwrap();
    let p = expect_up(&mut a, 5.0).await;
    expect_up(&mut b, 5.0).await;
    assert!(p.shared && !p.paced && p.mtu == 256 && p.rate_bps == Some(9600));
    let started = std::time::Instant::now();
    for i in 0..10 {
        send(&mut a, blob(i, 200), 10.0).await;
    }
    for i in 0..10 {
        assert_eq!(frame_from(&mut b, 10.0).await, blob(i, 200));
    }
    // Ten frames of 216 AX.25 bytes at 9600 bit/s less stuffing need about 2.2 s of
    // airtime; at most two wait at a time, so the sender was held to that pace.
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    send(&mut b, blob(99, 60), 5.0).await;
    assert_eq!(frame_from(&mut a, 5.0).await, blob(99, 60));
    // A's five parameter frames and its queries reached B as frames no TNC sends.
    let dropped = LinkCounters::get(&b.counters.dropped_frames);
    assert!(dropped >= 6, "{dropped}");
    assert_eq!(LinkCounters::get(&b.counters.frames_in), 10);
}

/// A TNC that refuses connections (not started yet): no `Up`, retries with backoff, and
/// the link comes up once the TNC listens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tnc_that_refuses_connections_is_retried_until_it_listens() {
    init_tracing();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut c = KissConfig::new(format!("tcp://127.0.0.1:{port}"));
    c.callsign = Some("N0CALL".into());
    let mut a = kiss::spawn(c).unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(a.events.try_recv().is_err(), "no event while refused");
    assert_eq!(*a.room.borrow(), 0);
    let l = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    let (mut s, _) = tokio::time::timeout(Duration::from_secs(5), l.accept())
        .await
        .expect("the driver tries again within its backoff")
        .unwrap();
    expect_up(&mut a, 5.0).await;
    // The KISS parameters come first on the new connection.
    let mut buf = vec![0u8; 64];
    let n = tokio::io::AsyncReadExt::read(&mut s, &mut buf)
        .await
        .unwrap();
    let frames = wire::Decoder::new().push(&buf[..n]);
    assert_eq!(frames[0].command, wire::cmd::TXDELAY);
}

/// Frames `first..first + n` of `len` bytes, in order, at `h`.
async fn expect_blobs(h: &mut LinkHandle, first: u32, n: u32, len: usize) {
    for i in first..first + n {
        let f = frame_from(h, 10.0).await;
        assert_eq!(f, blob(i, len), "{}: frame {i}", h.name);
    }
}

/// Links on ports 0 and 1 of each of two TNCs: each pair shares one connection.
async fn two_ports_each(tncs: &FakeTncs) -> [LinkHandle; 4] {
    let on = |i: usize, port: u8, call: &str| {
        let mut c = link(tncs, i, call);
        c.port = port;
        // Per-port parameters: port 1 keys up slower.
        c.txdelay = Duration::from_millis(50 + 50 * u64::from(port));
        c
    };
    let mut a = kiss::spawn_shared(vec![on(0, 0, "N0CALL-1"), on(0, 1, "N0CALL-11")]).unwrap();
    let mut b = kiss::spawn_shared(vec![on(1, 0, "N0CALL-2"), on(1, 1, "N0CALL-12")]).unwrap();
    for h in a.iter_mut().chain(b.iter_mut()) {
        expect_up(h, 5.0).await;
    }
    for _ in 0..100 {
        if tncs.clients(0) > 0 && tncs.clients(1) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let [a1, a0] = [a.pop().unwrap(), a.pop().unwrap()];
    let [b1, b0] = [b.pop().unwrap(), b.pop().unwrap()];
    [a0, a1, b0, b1]
}

/// Frames cross on both ports of a TNC shared by two links, each way, each to the link
/// on its port; the TNC was connected to once; each port got its own parameters and
/// `TXBUF:` answers; a frame on a port no link is configured for is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_links_share_one_tnc_connection_each_on_its_port() {
    init_tracing();
    let tncs = FakeTncs::start(2, FAST).await.unwrap();
    let [a0, a1, mut b0, b1] = two_ports_each(&tncs).await;
    assert_eq!((tncs.accepted(0), tncs.accepted(1)), (1, 1));
    let n = 12;
    // Both ports of A send at once; port 1 also sends back.
    let s0 = send_all(a0, (0..n).map(|i| blob(i, 200)).collect(), 10.0);
    let s1 = send_all(a1, (0..n).map(|i| blob(100 + i, 150)).collect(), 10.0);
    let back = send_all(b1, (0..n).map(|i| blob(200 + i, 120)).collect(), 10.0);
    expect_blobs(&mut b0, 0, n, 200).await;
    let mut a1 = s1.await.unwrap();
    expect_blobs(&mut a1, 200, n, 120).await;
    let mut b1 = back.await.unwrap();
    expect_blobs(&mut b1, 100, n, 150).await;
    let mut a0 = s0.await.unwrap();
    // Nothing crossed to the other port.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(a0.events.try_recv().is_err(), "a frame reached port 0 of A");
    assert!(
        b0.events.try_recv().is_err(),
        "another frame reached port 0 of B"
    );
    for h in [&a0, &a1, &b0, &b1] {
        assert_eq!(
            LinkCounters::get(&h.counters.dropped_frames),
            0,
            "{}",
            h.name
        );
    }
    assert_eq!(LinkCounters::get(&b0.counters.frames_in), u64::from(n));
    assert_eq!(LinkCounters::get(&b1.counters.frames_in), u64::from(n));
    let s = tncs.stats(0);
    assert_eq!(s.frames_in_port[..2], [u64::from(n), u64::from(n)]);
    // Each port's parameters, on that port: TXDELAY 50 and 100 ms.
    let mut txdelay: Vec<(u8, u8)> = s
        .parameters
        .iter()
        .filter(|p| p.1 == wire::cmd::TXDELAY)
        .map(|p| (p.0, p.2))
        .collect();
    // (The links start their sessions in either order.)
    txdelay.sort();
    assert_eq!(txdelay, [(0, 5), (1, 10)]);
    assert_eq!(s.parameters.len(), 10);
    // Each link asked for its own port's queue, and was held to its own buffer.
    assert!(s.answers >= 2, "{}", s.answers);
    assert!(
        s.max_queued <= 2 * KissConfig::new("x").buffer(),
        "{}",
        s.max_queued
    );

    // A frame on port 2, for which no link is configured: counted on B's first link.
    let mut f = Vec::new();
    ax25::encode_ui(
        &ax25::Callsign::parse("SKYWAV").unwrap(),
        &ax25::Callsign::parse("W1AW").unwrap(),
        0xCF,
        b"for nobody",
        &mut f,
    );
    let mut junk = Vec::new();
    wire::encode(2, wire::cmd::DATA, &f, &mut junk);
    tncs.inject(1, &junk);
    // Then one on port 1, to know the port-2 one has been read.
    send(&mut a1, blob(7, 90), 5.0).await;
    assert_eq!(frame_from(&mut b1, 5.0).await, blob(7, 90));
    assert_eq!(LinkCounters::get(&b0.counters.dropped_frames), 1);
    assert_eq!(LinkCounters::get(&b0.counters.foreign_frames), 1);
    assert_eq!(LinkCounters::get(&b1.counters.dropped_frames), 0);
    send(&mut a0, blob(8, 90), 5.0).await;
    assert_eq!(frame_from(&mut b0, 5.0).await, blob(8, 90));
}

/// The TNC restarting (its connection closed) takes the links on both its ports down
/// with the reason, and both come back on one new connection and carry frames again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tnc_reset_takes_both_ports_down_and_both_come_back() {
    init_tracing();
    let tncs = FakeTncs::start(2, FAST).await.unwrap();
    let [mut a0, mut a1, mut b0, mut b1] = two_ports_each(&tncs).await;
    send(&mut a0, blob(1, 100), 5.0).await;
    assert_eq!(frame_from(&mut b0, 5.0).await, blob(1, 100));
    tncs.disconnect(0);
    for h in [&mut a0, &mut a1] {
        let reason = expect_down(h, 5.0).await;
        assert!(
            reason.contains("TNC closed the connection"),
            "{}: {reason}",
            h.name
        );
        assert_eq!(*h.room.borrow(), 0);
    }
    for h in [&mut a0, &mut a1] {
        expect_up(h, 5.0).await;
    }
    // The links are up once the kernel completes the connection; the fake TNC's accept
    // loop may register it a moment later.
    for _ in 0..200 {
        if tncs.clients(0) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(tncs.accepted(0), 2, "one new connection for both ports");
    send(&mut a1, blob(2, 100), 5.0).await;
    assert_eq!(frame_from(&mut b1, 5.0).await, blob(2, 100));
    send(&mut b0, blob(3, 100), 5.0).await;
    assert_eq!(frame_from(&mut a0, 5.0).await, blob(3, 100));
    for h in [&a0, &a1] {
        assert_eq!(LinkCounters::get(&h.counters.downs), 1, "{}", h.name);
    }
    // The parameters went again on the new connection, for each port.
    let p = tncs.stats(0).parameters;
    assert_eq!(p.len(), 20, "{p:?}");
    // B's links never went down.
    assert!(b0.events.try_recv().is_err() && b1.events.try_recv().is_err());
}

/// Two ports over one serial line (ptys joined by a null-modem cable, no TNC): each
/// end's frames reach the link on the same port at the other end; unplugging the cable
/// takes both ports' links down, and both come back when it is plugged in again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_ports_over_one_serial_line_go_down_and_come_back_together() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let cable = skywave_links::NullModem::open(dir.path()).unwrap();
    let cfg = |end: usize, port: u8, call: &str| {
        let mut c = KissConfig::new(cable.path(end).display().to_string());
        c.callsign = Some(call.into());
        c.port = port;
        c.baud = 115_200;
        c.air_rate = 9600;
        c.txdelay = Duration::from_millis(10);
        c.txtail = Duration::from_millis(10);
        c
    };
    let mut a = kiss::spawn_shared(vec![cfg(0, 0, "N0CALL-1"), cfg(0, 1, "N0CALL-11")]).unwrap();
    let mut b = kiss::spawn_shared(vec![cfg(1, 0, "N0CALL-2"), cfg(1, 1, "N0CALL-12")]).unwrap();
    for h in a.iter_mut().chain(b.iter_mut()) {
        expect_up(h, 5.0).await;
    }
    for k in 0..2u32 {
        for i in 0..3 {
            send(&mut a[1], blob(10 * k + i, 150), 5.0).await;
            send(&mut b[0], blob(100 + 10 * k + i, 150), 5.0).await;
        }
        for i in 0..3 {
            assert_eq!(frame_from(&mut b[1], 5.0).await, blob(10 * k + i, 150));
            assert_eq!(
                frame_from(&mut a[0], 5.0).await,
                blob(100 + 10 * k + i, 150)
            );
        }
        if k == 1 {
            break;
        }
        cable.unplug().await;
        for h in a.iter_mut().chain(b.iter_mut()) {
            let reason = expect_down(h, 5.0).await;
            assert!(
                reason.contains("end of file") || reason.contains("failed"),
                "{}: {reason}",
                h.name
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        cable.plug().await.unwrap();
        for h in a.iter_mut().chain(b.iter_mut()) {
            expect_up(h, 10.0).await;
        }
    }
    // Nothing crossed ports: the other end's parameter frames and queries are dropped
    // by the link on their port, never taken as data.
    for h in a.iter().chain(b.iter()) {
        assert_eq!(LinkCounters::get(&h.counters.downs), 1, "{}", h.name);
    }
    assert_eq!(LinkCounters::get(&b[1].counters.frames_in), 6);
    assert_eq!(LinkCounters::get(&a[0].counters.frames_in), 6);
    assert_eq!(LinkCounters::get(&a[1].counters.frames_in), 0);
    assert_eq!(LinkCounters::get(&b[0].counters.frames_in), 0);
}
