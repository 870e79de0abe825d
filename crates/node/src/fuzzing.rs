//! Bodies of the byte-stream fuzz targets (`fuzz/fuzz_targets/stream.rs`), replayed on
//! stable by `tests/fuzz_corpus.rs`. Not part of the API: hidden, no stability.
//!
//! The stream framing (COBS + CRC-16, [`crate::framing`]) and the transmit side of a
//! stream modem ([`crate::modem_tx`]) are what a `serial` or `hf-modem` link runs on the
//! bytes of its device, whoever wrote them.

#![doc(hidden)]

use std::time::Duration;

use skywave_proto::fuzzing::Input;

use crate::framing::{self, Deframer, OverEnd};
use crate::modem_tx::ModemTx;
use crate::pacer::{HalfDuplex, Pacer};

/// The first two bytes choose chunk sizes and the modem; the rest is read three ways:
///
/// 1. as a received byte stream: deframed whole and in chunks, the frames and counters
///    are the same; every frame's CRC holds and it re-encodes to bytes that deframe to
///    it; bytes skipped never exceed bytes received;
/// 2. as frames (a length byte, then the bytes): framed with noise ending in a delimiter
///    between them, every non-empty frame comes back, in order, whatever the chunking;
/// 3. as operations on a half-duplex modem's transmit side fed hostile received
///    frames: what it writes deframes to the frames offered, in order and intact, with
///    well-formed announcements between them; and once the call goes quiet, everything
///    offered is written.
pub fn stream(data: &[u8]) {
    let mut input = Input(data);
    let chunk = usize::from(input.u8() % 64) + 1;
    let modem = input.u8();
    let rest = input.0;
    deframe(rest, chunk);
    round_trip(rest, chunk);
    transmit(modem, rest);
}

fn deframe(bytes: &[u8], chunk: usize) {
    let mut whole = Deframer::new();
    let frames = whole.push(bytes);
    let mut parts = Deframer::new();
    let chunked: Vec<Vec<u8>> = bytes.chunks(chunk).flat_map(|c| parts.push(c)).collect();
    assert_eq!(frames, chunked, "chunking changed the frames");
    assert_eq!(
        (whole.skipped, whole.bad_frames),
        (parts.skipped, parts.bad_frames)
    );
    assert!(whole.skipped <= bytes.len() as u64);
    for f in &frames {
        assert!(!f.is_empty() && f.len() <= framing::MAX_FRAME + 64);
        let mut again = Vec::new();
        framing::encode(f, &mut again);
        assert_eq!(Deframer::new().push(&again), vec![f.clone()]);
        if let Some(m) = OverEnd::parse(f) {
            let mut out = Vec::new();
            m.encode(&mut out);
            assert_eq!(out, again, "an announcement re-encodes to other bytes");
        }
    }
}

fn round_trip(bytes: &[u8], chunk: usize) {
    let mut input = Input(bytes);
    let mut sent = Vec::new();
    let mut stream = Vec::new();
    while !input.is_empty() {
        let noise = input.bytes(usize::from(input.0[0] % 4));
        stream.extend_from_slice(noise);
        if !noise.is_empty() {
            stream.push(0);
        }
        let n = usize::from(input.u8());
        let f = input.bytes(n);
        framing::encode(f, &mut stream);
        if !f.is_empty() {
            sent.push(f.to_vec());
        }
    }
    let mut d = Deframer::new();
    let got: Vec<Vec<u8>> = stream.chunks(chunk).flat_map(|c| d.push(c)).collect();
    // Noise may itself be a valid frame (a checksum collision): the sent frames are a
    // subsequence of what came out.
    let mut it = got.iter();
    for f in &sent {
        assert!(it.any(|g| g == f), "frame {f:02x?} lost");
    }
}

