//! A small network of endpoints joined by point-to-point links, in virtual time, with a
//! hook that may drop, alter or duplicate any frame: enough to put a dishonest or broken
//! peer next to honest ones. Deterministic.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use skywave_bundle::BundleId;
use skywave_proto::fuzzing::{self, Profile};
use skywave_proto::wire::{self, FrameWriter, Header};
use skywave_proto::{Config, Endpoint, Event, LinkParams, MemStore};

/// One endpoint with its store and the events it reported.
pub struct Peer {
    pub ep: Endpoint,
    pub store: MemStore,
    pub events: Vec<Event>,
    /// `(id, version)` -> times received.
    pub received: BTreeMap<(BundleId, u64), u32>,
    /// Events stay in the endpoint until [`Peer::collect`] is called by the test
    /// (as a daemon holds them while a batch of received bundles commits).
    pub defer_events: bool,
}

impl Peer {
    pub fn new(n: u64) -> Self {
        Self {
            ep: Endpoint::new(Config::default(), fuzzing::node_key(n), 0xabc0 + n),
            store: MemStore::new(),
            events: Vec::new(),
            received: BTreeMap::new(),
            defer_events: false,
        }
    }

    pub fn insert(&mut self, now: Duration, n: u64, version: u64, size: usize) -> BundleId {
        let (m, payload) = fuzzing::bundle(n, version, size);
        let id = m.id();
        self.store.insert(m, payload);
        self.ep.bundle_stored(now, id, &mut self.store);
        id
    }

    pub fn holds(&self, id: &BundleId) -> bool {
        self.store.held.contains_key(id)
    }

    fn collect_if_due(&mut self) {
        if !self.defer_events {
            self.collect();
        }
    }

    pub fn collect(&mut self) {
        while let Some(e) = self.ep.poll_event() {
            if let Event::Received { id, version, .. } = &e {
                *self.received.entry((*id, *version)).or_default() += 1;
            }
            self.events.push(e);
        }
    }
}

/// What a step does for peer `i` between handling arrivals and sending.
pub type AfterArrivals = Box<dyn FnMut(usize, &mut Peer)>;

/// What the hook does with a frame from `from` to `to`.
pub type Hook = Box<dyn FnMut(usize, usize, Vec<u8>) -> Vec<Vec<u8>>>;

struct Wire {
    ends: [usize; 2],
    up: bool,
    /// Frames towards `ends[0]` and `ends[1]`: (arrival, bytes).
    queues: [VecDeque<(Duration, Vec<u8>)>; 2],
    busy_until: [Duration; 2],
}

/// Endpoints and the links between them. Link `i` has id `i` on both of its ends.
pub struct Net {
    pub peers: Vec<Peer>,
    pub now: Duration,
    pub profile: Profile,
    wires: Vec<Wire>,
    pub hook: Hook,
    /// Every frame sent: (from, to, bytes).
    pub log: Vec<(usize, usize, Vec<u8>)>,
    pub keep_log: bool,
    /// Called for each peer after the frames arriving in a step are handled and before
    /// anything is sent (where a daemon commits what those frames completed).
    pub after_arrivals: Option<AfterArrivals>,
}

impl Net {
    pub fn new(n: usize, profile: u8) -> Self {
        Self {
            peers: (0..n as u64).map(|i| Peer::new(i + 1)).collect(),
            now: Duration::ZERO,
            profile: Profile::pick(profile),
            wires: Vec::new(),
            hook: Box::new(|_, _, f| vec![f]),
            log: Vec::new(),
            keep_log: false,
            after_arrivals: None,
        }
    }

    /// Joins `a` and `b`; returns the link id.
    pub fn connect(&mut self, a: usize, b: usize) -> usize {
        let id = self.wires.len();
        self.wires.push(Wire {
            ends: [a, b],
            up: true,
            queues: Default::default(),
            busy_until: [Duration::ZERO; 2],
        });
        for p in [a, b] {
            self.peers[p].ep.link_up(self.now, id, self.profile.params);
        }
        id
    }

    pub fn set_up(&mut self, link: usize, up: bool) {
        let w = &mut self.wires[link];
        w.up = up;
        for q in &mut w.queues {
            q.clear();
        }
        for p in w.ends {
            if up {
                self.peers[p]
                    .ep
                    .link_up(self.now, link, self.profile.params);
            } else {
                self.peers[p].ep.link_down(self.now, link);
            }
        }
    }

