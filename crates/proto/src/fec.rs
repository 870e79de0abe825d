//! Forward error correction of bundle payloads: RaptorQ (RFC 6330, the `raptorq` crate).
//!
//! One [`FecEncoder`] per bundle payload produces encoding symbols by ESI on demand;
//! one [`FecDecoder`] per bundle on each receiver takes symbols in any order, from any
//! peer, until it can rebuild the payload. [`FecPolicy`] decides per link whether a
//! transfer uses FEC or plain retransmission, and how much repair to send up front
//! (docs/protocol.md, section "FEC").
//!
//! # Layout: how an ESI names a symbol
//!
//! A payload of `len` bytes cut into symbols of `T` bytes has `Kt = ceil(len / T)`
//! source symbols. Both ends derive the whole code from `(len, T)` alone ([`Layout`]):
//! `len` comes from the signed manifest and `T` from the FEC message.
//!
//! - Source blocks: `Z = ceil(Kt / 8192)` blocks (at most 255; if 255 blocks of up to
//!   8192 symbols are not enough, blocks grow up to RaptorQ's limit of 56,403 symbols,
//!   and beyond that the payload is [`FecError::TooLarge`]). The symbols are split as
//!   RFC 6330 §4.4.1.2 does: the first `ZL` blocks have `KL` symbols, the other `ZS`
//!   have `KS = KL - 1`. There is no sub-blocking (`N = 1`, alignment 1): a symbol fits
//!   one frame, so a block never needs more working memory than its own symbols.
//! - ESI `e < Kt` is source symbol `e`: payload bytes `[e*T, (e+1)*T)`, the last one
//!   padded with zeros. Source symbols are in payload order, so a source symbol is the
//!   same bytes as a `PIECE` at offset `e*T`.
//! - ESI `e >= Kt` is repair symbol `j = e - Kt`: block `j mod Z`, repair number
//!   `j div Z` of that block (RaptorQ ESI `K_b + j div Z` inside the block). Repair
//!   symbols go round robin over the blocks, so any run of repair ESIs spreads evenly.
//!   Each block has `4*KL + 64` repair symbols; ESIs at or past
//!   [`Layout::esi_limit`] are out of range.
//!
//! The symbol size comes from the frame budget ([`symbol_size_for_budget`]): one FEC
//! message with the largest ESI of the layout fits the frame.

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use raptorq::{EncodingPacket, ObjectTransmissionInformation, PayloadId};
use raptorq::{SourceBlockDecoder, SourceBlockEncoder};
use skywave_bundle::varint;

use crate::wire::BundleRef;

#[cfg(test)]
mod tests;

/// Smallest symbol size: below this the per-message header outweighs the data.
pub const MIN_SYMBOL_SIZE: u16 = 8;
/// Largest symbol size (a symbol fits one frame; frames are far smaller).
pub const MAX_SYMBOL_SIZE: u16 = 16 * 1024;
/// Source symbols per block the layout aims for.
pub const BLOCK_TARGET: u32 = 8192;
/// RaptorQ's limit on source symbols per block (RFC 6330 `K'_max`).
pub const MAX_BLOCK_SYMBOLS: u32 = 56_403;
/// RaptorQ's limit on source blocks (8-bit source block number).
pub const MAX_BLOCKS: u32 = 255;
/// Symbols a decoder buffers per block beyond `K_b`. RaptorQ fails to decode from
/// `K + h` symbols with probability about `256^-(h+1)`; a block still undecodable with
/// this many extra symbols holds corrupt symbols.
pub const MAX_EXTRA_SYMBOLS: u32 = 8;
/// Frame header this module plans for in [`symbol_size_for_frame`]: version, flags, two
/// node tags and a packet number below 2^42 (a 6-byte varint).
pub const FRAME_HEADER_RESERVE: usize = 1 + 1 + 8 + 6;

