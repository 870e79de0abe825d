//! Bodies of the radio and modem fuzz targets (`fuzz/fuzz_targets/{rfd900,hf_modem,vara}.rs`),
//! replayed on stable by `tests/fuzz_corpus.rs`. Not part of the API: hidden, no
//! stability. What these parse comes from a device whose other end is the air.

#![doc(hidden)]

use skywave_proto::fuzzing::Input;

use crate::RadioStatus;
use crate::hf::{CarrierWatch, Lines, call_start};
use crate::rfd900::rs::{MAX_DATA, PARITY, Rs};
use crate::rfd900::wire::{self, HostItem, HostParser, Rx, RxParser, TRAILER};

/// The RFD900's serial protocol and its Reed-Solomon code. The first byte picks chunk
/// sizes; the rest is read as:
///
/// 1. what the radio sends its host: parsed whole and in chunks, the items and the
///    garbage count are the same; frames hold more than the parity, and garbage plus
///    frames never exceed the bytes;
/// 2. frames (a length byte, the bytes) sent by a radio with status frames between:
///    each comes back intact, in order, with no garbage;
/// 3. what a host writes to the radio: the host parser's data bytes are the escaped
///    frame's bytes, and each `!!` is a transmit;
/// 4. a received code block: decoding never panics, and what it corrects re-encodes to
///    within the code's reach of the block; and a block made of the input's data with
///    up to 16 byte errors decodes to that data.
pub fn rfd900(data: &[u8]) {
    let mut input = Input(data);
    let chunk = usize::from(input.u8() % 40) + 1;
    let rest = input.0;

    // 1.
    let mut whole = RxParser::new();
    let items = whole.push(rest);
    let mut parts = RxParser::new();
    let chunked: Vec<Rx> = rest.chunks(chunk).flat_map(|c| parts.push(c)).collect();
    assert_eq!(items, chunked, "chunking changed what was parsed");
    assert_eq!(whole.garbage, parts.garbage);
    let mut framed = 0;
    for rx in &items {
        if let Rx::Frame(f, _) = rx {
            assert!(f.len() > PARITY && f.len() <= wire::MAX_AIR);
            framed += f.len() + TRAILER;
        }
    }
    assert!(whole.garbage as usize + framed <= rest.len());

    // 2.
    let mut sent = Vec::new();
    let mut stream = Vec::new();
    let mut r = Input(rest);
    while !r.is_empty() {
        let n = usize::from(r.u8()) % (wire::MAX_AIR - PARITY) + PARITY + 1;
        // Bytes that could open a trailer or status frame are moved off those values:
        // the protocol cannot tell them apart (nothing marks where a frame starts).
        let f: Vec<u8> = r
            .bytes(n)
            .iter()
            .map(|&b| if b == 0xaa || b == 0xce { b + 1 } else { b })
            .collect();
        if f.len() <= PARITY {
            break;
        }
        if f[0] & 1 == 1 {
            stream.extend_from_slice(&wire::heartbeat([f[1]; 6]));
        }
        let status = RadioStatus {
            rssi: f[0],
            remote_rssi: f[1],
            temperature: f[2],
            buffer_space: u16::from_le_bytes([f[3], f[4]]),
        };
        wire::encode_rx(&f, status, &mut stream);
        sent.push(Rx::Frame(f, status));
    }
    let mut p = RxParser::new();
    let got: Vec<Rx> = stream
        .chunks(chunk)
        .flat_map(|c| p.push(c))
        .filter(|rx| *rx != Rx::Heartbeat)
        .collect();
    assert_eq!(got, sent, "frames lost or changed");
    assert_eq!(p.garbage, 0);

    // 3.
    let mut host = HostParser::default();
    let _ = rest.iter().filter_map(|&b| host.push(b)).count();
    let mut out = Vec::new();
    wire::encode_tx(rest, &mut out);
    assert_eq!(out.len(), wire::tx_len(rest));
    let mut host = HostParser::default();
    let items: Vec<HostItem> = out.iter().filter_map(|&b| host.push(b)).collect();
    let (last, body) = items.split_last().expect("at least the transmit");
    assert_eq!(*last, HostItem::Transmit);
    let bytes: Vec<u8> = body
        .iter()
        .map(|i| match i {
            HostItem::Data(b) => *b,
            other => panic!("{other:?} inside an escaped frame"),
        })
        .collect();
    assert_eq!(bytes, rest);

    // 4.
    let mut rs = Rs::new();
    let block = &rest[..rest.len().min(MAX_DATA + PARITY)];
    if let Ok((d, n)) = rs.decode(block) {
        assert_eq!(d.len(), block.len() - PARITY);
        assert!(n <= PARITY / 2);
        let mut again = Vec::new();
        rs.encode(&d, &mut again);
        let differ = again.iter().zip(block).filter(|(a, b)| a != b).count();
        assert!(differ <= PARITY / 2, "a correction past the code's reach");
    }
    let msg = &rest[..rest.len().min(MAX_DATA)];
    if msg.is_empty() {
        return; // no code block holds no data
    }
    let mut coded = Vec::new();
    rs.encode(msg, &mut coded);
    let mut e = Input(&rest[msg.len()..]);
    let errors = usize::from(e.u8()) % (PARITY / 2 + 1);
    for _ in 0..errors {
        let pos = usize::from(e.u16()) % coded.len();
        coded[pos] ^= e.u8().max(1);
    }
    let (d, _) = rs
        .decode(&coded)
        .unwrap_or_else(|err| panic!("{errors} errors not corrected: {err:?}"));
    assert_eq!(d, msg);
}

