use super::*;

fn refused(c: &ArdopConfig) -> String {
    c.check().unwrap_err().to_string()
}

#[test]
fn a_callsign_is_required_and_amateur_cannot_be_turned_off() {
    let mut c = ArdopConfig::new("127.0.0.1:8515", "N0CALL-1");
    c.callsign = None;
    let e = refused(&c);
    assert!(
        e.contains("'callsign'") && e.contains("amateur radio") && e.contains("MYCALL"),
        "{e}"
    );
    c.callsign = Some("N0CALL-1".into());
    c.amateur = false;
    assert!(refused(&c).contains("'amateur'"));
    c.amateur = true;
    assert_eq!(c.check().unwrap().to_string(), "N0CALL-1");
}

#[test]
fn bad_settings_name_the_setting() {
    let base = ArdopConfig::new("127.0.0.1:8515", "N0CALL-1");
    let cases: Vec<(ArdopConfig, &str)> = vec![
        (
            ArdopConfig {
                modem: "nowhere".into(),
                ..base.clone()
            },
            "modem",
        ),
        (
            ArdopConfig {
                modem: "h:65535".into(),
                ..base.clone()
            },
            "modem",
        ),
        (
            ArdopConfig {
                call: Some("N0 CALL".into()),
                ..base.clone()
            },
            "call",
        ),
        (
            ArdopConfig {
                call: Some("N0CALL-2".into()),
                mode: ArdopMode::Fec,
                ..base.clone()
            },
            "call",
        ),
        (
            ArdopConfig {
                call_repeats: 1,
                ..base.clone()
            },
            "call_repeats",
        ),
        (
            ArdopConfig {
                arq_timeout: 10,
                ..base.clone()
            },
            "arq_timeout",
        ),
        (
            ArdopConfig {
                arq_bandwidth: "2000 MAX\r".into(),
                ..base.clone()
            },
            "arq_bandwidth",
        ),
        (
            ArdopConfig {
                fec_mode: "X;Y".into(),
                ..base.clone()
            },
            "fec_mode",
        ),
        (
            ArdopConfig {
                busy_detect: Some(11),
                ..base.clone()
            },
            "busy_detect",
        ),
        (
            ArdopConfig {
                buffer: Some(50_000),
                ..base.clone()
            },
            "buffer",
        ),
        (
            ArdopConfig {
                buffer: Some(100),
                ..base.clone()
            },
            "buffer",
        ),
        (
            ArdopConfig {
                mtu: 20,
                ..base.clone()
            },
            "mtu",
        ),
        (
            ArdopConfig {
                watchdog: Duration::from_secs(1),
                ..base.clone()
            },
            "watchdog",
        ),
    ];
    for (c, field) in cases {
        let e = refused(&c);
        assert!(e.contains(&format!("'{field}'")), "{field}: {e}");
    }
    // The buffer's limit is named with why.
    let e = refused(&ArdopConfig {
        buffer: Some(50_000),
        ..base
    });
    assert!(e.contains("20000") && e.contains("100,000"), "{e}");
}

#[test]
fn the_setup_sets_the_mode_and_callsign_and_clears_the_buffer() {
    let mut c = ArdopConfig::new("127.0.0.1:8515", "N0CALL-1");
    c.busy_detect = Some(0);
    let me = c.check().unwrap();
    assert_eq!(
        c.setup_commands(&me),
        [
            "INITIALIZE",
            "MYCALL N0CALL-1",
            "PROTOCOLMODE ARQ",
            "BUSYDET 0",
            "ARQBW 2000MAX",
            "ARQTIMEOUT 120",
            "LISTEN TRUE",
            "PURGEBUFFER",
            "STATE"
        ]
    );
    c.mode = ArdopMode::Fec;
    let s = c.setup_commands(&me);
    assert!(
        s.contains(&"PROTOCOLMODE FEC".to_string())
            && s.contains(&"FECMODE 4FSK.500.100S".to_string())
    );
}

