//! `vara`: the VARA HF/FM modem over its TCP host interface, a command port (CR-ended
//! ASCII lines) and a data port (a raw byte stream carried by the modem's ARQ session).
//!
//! The driver sets the modem up (`MYCALL`, `LISTEN`, `COMPRESSION OFF`, the bandwidth,
//! `CWID ON` for amateur use), then listens for calls and calls the configured station
//! (or the last station that called) when the daemon has something to send. The caller
//! ends a session that has carried nothing either way for `idle_timeout` with
//! `DISCONNECT`, once the modem's queue is empty (`BUFFER 0`) and 2 s after the last
//! write, as Pat does (the side called cannot know whether the caller's modem still holds
//! data for it). No
//! call is started while the modem reports the channel busy (`BUSY ON`) or a call being
//! heard (`PENDING`); failed calls are retried with backoff.
//!
//! Frames are framed on the data port as on any byte stream (COBS, CRC-16,
//! [`skywave_node::framing`]). What the modem may be handed is governed by
//! [`ModemCredit`] from the `BUFFER n` lines VARA sends (bytes still queued), never more
//! than `buffer` bytes; the rate its queue drains at becomes the link's rate. A queue
//! that stops draining takes the link down with the reason until it drains. The modem
//! sends `IAMALIVE` every minute: nothing at all on the command port for `alive_timeout`
//! means it has hung, and the driver reconnects to it with backoff.
//!
//! The link is up (to the daemon) while the modem is reachable and set up, whether or
//! not a session is connected: a frame handed to it while no session is open starts a
//! call. It is down, with the reason, while the modem is unreachable or silent, while
//! its queue does not drain, and while calls fail or wait for a busy channel.
//!
//! What this does not do: VARA's broadcast (FEC) mode, or several links on one modem.

pub mod fake;

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
    Backoff, Closed, MIN_ROOM, RateTold, Shared, StreamRx, accept_frame, sleep_until, tcp_read,
    tcp_write_some, wait_away,
};
use crate::stream::TICK;
use crate::{Error, LinkCounters, LinkEvent, LinkHandle};

/// After the last write, and with the modem's queue empty, this long before `DISCONNECT`
/// (Pat's wait: the modem may still be acknowledging the last frame).
pub const LINGER: Duration = Duration::from_secs(2);

/// Bytes handed to the data port this recently may not have reached the modem when it
/// made a `BUFFER` report that arrives now: they are kept out of the room (counting them
/// in the report's mark instead would count them as drained at the next report).
const ON_THE_WAY: Duration = Duration::from_millis(100);

/// A busy channel that holds a call back this long is shown as the link's state (a
/// shorter one is the channel's ordinary traffic).
const BUSY_SHOWN: Duration = Duration::from_secs(2);

/// Frames held while a call is set up (the daemon is asked for no more meanwhile).
const MAX_PENDING: usize = 4;

/// The longest command line kept; the rest of a longer one is counted as garbage.
const MAX_LINE: usize = 256;

/// `[[link]] type = "vara"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VaraConfig {
    /// VARA's command port, `HOST:PORT` (VARA's default is 8300).
    #[serde(default = "default_modem")]
    pub modem: String,
    /// VARA's data port, `HOST:PORT`; unset: the command port's host and port + 1.
    #[serde(default)]
    pub data: Option<String>,
    /// This station's callsign (`MYCALL`): VARA needs one, and on amateur bands it is
    /// the station's identification.
    #[serde(default)]
    pub callsign: Option<String>,
    /// The station to call when there is something to send; unset: only the last
    /// station that called is called back.
    #[serde(default)]
    pub station: Option<String>,
    /// Answer calls (`LISTEN ON`).
    #[serde(default = "yes")]
    pub listen: bool,
    /// Licensed amateur use: callsign required, no encryption, CW identification on.
    #[serde(default)]
    pub amateur: bool,
    /// `CWID ON` (VARA HF identifies in CW at the end of a session); unset: on with
    /// `amateur = true`.
    #[serde(default)]
    pub cwid: Option<bool>,
    /// Bandwidth in Hz: 500, 2300 or 2750 (VARA HF), sent as `BW500` etc.
    #[serde(default = "default_bandwidth")]
    pub bandwidth: u32,
    /// The channel's expected rate (bit/s): pacing until the modem reports its queue,
    /// and the link's rate until one is measured.
    #[serde(default = "default_air_rate")]
    pub air_rate: u64,
    /// Largest skywave frame.
    #[serde(default = "default_mtu")]
    pub mtu: usize,
    /// Most bytes let wait in the modem: far below what VARA holds, so that what waits
    /// there never delays an answer by much.
    #[serde(default = "default_buffer")]
    pub buffer: usize,
    /// End a session that carried nothing either way for this long.
    #[serde(
        default = "default_idle_timeout",
        deserialize_with = "crate::de::duration"
    )]
    pub idle_timeout: Duration,
    /// Give up a call the modem has not connected within this long (`ABORT`).
    #[serde(
        default = "default_call_timeout",
        deserialize_with = "crate::de::duration"
    )]
    pub call_timeout: Duration,
    /// Nothing from the modem (VARA sends `IAMALIVE` every minute) for this long: it has
    /// hung; reconnect to it.
    #[serde(
        default = "default_alive_timeout",
        deserialize_with = "crate::de::duration"
    )]
    pub alive_timeout: Duration,
    /// How long a setup command may go unanswered.
    #[serde(
        default = "default_command_timeout",
        deserialize_with = "crate::de::duration"
    )]
    pub command_timeout: Duration,
    /// Down (with the reason) while the modem holds bytes without sending any.
    #[serde(default = "default_stall", deserialize_with = "crate::de::duration")]
    pub stall_timeout: Duration,
    #[serde(default)]
    pub name: Option<String>,
}

