//! `ardop`: an ARDOP HF modem (ardopcf) over its TCP host interface.
//!
//! ardopcf listens on a command port (CR-terminated ASCII) and, one above it, a data
//! port (length-prefixed messages, [`host`]). Skywave frames travel on the data port in
//! the stream framing (COBS and a CRC-16, as on a serial line): ARQ hands the far host
//! bytes in order but cut where its own frames end, and FEC frames can arrive damaged.
//!
//! Two modes:
//! - **ARQ** (point to point, the default): the modem listens for calls to the station's
//!   callsign; with `call` set it calls that station (`ARQCALL`), again after a failed
//!   call with doubling delays, and again `redial` after a session it closed for being
//!   idle. The link is up while a session is connected; ardopcf takes turns on the
//!   channel itself (half duplex, its automatic BREAK).
//! - **FEC** (one to many): frames are sent as FEC broadcasts (`FECSEND`); the link is
//!   up while the modem's host interface is.
//!
//! What the modem may be handed is governed by [`ModemCredit`] from the `BUFFER n`
//! reports ardopcf sends after every host write and every acknowledged frame: at most
//! `buffer` bytes (20,000 at most, far below the 100,000 ardopcf silently discards
//! beyond). Nothing is handed to it, and no call made, before it has answered its setup
//! (its `INITIALIZE` and `PURGEBUFFER` discard what it holds) or while it reports
//! `BUSY TRUE`.
//! The rate its buffer drains at becomes the link's rate. An ARQ session in which
//! nothing moves while something waits to (see [`watch`]: two modems once stayed
//! connected for minutes, one in `IRS` and the other in `IRStoISS`) is reset with why:
//! `DISCONNECT`, then `ABORT`, then a call after the backoff (spread at random); the
//! protocol resends what the modem held. A modem that stops answering on its command
//! port is dropped and reconnected with backoff.
//!
//! ARDOP is an amateur-radio mode: the station's callsign (`MYCALL`) is required, and
//! nothing is encrypted (the daemon runs its secure channel only on IP links). ardopcf
//! identifies the station itself (its ID frames).

pub mod fake;
pub mod host;
mod watch;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Deserialize;
use skywave_node::credit::ModemCredit;
use skywave_node::framing;
use skywave_node::pacer::Pacer;
use skywave_proto::LinkParams;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::kiss::ax25::Callsign;
use crate::link::{
    Backoff, Closed, MIN_ROOM, RateTold, Shared, accept_frame, random_seed, sleep_until, wait_away,
};
use crate::stream::TICK;
use crate::{Error, LinkCounters, LinkEvent, LinkHandle};
use host::{Data, Notice};
use watch::{CLOSE_WAIT, Jitter, Watch};

/// Most bytes ever let wait in the modem: ardopcf discards beyond 100,000.
pub const MAX_BUFFER: usize = 20_000;

/// `[[link]] type = "ardop"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArdopConfig {
    /// ardopcf's command port, `HOST:PORT` (its data port is the next one up).
    #[serde(default = "default_modem")]
    pub modem: String,
    /// This station's callsign (`MYCALL`): required.
    #[serde(default)]
    pub callsign: Option<String>,
    /// ARDOP is an amateur-radio mode: `true` or unset.
    #[serde(default = "yes")]
    pub amateur: bool,
    /// `arq` (a session with one station) or `fec` (broadcast to every station).
    #[serde(default)]
    pub mode: ArdopMode,
    /// ARQ: the station to call. Unset: wait for calls.
    #[serde(default)]
    pub call: Option<String>,
    /// ARQ: answer calls to this station.
    #[serde(default = "yes")]
    pub listen: bool,
    /// ARQ: connect requests per call (`ARQCALL target N`, 2-15).
    #[serde(default = "default_repeats")]
    pub call_repeats: u8,
    /// ARQ: the session bandwidth (`ARQBW`), e.g. "2000MAX" or "500FORCE".
    #[serde(default = "default_arqbw")]
    pub arq_bandwidth: String,
    /// ARQ: seconds an idle session lasts in the modem (`ARQTIMEOUT`, 30-240).
    #[serde(default = "default_arq_timeout")]
    pub arq_timeout: u32,
    /// ARQ: close a session that carried nothing for this long.
    #[serde(default = "default_idle", deserialize_with = "crate::de::duration")]
    pub idle_timeout: Duration,
    /// ARQ: call again this long after closing an idle session, and at most this long
    /// after a failed call (the delays double from 10 s up to it).
    #[serde(default = "default_redial", deserialize_with = "crate::de::duration")]
    pub redial: Duration,
    /// FEC: the frame type (`FECMODE`) and repeats (`FECREPEATS`).
    #[serde(default = "default_fec_mode")]
    pub fec_mode: String,
    #[serde(default)]
    pub fec_repeats: u8,
    /// The busy detector's threshold (`BUSYDET`, 0 to 10; 0 turns it off). Unset: the
    /// modem's own.
    #[serde(default)]
    pub busy_detect: Option<u8>,
    /// Most bytes let wait in the modem's transmit buffer (at most 20,000). Unset: 2,048,
    /// enough for its largest frames at ARDOP's rates, and little to wait behind.
    #[serde(default)]
    pub buffer: Option<usize>,
    /// Largest skywave frame.
    #[serde(default = "default_mtu")]
    pub mtu: usize,
    /// The channel's rate in bit/s until one is measured.
    #[serde(default)]
    pub rate: Option<u64>,
    /// ARQ: ask for the turn (`BREAK`) when our bytes have waited this long while the
    /// far station sends: ardopcf gives the turn on its own only when the sender runs
    /// out of data, and the far station waits for our answers (acknowledgements).
    /// Unset: never (a sync both ways takes turns well without it).
    #[serde(default, deserialize_with = "crate::de::opt_duration")]
    pub turn: Option<Duration>,
    /// ARQ: the most a session may stand still (nothing moving while something waits)
    /// before it is reset; the session's own figures usually reset it sooner (see
    /// [`watch`]). FEC: the link is down while the buffer does not drain for this long.
    #[serde(default = "default_stall", deserialize_with = "crate::de::duration")]
    pub stall_timeout: Duration,
    /// Reconnect when the command port says nothing for this long (it is asked for
    /// its state every few seconds).
    #[serde(default = "default_watchdog", deserialize_with = "crate::de::duration")]
    pub watchdog: Duration,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArdopMode {
    #[default]
    Arq,
    Fec,
}

