//! The protocol endpoint: one per node, driving a session per peer over any links.
//!
//! Inputs: [`Endpoint::handle_frame`], [`Endpoint::handle_timeout`],
//! [`Endpoint::bundle_stored`]. Outputs: [`Endpoint::poll_transmit`],
//! [`Endpoint::poll_timeout`], [`Endpoint::poll_event`]. Spurious extra calls are no-ops.

pub(crate) mod cc;
mod coding;
mod frag;
mod handle;
mod info;
mod peer;
mod queue;
use queue::{enqueue, enqueue_shared, promote};
mod pmtu;
mod session;
mod sketch;
mod suspect;
mod tags;
mod timers;
mod transmit;
mod withhold;

pub(crate) use sketch::CELLS;
use sketch::{
    SKETCH_K, estimate_set_difference, first_burst, sketch_hash, sketch_words, split_sketch,
};

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::time::Duration;

use bytes::Bytes;
use skywave_bundle::{BundleId, RangeSet, SignedManifest};

use crate::recon::riblt::{Decoder, Encoder};
use crate::store::BundleStore;
use crate::wire::{self, BundleRef, Message};
use cc::Cc;
use peer::Peer;

pub use info::{Direction, PeerInfo, ReconState, TransferInfo, TransferState};

/// A link as the driver numbers it.
pub type LinkId = usize;

/// What the driver tells the core about a link.
#[derive(Debug, Clone, Copy)]
pub struct LinkParams {
    /// Largest frame.
    pub mtu: usize,
    /// A shared medium: frames are addressed and heard by every neighbour.
    pub shared: bool,
    /// The core paces and controls congestion itself (IP paths). Otherwise the driver's
    /// back-pressure paces (modems, radios): it asks for a frame only when one fits.
    pub paced: bool,
    /// One direction at a time: bound each over so the other side gets its turn.
    pub half_duplex: bool,
    /// Nominal rate in bit/s, when known.
    pub rate_bps: Option<u64>,
    /// Expected round trip, used before one is measured and for resend timers.
    pub rtt_hint: Duration,
    /// Expected fraction of frames lost, 0 if unknown: the loss estimate starts from it
    /// (the FEC rule must choose before the first transfer has measured anything).
    pub loss_hint: f64,
    /// IP paths: the path's MTU is not known to be `mtu`: start at a size every path
    /// carries and probe up to `mtu` (see `pmtu`).
    pub discover_mtu: bool,
    /// Airtime each frame costs beyond its own bytes, counted in bytes at `rate_bps`:
    /// the preamble and sync word a radio sends first, and any parity its driver adds.
    /// The driver's turn-taking on a shared radio counts it in every slot.
    pub frame_overhead: usize,
    /// Longest time from a frame handed to the driver to its first bit on the air, the
    /// radio being idle: the transfer over a serial port and the host's scheduling. A
    /// station that keeps the channel starts its next frame this much after the last one
    /// ended, so others must wait longer than this before they take a quiet channel.
    pub handoff: Duration,
    /// The fraction of time this node may transmit on the link, when a duty-cycle rule
    /// limits it (EU 868 MHz LoRa: 1% or 10% of any hour): discovery beacons keep to a
    /// share of it (see `BEACON_SHARE`).
    pub duty: Option<f64>,
    /// The link delivers every frame whole and in order while it is up (TCP, an ARQ
    /// modem session), and its driver takes it down when it stops delivering. A frame
    /// not yet answered there is late, never lost: nothing is sent again on a timer
    /// (on an ARQ modem the answers wait for the peer's turn, minutes at HF rates, and
    /// resending would double the air), only after the link went down or on the
    /// peer's word (a report with a gap, `NAMELESS`, a new session).
    pub reliable: bool,
    /// Half duplex: what a change of turn costs, as the driver knows it. `None` where
    /// unknown (a modem that keeps its own turns): overs are then never shortened for
    /// urgent data (`Config::urgent_latency`).
    pub turns: Option<Turns>,
}

impl LinkParams {
    /// The duty-cycle fraction when one really limits this node (strictly between 0 and
    /// 1); `None` when the node may transmit at will.
    pub fn duty_limit(&self) -> Option<f64> {
        self.duty.filter(|&d| d > 0.0 && d < 1.0)
    }

    /// Where bytes on the air cost more than a few milliseconds of waiting: a link to
    /// one peer, or a channel under a duty-cycle rule. The rules that save bytes at the
    /// price of a round trip (a small bundle kept whole in the next frame, a sketch not
    /// sent twice) apply here; on a shared channel without a duty cycle they are left
    /// off, where the chains of radios with hidden terminals measured worse with them.
    pub fn air_is_dear(&self) -> bool {
        !self.shared || self.duty_limit().is_some()
    }

    /// A shared channel without acks: frames from one radio arrive in order or not at
    /// all, so a message may go on from the sender's frame before without naming itself
    /// again (PIECE_NEXT across frames, FRAG_NEXT). Not on IP paths: datagrams may be
    /// reordered.
    pub fn goes_on_across_frames(&self) -> bool {
        self.shared && !self.paced
    }

    /// A link to one peer without acks (a modem, a serial line): the peer's frames
    /// arrive in order and all are for us, so a gap in their numbers is frames lost
    /// (MISSED, NAMELESS; docs/protocol.md, "Frames a peer missed").
    pub fn numbered_in_order(&self) -> bool {
        !self.paced && !self.shared
    }
}

/// What a change of turn costs on a half-duplex link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turns {
    /// Air lost each time the turn changes: the radio's turnaround, plus the latency
    /// both ways where the driver cannot tell the other side of an over's end ahead of
    /// it.
    pub cost: Duration,
    /// The shortest over that costs no more than `cost`: an over not much longer than
    /// what the driver commits to the modem ahead of its end (the modem's queue and
    /// the bytes behind the over-end announcement) hands the turn over late.
    pub min_over: Duration,
}

/// Protocol settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// First HELLO retry; doubles up to `hello_max`.
    pub hello_interval: Duration,
    pub hello_max: Duration,
    /// Batching of HAVE reports on full-duplex links.
    pub report_interval: Duration,
    /// Longest wait before acknowledging a data frame on paced links.
    pub ack_delay: Duration,
    /// Half duplex: longest over before yielding the channel.
    pub max_over: Duration,
    /// Half duplex: how long a high-priority bundle written while the other side holds
    /// the turn should take to arrive. Overs are shortened for it where the link's turn
    /// cost lets that cost the bulk at most `URGENT_BULK_COST` (docs/protocol.md, "How
    /// long a message waits on a half-duplex link").
    pub urgent_latency: Duration,
    /// First burst of reconciliation symbols on half-duplex links.
    pub initial_burst: u64,
    /// When payloads are sent as RaptorQ symbols rather than pieces (docs/protocol.md, FEC).
    pub fec: FecMode,
}

