//! KISS framing (the TNC host protocol of Chepponis and Karn, 1987): frames between
//! `FEND` bytes, `FEND` and `FESC` inside a frame escaped, and a first byte holding the
//! port (high nibble) and the command (low nibble).
//!
//! What this does not do: interpret a data frame's contents (see `super::ax25`).

/// Frame end.
pub const FEND: u8 = 0xC0;
/// Frame escape.
pub const FESC: u8 = 0xDB;
/// Transposed frame end (`FESC TFEND` stands for a `FEND` inside a frame).
pub const TFEND: u8 = 0xDC;
/// Transposed frame escape (`FESC TFESC` stands for a `FESC`).
pub const TFESC: u8 = 0xDD;

/// The command in a frame's first byte (its low nibble).
pub mod cmd {
    pub const DATA: u8 = 0x0;
    /// Key-up delay, in 10 ms units.
    pub const TXDELAY: u8 = 0x1;
    /// p-persistence: the chance (p + 1) / 256 of sending in a free slot.
    pub const PERSISTENCE: u8 = 0x2;
    /// Slot time, in 10 ms units.
    pub const SLOT_TIME: u8 = 0x3;
    /// Key-down delay after the last frame, in 10 ms units (obsolete on many TNCs).
    pub const TXTAIL: u8 = 0x4;
    /// 0: half duplex (carrier sense); anything else: send whenever there is data.
    pub const FULL_DUPLEX: u8 = 0x5;
    /// TNC-specific; Dire Wolf answers the payload `TXBUF:` with `TXBUF:<n>`.
    pub const SET_HARDWARE: u8 = 0x6;
}

/// Longest frame kept while reading (an AX.25 frame with a 2048-byte info field, its
/// addresses and digipeaters, escaped or not, is well under it); a longer one is noise.
pub const MAX_FRAME: usize = 4096;

/// Appends the KISS frame for `port`/`command` and `data` to `out`.
pub fn encode(port: u8, command: u8, data: &[u8], out: &mut Vec<u8>) {
    encode_byte((port & 0x0F) << 4 | (command & 0x0F), data, out);
}

/// Appends a KISS frame whose first byte is `first` whole (RNode's commands use all
/// eight bits) and `data` to `out`.
pub fn encode_byte(first: u8, data: &[u8], out: &mut Vec<u8>) {
    out.reserve(data.len() + 4);
    out.push(FEND);
    out.push(first);
    for &b in data {
        match b {
            FEND => out.extend_from_slice(&[FESC, TFEND]),
            FESC => out.extend_from_slice(&[FESC, TFESC]),
            b => out.push(b),
        }
    }
    out.push(FEND);
}

/// A frame from the TNC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub port: u8,
    pub command: u8,
    pub data: Vec<u8>,
}