fn default_modem() -> String {
    "127.0.0.1:8515".into()
}
fn yes() -> bool {
    true
}
fn default_repeats() -> u8 {
    5
}
fn default_arqbw() -> String {
    "2000MAX".into()
}
fn default_arq_timeout() -> u32 {
    120
}
fn default_idle() -> Duration {
    Duration::from_secs(120)
}
fn default_redial() -> Duration {
    Duration::from_secs(300)
}
fn default_fec_mode() -> String {
    "4FSK.500.100S".into()
}
fn default_mtu() -> usize {
    512
}
fn default_stall() -> Duration {
    Duration::from_secs(300)
}
fn default_watchdog() -> Duration {
    Duration::from_secs(30)
}

/// The least delay between failed calls.
const REDIAL_MIN: Duration = Duration::from_secs(10);

/// How often the modem is asked for its state (the watchdog's probe).
const POLL: Duration = Duration::from_secs(5);

/// Status lines for the daemon at most this often (besides changes of state).
const STATUS_EVERY: Duration = Duration::from_secs(2);

impl ArdopConfig {
    pub fn new(modem: impl Into<String>, callsign: &str) -> ArdopConfig {
        ArdopConfig {
            modem: modem.into(),
            callsign: Some(callsign.into()),
            amateur: true,
            mode: ArdopMode::Arq,
            call: None,
            listen: true,
            call_repeats: default_repeats(),
            arq_bandwidth: default_arqbw(),
            arq_timeout: default_arq_timeout(),
            idle_timeout: default_idle(),
            redial: default_redial(),
            fec_mode: default_fec_mode(),
            fec_repeats: 0,
            busy_detect: None,
            buffer: None,
            mtu: default_mtu(),
            rate: None,
            turn: None,
            stall_timeout: default_stall(),
            watchdog: default_watchdog(),
            name: None,
        }
    }

    /// Bytes let wait in the modem.
    pub fn buffer(&self) -> usize {
        self.buffer.unwrap_or(2048)
    }

    /// The rate assumed until one is measured, bit/s: ARQ at 2000 Hz ran at about 650
    /// on a clean channel; FEC 4FSK.500.100S carries about 90.
    pub fn rate(&self) -> u64 {
        self.rate.unwrap_or(match self.mode {
            ArdopMode::Arq => 650,
            ArdopMode::Fec => 90,
        })
    }

    /// Checks every setting; returns the station's callsign.
    pub fn check(&self) -> Result<Callsign, Error> {
        let invalid = |field: &str, value: String, expected: &str| Error::Invalid {
            field: field.into(),
            value,
            expected: expected.into(),
        };
        let Some(call) = &self.callsign else {
            return Err(invalid(
                "callsign",
                "(not set)".into(),
                "this station's licensed callsign (e.g. \"N0CALL-7\"): ARDOP is amateur radio, and ardopcf needs it (MYCALL) to identify the station and to take calls",
            ));
        };
        if !self.amateur {
            return Err(invalid(
                "amateur",
                "false".into(),
                "true or unset: ARDOP runs on amateur bands, under their rules (callsign, no encryption)",
            ));
        }
        let me = Callsign::parse(call).map_err(|e| invalid("callsign", call.clone(), &e))?;
        if let Some(c) = &self.call {
            Callsign::parse(c).map_err(|e| invalid("call", c.clone(), &e))?;
            if self.mode == ArdopMode::Fec {
                return Err(invalid(
                    "call",
                    c.clone(),
                    "unset with mode = \"fec\" (a broadcast calls no one)",
                ));
            }
        }
        if !(2..=15).contains(&self.call_repeats) {
            return Err(invalid(
                "call_repeats",
                self.call_repeats.to_string(),
                "2 to 15 connect requests per call",
            ));
        }
        if !(30..=240).contains(&self.arq_timeout) {
            return Err(invalid(
                "arq_timeout",
                self.arq_timeout.to_string(),
                "30 to 240 seconds (ardopcf's ARQTIMEOUT)",
            ));
        }
        let word =
            |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.');
        if !word(&self.arq_bandwidth) {
            return Err(invalid(
                "arq_bandwidth",
                self.arq_bandwidth.clone(),
                "an ARQBW value such as \"2000MAX\" or \"500FORCE\"",
            ));
        }
        if !word(&self.fec_mode) {
            return Err(invalid(
                "fec_mode",
                self.fec_mode.clone(),
                "an ardopcf FEC frame type such as \"4FSK.500.100S\"",
            ));
        }
        if self.fec_repeats > 5 {
            return Err(invalid(
                "fec_repeats",
                self.fec_repeats.to_string(),
                "0 to 5",
            ));
        }
        if let Some(b) = self.busy_detect
            && b > 10
        {
            return Err(invalid("busy_detect", b.to_string(), "0 (off) to 10"));
        }
        if !(skywave_proto::wire::MIN_FRAME..=framing::MAX_FRAME.min(4000)).contains(&self.mtu) {
            return Err(invalid("mtu", self.mtu.to_string(), "48 to 4000 bytes"));
        }
        let wire = self.mtu + framing::overhead(self.mtu);
        if !(wire..=MAX_BUFFER).contains(&self.buffer()) {
            return Err(invalid(
                "buffer",
                self.buffer().to_string(),
                &format!(
                    "{wire} (one largest frame) to {MAX_BUFFER} bytes: ardopcf silently discards beyond 100,000, and what waits there delays every answer"
                ),
            ));
        }
        if !(10..=100_000).contains(&self.rate()) {
            return Err(invalid(
                "rate",
                self.rate().to_string(),
                "the channel's rate in bit/s, 10 to 100000",
            ));
        }
        if let Some(turn) = self.turn
            && turn < Duration::from_secs(2)
        {
            return Err(invalid(
                "turn",
                format!("{turn:?}"),
                "at least 2s (a BREAK and the change of turn take seconds)",
            ));
        }
        if self.watchdog < Duration::from_secs(10) {
            return Err(invalid(
                "watchdog",
                format!("{:?}", self.watchdog),
                "at least 10s (ardopcf may say nothing while it sends a long frame)",
            ));
        }
        self.ports()?;
        Ok(me)
    }

