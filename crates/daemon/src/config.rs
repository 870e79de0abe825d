//! The daemon's configuration: a TOML file, with command-line flags laid over it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use skywave_links::DriverConfig;

/// Where the HTTP API listens unless told otherwise.
pub const DEFAULT_HTTP: &str = "127.0.0.1:7473";

/// A whole daemon configuration.
#[derive(Debug, Clone, Default)]
pub struct DaemonConfig {
    /// The node directory (store, keys, token).
    pub dir: Option<PathBuf>,
    /// HTTP API address; `None` for [`DEFAULT_HTTP`].
    pub http: Option<SocketAddr>,
    /// Let reads (GET, HEAD) go without the token. Honoured only when the API is bound
    /// to a loopback address; writes always need the token.
    pub open_reads: bool,
    /// Names the API is reached by besides its address (`node.local`, or
    /// `node.local:8080` for one port only): the `Host` of a request must be one of them.
    pub http_hosts: Vec<String>,
    /// What the file set that is no longer needed, to be shown to the user.
    pub warnings: Vec<String>,
    /// Store byte limit.
    pub quota: Option<u64>,
    pub links: Vec<LinkConfig>,
    /// Driver links (by index in `links`) set `channel_access = "radio"`: the radio's own
    /// carrier sense is trusted, the daemon does not take turns for it.
    pub radio_access: std::collections::BTreeSet<usize>,
    /// Links (by index in `links`) set `amateur = true` outside a `kiss` link's own
    /// settings, with their `callsign` if given (see [`DaemonConfig::amateur_links`]).
    pub amateur: std::collections::BTreeMap<usize, Option<String>>,
    /// Driver links (by index in `links`) whose frames carry a network-key tag
    /// (`network_key_file`, `network_tag_bytes`; docs/daemon.md, "Network key").
    pub network_tags: std::collections::BTreeMap<usize, NetworkTag>,
    /// Caps and timeouts on what peers and API clients may hold (`[limits]`).
    pub limits: LimitsConfig,
}

/// A driver link's network-key tag: every frame carries `tag_bytes` of a keyed hash
/// under the key in `key_file` (64 hex digits, as an IP link's `trust = "network"` key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkTag {
    pub key_file: PathBuf,
    pub tag_bytes: usize,
}

/// `[limits]`: how much sync peers and HTTP clients may hold, and for how long. Each
/// default is far above what an honest peer or client uses; each limit that fires is
/// counted in `skywave_limit_hits_total{limit="<its key>"}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Connections accepted by the TCP sync listeners, held at once; more are closed
    /// as they arrive.
    pub tcp_connections: usize,
    /// Of those, from one address (IPv6: one /64).
    pub tcp_connections_per_address: usize,
    /// An accepted sync connection that delivers no complete frame in this time is
    /// closed (an honest peer greets at once).
    #[serde(deserialize_with = "duration")]
    pub tcp_first_frame_timeout: Duration,
    /// HTTP connections held at once; more are answered 503 and closed.
    pub http_connections: usize,
    /// Time from a connection's start, or the end of its previous response, until a
    /// request's headers are complete: also how long an idle keep-alive connection is
    /// kept.
    #[serde(deserialize_with = "duration")]
    pub http_header_timeout: Duration,
    /// Longest pause within a request body.
    #[serde(deserialize_with = "duration")]
    pub http_body_timeout: Duration,
    /// Longest a client may take none of a response's bytes.
    #[serde(deserialize_with = "duration")]
    pub http_send_timeout: Duration,
    /// Bytes of an upload's multipart text parts (every part but the file), together.
    #[serde(deserialize_with = "size")]
    pub multipart_text_max: u64,
    /// Uploads (`POST /v1/bundles`, `.../append`) under way at once; more are answered
    /// 503 with `Retry-After`.
    pub uploads: usize,
    /// Bundles taken per hour from one peer not admitted by a trust list (a link with
    /// `trust = "any"`, a plaintext or a radio link); past it, its new offers wait for the
    /// next hour. 0: no limit.
    pub untrusted_bundles_per_hour: u64,
    /// The same in bytes (payload and manifest). 0: no limit.
    #[serde(deserialize_with = "size")]
    pub untrusted_bytes_per_hour: u64,
    /// The period both budgets are counted over (an hour unless set).
    #[serde(deserialize_with = "duration")]
    pub untrusted_budget_window: Duration,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            tcp_connections: 256,
            tcp_connections_per_address: 16,
            tcp_first_frame_timeout: Duration::from_secs(30),
            http_connections: 128,
            http_header_timeout: Duration::from_secs(20),
            http_body_timeout: Duration::from_secs(30),
            http_send_timeout: Duration::from_secs(30),
            untrusted_bundles_per_hour: 0,
            untrusted_bytes_per_hour: 0,
            untrusted_budget_window: Duration::from_secs(3600),
            multipart_text_max: 64 * 1024,
            uploads: 8,
        }
    }
}

impl LimitsConfig {
    /// Refuses a cap of zero (nothing could ever be served) and a zero timeout.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |k: &str, v: String, expected: &str| ConfigError::Invalid {
            field: format!("limits.{k}"),
            value: v,
            expected: expected.into(),
        };
        for (k, v) in [
            ("tcp_connections", self.tcp_connections),
            (
                "tcp_connections_per_address",
                self.tcp_connections_per_address,
            ),
            ("http_connections", self.http_connections),
            ("uploads", self.uploads),
        ] {
            if v == 0 {
                return Err(invalid(k, v.to_string(), "at least 1"));
            }
        }
        for (k, v) in [
            ("tcp_first_frame_timeout", self.tcp_first_frame_timeout),
            ("http_header_timeout", self.http_header_timeout),
            ("http_body_timeout", self.http_body_timeout),
            ("http_send_timeout", self.http_send_timeout),
            ("untrusted_budget_window", self.untrusted_budget_window),
        ] {
            if v < Duration::from_millis(1) {
                return Err(invalid(k, format!("{v:?}"), "a duration of at least 1ms"));
            }
        }
        Ok(())
    }
}

/// One `[[link]]` of the configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkConfig {
    Udp(UdpConfig),
    Tcp(TcpConfig),
    /// A serial, RFD900, HF-modem or emulated link, run by `skywave-links`.
    Driver(DriverConfig),
}

impl LinkConfig {
    /// The `type` the link was configured with.
    pub fn kind(&self) -> &'static str {
        match self {
            LinkConfig::Udp(_) => "udp",
            LinkConfig::Tcp(_) => "tcp",
            LinkConfig::Driver(d) => match d {
                DriverConfig::Serial(_) => "serial",
                DriverConfig::Rfd900(_) => "rfd900",
                DriverConfig::HfModem(_) => "hf-modem",
                DriverConfig::Kiss(_) => "kiss",
                DriverConfig::Rnode(_) => "rnode",
                DriverConfig::Vara(_) => "vara",
                DriverConfig::Ardop(_) => "ardop",
                DriverConfig::Emulated(_) => "emulated",
            },
        }
    }

    /// Whether the daemon encrypts what it sends on the link: IP links unless
    /// `plaintext = true`; driver links (serial lines, radios, modems, TNCs) never (the
    /// daemon runs its secure channel only on IP links).
    pub fn encrypted(&self) -> bool {
        match self {
            LinkConfig::Udp(u) => !u.plaintext,
            LinkConfig::Tcp(t) => !t.plaintext,
            LinkConfig::Driver(_) => false,
        }
    }
}

