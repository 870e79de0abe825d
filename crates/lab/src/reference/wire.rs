//! Packets and stream messages of the reference agent.
//!
//! Packet (every port): `type u8 | src u16 | dst u16 | body | fnv32 u32` (big-endian); a
//! packet whose checksum fails is dropped. Stream ports (the HF modem) carry packets as
//! `0x7E 0xA5 | len u16 | packet` and resynchronise on the marker after damage.
//!
//! Bodies: HELLO (none), DATA `seq u32 | stream bytes`, ACK `next u32 | n u8 |
//! n x (start u32, end u32)` (cumulative next expected sequence and received ranges above
//! it, end exclusive).
//!
//! Messages on a session's reliable byte stream: INV `0x01 | body_len u32 | (key u64,
//! version varint)*`, INV_END `0x02`, BUNDLE `0x03 | flags u8 (1 = journal) | key u64 | version u64 | payload_len u64
//! | base u64 | manifest_len u16` followed by `manifest_len + payload_len - base` opaque
//! bytes.

use bytes::{BufMut, Bytes, BytesMut};

pub const BROADCAST: u16 = u16::MAX;
pub const HELLO: u8 = 1;
pub const DATA: u8 = 2;
pub const ACK: u8 = 3;
/// type + src + dst + checksum.
pub const PACKET_OVERHEAD: usize = 9;
pub const DATA_HEADER: usize = PACKET_OVERHEAD + 4;
pub const STREAM_FRAMING: usize = 4;
const MARKER: [u8; 2] = [0x7E, 0xA5];
/// Largest packet accepted from a stream.
pub const MAX_STREAM_PACKET: usize = 2048;

pub const MSG_INV: u8 = 1;
pub const MSG_INV_END: u8 = 2;
pub const MSG_BUNDLE: u8 = 3;
pub const INV_HEADER: usize = 5;
pub const BUNDLE_HEADER: usize = 36;