    /// The command and data ports' addresses.
    pub fn ports(&self) -> Result<(String, String), Error> {
        let bad = || {
            Error::Invalid {
            field: "modem".into(),
            value: self.modem.clone(),
            expected: "ardopcf's command port as HOST:PORT (e.g. 127.0.0.1:8515; the data port is the next one)".into(),
        }
        };
        let (h, p) = self.modem.rsplit_once(':').ok_or_else(bad)?;
        let p: u16 = p.parse().map_err(|_| bad())?;
        if h.is_empty() || p == u16::MAX {
            return Err(bad());
        }
        Ok((format!("{h}:{p}"), format!("{h}:{}", p + 1)))
    }

    /// The commands that set the modem up when the link connects.
    pub fn setup_commands(&self, me: &Callsign) -> Vec<String> {
        let mut c = vec![
            "INITIALIZE".to_string(),
            format!("MYCALL {me}"),
            format!(
                "PROTOCOLMODE {}",
                match self.mode {
                    ArdopMode::Arq => "ARQ",
                    ArdopMode::Fec => "FEC",
                }
            ),
        ];
        if let Some(b) = self.busy_detect {
            c.push(format!("BUSYDET {b}"));
        }
        match self.mode {
            ArdopMode::Arq => {
                c.push(format!("ARQBW {}", self.arq_bandwidth));
                c.push(format!("ARQTIMEOUT {}", self.arq_timeout));
                c.push(format!(
                    "LISTEN {}",
                    if self.listen { "TRUE" } else { "FALSE" }
                ));
            }
            ArdopMode::Fec => {
                c.push(format!("FECMODE {}", self.fec_mode));
                c.push(format!("FECREPEATS {}", self.fec_repeats));
                c.push("LISTEN FALSE".into());
            }
        }
        // Bytes a previous host left are not ours to send.
        c.push("PURGEBUFFER".into());
        c.push("STATE".into());
        c
    }
}

/// What the protocol is told about an ARDOP link before its rate is measured.
pub fn params(cfg: &ArdopConfig) -> LinkParams {
    let rate = cfg.rate();
    let bytes_per_s = rate as f64 / 8.0;
    let (shared, rtt) = match cfg.mode {
        // An ARQ cycle (data frame, ACK, turnarounds) is about 6 s; a turn each way and
        // what waits in the buffer make a round trip.
        ArdopMode::Arq => (false, Duration::from_secs(14)),
        ArdopMode::Fec => (true, Duration::from_secs(40)),
    };
    LinkParams {
        mtu: cfg.mtu,
        shared,
        paced: false,
        // ardopcf takes turns itself (ARQ), or transmits only what it is given (FEC).
        half_duplex: false,
        rate_bps: Some(rate),
        rtt_hint: rtt + Duration::from_secs_f64(cfg.buffer() as f64 / bytes_per_s),
        loss_hint: 0.0,
        discover_mtu: false,
        frame_overhead: framing::overhead(cfg.mtu),
        handoff: Duration::from_secs(1),
        duty: None,
        // An ARQ session repeats each frame until it is acknowledged, or ends.
        reliable: cfg.mode == ArdopMode::Arq,
        turns: None,
    }
}

pub fn spawn(cfg: ArdopConfig) -> Result<LinkHandle, Error> {
    let me = cfg.check()?;
    let name = cfg
        .name
        .clone()
        .unwrap_or_else(|| format!("ardop:{}", cfg.modem));
    tracing::info!(link = %name, callsign = %me, mode = ?cfg.mode, call = ?cfg.call, "ardop link configured");
    let (shared, handle, frames) = Shared::new(name);
    tokio::spawn(async move {
        let _ = run(shared, frames, cfg, me).await;
    });
    Ok(handle)
}

/// Where the ARQ session stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Phase {
    /// Waiting for a call (or, with `call` set, for the time to call).
    Waiting,
    /// A call is under way, since then.
    Calling(Instant),
    /// Connected to `peer`.
    Connected { peer: String, bandwidth: u32 },
    /// We asked the modem to end the session (idle, stalled): why, since when (or since
    /// the `ABORT` that followed), and whether to call again soon (a reset) or only
    /// `redial` later (an idle session).
    Closing {
        why: String,
        since: Instant,
        aborted: bool,
        soon: bool,
    },
    /// FEC: broadcasting.
    Broadcast,
}

/// What a change in the modem means for the link.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Change {
    Up,
    /// Down, with why (not a failure of the modem: waiting, calling, a session ended).
    Down(String),
}

/// The driver's state between ardopcf and the daemon, time passed in.
#[derive(Debug)]
pub(crate) struct Modem {
    pub credit: ModemCredit<Instant>,
    me: String,
    call: Option<String>,
    repeats: u8,
    mode: ArdopMode,
    mtu: usize,
    idle_timeout: Duration,
    redial: Duration,
    pub phase: Phase,
    /// When to call next (ARQ with `call`).
    next_call: Instant,
    backoff: Backoff,
    /// The frame waiting for room.
    queue: Option<Bytes>,
    turn: Option<Duration>,
    /// Since when our bytes have waited in the modem while it receives, and when the
    /// turn was last asked for.
    waiting_since: Option<Instant>,
    last_break: Option<Instant>,
    /// A write not yet followed by a `BUFFER` report, since then: the next waits for one.
    unreported: Option<Instant>,
    /// The session's last bytes written to the data port, as many as the modem may hold:
    /// what ardopcf discards when the far station breaks in is written again from here,
    /// so the link delivers every byte in order while the session lasts.
    recent: VecDeque<u8>,
    recent_cap: usize,
    /// When the last line read was `BUFFER 0`: the bytes held before it.
    zeroed_from: Option<usize>,
    /// Bytes written again after a break-in discarded them.
    pub restored: u64,
    pub cmd_out: Vec<u8>,
    pub data_out: Vec<u8>,
    lines: host::LineReader,
    data: host::DataReader,
    deframer: framing::Deframer,
    skipped: u64,
    bad: u64,
    /// The modem has answered its setup (the `STATE` that ends it): a call waits for it,
    /// so that a busy channel it reports first is heeded, and so do writes, which the
    /// setup's `INITIALIZE` and `PURGEBUFFER` would discard.
    ready: bool,
    /// The modem's last words on itself.
    pub state: String,
    pub busy: bool,
    pub buffer: usize,
    /// The largest `BUFFER` ever reported.
    pub max_buffer: usize,
    /// Last frame in or out (the session's idleness), and last frame in.
    last_traffic: Instant,
    last_rx: Instant,
    /// Last line from the command port, and the last state query.
    last_heard: Instant,
    last_poll: Instant,
    /// FEC: a send was asked for and the modem has not yet started.
    fec_asked: Option<Instant>,
    /// The rate last told to the protocol.
    told: RateTold,
    base: LinkParams,
    status_sent: Option<(String, Instant)>,
    /// Since when the modem has been in its `state`.
    state_since: Instant,
    /// The connected session's progress watchdog, and its ceiling (`stall_timeout`).
    pub(crate) watch: Watch,
    stall_timeout: Duration,
    /// Spreads the delays before calling again, so that two stations do not call in
    /// step.
    jitter: Jitter,
}