/// `type = "udp"`: one socket, any number of peers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpConfig {
    /// Local address to bind (`0.0.0.0:7474`, `127.0.0.1:0`).
    pub bind: SocketAddr,
    /// Peers to talk to from the start (`192.0.2.10:7474` or `node.example:7474`);
    /// others are learnt from what arrives.
    #[serde(default)]
    pub peers: Vec<PeerAddr>,
    /// Broadcast or multicast a beacon here for LAN discovery (e.g.
    /// `255.255.255.255:7474` or `239.255.74.74:7474`).
    #[serde(default)]
    pub discovery: Option<SocketAddr>,
    /// Beacon interval.
    #[serde(default = "default_beacon", deserialize_with = "duration")]
    pub beacon_interval: Duration,
    /// Largest datagram payload sent; path MTU discovery probes up to it. Unset: what
    /// the route to each peer carries, as the kernel knows it (its interface's MTU
    /// less the IP and UDP headers: 1472 on 1500-byte Ethernet, 8972 with jumbo frames,
    /// the most a node takes on loopback), 1472 where that is not known.
    #[serde(default)]
    pub mtu: Option<usize>,
    /// Nominal path rate, when known (e.g. `"30Mbit/s"`); pacing starts from it.
    #[serde(default, deserialize_with = "opt_rate")]
    pub rate: Option<u64>,
    /// Expected round trip before one is measured.
    #[serde(default = "default_rtt", deserialize_with = "duration")]
    pub rtt: Duration,
    /// Most peers learnt from traffic (a flood of forged sources stops here).
    #[serde(default = "default_max_peers")]
    pub max_peers: usize,
    /// Frames in the clear, with no handshake: only to reach a node that predates
    /// encryption. Refused with any `trust` other than "any".
    #[serde(default)]
    pub plaintext: bool,
    /// Who may sync: "any" node that completes a handshake, the node "keys" listed in
    /// `trust_keys` and the trust file, or any node holding the "network" key.
    #[serde(default)]
    pub trust: crate::trust::TrustMode,
    #[serde(default)]
    pub trust_keys: Vec<String>,
    /// Default: `trusted` in the node directory (`skywave trust add` writes it).
    #[serde(default)]
    pub trust_file: Option<PathBuf>,
    #[serde(default)]
    pub network_key_file: Option<PathBuf>,
}

/// `type = "tcp"`: listen, connect, or both; one long-lived connection per peer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpConfig {
    #[serde(default)]
    pub listen: Option<SocketAddr>,
    /// Peers to connect to (`192.0.2.11:7475` or `node.example:7475`).
    #[serde(default)]
    pub peers: Vec<PeerAddr>,
    /// Largest frame (frames are length-prefixed on the stream).
    #[serde(default = "default_tcp_mtu")]
    pub mtu: usize,
    /// Longest wait between reconnection attempts (doubling from 250 ms).
    #[serde(default = "default_reconnect", deserialize_with = "duration")]
    pub reconnect_max: Duration,
    /// Frames in the clear, with no handshake: only to reach a node that predates
    /// encryption. Refused with any `trust` other than "any".
    #[serde(default)]
    pub plaintext: bool,
    /// Who may sync: "any" node that completes a handshake, the node "keys" listed in
    /// `trust_keys` and the trust file, or any node holding the "network" key.
    #[serde(default)]
    pub trust: crate::trust::TrustMode,
    #[serde(default)]
    pub trust_keys: Vec<String>,
    /// Default: `trusted` in the node directory (`skywave trust add` writes it).
    #[serde(default)]
    pub trust_file: Option<PathBuf>,
    #[serde(default)]
    pub network_key_file: Option<PathBuf>,
}

/// A configured peer: an IP address and port, or a host name and port that the daemon
/// resolves (again after a failure, with backoff, and from time to time, so a peer
/// whose address changes is followed).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PeerAddr {
    Ip(SocketAddr),
    Name { host: String, port: u16 },
}

/// What a peer address may be, for error messages.
pub const PEER_ADDR_FORMS: &str =
    "IP:PORT or HOST:PORT, e.g. 192.0.2.10:7474, [2001:db8::1]:7474 or node.example:7474";

impl PeerAddr {
    /// Parses `IP:PORT` or `HOST:PORT`; the error says what is wrong with `s`.
    pub fn parse(s: &str) -> Result<PeerAddr, &'static str> {
        if let Ok(a) = s.parse::<SocketAddr>() {
            return Ok(PeerAddr::Ip(a));
        }
        let (host, port) = s.rsplit_once(':').ok_or("no port")?;
        let port: u16 = port
            .parse()
            .map_err(|_| "the port is not a number from 0 to 65535")?;
        if host.is_empty() {
            return Err("no host");
        }
        // A name as DNS and /etc/hosts have them (underscores allowed, as some do).
        let label_ok = |l: &str| {
            (1..=63).contains(&l.len())
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        let name = host.strip_suffix('.').unwrap_or(host);
        if host.len() > 253 || !name.split('.').all(label_ok) {
            return Err("not an IP address or a host name; an IPv6 address goes in brackets");
        }
        Ok(PeerAddr::Name {
            host: host.to_string(),
            port,
        })
    }
}

impl std::str::FromStr for PeerAddr {
    type Err = String;

    fn from_str(s: &str) -> Result<PeerAddr, String> {
        PeerAddr::parse(s).map_err(|why| {
            format!("'{s}' is not a peer address ({why}): expected {PEER_ADDR_FORMS}")
        })
    }
}

impl std::fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerAddr::Ip(a) => write!(f, "{a}"),
            PeerAddr::Name { host, port } => write!(f, "{host}:{port}"),
        }
    }
}

impl From<SocketAddr> for PeerAddr {
    fn from(a: SocketAddr) -> PeerAddr {
        PeerAddr::Ip(a)
    }
}

impl<'de> Deserialize<'de> for PeerAddr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PeerAddr, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

fn default_beacon() -> Duration {
    Duration::from_secs(5)
}
fn default_tcp_mtu() -> usize {
    1400
}
fn default_rtt() -> Duration {
    Duration::from_millis(100)
}
fn default_max_peers() -> usize {
    256
}
fn default_reconnect() -> Duration {
    Duration::from_secs(30)
}

fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    skywave_sim_duration(&s).map_err(serde::de::Error::custom)
}

/// A size as a string (`"64KiB"`) or a number of bytes.
fn size<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    struct V;
    impl serde::de::Visitor<'_> for V {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a size such as 65536 or \"64KiB\"")
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::custom(format!("a size cannot be negative ({v})")))
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<u64, E> {
            parse_size(v).map_err(E::custom)
        }
    }
    d.deserialize_any(V)
}

fn opt_rate<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let s: Option<String> = Option::deserialize(d)?;
    s.map(|s| parse_rate(&s).map_err(serde::de::Error::custom))
        .transpose()
}

/// `"250ms"`, `"4s"`, `"1m"`.
pub fn skywave_sim_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("expected a duration such as 250ms, 4s or 1m, got '{s}'"))?;
    let secs = match unit.trim() {
        "us" => v / 1e6,
        "ms" => v / 1e3,
        "s" | "" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(format!("unknown unit in '{s}': use us, ms, s, m or h")),
    };
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("duration '{s}' is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `"1475bps"`, `"128kbit/s"`, `"30Mbit/s"`, `"1Gbit/s"`: bits per second.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("expected a rate such as 1475bps or 30Mbit/s, got '{s}'"))?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit
        .trim_end_matches("/s")
        .trim_end_matches("ps")
        .trim_end_matches("bit")
        .trim_end_matches('b');
    let mul = match unit {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        _ => {
            return Err(format!(
                "unknown unit in rate '{s}': use bps, kbit/s, Mbit/s or Gbit/s"
            ));
        }
    };
    let r = v * mul;
    if !(1.0..=1e12).contains(&r) {
        return Err(format!("rate '{s}' is out of range"));
    }
    Ok(r as u64)
}

/// Why a configuration was refused. Names the field and what it accepts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("invalid value '{value}' for {field}: expected {expected}")]
    Invalid {
        field: String,
        value: String,
        expected: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    dir: Option<PathBuf>,
    #[serde(default)]
    http: Option<SocketAddr>,
    #[serde(default)]
    open_reads: bool,
    #[serde(default)]
    http_hosts: Vec<String>,
    /// Obsolete: every mutating call needs the token now. Accepted so older files load.
    #[serde(default)]
    require_token: Option<bool>,
    #[serde(default)]
    quota: Option<String>,
    #[serde(default)]
    link: Vec<toml::Value>,
    #[serde(default)]
    limits: LimitsConfig,
}

const LINK_TYPES: &str = "udp, tcp, serial, rfd900, hf-modem, kiss, rnode, vara, ardop, emulated";

/// Licensed-band rules for one link (`amateur = true`), as the configuration gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmateurLink {
    /// Index in `links`.
    pub index: usize,
    pub callsign: Option<String>,
    /// Whether the link encrypts (refused: the rules forbid obscuring the meaning of a
    /// transmission). Driver links never do; IP links do unless `plaintext = true`.
    pub encrypted: bool,
    /// How the link identifies the station, when it does: a `kiss` link puts the
    /// callsign in every frame (the AX.25 source); a `vara` link's modem identifies
    /// itself (its calls carry the callsign, and `CWID ON`), and so does ardopcf (its ID
    /// frames). On the others the station must identify by other means.
    pub identifies: Option<&'static str>,
}

