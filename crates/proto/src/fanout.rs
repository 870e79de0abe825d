//! Encode once, send to many: a bundle's pieces encoded a single time and framed per
//! peer with a per-peer header only.
//!
//! [`EncodedBundle`] holds the payload as one shared [`Bytes`] and, per piece, its
//! PIECE message head (`type | len | ref | offset`, at most 32 bytes). A frame for a
//! peer is then a [`SharedFrame`]: the peer's frame header (version, flags, tags,
//! packet number) built on the spot, plus two `Bytes` handles on the shared head and
//! payload slice. Nothing of the payload is copied or re-encoded per peer; a driver
//! writes the three parts with vectored I/O (`sendmsg`, `write_vectored`) or copies
//! them into its own buffer with [`SharedFrame::copy_to`].
//!
//! The bytes are exactly those [`crate::wire::FrameWriter`] would build for a frame
//! holding one PIECE: receivers cannot tell the difference. What this module does not
//! do: decide which peer needs which piece (the endpoint's transfer state does).

use bytes::Bytes;
use skywave_bundle::{BundleId, varint};

use crate::wire::{BundleRef, HEADER_MAX, Header, ty};

/// Frame header bytes reserved: an addressed frame with a packet number below 2^42.
pub const HEADER_RESERVE: usize = 1 + 1 + 4 + 4 + 6;

#[derive(Debug, Clone, Copy)]
struct PieceIndex {
    offset: u64,
    len: u32,
    head_at: u32,
    head_len: u8,
}

/// A bundle version's payload cut into pieces for frames of at most `mtu` bytes,
/// every piece's message head encoded once.
#[derive(Debug, Clone)]
pub struct EncodedBundle {
    r: BundleRef,
    payload: Bytes,
    heads: Bytes,
    pieces: Vec<PieceIndex>,
}

impl EncodedBundle {
    /// Cuts `payload` (version `version` of `id`) into pieces that fit frames of `mtu`
    /// bytes with any header up to [`HEADER_RESERVE`]. `None` if `mtu` leaves no room.
    pub fn new(id: &BundleId, version: u64, payload: Bytes, mtu: usize) -> Option<Self> {
        let r = BundleRef::new(id, version);
        let len = payload.len() as u64;
        let mut heads = Vec::new();
        let mut pieces = Vec::new();
        let mut offset = 0u64;
        let ref_len = 8 + varint::len(version);
        while offset < len {
            let room = mtu.checked_sub(HEADER_RESERVE)?;
            // Largest data length whose whole message fits `room`.
            let fixed = ref_len + varint::len(offset);
            let mut data = room.checked_sub(1 + 3 + fixed)?;
            while data > 0 && 1 + varint::len((fixed + data) as u64) + fixed + data > room {
                data -= 1;
            }
            if data == 0 {
                return None;
            }
            let data = (data as u64).min(len - offset);
            let head_at = heads.len();
            heads.push(ty::PIECE);
            varint::put(&mut heads, fixed as u64 + data);
            heads.extend_from_slice(&r.prefix);
            varint::put(&mut heads, version);
            varint::put(&mut heads, offset);
            pieces.push(PieceIndex {
                offset,
                len: data as u32,
                head_at: head_at as u32,
                head_len: (heads.len() - head_at) as u8,
            });
            offset += data;
        }
        Some(Self {
            r,
            payload,
            heads: Bytes::from(heads),
            pieces,
        })
    }

    pub fn bundle_ref(&self) -> BundleRef {
        self.r
    }

    /// Number of pieces.
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Byte range `(offset, len)` of piece `i`.
    pub fn piece_range(&self, i: usize) -> Option<(u64, u64)> {
        self.pieces.get(i).map(|p| (p.offset, u64::from(p.len)))
    }

    /// Bytes this encoding holds beyond the shared payload (heads and index).
    pub fn overhead_bytes(&self) -> usize {
        self.heads.len() + self.pieces.capacity() * std::mem::size_of::<PieceIndex>()
    }

    /// The frame carrying piece `i` to a peer, under that peer's `header`.
    pub fn frame(&self, i: usize, header: Header) -> Option<SharedFrame> {
        let p = self.pieces.get(i)?;
        let mut h = [0u8; HEADER_MAX];
        let n = header.encode(&mut h);
        let head_at = p.head_at as usize;
        let at = p.offset as usize;
        Some(SharedFrame {
            header: h,
            header_len: n as u8,
            head: self.heads.slice(head_at..head_at + p.head_len as usize),
            data: self.payload.slice(at..at + p.len as usize),
        })
    }
}

