//! A reference endpoint: a saturating or paced sender and a sink, so the simulator and
//! the lab can be tested and benchmarked before the protocol engine exists.
//!
//! Frames carry an 8-byte big-endian sequence number followed by zeros. It does not
//! retransmit, acknowledge or reassemble anything.

use bytes::Bytes;

use crate::link::{LinkInfo, PortKind};
use crate::sim::{Endpoint, PortId};
use crate::time::{SimTime, airtime_nanos};

/// What the endpoint sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Traffic {
    /// Nothing: a sink.
    None,
    /// As much as the port accepts without a drop (fills queue or modem buffer exactly).
    Saturate,
    /// Payload at `rate_bps`, whenever the port has room.
    Paced { rate_bps: u64 },
}

/// Counters of a [`RefEndpoint`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RefStats {
    pub sent_frames: u64,
    pub sent_bytes: u64,
    pub recv_frames: u64,
    pub recv_bytes: u64,
    pub first_rx: Option<SimTime>,
    pub last_rx: Option<SimTime>,
    /// Frame ports: frames whose sequence number was not above every earlier one
    /// (reordered or duplicated).
    pub out_of_order: u64,
    pub link_downs: u64,
    pub link_ups: u64,
    pub transmit_errors: u64,
}

/// A sender and sink on every port of its node.
#[derive(Clone, Debug)]
pub struct RefEndpoint {
    traffic: Traffic,
    frame_len: usize,
    limit: Option<u64>,
    next_send: SimTime,
    last_now: SimTime,
    seq: u64,
    max_seq: Option<u64>,
    port_kinds: Vec<Option<PortKind>>,
    stats: RefStats,
}

impl RefEndpoint {
    fn new(traffic: Traffic, frame_len: usize) -> Self {
        RefEndpoint {
            traffic,
            frame_len: frame_len.max(1),
            limit: None,
            next_send: SimTime::ZERO,
            last_now: SimTime::ZERO,
            seq: 0,
            max_seq: None,
            port_kinds: Vec::new(),
            stats: RefStats::default(),
        }
    }

    pub fn sink() -> Self {
        Self::new(Traffic::None, 1)
    }

    /// Sends frames of `frame_len` bytes (capped at the MTU; stream writes of up to
    /// `frame_len` capped at the free space) whenever the port has room.
    pub fn saturating(frame_len: usize) -> Self {
        Self::new(Traffic::Saturate, frame_len)
    }

    /// Sends `frame_len`-byte frames at `rate_bps` of payload.
    pub fn paced(rate_bps: u64, frame_len: usize) -> Self {
        Self::new(Traffic::Paced { rate_bps }, frame_len)
    }

    /// Stops after `bytes` bytes in total.
    pub fn with_limit(mut self, bytes: u64) -> Self {
        self.limit = Some(bytes);
        self
    }

    /// Sends nothing before `t` (e.g. a random phase, so paced senders on a shared
    /// medium are not synchronised).
    pub fn starting_at(mut self, t: SimTime) -> Self {
        self.next_send = t;
        self
    }

    pub fn stats(&self) -> &RefStats {
        &self.stats
    }

    /// True once the byte limit has been sent.
    pub fn done_sending(&self) -> bool {
        self.limit.is_some_and(|l| self.stats.sent_bytes >= l)
    }

    fn frame(&mut self, len: usize) -> Bytes {
        let mut v = vec![0u8; len];
        let seq = self.seq.to_be_bytes();
        let n = len.min(8);
        v[..n].copy_from_slice(&seq[..n]);
        self.seq += 1;
        Bytes::from(v)
    }
}

impl Endpoint for RefEndpoint {
    fn handle_frame(&mut self, now: SimTime, port: PortId, frame: Bytes) {
        let s = &mut self.stats;
        s.recv_frames += 1;
        s.recv_bytes += frame.len() as u64;
        s.first_rx.get_or_insert(now);
        s.last_rx = Some(now);
        let kind = self.port_kinds.get(port.0 as usize).copied().flatten();
        if kind != Some(PortKind::Stream) && frame.len() >= 8 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&frame[..8]);
            let seq = u64::from_be_bytes(b);
            match self.max_seq {
                Some(m) if seq <= m => s.out_of_order += 1,
                _ => self.max_seq = Some(seq),
            }
        }
    }

    fn handle_link_state(&mut self, _now: SimTime, _port: PortId, up: bool) {
        if up {
            self.stats.link_ups += 1;
        } else {
            self.stats.link_downs += 1;
        }
    }

    fn handle_transmit_error(&mut self, _now: SimTime, _port: PortId, _e: &crate::TransmitError) {
        self.stats.transmit_errors += 1;
    }

    fn poll_transmit(&mut self, now: SimTime, port: PortId, link: &LinkInfo) -> Option<Bytes> {
        self.last_now = now;
        let p = port.0 as usize;
        if self.port_kinds.len() <= p {
            self.port_kinds.resize(p + 1, None);
        }
        self.port_kinds[p] = Some(link.kind);
        if self.traffic == Traffic::None || !link.up {
            return None;
        }
        let remaining = self
            .limit
            .map_or(u64::MAX, |l| l.saturating_sub(self.stats.sent_bytes));
        let mut len = self.frame_len.min(link.mtu) as u64;
        len = len.min(remaining);
        if link.kind == PortKind::Stream {
            len = len.min(link.free as u64);
        }
        if len == 0 || len > link.free as u64 {
            return None;
        }
        if now < self.next_send {
            return None;
        }
        if let Traffic::Paced { rate_bps } = self.traffic {
            self.next_send = self
                .next_send
                .max(now)
                .plus_nanos(airtime_nanos(len, rate_bps));
        }
        self.stats.sent_frames += 1;
        self.stats.sent_bytes += len;
        Some(self.frame(len as usize))
    }

    fn poll_timeout(&mut self) -> Option<SimTime> {
        match self.traffic {
            Traffic::Saturate | Traffic::Paced { .. }
                if !self.done_sending() && self.next_send > self.last_now =>
            {
                Some(self.next_send)
            }
            _ => None,
        }
    }
}