impl Modem {
    pub(crate) fn new(cfg: &ArdopConfig, me: &Callsign, now: Instant) -> Modem {
        let rate = cfg.rate() as f64 / 8.0;
        // BUFFER reports come unasked and one may be read after a write it does not
        // count (it was sent as an earlier frame was acknowledged). One write at a time
        // waits for a report, and the credit keeps a largest write below the cap: the
        // modem never holds more than `buffer`.
        let wire = cfg.mtu + framing::overhead(cfg.mtu) + 2;
        let limit = cfg.buffer().saturating_sub(wire).max(wire);
        Modem {
            credit: ModemCredit::new(Pacer::full(now, rate, 2, limit)),
            me: me.to_string(),
            call: cfg.call.clone(),
            repeats: cfg.call_repeats,
            mode: cfg.mode,
            mtu: cfg.mtu,
            idle_timeout: cfg.idle_timeout,
            redial: cfg.redial,
            phase: Phase::Waiting,
            next_call: now,
            backoff: Backoff::new(REDIAL_MIN, cfg.redial.max(REDIAL_MIN)),
            queue: None,
            turn: cfg.turn,
            waiting_since: None,
            last_break: None,
            unreported: None,
            recent: VecDeque::new(),
            recent_cap: cfg.buffer() + wire,
            zeroed_from: None,
            restored: 0,
            cmd_out: Vec::new(),
            data_out: Vec::new(),
            lines: host::LineReader::default(),
            data: host::DataReader::default(),
            deframer: framing::Deframer::new(),
            skipped: 0,
            bad: 0,
            ready: false,
            state: "unknown".into(),
            busy: false,
            buffer: 0,
            max_buffer: 0,
            last_traffic: now,
            last_rx: now,
            last_heard: now,
            last_poll: now,
            fec_asked: None,
            told: RateTold::default(),
            base: params(cfg),
            status_sent: None,
            state_since: now,
            watch: Watch::default(),
            stall_timeout: cfg.stall_timeout,
            jitter: Jitter::new(random_seed()),
        }
    }

    /// A new connection to the modem: set it up, forget what the last one knew.
    pub(crate) fn reset(&mut self, now: Instant, cfg: &ArdopConfig, me: &Callsign) {
        self.credit.reset(now);
        self.cmd_out.clear();
        self.data_out.clear();
        for c in cfg.setup_commands(me) {
            host::command(&c, &mut self.cmd_out);
        }
        self.lines = host::LineReader::default();
        self.data.reset();
        self.deframer.reset();
        self.recent.clear();
        self.zeroed_from = None;
        self.skipped = 0;
        self.bad = 0;
        self.busy = false;
        self.buffer = 0;
        self.unreported = None;
        self.ready = false;
        self.state = "unknown".into();
        self.state_since = now;
        self.watch.waiting(now, false);
        self.phase = match self.mode {
            ArdopMode::Arq => Phase::Waiting,
            ArdopMode::Fec => Phase::Broadcast,
        };
        self.last_heard = now;
        self.last_poll = now;
        self.fec_asked = None;
    }

    pub(crate) fn carrying(&self) -> bool {
        matches!(self.phase, Phase::Connected { .. } | Phase::Broadcast)
    }

    /// Frame bytes the daemon may send now.
    pub(crate) fn room(&mut self, now: Instant) -> usize {
        if self.queue.is_some() || !self.carrying() || !self.ready {
            return 0;
        }
        let r = self.credit.room(now);
        let r = r.saturating_sub(framing::overhead(r) + 2).min(self.mtu);
        if r < MIN_ROOM.min(self.mtu) { 0 } else { r }
    }

    pub(crate) fn offer(&mut self, name: &str, f: Bytes, now: Instant, counters: &LinkCounters) {
        let room = self.room(now);
        self.queue = accept_frame(name, f, self.mtu, room, counters);
    }

    /// Queues what may go to the modem now: the waiting frame when there is room, a call
    /// when one is due, a state query (the watchdog's probe).
    pub(crate) fn pump(&mut self, now: Instant, counters: &LinkCounters) {
        if now >= self.last_poll + POLL {
            host::command("STATE", &mut self.cmd_out);
            self.last_poll = now;
        }
        if self.call_due().is_some_and(|t| now >= t)
            && let Some(target) = &self.call
        {
            host::command(
                &format!("ARQCALL {target} {}", self.repeats),
                &mut self.cmd_out,
            );
            self.phase = Phase::Calling(now);
        }
        // Our bytes wait while the far station holds the turn: ask for it now and then.
        let receiving =
            matches!(self.phase, Phase::Connected { .. }) && self.state == "IRS" && self.buffer > 0;
        if receiving && self.turn.is_some() {
            self.waiting_since.get_or_insert(now);
            if self.break_due().is_some_and(|t| now >= t) {
                host::command("BREAK", &mut self.cmd_out);
                self.last_break = Some(now);
            }
        } else {
            self.waiting_since = None;
        }
        // (A report lost for good must not hold the link: after a while the credit's
        // own figure is trusted.)
        let reported = self
            .unreported
            .is_none_or(|t| now >= t + Duration::from_secs(10));
        if self.carrying()
            && self.ready
            && reported
            && let Some(f) = &self.queue
        {
            let flen = f.len();
            let mut wire = Vec::with_capacity(flen + framing::overhead(flen));
            framing::encode(f, &mut wire);
            if wire.len() <= self.credit.room(now) {
                self.queue = None;
                host::encode_data(&wire, &mut self.data_out);
                self.credit.wrote(now, wire.len());
                self.recent.extend(&wire);
                let over = self.recent.len().saturating_sub(self.recent_cap);
                self.recent.drain(..over);
                self.unreported = Some(now);
                self.last_traffic = now;
                LinkCounters::add(&counters.frames_out, 1);
                LinkCounters::add(&counters.bytes_out, flen as u64);
            }
        }
    }

