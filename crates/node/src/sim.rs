//! A protocol endpoint as a node of the simulator, in virtual time.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use skywave_proto::{BundleStore, Config, Endpoint, Event, LinkParams};
use skywave_sim::config::{Duplex, LinkConfig, LinkKind};
use skywave_sim::link::{LinkInfo, PortKind, TransmitError};
use skywave_sim::sim::PortId;
use skywave_sim::time::SimTime;

use crate::framing::{self, Deframer};

/// Frame size used on byte-stream links (modems): big enough to amortise headers,
/// small enough to keep a modem's 1 KiB buffer from holding a whole over.
pub const STREAM_MTU: usize = 250;

/// Frames kept queued in a radio or modem: enough to keep it busy, few enough that a
/// report or an "I have it" does not wait behind seconds of data.
pub const QUEUED_FRAMES: usize = 2;

/// Protocol link parameters for a simulated link of configuration `cfg`, as seen from
/// the node whose sending direction is `cfg.up`.
pub fn params_for(cfg: &LinkConfig) -> LinkParams {
    // The sending direction's rate: pacing starts from it (a download over an
    // asymmetric satellite path must not start at the uplink's rate).
    let rate = cfg.up.rate_bps;
    let mtu = match cfg.kind {
        LinkKind::Stream => STREAM_MTU,
        _ => cfg.up.mtu.min(cfg.down.mtu),
    };
    let ser = Duration::from_secs_f64(8.0 * mtu as f64 / rate.max(1) as f64);
    // A CSMA radio cannot hear while it sends, but the medium has no turns to give:
    // carrier sense arbitrates, so it is driven as a full-duplex shared link.
    let half = cfg.duplex == Duplex::Half && cfg.kind != LinkKind::Csma;
    // Radios and modems are kept at most QUEUED_FRAMES frames deep, which adds that much
    // waiting to the first transmission of anything.
    let mut rtt = cfg.up.delay + cfg.down.delay + ser * (2 + 2 * QUEUED_FRAMES as u32);
    if half {
        rtt += cfg.turnaround * 2;
    }
    LinkParams {
        mtu,
        shared: cfg.kind == LinkKind::Csma,
        // Radios and modems report their buffer space; IP paths do not.
        paced: cfg.kind == LinkKind::Frame && !half,
        half_duplex: half,
        rate_bps: Some(rate),
        rtt_hint: rtt.max(Duration::from_millis(1)),
        loss_hint: cfg.up.loss.mean_loss().max(cfg.down.loss.mean_loss()),
    }
}

fn dur(t: SimTime) -> Duration {
    Duration::from_nanos(t.as_nanos())
}

/// A simulated node: protocol endpoint, its store, and per-port stream framing.
pub struct SimNode<S: BundleStore> {
    pub ep: Endpoint,
    pub store: S,
    /// Port -> protocol parameters, given when the node is wired up.
    params: BTreeMap<u16, LinkParams>,
    deframers: BTreeMap<u16, Deframer>,
    started: bool,
    /// Events the endpoint reported, with the virtual time they were seen.
    pub events: Vec<(SimTime, Event)>,
    /// Frames the link refused (should stay 0: the core obeys back-pressure).
    pub refused: u64,
}

impl<S: BundleStore> std::fmt::Debug for SimNode<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimNode")
            .field("ep", &self.ep.stats())
            .finish()
    }
}

impl<S: BundleStore> SimNode<S> {
    pub fn new(cfg: Config, key: [u8; 32], nonce: u64, store: S) -> Self {
        Self {
            ep: Endpoint::new(cfg, key, nonce),
            store,
            params: BTreeMap::new(),
            deframers: BTreeMap::new(),
            started: false,
            events: Vec::new(),
            refused: 0,
        }
    }

    /// Declares what kind of link is attached at `port` (call before running).
    pub fn attach(&mut self, port: PortId, params: LinkParams) {
        self.params.insert(port.0, params);
    }

    fn collect_events(&mut self, now: SimTime) {
        while let Some(e) = self.ep.poll_event() {
            self.events.push((now, e));
        }
    }
}

impl<S: BundleStore + 'static> skywave_sim::sim::Endpoint for SimNode<S> {
    fn handle_frame(&mut self, now: SimTime, port: PortId, frame: Bytes) {
        let t = dur(now);
        let stream = self.deframers.contains_key(&port.0);
        if stream {
            let frames = self
                .deframers
                .get_mut(&port.0)
                .map(|d| d.push(&frame))
                .unwrap_or_default();
            for f in frames {
                self.ep
                    .handle_frame(t, port.0 as usize, &f, &mut self.store);
            }
        } else {
            self.ep
                .handle_frame(t, port.0 as usize, &frame, &mut self.store);
        }
        self.collect_events(now);
    }

    fn handle_link_state(&mut self, now: SimTime, port: PortId, up: bool) {
        if let Some(d) = self.deframers.get_mut(&port.0) {
            d.reset();
        }
        match (up, self.params.get(&port.0)) {
            (true, Some(p)) => self.ep.link_up(dur(now), port.0 as usize, *p),
            _ => self.ep.link_down(dur(now), port.0 as usize),
        }
    }

    fn handle_transmit_error(&mut self, _now: SimTime, port: PortId, error: &TransmitError) {
        self.refused += 1;
        tracing::warn!(port = port.0, "link refused a frame: {error:?}");
    }

    fn handle_timeout(&mut self, now: SimTime) {
        if !self.started {
            self.started = true;
            for (&port, p) in &self.params {
                self.ep.link_up(dur(now), port as usize, *p);
            }
        }
        self.ep.handle_timeout(dur(now));
        self.collect_events(now);
    }

    fn poll_transmit(&mut self, now: SimTime, port: PortId, link: &LinkInfo) -> Option<Bytes> {
        if !self.started || !link.up {
            return None;
        }
        let t = dur(now);
        match link.kind {
            PortKind::Stream | PortKind::Broadcast
                if link.buffer.saturating_sub(link.free)
                    >= QUEUED_FRAMES * STREAM_MTU.min(link.mtu) =>
            {
                None
            }
            PortKind::Stream => {
                self.deframers.entry(port.0).or_default();
                // Never write past the modem's buffer: ask for a frame that fits whole.
                let room = link.free.saturating_sub(framing::overhead(STREAM_MTU));
                let f = self.ep.poll_transmit(
                    t,
                    port.0 as usize,
                    room.min(STREAM_MTU),
                    &mut self.store,
                )?;
                let mut out = Vec::with_capacity(f.len() + 4);
                framing::encode(&f, &mut out);
                Some(Bytes::from(out))
            }
            PortKind::Frame | PortKind::Broadcast => {
                let room = link.free.min(link.mtu);
                self.ep
                    .poll_transmit(t, port.0 as usize, room, &mut self.store)
                    .map(Bytes::from)
            }
        }
    }

    fn poll_timeout(&mut self) -> Option<SimTime> {
        if !self.started {
            return Some(SimTime::ZERO);
        }
        self.ep
            .poll_timeout()
            .map(|d| SimTime::from_nanos(d.as_nanos() as u64))
    }
}