fn default_modem() -> String {
    "127.0.0.1:8300".into()
}
fn yes() -> bool {
    true
}
fn default_bandwidth() -> u32 {
    2300
}
fn default_air_rate() -> u64 {
    2000
}
fn default_mtu() -> usize {
    512
}
fn default_buffer() -> usize {
    2048
}
fn default_idle_timeout() -> Duration {
    Duration::from_secs(30)
}
fn default_call_timeout() -> Duration {
    Duration::from_secs(90)
}
fn default_alive_timeout() -> Duration {
    // Pat's: twice VARA's IAMALIVE interval.
    Duration::from_secs(120)
}
fn default_command_timeout() -> Duration {
    Duration::from_secs(5)
}
fn default_stall() -> Duration {
    Duration::from_secs(60)
}

impl VaraConfig {
    pub fn new(modem: impl Into<String>, callsign: &str) -> VaraConfig {
        VaraConfig {
            modem: modem.into(),
            data: None,
            callsign: Some(callsign.into()),
            station: None,
            listen: true,
            amateur: false,
            cwid: None,
            bandwidth: default_bandwidth(),
            air_rate: default_air_rate(),
            mtu: default_mtu(),
            buffer: default_buffer(),
            idle_timeout: default_idle_timeout(),
            call_timeout: default_call_timeout(),
            alive_timeout: default_alive_timeout(),
            command_timeout: default_command_timeout(),
            stall_timeout: default_stall(),
            name: None,
        }
    }

    /// The data port's address.
    pub fn data_addr(&self) -> String {
        if let Some(d) = &self.data {
            return d.clone();
        }
        match self.modem.rsplit_once(':') {
            Some((host, port)) => match port.parse::<u16>() {
                Ok(p) => format!("{host}:{}", p.wrapping_add(1)),
                Err(_) => self.modem.clone(),
            },
            None => self.modem.clone(),
        }
    }

    /// The commands that set the modem up, in order.
    pub fn setup_commands(&self, mycall: &Callsign) -> Vec<String> {
        let mut c = vec![
            format!("MYCALL {mycall}"),
            format!("LISTEN {}", if self.listen { "ON" } else { "OFF" }),
            // Frames are binary and small: compression gains nothing and costs latency.
            "COMPRESSION OFF".to_string(),
            format!("BW{}", self.bandwidth),
        ];
        if self.cwid.unwrap_or(self.amateur) {
            c.push("CWID ON".into());
        }
        c
    }

    /// Checks every setting; returns this station's callsign and the station to call.
    pub fn check(&self) -> Result<(Callsign, Option<Callsign>), Error> {
        let invalid = |field: &str, value: String, expected: &str| Error::Invalid {
            field: field.into(),
            value,
            expected: expected.into(),
        };
        let Some(call) = &self.callsign else {
            return Err(invalid(
                "callsign",
                "(not set)".into(),
                "this station's callsign (e.g. \"N0CALL-7\"): VARA needs one (MYCALL), and on amateur bands it is how the modem identifies the station",
            ));
        };
        let mycall = Callsign::parse(call).map_err(|e| invalid("callsign", call.clone(), &e))?;
        let station = self
            .station
            .as_ref()
            .map(|s| Callsign::parse(s).map_err(|e| invalid("station", s.clone(), &e)))
            .transpose()?;
        for (f, a) in [("modem", self.modem.clone()), ("data", self.data_addr())] {
            let ok = a
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
            if !ok {
                return Err(invalid(
                    f,
                    a,
                    "HOST:PORT (e.g. 127.0.0.1:8300 for the command port; the data port defaults to the next port)",
                ));
            }
        }
        if ![500, 2300, 2750].contains(&self.bandwidth) {
            return Err(invalid(
                "bandwidth",
                self.bandwidth.to_string(),
                "500, 2300 or 2750 (Hz)",
            ));
        }
        if !(skywave_proto::wire::MIN_FRAME..=framing::MAX_FRAME).contains(&self.mtu) {
            return Err(invalid(
                "mtu",
                self.mtu.to_string(),
                &format!(
                    "{} to {} bytes",
                    skywave_proto::wire::MIN_FRAME,
                    framing::MAX_FRAME
                ),
            ));
        }
        let one = self.mtu + framing::overhead(self.mtu);
        if !(one..=65_536).contains(&self.buffer) {
            return Err(invalid(
                "buffer",
                self.buffer.to_string(),
                &format!(
                    "{one} (one largest framed frame) to 65536 bytes: far below what VARA holds"
                ),
            ));
        }
        if !(50..=100_000).contains(&self.air_rate) {
            return Err(invalid(
                "air_rate",
                self.air_rate.to_string(),
                "the channel's expected bit rate, 50 to 100000",
            ));
        }
        if self.idle_timeout < LINGER {
            return Err(invalid(
                "idle_timeout",
                format!("{:?}", self.idle_timeout),
                "at least 2s (the modem may still be acknowledging the last frame)",
            ));
        }
        for (f, d) in [
            ("call_timeout", self.call_timeout),
            ("alive_timeout", self.alive_timeout),
            ("command_timeout", self.command_timeout),
            ("stall_timeout", self.stall_timeout),
        ] {
            if d < Duration::from_millis(100) {
                return Err(invalid(f, format!("{d:?}"), "at least 100ms"));
            }
        }
        Ok((mycall, station))
    }
}

/// What the protocol is told about a VARA link before its rate is measured.
pub fn params(cfg: &VaraConfig) -> LinkParams {
    let bytes_per_s = cfg.air_rate as f64 / 8.0;
    // A VARA HF ARQ cycle is a few seconds (data frame, ACK, turnarounds).
    let cycle = Duration::from_secs(4);
    let queue = Duration::from_secs_f64(cfg.buffer as f64 / bytes_per_s);
    LinkParams {
        mtu: cfg.mtu,
        shared: false,
        paced: false,
        // The modems take turns (ARQ): bound each over so the other side gets its turn.
        half_duplex: true,
        rate_bps: Some(cfg.air_rate),
        rtt_hint: cycle * 2 + queue,
        loss_hint: 0.0,
        discover_mtu: false,
        frame_overhead: framing::overhead(cfg.mtu),
        handoff: Duration::from_millis(500),
        duty: None,
        // A VARA connection repeats each frame until it is acknowledged, or ends.
        reliable: true,
        turns: None,
    }
}