/// Why an FEC operation failed. Nothing here panics on peer input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FecError {
    #[error("symbol size {0} outside {MIN_SYMBOL_SIZE}..={MAX_SYMBOL_SIZE}")]
    BadSymbolSize(usize),
    #[error("symbol of {got} bytes, the decoder uses {expected}")]
    SymbolSizeMismatch { expected: u16, got: usize },
    #[error("ESI {esi} out of range (limit {limit})")]
    EsiOutOfRange { esi: u64, limit: u64 },
    #[error("payload of {len} bytes too large for FEC at this symbol size")]
    TooLarge { len: u64 },
    #[error("frame budget of {budget} bytes too small for an FEC symbol")]
    FrameTooSmall { budget: usize },
    #[error("source block {block} did not decode from {symbols} symbols")]
    Undecodable { block: u8, symbols: u32 },
}

/// The code for one payload: a function of `(len, symbol_size)` only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    len: u64,
    symbol_size: u16,
    /// `Kt`.
    source_symbols: u64,
    /// `Z` (0 for an empty payload).
    blocks: u32,
    /// `KL`: symbols of each of the first `zl` blocks; the others have `KL - 1`.
    kl: u32,
    zl: u32,
    /// Repair symbols each block offers.
    repair_per_block: u32,
}

impl Layout {
    /// The layout of a `len`-byte payload in symbols of `symbol_size` bytes.
    pub fn new(len: u64, symbol_size: u16) -> Result<Self, FecError> {
        if !(MIN_SYMBOL_SIZE..=MAX_SYMBOL_SIZE).contains(&symbol_size) {
            return Err(FecError::BadSymbolSize(symbol_size as usize));
        }
        let t = u64::from(symbol_size);
        let kt = len.div_ceil(t);
        if kt == 0 {
            return Ok(Self {
                len,
                symbol_size,
                source_symbols: 0,
                blocks: 0,
                kl: 0,
                zl: 0,
                repair_per_block: 0,
            });
        }
        let z = kt
            .div_ceil(u64::from(BLOCK_TARGET))
            .min(u64::from(MAX_BLOCKS));
        let kl = kt.div_ceil(z);
        if kl > u64::from(MAX_BLOCK_SYMBOLS) {
            return Err(FecError::TooLarge { len });
        }
        // RFC 6330 partition: zl blocks of kl symbols, z - zl blocks of kl - 1.
        let ks = kt / z;
        let zl = kt - ks * z;
        let (kl, zl) = if zl == 0 { (ks, z) } else { (ks + 1, zl) };
        // Bounded above: kl <= MAX_BLOCK_SYMBOLS, z <= MAX_BLOCKS.
        let kl = kl as u32;
        Ok(Self {
            len,
            symbol_size,
            source_symbols: kt,
            blocks: z as u32,
            kl,
            zl: zl as u32,
            repair_per_block: 4 * kl + 64,
        })
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn symbol_size(&self) -> u16 {
        self.symbol_size
    }

    /// `Kt`: source symbols of the payload, ESIs `0..Kt`.
    pub fn source_symbols(&self) -> u64 {
        self.source_symbols
    }

    /// `Z`: source blocks.
    pub fn blocks(&self) -> u32 {
        self.blocks
    }

    /// Source symbols of block `b`.
    pub fn block_symbols(&self, b: u32) -> u32 {
        if b < self.zl { self.kl } else { self.kl - 1 }
    }

    /// ESI of the first source symbol of block `b`.
    pub fn block_start(&self, b: u32) -> u64 {
        let (kl, b) = (u64::from(self.kl), u64::from(b));
        let zl = u64::from(self.zl);
        if b <= zl {
            b * kl
        } else {
            zl * kl + (b - zl) * (kl - 1)
        }
    }

    /// Repair symbols each block offers.
    pub fn repair_per_block(&self) -> u32 {
        self.repair_per_block
    }

    /// One past the largest valid ESI.
    pub fn esi_limit(&self) -> u64 {
        self.source_symbols + u64::from(self.blocks) * u64::from(self.repair_per_block)
    }

    /// `(block, ESI inside the block)` of a global ESI.
    pub fn locate(&self, esi: u64) -> Result<(u32, u32), FecError> {
        let out = FecError::EsiOutOfRange {
            esi,
            limit: self.esi_limit(),
        };
        if esi >= self.esi_limit() {
            return Err(out);
        }
        let kl = u64::from(self.kl);
        if esi < self.source_symbols {
            let big = u64::from(self.zl) * kl;
            let (b, i) = if esi < big {
                (esi / kl, esi % kl)
            } else {
                let e = esi - big;
                (u64::from(self.zl) + e / (kl - 1), e % (kl - 1))
            };
            // b < blocks <= 255 and i < kl <= MAX_BLOCK_SYMBOLS.
            return Ok((b as u32, i as u32));
        }
        let j = esi - self.source_symbols;
        let z = u64::from(self.blocks);
        let b = (j % z) as u32;
        let r = (j / z) as u32; // < repair_per_block, checked by esi_limit above
        Ok((b, self.block_symbols(b) + r))
    }

    /// ESI of the `j`-th repair symbol (`j = 0, 1, ...`).
    pub fn repair_esi(&self, j: u64) -> u64 {
        self.source_symbols + j
    }

    /// Repair symbols for an up-front repair ratio, rounded up to whole rounds over
    /// the blocks and capped at what the layout offers.
    pub fn repair_count(&self, ratio: f64) -> u64 {
        if self.blocks == 0 || ratio.is_nan() || ratio <= 0.0 {
            return 0;
        }
        let offered = self.esi_limit() - self.source_symbols;
        // A float-to-int cast saturates: huge or infinite ratios give `offered`.
        let want = ((ratio * self.source_symbols as f64).ceil() as u64).min(offered);
        let z = u64::from(self.blocks);
        (want.div_ceil(z) * z).min(offered)
    }

    fn oti(&self) -> ObjectTransmissionInformation {
        // `Layout::new` checked RaptorQ's preconditions (blocks <= 255, KL <= 56403,
        // length far below 2^40), so `new`'s assertions hold.
        ObjectTransmissionInformation::new(self.len, self.symbol_size, self.blocks as u8, 1, 1)
    }
}

/// Bytes one FEC message (`0a`) takes in a frame.
pub fn message_len(r: &BundleRef, symbol_size: u16, esi: u64) -> usize {
    let t = usize::from(symbol_size);
    let body = 8 + varint::len(r.version) + varint::len(t as u64) + varint::len(esi) + t;
    1 + varint::len(body as u64) + body
}

/// The largest symbol size such that an FEC message of `r` with any ESI of the
/// resulting layout fits in `budget` bytes (the message space of a frame, e.g.
/// `FrameWriter::remaining()` of an empty frame). For a payload smaller than one
/// symbol the size shrinks to the payload, and symbols are evened out so the last
/// one carries little padding.
pub fn symbol_size_for_budget(
    budget: usize,
    r: &BundleRef,
    payload_len: u64,
) -> Result<u16, FecError> {
    let too_small = FecError::FrameTooSmall { budget };
    let mut t = budget.min(usize::from(MAX_SYMBOL_SIZE)) as u16;
    loop {
        if t < MIN_SYMBOL_SIZE {
            return Err(too_small);
        }
        let layout = Layout::new(payload_len, t)?;
        let max_esi = layout.esi_limit().saturating_sub(1);
        let need = message_len(r, t, max_esi);
        if need <= budget {
            break;
        }
        // Shrink by the excess (at least 1); converges in a few steps.
        let excess = (need - budget).min(usize::from(t)) as u16;
        t -= excess.max(1);
    }
    // Even out: the same number of symbols with the least padding.
    let kt = payload_len.div_ceil(u64::from(t));
    if kt > 0 {
        let even = payload_len.div_ceil(kt).max(u64::from(MIN_SYMBOL_SIZE));
        // even <= t <= MAX_SYMBOL_SIZE.
        t = even as u16;
    }
    Ok(t)
}

/// [`symbol_size_for_budget`] for a whole frame of `frame_len` bytes whose header is at
/// most [`FRAME_HEADER_RESERVE`] bytes.
pub fn symbol_size_for_frame(
    frame_len: usize,
    r: &BundleRef,
    payload_len: u64,
) -> Result<u16, FecError> {
    symbol_size_for_budget(
        frame_len.saturating_sub(FRAME_HEADER_RESERVE),
        r,
        payload_len,
    )
}

/// Encodes one bundle payload. Source symbols are slices of the payload (no copy);
/// a block's RaptorQ encoder is built once, when its first repair symbol is asked for,
/// and repair symbols are kept (up to one payload's worth) so a symbol sent to many
/// peers is computed once and shared as `Bytes`.
pub struct FecEncoder {
    layout: Layout,
    payload: Bytes,
    /// The last source symbol, zero-padded, if the payload does not end on a symbol.
    tail: Option<Bytes>,
    blocks: Vec<Option<SourceBlockEncoder>>,
    /// Repair symbol `j` at index `j`, for `j < cache_limit`.
    repair: Vec<Option<Bytes>>,
    cache_limit: u64,
}

impl fmt::Debug for FecEncoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FecEncoder")
            .field("layout", &self.layout)
            .field(
                "encoded_blocks",
                &self.blocks.iter().filter(|b| b.is_some()).count(),
            )
            .field("cached_repair", &self.repair.iter().flatten().count())
            .finish()
    }
}

