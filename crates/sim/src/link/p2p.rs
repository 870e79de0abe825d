//! The point-to-point link: frames or a modem byte stream, full or half duplex.
//!
//! Each direction has a transmit queue (drop-tail in bytes; only what waits counts), a
//! serializer at the direction's rate, and a [`Channel`] of impairments. Half duplex shares
//! one air between the directions and hands the turn over like an ARQ modem: the side
//! holding the turn keeps it while it has data (up to `max_over` if the other side waits),
//! then the other side gets it after the turnaround time. A stream link is a modem: the
//! queue is its TX buffer, the air carries chunks of up to `chunk` bytes, and a write that
//! does not fit drops the call until the redial time has passed.
//!
//! A frame link may add a per-datagram `header` (IPv4 + UDP on an IP path): a datagram of
//! `len` bytes then occupies `len + header` bytes of queue and airtime and is counted as
//! `len + header` bytes in every byte counter of [`LinkStats`]; the receiver gets the
//! `len` bytes it was given. The largest datagram accepted is `mtu - header`.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::channel::Channel;
use super::{DropReason, LinkEvent, LinkInfo, LinkModel, LinkStats, PortKind, TransmitError};
use crate::config::{ConfigError, Duplex, LinkConfig, LinkKind, Side};
use crate::rng::link_rng;
use crate::time::{SimTime, airtime_nanos, nanos};
use crate::trace::{TraceEvent, TraceKind, frame_hash};

#[derive(Debug)]
struct OnAir {
    start: SimTime,
    end: SimTime,
    frame: Bytes,
}

#[derive(Debug)]
struct Flight {
    at: SimTime,
    seq: u64,
    frame: Bytes,
    corrupted: bool,
}

impl PartialEq for Flight {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Flight {}
impl PartialOrd for Flight {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Flight {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Debug)]
struct Dir {
    ch: Channel,
    rate: u64,
    overhead: u64,
    mtu: usize,
    /// Bytes on the wire per datagram beyond its own (frame links; 0 for streams).
    header: usize,
    buffer: usize,
    delay: Duration,
    queue: VecDeque<Bytes>,
    queued: usize,
    on_air: Option<OnAir>,
    flight: BinaryHeap<Reverse<Flight>>,
    stats: LinkStats,
}

/// A point-to-point link between port 0 (side A) and port 1 (side B).
#[derive(Debug)]
pub struct Link {
    stream: bool,
    half: bool,
    chunk: usize,
    turnaround: u64,
    max_over: Option<u64>,
    redial: u64,
    dirs: [Dir; 2],
    /// Half duplex: the side holding the turn.
    holder: usize,
    turning_until: Option<SimTime>,
    over_start: SimTime,
    last_air_end: SimTime,
    down_until: Option<SimTime>,
    seq: u64,
    events: VecDeque<LinkEvent>,
    trace: bool,
}

impl Link {
    /// Builds the model of `cfg` (kind `frame` or `stream`). Direction `d` draws from
    /// `link_rng(seed, link_id, d)`.
    pub fn new(cfg: &LinkConfig, seed: u64, link_id: u64) -> Result<Link, ConfigError> {
        cfg.validate()?;
        if cfg.kind == LinkKind::Csma {
            return Err(ConfigError::invalid(
                "kind",
                "csma",
                "frame or stream for a point-to-point link (a csma medium is a CsmaMedium)",
            ));
        }
        let dir = |side: Side, idx: u64| {
            let d = cfg.dir(side);
            Dir {
                ch: Channel::new(d, cfg.crc, link_rng(seed, link_id, idx)),
                rate: d.rate_bps,
                overhead: d.overhead as u64,
                mtu: d.mtu,
                header: if cfg.kind == LinkKind::Frame {
                    d.header
                } else {
                    0
                },
                buffer: usize::try_from(cfg.buffer_bytes(side)).unwrap_or(usize::MAX),
                delay: d.delay,
                queue: VecDeque::new(),
                queued: 0,
                on_air: None,
                flight: BinaryHeap::new(),
                stats: LinkStats::default(),
            }
        };
        Ok(Link {
            stream: cfg.kind == LinkKind::Stream,
            half: cfg.duplex == Duplex::Half,
            chunk: cfg.chunk,
            turnaround: nanos(cfg.turnaround),
            max_over: cfg.max_over.map(nanos),
            redial: nanos(cfg.redial),
            dirs: [dir(Side::A, 0), dir(Side::B, 1)],
            holder: 0,
            turning_until: None,
            over_start: SimTime::ZERO,
            last_air_end: SimTime::ZERO,
            down_until: None,
            seq: 0,
            events: VecDeque::new(),
            trace: false,
        })
    }