    /// Writes the newest `n` bytes written again.
    fn write_again(&mut self, n: usize, now: Instant, name: &str) {
        let kept = self.recent.len();
        if kept < n {
            tracing::warn!(
                link = name,
                purged = n,
                kept,
                "ardopcf discarded more than the driver wrote (a write it had not counted?): the protocol fetches what is missing"
            );
        }
        let tail: Vec<u8> = self
            .recent
            .iter()
            .skip(kept.saturating_sub(n))
            .copied()
            .collect();
        // (After any bytes still on the host, which may be half written: one write at a
        // time waits for its report, so there are almost never any.)
        for chunk in tail.chunks(host::MAX_DATA_WRITE) {
            host::encode_data(chunk, &mut self.data_out);
        }
        self.credit.wrote(now, tail.len());
        self.unreported = Some(now);
        self.restored += tail.len() as u64;
        tracing::debug!(
            link = name,
            bytes = tail.len(),
            "the far station broke in: ardopcf discarded our bytes; written again"
        );
    }

    /// Command-port bytes: what changed for the link.
    pub(crate) fn command_bytes(
        &mut self,
        data: &[u8],
        now: Instant,
        name: &str,
        counters: &LinkCounters,
    ) -> Vec<Change> {
        let mut out = Vec::new();
        for n in self.lines.push(data) {
            tracing::trace!(link = name, notice = ?n, "ardopcf");
            if !matches!(n, Notice::Garbage(_)) {
                self.last_heard = now;
            }
            let zeroed = matches!(n, Notice::Buffer(0)).then_some(self.buffer);
            if let Some(c) = self.notice(n, now, name, counters) {
                out.push(c);
            }
            self.zeroed_from = zeroed;
        }
        out
    }

    fn notice(
        &mut self,
        n: Notice,
        now: Instant,
        name: &str,
        counters: &LinkCounters,
    ) -> Option<Change> {
        match n {
            Notice::Buffer(b) => {
                // Bytes acknowledged by the far station: the session moves.
                if b < self.buffer && matches!(self.phase, Phase::Connected { .. }) {
                    self.watch.moved(now);
                }
                self.buffer = b;
                self.unreported = None;
                self.max_buffer = self.max_buffer.max(b);
                self.credit.reported_queued(now, b);
                if self.mode == ArdopMode::Fec
                    && b > 0
                    && self.fec_asked.is_none()
                    && self.state != "FECSEND"
                {
                    // The data is in its buffer now (a FECSEND before it would send nothing).
                    host::command("FECSEND TRUE", &mut self.cmd_out);
                    self.fec_asked = Some(now);
                }
                None
            }
            Notice::Busy(b) => {
                self.set_busy(b);
                None
            }
            Notice::StateAnswer(s) => {
                // (The setup ends with `STATE`: all of it was handled.)
                self.ready = true;
                self.new_state(s, now)
            }
            Notice::State(s) => self.new_state(s, now),
            Notice::Ptt(_) | Notice::Other(_) => None,
            Notice::BrokenIn => {
                // ardopcf reports every change of its buffer, at once and in order: the
                // `BUFFER 0` its purge sent is the line just read, and the figure before
                // it is what was purged, the newest bytes written, none of them received.
                let purged = self.zeroed_from.unwrap_or(0);
                if purged > 0 && matches!(self.phase, Phase::Connected { .. }) {
                    self.write_again(purged, now, name);
                }
                None
            }
            Notice::Fault(f) => {
                tracing::warn!(link = name, fault = %f, "ardopcf refused a command");
                None
            }
            Notice::Garbage(len) => {
                tracing::debug!(link = name, len, "ardop: garbage on the command port");
                LinkCounters::add(&counters.garbage_bytes, len as u64);
                None
            }
            Notice::Connected { call, bandwidth } => {
                if self.mode != ArdopMode::Arq {
                    return None;
                }
                self.backoff.reset();
                self.set_busy(false);
                self.last_traffic = now;
                self.last_rx = now;
                self.deframer.reset();
                self.recent.clear();
                self.phase = Phase::Connected {
                    peer: call,
                    bandwidth,
                };
                Some(Change::Up)
            }
            Notice::Disconnected => self.ended(now),
            Notice::CallFailed(text) => {
                if !matches!(self.phase, Phase::Calling(_)) {
                    return None;
                }
                self.phase = Phase::Waiting;
                self.next_call = now + self.call_delay();
                Some(Change::Down(
                    self.waiting_reason(&format!("the call failed ({text})"), now),
                ))
            }
        }
    }

    /// The modem's protocol state, told or asked for.
    fn new_state(&mut self, s: String, now: Instant) -> Option<Change> {
        if s == "FECSEND" || s == "DISC" {
            self.fec_asked = None;
        }
        if s != self.state {
            self.state_since = now;
        }
        let disc = s == "DISC";
        self.state = s;
        // ardopcf reports the channel busy or clear only while in DISC: a session takes
        // turns itself, and no BUSY FALSE ends one reported as the call came in.
        if !matches!(
            self.state.as_str(),
            "DISC" | "FECSEND" | "FECRCV" | "OFFLINE"
        ) {
            self.set_busy(false);
        }
        // After `ABORT` ardopcf goes to DISC without a DISCONNECTED.
        if disc && matches!(self.phase, Phase::Connected { .. } | Phase::Closing { .. }) {
            return self.ended(now);
        }
        None
    }