/// Splits the TNC's byte stream into frames. Broken escapes and frames longer than
/// [`MAX_FRAME`] are dropped and counted; the reader is in step again at the next `FEND`.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    escaped: bool,
    /// The frame being read is broken (bad escape, too long): dropped at its end.
    broken: bool,
    /// Bytes of dropped frames.
    pub garbage: u64,
    /// Frames dropped for a bad escape or their length.
    pub bad_frames: u64,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Adds bytes read from the TNC; returns the whole frames they completed.
    pub fn push(&mut self, data: &[u8]) -> Vec<Frame> {
        let mut frames = Vec::new();
        for &b in data {
            if b == FEND {
                self.end(&mut frames);
                continue;
            }
            if self.broken {
                self.garbage += 1;
                continue;
            }
            let byte = if self.escaped {
                self.escaped = false;
                match b {
                    TFEND => FEND,
                    TFESC => FESC,
                    _ => {
                        // (The escape and the byte after it.)
                        self.break_frame(2);
                        continue;
                    }
                }
            } else if b == FESC {
                self.escaped = true;
                continue;
            } else {
                b
            };
            if self.buf.len() >= MAX_FRAME {
                self.break_frame(1);
                continue;
            }
            self.buf.push(byte);
        }
        frames
    }

    fn break_frame(&mut self, extra: u64) {
        self.garbage += self.buf.len() as u64 + extra;
        self.buf.clear();
        self.broken = true;
    }

    fn end(&mut self, frames: &mut Vec<Frame>) {
        if self.broken || self.escaped {
            if self.escaped && !self.broken {
                self.garbage += self.buf.len() as u64 + 1;
            }
            self.bad_frames += 1;
        } else if let Some((&first, rest)) = self.buf.split_first() {
            frames.push(Frame {
                port: first >> 4,
                command: first & 0x0F,
                data: rest.to_vec(),
            });
        }
        // (Back-to-back FENDs make empty frames: the usual idle fill, nothing to count.)
        self.buf.clear();
        self.escaped = false;
        self.broken = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_escaped_as_specified() {
        let mut out = Vec::new();
        encode(1, cmd::DATA, &[0x01, FEND, 0x02, FESC, 0x03], &mut out);
        assert_eq!(
            out,
            [0xC0, 0x10, 0x01, 0xDB, 0xDC, 0x02, 0xDB, 0xDD, 0x03, 0xC0]
        );
        let mut out = Vec::new();
        encode(0, cmd::TXDELAY, &[30], &mut out);
        assert_eq!(out, [0xC0, 0x01, 30, 0xC0]);
        let mut out = Vec::new();
        encode(2, cmd::SET_HARDWARE, b"TXBUF:", &mut out);
        assert_eq!(out, b"\xC0\x26TXBUF:\xC0");
    }

    #[test]
    fn decoding_inverts_encoding_across_any_split() {
        let mut stream = Vec::new();
        let payloads: Vec<Vec<u8>> = vec![
            vec![FEND, FESC, TFEND, TFESC],
            (0..=255).collect(),
            b"TXBUF:1234".to_vec(),
        ];
        for (i, p) in payloads.iter().enumerate() {
            encode(i as u8, i as u8 * 3, p, &mut stream);
        }
        for split in [1, 2, 3, 7, 64, stream.len()] {
            let mut d = Decoder::new();
            let got: Vec<Frame> = stream.chunks(split).flat_map(|c| d.push(c)).collect();
            assert_eq!(got.len(), 3, "split {split}");
            for (i, f) in got.iter().enumerate() {
                assert_eq!((f.port, f.command), (i as u8, i as u8 * 3));
                assert_eq!(f.data, payloads[i]);
            }
            assert_eq!((d.garbage, d.bad_frames), (0, 0));
        }
    }

    #[test]
    fn broken_escapes_and_long_frames_are_counted_and_dropped() {
        let mut d = Decoder::new();
        // A bad escape, then a good frame: only the good one comes out.
        let mut s = vec![FEND, 0x00, 0x41, FESC, 0x42, 0x43, FEND];
        encode(0, cmd::DATA, b"ok", &mut s);
        let got = d.push(&s);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data, b"ok");
        assert_eq!(d.bad_frames, 1);
        assert_eq!(d.garbage, 5);
        // An escape cut by FEND.
        d.push(&[FEND, 0x00, 0x41, FESC, FEND]);
        assert_eq!(d.bad_frames, 2);
        // Endless noise without FEND is not kept beyond MAX_FRAME.
        let noise = vec![0x55u8; MAX_FRAME * 3];
        assert!(d.push(&noise).is_empty());
        assert!(d.buf.len() <= MAX_FRAME);
        let got = d.push(&[FEND]);
        assert!(got.is_empty());
        assert_eq!(d.bad_frames, 3);
        // And in step again.
        let mut s = Vec::new();
        encode(0, cmd::DATA, b"again", &mut s);
        assert_eq!(d.push(&s)[0].data, b"again");
    }
}
