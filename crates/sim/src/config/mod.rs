//! Link configuration: named profiles, the compact spec string, and TOML files.
//!
//! A [`LinkConfig`] is plain data; the models in [`crate::link`] are built from it. The
//! spec grammar and every field are described in `docs/sim.md`.

mod parse;
mod profiles;

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

pub use crate::lora::LoraPhy;

pub use parse::{SPEC_KEYS, parse_duration, parse_probability, parse_rate, parse_size};
pub use profiles::{PROFILES, ProfileInfo};

/// What a link carries and how it is shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// Point-to-point frames (datagrams) up to the MTU.
    Frame,
    /// A point-to-point byte stream through a modem with a finite TX buffer; overrunning
    /// the buffer drops the call.
    Stream,
    /// A shared broadcast medium with carrier sense; overlapping frames collide.
    Csma,
}

impl LinkKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkKind::Frame => "frame",
            LinkKind::Stream => "stream",
            LinkKind::Csma => "csma",
        }
    }
}

/// Whether both directions can be on the air at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Duplex {
    Full,
    /// One direction at a time; changing direction costs the turnaround time.
    Half,
}

/// Per-frame loss process.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossModel {
    None,
    /// Each frame is lost independently with this probability.
    Bernoulli(f64),
    GilbertElliott(GilbertElliott),
}

impl LossModel {
    /// The long-run fraction of frames lost.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli(p) => p,
            LossModel::GilbertElliott(ge) => ge.stationary_loss(),
        }
    }
}

/// Two-state burst loss (Gilbert-Elliott), stepped once per frame.
///
/// Probabilities as in the literature (and `ge=p,r,h,k`): `p` good->bad, `r` bad->good,
/// `h` delivery probability in the bad state, `k` delivery probability in the good state.
/// Gilbert's original model is `h = 0, k = 1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliott {
    pub p: f64,
    pub r: f64,
    pub h: f64,
    pub k: f64,
}

impl GilbertElliott {
    /// Fraction of time in the bad state.
    pub fn bad_fraction(&self) -> f64 {
        if self.p + self.r == 0.0 {
            0.0
        } else {
            self.p / (self.p + self.r)
        }
    }
    /// `pi_G (1 - k) + pi_B (1 - h)`.
    pub fn stationary_loss(&self) -> f64 {
        let bad = self.bad_fraction();
        (1.0 - bad) * (1.0 - self.k) + bad * (1.0 - self.h)
    }
}

/// A queue limit: fixed, or a multiple of the path's bandwidth-delay product.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BufferSize {
    Bytes(u64),
    /// `n` x rate x RTT, where RTT is the sum of both directions' one-way delays; never
    /// less than one MTU.
    Bdp(f64),
}

/// The parameters of one direction (or, for CSMA, of every radio).
#[derive(Clone, Debug, PartialEq)]
pub struct DirConfig {
    /// On-air bit rate.
    pub rate_bps: u64,
    /// One-way latency added after serialization.
    pub delay: Duration,
    /// Delay variation: each frame's delay is `delay + j`, `j` in `[-jitter, +jitter]`.
    pub jitter: Duration,
    /// Correlation of successive jitter draws, 0..=1.
    pub jitter_corr: f64,
    pub loss: LossModel,
    /// Probability that a frame is held back by `reorder_delay` so later ones overtake it.
    pub reorder: f64,
    pub reorder_delay: Duration,
    /// Probability that a frame is delivered twice.
    pub duplicate: f64,
    /// Probability that one random bit of a frame is flipped.
    pub corrupt: f64,
    /// Largest frame accepted (frame and CSMA links); larger ones are refused.
    pub mtu: usize,
    /// Bytes of airtime added to every frame (preamble, sync, headers not visible).
    pub overhead: usize,
    /// Frame links only: bytes the network adds to every datagram (IPv4 20 + UDP 8 = 28,
    /// [`IP_UDP_HEADER`]). A datagram of `len` bytes occupies `len + header` bytes of queue,
    /// airtime and byte counters; `mtu` is the IP MTU, so the largest datagram a sender may
    /// hand over is `mtu - header` ([`DirConfig::max_datagram`]). Zero for radios and modems.
    pub header: usize,
    /// Transmit queue limit (frames waiting to be sent; not what is on the air or in flight).
    pub buffer: BufferSize,
}

impl Default for DirConfig {
    fn default() -> Self {
        DirConfig {
            rate_bps: 0,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            jitter_corr: 0.0,
            loss: LossModel::None,
            reorder: 0.0,
            reorder_delay: Duration::from_millis(10),
            duplicate: 0.0,
            corrupt: 0.0,
            mtu: 1500,
            overhead: 0,
            header: 0,
            buffer: BufferSize::Bdp(1.0),
        }
    }
}

/// Bytes IPv4 (20) and UDP (8) add to every datagram: the `header` of the IP profiles and
/// of parsed frame-kind specs.
pub const IP_UDP_HEADER: usize = 28;