impl FecEncoder {
    /// An encoder for `payload` in symbols of `symbol_size` bytes.
    pub fn new(payload: Bytes, symbol_size: u16) -> Result<Self, FecError> {
        let layout = Layout::new(payload.len() as u64, symbol_size)?;
        let t = usize::from(symbol_size);
        let tail = (!payload.len().is_multiple_of(t)).then(|| {
            let start = payload.len() - payload.len() % t;
            let mut last = vec![0u8; t];
            last[..payload.len() - start].copy_from_slice(&payload[start..]);
            Bytes::from(last)
        });
        Ok(Self {
            layout,
            payload,
            tail,
            blocks: (0..layout.blocks()).map(|_| None).collect(),
            repair: Vec::new(),
            cache_limit: layout.source_symbols(),
        })
    }

    /// An encoder whose symbols fit frames of `frame_len` bytes
    /// ([`symbol_size_for_frame`]).
    pub fn for_frame(r: &BundleRef, payload: Bytes, frame_len: usize) -> Result<Self, FecError> {
        let t = symbol_size_for_frame(frame_len, r, payload.len() as u64)?;
        Self::new(payload, t)
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn symbol_size(&self) -> u16 {
        self.layout.symbol_size()
    }

    /// `Kt`: ESIs `0..Kt` are the source symbols.
    pub fn source_symbols(&self) -> u64 {
        self.layout.source_symbols()
    }

    /// One past the largest valid ESI.
    pub fn esi_limit(&self) -> u64 {
        self.layout.esi_limit()
    }

    /// Builds every block's encoder now (otherwise done on first use).
    pub fn prepare(&mut self) {
        for b in 0..self.layout.blocks() {
            self.block(b);
        }
    }

    /// Encoding symbol `esi` (exactly `symbol_size` bytes).
    pub fn symbol(&mut self, esi: u64) -> Result<Bytes, FecError> {
        let (b, i) = self.layout.locate(esi)?;
        let kt = self.layout.source_symbols();
        let t = usize::from(self.layout.symbol_size());
        if esi < kt {
            let start = esi as usize * t;
            return Ok(match (&self.tail, esi + 1 == kt) {
                (Some(tail), true) => tail.clone(),
                _ => self.payload.slice(start..start + t),
            });
        }
        let j = esi - kt;
        if let Some(Some(s)) = self.repair.get(j as usize) {
            return Ok(s.clone());
        }
        let k = self.layout.block_symbols(b);
        let enc = self.block(b);
        let data = match enc.repair_packets(i - k, 1).pop() {
            Some(p) => Bytes::from(p.split().1),
            // `repair_packets(_, 1)` always returns exactly one packet.
            None => unreachable!("raptorq returned no repair packet"),
        };
        if j < self.cache_limit {
            let j = j as usize;
            if self.repair.len() <= j {
                self.repair.resize(j + 1, None);
            }
            self.repair[j] = Some(data.clone());
        }
        Ok(data)
    }

    /// The block encoder of `b`, built on first use.
    fn block(&mut self, b: u32) -> &SourceBlockEncoder {
        let layout = self.layout;
        let payload = &self.payload;
        self.blocks[b as usize].get_or_insert_with(|| {
            let t = usize::from(layout.symbol_size());
            let start = layout.block_start(b) as usize * t;
            let end = start + layout.block_symbols(b) as usize * t;
            let oti = layout.oti();
            if end <= payload.len() {
                SourceBlockEncoder::new(b as u8, &oti, &payload[start..end])
            } else {
                let mut data = vec![0u8; end - start];
                data[..payload.len() - start].copy_from_slice(&payload[start..]);
                SourceBlockEncoder::new(b as u8, &oti, &data)
            }
        })
    }
}

/// What a symbol did to a [`FecDecoder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Stored; more symbols are needed.
    Buffered,
    /// Not needed: a duplicate, or its block (or the whole payload) is already decoded.
    Redundant,
    /// This symbol completed the payload: [`FecDecoder::payload`] has it.
    Complete,
}

