//! A protocol endpoint as a node of the simulator, in virtual time.
//!
//! The node is the daemon's link handling with the simulator's links as its sockets and
//! devices: each port has a [`LinkAdapter`] (the layer the daemon uses), and all the port
//! shows it is what a real socket or driver would (see [`crate::adapter`]).

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use skywave_proto::{BundleStore, Config, Endpoint, Event};
use skywave_sim::link::{LinkInfo, PortKind, TransmitError};
use skywave_sim::sim::PortId;
use skywave_sim::time::SimTime;

use crate::adapter::{LinkAdapter, MODEM_TICK, Readiness, Underlay};
use crate::dutycycle::DutyCycle;
use crate::framing::{self, Deframer};
use crate::mac::SoftMac;
use crate::modem_tx::ModemTx;

pub use crate::adapter::{QUEUED_FRAMES, STREAM_MTU};

/// How a node comes to use a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkRole {
    /// Greets the peer from the start (a configured peer, a radio, a modem).
    Dial,
    /// Says nothing until the peer's first frame arrives, as a daemon learns a UDP peer
    /// from its traffic: the dialer pays the round trip of finding it.
    Listen,
}

fn dur(t: SimTime) -> Duration {
    Duration::from_nanos(t.as_nanos())
}

/// A simulated node: protocol endpoint, its store, and per-port stream framing.
pub struct SimNode<S: BundleStore> {
    pub ep: Endpoint,
    pub store: S,
    /// Port -> its adapter and role, given when the node is wired up.
    links: BTreeMap<u16, (LinkAdapter, LinkRole)>,
    /// Listening ports that have heard their peer (and told the endpoint the link is up).
    heard: std::collections::BTreeSet<u16>,
    deframers: BTreeMap<u16, Deframer>,
    /// Modems that report nothing of their buffer: the driver's estimate, per port.
    modems: BTreeMap<u16, ModemTx<Duration>>,
    /// Radios without channel access of their own: the driver's turn-taking, per port.
    macs: BTreeMap<u16, SoftMac>,
    /// Radios under a duty-cycle budget, per port, and when a held frame may go.
    duties: BTreeMap<u16, (DutyCycle, Option<Duration>)>,
    /// Seeds the turn-taking's randomness (differs per node).
    seed: u64,
    /// The last time the simulator called in (to schedule the pacers' ticks).
    last_now: Duration,
    started: bool,
    /// Events the endpoint reported, with the virtual time they were seen.
    pub events: Vec<(SimTime, Event)>,
    /// Frames the link refused (should stay 0: the core obeys back-pressure).
    pub refused: u64,
    /// Datagrams the IP path dropped (the sender is not told): its bottleneck queue
    /// was full, or (`path_too_big`) they were larger than the path carries.
    pub path_drops: u64,
    pub path_too_big: u64,
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
            links: BTreeMap::new(),
            heard: Default::default(),
            deframers: BTreeMap::new(),
            modems: BTreeMap::new(),
            macs: BTreeMap::new(),
            duties: BTreeMap::new(),
            seed: nonce ^ u64::from_le_bytes(key[..8].try_into().expect("8 bytes")),
            last_now: Duration::ZERO,
            started: false,
            events: Vec::new(),
            refused: 0,
            path_drops: 0,
            path_too_big: 0,
        }
    }

    /// Declares the link attached at `port` (call before running): a dialing end.
    pub fn attach(&mut self, port: PortId, adapter: LinkAdapter) {
        self.attach_as(port, adapter, LinkRole::Dial);
    }

    /// Declares the link attached at `port` and how this node comes to use it.
    pub fn attach_as(&mut self, port: PortId, adapter: LinkAdapter, role: LinkRole) {
        if adapter.framed() {
            self.deframers.entry(port.0).or_default();
        }
        if let Some(p) = adapter.pacing() {
            let seed = self
                .seed
                .wrapping_add(u64::from(port.0))
                .wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let pacer = p.pacer(Duration::ZERO).with_seed(seed);
            self.modems
                .insert(port.0, ModemTx::new(pacer, adapter.params().mtu));
        }
        if adapter.driver_mac() {
            let p = adapter.params();
            let seed = self.seed.wrapping_add(u64::from(port.0));
            let mut mac = SoftMac::for_link(&p, seed);
            if let Some(phy) = adapter.lora() {
                mac = mac.with_lora(phy);
            }
            self.macs.insert(port.0, mac);
        }
        if let Some(d) = adapter.duty_cycle() {
            self.duties.insert(port.0, (DutyCycle::new(d), None));
        }
        self.links.insert(port.0, (adapter, role));
    }

    /// Whether the endpoint may use `port` now: a listening port once it has heard.
    fn usable(&self, port: u16) -> bool {
        match self.links.get(&port) {
            Some((_, LinkRole::Listen)) => self.heard.contains(&port),
            _ => true,
        }
    }

    /// The duty-cycle budget of `port`, if its driver keeps one.
    pub fn duty_cycle(&self, port: PortId) -> Option<&DutyCycle> {
        self.duties.get(&port.0).map(|(d, _)| d)
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
        self.last_now = t;
        if let Some(m) = self.modems.get_mut(&port.0) {
            // Half duplex: the other side held the channel; drain booked for then is not.
            m.pacer.received(t);
        }
        if let Some(m) = self.macs.get_mut(&port.0) {
            m.heard(t, self.ep.peers_on(port.0 as usize));
            m.read_heard(t, &frame, self.ep.tag());
        }
        if self.started
            && let Some((a, LinkRole::Listen)) = self.links.get(&port.0)
            && self.heard.insert(port.0)
        {
            self.ep.link_up(t, port.0 as usize, a.params());
        }
        let stream = self.deframers.contains_key(&port.0);
        if stream {
            let frames = self
                .deframers
                .get_mut(&port.0)
                .map(|d| d.push(&frame))
                .unwrap_or_default();
            for f in frames {
                if let Some(m) = self.modems.get_mut(&port.0)
                    && m.control(t, &f)
                {
                    let answered = m.pacer.take_answered().map(Into::into);
                    self.ep.link_heard(t, port.0 as usize, answered);
                    continue;
                }
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
        self.last_now = dur(now);
        if let Some(d) = self.deframers.get_mut(&port.0) {
            d.reset();
        }
        if let Some(m) = self.modems.get_mut(&port.0) {
            m.reset(dur(now));
        }
        match (up, self.links.get(&port.0)) {
            (true, Some((a, _))) if self.usable(port.0) => {
                self.ep.link_up(dur(now), port.0 as usize, a.params())
            }
            (true, _) => {}
            _ => self.ep.link_down(dur(now), port.0 as usize),
        }
    }

    fn handle_transmit_error(&mut self, _now: SimTime, port: PortId, error: &TransmitError) {
        // A datagram socket hands everything to the path; what the path's queue drops is
        // loss the endpoint must find out about by itself, not a refusal.
        let datagram = self
            .links
            .get(&port.0)
            .is_some_and(|(a, _)| a.underlay() == Underlay::Datagram);
        // Too big for the path: a datagram sent with don't-fragment is dropped on the way.
        if datagram
            && matches!(
                error,
                TransmitError::QueueFull { .. } | TransmitError::TooBig { .. }
            )
        {
            self.path_drops += 1;
            if matches!(error, TransmitError::TooBig { .. }) {
                self.path_too_big += 1;
            }
            return;
        }
        self.refused += 1;
        tracing::warn!(port = port.0, "link refused a frame: {error:?}");
    }

    fn handle_timeout(&mut self, now: SimTime) {
        self.last_now = dur(now);
        if !self.started {
            self.started = true;
            for (&port, (a, role)) in &self.links {
                if *role == LinkRole::Dial {
                    self.ep.link_up(dur(now), port as usize, a.params());
                }
            }
        }
        self.ep.handle_timeout(dur(now));
        self.collect_events(now);
    }

    fn poll_transmit(&mut self, now: SimTime, port: PortId, link: &LinkInfo) -> Option<Bytes> {
        if !self.started || !link.up || !self.usable(port.0) {
            return None;
        }
        self.last_now = dur(now);
        let (adapter, _) = self.links.get(&port.0)?;
        let adapter = *adapter;
        if let (PortKind::Stream, Some(m)) = (link.kind, self.modems.get_mut(&port.0)) {
            // A modem that reports nothing: frames are taken as the driver's estimate
            // (and, holding the turn, a little ahead) allows, then written as the modem
            // takes them.
            m.advance(dur(now));
            while let Some(max) = adapter.frame_budget(Readiness::Room(m.frame_room())) {
                match self.ep.poll_transmit(
                    dur(now),
                    port.0 as usize,
                    max.min(link.mtu),
                    &mut self.store,
                ) {
                    Some(f) => m.offer(&f),
                    None => {
                        m.idle(dur(now));
                        break;
                    }
                }
            }
            return m.take(dur(now)).map(Bytes::from);
        }
        let now_shows = match link.kind {
            // A UDP socket: the kernel's send buffer drains at the host's interface rate,
            // faster than any path modelled here, so it takes every datagram; what the
            // path cannot carry, its bottleneck queue drops.
            PortKind::Frame => Readiness::Socket { writable: true },
            // Radios (and modems that report it) show their transmit buffer.
            PortKind::Stream | PortKind::Broadcast => Readiness::DeviceBuffer {
                free: link.free,
                held: link.buffer.saturating_sub(link.free),
            },
        };
        let mut max = adapter.frame_budget(now_shows)?;
        if adapter.underlay() != Underlay::Datagram {
            // A device refuses what it cannot take; a socket does not know the path's MTU
            // (the adapter's configured one rules, as in the daemon).
            max = max.min(link.mtu);
        }
        let framed = adapter.framed();
        if let Some((d, wait)) = self.duties.get_mut(&port.0) {
            // The budget must allow a largest frame before the endpoint is asked (so no
            // runt is sent to use up the last of it); until then the link has no room.
            let air = adapter.airtime(max + if framed { framing::overhead(max) } else { 0 });
            match d.next_allowed(dur(now), air) {
                Ok(t) if t <= dur(now) => *wait = None,
                Ok(t) => {
                    *wait = Some(t);
                    return None;
                }
                Err(e) => {
                    tracing::warn!(port = port.0, "{e}");
                    *wait = None;
                    return None;
                }
            }
        }
        if let Some(m) = self.macs.get_mut(&port.0)
            && m.may_send(dur(now)).is_err()
        {
            return None;
        }
        let f = self
            .ep
            .poll_transmit(dur(now), port.0 as usize, max, &mut self.store);
        if let Some(m) = self.macs.get_mut(&port.0) {
            m.polled(dur(now), f.as_deref());
        }
        let f = f?;
        let out = if framed {
            let mut out = Vec::with_capacity(f.len() + framing::overhead(f.len()));
            framing::encode(&f, &mut out);
            out
        } else {
            f
        };
        if let Some((d, _)) = self.duties.get_mut(&port.0) {
            d.record(dur(now), adapter.airtime(out.len()));
        }
        Some(Bytes::from(out))
    }

    fn poll_timeout(&mut self) -> Option<SimTime> {
        if !self.started {
            return Some(SimTime::ZERO);
        }
        let ep = self.ep.poll_timeout();
        // A driver looks at its pacer every tick while the estimate is changing: room
        // grows with time alone, and no event says so.
        let tick = self
            .modems
            .values()
            .any(|m| m.busy())
            .then(|| self.last_now + MODEM_TICK);
        let turn = self
            .macs
            .values()
            .filter_map(|m| m.waiting_until(self.last_now))
            .min();
        let duty = self
            .duties
            .values()
            .filter_map(|(_, w)| w.filter(|&t| t > self.last_now))
            .min();
        let t = [ep, tick, turn, duty].into_iter().flatten().min();
        t.map(|d| SimTime::from_nanos(d.as_nanos() as u64))
    }
}
