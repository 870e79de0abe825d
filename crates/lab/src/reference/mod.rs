//! The `reference` agent: a plain, honest store-and-forward sender for the lab, so every
//! scenario runs end to end before the protocol engine replaces it.
//!
//! What it does, per neighbour (discovered by HELLO beacons on every port):
//! 1. a reliable, in-order byte stream (selective repeat: numbered DATA packets, ACKs
//!    with the cumulative next sequence and received ranges; loss detected when a later
//!    packet is acknowledged, or by a retransmission timeout with backoff);
//! 2. a **full inventory** of every bundle held (9 bytes each), then every bundle the
//!    peer lacks as manifest + payload (or a journal's new tail), and later every bundle
//!    inserted or accepted that the peer is not known to hold (so it relays along chains).
//!
//! The window is fixed from the port's rate, delay and buffer; there is no congestion
//! control, no pacing, no reconciliation cleverness and no forward error correction. It
//! never writes more than a port's free buffer space, so it never overruns a modem.
//! It is a yardstick; its figures are what a straightforward design achieves.

mod wire;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use skywave_sim::time::airtime_nanos;
use skywave_sim::{Endpoint, LinkInfo, PortId, PortKind, SimTime, TransmitError};

use crate::LabError;
use crate::agent::{
    Accepted, AgentFactory, AgentStats, BundleKey, BundleSpec, LabAgent, NodeContext,
};
use wire::{BROADCAST, BundleHeader, Message, Packet};

/// Inventory entries per INV message.
const INV_CHUNK: usize = 256;
/// Largest packet on a byte-stream port (keeps one packet well inside a 1 KiB modem buffer).
const STREAM_PACKET: usize = 255;
/// Acknowledge at least every this many data packets.
const ACK_EVERY: u32 = 8;
/// Most received ranges in one ACK (fewer if the port's packets are smaller).
const MAX_RANGES: usize = 255;
const MIN_RTO: Duration = Duration::from_millis(200);
const MAX_RTO: Duration = Duration::from_secs(120);
/// Beacon period while a port has no neighbour yet, and on broadcast ports afterwards.
const HELLO_SEARCH: Duration = Duration::from_secs(2);
const HELLO_KEEP: Duration = Duration::from_secs(10);

/// Builds [`ReferenceAgent`]s.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReferenceFactory;

impl AgentFactory for ReferenceFactory {
    type Agent = ReferenceAgent;

    fn name(&self) -> &str {
        "reference"
    }

    fn create(&self, ctx: NodeContext<'_>) -> Result<ReferenceAgent, LabError> {
        Ok(ReferenceAgent::new(ctx.index as u16, ctx.rng))
    }
}

#[derive(Clone, Copy, Debug)]
struct Held {
    journal: bool,
    version: u64,
    payload_len: u64,
    manifest_len: u64,
}

#[derive(Debug)]
struct PortState {
    info: LinkInfo,
    hello_due: bool,
    hello_at: SimTime,
    /// Stream ports: bytes received but not yet a whole packet.
    rx: BytesMut,
    /// Round-robin position among the port's sessions.
    rr: usize,
}

#[derive(Debug)]
enum Chunk {
    Data(Bytes),
    Zeros(u64),
}

#[derive(Debug)]
struct Segment {
    data: Bytes,
    sent_at: SimTime,
    retransmitted: bool,
    lost: bool,
}

/// One neighbour on one port.
#[derive(Debug)]
struct Session {
    // Sending side of the reliable stream.
    next_seq: u32,
    inflight: BTreeMap<u32, Segment>,
    /// Bytes in flight and not deemed lost.
    flight: usize,
    lost: BTreeSet<u32>,
    /// Transmissions in time order, for "a later packet arrived" loss detection.
    sent_order: VecDeque<(SimTime, u32)>,
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Option<Duration>,
    rto_at: Option<SimTime>,
    out: VecDeque<Chunk>,
    // What to send.
    pending: VecDeque<BundleKey>,
    pending_set: BTreeSet<BundleKey>,
    peer_has: BTreeMap<BundleKey, u64>,
    peer_inv_done: bool,
    // Receiving side.
    rcv_next: u32,
    rcv_ooo: BTreeMap<u32, Bytes>,
    ack_due: bool,
    unacked: u32,
    ack_at: Option<SimTime>,
    parser: wire::Parser,
    broken: bool,
}