pub fn fnv32(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in data {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Builds a packet: header, body, checksum.
pub fn packet(kind: u8, src: u16, dst: u16, body: &[&[u8]]) -> Bytes {
    let len: usize = body.iter().map(|b| b.len()).sum();
    let mut p = BytesMut::with_capacity(PACKET_OVERHEAD + len);
    p.put_u8(kind);
    p.put_u16(src);
    p.put_u16(dst);
    for b in body {
        p.put_slice(b);
    }
    let sum = fnv32(&p);
    p.put_u32(sum);
    p.freeze()
}

/// A checked packet view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub kind: u8,
    pub src: u16,
    pub dst: u16,
    pub body: Bytes,
}

impl Packet {
    pub fn parse(p: &Bytes) -> Option<Packet> {
        if p.len() < PACKET_OVERHEAD {
            return None;
        }
        let (head, sum) = p.split_at(p.len() - 4);
        if fnv32(head) != u32::from_be_bytes(sum.try_into().ok()?) {
            return None;
        }
        Some(Packet {
            kind: head[0],
            src: u16::from_be_bytes([head[1], head[2]]),
            dst: u16::from_be_bytes([head[3], head[4]]),
            body: p.slice(5..p.len() - 4),
        })
    }
}

/// Wraps a packet for a byte stream.
pub fn frame_for_stream(p: &Bytes) -> Bytes {
    let mut f = BytesMut::with_capacity(STREAM_FRAMING + p.len());
    f.put_slice(&MARKER);
    f.put_u16(p.len() as u16);
    f.put_slice(p);
    f.freeze()
}

/// Takes the next whole packet out of a stream's receive buffer, skipping damaged bytes.
pub fn deframe(buf: &mut BytesMut) -> Option<Bytes> {
    loop {
        let start = buf.windows(2).position(|w| w == MARKER);
        match start {
            Some(i) => {
                let _ = buf.split_to(i);
            }
            None => {
                // Keep a trailing half marker.
                let keep = usize::from(buf.last() == Some(&MARKER[0]));
                let _ = buf.split_to(buf.len() - keep);
                return None;
            }
        }
        if buf.len() < STREAM_FRAMING {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([buf[2], buf[3]]));
        if !(PACKET_OVERHEAD..=MAX_STREAM_PACKET).contains(&len) {
            let _ = buf.split_to(1);
            continue;
        }
        if buf.len() < STREAM_FRAMING + len {
            return None;
        }
        let candidate = buf[STREAM_FRAMING..STREAM_FRAMING + len].to_vec();
        let candidate = Bytes::from(candidate);
        if Packet::parse(&candidate).is_some() {
            let _ = buf.split_to(STREAM_FRAMING + len);
            return Some(candidate);
        }
        let _ = buf.split_to(1);
    }
}

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A BUNDLE message header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BundleHeader {
    pub journal: bool,
    pub key: u64,
    pub version: u64,
    pub payload_len: u64,
    pub base: u64,
    pub manifest_len: u16,
}

impl BundleHeader {
    pub fn body_len(&self) -> u64 {
        u64::from(self.manifest_len) + self.payload_len.saturating_sub(self.base)
    }

    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(BUNDLE_HEADER);
        b.put_u8(MSG_BUNDLE);
        b.put_u8(u8::from(self.journal));
        b.put_u64(self.key);
        b.put_u64(self.version);
        b.put_u64(self.payload_len);
        b.put_u64(self.base);
        b.put_u16(self.manifest_len);
        b.freeze()
    }

    fn decode(h: &[u8]) -> Option<BundleHeader> {
        let u = |i: usize| {
            h.get(i..i + 8)
                .and_then(|s| s.try_into().ok())
                .map(u64::from_be_bytes)
        };
        Some(BundleHeader {
            journal: match h.get(1)? {
                0 => false,
                1 => true,
                _ => return None,
            },
            key: u(2)?,
            version: u(10)?,
            payload_len: u(18)?,
            base: u(26)?,
            manifest_len: u16::from_be_bytes(h.get(34..36)?.try_into().ok()?),
        })
    }
}

/// A complete message taken off a session's stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    Inv(Vec<(u64, u64)>),
    InvEnd,
    Bundle(BundleHeader),
}

/// Encodes one INV message.
pub fn encode_inv(entries: &[(u64, u64)]) -> Bytes {
    let mut body = Vec::with_capacity(entries.len() * 9);
    for &(k, v) in entries {
        body.extend_from_slice(&k.to_be_bytes());
        put_varint(&mut body, v);
    }
    let mut b = BytesMut::with_capacity(INV_HEADER + body.len());
    b.put_u8(MSG_INV);
    b.put_u32(body.len() as u32);
    b.put_slice(&body);
    b.freeze()
}

/// Incremental parser of a session's in-order byte stream. Bundle bodies are opaque and
/// only counted.
#[derive(Debug, Default)]
pub struct Parser {
    head: Vec<u8>,
    /// Inventory body being collected.
    inv: Option<(usize, Vec<u8>)>,
    /// Bundle whose body is being skipped, and the bytes left.
    body: Option<(BundleHeader, u64)>,
}

/// The stream broke the message grammar (cannot happen on an intact reliable channel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed message stream")]
pub struct Malformed;