impl DirConfig {
    /// The largest datagram a sender may hand over: `mtu - header` (for radios and modems,
    /// whose header is 0, the MTU itself).
    pub fn max_datagram(&self) -> usize {
        self.mtu.saturating_sub(self.header)
    }
}

/// How a CSMA radio holds frames the host hands it before they go on the air.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxQueue {
    /// A drop-tail queue limited by `buffer` bytes only; frames wait for carrier sense and
    /// backoff (the default; spec `txqueue=bytes`).
    Bytes,
    /// No queue (spec `txqueue=none`): a frame goes on the air the moment the host hands it
    /// over, without carrier sense or backoff, as Serval's `fakecsmaradio` does; a frame
    /// handed over while the radio is still sending overlaps its previous frame, and both
    /// are lost at every receiver. `buffer` does not apply.
    None,
    /// At most this many frames wait (spec `txqueue=N`, N >= 1), and at most `buffer`
    /// bytes; beyond either the frame is dropped (`QueueFull`).
    Frames(u32),
}

/// Carrier-sense multiple access parameters (kind `csma`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsmaConfig {
    /// Backoff slot.
    pub slot: Duration,
    /// Initial contention window, in slots (backoff is uniform in `0..cw`).
    pub cw_min: u32,
    /// The window doubles each time the channel is found busy, up to this.
    pub cw_max: u32,
    /// The radio's transmit queue.
    pub txqueue: TxQueue,
}

impl Default for CsmaConfig {
    fn default() -> Self {
        CsmaConfig {
            slot: Duration::from_micros(500),
            cw_min: 16,
            cw_max: 1024,
            txqueue: TxQueue::Bytes,
        }
    }
}

/// A complete link description. `up` is the direction from side A (port 0) to side B
/// (port 1); `down` is B to A. CSMA media use `up` for every radio.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkConfig {
    /// Profile name, TOML table name, or the spec string it was parsed from.
    pub name: String,
    pub kind: LinkKind,
    pub duplex: Duplex,
    /// Dead air when a half-duplex link changes direction.
    pub turnaround: Duration,
    /// Longest a half-duplex side keeps the turn while the other side waits (`None`:
    /// until its buffer is empty).
    pub max_over: Option<Duration>,
    /// Stream links: time to re-establish the call after it drops.
    pub redial: Duration,
    /// Stream links: bytes the modem puts on the air as one unit.
    pub chunk: usize,
    /// Frames with a flipped bit are dropped by a frame check instead of delivered.
    pub crc: bool,
    pub csma: CsmaConfig,
    /// CSMA radios: LoRa modulation. Each frame's air time is then Semtech's formula for
    /// its length ([`LoraPhy::airtime`]) instead of bytes at `rate`, which is set to the
    /// nominal bit rate.
    pub lora: Option<LoraPhy>,
    /// The band's duty-cycle limit on every radio (EU 868 MHz sub-bands: 1% or 10% of any
    /// hour). The link does not enforce it (a radio sends what it is given); it is what
    /// the nodes' drivers are configured to respect and what the lab checks.
    pub duty: Option<DutyLimit>,
    pub up: DirConfig,
    pub down: DirConfig,
}

/// A duty-cycle limit: at most `fraction` of any `window` on the air.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DutyLimit {
    pub fraction: f64,
    pub window: Duration,
}

impl DutyLimit {
    /// EU 868 MHz: `fraction` of any hour.
    pub fn hourly(fraction: f64) -> DutyLimit {
        DutyLimit {
            fraction,
            window: Duration::from_secs(3600),
        }
    }

    /// Air time allowed in any window.
    pub fn allowance(&self) -> Duration {
        self.window.mul_f64(self.fraction)
    }
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            name: String::new(),
            kind: LinkKind::Frame,
            duplex: Duplex::Full,
            turnaround: Duration::ZERO,
            max_over: None,
            redial: Duration::from_secs(60),
            chunk: 64,
            crc: false,
            csma: CsmaConfig::default(),
            lora: None,
            duty: None,
            up: DirConfig::default(),
            down: DirConfig::default(),
        }
    }
}

/// Which end of a point-to-point link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Port 0; sends on `up`.
    A,
    /// Port 1; sends on `down`.
    B,
}

impl LinkConfig {
    /// A named profile from the design's table (see [`PROFILES`]).
    pub fn profile(name: &str) -> Result<LinkConfig, ConfigError> {
        profiles::profile(name)
    }

    /// Parses a compact spec such as `rate=1475bps,delay=4s,duplex=half` or
    /// `profile=lfn,loss=2%`.
    pub fn parse_spec(spec: &str) -> Result<LinkConfig, ConfigError> {
        parse::parse_spec(spec)
    }

    /// Parses a TOML file of `[links.NAME]` tables into named configurations.
    pub fn parse_toml(text: &str) -> Result<BTreeMap<String, LinkConfig>, ConfigError> {
        parse::parse_toml(text)
    }