fn transmit(modem: u8, bytes: &[u8]) {
    let mtu = 250;
    let h = HalfDuplex {
        latency: Duration::from_millis(500 + 500 * u64::from(modem & 7)),
        jitter: Duration::from_millis(100 * u64::from(modem >> 6)),
        turnaround: Duration::from_millis(200 + 200 * u64::from((modem >> 3) & 3)),
        buffer: 256 << (modem >> 6),
        chunk: 64,
        max_over: (modem & 0x20 != 0).then(|| Duration::from_secs(5)),
    };
    let mut now = Duration::ZERO;
    let mut tx = ModemTx::new(Pacer::half(now, 300.0, 508, h).with_seed(7), mtu);
    let mut offered: Vec<Vec<u8>> = Vec::new();
    let mut wire = Vec::new();
    let mut rx = Deframer::new();
    let mut input = Input(bytes);
    let mut serial = 0u32;
    while !input.is_empty() {
        match input.u8() % 8 {
            0 | 1 => {
                // The endpoint is never asked for more than the modem takes at once.
                let max = tx.pacer.max_write();
                let cap = mtu.min(max.saturating_sub(framing::overhead(max))).max(1);
                let n = usize::from(input.u8()) % cap + 1;
                serial += 1;
                let mut f: Vec<u8> = (0..n).map(|i| (serial as usize * 31 + i) as u8).collect();
                // A protocol frame never starts like an announcement.
                f[0] = skywave_proto::wire::VERSION;
                // The driver takes a frame while the modem is not backlogged (it may go
                // past the room, never past a queued announcement).
                if !(tx.backlogged() && tx.frame_room() == 0) && tx.queued_frames() < 64 {
                    tx.offer(&f);
                    offered.push(f);
                }
            }
            2 => tx.idle(now),
            3 => now += Duration::from_millis(u64::from(input.u16()) * 4),
            4 => wire.extend(tx.take(now).unwrap_or_default()),
            5 => {
                // Bytes from the other side, as the driver hands them over.
                let n = usize::from(input.u8() % 32);
                tx.pacer.received(now);
                for f in rx.push(input.bytes(n)) {
                    let control = tx.control(now, &f);
                    assert_eq!(control, OverEnd::is_control(&f));
                }
            }
            6 => {
                // A well-formed announcement with any fields (no CRC to get past).
                let m = OverEnd {
                    after: input.u16(),
                    seq: input.u8().max(1),
                    heard: input.u8(),
                    rank: input.u16(),
                    idle: input.u8() & 1 == 1,
                };
                tx.pacer.received(now);
                let mut out = Vec::new();
                m.encode(&mut out);
                for f in Deframer::new().push(&out) {
                    assert!(tx.control(now, &f));
                }
            }
            _ => {
                tx.reset(now);
                // Frames the modem had not sent yet are lost with it; the tx keeps its
                // own queue. Whole frames written stay in `wire`.
            }
        }
        assert!(tx.frame_room() <= mtu + framing::overhead(mtu));
        check_written(&wire, &offered);
    }
    // The call goes quiet: the other side says nothing more. Within a few minutes every
    // frame offered is written.
    for _ in 0..2000 {
        if !tx.backlogged() {
            break;
        }
        tx.idle(now);
        wire.extend(tx.take(now).unwrap_or_default());
        now += Duration::from_millis(250);
    }
    let written = check_written(&wire, &offered);
    assert_eq!(
        written,
        offered.len(),
        "frames still held after the call went quiet"
    );
}

/// What the transmit side wrote: the offered frames in order and intact, and
/// well-formed announcements. Returns how many offered frames were written.
fn check_written(wire: &[u8], offered: &[Vec<u8>]) -> usize {
    let mut d = Deframer::new();
    let frames = d.push(wire);
    assert_eq!((d.skipped, d.bad_frames), (0, 0), "the writer framed badly");
    let mut n = 0;
    for f in frames {
        if OverEnd::is_control(&f) {
            let m = OverEnd::parse(&f).expect("our own announcement is well formed");
            assert_ne!(m.seq, 0);
            continue;
        }
        assert!(n < offered.len(), "a frame written that was never offered");
        assert_eq!(f, offered[n], "frame {n} written out of order or changed");
        n += 1;
    }
    n
}