enum Block {
    /// No symbol yet: nothing allocated.
    Empty,
    Pending {
        dec: Box<SourceBlockDecoder>,
        seen: HashSet<u32>,
    },
    Done(Bytes),
}

/// Decodes one bundle payload from symbols in any order, from any peers.
///
/// The symbol size is fixed by the constructor or by the first valid symbol; a symbol
/// of another size is an error (a code with another symbol size is another code).
/// Memory is bounded: each block buffers at most `K_b + MAX_EXTRA_SYMBOLS` symbols and
/// is freed when it decodes, so the decoder holds at most the payload plus
/// `Z * MAX_EXTRA_SYMBOLS` symbols. The decoded payload is not trusted: the caller
/// checks it against the manifest's length and hash.
pub struct FecDecoder {
    len: u64,
    layout: Option<Layout>,
    blocks: Vec<Block>,
    pending: u32,
    received: u64,
    redundant: u64,
    buffered: u64,
    payload: Option<Bytes>,
}

impl fmt::Debug for FecDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FecDecoder")
            .field("len", &self.len)
            .field("layout", &self.layout)
            .field("pending_blocks", &self.pending)
            .field("received", &self.received)
            .field("redundant", &self.redundant)
            .field("complete", &self.payload.is_some())
            .finish()
    }
}