impl Session {
    fn new() -> Self {
        Session {
            next_seq: 0,
            inflight: BTreeMap::new(),
            flight: 0,
            lost: BTreeSet::new(),
            sent_order: VecDeque::new(),
            srtt: None,
            rttvar: Duration::ZERO,
            rto: None,
            rto_at: None,
            out: VecDeque::new(),
            pending: VecDeque::new(),
            pending_set: BTreeSet::new(),
            peer_has: BTreeMap::new(),
            peer_inv_done: false,
            rcv_next: 0,
            rcv_ooo: BTreeMap::new(),
            ack_due: false,
            unacked: 0,
            ack_at: None,
            parser: wire::Parser::default(),
            broken: false,
        }
    }

    fn offer(&mut self, key: BundleKey, version: u64) {
        if self.peer_inv_done
            && self.peer_has.get(&key).copied().unwrap_or(0) < version
            && self.pending_set.insert(key)
        {
            self.pending.push_back(key);
        }
    }

    fn rto(&self, info: &LinkInfo) -> Duration {
        self.rto.unwrap_or_else(|| {
            // Before any sample: two one-way delays, the window's airtime twice over, and
            // a second for half-duplex turnarounds the port does not report.
            let w = window(info) as u64;
            2 * info.delay
                + Duration::from_nanos(2 * airtime_nanos(w, info.rate_bps))
                + Duration::from_secs(1)
        })
    }

    fn on_rtt_sample(&mut self, rtt: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(s) => {
                let diff = s.abs_diff(rtt);
                self.rttvar = (self.rttvar * 3 + diff) / 4;
                self.srtt = Some((s * 7 + rtt) / 8);
            }
        }
        let s = self.srtt.unwrap_or(rtt);
        // At least twice the smoothed RTT: on a half-duplex link an acknowledgement may
        // wait for the peer's whole over, and a spurious timeout resends the window.
        self.rto = Some((s + 4 * self.rttvar).max(2 * s).clamp(MIN_RTO, MAX_RTO));
    }

    fn mark_lost(&mut self, seq: u32) {
        if let Some(seg) = self.inflight.get_mut(&seq)
            && !seg.lost
        {
            seg.lost = true;
            self.flight -= seg.data.len();
            self.lost.insert(seq);
        }
    }
}

/// Bytes a session keeps in flight: the port's queue plus two one-way delays' worth at the
/// line rate, and a few packets.
fn window(info: &LinkInfo) -> usize {
    let bdp = info.rate_bps as f64 / 8.0 * 2.0 * info.delay.as_secs_f64();
    let w = info.buffer as f64 + bdp + 4.0 * max_packet(info) as f64;
    w.min(64.0 * 1024.0 * 1024.0) as usize
}

fn max_packet(info: &LinkInfo) -> usize {
    match info.kind {
        PortKind::Stream => STREAM_PACKET.min(info.mtu.saturating_sub(wire::STREAM_FRAMING)),
        PortKind::Frame | PortKind::Broadcast => info.mtu,
    }
}

/// The `reference` agent (see the module documentation).
#[derive(Debug)]
pub struct ReferenceAgent {
    id: u16,
    rng: ChaCha8Rng,
    held: BTreeMap<BundleKey, Held>,
    ports: Vec<Option<PortState>>,
    sessions: BTreeMap<(u16, u16), Session>,
    accepted: Vec<Accepted>,
    stats: AgentStats,
}

