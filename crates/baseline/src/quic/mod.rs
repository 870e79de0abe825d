//! A real QUIC transfer (quinn-proto, sans-IO) through skywave-sim's link models in virtual
//! time.
//!
//! The client (node 0, side A of the link, sending on `up`) opens one unidirectional
//! stream and writes `bytes` of payload; the server (node 1) reads it to the end. The
//! transfer is complete when the server has read the last byte and the stream's FIN.
//! Settings are derived from the link as a fair user would tune quinn (see [`Settings`]
//! and docs/baseline.md).

mod crypto;
mod node;

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use quinn_proto::congestion::{BbrConfig, ControllerFactory, CubicConfig, NewRenoConfig};
use quinn_proto::{
    ClientConfig, EndpointConfig, IdleTimeout, ServerConfig, TransportConfig, VarInt,
};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use skywave_sim::config::{LinkConfig, LinkKind, Side};
use skywave_sim::rng::node_rng;
use skywave_sim::sim::{NodeId, Simulator};
use skywave_sim::time::{SimTime, airtime_nanos};
use skywave_sim::trace::TraceRecord;

use self::node::QuicNode;

/// QUIC's smallest allowed UDP payload (RFC 9000 section 14).
pub const QUIC_MIN_MTU: usize = 1200;

/// Largest UDP payload quinn accepts as `max_udp_payload_size`.
const QUIC_MAX_UDP_PAYLOAD: usize = 65_527;

/// Congestion controllers quinn-proto ships.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Congestion {
    Cubic,
    /// quinn's BBR (v1, marked experimental by quinn).
    #[default]
    Bbr,
    NewReno,
}

impl Congestion {
    pub const ALL: [Congestion; 3] = [Congestion::Bbr, Congestion::Cubic, Congestion::NewReno];

    pub fn as_str(self) -> &'static str {
        match self {
            Congestion::Cubic => "cubic",
            Congestion::Bbr => "bbr",
            Congestion::NewReno => "newreno",
        }
    }

    fn factory(self) -> Arc<dyn ControllerFactory + Send + Sync> {
        match self {
            Congestion::Cubic => Arc::new(CubicConfig::default()),
            Congestion::Bbr => Arc::new(BbrConfig::default()),
            Congestion::NewReno => Arc::new(NewRenoConfig::default()),
        }
    }
}

impl fmt::Display for Congestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Congestion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "cubic" => Ok(Congestion::Cubic),
            "bbr" => Ok(Congestion::Bbr),
            "newreno" | "new-reno" | "reno" => Ok(Congestion::NewReno),
            _ => Err(format!(
                "unknown congestion controller '{s}'; accepted: bbr, cubic, newreno"
            )),
        }
    }
}

/// The outcome of one QUIC transfer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BaselineReport {
    /// Always "quic".
    pub protocol: String,
    /// The link's name (profile, TOML table or spec).
    pub link: String,
    pub seed: u64,
    /// Payload bytes the client was asked to send.
    pub bytes: u64,
    /// Payload bytes the server read.
    pub delivered_bytes: u64,
    /// The server read every byte and the stream's end before the deadline.
    pub complete: bool,
    /// From the client's first packet to the server reading the last byte (or to where
    /// the run stopped, if incomplete). Includes the handshake.
    pub virtual_seconds: f64,
    /// `delivered_bytes * 8 / virtual_seconds`.
    pub goodput_bps: f64,
    /// Rate of the data direction (A->B).
    pub path_rate_bps: u64,
    /// When the client saw the handshake complete.
    pub handshake_seconds: Option<f64>,
    /// Bytes put on the air in both directions (data, acks, handshake, retransmissions).
    pub bytes_on_air: u64,
    /// Bytes of client packets quinn declared lost; their stream data is resent.
    pub resent_bytes: u64,
    /// Client packets sent and declared lost, and congestion events, from quinn's stats.
    pub sent_packets: u64,
    pub lost_packets: u64,
    pub congestion_events: u64,
    pub congestion: String,
    /// Every quinn setting that differs from its defaults, and why (human-readable).
    pub settings: String,
    /// Why the connection failed, if it did.
    pub failure: Option<String>,
}