/// The credit never lets the modem hold more than `buffer`, even when a BUFFER report
/// read after a write does not count it.
#[test]
fn the_modem_never_holds_more_than_the_buffer() {
    let mut c = ArdopConfig::new("127.0.0.1:8515", "N0CALL-1");
    c.buffer = Some(4000);
    let me = c.check().unwrap();
    let t0 = Instant::now();
    let mut m = Modem::new(&c, &me, t0);
    let counters = LinkCounters::default();
    m.phase = Phase::Connected {
        peer: "N0CALL-2".into(),
        bandwidth: 2000,
    };
    m.command_bytes(b"STATE IDLE\r", t0, "t", &counters);
    let mut modem_holds = 0usize;
    for i in 0..200u32 {
        let now = t0 + Duration::from_millis(u64::from(i) * 10);
        let room = m.room(now);
        if room > 0 {
            m.offer("t", Bytes::from(vec![i as u8; room]), now, &counters);
            m.pump(now, &counters);
        }
        // The modem takes what was written; every third step a report from before the
        // write (an ACK's, crossing it) comes first, and the write's own after it.
        let written = m.data_out.len();
        m.data_out.clear();
        let stale = modem_holds;
        modem_holds += written.saturating_sub(2 * usize::from(written > 0));
        assert!(modem_holds <= 4000, "{modem_holds} bytes in the modem");
        if i % 3 == 0 {
            m.command_bytes(format!("BUFFER {stale}\r").as_bytes(), now, "t", &counters);
            let room = m.room(now);
            if room > 0 {
                m.offer("t", Bytes::from(vec![0; room]), now, &counters);
                m.pump(now, &counters);
            }
            modem_holds += m
                .data_out
                .len()
                .saturating_sub(2 * usize::from(!m.data_out.is_empty()));
            m.data_out.clear();
            assert!(modem_holds <= 4000, "{modem_holds} bytes in the modem");
        }
        m.command_bytes(
            format!("BUFFER {modem_holds}\r").as_bytes(),
            now,
            "t",
            &counters,
        );
        if i % 50 == 49 {
            modem_holds = 0; // it sent everything
        }
    }
    assert!(
        m.max_buffer <= 4000 && m.max_buffer > 3000,
        "{}",
        m.max_buffer
    );
    // A write waits for the report after the one before it.
    let now = t0 + Duration::from_secs(10);
    m.command_bytes(b"BUFFER 0\r", now, "t", &counters);
    m.offer("t", Bytes::from(vec![1; 100]), now, &counters);
    m.pump(now, &counters);
    assert!(!m.data_out.is_empty());
    m.data_out.clear();
    assert!(m.room(now) > 100, "room for more");
    m.offer("t", Bytes::from(vec![2; 100]), now, &counters);
    m.pump(now, &counters);
    assert!(m.data_out.is_empty(), "no second write before a report");
    m.command_bytes(b"BUFFER 104\r", now, "t", &counters);
    m.pump(now, &counters);
    assert!(!m.data_out.is_empty());
}

/// Nothing is written before the modem has answered its setup: its `INITIALIZE` and
/// `PURGEBUFFER` would discard it (FEC is up as soon as the host interface is). A
/// `NEWSTATE` on the way is not the answer.
#[test]
fn nothing_is_written_before_the_modem_answers_its_setup() {
    let mut c = ArdopConfig::new("127.0.0.1:8515", "N0CALL-1");
    c.mode = ArdopMode::Fec;
    let me = c.check().unwrap();
    let t0 = Instant::now();
    let mut m = Modem::new(&c, &me, t0);
    let counters = LinkCounters::default();
    m.reset(t0, &c, &me);
    assert!(m.carrying());
    assert_eq!(m.room(t0), 0);
    m.offer("t", Bytes::from(vec![7; 100]), t0, &counters);
    m.pump(t0, &counters);
    m.command_bytes(
        b"INITIALIZE\rMYCALL now N0CALL-1\rPROTOCOLMODE now FEC\rNEWSTATE DISC\r",
        t0,
        "t",
        &counters,
    );
    m.pump(t0, &counters);
    assert!(
        m.data_out.is_empty(),
        "written before the setup was answered"
    );
    m.command_bytes(b"PURGEBUFFER\rBUFFER 0\rSTATE DISC\r", t0, "t", &counters);
    m.pump(t0, &counters);
    assert!(!m.data_out.is_empty(), "the waiting frame goes once it was");
    assert!(m.queue.is_none());
}