/// Whether transfers may use forward error correction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FecMode {
    /// The adaptive rule decides per transfer from measured loss, RTT and receivers.
    #[default]
    Auto,
    /// Never: pieces and retransmission only (for comparison runs).
    Off,
    /// Every transfer that can be coded is, with the rule's repair amount (tests).
    Always,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            hello_interval: Duration::from_secs(1),
            hello_max: Duration::from_secs(60),
            report_interval: Duration::from_millis(20),
            ack_delay: Duration::from_millis(5),
            // A change of turn costs a turnaround where the drivers announce an over's
            // end a latency ahead (2 s on `hf-modem`), and up to a turnaround and a
            // latency where the modem's buffer is too small for that; the other side
            // waits about an over. hf-100x100: 361 s with 30 s overs, 375 s with 20 s
            // (and a message written behind the bulk waits 22-38 s instead of 16-36 s).
            // Measured again at c6f0a4e, seeds 1-3: hf-100x100 340-346 s with 30 s,
            // 351-358 s with 18 s (reconciliation 5.1 KB, 4.0-4.1 KB). A message
            // written on the demo at any time while the bulk is in flight arrives
            // 13.0-45.5 s later with 30 s, 8.8-34.7 s with 18 s (docs/protocol.md,
            // "How long a message waits on a half-duplex link").
            max_over: Duration::from_secs(30),
            urgent_latency: Duration::from_secs(30),
            initial_burst: 48,
            fec: FecMode::Auto,
        }
    }
}

/// Something the application may want to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    PeerUp {
        peer: [u8; 32],
        link: LinkId,
    },
    /// Reconciliation finished: `symbols` coded symbols were needed (for a listed set,
    /// its entries).
    Reconciled {
        peer: [u8; 32],
        symbols: u64,
        they_lack: usize,
        we_lack: usize,
    },
    /// A bundle arrived complete and verified.
    Received {
        id: BundleId,
        version: u64,
        from: [u8; 32],
    },
    /// A peer confirmed holding a bundle we sent.
    Delivered {
        id: BundleId,
        version: u64,
        to: [u8; 32],
    },
}

/// Counters.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub frames_sent: u64,
    pub bytes_sent: u64,
    pub frames_received: u64,
    pub bytes_received: u64,
    pub dropped_malformed: u64,
    pub dropped_unknown_version: u64,
    pub dropped_not_for_us: u64,
    pub dropped_unknown_peer: u64,
    /// Frames whose short sender tag names two nodes we know (`SHORT_TAGS`); the sender
    /// is told, by a HELLO, to use long tags.
    pub dropped_ambiguous_tag: u64,
    pub bad_manifests: u64,
    pub recon_bytes_sent: u64,
    pub recon_messages_sent: u64,
    pub piece_bytes_sent: u64,
    pub piece_bytes_resent: u64,
    pub piece_bytes_received: u64,
    pub duplicate_bytes_received: u64,
    /// Transfers reset because the store could not take them, or their bytes did not
    /// verify (`bad_payloads` of them).
    pub failed_transfers: u64,
    /// Received payloads that failed verification (their senders are suspected).
    pub bad_payloads: u64,
    /// HELLOs naming a node key other than the one the link's encryption proved.
    pub dropped_wrong_identity: u64,
    /// Manifests dropped because their sender had `MAX_INCOMING_PER_PEER` transfers open.
    pub incoming_limit: u64,
    /// Offers of new transfers from a peer the application has paused
    /// ([`Endpoint::pause_offers_from`]: its budget is spent), not confirmed.
    pub paused_offers: u64,
    /// Offers turned down for lack of room (quota, disk), each asked for again later.
    pub offers_refused_no_room: u64,
    /// Offers of a suspect version turned down (a blamed peer within its backoff, or a
    /// second source while one fills the copy).
    pub suspect_offers_refused: u64,
    pub manifests_sent: u64,
    pub manifests_resent: u64,
    /// Times data in flight was presumed lost for want of a report.
    pub resend_timeouts: u64,
    /// Gaps in a peer's packet numbers told to it (MISSED; links without acks).
    pub missed_frames_told: u64,
    /// Frames of ours a peer said it missed whose reports, requests or manifests went
    /// again at once.
    pub missed_frames_repaired: u64,
    /// Manifests sent again because the peer said their pieces came without them.
    pub nameless_resent: u64,
    /// Messages put together from a parity, one fragment having been lost (FRAG_PARITY).
    pub fragments_rebuilt: u64,
    /// Fragments that could not be placed: past their message's end, or a `FRAG_NEXT`
    /// whose frame before was lost (its message is then lost too, and sent again).
    pub fragments_dropped: u64,
    pub bundles_received: u64,
    pub bundles_delivered: u64,
    /// Bytes sent per message type (index = type code), headers included.
    pub sent_by_type: [u64; crate::wire::TYPES],
    /// Transfers the FEC rule chose to send as RaptorQ symbols.
    pub fec_transfers: u64,
    /// FEC symbols sent (source and repair), and bytes of repair symbols among them.
    pub fec_symbols_sent: u64,
    pub fec_repair_bytes_sent: u64,
    /// FEC symbols received (overheard ones included), and those dropped: for a bundle
    /// not being received, or refused by the decoder.
    pub fec_symbols_received: u64,
    pub fec_symbols_dropped: u64,
    /// Bundles completed by decoding (rather than by their source symbols alone).
    pub fec_decoded: u64,
    /// Bundles named by a peer's WANT that its link withholds (sealed bundles on a link
    /// that must not carry encryption): never sent.
    pub withheld_wants_refused: u64,
    /// Pieces in flight sent again because the peer, holding the manifest, asked for the
    /// bundle again after they should have arrived (a WANT by the whole short id).
    pub want_resends: u64,
    /// Transfers sent again because the peer answered the over that carried them
    /// without reporting them (half-duplex links, one peer each side).
    pub answered_resends: u64,
    /// Requests (short ids in a `WANT`) asked again at once because the peer answered
    /// the over that carried them with nothing (half-duplex links, one peer each side).
    pub answered_wants: u64,
    /// Sealed manifests offered on a link that withholds them: not taken (answered as
    /// held, so the sender stops offering).
    pub withheld_offers_refused: u64,
}

impl Stats {
    /// Bytes of reconciliation sent: HELLO, SYMBOLS, IDS, RECON_DONE, RECON_MORE and
    /// WANT.
    pub fn recon_bytes(&self) -> u64 {
        use crate::wire::ty;
        [
            ty::HELLO,
            ty::SYMBOLS,
            ty::IDS,
            ty::RECON_DONE,
            ty::RECON_MORE,
            ty::WANT,
        ]
        .iter()
        .map(|&t| self.sent_by_type[t as usize])
        .sum()
    }

    fn count_frame(&mut self, t: &Transmit) {
        self.frames_sent += 1;
        self.bytes_sent += t.len() as u64;
        // Re-walk the messages just built to attribute bytes to types.
        crate::wire::for_each_message_size(&t.head, t.len(), |ty, len| {
            self.sent_by_type[(ty as usize).min(crate::wire::TYPES - 1)] += len as u64;
        });
    }
}

/// A frame to send: `head` then `tail`. The tail, when not empty, is a shared handle on
/// payload bytes or an FEC symbol (the data of the frame's last message), so a payload
/// sent to many peers is never copied into a frame per peer: a driver writes both parts
/// (vectored I/O, or one copy into its own send buffer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    pub head: Vec<u8>,
    pub tail: Bytes,
}

impl Transmit {
    pub fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the whole frame to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        out.extend_from_slice(&self.tail);
    }

    /// The frame in one buffer (no copy when there is no tail).
    pub fn into_vec(self) -> Vec<u8> {
        if self.tail.is_empty() {
            return self.head;
        }
        let mut v = self.head;
        v.extend_from_slice(&self.tail);
        v
    }
}