impl ReferenceAgent {
    pub fn new(id: u16, rng: ChaCha8Rng) -> Self {
        ReferenceAgent {
            id,
            rng,
            held: BTreeMap::new(),
            ports: Vec::new(),
            sessions: BTreeMap::new(),
            accepted: Vec::new(),
            stats: AgentStats::default(),
        }
    }

    fn notify(&mut self, key: BundleKey, version: u64, except: Option<(u16, u16)>) {
        for (id, s) in &mut self.sessions {
            if Some(*id) != except {
                s.offer(key, version);
            }
        }
    }

    fn open_session(&mut self, port: u16, peer: u16) {
        if self.sessions.contains_key(&(port, peer)) {
            return;
        }
        let mut s = Session::new();
        // The inventory: every bundle held now. Bundles that arrive later are offered
        // once the peer's inventory is in.
        let entries: Vec<(u64, u64)> = self.held.iter().map(|(k, h)| (k.0, h.version)).collect();
        for chunk in entries.chunks(INV_CHUNK) {
            let m = wire::encode_inv(chunk);
            self.stats.recon_bytes += m.len() as u64;
            s.out.push_back(Chunk::Data(m));
        }
        s.out
            .push_back(Chunk::Data(Bytes::from_static(&[wire::MSG_INV_END])));
        self.stats.recon_bytes += 1;
        self.stats.recon_messages += 1;
        self.sessions.insert((port, peer), s);
        if let Some(Some(p)) = self.ports.get_mut(usize::from(port))
            && p.info.kind != PortKind::Broadcast
        {
            p.hello_at = SimTime::MAX;
        }
    }

    fn handle_packet(&mut self, now: SimTime, port: u16, raw: &Bytes) {
        let Some(p) = Packet::parse(raw) else {
            tracing::trace!(node = self.id, "reference: damaged packet dropped");
            return;
        };
        if p.src == self.id || (p.dst != self.id && p.dst != BROADCAST) {
            return;
        }
        let known = self.sessions.contains_key(&(port, p.src));
        if !known {
            self.open_session(port, p.src);
            // Answer a newcomer so it learns of us without waiting for our next beacon.
            if let Some(Some(ps)) = self.ports.get_mut(usize::from(port)) {
                ps.hello_due = true;
            }
        }
        match p.kind {
            wire::DATA if p.body.len() >= 4 => {
                let seq = u32::from_be_bytes([p.body[0], p.body[1], p.body[2], p.body[3]]);
                self.handle_data(now, port, p.src, seq, p.body.slice(4..));
            }
            wire::ACK => self.handle_ack(now, port, p.src, &p.body),
            _ => {}
        }
    }

    fn handle_data(&mut self, now: SimTime, port: u16, peer: u16, seq: u32, data: Bytes) {
        let info = self.port_info(port);
        let Some(s) = self.sessions.get_mut(&(port, peer)) else {
            return;
        };
        if seq < s.rcv_next || s.rcv_ooo.contains_key(&seq) {
            // A duplicate: our ACK was lost or late; repeat it now.
            s.ack_due = true;
            return;
        }
        s.rcv_ooo.insert(seq, data);
        let mut messages = Vec::new();
        while let Some(d) = s.rcv_ooo.remove(&s.rcv_next) {
            s.rcv_next += 1;
            if !s.broken && s.parser.feed(&d, &mut messages).is_err() {
                tracing::warn!(
                    node = self.id,
                    peer,
                    "reference: malformed stream; session stops accepting"
                );
                s.broken = true;
            }
        }
        s.unacked += 1;
        if !s.rcv_ooo.is_empty() || s.unacked >= ACK_EVERY {
            s.ack_due = true;
        } else {
            // Acknowledge when the flow pauses: a little over one packet's airtime.
            let gap = info.map_or(Duration::from_millis(5), |i| {
                Duration::from_nanos(airtime_nanos(max_packet(&i) as u64 * 3 / 2, i.rate_bps))
                    .max(Duration::from_millis(5))
            });
            s.ack_at = Some(now + gap);
        }
        for m in messages {
            self.handle_message(now, port, peer, m);
        }
    }

