//! A shared CSMA radio channel for N radios (the UHF packet radio).
//!
//! Every transmission is heard by the radios adjacent to the sender in an [`Adjacency`]
//! graph, so chains such as A-B-C (A and C out of range) are expressible. A reception is
//! lost at a receiver when another transmission it hears overlaps it in time (collision),
//! or when the receiver transmits during it (a radio is half duplex). Carrier sense is
//! local: a radio senses a neighbour's transmission once that transmission's preamble has
//! been on the air (`overhead` bytes of airtime), so two radios that start within one
//! preamble of each other collide, and hidden terminals always can. Access is
//! non-persistent CSMA: a radio with a frame waits a random backoff of `0..cw` slots; if it
//! then senses the channel busy it doubles `cw` (up to `cw_max`) and waits `1..=cw` slots
//! again; after each transmission `cw` resets. This module does not model capture,
//! distance-dependent signal strength, or propagation delay (the `delay` setting only
//! delays delivery to the host).
//!
//! The radio's transmit queue is [`TxQueue`]: by default a drop-tail queue of `buffer`
//! bytes; `Frames(n)` also caps it at `n` waiting frames; `None` is a radio without a
//! queue (Serval's `fakecsmaradio`): each frame goes on the air the moment the host hands
//! it over, with no carrier sense and no backoff, so a frame handed over while the radio is
//! still sending overlaps its own previous frame and both are lost at every receiver.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use bytes::Bytes;

use super::channel::Channel;
use super::{DropReason, LinkEvent, LinkInfo, LinkModel, LinkStats, PortKind, TransmitError};
use crate::config::{ConfigError, LinkConfig, LinkKind, Side, TxQueue};
use crate::lora::LoraPhy;
use crate::rng::{below, link_rng};
use crate::time::{SimTime, airtime_nanos, nanos};
use crate::trace::{BROADCAST, TraceEvent, TraceKind, frame_hash};

/// Who hears whom: a symmetric graph over radios `0..n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adjacency {
    neighbors: Vec<Vec<u32>>,
}

impl Adjacency {
    /// `n` radios and no edges.
    pub fn new(n: usize) -> Self {
        Adjacency {
            neighbors: vec![Vec::new(); n],
        }
    }

    /// Everyone hears everyone.
    pub fn full(n: usize) -> Self {
        let mut a = Self::new(n);
        for i in 0..n {
            for j in i + 1..n {
                a.connect(i, j);
            }
        }
        a
    }

    /// `0 - 1 - 2 - ... - (n-1)`: each radio hears only its predecessor and successor.
    pub fn chain(n: usize) -> Self {
        let mut a = Self::new(n);
        for i in 1..n {
            a.connect(i - 1, i);
        }
        a
    }

    /// A `w` x `h` grid, radio `y * w + x`, with range `radius` in grid units (1.0: the 4
    /// orthogonal neighbours; 1.5: also the diagonals).
    pub fn grid(w: usize, h: usize, radius: f64) -> Self {
        let pos: Vec<(f64, f64)> = (0..w * h)
            .map(|i| ((i % w) as f64, (i / w) as f64))
            .collect();
        Self::geometric(&pos, radius)
    }

    /// Radios at `pos`, in range when their distance is at most `radius`.
    pub fn geometric(pos: &[(f64, f64)], radius: f64) -> Self {
        let mut a = Self::new(pos.len());
        for i in 0..pos.len() {
            for j in i + 1..pos.len() {
                let (dx, dy) = (pos[i].0 - pos[j].0, pos[i].1 - pos[j].1);
                if dx * dx + dy * dy <= radius * radius {
                    a.connect(i, j);
                }
            }
        }
        a
    }

    /// Adds the edge `i - j` (both directions). Self-loops and repeats are ignored.
    pub fn connect(&mut self, i: usize, j: usize) {
        if i == j || self.in_range(i, j) {
            return;
        }
        self.neighbors[i].push(j as u32);
        self.neighbors[j].push(i as u32);
    }

    pub fn len(&self) -> usize {
        self.neighbors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.neighbors.is_empty()
    }

    pub fn neighbors(&self, i: usize) -> &[u32] {
        &self.neighbors[i]
    }

