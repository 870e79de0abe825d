//! The discrete-event simulator: sans-IO endpoints joined by link models, in virtual time.
//!
//! Time jumps from one event to the next (a link's or an endpoint's `poll_timeout`); it
//! never sleeps and never reads a clock. Ties are broken by a fixed order (links before
//! nodes, then by id), so a run is a pure function of its seed and inputs.
//!
//! After every event, each node that received a frame, a link-state change, a timeout or
//! room in a queue is polled: `poll_transmit` is called for each of its ports until it
//! returns `None` or the link refuses the data.

use std::any::Any;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use rand_chacha::ChaCha8Rng;

use crate::config::{ConfigError, LinkConfig};
use crate::link::{
    Adjacency, CsmaMedium, Link, LinkEvent, LinkInfo, LinkModel, LinkStats, TransmitError,
};
use crate::rng::node_rng;
use crate::time::SimTime;
use crate::trace::TraceRecord;

/// A node of the simulation, numbered from 0 in the order added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

/// A link (point-to-point or medium), numbered from 0 in the order added. Also the trace's
/// `L` number and the `link` of its RNG streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub u32);

/// A node's attachment to a link, numbered from 0 per node in the order attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortId(pub u16);

/// A sans-IO node: the protocol engine (or a reference sender) the simulator drives.
///
/// The simulator calls `handle_*` with inputs and `poll_*` for outputs; extra polls are
/// harmless and must return `None` when there is nothing to do. A `poll_timeout` at or
/// before `now` is served at `now`: returning the past forever is a livelock.
pub trait Endpoint: Any {
    /// A frame (or, on a stream port, a chunk of bytes) arrived on `port`.
    fn handle_frame(&mut self, now: SimTime, port: PortId, frame: Bytes);

    /// A stream port's call went down or came back up.
    fn handle_link_state(&mut self, now: SimTime, port: PortId, up: bool) {
        let _ = (now, port, up);
    }

    /// The link did not take the data just returned by `poll_transmit` (the data is gone;
    /// keep a clone to retry). The port is not polled again until the node's next event.
    fn handle_transmit_error(&mut self, now: SimTime, port: PortId, error: &TransmitError) {
        let _ = (now, port, error);
    }

    /// A timer returned by `poll_timeout` expired.
    fn handle_timeout(&mut self, now: SimTime) {
        let _ = now;
    }

    /// The next frame for `port` (stream ports: bytes to write), given the port's size
    /// limit, free buffer space and rate.
    fn poll_transmit(&mut self, now: SimTime, port: PortId, link: &LinkInfo) -> Option<Bytes>;

    /// When `handle_timeout` should next be called.
    fn poll_timeout(&mut self) -> Option<SimTime> {
        None
    }
}

struct NodeSlot {
    ep: Box<dyn Endpoint>,
    /// Port index -> (link, port on the link).
    ports: Vec<(u32, usize)>,
    deadline: Option<SimTime>,
    dirty: bool,
}

struct LinkSlot {
    model: Box<dyn LinkModel>,
    /// Port on the link -> (node, port on the node).
    ports: Vec<(u32, u16)>,
    deadline: Option<SimTime>,
}

const LINK: u8 = 0;
const NODE: u8 = 1;

/// N endpoints, M link models, one virtual clock.
pub struct Simulator {
    seed: u64,
    now: SimTime,
    nodes: Vec<NodeSlot>,
    links: Vec<LinkSlot>,
    heap: BinaryHeap<Reverse<(SimTime, u8, u32)>>,
    dirty: VecDeque<u32>,
    tracing: bool,
    trace: Vec<TraceRecord>,
    steps: u64,
}

impl fmt::Debug for Simulator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Simulator")
            .field("seed", &self.seed)
            .field("now", &self.now)
            .field("nodes", &self.nodes.len())
            .field("links", &self.links.len())
            .field("steps", &self.steps)
            .finish()
    }
}