    fn handle_message(&mut self, now: SimTime, port: u16, peer: u16, m: Message) {
        let sid = (port, peer);
        match m {
            Message::Inv(entries) => {
                if let Some(s) = self.sessions.get_mut(&sid) {
                    for (k, v) in entries {
                        let e = s.peer_has.entry(BundleKey(k)).or_insert(0);
                        *e = (*e).max(v);
                    }
                }
            }
            Message::InvEnd => {
                let held: Vec<(BundleKey, u64)> =
                    self.held.iter().map(|(k, h)| (*k, h.version)).collect();
                if let Some(s) = self.sessions.get_mut(&sid) {
                    s.peer_inv_done = true;
                    for (k, v) in held {
                        s.offer(k, v);
                    }
                }
            }
            Message::Bundle(h) => {
                let key = BundleKey(h.key);
                if let Some(s) = self.sessions.get_mut(&sid) {
                    let e = s.peer_has.entry(key).or_insert(0);
                    *e = (*e).max(h.version);
                }
                let (have_version, have_len) = self
                    .held
                    .get(&key)
                    .map_or((0, 0), |x| (x.version, x.payload_len));
                if h.version <= have_version || h.base > have_len {
                    return;
                }
                let new_bytes = h.payload_len.saturating_sub(have_len);
                self.held.insert(
                    key,
                    Held {
                        journal: h.journal,
                        version: h.version,
                        payload_len: h.payload_len,
                        manifest_len: u64::from(h.manifest_len),
                    },
                );
                self.accepted.push(Accepted {
                    at: now,
                    key,
                    version: h.version,
                    manifest_bytes: u64::from(h.manifest_len),
                    payload_bytes: new_bytes,
                });
                self.notify(key, h.version, Some(sid));
            }
        }
    }

    fn handle_ack(&mut self, now: SimTime, port: u16, peer: u16, body: &[u8]) {
        let Some(info) = self.port_info(port) else {
            return;
        };
        let Some(s) = self.sessions.get_mut(&(port, peer)) else {
            return;
        };
        if body.len() < 5 {
            return;
        }
        let next = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        let n = usize::from(body[4]);
        let mut ranges = vec![(0u32, next)];
        for i in 0..n {
            let o = 5 + 8 * i;
            let Some(r) = body.get(o..o + 8) else { break };
            ranges.push((
                u32::from_be_bytes([r[0], r[1], r[2], r[3]]),
                u32::from_be_bytes([r[4], r[5], r[6], r[7]]),
            ));
        }
        let mut newest: Option<(SimTime, bool)> = None;
        let mut acked_any = false;
        for (a, b) in ranges {
            let seqs: Vec<u32> = s.inflight.range(a..b).map(|(k, _)| *k).collect();
            for q in seqs {
                let Some(seg) = s.inflight.remove(&q) else {
                    continue;
                };
                acked_any = true;
                if seg.lost {
                    s.lost.remove(&q);
                } else {
                    s.flight -= seg.data.len();
                }
                if newest.is_none_or(|(t, _)| seg.sent_at > t) {
                    newest = Some((seg.sent_at, seg.retransmitted));
                }
            }
        }
        let Some((newest_sent, retransmitted)) = newest else {
            return;
        };
        if !retransmitted {
            s.on_rtt_sample(now - newest_sent);
        }
        // Anything sent before the newest acknowledged packet (by more than a quarter RTT,
        // for reordering) and still unacknowledged is lost.
        let reo = s.srtt.unwrap_or(Duration::ZERO) / 4;
        while let Some(&(t, q)) = s.sent_order.front() {
            if t + reo >= newest_sent {
                break;
            }
            s.sent_order.pop_front();
            if s.inflight
                .get(&q)
                .is_some_and(|g| g.sent_at == t && !g.lost)
            {
                s.mark_lost(q);
            }
        }
        if acked_any {
            s.rto_at = if s.inflight.len() > s.lost.len() {
                Some(now + s.rto(&info))
            } else {
                None
            };
        }
    }