/// A call waits for the modem's answer to its setup and for a clear channel, and no
/// call time is due meanwhile (the session loop would wake for it again and again).
#[test]
fn no_call_is_due_before_the_setup_is_answered_nor_while_busy() {
    let mut c = ArdopConfig::new("127.0.0.1:8515", "N0CALL-1");
    c.call = Some("N0CALL-2".into());
    let me = c.check().unwrap();
    let t0 = Instant::now();
    let mut m = Modem::new(&c, &me, t0);
    let counters = LinkCounters::default();
    m.reset(t0, &c, &me);
    m.cmd_out.clear();
    let calls = |m: &mut Modem| {
        commands(m)
            .iter()
            .filter(|c| c.starts_with("ARQCALL"))
            .count()
    };
    assert_eq!(m.call_due(), None);
    m.command_bytes(
        b"BUSY TRUE\rINITIALIZE\rNEWSTATE DISC\r",
        t0,
        "t",
        &counters,
    );
    assert_eq!(m.call_due(), None);
    m.command_bytes(b"STATE DISC\r", t0, "t", &counters);
    assert_eq!(m.call_due(), None, "the channel is busy");
    let t1 = t0 + Duration::from_secs(60);
    m.pump(t1, &counters);
    assert_eq!(calls(&mut m), 0);
    m.command_bytes(b"BUSY FALSE\r", t1, "t", &counters);
    assert!(m.call_due().is_some_and(|t| t <= t1));
    m.pump(t1, &counters);
    assert_eq!(calls(&mut m), 1);
    assert_eq!(m.call_due(), None, "calling");
}

/// Our bytes waiting while the far station sends: the turn is asked for (`BREAK`) after
/// `turn`, and again only a `turn` later.
#[test]
fn the_turn_is_asked_for_when_our_bytes_wait() {
    let mut c = ArdopConfig::new("127.0.0.1:8515", "N0CALL-1");
    c.turn = Some(Duration::from_secs(20));
    let me = c.check().unwrap();
    let t0 = Instant::now();
    let mut m = Modem::new(&c, &me, t0);
    let counters = LinkCounters::default();
    m.command_bytes(
        b"CONNECTED N0CALL-2 2000\rNEWSTATE IRS\rBUFFER 300\r",
        t0,
        "t",
        &counters,
    );
    let breaks = |m: &mut Modem| {
        let n = String::from_utf8_lossy(&m.cmd_out)
            .matches("BREAK\r")
            .count();
        m.cmd_out.clear();
        n
    };
    m.pump(t0, &counters);
    m.pump(t0 + Duration::from_secs(19), &counters);
    assert_eq!(breaks(&mut m), 0, "not before the turn time");
    m.pump(t0 + Duration::from_secs(20), &counters);
    assert_eq!(breaks(&mut m), 1);
    // The session loop wakes for the next one, not at once.
    assert_eq!(m.break_due(), Some(t0 + Duration::from_secs(40)));
    m.pump(t0 + Duration::from_secs(30), &counters);
    assert_eq!(breaks(&mut m), 0, "once per turn time");
    m.pump(t0 + Duration::from_secs(40), &counters);
    assert_eq!(breaks(&mut m), 1);
    // Our turn (or nothing of ours waiting): no BREAK.
    m.command_bytes(
        b"NEWSTATE ISS\r",
        t0 + Duration::from_secs(41),
        "t",
        &counters,
    );
    m.pump(t0 + Duration::from_secs(80), &counters);
    m.command_bytes(
        b"NEWSTATE IRS\rBUFFER 0\r",
        t0 + Duration::from_secs(81),
        "t",
        &counters,
    );
    m.pump(t0 + Duration::from_secs(120), &counters);
    assert_eq!(breaks(&mut m), 0);
}

/// What the session loop does each turn, time passed in: the watchdogs.
fn step(m: &mut Modem, now: Instant, counters: &LinkCounters) -> (Option<String>, Option<String>) {
    m.pump(now, counters);
    (m.stall_check(now), m.closing_check(now))
}

fn commands(m: &mut Modem) -> Vec<String> {
    let s = String::from_utf8_lossy(&m.cmd_out).to_string();
    m.cmd_out.clear();
    s.split('\r')
        .filter(|c| !c.is_empty() && *c != "STATE")
        .map(String::from)
        .collect()
}

fn connected(c: &ArdopConfig, t0: Instant) -> (Modem, LinkCounters) {
    let me = c.check().unwrap();
    let mut m = Modem::new(c, &me, t0);
    let counters = LinkCounters::default();
    m.command_bytes(b"STATE DISC\r", t0, "t", &counters);
    m.pump(t0, &counters);
    m.cmd_out.clear();
    let up = m.command_bytes(
        b"CONNECTED N0CALL-2 2000\rNEWSTATE ISS\r",
        t0,
        "t",
        &counters,
    );
    assert_eq!(up, [Change::Up]);
    (m, counters)
}