    pub fn in_range(&self, i: usize, j: usize) -> bool {
        self.neighbors[i].contains(&(j as u32))
    }
}

#[derive(Debug)]
enum RadioState {
    Idle,
    Backoff,
    Tx { id: u64, frame: Bytes },
}

/// A transmission being heard by a radio.
#[derive(Debug)]
struct Rx {
    id: u64,
    start: SimTime,
    end: SimTime,
    doomed: Option<DropReason>,
}

#[derive(Debug)]
struct Radio {
    queue: VecDeque<Bytes>,
    queued: usize,
    state: RadioState,
    cw: u32,
    deadline: Option<SimTime>,
    rx: Vec<Rx>,
    /// `TxQueue::None`: this radio's frames on the air (several when the host handed
    /// frames over faster than they could be sent).
    sending: Vec<(u64, Bytes)>,
    /// Impairments of frames arriving at this radio; its RNG also draws the backoffs.
    ch: Channel,
    stats: LinkStats,
}

impl Radio {
    fn transmitting(&self) -> bool {
        matches!(self.state, RadioState::Tx { .. }) || !self.sending.is_empty()
    }
}

#[derive(Debug)]
struct Pending {
    at: SimTime,
    seq: u64,
    from: u32,
    to: u32,
    frame: Bytes,
    corrupted: bool,
}
impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// A shared radio channel; port `i` is radio `i` of the [`Adjacency`].
#[derive(Debug)]
pub struct CsmaMedium {
    rate: u64,
    overhead: u64,
    /// LoRa radios: each frame's air time by Semtech's formula.
    lora: Option<LoraPhy>,
    /// Keep each radio's transmissions (`LinkStats::air_log`): the band has a duty-cycle
    /// limit to check.
    log_air: bool,
    mtu: usize,
    buffer: usize,
    delay: Duration,
    slot: u64,
    detect: u64,
    cw_min: u32,
    cw_max: u32,
    txqueue: TxQueue,
    adj: Adjacency,
    radios: Vec<Radio>,
    timers: BinaryHeap<Reverse<(SimTime, u32)>>,
    /// `TxQueue::None`: ends of transmissions, `(end, radio, transmission id)`.
    ends: BinaryHeap<Reverse<(SimTime, u32, u64)>>,
    pending: BinaryHeap<Reverse<Pending>>,
    tx_seq: u64,
    events: VecDeque<LinkEvent>,
    trace: bool,
}

impl CsmaMedium {
    /// Builds the medium of `cfg` (kind `csma`; its `up` direction applies to every
    /// radio) over `adj`. Radio `i` draws from `link_rng(seed, link_id, i)`.
    pub fn new(
        cfg: &LinkConfig,
        adj: Adjacency,
        seed: u64,
        link_id: u64,
    ) -> Result<CsmaMedium, ConfigError> {
        cfg.validate()?;
        if cfg.kind != LinkKind::Csma {
            return Err(ConfigError::invalid(
                "kind",
                cfg.kind.as_str(),
                "csma for a shared medium",
            ));
        }
        let d = &cfg.up;
        let radios = (0..adj.len())
            .map(|i| Radio {
                queue: VecDeque::new(),
                queued: 0,
                state: RadioState::Idle,
                cw: cfg.csma.cw_min,
                deadline: None,
                rx: Vec::new(),
                sending: Vec::new(),
                ch: Channel::new(d, cfg.crc, link_rng(seed, link_id, i as u64)),
                stats: LinkStats::default(),
            })
            .collect();
        let detect = nanos(cfg.csma_detect());
        Ok(CsmaMedium {
            rate: d.rate_bps,
            overhead: d.overhead as u64,
            lora: cfg.lora,
            log_air: cfg.duty.is_some(),
            mtu: d.mtu,
            buffer: usize::try_from(cfg.buffer_bytes(Side::A)).unwrap_or(usize::MAX),
            delay: d.delay,
            slot: nanos(cfg.csma_slot()),
            detect,
            cw_min: cfg.csma.cw_min,
            cw_max: cfg.csma.cw_max,
            txqueue: cfg.csma.txqueue,
            adj,
            radios,
            timers: BinaryHeap::new(),
            ends: BinaryHeap::new(),
            pending: BinaryHeap::new(),
            tx_seq: 0,
            events: VecDeque::new(),
            trace: false,
        })
    }