pub fn spawn(cfg: VaraConfig) -> Result<LinkHandle, Error> {
    let (mycall, station) = cfg.check()?;
    let name = cfg
        .name
        .clone()
        .unwrap_or_else(|| format!("vara:{}", cfg.modem));
    tracing::info!(link = %name, callsign = %mycall, station = ?station.map(|s| s.to_string()), amateur = cfg.amateur, "vara link configured");
    let (shared, handle, frames) = Shared::new(name);
    tokio::spawn(async move {
        let _ = run(shared, frames, cfg, mycall, station).await;
    });
    Ok(handle)
}

/// A line from VARA's command port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    Ok,
    Wrong,
    /// A session is up: `CONNECTED SRC DST [BW]`.
    Connected {
        src: String,
        dst: String,
    },
    Disconnected,
    Ptt(bool),
    Busy(bool),
    /// Bytes still queued for sending.
    Buffer(usize),
    IAmAlive,
    /// A call is being heard (`PENDING`), or was not for us (`CANCELPENDING`).
    Pending(bool),
    /// A known or harmless line the driver does not act on (`VERSION ...`,
    /// `REGISTERED ...`, `LINK REGISTERED`, ...).
    Other(String),
    /// Not a VARA line: binary, or an unreadable form of a known one.
    Garbage(String),
}

impl Msg {
    pub fn parse(line: &str) -> Msg {
        if line.is_empty()
            || !line
                .bytes()
                .all(|b| b.is_ascii_graphic() || b == b' ' || b == b'\t')
        {
            return Msg::Garbage(line.into());
        }
        let w: Vec<&str> = line.split_ascii_whitespace().collect();
        match w.as_slice() {
            ["OK"] => Msg::Ok,
            ["WRONG"] => Msg::Wrong,
            ["CONNECTED", src, dst, ..] => Msg::Connected {
                src: (*src).into(),
                dst: (*dst).into(),
            },
            ["DISCONNECTED"] => Msg::Disconnected,
            ["PTT", "ON"] => Msg::Ptt(true),
            ["PTT", "OFF"] => Msg::Ptt(false),
            ["BUSY", "ON"] => Msg::Busy(true),
            ["BUSY", "OFF"] => Msg::Busy(false),
            ["BUFFER", n] => match n.parse() {
                Ok(n) => Msg::Buffer(n),
                Err(_) => Msg::Garbage(line.into()),
            },
            ["IAMALIVE"] => Msg::IAmAlive,
            ["PENDING"] => Msg::Pending(true),
            ["CANCELPENDING"] => Msg::Pending(false),
            // Forms of the lines above that cannot be read are not VARA's.
            ["CONNECTED", ..] | ["PTT", ..] | ["BUSY", ..] | ["BUFFER", ..] => {
                Msg::Garbage(line.into())
            }
            _ if line.starts_with(|c: char| c.is_ascii_uppercase()) => Msg::Other(line.into()),
            _ => Msg::Garbage(line.into()),
        }
    }
}

/// CR- (or LF-) ended lines from the command port; an over-long line is cut and the rest
/// counted.
#[derive(Debug, Default)]
pub struct Lines {
    partial: Vec<u8>,
    /// Bytes dropped from over-long lines.
    pub cut: u64,
}

impl Lines {
    pub fn push(&mut self, data: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for &b in data {
            if b == b'\r' || b == b'\n' {
                if !self.partial.is_empty() {
                    out.push(String::from_utf8_lossy(&self.partial).trim().to_string());
                    self.partial.clear();
                }
            } else if self.partial.len() < MAX_LINE {
                self.partial.push(b);
            } else {
                self.cut += 1;
            }
        }
        out
    }
}

/// Where the session with the far station stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Call {
    /// No session.
    Idle,
    /// `CONNECT` sent at this time.
    Calling(Instant),
    /// A session with this station.
    Connected(String),
    /// `DISCONNECT` (or `ABORT`) sent at this time.
    Ending(Instant),
}

/// The driver's state between the modem and the daemon, time passed in.
#[derive(Debug)]
pub(crate) struct VaraState {
    cfg: VaraConfig,
    mycall: Callsign,
    pub(crate) credit: ModemCredit<Instant>,
    /// Command lines for the modem, not yet written.
    pub cmd_out: Vec<u8>,
    /// Framed bytes for the data port, not yet written.
    pub data_out: Vec<u8>,
    /// Recent writes to the data port: when, and how many bytes.
    flushed: VecDeque<(Instant, usize)>,
    /// Commands sent and not yet answered (`OK`/`WRONG`), and when.
    expect: VecDeque<(String, Instant)>,
    lines: Lines,
    /// Setup answered: the modem is ours.
    ready: bool,
    pub(crate) call: Call,
    /// Frames from the daemon, waiting for a session or for room in the modem.
    pending: VecDeque<Bytes>,
    /// This side placed the session's call: it is the one that ends it when idle.
    caller: bool,
    /// The station to call: the configured one, or the last one that called.
    callee: Option<String>,
    busy: bool,
    heard_pending: bool,
    /// Since when a call is wanted but held back by a busy channel.
    busy_since: Option<Instant>,
    next_call: Instant,
    call_backoff: Backoff,
    /// Why the last call failed (shown until a session connects).
    call_failed: Option<String>,
    last_heard: Instant,
    last_write: Instant,
    last_data: Instant,
    /// Why the connection to the modem must end (it refused MYCALL, stopped answering):
    /// the driver reconnects.
    pub(crate) fatal: Option<String>,
    /// The measured rate last told to the protocol.
    told: RateTold,
    /// Counts (also in the link's counters where one fits).
    pub(crate) stats: VaraStats,
}

