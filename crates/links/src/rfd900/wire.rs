//! The Serval RFD900 CSMA firmware's serial protocol.
//!
//! Host to radio: frame bytes, each `!` sent as `!.`; `!!` transmits what the radio has
//! buffered as one frame; `!C` clears the buffer. Radio to host: a received frame (data
//! then its 32 parity bytes), then the 9-byte trailer
//! `AA 55 rssi remote_rssi temperature length space_lo space_hi 55` (length counts data
//! and parity); and, now and then, a status frame `CE EC` + 6 bytes + `DD`. Nothing marks
//! where a frame starts: the trailer says how many bytes before it were the frame.

use crate::RadioStatus;

/// Trailer length.
pub const TRAILER: usize = 9;
/// Status (heartbeat) frame length.
pub const HEARTBEAT: usize = 9;
/// Largest frame on the air (data + parity).
pub const MAX_AIR: usize = 255;

/// Appends `frame` escaped, then the transmit command.
pub fn encode_tx(frame: &[u8], out: &mut Vec<u8>) {
    for &b in frame {
        if b == b'!' {
            out.extend_from_slice(b"!.");
        } else {
            out.push(b);
        }
    }
    out.extend_from_slice(b"!!");
}

/// Bytes `frame` takes on the serial line to the radio.
pub fn tx_len(frame: &[u8]) -> usize {
    frame.len() + frame.iter().filter(|&&b| b == b'!').count() + 2
}

/// Appends a received frame and its trailer, as the radio sends them to its host.
pub fn encode_rx(air: &[u8], status: RadioStatus, out: &mut Vec<u8>) {
    out.extend_from_slice(air);
    let [lo, hi] = status.buffer_space.to_le_bytes();
    out.extend_from_slice(&[
        0xaa,
        0x55,
        status.rssi,
        status.remote_rssi,
        status.temperature,
        air.len() as u8,
        lo,
        hi,
        0x55,
    ]);
}

/// A status frame with six GPIO bytes.
pub fn heartbeat(gpio: [u8; 6]) -> [u8; HEARTBEAT] {
    let mut h = [0u8; HEARTBEAT];
    h[0] = 0xce;
    h[1] = 0xec;
    h[2..8].copy_from_slice(&gpio);
    h[8] = 0xdd;
    h
}

/// What the radio said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rx {
    /// A received frame (data + parity, unchecked) and the trailer's figures.
    Frame(Vec<u8>, RadioStatus),
    /// A trailer whose frame is not all there (its length points before what was kept,
    /// or it is too short to hold the parity): the figures still count.
    Truncated(RadioStatus),
    /// A status frame: the radio is alive.
    Heartbeat,
}

/// Reassembles what the radio sends.
#[derive(Debug, Default)]
pub struct RxParser {
    buf: Vec<u8>,
    /// Parallel to `buf`: the byte belongs to a recognised status frame.
    claimed: Vec<bool>,
    /// Bytes that were neither a frame, a trailer, nor a status frame.
    pub garbage: u64,
}

impl RxParser {
    pub fn new() -> RxParser {
        RxParser::default()
    }

    /// Adds received bytes; returns what they completed.
    pub fn push(&mut self, data: &[u8]) -> Vec<Rx> {
        let mut out = Vec::new();
        for &b in data {
            if self.buf.len() == MAX_AIR + TRAILER {
                // Longer than any frame and its trailer: the oldest byte cannot belong to one.
                if !self.claimed[0] {
                    self.garbage += 1;
                }
                self.buf.remove(0);
                self.claimed.remove(0);
            }
            self.buf.push(b);
            self.claimed.push(false);
            if let Some(rx) = self.check() {
                out.push(rx);
            }
        }
        out
    }

    fn check(&mut self) -> Option<Rx> {
        let n = self.buf.len();
        if n < TRAILER {
            return None;
        }
        let t = &self.buf[n - TRAILER..];
        if t[0] == 0xaa && t[1] == 0x55 && t[8] == 0x55 {
            let status = RadioStatus {
                rssi: t[2],
                remote_rssi: t[3],
                temperature: t[4],
                buffer_space: u16::from_le_bytes([t[6], t[7]]),
            };
            let len = usize::from(t[5]);
            let avail = n - TRAILER;
            let rx = if len <= avail && len > super::rs::PARITY {
                let start = avail - len;
                self.count_garbage(start);
                Rx::Frame(self.buf[start..avail].to_vec(), status)
            } else {
                self.count_garbage(avail);
                Rx::Truncated(status)
            };
            self.buf.clear();
            self.claimed.clear();
            return Some(rx);
        }
        if t[0] == 0xce && t[1] == 0xec && t[8] == 0xdd {
            // Kept in the buffer: the same bytes could be the tail of a frame's data.
            for c in &mut self.claimed[n - HEARTBEAT..] {
                *c = true;
            }
            return Some(Rx::Heartbeat);
        }
        None
    }