    /// True while a stream link's call is down.
    pub fn is_down(&self) -> bool {
        self.down_until.is_some()
    }

    /// The side holding the turn of a half-duplex link (port 0 or 1).
    pub fn turn(&self) -> usize {
        self.holder
    }

    fn trace(&mut self, time: SimTime, from: usize, kind: TraceKind, frame: Option<&[u8]>) {
        if self.trace {
            let (len, hash) = frame.map_or((0, 0), |f| (f.len() as u32, frame_hash(f)));
            self.events.push_back(LinkEvent::Trace(TraceEvent {
                time,
                from: from as u32,
                to: (1 - from) as u32,
                kind,
                len,
                hash,
            }));
        }
    }

    fn next_time(&self) -> SimTime {
        let mut t = SimTime::MAX;
        for d in &self.dirs {
            if let Some(a) = &d.on_air {
                t = t.min(a.end);
            }
            if let Some(Reverse(f)) = d.flight.peek() {
                t = t.min(f.at);
            }
        }
        for x in [self.turning_until, self.down_until].into_iter().flatten() {
            t = t.min(x);
        }
        t
    }

    fn advance(&mut self, now: SimTime) {
        loop {
            let t = self.next_time();
            if t > now {
                break;
            }
            self.process(t);
        }
    }

    fn process(&mut self, t: SimTime) {
        for d in 0..2 {
            if self.dirs[d].on_air.as_ref().is_some_and(|a| a.end == t) {
                self.finish_tx(d, t);
            }
        }
        if self.turning_until == Some(t) {
            self.turning_until = None;
            self.over_start = t;
        }
        if self.down_until == Some(t) {
            self.down_until = None;
            self.holder = 0;
            self.trace(t, 0, TraceKind::Up, None);
            for port in 0..2 {
                self.events.push_back(LinkEvent::State { port, up: true });
            }
        }
        for d in 0..2 {
            while self.dirs[d].flight.peek().is_some_and(|f| f.0.at <= t) {
                let Some(Reverse(f)) = self.dirs[d].flight.pop() else {
                    break;
                };
                let kind = if f.corrupted {
                    TraceKind::DeliverCorrupt
                } else {
                    TraceKind::Deliver
                };
                self.trace(t, d, kind, Some(&f.frame));
                let wire = f.frame.len() + self.dirs[d].header;
                self.dirs[d].stats.delivered.add(wire);
                self.dirs[1 - d].stats.received.add(wire);
                self.events.push_back(LinkEvent::Deliver {
                    port: 1 - d,
                    frame: f.frame,
                });
            }
        }
        self.kick(t);
    }

    /// Starts whatever transmission the air allows at `t`.
    fn kick(&mut self, t: SimTime) {
        if self.down_until.is_some() {
            return;
        }
        if !self.half {
            for d in 0..2 {
                if self.dirs[d].on_air.is_none() && !self.dirs[d].queue.is_empty() {
                    self.start_tx(d, t);
                }
            }
            return;
        }
        let busy = self.dirs.iter().any(|d| d.on_air.is_some());
        if busy || self.turning_until.is_some() {
            return;
        }
        let h = self.holder;
        let o = 1 - h;
        let h_has = !self.dirs[h].queue.is_empty();
        let o_has = !self.dirs[o].queue.is_empty();
        let over_expired = self
            .max_over
            .is_some_and(|m| t.as_nanos().saturating_sub(self.over_start.as_nanos()) >= m);
        if h_has && !(o_has && over_expired) {
            if t > self.last_air_end {
                // The air was idle: a new over starts.
                self.over_start = t;
            }
            self.start_tx(h, t);
        } else if o_has {
            self.holder = o;
            self.dirs[o].stats.turnarounds += 1;
            self.trace(t, o, TraceKind::Turnaround, None);
            if self.turnaround == 0 {
                self.over_start = t;
                self.start_tx(o, t);
            } else {
                self.turning_until = Some(t.plus_nanos(self.turnaround));
            }
        }
    }