/// A session that moves every `gap` (the modem's buffer goes down, then our next write
/// fills it) from `from` until `until`; the time it stopped.
fn moving(m: &mut Modem, counters: &LinkCounters, from: Instant, gap: u64, until: u64) {
    let (gap, until) = (Duration::from_secs(gap), Duration::from_secs(until));
    m.command_bytes(b"BUFFER 1500\r", from, "t", counters);
    let mut t = from;
    while t < from + until {
        for s in 0..gap.as_secs() {
            let now = t + Duration::from_secs(s);
            let (stall, close) = step(m, now, counters);
            assert_eq!((stall, close), (None, None), "reset at {:?}", now - from);
        }
        t += gap;
        // A frame of 500 B acknowledged: the buffer goes down; our next write fills it.
        m.command_bytes(b"BUFFER 1000\rBUFFER 1500\r", t, "t", counters);
    }
    assert!(
        !commands(m)
            .iter()
            .any(|c| c == "DISCONNECT" || c == "ABORT")
    );
}

/// A session standing still is reset after a limit drawn from its own figures: 8 of its
/// typical waits (turns of 6 s here: 48 s), not the 300 s ceiling; DISCONNECT, then
/// ABORT when the modem does not leave the session, then a call after the backoff's
/// delay spread at random (not `redial`), with why.
#[test]
fn a_stalled_session_is_reset_after_a_limit_from_its_own_figures() {
    let mut c = ArdopConfig::new("127.0.0.1:8515", "N0CALL-1");
    c.call = Some("N0CALL-2".into());
    let t0 = Instant::now();
    let (mut m, counters) = connected(&c, t0);
    moving(&mut m, &counters, t0, 6, 600);
    let limit = m.stall_limit();
    assert!(
        limit >= Duration::from_secs(40) && limit <= Duration::from_secs(60),
        "{limit:?}"
    );
    // Both modems think they receive: nothing moves any more.
    let stop = t0 + Duration::from_secs(600);
    m.command_bytes(b"NEWSTATE IRStoISS\r", stop, "t", &counters);
    let mut why = None;
    for s in 0..400 {
        let now = stop + Duration::from_secs(s);
        if let (Some(w), _) = step(&mut m, now, &counters) {
            why = Some((w, s));
            break;
        }
    }
    let (why, after) = why.expect("the stalled session was reset");
    assert!((40..=61).contains(&after), "reset after {after} s");
    assert!(
        why.starts_with("ardopcf session with N0CALL-2 stalled: state IRStoISS for ")
            && why.contains("with nothing moving")
            && why.contains("typical wait 6.0 s")
            && why.ends_with("; reset"),
        "{why}"
    );
    assert_eq!(m.watch.resets, 1);
    assert_eq!(commands(&mut m), ["DISCONNECT"]);
    assert_eq!(m.room(stop + Duration::from_secs(after)), 0);
    // The modem answers DISCONNECT but stays in the session: ABORT after 20 s.
    let at = stop + Duration::from_secs(after);
    m.command_bytes(b"DISCONNECT NOW TRUE\r", at, "t", &counters);
    for s in 1..20 {
        assert_eq!(
            step(&mut m, at + Duration::from_secs(s), &counters),
            (None, None)
        );
    }
    assert!(commands(&mut m).is_empty());
    step(&mut m, at + Duration::from_secs(20), &counters);
    assert_eq!(commands(&mut m), ["ABORT"]);
    // ardopcf leaves the session without a DISCONNECTED.
    let gone = at + Duration::from_secs(21);
    let down = m.command_bytes(b"ABORT\rNEWSTATE DISC\r", gone, "t", &counters);
    let [Change::Down(reason)] = &down[..] else {
        panic!("{down:?}")
    };
    assert!(
        reason.starts_with("ardopcf session with N0CALL-2 stalled")
            && reason.contains("; reset; calling N0CALL-2 in "),
        "{reason}"
    );
    assert_eq!(commands(&mut m), ["PURGEBUFFER"]);
    let due = m.call_due().unwrap() - gone;
    assert!(
        due >= Duration::from_secs(10) && due <= Duration::from_secs(15),
        "{due:?}: the backoff's 10 s and up to half again, not redial's 300 s"
    );
}

