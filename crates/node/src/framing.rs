//! Framing of protocol frames on byte streams (serial lines, HF modems, TCP).
//!
//! Each frame is followed by its CRC-16/CCITT-FALSE (little-endian), COBS-encoded
//! (consistent overhead byte stuffing), and terminated by a zero byte. COBS output
//! contains no zero, so the delimiter is unambiguous: after line noise, a dropped call or
//! a partial write, the reader is back in step at the next zero byte. Overhead: 4 bytes
//! for a frame up to 254 bytes (COBS code, CRC, delimiter).

/// Largest frame carried.
pub const MAX_FRAME: usize = 4096;

pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0xffff;
    for &b in data {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// Bytes a frame of `len` takes on the stream.
pub const fn overhead(len: usize) -> usize {
    (len + 2) / 254 + 1 + 2 + 1
}

fn cobs_encode(data: &[u8], out: &mut Vec<u8>) {
    let mut code_at = out.len();
    out.push(0);
    let mut code = 1u8;
    for &b in data {
        if b == 0 {
            out[code_at] = code;
            code_at = out.len();
            out.push(0);
            code = 1;
        } else {
            out.push(b);
            code += 1;
            if code == 0xff {
                out[code_at] = code;
                code_at = out.len();
                out.push(0);
                code = 1;
            }
        }
    }
    out[code_at] = code;
}

fn cobs_decode(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < data.len() {
        let code = data[i] as usize;
        if code == 0 || i + code > data.len() + 1 {
            return None;
        }
        let end = i + code;
        out.extend_from_slice(data.get(i + 1..end.min(data.len()))?);
        if end < data.len() && code < 0xff {
            out.push(0);
        }
        i = end;
    }
    Some(out)
}

/// Appends the stream encoding of `frame`.
pub fn encode(frame: &[u8], out: &mut Vec<u8>) {
    let mut body = Vec::with_capacity(frame.len() + 2);
    body.extend_from_slice(frame);
    body.extend_from_slice(&crc16(frame).to_le_bytes());
    cobs_encode(&body, out);
    out.push(0);
}

/// First byte of an over-end announcement, a frame of the stream framing itself (never
/// handed to the endpoint; protocol frames begin with `skywave_proto::wire::VERSION`).
/// See [`OverEnd`] and `crate::modem_tx`.
pub const OVER_END: u8 = 0xe0;

/// An over-end announcement on a half-duplex modem: the sender's over ends `after`
/// stream bytes past this frame, and it writes nothing more until it hears the other
/// side's announcement (which passes the turn back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverEnd {
    /// Stream bytes that follow this frame in the sender's over.
    pub after: u16,
    /// The sender's announcement count (1-255, wrapping; never 0).
    pub seq: u8,
    /// The last `seq` the sender heard from the other side (0: none).
    pub heard: u8,
    /// Breaks a tie when both sides announced without hearing each other: the higher
    /// takes the turn.
    pub rank: u16,
    /// The sender had nothing more to send.
    pub idle: bool,
}

impl OverEnd {
    /// Appends the framed announcement.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let a = self.after.to_le_bytes();
        let r = self.rank.to_le_bytes();
        let f = [
            OVER_END,
            a[0],
            a[1],
            self.seq,
            self.heard,
            r[0],
            r[1],
            u8::from(self.idle),
        ];
        encode(&f, out);
    }

    /// The announcement in a deframed frame, or `None` for any other frame.
    pub fn parse(frame: &[u8]) -> Option<OverEnd> {
        match *frame {
            [OVER_END, a0, a1, seq, heard, r0, r1, flags] if seq != 0 && flags <= 1 => {
                Some(OverEnd {
                    after: u16::from_le_bytes([a0, a1]),
                    seq,
                    heard,
                    rank: u16::from_le_bytes([r0, r1]),
                    idle: flags == 1,
                })
            }
            _ => None,
        }
    }

    /// Whether a deframed frame is framing control (an announcement, well formed or
    /// not), never a protocol frame.
    pub fn is_control(frame: &[u8]) -> bool {
        frame.first() == Some(&OVER_END)
    }
}

/// Reassembles frames from stream chunks.
#[derive(Debug, Default)]
pub struct Deframer {
    buf: Vec<u8>,
    /// Bytes discarded as noise (undecodable, oversize, or failing the CRC).
    pub skipped: u64,
    /// Frames whose CRC failed.
    pub bad_frames: u64,
}