    fn start_tx(&mut self, d: usize, t: SimTime) {
        let chunk = self.chunk;
        let dir = &mut self.dirs[d];
        let frame = if self.stream {
            take_chunk(&mut dir.queue, chunk)
        } else {
            dir.queue.pop_front().unwrap_or_default()
        };
        let wire = frame.len() + dir.header;
        dir.queued -= wire;
        let air = airtime_nanos(wire as u64 + dir.overhead, dir.rate);
        dir.stats.sent.add(wire);
        dir.stats.air_nanos += air;
        let end = t.plus_nanos(air);
        self.trace(t, d, TraceKind::Send, Some(&frame));
        self.dirs[d].on_air = Some(OnAir {
            start: t,
            end,
            frame,
        });
        if !self.stream {
            self.events.push_back(LinkEvent::Writable { port: d });
        }
    }

    fn finish_tx(&mut self, d: usize, t: SimTime) {
        let Some(air) = self.dirs[d].on_air.take() else {
            return;
        };
        self.last_air_end = t;
        if self.stream {
            self.events.push_back(LinkEvent::Writable { port: d });
        }
        let len = air.frame.len() + self.dirs[d].header;
        let hash_src = if self.trace {
            Some(air.frame.clone())
        } else {
            None
        };
        match self.dirs[d].ch.transit(t, air.frame) {
            Err(reason) => {
                self.dirs[d].stats.drop(reason, len);
                self.trace(t, d, TraceKind::Drop(reason), hash_src.as_deref());
            }
            Ok(fate) => {
                let dir = &mut self.dirs[d];
                dir.stats.corrupted += u64::from(fate.corrupted);
                dir.stats.reordered += u64::from(fate.reordered);
                if fate.duplicate {
                    dir.stats.duplicated += 1;
                    self.seq += 1;
                    dir.flight.push(Reverse(Flight {
                        at: fate.at,
                        seq: self.seq,
                        frame: fate.frame.clone(),
                        corrupted: fate.corrupted,
                    }));
                }
                self.seq += 1;
                dir.flight.push(Reverse(Flight {
                    at: fate.at,
                    seq: self.seq,
                    frame: fate.frame,
                    corrupted: fate.corrupted,
                }));
            }
        }
    }

    /// Bytes a stream sender still has in the modem: queued plus the unsent part of the
    /// chunk on the air, which drains continuously.
    fn occupied(&self, now: SimTime, d: usize) -> usize {
        let dir = &self.dirs[d];
        let on_air = match (&dir.on_air, self.stream) {
            (Some(a), true) if a.end > now => {
                let total = a.end.as_nanos() - a.start.as_nanos();
                let left = a.end.as_nanos() - now.as_nanos().max(a.start.as_nanos());
                let len = a.frame.len() as u128;
                (len * u128::from(left)).div_ceil(u128::from(total.max(1))) as usize
            }
            _ => 0,
        };
        dir.queued + on_air
    }