/// A slow session that still moves is not reset: waits of 40 s (a poor channel's long
/// frames and repeats) raise the limit to the ceiling; only standing still for all of
/// it ends the session.
#[test]
fn a_slow_but_moving_session_is_not_reset() {
    let c = ArdopConfig::new("127.0.0.1:8515", "N0CALL-1");
    let t0 = Instant::now();
    let (mut m, counters) = connected(&c, t0);
    moving(&mut m, &counters, t0, 40, 1200);
    assert_eq!(m.stall_limit(), c.stall_timeout);
    assert_eq!(m.watch.resets, 0);
    // The far station sends for a long while (our buffer waits): no reset either.
    let t1 = t0 + Duration::from_secs(1200);
    m.command_bytes(b"NEWSTATE IRS\r", t1, "t", &counters);
    for s in 0..600u64 {
        let now = t1 + Duration::from_secs(s);
        if s % 30 == 0 {
            let mut wire = Vec::new();
            wire.extend_from_slice(&8u16.to_be_bytes());
            wire.extend_from_slice(b"ARQbytes");
            m.data_bytes(&wire, now, &counters);
        }
        assert_eq!(step(&mut m, now, &counters), (None, None), "reset at {s} s");
    }
    // Nothing in our buffer and nothing coming (the far station has nothing to send):
    // an idle session, for the idle timeout, not a stall.
    let t2 = t1 + Duration::from_secs(600);
    m.command_bytes(b"BUFFER 0\r", t2, "t", &counters);
    for s in 0..100u64 {
        assert_eq!(
            step(&mut m, t2 + Duration::from_secs(s), &counters),
            (None, None)
        );
    }
    assert!(!commands(&mut m).iter().any(|c| c == "DISCONNECT"));
}

#[test]
fn call_delays_are_spread_at_random() {
    let d = Duration::from_secs(10);
    let mut a = watch::Jitter::new(1);
    let mut b = watch::Jitter::new(2);
    let xs: Vec<Duration> = (0..50).map(|_| a.spread(d)).collect();
    let ys: Vec<Duration> = (0..50).map(|_| b.spread(d)).collect();
    assert!(xs.iter().chain(&ys).all(|x| *x >= d && *x <= d * 3 / 2));
    assert_ne!(xs, ys);
    let spread = xs
        .iter()
        .max()
        .unwrap()
        .saturating_sub(*xs.iter().min().unwrap());
    assert!(spread >= Duration::from_secs(3), "{spread:?}");
}

/// The bytes of the data-port messages in `out`, as the modem takes them.
fn data_written(out: &[u8]) -> Vec<u8> {
    let mut rest = out.to_vec();
    let mut bytes = Vec::new();
    while let Some(msg) = host::take_data(&mut rest) {
        bytes.extend(msg);
    }
    assert!(rest.is_empty(), "a message cut short");
    bytes
}

/// When the far station breaks in while we send, ardopcf discards what it held for us,
/// unsent, and says so (`BUFFER 0`, then the `STATUS`): the driver writes those bytes
/// again, so the far host still gets every byte once and in order.
#[test]
fn bytes_a_break_in_discarded_are_written_again() {
    let mut c = ArdopConfig::new("127.0.0.1:8515", "N0CALL-1");
    c.buffer = Some(4000);
    let t0 = Instant::now();
    let (mut m, counters) = connected(&c, t0);
    let mut stream = Vec::new();
    let mut held = 0;
    for i in 0..6u8 {
        let now = t0 + Duration::from_millis(u64::from(i) * 10);
        let room = m.room(now);
        assert!(room > 0, "no room at write {i}");
        m.offer("t", Bytes::from(vec![i; room.min(300)]), now, &counters);
        m.pump(now, &counters);
        let w = data_written(&m.data_out);
        m.data_out.clear();
        held += w.len();
        stream.extend(w);
        m.command_bytes(format!("BUFFER {held}\r").as_bytes(), now, "t", &counters);
    }
    // The far station acknowledges the first 500 bytes, then breaks in.
    let sent = 500;
    let now = t0 + Duration::from_secs(5);
    m.command_bytes(
        format!("BUFFER {}\r", held - sent).as_bytes(),
        now,
        "t",
        &counters,
    );
    m.command_bytes(
        b"BUFFER 0\rSTATUS BREAK received from Protocol State ISS, new state IRS\rNEWSTATE IRS\r",
        now,
        "t",
        &counters,
    );
    assert_eq!(
        data_written(&m.data_out),
        stream[sent..],
        "not the bytes discarded"
    );
    assert_eq!(m.restored, (held - sent) as u64);
    assert!(m.status_line(now).unwrap().contains("written again"));
    m.data_out.clear();
    // Sent in full later, the buffer drained: a break-in with nothing held discards
    // nothing and nothing is written again.
    let later = now + Duration::from_secs(30);
    m.command_bytes(
        format!(
            "BUFFER {}\rNEWSTATE ISS\rBUFFER 0\rNEWSTATE IDLE\r",
            held - sent
        )
        .as_bytes(),
        later,
        "t",
        &counters,
    );
    m.command_bytes(
        b"BUFFER 0\rSTATUS BREAK received from Protocol State ISS, new state IRS\r",
        later,
        "t",
        &counters,
    );
    assert!(
        m.data_out.is_empty(),
        "bytes written again that had been sent"
    );
    assert_eq!(m.restored, (held - sent) as u64);
}
