//! `rnode`: a LoRa radio running the RNode firmware (Reticulum's), spoken to in its
//! KISS dialect over a serial device ([`wire`]).
//!
//! When the device opens, the driver sets frequency, bandwidth, TX power, spreading factor
//! and coding rate, turns the radio on, and checks every value the device reports back;
//! a device that does not confirm them in time, or confirms other values, is refused with
//! the reason and tried again with backoff.
//!
//! Sending, one frame at a time: after each frame the driver waits for `READY` before
//! the next. The firmware sends `READY` (command 0x0F, value 1) when asked and its queue
//! has room; the driver asks once the frame's air time has passed, and takes an
//! unasked one too. `READY 0` (not ready) means wait; `ERROR QUEUE_FULL` means the frame
//! was not taken: it is sent again at the next `READY`. A device that gives no `READY`
//! for `ready_timeout` after a frame's air time is taken for hung: the link goes down and
//! the device is reopened and reconfigured; frames the daemon handed over and not yet
//! written are kept.
//!
//! Why not [`skywave_node::credit::ModemCredit`]: it counts bytes a modem holds, from
//! reports of queued or free bytes or from a byte rate. `READY` counts frames (one may
//! go, or none), and a LoRa frame's cost is its air time by Semtech's formula (stepped,
//! with a preamble per packet), not bytes at a rate; the duty-cycle budget already keeps
//! the air time. So the driver keeps one frame outstanding and the budget below.
//!
//! **Duty cycle** (`duty_cycle = 0.01`): every frame's air time is costed by the formula
//! (the firmware adds a one-byte header and splits frames past 254 bytes into two
//! packets), and [`DutyCycle`] holds frames until the budget allows them: the link then
//! offers no room, which is back-pressure to the protocol. Used and remaining air time,
//! and the channel statistics the firmware reports (its own air time and the channel
//! load, short and long term, RSSI, noise floor), are in the link's state in `skywave
//! status`.
//!
//! What this does not do: the firmware's own airtime locks (0x0B/0x0C), TCP or Bluetooth
//! RNodes, or more than one frame in the device's queue.

pub mod fake;
pub mod wire;

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Deserialize;
use skywave_node::dutycycle::{DutyCycle, DutyCycleConfig};
use skywave_node::lora::LoraPhy;
use skywave_proto::LinkParams;
use tokio::sync::mpsc;

use crate::device::Device;
use crate::link::{Backoff, Closed, Shared, accept_frame, sleep_until, wait_away};
use crate::serial::check_baud;
use crate::{Error, LinkCounters, LinkEvent, LinkHandle};
use wire::{Event, cmd, error};

/// `[[link]] type = "rnode"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RnodeConfig {
    /// The serial device (e.g. `/dev/ttyUSB0`, `/dev/ttyACM0`).
    pub device: String,
    #[serde(default = "default_baud")]
    pub baud: u32,
    /// Centre frequency in Hz (e.g. 868100000).
    pub frequency: u32,
    /// Hz: 125000, 250000 or 500000.
    #[serde(default = "default_bandwidth")]
    pub bandwidth: u32,
    /// Spreading factor, 7 to 12.
    #[serde(default = "default_sf")]
    pub sf: u8,
    /// Coding rate 5 to 8 (4/5 to 4/8).
    #[serde(default = "default_cr")]
    pub cr: u8,
    /// dBm.
    #[serde(default = "default_txpower")]
    pub txpower: u8,
    /// Preamble symbols the firmware sends, for air time (the firmware's least is 18; it
    /// reports what it uses, which then replaces this).
    #[serde(default = "default_preamble")]
    pub preamble: u16,
    /// Fraction of any `duty_window` the radio may be on the air (EU 868 MHz: 0.01 or
    /// 0.1). Unset: no budget.
    #[serde(default)]
    pub duty_cycle: Option<f64>,
    #[serde(default = "default_window", deserialize_with = "crate::de::duration")]
    pub duty_window: Duration,
    /// How much later than handed over a frame may be on the air (the firmware's carrier
    /// sense and contention window): the budget counts each frame that much longer.
    #[serde(default = "default_guard", deserialize_with = "crate::de::duration")]
    pub duty_guard: Duration,
    /// Largest frame: 254 fits one LoRa packet; up to 508 (two packets, and a frame lost
    /// if either is).
    #[serde(default = "default_mtu")]
    pub mtu: usize,
    /// No `READY` this long after a frame's air time: the device is taken for hung.
    #[serde(default = "default_ready", deserialize_with = "crate::de::duration")]
    pub ready_timeout: Duration,
    /// The device must confirm its configuration within this.
    #[serde(default = "default_config", deserialize_with = "crate::de::duration")]
    pub config_timeout: Duration,
    #[serde(default)]
    pub name: Option<String>,
}

