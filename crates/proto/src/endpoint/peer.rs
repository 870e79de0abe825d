//! Per-peer session state.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::time::Duration;

use bytes::Bytes;
use skywave_bundle::{BundleId, Priority, RangeSet, SignedManifest};

use super::LinkId;
use super::cc::Cc;
use crate::recon::riblt::{Decoder, Encoder};
use crate::wire::BundleRef;

/// A bundle being sent to a peer.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub id: BundleId,
    pub r: BundleRef,
    pub length: u64,
    pub journal: bool,
    pub manifest: Bytes,
    /// The peer confirmed it has the manifest (any HAVE, or a piece accepted).
    pub manifest_acked: bool,
    pub manifest_sent_at: Option<Duration>,
    /// The frame that carried the manifest, while that was its only copy (`None` once
    /// it went again, or in fragments): a `DONE` naming the offer proves that frame
    /// arrived (the peer learns the offer's number from it).
    pub manifest_pn: Option<u64>,
    /// Ranges the peer reported holding.
    pub held: RangeSet,
    /// Ranges sent and not yet reported held or declared lost.
    pub in_flight: RangeSet,
    /// Every range ever sent (to count resent bytes).
    pub sent_ever: RangeSet,
    /// Paced links: ranges in frames the peer acknowledged and has not yet reported
    /// held. A report built after the acknowledgement that still lacks one of them
    /// means the peer dropped it (e.g. a journal piece ahead of a lost manifest): it is
    /// sent again without waiting for a timeout.
    pub delivered: RangeSet,
    /// Links without acks: when each in-flight range left, so that a report which
    /// should have covered a range, and does not, marks it lost without a timeout.
    /// Each entry: `(start, end, sent at, packet number of its last frame)`.
    pub sends: VecDeque<(u64, u64, Duration, u64)>,
    /// Last time the peer reported progress (or the transfer started).
    pub progress_at: Duration,
    /// When anything of this bundle was last sent: reports answering it give RTT samples
    /// on links without acks.
    pub last_sent_at: Duration,
    /// Something of this bundle was sent twice: its reports give no RTT samples.
    pub resent: bool,
    /// Pushed before reconciliation said the peer lacks it (a guess, cancelled if wrong).
    pub speculative: bool,
    pub addressed_to_peer: bool,
    pub priority: Priority,
    pub queued_at: Duration,
    pub seq: u64,
    /// Its number in this session's offers to the peer (`OFFER`), given when its
    /// manifest first goes; the peer reports it whole by that number (`DONE`).
    pub offer_seq: Option<u64>,
    /// Resend timeouts of this transfer.
    pub timeouts: u8,
    /// The FEC rule has been applied to this transfer (at its first data).
    pub fec_decided: bool,
    /// Sent as RaptorQ symbols rather than pieces (boxed: most transfers are not, and a
    /// transfer's size is per-peer memory in a fan-out).
    pub fec: Option<Box<OutFec>>,
}

/// An outgoing transfer sent by FEC. Source symbols (the payload in `T`-byte slices) go
/// once each; then repair symbols, as many as the plan puts up front and afterwards as
/// many as the peer's reports say it still needs (plus a margin for loss). The repair
/// symbols come from a cursor shared by every peer on the link, so each is new to all
/// of them.
#[derive(Debug, Clone)]
pub(crate) struct OutFec {
    pub symbol_size: u16,
    pub kt: u64,
    /// Repair symbols up front, sent when the source pass ends.
    pub upfront: u64,
    pub upfront_done: bool,
    /// Repair symbols to send now.
    pub owed: u64,
    /// Symbols the peer last said it needs (NEED, or the source symbols a HAVE lacks).
    pub needed: u64,
    /// `needed` at the last report that covered every symbol sent (for the loss count).
    pub covered_needed: u64,
    /// A NEED of the frame being handled `(needed, last_esi)`, applied with the frame's
    /// reports.
    pub need_reported: Option<(u64, u64)>,
    /// ESIs sent to the peer (or heard by it) not yet accounted for by a report: those
    /// above the last ESI it reports receiving are still on their way.
    pub sent: VecDeque<u64>,
    pub last_sent_at: Duration,
    /// All symbols are out and a report is awaited since then.
    pub await_since: Option<Duration>,
}

/// A peer's loss rate, from data sent and found lost, decaying so that it follows the
/// path (collisions on shared media count); and the size of the frames it was measured
/// on, from which [`LossMeter::best_frame`] sizes frames.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LossMeter {
    sent: f64,
    lost: f64,
    /// Sum of bytes sent times the length of the frame each went in.
    exposure: f64,
}

impl LossMeter {
    /// Bytes after which old observations weigh half.
    const WINDOW: f64 = 64.0 * 1024.0;
    /// Weight of the link's expected loss, in bytes of observation: it rules until
    /// about this much has been sent, then measurements take over.
    const PRIOR: f64 = 4096.0;

    /// `bytes` of data went in a frame of `frame_len` bytes.
    pub fn on_sent(&mut self, bytes: u64, frame_len: usize) {
        self.sent += bytes as f64;
        self.exposure += bytes as f64 * frame_len as f64;
        if self.sent > Self::WINDOW {
            self.sent /= 2.0;
            self.lost /= 2.0;
            self.exposure /= 2.0;
        }
    }

    pub fn on_lost(&mut self, bytes: u64) {
        self.lost = (self.lost + bytes as f64).min(self.sent);
    }

    /// Enough data measured (the prior's worth) and none of it lost: the path is clean
    /// as far as anything we sent can tell.
    pub fn measured_clean(&self) -> bool {
        self.sent >= Self::PRIOR && self.lost == 0.0
    }

    /// The loss rate: measurements blended with `hint`, the link's expected loss.
    pub fn rate(&self, hint: f64) -> f64 {
        let hint = if hint.is_finite() {
            hint.clamp(0.0, 1.0)
        } else {
            0.0
        };
        ((self.lost + hint * Self::PRIOR) / (self.sent + Self::PRIOR)).clamp(0.0, 1.0)
    }

    /// The frame length, at most `budget`, that carries the most data through this
    /// loss, each frame paying `overhead` bytes (headers, the link's own per frame).
    ///
    /// Loss is taken as a hazard per byte on the air, `λ = −ln(1 − rate) / s̄` with `s̄`
    /// the frames it was measured on (`budget` before any): a bit error or a lost chunk
    /// of a modem's stream kills the frame it falls in, so a frame of `s` bytes arrives
    /// with probability `e^(−λs)`. What arrives per byte sent, `(1 − overhead/s)·e^(−λs)`,
    /// peaks at `s = √(overhead/λ)`. Where loss does not grow with the frame (a
    /// collision, a fade), measuring on smaller frames finds the same rate, `λ` falls,
    /// and frames settle at `overhead / rate` bytes: long before they cost much.
    pub fn best_frame(&self, hint: f64, overhead: usize, budget: usize) -> usize {
        let r = self.rate(hint).min(0.99);
        if r <= 0.0 || budget <= 1 {
            return budget;
        }
        let measured_on = if self.sent > 0.0 {
            self.exposure / self.sent
        } else {
            budget as f64
        };
        let hazard = -(1.0 - r).ln() / measured_on.max(1.0);
        let best = (overhead.max(1) as f64 / hazard).sqrt();
        let floor = crate::wire::MIN_FRAME.max(2 * overhead);
        if best >= budget as f64 {
            budget
        } else {
            (best as usize).max(floor).min(budget)
        }
    }
}