    fn port_info(&self, port: u16) -> Option<LinkInfo> {
        self.ports
            .get(usize::from(port))
            .and_then(|p| p.as_ref())
            .map(|p| p.info)
    }

    /// The next packet for `port`, or None. `room` is the largest packet the port takes now.
    fn next_packet(
        &mut self,
        now: SimTime,
        port: u16,
        info: &LinkInfo,
        room: usize,
    ) -> Option<Bytes> {
        let ps = self.ports[usize::from(port)].as_mut()?;
        if ps.hello_due {
            if room < wire::PACKET_OVERHEAD {
                return None;
            }
            ps.hello_due = false;
            return Some(wire::packet(wire::HELLO, self.id, BROADCAST, &[]));
        }
        let peers: Vec<u16> = self
            .sessions
            .range((port, 0)..=(port, u16::MAX))
            .map(|(k, _)| k.1)
            .collect();
        if peers.is_empty() {
            return None;
        }
        let start = ps.rr % peers.len();
        for i in 0..peers.len() {
            let peer = peers[(start + i) % peers.len()];
            if let Some(p) = self.session_packet(now, port, peer, info, room) {
                if let Some(Some(ps)) = self.ports.get_mut(usize::from(port)) {
                    ps.rr = start + i + 1;
                }
                return Some(p);
            }
        }
        None
    }

    fn session_packet(
        &mut self,
        now: SimTime,
        port: u16,
        peer: u16,
        info: &LinkInfo,
        room: usize,
    ) -> Option<Bytes> {
        let id = self.id;
        let max = max_packet(info).min(room);
        let win = window(info);
        let held = &self.held;
        let s = self.sessions.get_mut(&(port, peer))?;
        // 1. Acknowledgements first: they unblock the peer.
        if s.ack_due {
            let fit = max.saturating_sub(wire::PACKET_OVERHEAD + 5) / 8;
            let ranges: Vec<(u32, u32)> = coalesce(s.rcv_ooo.keys().copied(), fit.min(MAX_RANGES));
            let len = wire::PACKET_OVERHEAD + 5 + 8 * ranges.len();
            if len <= max {
                let mut body = Vec::with_capacity(5 + 8 * ranges.len());
                body.extend_from_slice(&s.rcv_next.to_be_bytes());
                body.push(ranges.len() as u8);
                for (a, b) in ranges {
                    body.extend_from_slice(&a.to_be_bytes());
                    body.extend_from_slice(&b.to_be_bytes());
                }
                s.ack_due = false;
                s.unacked = 0;
                s.ack_at = None;
                return Some(wire::packet(wire::ACK, id, peer, &[&body]));
            }
            return None;
        }
        // 2. Retransmissions.
        if let Some(&q) = s.lost.iter().next() {
            let seg = s.inflight.get_mut(&q)?;
            if wire::DATA_HEADER + seg.data.len() > max {
                return None;
            }
            s.lost.remove(&q);
            seg.lost = false;
            seg.retransmitted = true;
            seg.sent_at = now;
            s.flight += seg.data.len();
            s.sent_order.push_back((now, q));
            let data = seg.data.clone();
            self.stats.retransmitted_bytes += data.len() as u64;
            let rto = s.rto(info);
            s.rto_at.get_or_insert(now + rto);
            return Some(wire::packet(
                wire::DATA,
                id,
                peer,
                &[&q.to_be_bytes(), &data],
            ));
        }
        // 3. New data, within the window.
        // Whole packets only: wait for room rather than send runts.
        let cap = max_packet(info).checked_sub(wire::DATA_HEADER)?;
        if cap == 0 || wire::DATA_HEADER + cap > room || s.flight + cap > win.max(cap) {
            return None;
        }
        if s.out.is_empty() {
            while let Some(key) = s.pending.pop_front() {
                s.pending_set.remove(&key);
                let Some(h) = held.get(&key) else { continue };
                let base = s.peer_has.get(&key).copied().unwrap_or(0);
                if base >= h.version {
                    continue;
                }
                // Journals: the peer holds a prefix of `base` bytes; send the tail.
                let base_len = if h.journal {
                    base.min(h.payload_len)
                } else {
                    0
                };
                let header = BundleHeader {
                    journal: h.journal,
                    key: key.0,
                    version: h.version,
                    payload_len: h.payload_len,
                    base: base_len,
                    manifest_len: u16::try_from(h.manifest_len).unwrap_or(u16::MAX),
                };
                s.out.push_back(Chunk::Data(header.encode()));
                s.out.push_back(Chunk::Zeros(header.body_len()));
                s.peer_has.insert(key, h.version);
                break;
            }
        }
        let mut seg = Vec::with_capacity(cap);
        while seg.len() < cap {
            let Some(front) = s.out.front_mut() else {
                break;
            };
            let want = cap - seg.len();
            match front {
                Chunk::Data(b) => {
                    let n = want.min(b.len());
                    seg.extend_from_slice(&b.split_to(n));
                    if b.is_empty() {
                        s.out.pop_front();
                    }
                }
                Chunk::Zeros(z) => {
                    let n = (want as u64).min(*z);
                    seg.resize(seg.len() + n as usize, 0);
                    *z -= n;
                    if *z == 0 {
                        s.out.pop_front();
                    }
                }
            }
        }
        if seg.is_empty() {
            return None;
        }
        let q = s.next_seq;
        s.next_seq += 1;
        let data = Bytes::from(seg);
        s.flight += data.len();
        s.sent_order.push_back((now, q));
        s.inflight.insert(
            q,
            Segment {
                data: data.clone(),
                sent_at: now,
                retransmitted: false,
                lost: false,
            },
        );
        let rto = s.rto(info);
        s.rto_at.get_or_insert(now + rto);
        Some(wire::packet(
            wire::DATA,
            id,
            peer,
            &[&q.to_be_bytes(), &data],
        ))
    }
}