fn default_baud() -> u32 {
    115_200
}
fn default_bandwidth() -> u32 {
    125_000
}
fn default_sf() -> u8 {
    9
}
fn default_cr() -> u8 {
    5
}
fn default_txpower() -> u8 {
    14
}
fn default_preamble() -> u16 {
    18
}
fn default_window() -> Duration {
    Duration::from_secs(3600)
}
fn default_guard() -> Duration {
    Duration::from_secs(10)
}
fn default_mtu() -> usize {
    wire::SINGLE_MTU - wire::HEADER
}
fn default_ready() -> Duration {
    Duration::from_secs(10)
}
fn default_config() -> Duration {
    Duration::from_secs(5)
}

/// How often `READY` is asked for while a frame is outstanding, once its air time has
/// passed.
const READY_POLL: Duration = Duration::from_millis(500);

/// Frames taken from the daemon and held on the host (besides the one outstanding).
const HELD: usize = 1;

/// A READY sooner than this before a frame's air time is over answers for an earlier
/// frame (a query and the radio's own READY crossed): it is not taken for this one.
const EARLY: Duration = Duration::from_millis(10);

impl RnodeConfig {
    pub fn new(device: impl Into<String>, frequency: u32) -> RnodeConfig {
        RnodeConfig {
            device: device.into(),
            baud: default_baud(),
            frequency,
            bandwidth: default_bandwidth(),
            sf: default_sf(),
            cr: default_cr(),
            txpower: default_txpower(),
            preamble: default_preamble(),
            duty_cycle: None,
            duty_window: default_window(),
            duty_guard: default_guard(),
            mtu: default_mtu(),
            ready_timeout: default_ready(),
            config_timeout: default_config(),
            name: None,
        }
    }

    /// The modulation, for air time.
    pub fn phy(&self) -> LoraPhy {
        LoraPhy {
            sf: self.sf,
            bw_hz: self.bandwidth,
            cr: self.cr,
            preamble: self.preamble,
            explicit_header: true,
            crc: true,
        }
    }

    /// Air time of a frame of `len` bytes as the firmware sends it.
    pub fn airtime(&self, len: usize) -> Duration {
        airtime(&self.phy(), len)
    }

    pub fn duty(&self) -> Option<DutyCycleConfig> {
        self.duty_cycle.map(|f| DutyCycleConfig {
            fraction: f,
            window: self.duty_window,
            guard: self.duty_guard,
        })
    }

    /// Checks every setting.
    pub fn check(&self) -> Result<(), Error> {
        let invalid = |field: &str, value: String, expected: &str| {
            Err(Error::Invalid {
                field: field.into(),
                value,
                expected: expected.into(),
            })
        };
        check_baud(self.baud)?;
        if !(137_000_000..=3_000_000_000).contains(&self.frequency) {
            return invalid(
                "frequency",
                self.frequency.to_string(),
                "the centre frequency in Hz, 137000000 to 3000000000 (e.g. 868100000)",
            );
        }
        if let Err(e) = self.phy().check() {
            let field = match e.field {
                "bw" => "bandwidth",
                f => f,
            };
            return invalid(field, e.value, e.expected);
        }
        if self.txpower > 22 {
            return invalid(
                "txpower",
                self.txpower.to_string(),
                "0 to 22 dBm (and what the band allows)",
            );
        }
        if !(skywave_proto::wire::MIN_FRAME..=wire::MTU).contains(&self.mtu) {
            return invalid(
                "mtu",
                self.mtu.to_string(),
                "48 to 508 bytes (254 fits one LoRa packet)",
            );
        }
        if let Some(d) = self.duty() {
            if !(d.fraction > 0.0 && d.fraction <= 1.0) {
                return invalid(
                    "duty_cycle",
                    d.fraction.to_string(),
                    "a fraction above 0 and at most 1 (EU 868 MHz: 0.01 or 0.1)",
                );
            }
            if d.window.is_zero() {
                return invalid("duty_window", "0s".into(), "a duration, e.g. \"1h\"");
            }
            let air = self.airtime(self.mtu);
            if air > d.allowance() {
                return invalid(
                    "mtu",
                    self.mtu.to_string(),
                    &format!(
                        "a frame whose air time ({air:?}) fits the duty-cycle allowance ({:?} per {:?})",
                        d.allowance(),
                        d.window
                    ),
                );
            }
        }
        Ok(())
    }
}