/// What the driver saw of its modem.
#[derive(Debug, Default, Clone)]
pub struct VaraStats {
    pub calls: u64,
    pub calls_failed: u64,
    pub sessions: u64,
    pub idle_disconnects: u64,
    pub wrong: u64,
    pub garbage_lines: u64,
    pub ptt_on: u64,
    /// Bytes the modem still held when a session ended (sent again by the protocol).
    pub unsent_at_disconnect: u64,
}

impl VaraState {
    pub(crate) fn new(
        cfg: VaraConfig,
        mycall: Callsign,
        station: Option<Callsign>,
        now: Instant,
    ) -> VaraState {
        let rate = cfg.air_rate as f64 / 8.0;
        let per_frame = framing::overhead(cfg.mtu);
        VaraState {
            credit: ModemCredit::new(Pacer::full(now, rate, per_frame, cfg.buffer)),
            mycall,
            cmd_out: Vec::new(),
            data_out: Vec::new(),
            flushed: VecDeque::new(),
            expect: VecDeque::new(),
            lines: Lines::default(),
            ready: false,
            call: Call::Idle,
            pending: VecDeque::new(),
            caller: false,
            callee: station.map(|s| s.to_string()),
            busy: false,
            heard_pending: false,
            busy_since: None,
            next_call: now,
            call_backoff: Backoff::new(Duration::from_secs(2), Duration::from_secs(120)),
            call_failed: None,
            last_heard: now,
            last_write: now,
            last_data: now,
            fatal: None,
            told: RateTold::default(),
            stats: VaraStats::default(),
            cfg,
        }
    }

    fn send(&mut self, cmd: String, now: Instant) {
        tracing::debug!(command = %cmd, "to VARA");
        self.cmd_out.extend_from_slice(cmd.as_bytes());
        self.cmd_out.push(b'\r');
        self.expect.push_back((cmd, now));
    }

    /// A new connection to the modem: set it up; what it held is gone.
    pub(crate) fn reset(&mut self, now: Instant) {
        self.credit.reset(now);
        self.cmd_out.clear();
        self.data_out.clear();
        self.flushed.clear();
        self.expect.clear();
        self.lines = Lines::default();
        self.ready = false;
        self.call = Call::Idle;
        self.busy = false;
        self.heard_pending = false;
        self.busy_since = None;
        self.last_heard = now;
        self.fatal = None;
        for c in self.cfg.setup_commands(&self.mycall) {
            self.send(c, now);
        }
    }

    pub(crate) fn connected(&self) -> bool {
        matches!(self.call, Call::Connected(_))
    }

    /// Frame bytes the daemon may send now.
    pub(crate) fn room(&mut self, now: Instant) -> usize {
        if !self.ready || !self.pending.is_empty() {
            return 0;
        }
        match self.call {
            // A frame starts a call (if there is anyone to call).
            Call::Idle if self.callee.is_some() => self.cfg.mtu,
            Call::Connected(_) => {
                let max = self.cfg.mtu + framing::overhead(self.cfg.mtu);
                let r = self.credit_room(now).min(max);
                let r = r.saturating_sub(framing::overhead(r));
                if r < MIN_ROOM.min(self.cfg.mtu) { 0 } else { r }
            }
            _ => 0,
        }
    }

    /// Whether the driver takes another frame from the daemon now.
    pub(crate) fn takes_frame(&self) -> bool {
        self.pending.len() < MAX_PENDING
    }

    pub(crate) fn offer(&mut self, name: &str, f: Bytes, now: Instant, counters: &LinkCounters) {
        if let Some(f) = accept_frame(name, f, self.cfg.mtu, self.room(now), counters) {
            self.pending.push_back(f);
        }
    }

    /// Moves frames into the modem as its credit allows, and decides the commands due:
    /// setup timeouts, calls, idle disconnects, call timeouts.
    pub(crate) fn poll(&mut self, name: &str, now: Instant, counters: &LinkCounters) {
        if let Some((cmd, at)) = self.expect.front()
            && now >= *at + self.cfg.command_timeout
            && self.fatal.is_none()
        {
            self.fatal = Some(format!(
                "VARA did not answer '{cmd}' within {:.0} s: check that the modem program is running and not stuck; reconnecting to it",
                self.cfg.command_timeout.as_secs_f64()
            ));
        }
        if now >= self.last_heard + self.cfg.alive_timeout && self.fatal.is_none() {
            self.fatal = Some(format!(
                "VARA sent nothing on its command port for {:.0} s (not even IAMALIVE, which it sends every minute): the modem program may have hung; reconnecting to it",
                (now - self.last_heard).as_secs_f64()
            ));
        }
        if !self.ready {
            return;
        }
        match self.call.clone() {
            Call::Connected(_) => {
                while let Some(f) = self.pending.front() {
                    let len = f.len() + framing::overhead(f.len());
                    if len > self.credit_room(now) {
                        break;
                    }
                    let f = self.pending.pop_front().expect("checked");
                    let before = self.data_out.len();
                    framing::encode(&f, &mut self.data_out);
                    // (What was encoded, exactly: the modem's reports count it.)
                    self.credit.wrote(now, self.data_out.len() - before);
                    self.last_write = now;
                    self.last_data = self.last_data.max(now);
                    LinkCounters::add(&counters.frames_out, 1);
                    LinkCounters::add(&counters.bytes_out, f.len() as u64);
                }
                // Only the caller hangs up: the side called cannot know whether the
                // caller's modem still holds data for it (VARA ends a session whose
                // far side has gone by itself).
                let quiet = self.caller
                    && self.pending.is_empty()
                    && self.data_out.is_empty()
                    && self.credit.held(now) == 0
                    && now >= self.last_write + LINGER
                    && now >= self.last_data + self.cfg.idle_timeout;
                if quiet {
                    tracing::info!(
                        link = name,
                        "nothing carried for {:.0} s: ending the session (DISCONNECT)",
                        self.cfg.idle_timeout.as_secs_f64()
                    );
                    self.stats.idle_disconnects += 1;
                    self.send("DISCONNECT".into(), now);
                    self.call = Call::Ending(now);
                }
            }
            Call::Idle => {
                let want = !self.pending.is_empty();
                let blocked = self.busy || self.heard_pending;
                if want && blocked {
                    self.busy_since.get_or_insert(now);
                } else {
                    self.busy_since = None;
                }
                if want
                    && !blocked
                    && now >= self.next_call
                    && let Some(to) = self.callee.clone()
                {
                    tracing::info!(link = name, station = %to, "calling");
                    self.stats.calls += 1;
                    self.send(format!("CONNECT {} {to}", self.mycall), now);
                    self.call = Call::Calling(now);
                }
            }
            Call::Calling(since) if now >= since + self.cfg.call_timeout => {
                self.call_failed(
                    format!(
                        "no session within {:.0} s",
                        self.cfg.call_timeout.as_secs_f64()
                    ),
                    now,
                );
                // The modem may still be calling: stop it.
                self.send("ABORT".into(), now);
                self.call = Call::Ending(now);
            }
            Call::Ending(since) if now >= since + self.cfg.command_timeout * 2 => {
                // No DISCONNECTED came: the modem is not in a session we know of.
                self.call = Call::Idle;
            }
            _ => {}
        }
    }