    pub fn adjacency(&self) -> &Adjacency {
        &self.adj
    }

    /// True while radio `i` senses a transmission.
    pub fn carrier_sensed(&self, now: SimTime, i: usize) -> bool {
        self.radios[i].transmitting()
            || self.radios[i]
                .rx
                .iter()
                .any(|r| r.end > now && r.start.plus_nanos(self.detect) <= now)
    }

    fn trace(&mut self, ev: TraceEvent) {
        if self.trace {
            self.events.push_back(LinkEvent::Trace(ev));
        }
    }

    fn set_timer(&mut self, i: usize, at: SimTime) {
        self.radios[i].deadline = Some(at);
        self.timers.push(Reverse((at, i as u32)));
    }

    fn backoff(&mut self, i: usize, t: SimTime, first: bool) {
        let r = &mut self.radios[i];
        let slots = if first {
            below(&mut r.ch.rng, u64::from(r.cw))
        } else {
            1 + below(&mut r.ch.rng, u64::from(r.cw))
        };
        r.state = RadioState::Backoff;
        self.set_timer(i, t.plus_nanos(slots * self.slot));
    }

    fn clean_timers(&mut self) {
        while let Some(Reverse((t, i))) = self.timers.peek() {
            if self.radios[*i as usize].deadline == Some(*t) {
                break;
            }
            self.timers.pop();
        }
    }

    fn next_time(&mut self) -> SimTime {
        self.clean_timers();
        let a = self.timers.peek().map_or(SimTime::MAX, |r| r.0.0);
        let b = self.pending.peek().map_or(SimTime::MAX, |r| r.0.at);
        let c = self.ends.peek().map_or(SimTime::MAX, |r| r.0.0);
        a.min(b).min(c)
    }

    fn advance(&mut self, now: SimTime) {
        loop {
            let t = self.next_time();
            if t > now {
                break;
            }
            if self.pending.peek().is_some_and(|p| p.0.at == t) {
                let Some(Reverse(p)) = self.pending.pop() else {
                    break;
                };
                self.deliver(t, p.from, p.to, p.frame, p.corrupted);
                continue;
            }
            if self.ends.peek().is_some_and(|e| e.0.0 == t) {
                let Some(Reverse((_, i, id))) = self.ends.pop() else {
                    break;
                };
                self.finish_unqueued(i as usize, t, id);
                continue;
            }
            let Some(Reverse((_, i))) = self.timers.pop() else {
                break;
            };
            let i = i as usize;
            self.radios[i].deadline = None;
            match self.radios[i].state {
                RadioState::Backoff => {
                    if self.carrier_sensed(t, i) {
                        let r = &mut self.radios[i];
                        r.cw = (r.cw.saturating_mul(2)).min(self.cw_max);
                        self.backoff(i, t, false);
                    } else {
                        self.start_tx(i, t);
                    }
                }
                RadioState::Tx { .. } => self.finish_tx(i, t),
                RadioState::Idle => {}
            }
        }
    }

    /// Takes the next queued frame and puts it on the air.
    fn start_tx(&mut self, i: usize, t: SimTime) {
        let r = &mut self.radios[i];
        let Some(frame) = r.queue.pop_front() else {
            r.state = RadioState::Idle;
            return;
        };
        r.queued -= frame.len();
        let (id, end) = self.launch(i, t, &frame, true);
        self.radios[i].state = RadioState::Tx { id, frame };
        self.set_timer(i, end);
    }

    /// `TxQueue::None`: `frame` goes on the air now, whatever the radio or the channel is
    /// doing.
    fn start_unqueued(&mut self, i: usize, t: SimTime, frame: Bytes) {
        let (id, end) = self.launch(i, t, &frame, false);
        self.radios[i].sending.push((id, frame));
        self.ends.push(Reverse((end, i as u32, id)));
    }

