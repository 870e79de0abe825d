//! The daemon's core task: owns the protocol endpoint and every link, and turns socket
//! readiness, driver events, timers and API commands into endpoint calls.
//!
//! One task, so the endpoint needs no lock; the store is behind a mutex the HTTP
//! handlers share (held only for single store operations).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde_json::json;
use skywave_bundle::{BundleId, SecretKey};
use skywave_links::{LinkCounters, LinkEvent, LinkHandle, LinkParams, RadioStatus};
use skywave_node::StoreAdapter;
use skywave_node::adapter::{IpLinkConfig, LinkAdapter, Readiness};
use skywave_node::mac::SoftMac;
use skywave_node::netkey::FrameTag;
use skywave_node::secure::{self, Channel, DATA_OVERHEAD};
use skywave_proto::{Direction, Endpoint, Event, LinkId, TransferState, wire};
use tokio::net::{TcpStream, UdpSocket};
use tokio::sync::{mpsc, oneshot, watch};

use crate::config::PeerAddr;
use crate::events::EventLog;
use crate::ip::{self, TcpTx};
use crate::liveness::{self, Liveness};
use crate::status::Status;
use crate::trust::Trust;

mod named;
mod sealed;
mod status;

/// Frames built for one link before the others get a turn.
const FAIR_BURST: usize = 256;

/// Everything the HTTP handlers and the core share.
#[derive(Debug)]
pub struct Shared {
    pub store: Mutex<StoreAdapter>,
    pub events: EventLog,
    pub cmds: mpsc::UnboundedSender<Cmd>,
    pub node: [u8; 32],
    /// Who may use the HTTP API.
    pub access: crate::access::Access,
    /// The HTTP API's address as bound.
    pub bound: std::net::SocketAddr,
    pub http: String,
    pub started: Instant,
    /// Turns true when the daemon stops: long-lived responses (event streams) end.
    pub stopping: tokio::sync::watch::Receiver<bool>,
    /// Caps and timeouts (`[limits]`) and how often each fired.
    pub limits: Arc<crate::limits::Limits>,
    /// The last status the core gave and when: what the API answers with when the core
    /// is busy (see `http::core_status`).
    pub last_status: Mutex<Option<(Instant, Status)>>,
}

impl Shared {
    /// What the API's handlers and the core share, for an API under `access` (which
    /// names the bound address); started now, with no status given yet.
    pub fn new(
        store: StoreAdapter,
        events: EventLog,
        cmds: mpsc::UnboundedSender<Cmd>,
        node: [u8; 32],
        access: crate::access::Access,
        stopping: tokio::sync::watch::Receiver<bool>,
        limits: Arc<crate::limits::Limits>,
    ) -> Self {
        let bound = access.bound();
        Self {
            store: Mutex::new(store),
            events,
            cmds,
            node,
            access,
            bound,
            http: bound.to_string(),
            started: Instant::now(),
            stopping,
            limits,
            last_status: Mutex::new(None),
        }
    }