/// quinn settings derived from a link, as a fair user would choose them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Settings {
    pub congestion: Congestion,
    /// Round-trip time of the link: both one-way delays plus the airtime of one MTU-sized
    /// datagram up and one ack down.
    pub initial_rtt: Duration,
    /// Datagram size: the smaller direction's link MTU (fixed, no discovery).
    pub mtu: u16,
    /// Data direction rate x base RTT.
    pub bdp_bytes: u64,
    /// The data direction's bottleneck queue.
    pub queue_bytes: u64,
    /// Per-stream receive window: `max(2 x (BDP + queue), quinn's default 1.25 MB)`.
    pub stream_receive_window: u64,
    /// Send buffer: twice the stream window, at least quinn's default (10 MB).
    pub send_window: u64,
    /// `max(30 s, 10 x RTT)`.
    pub idle_timeout: Duration,
}

/// quinn's defaults (quinn-proto 0.11 `TransportConfig::default`), used as floors.
const DEFAULT_STREAM_RWND: u64 = 1_250_000;
const DEFAULT_SEND_WINDOW: u64 = 8 * DEFAULT_STREAM_RWND;

impl Settings {
    /// Checks the link and derives the settings. Errors name what is wrong.
    pub fn for_link(cfg: &LinkConfig, congestion: Congestion) -> Result<Settings, String> {
        cfg.validate().map_err(|e| format!("invalid link: {e}"))?;
        if cfg.kind != LinkKind::Frame {
            return Err(format!(
                "QUIC needs a point-to-point datagram link (kind=frame); link '{}' is kind={}",
                cfg.name,
                cfg.kind.as_str()
            ));
        }
        // The largest UDP payload the path carries (its MTU less the IP and UDP headers).
        let mtu = cfg.up.max_datagram().min(cfg.down.max_datagram());
        if mtu < QUIC_MIN_MTU {
            return Err(format!(
                "link MTU {mtu} B is below QUIC's minimum datagram size of {QUIC_MIN_MTU} B \
                 (RFC 9000 section 14); QUIC cannot run over link '{}'",
                cfg.name
            ));
        }
        if cfg.up.rate_bps == 0 || cfg.down.rate_bps == 0 {
            return Err("link rate must be positive in both directions".into());
        }
        let mtu = mtu.min(QUIC_MAX_UDP_PAYLOAD) as u16;
        // An ack-only packet is ~50 B; its airtime matters only on slow return paths.
        let rtt_nanos = duration_nanos(cfg.up.delay)
            .saturating_add(duration_nanos(cfg.down.delay))
            .saturating_add(airtime_nanos(u64::from(mtu), cfg.up.rate_bps))
            .saturating_add(airtime_nanos(50, cfg.down.rate_bps));
        let initial_rtt = Duration::from_nanos(rtt_nanos.max(1_000));
        let base_rtt = cfg.up.delay + cfg.down.delay;
        let bdp_bytes = (cfg.up.rate_bps as f64 / 8.0 * base_rtt.as_secs_f64()).ceil() as u64;
        let queue_bytes = cfg.buffer_bytes(Side::A);
        let stream_receive_window = (2 * (bdp_bytes + queue_bytes)).max(DEFAULT_STREAM_RWND);
        let send_window = (2 * stream_receive_window).max(DEFAULT_SEND_WINDOW);
        let idle_timeout = (initial_rtt * 10).max(Duration::from_secs(30));
        Ok(Settings {
            congestion,
            initial_rtt,
            mtu,
            bdp_bytes,
            queue_bytes,
            stream_receive_window,
            send_window,
            idle_timeout,
        })
    }

    /// One line naming every setting and where it comes from.
    pub fn describe(&self) -> String {
        format!(
            "quinn-proto 0.11, cc={} (quinn defaults), initial_rtt={:.3}ms (link RTT), \
             mtu={}B fixed (initial=min=link MTU, discovery off), \
             stream_receive_window={}B (2 x (BDP {}B + queue {}B), floor 1250000), \
             receive_window=unlimited, send_window={}B, idle_timeout={:.1}s, \
             pacing on, one datagram per send (no GSO), acks and loss detection quinn defaults",
            self.congestion,
            self.initial_rtt.as_secs_f64() * 1e3,
            self.mtu,
            self.stream_receive_window,
            self.bdp_bytes,
            self.queue_bytes,
            self.send_window,
            self.idle_timeout.as_secs_f64(),
        )
    }