    /// Radio `i` starts sending `frame` at `t`: counts it, and every radio in range starts
    /// hearing it. Returns the transmission's id and end. `writable`: the frame left the
    /// queue, so the sender may fill it again.
    fn launch(&mut self, i: usize, t: SimTime, frame: &Bytes, writable: bool) -> (u64, SimTime) {
        let r = &mut self.radios[i];
        let air = match self.lora {
            Some(p) => p.airtime_nanos(frame.len()),
            None => airtime_nanos(frame.len() as u64 + self.overhead, self.rate),
        };
        r.stats.sent.add(frame.len());
        r.stats.air_nanos += air;
        if self.log_air {
            r.stats.air_log.push((t.as_nanos(), air));
        }
        // A radio cannot hear while it transmits.
        for rx in &mut r.rx {
            rx.doomed.get_or_insert(DropReason::ReceiverBusy);
        }
        let id = self.tx_seq;
        self.tx_seq += 1;
        let end = t.plus_nanos(air);
        let len = frame.len() as u32;
        let hash = if self.trace { frame_hash(frame) } else { 0 };
        for k in 0..self.adj.neighbors[i].len() {
            let n = self.adj.neighbors[i][k] as usize;
            let nb = &mut self.radios[n];
            let mut doomed = nb.transmitting().then_some(DropReason::ReceiverBusy);
            for rx in nb.rx.iter_mut().filter(|rx| rx.end > t) {
                rx.doomed.get_or_insert(DropReason::Collision);
                doomed.get_or_insert(DropReason::Collision);
            }
            nb.rx.push(Rx {
                id,
                start: t,
                end,
                doomed,
            });
        }
        if writable {
            self.events.push_back(LinkEvent::Writable { port: i });
        }
        self.trace(TraceEvent {
            time: t,
            from: i as u32,
            to: BROADCAST,
            kind: TraceKind::Send,
            len,
            hash,
        });
        (id, end)
    }

    fn finish_tx(&mut self, i: usize, t: SimTime) {
        let state = std::mem::replace(&mut self.radios[i].state, RadioState::Idle);
        let RadioState::Tx { id, frame } = state else {
            return;
        };
        self.land(i, t, id, &frame);
        let r = &mut self.radios[i];
        r.cw = self.cw_min;
        if !r.queue.is_empty() {
            self.backoff(i, t, true);
        }
    }

    /// `TxQueue::None`: transmission `id` of radio `i` ends; once the radio is silent it
    /// can take a frame again without overlapping itself.
    fn finish_unqueued(&mut self, i: usize, t: SimTime, id: u64) {
        let r = &mut self.radios[i];
        let Some(pos) = r.sending.iter().position(|s| s.0 == id) else {
            return;
        };
        let (_, frame) = r.sending.remove(pos);
        self.land(i, t, id, &frame);
        if self.radios[i].sending.is_empty() {
            self.events.push_back(LinkEvent::Writable { port: i });
        }
    }

    /// Transmission `id` of radio `i` (`frame`) ends at `t`: each radio in range gets it,
    /// unless it was doomed while it was being heard, then meets that radio's channel.
    fn land(&mut self, i: usize, t: SimTime, id: u64, frame: &Bytes) {
        for k in 0..self.adj.neighbors[i].len() {
            let n = self.adj.neighbors[i][k] as usize;
            let nb = &mut self.radios[n];
            let Some(pos) = nb.rx.iter().position(|rx| rx.id == id) else {
                continue;
            };
            let rx = nb.rx.swap_remove(pos);
            let fate = match rx.doomed {
                Some(reason) => Err(reason),
                None => nb.ch.transit(t, frame.clone()),
            };
            match fate {
                Err(reason) => {
                    self.radios[i].stats.drop(reason, frame.len());
                    if self.trace {
                        self.trace(TraceEvent {
                            time: t,
                            from: i as u32,
                            to: n as u32,
                            kind: TraceKind::Drop(reason),
                            len: frame.len() as u32,
                            hash: frame_hash(frame),
                        });
                    }
                }
                Ok(f) => {
                    let copies = 1 + usize::from(f.duplicate);
                    let s = &mut self.radios[i].stats;
                    s.duplicated += u64::from(f.duplicate);
                    s.corrupted += u64::from(f.corrupted);
                    s.reordered += u64::from(f.reordered);
                    for _ in 0..copies {
                        if f.at <= t {
                            self.deliver(t, i as u32, n as u32, f.frame.clone(), f.corrupted);
                        } else {
                            self.tx_seq += 1;
                            self.pending.push(Reverse(Pending {
                                at: f.at,
                                seq: self.tx_seq,
                                from: i as u32,
                                to: n as u32,
                                frame: f.frame.clone(),
                                corrupted: f.corrupted,
                            }));
                        }
                    }
                }
            }
        }
    }