#[derive(Debug)]
struct Link {
    params: LinkParams,
    up: bool,
    pn: u64,
    /// Point-to-point: the peer on the other end, once known.
    peer: Option<[u8; 32]>,
    hello_next: Duration,
    hello_interval: Duration,
    rr: usize,
    /// A discovery HELLO too large for the link's frames, going out in fragments.
    frag_out: Option<frag::FragOut>,
    /// The X25519 key the link's encryption authenticated (see [`Endpoint::bind_link`]).
    identity: Option<[u8; 32]>,
    /// A discovery HELLO went without our sketch (the frame had no room for it).
    bare_beacon: bool,
    /// Shared channels: the packet number of our last frame, the peer it went to and the
    /// bundle it named last, which the next frame to that peer may continue
    /// (`PIECE_NEXT` first in the frame).
    last_named: Option<(u64, [u8; 32], BundleRef)>,
}

/// The per-node protocol state machine.
#[derive(Debug)]
pub struct Endpoint {
    cfg: Config,
    key: [u8; 32],
    tag: u32,
    nonce: u64,
    links: BTreeMap<LinkId, Link>,
    peers: peer::Peers,
    by_tag: HashMap<(LinkId, u32), [u8; 32]>,
    /// The tags known on each link, by short form (`wire::short_tag`): more than one
    /// under a short tag, and frames naming it must carry long tags.
    by_short: HashMap<(LinkId, u16), Vec<u32>>,
    /// Bundles held, by id prefix: what "already held" answers are based on.
    held: BTreeMap<[u8; 8], (BundleId, u64)>,
    held_loaded: bool,
    /// Bundles `queue_unqueued` may still queue before the next `handle_timeout`.
    queue_allowance: usize,
    /// Bottom-k sketch of the set held, sent in HELLO for difference estimates.
    sketch: BTreeSet<u64>,
    /// Count cells of the set held (each bundle version held counts in about half of
    /// them), sent in HELLO: estimates small differences between large sets.
    cells: [u32; CELLS],
    events: VecDeque<Event>,
    stats: Stats,
    /// FEC: the code of each bundle sent by FEC on each link, and decoders of bundles
    /// being received by FEC.
    fec_tx: HashMap<(LinkId, BundleRef), coding::FecTx>,
    fec_rx: HashMap<BundleRef, coding::FecRx>,
    /// Bundles received and then lost (their commit rolled back): a piece of one from
    /// any link is answered with NAMELESS, so the sender starts it again.
    lost: HashSet<[u8; 8]>,
    policy: crate::fec::FecPolicy,
    buf: Vec<u8>,
    /// Latest time seen in any call.
    now: Duration,
    /// Jitter for HELLO timing (xorshift, seeded from the nonce): radios that start
    /// together, or hear the same HELLO, must not answer in lockstep, or hidden
    /// terminals collide at their common neighbour on every retry.
    rng: u64,
    frag_ids: frag::FragIds,
    reassembly: frag::Reassembly,
    /// Versions whose received payload failed verification, and who sent it.
    suspects: suspect::Suspects,
    /// Peers whose offers of new transfers are not taken for now (a budget the
    /// application keeps: bundles or bytes per hour from peers it does not trust).
    paused: HashSet<[u8; 32]>,
    /// Since when received bundles find no room (quota, disk); `None` once one is
    /// stored. Logged on each change, not for each bundle turned down.
    no_room_since: Option<Duration>,
    /// Links whose sessions leave sealed bundles out ([`Endpoint::withhold_sealed`]).
    no_sealed: HashSet<LinkId>,
}

/// Lost bundles remembered for NAMELESS answers (a rolled-back batch is one wake-up's
/// worth; past this the memory starts again).
const MAX_LOST: usize = 65_536;
const HELLO_HEARD: u8 = 1;
/// HELLO flag: the sketch starts with the count cells (`CELLS` u16, 8 words).
const HELLO_CELLS: u8 = 2;
/// HELLO flag: the sender numbers its offers (`OFFER`) and takes `DONE` reports.
const HELLO_NUMBERS: u8 = 4;
/// HELLO flag: the sender takes frames with short tags (`SHORT_TAGS`) from the
/// receiver: it knows no other node on the link with the receiver's short tag.
const HELLO_SHORT_TAGS: u8 = 8;
/// HELLO flag: the sender takes a listed set (`IDS`) in place of coded symbols.
const HELLO_LISTS: u8 = 16;
/// Most offers a session remembers the peer's numbers of (a report on one forgotten
/// goes as a `HAVE_ALL`).
const MAX_OFFER_SEQS: usize = 65_536;
/// Ranges of earlier reports a `DONE` repeats beside the new ones.
const DONE_REPEATS: usize = 8;

/// A bundle version's 48-bit short id in a session: `u48_le` of the first 6 bytes of
/// `BLAKE3-keyed(salt, id || version_le)`.
fn short_id(salt: &[u8; 32], id: &BundleId, version: u64) -> u64 {
    let mut h = blake3::Hasher::new_keyed(salt);
    h.update(id.as_bytes());
    h.update(&version.to_le_bytes());
    let mut b = [0u8; 8];
    b[..6].copy_from_slice(&h.finalize().as_bytes()[..6]);
    u64::from_le_bytes(b)
}

/// For each of `wanted` (members of `set`, the streamer's set), the fewest top bytes of
/// its short id that name it alone within `set`: the WANT prefix length (1-6).
fn want_lengths(set: &mut [u64], wanted: &[u64]) -> Vec<u8> {
    set.sort_unstable();
    let common = |a: u64, b: u64| ((a ^ b).leading_zeros().saturating_sub(16) / 8) as u8;
    wanted
        .iter()
        .map(|&w| {
            let i = set.partition_point(|&x| x < w);
            let mut shared = 0u8;
            if i > 0 {
                shared = shared.max(common(set[i - 1], w));
            }
            // `set[i]` is `w` itself when present.
            let next = if set.get(i) == Some(&w) { i + 1 } else { i };
            if let Some(&x) = set.get(next) {
                shared = shared.max(common(x, w));
            }
            (shared + 1).min(wire::MAX_WANT_LEN)
        })
        .collect()
}

/// Bundles pushed on a guess while reconciliation runs, and the largest such bundle.
const SPECULATIVE_COUNT: usize = 32;
const SPECULATIVE_MAX_LEN: u64 = 1024;

/// Bytes of bundles pushed on a guess at the start of a session (`None`: no bound but
/// the count). On a half-duplex link the first over is a greeting: the other side waits
/// with its own greeting and data until ours ends, so the guesses are bounded by about
/// one handover's airtime (half the expected round trip at the link's rate).
fn speculative_budget(params: Option<LinkParams>) -> Option<u64> {
    let l = params.filter(|l| l.half_duplex)?;
    let rate = l.rate_bps?;
    Some((rate as f64 / 8.0 * l.rtt_hint.as_secs_f64() / 2.0) as u64)
}

/// A manifest's size on the wire, about (for budgets; they vary with the name).
const MANIFEST_BYTES: u64 = 140;

/// Bundles of a whole set queued for a peer that held nothing per turn of the host
/// (`Endpoint::queue_unqueued`): a store lookup each, about 20 ms a chunk on a fast
/// machine. A set this size or smaller is queued at once, as it comes.
pub(super) const QUEUE_CHUNK: usize = 1024;

fn session_salt(a: ([u8; 32], u64), b: ([u8; 32], u64)) -> [u8; 32] {
    let (lo, hi) = if a.0 <= b.0 { (a, b) } else { (b, a) };
    let mut h = blake3::Hasher::new_derive_key("skywave session salt v1");
    h.update(&lo.0);
    h.update(&lo.1.to_le_bytes());
    h.update(&hi.0);
    h.update(&hi.1.to_le_bytes());
    *h.finalize().as_bytes()
}