impl Deframer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets partial input (the stream broke, e.g. a dropped call).
    pub fn reset(&mut self) {
        self.skipped += self.buf.len() as u64;
        self.buf.clear();
    }

    /// Adds received bytes; returns the complete frames now available.
    pub fn push(&mut self, data: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for &b in data {
            if b != 0 {
                if self.buf.len() > MAX_FRAME + 64 {
                    // Too long to be a frame: noise. Skip until the next delimiter.
                    self.skipped += 1;
                    continue;
                }
                self.buf.push(b);
                continue;
            }
            let chunk = std::mem::take(&mut self.buf);
            if chunk.is_empty() {
                continue;
            }
            match cobs_decode(&chunk).filter(|d| d.len() >= 3) {
                Some(d) => {
                    let (frame, crc) = d.split_at(d.len() - 2);
                    if crc16(frame).to_le_bytes() == crc {
                        out.push(frame.to_vec());
                    } else {
                        self.bad_frames += 1;
                        self.skipped += chunk.len() as u64;
                    }
                }
                None => self.skipped += chunk.len() as u64,
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_end_round_trips_and_is_no_protocol_frame() {
        let m = OverEnd {
            after: 1234,
            seq: 7,
            heard: 255,
            rank: 0xbeef,
            idle: true,
        };
        let mut out = Vec::new();
        m.encode(&mut out);
        let frames = Deframer::new().push(&out);
        assert_eq!(frames.len(), 1);
        assert_eq!(OverEnd::parse(&frames[0]), Some(m));
        assert!(OverEnd::is_control(&frames[0]));
        assert_ne!(OVER_END, skywave_proto::wire::VERSION);
        assert_eq!(OverEnd::parse(&frames[0][..7]), None);
        let mut zero_seq = frames[0].clone();
        zero_seq[3] = 0;
        assert_eq!(OverEnd::parse(&zero_seq), None);
        assert_eq!(
            OverEnd::parse(&[skywave_proto::wire::VERSION, 0, 0, 1, 0, 0, 0, 0]),
            None
        );
    }

    #[test]
    fn crc_matches_the_standard_check_value() {
        assert_eq!(crc16(b"123456789"), 0x29b1);
    }

    #[test]
    fn fixed_bytes() {
        let mut out = Vec::new();
        encode(b"h\0i", &mut out);
        // frame + crc16 ("h\0i" -> 0x03d9, LE d9 03), COBS-stuffed, zero-terminated
        assert_eq!(crc16(b"h\0i"), 0x03d9);
        assert_eq!(out, [0x02, b'h', 0x04, b'i', 0xd9, 0x03, 0x00]);
        assert_eq!(out.len(), 3 + overhead(3));
    }

    #[test]
    fn long_frames_stuff_correctly() {
        for len in [253, 254, 255, 508, 1000] {
            let frame: Vec<u8> = (0..len).map(|i| (i % 7 + 1) as u8).collect();
            let mut out = Vec::new();
            encode(&frame, &mut out);
            assert!(out.len() <= len + overhead(len), "{len}: {}", out.len());
            assert_eq!(Deframer::new().push(&out), vec![frame]);
        }
    }

    #[test]
    fn survives_garbage_split_input_and_bad_frames() {
        let mut stream = b"\x00garbage\x7e\x7e\xff\x00".to_vec();
        encode(b"first", &mut stream);
        let mut broken = Vec::new();
        encode(b"broken", &mut broken);
        broken[3] ^= 1; // inside the frame, not its delimiter
        stream.extend_from_slice(&broken);
        encode(b"second", &mut stream);
        let mut d = Deframer::new();
        let mut frames = Vec::new();
        for chunk in stream.chunks(3) {
            frames.extend(d.push(chunk));
        }
        assert_eq!(frames, vec![b"first".to_vec(), b"second".to_vec()]);
        assert!(d.skipped > 0);
        assert_eq!(d.bad_frames, 1);
    }

    proptest::proptest! {
        #[test]
        fn round_trip_any_chunking(
            frames in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 1..300), 0..8),
            cut in 1usize..50,
        ) {
            let mut stream = Vec::new();
            for f in &frames {
                encode(f, &mut stream);
            }
            let mut d = Deframer::new();
            let mut got = Vec::new();
            for c in stream.chunks(cut) {
                got.extend(d.push(c));
            }
            proptest::prop_assert_eq!(got, frames);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..500)) {
            let mut d = Deframer::new();
            let _ = d.push(&bytes);
        }
    }
}