/// Takes a driver link's `network_key_file` and `network_tag_bytes` out of its table
/// (they are the daemon's, not the driver's).
fn take_network_tag(
    t: &mut toml::map::Map<String, toml::Value>,
) -> Result<Option<NetworkTag>, String> {
    use skywave_node::netkey::{DEFAULT_TAG, MAX_TAG, MIN_TAG};
    let bytes = match t.remove("network_tag_bytes") {
        None => None,
        Some(toml::Value::Integer(n)) if (MIN_TAG as i64..=MAX_TAG as i64).contains(&n) => {
            Some(n as usize)
        }
        Some(other) => {
            return Err(format!(
                "invalid network_tag_bytes {other}: expected {MIN_TAG} to {MAX_TAG} (default {DEFAULT_TAG}); each byte is one more on every frame"
            ));
        }
    };
    match t.remove("network_key_file") {
        None if bytes.is_some() => Err(
            "network_tag_bytes is used only with network_key_file = \"PATH\" (a file of 64 hex digits; make one with `head -c32 /dev/urandom | xxd -p -c64`)".into(),
        ),
        None => Ok(None),
        Some(toml::Value::String(f)) => Ok(Some(NetworkTag {
            key_file: PathBuf::from(f),
            tag_bytes: bytes.unwrap_or(DEFAULT_TAG),
        })),
        Some(other) => Err(format!(
            "invalid network_key_file {other}: expected a path to a file of 64 hex digits"
        )),
    }
}

impl DaemonConfig {
    /// Parses a configuration file's text; `path` names it in errors.
    pub fn from_toml(text: &str, path: &str) -> Result<DaemonConfig, ConfigError> {
        let perr = |message: String| ConfigError::Parse {
            path: path.into(),
            message,
        };
        let f: FileConfig = toml::from_str(text).map_err(|e| perr(e.to_string()))?;
        let quota = f
            .quota
            .map(|q| parse_size(&q).map_err(|e| perr(format!("quota: {e}"))))
            .transpose()?;
        let mut links = Vec::new();
        let mut radio_access = std::collections::BTreeSet::new();
        let mut amateur_links = std::collections::BTreeMap::new();
        let mut network_tags = std::collections::BTreeMap::new();
        for (i, v) in f.link.into_iter().enumerate() {
            let ty = v
                .get("type")
                .and_then(|t| t.as_str())
                .unwrap_or("")
                .to_string();
            let ty = ty.as_str();
            let ctx = |e: String| perr(format!("link #{} (type = \"{ty}\"): {e}", i + 1));
            // `amateur` and `callsign` are the daemon's for every kind but `kiss`,
            // `vara` and `ardop`, whose drivers (or modems) identify the station.
            let mut v = v;
            if ty == "ardop"
                && let Some(t) = v.as_table()
                && let Some(k) = ["plaintext", "trust", "encrypt", "peers_trust"]
                    .into_iter()
                    .find(|k| t.contains_key(*k))
            {
                return Err(ctx(format!(
                    "`{k}` is not accepted: ARDOP is amateur radio, whose rules forbid encryption; an ardop link always runs in the clear"
                )));
            }
            if ty != "kiss"
                && ty != "vara"
                && ty != "ardop"
                && let Some(t) = v.as_table_mut()
            {
                let amateur = match t.remove("amateur") {
                    None => false,
                    Some(toml::Value::Boolean(b)) => b,
                    Some(other) => {
                        return Err(ctx(format!(
                            "invalid amateur {other}: expected true or false"
                        )));
                    }
                };
                let callsign = match t.remove("callsign") {
                    None => None,
                    Some(toml::Value::String(c)) => Some(c),
                    Some(other) => {
                        return Err(ctx(format!(
                            "invalid callsign {other}: expected a string such as \"N0CALL-7\""
                        )));
                    }
                };
                if amateur {
                    amateur_links.insert(links.len(), callsign);
                } else if callsign.is_some() {
                    return Err(ctx(
                        "`callsign` is read only with `amateur = true` on this kind of link".into(),
                    ));
                }
            }
            let l = match ty {
                "udp" | "tcp" => {
                    let mut t = v.as_table().cloned().unwrap_or_default();
                    t.remove("type");
                    let v = toml::Value::Table(t);
                    if ty == "udp" {
                        LinkConfig::Udp(
                            v.try_into()
                                .map_err(|e: toml::de::Error| ctx(e.to_string()))?,
                        )
                    } else {
                        LinkConfig::Tcp(
                            v.try_into()
                                .map_err(|e: toml::de::Error| ctx(e.to_string()))?,
                        )
                    }
                }
                "" => {
                    return Err(perr(format!(
                        "link #{} has no type; accepted types: {LINK_TYPES}",
                        i + 1
                    )));
                }
                _ => {
                    // `channel_access` is the daemon's: who takes turns on a shared radio.
                    let mut t = v.as_table().cloned().unwrap_or_default();
                    match t.remove("channel_access") {
                        // The RNode firmware senses the carrier itself (listen before
                        // talk, a contention window); ardopcf takes turns in a session
                        // and waits out a busy channel. A TNC senses the carrier too,
                        // but two TNCs each holding frames contend at every turn, and
                        // their p-persistence draws over the carrier-detect delay
                        // collide: `kiss` links take turns in the daemon, and the TNC's
                        // carrier sense still defers to every other station
                        // (docs/radios.md, Dire Wolf at 9600 baud).
                        None if ty == "rnode" || ty == "ardop" => {
                            radio_access.insert(links.len());
                        }
                        None => {}
                        Some(toml::Value::String(a)) if a == "driver" => {}
                        Some(toml::Value::String(a)) if a == "radio" => {
                            radio_access.insert(links.len());
                        }
                        Some(other) => {
                            return Err(ctx(format!(
                                "invalid channel_access {other}: expected \"driver\" (the daemon takes turns on a shared radio, the default) or \"radio\" (the radio senses the carrier itself)"
                            )));
                        }
                    }
                    if let Some(tag) = take_network_tag(&mut t).map_err(ctx)? {
                        network_tags.insert(links.len(), tag);
                    }
                    LinkConfig::Driver(toml::Value::Table(t).try_into().map_err(
                        |e: toml::de::Error| ctx(format!("{e} (accepted types: {LINK_TYPES})")),
                    )?)
                }
            };
            links.push(l);
        }
        let mut warnings = Vec::new();
        if f.require_token.is_some() {
            warnings.push(format!(
                "{path}: `require_token` is obsolete and ignored: every call that changes the node needs the token, on any address, and so do reads unless `open_reads = true` on a loopback address; remove it"
            ));
        }
        Ok(DaemonConfig {
            dir: f.dir,
            http: f.http,
            open_reads: f.open_reads,
            http_hosts: f.http_hosts,
            warnings,
            quota,
            links,
            radio_access,
            amateur: amateur_links,
            network_tags,
            limits: f.limits,
        })
    }