impl Endpoint {
    /// `key` is this node's public identity; `nonce` must be fresh randomness for each
    /// start of the node (it salts every session, so crafted collisions are useless).
    pub fn new(cfg: Config, key: [u8; 32], nonce: u64) -> Self {
        Self {
            cfg,
            key,
            tag: u32::from_le_bytes(key[..4].try_into().expect("4 bytes")),
            nonce,
            links: BTreeMap::new(),
            peers: peer::Peers::default(),
            by_tag: HashMap::new(),
            by_short: HashMap::new(),
            held: BTreeMap::new(),
            held_loaded: false,
            queue_allowance: QUEUE_CHUNK,
            sketch: BTreeSet::new(),
            cells: [0; CELLS],
            events: VecDeque::new(),
            stats: Stats::default(),
            fec_tx: HashMap::new(),
            fec_rx: HashMap::new(),
            lost: HashSet::new(),
            policy: crate::fec::FecPolicy::default(),
            buf: vec![0; 2048],
            now: Duration::ZERO,
            rng: (nonce ^ u64::from_le_bytes(key[8..16].try_into().expect("8 bytes"))) | 1,
            frag_ids: frag::FragIds::new(nonce.rotate_left(17)),
            reassembly: frag::Reassembly::default(),
            suspects: suspect::Suspects::default(),
            paused: HashSet::new(),
            no_room_since: None,
            no_sealed: HashSet::new(),
        }
    }