    fn deliver(&mut self, t: SimTime, from: u32, to: u32, frame: Bytes, corrupted: bool) {
        self.radios[from as usize].stats.delivered.add(frame.len());
        self.radios[to as usize].stats.received.add(frame.len());
        if self.trace {
            self.trace(TraceEvent {
                time: t,
                from,
                to,
                kind: if corrupted {
                    TraceKind::DeliverCorrupt
                } else {
                    TraceKind::Deliver
                },
                len: frame.len() as u32,
                hash: frame_hash(&frame),
            });
        }
        self.events.push_back(LinkEvent::Deliver {
            port: to as usize,
            frame,
        });
    }
}

impl LinkModel for CsmaMedium {
    fn ports(&self) -> usize {
        self.radios.len()
    }

    fn info(&self, _now: SimTime, port: usize) -> LinkInfo {
        let r = &self.radios[port];
        // What the radio's driver can know: its queue space; an unqueued radio has none,
        // so it offers one frame while it is silent and nothing while its own frame is on
        // the air (the host knows when it last wrote and the rate; it does not sense the
        // channel).
        let (free, buffer) = match self.txqueue {
            TxQueue::None if r.sending.is_empty() => (self.mtu, self.mtu),
            TxQueue::None => (0, self.mtu),
            TxQueue::Frames(n) if r.queue.len() >= n as usize => (0, self.buffer),
            TxQueue::Frames(_) | TxQueue::Bytes => {
                (self.buffer.saturating_sub(r.queued), self.buffer)
            }
        };
        LinkInfo {
            kind: PortKind::Broadcast,
            mtu: self.mtu,
            free,
            buffer,
            rate_bps: self.rate,
            overhead: self.overhead as usize,
            delay: self.delay,
            up: true,
        }
    }

    fn handle_transmit(
        &mut self,
        now: SimTime,
        port: usize,
        data: Bytes,
    ) -> Result<(), TransmitError> {
        if port >= self.radios.len() {
            return Err(TransmitError::NoSuchPort(port));
        }
        self.advance(now);
        let len = data.len();
        if len == 0 {
            return Ok(());
        }
        let mut ev = TraceEvent {
            time: now,
            from: port as u32,
            to: BROADCAST,
            kind: TraceKind::Enqueue,
            len: len as u32,
            hash: if self.trace { frame_hash(&data) } else { 0 },
        };
        let r = &mut self.radios[port];
        if len > self.mtu {
            r.stats.refused.add(len);
            ev.kind = TraceKind::Refuse;
            self.trace(ev);
            return Err(TransmitError::TooBig { len, mtu: self.mtu });
        }
        r.stats.offered.add(len);
        if self.txqueue == TxQueue::None {
            self.trace(ev);
            self.start_unqueued(port, now, data);
            return Ok(());
        }
        let free = self.buffer.saturating_sub(r.queued);
        let full = match self.txqueue {
            TxQueue::Frames(n) => r.queue.len() >= n as usize,
            _ => false,
        };
        if len > free || full {
            let free = if full { 0 } else { free };
            r.stats.drop(DropReason::QueueFull, len);
            ev.kind = TraceKind::Drop(DropReason::QueueFull);
            self.trace(ev);
            return Err(TransmitError::QueueFull { len, free });
        }
        r.queued += len;
        r.queue.push_back(data);
        if matches!(r.state, RadioState::Idle) {
            self.backoff(port, now, true);
        }
        self.trace(ev);
        Ok(())
    }

    fn handle_timeout(&mut self, now: SimTime) {
        self.advance(now);
    }

    fn poll_timeout(&mut self) -> Option<SimTime> {
        let t = self.next_time();
        (t != SimTime::MAX).then_some(t)
    }

    fn poll_event(&mut self) -> Option<LinkEvent> {
        self.events.pop_front()
    }

    fn stats(&self, port: usize) -> &LinkStats {
        &self.radios[port].stats
    }

    fn set_trace(&mut self, on: bool) {
        self.trace = on;
    }
}