    /// Refuses what the protocol cannot run: a link whose `mtu` is below the protocol's
    /// floor ([`skywave_proto::wire::MIN_FRAME`]); and a limit of zero. Called by `skywave config check` and at
    /// daemon start, after the command-line flags are laid over the file.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.limits.validate()?;
        for h in &self.http_hosts {
            crate::access::check_host_name(h).map_err(|expected| ConfigError::Invalid {
                field: "http_hosts".into(),
                value: h.clone(),
                expected,
            })?;
        }
        for a in self.amateur_links() {
            let ty = self.links[a.index].kind();
            let field = |f: &str| format!("{f} of link #{} (type = \"{ty}\")", a.index + 1);
            let Some(call) = &a.callsign else {
                let why = if ty == "ardop" {
                    "ARDOP is amateur radio, and ardopcf needs it (MYCALL) to identify the station and to take calls"
                } else {
                    "`amateur = true` requires it"
                };
                return Err(ConfigError::Invalid {
                    field: field("callsign"),
                    value: "(not set)".into(),
                    expected: format!(
                        "this station's licensed callsign (e.g. \"N0CALL-7\"): {why}"
                    ),
                });
            };
            skywave_links::kiss::ax25::Callsign::parse(call).map_err(|e| ConfigError::Invalid {
                field: field("callsign"),
                value: call.clone(),
                expected: e,
            })?;
            if a.encrypted {
                return Err(ConfigError::Invalid {
                    field: field("plaintext"),
                    value: "false".into(),
                    expected: "true with `amateur = true`: the amateur rules forbid encryption on the air, so the link must run in the clear (no handshake; `trust = \"any\"`)".into(),
                });
            }
        }
        for (i, l) in self.links.iter().enumerate() {
            if let LinkConfig::Tcp(t) = l
                && t.listen.is_none()
                && t.peers.is_empty()
            {
                return Err(ConfigError::Invalid {
                    field: format!("link #{} (type = \"tcp\")", i + 1),
                    value: "neither listen nor peers".into(),
                    expected: "`listen` (an address to accept connections on), `peers` (addresses to connect to), or both: as it is, the link can never carry anything".into(),
                });
            }
            let (ty, mtu, trust) = match l {
                LinkConfig::Udp(u) => ("udp", u.mtu, u.link_trust()),
                LinkConfig::Tcp(t) => ("tcp", Some(t.mtu), t.link_trust()),
                LinkConfig::Driver(
                    d @ (DriverConfig::Kiss(_)
                    | DriverConfig::Rnode(_)
                    | DriverConfig::Vara(_)
                    | DriverConfig::Ardop(_)),
                ) => {
                    let checked = match d {
                        DriverConfig::Kiss(k) => k.check().map(drop),
                        DriverConfig::Rnode(r) => r.check(),
                        DriverConfig::Vara(v) => v.check().map(drop),
                        DriverConfig::Ardop(a) => a.check().map(drop),
                        _ => Ok(()),
                    };
                    checked.map_err(|e| match e {
                        skywave_links::Error::Invalid {
                            field,
                            value,
                            expected,
                        } => ConfigError::Invalid {
                            field: format!("{field} of link #{} (type = \"{}\")", i + 1, l.kind()),
                            value,
                            expected,
                        },
                        other => ConfigError::Parse {
                            path: format!("link #{}", i + 1),
                            message: other.to_string(),
                        },
                    })?;
                    continue;
                }
                // Driver links take their frame size from the device or its profile.
                LinkConfig::Driver(_) => continue,
            };
            trust.check().map_err(|e| ConfigError::Invalid {
                field: format!("trust of link #{} (type = \"{ty}\")", i + 1),
                value: trust.mode.as_str().into(),
                expected: e,
            })?;
            // Encrypted frames carry a counter and a tag in the same datagram.
            let floor = skywave_proto::wire::MIN_FRAME
                + if trust.plaintext {
                    0
                } else {
                    skywave_node::secure::HANDSHAKE_OVERHEAD
                };
            let Some(mtu) = mtu else {
                continue;
            };
            if ty == "udp" && mtu > skywave_node::adapter::MAX_DATAGRAM {
                return Err(ConfigError::Invalid {
                    field: format!("mtu of link #{} (type = \"udp\")", i + 1),
                    value: mtu.to_string(),
                    expected: format!(
                        "at most {} bytes: the largest datagram a skywave node takes (leave `mtu` unset to use what each peer's route carries)",
                        skywave_node::adapter::MAX_DATAGRAM
                    ),
                });
            }
            if mtu < floor {
                return Err(ConfigError::Invalid {
                    field: format!("mtu of link #{} (type = \"{ty}\")", i + 1),
                    value: mtu.to_string(),
                    expected: format!(
                        "at least {floor} bytes: the protocol's smallest frame ({} B, MIN_FRAME){}",
                        skywave_proto::wire::MIN_FRAME,
                        if trust.plaintext {
                            String::new()
                        } else {
                            format!(
                                " and a handshake's keys and tags ({} B; not with `plaintext = true`)",
                                skywave_node::secure::HANDSHAKE_OVERHEAD
                            )
                        }
                    ),
                });
            }
        }
        // `kiss` links naming the same TNC share it: one port each, one serial rate.
        let kiss: Vec<(usize, &skywave_links::KissConfig)> = self
            .links
            .iter()
            .enumerate()
            .filter_map(|(i, l)| match l {
                LinkConfig::Driver(DriverConfig::Kiss(k)) => Some((i, k)),
                _ => None,
            })
            .collect();
        let cfgs: Vec<&skywave_links::KissConfig> = kiss.iter().map(|k| k.1).collect();
        if let Some(c) = skywave_links::kiss::clash(&cfgs) {
            return Err(ConfigError::Invalid {
                field: format!(
                    "{} of link #{} (type = \"kiss\"), the same TNC as link #{}",
                    c.field,
                    kiss[c.second].0 + 1,
                    kiss[c.first].0 + 1
                ),
                value: c.value,
                expected: c.expected,
            });
        }
        Ok(())
    }

    /// The links under licensed-band rules (`amateur = true`), with what the rules need
    /// to know of each.
    pub fn amateur_links(&self) -> Vec<AmateurLink> {
        let mut out = Vec::new();
        for (index, l) in self.links.iter().enumerate() {
            let (callsign, identifies) = match l {
                LinkConfig::Driver(DriverConfig::Kiss(k)) if k.amateur => (
                    k.callsign.clone(),
                    Some("every frame carries the callsign as its AX.25 source"),
                ),
                LinkConfig::Driver(DriverConfig::Vara(v)) if v.amateur => (
                    v.callsign.clone(),
                    Some(
                        "VARA identifies the station: its calls carry the callsign (MYCALL), and CWID ON sends it in CW",
                    ),
                ),
                // Always amateur radio.
                LinkConfig::Driver(DriverConfig::Ardop(a)) => (
                    a.callsign.clone(),
                    Some("ardopcf identifies the station (MYCALL) with its ID frames"),
                ),
                _ => match self.amateur.get(&index) {
                    Some(c) => (c.clone(), None),
                    None => continue,
                },
            };
            out.push(AmateurLink {
                index,
                callsign,
                encrypted: l.encrypted(),
                identifies,
            });
        }
        out
    }

    /// `--mtu N`: sets the `mtu` of every UDP link (the largest datagram payload sent;
    /// path MTU discovery probes up to it) and every TCP link (the largest frame).
    /// Refused when there is no IP link to set it on: driver links take their frame
    /// size from the device. [`DaemonConfig::validate`] checks it against the floor.
    pub fn set_ip_mtu(&mut self, mtu: usize) -> Result<(), ConfigError> {
        let mut set = false;
        for l in &mut self.links {
            match l {
                LinkConfig::Udp(u) => u.mtu = Some(mtu),
                LinkConfig::Tcp(t) => t.mtu = mtu,
                LinkConfig::Driver(_) => continue,
            }
            set = true;
        }
        if !set {
            return Err(ConfigError::Invalid {
                field: "--mtu".into(),
                value: mtu.to_string(),
                expected: "a UDP or TCP link to apply to (--listen, --peer or the configuration file); serial, radio and modem links take their frame size from the device".into(),
            });
        }
        Ok(())
    }

    /// Reads a configuration file.
    pub fn load(path: &std::path::Path) -> Result<DaemonConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.into(),
            source,
        })?;
        DaemonConfig::from_toml(&text, &path.display().to_string())
    }

    /// Adds the link a `--listen`/`--peer` URL describes: `udp://ADDR` or `tcp://ADDR`.
    /// Peers join the first link of their kind (one is made if needed).
    pub fn add_url(&mut self, url: &str, listen: bool) -> Result<(), ConfigError> {
        let field = if listen { "--listen" } else { "--peer" };
        let invalid = |expected: &str| ConfigError::Invalid {
            field: field.into(),
            value: url.into(),
            expected: expected.into(),
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| invalid("udp://HOST:PORT or tcp://HOST:PORT"))?;
        // A listening address is bound at start: an IP address. A peer may be a name.
        let (addr, peer) = if listen {
            let a: SocketAddr = rest.parse().map_err(|_| {
                invalid("an IP address and port to listen on, e.g. udp://0.0.0.0:7474 or tcp://[::]:7475")
            })?;
            (a, PeerAddr::Ip(a))
        } else {
            let p = PeerAddr::parse(rest).map_err(|why| {
                invalid(&format!(
                    "{scheme}://IP:PORT or {scheme}://HOST:PORT, e.g. {scheme}://192.0.2.10:7474 or {scheme}://node.example:7474 ({why})"
                ))
            })?;
            let a = match &p {
                PeerAddr::Ip(a) => *a,
                // Only its family matters below: names are looked up over IPv4 unless
                // an IPv6 socket is configured.
                PeerAddr::Name { .. } => SocketAddr::from(([0, 0, 0, 0], 0)),
            };
            (a, p)
        };
        match (scheme, listen) {
            ("udp", true) => self.links.push(LinkConfig::Udp(UdpConfig::bind(addr))),
            ("udp", false) => {
                let udp = self.links.iter_mut().find_map(|l| match l {
                    LinkConfig::Udp(u) => Some(u),
                    _ => None,
                });
                match udp {
                    Some(u) => u.peers.push(peer),
                    None => {
                        let bind = if addr.is_ipv4() {
                            "0.0.0.0:0"
                        } else {
                            "[::]:0"
                        };
                        let mut u = UdpConfig::bind(bind.parse().expect("valid"));
                        u.peers.push(peer);
                        self.links.push(LinkConfig::Udp(u));
                    }
                }
            }
            ("tcp", true) => {
                let mut t = TcpConfig::new();
                t.listen = Some(addr);
                self.links.push(LinkConfig::Tcp(t));
            }
            ("tcp", false) => {
                let tcp = self.links.iter_mut().find_map(|l| match l {
                    LinkConfig::Tcp(t) => Some(t),
                    _ => None,
                });
                match tcp {
                    Some(t) => t.peers.push(peer),
                    None => {
                        let mut t = TcpConfig::new();
                        t.peers.push(peer);
                        self.links.push(LinkConfig::Tcp(t));
                    }
                }
            }
            _ => return Err(invalid("a udp:// or tcp:// URL")),
        }
        Ok(())
    }

    /// Adds a `--link TYPE:KEY=VALUE,...` driver link, e.g.
    /// `serial:device=/dev/ttyUSB0,baud=57600` or `emulated:profile=hf-modem,peer_device=/tmp/p`.
    pub fn add_link_flag(&mut self, spec: &str) -> Result<(), ConfigError> {
        let invalid = |expected: String| ConfigError::Invalid {
            field: "--link".into(),
            value: spec.into(),
            expected,
        };
        let (ty, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let mut t = toml::map::Map::new();
        t.insert("type".into(), toml::Value::String(ty.into()));
        for kv in rest.split(',').filter(|s| !s.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| invalid(format!("KEY=VALUE pairs after '{ty}:', got '{kv}'")))?;
            let val = if let Ok(n) = v.parse::<i64>() {
                toml::Value::Integer(n)
            } else if k == "channels" {
                toml::Value::Array(
                    v.split('+')
                        .map(|c| toml::Value::String(c.into()))
                        .collect(),
                )
            } else {
                toml::Value::String(v.into())
            };
            t.insert(k.into(), val);
        }
        let mut doc = toml::map::Map::new();
        doc.insert(
            "link".into(),
            toml::Value::Array(vec![toml::Value::Table(t)]),
        );
        let text = toml::to_string(&doc).map_err(|e| invalid(e.to_string()))?;
        let parsed = DaemonConfig::from_toml(&text, "--link")?;
        if !parsed.radio_access.is_empty() {
            self.radio_access.insert(self.links.len());
        }
        if let Some(tag) = parsed.network_tags.into_values().next() {
            self.network_tags.insert(self.links.len(), tag);
        }
        self.links.extend(parsed.links);
        Ok(())
    }
}