    fn count_garbage(&mut self, upto: usize) {
        self.garbage += self.claimed[..upto].iter().filter(|c| !**c).count() as u64;
    }
}

/// The radio's side: parses what a host writes.
#[derive(Debug, Default)]
pub struct HostParser {
    bang: bool,
}

/// A host command or data byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostItem {
    Data(u8),
    /// `!!`: transmit the buffer.
    Transmit,
    /// `!C`: clear the buffer.
    Clear,
    /// `!Z`: reset the radio.
    Reset,
    /// `!V`: report the firmware version.
    Version,
    /// Power and parameter commands (`!H`, `!L`, `!M`, `!F`, `!R`): accepted, no effect.
    Setting(u8),
    /// `!` followed by a byte with no meaning.
    BrokenEscape(u8),
}

impl HostParser {
    pub fn push(&mut self, b: u8) -> Option<HostItem> {
        if self.bang {
            self.bang = false;
            return Some(match b {
                b'!' => HostItem::Transmit,
                b'.' => HostItem::Data(b'!'),
                b'C' => HostItem::Clear,
                b'Z' => HostItem::Reset,
                b'V' => HostItem::Version,
                b'H' | b'L' | b'M' | b'F' | b'R' => HostItem::Setting(b),
                other => HostItem::BrokenEscape(other),
            });
        }
        if b == b'!' {
            self.bang = true;
            None
        } else {
            Some(HostItem::Data(b))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(space: u16) -> RadioStatus {
        RadioStatus {
            rssi: 200,
            remote_rssi: 100,
            temperature: 28,
            buffer_space: space,
        }
    }

    #[test]
    fn escapes_round_trip_through_the_host_parser() {
        let frame = b"a!b!!c.!";
        let mut wire = Vec::new();
        encode_tx(frame, &mut wire);
        assert_eq!(wire, b"a!.b!.!.c.!.!!");
        assert_eq!(wire.len(), tx_len(frame));
        let mut p = HostParser::default();
        let items: Vec<_> = wire.iter().filter_map(|&b| p.push(b)).collect();
        let data: Vec<u8> = items
            .iter()
            .filter_map(|i| match i {
                HostItem::Data(b) => Some(*b),
                _ => None,
            })
            .collect();
        assert_eq!(data, frame);
        assert_eq!(items.last(), Some(&HostItem::Transmit));
        assert_eq!(p.push(b'!'), None);
        assert_eq!(p.push(b'x'), Some(HostItem::BrokenEscape(b'x')));
        assert_eq!(p.push(b'!'), None);
        assert_eq!(p.push(b'C'), Some(HostItem::Clear));
    }

    #[test]
    fn frames_heartbeats_and_noise() {
        let air: Vec<u8> = (0..60u8).collect();
        let mut wire = b"noise".to_vec();
        wire.extend_from_slice(&heartbeat([0xff; 6]));
        encode_rx(&air, st(4095), &mut wire);
        wire.extend_from_slice(&heartbeat([1, 2, 3, 4, 5, 6]));
        encode_rx(&air[..40], st(1000), &mut wire);
        let mut p = RxParser::new();
        let mut got = Vec::new();
        for c in wire.chunks(7) {
            got.extend(p.push(c));
        }
        assert_eq!(
            got,
            vec![
                Rx::Heartbeat,
                Rx::Frame(air.clone(), st(4095)),
                Rx::Heartbeat,
                Rx::Frame(air[..40].to_vec(), st(1000)),
            ]
        );
        assert_eq!(p.garbage, 5);
    }

    #[test]
    fn a_trailer_without_its_frame_is_truncated() {
        let mut wire = vec![1, 2, 3];
        encode_rx(&[9; 100], st(7), &mut wire);
        let mut p = RxParser::new();
        let got = p.push(&wire[wire.len() - 20..]);
        assert_eq!(got, vec![Rx::Truncated(st(7))]);
        assert_eq!(p.garbage, 11);
    }

    proptest::proptest! {
        #[test]
        fn noise_never_panics_and_is_all_counted(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..2000)) {
            let mut p = RxParser::new();
            let got = p.push(&bytes);
            let framed: usize = got.iter().map(|r| match r {
                Rx::Frame(f, _) => f.len() + TRAILER,
                _ => 0,
            }).sum();
            proptest::prop_assert!(p.garbage as usize + framed <= bytes.len());
        }
    }
}