    /// Hands `bytes` to peer `to` as if it arrived on `link`.
    pub fn inject(&mut self, to: usize, link: usize, bytes: &[u8]) {
        let p = &mut self.peers[to];
        p.ep.handle_frame(self.now, link, bytes, &mut p.store);
        p.collect_if_due();
    }

    fn step(&mut self, end: Duration) {
        // Arrivals.
        for li in 0..self.wires.len() {
            for dir in 0..2 {
                while self.wires[li].queues[dir]
                    .front()
                    .is_some_and(|f| f.0 <= self.now)
                {
                    let (_, f) = self.wires[li].queues[dir].pop_front().expect("checked");
                    let to = self.wires[li].ends[dir];
                    self.inject(to, li, &f);
                }
            }
        }
        if let Some(f) = self.after_arrivals.as_mut() {
            for (i, p) in self.peers.iter_mut().enumerate() {
                f(i, p);
            }
        }
        // Transmissions, one frame at a time per end (the link's back-pressure).
        for li in 0..self.wires.len() {
            if !self.wires[li].up {
                continue;
            }
            for side in 0..2 {
                let from = self.wires[li].ends[side];
                let to = self.wires[li].ends[1 - side];
                while self.wires[li].busy_until[side] <= self.now {
                    let p = &mut self.peers[from];
                    let Some(f) =
                        p.ep.poll_transmit(self.now, li, self.profile.params.mtu, &mut p.store)
                    else {
                        break;
                    };
                    assert!(f.len() <= self.profile.params.mtu);
                    let ser = Duration::from_secs_f64(
                        f.len() as f64 * 8.0 / self.profile.rate_bps as f64,
                    );
                    let w = &mut self.wires[li];
                    w.busy_until[side] = self.now.max(w.busy_until[side]) + ser;
                    let at = w.busy_until[side] + self.profile.latency;
                    if self.keep_log {
                        self.log.push((from, to, f.clone()));
                    }
                    for g in (self.hook)(from, to, f) {
                        self.wires[li].queues[1 - side].push_back((at, g));
                    }
                }
            }
        }
        let mut next = end;
        for w in &self.wires {
            for dir in 0..2 {
                if let Some(f) = w.queues[dir].front() {
                    next = next.min(f.0);
                }
                if w.busy_until[dir] > self.now {
                    next = next.min(w.busy_until[dir]);
                }
            }
        }
        for p in &self.peers {
            if let Some(t) = p.ep.poll_timeout() {
                next = next.min(t);
            }
        }
        self.now = next.max(self.now + Duration::from_micros(500));
        for p in &mut self.peers {
            p.ep.handle_timeout(self.now);
            p.collect_if_due();
        }
    }

    /// Runs until `done` holds or `limit` of virtual time passes; returns whether it held.
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&Net) -> bool) -> bool {
        let end = self.now + limit;
        while self.now < end {
            if done(self) {
                return true;
            }
            self.step(end);
        }
        done(self)
    }

    pub fn run_for(&mut self, d: Duration) {
        self.run_until(d, |_| false);
    }
}

/// A frame from a peer on a point-to-point link, with the given messages.
pub fn frame(pn: u64, build: impl FnOnce(&mut FrameWriter)) -> Vec<u8> {
    let mut w = FrameWriter::new(Header::unaddressed(pn), 1472);
    build(&mut w);
    w.finish()
}

/// The HELLO of a peer that has heard us (a fake or replayed node).
pub fn hello(key: &[u8; 32], nonce: u64, set_size: u64) -> Vec<u8> {
    frame(0, |w| {
        assert!(w.hello(key, nonce, set_size, 1, &[]));
    })
}

/// Whether every message of `f` parses and one of them is of type `ty`.
pub fn has_type(f: &[u8], ty: u8) -> bool {
    wire::message_sizes(f).iter().any(|(t, _)| *t == ty)
}

/// Clears, in every HELLO of frame `f`, the flag saying its sender numbers its offers
/// (bit 2): the peer then takes it for a node that does not, as one of an older version.
pub fn hide_numbered_offers(f: &mut [u8]) {
    clear_hello_flags(f, 4);
}