    /// The store, even if a panicking holder poisoned the lock (its state is SQLite's,
    /// which is transactional).
    pub fn store(&self) -> MutexGuard<'_, StoreAdapter> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What link tasks tell the core.
#[derive(Debug)]
pub enum Input {
    Frame {
        link: LinkId,
        data: Bytes,
    },
    /// The peer's driver was heard, with no frame ([`LinkEvent::Heard`]).
    Heard {
        link: LinkId,
        answered: Option<skywave_node::pacer::Answered<Instant>>,
    },
    Up {
        link: LinkId,
        params: LinkParams,
    },
    Down {
        link: LinkId,
        reason: String,
    },
    /// A driver or TCP writer can take this many frame bytes now.
    Room {
        link: LinkId,
        room: usize,
    },
    Radio {
        link: LinkId,
        status: RadioStatus,
    },
    /// A modem's account of itself.
    Modem {
        link: LinkId,
        line: String,
    },
    TcpAccepted {
        stream: TcpStream,
        /// Largest frame on the stream, sealed.
        mtu: usize,
        /// The listener's trust index (`None`: plaintext).
        trust: Option<usize>,
        /// The listener's link is under amateur rules: sealed bundles stay off it.
        amateur: bool,
        /// Its place under the connection caps, held while it runs.
        permit: crate::limits::Permit,
    },
    TcpUp {
        link: LinkId,
        tx: TcpTx,
        peer: String,
    },
    /// A configured peer's host name was looked up.
    Resolved(crate::resolve::Resolved),
}

/// What the API asks of the core.
#[derive(Debug)]
pub enum Cmd {
    /// A bundle was committed to the store by the API: offer it to peers.
    Stored(BundleId),
    Status(oneshot::Sender<Status>),
}

#[derive(Debug)]
enum Io {
    /// Not connected (a TCP connector between attempts).
    None,
    Udp {
        sock: usize,
        addr: SocketAddr,
    },
    Tcp(TcpTx),
    Driver {
        frames: mpsc::Sender<Bytes>,
        counters: Arc<LinkCounters>,
        /// [`LinkHandle::turn`].
        turn: Arc<AtomicBool>,
    },
}

/// Whether the turn flag a driver reads as it takes each frame may be set to `in_turn`
/// now: it already says so, or no frame waits in the channel to be taken under it (a
/// contended frame taken under a held turn's flag would key at once, into a busy
/// channel).
fn turn_may_change(frames: &mpsc::Sender<Bytes>, turn: &AtomicBool, in_turn: bool) -> bool {
    turn.load(Ordering::Acquire) == in_turn || frames.capacity() == frames.max_capacity()
}

#[derive(Debug)]
struct LinkEntry {
    kind: String,
    name: String,
    io: Io,
    /// What the endpoint is told and asked of this link (the layer the lab runs too).
    adapter: LinkAdapter,
    up: bool,
    reason: Option<String>,
    /// Driver links: bytes the driver takes now; 0 after a send until it reports again.
    room: usize,
    /// Driver links: the driver was told the endpoint has nothing more to send
    /// ([`skywave_links::IDLE`]) since the last frame or room report.
    idle_told: bool,
    /// Driver links: take turns on the channel for a shared radio (`channel_access =
    /// "driver"`, the default); the turn-taking itself while the link is up.
    want_mac: bool,
    mac: Option<SoftMac>,
    bytes_out: u64,
    bytes_in: u64,
    frames_out: u64,
    frames_in: u64,
    rate: RateMeter,
    radio: Option<RadioStatus>,
    /// The modem's last account of itself (`LinkEvent::Modem`), shown with the state.
    modem: Option<String>,
    /// An accepted TCP connection: forgotten when it closes.
    ephemeral: bool,
    /// A UDP peer learnt from traffic (not configured): forgotten after a long silence.
    learnt: bool,
    last_in: Instant,
    /// When the link last came up.
    up_since: Instant,
    /// Driver links: since when the driver has offered no room (the radio takes nothing).
    no_room_since: Option<Instant>,
    /// IP links: when a peer was last refused here for not being on the trust list.
    refused_at: Option<Instant>,
    /// The state last published (`status::link_health`), to announce changes once.
    health: &'static str,
    /// IP links: the encrypted channel and the link's trust settings (`None`: plaintext).
    sec: Option<Sec>,
    /// Driver links with a network key: tags frames sent, checks frames received.
    tag: Option<FrameTag>,
    /// Frames received without a valid network tag (dropped).
    bad_tags: u64,
}

#[derive(Debug)]
struct Sec {
    /// Index into `Core::trusts`.
    trust: usize,
    chan: Channel,
    /// The remote host, for logging a refusal once per address (a TCP peer reconnects
    /// from a new port each time, so only its IP counts).
    host: Option<std::net::IpAddr>,
    /// Where the peer's key is remembered (`Core::known_keys`): a UDP peer's address,
    /// a dialled TCP peer's once connected; none for a TCP peer that dialled us (its
    /// port changes every time).
    key_at: Option<SocketAddr>,
}

/// What a peer not on a trust list delivered since `since` (an hour at most).
#[derive(Debug)]
struct Budget {
    since: Instant,
    bundles: u64,
    bytes: u64,
    paused: bool,
}

/// Bit rates over the last few seconds, from byte counters sampled once a second.
#[derive(Debug, Default, Clone, Copy)]
struct RateMeter {
    last_out: u64,
    last_in: u64,
    out_bps: f64,
    in_bps: f64,
}

impl RateMeter {
    fn sample(&mut self, out: u64, inn: u64, secs: f64) {
        let a = 0.5;
        let o = (out - self.last_out) as f64 * 8.0 / secs;
        let i = (inn - self.last_in) as f64 * 8.0 / secs;
        self.out_bps = a * o + (1.0 - a) * self.out_bps;
        self.in_bps = a * i + (1.0 - a) * self.in_bps;
        self.last_out = out;
        self.last_in = inn;
    }
}

#[derive(Debug)]
struct UdpSock {
    sock: Arc<UdpSocket>,
    cfg: crate::config::UdpConfig,
    peers: HashMap<SocketAddr, LinkId>,
    /// Index into `Core::trusts`; `None` for a plaintext socket.
    trust: Option<usize>,
    /// Under amateur rules: sealed bundles stay off its peers' links.
    amateur: bool,
    /// A frame the socket would not take (send buffer full), retried when writable.
    blocked: VecDeque<Batch>,
    /// Segmentation (GSO) and coalescing (GRO) support of this socket.
    state: quinn_udp::UdpSocketState,
    beacon_at: Instant,
}

#[derive(Debug, Clone, Copy)]
struct Progress {
    held: u64,
    at: Instant,
    bps: f64,
}

/// See the module docs.
#[derive(Debug)]
pub struct Core {
    ep: Endpoint,
    shared: Arc<Shared>,
    start: Instant,
    links: BTreeMap<LinkId, LinkEntry>,
    next_link: LinkId,
    udp: Vec<UdpSock>,
    inputs: mpsc::Sender<Input>,
    progress: HashMap<([u8; 32], BundleId, u64, bool), Progress>,
    useful_bytes: u64,
    /// Drops below the protocol (at sockets and drivers), by reason.
    drops: BTreeMap<&'static str, u64>,
    last_tick: Instant,
    ticks: u64,
    /// Receive buffer for datagrams (one larger than the largest accepted).
    rbuf: Vec<u8>,
    /// Keep-alives, and which peers are down.
    live: Liveness,
    /// The node's identity key (it keys the encrypted links) and directory.
    secret: SecretKey,
    dir: PathBuf,
    /// Trust settings of the IP links, by index.
    trusts: Vec<Trust>,
    /// Node keys proven at an address, for an IK handshake the next time.
    known_keys: HashMap<SocketAddr, [u8; 32]>,
    /// `known_keys` changed since it was last written to `known_peers::FILE`.
    known_dirty: bool,
    /// The write of `known_keys` in progress: the next waits for it, so an older text
    /// never lands after a newer.
    known_saving: Option<tokio::task::JoinHandle<()>>,
    route_mtus: ip::RouteMtus,
    /// Addresses whose refused handshakes were logged (each once).
    refused_logged: HashSet<std::net::IpAddr>,
    /// What each peer not on a trust list delivered this hour (`limits.untrusted_*`).
    budgets: HashMap<[u8; 32], Budget>,
    /// Scratch buffers for sealing and opening.
    plain: Vec<u8>,
    /// The frame opened from the last sealed datagram (reused at its length).
    opened: Vec<u8>,
    sealed: Vec<u8>,
    /// UDP peers configured by host name.
    named: Vec<named::Named>,
}

/// The oldest kernel receive stamp taken as one: anything older (or in the future) is a
/// step of the wall clock between the stamp and the read, and the read time stands.
const STAMP_MAX_AGE: Duration = Duration::from_secs(1);

/// When a datagram read at `now` (the core's clock; `wall` read with it) reached the
/// host, from the kernel's receive stamp (`SO_TIMESTAMPNS`, wall clock): the core reads
/// up to a batch of datagrams at once, so read times tell the pace of its reads, not the
/// path's, and two frames sent back to back to measure the path (SPACING) must be timed
/// as they arrived. The lab's nodes get each frame at its arrival.
fn arrival(now: Duration, wall: Option<Duration>, stamp: Option<Duration>) -> Duration {
    match (wall, stamp) {
        (Some(wall), Some(stamp)) if stamp <= wall && wall - stamp <= STAMP_MAX_AGE => {
            now.saturating_sub(wall - stamp)
        }
        _ => now,
    }
}

/// The longest a stopping daemon waits for a background write of `known_peers` before
/// its own (a disk that slow loses the keys learnt meanwhile, as before).
const KNOWN_SAVE_WAIT: Duration = Duration::from_secs(2);

/// Receive slots per system call, each big enough for one coalesced (GRO) read.
const RECV_SLOTS: usize = 8;
const RECV_SLOT: usize = 64 * 1024;

/// Frames of one link sent with one system call (GSO), when the socket allows.
const GSO_MAX: usize = 32;
/// Largest segmented write (the kernel's limit is 64 KiB).
const GSO_BYTES: usize = 60 * 1024;

/// Equal-sized frames for one destination, sent as one segmented datagram write.
#[derive(Debug)]
struct Batch {
    link: LinkId,
    addr: SocketAddr,
    buf: Vec<u8>,
    seg: usize,
    count: usize,
}

/// Receive calls per wake before the core turns to other work.
const UDP_BATCH: usize = 32;

/// Peers on a UDP socket not yet proven to be at their address (see `admit_unproven`).
const MAX_UNPROVEN: usize = 32;
/// Addresses remembered with their node key, and refusals logged.
const MAX_KNOWN_KEYS: usize = 4096;
/// Largest frame sent inside a handshake: every path carries it with the keys added.
const PRE_SESSION_FRAME: usize = 1024;

/// Silence after which a UDP peer learnt from traffic is forgotten.
const LEARNT_PEER_IDLE: Duration = Duration::from_secs(600);

/// Seconds between checkpoints of partial transfers.
const CHECKPOINT_TICKS: u64 = 2;

impl Core {
    pub fn new(
        ep: Endpoint,
        shared: Arc<Shared>,
        inputs: mpsc::Sender<Input>,
        secret: SecretKey,
        dir: PathBuf,
    ) -> Core {
        let now = Instant::now();
        let known_keys = crate::known_peers::load(&dir.join(crate::known_peers::FILE));
        Core {
            ep,
            shared,
            start: now,
            links: BTreeMap::new(),
            next_link: 0,
            udp: Vec::new(),
            inputs,
            progress: HashMap::new(),
            useful_bytes: 0,
            drops: BTreeMap::new(),
            last_tick: now,
            ticks: 0,
            rbuf: vec![0; RECV_SLOTS * RECV_SLOT],
            live: Liveness::new(jitter_seed()),
            secret,
            dir,
            trusts: Vec::new(),
            known_keys,
            known_dirty: false,
            known_saving: None,
            route_mtus: ip::RouteMtus::default(),
            refused_logged: HashSet::new(),
            budgets: HashMap::new(),
            plain: Vec::new(),
            opened: Vec::new(),
            sealed: Vec::new(),
            named: Vec::new(),
        }
    }

