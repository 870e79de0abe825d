//! Frames and messages on the wire (`docs/protocol.md`), as zero-copy views.
//!
//! [`parse`] checks a whole frame before anything is acted on: a frame with any
//! malformed message is dropped whole. [`FrameWriter`] builds frames up to a size limit.

use bytes::Bytes;
use skywave_bundle::{BundleId, RangeSet, varint};

use crate::recon::riblt::{SYMBOL_LEN, Symbol};

/// First byte of every frame: skywave marker nibble and wire version 2.
pub const VERSION: u8 = 0x52;
const F_ADDRESSED: u8 = 1;
/// The sender's over ends with this frame: on a shared channel the station it is
/// addressed to may take the channel at once (docs/protocol.md, "Frame").
const F_OVER_END: u8 = 2;
/// With `ADDRESSED`: the tags are short, 2 bytes each (docs/protocol.md, "Frame").
const F_SHORT_TAGS: u8 = 4;
/// Destination tag meaning every neighbour.
pub const BROADCAST: u32 = u32::MAX;
/// Most hashes a HELLO's set sketch carries.
pub const MAX_SKETCH: usize = 32;
/// Longest WANT prefix: a whole 48-bit short id.
pub const MAX_WANT_LEN: u8 = 6;
/// Smallest frame budget the protocol works with: an addressed frame header (13 B at
/// most) and a fragment of a message with room for at least 16 bytes of it. Below this
/// a link is refused at start-up.
pub const MIN_FRAME: usize = 48;
/// Largest message carried in fragments (bigger ones are never built).
pub const MAX_FRAGMENTED: usize = 64 * 1024;

pub mod ty {
    pub const HELLO: u8 = 0x01;
    pub const SYMBOLS: u8 = 0x02;
    pub const RECON_DONE: u8 = 0x03;
    pub const WANT: u8 = 0x04;
    pub const MANIFEST: u8 = 0x05;
    pub const PIECE: u8 = 0x06;
    pub const HAVE: u8 = 0x07;
    pub const HAVE_ALL: u8 = 0x08;
    pub const ACK: u8 = 0x09;
    pub const FEC: u8 = 0x0a;
    pub const RECON_MORE: u8 = 0x0b;
    pub const NEED: u8 = 0x0c;
    pub const HEARD: u8 = 0x0d;
    pub const FRAG: u8 = 0x0e;
    pub const PADDING: u8 = 0x0f;
    pub const PIECE_NEXT: u8 = 0x10;
    pub const MISSED: u8 = 0x11;
    pub const NAMELESS: u8 = 0x12;
    pub const OFFER: u8 = 0x13;
    pub const DONE: u8 = 0x14;
    pub const FRAG_PARITY: u8 = 0x15;
    pub const SPACING: u8 = 0x16;
    pub const FRAG_NEXT: u8 = 0x17;
    pub const PING: u8 = 0x18;
    pub const IDS: u8 = 0x19;
}

/// Message types there are (type codes are below this).
pub const TYPES: usize = 0x1a;

/// Bytes of a short id in an `IDS` list (the session's 48-bit short ids).
pub const LISTED_ID_LEN: usize = 6;
/// Most short ids a listed set holds (a larger set is described by coded symbols).
pub const MAX_LISTED: u64 = 65_536;

/// Most ranges a DONE message names.
pub const MAX_DONE_RANGES: usize = 64;

/// Most ranges a MISSED message names: a long over on a lossy link has dozens of gaps,
/// at about 2 bytes each.
pub const MAX_MISSED_RANGES: usize = 64;

/// Why a frame was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("frame too short")]
    Truncated,
    #[error("unknown frame version {0:#04x}")]
    UnknownVersion(u8),
    #[error("malformed {0} message")]
    Malformed(&'static str),
}

/// A bundle version named globally: 8-byte id prefix and version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BundleRef {
    pub prefix: [u8; 8],
    pub version: u64,
}

impl BundleRef {
    pub fn new(id: &BundleId, version: u64) -> Self {
        let mut prefix = [0u8; 8];
        prefix.copy_from_slice(&id.as_bytes()[..8]);
        Self { prefix, version }
    }

    pub fn matches(&self, id: &BundleId) -> bool {
        id.as_bytes()[..8] == self.prefix
    }

    /// Bytes of its encoding.
    pub fn encoded_len(&self) -> usize {
        8 + varint::len(self.version)
    }

    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.prefix);
        varint::put(out, self.version);
    }
}

/// The frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// `(src, dst)` node tags on shared media.
    pub addr: Option<(u32, u32)>,
    pub pn: u64,
    /// The tags go in their short form (`SHORT_TAGS`): on a parsed frame, `addr` then
    /// holds the two short tags, widened ([`short_tag`]).
    pub short_tags: bool,
}

impl Header {
    /// Bytes the header takes in a frame.
    pub fn encoded_len(&self) -> usize {
        2 + self.tags_len() + varint::len(self.pn)
    }

    /// The header of a frame on a point-to-point link: no tags.
    pub fn unaddressed(pn: u64) -> Self {
        Self {
            addr: None,
            pn,
            short_tags: false,
        }
    }

    /// Whether the frame is addressed to the node tagged `tag` (by its short form, if
    /// the tags are short).
    pub fn is_to(&self, tag: u32) -> bool {
        self.addr.is_some_and(|(_, dst)| self.tag_is(dst, tag))
    }

    /// Whether the frame is addressed from the node tagged `tag`.
    pub fn is_from(&self, tag: u32) -> bool {
        self.addr.is_some_and(|(src, _)| self.tag_is(src, tag))
    }

    fn tag_is(&self, field: u32, tag: u32) -> bool {
        if self.short_tags {
            field == u32::from(short_tag(tag))
        } else {
            field == tag
        }
    }

    /// The header's flags byte (without `OVER_END`, which the writer adds).
    fn flags(&self) -> u8 {
        match (self.addr, self.short_tags) {
            (None, _) => 0,
            (Some(_), false) => F_ADDRESSED,
            (Some(_), true) => F_ADDRESSED | F_SHORT_TAGS,
        }
    }

    /// Bytes of the two tags.
    fn tags_len(&self) -> usize {
        tags_len(self.flags())
    }