    /// The ARQ session (or the call) ended: `DISCONNECTED`, or DISC after `ABORT`.
    fn ended(&mut self, now: Instant) -> Option<Change> {
        if self.mode != ArdopMode::Arq {
            return None;
        }
        let why = match std::mem::replace(&mut self.phase, Phase::Waiting) {
            Phase::Closing { why, soon, .. } => {
                self.next_call = now + if soon { self.call_delay() } else { self.redial };
                why
            }
            Phase::Connected { peer, .. } => {
                self.next_call = now + self.call_delay();
                format!("the ARQ session with {peer} ended")
            }
            Phase::Calling(_) => {
                self.next_call = now + self.call_delay();
                "the call failed".into()
            }
            other => {
                self.phase = other;
                return None;
            }
        };
        self.watch.waiting(now, false);
        // What the modem still holds would go to the next station that connects (the
        // protocol resends what was not acknowledged; a frame still waiting here for
        // room is kept and goes first in the next session).
        host::command("PURGEBUFFER", &mut self.cmd_out);
        self.credit.reset(now);
        Some(Change::Down(self.waiting_reason(&why, now)))
    }

    /// The delay before the next call: the backoff's, spread at random (both stations
    /// may call each other).
    fn call_delay(&mut self) -> Duration {
        let d = self.backoff.next_delay();
        self.jitter.spread(d)
    }

    /// One modem frame's time at the measured (or configured) rate.
    fn frame_time(&self) -> Duration {
        let wire = (self.mtu + framing::overhead(self.mtu) + 2) as f64;
        let rate = self
            .credit
            .measured_rate()
            .filter(|r| *r > 0.0)
            .unwrap_or_else(|| self.base.rate_bps.unwrap_or(650) as f64 / 8.0)
            .max(1.0);
        Duration::from_secs_f64(wire / rate)
    }

    /// How long a connected session may stand still before it is reset.
    pub(crate) fn stall_limit(&self) -> Duration {
        self.watch.limit(self.frame_time(), self.stall_timeout)
    }

    /// The progress watchdog: a connected session in which something waits to move
    /// (bytes in the modem, a frame waiting for room, the modem asking for the turn)
    /// and nothing has moved for [`Modem::stall_limit`] is ended; why, if it was now.
    pub(crate) fn stall_check(&mut self, now: Instant) -> Option<String> {
        let Phase::Connected { peer, .. } = &self.phase else {
            self.watch.waiting(now, false);
            return None;
        };
        let waiting = self.buffer > 0 || self.queue.is_some() || self.state == "IRStoISS";
        self.watch.waiting(now, waiting);
        let limit = self.stall_limit();
        let still = self.watch.stalled(now, limit)?;
        let since = self.watch.since().unwrap_or(now);
        let state = if self.state_since <= since {
            format!("state {} for {:.0} s", self.state, still.as_secs_f64())
        } else {
            format!("state now {}, for {:.0} s", self.state, still.as_secs_f64())
        };
        let typical = match self.watch.typical() {
            Some(t) => format!("the session's typical wait {:.1} s", t.as_secs_f64()),
            None => format!("one frame's time {:.1} s", self.frame_time().as_secs_f64()),
        };
        let why = format!(
            "ardopcf session with {peer} stalled: {state} with nothing moving (BUFFER not draining at {} B, nothing received; limit {:.0} s from {typical}); reset",
            self.buffer,
            limit.as_secs_f64(),
        );
        self.watch.resets += 1;
        self.close(why.clone(), true, now);
        Some(why)
    }

    /// A session asked to close that does not: `ABORT` after [`CLOSE_WAIT`]; if even that
    /// does not end it, why the host interface is to be reconnected.
    pub(crate) fn closing_check(&mut self, now: Instant) -> Option<String> {
        let wait = CLOSE_WAIT.min(self.stall_limit());
        let Phase::Closing { since, aborted, .. } = &mut self.phase else {
            return None;
        };
        if now < *since + wait {
            return None;
        }
        if *aborted {
            return Some(format!(
                "ardopcf stayed in its ARQ session (state {}) {:.0} s after DISCONNECT and ABORT: reconnecting its host interface",
                self.state,
                wait.as_secs_f64()
            ));
        }
        *aborted = true;
        *since = now;
        host::command("ABORT", &mut self.cmd_out);
        None
    }

    /// The channel is busy (or clear): no call and nothing written meanwhile.
    fn set_busy(&mut self, busy: bool) {
        self.busy = busy;
        self.credit.set_busy(busy);
    }

    /// Why the link is down while no session is connected.
    pub(crate) fn waiting_reason(&self, why: &str, now: Instant) -> String {
        let prefix = if why.is_empty() {
            String::new()
        } else {
            format!("{why}; ")
        };
        match &self.call {
            Some(c) => format!(
                "{prefix}calling {c} in {:.0} s (ardopcf, MYCALL {}{})",
                self.next_call.saturating_duration_since(now).as_secs_f64(),
                self.me,
                if self.busy { ", channel busy" } else { "" }
            ),
            None => format!("{prefix}listening for a call to {} (ardopcf)", self.me),
        }
    }

    /// Data-port bytes: the whole, checked frames they completed.
    pub(crate) fn data_bytes(
        &mut self,
        data: &[u8],
        now: Instant,
        counters: &LinkCounters,
    ) -> Vec<Bytes> {
        let mut frames = Vec::new();
        for d in self.data.push(data) {
            let body = match (d, self.mode) {
                (Data::Arq(b), ArdopMode::Arq) => {
                    if !b.is_empty() && matches!(self.phase, Phase::Connected { .. }) {
                        self.watch.moved(now);
                    }
                    b
                }
                (Data::Fec(b), ArdopMode::Fec) => b,
                (Data::Id(_), _) => continue,
                (Data::Err(b), _) => {
                    LinkCounters::add(&counters.dropped_frames, 1);
                    LinkCounters::add(&counters.garbage_bytes, b.len() as u64);
                    continue;
                }
                (Data::Garbage(n), _) => {
                    LinkCounters::add(&counters.garbage_bytes, n as u64);
                    continue;
                }
                (Data::Arq(b) | Data::Fec(b), _) => {
                    LinkCounters::add(&counters.foreign_frames, 1);
                    LinkCounters::add(&counters.dropped_frames, 1);
                    let _ = b;
                    continue;
                }
            };
            for f in self.deframer.push(&body) {
                LinkCounters::add(&counters.frames_in, 1);
                LinkCounters::add(&counters.bytes_in, f.len() as u64);
                self.last_traffic = now;
                self.last_rx = now;
                frames.push(Bytes::from(f));
            }
        }
        let d = &self.deframer;
        LinkCounters::add(&counters.garbage_bytes, d.skipped - self.skipped);
        LinkCounters::add(&counters.dropped_frames, d.bad_frames - self.bad);
        self.skipped = d.skipped;
        self.bad = d.bad_frames;
        frames
    }