/// Sending order of queued transfers: bundles addressed to the peer first, then by
/// weight, then in queueing order. The weight is a bundle's size halved for every minute
/// it has waited (so large bundles are not starved), kept as `log2(size) + queued/60 s`:
/// the same order at every instant, so a queue sorted once stays sorted. Each step of
/// priority counts as [`PRIORITY_STEP_MINUTES`] of waiting: a message goes ahead of bulk
/// queued up to an hour before it, and bulk that has waited longer than that still
/// moves (aging, not starvation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Rank {
    /// Not addressed to the peer in the top bit, the weight (offset to be unsigned)
    /// below it: ordered as `(later, weight)`, in 8 bytes rather than 16, since a
    /// backlog of a million keeps one per entry twice.
    order: u64,
    seq: u64,
}

/// Minutes of waiting one step of priority is worth in [`Rank`].
pub(crate) const PRIORITY_STEP_MINUTES: f64 = 30.0;

impl Rank {
    pub fn new(
        addressed: bool,
        priority: Priority,
        size: u64,
        queued_at: Duration,
        seq: u64,
    ) -> Self {
        let w = (size.max(1) as f64).log2() + queued_at.as_secs_f64() / 60.0
            - PRIORITY_STEP_MINUTES * f64::from(priority as u8);
        // 62 bits of weight in 1/65536ths hold ±2^46 minutes: far beyond any uptime.
        const HALF: i64 = 1 << 62;
        let weight = ((w * 65536.0) as i64).clamp(-HALF, HALF - 1);
        Self {
            order: (u64::from(!addressed) << 63) | (weight + HALF) as u64,
            seq,
        }
    }
}

/// A transfer queued for a peer and not begun: only what orders it (its manifest is
/// read from the store when it begins, so a queue of a million costs ~100 B each).
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub id: BundleId,
    pub version: u64,
    pub length: u64,
    pub speculative: bool,
    pub queued_at: Duration,
    pub seq: u64,
}

/// What the backlog keeps of a [`Pending`] besides its rank (which holds `seq`): 56
/// bytes, with `speculative` in the top bit of the length.
#[derive(Debug, Clone, Copy)]
struct Slot {
    id: BundleId,
    version: u64,
    length_spec: u64,
    queued_ns: u64,
}

const SPECULATIVE_BIT: u64 = 1 << 63;