    /// Writes the header into `out` (at least [`HEADER_MAX`] bytes); returns its length.
    pub fn encode(&self, out: &mut [u8]) -> usize {
        out[0] = VERSION;
        out[1] = self.flags();
        if let Some((src, dst)) = self.addr {
            if self.short_tags {
                out[2..4].copy_from_slice(&short_tag(src).to_le_bytes());
                out[4..6].copy_from_slice(&short_tag(dst).to_le_bytes());
            } else {
                out[2..6].copy_from_slice(&src.to_le_bytes());
                out[6..10].copy_from_slice(&dst.to_le_bytes());
            }
        }
        let n = 2 + self.tags_len();
        n + put_varint(&mut out[n..], self.pn)
    }
}

/// Bytes of the tags a frame with header flags `flags` carries: none, two long (4 B
/// each) or, with `SHORT_TAGS`, two short (2 B each).
fn tags_len(flags: u8) -> usize {
    match (flags & F_ADDRESSED != 0, flags & F_SHORT_TAGS != 0) {
        (false, _) => 0,
        (true, false) => 8,
        (true, true) => 4,
    }
}

/// Bytes of `frame`'s header (version, flags, tags, packet number); `None` if it is
/// cut short within it.
pub fn header_len(frame: &[u8]) -> Option<usize> {
    let &flags = frame.get(1)?;
    let pos = 2 + tags_len(flags);
    let (_, n) = varint::get(frame.get(pos..)?).ok()?;
    Some(pos + n)
}

/// A node tag's short form: its low 16 bits (the node key's first two bytes), what a
/// frame with `SHORT_TAGS` carries; [`BROADCAST`]'s is `ffff`.
pub fn short_tag(tag: u32) -> u16 {
    tag as u16
}

/// The longest frame header: version, flags, two long tags and the longest varint.
pub const HEADER_MAX: usize = 2 + 8 + 10;

/// `varint::put` into a slice long enough for any varint.
fn put_varint(out: &mut [u8], mut v: u64) -> usize {
    let mut n = 0;
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[n] = b;
            return n + 1;
        }
        out[n] = b | 0x80;
        n += 1;
    }
}

/// One parsed message, borrowing from the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'a> {
    Hello {
        /// Little-endian u64 hashes: the smallest of the sender's set (see docs).
        sketch: &'a [u8],
        node_key: [u8; 32],
        nonce: u64,
        set_size: u64,
        flags: u8,
    },
    Symbols {
        epoch: u64,
        first: u64,
        data: &'a [u8],
    },
    /// Part of the streamer's set listed whole (sorted short ids), where that costs
    /// less than the coded symbols reconciliation would take: entries `[first, first +
    /// n)` of a list of `total`.
    Ids {
        epoch: u64,
        total: u64,
        first: u64,
        data: &'a [u8],
    },
    ReconDone {
        epoch: u64,
        used: u64,
    },
    /// `count > 0`: resend symbols `[from, from + count)`; `count == 0`: send a further
    /// burst (half-duplex links stream in bursts).
    ReconMore {
        epoch: u64,
        from: u64,
        count: u64,
    },
    /// Short ids wanted, each named by its top `len` bytes (1-6).
    Want {
        len: u8,
        prefixes: &'a [u8],
    },
    /// A signed manifest: a bundle offered. `seq` (an `OFFER`, sent to peers whose
    /// HELLO said they take them) numbers the offer in the sender's session, so that
    /// the receiver reports it whole by number in a `DONE`.
    Manifest {
        seq: Option<u64>,
        bytes: &'a [u8],
    },
    Piece {
        r: BundleRef,
        offset: u64,
        data: &'a [u8],
    },
    /// A piece of the bundle the frame last named (by a MANIFEST, PIECE or PIECE_NEXT
    /// before it in the same frame; first in a frame, the bundle the sender's frame
    /// numbered one less named last): a small bundle's payload after its manifest pays
    /// no second bundle reference, nor does the rest of a bundle in the next frame.
    PieceNext {
        offset: u64,
        data: &'a [u8],
    },
    Have {
        r: BundleRef,
        ranges: RangeSet,
    },
    HaveAll {
        r: BundleRef,
    },
    /// "I hold all of these": the offers numbered `seqs` (by `OFFER`) in the session
    /// with the sender whose HELLO nonce's low byte is `tag` (a report meant for an
    /// earlier incarnation of the peer names nothing). Cumulative: each repeats the
    /// numbers reported before, so a lost one costs nothing once another arrives.
    Done {
        tag: u8,
        seqs: RangeSet,
    },
    Ack(Ack),
    Fec {
        r: BundleRef,
        symbol_size: u64,
        esi: u64,
        data: &'a [u8],
    },
    /// Receiving `r` by FEC: at least `needed` more encoding symbols are needed;
    /// `last_esi` is the highest ESI received (symbols are sent in rising ESI order, so
    /// any sent after it are still on their way or lost).
    Need {
        r: BundleRef,
        needed: u64,
        last_esi: u64,
    },
    /// Links without acks: the packet number of the last frame received from the peer
    /// this frame goes to. The reports after it in the frame describe what that frame
    /// and every earlier one brought, so the peer tells a lost piece from one still on
    /// its way however late the report arrives.
    Heard {
        pn: u64,
    },
    /// Links without acks, point to point: the peer's frames that never arrived (gaps
    /// in its packet numbers), as inclusive ranges in rising order. The peer sends again
    /// what only those frames said (reports, requests, a manifest) at once, where it
    /// would otherwise wait out a resend timeout for an answer that cannot come.
    Missed {
        ranges: Vec<(u64, u64)>,
    },
    /// Links without acks: pieces of `r` arrived but its manifest did not (they were
    /// dropped). The sender sends the manifest again, and the pieces after it.
    Nameless {
        r: BundleRef,
    },
    /// Bytes `[offset, offset + data.len())` of message `id` (its type, length and body
    /// as a frame would hold them), `total` bytes long: a message larger than the
    /// link's frames goes in pieces and is handled once whole.
    Frag {
        id: u64,
        offset: u64,
        total: u64,
        data: &'a [u8],
    },
    /// Shared channels: the next bytes of the message whose fragment ended the sender's
    /// frame just before this one (one packet number less), right after that fragment;
    /// first in its frame. Frames from one radio arrive in order or not at all, so the
    /// message's id, offset and total need not be said again.
    FragNext {
        data: &'a [u8],
    },
    /// The XOR of the `count` fragments of message `id` (`total` bytes long), each
    /// aligned at its start and padded to the longest: with it, a receiver missing
    /// exactly one fragment rebuilds it without a round trip.
    FragParity {
        id: u64,
        total: u64,
        count: u64,
        data: &'a [u8],
    },
    /// Paced links, with an ACK: of the peer's frames that arrived one right after
    /// another (consecutive numbers) since the last ACK, the pair that came closest
    /// together: the second's packet number and length, and the time between their
    /// arrivals. Two frames sent back to back leave the path's narrowest link this far
    /// apart, so the sender learns the path's rate before it sends faster than that
    /// (packet dispersion); the number tells it whether it sent that pair back to back.
    Spacing {
        pn: u64,
        bytes: u64,
        gap_ns: u64,
    },
    /// Bytes that fill a path MTU probe to the size being tried; ignored.
    Padding {
        data: &'a [u8],
    },
    /// Asks for an acknowledgement and carries nothing: a path MTU probe with no data
    /// to go in it (RFC 9000's PING). Its body, if any, is ignored.
    Ping,
    Unknown {
        ty: u8,
    },
}