    /// A session that carried nothing for the idle timeout is closed; `true` if asked now.
    pub(crate) fn idle_check(&mut self, now: Instant) -> bool {
        if let Phase::Connected { peer, .. } = &self.phase
            && now >= self.last_traffic + self.idle_timeout
            && self.queue.is_none()
            && self.buffer == 0
        {
            let why = format!(
                "closed the ARQ session with {peer} after {:.0} s without traffic",
                self.idle_timeout.as_secs_f64()
            );
            self.close(why, false, now);
            return true;
        }
        false
    }

    /// Asks the modem to end the session.
    pub(crate) fn close(&mut self, why: String, soon: bool, now: Instant) {
        host::command("DISCONNECT", &mut self.cmd_out);
        self.watch.waiting(now, false);
        self.phase = Phase::Closing {
            why,
            since: now,
            aborted: false,
            soon,
        };
    }

    /// Whether the modem has said nothing for `watchdog` though asked.
    pub(crate) fn silent(&self, now: Instant, watchdog: Duration) -> bool {
        now >= self.last_heard + watchdog && self.last_poll > self.last_heard
    }

    /// One line for the status screen, and whether it is new enough to send.
    pub(crate) fn status_line(&mut self, now: Instant) -> Option<String> {
        let who = match &self.phase {
            Phase::Connected { peer, bandwidth } => format!("connected to {peer} ({bandwidth} Hz)"),
            Phase::Calling(_) => format!("calling {}", self.call.as_deref().unwrap_or("?")),
            Phase::Closing { .. } => "disconnecting".into(),
            Phase::Broadcast => "FEC broadcast".into(),
            Phase::Waiting => "no session".into(),
        };
        let mut line = format!(
            "ardopcf {who}; state {}; BUFFER {} B (largest {}); {}",
            self.state,
            self.buffer,
            self.max_buffer,
            if self.busy {
                "BUSY (channel busy)"
            } else {
                "channel clear"
            }
        );
        if self.restored > 0 {
            line.push_str(&format!(
                "; {} B written again after break-ins discarded them",
                self.restored
            ));
        }
        if self.watch.resets > 0 {
            line.push_str(&format!("; stalled sessions reset: {}", self.watch.resets));
        }
        let due = match &self.status_sent {
            None => true,
            Some((l, at)) => {
                *l != line
                    && (now >= *at + STATUS_EVERY
                        || !l.starts_with(&line[..line.find(';').unwrap_or(0)]))
            }
        };
        if !due {
            return None;
        }
        self.status_sent = Some((line.clone(), now));
        Some(line)
    }

    /// The link's parameters with the measured rate, when it differs enough from what
    /// the protocol was last told (a fifth), at most once a minute after the first.
    pub(crate) fn rate_update(&mut self, now: Instant) -> Option<LinkParams> {
        self.told.update(self.credit.measured_rate(), now)?;
        Some(self.params())
    }

    /// The current parameters (measured rate if any).
    pub(crate) fn params(&self) -> LinkParams {
        match self.told.rate() {
            Some(r) => LinkParams {
                rate_bps: Some((r * 8.0).round().max(1.0) as u64),
                ..self.base
            },
            None => self.base,
        }
    }

    /// When the turn is next to be asked for while our bytes wait: `turn` after they
    /// began to wait and after the last `BREAK`.
    pub(crate) fn break_due(&self) -> Option<Instant> {
        let (since, turn) = (self.waiting_since?, self.turn?);
        Some(self.last_break.map_or(since, |t| since.max(t)) + turn)
    }

    /// When the next call is due, if one may be made: not before the modem has answered
    /// its setup nor while the channel is busy (what ends either wakes the session loop,
    /// which must not spin on a call time that has passed meanwhile).
    pub(crate) fn call_due(&self) -> Option<Instant> {
        (self.mode == ArdopMode::Arq
            && self.call.is_some()
            && self.phase == Phase::Waiting
            && self.ready
            && !self.busy)
            .then_some(self.next_call)
    }
}

async fn connect(cfg: &ArdopConfig) -> Result<(TcpStream, TcpStream), String> {
    let (cmd, data) = cfg.ports().map_err(|e| e.to_string())?;
    let c = TcpStream::connect(cmd.as_str())
        .await
        .map_err(|e| format!("cannot reach ardopcf's command port {cmd}: {e}"))?;
    let d = TcpStream::connect(data.as_str())
        .await
        .map_err(|e| format!("cannot reach ardopcf's data port {data}: {e}"))?;
    let _ = c.set_nodelay(true);
    let _ = d.set_nodelay(true);
    Ok((c, d))
}

async fn run(
    shared: Shared,
    mut frames: mpsc::Receiver<Bytes>,
    cfg: ArdopConfig,
    me: Callsign,
) -> Result<(), Closed> {
    let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(60));
    let mut failures = 0u32;
    let mut m = Modem::new(&cfg, &me, Instant::now());
    loop {
        let (cmd, data) = match connect(&cfg).await {
            Ok(s) => s,
            Err(e) => {
                if failures == 0 {
                    tracing::warn!(link = %shared.name, error = %e, "retrying with backoff until ardopcf answers");
                    shared
                        .down(format!(
                            "{e}: is ardopcf running there? retrying with backoff"
                        ))
                        .await?;
                }
                failures += 1;
                wait_away(&shared, &mut frames, backoff.next_delay()).await?;
                continue;
            }
        };
        failures = 0;
        m.reset(Instant::now(), &cfg, &me);
        tracing::info!(link = %shared.name, modem = %cfg.modem, "ardopcf host interface connected");
        let reason = session(&shared, &cmd, &data, &mut frames, &mut m, &cfg).await?;
        drop((cmd, data));
        if m.carrying() {
            shared.down(reason).await?;
        } else {
            tracing::warn!(link = %shared.name, %reason, "ardopcf connection lost");
            shared.emit(LinkEvent::Down { reason }).await?;
        }
        shared.set_room(0);
        m.phase = Phase::Waiting;
        wait_away(&shared, &mut frames, backoff.next_delay()).await?;
        // A connection that lasted is not a failure to back off from.
        backoff.reset();
    }
}