    /// Resolves what a user typed for `--link`: a spec if it contains `=`, else a name
    /// from `custom` (e.g. a loaded TOML file), else a profile.
    pub fn lookup(
        text: &str,
        custom: &BTreeMap<String, LinkConfig>,
    ) -> Result<LinkConfig, ConfigError> {
        if text.contains('=') {
            Self::parse_spec(text)
        } else if let Some(cfg) = custom.get(text) {
            Ok(cfg.clone())
        } else {
            Self::profile(text)
        }
    }

    /// The canonical spec string; `parse_spec(cfg.to_spec())` gives back `cfg` (except
    /// the name).
    pub fn to_spec(&self) -> String {
        parse::to_spec(self)
    }

    pub fn dir(&self, side: Side) -> &DirConfig {
        match side {
            Side::A => &self.up,
            Side::B => &self.down,
        }
    }

    /// How soon a CSMA radio senses a neighbour's frame: once its preamble (and, on
    /// LoRa, sync word) is on the air.
    pub fn csma_detect(&self) -> Duration {
        Duration::from_nanos(match self.lora {
            Some(p) => p.preamble_nanos(),
            None => crate::time::airtime_nanos(self.up.overhead as u64, self.up.rate_bps),
        })
    }

    /// A CSMA radio's backoff slot: the configured one, but never shorter than
    /// [`LinkConfig::csma_detect`]. No radio can tell a free channel from a busy one
    /// sooner than it can sense a preamble: a slot shorter than that (500 us at
    /// 9.6 kbit/s, where a preamble takes 6.7 ms) would have radios that back off by
    /// different numbers of slots still collide, as no real radio at that rate does
    /// (Dire Wolf's default slot at 1200 bit/s is 100 ms).
    pub fn csma_slot(&self) -> Duration {
        self.csma.slot.max(self.csma_detect())
    }

    /// The longest a CSMA radio with a transmit queue waits before sending a frame on a
    /// quiet channel (its first backoff, `cw_min` slots): how far apart the frames of
    /// one station's burst can be. A radio without a queue sends at once: zero.
    pub fn csma_first_backoff(&self) -> Duration {
        match (self.kind, self.csma.txqueue) {
            (LinkKind::Csma, TxQueue::Bytes | TxQueue::Frames(_)) => {
                self.csma_slot() * self.csma.cw_min
            }
            _ => Duration::ZERO,
        }
    }

    /// The transmit queue limit of one direction in bytes.
    pub fn buffer_bytes(&self, side: Side) -> u64 {
        let d = self.dir(side);
        match d.buffer {
            BufferSize::Bytes(n) => n,
            BufferSize::Bdp(k) => {
                let rtt = self.up.delay + self.down.delay;
                let bdp = d.rate_bps as f64 / 8.0 * rtt.as_secs_f64() * k;
                (bdp.ceil() as u64).max(d.mtu as u64)
            }
        }
    }

    /// The metric "capacity": the on-air rate; for half-duplex and CSMA links the rate
    /// shared by all senders, else the faster direction.
    pub fn capacity_bps(&self) -> u64 {
        match (self.kind, self.duplex) {
            (LinkKind::Csma, _) | (_, Duplex::Half) => self.up.rate_bps,
            _ => self.up.rate_bps.max(self.down.rate_bps),
        }
    }

    /// Checks ranges and combinations; called by every constructor of a config.
    pub fn validate(&self) -> Result<(), ConfigError> {
        parse::validate(self)
    }
}

impl std::str::FromStr for LinkConfig {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        LinkConfig::lookup(s, &BTreeMap::new())
    }
}

/// Why a link description was rejected. Every variant names the field and what it accepts.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("unknown link profile '{name}'; accepted profiles: {accepted}")]
    UnknownProfile { name: String, accepted: String },
    #[error("unknown field '{field}'; accepted fields: {accepted}")]
    UnknownField { field: String, accepted: String },
    #[error("invalid value '{value}' for field '{field}': expected {expected}")]
    InvalidValue {
        field: String,
        value: String,
        expected: String,
    },
    #[error("missing field '{field}': {hint}")]
    Missing { field: String, hint: String },
    #[error("invalid TOML link file: {message}")]
    Toml { message: String },
}

impl ConfigError {
    pub(crate) fn invalid(field: &str, value: &str, expected: impl fmt::Display) -> Self {
        ConfigError::InvalidValue {
            field: field.to_string(),
            value: value.to_string(),
            expected: expected.to_string(),
        }
    }

    /// Prefixes the field name, e.g. with `links.my-hf.`.
    pub(crate) fn within(self, prefix: &str) -> Self {
        match self {
            ConfigError::UnknownField { field, accepted } => ConfigError::UnknownField {
                field: format!("{prefix}{field}"),
                accepted,
            },
            ConfigError::InvalidValue {
                field,
                value,
                expected,
            } => ConfigError::InvalidValue {
                field: format!("{prefix}{field}"),
                value,
                expected,
            },
            ConfigError::Missing { field, hint } => ConfigError::Missing {
                field: format!("{prefix}{field}"),
                hint,
            },
            other => other,
        }
    }
}