/// Little-endian integers of `len` bytes each (at most 8), one per whole chunk of
/// `data`.
fn le_words(data: &[u8], len: usize) -> impl Iterator<Item = u64> + '_ {
    data.chunks_exact(len).map(|c| {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(b)
    })
}

impl Message<'_> {
    /// Coded symbols of a `Symbols` message.
    pub fn symbols(data: &[u8]) -> impl Iterator<Item = Symbol> + '_ {
        data.chunks_exact(SYMBOL_LEN)
            .map(|c| Symbol::decode(c.try_into().expect("13-byte chunk")))
    }

    /// Short ids of an `Ids` message.
    pub fn listed_ids(data: &[u8]) -> impl Iterator<Item = u64> + '_ {
        le_words(data, LISTED_ID_LEN)
    }

    /// Prefixes of a `Want` message, as integers below `2^(8·len)`: a prefix names the
    /// short ids `s` with `s >> (48 − 8·len) == prefix`.
    pub fn want_prefixes(len: u8, prefixes: &[u8]) -> impl Iterator<Item = u64> + '_ {
        le_words(prefixes, usize::from(len.max(1)))
    }
}

/// Acknowledged packet numbers: `largest`, then ranges going down.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ack {
    pub largest: u64,
    pub delay_us: u64,
    /// Inclusive `(low, high)` ranges, highest first.
    pub ranges: Vec<(u64, u64)>,
}

/// Maximum ack ranges carried (older ones are implied lost or already acked).
pub const MAX_ACK_RANGES: usize = 32;

struct Cursor<'a> {
    b: &'a [u8],
    what: &'static str,
}

impl<'a> Cursor<'a> {
    fn varint(&mut self) -> Result<u64, WireError> {
        let (v, n) = varint::get(self.b).map_err(|_| WireError::Malformed(self.what))?;
        self.b = &self.b[n..];
        Ok(v)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.b.len() < n {
            return Err(WireError::Malformed(self.what));
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }

    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn bref(&mut self) -> Result<BundleRef, WireError> {
        let prefix = self.take(8)?.try_into().expect("8 bytes");
        Ok(BundleRef {
            prefix,
            version: self.varint()?,
        })
    }

    fn end(&self) -> Result<(), WireError> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(WireError::Malformed(self.what))
        }
    }
}