    fn transport(&self) -> Result<TransportConfig, String> {
        let mut t = TransportConfig::default();
        t.initial_rtt(self.initial_rtt)
            .initial_mtu(self.mtu)
            .min_mtu(self.mtu)
            .mtu_discovery_config(None)
            .stream_receive_window(varint(self.stream_receive_window)?)
            .receive_window(VarInt::MAX)
            .send_window(self.send_window)
            .max_idle_timeout(Some(
                IdleTimeout::try_from(self.idle_timeout)
                    .map_err(|_| "idle timeout out of range".to_string())?,
            ))
            .enable_segmentation_offload(false)
            .congestion_controller_factory(self.congestion.factory());
        Ok(t)
    }
}

fn varint(v: u64) -> Result<VarInt, String> {
    VarInt::from_u64(v).map_err(|_| format!("{v} does not fit a QUIC varint"))
}

fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The one clock read of this crate. quinn-proto takes `std::time::Instant`, which has no
/// constructor but `now()`; every instant handed to quinn is this base plus the virtual
/// offset, and quinn only adds, subtracts and compares them, so the base's value never
/// reaches a result.
#[allow(clippy::disallowed_methods)]
fn base_instant() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

/// Sends `bytes` of payload client -> server over `cfg` with quinn's BBR; see [`run_with`].
pub fn run(
    cfg: &LinkConfig,
    bytes: u64,
    seed: u64,
    deadline: SimTime,
) -> Result<BaselineReport, String> {
    run_with(cfg, bytes, seed, deadline, Congestion::Bbr)
}

/// Sends `bytes` of payload on one QUIC stream from side A to side B of `cfg`, in virtual
/// time, until the server has read it all or `deadline` passes.
///
/// Errors (never panics) for input that cannot make a QUIC transfer: zero bytes, a zero
/// deadline, a link that is not a datagram link or whose MTU is below 1200 B. A transfer
/// that starts but does not finish is not an error: the report says `complete: false`.
pub fn run_with(
    cfg: &LinkConfig,
    bytes: u64,
    seed: u64,
    deadline: SimTime,
    congestion: Congestion,
) -> Result<BaselineReport, String> {
    simulate(cfg, bytes, seed, deadline, congestion, false).map(|(r, _)| r)
}

/// [`run_with`], also returning the link's per-frame trace (see docs/sim.md, "Traces").
/// Frame lengths and times are reproducible; frame hashes are not, because TLS key
/// shares come from the OS.
pub fn run_traced(
    cfg: &LinkConfig,
    bytes: u64,
    seed: u64,
    deadline: SimTime,
    congestion: Congestion,
) -> Result<(BaselineReport, Vec<TraceRecord>), String> {
    simulate(cfg, bytes, seed, deadline, congestion, true)
}