/// Air time of a frame of `len` bytes: the firmware's packets (see [`wire::packets`]).
pub fn airtime(phy: &LoraPhy, len: usize) -> Duration {
    wire::packets(len)
        .into_iter()
        .flatten()
        .map(|n| phy.airtime(n))
        .sum()
}

/// What the protocol is told about an RNode link.
pub fn params(cfg: &RnodeConfig) -> LinkParams {
    let air = cfg.airtime(cfg.mtu);
    LinkParams {
        mtu: cfg.mtu,
        shared: true,
        paced: false,
        // The firmware's carrier sense arbitrates.
        half_duplex: false,
        // Payload bytes per second of air in largest frames.
        rate_bps: Some(
            ((cfg.mtu as f64 * 8.0) / air.as_secs_f64())
                .round()
                .max(1.0) as u64,
        ),
        rtt_hint: air * 6 + Duration::from_millis(500),
        loss_hint: 0.0,
        discover_mtu: false,
        frame_overhead: 0,
        handoff: Duration::from_millis(100),
        duty: None,
        reliable: false,
        turns: None,
    }
}

pub fn spawn(cfg: RnodeConfig) -> Result<LinkHandle, Error> {
    cfg.check()?;
    let name = cfg
        .name
        .clone()
        .unwrap_or_else(|| format!("rnode:{}", cfg.device));
    tracing::info!(link = %name, device = %cfg.device, frequency = cfg.frequency, sf = cfg.sf, bandwidth = cfg.bandwidth, duty_cycle = ?cfg.duty_cycle, "rnode link configured");
    let (shared, handle, frames) = Shared::new(name);
    tokio::spawn(async move {
        let _ = run(shared, frames, cfg).await;
    });
    Ok(handle)
}

/// What the device sent that the session acts on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Rx {
    Frame(Bytes),
    /// Every setting confirmed: the link is up.
    Configured,
    /// The device cannot be used as it is: why (the session reopens it).
    Fault(String),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Settings sent at this time; confirmations awaited.
    Configuring(Instant),
    Up,
}

/// The driver's state, sans I/O: what to write, and what the device's bytes mean.
#[derive(Debug)]
pub(crate) struct RnodeTx {
    cfg: RnodeConfig,
    phy: LoraPhy,
    origin: Instant,
    phase: Phase,
    /// Settings still to be confirmed, with the value expected.
    expect: BTreeMap<u8, u32>,
    reader: wire::Reader,
    garbage: u64,
    bad: u64,
    /// Frames from the daemon not yet written.
    queue: VecDeque<Bytes>,
    /// The frame written and not yet followed by READY: its bytes, when written, and its
    /// air time.
    outstanding: Option<(Bytes, Instant, Duration)>,
    /// A frame the device refused (QUEUE_FULL): sent again first, at the next READY.
    refused: Option<Bytes>,
    last_ask: Option<Instant>,
    pub duty: Option<DutyCycle>,
    /// Bytes to write to the device.
    pub out: Vec<u8>,
    /// The latest channel statistics and other figures, for status.
    pub channel: Option<wire::ChannelStats>,
    pub queue_full: u64,
    pub ready_seen: u64,
    /// Most frames ever outstanding at once (one, unless the driver is wrong).
    pub max_outstanding: usize,
}

