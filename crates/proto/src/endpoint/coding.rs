//! Transfers by forward error correction (docs/protocol.md, "FEC"): choosing them per
//! transfer, writing RaptorQ symbols into frames, and decoding symbols on receipt, from
//! the sender or overheard on a shared medium.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use bytes::Bytes;
use skywave_bundle::RangeSet;

use super::cc::PieceRef;
use super::peer::{OutFec, Outgoing};
use super::{Endpoint, FecMode, LinkId, LinkParams, Stats};
use crate::fec::{self, FecDecoder, FecEncoder, FecError, FecPolicy, Layout, Progress};
use crate::store::BundleStore;
use crate::wire::{BundleRef, FrameWriter};

/// Largest payload sent by FEC: the sender holds it and its repair symbols in memory,
/// and each receiver's decoder buffers up to its size. Larger bundles (and journals,
/// whose tail moves) use pieces and retransmission, which keep nothing in memory.
pub(crate) const FEC_MAX_LEN: u64 = 2 << 20;
/// Encoders kept at once (one per bundle and link).
const MAX_ENCODERS: usize = 32;
/// Decoders kept at once; past this the one fed longest ago is dropped (its transfer
/// goes on by source symbols and the sender's top-ups).
const MAX_DECODERS: usize = 16;

/// The sending side of one bundle's code on one link, shared by every peer there.
#[derive(Debug)]
pub(crate) struct FecTx {
    pub enc: FecEncoder,
    /// Next repair symbol (`j`): every peer on the link gets fresh ones.
    pub next_repair: u64,
}

/// One bundle being decoded, whoever the symbols come from.
#[derive(Debug)]
pub(crate) struct FecRx {
    pub dec: FecDecoder,
    pub fed_at: Duration,
    /// Highest ESI received, reported in NEED.
    pub last_esi: u64,
}

/// What the rule needs to know about the path to one peer.
pub(super) struct PathView {
    pub loss: f64,
    pub rtt: Duration,
    /// Bytes per second.
    pub rate: u64,
    pub params: LinkParams,
    /// The largest frame the path carries (the link's MTU, or on IP paths the path MTU
    /// found so far): symbols are sized to it.
    pub frame: usize,
    /// Bytes queued for this peer, all transfers.
    pub queued_total: u64,
}

/// Records an ESI as sent to (or heard by) the peer.
fn note_sent(f: &mut OutFec, esi: u64) {
    if f.sent.len() >= 4096 {
        f.sent.pop_front();
    }
    f.sent.push_back(esi);
}

/// Source symbol `esi` (of `t` bytes) was heard by the peer: its bytes count as sent,
/// unless the peer already reported holding them.
fn source_heard(held: &RangeSet, sent_ever: &mut RangeSet, length: u64, esi: u64, t: u16) {
    let t = u64::from(t);
    let (s, e) = (esi * t, ((esi + 1) * t).min(length));
    if !held.contains(s, e) {
        sent_ever.insert(s, e);
    }
}

/// Source symbols of `o` not wholly held by the peer.
pub(super) fn missing_source_symbols(o: &Outgoing, symbol_size: u16) -> u64 {
    let t = u64::from(symbol_size.max(1));
    let mut n = 0;
    let mut last: Option<u64> = None;
    for (s, e) in o.held.missing(o.length) {
        let (a, b) = (s / t, (e - 1) / t);
        let a = last.map_or(a, |l| a.max(l + 1));
        if b >= a {
            n += b - a + 1;
        }
        last = Some(b);
    }
    n
}

impl Endpoint {
    /// Bundles being decoded from FEC symbols (tests: the count stays bounded).
    #[doc(hidden)]
    pub fn fec_decoders(&self) -> usize {
        self.fec_rx.len()
    }