/// Clears the HELLO flags in `mask` in every HELLO of frame `f` (a node of an older
/// version, without what they announce).
pub fn clear_hello_flags(f: &mut [u8], mask: u8) {
    let sizes = wire::message_sizes(f);
    if f.len() < 2 {
        return;
    }
    let mut pos = wire::header_len(f).expect("a packet number");
    for (ty, size) in sizes {
        if ty == wire::ty::HELLO {
            let len = skywave_bundle::varint::get(&f[pos + 1..])
                .expect("a length")
                .1;
            let body = pos + 1 + len;
            let set_size = skywave_bundle::varint::get(&f[body + 40..])
                .expect("a set size")
                .1;
            f[body + 40 + set_size] &= !mask;
        }
        pos += size;
    }
}

/// A shared radio channel of `mtu`-byte frames at 9600 bit/s, as a driver describes it
/// (the fuzz harness's shared-radio profile at that rate).
pub fn shared_radio(mtu: usize, loss_hint: f64) -> LinkParams {
    LinkParams {
        mtu,
        rate_bps: Some(9600),
        rtt_hint: Duration::from_millis(300),
        loss_hint,
        ..Profile::pick(2).params
    }
}

/// Two endpoints (node keys 1 and 2) on one shared channel that delivers every frame at
/// once; time moves by the endpoints' own timers.
pub struct RadioPair {
    pub eps: [Endpoint; 2],
    pub stores: [MemStore; 2],
    pub params: LinkParams,
    /// Zero: every poll of a wake-up is at one instant, and the endpoints are woken
    /// exactly at their timers. Otherwise as a daemon runs them: the clock moves on by
    /// this much from one poll to the next, and wake-ups come at the timers rounded up
    /// to the millisecond.
    pub poll_gap: Duration,
    /// Where [`RadioPair::run`] goes on from (where the last run ended).
    pub now: Duration,
}

impl RadioPair {
    pub fn new(params: LinkParams, nonces: (u64, u64)) -> Self {
        let mut eps = [
            Endpoint::new(Config::default(), fuzzing::node_key(1), nonces.0),
            Endpoint::new(Config::default(), fuzzing::node_key(2), nonces.1),
        ];
        for ep in &mut eps {
            ep.link_up(Duration::ZERO, 0, params);
        }
        Self {
            eps,
            stores: [MemStore::new(), MemStore::new()],
            params,
            poll_gap: Duration::ZERO,
            now: Duration::ZERO,
        }
    }

    /// Stores bundle `n` (version 1, `size` bytes) at `side`.
    pub fn insert(&mut self, side: usize, n: u64, size: usize) -> BundleId {
        let (m, payload) = fuzzing::bundle(n, 1, size);
        let id = m.id();
        self.stores[side].insert(m, payload);
        self.eps[side].bundle_stored(Duration::ZERO, id, &mut self.stores[side]);
        id
    }

    /// Runs from where the last run ended until `end`: each side, when polled, sends all
    /// it will; `deliver(side, now, frame)` says whether the other side gets the frame,
    /// and may change it first.
    pub fn run(
        &mut self,
        end: Duration,
        mut deliver: impl FnMut(usize, Duration, &mut Vec<u8>) -> bool,
    ) {
        let mut now = self.now;
        let mtu = self.params.mtu;
        while now < end {
            for i in 0..2 {
                let (a, b) = self.eps.split_at_mut(1);
                let (me, other) = if i == 0 {
                    (&mut a[0], &mut b[0])
                } else {
                    (&mut b[0], &mut a[0])
                };
                let (sa, sb) = self.stores.split_at_mut(1);
                let (mine, theirs) = if i == 0 {
                    (&mut sa[0], &mut sb[0])
                } else {
                    (&mut sb[0], &mut sa[0])
                };
                let mut t = now;
                while let Some(mut f) = me.poll_transmit(t, 0, mtu, mine) {
                    if deliver(i, t, &mut f) {
                        other.handle_frame(t, 0, &f, theirs);
                    }
                    t += self.poll_gap;
                }
            }
            let mut next = self
                .eps
                .iter()
                .filter_map(|e| e.poll_timeout())
                .min()
                .unwrap_or(now + Duration::from_secs(1))
                .max(now + Duration::from_millis(1));
            if !self.poll_gap.is_zero() {
                next = Duration::from_millis(next.as_nanos().div_ceil(1_000_000) as u64);
            }
            now = next.min(end);
            for ep in &mut self.eps {
                ep.handle_timeout(now);
            }
        }
        self.now = now;
    }
}