impl RnodeTx {
    pub(crate) fn new(cfg: &RnodeConfig, now: Instant) -> RnodeTx {
        RnodeTx {
            phy: cfg.phy(),
            cfg: cfg.clone(),
            origin: now,
            phase: Phase::Up,
            expect: BTreeMap::new(),
            reader: wire::Reader::default(),
            garbage: 0,
            bad: 0,
            queue: VecDeque::new(),
            outstanding: None,
            refused: None,
            last_ask: None,
            duty: cfg.duty().map(DutyCycle::new),
            out: Vec::new(),
            channel: None,
            queue_full: 0,
            ready_seen: 0,
            max_outstanding: 0,
        }
    }

    fn since(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.origin)
    }

    /// The device was (re)opened: configure it. Frames not yet written stay queued; one
    /// written and not confirmed may have been lost with the device (the protocol
    /// recovers it).
    pub(crate) fn open(&mut self, now: Instant) {
        let c = &self.cfg;
        self.out = wire::configure(c.frequency, c.bandwidth, c.txpower, c.sf, c.cr);
        self.expect = [
            (cmd::FREQUENCY, c.frequency),
            (cmd::BANDWIDTH, c.bandwidth),
            (cmd::TXPOWER, u32::from(c.txpower)),
            (cmd::SF, u32::from(c.sf)),
            (cmd::CR, u32::from(c.cr)),
            (cmd::RADIO_STATE, 1),
        ]
        .into_iter()
        .collect();
        self.phase = Phase::Configuring(now);
        self.reader = wire::Reader::default();
        self.garbage = 0;
        self.bad = 0;
        if let Some(f) = self.refused.take() {
            self.queue.push_front(f);
        }
        self.outstanding = None;
        self.last_ask = None;
    }

    pub(crate) fn configured(&self) -> bool {
        self.phase == Phase::Up && self.expect.is_empty()
    }

    /// Air time of a frame of `len` bytes.
    pub(crate) fn airtime(&self, len: usize) -> Duration {
        airtime(&self.phy, len)
    }

    /// Takes a frame from the daemon (an empty one means "nothing more now").
    pub(crate) fn offer(&mut self, name: &str, f: Bytes, counters: &LinkCounters) {
        // The room is a whole frame or nothing: a frame sent on no room counts.
        let room = if self.room(Instant::now()) == 0 {
            0
        } else {
            usize::MAX
        };
        let Some(f) = accept_frame(name, f, self.cfg.mtu, room, counters) else {
            return;
        };
        if self.queue.len() >= HELD + 8 {
            tracing::warn!(
                link = name,
                "frame dropped: the driver queue is full (frames sent past the room)"
            );
            LinkCounters::add(&counters.dropped_frames, 1);
            return;
        }
        self.queue.push_back(f);
    }

    /// Frame bytes the daemon may hand over now: a whole frame while none waits on the
    /// host and the budget allows a largest frame.
    pub(crate) fn room(&self, now: Instant) -> usize {
        if !self.configured() || self.queue.len() + usize::from(self.refused.is_some()) >= HELD {
            return 0;
        }
        let t = self.since(now);
        let largest = self.airtime(self.cfg.mtu);
        match &self.duty {
            Some(d) if !d.allows(t, largest) => 0,
            _ => self.cfg.mtu,
        }
    }

    /// When the budget next allows a largest frame, if it does not now.
    pub(crate) fn duty_wait(&self, now: Instant) -> Option<Instant> {
        let d = self.duty.as_ref()?;
        let t = self.since(now);
        let at = d.next_allowed(t, self.airtime(self.cfg.mtu)).ok()?;
        (at > t).then(|| self.origin + at)
    }

    /// Writes what may be written now: the next frame when READY and the budget allow,
    /// or a READY query once an outstanding frame's air time has passed.
    pub(crate) fn pump(&mut self, now: Instant, counters: &LinkCounters) {
        if !self.configured() {
            return;
        }
        if let Some((_, at, air)) = &self.outstanding {
            let due = *at + *air;
            if now >= due && self.last_ask.is_none_or(|t| now >= t + READY_POLL) {
                wire::command(cmd::READY, &[0x00], &mut self.out);
                self.last_ask = Some(now);
            }
            return;
        }
        let Some(f) = self.refused.take().or_else(|| self.queue.pop_front()) else {
            return;
        };
        let air = self.airtime(f.len());
        let t = self.since(now);
        if let Some(d) = &mut self.duty {
            if !d.allows(t, air) {
                self.queue.push_front(f);
                return;
            }
            d.record(t, air);
        }
        wire::command(cmd::DATA, &f, &mut self.out);
        LinkCounters::add(&counters.frames_out, 1);
        LinkCounters::add(&counters.bytes_out, f.len() as u64);
        self.outstanding = Some((f, now, air));
        self.max_outstanding = self.max_outstanding.max(1);
        self.last_ask = None;
    }

    /// Why the device must be reopened now, if it must: it did not confirm its
    /// configuration, or gave no READY after a frame.
    pub(crate) fn overdue(&self, now: Instant) -> Option<String> {
        match self.phase {
            Phase::Configuring(at) if now >= at + self.cfg.config_timeout => {
                let missing: Vec<&str> = self.expect.keys().map(|c| setting_name(*c)).collect();
                return Some(format!(
                    "the RNode did not confirm its configuration within {:?} (no answer for: {}): check that the device runs the RNode firmware and the baud rate ({})",
                    self.cfg.config_timeout,
                    missing.join(", "),
                    self.cfg.baud
                ));
            }
            _ => {}
        }
        if let Some((_, at, air)) = &self.outstanding
            && now >= *at + *air + self.cfg.ready_timeout
        {
            return Some(format!(
                "the RNode gave no READY for {:.1} s after a frame of {:.2} s air time: it may have hung; reopening it",
                (now - *at - *air).as_secs_f64(),
                air.as_secs_f64()
            ));
        }
        None
    }

    /// When the session must look again without any input.
    pub(crate) fn next_wake(&self, now: Instant) -> Option<Instant> {
        let mut t: Vec<Instant> = Vec::new();
        if let Phase::Configuring(at) = self.phase {
            t.push(at + self.cfg.config_timeout);
        }
        if let Some((_, at, air)) = &self.outstanding {
            let due = *at + *air;
            t.push(match self.last_ask {
                Some(a) => (a + READY_POLL).max(due),
                None => due,
            });
            t.push(due + self.cfg.ready_timeout);
        } else if !self.queue.is_empty() || self.refused.is_some() {
            t.extend(self.duty_wait(now));
        }
        if self.configured() && self.queue.is_empty() && self.refused.is_none() {
            // The room opens when the budget does.
            t.extend(self.duty_wait(now));
        }
        t.into_iter().filter(|&x| x > now).min()
    }

    /// Reads the device's bytes.
    pub(crate) fn receive(
        &mut self,
        name: &str,
        data: &[u8],
        now: Instant,
        counters: &LinkCounters,
    ) -> Vec<Rx> {
        let events = self.reader.push(data);
        LinkCounters::add(
            &counters.garbage_bytes,
            self.reader.garbage() - self.garbage,
        );
        LinkCounters::add(
            &counters.dropped_frames,
            self.reader.bad_frames() - self.bad,
        );
        self.garbage = self.reader.garbage();
        self.bad = self.reader.bad_frames();
        let mut out = Vec::new();
        for ev in events {
            match ev {
                Event::Data(d) => {
                    LinkCounters::add(&counters.frames_in, 1);
                    LinkCounters::add(&counters.bytes_in, d.len() as u64);
                    out.push(Rx::Frame(Bytes::from(d)));
                }
                Event::Setting(c, v) => {
                    if let Some(want) = self.expect.get(&c).copied() {
                        let ok = match c {
                            // Synthesisers land within a few Hz (Reticulum allows 100).
                            cmd::FREQUENCY => want.abs_diff(v) <= 100,
                            _ => want == v,
                        };
                        if !ok {
                            out.push(Rx::Fault(format!(
                                "the RNode reports {} = {v} after {want} was set: the hardware may not support it; check the configuration",
                                setting_name(c)
                            )));
                            continue;
                        }
                        self.expect.remove(&c);
                        if self.expect.is_empty() && matches!(self.phase, Phase::Configuring(_)) {
                            self.phase = Phase::Up;
                            out.push(Rx::Configured);
                        }
                    } else if self.configured() && c == cmd::RADIO_STATE && v == 0 {
                        out.push(Rx::Fault("the RNode turned its radio off".into()));
                    }
                }
                Event::Ready(true)
                    if self
                        .outstanding
                        .as_ref()
                        .is_some_and(|(_, at, air)| now + EARLY < *at + *air) =>
                {
                    // (An answer for the frame before: the current one cannot be off the
                    // air yet.)
                }
                Event::Ready(true) => {
                    self.ready_seen += 1;
                    let t = self.since(now);
                    if let Some(d) = &mut self.duty
                        && self.outstanding.is_some()
                    {
                        // The frame is off the air by now, if it was late.
                        d.ended(t);
                    }
                    self.outstanding = None;
                    self.last_ask = None;
                }
                Event::Ready(false) => {}
                Event::Error(error::QUEUE_FULL) => {
                    self.queue_full += 1;
                    tracing::warn!(
                        link = name,
                        "the RNode refused a frame: its queue is full; sending it again when it is ready"
                    );
                    // The frame was not taken: it goes again at the next READY.
                    if let Some((f, at, _)) = self.outstanding.take() {
                        self.refused = Some(f);
                        // Still wait for READY before anything else.
                        self.outstanding = Some((Bytes::new(), at, Duration::ZERO));
                    }
                }
                Event::Error(code @ (error::MEMORY_LOW | error::MODEM_TIMEOUT)) => {
                    tracing::warn!(
                        link = name,
                        code,
                        "the RNode reports an error: {}",
                        error::describe(code)
                    );
                    LinkCounters::add(&counters.dropped_frames, 1);
                }
                Event::Error(code) => out.push(Rx::Fault(format!(
                    "the RNode reports error {code:#04x}: {}",
                    error::describe(code)
                ))),
                Event::Channel(s) => self.channel = Some(s),
                Event::Preamble(p) if p >= 6 && p != self.phy.preamble => {
                    tracing::info!(
                        link = name,
                        preamble = p,
                        "the RNode reports its preamble; air time follows it"
                    );
                    self.phy.preamble = p;
                }
                Event::Preamble(_) | Event::Stat(_) => {}
                Event::Bad(why) => {
                    tracing::debug!(link = name, why, "rnode: frame dropped");
                    LinkCounters::add(&counters.dropped_frames, 1);
                }
            }
        }
        out
    }

    /// The link's state for status: the duty-cycle budget and the device's statistics.
    pub(crate) fn state(&self, now: Instant) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        if let Some(d) = &self.duty {
            let t = self.since(now);
            m.insert("duty_cycle_limit_pct".into(), 100.0 * d.config().fraction);
            m.insert(
                "duty_cycle_window_s".into(),
                d.config().window.as_secs_f64(),
            );
            m.insert("duty_cycle_used_s".into(), d.used(t).as_secs_f64());
            m.insert(
                "duty_cycle_remaining_s".into(),
                d.remaining(t).as_secs_f64(),
            );
            m.insert(
                "duty_cycle_used_pct".into(),
                100.0 * d.used(t).as_secs_f64() / d.config().window.as_secs_f64(),
            );
        }
        if let Some(c) = self.channel {
            m.insert("airtime_short_pct".into(), c.airtime_short);
            m.insert("airtime_long_pct".into(), c.airtime_long);
            m.insert("channel_load_short_pct".into(), c.load_short);
            m.insert("channel_load_long_pct".into(), c.load_long);
            m.insert("rssi_dbm".into(), f64::from(c.rssi_dbm));
            m.insert("noise_floor_dbm".into(), f64::from(c.noise_floor_dbm));
        }
        m.insert("queue_full".into(), self.queue_full as f64);
        m
    }
}