impl Slot {
    fn new(p: &Pending) -> Self {
        Self {
            id: p.id,
            version: p.version,
            length_spec: p.length.min(SPECULATIVE_BIT - 1)
                | if p.speculative { SPECULATIVE_BIT } else { 0 },
            queued_ns: u64::try_from(p.queued_at.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    fn length(&self) -> u64 {
        self.length_spec & !SPECULATIVE_BIT
    }

    fn pending(&self, rank: &Rank) -> Pending {
        Pending {
            id: self.id,
            version: self.version,
            length: self.length(),
            speculative: self.length_spec & SPECULATIVE_BIT != 0,
            queued_at: Duration::from_nanos(self.queued_ns),
            seq: rank.seq,
        }
    }
}

fn prefix(id: &BundleId) -> u64 {
    u64::from_le_bytes(id.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// Transfers queued for a peer beyond those under way ([`Peer::out`]), in sending
/// order. Every operation is O(log n), so that a peer lacking a million bundles costs no
/// more per bundle than one lacking ten; the transmit path works on the few under way.
/// Kept compact, since it is the one structure that grows with a whole store: the ranked
/// entries (72 B each), and an index from each id's first 8 bytes to its rank (24 B a
/// bucket). Ids that share those 8 bytes with one already queued, which only a peer
/// grinding for it would make, are indexed by their whole id in `clash`.
#[derive(Debug, Default)]
pub(crate) struct Backlog {
    order: BTreeMap<Rank, Slot>,
    index: HashMap<u64, Rank>,
    clash: HashMap<BundleId, Rank>,
    bytes: u64,
}

impl Backlog {
    /// The entry queued for `id`: by its prefix, else (a clash) by the whole id.
    fn find(&self, id: &BundleId) -> Option<(Rank, &Slot)> {
        if let Some(r) = self.index.get(&prefix(id))
            && let Some(s) = self.order.get(r).filter(|s| s.id == *id)
        {
            return Some((*r, s));
        }
        let r = self.clash.get(id)?;
        self.order.get(r).map(|s| (*r, s))
    }

    pub fn get(&self, id: &BundleId) -> Option<Pending> {
        self.find(id).map(|(r, s)| s.pending(&r))
    }

    /// Room for `n` more entries, made once: a table grown by doubling holds its old
    /// and new copies at once (for a million entries about 50 MB more, the node's peak).
    pub fn reserve(&mut self, n: usize) {
        self.index.reserve(n);
    }

    pub fn insert(&mut self, rank: Rank, p: Pending) {
        self.remove(&p.id);
        let slot = Slot::new(&p);
        self.bytes += slot.length();
        match self.index.entry(prefix(&p.id)) {
            Entry::Vacant(e) => {
                e.insert(rank);
            }
            Entry::Occupied(_) => {
                self.clash.insert(p.id, rank);
            }
        }
        self.order.insert(rank, slot);
    }

    pub fn remove(&mut self, id: &BundleId) -> Option<Pending> {
        let (r, _) = self.find(id)?;
        let slot = self.order.remove(&r)?;
        self.unindex(&slot.id, &r);
        self.bytes -= slot.length();
        Some(slot.pending(&r))
    }

    fn unindex(&mut self, id: &BundleId, r: &Rank) {
        let k = prefix(id);
        if self.index.get(&k) == Some(r) {
            self.index.remove(&k);
        } else {
            self.clash.remove(id);
        }
    }

    pub fn first_rank(&self) -> Option<Rank> {
        self.order.first_key_value().map(|(r, _)| *r)
    }

    pub fn pop_first(&mut self) -> Option<Pending> {
        let (r, slot) = self.order.pop_first()?;
        self.unindex(&slot.id, &r);
        self.bytes -= slot.length();
        Some(slot.pending(&r))
    }

    /// Drops the entries `keep` refuses.
    pub fn retain(&mut self, mut keep: impl FnMut(&Pending) -> bool) {
        let drop: Vec<BundleId> = self
            .order
            .iter()
            .filter(|(r, s)| !keep(&s.pending(r)))
            .map(|(_, s)| s.id)
            .collect();
        for id in drop {
            self.remove(&id);
        }
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Payload bytes queued.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn iter(&self) -> impl Iterator<Item = Pending> + '_ {
        self.order.iter().map(|(r, s)| s.pending(r))
    }
}

/// Short ids asked for by WANT and not yet answered by a manifest, with when each was
/// asked. An answer to any of them restarts every wait (the rest are on their way too):
/// kept as one time, not by touching each entry, so that a peer asked for a million
/// costs O(log n) per answer. Ids unanswered for the patience are asked again, and each
/// such round without an answer between doubles the patience: a sender slow to get
/// through a long queue is not flooded with repeats that only cost it work.
#[derive(Debug, Default)]
pub(crate) struct Asked {
    by_sid: HashMap<u64, Duration>,
    by_time: BTreeSet<(Duration, u64)>,
    answered_at: Duration,
    /// Rounds of asking again since the last answer.
    rounds: u32,
}

impl Asked {
    pub fn insert(&mut self, sid: u64, now: Duration) {
        if let Some(old) = self.by_sid.insert(sid, now) {
            self.by_time.remove(&(old, sid));
        }
        self.by_time.insert((now, sid));
    }

    /// A manifest answered `sid`: whether it had been asked for.
    pub fn answered(&mut self, sid: u64, now: Duration) -> bool {
        let Some(t) = self.by_sid.remove(&sid) else {
            return false;
        };
        self.by_time.remove(&(t, sid));
        self.answered_at = now;
        self.rounds = 0;
        true
    }

    fn wait(&self, patience: Duration) -> Duration {
        patience * 2u32.pow(self.rounds.min(6))
    }

    /// When the longest wait ends, with `patience` as the unbacked wait, and no wait
    /// starting before `from` (half duplex: the end of our over).
    pub fn due_at(&self, patience: Duration, from: Duration) -> Option<Duration> {
        self.by_time
            .first()
            .map(|&(t, _)| t.max(self.answered_at).max(from) + self.wait(patience))
    }

    /// Removes and returns the ids whose wait (from `from` at the earliest) has ended at
    /// `now`.
    pub fn take_stale(&mut self, now: Duration, patience: Duration, from: Duration) -> Vec<u64> {
        let Some(before) = now.checked_sub(self.wait(patience)) else {
            return Vec::new();
        };
        if self.answered_at.max(from) > before {
            return Vec::new();
        }
        let stale = self.take_asked_by(before);
        if !stale.is_empty() {
            self.rounds += 1;
        }
        stale
    }

    /// Removes and returns the ids asked for at or before `t` (whatever their wait):
    /// the peer's answer shows it never got those requests.
    pub fn take_asked_by(&mut self, t: Duration) -> Vec<u64> {
        let mut lost = Vec::new();
        while let Some(&(at, sid)) = self.by_time.first() {
            if at > t {
                break;
            }
            self.by_time.pop_first();
            self.by_sid.remove(&sid);
            lost.push(sid);
        }
        lost
    }

    pub fn clear(&mut self) {
        self.by_sid.clear();
        self.by_time.clear();
        self.rounds = 0;
    }

    pub fn len(&self) -> usize {
        self.by_sid.len()
    }

    /// Forgets `sid` (to ask for it again); whether it was awaited.
    pub fn remove(&mut self, sid: u64) -> bool {
        let Some(t) = self.by_sid.remove(&sid) else {
            return false;
        };
        self.by_time.remove(&(t, sid));
        true
    }
}

impl Outgoing {
    /// What is in flight is presumed lost, but for ranges the peer acknowledged (a
    /// paced link's `delivered`): those are not sent again.
    pub fn presume_in_flight_lost(&mut self) {
        let mut kept = std::mem::take(&mut self.in_flight);
        for (s, e) in self.delivered.missing(self.length) {
            kept.remove(s, e);
        }
        self.in_flight = kept;
    }

    /// The peer lacks the manifest (it was lost): it goes again, and every piece with
    /// it, since the peer dropped pieces it had no manifest for.
    pub fn resend_from_manifest(&mut self, now: Duration) {
        self.manifest_sent_at = None;
        self.in_flight = RangeSet::new();
        self.sends.clear();
        self.progress_at = now;
    }

    /// Where this transfer stands in the sending order.
    pub fn rank(&self) -> Rank {
        Rank::new(
            self.addressed_to_peer,
            self.priority,
            self.length + self.manifest.len() as u64,
            self.queued_at,
            self.seq,
        )
    }

    /// Nothing of it has been sent or confirmed: it can go back to the backlog as it is.
    pub fn unstarted(&self) -> bool {
        self.manifest_sent_at.is_none()
            && !self.manifest_acked
            && self.in_flight.is_empty()
            && self.fec.is_none()
    }

    /// Next range to send: the first byte neither held nor in flight.
    pub fn next_range(&self, max: u64) -> Option<(u64, u64)> {
        first_gap(&self.held, &self.in_flight, self.length, max)
    }

    /// Forgets the FEC state (a new session): the rule is applied again, and source
    /// symbols the peer does not report holding are sent again.
    pub fn reset_fec(&mut self) {
        if self.fec.take().is_some() {
            self.sent_ever = RangeSet::new();
        }
        self.fec_decided = false;
    }

    /// FEC source pass: the first source symbol neither held nor ever sent.
    pub fn next_source_symbol(&self, symbol_size: u16) -> Option<u64> {
        let mut covered = self.held.clone();
        for (s, e) in self.sent_ever.iter() {
            covered.insert(s, e);
        }
        let t = u64::from(symbol_size);
        // A symbol is needed if any byte of it is missing.
        covered.missing(self.length).first().map(|&(s, _)| s / t)
    }
}

/// The first byte below `length` in neither `a` nor `b`, and the end of that gap (at
/// most `max` long). A walk over both sorted range lists: called for every frame, so
/// nothing is copied.
pub(crate) fn first_gap(a: &RangeSet, b: &RangeSet, length: u64, max: u64) -> Option<(u64, u64)> {
    let mut a = a.iter().peekable();
    let mut b = b.iter().peekable();
    let mut pos = 0u64;
    loop {
        let mut moved = false;
        for it in [&mut a, &mut b] {
            while let Some(&(s, e)) = it.peek() {
                if s > pos {
                    break;
                }
                if e > pos {
                    pos = e;
                    moved = true;
                }
                it.next();
            }
        }
        if !moved {
            break;
        }
    }
    if pos >= length {
        return None;
    }
    let gap_end = [a.peek().map(|r| r.0), b.peek().map(|r| r.0)]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(length)
        .min(length);
    Some((pos, gap_end.min(pos.saturating_add(max))))
}

/// A bundle being received from a peer.
#[derive(Debug)]
pub(crate) struct Incoming {
    pub id: BundleId,
    pub version: u64,
    /// The sender's incarnation (its HELLO nonce) when the manifest came: a transfer
    /// from an earlier one (the sender restarted) is not under way any more.
    pub from_nonce: u64,
    /// Ranges held (as the store reported, plus pieces written since).
    pub held: RangeSet,
    pub manifest: SignedManifest,
    /// Journals: manifests of older versions not yet held, oldest first. Each is
    /// published as soon as its prefix is in, without waiting for this version.
    pub older: VecDeque<SignedManifest>,
}

/// Older journal versions remembered per transfer; past this, every other one is
/// forgotten (the prefixes stay spread over the transfer).
pub(crate) const MAX_OLDER: usize = 64;

impl Incoming {
    /// Remembers the manifest of an older version of this journal.
    pub fn remember_older(&mut self, m: SignedManifest) {
        let v = m.version();
        if v >= self.version || self.older.iter().any(|o| o.version() == v) {
            return;
        }
        let at = self.older.partition_point(|o| o.version() < v);
        self.older.insert(at, m);
        if self.older.len() > MAX_OLDER {
            // Thin out, keeping the newest.
            let n = self.older.len();
            let kept: VecDeque<SignedManifest> = std::mem::take(&mut self.older)
                .into_iter()
                .enumerate()
                .filter(|(i, _)| (n - 1 - i).is_multiple_of(2))
                .map(|(_, m)| m)
                .collect();
            self.older = kept;
        }
    }
}

/// Reconciliation progress of a session.
#[derive(Debug, Default)]
pub(crate) struct Recon {
    pub epoch: u64,
    /// Local set under this session's salt (kept current).
    pub enc: Encoder,
    /// Short id -> bundle, for the local set (ordered: WANTs name prefixes).
    pub shorts: BTreeMap<u64, (BundleId, u64)>,
    /// Streamer: next symbol index to send, and where the current burst ends.
    pub next_symbol: u64,
    pub burst_end: u64,
    pub stopped: bool,
    /// Decoder side.
    pub dec: Option<Decoder>,
    pub decoded: bool,
    pub done_to_send: bool,
    pub done_repeat: u32,
    /// A request owed to the streamer: `(from, count)` as in RECON_MORE.
    pub more_to_send: Option<(u64, u64)>,
    /// Symbol 0 already asked for by itself (not again until the silence timer).
    pub gap_asked: Option<u64>,
    /// Streamer: symbol ranges to send again before new ones.
    pub resend: VecDeque<(u64, u64)>,
    /// When the decoder last got a symbol (or the session started): silence past a
    /// timeout means our request for more was lost, so it is repeated.
    pub last_symbol_at: Duration,
    /// Requests repeated since a symbol last arrived: each doubles the wait.
    pub more_retries: u32,
    pub symbols_used: u64,
    /// Short ids added to the set during a round, applied when it ends.
    pub deferred: Vec<u64>,
    /// Short ids removed from the set during a round (expired), applied when it ends.
    pub deferred_removed: Vec<u64>,
    /// Bytes of reconciliation messages sent and received (for the metrics).
    pub bytes: u64,
    pub messages: u64,
    /// The round was not begun: one side's HELLO counted no bundles (see
    /// `start_session`). Cleared if the other side begins it anyway.
    pub skipped: bool,
    /// Either side may stream (a point-to-point half-duplex link): the side that gets
    /// the turn with no symbols heard streams its own, and each side decodes what it
    /// hears. With the roles fixed by key order, a decoder that got the first turn had
    /// nothing to say, and the streamer's symbols waited a whole round trip for the next.
    pub either: bool,
    /// The set (`shorts`, `enc`) is not built: a skipped round builds it only if it is
    /// begun after all (`Endpoint::build_recon_set`). A million bundles pushed to an
    /// empty peer thus cost no short-id map and no coding state (about 100 MB).
    pub unbuilt: bool,
    /// Held bundles this session leaves out of its set (sealed ones on a link that
    /// withholds them), by short id: never offered, and never asked for when the
    /// peer's set holds them.
    pub withheld: BTreeMap<u64, (BundleId, u64)>,
    /// Streamer: the set listed whole instead of coded (`IDS`), sorted, frozen when the
    /// round began; `next_symbol`, `burst_end` and `resend` then count its entries.
    pub list: Option<Vec<u64>>,
    /// Decoder: the streamer's listed set as it arrives.
    pub listed: Option<ListRx>,
}

/// A listed set (`IDS`) being received: entries arrive in any order, with gaps where a
/// frame was lost, until all `total` are in.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListRx {
    pub ids: Vec<u64>,
    pub got: Vec<bool>,
    pub count: usize,
}

impl ListRx {
    pub fn new(total: u64) -> Self {
        let n = total as usize;
        Self {
            ids: vec![0; n],
            got: vec![false; n],
            count: 0,
        }
    }

    pub fn total(&self) -> u64 {
        self.ids.len() as u64
    }

    /// Entry `i` arrived (one held already, or past the end, is ignored).
    pub fn insert(&mut self, i: u64, id: u64) {
        if let Some(g) = self.got.get_mut(i as usize).filter(|g| !**g) {
            *g = true;
            self.ids[i as usize] = id;
            self.count += 1;
        }
    }

    pub fn complete(&self) -> bool {
        self.count == self.ids.len()
    }

    /// The missing entries from the first gap to the last (one request covers them,
    /// resending the few between that did arrive): `(from, count)`.
    pub fn missing(&self) -> Option<(u64, u64)> {
        let from = self.got.iter().position(|g| !g)?;
        let last = self.got.iter().rposition(|g| !g)?;
        Some((from as u64, (last + 1 - from) as u64))
    }

    /// Whether the last entry came: the list's end went by, so any gap is a loss.
    pub fn end_heard(&self) -> bool {
        self.got.last().copied().unwrap_or(true)
    }
}

impl Recon {
    /// Whether a round is under way (symbols streaming or being decoded).
    pub fn active(&self, streamer: bool) -> bool {
        if self.skipped {
            false
        } else if streamer {
            !self.stopped
        } else {
            self.dec.is_some() && !self.decoded
        }
    }

    /// No symbol of the other side's has come this round (or we do not decode it).
    pub fn heard_none(&self) -> bool {
        self.dec.as_ref().is_none_or(|d| d.received() == 0)
            && self.listed.as_ref().is_none_or(|l| l.count == 0)
    }

    pub fn apply_deferred(&mut self) {
        for sid in std::mem::take(&mut self.deferred) {
            self.enc.insert(sid);
        }
        for sid in std::mem::take(&mut self.deferred_removed) {
            self.enc.remove(sid);
        }
    }
}

#[derive(Debug)]
pub(crate) struct Peer {
    pub key: [u8; 32],
    pub tag: u32,
    pub link: LinkId,
    /// The session's link withholds sealed bundles ([`super::Endpoint::withhold_sealed`]).
    pub no_sealed: bool,
    pub peer_nonce: u64,
    /// The peer's set sketch from its HELLO.
    pub peer_sketch: Vec<u64>,
    /// The peer's set count cells from its HELLO (see `estimate_set_difference`).
    pub peer_cells: Option<[u16; super::CELLS]>,
    pub salt: [u8; 32],
    /// We stream symbols (our key is the smaller).
    pub streamer: bool,
    pub established: bool,
    /// The peer has confirmed hearing our HELLO.
    pub heard_us: bool,
    pub hello_due: bool,
    pub hello_at: Duration,
    /// A due HELLO waits until then (random spread on shared media).
    pub hello_after: Duration,
    /// A HELLO addressed to this peer went out in this session.
    pub hello_sent: bool,
    /// The next HELLO to this peer carries our set's sketch: only the first of a session
    /// does (the peer sizes reconciliation from it); a keep-alive or a repeat within the
    /// session goes bare, so staying in touch costs ~50 B, not ~180.
    pub hello_sketch: bool,
    /// A HELLO to this peer went without our sketch (a keep-alive, a repeat): a peer
    /// that says it heard us may not hold our sketch.
    pub bare_hello: bool,
    pub recon: Recon,
    /// Short ids to ask the peer for, with the prefix length naming each (grouped by
    /// length), and ids we have asked for (with the time asked).
    pub wants_out: VecDeque<(u64, u8)>,
    /// Short ids of bundles whose manifest came while asking for them was still to be
    /// done (in `wants_out`, or the round still decoding): they are not asked for.
    pub wants_answered: HashSet<u64>,
    pub asked: Asked,
    /// Transfers under way (and the next few to begin), in no order: sorted by
    /// [`Outgoing::rank`] when a frame is filled.
    pub out: Vec<Outgoing>,
    /// Transfers queued behind those in `out`.
    pub backlog: Backlog,
    /// The rest of a whole set to queue for a peer that held nothing (id, version,
    /// length; the next at the end): a chunk at a time, see `Endpoint::queue_unqueued`.
    pub unqueued: Vec<(BundleId, u64, u64)>,
    pub out_seq: u64,
    /// Bundles the peer is known to hold (do not offer them again).
    pub peer_has: BTreeSet<(BundleId, u64)>,
    /// Journals: the longest prefix the peer is known to hold whole.
    pub journal_held: HashMap<BundleId, u64>,
    /// Transfers we receive from this peer.
    pub incoming: HashMap<BundleRef, Incoming>,
    /// Reports owed: HAVE_ALL first (never displaced), then HAVE.
    pub have_all: VecDeque<BundleRef>,
    /// HAVE_ALLs sent once, repeated in the next frame: losing one costs the sender a
    /// timeout and a resend, repeating it costs ~11 bytes.
    pub have_all_again: Vec<BundleRef>,
    /// The peer's HELLO said it numbers offers and takes `DONE` reports.
    pub numbers_offers: bool,
    /// The peer's HELLO said it takes a listed set (`IDS`) for coded symbols.
    pub takes_lists: bool,
    /// The peer's last HELLO that heard us took short tags from us (`HELLO_SHORT_TAGS`).
    pub takes_short_tags: bool,
    /// The next number our offers to the peer take in this session.
    pub next_offer_seq: u64,
    /// Offers the peer numbered in this session, by bundle: a report on one goes in a
    /// `DONE` by number instead of a `HAVE_ALL` (bounded; one forgotten is reported by
    /// `HAVE_ALL`, as to a peer that does not number them).
    pub offer_seqs: HashMap<BundleRef, u64>,
    /// The peer's offers reported whole by number in this session: each `DONE`
    /// repeats the latest of them.
    pub done_seqs: RangeSet,
    pub have: Vec<BundleRef>,
    pub have_due: Option<Duration>,
    /// Packet numbers received and not yet acknowledged (paced links).
    pub ack_ranges: Vec<(u64, u64)>,
    pub ack_largest_at: Duration,
    pub ack_due: Option<Duration>,
    pub unacked_eliciting: u32,
    /// The closest two consecutively numbered frames came since the last ACK: the
    /// second's number and length, and the time between them (told in SPACING with the
    /// ACK).
    pub rx_spacing: Option<(u64, u64, Duration)>,
    /// The last frame received (paced links): its number and when it came.
    pub rx_last: Option<(u64, Duration)>,
    /// Links without acks: the packet number of the last frame the peer sent us, echoed
    /// in HEARD ahead of our reports.
    pub heard_pn: Option<u64>,
    /// The packet number of the peer's last frame to us and the bundle it named last:
    /// a `PIECE_NEXT` first in the peer's next frame continues it.
    pub named_last: Option<(u64, BundleRef)>,
    pub cc: Cc,
    pub last_heard: Duration,
    /// Doublings of the resend timeout since the last clean round trip.
    pub backoff: u32,
    /// Half duplex, one peer each side: the peer answered our over with its own
    /// ([`Endpoint::link_heard`]).
    pub answered: Option<super::Answer>,
    /// When a gap in the peer's packet numbers was last found (frames of its lost).
    pub gap_at: Duration,
    /// Random stretch of the resend timeout, in [0, 0.25), drawn afresh at every
    /// timeout: two peers that lost frames together must not retry together again
    /// (on a shared channel they would collide again, for ever).
    pub rto_jitter: f64,
    /// Bytes sent since the peer last spoke (half duplex: an over's length).
    pub over_bytes: u64,
    /// Half duplex: frames sent lately (when, bytes), so that a frame heard from the
    /// peer ends our over only for what we sent before the peer sent it (see
    /// [`Peer::heard_over`]).
    pub sent_lately: VecDeque<(Duration, u64)>,
    /// The last frame to this peer that asked for an answer (a manifest, a piece, a
    /// symbol, a fragment of a long message).
    /// Half duplex: the peer answers only once our over has ended, so resend timers run
    /// from here (see [`Peer::waits_from`]).
    pub data_sent_at: Duration,
    /// Half duplex: frames sent lately (packet number, when), to time the peer's
    /// answers: its reports say which frame of ours they follow (`HEARD`), and the time
    /// since that frame was handed to the link is the round trip the resend timers
    /// allow, counted from the end of our over (see [`Peer::waits_from`]).
    pub sent_pns: VecDeque<(u64, Duration)>,
    /// The last `HEARD` taken as a round-trip sample (later frames of the peer's over
    /// name it again, later).
    pub sampled_heard: Option<u64>,
    /// Shared channels: when this over reached its length (the pause that lets the peer
    /// speak runs from then).
    pub over_full_at: Option<Duration>,
    /// Pauses in a row the peer let pass without a word: each doubles the next.
    pub pauses_unanswered: u32,
    /// Shared channels: the peer's last frame ended its over and handed the channel to
    /// us (`OVER_END`), so what we owe it need not wait for its silence.
    pub handed_us: bool,
    /// Frames built for this peer (to interleave pushes with reconciliation).
    pub frames: u64,
    /// A message too large for the link's frames, going out in fragments.
    pub frag_out: Option<super::frag::FragOut>,
    pub loss: LossMeter,
    /// Point-to-point links without acks: gaps in the peer's packet numbers not yet
    /// told to it (MISSED), oldest first.
    pub missed: Vec<(u64, u64)>,
    /// Point-to-point links without acks: what recent frames to the peer said that only
    /// they said, to say again if the peer tells us it missed them.
    pub notes: VecDeque<FrameNote>,
    /// Fragmented messages of ours whose parity went (newest last, a few): one of their
    /// frames missed is rebuilt by the peer, and not sent again.
    pub parity_sent: VecDeque<u64>,
    /// Links without acks: bundles whose pieces came without their manifest, to be
    /// told to the peer (NAMELESS).
    pub nameless: Vec<BundleRef>,
}

/// What a frame carried that nothing else repeats soon: reports (the sender waits a
/// resend timeout for them), requests (the asker waits twice that) and manifests (pieces
/// after a lost one are dropped).
#[derive(Debug, Default)]
pub(crate) struct FrameNote {
    pub pn: u64,
    pub reports: Vec<BundleRef>,
    pub wants: Vec<u64>,
    /// Each with when its send began (a later send of the same manifest is not lost).
    pub manifests: Vec<(BundleRef, Duration)>,
    /// The peer's frames it told as missed (MISSED): told once, so lost with it.
    pub missed: Vec<(u64, u64)>,
    /// The fragmented message with a parity whose fragment this frame carried.
    pub parity_frag: Option<u64>,
}

impl FrameNote {
    pub fn is_empty(&self) -> bool {
        self.reports.is_empty()
            && self.wants.is_empty()
            && self.manifests.is_empty()
            && self.missed.is_empty()
    }
}

/// Frames whose notes are kept: a MISSED names frames of our last over, and a 30 s over
/// at 9600 bit/s in a 256 B modem buffer is about 450 frames of 80 B. A few tens of
/// bytes each.
pub(crate) const MAX_NOTES: usize = 2048;
/// Gaps longer than this are told as their last frames only (a long silence is a
/// link outage, which the timers handle).
pub(crate) const MAX_MISSED_SPAN: u64 = 64;

/// [`Peer::waits_from`], for callers holding part of the peer borrowed.
pub fn wait_start(sent: Duration, data_sent_at: Duration, half_duplex: bool) -> Duration {
    if half_duplex {
        sent.max(data_sent_at)
    } else {
        sent
    }
}

impl Peer {
    /// Half duplex: a frame sent `len` bytes long at `now`.
    pub fn sent_in_over(&mut self, now: Duration, len: u64) {
        self.over_bytes += len;
        self.sent_lately.push_back((now, len));
    }

    /// Half duplex: the peer was heard at `now`, so it held the turn when it sent that
    /// frame, at least `one_way` ago. Our over so far is what we sent after that: a
    /// driver that knows when the turn comes back (an announced end of over) hands our
    /// next over to the modem before the peer's last frames arrive, and those bytes
    /// must count, or each over runs long by a modem buffer.
    pub fn heard_over(&mut self, now: Duration, one_way: Duration) {
        let from = now.saturating_sub(one_way);
        while self.sent_lately.front().is_some_and(|&(t, _)| t <= from) {
            self.sent_lately.pop_front();
        }
        self.over_bytes = self.sent_lately.iter().map(|&(_, n)| n).sum();
    }

    /// When a wait for the peer's answer to something sent at `sent` starts: on a
    /// half-duplex link not before our over ends (the peer cannot speak while we
    /// send; a timer from the send would count the rest of our over, up to
    /// `Config::max_over`).
    pub fn waits_from(&self, sent: Duration, half_duplex: bool) -> Duration {
        wait_start(sent, self.data_sent_at, half_duplex)
    }

    /// Half duplex: the peer's report follows our frame `pn` (its `HEARD`): the time
    /// since that frame was handed to the link, once per frame named.
    pub fn answer_time(&mut self, pn: u64, now: Duration) -> Option<Duration> {
        if self.sampled_heard.is_some_and(|s| s >= pn) {
            return None;
        }
        self.sampled_heard = Some(pn);
        while self.sent_pns.front().is_some_and(|&(n, _)| n < pn) {
            self.sent_pns.pop_front();
        }
        let &(n, at) = self.sent_pns.front()?;
        (n == pn).then(|| now.saturating_sub(at))
    }

    /// A new session or link: the frames sent so far answer nothing any more.
    pub fn forget_answers(&mut self) {
        self.sent_pns.clear();
        self.sampled_heard = None;
        self.data_sent_at = Duration::ZERO;
    }

    /// Half duplex: frame `pn` went to the link at `now` (see `sent_pns`).
    pub fn sent_pn(&mut self, pn: u64, now: Duration) {
        if self.sent_pns.len() >= 4096 {
            self.sent_pns.pop_front();
        }
        self.sent_pns.push_back((pn, now));
    }

    pub fn new(key: [u8; 32], link: LinkId, now: Duration, cc: Cc) -> Self {
        Self {
            key,
            tag: u32::from_le_bytes(key[..4].try_into().expect("4 bytes")),
            link,
            no_sealed: false,
            peer_nonce: 0,
            peer_sketch: Vec::new(),
            peer_cells: None,
            salt: [0; 32],
            streamer: false,
            established: false,
            heard_us: false,
            hello_due: true,
            hello_at: now,
            hello_sent: false,
            hello_sketch: true,
            bare_hello: false,
            hello_after: now,
            recon: Recon::default(),
            wants_out: VecDeque::new(),
            wants_answered: HashSet::new(),
            asked: Asked::default(),
            out: Vec::new(),
            backlog: Backlog::default(),
            unqueued: Vec::new(),
            out_seq: 0,
            peer_has: BTreeSet::new(),
            journal_held: HashMap::new(),
            incoming: HashMap::new(),
            have_all: VecDeque::new(),
            have_all_again: Vec::new(),
            numbers_offers: false,
            takes_lists: false,
            takes_short_tags: false,
            next_offer_seq: 0,
            offer_seqs: HashMap::new(),
            done_seqs: RangeSet::new(),
            have: Vec::new(),
            have_due: None,
            ack_ranges: Vec::new(),
            ack_largest_at: now,
            ack_due: None,
            unacked_eliciting: 0,
            rx_spacing: None,
            rx_last: None,
            heard_pn: None,
            named_last: None,
            cc,
            last_heard: now,
            backoff: 0,
            answered: None,
            gap_at: Duration::ZERO,
            rto_jitter: 0.0,
            over_bytes: 0,
            sent_lately: VecDeque::new(),
            data_sent_at: Duration::ZERO,
            sent_pns: VecDeque::new(),
            sampled_heard: None,
            over_full_at: None,
            pauses_unanswered: 0,
            handed_us: false,
            frames: 0,
            frag_out: None,
            loss: LossMeter::default(),
            missed: Vec::new(),
            notes: VecDeque::new(),
            parity_sent: VecDeque::new(),
            nameless: Vec::new(),
        }
    }

    /// Links without acks, point to point: frame `pn` arrived after `prev`; frames
    /// between them were lost, to be told to the peer (oldest dropped past the most a
    /// MISSED names: the peer's notes do not reach that far back anyway).
    pub fn note_gap(&mut self, prev: u64, pn: u64, now: Duration) {
        if pn <= prev.saturating_add(1) {
            return;
        }
        self.gap_at = now;
        let lo = (prev + 1).max(pn.saturating_sub(MAX_MISSED_SPAN));
        self.missed.push((lo, pn - 1));
        if self.missed.len() > crate::wire::MAX_MISSED_RANGES {
            self.missed.remove(0);
        }
    }

    /// Gaps we told in a frame the peer says it missed: to be told again, in order
    /// among those still to tell (the oldest dropped past what a MISSED names).
    pub fn retell_missed(&mut self, ranges: &[(u64, u64)]) {
        if ranges.is_empty() {
            return;
        }
        self.missed.extend_from_slice(ranges);
        self.missed.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.missed.len());
        for &(lo, hi) in &self.missed {
            match merged.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        let excess = merged.len().saturating_sub(crate::wire::MAX_MISSED_RANGES);
        merged.drain(..excess);
        self.missed = merged;
    }

    /// Keeps what frame `note.pn` said (see `notes`).
    pub fn keep_note(&mut self, note: FrameNote) {
        if note.is_empty() {
            return;
        }
        if self.notes.len() >= MAX_NOTES {
            self.notes.pop_front();
        }
        self.notes.push_back(note);
    }

    /// The notes of frames the peer says it missed, taken out.
    pub fn take_missed_notes(&mut self, ranges: &[(u64, u64)]) -> Vec<FrameNote> {
        let lost = |pn: u64| ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&pn));
        let (out, kept): (Vec<_>, Vec<_>) = self.notes.drain(..).partition(|n| lost(n.pn));
        self.notes = kept.into();
        out
    }

    /// Records frame `pn` of `len` bytes as received at `now` (read by the driver) and
    /// `arrived` (reached the host: a pair's gap), for acknowledgement and SPACING
    /// (paced links).
    pub fn record_pn(&mut self, pn: u64, len: u64, now: Duration, arrived: Duration) {
        if let Some((last, at)) = self.rx_last
            && pn == last + 1
            && arrived > at
        {
            let gap = arrived - at;
            // The pair with the highest rate (len / gap) wins.
            let closer = self.rx_spacing.is_none_or(|(_, b, g)| {
                u128::from(len) * g.as_nanos() > u128::from(b) * gap.as_nanos()
            });
            if closer {
                self.rx_spacing = Some((pn, len, gap));
            }
        }
        self.rx_last = Some((pn, arrived));
        let r = &mut self.ack_ranges;
        match r.iter_mut().find(|(lo, hi)| pn + 1 >= *lo && pn <= hi + 1) {
            Some(range) => {
                range.0 = range.0.min(pn);
                range.1 = range.1.max(pn);
            }
            None => r.push((pn, pn)),
        }
        r.sort_unstable_by_key(|a| std::cmp::Reverse(a.1));
        // Merge neighbours that now touch.
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(r.len());
        for &(lo, hi) in r.iter() {
            match merged.last_mut() {
                Some(last) if hi + 1 >= last.0 => last.0 = last.0.min(lo),
                _ => merged.push((lo, hi)),
            }
        }
        merged.truncate(crate::wire::MAX_ACK_RANGES);
        *r = merged;
        if r.first().is_some_and(|&(_, hi)| hi == pn) {
            self.ack_largest_at = now;
        }
    }
}

#[cfg(test)]
pub(super) mod tests {

    #[test]
    fn frames_shrink_where_loss_grows_with_their_length_and_not_where_it_does_not() {
        // Sends 640 KiB, 1 KiB at a time in frames of the meter's choice, each lost with
        // probability `loss(len)` (as expected values), and returns the settled size.
        let settle = |loss: &dyn Fn(f64) -> f64, budget: usize| {
            let mut m = LossMeter::default();
            let mut size = budget;
            for _ in 0..640 {
                size = m.best_frame(0.0, 20, budget);
                m.on_sent(1024, size);
                m.on_lost((1024.0 * loss(size as f64)).round() as u64);
            }
            size
        };
        // Nothing lost: the whole budget.
        assert_eq!(settle(&|_| 0.0, 250), 250);
        // A modem's stream losing 15% of its 64 B chunks: a frame of s bytes survives
        // with 0.85^(s/64); the best size is √(20/λ) ≈ 89 B (what arrives per byte sent
        // is within 2% of its best from 70 to 110 B).
        let chunks = |s: f64| 1.0 - 0.85f64.powf(s / 64.0);
        let s = settle(&chunks, 250);
        assert!((70..=110).contains(&s), "{s}");
        // At 2% of chunks the best size, 251 B, is the budget: frames stay near it.
        let s = settle(&|s| 1.0 - 0.98f64.powf(s / 64.0), 250);
        assert!((200..=250).contains(&s), "{s}");
        // 10% of frames lost whatever their length: frames settle near
        // overhead / rate = 200 B, not far below the 223 B budget.
        let s = settle(&|_| 0.1, 223);
        assert!((180..=223).contains(&s), "{s}");
        // Nothing below the protocol's floor, or twice the overhead.
        assert_eq!(settle(&|_| 0.9, 250), crate::wire::MIN_FRAME);
    }

    #[test]
    fn gaps_told_again_keep_their_order_and_merge() {
        let mut p = Peer::new([7; 32], 0, Duration::ZERO, Cc::new(&hf_params()));
        p.missed = vec![(20, 22), (40, 40)];
        p.retell_missed(&[(5, 6), (21, 25)]);
        assert_eq!(p.missed, vec![(5, 6), (20, 25), (40, 40)]);
        p.retell_missed(&[]);
        assert_eq!(p.missed.len(), 3);
        let many: Vec<(u64, u64)> = (0..100).map(|i| (100 + 3 * i, 100 + 3 * i)).collect();
        p.retell_missed(&many);
        assert_eq!(p.missed.len(), crate::wire::MAX_MISSED_RANGES);
        assert_eq!(p.missed.last(), Some(&(397, 397)), "the newest are kept");
    }

    #[test]
    fn priority_goes_ahead_of_an_hour_of_waiting_and_bulk_still_ages() {
        let min = |m: u64| Duration::from_secs(60 * m);
        let bulk_at_0 = Rank::new(false, Priority::Bulk, 100, min(0), 1);
        // A message written 59 minutes after bulk was queued goes first...
        assert!(Rank::new(false, Priority::High, 100, min(59), 2) < bulk_at_0);
        // ...one written 61 minutes after it does not: bulk is never starved for good.
        assert!(Rank::new(false, Priority::High, 100, min(61), 3) > bulk_at_0);
        // Normal bundles queued more than half an hour after bulk wait behind it.
        assert!(Rank::new(false, Priority::Normal, 100, min(29), 4) < bulk_at_0);
        assert!(Rank::new(false, Priority::Normal, 100, min(31), 5) > bulk_at_0);
        // Addressed to the peer still comes first.
        assert!(Rank::new(true, Priority::Bulk, 1 << 30, min(60), 6) < bulk_at_0);
        // Weights beyond the packed range keep their order at its ends.
        assert!(Rank::new(false, Priority::High, 1, min(0), 7) < bulk_at_0);
        assert!(Rank::new(false, Priority::Bulk, 100, min(u64::MAX / 120), 8) > bulk_at_0);
    }

    fn pending(id: BundleId, version: u64, length: u64, seq: u64, speculative: bool) -> Pending {
        Pending {
            id,
            version,
            length,
            speculative,
            queued_at: Duration::from_millis(seq * 7),
            seq,
        }
    }

    /// The backlog against a plain model: ids that share their first 8 bytes (a
    /// peer grinding for it) are found, replaced and removed like any other, and every
    /// field comes back as it went in.
    #[test]
    fn backlog_matches_a_model_with_clashing_prefixes() {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let op = (
            0u8..4,
            0u8..6,
            0u8..2,
            1u64..5,
            0u64..1 << 40,
            any::<bool>(),
        );
        runner
            .run(&proptest::collection::vec(op, 1..200), |ops| {
                let mut b = Backlog::default();
                let mut model: BTreeMap<Rank, Pending> = BTreeMap::new();
                let mut seq = 0;
                for (kind, n, tail, version, length, spec) in ops {
                    // Ids 0-5: pairs share the first 8 bytes and differ after them.
                    let mut raw = [0u8; 32];
                    raw[0] = n / 2;
                    raw[31] = n % 2 + tail * 2;
                    let id = BundleId(raw);
                    match kind {
                        0 | 1 => {
                            seq += 1;
                            let p = pending(id, version, length, seq, spec);
                            let r = Rank::new(spec, Priority::Normal, length, p.queued_at, seq);
                            model.retain(|_, q| q.id != id);
                            model.insert(r, p.clone());
                            b.insert(r, p);
                        }
                        2 => {
                            let want = model.iter().find(|(_, q)| q.id == id).map(|(r, _)| *r);
                            let got = b.remove(&id);
                            prop_assert_eq!(got.map(|q| q.seq), want.map(|r| r.seq));
                            model.retain(|_, q| q.id != id);
                        }
                        _ => {
                            let want = model.first_key_value().map(|(_, q)| q.seq);
                            prop_assert_eq!(
                                b.first_rank(),
                                model.first_key_value().map(|(r, _)| *r)
                            );
                            prop_assert_eq!(b.pop_first().map(|q| q.seq), want);
                            model.pop_first();
                        }
                    }
                    prop_assert_eq!(b.len(), model.len());
                    prop_assert_eq!(b.bytes(), model.values().map(|q| q.length).sum::<u64>());
                    for q in model.values() {
                        let got = b.get(&q.id).expect("queued id found");
                        prop_assert_eq!(
                            (
                                got.version,
                                got.length,
                                got.speculative,
                                got.queued_at,
                                got.seq
                            ),
                            (q.version, q.length, q.speculative, q.queued_at, q.seq)
                        );
                    }
                    let order: Vec<u64> = b.iter().map(|q| q.seq).collect();
                    prop_assert_eq!(order, model.values().map(|q| q.seq).collect::<Vec<_>>());
                }
                Ok(())
            })
            .unwrap();
    }

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn asking_again_backs_off_until_an_answer() {
        let ms = Duration::from_millis;
        let mut a = Asked::default();
        for sid in 0..1000 {
            a.insert(sid, ms(0));
        }
        let patience = ms(100);
        assert!(a.take_stale(ms(99), patience, Duration::ZERO).is_empty());
        assert_eq!(a.take_stale(ms(100), patience, Duration::ZERO).len(), 1000);
        // Asked again at 100 ms: the next round waits twice as long, then four times.
        for sid in 0..1000 {
            a.insert(sid, ms(100));
        }
        assert_eq!(a.due_at(patience, Duration::ZERO), Some(ms(300)));
        assert!(a.take_stale(ms(299), patience, Duration::ZERO).is_empty());
        assert_eq!(a.take_stale(ms(300), patience, Duration::ZERO).len(), 1000);
        for sid in 0..1000 {
            a.insert(sid, ms(300));
        }
        assert_eq!(a.due_at(patience, Duration::ZERO), Some(ms(700)));
        // An answer restarts every wait and the patience.
        assert!(a.answered(7, ms(500)));
        assert!(!a.answered(7, ms(500)));
        assert_eq!(a.due_at(patience, Duration::ZERO), Some(ms(600)));
        assert_eq!(a.len(), 999);
    }

    /// A half-duplex modem at 1475 bit/s (for other modules' tests too).
    pub(in crate::endpoint) fn hf_params() -> crate::LinkParams {
        crate::LinkParams {
            mtu: 256,
            shared: false,
            paced: false,
            half_duplex: true,
            rate_bps: Some(1475),
            rtt_hint: Duration::from_secs(10),
            loss_hint: 0.0,
            discover_mtu: false,
            frame_overhead: 0,
            handoff: Duration::ZERO,
            duty: None,
            reliable: false,
            turns: None,
        }
    }

    #[test]
    fn a_report_is_timed_once_from_the_frame_it_follows() {
        let ms = Duration::from_millis;
        let mut p = Peer::new([7; 32], 0, ms(0), Cc::new(&hf_params()));
        for pn in 10..20 {
            p.sent_pn(pn, ms(100 * pn));
        }
        // The peer heard up to frame 15 (sent at 1.5 s) and answers at 9 s.
        assert_eq!(p.answer_time(15, ms(9000)), Some(ms(7500)));
        // Later frames of its over name 15 again: no second, longer sample.
        assert_eq!(p.answer_time(15, ms(12_000)), None);
        assert_eq!(p.answer_time(14, ms(12_000)), None);
        // The next over follows frame 19.
        assert_eq!(p.answer_time(19, ms(20_000)), Some(ms(18_100)));
        // A frame not remembered gives none.
        assert_eq!(p.answer_time(40, ms(21_000)), None);
    }

    /// A pair read together (a driver reading datagrams in a batch) is timed by when
    /// each reached the host: the read time would make it no pair, or one far faster
    /// than the path.
    #[test]
    fn pairs_are_timed_by_their_arrival_not_their_read() {
        let us = Duration::from_micros;
        let mut p = Peer::new([7; 32], 0, us(0), Cc::new(&hf_params()));
        p.record_pn(1, 1400, us(10_000), us(9_200));
        p.record_pn(2, 1400, us(10_000), us(9_600));
        assert_eq!(p.rx_spacing, Some((2, 1400, us(400))));
        // Read 100 us apart after arriving 900 us apart: the closer read does not win.
        p.record_pn(3, 1400, us(10_100), us(10_500));
        assert_eq!(p.rx_spacing, Some((2, 1400, us(400))));
        // Frames that arrived together (one coalesced read) are no pair.
        p.rx_spacing = None;
        p.record_pn(4, 1400, us(10_200), us(10_500));
        assert_eq!(p.rx_spacing, None);
    }

    #[test]
    fn half_duplex_waits_run_from_the_end_of_our_over() {
        let ms = Duration::from_millis;
        let mut p = Peer::new([7; 32], 0, ms(0), Cc::new(&hf_params()));
        p.data_sent_at = ms(30_000);
        assert_eq!(p.waits_from(ms(1000), true), ms(30_000));
        assert_eq!(p.waits_from(ms(1000), false), ms(1000));
        assert_eq!(p.waits_from(ms(31_000), true), ms(31_000));
    }

    fn set(v: &[(u64, u64)]) -> RangeSet {
        let mut r = RangeSet::new();
        for &(s, l) in v {
            r.insert(s, s + l);
        }
        r
    }

    proptest! {
        #[test]
        fn first_gap_is_the_first_missing_range_of_the_union(
            a in proptest::collection::vec((0u64..200, 1u64..40), 0..8),
            b in proptest::collection::vec((0u64..200, 1u64..40), 0..8),
            length in 0u64..260,
            max in 1u64..300,
        ) {
            let (a, b) = (set(&a), set(&b));
            let mut union = a.clone();
            for (s, e) in b.iter() {
                union.insert(s, e);
            }
            let want = union
                .missing(length)
                .first()
                .map(|&(s, e)| (s, e.min(s.saturating_add(max))));
            prop_assert_eq!(first_gap(&a, &b, length, max), want);
        }
    }
}

/// A node key as four big-endian words: ordered exactly as its bytes, compared inline
/// (a `[u8; 32]` key costs a `memcmp` call per comparison, and the session map is
/// searched for every frame sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct PeerKey([u64; 4]);

impl From<&[u8; 32]> for PeerKey {
    fn from(k: &[u8; 32]) -> Self {
        let w = |i: usize| u64::from_be_bytes(k[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        Self([w(0), w(1), w(2), w(3)])
    }
}

/// Sessions by node key, in key order.
#[derive(Debug, Default)]
pub(crate) struct Peers(BTreeMap<PeerKey, Peer>);

impl Peers {
    pub fn get(&self, k: &[u8; 32]) -> Option<&Peer> {
        self.0.get(&PeerKey::from(k))
    }

    pub fn get_mut(&mut self, k: &[u8; 32]) -> Option<&mut Peer> {
        self.0.get_mut(&PeerKey::from(k))
    }

    /// The session with `k`, made by `new` if there is none.
    pub fn get_or_insert_with(&mut self, k: [u8; 32], new: impl FnOnce() -> Peer) -> &mut Peer {
        self.0.entry(PeerKey::from(&k)).or_insert_with(new)
    }

    pub fn values(&self) -> impl Iterator<Item = &Peer> {
        self.0.values()
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Peer> {
        self.0.values_mut()
    }

    pub fn keys(&self) -> impl Iterator<Item = &[u8; 32]> {
        self.0.values().map(|p| &p.key)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8; 32], &Peer)> {
        self.0.values().map(|p| (&p.key, p))
    }
}

impl std::ops::Index<&[u8; 32]> for Peers {
    type Output = Peer;

    fn index(&self, k: &[u8; 32]) -> &Peer {
        self.get(k).expect("a session with that key")
    }
}