    fn call_failed(&mut self, why: String, now: Instant) {
        self.stats.calls_failed += 1;
        let wait = self.call_backoff.next_delay();
        self.next_call = now + wait;
        self.call_failed = Some(why);
    }

    /// Bytes from the command port (the frames come on the data port).
    pub(crate) fn command_bytes(
        &mut self,
        name: &str,
        data: &[u8],
        now: Instant,
        counters: &LinkCounters,
    ) {
        let cut = self.lines.cut;
        let lines = self.lines.push(data);
        LinkCounters::add(&counters.garbage_bytes, self.lines.cut - cut);
        for l in lines {
            self.line(name, &l, now, counters);
        }
    }

    fn line(&mut self, name: &str, line: &str, now: Instant, counters: &LinkCounters) {
        let msg = Msg::parse(line);
        if let Msg::Garbage(g) = &msg {
            tracing::debug!(link = name, line = %g.escape_debug(), "not a VARA line: dropped");
            self.stats.garbage_lines += 1;
            LinkCounters::add(&counters.garbage_bytes, g.len() as u64 + 1);
            return;
        }
        tracing::debug!(link = name, line, "from VARA");
        self.last_heard = now;
        match msg {
            Msg::Ok | Msg::Wrong => {
                let Some((cmd, _)) = self.expect.pop_front() else {
                    tracing::debug!(link = name, line, "an answer to no command");
                    return;
                };
                if msg == Msg::Wrong {
                    self.stats.wrong += 1;
                    self.refused(name, &cmd, now);
                }
                if self.expect.is_empty() && !self.ready && self.fatal.is_none() {
                    self.ready = true;
                }
            }
            Msg::Connected { src, dst } => {
                let other = if src.eq_ignore_ascii_case(&self.mycall.to_string()) {
                    dst
                } else {
                    src
                };
                tracing::info!(link = name, station = %other, "session connected");
                self.stats.sessions += 1;
                if self.cfg.station.is_none() {
                    // Call it back when there is something to send.
                    self.callee = Some(other.clone());
                }
                self.caller = matches!(self.call, Call::Calling(_));
                self.call = Call::Connected(other);
                // (The call VARA heard was this one.)
                self.heard_pending = false;
                self.call_backoff.reset();
                self.call_failed = None;
                self.credit.reset(now);
                self.last_data = now;
                self.last_write = now;
            }
            Msg::Disconnected => {
                self.heard_pending = false;
                match std::mem::replace(&mut self.call, Call::Idle) {
                    Call::Calling(_) => self.call_failed("no answer".into(), now),
                    Call::Connected(s) => {
                        let held = self.credit.held(now);
                        self.stats.unsent_at_disconnect += held as u64;
                        tracing::info!(link = name, station = %s, unsent = held, "session ended");
                    }
                    _ => {}
                }
                self.credit.reset(now);
            }
            Msg::Ptt(on) => {
                if on {
                    self.stats.ptt_on += 1;
                }
            }
            Msg::Busy(b) => {
                self.busy = b;
            }
            Msg::Pending(p) => self.heard_pending = p,
            Msg::Buffer(n) => {
                // Outside a session the modem holds nothing of ours to wait for.
                if self.connected() {
                    // (Bytes not yet handed to the data port are not in the modem.)
                    let mark = self
                        .credit
                        .written()
                        .saturating_sub(self.data_out.len() as u64);
                    self.credit.reported_queued_upto(now, n, mark);
                }
            }
            Msg::IAmAlive | Msg::Other(_) | Msg::Garbage(_) => {}
        }
    }

    fn refused(&mut self, name: &str, cmd: &str, now: Instant) {
        let word = cmd.split(' ').next().unwrap_or(cmd);
        match word {
            "MYCALL" => {
                self.fatal = Some(format!(
                    "VARA refused '{cmd}' (WRONG): check the callsign (and that this VARA is registered for it); trying again later"
                ));
            }
            "CONNECT" => {
                if matches!(self.call, Call::Calling(_)) {
                    self.call = Call::Idle;
                    self.call_failed("VARA answered WRONG".into(), now);
                }
            }
            _ => tracing::warn!(
                link = name,
                command = cmd,
                "VARA refused a command (WRONG); carrying on with its own setting"
            ),
        }
    }

    /// Room in the modem by its credit, less what may still be on its way to it.
    fn credit_room(&mut self, now: Instant) -> usize {
        while self
            .flushed
            .front()
            .is_some_and(|&(t, _)| t + ON_THE_WAY <= now)
        {
            self.flushed.pop_front();
        }
        let on_the_way: usize = self.flushed.iter().map(|&(_, n)| n).sum();
        self.credit.room(now).saturating_sub(on_the_way)
    }

    /// `n` bytes of `data_out` went to the data port.
    pub(crate) fn flushed(&mut self, now: Instant, n: usize) {
        self.data_out.drain(..n);
        self.flushed.push_back((now, n));
        if self.flushed.len() > 256 {
            self.flushed.pop_front();
        }
    }