fn setting_name(c: u8) -> &'static str {
    match c {
        cmd::FREQUENCY => "frequency",
        cmd::BANDWIDTH => "bandwidth",
        cmd::TXPOWER => "txpower",
        cmd::SF => "sf",
        cmd::CR => "cr",
        cmd::RADIO_STATE => "radio state",
        _ => "a setting",
    }
}

async fn run(
    shared: Shared,
    mut frames: mpsc::Receiver<Bytes>,
    cfg: RnodeConfig,
) -> Result<(), Closed> {
    let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(30));
    let mut failures = 0u32;
    let mut tx = RnodeTx::new(&cfg, Instant::now());
    loop {
        let dev = match Device::open(std::path::Path::new(&cfg.device), cfg.baud) {
            Ok(d) => d,
            Err(e) => {
                if failures == 0 {
                    tracing::warn!(link = %shared.name, device = %cfg.device, error = %e, "cannot open the RNode's serial device; retrying with backoff");
                }
                failures += 1;
                wait_away(&shared, &mut frames, backoff.next_delay()).await?;
                continue;
            }
        };
        failures = 0;
        tx.open(Instant::now());
        let reason = session(&shared, &dev, &mut frames, &mut tx, &cfg, &mut backoff).await?;
        drop(dev);
        shared.down(reason).await?;
        wait_away(&shared, &mut frames, backoff.next_delay()).await?;
    }
}