impl Parser {
    pub fn feed(&mut self, mut data: &[u8], out: &mut Vec<Message>) -> Result<(), Malformed> {
        while !data.is_empty() {
            if let Some((h, left)) = &mut self.body {
                let n = (*left).min(data.len() as u64);
                *left -= n;
                data = &data[n as usize..];
                if *left == 0 {
                    out.push(Message::Bundle(*h));
                    self.body = None;
                }
                continue;
            }
            if let Some((want, buf)) = &mut self.inv {
                let n = (*want - buf.len()).min(data.len());
                buf.extend_from_slice(&data[..n]);
                data = &data[n..];
                if buf.len() == *want {
                    out.push(Message::Inv(decode_inv(buf).ok_or(Malformed)?));
                    self.inv = None;
                }
                continue;
            }
            self.head.push(data[0]);
            data = &data[1..];
            match self.head[0] {
                MSG_INV_END => {
                    out.push(Message::InvEnd);
                    self.head.clear();
                }
                MSG_INV if self.head.len() == INV_HEADER => {
                    let len = u32::from_be_bytes([
                        self.head[1],
                        self.head[2],
                        self.head[3],
                        self.head[4],
                    ]);
                    self.head.clear();
                    if len == 0 {
                        out.push(Message::Inv(Vec::new()));
                    } else {
                        self.inv = Some((len as usize, Vec::with_capacity(len as usize)));
                    }
                }
                MSG_BUNDLE if self.head.len() == BUNDLE_HEADER => {
                    let h = BundleHeader::decode(&self.head).ok_or(Malformed)?;
                    self.head.clear();
                    if h.body_len() == 0 {
                        out.push(Message::Bundle(h));
                    } else {
                        self.body = Some((h, h.body_len()));
                    }
                }
                MSG_INV | MSG_BUNDLE => {}
                _ => return Err(Malformed),
            }
        }
        Ok(())
    }
}

fn decode_inv(body: &[u8]) -> Option<Vec<(u64, u64)>> {
    let mut pos = 0;
    let mut v = Vec::new();
    while pos < body.len() {
        let k = u64::from_be_bytes(body.get(pos..pos + 8)?.try_into().ok()?);
        pos += 8;
        v.push((k, varint(body, &mut pos)?));
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_round_trip_and_reject_damage() {
        let p = packet(DATA, 3, 4, &[&[0, 0, 0, 7], b"hello"]);
        let got = Packet::parse(&p).unwrap();
        assert_eq!((got.kind, got.src, got.dst), (DATA, 3, 4));
        assert_eq!(&got.body[..], &[0, 0, 0, 7, b'h', b'e', b'l', b'l', b'o']);
        let mut bad = p.to_vec();
        bad[6] ^= 1;
        assert!(Packet::parse(&Bytes::from(bad)).is_none());
    }

    #[test]
    fn stream_deframing_resyncs() {
        let a = packet(HELLO, 1, BROADCAST, &[]);
        let b = packet(ACK, 1, 2, &[&[0, 0, 0, 1, 0]]);
        let mut buf = BytesMut::new();
        buf.put_slice(b"\x7e\x00junk");
        buf.put_slice(&frame_for_stream(&a));
        let fb = frame_for_stream(&b);
        buf.put_slice(&fb[..5]);
        assert_eq!(deframe(&mut buf), Some(a));
        assert_eq!(deframe(&mut buf), None);
        buf.put_slice(&fb[5..]);
        assert_eq!(deframe(&mut buf), Some(b));
    }

    #[test]
    fn messages_parse_in_any_split() {
        let h = BundleHeader {
            journal: false,
            key: 9,
            version: 1,
            payload_len: 100,
            base: 0,
            manifest_len: 134,
        };
        let mut stream = encode_inv(&[(1, 1), (2, 300)]).to_vec();
        stream.push(MSG_INV_END);
        stream.extend_from_slice(&h.encode());
        stream.extend(std::iter::repeat_n(0u8, 234));
        for split in [1, 3, 7, 1000] {
            let mut p = Parser::default();
            let mut out = Vec::new();
            for c in stream.chunks(split) {
                p.feed(c, &mut out).unwrap();
            }
            assert_eq!(
                out,
                vec![
                    Message::Inv(vec![(1, 1), (2, 300)]),
                    Message::InvEnd,
                    Message::Bundle(h)
                ]
            );
        }
        assert_eq!(
            Parser::default().feed(&[9], &mut Vec::new()),
            Err(Malformed)
        );
    }
}