impl UdpConfig {
    pub fn bind(bind: SocketAddr) -> UdpConfig {
        UdpConfig {
            bind,
            peers: Vec::new(),
            discovery: None,
            beacon_interval: default_beacon(),
            mtu: None,
            rate: None,
            rtt: default_rtt(),
            max_peers: default_max_peers(),
            plaintext: false,
            trust: Default::default(),
            trust_keys: Vec::new(),
            trust_file: None,
            network_key_file: None,
        }
    }

    pub fn link_trust(&self) -> crate::trust::LinkTrust {
        crate::trust::LinkTrust {
            plaintext: self.plaintext,
            mode: self.trust,
            keys: self.trust_keys.clone(),
            file: self.trust_file.clone(),
            network_key_file: self.network_key_file.clone(),
        }
    }
}

impl TcpConfig {
    pub fn new() -> TcpConfig {
        TcpConfig {
            listen: None,
            peers: Vec::new(),
            mtu: default_tcp_mtu(),
            reconnect_max: default_reconnect(),
            plaintext: false,
            trust: Default::default(),
            trust_keys: Vec::new(),
            trust_file: None,
            network_key_file: None,
        }
    }

    pub fn link_trust(&self) -> crate::trust::LinkTrust {
        crate::trust::LinkTrust {
            plaintext: self.plaintext,
            mode: self.trust,
            keys: self.trust_keys.clone(),
            file: self.trust_file.clone(),
            network_key_file: self.network_key_file.clone(),
        }
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig::new()
    }
}

/// `"100MiB"`, `"2GB"`, `"4096"`: bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("expected a size such as 4096, 100MiB or 2GB, got '{s}'"))?;
    let mul = match unit.trim() {
        "" | "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        _ => {
            return Err(format!(
                "unknown unit in '{s}': use B, KiB, MiB, GiB, KB, MB or GB"
            ));
        }
    };
    Ok((v * mul) as u64)
}

/// A bundle lifetime: `"90s"`, `"30m"`, `"12h"`, `"7d"`, `"2w"`, or plain seconds.
pub fn parse_lifetime(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: u64 = num
        .parse()
        .map_err(|_| format!("expected a lifetime such as 3600, 30m, 12h or 7d, got '{s}'"))?;
    let mul = match unit.trim() {
        "" | "s" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => {
            return Err(format!(
                "unknown unit in lifetime '{s}': use s, m, h, d or w (e.g. 7d)"
            ));
        }
    };
    match v.checked_mul(mul) {
        Some(0) | None => Err(format!("lifetime '{s}' must be between 1 s and centuries")),
        Some(secs) => Ok(secs),
    }
}

/// An annotated configuration, printed by `skywave config example`.
pub const EXAMPLE: &str = r#"# skywave daemon configuration. Every setting can also be given as a flag
# (`skywave daemon --help`); flags win.

# Node directory: store, identity, HTTP token. Default: $SKYWAVE_HOME,
# else ~/.local/share/skywave.
# dir = "/var/lib/skywave"

# HTTP API. Loopback by default. Every call needs the token in DIR/http-token
# (header `Authorization: Bearer TOKEN`; the skywave CLI sends it), and a call
# that changes the node is refused from a web page of another origin.
http = "127.0.0.1:7473"
# open_reads = true                  # reads (GET, HEAD, /metrics) without the
#                                    # token; only on a loopback address
# http_hosts = ["node.local"]        # names the API is reached by besides its
#                                    # address (the Host header must be one)

# Refuse bundles once payloads and manifests reach this size.
# quota = "10GiB"

# UDP: one socket, static peers, and LAN discovery by broadcast or multicast.
[[link]]
type = "udp"
bind = "0.0.0.0:7474"
peers = ["192.0.2.10:7474"]           # or by name: "node.example:7474"
discovery = "255.255.255.255:7474"   # or a multicast group, "239.255.74.74:7474"
beacon_interval = "5s"
mtu = 1472
# rate = "30Mbit/s"                  # if known: pacing starts from it
# rtt = "100ms"                      # expected round trip before one is measured
# IP links are encrypted and authenticated by node key (Noise). Who may sync:
# trust = "any"                      # any node (default); or "keys", or "network"
# trust_keys = ["<node id>"]         # with "keys": these and those in the trust file
# trust_file = "/etc/skywave/trusted"  # default: `trusted` in dir (`skywave trust add`)
# network_key_file = "/etc/skywave/netkey"  # with "network": 64 hex digits, shared

# TCP: one long-lived connection per peer; reconnects with backoff.
# [[link]]
# type = "tcp"
# listen = "0.0.0.0:7475"
# peers = ["192.0.2.11:7475"]        # or by name: "relay.example:7475"
# reconnect_max = "30s"

# A byte-stream line (pty, USB serial) framed with COBS and a CRC-16.
# [[link]]
# type = "serial"
# device = "/dev/ttyUSB0"
# baud = 57600
# profile = "hf-modem"               # pace for the modem behind the line

# Serval's RFD900 CSMA radio firmware.
# [[link]]
# type = "rfd900"
# device = "/dev/ttyUSB1"
# network_key_file = "/etc/skywave/radiokey"  # any radio or serial link: every
#                                    # frame carries a tag under this key (64 hex
#                                    # digits); frames without one are dropped.
#                                    # Authentication only: allowed on amateur links
# network_tag_bytes = 8              # the tag's length, 4-32 bytes
# channel_access = "driver"          # the daemon takes turns on the shared channel
#                                    # (default); "radio": leave it to the radio
# queue_frames = 1                   # frames let wait in the radio (default 1 when
#                                    # the daemon takes turns, else 2)