fn simulate(
    cfg: &LinkConfig,
    bytes: u64,
    seed: u64,
    deadline: SimTime,
    congestion: Congestion,
    trace: bool,
) -> Result<(BaselineReport, Vec<TraceRecord>), String> {
    if bytes == 0 {
        return Err("bytes must be at least 1: there is nothing to transfer".into());
    }
    if deadline == SimTime::ZERO {
        return Err("deadline must be later than 0 s".into());
    }
    let settings = Settings::for_link(cfg, congestion)?;
    let transport = Arc::new(settings.transport()?);

    let client_addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 50_000));
    let server_addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 2), 4433));
    let mut crng = node_rng(seed, 0);
    let mut srng = node_rng(seed, 1);

    let id = crypto::identity(crypto::seed32(&mut srng))?;
    let mut server_cfg = ServerConfig::new(
        Arc::new(crypto::server_crypto(&id)?),
        Arc::new(token_key(&mut srng)),
    );
    server_cfg
        .transport_config(transport.clone())
        .time_source(Arc::new(crypto::FixedTime));
    let mut client_cfg = ClientConfig::new(Arc::new(crypto::client_crypto(&id)?));
    client_cfg.transport_config(transport);

    let base = base_instant();
    let client_ep = quinn_proto::Endpoint::new(
        Arc::new(endpoint_config(&mut crng, settings.mtu)?),
        None,
        false,
        None,
    );
    let server_ep = quinn_proto::Endpoint::new(
        Arc::new(endpoint_config(&mut srng, settings.mtu)?),
        Some(Arc::new(server_cfg)),
        false,
        None,
    );

    let mut sim = Simulator::new(seed);
    sim.set_trace(trace);
    let a = sim.add_node(QuicNode::client(
        base,
        client_ep,
        client_cfg,
        server_addr,
        crypto::SERVER_NAME,
        bytes,
    )?);
    let b = sim.add_node(QuicNode::server(base, server_ep, client_addr));
    let link = sim
        .connect(a, b, cfg)
        .map_err(|e| format!("invalid link: {e}"))?;

    // Where the run stopped if it did not complete: the deadline, or the last event if
    // the connection failed or went quiet before it.
    let mut stopped = deadline;
    loop {
        let (client, server) = nodes(&sim, a, b)?;
        if server.done_at.is_some() || client.failure.is_some() || server.failure.is_some() {
            stopped = sim.now();
            break;
        }
        match sim.next_event() {
            Some(t) if t <= deadline => {
                sim.step();
            }
            Some(_) => break,
            None => {
                stopped = sim.now();
                break;
            }
        }
    }

    let (client, server) = nodes(&sim, a, b)?;
    let delivered_bytes = server.received();
    let end = server.done_at.unwrap_or(stopped);
    let virtual_seconds = end.as_secs_f64();
    let goodput_bps = if virtual_seconds > 0.0 {
        delivered_bytes as f64 * 8.0 / virtual_seconds
    } else {
        0.0
    };
    let path = client.connection().map(|c| c.stats().path);
    let on_air = |n: NodeId| sim.link_stats(link, n).map_or(0, |s| s.sent.bytes);
    let report = BaselineReport {
        protocol: "quic".into(),
        link: cfg.name.clone(),
        seed,
        bytes,
        delivered_bytes,
        complete: server.done_at.is_some() && delivered_bytes == bytes,
        virtual_seconds,
        goodput_bps,
        path_rate_bps: cfg.up.rate_bps,
        handshake_seconds: client.connected_at.map(SimTime::as_secs_f64),
        bytes_on_air: on_air(a) + on_air(b),
        resent_bytes: path.map_or(0, |p| p.lost_bytes),
        sent_packets: path.map_or(0, |p| p.sent_packets),
        lost_packets: path.map_or(0, |p| p.lost_packets),
        congestion_events: path.map_or(0, |p| p.congestion_events),
        congestion: congestion.as_str().into(),
        settings: settings.describe(),
        failure: client.failure.clone().or_else(|| server.failure.clone()),
    };
    Ok((report, sim.take_trace()))
}

fn nodes(sim: &Simulator, a: NodeId, b: NodeId) -> Result<(&QuicNode, &QuicNode), String> {
    match (sim.node::<QuicNode>(a), sim.node::<QuicNode>(b)) {
        (Some(c), Some(s)) => Ok((c, s)),
        _ => Err("internal: simulator lost a QUIC node".into()),
    }
}

fn endpoint_config(rng: &mut ChaCha8Rng, mtu: u16) -> Result<EndpointConfig, String> {
    let mut reset = [0u8; 64];
    rand_core::RngCore::fill_bytes(rng, &mut reset);
    let mut c = EndpointConfig::new(Arc::new(ring::hmac::Key::new(
        ring::hmac::HMAC_SHA256,
        &reset,
    )));
    let cid_seed = crypto::seed32(rng);
    c.max_udp_payload_size(mtu)
        .map_err(|e| format!("max_udp_payload_size {mtu}: {e}"))?
        .cid_generator(move || Box::new(crypto::SeededCids::new(cid_seed)))
        .rng_seed(Some(crypto::seed32(rng)));
    Ok(c)
}

fn token_key(rng: &mut ChaCha8Rng) -> ring::hkdf::Prk {
    let mut master = [0u8; 64];
    rand_core::RngCore::fill_bytes(rng, &mut master);
    ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, &[]).extract(&master)
}