    /// Data arrived from the far station.
    pub(crate) fn data_in(&mut self, now: Instant) {
        self.last_data = now;
    }

    /// Why the link cannot carry frames now, if it cannot.
    pub(crate) fn waiting(&self, now: Instant) -> Option<String> {
        if let Some(since) = self
            .credit
            .stalled_since(now)
            .filter(|&s| self.connected() && now >= s + self.cfg.stall_timeout)
        {
            return Some(format!(
                "VARA has held {} bytes for {:.0} s without sending any (BUFFER not draining): the far station may have stopped acknowledging; waiting for it",
                self.credit.pacer().queued().max(1),
                (now - since).as_secs_f64()
            ));
        }
        if self.pending.is_empty() || self.connected() {
            return None;
        }
        if let Some(since) = self.busy_since.filter(|&s| now >= s + BUSY_SHOWN) {
            return Some(format!(
                "the channel is busy ({} for {:.0} s): waiting for it to clear before calling {}",
                if self.busy {
                    "VARA reports BUSY ON"
                } else {
                    "VARA hears a call (PENDING)"
                },
                (now - since).as_secs_f64(),
                self.callee.as_deref().unwrap_or("?")
            ));
        }
        if self.callee.is_none() {
            return Some(
                "frames wait for a session: no `station` is set to call, and no station has called yet".into(),
            );
        }
        // (Until a call connects: a link that went down for a failed call does not come
        // up for each new attempt.)
        self.call_failed.as_ref().map(|why| {
            let to = self.callee.as_deref().unwrap_or("?");
            if now < self.next_call {
                format!(
                    "the call to {to} failed ({why}): calling again in {:.0} s",
                    (self.next_call - now).as_secs_f64().ceil()
                )
            } else {
                format!("the call to {to} failed ({why}): calling again now")
            }
        })
    }

    /// When the driver should look again without anything arriving.
    pub(crate) fn wake(&self, now: Instant) -> Instant {
        let mut t = self.last_heard + self.cfg.alive_timeout;
        if let Some((_, at)) = self.expect.front() {
            t = t.min(*at + self.cfg.command_timeout);
        }
        match self.call {
            Call::Connected(_) => {
                t = t.min(now + TICK);
            }
            Call::Idle if !self.pending.is_empty() => {
                t = t.min(self.next_call.max(now + TICK));
            }
            Call::Calling(s) => t = t.min(s + self.cfg.call_timeout),
            Call::Ending(s) => t = t.min(s + self.cfg.command_timeout * 2),
            Call::Idle => {}
        }
        t.max(now + Duration::from_millis(1))
    }

    /// The link's parameters with the measured rate, when it differs enough from what
    /// the protocol was last told (a fifth), at most once a minute after the first.
    pub(crate) fn rate_update(&mut self, now: Instant) -> Option<LinkParams> {
        self.told.update(self.credit.measured_rate(), now)?;
        Some(self.params())
    }

    pub(crate) fn params(&self) -> LinkParams {
        let base = params(&self.cfg);
        match self.told.rate() {
            Some(r) => LinkParams {
                rate_bps: Some((r * 8.0).round().max(1.0) as u64),
                ..base
            },
            None => base,
        }
    }
}

/// The modem's two ports.
struct Ports {
    cmd: TcpStream,
    data: TcpStream,
}

impl Ports {
    async fn open(cfg: &VaraConfig) -> Result<Ports, String> {
        let connect = |what: &'static str, addr: String| async move {
            let s = TcpStream::connect(addr.as_str())
                .await
                .map_err(|e| format!("cannot reach VARA's {what} port at {addr}: {e}"))?;
            s.set_nodelay(true)
                .map_err(|e| format!("VARA's {what} port at {addr}: {e}"))?;
            Ok::<_, String>(s)
        };
        let cmd = connect("command", cfg.modem.clone()).await?;
        let data = connect("data", cfg.data_addr()).await?;
        Ok(Ports { cmd, data })
    }
}

async fn run(
    shared: Shared,
    mut frames: mpsc::Receiver<Bytes>,
    cfg: VaraConfig,
    mycall: Callsign,
    station: Option<Callsign>,
) -> Result<(), Closed> {
    let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(60));
    let mut st = VaraState::new(cfg.clone(), mycall, station, Instant::now());
    let mut failing: Option<String> = None;
    loop {
        let ports = match Ports::open(&cfg).await {
            Ok(p) => p,
            Err(e) => {
                let wait = backoff.next_delay();
                let reason = format!(
                    "{e}: is VARA running with its TCP ports there? Retrying in {:.1} s",
                    wait.as_secs_f64()
                );
                if failing.as_deref() != Some(e.as_str()) {
                    shared.down(reason).await?;
                    failing = Some(e);
                }
                wait_away(&shared, &mut frames, wait).await?;
                continue;
            }
        };
        failing = None;
        st.reset(Instant::now());
        tracing::info!(link = %shared.name, modem = %cfg.modem, "connected to VARA");
        let reason = session(&shared, &ports, &mut frames, &mut st).await?;
        drop(ports);
        shared.down(reason).await?;
        wait_away(&shared, &mut frames, backoff.next_delay()).await?;
        if st.ready {
            // A session that got as far as a ready modem starts the backoff again.
            backoff.reset();
        }
    }
}