    fn call_drop(&mut self, now: SimTime, port: usize) {
        for d in 0..2 {
            let dir = &mut self.dirs[d];
            let mut lost: Vec<Bytes> = dir.queue.drain(..).collect();
            lost.extend(dir.on_air.take().map(|a| a.frame));
            lost.extend(dir.flight.drain().map(|f| f.0.frame));
            dir.queued = 0;
            for f in lost {
                dir.stats
                    .drop(DropReason::CallDropped, f.len() + dir.header);
            }
        }
        self.dirs[port].stats.call_drops += 1;
        self.turning_until = None;
        self.down_until = Some(now.plus_nanos(self.redial));
        self.trace(now, port, TraceKind::Down, None);
        for p in 0..2 {
            self.events
                .push_back(LinkEvent::State { port: p, up: false });
        }
    }
}

/// Takes up to `max` bytes off the front of a byte queue as one chunk.
fn take_chunk(queue: &mut VecDeque<Bytes>, max: usize) -> Bytes {
    let Some(front) = queue.front_mut() else {
        return Bytes::new();
    };
    if front.len() >= max {
        let out = front.split_to(max);
        if front.is_empty() {
            queue.pop_front();
        }
        return out;
    }
    let mut out = BytesMut::with_capacity(max);
    while out.len() < max {
        let Some(front) = queue.front_mut() else {
            break;
        };
        let n = (max - out.len()).min(front.len());
        out.extend_from_slice(&front.split_to(n));
        if front.is_empty() {
            queue.pop_front();
        }
    }
    out.freeze()
}

impl LinkModel for Link {
    fn ports(&self) -> usize {
        2
    }

    fn info(&self, now: SimTime, port: usize) -> LinkInfo {
        let d = &self.dirs[port.min(1)];
        let up = self.down_until.is_none();
        // A frame sender can hand over a datagram of `free` bytes: queue space less the
        // header that datagram will carry.
        let free = if up {
            d.buffer
                .saturating_sub(self.occupied(now, port.min(1)))
                .saturating_sub(d.header)
        } else {
            0
        };
        LinkInfo {
            kind: if self.stream {
                PortKind::Stream
            } else {
                PortKind::Frame
            },
            mtu: if self.stream {
                d.buffer
            } else {
                d.mtu.saturating_sub(d.header)
            },
            free,
            buffer: d.buffer,
            rate_bps: d.rate,
            overhead: d.overhead as usize,
            delay: d.delay,
            up,
        }
    }

    fn handle_transmit(
        &mut self,
        now: SimTime,
        port: usize,
        data: Bytes,
    ) -> Result<(), TransmitError> {
        if port > 1 {
            return Err(TransmitError::NoSuchPort(port));
        }
        self.advance(now);
        let len = data.len();
        if len == 0 {
            return Ok(());
        }
        if self.stream {
            if self.down_until.is_some() {
                self.dirs[port].stats.drop(DropReason::LinkDown, len);
                self.trace(
                    now,
                    port,
                    TraceKind::Drop(DropReason::LinkDown),
                    Some(&data),
                );
                return Err(TransmitError::LinkDown);
            }
            self.dirs[port].stats.offered.add(len);
            let free = self.dirs[port]
                .buffer
                .saturating_sub(self.occupied(now, port));
            if len > free {
                self.dirs[port].stats.drop(DropReason::CallDropped, len);
                self.call_drop(now, port);
                return Err(TransmitError::CallDropped { len, free });
            }
        } else {
            let dir = &mut self.dirs[port];
            let wire = len + dir.header;
            let mtu = dir.mtu.saturating_sub(dir.header);
            if len > mtu {
                dir.stats.refused.add(wire);
                self.trace(now, port, TraceKind::Refuse, Some(&data));
                return Err(TransmitError::TooBig { len, mtu });
            }
            dir.stats.offered.add(wire);
            let space = dir.buffer.saturating_sub(dir.queued);
            if wire > space {
                dir.stats.drop(DropReason::QueueFull, wire);
                let free = space.saturating_sub(dir.header);
                self.trace(
                    now,
                    port,
                    TraceKind::Drop(DropReason::QueueFull),
                    Some(&data),
                );
                return Err(TransmitError::QueueFull { len, free });
            }
        }
        self.trace(now, port, TraceKind::Enqueue, Some(&data));
        let dir = &mut self.dirs[port];
        dir.queued += len + dir.header;
        dir.queue.push_back(data);
        self.kick(now);
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
        &self.dirs[port.min(1)].stats
    }

    fn set_trace(&mut self, on: bool) {
        self.trace = on;
    }
}