    /// A uniform draw in [0, 1).
    fn unit(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A random delay before a HELLO on `params`' link: on a shared medium, up to a few
    /// frame times, so that neighbours hearing the same thing do not answer together.
    fn hello_spread(&mut self, params: &LinkParams) -> Duration {
        if !params.shared {
            return Duration::ZERO;
        }
        let frame = Duration::from_secs_f64(
            8.0 * params.mtu as f64 / params.rate_bps.unwrap_or(9600).max(1) as f64,
        );
        frame.mul_f64(6.0 * self.unit())
    }

    /// Since when received bundles find no room in the store (`None`: there is room).
    pub fn no_room_since(&self) -> Option<Duration> {
        self.no_room_since
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    pub fn node_key(&self) -> &[u8; 32] {
        &self.key
    }

    /// Keys of peers with an established session.
    pub fn peers(&self) -> impl Iterator<Item = &[u8; 32]> {
        self.peers
            .values()
            .filter(|p| p.established)
            .map(|p| &p.key)
    }

    /// This node's tag on shared links (the first 4 bytes of its key, little-endian):
    /// what a frame's `dst` names it by ([`wire::over_end_to`]).
    pub fn tag(&self) -> u32 {
        self.tag
    }

    /// Peers with an established session on `link`.
    pub fn peers_on(&self, link: LinkId) -> usize {
        self.peers
            .values()
            .filter(|p| p.established && p.link == link)
            .count()
    }

    /// Bytes of reconciliation sent to and received from each peer, and messages.
    pub fn recon_totals(&self) -> (u64, u64) {
        self.peers
            .values()
            .fold((0, 0), |a, p| (a.0 + p.recon.bytes, a.1 + p.recon.messages))
    }

    /// Outgoing transfers not yet confirmed, across peers.
    pub fn pending_transfers(&self) -> usize {
        self.peers
            .values()
            .map(|p| p.out.len() + p.backlog.len() + p.unqueued.len())
            .sum()
    }

    /// Whether anything for an established peer waits that no frame has carried yet
    /// (a HELLO, a manifest, bytes, symbols, the backlog): while it does, a frame can
    /// be built now or `poll_timeout` says when (what checks for stalls asserts).
    pub fn has_unsent(&self) -> bool {
        self.peers
            .values()
            .any(|p| p.established && transmit::has_unsent(p))
    }

    /// What waits unsent for each established peer (for a stall's report).
    pub fn unsent_report(&self) -> String {
        self.peers
            .values()
            .filter(|p| p.established && transmit::has_unsent(p))
            .map(|p| {
                format!(
                    "peer {}: fragment {}, hello {} after {:?}, backlog {}, unqueued {}, out {:?}, recon {:?}",
                    hex8(&p.key),
                    p.frag_out.is_some(),
                    p.hello_due,
                    p.hello_after,
                    p.backlog.len(),
                    p.unqueued.len(),
                    p.out
                        .iter()
                        .map(|o| (o.manifest_sent_at, o.manifest_acked, o.next_range(u64::MAX)))
                        .collect::<Vec<_>>(),
                    (p.recon.next_symbol, p.recon.burst_end, p.recon.stopped)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// A link came up (or its parameters changed). Called again while the link is up,
    /// the driver asks to greet its peers again (a keep-alive, or a peer that fell
    /// silent): each call doubles the interval at which an unanswered HELLO is repeated
    /// (up to `hello_max`), until a HELLO from the peer resets it, so a peer that is gone
    /// gets a trickle.
    pub fn link_up(&mut self, now: Duration, link: LinkId, params: LinkParams) {
        let again = self.links.get(&link).is_some_and(|l| l.up);
        let l = self.links.entry(link).or_insert(Link {
            params,
            up: true,
            pn: 0,
            peer: None,
            hello_next: now,
            hello_interval: self.cfg.hello_interval,
            rr: 0,
            frag_out: None,
            identity: None,
            bare_beacon: false,
            last_named: None,
        });
        l.params = params;
        l.up = true;
        l.hello_interval = if again && !params.shared {
            (l.hello_interval * 2).min(self.cfg.hello_max)
        } else {
            first_hello_interval(&self.cfg, &params)
        };
        let spread = self.hello_spread(&params);
        if let Some(l) = self.links.get_mut(&link) {
            l.hello_next = now + spread;
        }
        // Sessions survive link drops: say hello again so the peer knows we are back.
        for p in self.peers.values_mut().filter(|p| p.link == link) {
            p.hello_due = true;
            p.hello_after = now + spread;
            p.heard_us = false;
            p.hello_sent = false;
        }
    }

    /// The link's encryption proved the peer holds the node key whose X25519 form is
    /// `x25519`: a HELLO on it claiming another node key is dropped (a stranger cannot
    /// take over an honest peer's session by naming its public key). `None` unbinds.
    pub fn bind_link(&mut self, link: LinkId, x25519: Option<[u8; 32]>) {
        if let Some(l) = self.links.get_mut(&link) {
            l.identity = x25519;
        }
    }

    /// The link's driver heard the peer say something of its own (a half-duplex modem
    /// driver's end-of-over announcement): on a point-to-point half-duplex link, the
    /// peer is there and the path works both ways (it speaks in the turn our over's end
    /// gave it), so resend timeouts stop backing off (see `handle_frame`). At the end
    /// of a sync the drivers' announcements may be all that crosses the link.
    ///
    /// `answered`: the announcement passed us the turn in answer to our over (see
    /// [`Answer`]).
    pub fn link_heard(&mut self, _now: Duration, link: LinkId, answered: Option<Answer>) {
        let Some(l) = self.links.get(&link) else {
            return;
        };
        if !turns(&l.params) {
            return;
        }
        for p in self.peers.values_mut().filter(|p| p.link == link) {
            p.backoff = 0;
            if answered.is_some() {
                p.answered = answered;
            }
        }
    }

    pub fn link_down(&mut self, _now: Duration, link: LinkId) {
        if let Some(l) = self.links.get_mut(&link) {
            l.up = false;
        }
        for p in self.peers.values_mut().filter(|p| p.link == link) {
            // What was in flight is presumed lost; held ranges are re-learnt on return.
            for o in &mut p.out {
                o.in_flight = RangeSet::new();
                o.sends.clear();
                o.manifest_acked = o.manifest_acked && o.length == 0;
                o.manifest_sent_at = None;
                o.reset_fec();
            }
            let _ = p.cc.lose_all();
        }
    }

    /// Queues the next chunk of what is left of a whole set for a peer that held
    /// nothing (`Peer::unqueued`), within the allowance `handle_timeout` renews. A
    /// million bundles are a million store lookups (about 19 s on a fast machine);
    /// done in one go at the session's start they held the host's loop, its API and
    /// its stop on SIGTERM for that long. A chunk at a time, between the host's turns
    /// to everything else, they queue while the first ones already go.
    fn queue_unqueued(&mut self, store: &mut dyn BundleStore) {
        let now = self.now;
        for p in self.peers.values_mut() {
            if self.queue_allowance == 0 {
                break;
            }
            self.queue_allowance -= queue::queue_unqueued(p, self.queue_allowance, store, now);
        }
    }

    fn load_held(&mut self, store: &mut dyn BundleStore) {
        if self.held_loaded {
            return;
        }
        for (id, version, _) in store.inventory() {
            self.note_held(id, version);
        }
        self.held_loaded = true;
    }

    fn note_held(&mut self, id: BundleId, version: u64) {
        let (h, bits) = sketch_hash(&id, version);
        let r = BundleRef::new(&id, version);
        match self.held.get(&r.prefix) {
            Some(&(i, v)) if i == id && v >= version => {}
            Some(&(i, v)) if i == id => {
                // A newer version replaces the older one in the set.
                let (_, old) = sketch_hash(&i, v);
                for (k, c) in self.cells.iter_mut().enumerate() {
                    *c = c.wrapping_sub((old >> k) & 1).wrapping_add((bits >> k) & 1);
                }
            }
            Some(_) => {}
            None => {
                for (k, c) in self.cells.iter_mut().enumerate() {
                    *c = c.wrapping_add((bits >> k) & 1);
                }
            }
        }
        if self.sketch.len() < SKETCH_K || self.sketch.last().is_some_and(|&m| h < m) {
            self.sketch.insert(h);
            while self.sketch.len() > SKETCH_K {
                self.sketch.pop_last();
            }
        }
        let e = self.held.entry(r.prefix).or_insert((id, version));
        if e.0 == id && e.1 < version {
            e.1 = version;
        }
    }

    /// Whether the transfer of `r` to `key` is sent by FEC.
    fn sends_by_fec(&self, key: &[u8; 32], r: &BundleRef) -> bool {
        self.peers
            .get(key)
            .is_some_and(|p| p.out.iter().any(|o| o.r == *r && o.fec.is_some()))
    }

    fn holds(&self, r: &BundleRef) -> bool {
        self.held
            .get(&r.prefix)
            .is_some_and(|(_, v)| *v >= r.version)
    }

    /// A bundle was stored locally (authored here or inserted by the application): it is
    /// offered to every peer at once.
    pub fn bundle_stored(&mut self, now: Duration, id: BundleId, store: &mut dyn BundleStore) {
        self.load_held(store);
        let Some(m) = store.manifest(&id) else { return };
        self.note_held(id, m.version());
        self.offer_to_peers(now, &m, None);
    }

    /// The link a peer's session runs on.
    pub fn peer_link(&self, peer: &[u8; 32]) -> Option<LinkId> {
        self.peers.get(peer).map(|p| p.link)
    }

    /// Stops (or resumes) taking new transfers from `peer`: while paused, its offers are
    /// not confirmed, so it offers them again after its resend timeouts (with backoff)
    /// and they are taken once resumed. Transfers under way finish.
    pub fn pause_offers_from(&mut self, peer: [u8; 32], paused: bool) {
        if paused {
            self.paused.insert(peer);
        } else {
            self.paused.remove(&peer);
        }
    }

    /// Bundles the store took and then lost (the commit of the batch that held them
    /// was rolled back): forgotten as removed, no report or event says they are held,
    /// and they are fetched again from whoever sends them (their pieces and symbols are
    /// answered with NAMELESS until they are held again).
    pub fn bundles_lost(&mut self, ids: &[BundleId], store: &mut dyn BundleStore) {
        if ids.is_empty() {
            return;
        }
        if self.lost.len() + ids.len() > MAX_LOST {
            self.lost.clear();
        }
        let prefixes: HashSet<[u8; 8]> =
            ids.iter().map(|id| BundleRef::new(id, 0).prefix).collect();
        self.lost.extend(prefixes.iter().copied());
        self.bundles_removed(ids, store);
        let held = |r: &BundleRef| !prefixes.contains(&r.prefix);
        for p in self.peers.values_mut() {
            p.have_all.retain(held);
            p.have_all_again.retain(held);
        }
        let gone: HashSet<BundleId> = ids.iter().copied().collect();
        self.events
            .retain(|e| !matches!(e, Event::Received { id, .. } if gone.contains(id)));
    }

    /// Bundles left the store (expired, evicted): they leave the set every session
    /// reconciles, and transfers of them stop. A tombstone is not a removal: it is a
    /// newer version, announced by [`Self::bundle_stored`].
    pub fn bundles_removed(&mut self, ids: &[BundleId], store: &mut dyn BundleStore) {
        if ids.is_empty() {
            return;
        }
        let gone: HashSet<BundleId> = ids.iter().copied().collect();
        // The set summaries cannot take a member out: rebuilt from the store.
        self.held.clear();
        self.sketch.clear();
        self.cells = [0; CELLS];
        self.held_loaded = false;
        self.load_held(store);
        for p in self.peers.values_mut() {
            let sids: Vec<u64> = p
                .recon
                .shorts
                .iter()
                .filter(|(_, (id, _))| gone.contains(id))
                .map(|(sid, _)| *sid)
                .collect();
            let active = p.recon.active(p.streamer);
            for sid in sids {
                p.recon.shorts.remove(&sid);
                p.recon.deferred.retain(|d| *d != sid);
                if active {
                    // Symbols already exchanged describe the set as it was.
                    p.recon.deferred_removed.push(sid);
                } else {
                    p.recon.enc.remove(sid);
                }
            }
            p.recon.withheld.retain(|_, (id, _)| !gone.contains(id));
            p.out.retain(|o| !gone.contains(&o.id));
            p.backlog.retain(|q| !gone.contains(&q.id));
        }
    }

    fn offer_to_peers(&mut self, now: Duration, m: &SignedManifest, except: Option<[u8; 32]>) {
        let (id, version) = (m.id(), m.version());
        // One copy of the manifest for every peer it goes to.
        let encoded = Bytes::copy_from_slice(m.as_bytes());
        let sealed = m.manifest().sealed.is_some();
        for p in self.peers.values_mut() {
            // Keep the reconciliation state current.
            let sid = short_id(&p.salt, &id, version);
            if sealed && p.no_sealed {
                // Not in this session's set, never offered on its link.
                if p.established {
                    p.recon.withheld.insert(sid, (id, version));
                }
                continue;
            }
            if p.established && !p.recon.unbuilt {
                p.recon.shorts.insert(sid, (id, version));
                if p.recon.active(p.streamer) {
                    // Symbols already exchanged describe the set as it was: the set is
                    // frozen until this round ends (the bundle is pushed meanwhile).
                    p.recon.deferred.push(sid);
                } else {
                    p.recon.enc.insert(sid);
                }
            }
            if Some(p.key) == except || !p.established || p.peer_has.contains(&(id, version)) {
                // The peer holds this version (it sent it, or said so): a transfer of an
                // older one to it is over. The store holds only the newest, and such a
                // transfer, unreadable, waited unsent with no timer for ever (found by
                // `random_sessions`). Elsewhere the new version's transfer takes the old
                // one's place (a journal's goes on from it: `enqueue_shared`).
                p.out.retain(|o| o.id != id || o.r.version >= version);
                p.backlog.retain(|q| q.id != id || q.version >= version);
                continue;
            }
            enqueue_shared(p, m, &encoded, now, false);
        }
    }

    /// A frame arrived on `link`.
    pub fn handle_frame(
        &mut self,
        now: Duration,
        link: LinkId,
        frame: &[u8],
        store: &mut dyn BundleStore,
    ) {
        self.handle_frame_at(now, now, link, frame, store);
    }

    /// [`Endpoint::handle_frame`] for a frame that reached the host at `arrived` (by the
    /// same clock as `now`, at most `now`), as a kernel's receive stamp tells, while the
    /// driver reads it later, often in a batch with others. Only the spacing of frames
    /// sent back to back (SPACING) uses it: two frames read together are otherwise
    /// stamped alike, or a read's own pace passes for the path's.
    pub fn handle_frame_at(
        &mut self,
        now: Duration,
        arrived: Duration,
        link: LinkId,
        frame: &[u8],
        store: &mut dyn BundleStore,
    ) {
        let arrived = arrived.min(now);
        self.now = self.now.max(now);
        self.stats.frames_received += 1;
        self.stats.bytes_received += frame.len() as u64;
        let (header, msgs) = match wire::parse(frame) {
            Ok(x) => x,
            Err(wire::WireError::UnknownVersion(_)) => {
                self.stats.dropped_unknown_version += 1;
                return;
            }
            Err(e) => {
                tracing::trace!("dropped frame: {e}");
                self.stats.dropped_malformed += 1;
                return;
            }
        };
        if !self.links.contains_key(&link) {
            self.stats.dropped_unknown_peer += 1;
            return;
        }
        let Some(header) = self.long_tags(now, link, header) else {
            self.stats.dropped_ambiguous_tag += 1;
            return;
        };
        let l = &self.links[&link];
        let shared = l.params.shared;
        let paced = l.params.paced;
        let in_order = l.params.numbered_in_order();
        // A frame heard was sent at least this long ago (see `Peer::heard_over`): a
        // quarter of the hint, which counts the latency both ways, two turnarounds and
        // queueing, is below one way's latency and turnaround.
        let half_duplex_one_way = l.params.half_duplex.then(|| l.params.rtt_hint / 4);
        let turns = turns(&l.params);
        let handed = shared && wire::over_end_to(frame, self.tag) == Some(true);
        if let Some((src, dst)) = header.addr
            && dst != self.tag
            && dst != wire::BROADCAST
        {
            // FEC symbols serve every neighbour that lacks the bundle, whoever the frame
            // is addressed to; nothing else in it is ours.
            let from = self
                .by_tag
                .get(&(link, src))
                .copied()
                .filter(|k| self.peers.get(k).is_some_and(|p| p.established));
            let mut used = false;
            if let Some(from) = from.filter(|_| shared) {
                for m in msgs {
                    if let Message::Fec {
                        r,
                        symbol_size,
                        esi,
                        data,
                    } = m
                    {
                        used = true;
                        self.on_fec(now, from, r, symbol_size, esi, data, true, store);
                    }
                }
            }
            if !used {
                self.stats.dropped_not_for_us += 1;
            }
            return;
        }
        // Messages sent in fragments are handled once whole, where their last
        // fragment was.
        let mut whole: Vec<(usize, Vec<u8>)> = Vec::new();
        let src = header.addr.map_or(0, |a| a.0);
        let is_frag = |m: &Message<'_>| {
            matches!(
                m,
                Message::Frag { .. } | Message::FragNext { .. } | Message::FragParity { .. }
            )
        };
        let (rebuilt, dropped) = (self.reassembly.rebuilt, self.reassembly.dropped);
        let from = (link, src);
        // The message the frame's last fragment left unfinished, if it ends with one.
        let mut unfinished = None;
        for (i, m) in msgs.iter().enumerate() {
            unfinished = None;
            let b = match m {
                Message::Frag {
                    id,
                    offset,
                    total,
                    data,
                } => {
                    unfinished = Some((*id, offset + data.len() as u64, *total));
                    self.reassembly.add(now, from, *id, *offset, *total, data)
                }
                // Only first in a frame, right after the frame that ended with its
                // message's fragment: else it cannot be placed (that frame was lost).
                Message::FragNext { data } => {
                    match self.reassembly.next_of(from, header.pn).filter(|_| i == 0) {
                        Some((id, offset, total)) => {
                            unfinished = Some((id, offset + data.len() as u64, total));
                            self.reassembly.add(now, from, id, offset, total, data)
                        }
                        None => {
                            self.reassembly.dropped += 1;
                            None
                        }
                    }
                }
                // The one fragment missing, rebuilt: the message is handled here.
                Message::FragParity {
                    id,
                    total,
                    count,
                    data,
                } => self
                    .reassembly
                    .add_parity(now, from, *id, *total, *count, data),
                _ => None,
            };
            if let Some(b) = b {
                unfinished = None;
                whole.push((i, b));
            }
        }
        self.reassembly
            .frame_ended(from, header.pn, unfinished.filter(|u| u.1 < u.2));
        self.stats.fragments_rebuilt += self.reassembly.rebuilt - rebuilt;
        self.stats.fragments_dropped += self.reassembly.dropped - dropped;
        let msgs = if msgs.iter().any(is_frag) {
            let mut out = Vec::with_capacity(msgs.len());
            for (i, m) in msgs.into_iter().enumerate() {
                if !is_frag(&m) {
                    out.push(m);
                    continue;
                }
                // A fragment that completes nothing stays, as the writer's does, to end
                // what the frame named so far (a PIECE_NEXT after it is not the earlier
                // bundle's).
                let Some((_, b)) = whole.iter().find(|w| w.0 == i) else {
                    out.push(m);
                    continue;
                };
                match wire::parse_messages(b) {
                    // One message, and not fragments within fragments.
                    Ok(v) if v.len() == 1 && !is_frag(&v[0]) => out.extend(v),
                    _ => {
                        self.stats.dropped_malformed += 1;
                        out.push(m);
                    }
                }
            }
            out
        } else {
            msgs
        };
        // HELLOs first: they may introduce the sender.
        for m in &msgs {
            if let Message::Hello {
                node_key,
                nonce,
                set_size,
                flags,
                sketch,
            } = m
            {
                let sketch: Vec<u64> = sketch
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                    .collect();
                self.handle_hello(
                    now, link, *node_key, *nonce, *set_size, *flags, sketch, store,
                );
            }
        }
        let key = if shared {
            header
                .addr
                .and_then(|(src, _)| self.by_tag.get(&(link, src)).copied())
        } else {
            self.links.get(&link).and_then(|l| l.peer)
        };
        let Some(key) = key.filter(|k| self.peers.get(k).is_some_and(|p| p.established)) else {
            // A sender we have no session with (we restarted, and it still runs the old
            // session) is answered by the link's discovery HELLO, which is due on such a
            // link (see `poll_transmit`): at once on a link just up, then backing off
            // exponentially with jitter, so a flood of such frames gets only a trickle.
            // The HELLO carries our new nonce: the sender starts a new session too.
            if !msgs
                .iter()
                .all(|m| matches!(m, Message::Hello { .. }) || is_frag(m))
            {
                self.stats.dropped_unknown_peer += 1;
            }
            return;
        };
        {
            let p = self.peers.get_mut(&key).expect("checked");
            p.last_heard = now;
            if turns {
                // The path works (see `turns`).
                p.backoff = 0;
            }
            match half_duplex_one_way {
                Some(one_way) => p.heard_over(now, one_way),
                None => p.over_bytes = 0,
            }
            p.over_full_at = None;
            p.pauses_unanswered = 0;
            p.handed_us = handed;
            if paced {
                p.record_pn(header.pn, frame.len() as u64, now, arrived);
            } else {
                // Frames arrive in order on links without acks (radios, modems, streams).
                // On a point-to-point one every frame of the peer's is for us: a gap in
                // its numbers is frames lost, told to it (MISSED) with our next frame.
                if in_order && let Some(prev) = p.heard_pn {
                    p.note_gap(prev, header.pn, now);
                }
                p.heard_pn = Some(header.pn);
            }
        }
        // The HEARD this frame's reports follow (see `on_have`).
        let heard = msgs.iter().find_map(|m| match m {
            Message::Heard { pn } => Some(*pn),
            _ => None,
        });
        if let Some(h) = heard
            && half_duplex_one_way.is_some()
            && !paced
        {
            // As for reports timed from a send (`on_have`): a sample past twice the
            // resend timeout answers something else (a frame named after the ones since
            // were lost), and would put the timers back at minutes.
            let max_sample = self.rto_of(&key).map_or(Duration::MAX, |r| r * 2);
            let p = self.peers.get_mut(&key).expect("checked");
            if let Some(sample) = p.answer_time(h, now).filter(|&s| s <= max_sample) {
                p.cc.rtt_sample(sample);
            }
        }
        // A DONE in the frame may prove that a frame of ours arrived: its reports then
        // tell lost from late as a HEARD of it would.
        let done_arrived = self.done_arrived(&key, &msgs);
        let heard = heard.max(done_arrived);
        let mut eliciting = false;
        // The bundle the frame last named, which a PIECE_NEXT continues; first in a
        // frame, the bundle the peer's frame just before it (one packet number less)
        // named last.
        let mut named: Option<BundleRef> = self
            .peers
            .get(&key)
            .and_then(|p| p.named_last)
            .filter(|&(pn, _)| pn.checked_add(1) == Some(header.pn))
            .map(|(_, r)| r);
        let mut fec_reports: Vec<BundleRef> = Vec::new();
        if tracing::enabled!(tracing::Level::TRACE) {
            tracing::trace!(t = now.as_secs_f64(), node = %hex8(&self.key), from = %hex8(&key), pn = header.pn, msgs = ?msgs.iter().map(describe).collect::<Vec<_>>(), "rx");
        }
        // The frame's manifests are verified together (see `SignedManifest::decode_many`).
        let manifests: Vec<&[u8]> = msgs
            .iter()
            .filter_map(|m| match m {
                Message::Manifest { bytes, .. } => Some(*bytes),
                _ => None,
            })
            .collect();
        let mut manifests = skywave_bundle::SignedManifest::decode_many(&manifests).into_iter();
        for m in msgs {
            match m {
                Message::Hello { .. }
                | Message::Heard { .. }
                | Message::Padding { .. }
                | Message::Unknown { .. } => {}
                Message::Ping => eliciting = true,
                // Part of a message still incomplete (or not readable).
                Message::Frag { .. } | Message::FragNext { .. } | Message::FragParity { .. } => {
                    named = None
                }
                Message::Symbols { first, data, .. } => {
                    eliciting = true;
                    self.on_symbols(now, key, first, data, store);
                }
                Message::Ids {
                    total, first, data, ..
                } => {
                    eliciting = true;
                    self.on_ids(now, key, total, first, data, store);
                }
                Message::ReconDone { used, .. } => {
                    let p = self.peers.get_mut(&key).expect("checked");
                    p.recon.stopped = true;
                    if p.recon.either {
                        // It decoded our symbols: its stream, if any, is not needed.
                        p.recon.dec = None;
                    }
                    p.recon.apply_deferred();
                    p.recon.symbols_used = used;
                }
                Message::ReconMore { from, count, .. } => {
                    self.build_recon_set(&key, store);
                    let p = self.peers.get_mut(&key).expect("checked");
                    // A decoder that counted otherwise asks for the round we skipped.
                    // Where either side streams, the symbols it streams (often in the
                    // same frame) are decoded here too: taken for a skipped round's, they
                    // were dropped, and a bundle only we lacked was never asked for.
                    if p.recon.skipped && p.recon.either {
                        p.recon.decoded = false;
                        p.recon.dec.get_or_insert_with(Decoder::new);
                    }
                    p.recon.skipped = false;
                    p.recon.more_retries = 0;
                    if !p.recon.stopped {
                        let sent = p.recon.next_symbol;
                        let listed = p.recon.list.as_ref().map(|l| l.len() as u64);
                        if sent == 0 && listed.is_none() {
                            // Nothing sent yet (a round we skipped): the request begins it.
                            p.recon.burst_end = p.recon.burst_end.max(self.cfg.initial_burst);
                        }
                        let asked = match listed {
                            // A listed set: entries, not symbols, are asked for; there are
                            // no fresh ones, so a request for more (`count` 0, or past the
                            // end) is for the list again from where the decoder lacks it.
                            Some(total) => {
                                let from = if from >= total { 0 } else { from };
                                let end = if count == 0 {
                                    total
                                } else {
                                    from.saturating_add(count.min(4096)).min(total)
                                };
                                Some((from, end))
                            }
                            None if count > 0 => Some((from, from.saturating_add(count.min(4096)))),
                            None => None,
                        };
                        match asked {
                            Some((from, end)) => {
                                // Sent ones go again; ones never sent (the decoder asks for
                                // symbol 0 of a round we skipped) join the stream.
                                if from < sent {
                                    p.recon.resend.push_back((from, end.min(sent)));
                                }
                                p.recon.burst_end = p.recon.burst_end.max(end);
                            }
                            None => {
                                p.recon.burst_end = p
                                    .recon
                                    .burst_end
                                    .max(sent + sent.max(self.cfg.initial_burst));
                            }
                        }
                    }
                }
                Message::Nameless { r } => {
                    self.on_nameless(now, key, r, in_order);
                }
                Message::Missed { ranges } => {
                    if in_order {
                        self.on_missed(now, key, &ranges);
                    }
                }
                Message::Want { len, prefixes } => {
                    eliciting = true;
                    self.on_want(now, key, len, prefixes, store);
                }
                Message::Manifest { seq, .. } => {
                    eliciting = true;
                    let m = manifests.next().expect("one result per manifest");
                    named = self.on_manifest(now, key, m, store);
                    if let (Some(seq), Some(r)) = (seq, named)
                        && let Some(p) = self.peers.get_mut(&key)
                    {
                        if p.offer_seqs.len() >= MAX_OFFER_SEQS && !p.offer_seqs.contains_key(&r) {
                            // Bounded: the forgotten ones are reported by HAVE_ALL.
                            p.offer_seqs.clear();
                        }
                        p.offer_seqs.insert(r, seq);
                    }
                }
                Message::Piece { r, offset, data } => {
                    eliciting = true;
                    named = Some(r);
                    self.on_piece(now, key, r, offset, data, store);
                }
                Message::PieceNext { offset, data } => {
                    eliciting = true;
                    match named {
                        Some(r) => self.on_piece(now, key, r, offset, data, store),
                        // No manifest or piece before it that we could read.
                        None => self.stats.dropped_malformed += 1,
                    }
                }
                Message::Have { r, ranges } => {
                    self.on_have(now, key, r, Some(ranges), heard);
                    if self.sends_by_fec(&key, &r) && !fec_reports.contains(&r) {
                        fec_reports.push(r);
                    }
                }
                Message::HaveAll { r } => self.on_have(now, key, r, None, heard),
                Message::Done { tag, seqs } => self.on_done(now, key, tag, &seqs, heard),
                Message::Ack(ack) => self.on_ack(now, key, &ack),
                Message::Spacing { pn, bytes, gap_ns } => {
                    let p = self.peers.get_mut(&key).expect("checked");
                    p.cc.on_spacing(pn, bytes, Duration::from_nanos(gap_ns));
                }
                Message::Fec {
                    r,
                    symbol_size,
                    esi,
                    data,
                } => {
                    eliciting = true;
                    self.on_fec(now, key, r, symbol_size, esi, data, false, store);
                }
                Message::Need {
                    r,
                    needed,
                    last_esi,
                } => {
                    let p = self.peers.get_mut(&key).expect("checked");
                    if let Some(f) = p
                        .out
                        .iter_mut()
                        .find(|o| o.r == r)
                        .and_then(|o| o.fec.as_mut())
                    {
                        f.need_reported = Some((needed, last_esi));
                        if !fec_reports.contains(&r) {
                            fec_reports.push(r);
                        }
                    }
                }
            }
        }
        if let Some(p) = self.peers.get_mut(&key) {
            p.named_last = named.map(|r| (header.pn, r));
        }
        if let Some(a) = done_arrived {
            self.lost_before_done(now, key, a);
        }
        if !fec_reports.is_empty() {
            self.apply_fec_reports(key, &fec_reports);
        }
        if eliciting && paced {
            let p = self.peers.get_mut(&key).expect("checked");
            p.unacked_eliciting += 1;
            let due = if p.unacked_eliciting >= 2 {
                now
            } else {
                now + self.cfg.ack_delay
            };
            p.ack_due = Some(p.ack_due.map_or(due, |d| d.min(due)));
        }
    }
}

fn describe(m: &Message<'_>) -> String {
    match m {
        Message::Piece { r, offset, data } => format!(
            "PIECE {:02x}{:02x}@{offset}+{}",
            r.prefix[0],
            r.prefix[1],
            data.len()
        ),
        Message::PieceNext { offset, data } => format!("PIECE_NEXT @{offset}+{}", data.len()),
        Message::Have { r, ranges } => format!(
            "HAVE {:02x}{:02x} {:?}",
            r.prefix[0],
            r.prefix[1],
            ranges.iter().collect::<Vec<_>>()
        ),
        Message::HaveAll { r } => format!("HAVE_ALL {:02x}{:02x}", r.prefix[0], r.prefix[1]),
        Message::Manifest { seq, bytes: b } => format!(
            "MANIFEST {:02x}{:02x}{}{}",
            b.get(1).copied().unwrap_or(0),
            b.get(2).copied().unwrap_or(0),
            // Only its version is printed: the signature is checked where it is handled.
            skywave_bundle::SignedManifest::decode_stored(b)
                .map(|m| format!(" v{}", m.version()))
                .unwrap_or_default(),
            seq.map(|s| format!(" #{s}")).unwrap_or_default()
        ),
        Message::Done { seqs, .. } => format!("DONE {:?}", seqs.iter().collect::<Vec<_>>()),
        Message::Symbols { first, data, .. } => format!(
            "SYMBOLS {first}+{}",
            data.len() / crate::recon::riblt::SYMBOL_LEN
        ),
        Message::Ids {
            total, first, data, ..
        } => format!(
            "IDS {first}+{} of {total}",
            data.len() / wire::LISTED_ID_LEN
        ),
        other => format!("{:?}", other).chars().take(40).collect(),
    }
}

fn hex8(k: &[u8; 32]) -> String {
    k[..4].iter().map(|b| format!("{b:02x}")).collect()
}

impl Endpoint {
    /// A one-line summary of each session, for logs and status screens.
    pub fn describe_sessions(&self) -> Vec<String> {
        self.peers
            .values()
            .map(|p| {
                format!(
                    "peer {} link {} established {} heard_us {} streamer {} next_sym {} burst_end {} stopped {} decoded {} received {} out {} queued {} incoming {} wants {} asked {} have_all {} have {} epoch {} skipped {} more_retries {} more_to_send {:?} last_symbol_at {:?}",
                    hex8(&p.key),
                    p.link,
                    p.established,
                    p.heard_us,
                    p.streamer,
                    p.recon.next_symbol,
                    p.recon.burst_end,
                    p.recon.stopped,
                    p.recon.decoded,
                    p.recon.dec.as_ref().map_or(0, |d| d.received()),
                    p.out.len(),
                    p.backlog.len(),
                    p.incoming.len(),
                    p.wants_out.len(),
                    p.asked.len(),
                    p.have_all.len(),
                    p.have.len(),
                    p.recon.epoch,
                    p.recon.skipped,
                    p.recon.more_retries,
                    p.recon.more_to_send,
                    p.recon.last_symbol_at,
                )
            })
            .collect()
    }
}

/// The first wait before an unanswered HELLO is repeated (it doubles after each, up to
/// `hello_max`). On a shared channel at most 16 largest frames' airtime, so that two
/// radios whose first HELLOs collide try again after a few dozen frames' time rather
/// than after the configured second (70 frames at 128 kbit/s).
fn first_hello_interval(cfg: &Config, params: &LinkParams) -> Duration {
    match transmit::frame_airtime(params).filter(|_| params.shared) {
        Some(frame) => cfg.hello_interval.min(frame * HELLO_RETRY_FRAMES),
        None => cfg.hello_interval,
    }
}

/// See [`first_hello_interval`].
const HELLO_RETRY_FRAMES: u32 = 16;

/// A half-duplex peer's answer to our over, as its driver tells it
/// ([`Endpoint::link_heard`]). The peer reports what it received first in its over, so
/// what it did not report of our over once its own has all arrived, it never got: that
/// goes again at once, not after a resend timeout (the lost end of an over otherwise
/// waited one with nothing else to send: minutes on a lossy HF link, where the timeout
/// grows with the turns' delays). Unless the answer itself came with frames missing
/// (a report may be among them): then the timers decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// When our over ended: everything we sent before was in it.
    pub over_ended: Duration,
    /// By when the peer's over has all arrived.
    pub all_in: Duration,
    /// The peer's over carried nothing (so no report either).
    pub idle: bool,
}

/// Whether sides take turns on `params`' link, one peer each side (a point-to-point
/// half-duplex modem). A resend timeout backs off for a path that does not answer; on
/// such a link nothing competes for the air and the peer speaks only in the turn our
/// over's end gave it, so anything heard from it proves the path both ways, and what
/// was lost was lost at random: the next timeout is not backed off. (Backed off, a
/// frame lost at the end of a sync, when nothing else moves, waited a minute.)
fn turns(params: &LinkParams) -> bool {
    params.half_duplex && !params.shared
}