/// Carries frames until the device goes away or faults; `Err` when the daemon drops the
/// handle.
async fn session(
    shared: &Shared,
    dev: &Device,
    frames: &mut mpsc::Receiver<Bytes>,
    tx: &mut RnodeTx,
    cfg: &RnodeConfig,
    backoff: &mut Backoff,
) -> Result<String, Closed> {
    let counters = &shared.counters;
    let mut buf = vec![0u8; 4096];
    loop {
        let now = Instant::now();
        if let Some(why) = tx.overdue(now) {
            return Ok(why);
        }
        tx.pump(now, counters);
        shared.set_room(tx.room(now));
        publish(counters, tx, now);
        let wake = tx.next_wake(now);
        tracing::trace!(link = %shared.name, room = tx.room(now), queued = tx.queue.len(), outstanding = tx.outstanding.is_some(), wake = ?wake.map(|w| w.saturating_duration_since(now)), "rnode: loop");
        tokio::select! {
            r = dev.read(&mut buf) => match r {
                Ok(0) => return Ok("the RNode's serial device closed".into()),
                Ok(n) => {
                    let now = Instant::now();
                    for rx in tx.receive(&shared.name, &buf[..n], now, counters) {
                        match rx {
                            Rx::Frame(f) => shared.emit(LinkEvent::Frame(f)).await?,
                            Rx::Configured => {
                                backoff.reset();
                                tracing::info!(link = %shared.name, sf = cfg.sf, bandwidth = cfg.bandwidth, "RNode configured, radio on");
                                shared.emit(LinkEvent::Up(params(cfg))).await?;
                            }
                            Rx::Fault(why) => return Ok(why),
                        }
                    }
                }
                Err(e) => return Ok(format!("read from the RNode failed: {e}")),
            },
            r = dev.write_some(&tx.out), if !tx.out.is_empty() => match r {
                Ok(n) => {
                    tx.out.drain(..n);
                }
                Err(e) => return Ok(format!("write to the RNode failed: {e}")),
            },
            f = frames.recv(), if tx.room(Instant::now()) > 0 || !tx.configured() => match f {
                Some(f) => {
                    let now = Instant::now();
                    if tx.configured() {
                        tx.offer(&shared.name, f, counters);
                    } else if !f.is_empty() {
                        // The room said 0 while configuring.
                        LinkCounters::add(&counters.dropped_frames, 1);
                    }
                    tx.pump(now, counters);
                    shared.took_frame(tx.room(now));
                }
                None => return Err(Closed),
            },
            _ = sleep_until(wake) => {}
        }
    }
}