fn parse_message(ty: u8, body: &[u8]) -> Result<Message<'_>, WireError> {
    let name = match ty {
        ty::HELLO => "HELLO",
        ty::SYMBOLS => "SYMBOLS",
        ty::IDS => "IDS",
        ty::RECON_DONE => "RECON_DONE",
        ty::WANT => "WANT",
        ty::MANIFEST => "MANIFEST",
        ty::PIECE => "PIECE",
        ty::PIECE_NEXT => "PIECE_NEXT",
        ty::HAVE => "HAVE",
        ty::HAVE_ALL => "HAVE_ALL",
        ty::ACK => "ACK",
        ty::FEC => "FEC",
        ty::RECON_MORE => "RECON_MORE",
        ty::NEED => "NEED",
        ty::HEARD => "HEARD",
        ty::MISSED => "MISSED",
        ty::NAMELESS => "NAMELESS",
        ty::OFFER => "OFFER",
        ty::DONE => "DONE",
        ty::FRAG => "FRAG",
        ty::FRAG_NEXT => "FRAG_NEXT",
        ty::FRAG_PARITY => "FRAG_PARITY",
        ty::SPACING => "SPACING",
        ty::PADDING => return Ok(Message::Padding { data: body }),
        ty::PING => return Ok(Message::Ping),
        _ => return Ok(Message::Unknown { ty }),
    };
    let mut c = Cursor {
        b: body,
        what: name,
    };
    let m = match ty {
        ty::HELLO => {
            let node_key = c.take(32)?.try_into().expect("32 bytes");
            let nonce = c.u64()?;
            let set_size = c.varint()?;
            let flags = c.take(1)?[0];
            // Optional: a bottom-k sketch of the sender's set (k <= 32 hashes).
            if !c.b.len().is_multiple_of(8) || c.b.len() > 8 * MAX_SKETCH {
                return Err(WireError::Malformed(name));
            }
            let sketch = c.b;
            Message::Hello {
                sketch,
                node_key,
                nonce,
                set_size,
                flags,
            }
        }
        ty::SYMBOLS => {
            let epoch = c.varint()?;
            let first = c.varint()?;
            if !c.b.len().is_multiple_of(SYMBOL_LEN) || c.b.is_empty() {
                return Err(WireError::Malformed(name));
            }
            Message::Symbols {
                epoch,
                first,
                data: c.b,
            }
        }
        ty::IDS => {
            let epoch = c.varint()?;
            let total = c.varint()?;
            let first = c.varint()?;
            let n = (c.b.len() / LISTED_ID_LEN) as u64;
            if !c.b.len().is_multiple_of(LISTED_ID_LEN)
                || n == 0
                || total > MAX_LISTED
                || first.checked_add(n).is_none_or(|end| end > total)
            {
                return Err(WireError::Malformed(name));
            }
            Message::Ids {
                epoch,
                total,
                first,
                data: c.b,
            }
        }
        ty::RECON_DONE => {
            let m = Message::ReconDone {
                epoch: c.varint()?,
                used: c.varint()?,
            };
            c.end()?;
            m
        }
        ty::RECON_MORE => {
            let m = Message::ReconMore {
                epoch: c.varint()?,
                from: c.varint()?,
                count: c.varint()?,
            };
            c.end()?;
            m
        }
        ty::WANT => {
            let len = c.take(1)?[0];
            if !(1..=MAX_WANT_LEN).contains(&len)
                || c.b.is_empty()
                || !c.b.len().is_multiple_of(usize::from(len))
            {
                return Err(WireError::Malformed(name));
            }
            Message::Want { len, prefixes: c.b }
        }
        ty::MANIFEST => {
            if c.b.is_empty() {
                return Err(WireError::Malformed(name));
            }
            Message::Manifest {
                seq: None,
                bytes: c.b,
            }
        }
        ty::OFFER => {
            let seq = c.varint()?;
            if c.b.is_empty() {
                return Err(WireError::Malformed(name));
            }
            Message::Manifest {
                seq: Some(seq),
                bytes: c.b,
            }
        }
        ty::DONE => {
            let tag = c.take(1)?[0];
            let (seqs, n) = RangeSet::decode(c.b).ok_or(WireError::Malformed(name))?;
            c.take(n)?;
            c.end()?;
            if seqs.is_empty() || seqs.iter().count() > MAX_DONE_RANGES {
                return Err(WireError::Malformed(name));
            }
            Message::Done { tag, seqs }
        }
        ty::PIECE => {
            let r = c.bref()?;
            let offset = c.varint()?;
            if c.b.is_empty() {
                return Err(WireError::Malformed(name));
            }
            Message::Piece {
                r,
                offset,
                data: c.b,
            }
        }
        ty::PIECE_NEXT => {
            let offset = c.varint()?;
            if c.b.is_empty() {
                return Err(WireError::Malformed(name));
            }
            Message::PieceNext { offset, data: c.b }
        }
        ty::HAVE => {
            let r = c.bref()?;
            let (ranges, n) = RangeSet::decode(c.b).ok_or(WireError::Malformed(name))?;
            c.take(n)?;
            c.end()?;
            Message::Have { r, ranges }
        }
        ty::HAVE_ALL => {
            let r = c.bref()?;
            c.end()?;
            Message::HaveAll { r }
        }
        ty::NAMELESS => {
            let r = c.bref()?;
            c.end()?;
            Message::Nameless { r }
        }
        ty::ACK => {
            let largest = c.varint()?;
            let delay_us = c.varint()?;
            let first = c.varint()?;
            let mut high = largest;
            let mut low = high.checked_sub(first).ok_or(WireError::Malformed(name))?;
            let mut ranges = vec![(low, high)];
            while !c.b.is_empty() {
                if ranges.len() >= MAX_ACK_RANGES {
                    return Err(WireError::Malformed(name));
                }
                let gap = c.varint()?;
                let len = c.varint()?;
                // Next range ends `gap + 2` below this one's start (at least one missing).
                high = gap
                    .checked_add(2)
                    .and_then(|g| low.checked_sub(g))
                    .ok_or(WireError::Malformed(name))?;
                low = high.checked_sub(len).ok_or(WireError::Malformed(name))?;
                ranges.push((low, high));
            }
            Message::Ack(Ack {
                largest,
                delay_us,
                ranges,
            })
        }
        ty::FEC => {
            let r = c.bref()?;
            let symbol_size = c.varint()?;
            let esi = c.varint()?;
            if c.b.is_empty() || c.b.len() as u64 != symbol_size {
                return Err(WireError::Malformed(name));
            }
            Message::Fec {
                r,
                symbol_size,
                esi,
                data: c.b,
            }
        }
        ty::NEED => {
            let r = c.bref()?;
            let needed = c.varint()?;
            let last_esi = c.varint()?;
            c.end()?;
            Message::Need {
                r,
                needed,
                last_esi,
            }
        }
        ty::HEARD => {
            let pn = c.varint()?;
            c.end()?;
            Message::Heard { pn }
        }
        ty::SPACING => {
            let pn = c.varint()?;
            let bytes = c.varint()?;
            let gap_ns = c.varint()?;
            c.end()?;
            if bytes == 0 || gap_ns == 0 {
                return Err(WireError::Malformed(name));
            }
            Message::Spacing { pn, bytes, gap_ns }
        }
        ty::MISSED => {
            // The first range as (first, count - 1); each after it as (frames between
            // it and the one before, less one, count - 1).
            let mut ranges: Vec<(u64, u64)> = Vec::new();
            while !c.b.is_empty() {
                if ranges.len() >= MAX_MISSED_RANGES {
                    return Err(WireError::Malformed(name));
                }
                let skip = c.varint()?;
                let lo = match ranges.last() {
                    None => Some(skip),
                    Some(&(_, hi)) => hi.checked_add(skip).and_then(|v| v.checked_add(2)),
                };
                let lo = lo.ok_or(WireError::Malformed(name))?;
                let hi = lo
                    .checked_add(c.varint()?)
                    .ok_or(WireError::Malformed(name))?;
                ranges.push((lo, hi));
            }
            if ranges.is_empty() {
                return Err(WireError::Malformed(name));
            }
            Message::Missed { ranges }
        }
        ty::FRAG_NEXT => {
            if c.b.is_empty() || c.b.len() > MAX_FRAGMENTED {
                return Err(WireError::Malformed(name));
            }
            Message::FragNext { data: c.b }
        }
        ty::FRAG => {
            let id = c.varint()?;
            let offset = c.varint()?;
            let total = c.varint()?;
            let end = offset.checked_add(c.b.len() as u64);
            if c.b.is_empty() || total > MAX_FRAGMENTED as u64 || end.is_none_or(|e| e > total) {
                return Err(WireError::Malformed(name));
            }
            Message::Frag {
                id,
                offset,
                total,
                data: c.b,
            }
        }
        ty::FRAG_PARITY => {
            let id = c.varint()?;
            let total = c.varint()?;
            let count = c.varint()?;
            // At least two fragments, none empty: the parity is no longer than the
            // message, and each fragment is at least a byte.
            if c.b.is_empty()
                || total > MAX_FRAGMENTED as u64
                || count < 2
                || count > total
                || c.b.len() as u64 > total
            {
                return Err(WireError::Malformed(name));
            }
            Message::FragParity {
                id,
                total,
                count,
                data: c.b,
            }
        }
        _ => unreachable!("unknown types returned above"),
    };
    Ok(m)
}