impl FecDecoder {
    /// A decoder for a `payload_len`-byte payload; the first valid symbol fixes the
    /// symbol size.
    pub fn new(payload_len: u64) -> Self {
        let mut d = Self {
            len: payload_len,
            layout: None,
            blocks: Vec::new(),
            pending: 0,
            received: 0,
            redundant: 0,
            buffered: 0,
            payload: None,
        };
        if payload_len == 0 {
            d.payload = Some(Bytes::new());
        }
        d
    }

    /// A decoder with the symbol size fixed up front.
    pub fn with_symbol_size(payload_len: u64, symbol_size: u16) -> Result<Self, FecError> {
        let mut d = Self::new(payload_len);
        d.start(Layout::new(payload_len, symbol_size)?);
        Ok(d)
    }

    fn start(&mut self, layout: Layout) {
        self.blocks = (0..layout.blocks()).map(|_| Block::Empty).collect();
        self.pending = layout.blocks();
        self.layout = Some(layout);
    }

    /// The payload length this decoder was made for.
    pub fn payload_len(&self) -> u64 {
        self.len
    }

    /// The symbol size, once fixed.
    pub fn symbol_size(&self) -> Option<u16> {
        self.layout.map(|l| l.symbol_size())
    }

    pub fn layout(&self) -> Option<&Layout> {
        self.layout.as_ref()
    }

    /// Symbols accepted (stored), not counting redundant ones.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Symbols ignored as duplicates or not needed.
    pub fn redundant(&self) -> u64 {
        self.redundant
    }

    /// Bytes of symbols held for blocks not yet decoded.
    pub fn buffered_bytes(&self) -> u64 {
        self.buffered
    }

    /// A lower bound on the symbols still needed (0 once complete; unknown, reported
    /// as 1, before the first symbol fixes the layout).
    pub fn needed(&self) -> u64 {
        if self.payload.is_some() {
            return 0;
        }
        let Some(layout) = self.layout else {
            return 1;
        };
        self.blocks
            .iter()
            .enumerate()
            .map(|(b, block)| match block {
                Block::Pending { seen, .. } => {
                    u64::from(layout.block_symbols(b as u32)).saturating_sub(seen.len() as u64)
                }
                Block::Empty => u64::from(layout.block_symbols(b as u32)),
                Block::Done(_) => 0,
            })
            .sum::<u64>()
            .max(1)
    }

