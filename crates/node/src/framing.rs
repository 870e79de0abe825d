//! Framing of protocol frames on byte streams (serial lines, HF modems, TCP).
//!
//! `7e | varint len | frame[len] | crc16 (CRC-16/CCITT-FALSE over len and frame, LE)`.
//! The reader resynchronises after garbage or a broken frame by scanning for the next
//! `7e` whose length and CRC check out; bytes skipped are counted, never fatal.

use skywave_bundle::varint;

const MAGIC: u8 = 0x7e;
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
pub fn overhead(len: usize) -> usize {
    1 + varint::len(len as u64) + 2
}

/// Appends the stream encoding of `frame`.
pub fn encode(frame: &[u8], out: &mut Vec<u8>) {
    out.push(MAGIC);
    let start = out.len();
    varint::put(out, frame.len() as u64);
    out.extend_from_slice(frame);
    let crc = crc16(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Reassembles frames from stream chunks.
#[derive(Debug, Default)]
pub struct Deframer {
    buf: Vec<u8>,
    /// Bytes discarded while resynchronising.
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
        self.buf.extend_from_slice(data);
        let mut out = Vec::new();
        let mut pos = 0;
        loop {
            let Some(off) = self.buf[pos..].iter().position(|&b| b == MAGIC) else {
                self.skipped += (self.buf.len() - pos) as u64;
                pos = self.buf.len();
                break;
            };
            self.skipped += off as u64;
            pos += off;
            let rest = &self.buf[pos + 1..];
            let (len, n) = match varint::get(rest) {
                Ok(x) => x,
                Err(varint::VarintError::Truncated) => break,
                Err(_) => {
                    pos += 1;
                    self.skipped += 1;
                    continue;
                }
            };
            let len = len as usize;
            if len == 0 || len > MAX_FRAME {
                pos += 1;
                self.skipped += 1;
                continue;
            }
            if rest.len() < n + len + 2 {
                break;
            }
            let body = &rest[..n + len];
            let crc = u16::from_le_bytes([rest[n + len], rest[n + len + 1]]);
            if crc16(body) != crc {
                self.bad_frames += 1;
                pos += 1;
                self.skipped += 1;
                continue;
            }
            out.push(rest[n..n + len].to_vec());
            pos += 1 + n + len + 2;
        }
        self.buf.drain(..pos);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_standard_check_value() {
        assert_eq!(crc16(b"123456789"), 0x29b1);
    }

    #[test]
    fn fixed_bytes() {
        let mut out = Vec::new();
        encode(b"hi", &mut out);
        let crc = crc16(&[2, b'h', b'i']).to_le_bytes();
        assert_eq!(out, [0x7e, 2, b'h', b'i', crc[0], crc[1]]);
    }

    #[test]
    fn survives_garbage_split_input_and_bad_frames() {
        let mut stream = b"\x00garbage\x7e\x7e\xff".to_vec();
        encode(b"first", &mut stream);
        let mut broken = Vec::new();
        encode(b"broken", &mut broken);
        let last = broken.len() - 1;
        broken[last] ^= 1;
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