    /// The trust index for an IP link's settings, or `None` for a plaintext link.
    fn add_trust(&mut self, t: crate::trust::LinkTrust) -> anyhow::Result<Option<usize>> {
        if t.plaintext {
            return Ok(None);
        }
        let t = Trust::new(t, &self.secret, &self.dir)?;
        if let Some(p) = t.trust_path() {
            tracing::info!(mode = t.cfg.mode.as_str(), file = %p.display(), "trust list");
        }
        self.trusts.push(t);
        Ok(Some(self.trusts.len() - 1))
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn alloc(&mut self, kind: &str, name: String, io: Io, adapter: LinkAdapter) -> LinkId {
        let id = self.next_link;
        self.next_link += 1;
        self.links.insert(
            id,
            LinkEntry {
                kind: kind.into(),
                name,
                io,
                adapter,
                up: false,
                reason: None,
                room: 0,
                idle_told: false,
                want_mac: false,
                mac: None,
                bytes_out: 0,
                bytes_in: 0,
                frames_out: 0,
                frames_in: 0,
                rate: RateMeter::default(),
                radio: None,
                modem: None,
                ephemeral: false,
                learnt: false,
                last_in: Instant::now(),
                up_since: Instant::now(),
                no_room_since: None,
                refused_at: None,
                health: "down",
                sec: None,
                tag: None,
                bad_tags: 0,
            },
        );
        id
    }

    fn set_up(&mut self, link: LinkId, adapter: LinkAdapter) {
        let now = self.now();
        let Some(e) = self.links.get_mut(&link) else {
            return;
        };
        // The tag's bytes come out of each frame the protocol may build.
        let adapter = match &e.tag {
            Some(t) => adapter.with_frame_tag(t.len()),
            None => adapter,
        };
        e.adapter = adapter;
        let params = adapter.params();
        let was = e.up;
        e.up = true;
        e.reason = None;
        if !was {
            e.up_since = Instant::now();
        }
        self.ep.link_up(now, link, params);
        if !was {
            tracing::info!(link, name = %e.name, "link up");
            let v = json!({"link": link, "name": e.name, "kind": e.kind, "up": true});
            self.shared.events.publish("link", v);
        }
    }

    fn set_down(&mut self, link: LinkId, reason: String) {
        let now = self.now();
        let Some(e) = self.links.get_mut(&link) else {
            return;
        };
        let was = e.up;
        e.up = false;
        e.room = 0;
        e.mac = None;
        e.reason = Some(reason.clone());
        if matches!(e.io, Io::Tcp(_)) {
            e.io = Io::None;
        }
        if was {
            tracing::info!(link, name = %e.name, %reason, "link down");
            let v = json!({"link": link, "name": e.name, "kind": e.kind, "up": false, "reason": reason});
            self.shared.events.publish("link", v);
            self.ep.link_down(now, link);
        }
        if e.ephemeral {
            self.links.remove(&link);
        }
    }

    /// Opens a UDP socket as configured, with a link per static peer.
    /// `amateur`: the link is under amateur rules, and sealed bundles stay off it
    /// ([`Endpoint::withhold_sealed`]).
    pub async fn add_udp(
        &mut self,
        cfg: crate::config::UdpConfig,
        amateur: bool,
    ) -> anyhow::Result<SocketAddr> {
        let sock = bind_udp(cfg.bind).map_err(|e| {
            anyhow::anyhow!(
                "binding UDP {}: {e} (is another daemon using it?)",
                cfg.bind
            )
        })?;
        if cfg.discovery.is_some() {
            sock.set_broadcast(true)?;
            if let Some(SocketAddr::V4(g)) = cfg.discovery
                && g.ip().is_multicast()
            {
                sock.join_multicast_v4(*g.ip(), std::net::Ipv4Addr::UNSPECIFIED)?;
            }
        }
        let local = sock.local_addr()?;
        let trust = self.add_trust(cfg.link_trust())?;
        let state = quinn_udp::UdpSocketState::new((&sock).into())?;
        let sock = Arc::new(sock);
        let index = self.udp.len();
        let peers = cfg.peers.clone();
        self.udp.push(UdpSock {
            sock,
            cfg,
            peers: HashMap::new(),
            trust,
            amateur,
            blocked: VecDeque::new(),
            state,
            beacon_at: Instant::now(),
        });
        for p in &peers {
            match p {
                PeerAddr::Ip(a) => {
                    let id = self.udp_peer(index, *a);
                    if let Some(e) = self.links.get_mut(&id) {
                        e.learnt = false;
                    }
                }
                PeerAddr::Name { host, port } => self.add_named_udp(index, host.clone(), *port),
            }
        }
        tracing::info!(
            listen = %local,
            peers = %list(&peers),
            encryption = encryption(trust),
            "udp link: listening"
        );
        Ok(local)
    }

    /// A UDP peer's adapter; `to`, its address once known, bounds the path MTU probed
    /// for when the link sets no `mtu`.
    fn udp_adapter(&mut self, sock: usize, to: Option<SocketAddr>) -> LinkAdapter {
        let route = match (self.udp[sock].cfg.mtu, to) {
            (None, Some(to)) => self.route_mtus.get(to, Instant::now(), ip::route_payload),
            _ => None,
        };
        let cfg = &self.udp[sock].cfg;
        let wire = cfg
            .mtu
            .or(route)
            .unwrap_or(skywave_node::adapter::DEFAULT_UDP_MTU);
        LinkAdapter::udp(IpLinkConfig {
            // The sealed datagram, not the frame inside it, is what may not pass the
            // largest a receiver takes.
            mtu: wire.min(ip::MAX_DATAGRAM) - if cfg.plaintext { 0 } else { DATA_OVERHEAD },
            rate_bps: cfg.rate,
            rtt: cfg.rtt,
            // The path may carry less than the configured size (a VPN, PPPoE): start at
            // what every path carries and probe up to it.
            discover_mtu: true,
        })
    }

    fn udp_peer(&mut self, sock: usize, addr: SocketAddr) -> LinkId {
        if let Some(&id) = self.udp[sock].peers.get(&addr) {
            return id;
        }
        let adapter = self.udp_adapter(sock, Some(addr));
        let id = self.alloc(
            "udp",
            format!("udp:{addr}"),
            Io::Udp { sock, addr },
            adapter,
        );
        self.ep.withhold_sealed(id, self.udp[sock].amateur);
        let known = self.known_keys.get(&addr).copied();
        let trust = self.udp[sock].trust;
        if let Some(e) = self.links.get_mut(&id) {
            e.learnt = true;
            e.sec = trust.map(|trust| Sec {
                trust,
                chan: Channel::new(known),
                host: Some(addr.ip()),
                key_at: Some(addr),
            });
        }
        self.udp[sock].peers.insert(addr, id);
        self.set_up(id, adapter);
        id
    }

    /// Starts a TCP listener and connectors as configured.
    pub async fn add_tcp(
        &mut self,
        cfg: crate::config::TcpConfig,
        amateur: bool,
    ) -> anyhow::Result<Option<SocketAddr>> {
        let mut local = None;
        let trust = self.add_trust(cfg.link_trust())?;
        // Sealed frames fit the configured size with their counter and tag.
        let mtu = cfg.mtu - if trust.is_some() { DATA_OVERHEAD } else { 0 };
        if let Some(addr) = cfg.listen {
            let l = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
                anyhow::anyhow!("listening on TCP {addr}: {e} (is another daemon using it?)")
            })?;
            local = Some(l.local_addr()?);
            let (tx, wire_mtu) = (self.inputs.clone(), cfg.mtu);
            // Accepted streams come back as inputs carrying this listener's MTU and trust.
            let (atx, mut arx) = mpsc::channel::<Input>(16);
            tokio::spawn(ip::tcp_listener(l, self.shared.limits.clone(), atx));
            tokio::spawn(async move {
                while let Some(i) = arx.recv().await {
                    let i = match i {
                        Input::TcpAccepted { stream, permit, .. } => Input::TcpAccepted {
                            stream,
                            mtu: wire_mtu,
                            trust,
                            amateur,
                            permit,
                        },
                        other => other,
                    };
                    if tx.send(i).await.is_err() {
                        return;
                    }
                }
            });
            tracing::info!(
                listen = %l_display(local),
                encryption = encryption(trust),
                "tcp link: listening"
            );
        }
        for addr in cfg.peers {
            tracing::info!(
                dial = %addr,
                encryption = encryption(trust),
                "tcp link: connecting"
            );
            let id = self.alloc(
                "tcp",
                format!("tcp:{addr}"),
                Io::None,
                LinkAdapter::tcp(mtu),
            );
            self.ep.withhold_sealed(id, amateur);
            if let Some(e) = self.links.get_mut(&id) {
                e.reason = Some("connecting".into());
                e.sec = trust.map(|trust| Sec {
                    trust,
                    chan: Channel::new(None),
                    // A name's address is known once connected.
                    host: match &addr {
                        PeerAddr::Ip(a) => Some(a.ip()),
                        PeerAddr::Name { .. } => None,
                    },
                    key_at: None,
                });
            }
            tokio::spawn(ip::tcp_connector(
                id,
                addr,
                cfg.mtu,
                cfg.reconnect_max,
                self.inputs.clone(),
            ));
        }
        Ok(local)
    }