/// Mirrors the driver's state into the link's counters for status.
fn publish(counters: &LinkCounters, tx: &RnodeTx, now: Instant) {
    if let Ok(mut s) = counters.device_state.lock() {
        *s = tx.state(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_name_the_setting() {
        let base = RnodeConfig::new("/dev/ttyUSB0", 868_100_000);
        base.check().unwrap();
        let cases: Vec<(RnodeConfig, &str)> = vec![
            (
                RnodeConfig {
                    frequency: 1000,
                    ..base.clone()
                },
                "frequency",
            ),
            (
                RnodeConfig {
                    bandwidth: 62_500,
                    ..base.clone()
                },
                "bandwidth",
            ),
            (
                RnodeConfig {
                    sf: 13,
                    ..base.clone()
                },
                "sf",
            ),
            (
                RnodeConfig {
                    cr: 4,
                    ..base.clone()
                },
                "cr",
            ),
            (
                RnodeConfig {
                    txpower: 30,
                    ..base.clone()
                },
                "txpower",
            ),
            (
                RnodeConfig {
                    mtu: 600,
                    ..base.clone()
                },
                "mtu",
            ),
            (
                RnodeConfig {
                    duty_cycle: Some(0.0),
                    ..base.clone()
                },
                "duty_cycle",
            ),
            (
                RnodeConfig {
                    baud: 1234,
                    ..base.clone()
                },
                "baud",
            ),
            // SF12 at 0.01% of an hour: 0.36 s, less than one largest frame.
            (
                RnodeConfig {
                    sf: 12,
                    duty_cycle: Some(0.0001),
                    ..base.clone()
                },
                "mtu",
            ),
        ];
        for (c, field) in cases {
            let e = c.check().unwrap_err().to_string();
            assert!(e.contains(&format!("'{field}'")), "{field}: {e}");
        }
    }

    #[test]
    fn air_time_follows_the_firmwares_packets() {
        let c = RnodeConfig {
            preamble: 8,
            sf: 7,
            ..RnodeConfig::new("/dev/x", 868_100_000)
        };
        // 9 bytes + the header byte: Semtech's 10-byte figure.
        assert_eq!(c.airtime(9), Duration::from_micros(41_216));
        // 300 bytes: a 255-byte packet and a 47-byte one.
        assert_eq!(c.airtime(300), c.phy().airtime(255) + c.phy().airtime(47));
        let p = params(&RnodeConfig::new("/dev/x", 868_100_000));
        assert_eq!(p.mtu, 254);
        assert!(p.shared);
    }
}

#[cfg(test)]
mod duty_tests {
    use super::*;

    #[test]
    fn the_room_closes_when_the_budget_is_spent_and_opens_again() {
        let cfg = RnodeConfig {
            sf: 7,
            bandwidth: 500_000,
            duty_cycle: Some(0.2),
            duty_window: Duration::from_secs(3),
            duty_guard: Duration::from_millis(200),
            ..RnodeConfig::new("/dev/x", 868_100_000)
        };
        let t0 = Instant::now();
        let mut tx = RnodeTx::new(&cfg, t0);
        let counters = LinkCounters::default();
        tx.open(t0);
        let mut answers = Vec::new();
        for (c, v) in [
            (cmd::FREQUENCY, cfg.frequency.to_be_bytes().to_vec()),
            (cmd::BANDWIDTH, cfg.bandwidth.to_be_bytes().to_vec()),
            (cmd::TXPOWER, vec![14]),
            (cmd::SF, vec![7]),
            (cmd::CR, vec![5]),
            (cmd::RADIO_STATE, vec![1]),
        ] {
            wire::command(c, &v, &mut answers);
        }
        assert_eq!(tx.receive("t", &answers, t0, &counters), [Rx::Configured]);
        tx.out.clear();
        let air = tx.airtime(254);
        let mut t = t0;
        let mut sent = 0;
        while tx.room(t) > 0 {
            tx.offer("t", Bytes::from(vec![1u8; 254]), &counters);
            tx.pump(t, &counters);
            assert!(!tx.out.is_empty());
            tx.out.clear();
            t += air;
            let mut ready = Vec::new();
            wire::command(cmd::READY, &[1], &mut ready);
            tx.receive("t", &ready, t + Duration::from_millis(20), &counters);
            sent += 1;
            assert!(sent < 100);
        }
        assert_eq!(sent as u32, 600 / air.as_millis() as u32);
        let open = tx.next_wake(t).expect("a wake-up for the budget");
        assert!(open > t && tx.room(open) > 0, "{:?}", open - t);
    }
}