    pub fn is_complete(&self) -> bool {
        self.payload.is_some()
    }

    /// The decoded payload, once complete (to be checked against the manifest).
    pub fn payload(&self) -> Option<&Bytes> {
        self.payload.as_ref()
    }

    /// Takes the decoded payload, once complete.
    pub fn into_payload(self) -> Option<Bytes> {
        self.payload
    }

    /// Accepts encoding symbol `esi`. Errors leave the decoder as it was, except
    /// [`FecError::Undecodable`], after which the decoder cannot complete (its block
    /// holds corrupt symbols; start again, ideally without the peer that sent them).
    pub fn push(&mut self, esi: u64, data: &[u8]) -> Result<Progress, FecError> {
        if self.payload.is_some() {
            self.redundant += 1;
            return Ok(Progress::Redundant);
        }
        let layout = match self.layout {
            Some(l) => {
                if data.len() != usize::from(l.symbol_size()) {
                    return Err(FecError::SymbolSizeMismatch {
                        expected: l.symbol_size(),
                        got: data.len(),
                    });
                }
                l
            }
            None => {
                let t =
                    u16::try_from(data.len()).map_err(|_| FecError::BadSymbolSize(data.len()))?;
                let l = Layout::new(self.len, t)?;
                // Check the ESI before the first symbol fixes the layout.
                l.locate(esi)?;
                self.start(l);
                l
            }
        };
        let (b, i) = layout.locate(esi)?;
        let k = layout.block_symbols(b);
        let t = u64::from(layout.symbol_size());
        let block = &mut self.blocks[b as usize];
        if let Block::Empty = block {
            // Allocated on the block's first symbol, so memory follows what arrived.
            *block = Block::Pending {
                dec: Box::new(SourceBlockDecoder::new(
                    b as u8,
                    &layout.oti(),
                    u64::from(k) * t,
                )),
                seen: HashSet::new(),
            };
        }
        let result = match block {
            Block::Empty => unreachable!("filled above"),
            Block::Done(_) => {
                self.redundant += 1;
                return Ok(Progress::Redundant);
            }
            Block::Pending { dec, seen } => {
                if seen.contains(&i) {
                    self.redundant += 1;
                    return Ok(Progress::Redundant);
                }
                if seen.len() as u32 >= k + MAX_EXTRA_SYMBOLS {
                    return Err(FecError::Undecodable {
                        block: b as u8,
                        symbols: seen.len() as u32,
                    });
                }
                seen.insert(i);
                self.received += 1;
                self.buffered += t;
                // `i` < 2^24 (locate bounds it by KL + 4*KL + 64), as PayloadId needs.
                let packet = EncodingPacket::new(PayloadId::new(b as u8, i), data.to_vec());
                match dec.decode(std::iter::once(packet)) {
                    Some(block) => Ok(block),
                    None if seen.len() as u32 >= k + MAX_EXTRA_SYMBOLS => {
                        Err(FecError::Undecodable {
                            block: b as u8,
                            symbols: seen.len() as u32,
                        })
                    }
                    None => return Ok(Progress::Buffered),
                }
            }
        };
        let block = result?;
        let held = match &self.blocks[b as usize] {
            Block::Pending { seen, .. } => seen.len() as u64,
            Block::Empty | Block::Done(_) => 0,
        };
        self.buffered -= held * t;
        self.blocks[b as usize] = Block::Done(Bytes::from(block));
        self.pending -= 1;
        if self.pending > 0 {
            return Ok(Progress::Buffered);
        }
        self.finish();
        Ok(Progress::Complete)
    }

    fn finish(&mut self) {
        let len = self.len as usize;
        let blocks = std::mem::take(&mut self.blocks);
        let payload = if let [Block::Done(only)] = blocks.as_slice() {
            only.slice(..len)
        } else {
            let mut out = Vec::with_capacity(len);
            for block in &blocks {
                if let Block::Done(data) = block {
                    out.extend_from_slice(data);
                }
            }
            out.truncate(len);
            Bytes::from(out)
        };
        self.payload = Some(payload);
    }
}