    /// Applies the FEC rule to `o` at its first data: FEC when the mode allows, the
    /// bundle can be coded in one block within [`FEC_MAX_LEN`], and the rule expects it
    /// to finish sooner than retransmission (or always, in [`FecMode::Always`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn decide_fec(
        mode: FecMode,
        policy: &FecPolicy,
        fec_tx: &mut HashMap<(LinkId, BundleRef), FecTx>,
        stats: &mut Stats,
        link: LinkId,
        o: &mut Outgoing,
        path: &PathView,
        receivers: u32,
        store: &mut dyn BundleStore,
    ) {
        o.fec_decided = true;
        if mode == FecMode::Off || o.journal || o.length == 0 || o.length > FEC_MAX_LEN {
            return;
        }
        let Ok(t) = fec::symbol_size_for_frame(path.frame, &o.r, o.length) else {
            return;
        };
        let Ok(layout) = Layout::new(o.length, t) else {
            return;
        };
        if layout.blocks() != 1 {
            return;
        }
        let remaining = o
            .length
            .saturating_sub(o.held.covered())
            .saturating_sub(o.in_flight.covered());
        let plan = policy.plan(&fec::PolicyInput {
            loss: path.loss,
            rtt: path.rtt,
            rate: path.rate,
            half_duplex: path.params.half_duplex,
            turnaround: Duration::ZERO,
            receivers,
            payload_len: o.length,
            symbol_size: t,
            queued: path.queued_total.saturating_sub(remaining),
        });
        if !(plan.use_fec || mode == FecMode::Always) {
            return;
        }
        let key = (link, o.r);
        if !fec_tx.contains_key(&key) {
            if fec_tx.len() >= MAX_ENCODERS {
                return;
            }
            // The store's own buffer if it lends one (no copy), else a copy.
            let payload = match store.read_shared(&o.id, o.r.version, 0, o.length as usize) {
                Some(b) if b.len() as u64 == o.length => b,
                _ => {
                    let mut buf = vec![0u8; o.length as usize];
                    if store.read(&o.id, o.r.version, 0, &mut buf) != buf.len() {
                        return;
                    }
                    Bytes::from(buf)
                }
            };
            let Ok(enc) = FecEncoder::new(payload, t) else {
                return;
            };
            fec_tx.insert(
                key,
                FecTx {
                    enc,
                    next_repair: 0,
                },
            );
        }
        stats.fec_transfers += 1;
        tracing::debug!(id = %o.id, loss = path.loss, receivers, repair = plan.repair_symbols, arq = ?plan.arq_time, fec = ?plan.fec_time, "transfer by FEC");
        o.fec = Some(Box::new(OutFec {
            symbol_size: t,
            kt: layout.source_symbols(),
            upfront: plan.repair_symbols,
            upfront_done: false,
            owed: 0,
            needed: layout.source_symbols(),
            covered_needed: layout.source_symbols(),
            need_reported: None,
            sent: VecDeque::new(),
            last_sent_at: Duration::ZERO,
            await_since: None,
        }));
    }

    /// Writes FEC symbols of `o` while they fit and are due: source symbols the peer
    /// lacks, once each, then the repair owed. Returns the ESIs written.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_fec_symbols(
        w: &mut FrameWriter,
        o: &mut Outgoing,
        tx: &mut FecTx,
        stats: &mut Stats,
        pieces: &mut Vec<PieceRef>,
        now: Duration,
    ) -> Vec<u64> {
        let mut sent = Vec::new();
        let Some(t) = o.fec.as_ref().map(|f| f.symbol_size) else {
            return sent;
        };
        let kt = tx.enc.source_symbols();
        loop {
            let source = o.next_source_symbol(t).filter(|&e| e < kt);
            let f = o.fec.as_mut().expect("checked above");
            let esi = match source {
                Some(e) => e,
                None => {
                    if !f.upfront_done {
                        f.upfront_done = true;
                        f.owed += f.upfront;
                    }
                    if f.owed == 0 {
                        if f.await_since.is_none() {
                            f.await_since = Some(now);
                        }
                        break;
                    }
                    let esi = tx.enc.layout().repair_esi(tx.next_repair);
                    if esi >= tx.enc.esi_limit() {
                        // Every repair symbol of the code is spent (a long outage, or a
                        // decoder fed symbols of another code): what the peer still
                        // lacks goes as pieces, with retransmission, as source symbols
                        // are sent once only.
                        tracing::debug!(id = %o.id, "FEC code spent; sending pieces instead");
                        o.fec = None;
                        break;
                    }
                    esi
                }
            };
            if fec::message_len(&o.r, t, esi) > w.remaining() {
                break;
            }
            let data = match tx.enc.symbol(esi) {
                Ok(d) => d,
                Err(e) => {
                    tracing::warn!(id = %o.id, "FEC symbol {esi}: {e}; sending pieces instead");
                    o.fec = None;
                    break;
                }
            };
            if !w.fec_shared(&o.r, esi, data) {
                break;
            }
            let f = o.fec.as_mut().expect("checked above");
            if source.is_some() {
                let start = esi * u64::from(t);
                let stop = (start + u64::from(t)).min(o.length);
                if o.in_flight.is_empty() {
                    o.progress_at = now;
                }
                o.in_flight.insert(start, stop);
                o.sent_ever.insert(start, stop);
                stats.piece_bytes_sent += stop - start;
                pieces.push((o.id, o.r.version, start, stop - start));
            } else {
                tx.next_repair += 1;
                f.owed -= 1;
                stats.fec_repair_bytes_sent += u64::from(t);
            }
            stats.fec_symbols_sent += 1;
            note_sent(f, esi);
            f.last_sent_at = now;
            f.await_since = None;
            o.last_sent_at = now;
            sent.push(esi);
        }
        sent
    }

    /// Symbols of `r` that went out on shared `link` to `to` were heard by every other
    /// neighbour there: peers receiving the same bundle by FEC count them as sent to
    /// them (source symbols are not sent to them again, repair lowers what they are owed).
    pub(super) fn overheard_by_others(
        &mut self,
        now: Duration,
        link: LinkId,
        to: [u8; 32],
        r: BundleRef,
        esis: &[u64],
    ) {
        for p in self
            .peers
            .values_mut()
            .filter(|p| p.link == link && p.key != to && p.established)
        {
            let Some(o) = p.out.iter_mut().find(|o| o.r == r) else {
                continue;
            };
            let Some(f) = o.fec.as_mut() else {
                if !o.fec_decided {
                    // Likely to go by FEC too: its source pass skips what was heard.
                    if let Some(tx) = self.fec_tx.get(&(link, r)) {
                        let t = tx.enc.symbol_size();
                        for &esi in esis.iter().filter(|&&e| e < tx.enc.source_symbols()) {
                            source_heard(&o.held, &mut o.sent_ever, o.length, esi, t);
                        }
                    }
                }
                continue;
            };
            for &esi in esis {
                if esi < f.kt {
                    source_heard(&o.held, &mut o.sent_ever, o.length, esi, f.symbol_size);
                } else if f.upfront_done {
                    f.owed = f.owed.saturating_sub(1);
                } else {
                    f.upfront = f.upfront.saturating_sub(1);
                }
                note_sent(f, esi);
            }
            f.last_sent_at = now;
            f.await_since = None;
        }
    }

    /// Reports (HAVE, NEED) on FEC transfers to `key` arrived in one frame. Symbols sent
    /// up to the last ESI the peer received have arrived or were lost (the loss
    /// estimate learns from them); those after it are on their way. The peer is owed
    /// what it still needs beyond what is on its way, with a margin for loss.
    pub(super) fn apply_fec_reports(&mut self, key: [u8; 32], refs: &[BundleRef]) {
        let Some(p) = self.peers.get_mut(&key) else {
            return;
        };
        let hint = self.links.get(&p.link).map_or(0.0, |l| l.params.loss_hint);
        for r in refs {
            let Some(o) = p.out.iter_mut().find(|o| o.r == *r) else {
                continue;
            };
            let Some(t) = o.fec.as_ref().map(|f| f.symbol_size) else {
                continue;
            };
            let from_have = missing_source_symbols(o, t);
            let f = o.fec.as_mut().expect("checked");
            let Some((needed, last_esi)) = f.need_reported.take() else {
                // No decoder there yet (the report confirms the manifest before any
                // symbol arrived) or any more (dropped): what the report says is held
                // is all that is known; silence is answered by the timer.
                f.needed = f.needed.min(from_have);
                continue;
            };
            // A decoder never needs more than the source symbols: a larger claim is a lie
            // that must not buy the rest of the code.
            let needed = needed.min(f.kt);
            f.needed = needed;
            let before = f.sent.len();
            f.sent.retain(|&x| x > last_esi);
            let resolved = (before - f.sent.len()) as u64;
            let received = f.covered_needed.saturating_sub(needed);
            p.loss.on_sent(
                resolved * u64::from(t),
                usize::from(t) + fec::FRAME_HEADER_RESERVE,
            );
            p.loss
                .on_lost(resolved.saturating_sub(received) * u64::from(t));
            f.covered_needed = needed;
            if f.upfront_done {
                let loss = p.loss.rate(hint);
                let coming = (f.sent.len() as f64 * (1.0 - loss)).floor() as u64;
                let short = needed.saturating_sub(coming);
                f.owed = if short == 0 {
                    0
                } else {
                    self.policy.top_up(short, loss)
                };
                if f.owed > 0 {
                    f.await_since = None;
                }
            }
        }
    }

    /// Encoders no transfer uses any more are dropped.
    pub(super) fn prune_fec(&mut self) {
        if self.fec_tx.is_empty() {
            return;
        }
        let peers = &self.peers;
        self.fec_tx.retain(|(link, r), _| {
            peers
                .values()
                .any(|p| p.link == *link && p.out.iter().any(|o| o.r == *r && o.fec.is_some()))
        });
    }

    /// An FEC symbol arrived from `key` (`overheard`: in a frame addressed to another
    /// neighbour on a shared medium). Source symbols are stored like pieces; every
    /// symbol feeds the bundle's decoder, whichever peer its transfer is with, and a
    /// decoded payload is written to the store, which verifies it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_fec(
        &mut self,
        now: Duration,
        key: [u8; 32],
        r: BundleRef,
        symbol_size: u64,
        esi: u64,
        data: &[u8],
        overheard: bool,
        store: &mut dyn BundleStore,
    ) {
        self.stats.fec_symbols_received += 1;
        if self.holds(&r) {
            // The answer to any symbol of a bundle already held.
            self.stats.duplicate_bytes_received += data.len() as u64;
            if !overheard && let Some(p) = self.peers.get_mut(&key) {
                super::handle::queue_have_all(p, r);
            }
            return;
        }
        let owner = if self
            .peers
            .get(&key)
            .is_some_and(|p| p.incoming.contains_key(&r))
        {
            Some(key)
        } else {
            self.peers
                .iter()
                .find(|(_, p)| p.incoming.contains_key(&r))
                .map(|(k, _)| *k)
        };
        let Some(owner) = owner else {
            self.stats.fec_symbols_dropped += 1;
            // A bundle we received and lost (its commit rolled back): its sender is told,
            // as for a piece (`store_piece`).
            if !overheard
                && self.lost.contains(&r.prefix)
                && let Some(p) = self.peers.get_mut(&key)
                && !p.nameless.contains(&r)
                && p.nameless.len() < super::handle::MAX_NAMELESS
            {
                p.nameless.push(r);
            }
            return;
        };
        let (len, journal) = {
            let m = self.peers[&owner].incoming[&r].manifest.manifest();
            (m.length, m.journal)
        };
        let layout = u16::try_from(symbol_size)
            .map_err(|_| FecError::BadSymbolSize(symbol_size as usize))
            .and_then(|t| Layout::new(len, t));
        let layout = match layout {
            Ok(l) if !journal && esi < l.esi_limit() && l.source_symbols() > 0 => l,
            _ => {
                self.stats.dropped_malformed += 1;
                return;
            }
        };
        let t = layout.symbol_size();
        let mut decoded = None;
        if len <= FEC_MAX_LEN && layout.blocks() == 1 {
            if !self.fec_rx.contains_key(&r) && self.fec_rx.len() >= MAX_DECODERS {
                let oldest = self
                    .fec_rx
                    .iter()
                    .min_by_key(|(_, x)| x.fed_at)
                    .map(|(k, _)| *k);
                if let Some(k) = oldest {
                    self.fec_rx.remove(&k);
                }
            }
            if !self.fec_rx.contains_key(&r)
                && let Ok(dec) = FecDecoder::with_symbol_size(len, t)
            {
                self.fec_rx.insert(
                    r,
                    FecRx {
                        dec,
                        fed_at: now,
                        last_esi: esi,
                    },
                );
            }
            if let Some(rx) = self.fec_rx.get_mut(&r) {
                rx.fed_at = now;
                rx.last_esi = rx.last_esi.max(esi);
                match rx.dec.push(esi, data) {
                    Ok(Progress::Complete) => decoded = rx.dec.payload().cloned(),
                    Ok(Progress::Buffered) => {}
                    Ok(Progress::Redundant) => {
                        self.stats.duplicate_bytes_received += data.len() as u64
                    }
                    Err(FecError::Undecodable { .. }) => {
                        tracing::debug!(?r, "FEC block undecodable; decoding again");
                        self.fec_rx.remove(&r);
                        self.stats.fec_symbols_dropped += 1;
                    }
                    Err(_) => self.stats.fec_symbols_dropped += 1,
                }
            }
        }
        if esi < layout.source_symbols() {
            // The same bytes as a piece at that offset (the last one unpadded).
            let start = esi * u64::from(t);
            let stop = (start + u64::from(t)).min(len);
            self.stats.piece_bytes_received += stop - start;
            self.store_piece(
                now,
                owner,
                r,
                start,
                &data[..(stop - start) as usize],
                !overheard && owner == key,
                store,
            );
        } else if let Some(p) = self.peers.get_mut(&owner) {
            // Nothing stored, but the sender wants to know what is still needed.
            super::handle::queue_have(p, r, now + self.cfg.report_interval);
        }
        if let Some(payload) = decoded {
            self.fec_rx.remove(&r);
            self.stats.fec_decoded += 1;
            let missing: Vec<(u64, u64)> = self
                .peers
                .get(&owner)
                .and_then(|p| p.incoming.get(&r))
                .map_or_else(Vec::new, |inc| inc.held.missing(len));
            for (s, e) in missing {
                if !self
                    .peers
                    .get(&owner)
                    .is_some_and(|p| p.incoming.contains_key(&r))
                {
                    break;
                }
                let part = &payload[s as usize..e as usize];
                self.store_piece(now, owner, r, s, part, false, store);
            }
        }
    }
}