# An AT-command HF data modem: dials, disables compression, redials a dropped call.
# [[link]]
# type = "hf-modem"
# device = "/dev/ttyS0"
# station = "2045"                   # dial this station (omit to answer)
# self_id = "1021"
# channels = ["1", "4", "9"]
# redial = "60s"

# A link profile emulated on the real clock; the far end appears as a pty at
# peer_device for another daemon's serial link (tests and demos).
# [[link]]
# type = "emulated"
# profile = "hf-modem"
# peer_device = "/tmp/skywave-hf"

# Caps and timeouts on what sync peers and API clients may hold (in the file
# only). The defaults, shown, are far above what honest peers and clients use;
# each limit that fires is counted in skywave_limit_hits_total{limit="<key>"}.
[limits]
# tcp_connections = 256              # sync connections accepted, held at once
# tcp_connections_per_address = 16   # of those, from one address (IPv6: a /64)
# tcp_first_frame_timeout = "30s"    # for an accepted connection's first frame
# http_connections = 128             # HTTP connections held at once (more: 503)
# http_header_timeout = "20s"        # to send a request's headers; also how long
#                                    # an idle keep-alive connection is kept
# http_body_timeout = "30s"          # longest pause within a request body (408)
# http_send_timeout = "30s"          # longest a client may take none of a response
# multipart_text_max = "64KiB"       # an upload's text parts together (413)
# uploads = 8                        # uploads under way at once (more: 503)
# Per peer not admitted by a trust list (trust = "any", plaintext and radio links):
# bundles and bytes taken per hour; past either, its new offers wait for the next
# hour (transfers under way finish). 0 = no limit (the default); for a node open to
# strangers, e.g. 10000 and "1GB".
# untrusted_bundles_per_hour = 0
# untrusted_bytes_per_hour = 0
# untrusted_budget_window = "1h"     # the period both are counted over
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_parse_with_units_and_nonsense_is_named() {
        assert_eq!(parse_lifetime("3600"), Ok(3600));
        assert_eq!(parse_lifetime("30m"), Ok(1800));
        assert_eq!(parse_lifetime("7d"), Ok(604_800));
        assert_eq!(parse_lifetime(" 2w "), Ok(1_209_600));
        assert!(parse_lifetime("0").is_err());
        assert!(
            parse_lifetime("7y")
                .unwrap_err()
                .contains("use s, m, h, d or w")
        );
        assert!(parse_lifetime("soon").unwrap_err().contains("7d"));
        assert!(parse_lifetime("99999999999999999999d").is_err());
    }

    #[test]
    fn the_example_parses() {
        let c = DaemonConfig::from_toml(EXAMPLE, "example").unwrap();
        assert_eq!(c.http, Some(DEFAULT_HTTP.parse().unwrap()));
        assert_eq!(c.links.len(), 1);
        match &c.links[0] {
            LinkConfig::Udp(u) => {
                assert_eq!(u.bind.port(), 7474);
                assert_eq!(u.peers.len(), 1);
                assert_eq!(u.discovery, Some("255.255.255.255:7474".parse().unwrap()));
                assert_eq!(u.beacon_interval, Duration::from_secs(5));
            }
            other => panic!("{other:?}"),
        }
        // Every commented setting parses too once uncommented.
        let all: String = EXAMPLE
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest)
                    if rest.starts_with("[[link]]")
                        || rest.split_once(" = ").is_some_and(|(k, _)| {
                            k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                        }) =>
                {
                    rest
                }
                _ => l,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let c = DaemonConfig::from_toml(&all, "example").unwrap();
        assert_eq!(c.links.len(), 6, "{all}");
        // The example shows the defaults.
        assert_eq!(c.limits, LimitsConfig::default());
    }

    #[test]
    fn limits_take_sizes_and_durations_and_refuse_zero() {
        let c = DaemonConfig::from_toml(
            "[limits]\ntcp_connections_per_address = 2\nhttp_header_timeout = \"200ms\"\nmultipart_text_max = \"1KiB\"\n",
            "c.toml",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.limits.tcp_connections_per_address, 2);
        assert_eq!(c.limits.http_header_timeout, Duration::from_millis(200));
        assert_eq!(c.limits.multipart_text_max, 1024);
        assert_eq!(c.limits.uploads, LimitsConfig::default().uploads);
        let c = DaemonConfig::from_toml("[limits]\nmultipart_text_max = 4096\n", "c.toml").unwrap();
        assert_eq!(c.limits.multipart_text_max, 4096);
        for (text, key) in [
            ("uploads = 0", "limits.uploads"),
            ("http_body_timeout = \"0s\"", "limits.http_body_timeout"),
        ] {
            let c = DaemonConfig::from_toml(&format!("[limits]\n{text}\n"), "c.toml").unwrap();
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
        for text in ["tcp_conections = 3", "multipart_text_max = \"lots\""] {
            let e = DaemonConfig::from_toml(&format!("[limits]\n{text}\n"), "c.toml")
                .unwrap_err()
                .to_string();
            assert!(e.contains("c.toml"), "{e}");
        }
    }

    #[test]
    fn http_access_settings_and_the_obsolete_require_token() {
        let c = DaemonConfig::from_toml(
            "open_reads = true\nhttp_hosts = [\"node.local\", \"proxy.example:8080\"]\n",
            "c.toml",
        )
        .unwrap();
        assert!(c.open_reads);
        assert_eq!(c.http_hosts, ["node.local", "proxy.example:8080"]);
        assert!(c.warnings.is_empty());
        c.validate().unwrap();
        // Older files still load; the setting is named as obsolete, with what replaced it.
        for v in ["true", "false"] {
            let c = DaemonConfig::from_toml(&format!("require_token = {v}\n"), "c.toml").unwrap();
            assert!(!c.open_reads);
            let w = c.warnings.join("\n");
            assert!(
                w.contains("c.toml") && w.contains("require_token") && w.contains("open_reads"),
                "{w}"
            );
        }
        let c =
            DaemonConfig::from_toml("http_hosts = [\"http://node.local/\"]\n", "c.toml").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("http_hosts") && e.contains("node.local:7473"),
            "{e}"
        );
    }

    #[test]
    fn urls_and_link_flags() {
        let mut c = DaemonConfig::default();
        c.add_url("udp://127.0.0.1:7000", true).unwrap();
        c.add_url("udp://127.0.0.1:7001", false).unwrap();
        c.add_url("tcp://127.0.0.1:7002", false).unwrap();
        assert_eq!(c.links.len(), 2);
        match &c.links[0] {
            LinkConfig::Udp(u) => assert_eq!(u.peers, vec!["127.0.0.1:7001".parse().unwrap()]),
            other => panic!("{other:?}"),
        }
        c.add_link_flag("serial:device=/dev/ttyUSB0,baud=57600")
            .unwrap();
        match &c.links[2] {
            LinkConfig::Driver(DriverConfig::Serial(s)) => assert_eq!(s.baud, 57600),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_tcp_link_that_can_never_connect_is_refused() {
        let c =
            DaemonConfig::from_toml("[[link]]\ntype = \"tcp\"\nmtu = 1400\n", "c.toml").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("link #1") && e.contains("listen") && e.contains("peers"),
            "{e}"
        );
    }

    #[test]
    fn peers_may_be_names() {
        let c = DaemonConfig::from_toml(
            "[[link]]\ntype = \"udp\"\nbind = \"0.0.0.0:7474\"\npeers = [\"192.0.2.1:7474\", \"node.example:7474\", \"[2001:db8::1]:7474\"]\n[[link]]\ntype = \"tcp\"\npeers = [\"relay-1.example.org.:7475\"]\n",
            "c.toml",
        )
        .unwrap();
        match (&c.links[0], &c.links[1]) {
            (LinkConfig::Udp(u), LinkConfig::Tcp(t)) => {
                assert_eq!(u.peers[0], PeerAddr::Ip("192.0.2.1:7474".parse().unwrap()));
                assert_eq!(
                    u.peers[1],
                    PeerAddr::Name {
                        host: "node.example".into(),
                        port: 7474
                    }
                );
                assert!(matches!(u.peers[2], PeerAddr::Ip(a) if a.is_ipv6()));
                assert_eq!(t.peers[0].to_string(), "relay-1.example.org.:7475");
            }
            other => panic!("{other:?}"),
        }
        for (bad, why) in [
            ("node.example", "no port"),
            ("node.example:http", "port"),
            (":7474", "no host"),
            ("2001:db8::1:7474", "brackets"),
            ("-node:7474", "host name"),
            ("no de:7474", "host name"),
        ] {
            let text =
                format!("[[link]]\ntype = \"udp\"\nbind = \"0.0.0.0:0\"\npeers = [\"{bad}\"]\n");
            let e = DaemonConfig::from_toml(&text, "c.toml")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(bad) && e.contains(why) && e.contains("HOST:PORT"),
                "{bad}: {e}"
            );
        }
        // --listen binds at start: an address, not a name.
        let e = DaemonConfig::default()
            .add_url("udp://localhost:7474", true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--listen") && e.contains("IP address"), "{e}");
        let mut c = DaemonConfig::default();
        c.add_url("udp://node.example:7474", false).unwrap();
        match &c.links[0] {
            LinkConfig::Udp(u) => assert_eq!(u.bind, "0.0.0.0:0".parse().unwrap()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_input_names_the_field() {
        let e = DaemonConfig::default()
            .add_url("udp:/127.0.0.1", true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--listen") && e.contains("udp://"), "{e}");
        let e = DaemonConfig::default()
            .add_url("sctp://127.0.0.1:1", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--peer") && e.contains("tcp://"), "{e}");
        let e = DaemonConfig::from_toml("[[link]]\ntype = \"pigeon\"\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("pigeon") && e.contains("hf-modem"), "{e}");
        let e = DaemonConfig::from_toml("[[link]]\ntype = \"udp\"\nbind = \"x\"\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("link #1") && e.contains("bind"), "{e}");
        let e = DaemonConfig::from_toml("htp = \"1\"\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("htp"), "{e}");
        assert!(parse_rate("12parsecs").is_err());
        assert_eq!(parse_rate("30Mbit/s").unwrap(), 30_000_000);
        assert_eq!(parse_rate("1475bps").unwrap(), 1475);
        assert_eq!(parse_size("1KiB").unwrap(), 1024);
    }

    #[test]
    fn channel_access_is_read_for_driver_links() {
        let c = DaemonConfig::from_toml(
            "[[link]]\ntype = \"rfd900\"\ndevice = \"/dev/a\"\n[[link]]\ntype = \"rfd900\"\ndevice = \"/dev/b\"\nchannel_access = \"radio\"\nqueue_frames = 2\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!(c.radio_access.iter().copied().collect::<Vec<_>>(), vec![1]);
        match &c.links[1] {
            LinkConfig::Driver(DriverConfig::Rfd900(r)) => assert_eq!(r.queue_frames, Some(2)),
            other => panic!("{other:?}"),
        }
        let e = DaemonConfig::from_toml(
            "[[link]]\ntype = \"rfd900\"\ndevice = \"/dev/a\"\nchannel_access = \"csma\"\n",
            "c.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("channel_access") && e.contains("radio"), "{e}");
        let mut c = DaemonConfig::default();
        c.add_link_flag("rfd900:device=/dev/x,channel_access=radio")
            .unwrap();
        assert!(c.radio_access.contains(&0));
    }

    #[test]
    fn vara_links_parse_and_are_checked_by_the_driver() {
        let c = DaemonConfig::from_toml(
            "[[link]]\ntype = \"vara\"\nmodem = \"127.0.0.1:8300\"\ncallsign = \"N0CALL-1\"\nstation = \"N0CALL-2\"\namateur = true\nidle_timeout = \"20s\"\n",
            "c.toml",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.links[0].kind(), "vara");
        assert!(!c.links[0].encrypted());
        let a = c.amateur_links();
        assert_eq!(a.len(), 1);
        assert!(a[0].identifies.is_some_and(|h| h.contains("VARA")));
        assert_eq!(a[0].callsign.as_deref(), Some("N0CALL-1"));
        match &c.links[0] {
            LinkConfig::Driver(DriverConfig::Vara(v)) => {
                assert_eq!(v.data_addr(), "127.0.0.1:8301");
                assert_eq!(v.idle_timeout, Duration::from_secs(20));
            }
            other => panic!("{other:?}"),
        }
        // VARA needs a callsign (MYCALL), amateur or not: refused at start, named.
        let c = DaemonConfig::from_toml(
            "[[link]]\ntype = \"vara\"\nmodem = \"127.0.0.1:8300\"\n",
            "c.toml",
        )
        .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("callsign of link #1 (type = \"vara\")")
                && e.contains("(not set)")
                && e.contains("MYCALL"),
            "{e}"
        );
        let e = DaemonConfig::from_toml("[[link]]\ntype = \"vara\"\nbw = 2300\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bw") && e.contains("vara"), "{e}");
    }

    #[test]
    fn kiss_links_parse_default_to_the_daemons_turns_and_are_checked() {
        let c = DaemonConfig::from_toml(
            "[[link]]\ntype = \"kiss\"\ntnc = \"tcp://127.0.0.1:8001\"\ncallsign = \"N0CALL-1\"\namateur = true\n\n[[link]]\ntype = \"kiss\"\ntnc = \"tcp://127.0.0.1:8001\"\nport = 1\nchannel_access = \"radio\"\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!(c.radio_access.iter().copied().collect::<Vec<_>>(), vec![1]);
        c.validate().unwrap();
        let a = c.amateur_links();
        assert_eq!(a.len(), 1);
        assert!(a[0].identifies.is_some() && !a[0].encrypted);
        assert_eq!(a[0].callsign.as_deref(), Some("N0CALL-1"));
        // `config check` runs the driver's own checks.
        let c = DaemonConfig::from_toml(
            "[[link]]\ntype = \"kiss\"\ntnc = \"tcp://127.0.0.1:8001\"\namateur = true\n",
            "c.toml",
        )
        .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("callsign of link #1 (type = \"kiss\")") && e.contains("amateur = true"),
            "{e}"
        );
        let c = DaemonConfig::from_toml(
            "[[link]]\ntype = \"kiss\"\ntnc = \"tcp://127.0.0.1:8001\"\npid = 240\n",
            "c.toml",
        )
        .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("pid of link #1") && e.contains("APRS"), "{e}");
        // Links sharing a TNC: a port each, and a serial device at one rate.
        let shared = |second: &str| {
            DaemonConfig::from_toml(
                &format!("[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\n\n[[link]]\ntype = \"kiss\"\ntnc = \"/dev/ttyUSB0\"\nbaud = 19200\n\n[[link]]\ntype = \"kiss\"\ntnc = \"tcp://127.0.0.1:8001\"\n\n[[link]]\ntype = \"kiss\"\ntnc = \"/dev/ttyUSB0\"\n{second}\n"),
                "c.toml",
            )
            .unwrap()
            .validate()
            .map_err(|e| e.to_string())
        };
        let e = shared("baud = 19200").unwrap_err();
        assert!(
            e.contains("port of link #4 (type = \"kiss\"), the same TNC as link #2")
                && e.contains("'0'")
                && e.contains("no other link on /dev/ttyUSB0 uses"),
            "{e}"
        );
        let e = shared("port = 1").unwrap_err();
        assert!(
            e.contains("baud of link #4 (type = \"kiss\"), the same TNC as link #2")
                && e.contains("'9600'")
                && e.contains("19200"),
            "{e}"
        );
        shared("port = 1\nbaud = 19200").unwrap();
    }

    #[test]
    fn rnode_links_parse_with_a_duty_cycle_and_are_checked() {
        let c = DaemonConfig::from_toml(
            "[[link]]\ntype = \"rnode\"\ndevice = \"/dev/ttyUSB0\"\nfrequency = 868100000\nsf = 9\nduty_cycle = 0.01\n",
            "c.toml",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.links[0].kind(), "rnode");
        // The firmware senses the carrier itself.
        assert_eq!(c.radio_access.iter().copied().collect::<Vec<_>>(), vec![0]);
        match &c.links[0] {
            LinkConfig::Driver(DriverConfig::Rnode(r)) => {
                assert_eq!((r.sf, r.bandwidth, r.cr, r.mtu), (9, 125_000, 5, 254));
                assert_eq!(r.duty_cycle, Some(0.01));
                assert_eq!(r.duty_window, std::time::Duration::from_secs(3600));
            }
            other => panic!("{other:?}"),
        }
        let c = DaemonConfig::from_toml(
            "[[link]]\ntype = \"rnode\"\ndevice = \"/dev/ttyUSB0\"\nfrequency = 868100000\nduty_cycle = 2.0\n",
            "c.toml",
        )
        .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("duty_cycle of link #1 (type = \"rnode\")"),
            "{e}"
        );
        let e = DaemonConfig::from_toml(
            "[[link]]\ntype = \"rnode\"\ndevice = \"/dev/x\"\n",
            "c.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("frequency"), "{e}");
    }

    /// A driver link's network-key tag: the file and tag length are the daemon's
    /// settings, taken out of the driver's; lengths outside 4-32 and a length without a
    /// key file are refused, named; IP links do not take them (theirs is `trust`).
    #[test]
    fn network_tags_on_driver_links() {
        let c = DaemonConfig::from_toml(
            "[[link]]\ntype = \"kiss\"\ntnc = \"tcp://127.0.0.1:8001\"\ncallsign = \"N0CALL-1\"\namateur = true\nnetwork_key_file = \"/k\"\n\n[[link]]\ntype = \"serial\"\ndevice = \"/dev/x\"\nnetwork_key_file = \"/k2\"\nnetwork_tag_bytes = 16\n\n[[link]]\ntype = \"rfd900\"\ndevice = \"/dev/y\"\n",
            "c.toml",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.network_tags.len(), 2);
        assert_eq!(
            c.network_tags[&0],
            NetworkTag {
                key_file: "/k".into(),
                tag_bytes: skywave_node::netkey::DEFAULT_TAG
            }
        );
        assert_eq!(c.network_tags[&1].tag_bytes, 16);
        for (extra, want) in [
            (
                "network_tag_bytes = 3\nnetwork_key_file = \"/k\"\n",
                "expected 4 to 32",
            ),
            (
                "network_tag_bytes = 33\nnetwork_key_file = \"/k\"\n",
                "expected 4 to 32",
            ),
            ("network_tag_bytes = 8\n", "used only with network_key_file"),
            ("network_key_file = 5\n", "invalid network_key_file"),
        ] {
            let e = DaemonConfig::from_toml(
                &format!("[[link]]\ntype = \"serial\"\ndevice = \"/dev/x\"\n{extra}"),
                "c.toml",
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains(want) && e.contains("link #1"), "{e}");
        }
        // An IP link authenticates by its handshake: the radio setting is not its.
        assert!(
            DaemonConfig::from_toml(
                "[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\nnetwork_tag_bytes = 8\n",
                "c.toml"
            )
            .is_err()
        );
        // A `--link` flag takes it too.
        let mut c = DaemonConfig::default();
        c.add_link_flag("serial:device=/dev/x,network_key_file=/k")
            .unwrap();
        assert_eq!(c.network_tags[&0].key_file, PathBuf::from("/k"));
    }

    /// `amateur = true` on any link: a callsign is required, and the link may not
    /// encrypt. IP links encrypt unless `plaintext = true`; driver links never do.
    #[test]
    fn amateur_links_need_a_callsign_and_no_encryption() {
        let check = |text: &str| DaemonConfig::from_toml(text, "c.toml").and_then(|c| c.validate());
        let e = check("[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\namateur = true\ncallsign = \"N0CALL\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("plaintext of link #1 (type = \"udp\")") && e.contains("forbid encryption"),
            "{e}"
        );
        check("[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\namateur = true\ncallsign = \"N0CALL\"\nplaintext = true\n")
            .unwrap();
        let e = check("[[link]]\ntype = \"tcp\"\nlisten = \"127.0.0.1:0\"\namateur = true\nplaintext = true\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("callsign of link #1 (type = \"tcp\")"), "{e}");
        let e = check("[[link]]\ntype = \"hf-modem\"\ndevice = \"/dev/x\"\namateur = true\ncallsign = \"N0 CALL\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("callsign of link #1 (type = \"hf-modem\")") && e.contains("not a callsign"),
            "{e}"
        );
        // A serial radio link: never encrypted, but its frames carry no address.
        let c = DaemonConfig::from_toml(
            "[[link]]\ntype = \"rfd900\"\ndevice = \"/dev/x\"\namateur = true\ncallsign = \"N0CALL-3\"\n",
            "c.toml",
        )
        .unwrap();
        c.validate().unwrap();
        let a = c.amateur_links();
        assert!(!a[0].encrypted && a[0].identifies.is_none());
        for l in &c.links {
            assert!(!l.encrypted(), "driver links never encrypt");
        }
        // A callsign alone, without `amateur = true`, is a mistake worth naming.
        let e = check("[[link]]\ntype = \"serial\"\ndevice = \"/dev/x\"\ncallsign = \"N0CALL\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("amateur = true"), "{e}");
    }

    /// `ardop` links are amateur radio: a callsign is required, encryption settings are
    /// refused with why, and the modem identifies the station.
    #[test]
    fn ardop_links_are_amateur_radio() {
        let check =
            |t: &str| DaemonConfig::from_toml(t, "t.toml").and_then(|c| c.validate().map(|()| c));
        let e = check("[[link]]\ntype = \"ardop\"\nmodem = \"127.0.0.1:8515\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("callsign of link #1 (type = \"ardop\")") && e.contains("MYCALL"),
            "{e}"
        );
        let e = check("[[link]]\ntype = \"ardop\"\ncallsign = \"N0CALL\"\nplaintext = false\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("plaintext") && e.contains("forbid encryption"),
            "{e}"
        );
        let e = check("[[link]]\ntype = \"ardop\"\ncallsign = \"N0CALL\"\nbuffer = 60000\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("buffer of link #1 (type = \"ardop\")"), "{e}");
        let c = check(
            "[[link]]\ntype = \"ardop\"\nmodem = \"127.0.0.1:8515\"\ncallsign = \"N0CALL-1\"\ncall = \"N0CALL-2\"\n",
        )
        .unwrap();
        let a = c.amateur_links();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].callsign.as_deref(), Some("N0CALL-1"));
        assert!(a[0].identifies.is_some() && !a[0].encrypted);
        assert!(c.radio_access.contains(&0));
        assert_eq!(c.links[0].kind(), "ardop");
    }

    #[test]
    fn an_mtu_below_the_floor_is_refused_naming_it() {
        for ty in ["udp", "tcp"] {
            let addr = if ty == "udp" { "bind" } else { "listen" };
            let text = format!("[[link]]\ntype = \"{ty}\"\n{addr} = \"127.0.0.1:0\"\nmtu = 40\n");
            let c = DaemonConfig::from_toml(&text, "c.toml").unwrap();
            let e = c.validate().unwrap_err().to_string();
            assert!(
                e.contains("48") && e.contains("mtu") && e.contains(ty),
                "{e}"
            );
        }
        let mut c = DaemonConfig::default();
        c.add_url("udp://127.0.0.1:0", true).unwrap();
        c.set_ip_mtu(1280).unwrap();
        c.validate().unwrap();
        // Encrypted (the default): the frame floor plus a handshake's keys and tags.
        c.set_ip_mtu(144).unwrap();
        assert!(c.validate().is_err());
        c.set_ip_mtu(145).unwrap();
        c.validate().unwrap();
        // In the clear, the frame floor alone.
        if let LinkConfig::Udp(u) = &mut c.links[0] {
            u.plaintext = true;
        }
        c.set_ip_mtu(47).unwrap();
        assert!(c.validate().is_err());
        c.set_ip_mtu(48).unwrap();
        c.validate().unwrap();
    }

    #[test]
    fn a_udp_mtu_is_unset_by_default_and_refused_above_the_largest_datagram() {
        let text = "[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\n";
        let c = DaemonConfig::from_toml(text, "c.toml").unwrap();
        let LinkConfig::Udp(u) = &c.links[0] else {
            panic!("a udp link");
        };
        assert_eq!(u.mtu, None, "unset: each peer's route decides");
        c.validate().unwrap();
        let max = skywave_node::adapter::MAX_DATAGRAM;
        for (mtu, ok) in [(max, true), (max + 1, false), (65_000, false)] {
            let c = DaemonConfig::from_toml(&format!("{text}mtu = {mtu}\n"), "c.toml").unwrap();
            match c.validate() {
                Ok(()) => assert!(ok, "mtu {mtu} accepted"),
                Err(e) => {
                    let e = e.to_string();
                    assert!(
                        !ok && e.contains(&max.to_string()) && e.contains("mtu"),
                        "{e}"
                    );
                }
            }
        }
    }
}