/// Mirrors the count of stalled sessions reset into the link's counters for status.
fn publish_resets(counters: &LinkCounters, resets: u64) {
    if let Ok(mut s) = counters.device_state.lock() {
        s.insert("session_resets".into(), resets as f64);
    }
}

/// Cancel-safe read: nothing is read unless it returns.
async fn read(s: &TcpStream, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        s.readable().await?;
        match s.try_read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

/// Cancel-safe write: nothing is written unless it returns.
async fn write_some(s: &TcpStream, data: &[u8]) -> std::io::Result<usize> {
    loop {
        s.writable().await?;
        match s.try_write(data) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

/// Carries frames until the modem's host interface goes away; `Err` when the daemon
/// drops the handle.
async fn session(
    shared: &Shared,
    cmd: &TcpStream,
    data: &TcpStream,
    frames: &mut mpsc::Receiver<Bytes>,
    m: &mut Modem,
    cfg: &ArdopConfig,
) -> Result<String, Closed> {
    let counters = &shared.counters;
    let mut cbuf = vec![0u8; 4096];
    let mut dbuf = vec![0u8; 8192];
    if m.mode == ArdopMode::Fec {
        shared.emit(LinkEvent::Up(m.params())).await?;
    } else {
        let r = m.waiting_reason("", Instant::now());
        tracing::info!(link = %shared.name, "{r}");
        shared.emit(LinkEvent::Down { reason: r }).await?;
    }
    let mut stalled_told = false;
    publish_resets(counters, m.watch.resets);
    loop {
        let now = Instant::now();
        m.pump(now, counters);
        if m.idle_check(now) {
            tracing::info!(link = %shared.name, "ARQ session idle: disconnecting");
        }
        if let Some(why) = m.stall_check(now) {
            // (Logged once, by `down`.)
            publish_resets(counters, m.watch.resets);
            shared.down(why).await?;
        }
        if let Some(why) = m.closing_check(now) {
            return Ok(why);
        }
        if m.silent(now, cfg.watchdog) {
            return Ok(format!(
                "ardopcf stopped answering on its command port (nothing for {:.0} s, though asked for its state): reconnecting",
                (now - m.last_heard).as_secs_f64()
            ));
        }
        if m.carrying() {
            if let Some(p) = m.rate_update(now) {
                tracing::info!(link = %shared.name, rate_bps = ?p.rate_bps, "ardop drain rate measured");
                shared.emit(LinkEvent::Up(p)).await?;
            }
            // FEC (an ARQ session has its progress watchdog): while frames arrive the
            // channel is someone else's; our buffer waits, and that is no stall.
            if let Some(since) = m.credit.stalled_since(now).filter(|&s| {
                m.mode == ArdopMode::Fec && now >= s.max(m.last_rx) + cfg.stall_timeout
            }) {
                let held = m.credit.held(now);
                let why = format!(
                    "ardopcf has held {held} bytes for {:.0} s without sending any (BUFFER not draining), and nothing came from another station for {:.0} s: the channel may be busy",
                    (now - since).as_secs_f64(),
                    (now - m.last_rx).as_secs_f64()
                );
                if !stalled_told {
                    stalled_told = true;
                    shared.down(why).await?;
                }
            } else if stalled_told {
                stalled_told = false;
                shared.emit(LinkEvent::Up(m.params())).await?;
            }
        }
        if let Some(line) = m.status_line(now) {
            shared.emit(LinkEvent::Modem(line)).await?;
        }
        let room = if stalled_told { 0 } else { m.room(now) };
        shared.set_room(room);
        let busy = m.credit.changing(now) || m.queue.is_some() || m.unreported.is_some();
        let wake = [
            busy.then(|| now + TICK),
            Some(m.last_poll + POLL),
            m.call_due(),
            m.break_due(),
            (m.carrying() || matches!(m.phase, Phase::Closing { .. }))
                .then(|| now + Duration::from_secs(1)),
        ]
        .into_iter()
        .flatten()
        .min();
        tokio::select! {
            r = read(cmd, &mut cbuf) => match r {
                Ok(0) => return Ok("ardopcf closed its command port".into()),
                Ok(n) => {
                    for c in m.command_bytes(&cbuf[..n], Instant::now(), &shared.name, counters) {
                        match c {
                            Change::Up => {
                                tracing::info!(link = %shared.name, phase = ?m.phase, "ARQ session connected");
                                shared.emit(LinkEvent::Up(m.params())).await?;
                            }
                            Change::Down(why) => {
                                tracing::info!(link = %shared.name, %why, "no ARQ session");
                                shared.emit(LinkEvent::Down { reason: why }).await?;
                                shared.set_room(0);
                            }
                        }
                    }
                }
                Err(e) => return Ok(format!("reading ardopcf's command port failed: {e}")),
            },
            r = read(data, &mut dbuf) => match r {
                Ok(0) => return Ok("ardopcf closed its data port".into()),
                Ok(n) => {
                    for f in m.data_bytes(&dbuf[..n], Instant::now(), counters) {
                        shared.emit(LinkEvent::Frame(f)).await?;
                    }
                }
                Err(e) => return Ok(format!("reading ardopcf's data port failed: {e}")),
            },
            r = write_some(cmd, &m.cmd_out), if !m.cmd_out.is_empty() => match r {
                Ok(n) => { m.cmd_out.drain(..n); }
                Err(e) => return Ok(format!("writing to ardopcf's command port failed: {e}")),
            },
            r = write_some(data, &m.data_out), if !m.data_out.is_empty() => match r {
                Ok(n) => { m.data_out.drain(..n); }
                Err(e) => return Ok(format!("writing to ardopcf's data port failed: {e}")),
            },
            f = frames.recv(), if m.queue.is_none() => match f {
                Some(f) => {
                    let now = Instant::now();
                    // (Sent on a stale room as the session ended, it waits for the next.)
                    m.offer(&shared.name, f, now, counters);
                    m.pump(now, counters);
                    shared.took_frame(if stalled_told { 0 } else { m.room(now) });
                }
                None => {
                    return Err(Closed);
                }
            },
            _ = sleep_until(wake) => {}
        }
    }
}

#[cfg(test)]
mod tests;
