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