/// Sorted sequence numbers as half-open ranges, at most `max` of them.
fn coalesce(seqs: impl Iterator<Item = u32>, max: usize) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for q in seqs {
        match out.last_mut() {
            Some((_, end)) if *end == q => *end += 1,
            _ => {
                if out.len() == max {
                    break;
                }
                out.push((q, q + 1));
            }
        }
    }
    out
}

impl Endpoint for ReferenceAgent {
    fn handle_frame(&mut self, now: SimTime, port: PortId, frame: Bytes) {
        let stream = self
            .port_info(port.0)
            .is_some_and(|i| i.kind == PortKind::Stream);
        if !stream {
            self.handle_packet(now, port.0, &frame);
            return;
        }
        let Some(Some(ps)) = self.ports.get_mut(usize::from(port.0)) else {
            return;
        };
        ps.rx.extend_from_slice(&frame);
        let mut packets = Vec::new();
        while let Some(p) = wire::deframe(&mut ps.rx) {
            packets.push(p);
        }
        for p in packets {
            self.handle_packet(now, port.0, &p);
        }
    }

    fn handle_link_state(&mut self, _now: SimTime, port: PortId, up: bool) {
        tracing::debug!(node = self.id, port = port.0, up, "reference: link state");
        if let Some(Some(ps)) = self.ports.get_mut(usize::from(port.0)) {
            // Bytes of a half-received packet died with the call.
            ps.rx.clear();
        }
    }

    fn handle_transmit_error(&mut self, _now: SimTime, port: PortId, error: &TransmitError) {
        // Only possible if the link changed under us (we never write past `free`); the
        // packet is recovered like a loss.
        tracing::debug!(node = self.id, port = port.0, %error, "reference: transmit refused");
    }