    /// Runs a serial, radio, modem or emulated driver as a link. `take_turns`: if the
    /// link turns out to be a shared radio, the core takes turns on the channel for it
    /// ([`SoftMac`]) rather than leave channel access to the radio.
    /// `amateur`: the link is under amateur rules, and sealed bundles stay off it.
    /// `tag`: every frame carries a network-key tag, and frames without a valid one are
    /// dropped (`skywave_node::netkey`).
    pub fn add_driver(
        &mut self,
        kind: &str,
        h: LinkHandle,
        take_turns: bool,
        amateur: bool,
        tag: Option<FrameTag>,
    ) {
        let LinkHandle {
            name,
            events,
            frames,
            room,
            counters,
            turn,
        } = h;
        let id = self.alloc(
            kind,
            name,
            Io::Driver {
                frames,
                counters,
                turn,
            },
            LinkAdapter::device_starting(),
        );
        self.ep.withhold_sealed(id, amateur);
        if let Some(e) = self.links.get_mut(&id) {
            e.reason = Some("starting".into());
            e.want_mac = take_turns;
            e.tag = tag;
        }
        tokio::spawn(forward_driver(id, events, room, self.inputs.clone()));
    }

    /// The core's loop; returns when every input and command sender is gone.
    pub async fn run(
        mut self,
        mut inputs: mpsc::Receiver<Input>,
        mut cmds: mpsc::UnboundedReceiver<Cmd>,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // One status kept from the start, for a call that finds the core busy at once.
        self.keep_status();
        loop {
            let now = self.now();
            if self.ep.poll_timeout().is_some_and(|t| t <= now) {
                self.ep.handle_timeout(now);
            }
            let more = self.flush();
            self.drain_events();
            // A radio waiting for its turn on the channel is woken for it.
            let turn = self
                .links
                .values()
                .filter(|e| e.up)
                .filter_map(|e| e.mac.as_ref()?.waiting_until(now))
                .min();
            let deadline = if more {
                Some(now)
            } else {
                [self.ep.poll_timeout(), turn].into_iter().flatten().min()
            }
            .map(|d| tokio::time::Instant::from_std(self.start + d));
            let blocked = self
                .udp
                .iter()
                .position(|u| !u.blocked.is_empty())
                .map(|i| (i, self.udp[i].sock.clone()));
            let readable = (!self.udp.is_empty()).then(|| {
                futures_util::future::select_all(self.udp.iter().enumerate().map(|(i, u)| {
                    let s = u.sock.clone();
                    Box::pin(async move { s.readable().await.map(|_| i) })
                }))
            });
            tokio::select! {
                biased;
                _ = stop.changed() => {
                    self.save_known_keys(false);
                    return;
                }
                c = cmds.recv() => match c {
                    Some(c) => self.on_cmd(c),
                    None => return,
                },
                i = inputs.recv() => match i {
                    Some(i) => self.received(|core| {
                        core.on_input(i);
                        // Take what else is waiting before building frames again.
                        for _ in 0..256 {
                            match inputs.try_recv() {
                                Ok(i) => core.on_input(i),
                                Err(_) => break,
                            }
                        }
                    }),
                    None => return,
                },
                (r, _, _) = async { readable.expect("guarded").await }, if readable.is_some() => {
                    if let Ok(i) = r {
                        self.received(|core| core.read_udp(i));
                    }
                }
                r = async { blocked.as_ref().expect("guarded").1.writable().await }, if blocked.is_some() => {
                    if r.is_ok() {
                        let i = blocked.as_ref().expect("guarded").0;
                        self.retry_blocked(i);
                    }
                }
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)), if deadline.is_some() => {
                    let now = self.now();
                    self.ep.handle_timeout(now);
                }
                _ = tick.tick() => self.on_tick(),
            }
        }
    }

    /// Handles a run of received frames with the bundles they complete committed
    /// together, before the loop sends anything that tells of them (the store's group
    /// commit: one transaction per run rather than one per bundle). A run whose commit
    /// fails is forgotten by the protocol, to be fetched again.
    fn received(&mut self, f: impl FnOnce(&mut Self)) {
        self.shared.store().store.begin_batch();
        f(self);
        let shared = self.shared.clone();
        let mut store = shared.store();
        let lost = store.store.end_batch();
        self.ep.bundles_lost(&lost, &mut *store);
    }

    /// A fresh status, also kept for the API to answer with while the core is busy.
    fn keep_status(&mut self) -> Status {
        let st = self.status();
        *self
            .shared
            .last_status
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), st.clone()));
        st
    }

    fn on_cmd(&mut self, c: Cmd) {
        match c {
            Cmd::Stored(id) => {
                let now = self.now();
                let shared = self.shared.clone();
                let mut store = shared.store();
                self.ep.bundle_stored(now, id, &mut *store);
            }
            Cmd::Status(reply) => {
                let st = self.keep_status();
                let _ = reply.send(st);
            }
        }
    }

    fn on_input(&mut self, i: Input) {
        let now = self.now();
        match i {
            Input::Frame { link, data } => self.on_frame(link, &data, now, now),
            Input::Heard { link, answered } => {
                let since = |t: Instant| t.saturating_duration_since(self.start);
                let answered = answered.map(|a| a.map(since).into());
                self.ep.link_heard(now, link, answered);
            }
            Input::Up { link, params } => {
                let mut adapter = LinkAdapter::device(params);
                let seed = jitter_seed() ^ (link as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                if let Some(e) = self.links.get_mut(&link) {
                    e.mac = None;
                    if e.want_mac && params.shared {
                        adapter = adapter.without_channel_access();
                        e.mac = Some(SoftMac::for_link(&params, seed));
                    }
                }
                self.set_up(link, adapter)
            }
            Input::Down { link, reason } => self.set_down(link, reason),
            Input::Room { link, room } => {
                if let Some(e) = self.links.get_mut(&link) {
                    e.room = room;
                    e.idle_told = false;
                    if room > 0 {
                        e.no_room_since = None;
                    } else if e.no_room_since.is_none() {
                        e.no_room_since = Some(Instant::now());
                    }
                }
            }
            Input::Radio { link, status } => {
                if let Some(e) = self.links.get_mut(&link) {
                    e.radio = Some(status);
                }
            }
            Input::Modem { link, line } => {
                if let Some(e) = self.links.get_mut(&link) {
                    e.modem = Some(line);
                }
            }
            Input::TcpAccepted {
                stream,
                mtu,
                trust,
                amateur,
                permit,
            } => {
                let from = stream.peer_addr().ok();
                let peer = from.map_or_else(|| "?".into(), |a| a.to_string());
                let id = self.alloc(
                    "tcp",
                    format!("tcp:{peer} (in)"),
                    Io::None,
                    LinkAdapter::tcp(mtu - if trust.is_some() { DATA_OVERHEAD } else { 0 }),
                );
                self.ep.withhold_sealed(id, amateur);
                if let Some(e) = self.links.get_mut(&id) {
                    e.ephemeral = true;
                    e.sec = trust.map(|trust| Sec {
                        trust,
                        chan: Channel::new(None),
                        host: from.map(|a| a.ip()),
                        key_at: None,
                    });
                }
                tokio::spawn(ip::tcp_connection(
                    id,
                    stream,
                    mtu,
                    ip::IDLE,
                    Some(permit),
                    self.inputs.clone(),
                ));
            }
            Input::TcpUp { link, tx, peer } => {
                let Some(e) = self.links.get_mut(&link) else {
                    return;
                };
                tracing::debug!(link, %peer, "tcp connected");
                if let (Some(sec), Ok(a)) = (e.sec.as_mut(), peer.parse::<SocketAddr>()) {
                    sec.host = Some(a.ip());
                    sec.key_at = Some(a);
                    // A key met at this address before (this run or the last) makes the
                    // handshake IK.
                    if let Some(&k) = self.known_keys.get(&a) {
                        sec.chan.hint(k);
                    }
                }
                e.io = Io::Tcp(tx);
                let adapter = e.adapter;
                self.set_up(link, adapter);
            }
            Input::Resolved(r) => self.on_resolved(r),
        }
    }

    /// Reads what `sock` holds (up to a batch) and handles each datagram in place: no
    /// hand-off between tasks, no copy.
    fn read_udp(&mut self, sock: usize) {
        let mut buf = std::mem::take(&mut self.rbuf);
        let mut meta = [quinn_udp::RecvMeta::default(); RECV_SLOTS];
        for _ in 0..UDP_BATCH {
            let n = {
                let mut iov: Vec<std::io::IoSliceMut<'_>> = buf
                    .chunks_mut(RECV_SLOT)
                    .map(std::io::IoSliceMut::new)
                    .collect();
                let u = &self.udp[sock];
                u.sock.try_io(tokio::io::Interest::READABLE, || {
                    u.state.recv((&*u.sock).into(), &mut iov, &mut meta)
                })
            };
            match n {
                Ok(n) => {
                    let now = self.now();
                    let wall = SystemTime::now().duration_since(UNIX_EPOCH).ok();
                    for (i, m) in meta.iter().take(n).enumerate() {
                        let arrived = arrival(now, wall, m.timestamp);
                        let slot = &buf[i * RECV_SLOT..i * RECV_SLOT + m.len.min(RECV_SLOT)];
                        // Coalesced datagrams (GRO) arrive as equal strides.
                        let stride = m.stride.max(1);
                        if m.len == 0 {
                            // An empty datagram is still one to count.
                            self.on_datagram(sock, m.addr, 0, &[], now, arrived);
                        }
                        for d in slot.chunks(stride) {
                            let len = if m.len == stride { m.len } else { d.len() };
                            let data = &d[..d.len().min(ip::MAX_DATAGRAM)];
                            self.on_datagram(sock, m.addr, len, data, now, arrived);
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    // ICMP errors from a peer that went away surface here; keep reading.
                    tracing::debug!(error = %e, "udp receive");
                }
            }
        }
        self.rbuf = buf;
    }

    fn on_datagram(
        &mut self,
        sock: usize,
        from: SocketAddr,
        n: usize,
        data: &[u8],
        now: Duration,
        arrived: Duration,
    ) {
        if n > ip::MAX_DATAGRAM {
            *self.drops.entry("oversize").or_default() += 1;
            return;
        }
        if let Some(key) = ip::parse_beacon(data) {
            if key != self.shared.node && !self.udp[sock].peers.contains_key(&from) {
                if self.udp[sock].peers.len() >= self.udp[sock].cfg.max_peers {
                    *self.drops.entry("peer_limit").or_default() += 1;
                } else {
                    tracing::info!(%from, "peer discovered by beacon");
                    self.udp_peer(sock, from);
                }
            }
            // The beacon's key makes the first handshake IK (a false one costs two tries).
            if let (Some(&l), Some(x)) = (
                self.udp[sock].peers.get(&from),
                skywave_bundle::x25519_public_of(&key),
            ) && let Some(sec) = self.links.get_mut(&l).and_then(|e| e.sec.as_mut())
            {
                sec.chan.hint(x);
            }
            return;
        }
        let link = match self.udp[sock].peers.get(&from) {
            Some(&l) => l,
            None => {
                // Only something that looks like our frame makes a stranger a peer: on an
                // encrypted socket a first handshake message, or sealed data (we restarted:
                // it starts a handshake back).
                let first = data.first().copied();
                let looks_ours = match self.udp[sock].trust {
                    None => first == Some(wire::VERSION),
                    Some(_) => matches!(
                        first,
                        Some(k) if secure::kind::is_first(k) || k == secure::kind::DATA
                    ),
                };
                if !looks_ours {
                    let why = if self.udp[sock].trust.is_some() && first == Some(wire::VERSION) {
                        secure::Drop::Plaintext.name()
                    } else {
                        "garbage"
                    };
                    *self.drops.entry(why).or_default() += 1;
                    return;
                }
                if self.udp[sock].peers.len() >= self.udp[sock].cfg.max_peers
                    || !self.admit_unproven(sock)
                {
                    *self.drops.entry("peer_limit").or_default() += 1;
                    return;
                }
                self.udp_peer(sock, from)
            }
        };
        self.on_frame(link, data, now, arrived);
    }

    /// A frame read at `now` that reached the host at `arrived` (see `arrival`).
    fn on_frame(&mut self, link: LinkId, data: &[u8], now: Duration, arrived: Duration) {
        let Some(e) = self.links.get_mut(&link) else {
            return;
        };
        e.bytes_in += data.len() as u64;
        e.frames_in += 1;
        e.last_in = Instant::now();
        if let Some(m) = &mut e.mac {
            m.heard(now, self.ep.peers_on(link));
        }
        let data = match &e.tag {
            None => data,
            Some(t) => match t.verify(data) {
                Some(body) => body,
                None => {
                    // Not from a holder of the network key (or damaged): the protocol
                    // never sees it.
                    e.bad_tags += 1;
                    *self.drops.entry("bad_tag").or_default() += 1;
                    if e.bad_tags.is_power_of_two() {
                        tracing::debug!(link, name = %e.name, dropped = e.bad_tags, "frame without a valid network tag dropped");
                    }
                    return;
                }
            },
        };
        if e.sec.is_some() {
            self.on_sealed(link, data, now, arrived);
            return;
        }
        // A radio without channel access of its own: a frame ending its sender's over
        // may hand the channel to us (only a frame that verified: a stranger cannot).
        if let Some(m) = &mut e.mac {
            m.read_heard(now, data, self.ep.tag());
        }
        let shared = self.shared.clone();
        let mut store = shared.store();
        self.ep
            .handle_frame_at(now, arrived, link, data, &mut *store);
    }

    /// Builds and sends frames on every link while they take them. True if a link still
    /// had more to send when its turn ended.
    fn flush(&mut self) -> bool {
        let now = self.now();
        let shared = self.shared.clone();
        let mut store = shared.store();
        let ids: Vec<LinkId> = self
            .links
            .iter()
            .filter(|(_, e)| e.up)
            .map(|(&id, _)| id)
            .collect();
        let mut more = false;
        for id in ids {
            let mut n = 0;
            loop {
                if n == FAIR_BURST {
                    more = true;
                    break;
                }
                let Some(e) = self.links.get(&id) else { break };
                // What the socket or driver shows now; the adapter turns it into the
                // largest frame to ask for.
                let shows = match &e.io {
                    Io::None => break,
                    Io::Udp { sock, .. } => Readiness::Socket {
                        writable: self.udp[*sock].blocked.is_empty(),
                    },
                    Io::Tcp(tx) => {
                        let mut writable = tx.frames.capacity() > 0;
                        if !writable {
                            tx.waiting.store(true, Ordering::Release);
                            // The writer may have drained in between.
                            writable = tx.frames.capacity() > 0;
                        }
                        Readiness::Socket { writable }
                    }
                    Io::Driver { .. } => Readiness::Room(e.room),
                };
                let Some(max) = e.adapter.frame_budget(shows) else {
                    break;
                };
                let Some(max) = self.sealed_budget(id, max, now) else {
                    break;
                };
                if let Io::Udp { sock, addr } = e.io {
                    let (go_on, sent) =
                        self.gather_udp(id, sock, addr, max, FAIR_BURST - n, &mut store, now);
                    n += sent;
                    if !go_on {
                        break;
                    }
                    continue;
                }
                // A shared radio without channel access of its own: our turn first.
                let mut in_turn = false;
                if let Some(m) = &mut self.links.get_mut(&id).expect("present").mac {
                    if m.may_send(now).is_err() {
                        break;
                    }
                    in_turn = m.holds_turn();
                }
                if let Io::Driver { frames, turn, .. } = &self.links.get(&id).expect("present").io
                    && !turn_may_change(frames, turn, in_turn)
                {
                    // The driver reads the flag when it takes a frame: the one waiting
                    // would go with the next frame's. It takes it soon and says so.
                    break;
                }
                let f = self.ep.poll_transmit(now, id, max, &mut *store);
                if let Some(m) = &mut self.links.get_mut(&id).expect("present").mac {
                    m.polled(now, f.as_deref());
                }
                let Some(f) = f else {
                    self.tell_idle(id);
                    break;
                };
                n += 1;
                if let Io::Driver { turn, .. } = &self.links.get(&id).expect("present").io {
                    turn.store(in_turn, Ordering::Release);
                }
                if !self.send(id, f) {
                    break;
                }
            }
        }
        more
    }

    /// Builds up to `budget` frames for UDP link `id` and sends them in segmented
    /// batches of equal-sized frames (one system call each). Returns whether the link
    /// may take more now, and the frames built.
    #[allow(clippy::too_many_arguments)]
    fn gather_udp(
        &mut self,
        id: LinkId,
        sock: usize,
        addr: SocketAddr,
        max: usize,
        budget: usize,
        store: &mut StoreAdapter,
        now: Duration,
    ) -> (bool, usize) {
        let gso = self.udp[sock].state.max_gso_segments().clamp(1, GSO_MAX);
        let mut b = Batch {
            link: id,
            addr,
            buf: Vec::new(),
            seg: 0,
            count: 0,
        };
        let mut built = 0;
        let mut more = true;
        while built < budget {
            // Head and shared payload tail, copied once, straight into the batch (or
            // into the plaintext buffer, to be sealed into it).
            let Some(f) = self.ep.poll_transmit_parts(now, id, max, store) else {
                more = false;
                break;
            };
            built += 1;
            let secured = self.links.get(&id).is_some_and(|e| e.sec.is_some());
            // In a session a frame is sealed straight into the batch (its sealed length
            // is known beforehand); a handshake is sealed apart first.
            let direct = secured && !self.handshaking(id);
            if secured {
                self.plain.clear();
                f.write_to(&mut self.plain);
                if !direct && !self.seal(id, now) {
                    more = false;
                    break;
                }
            }
            let len = if direct {
                self.plain.len() + DATA_OVERHEAD
            } else if secured {
                self.sealed.len()
            } else {
                f.len()
            };
            // A segment may be shorter than the first only as the batch's last.
            let fits = b.count > 0
                && len <= b.seg
                && b.buf.len().is_multiple_of(b.seg)
                && b.count < gso
                && b.buf.len() + len <= GSO_BYTES;
            if b.count > 0 && !fits {
                let full = std::mem::replace(
                    &mut b,
                    Batch {
                        link: id,
                        addr,
                        buf: Vec::new(),
                        seg: 0,
                        count: 0,
                    },
                );
                self.send_batch(sock, full);
            }
            if direct {
                let at = b.buf.len();
                if !self.seal_into(id, now, &mut b.buf) {
                    more = false;
                    break;
                }
                if b.buf.len() - at != len {
                    // Never seen: a segment of another length would cut every later
                    // datagram of the batch in the wrong place.
                    b.buf.truncate(at);
                    *self.drops.entry("seal_failed").or_default() += 1;
                    more = false;
                    break;
                }
            } else if secured {
                b.buf.extend_from_slice(&self.sealed);
            } else {
                f.write_to(&mut b.buf);
            }
            if b.count == 0 {
                b.seg = len;
            }
            b.count += 1;
            // A handshake goes alone: nothing can follow it until it is answered.
            if secured
                && self
                    .links
                    .get(&id)
                    .is_some_and(|e| e.sec.as_ref().is_some_and(|s| s.chan.remote().is_none()))
            {
                more = false;
                break;
            }
        }
        if b.count > 0 {
            self.send_batch(sock, b);
        }
        (more && self.udp[sock].blocked.is_empty(), built)
    }

    /// Sends a batch, or queues it behind those already waiting for the socket.
    fn send_batch(&mut self, sock: usize, b: Batch) {
        self.udp[sock].blocked.push_back(b);
        self.retry_blocked(sock);
    }

    /// The endpoint has nothing more for driver link `id` though it has room: a
    /// half-duplex modem's driver ends its over (once per frame or room report).
    fn tell_idle(&mut self, id: LinkId) {
        let Some(e) = self.links.get_mut(&id) else {
            return;
        };
        // (A byte-stream modem's driver: half duplex, one peer. Others are never told.)
        let p = e.adapter.params();
        let announces = p.half_duplex && !p.shared;
        if let (true, false, Io::Driver { frames, .. }) = (announces, e.idle_told, &e.io)
            && frames.try_send(skywave_links::IDLE).is_ok()
        {
            e.idle_told = true;
        }
    }

    /// Sends one frame on `id`; false if the link will not take more now.
    fn send(&mut self, id: LinkId, f: Vec<u8>) -> bool {
        let f = if self.links.get(&id).is_some_and(|e| e.sec.is_some()) {
            self.plain = f;
            let now = self.now();
            if !self.seal(id, now) {
                return false;
            }
            // The frame goes out whole: the buffer is taken, not copied.
            let sealed = std::mem::take(&mut self.sealed);
            // A handshake goes alone: nothing can follow it until it is answered.
            if self.handshaking(id) {
                self.send_raw(id, sealed);
                return false;
            }
            sealed
        } else {
            f
        };
        let Some(e) = self.links.get_mut(&id) else {
            return false;
        };
        let mut f = f;
        if let Some(t) = &e.tag {
            t.append(&mut f);
        }
        let len = f.len() as u64;
        match &e.io {
            Io::None => return false,
            Io::Udp { sock, addr } => {
                let b = Batch {
                    link: id,
                    addr: *addr,
                    seg: f.len(),
                    count: 1,
                    buf: f,
                };
                let sock = *sock;
                self.send_batch(sock, b);
                return self.udp[sock].blocked.is_empty();
            }
            Io::Tcp(tx) => {
                if tx.frames.try_send(Bytes::from(f)).is_err() {
                    *self.drops.entry("send_failed").or_default() += 1;
                    return false;
                }
            }
            Io::Driver { frames, .. } => {
                if frames.try_send(Bytes::from(f)).is_err() {
                    *self.drops.entry("send_failed").or_default() += 1;
                    return false;
                }
                // The driver publishes its room after taking the frame.
                e.room = 0;
                e.idle_told = false;
            }
        }
        e.bytes_out += len;
        e.frames_out += 1;
        true
    }

    /// Sends the batches waiting for `sock` until it would block.
    fn retry_blocked(&mut self, sock: usize) {
        while let Some(b) = self.udp[sock].blocked.front() {
            let u = &self.udp[sock];
            let t = quinn_udp::Transmit {
                destination: b.addr,
                ecn: None,
                contents: &b.buf,
                segment_size: (b.count > 1).then_some(b.seg),
                src_ip: None,
            };
            let r = u.sock.try_io(tokio::io::Interest::WRITABLE, || {
                u.state.try_send((&*u.sock).into(), &t)
            });
            match r {
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(err) => {
                    tracing::debug!(addr = %b.addr, error = %err, "udp send");
                    *self.drops.entry("send_failed").or_default() += b.count as u64;
                }
                Ok(()) => {
                    if let Some(e) = self.links.get_mut(&b.link) {
                        e.bytes_out += b.buf.len() as u64;
                        e.frames_out += b.count as u64;
                    }
                }
            }
            self.udp[sock].blocked.pop_front();
        }
    }

    fn drain_events(&mut self) {
        while let Some(ev) = self.ep.poll_event() {
            match ev {
                Event::PeerUp { peer, link } => {
                    self.live.session_started(&peer);
                    tracing::info!(peer = %hex::encode(&peer[..8]), link, "peer up");
                    self.shared.events.publish(
                        "peer",
                        json!({"node": hex::encode(peer), "link": link, "state": "up"}),
                    );
                }
                Event::Reconciled {
                    peer,
                    symbols,
                    they_lack,
                    we_lack,
                } => {
                    self.shared.events.publish(
                        "reconciled",
                        json!({"node": hex::encode(peer), "symbols": symbols, "they_lack": they_lack, "we_lack": we_lack}),
                    );
                }
                Event::Received { id, version, from } => {
                    let (len, mlen, journal, deleted, service, name) = {
                        let store = self.shared.store();
                        match store.store.get(&id) {
                            Ok(Some(b)) => {
                                let m = b.manifest.manifest();
                                (
                                    m.length,
                                    b.manifest.as_bytes().len() as u64,
                                    m.journal,
                                    m.deleted,
                                    m.service.clone(),
                                    m.name.clone(),
                                )
                            }
                            _ => (0, 0, false, false, None, None),
                        }
                    };
                    self.useful_bytes += len + mlen;
                    self.spend_budget(from, len + mlen);
                    if deleted {
                        tracing::info!(%id, version, "bundle deleted by its author");
                    } else {
                        tracing::info!(%id, version, "bundle received");
                    }
                    self.shared.events.publish(
                        "bundle",
                        json!({"id": id.to_string(), "version": version, "length": len, "journal": journal,
                               "deleted": deleted, "source": "peer", "from": hex::encode(from),
                               "service": service, "name": name}),
                    );
                }
                Event::Delivered { id, version, to } => {
                    self.shared.events.publish(
                        "delivered",
                        json!({"id": id.to_string(), "version": version, "to": hex::encode(to)}),
                    );
                }
            }
        }
    }

    /// Whether `peer` was admitted by a trust list (`trust = "keys"` or `"network"`):
    /// such peers have no hourly budget.
    fn trusted(&self, peer: &[u8; 32]) -> bool {
        self.ep
            .peer_link(peer)
            .and_then(|l| self.links.get(&l))
            .and_then(|e| e.sec.as_ref())
            .is_some_and(|s| self.trusts[s.trust].cfg.mode != crate::trust::TrustMode::Any)
    }

    /// Counts a bundle received from `peer` against its hourly budget, and pauses its
    /// offers when the budget is spent.
    fn spend_budget(&mut self, peer: [u8; 32], bytes: u64) {
        let lim = &self.shared.limits.cfg;
        let (max_n, max_b) = (lim.untrusted_bundles_per_hour, lim.untrusted_bytes_per_hour);
        if (max_n == 0 && max_b == 0) || self.trusted(&peer) {
            return;
        }
        let b = self.budgets.entry(peer).or_insert_with(|| Budget {
            since: Instant::now(),
            bundles: 0,
            bytes: 0,
            paused: false,
        });
        b.bundles += 1;
        b.bytes += bytes;
        let spent = if max_n > 0 && b.bundles >= max_n {
            Some(crate::limits::Limit::UntrustedBundlesPerHour)
        } else if max_b > 0 && b.bytes >= max_b {
            Some(crate::limits::Limit::UntrustedBytesPerHour)
        } else {
            None
        };
        if let Some(limit) = spent.filter(|_| !b.paused) {
            b.paused = true;
            self.ep.pause_offers_from(peer, true);
            self.shared.limits.hit(limit);
            let left = lim
                .untrusted_budget_window
                .saturating_sub(b.since.elapsed());
            tracing::warn!(
                peer = %hex::encode(&peer[..8]),
                bundles = b.bundles,
                bytes = b.bytes,
                "a peer not on a trust list took its hourly budget (limits.untrusted_bundles_per_hour, untrusted_bytes_per_hour); its new offers wait {} s",
                left.as_secs()
            );
            self.shared.events.publish(
                "peer",
                json!({"node": hex::encode(peer), "state": "budget spent",
                       "bundles": b.bundles, "bytes": b.bytes,
                       "resumes_in_seconds": left.as_secs()}),
            );
        }
    }

    /// Starts each peer's budget afresh once its hour is over.
    fn renew_budgets(&mut self, now: Instant) {
        let window = self.shared.limits.cfg.untrusted_budget_window;
        let over: Vec<[u8; 32]> = self
            .budgets
            .iter()
            .filter(|(_, b)| now.duration_since(b.since) >= window)
            .map(|(k, _)| *k)
            .collect();
        for k in over {
            if self.budgets.remove(&k).is_some_and(|b| b.paused) {
                self.ep.pause_offers_from(k, false);
                tracing::info!(peer = %hex::encode(&k[..8]), "a new hour: offers from the peer are taken again");
            }
        }
    }

    /// Drops bundles whose expiry has come (checked every tick; the query is one index
    /// lookup), and takes them out of every session's set.
    fn expire(&mut self) {
        let now = skywave_store::unix_now();
        let shared = self.shared.clone();
        let mut store = shared.store();
        match store.store.next_expiry() {
            Ok(Some(t)) if t <= now => {}
            Ok(_) => return,
            Err(e) => {
                tracing::warn!("reading the store's next expiry: {e}");
                return;
            }
        }
        let gone = match store.store.expire(now) {
            Ok(g) => g,
            Err(e) => {
                tracing::warn!("removing expired bundles: {e}");
                return;
            }
        };
        self.ep.bundles_removed(&gone, &mut *store);
        for id in gone {
            self.shared
                .events
                .publish("expired", json!({"id": id.to_string()}));
        }
    }

    /// Writes `known_keys` if it changed: off the core's thread (`background`), or here
    /// (stopping).
    fn save_known_keys(&mut self, background: bool) {
        if !background && let Some(h) = &self.known_saving {
            // Stopping: the background write of an older text finishes first (it takes
            // milliseconds), so a key learnt since still lands and is not overwritten.
            let until = Instant::now() + KNOWN_SAVE_WAIT;
            while !h.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        if !self.known_dirty || self.known_saving.as_ref().is_some_and(|h| !h.is_finished()) {
            return;
        }
        self.known_dirty = false;
        let path = self.dir.join(crate::known_peers::FILE);
        let text = crate::known_peers::render(&self.known_keys);
        let save = move || {
            if let Err(e) = crate::known_peers::save(&path, &text) {
                tracing::warn!("{e}: the next start's first handshakes take a round trip more");
            }
        };
        if background {
            self.known_saving = Some(tokio::task::spawn_blocking(save));
        } else {
            save();
        }
    }

    fn on_tick(&mut self) {
        let now = Instant::now();
        // At most once a second, however many peers are met.
        self.save_known_keys(true);
        // Pieces of slow transfers become durable within a few seconds, not only every
        // few MiB: a restart resumes from here.
        self.ticks += 1;
        if self.ticks.is_multiple_of(CHECKPOINT_TICKS) {
            let shared = self.shared.clone();
            if let Err(e) = shared.store().store.checkpoint() {
                tracing::warn!("checkpointing partial transfers: {e}");
            }
        }
        self.reload_trust();
        self.expire();
        self.renew_budgets(now);
        let secs = now.duration_since(self.last_tick).as_secs_f64().max(0.001);
        self.last_tick = now;
        for e in self.links.values_mut() {
            e.rate.sample(e.bytes_out, e.bytes_in, secs);
        }
        // Peers learnt from traffic that fell silent give their slot back (a flood of
        // forged sources fills the table only for a while).
        let stale: Vec<(usize, SocketAddr, LinkId)> = self
            .links
            .iter()
            .filter(|(_, e)| e.learnt && now.duration_since(e.last_in) > LEARNT_PEER_IDLE)
            .filter_map(|(&id, e)| match e.io {
                Io::Udp { sock, addr } => Some((sock, addr, id)),
                _ => None,
            })
            .collect();
        for (sock, addr, id) in stale {
            tracing::info!(%addr, "forgetting a silent udp peer");
            if let Some(e) = self.links.get_mut(&id) {
                e.ephemeral = true;
            }
            self.set_down(id, "silent".into());
            self.links.remove(&id);
            self.udp[sock].peers.remove(&addr);
        }
        self.check_peers();
        self.announce_health(now);
        // Transfer progress rates.
        let mut seen = HashMap::new();
        for t in self.ep.transfers() {
            if t.state == TransferState::Queued {
                continue; // no progress to measure
            }
            let k = (t.peer, t.id, t.version, t.direction == Direction::Send);
            let p = match self.progress.get(&k) {
                Some(p) => {
                    let dt = now.duration_since(p.at).as_secs_f64().max(0.001);
                    let r = t.held.saturating_sub(p.held) as f64 / dt;
                    Progress {
                        held: t.held,
                        at: now,
                        bps: 0.5 * r + 0.5 * p.bps,
                    }
                }
                None => Progress {
                    held: t.held,
                    at: now,
                    bps: 0.0,
                },
            };
            seen.insert(k, p);
        }
        self.progress = seen;
        // Discovery beacons.
        let node = self.shared.node;
        for u in &mut self.udp {
            if let Some(to) = u.cfg.discovery
                && now >= u.beacon_at
            {
                u.beacon_at = now + u.cfg.beacon_interval;
                if let Err(e) = u.sock.try_send_to(&ip::beacon(&node), to) {
                    tracing::debug!(%to, error = %e, "beacon");
                }
            }
        }
    }

    /// Keep-alives: greets peers that fell silent, reports those that do not answer as
    /// down and those heard again as up (see `liveness`).
    fn check_peers(&mut self) {
        let now = self.now();
        // Brings the endpoint's clock to now, so that silences are measured from it.
        self.ep.handle_timeout(now);
        let sessions: Vec<liveness::Session> = self
            .ep
            .peer_infos()
            .iter()
            .map(liveness::Session::from)
            .collect();
        let links = &self.links;
        let actions = self.live.tick(now, &sessions, |id| {
            links.get(&id).map(|e| (e.adapter.params(), e.up))
        });
        for a in actions {
            match a {
                liveness::Action::Greet(link) => {
                    if let Some(e) = self.links.get(&link).filter(|e| e.up) {
                        tracing::debug!(link, name = %e.name, "greeting a silent peer");
                        self.ep.link_up(now, link, e.adapter.params());
                    }
                }
                liveness::Action::Down { peer, link, silent } => {
                    tracing::info!(peer = %hex::encode(&peer[..8]), link, silent_s = silent.as_secs_f64(), "peer down: not heard");
                    self.recheck_name(link);
                    self.shared.events.publish(
                        "peer",
                        json!({"node": hex::encode(peer), "link": link, "state": "down",
                               "silent_seconds": silent.as_secs_f64()}),
                    );
                }
                liveness::Action::Up { peer, link } => {
                    tracing::info!(peer = %hex::encode(&peer[..8]), link, "peer up: heard again");
                    self.shared.events.publish(
                        "peer",
                        json!({"node": hex::encode(peer), "link": link, "state": "up"}),
                    );
                }
            }
        }
    }
}

/// Socket buffers asked for (the kernel caps them at net.core.{r,w}mem_max): a burst
/// that arrives while the core is busy waits here instead of being dropped, and a fast
/// path is not limited to a couple of hundred KiB in flight.
const UDP_BUFFER: usize = 8 << 20;

fn bind_udp(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    for (what, r) in [
        ("receive", s.set_recv_buffer_size(UDP_BUFFER)),
        ("send", s.set_send_buffer_size(UDP_BUFFER)),
    ] {
        if let Err(e) = r {
            tracing::debug!("udp {what} buffer: {e}");
        }
    }
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    UdpSocket::from_std(s.into())
}

/// A seed for keep-alive jitter: nodes started together must not greet in lockstep.
pub(crate) fn jitter_seed() -> u64 {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        return t.as_nanos() as u64 ^ u64::from(std::process::id());
    }
    u64::from_le_bytes(b)
}

fn l_display(a: Option<SocketAddr>) -> String {
    a.map_or_else(|| "-".into(), |a| a.to_string())
}

/// How an IP link with trust index `trust` (`None`: plaintext) carries its frames.
fn encryption(trust: Option<usize>) -> &'static str {
    if trust.is_some() {
        "noise"
    } else {
        "plaintext"
    }
}

/// `a, b`, or `-` for none: peers as a log line lists them.
fn list(peers: &[PeerAddr]) -> String {
    if peers.is_empty() {
        return "-".into();
    }
    peers
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Relays a driver's events and room changes to the core as inputs for link `link`.
async fn forward_driver(
    link: LinkId,
    mut events: mpsc::Receiver<LinkEvent>,
    mut room: watch::Receiver<usize>,
    tx: mpsc::Sender<Input>,
) {
    loop {
        let i = tokio::select! {
            ev = events.recv() => match ev {
                None => Input::Down { link, reason: "the driver stopped".into() },
                Some(LinkEvent::Up(params)) => Input::Up { link, params },
                Some(LinkEvent::Down { reason }) => Input::Down { link, reason },
                Some(LinkEvent::Frame(data)) => Input::Frame { link, data },
                Some(LinkEvent::Heard { answered }) => Input::Heard { link, answered },
                Some(LinkEvent::Status(status)) => Input::Radio { link, status },
                Some(LinkEvent::Modem(line)) => Input::Modem { link, line },
            },
            r = room.changed() => match r {
                Ok(()) => Input::Room { link, room: *room.borrow_and_update() },
                Err(_) => Input::Down { link, reason: "the driver stopped".into() },
            },
        };
        let stop = matches!(&i, Input::Down { reason, .. } if reason == "the driver stopped");
        if tx.send(i).await.is_err() || stop {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A datagram is timed by its kernel stamp, in the core's clock; a stamp the wall
    /// clock's steps make implausible leaves the read time.
    #[test]
    fn datagrams_are_timed_by_their_kernel_stamp() {
        let ms = Duration::from_millis;
        let (now, wall) = (ms(5_000), Some(ms(1_700_000_000_000)));
        let stamp = |ago: Duration| wall.map(|w| w - ago);
        assert_eq!(arrival(now, wall, stamp(ms(3))), ms(4_997));
        assert_eq!(arrival(now, wall, stamp(Duration::ZERO)), now);
        // Two read together, 400 us apart on the wire, stay 400 us apart.
        let gap = arrival(now, wall, stamp(Duration::from_micros(100)))
            - arrival(now, wall, stamp(Duration::from_micros(500)));
        assert_eq!(gap, Duration::from_micros(400));
        // Ahead of the wall clock, older than a second, or missing: the read time.
        assert_eq!(arrival(now, wall, wall.map(|w| w + ms(1))), now);
        assert_eq!(arrival(now, wall, stamp(ms(1_500))), now);
        assert_eq!(arrival(now, wall, None), now);
        assert_eq!(arrival(now, None, stamp(ms(3))), now);
        // Never before the core's clock began.
        assert_eq!(arrival(ms(2), wall, stamp(ms(3))), Duration::ZERO);
    }

    #[test]
    fn the_turn_flag_waits_for_the_frame_taken_under_it() {
        let (tx, mut rx) = mpsc::channel::<Bytes>(4);
        let turn = AtomicBool::new(false);
        // Nothing waits: any flag may be set.
        assert!(turn_may_change(&tx, &turn, true));
        // A contended frame waits to be taken: the flag stays until it is.
        tx.try_send(Bytes::from_static(b"contended")).unwrap();
        assert!(turn_may_change(&tx, &turn, false), "the same flag");
        assert!(!turn_may_change(&tx, &turn, true));
        rx.try_recv().unwrap();
        assert!(turn_may_change(&tx, &turn, true));
        // And back: a frame of a held turn waits to be taken first.
        turn.store(true, Ordering::Release);
        tx.try_send(Bytes::from_static(b"held")).unwrap();
        assert!(!turn_may_change(&tx, &turn, false));
        rx.try_recv().unwrap();
        assert!(turn_may_change(&tx, &turn, false));
    }
}