/// Carries frames until the modem goes away or stops answering; `Err` when the daemon
/// drops the handle.
async fn session(
    shared: &Shared,
    ports: &Ports,
    frames: &mut mpsc::Receiver<Bytes>,
    st: &mut VaraState,
) -> Result<String, Closed> {
    let counters = &shared.counters;
    let mut cbuf = vec![0u8; 2048];
    let mut dbuf = vec![0u8; 8192];
    let mut rx = StreamRx::default();
    // What the daemon was last told: up, or down with this reason.
    let mut shown: Option<Result<(), String>> = None;
    loop {
        let now = Instant::now();
        st.poll(&shared.name, now, counters);
        if let Some(reason) = st.fatal.take() {
            return Ok(reason);
        }
        let want = if st.ready {
            Some(st.waiting(now).map_or(Ok(()), Err))
        } else {
            None
        };
        if let Some(w) = want
            && shown.as_ref() != Some(&w)
        {
            // (A changed reason whose kind is the same, e.g. seconds counting up, is not
            // news: compare the kind only.)
            let kind = |s: &str| s.split(' ').take(3).collect::<Vec<_>>().join(" ");
            let same_kind = matches!((&shown, &w), (Some(Err(a)), Err(b)) if kind(a) == kind(b));
            if !same_kind {
                match &w {
                    Ok(()) => {
                        tracing::info!(link = %shared.name, "VARA ready");
                        shared.emit(LinkEvent::Up(st.params())).await?;
                    }
                    Err(reason) => shared.down(reason.clone()).await?,
                }
                shown = Some(w);
            }
        }
        if let Some(p) = st.rate_update(now) {
            tracing::info!(link = %shared.name, rate_bps = ?p.rate_bps, "VARA drain rate measured");
            if matches!(shown, Some(Ok(()))) {
                shared.emit(LinkEvent::Up(p)).await?;
            }
        }
        let up = matches!(shown, Some(Ok(())));
        shared.set_room(if up { st.room(now) } else { 0 });
        let wake = st.wake(now);
        tokio::select! {
            r = tcp_read(&ports.cmd, &mut cbuf) => match r {
                Ok(0) => return Ok("VARA closed its command port".into()),
                Ok(n) => st.command_bytes(&shared.name, &cbuf[..n], Instant::now(), counters),
                Err(e) => return Ok(format!("read from VARA's command port failed: {e}")),
            },
            r = tcp_read(&ports.data, &mut dbuf) => match r {
                Ok(0) => return Ok("VARA closed its data port".into()),
                Ok(n) => {
                    st.data_in(Instant::now());
                    for f in rx.push(&dbuf[..n], counters) {
                        shared.emit(LinkEvent::Frame(f)).await?;
                    }
                }
                Err(e) => return Ok(format!("read from VARA's data port failed: {e}")),
            },
            r = tcp_write_some(&ports.cmd, &st.cmd_out), if !st.cmd_out.is_empty() => match r {
                Ok(n) => {
                    st.cmd_out.drain(..n);
                }
                Err(e) => return Ok(format!("write to VARA's command port failed: {e}")),
            },
            r = tcp_write_some(&ports.data, &st.data_out), if !st.data_out.is_empty() => match r {
                Ok(n) => st.flushed(Instant::now(), n),
                Err(e) => return Ok(format!("write to VARA's data port failed: {e}")),
            },
            f = frames.recv(), if st.takes_frame() => match f {
                Some(f) => {
                    let now = Instant::now();
                    st.offer(&shared.name, f, now, counters);
                    st.poll(&shared.name, now, counters);
                    let up = matches!(shown, Some(Ok(())));
                    shared.took_frame(if up { st.room(now) } else { 0 });
                }
                None => return Err(Closed),
            },
            _ = sleep_until(Some(wake)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_into_messages() {
        let cases = [
            ("OK", Msg::Ok),
            ("WRONG", Msg::Wrong),
            (
                "CONNECTED N0CALL-1 N0CALL-2 2300",
                Msg::Connected {
                    src: "N0CALL-1".into(),
                    dst: "N0CALL-2".into(),
                },
            ),
            ("DISCONNECTED", Msg::Disconnected),
            ("PTT ON", Msg::Ptt(true)),
            ("BUSY OFF", Msg::Busy(false)),
            ("BUFFER 1234", Msg::Buffer(1234)),
            ("IAMALIVE", Msg::IAmAlive),
            ("PENDING", Msg::Pending(true)),
            ("CANCELPENDING", Msg::Pending(false)),
            ("VERSION 4.8.7", Msg::Other("VERSION 4.8.7".into())),
            ("BUFFER -3", Msg::Garbage("BUFFER -3".into())),
            ("BUFFER", Msg::Garbage("BUFFER".into())),
            ("CONNECTED", Msg::Garbage("CONNECTED".into())),
            ("\u{1}\u{2}zz", Msg::Garbage("\u{1}\u{2}zz".into())),
            ("ok", Msg::Garbage("ok".into())),
        ];
        for (line, want) in cases {
            assert_eq!(Msg::parse(line), want, "{line:?}");
        }
        let mut l = Lines::default();
        assert_eq!(l.push(b"OK\rBUFF"), ["OK"]);
        assert_eq!(l.push(b"ER 5\r\nIAMALIVE\r"), ["BUFFER 5", "IAMALIVE"]);
        let long = vec![b'A'; MAX_LINE + 10];
        assert_eq!(l.push(&long), Vec::<String>::new());
        assert_eq!(l.push(b"\r")[0].len(), MAX_LINE);
        assert_eq!(l.cut, 10);
    }

    #[test]
    fn settings_are_checked_and_named() {
        let mut c = VaraConfig::new("127.0.0.1:8300", "N0CALL-1");
        assert_eq!(c.data_addr(), "127.0.0.1:8301");
        let (me, to) = c.check().unwrap();
        assert_eq!((me.to_string(), to), ("N0CALL-1".into(), None));
        assert_eq!(
            c.setup_commands(&me),
            ["MYCALL N0CALL-1", "LISTEN ON", "COMPRESSION OFF", "BW2300"]
        );
        c.amateur = true;
        assert_eq!(c.setup_commands(&me).last().unwrap(), "CWID ON");
        c.callsign = None;
        let e = c.check().unwrap_err().to_string();
        assert!(
            e.contains("'callsign'") && e.contains("(not set)") && e.contains("MYCALL"),
            "{e}"
        );
        let base = VaraConfig::new("127.0.0.1:8300", "N0CALL-1");
        for (c, field) in [
            (
                VaraConfig {
                    station: Some("NOT A CALL".into()),
                    ..base.clone()
                },
                "station",
            ),
            (
                VaraConfig {
                    modem: "localhost".into(),
                    ..base.clone()
                },
                "modem",
            ),
            (
                VaraConfig {
                    bandwidth: 1000,
                    ..base.clone()
                },
                "bandwidth",
            ),
            (
                VaraConfig {
                    buffer: 100,
                    ..base.clone()
                },
                "buffer",
            ),
            (
                VaraConfig {
                    idle_timeout: Duration::from_secs(1),
                    ..base.clone()
                },
                "idle_timeout",
            ),
        ] {
            let e = c.check().unwrap_err().to_string();
            assert!(e.contains(&format!("'{field}'")), "{field}: {e}");
        }
    }

    fn state(now: Instant) -> VaraState {
        let mut c = VaraConfig::new("127.0.0.1:8300", "N0CALL-1");
        c.station = Some("N0CALL-2".into());
        c.idle_timeout = Duration::from_secs(5);
        let (me, to) = c.check().unwrap();
        let mut s = VaraState::new(c, me, to, now);
        s.reset(now);
        s
    }

    fn feed(s: &mut VaraState, text: &str, now: Instant) {
        s.command_bytes("t", text.as_bytes(), now, &LinkCounters::default());
    }

    fn sent(s: &mut VaraState) -> String {
        String::from_utf8(std::mem::take(&mut s.cmd_out)).unwrap()
    }

    /// A call is placed when there is something to send, not while the channel is
    /// busy; the session carries the frame within the credit; an idle session is ended
    /// only with the modem's queue empty.
    #[test]
    fn calls_when_there_is_something_to_send_and_hangs_up_when_idle() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let c = LinkCounters::default();
        let mut s = state(t0);
        assert!(sent(&mut s).starts_with("MYCALL N0CALL-1\rLISTEN ON\r"));
        assert_eq!(s.room(t0), 0, "not set up yet");
        feed(&mut s, "OK\rOK\rOK\rOK\r", t0);
        assert_eq!(s.room(t0), 512, "one frame starts a call");
        feed(&mut s, "BUSY ON\r", t0);
        s.offer("t", Bytes::from_static(&[1u8; 100]), t0, &c);
        s.poll("t", ms(10), &c);
        assert_eq!(sent(&mut s), "", "no call on a busy channel");
        assert_eq!(s.waiting(ms(10)), None, "a moment's traffic is not news");
        assert!(s.waiting(ms(2010)).unwrap().contains("BUSY ON"));
        feed(&mut s, "BUSY OFF\r", ms(20));
        s.poll("t", ms(20), &c);
        assert_eq!(sent(&mut s), "CONNECT N0CALL-1 N0CALL-2\r");
        feed(
            &mut s,
            "OK\rPTT ON\rCONNECTED N0CALL-1 N0CALL-2 2300\r",
            ms(900),
        );
        s.poll("t", ms(900), &c);
        let mut d = framing::Deframer::new();
        assert_eq!(d.push(&s.data_out), vec![vec![1u8; 100]]);
        s.data_out.clear();
        feed(&mut s, "BUFFER 104\r", ms(950));
        assert_eq!(s.credit.held(ms(950)), 104);
        // Idle past the timeout but the modem still holds bytes: no DISCONNECT.
        s.poll("t", ms(7000), &c);
        assert_eq!(sent(&mut s), "");
        feed(&mut s, "BUFFER 0\r", ms(7000));
        s.poll("t", ms(7001), &c);
        assert_eq!(sent(&mut s), "DISCONNECT\r");
        feed(&mut s, "OK\rDISCONNECTED\r", ms(7100));
        assert_eq!(s.call, Call::Idle);
        assert_eq!(s.stats.unsent_at_disconnect, 0);
    }

    #[test]
    fn a_failed_call_is_retried_with_backoff_and_says_why() {
        let t0 = Instant::now();
        let c = LinkCounters::default();
        let mut s = state(t0);
        feed(&mut s, "OK\rOK\rOK\rOK\r", t0);
        s.offer("t", Bytes::from_static(&[1u8; 100]), t0, &c);
        s.poll("t", t0, &c);
        sent(&mut s);
        feed(&mut s, "WRONG\r", t0);
        let why = s.waiting(t0).unwrap();
        assert!(
            why.contains("call to N0CALL-2 failed") && why.contains("WRONG"),
            "{why}"
        );
        s.poll("t", t0 + Duration::from_secs(1), &c);
        assert_eq!(sent(&mut s), "", "backing off");
        s.poll("t", t0 + Duration::from_secs(2), &c);
        assert_eq!(sent(&mut s), "CONNECT N0CALL-1 N0CALL-2\r");
        feed(&mut s, "OK\rDISCONNECTED\r", t0 + Duration::from_secs(3));
        assert!(
            s.waiting(t0 + Duration::from_secs(3))
                .unwrap()
                .contains("no answer")
        );
        assert_eq!(s.stats.calls_failed, 2);
    }

    #[test]
    fn silence_and_a_refused_mycall_end_the_session_with_a_reason() {
        let t0 = Instant::now();
        let c = LinkCounters::default();
        let mut s = state(t0);
        feed(&mut s, "WRONG\r", t0);
        assert!(
            s.fatal
                .take()
                .unwrap()
                .contains("'MYCALL N0CALL-1' (WRONG)")
        );
        let mut s = state(t0);
        feed(&mut s, "OK\rOK\rOK\rOK\r", t0);
        s.poll("t", t0 + Duration::from_secs(119), &c);
        assert!(s.fatal.is_none());
        s.poll("t", t0 + Duration::from_secs(121), &c);
        assert!(s.fatal.take().unwrap().contains("IAMALIVE"));
        // Garbage is counted, not taken for a sign of life.
        let mut s = state(t0);
        s.command_bytes("t", b"\x00\x01\xff junk\rBUFFER x\r", t0, &c);
        assert_eq!(s.stats.garbage_lines, 2);
        assert!(LinkCounters::get(&c.garbage_bytes) > 0);
    }
}