/// What the link looks like to one transfer ([`FecPolicy::plan`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PolicyInput {
    /// Measured frame loss rate, 0..1 (collisions included on shared media).
    pub loss: f64,
    /// Smoothed or minimum round-trip time.
    pub rtt: Duration,
    /// Link rate in bytes per second; 0 if unknown (airtime then counts as free).
    pub rate: u64,
    /// Half-duplex link: a report needs the channel turned around twice.
    pub half_duplex: bool,
    /// One turnaround on a half-duplex link.
    pub turnaround: Duration,
    /// Receivers that lack the bundle and hear the same transmissions (1 for unicast).
    pub receivers: u32,
    /// Payload bytes.
    pub payload_len: u64,
    /// Symbol size the transfer would use.
    pub symbol_size: u16,
    /// Other bytes queued for this link behind this transfer: on a full-duplex link
    /// they keep the link busy while a report is awaited.
    pub queued: u64,
}

/// The outcome of [`FecPolicy::plan`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Send encoding symbols (`FEC`) rather than `PIECE`s with retransmission.
    pub use_fec: bool,
    /// Repair symbols sent up front, as a fraction of the source symbols.
    pub repair_ratio: f64,
    /// The same as a count (whole rounds over the source blocks).
    pub repair_symbols: u64,
    /// Expected time to complete with retransmission only.
    pub arq_time: Duration,
    /// Expected time to complete with FEC and `repair_symbols` up front.
    pub fec_time: Duration,
}

/// The adaptive FEC rule (docs/protocol.md, "FEC"): compare the expected completion
/// time of retransmission (airtime of the resent pieces plus one report round per
/// retransmission round while the link would otherwise idle) with that of FEC (airtime
/// of the up-front repair plus a top-up round only if it falls short), and use FEC when
/// it is faster.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FecPolicy {
    /// Probability that the up-front repair suffices for every receiver.
    pub success: f64,
    /// Cap on the up-front repair ratio (more follows on request: the code is rateless).
    pub max_repair_ratio: f64,
    /// Symbols beyond `K` a block aims to receive (RaptorQ fails from `K + h` with
    /// probability about `256^-(h+1)`).
    pub extra_symbols: u32,
    /// Bytes of frame and message header per symbol, for airtime.
    pub frame_overhead: u32,
    /// Loss rates are clamped to at most this.
    pub max_loss: f64,
}

impl Default for FecPolicy {
    fn default() -> Self {
        Self {
            success: 0.99,
            max_repair_ratio: 1.0,
            extra_symbols: 1,
            frame_overhead: 32,
            max_loss: 0.9,
        }
    }
}

/// Symbols to send so that at least `k` arrive, at loss rate `p`, with probability
/// `1 − delta`: the smallest `m` with `m·q − zq·√(m·p·q) ≥ k` (normal approximation,
/// Gaussian tail bound for `zq`), rounded up.
fn symbols_to_deliver(k: f64, p: f64, delta: f64) -> f64 {
    let q = 1.0 - p;
    let zq = (2.0 * (1.0 / delta).ln()).sqrt();
    let spread = zq * (p * q).sqrt();
    let x = (spread + (spread * spread + 4.0 * q * k).sqrt()) / (2.0 * q);
    (x * x).ceil()
}

impl FecPolicy {
    /// Symbols to send so that a receiver still needing `needed` gets enough of them
    /// (plus `extra_symbols`) with probability `success` at loss rate `loss`: the
    /// top-up after a report, and the answer to a silence.
    pub fn top_up(&self, needed: u64, loss: f64) -> u64 {
        let p = if loss.is_nan() {
            0.0
        } else {
            loss.clamp(0.0, self.max_loss)
        };
        let k = needed as f64 + f64::from(self.extra_symbols);
        if p == 0.0 {
            return k.ceil() as u64;
        }
        symbols_to_deliver(k, p, (1.0 - self.success).clamp(1e-9, 0.5)) as u64
    }