/// Parses and validates a whole frame.
pub fn parse(frame: &[u8]) -> Result<(Header, Vec<Message<'_>>), WireError> {
    let (&v, rest) = frame.split_first().ok_or(WireError::Truncated)?;
    if v != VERSION {
        return Err(WireError::UnknownVersion(v));
    }
    let (&flags, mut rest) = rest.split_first().ok_or(WireError::Truncated)?;
    let short_tags = flags & F_ADDRESSED != 0 && flags & F_SHORT_TAGS != 0;
    let n = tags_len(flags);
    let t = rest.get(..n).ok_or(WireError::Truncated)?;
    rest = &rest[n..];
    let addr = match n {
        0 => None,
        4 => Some((
            u32::from(u16::from_le_bytes([t[0], t[1]])),
            u32::from(u16::from_le_bytes([t[2], t[3]])),
        )),
        _ => Some((
            u32::from_le_bytes(t[..4].try_into().expect("4 bytes")),
            u32::from_le_bytes(t[4..].try_into().expect("4 bytes")),
        )),
    };
    let (pn, n) = varint::get(rest).map_err(|_| WireError::Truncated)?;
    rest = &rest[n..];
    let header = Header {
        addr,
        pn,
        short_tags,
    };
    Ok((header, parse_messages(rest)?))
}

/// Whether `frame` (a skywave frame) ends its sender's over.
pub fn ends_over(frame: &[u8]) -> bool {
    over_end_to(frame, 0).is_some()
}

/// Whether `frame` ends its sender's over, and if so whether it hands the channel to
/// the node tagged `tag` (an unaddressed frame hands it to nobody in particular: `false`).
/// Reads only the header; `None` for anything that is not a skywave frame.
pub fn over_end_to(frame: &[u8], tag: u32) -> Option<bool> {
    match frame {
        [VERSION, flags, rest @ ..] if flags & F_OVER_END != 0 => {
            // The destination is the second of the two tags.
            match tags_len(*flags) {
                0 => Some(false),
                4 => {
                    let d = rest.get(2..4)?;
                    Some(u16::from_le_bytes([d[0], d[1]]) == short_tag(tag))
                }
                _ => {
                    let d = rest.get(4..8)?;
                    Some(u32::from_le_bytes(d.try_into().expect("4 bytes")) == tag)
                }
            }
        }
        _ => None,
    }
}

/// Parses a run of encoded messages (a frame's body, or a message put back together
/// from fragments).
pub fn parse_messages(mut rest: &[u8]) -> Result<Vec<Message<'_>>, WireError> {
    let mut msgs = Vec::new();
    while !rest.is_empty() {
        let ty = rest[0];
        let (len, n) = varint::get(&rest[1..]).map_err(|_| WireError::Malformed("length"))?;
        let start = 1 + n;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|&e| e <= rest.len())
            .ok_or(WireError::Malformed("length"))?;
        msgs.push(parse_message(ty, &rest[start..end])?);
        rest = &rest[end..];
    }
    Ok(msgs)
}

/// `(type, encoded size)` of each message of a well-formed frame (for accounting).
pub fn message_sizes(frame: &[u8]) -> Vec<(u8, usize)> {
    let mut out = Vec::new();
    for_each_message_size(frame, frame.len(), |ty, size| out.push((ty, size)));
    out
}

/// Calls `f(type, encoded size)` for each message of a frame of `total` bytes of which
/// `frame` is the start, holding every message header (a [`FrameWriter::finish_parts`]
/// head), without allocating (once per frame sent, for the accounting).
pub fn for_each_message_size(frame: &[u8], total: usize, mut f: impl FnMut(u8, usize)) {
    let Some(mut pos) = header_len(frame) else {
        return;
    };
    while pos < total.min(frame.len()) {
        let ty = frame[pos];
        let Ok((len, n)) = varint::get(&frame[pos + 1..]) else {
            break;
        };
        let size = 1 + n + len as usize;
        f(ty, size);
        pos += size;
    }
}

/// Builds one frame within a byte budget.
///
/// The data of the last PIECE or FEC message may be a shared [`Bytes`] handle (a slice of
/// a payload or a symbol held for many peers): it is kept apart as the frame's tail, and
/// copied in only if another message follows. [`FrameWriter::finish_parts`] returns the
/// frame as head and tail, so a driver writes both without the payload ever being copied
/// into a frame of its own.
#[derive(Debug)]
pub struct FrameWriter {
    buf: Vec<u8>,
    limit: usize,
    header_len: usize,
    tail: Bytes,
    /// The bundle the frame last named (see [`Message::PieceNext`]).
    named: Option<BundleRef>,
}

impl FrameWriter {
    pub fn new(header: Header, limit: usize) -> Self {
        let mut buf = Vec::with_capacity(limit.max(HEADER_MAX));
        let mut h = [0u8; HEADER_MAX];
        let n = header.encode(&mut h);
        buf.extend_from_slice(&h[..n]);
        let header_len = buf.len();
        Self {
            buf,
            limit,
            header_len,
            tail: Bytes::new(),
            named: None,
        }
    }

    /// Marks the frame as the last of its sender's over ([`over_end`]).
    pub fn end_over(&mut self) {
        self.buf[1] |= F_OVER_END;
    }

    /// A writer for one message of any size, to be sent in fragments
    /// ([`FrameWriter::message_bytes`]).
    pub fn unbounded() -> Self {
        Self {
            buf: Vec::new(),
            limit: MAX_FRAGMENTED,
            header_len: 0,
            tail: Bytes::new(),
            named: None,
        }
    }

    /// The encoded messages of an [`FrameWriter::unbounded`] writer.
    pub fn message_bytes(self) -> Vec<u8> {
        self.finish()
    }

    /// Bytes for messages in an empty frame of this budget.
    pub fn capacity(&self) -> usize {
        self.limit.saturating_sub(self.header_len)
    }

    /// Whether a message with a body of `body` bytes is too large for any frame of this
    /// budget (it must go in fragments).
    pub fn needs_fragments(&self, body: usize) -> bool {
        Self::cost(body) > self.capacity()
    }

    /// Bytes of the frame's own header.
    pub fn header_len(&self) -> usize {
        self.header_len
    }