    fn handle_timeout(&mut self, now: SimTime) {
        let ports_with_peers: BTreeSet<u16> = self.sessions.keys().map(|k| k.0).collect();
        for (i, ps) in self.ports.iter_mut().enumerate() {
            let Some(ps) = ps else { continue };
            if ps.hello_at <= now {
                ps.hello_due = true;
                ps.hello_at = if !ports_with_peers.contains(&(i as u16)) {
                    now + HELLO_SEARCH
                } else if ps.info.kind == PortKind::Broadcast {
                    now + HELLO_KEEP
                } else {
                    SimTime::MAX
                };
            }
        }
        for s in self.sessions.values_mut() {
            if s.ack_at.is_some_and(|t| t <= now) {
                s.ack_due = true;
                s.ack_at = None;
            }
            if s.rto_at.is_some_and(|t| t <= now) {
                s.rto_at = None;
                let seqs: Vec<u32> = s.inflight.keys().copied().collect();
                for q in seqs {
                    s.mark_lost(q);
                }
                s.sent_order.clear();
                if let Some(r) = s.rto {
                    s.rto = Some((r * 2).min(MAX_RTO));
                } else {
                    s.rto = Some(MAX_RTO.min(Duration::from_secs(60)));
                }
            }
        }
    }

    fn poll_transmit(&mut self, now: SimTime, port: PortId, link: &LinkInfo) -> Option<Bytes> {
        let p = usize::from(port.0);
        if self.ports.len() <= p {
            self.ports.resize_with(p + 1, || None);
        }
        match &mut self.ports[p] {
            Some(ps) => ps.info = *link,
            slot @ None => {
                // Point-to-point ports say hello at once; radios on a shared medium pick a
                // random moment in the first 50 ms so they do not all key up together.
                let (hello_due, hello_at) = if link.kind == PortKind::Broadcast {
                    let jitter = self.rng.next_u64() % 50_000_000;
                    (false, now + Duration::from_nanos(jitter))
                } else {
                    (true, now + HELLO_SEARCH)
                };
                *slot = Some(PortState {
                    info: *link,
                    hello_due,
                    hello_at,
                    rx: BytesMut::new(),
                    rr: 0,
                });
            }
        }
        if !link.up {
            return None;
        }
        let framing = if link.kind == PortKind::Stream {
            wire::STREAM_FRAMING
        } else {
            0
        };
        let room = link.free.checked_sub(framing)?;
        let packet = self.next_packet(now, port.0, link, room)?;
        if link.kind == PortKind::Stream {
            Some(wire::frame_for_stream(&packet))
        } else {
            Some(packet)
        }
    }

    fn poll_timeout(&mut self) -> Option<SimTime> {
        let ports = self.ports.iter().flatten().map(|p| p.hello_at);
        let sessions = self
            .sessions
            .values()
            .flat_map(|s| [s.ack_at, s.rto_at])
            .flatten();
        ports.chain(sessions).filter(|t| *t != SimTime::MAX).min()
    }
}

impl LabAgent for ReferenceAgent {
    fn handle_insert(&mut self, _now: SimTime, bundle: &BundleSpec) {
        let version = bundle.version_at(bundle.payload_len);
        self.held.insert(
            bundle.key,
            Held {
                journal: bundle.kind == crate::agent::BundleKind::Journal,
                version,
                payload_len: bundle.payload_len,
                manifest_len: bundle.manifest_len,
            },
        );
        self.notify(bundle.key, version, None);
    }

    fn handle_append(&mut self, _now: SimTime, key: BundleKey, bytes: u64) {
        let Some(h) = self.held.get_mut(&key) else {
            tracing::warn!(
                node = self.id,
                key = key.0,
                "reference: append to a journal not held"
            );
            return;
        };
        h.payload_len += bytes;
        h.version = h.payload_len;
        let v = h.version;
        self.notify(key, v, None);
    }

    fn accepted(&self) -> &[Accepted] {
        &self.accepted
    }

    fn stats(&self) -> AgentStats {
        self.stats
    }
}