/// An HF modem's serial port: command-mode text, then a call's data. The first byte
/// picks chunk sizes; the rest is what the modem sends. Read whole and in chunks, as
/// the driver does (text until a `CONNECT` line, then data watched for `NO CARRIER`):
///
/// - the lines are the same, non-empty, trimmed, without CR or LF, and short;
/// - the call's data is the same up to the `NO CARRIER` (a few bytes of it may go to
///   the stream when it comes split over reads), and the call ends at the same place.
pub fn hf_modem(data: &[u8]) {
    let mut input = Input(data);
    let chunk = usize::from(input.u8() % 32) + 1;
    let rest = input.0;
    let whole = modem_reads(std::iter::once(rest));
    let parts = modem_reads(rest.chunks(chunk));
    assert_eq!(whole.lines, parts.lines, "chunking changed the lines");
    for l in &whole.lines {
        assert!(!l.is_empty() && l.trim() == l);
        assert!(!l.contains(['\r', '\n']));
        assert!(l.chars().count() <= Lines::MAX_LINE);
    }
    assert_eq!(whole.dropped, parts.dropped, "the call ended differently");
    assert!(
        parts.data.starts_with(&whole.data),
        "chunking changed the call's data"
    );
    let extra = &parts.data[whole.data.len()..];
    assert!(
        extra.is_empty() || (whole.dropped && b"NO CARRIER".starts_with(extra)),
        "{extra:02x?} more in chunks"
    );
}

#[derive(Debug, Default)]
struct Call {
    lines: Vec<String>,
    data: Vec<u8>,
    dropped: bool,
}

/// What the driver makes of the modem's reads: lines until `CONNECT`, then data until
/// `NO CARRIER` (each read as one chunk).
fn modem_reads<'a>(reads: impl Iterator<Item = &'a [u8]>) -> Call {
    let mut call = Call::default();
    let mut text = Lines::default();
    let mut watch: Option<CarrierWatch> = None;
    for r in reads {
        match watch.as_mut() {
            None => {
                text.take(r);
                let mut connected = false;
                while let Some(l) = text.pop() {
                    connected |= l.starts_with("CONNECT");
                    call.lines.push(l);
                    if connected {
                        break;
                    }
                }
                if connected {
                    let (data, w, dropped) = call_start(&mut text);
                    call.data.extend(data);
                    if dropped.is_some() {
                        call.dropped = true;
                        return call;
                    }
                    watch = Some(w);
                }
            }
            Some(w) => {
                let hook = w.check(r);
                call.data.extend_from_slice(&r[hook.data(r.len())]);
                if hook.stop.is_some() {
                    call.dropped = true;
                    return call;
                }
            }
        }
    }
    call
}

/// VARA's command port, as the `vara` driver reads it. The first byte picks chunk sizes;
/// the rest is what the modem sends, fed whole and in chunks (a read each) to a driver
/// state that has frames waiting, so that calls, sessions and credit are exercised:
///
/// - nothing panics, whatever the modem says;
/// - the lines, and the garbage counted, are the same in any chunking;
/// - whenever the driver hands the modem bytes, the modem then holds at most the cap.
pub fn vara(data: &[u8]) {
    let mut input = Input(data);
    let chunk = usize::from(input.u8() % 32) + 1;
    let rest = input.0;
    let whole = vara_reads(std::iter::once(rest));
    let parts = vara_reads(rest.chunks(chunk));
    assert_eq!(whole, parts, "chunking changed the lines or the garbage");
}

fn vara_reads<'a>(reads: impl Iterator<Item = &'a [u8]>) -> (Vec<String>, u64, u64) {
    use crate::LinkCounters;
    use crate::vara::{Lines, VaraConfig, VaraState};
    use std::time::{Duration, Instant};
    let mut cfg = VaraConfig::new("127.0.0.1:8300", "N0CALL-1");
    cfg.station = Some("N0CALL-2".into());
    let (me, to) = cfg.check().expect("valid settings");
    let t0 = Instant::now();
    let mut st = VaraState::new(cfg, me, to, t0);
    st.reset(t0);
    let counters = LinkCounters::default();
    let mut lines = Lines::default();
    let mut seen = Vec::new();
    for (k, r) in reads.enumerate() {
        let now = t0 + Duration::from_millis(10 * k as u64);
        seen.extend(lines.push(r));
        if st.takes_frame() {
            st.offer(
                "fuzz",
                bytes::Bytes::from_static(&[1u8; 300]),
                now,
                &counters,
            );
        }
        st.command_bytes("fuzz", r, now, &counters);
        st.poll("fuzz", now, &counters);
        let _ = st.waiting(now);
        let _ = st.room(now);
        if !st.data_out.is_empty() {
            assert!(st.credit.held(now) <= st.credit.limit(), "over the cap");
        }
        // (Written to the ports at once.)
        let n = st.data_out.len();
        st.flushed(now, n);
        st.cmd_out.clear();
        st.fatal = None;
    }
    (
        seen,
        st.stats.garbage_lines,
        LinkCounters::get(&counters.garbage_bytes),
    )
}