    /// The plan for one transfer over one link.
    pub fn plan(&self, input: &PolicyInput) -> Plan {
        let none = Plan {
            use_fec: false,
            repair_ratio: 0.0,
            repair_symbols: 0,
            arq_time: Duration::ZERO,
            fec_time: Duration::ZERO,
        };
        let Ok(layout) = Layout::new(input.payload_len, input.symbol_size) else {
            return none;
        };
        if layout.source_symbols() == 0 {
            return none;
        }
        let p = if input.loss.is_nan() {
            0.0
        } else {
            input.loss.clamp(0.0, self.max_loss)
        };
        let q = 1.0 - p;
        let n = f64::from(input.receivers.max(1));
        let kt = layout.source_symbols() as f64;
        let z = f64::from(layout.blocks());

        // Airtime of `symbols` frames, in seconds.
        let frame = f64::from(input.symbol_size) + f64::from(self.frame_overhead);
        let airtime = |symbols: f64| {
            if input.rate == 0 {
                0.0
            } else {
                symbols * frame / input.rate as f64
            }
        };
        // A report round: the time the link idles waiting for a report.
        let mut round = input.rtt.as_secs_f64();
        if input.half_duplex {
            // The sender yields the channel to hear the report: nothing else fills it.
            round += 2.0 * input.turnaround.as_secs_f64();
        } else {
            let busy = if input.rate == 0 {
                0.0
            } else {
                input.queued as f64 / input.rate as f64
            };
            round = (round - busy).max(0.0);
        }

        // Retransmission: pieces are addressed, so each receiver gets its own copy of
        // the payload and of what it lost; a round is needed while any receiver misses
        // any piece. (FEC symbols, by contrast, serve every neighbour that hears them.)
        let arq_air = airtime(n * kt / q.max(1e-9));
        let mut rounds = 0.0;
        if p > 0.0 {
            for r in 1..=64 {
                let still = 1.0 - (1.0 - p.powi(r)).powf(kt * n);
                rounds += still;
                if still < 1e-6 {
                    break;
                }
            }
        }
        let arq = arq_air + rounds * round;

        // FEC: per block, enough symbols that each receiver gets K_b + h with the
        // target probability (normal approximation, Gaussian tail bound for z).
        let k_block = f64::from(layout.block_symbols(0)) + f64::from(self.extra_symbols);
        let delta = (1.0 - self.success).clamp(1e-9, 0.5) / (n * z);
        let per_block = symbols_to_deliver(k_block, p, delta);
        let wanted = ((per_block - f64::from(layout.block_symbols(0))).max(0.0) * z) / kt;
        let ratio = wanted.min(self.max_repair_ratio);
        let most = layout.repair_count(ratio);
        // Probability that a top-up round is still needed after `repair` up front.
        let fail = |repair: u64| {
            let m = (kt + repair as f64) / z;
            let margin = m * q - k_block;
            if p == 0.0 {
                if margin >= 0.0 { 0.0 } else { 1.0 }
            } else if margin > 0.0 {
                let d = margin / (m * p * q).sqrt();
                ((-d * d / 2.0).exp() * n * z).min(1.0)
            } else {
                1.0
            }
        };
        // The up-front repair with the least expected time: all of `most` where a round
        // is dear, less (down to none, leaving it to the top-ups) where airtime is.
        let step = u64::from(layout.blocks()).max(1);
        let (repair, fec) = (0..=most / step)
            .map(|i| {
                let r = (i * step).min(most);
                (r, airtime(kt + r as f64) + fail(r) * round)
            })
            .fold(
                (most, f64::INFINITY),
                |best, c| if c.1 < best.1 { c } else { best },
            );

        let secs =
            |s: f64| Duration::from_secs_f64(if s.is_nan() { 1e9 } else { s.clamp(0.0, 1e9) });
        // One receiver and no repair up front: that is retransmission by other means,
        // and pieces keep nothing in memory.
        let use_fec = p > 0.0 && fec < arq && (repair > 0 || n > 1.0);
        Plan {
            use_fec,
            repair_ratio: if use_fec { repair as f64 / kt } else { 0.0 },
            repair_symbols: if use_fec { repair } else { 0 },
            arq_time: secs(arq),
            fec_time: secs(fec),
        }
    }
}