    /// Bytes still free.
    pub fn remaining(&self) -> usize {
        self.limit.saturating_sub(self.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == self.header_len
    }

    pub fn len(&self) -> usize {
        self.buf.len() + self.tail.len()
    }

    /// A shared tail followed by another message is copied in.
    fn flush_tail(&mut self) {
        if !self.tail.is_empty() {
            let t = std::mem::take(&mut self.tail);
            self.buf.extend_from_slice(&t);
        }
    }

    /// Space a message with a body of `body` bytes takes.
    pub fn cost(body: usize) -> usize {
        1 + varint::len(body as u64) + body
    }

    /// Largest body that still fits.
    pub fn max_body(&self) -> usize {
        let r = self.remaining();
        if r < 2 {
            return 0;
        }
        let mut body = r - 2;
        while body > 0 && Self::cost(body) > r {
            body -= 1;
        }
        body
    }

    fn begin(&mut self, ty: u8, body: usize) -> bool {
        if Self::cost(body) > self.remaining() {
            return false;
        }
        if matches!(
            ty,
            ty::MANIFEST | ty::OFFER | ty::PIECE | ty::FRAG | ty::FRAG_NEXT | ty::FRAG_PARITY
        ) {
            // The receiver's "last named" moves to whatever this names.
            self.named = None;
        }
        self.flush_tail();
        self.buf.push(ty);
        varint::put(&mut self.buf, body as u64);
        true
    }

    pub fn hello(
        &mut self,
        node_key: &[u8; 32],
        nonce: u64,
        set_size: u64,
        flags: u8,
        sketch: &[u64],
    ) -> bool {
        let sketch = &sketch[..sketch.len().min(MAX_SKETCH)];
        let body = 32 + 8 + varint::len(set_size) + 1 + 8 * sketch.len();
        if !self.begin(ty::HELLO, body) {
            return false;
        }
        self.buf.extend_from_slice(node_key);
        self.buf.extend_from_slice(&nonce.to_le_bytes());
        varint::put(&mut self.buf, set_size);
        self.buf.push(flags);
        for h in sketch {
            self.buf.extend_from_slice(&h.to_le_bytes());
        }
        true
    }

    /// How many items of `each` bytes, at most `max`, a message with a `fixed`-byte
    /// head and those items fits in what is left of the frame.
    fn most_fitting(&self, fixed: usize, each: usize, max: usize) -> usize {
        let mut n = 0;
        while n < max && Self::cost(fixed + (n + 1) * each) <= self.remaining() {
            n += 1;
        }
        n
    }

    /// Writes as many symbols (from `first`) as fit, at most `max`; returns how many.
    pub fn symbols(
        &mut self,
        epoch: u64,
        first: u64,
        max: usize,
        mut sym: impl FnMut(u64) -> Symbol,
    ) -> usize {
        let fixed = varint::len(epoch) + varint::len(first);
        let n = self.most_fitting(fixed, SYMBOL_LEN, max);
        if n == 0 || !self.begin(ty::SYMBOLS, fixed + n * SYMBOL_LEN) {
            return 0;
        }
        varint::put(&mut self.buf, epoch);
        varint::put(&mut self.buf, first);
        for i in 0..n as u64 {
            sym(first + i).encode(&mut self.buf);
        }
        n
    }

    /// Writes as many entries of a listed set (from `first`, of `total`) as fit, at
    /// most `max`; returns how many.
    pub fn ids(
        &mut self,
        epoch: u64,
        total: u64,
        first: u64,
        max: usize,
        mut id: impl FnMut(u64) -> u64,
    ) -> usize {
        let fixed = varint::len(epoch) + varint::len(total) + varint::len(first);
        let n = self.most_fitting(fixed, LISTED_ID_LEN, max);
        if n == 0 || !self.begin(ty::IDS, fixed + n * LISTED_ID_LEN) {
            return 0;
        }
        varint::put(&mut self.buf, epoch);
        varint::put(&mut self.buf, total);
        varint::put(&mut self.buf, first);
        for i in 0..n as u64 {
            self.buf
                .extend_from_slice(&id(first + i).to_le_bytes()[..LISTED_ID_LEN]);
        }
        n
    }

    pub fn recon_done(&mut self, epoch: u64, used: u64) -> bool {
        if !self.begin(ty::RECON_DONE, varint::len(epoch) + varint::len(used)) {
            return false;
        }
        varint::put(&mut self.buf, epoch);
        varint::put(&mut self.buf, used);
        true
    }

    pub fn recon_more(&mut self, epoch: u64, from: u64, count: u64) -> bool {
        let body = varint::len(epoch) + varint::len(from) + varint::len(count);
        if !self.begin(ty::RECON_MORE, body) {
            return false;
        }
        varint::put(&mut self.buf, epoch);
        varint::put(&mut self.buf, from);
        varint::put(&mut self.buf, count);
        true
    }

    /// Writes as many of `prefixes` (each `len` bytes, 1-6) as fit; returns how many.
    pub fn want(&mut self, len: u8, prefixes: &[u64]) -> usize {
        if !(1..=MAX_WANT_LEN).contains(&len) {
            return 0;
        }
        let l = usize::from(len);
        let n = self.most_fitting(1, l, prefixes.len());
        if n == 0 || !self.begin(ty::WANT, 1 + l * n) {
            return 0;
        }
        self.buf.push(len);
        for p in &prefixes[..n] {
            self.buf.extend_from_slice(&p.to_le_bytes()[..l]);
        }
        n
    }

    pub fn manifest(&mut self, bytes: &[u8]) -> bool {
        if !self.begin(ty::MANIFEST, bytes.len()) {
            return false;
        }
        self.buf.extend_from_slice(bytes);
        true
    }

    /// A manifest numbered `seq` in the session (`OFFER`), or a plain `MANIFEST`.
    pub fn offer(&mut self, seq: Option<u64>, bytes: &[u8]) -> bool {
        let Some(seq) = seq else {
            return self.manifest(bytes);
        };
        if !self.begin(ty::OFFER, varint::len(seq) + bytes.len()) {
            return false;
        }
        varint::put(&mut self.buf, seq);
        self.buf.extend_from_slice(bytes);
        true
    }

    /// Body bytes of an `OFFER` (or `MANIFEST`, `seq` `None`) of a `len`-byte manifest.
    pub fn offer_body(seq: Option<u64>, len: usize) -> usize {
        seq.map_or(0, varint::len) + len
    }

    /// DONE: `seqs` (non-empty, at most [`MAX_DONE_RANGES`] ranges) for the peer
    /// incarnation `tag`.
    pub fn done(&mut self, tag: u8, seqs: &RangeSet) -> bool {
        let n = seqs.iter().count();
        if n == 0 || n > MAX_DONE_RANGES {
            return false;
        }
        let enc = seqs.encode();
        if !self.begin(ty::DONE, 1 + enc.len()) {
            return false;
        }
        self.buf.push(tag);
        self.buf.extend_from_slice(&enc);
        true
    }

    /// The manifest just written was `r`'s (or, first in a frame, the bundle the
    /// previous frame to the same receiver named last): its pieces may follow without
    /// naming it.
    pub fn named(&mut self, r: BundleRef) {
        self.named = Some(r);
    }

    /// Nothing is named any more: the next piece names its bundle.
    pub fn unname(&mut self) {
        self.named = None;
    }

    /// The bundle the frame names last so far (what a `PIECE_NEXT` would continue).
    pub fn last_named(&self) -> Option<BundleRef> {
        self.named
    }

    /// Bytes naming `r` in a piece header: none right after `r`'s manifest.
    fn ref_len(&self, r: &BundleRef) -> usize {
        if self.named == Some(*r) {
            0
        } else {
            r.encoded_len()
        }
    }

    /// A piece's type and header: `PIECE_NEXT` when the frame last named `r`.
    fn begin_piece(&mut self, r: &BundleRef, offset: u64, data: usize) -> bool {
        let next = self.named == Some(*r);
        let ty = if next { ty::PIECE_NEXT } else { ty::PIECE };
        if !self.begin(ty, self.ref_len(r) + varint::len(offset) + data) {
            return false;
        }
        if !next {
            r.put(&mut self.buf);
            // The receiver's "last named" is now `r`.
            self.named = Some(*r);
        }
        varint::put(&mut self.buf, offset);
        true
    }

    /// A `PIECE_NEXT` as is (re-encoding a parsed frame).
    pub fn piece_next(&mut self, offset: u64, data: &[u8]) -> bool {
        if data.is_empty() || !self.begin(ty::PIECE_NEXT, varint::len(offset) + data.len()) {
            return false;
        }
        varint::put(&mut self.buf, offset);
        self.buf.extend_from_slice(data);
        true
    }

    /// Room for piece data after the piece header for `r` at `offset`.
    pub fn piece_room(&self, r: &BundleRef, offset: u64) -> usize {
        let head = self.ref_len(r) + varint::len(offset);
        self.max_body().saturating_sub(head)
    }

    /// Writes a piece; `data` must fit ([`FrameWriter::piece_room`]) and be non-empty.
    pub fn piece(&mut self, r: &BundleRef, offset: u64, data: &[u8]) -> bool {
        if data.is_empty() || !self.begin_piece(r, offset, data.len()) {
            return false;
        }
        self.buf.extend_from_slice(data);
        true
    }

    pub fn have(&mut self, r: &BundleRef, ranges: &RangeSet) -> bool {
        let enc = ranges.encode();
        if !self.begin(ty::HAVE, r.encoded_len() + enc.len()) {
            return false;
        }
        r.put(&mut self.buf);
        self.buf.extend_from_slice(&enc);
        true
    }

    pub fn have_all(&mut self, r: &BundleRef) -> bool {
        self.bref_only(ty::HAVE_ALL, r)
    }

    pub fn nameless(&mut self, r: &BundleRef) -> bool {
        self.bref_only(ty::NAMELESS, r)
    }

    /// A message whose body is a bundle reference alone.
    fn bref_only(&mut self, ty: u8, r: &BundleRef) -> bool {
        if !self.begin(ty, r.encoded_len()) {
            return false;
        }
        r.put(&mut self.buf);
        true
    }

    pub fn ack(&mut self, ack: &Ack) -> bool {
        let mut body = Vec::with_capacity(32);
        varint::put(&mut body, ack.largest);
        varint::put(&mut body, ack.delay_us);
        let Some(&(low, high)) = ack.ranges.first() else {
            return false;
        };
        varint::put(&mut body, high - low);
        let mut prev_low = low;
        for &(l, h) in ack.ranges.iter().skip(1).take(MAX_ACK_RANGES - 1) {
            varint::put(&mut body, prev_low - h - 2);
            varint::put(&mut body, h - l);
            prev_low = l;
        }
        if !self.begin(ty::ACK, body.len()) {
            return false;
        }
        self.buf.extend_from_slice(&body);
        true
    }

    /// [`FrameWriter::piece`] with the data as a shared handle, kept as the frame's tail.
    pub fn piece_shared(&mut self, r: &BundleRef, offset: u64, data: Bytes) -> bool {
        if !self.begin_piece(r, offset, data.len()) {
            return false;
        }
        self.tail = data;
        true
    }

    /// [`FrameWriter::fec`] with the symbol as a shared handle, kept as the frame's tail.
    pub fn fec_shared(&mut self, r: &BundleRef, esi: u64, data: Bytes) -> bool {
        let size = data.len() as u64;
        if !self.begin(
            ty::FEC,
            r.encoded_len() + varint::len(size) + varint::len(esi) + data.len(),
        ) {
            return false;
        }
        r.put(&mut self.buf);
        varint::put(&mut self.buf, size);
        varint::put(&mut self.buf, esi);
        self.tail = data;
        true
    }

    pub fn fec(&mut self, r: &BundleRef, esi: u64, data: &[u8]) -> bool {
        let size = data.len() as u64;
        if !self.begin(
            ty::FEC,
            r.encoded_len() + varint::len(size) + varint::len(esi) + data.len(),
        ) {
            return false;
        }
        r.put(&mut self.buf);
        varint::put(&mut self.buf, size);
        varint::put(&mut self.buf, esi);
        self.buf.extend_from_slice(data);
        true
    }

    pub fn need(&mut self, r: &BundleRef, needed: u64, last_esi: u64) -> bool {
        if !self.begin(
            ty::NEED,
            r.encoded_len() + varint::len(needed) + varint::len(last_esi),
        ) {
            return false;
        }
        r.put(&mut self.buf);
        varint::put(&mut self.buf, needed);
        varint::put(&mut self.buf, last_esi);
        true
    }

    /// Writes as much of `msg[offset..]` (message `id`, `msg.len()` bytes in all) as
    /// fits, if at least `min` bytes of it (or all that is left) do; returns how much.
    pub fn frag(&mut self, id: u64, offset: usize, msg: &[u8], min: usize, next: bool) -> usize {
        let left = msg.len().saturating_sub(offset);
        if left == 0 {
            return 0;
        }
        let head = if next {
            0
        } else {
            varint::len(id) + varint::len(offset as u64) + varint::len(msg.len() as u64)
        };
        let n = self.max_body().saturating_sub(head).min(left);
        if n == 0 || (n < left && n < min) {
            return 0;
        }
        let data = &msg[offset..offset + n];
        let total = msg.len() as u64;
        let written = if next {
            self.frag_next(data)
        } else {
            self.frag_part(id, offset as u64, total, data)
        };
        if written { n } else { 0 }
    }

    /// Writes a fragment continuing the one that ended the sender's frame before
    /// ([`Message::FragNext`]).
    pub fn frag_next(&mut self, data: &[u8]) -> bool {
        if data.is_empty() || !self.begin(ty::FRAG_NEXT, data.len()) {
            return false;
        }
        self.buf.extend_from_slice(data);
        true
    }

    /// Writes one fragment as given.
    pub fn frag_part(&mut self, id: u64, offset: u64, total: u64, data: &[u8]) -> bool {
        let head = varint::len(id) + varint::len(offset) + varint::len(total);
        if data.is_empty() || !self.begin(ty::FRAG, head + data.len()) {
            return false;
        }
        varint::put(&mut self.buf, id);
        varint::put(&mut self.buf, offset);
        varint::put(&mut self.buf, total);
        self.buf.extend_from_slice(data);
        true
    }

    /// Writes the parity of a fragmented message ([`Message::FragParity`]); false if it
    /// does not fit whole.
    pub fn frag_parity(&mut self, id: u64, total: u64, count: u64, data: &[u8]) -> bool {
        let head = varint::len(id) + varint::len(total) + varint::len(count);
        if data.is_empty() || !self.begin(ty::FRAG_PARITY, head + data.len()) {
            return false;
        }
        varint::put(&mut self.buf, id);
        varint::put(&mut self.buf, total);
        varint::put(&mut self.buf, count);
        self.buf.extend_from_slice(data);
        true
    }

    /// Room for a parity's data in what is left of this frame.
    pub fn parity_room(&self, id: u64, total: u64, count: u64) -> usize {
        let head = varint::len(id) + varint::len(total) + varint::len(count);
        self.max_body().saturating_sub(head)
    }

    /// Fills the frame to exactly `len` bytes with a PADDING message; false if it cannot
    /// (one byte short of it, or already longer).
    pub fn pad_to(&mut self, len: usize) -> bool {
        let need = len.saturating_sub(self.len());
        if self.len() > len || need == 1 || len > self.limit {
            return false;
        }
        if need == 0 {
            return true;
        }
        let mut body = need - 2;
        while body > 0 && Self::cost(body) > need {
            body -= 1;
        }
        if Self::cost(body) != need || !self.begin(ty::PADDING, body) {
            return false;
        }
        self.buf.resize(self.buf.len() + body, 0);
        true
    }

    /// [`Self::pad_to`] past the frame's budget (a path MTU probe).
    pub fn pad_to_beyond(&mut self, len: usize) -> bool {
        let limit = self.limit;
        self.limit = self.limit.max(len);
        let padded = self.pad_to(len);
        if !padded {
            self.limit = limit;
        }
        padded
    }

    /// Whether the frame holds only messages whose loss costs nothing the next
    /// acknowledgement does not repair: data (pieces, FEC symbols) and acknowledgements.
    pub fn only_expendable(&self) -> bool {
        let mut only = true;
        for_each_message_size(&self.buf, self.len(), |t, _| {
            only &= matches!(
                t,
                ty::PIECE
                    | ty::PIECE_NEXT
                    | ty::FEC
                    | ty::ACK
                    | ty::SPACING
                    | ty::PADDING
                    | ty::PING
            );
        });
        only
    }

    /// PING (see [`Message::Ping`]).
    pub fn ping(&mut self) -> bool {
        self.begin(ty::PING, 0)
    }

    /// SPACING (see [`Message::Spacing`]).
    pub fn spacing(&mut self, pn: u64, bytes: u64, gap_ns: u64) -> bool {
        if bytes == 0
            || gap_ns == 0
            || !self.begin(
                ty::SPACING,
                varint::len(pn) + varint::len(bytes) + varint::len(gap_ns),
            )
        {
            return false;
        }
        varint::put(&mut self.buf, pn);
        varint::put(&mut self.buf, bytes);
        varint::put(&mut self.buf, gap_ns);
        true
    }

    pub fn heard(&mut self, pn: u64) -> bool {
        if !self.begin(ty::HEARD, varint::len(pn)) {
            return false;
        }
        varint::put(&mut self.buf, pn);
        true
    }

    /// MISSED: as many of `ranges` (inclusive packet numbers, rising, apart) as fit, at
    /// most [`MAX_MISSED_RANGES`]; returns how many went (0: none, or `ranges` is not
    /// rising and apart).
    pub fn missed(&mut self, ranges: &[(u64, u64)]) -> usize {
        let ranges = &ranges[..ranges.len().min(MAX_MISSED_RANGES)];
        let mut body = Vec::with_capacity(2 * ranges.len());
        let mut n = 0;
        let mut prev: Option<u64> = None;
        for &(lo, hi) in ranges {
            let skip = match prev {
                None => Some(lo),
                Some(p) => lo.checked_sub(p).and_then(|d| d.checked_sub(2)),
            };
            let (Some(skip), true) = (skip, hi >= lo) else {
                return 0;
            };
            let len = varint::len(skip) + varint::len(hi - lo);
            if Self::cost(body.len() + len) > self.remaining() {
                break;
            }
            varint::put(&mut body, skip);
            varint::put(&mut body, hi - lo);
            prev = Some(hi);
            n += 1;
        }
        if n == 0 || !self.begin(ty::MISSED, body.len()) {
            return 0;
        }
        self.buf.extend_from_slice(&body);
        n
    }

    /// Appends an already-encoded message (type, length, body).
    pub fn raw(&mut self, ty: u8, body: &[u8]) -> bool {
        if !self.begin(ty, body.len()) {
            return false;
        }
        self.buf.extend_from_slice(body);
        true
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.flush_tail();
        self.buf
    }

    /// The frame as head and shared tail (empty if none): `head ++ tail` is the frame.
    pub fn finish_parts(self) -> (Vec<u8>, Bytes) {
        (self.buf, self.tail)
    }
}

#[cfg(test)]
mod tests;