/// One frame: a per-peer header and shared message bytes.
#[derive(Debug, Clone)]
pub struct SharedFrame {
    header: [u8; HEADER_MAX],
    header_len: u8,
    head: Bytes,
    data: Bytes,
}

impl SharedFrame {
    /// Total frame length.
    pub fn len(&self) -> usize {
        self.header_len as usize + self.head.len() + self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// The frame's parts in order, for vectored writes.
    pub fn parts(&self) -> [&[u8]; 3] {
        [
            &self.header[..self.header_len as usize],
            &self.head,
            &self.data,
        ]
    }

    /// The shared payload slice (no copy).
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// Copies the frame into `out` (cleared first), for links that need one buffer.
    pub fn copy_to(&self, out: &mut Vec<u8>) {
        out.clear();
        for p in self.parts() {
            out.extend_from_slice(p);
        }
    }

    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        self.copy_to(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{self, FrameWriter, Message};

    fn payload(n: usize) -> Bytes {
        Bytes::from((0..n).map(|i| (i * 7 + i / 251) as u8).collect::<Vec<u8>>())
    }

    #[test]
    fn frames_parse_and_reassemble_the_payload() {
        let id = BundleId([9; 32]);
        for (len, mtu, addr) in [
            (1 << 20, 1472, None),
            (10_000, 200, Some((7, wire::BROADCAST))),
            (1, 64, Some((1, 2))),
            (300_000, 1500, Some((1, 2))),
        ] {
            let p = payload(len);
            let e = EncodedBundle::new(&id, 42, p.clone(), mtu).unwrap();
            let mut got = vec![0u8; len];
            let mut covered = 0u64;
            for i in 0..e.len() {
                // Large packet numbers too: the header reserve covers pn < 2^42.
                let pn = (i as u64) << 30;
                let f = e
                    .frame(
                        i,
                        Header {
                            addr,
                            pn,
                            short_tags: false,
                        },
                    )
                    .unwrap();
                let bytes = f.to_vec();
                assert_eq!(bytes.len(), f.len());
                assert!(bytes.len() <= mtu, "{} > {mtu}", bytes.len());
                let (h, msgs) = wire::parse(&bytes).unwrap();
                assert_eq!(
                    h,
                    Header {
                        addr,
                        pn,
                        short_tags: false
                    }
                );
                let [Message::Piece { r, offset, data }] = msgs.as_slice() else {
                    panic!("{msgs:?}")
                };
                assert_eq!(*r, BundleRef::new(&id, 42));
                assert_eq!(e.piece_range(i), Some((*offset, data.len() as u64)));
                got[*offset as usize..*offset as usize + data.len()].copy_from_slice(data);
                covered += data.len() as u64;
                // The same bytes as the endpoint's frame writer builds.
                let mut w = FrameWriter::new(
                    Header {
                        addr,
                        pn,
                        short_tags: false,
                    },
                    mtu,
                );
                assert!(w.piece(r, *offset, data));
                assert_eq!(w.finish(), bytes);
            }
            assert_eq!(covered, len as u64);
            assert_eq!(got, p);
        }
    }

    #[test]
    fn frames_share_the_payload_and_fill_the_mtu() {
        let id = BundleId([3; 32]);
        let p = payload(1 << 20);
        let e = EncodedBundle::new(&id, 1, p.clone(), 1472).unwrap();
        // Per-piece bytes beyond the payload: a head and an index entry.
        assert!(e.overhead_bytes() <= e.len() * 64, "{}", e.overhead_bytes());
        let a = e.frame(5, Header::unaddressed(1)).unwrap();
        let b = e
            .frame(
                5,
                Header {
                    addr: Some((1, 2)),
                    pn: 900,
                    short_tags: false,
                },
            )
            .unwrap();
        // Two peers, one copy of the piece: both point into the original payload.
        assert_eq!(a.data().as_ptr(), b.data().as_ptr());
        let (off, _) = e.piece_range(5).unwrap();
        assert_eq!(a.data().as_ptr(), p[off as usize..].as_ptr());
        // Every frame but the last is within a header reserve of the MTU.
        for i in 0..e.len() - 1 {
            let f = e
                .frame(
                    i,
                    Header {
                        addr: Some((1, 2)),
                        pn: 1 << 41,
                        short_tags: false,
                    },
                )
                .unwrap();
            assert!(f.len() <= 1472 && f.len() + 4 >= 1472, "{}", f.len());
        }
    }

    #[test]
    fn an_mtu_without_room_is_refused() {
        let id = BundleId([1; 32]);
        assert!(EncodedBundle::new(&id, 1, payload(100), 20).is_none());
        assert!(EncodedBundle::new(&id, 1, Bytes::new(), 20).is_some_and(|e| e.is_empty()));
    }
}