impl Simulator {
    /// An empty simulation at time zero. Link `l`, port/radio `i` draws from
    /// `link_rng(seed, l, i)`.
    pub fn new(seed: u64) -> Self {
        Simulator {
            seed,
            now: SimTime::ZERO,
            nodes: Vec::new(),
            links: Vec::new(),
            heap: BinaryHeap::new(),
            dirty: VecDeque::new(),
            tracing: false,
            trace: Vec::new(),
            steps: 0,
        }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Events processed so far (for benchmarks).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// A seeded RNG for an endpoint's own randomness, independent of every link's.
    pub fn node_rng(&self, node: NodeId) -> ChaCha8Rng {
        node_rng(self.seed, u64::from(node.0))
    }

    pub fn add_node(&mut self, ep: impl Endpoint) -> NodeId {
        let id = self.nodes.len() as u32;
        self.nodes.push(NodeSlot {
            ep: Box::new(ep),
            ports: Vec::new(),
            deadline: None,
            dirty: false,
        });
        self.mark_dirty(id);
        NodeId(id)
    }

    /// Joins `a` (side A, sending on `cfg.up`) and `b` with a point-to-point link of kind
    /// `frame` or `stream`.
    pub fn connect(
        &mut self,
        a: NodeId,
        b: NodeId,
        cfg: &LinkConfig,
    ) -> Result<LinkId, ConfigError> {
        let link = Link::new(cfg, self.seed, self.links.len() as u64)?;
        Ok(self.add_link(Box::new(link), &[a, b]))
    }

    /// Puts `radios` on a shared CSMA medium; `radios[i]` is vertex `i` of `adj`.
    pub fn add_medium(
        &mut self,
        radios: &[NodeId],
        adj: Adjacency,
        cfg: &LinkConfig,
    ) -> Result<LinkId, ConfigError> {
        if adj.len() != radios.len() {
            return Err(ConfigError::invalid(
                "adjacency",
                &format!("{} vertices", adj.len()),
                format!("one vertex per radio ({})", radios.len()),
            ));
        }
        let medium = CsmaMedium::new(cfg, adj, self.seed, self.links.len() as u64)?;
        Ok(self.add_link(Box::new(medium), radios))
    }

    /// Attaches any link model; `nodes[i]` gets link port `i`.
    ///
    /// # Panics
    /// If `nodes.len()` differs from `model.ports()` or a node id is unknown.
    pub fn add_link(&mut self, mut model: Box<dyn LinkModel>, nodes: &[NodeId]) -> LinkId {
        assert_eq!(nodes.len(), model.ports(), "one node per link port");
        let id = self.links.len() as u32;
        model.set_trace(self.tracing);
        let mut ports = Vec::with_capacity(nodes.len());
        for (lp, n) in nodes.iter().enumerate() {
            let slot = &mut self.nodes[n.0 as usize];
            ports.push((n.0, slot.ports.len() as u16));
            slot.ports.push((id, lp));
            self.mark_dirty(n.0);
        }
        self.links.push(LinkSlot {
            model,
            ports,
            deadline: None,
        });
        self.update_link(id);
        LinkId(id)
    }

    /// The first port of `node` on `link`.
    pub fn port(&self, node: NodeId, link: LinkId) -> Option<PortId> {
        self.nodes[node.0 as usize]
            .ports
            .iter()
            .position(|&(l, _)| l == link.0)
            .map(|p| PortId(p as u16))
    }

    pub fn link(&self, link: LinkId) -> &dyn LinkModel {
        self.links[link.0 as usize].model.as_ref()
    }

    /// Counters of what `node` sent (and received) on `link`.
    pub fn link_stats(&self, link: LinkId, node: NodeId) -> Option<&LinkStats> {
        let slot = &self.links[link.0 as usize];
        let lp = slot.ports.iter().position(|&(n, _)| n == node.0)?;
        Some(slot.model.stats(lp))
    }

    /// The endpoint of `node`, if it is a `T`.
    pub fn node<T: Endpoint>(&self, node: NodeId) -> Option<&T> {
        let ep: &dyn Any = self.nodes.get(node.0 as usize)?.ep.as_ref();
        ep.downcast_ref()
    }

    /// The endpoint of `node` for changes from outside (e.g. a scenario inserting data);
    /// the node is polled before the next event.
    pub fn node_mut<T: Endpoint>(&mut self, node: NodeId) -> Option<&mut T> {
        self.mark_dirty(node.0);
        let ep: &mut dyn Any = self.nodes.get_mut(node.0 as usize)?.ep.as_mut();
        ep.downcast_mut()
    }

    /// Records every link's trace events from now on (see [`Simulator::take_trace`]).
    pub fn set_trace(&mut self, on: bool) {
        self.tracing = on;
        for l in &mut self.links {
            l.model.set_trace(on);
        }
    }

    pub fn trace(&self) -> &[TraceRecord] {
        &self.trace
    }

    /// Takes the records gathered so far, so a long run can stream them out.
    pub fn take_trace(&mut self) -> Vec<TraceRecord> {
        std::mem::take(&mut self.trace)
    }

    /// When the next event is due, if any.
    pub fn next_event(&mut self) -> Option<SimTime> {
        self.flush();
        while let Some(&Reverse((t, kind, idx))) = self.heap.peek() {
            let deadline = if kind == LINK {
                self.links[idx as usize].deadline
            } else {
                self.nodes[idx as usize].deadline
            };
            if deadline == Some(t) {
                return Some(t);
            }
            self.heap.pop();
        }
        None
    }

    /// Processes the next event. Returns false when nothing is scheduled.
    pub fn step(&mut self) -> bool {
        let Some(t) = self.next_event() else {
            return false;
        };
        let Some(Reverse((_, kind, idx))) = self.heap.pop() else {
            return false;
        };
        self.now = self.now.max(t);
        self.steps += 1;
        let now = self.now;
        if kind == LINK {
            self.links[idx as usize].deadline = None;
            self.links[idx as usize].model.handle_timeout(now);
            self.drain_link(idx);
            self.update_link(idx);
        } else {
            let slot = &mut self.nodes[idx as usize];
            slot.deadline = None;
            slot.ep.handle_timeout(now);
            self.mark_dirty(idx);
        }
        self.flush();
        true
    }

    /// Runs every event due at or before `until`, then sets the clock to `until`.
    pub fn run_until(&mut self, until: SimTime) {
        while self.next_event().is_some_and(|t| t <= until) {
            self.step();
        }
        self.now = self.now.max(until);
    }

    pub fn run_for(&mut self, d: Duration) {
        self.run_until(self.now + d);
    }

    fn mark_dirty(&mut self, n: u32) {
        if let Some(slot) = self.nodes.get_mut(n as usize)
            && !slot.dirty
        {
            slot.dirty = true;
            self.dirty.push_back(n);
        }
    }

    fn update_link(&mut self, l: u32) {
        let now = self.now;
        let slot = &mut self.links[l as usize];
        let t = slot.model.poll_timeout().map(|t| t.max(now));
        if t != slot.deadline {
            slot.deadline = t;
            if let Some(t) = t {
                self.heap.push(Reverse((t, LINK, l)));
            }
        }
    }

    fn update_node(&mut self, n: u32) {
        let now = self.now;
        let slot = &mut self.nodes[n as usize];
        let t = slot.ep.poll_timeout().map(|t| t.max(now));
        if t != slot.deadline {
            slot.deadline = t;
            if let Some(t) = t {
                self.heap.push(Reverse((t, NODE, n)));
            }
        }
    }

    fn drain_link(&mut self, l: u32) {
        let now = self.now;
        while let Some(ev) = self.links[l as usize].model.poll_event() {
            match ev {
                LinkEvent::Deliver { port, frame } => {
                    let (n, p) = self.links[l as usize].ports[port];
                    self.nodes[n as usize]
                        .ep
                        .handle_frame(now, PortId(p), frame);
                    self.mark_dirty(n);
                }
                LinkEvent::Writable { port } => {
                    let (n, _) = self.links[l as usize].ports[port];
                    self.mark_dirty(n);
                }
                LinkEvent::State { port, up } => {
                    let (n, p) = self.links[l as usize].ports[port];
                    self.nodes[n as usize]
                        .ep
                        .handle_link_state(now, PortId(p), up);
                    self.mark_dirty(n);
                }
                LinkEvent::Trace(event) => {
                    if self.tracing {
                        self.trace.push(TraceRecord { link: l, event });
                    }
                }
            }
        }
    }

    /// Polls every dirty node's ports until they have nothing more to send.
    fn flush(&mut self) {
        let now = self.now;
        while let Some(n) = self.dirty.pop_front() {
            self.nodes[n as usize].dirty = false;
            for p in 0..self.nodes[n as usize].ports.len() {
                let (l, lp) = self.nodes[n as usize].ports[p];
                let port = PortId(p as u16);
                loop {
                    let info = self.links[l as usize].model.info(now, lp);
                    let Some(data) = self.nodes[n as usize].ep.poll_transmit(now, port, &info)
                    else {
                        break;
                    };
                    let res = self.links[l as usize].model.handle_transmit(now, lp, data);
                    self.drain_link(l);
                    if let Err(e) = res {
                        self.nodes[n as usize]
                            .ep
                            .handle_transmit_error(now, port, &e);
                        break;
                    }
                }
                self.update_link(l);
            }
            self.update_node(n);
        }
    }
}
