//! `kiss`: a packet-radio TNC spoken to in KISS, over a serial port or TCP (Dire Wolf's
//! KISS port, a hardware TNC on a USB serial adapter).
//!
//! Each skywave frame travels as the information field of one AX.25 UI frame from the
//! station's callsign to a fixed destination ([`ax25`]), on one KISS port ([`wire`]).
//! Received frames that are not AX.25, not UI, or not ours (another destination or
//! protocol id: other stations' traffic on the channel) are counted and dropped.
//!
//! What the TNC may be handed is governed by [`ModemCredit`]: the driver asks the TNC how
//! many bytes it still has queued (`TXBUF:`, which Dire Wolf answers) and keeps at most
//! `buffer` bytes there; a TNC that does not answer is paced by airtime at `air_rate`,
//! and the rate its queue is measured to drain at becomes the link's rate. A queue that
//! stops draining takes the link down, with the reason, until it drains again. The
//! TNC's own channel access (p-persistence CSMA: TXDELAY, persistence, slot time, set
//! from the configuration when the link opens) decides when it transmits what it holds;
//! by default the daemon also takes turns on the channel above it (`channel_access`,
//! docs/daemon.md), so that two TNCs do not both hold frames at a change of turn.
//!
//! Several links may name the same TNC, each on its own KISS port (a multi-port TNC's
//! radio channels, Dire Wolf's channels): they share one connection to it (`tnc`),
//! each with its own callsign, credit, pacing and settings. Received frames go to the
//! link on their port; frames on a port no link is configured for are counted as
//! dropped. The TNC failing takes all its links down; they come back together.
//!
//! What this does not do: connected mode or digipeating.

pub mod ax25;
pub mod fake;
mod tnc;
pub mod wire;

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Deserialize;
use skywave_node::credit::{CreditSource, ModemCredit};
use skywave_node::pacer::Pacer;
use skywave_proto::LinkParams;
use tokio::sync::mpsc;

use crate::link::{Closed, MIN_ROOM, RateTold, Shared, accept_frame, sleep_until, wait_away_until};
use crate::serial::check_baud;
use crate::stream::TICK;
use crate::{Error, LinkCounters, LinkEvent, LinkHandle};
use ax25::{Callsign, HEADER};
use tnc::{Endpoint, PortIo};

/// Bytes each frame costs on the air beyond its AX.25 header and info field: two flags
/// and the FCS.
const FRAMING: usize = 4;

/// A `TXBUF:` query unanswered this long: the TNC is paced by airtime until it answers.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

/// `[[link]] type = "kiss"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KissConfig {
    /// `tcp://HOST:PORT` for a TNC's KISS TCP port (Dire Wolf: `KISSPORT`, 8001 by
    /// default), or the path of a serial device. Links naming the same TNC share one
    /// connection to it, each on its own `port`.
    pub tnc: String,
    /// Serial devices only: the port's rate (the same for every link on the device).
    #[serde(default = "default_baud")]
    pub baud: u32,
    /// The KISS port (0-15): the TNC's radio channel, one link each.
    #[serde(default)]
    pub port: u8,
    /// This station's callsign and SSID, the source of every frame (required with
    /// `amateur = true`).
    #[serde(default)]
    pub callsign: Option<String>,
    /// The destination of every frame: skywave's, so that other software can tell.
    #[serde(default = "default_destination")]
    pub destination: String,
    /// AX.25 protocol id. Not 0xF0: Dire Wolf takes such UI frames for APRS and drops
    /// them beyond 100 queued.
    #[serde(default = "default_pid")]
    pub pid: u8,
    /// Licensed amateur use: a callsign is required, no encryption, carrier sense kept.
    #[serde(default)]
    pub amateur: bool,
    /// The channel's bit rate (1200 for AFSK, 9600 for G3RUH): pacing by airtime when
    /// the TNC does not report its queue, and the link's rate until one is measured.
    #[serde(default = "default_air_rate")]
    pub air_rate: u64,
    /// Largest skywave frame (the AX.25 info field).
    #[serde(default = "default_mtu")]
    pub mtu: usize,
    /// Most AX.25 bytes let wait in the TNC. Unset: two largest frames (one on the air,
    /// one waiting: the TNC never idles for want of a frame, and what waits delays
    /// every answer).
    #[serde(default)]
    pub buffer: Option<usize>,
    /// Ask the TNC for its queue (`TXBUF:`, KISS command 6). Off for a TNC that
    /// misreads command 6; it is paced by airtime.
    #[serde(default = "yes")]
    pub txbuf: bool,
    /// KISS parameters sent when the link opens.
    #[serde(default = "default_txdelay", deserialize_with = "crate::de::duration")]
    pub txdelay: Duration,
    #[serde(default = "default_persistence")]
    pub persistence: u8,
    #[serde(
        default = "default_slot_time",
        deserialize_with = "crate::de::duration"
    )]
    pub slot_time: Duration,
    #[serde(default = "default_txtail", deserialize_with = "crate::de::duration")]
    pub txtail: Duration,
    /// Transmit without carrier sense (a full-duplex radio). Refused with `amateur`.
    #[serde(default)]
    pub full_duplex: bool,
    /// Take the link down when the TNC keeps bytes without sending any for this long.
    #[serde(default = "default_stall", deserialize_with = "crate::de::duration")]
    pub stall_timeout: Duration,
    #[serde(default)]
    pub name: Option<String>,
}

/// A duration in the 10 ms units of KISS parameters.
fn tens(d: Duration) -> u8 {
    u8::try_from(d.as_millis() / 10).unwrap_or(u8::MAX)
}

fn default_baud() -> u32 {
    9600
}
fn default_destination() -> String {
    "SKYWAV".into()
}
fn default_pid() -> u8 {
    ax25::DEFAULT_PID
}
fn default_air_rate() -> u64 {
    1200
}
fn default_mtu() -> usize {
    256
}
fn yes() -> bool {
    true
}
// Dire Wolf's defaults (TXDELAY 30, PERSIST 63, SLOTTIME 10, TXTAIL 10).
fn default_txdelay() -> Duration {
    Duration::from_millis(300)
}
fn default_persistence() -> u8 {
    63
}
fn default_slot_time() -> Duration {
    Duration::from_millis(100)
}
fn default_txtail() -> Duration {
    Duration::from_millis(100)
}
fn default_stall() -> Duration {
    Duration::from_secs(60)
}

/// The source address of a link configured without a callsign (not for amateur use).
pub const NO_CALLSIGN: &str = "NOCALL";

impl KissConfig {
    pub fn new(tnc: impl Into<String>) -> KissConfig {
        KissConfig {
            tnc: tnc.into(),
            baud: default_baud(),
            port: 0,
            callsign: None,
            destination: default_destination(),
            pid: default_pid(),
            amateur: false,
            air_rate: default_air_rate(),
            mtu: default_mtu(),
            buffer: None,
            txbuf: true,
            txdelay: default_txdelay(),
            persistence: default_persistence(),
            slot_time: default_slot_time(),
            txtail: default_txtail(),
            full_duplex: false,
            stall_timeout: default_stall(),
            name: None,
        }
    }

    /// Bytes let wait in the TNC.
    pub fn buffer(&self) -> usize {
        self.buffer
            .unwrap_or(2 * (self.mtu + HEADER))
            .max(self.mtu + HEADER)
    }

    /// The KISS parameter frames sent when the link opens.
    pub fn parameter_frames(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (c, v) in [
            (wire::cmd::TXDELAY, tens(self.txdelay)),
            (wire::cmd::PERSISTENCE, self.persistence),
            (wire::cmd::SLOT_TIME, tens(self.slot_time)),
            (wire::cmd::TXTAIL, tens(self.txtail)),
            (wire::cmd::FULL_DUPLEX, u8::from(self.full_duplex)),
        ] {
            wire::encode(self.port, c, &[v], &mut out);
        }
        out
    }

    /// Checks every setting; returns the source and destination addresses.
    pub fn check(&self) -> Result<(Callsign, Callsign), Error> {
        let invalid = |field: &str, value: String, expected: &str| Error::Invalid {
            field: field.into(),
            value,
            expected: expected.into(),
        };
        if self.amateur && self.callsign.is_none() {
            return Err(invalid(
                "callsign",
                "(not set)".into(),
                "this station's licensed callsign (e.g. \"N0CALL-7\"): `amateur = true` requires it, as the source address that identifies the station on every frame",
            ));
        }
        if self.amateur && self.full_duplex {
            return Err(invalid(
                "full_duplex",
                "true".into(),
                "false with `amateur = true`: full duplex makes the TNC transmit without listening for a clear channel",
            ));
        }
        let source = Callsign::parse(self.callsign.as_deref().unwrap_or(NO_CALLSIGN))
            .map_err(|e| invalid("callsign", self.callsign.clone().unwrap_or_default(), &e))?;
        let dest = Callsign::parse(&self.destination)
            .map_err(|e| invalid("destination", self.destination.clone(), &e))?;
        if self.port > 15 {
            return Err(invalid(
                "port",
                self.port.to_string(),
                "a KISS port from 0 to 15",
            ));
        }
        if self.pid == ax25::PID_NO_LAYER3 || self.pid == 0xFF {
            return Err(invalid(
                "pid",
                format!("{:#04x}", self.pid),
                "an AX.25 protocol id other than 0xF0 (APRS: Dire Wolf drops such frames beyond 100 queued) and 0xFF (an escape), e.g. 0xCF (the default)",
            ));
        }
        if !(skywave_proto::wire::MIN_FRAME..=2048).contains(&self.mtu) {
            return Err(invalid(
                "mtu",
                self.mtu.to_string(),
                "48 to 2048 bytes (the AX.25 info field; Dire Wolf takes up to 2048)",
            ));
        }
        if !(300..=1_000_000).contains(&self.air_rate) {
            return Err(invalid(
                "air_rate",
                self.air_rate.to_string(),
                "the channel's bit rate, 300 to 1000000 (e.g. 1200 or 9600)",
            ));
        }
        if let Some(b) = self.buffer
            && b < self.mtu + HEADER
        {
            return Err(invalid(
                "buffer",
                b.to_string(),
                &format!(
                    "at least one largest frame ({} bytes: mtu + the 16-byte AX.25 header)",
                    self.mtu + HEADER
                ),
            ));
        }
        for (f, d) in [
            ("txdelay", self.txdelay),
            ("slot_time", self.slot_time),
            ("txtail", self.txtail),
        ] {
            if d > Duration::from_millis(2550) {
                return Err(invalid(
                    f,
                    format!("{d:?}"),
                    "at most 2550ms (KISS counts it in 10 ms units in one byte)",
                ));
            }
        }
        match self.endpoint() {
            Endpoint::Tcp(a) if a.is_empty() || !a.contains(':') => {
                return Err(invalid(
                    "tnc",
                    self.tnc.clone(),
                    "tcp://HOST:PORT (e.g. tcp://127.0.0.1:8001) or a serial device path",
                ));
            }
            Endpoint::Serial(_) => check_baud(self.baud)?,
            Endpoint::Tcp(_) => {}
        }
        Ok((source, dest))
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint::parse(&self.tnc)
    }

    fn link_name(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("kiss:{}/{}", self.tnc, self.port))
    }
}

/// Why two `kiss` links cannot share their TNC (see [`clash`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    /// The two links, by their place in the list given to [`clash`].
    pub first: usize,
    pub second: usize,
    /// The setting at fault, the second link's value, and what it should be.
    pub field: &'static str,
    pub value: String,
    pub expected: String,
}

/// The first pair of links (in the order given) that cannot share the TNC they both
/// name: two on one KISS port (whose would its frames be?), or a serial device at two
/// rates.
pub fn clash(cfgs: &[&KissConfig]) -> Option<Clash> {
    let keys: Vec<Endpoint> = cfgs.iter().map(|c| c.endpoint().key()).collect();
    for (second, b) in cfgs.iter().enumerate() {
        for (first, a) in cfgs[..second].iter().enumerate() {
            if keys[first] != keys[second] {
                continue;
            }
            let (field, value, expected) = if a.port == b.port {
                (
                    "port",
                    b.port.to_string(),
                    format!(
                        "a KISS port no other link on {} uses: each port is one radio channel, whose frames go to one link",
                        b.tnc
                    ),
                )
            } else if a.baud != b.baud && matches!(keys[second], Endpoint::Serial(_)) {
                (
                    "baud",
                    b.baud.to_string(),
                    format!(
                        "{}, as the other link on {} has: the links share the device, at one rate",
                        a.baud, b.tnc
                    ),
                )
            } else {
                continue;
            };
            return Some(Clash {
                first,
                second,
                field,
                value,
                expected,
            });
        }
    }
    None
}

/// What the protocol is told about a KISS link before its rate is measured.
pub fn params(cfg: &KissConfig) -> LinkParams {
    let bytes_per_s = cfg.air_rate as f64 / 8.0;
    let frame = Duration::from_secs_f64((cfg.mtu + HEADER + FRAMING) as f64 / bytes_per_s);
    let key = cfg.txdelay + cfg.txtail;
    let frames = cfg.buffer().div_ceil(cfg.mtu + HEADER) as u32;
    LinkParams {
        mtu: cfg.mtu,
        // Every station on the channel hears every frame.
        shared: true,
        paced: false,
        // The TNC's carrier sense arbitrates (as on an RFD900).
        half_duplex: false,
        rate_bps: Some(cfg.air_rate),
        rtt_hint: (key + frame * (frames + 1)) * 2 + cfg.slot_time * 4,
        loss_hint: 0.0,
        discover_mtu: false,
        frame_overhead: HEADER + FRAMING + (cfg.txdelay.as_secs_f64() * bytes_per_s) as usize,
        handoff: cfg.txdelay + cfg.slot_time,
        duty: None,
        reliable: false,
        turns: None,
    }
}

/// Starts one `kiss` link (see [`spawn_shared`] for links sharing a TNC).
pub fn spawn(cfg: KissConfig) -> Result<LinkHandle, Error> {
    let mut h = spawn_shared(vec![cfg])?;
    Ok(h.pop().expect("one link asked for, one started"))
}

/// Starts `kiss` links, in order. Links naming the same TNC share one connection to
/// it, each on its own KISS port; refused (naming both) when two name the same port of
/// one TNC, or one serial device at two rates ([`clash`]).
pub fn spawn_shared(cfgs: Vec<KissConfig>) -> Result<Vec<LinkHandle>, Error> {
    let mut checked = Vec::with_capacity(cfgs.len());
    for c in &cfgs {
        checked.push(c.check()?);
    }
    if let Some(c) = clash(&cfgs.iter().collect::<Vec<_>>()) {
        return Err(Error::Invalid {
            field: c.field.into(),
            value: c.value,
            expected: format!(
                "{} (links {} and {} clash)",
                c.expected,
                cfgs[c.first].link_name(),
                cfgs[c.second].link_name()
            ),
        });
    }
    // The links on each TNC, in the order given.
    let mut groups: Vec<(Endpoint, Vec<usize>)> = Vec::new();
    for (i, c) in cfgs.iter().enumerate() {
        let key = c.endpoint().key();
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    let mut links: Vec<Option<(KissConfig, Callsign, Callsign)>> = cfgs
        .into_iter()
        .zip(checked)
        .map(|(c, (s, d))| Some((c, s, d)))
        .collect();
    let mut handles: Vec<Option<LinkHandle>> = links.iter().map(|_| None).collect();
    for (_, members) in groups {
        let mut group = Vec::with_capacity(members.len());
        for i in members {
            let (cfg, source, dest) = links[i].take().expect("each link is in one group");
            let name = cfg.link_name();
            tracing::info!(link = %name, source = %source, destination = %dest, amateur = cfg.amateur, port = cfg.port, "kiss link configured");
            let (shared, handle, frames) = Shared::new(name);
            handles[i] = Some(handle);
            group.push((shared, frames, cfg, source, dest));
        }
        let first = &group[0].2;
        let ports = group
            .iter()
            .map(|(shared, _, cfg, _, _)| tnc::Port {
                port: cfg.port,
                name: shared.name.clone(),
                counters: shared.counters.clone(),
            })
            .collect();
        let ios = tnc::spawn(first.tnc.clone(), first.endpoint(), first.baud, ports);
        for ((shared, frames, cfg, source, dest), io) in group.into_iter().zip(ios) {
            tokio::spawn(async move {
                let _ = run(shared, frames, cfg, source, dest, io).await;
            });
        }
    }
    Ok(handles
        .into_iter()
        .map(|h| h.expect("each link is in one group"))
        .collect())
}

/// The driver's state between the TNC and the daemon, time passed in.
#[derive(Debug)]
pub(crate) struct KissTx {
    credit: ModemCredit<Instant>,
    port: u8,
    source: Callsign,
    dest: Callsign,
    pid: u8,
    mtu: usize,
    txbuf: bool,
    queue: Option<Bytes>,
    /// The waiting frame goes in a turn the daemon holds ([`LinkHandle::turn`]).
    queue_in_turn: bool,
    /// The configured persistence and slot time, as KISS sets them.
    persistence: u8,
    slot_tens: u8,
    /// The TNC is set to key at once (persistence 255, one 10 ms slot) rather than
    /// draw its configured backoff.
    keys_at_once: bool,
    /// KISS bytes for the TNC, not yet handed to it.
    pub out: Vec<u8>,
    /// Where the credit came from last time we looked (changes are logged).
    was: Option<CreditSource>,
    /// The first query, whether any was answered, and whether a TNC that never answers
    /// was reported.
    first_ask: Option<Instant>,
    answered: bool,
    told_silent: bool,
    told: RateTold,
    base: LinkParams,
}

/// What a received KISS frame was.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Rx {
    /// Ours: a skywave frame.
    Frame(Bytes),
    /// The TNC's answer about its queue.
    Queued(usize),
    /// Dropped, with why.
    Dropped(&'static str),
}

impl KissTx {
    pub(crate) fn new(cfg: &KissConfig, source: Callsign, dest: Callsign, now: Instant) -> KissTx {
        // Airtime: the bits the channel carries, bit stuffing (up to 1 in 6) and each
        // frame's flags and FCS counted; a key-up (TXDELAY and TXTAIL) for each largest
        // frame too, as a TNC may key up for every one, spread into the rate (counted per
        // write it would exceed a small buffer).
        let air = cfg.air_rate as f64 / 8.0 * 5.0 / 6.0;
        let frame_time = (cfg.mtu + HEADER + FRAMING) as f64 / air;
        let key = (cfg.txdelay + cfg.txtail).as_secs_f64();
        let rate = air * frame_time / (frame_time + key);
        let per_frame = FRAMING;
        let poll = Duration::from_secs_f64((frame_time / 4.0).clamp(0.05, 0.25));
        KissTx {
            credit: ModemCredit::new(Pacer::full(now, rate, per_frame, cfg.buffer()))
                .with_queries(ANSWER_TIMEOUT, poll),
            port: cfg.port,
            source,
            dest,
            pid: cfg.pid,
            mtu: cfg.mtu,
            txbuf: cfg.txbuf,
            queue: None,
            queue_in_turn: false,
            persistence: cfg.persistence,
            slot_tens: tens(cfg.slot_time),
            keys_at_once: false,
            out: cfg.parameter_frames(),
            was: None,
            first_ask: None,
            answered: false,
            told_silent: false,
            told: RateTold::default(),
            base: params(cfg),
        }
    }

    /// Frame bytes the daemon may send now.
    pub(crate) fn room(&mut self, now: Instant) -> usize {
        if self.queue.is_some() {
            return 0;
        }
        let r = self.credit.room(now).saturating_sub(HEADER).min(self.mtu);
        if r < MIN_ROOM.min(self.mtu) { 0 } else { r }
    }

    /// A frame from the daemon; `in_turn`: the daemon holds the channel for it
    /// ([`LinkHandle::turn`]).
    pub(crate) fn offer(
        &mut self,
        name: &str,
        f: Bytes,
        in_turn: bool,
        now: Instant,
        counters: &LinkCounters,
    ) {
        // (An empty frame, the daemon's "nothing more to send": no over to end here.)
        let room = self.room(now);
        self.queue = accept_frame(name, f, self.mtu, room, counters);
        self.queue_in_turn = in_turn;
    }

    /// Queues what may go to the TNC now: a `TXBUF:` query when one is due, the waiting
    /// frame when the TNC has room for it.
    pub(crate) fn pump(&mut self, now: Instant, counters: &LinkCounters) {
        if self.txbuf && self.credit.ask_due(now) {
            wire::encode(self.port, wire::cmd::SET_HARDWARE, b"TXBUF:", &mut self.out);
            self.credit.asked(now);
            self.first_ask.get_or_insert(now);
        }
        // The held turn's frames have all left the TNC's queue: its configured backoff
        // again, for whatever else it sends meanwhile (its beacons, other clients) and
        // for after the daemon goes away. Not sooner: a TNC may read the settings when
        // it starts waiting for a frame already queued.
        if self.keys_at_once && self.queue.is_none() && self.credit.held(now) == 0 {
            self.key_at_once(false);
        }
        let Some(f) = &self.queue else {
            return;
        };
        let len = HEADER + f.len();
        if len > self.credit.room(now) {
            return;
        }
        let f = self.queue.take().expect("checked");
        // In a turn the daemon holds, nobody else is about to start: the TNC's random
        // wait (1 / persistence slots, 0.4 s at Dire Wolf's defaults) would only leave
        // the channel idle. It still waits for a clear channel. Out of one, the
        // configured backoff again, for whoever else may contend. A TNC reads these
        // when it next waits to key, so they go just ahead of the frame.
        if self.queue_in_turn != self.keys_at_once {
            self.key_at_once(self.queue_in_turn);
        }
        let mut ax = Vec::with_capacity(len);
        ax25::encode_ui(&self.dest, &self.source, self.pid, &f, &mut ax);
        wire::encode(self.port, wire::cmd::DATA, &ax, &mut self.out);
        self.credit.wrote(now, ax.len());
        LinkCounters::add(&counters.frames_out, 1);
        LinkCounters::add(&counters.bytes_out, f.len() as u64);
    }

    /// Sets the TNC to key once the channel is clear (`yes`: persistence 255, a 10 ms
    /// slot) or to draw its configured backoff.
    fn key_at_once(&mut self, yes: bool) {
        self.keys_at_once = yes;
        let (p, slot) = if yes {
            (255, 1)
        } else {
            (self.persistence, self.slot_tens)
        };
        wire::encode(self.port, wire::cmd::PERSISTENCE, &[p], &mut self.out);
        wire::encode(self.port, wire::cmd::SLOT_TIME, &[slot], &mut self.out);
    }

    /// A frame from the TNC on this link's port: what it held; counters updated.
    pub(crate) fn receive(&mut self, f: &wire::Frame, now: Instant, counters: &LinkCounters) -> Rx {
        let rx = self.classify(f);
        match &rx {
            Rx::Frame(b) => {
                LinkCounters::add(&counters.frames_in, 1);
                LinkCounters::add(&counters.bytes_in, b.len() as u64);
            }
            Rx::Queued(n) => {
                self.answered = true;
                self.credit.answered(now, *n);
            }
            Rx::Dropped(why) => {
                tracing::debug!(
                    port = f.port,
                    command = f.command,
                    len = f.data.len(),
                    why,
                    "kiss: frame dropped"
                );
                LinkCounters::add(&counters.dropped_frames, 1);
                if why.starts_with("not ours") {
                    LinkCounters::add(&counters.foreign_frames, 1);
                } else {
                    LinkCounters::add(&counters.garbage_bytes, f.data.len() as u64 + 1);
                }
            }
        }
        rx
    }

    fn classify(&self, f: &wire::Frame) -> Rx {
        match f.command {
            wire::cmd::DATA => match ax25::parse_ui(&f.data) {
                Err(e) => Rx::Dropped(e.as_str()),
                Ok(ui) if ui.dest != self.dest => Rx::Dropped("not ours: another destination"),
                Ok(ui) if ui.pid != self.pid => Rx::Dropped("not ours: another protocol id"),
                Ok(ui) if ui.info.is_empty() => Rx::Dropped("an empty info field"),
                Ok(ui) => Rx::Frame(Bytes::copy_from_slice(ui.info)),
            },
            wire::cmd::SET_HARDWARE => {
                match f
                    .data
                    .strip_prefix(b"TXBUF:")
                    .and_then(|n| std::str::from_utf8(n).ok())
                    .and_then(|n| n.trim().parse::<usize>().ok())
                {
                    Some(n) => Rx::Queued(n),
                    None => Rx::Dropped("an unknown SetHardware answer"),
                }
            }
            _ => Rx::Dropped("a KISS command a TNC does not send"),
        }
    }

    /// Notes a change of where the credit comes from; returns a message to log, and
    /// whether it is a warning.
    fn source_change(&mut self, now: Instant) -> Option<(bool, String)> {
        let s = self.credit.source(now);
        let was = self.was.replace(s);
        let rate = self.credit.pacer().rate();
        match (was, s) {
            (Some(CreditSource::Reports), CreditSource::Airtime) => Some((
                true,
                format!(
                    "the TNC stopped answering TXBUF queries: pacing by airtime at {rate:.0} B/s until it answers again"
                ),
            )),
            (None, CreditSource::Airtime) if !self.txbuf => Some((
                false,
                format!("TXBUF queries off: pacing by airtime at {rate:.0} B/s"),
            )),
            (Some(CreditSource::Airtime), CreditSource::Reports) => Some((
                false,
                "the TNC answers TXBUF queries: credit from its queue".into(),
            )),
            (_, CreditSource::Airtime)
                if !self.answered
                    && !self.told_silent
                    && self.first_ask.is_some_and(|t| now >= t + ANSWER_TIMEOUT) =>
            {
                self.told_silent = true;
                Some((
                    false,
                    format!(
                        "the TNC does not answer TXBUF queries (many hardware TNCs do not): pacing by airtime at {rate:.0} B/s"
                    ),
                ))
            }
            _ => None,
        }
    }

    /// The link's parameters with the measured rate, when it differs enough from what
    /// the protocol was last told (a fifth), at most once a minute after the first.
    pub(crate) fn rate_update(&mut self, now: Instant) -> Option<LinkParams> {
        let r = self.told.update(self.credit.measured_rate(), now)?;
        Some(self.measured_params(r))
    }

    fn measured_params(&self, bytes_per_s: f64) -> LinkParams {
        LinkParams {
            rate_bps: Some((bytes_per_s * 8.0).round().max(1.0) as u64),
            // The measured rate counts AX.25 bytes and already includes key-up, flags
            // and stuffing: only the header is overhead.
            frame_overhead: HEADER,
            ..self.base
        }
    }

    /// The current parameters (measured rate if any).
    pub(crate) fn params(&self) -> LinkParams {
        match self.told.rate() {
            Some(r) => self.measured_params(r),
            None => self.base,
        }
    }

    fn reset(&mut self, now: Instant, cfg: &KissConfig) {
        self.credit.reset(now);
        self.out = cfg.parameter_frames();
        self.keys_at_once = false;
        self.was = None;
    }
}

/// One link on its TNC's port: up while the TNC's stream is open.
async fn run(
    shared: Shared,
    mut frames: mpsc::Receiver<Bytes>,
    cfg: KissConfig,
    source: Callsign,
    dest: Callsign,
    mut io: PortIo,
) -> Result<(), Closed> {
    let mut tx = KissTx::new(&cfg, source, dest, Instant::now());
    loop {
        let state = &mut io.state;
        let opened = wait_away_until(&shared, &mut frames, async {
            state.wait_for(|s| s.up).await.map(|s| s.opened)
        })
        .await?
        // (The TNC task has stopped: it stops only once every link has.)
        .map_err(|_| Closed)?;
        tx.reset(Instant::now(), &cfg);
        tracing::info!(link = %shared.name, tnc = %cfg.tnc, port = cfg.port, "TNC link up");
        shared.emit(LinkEvent::Up(tx.params())).await?;
        let reason = session(&shared, &mut io, opened, &mut frames, &mut tx, &cfg).await?;
        shared.down(reason).await?;
    }
}

/// Carries frames until the TNC's stream of opening `opened` closes (why); `Err` when
/// the daemon drops the handle.
async fn session(
    shared: &Shared,
    io: &mut PortIo,
    opened: u64,
    frames: &mut mpsc::Receiver<Bytes>,
    tx: &mut KissTx,
    cfg: &KissConfig,
) -> Result<String, Closed> {
    let counters = &shared.counters;
    // A stall takes the link down (with why) until the TNC sends again.
    let mut stalled = false;
    loop {
        let now = Instant::now();
        tx.pump(now, counters);
        if !tx.out.is_empty() {
            io.write(opened, std::mem::take(&mut tx.out));
        }
        match tx.source_change(now) {
            Some((true, m)) => tracing::warn!(link = %shared.name, "{m}"),
            Some((false, m)) => tracing::info!(link = %shared.name, "{m}"),
            None => {}
        }
        if let Some(p) = tx.rate_update(now) {
            tracing::info!(link = %shared.name, rate_bps = ?p.rate_bps, "TNC drain rate measured");
            if !stalled {
                shared.emit(LinkEvent::Up(p)).await?;
            }
        }
        let stall = tx
            .credit
            .stalled_since(now)
            .filter(|&s| now >= s + cfg.stall_timeout);
        match (stall, stalled) {
            (Some(since), false) => {
                stalled = true;
                let held = tx.credit.held(now);
                shared
                    .down(format!(
                        "the TNC has held {held} bytes for {:.0} s without sending any (TXBUF not draining): the channel may be busy or the transmitter not keying; waiting for it",
                        (now - since).as_secs_f64()
                    ))
                    .await?;
            }
            (None, true) => {
                stalled = false;
                tracing::info!(link = %shared.name, "the TNC is sending again");
                shared.emit(LinkEvent::Up(tx.params())).await?;
            }
            _ => {}
        }
        if stalled {
            shared.set_room(0);
        } else {
            shared.set_room(tx.room(now));
        }
        let busy = tx.credit.changing(now) || tx.queue.is_some();
        let wake = busy.then(|| now + TICK);
        tokio::select! {
            f = io.frames.recv() => match f {
                Some(f) => {
                    if let Rx::Frame(f) = tx.receive(&f, Instant::now(), counters) {
                        shared.emit(LinkEvent::Frame(f)).await?;
                    }
                }
                // (The TNC task has stopped.)
                None => return Err(Closed),
            },
            r = io.state.changed() => {
                r.map_err(|_| Closed)?;
                let s = io.state.borrow_and_update();
                if !s.up || s.opened != opened {
                    return Ok(s.reason.clone());
                }
            },
            f = frames.recv(), if tx.queue.is_none() => match f {
                Some(f) => {
                    let now = Instant::now();
                    tx.offer(&shared.name, f, shared.turn_held(), now, counters);
                    tx.pump(now, counters);
                    shared.took_frame(if stalled { 0 } else { tx.room(now) });
                }
                None => {
                    // The daemon is going: the TNC keeps its configured backoff (as far
                    // as a last write reaches it).
                    if tx.keys_at_once {
                        tx.key_at_once(false);
                        io.write(opened, std::mem::take(&mut tx.out));
                    }
                    return Err(Closed);
                }
            },
            _ = sleep_until(wake) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(c: &KissConfig) -> String {
        c.check().unwrap_err().to_string()
    }

    #[test]
    fn amateur_use_needs_a_callsign_and_carrier_sense() {
        let mut c = KissConfig::new("tcp://127.0.0.1:8001");
        c.amateur = true;
        let e = refused(&c);
        assert!(
            e.contains("'callsign'") && e.contains("amateur = true") && e.contains("N0CALL-7"),
            "{e}"
        );
        c.callsign = Some("N0CALL-7".into());
        let (src, dest) = c.check().unwrap();
        assert_eq!(
            (src.to_string(), dest.to_string()),
            ("N0CALL-7".into(), "SKYWAV".into())
        );
        c.full_duplex = true;
        let e = refused(&c);
        assert!(
            e.contains("full_duplex") && e.contains("clear channel"),
            "{e}"
        );
        // Not amateur: no callsign needed (NOCALL is the source), full duplex allowed.
        let mut c = KissConfig::new("tcp://127.0.0.1:8001");
        c.full_duplex = true;
        assert_eq!(c.check().unwrap().0.to_string(), NO_CALLSIGN);
    }

    #[test]
    fn bad_settings_name_the_setting() {
        let base = KissConfig::new("tcp://127.0.0.1:8001");
        let cases: Vec<(KissConfig, &str)> = vec![
            (
                KissConfig {
                    pid: 0xF0,
                    ..base.clone()
                },
                "pid",
            ),
            (
                KissConfig {
                    callsign: Some("N0CALL-99".into()),
                    ..base.clone()
                },
                "callsign",
            ),
            (
                KissConfig {
                    destination: "SKY WAVE".into(),
                    ..base.clone()
                },
                "destination",
            ),
            (
                KissConfig {
                    port: 16,
                    ..base.clone()
                },
                "port",
            ),
            (
                KissConfig {
                    mtu: 20,
                    ..base.clone()
                },
                "mtu",
            ),
            (
                KissConfig {
                    buffer: Some(100),
                    ..base.clone()
                },
                "buffer",
            ),
            (
                KissConfig {
                    txdelay: Duration::from_secs(3),
                    ..base.clone()
                },
                "txdelay",
            ),
            (
                KissConfig {
                    tnc: "tcp://nowhere".into(),
                    ..base.clone()
                },
                "tnc",
            ),
            (
                KissConfig {
                    tnc: "/dev/ttyUSB0".into(),
                    baud: 1234,
                    ..base.clone()
                },
                "baud",
            ),
        ];
        for (c, field) in cases {
            let e = refused(&c);
            assert!(e.contains(&format!("'{field}'")), "{field}: {e}");
        }
    }

    #[test]
    fn links_sharing_a_tnc_need_their_own_ports_and_one_serial_rate() {
        let on = |tnc: &str, port: u8| KissConfig {
            port,
            ..KissConfig::new(tnc)
        };
        let a = on("tcp://127.0.0.1:8001", 0);
        let b = on("tcp://127.0.0.1:8001", 1);
        let other = on("tcp://127.0.0.1:8002", 1);
        assert_eq!(clash(&[&a, &b, &other]), None);
        let c = clash(&[&a, &b, &other, &on("tcp://127.0.0.1:8001", 1)]).unwrap();
        assert_eq!((c.first, c.second, c.field), (1, 3, "port"));
        assert!(
            c.expected.contains("tcp://127.0.0.1:8001"),
            "{}",
            c.expected
        );
        // A serial device: one rate; a path through a symlink is the same device.
        let dir = tempfile::tempdir().unwrap();
        let dev = dir.path().join("ttyUSB0");
        std::fs::write(&dev, b"").unwrap();
        let by_id = dir.path().join("usb-TNC-if00");
        std::os::unix::fs::symlink(&dev, &by_id).unwrap();
        let s0 = on(dev.to_str().unwrap(), 0);
        let mut s1 = on(by_id.to_str().unwrap(), 1);
        assert_eq!(clash(&[&s0, &s1]), None);
        s1.baud = 19_200;
        let c = clash(&[&s0, &s1]).unwrap();
        assert_eq!((c.field, c.value.as_str()), ("baud", "19200"));
        assert!(c.expected.starts_with("9600"), "{}", c.expected);
        // Over TCP the rate means nothing.
        let mut t1 = b.clone();
        t1.baud = 19_200;
        assert_eq!(clash(&[&a, &t1]), None);
        // Started together, the clash is refused naming both links.
        let e = spawn_shared(vec![a.clone(), on("tcp://127.0.0.1:8001", 0)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'port'") && e.matches("kiss:tcp://127.0.0.1:8001/0").count() == 2,
            "{e}"
        );
    }

    #[test]
    fn frames_go_out_as_ui_frames_and_the_room_counts_the_header() {
        let c = KissConfig {
            callsign: Some("N0CALL-1".into()),
            ..KissConfig::new("tcp://127.0.0.1:8001")
        };
        let (src, dest) = c.check().unwrap();
        let t0 = Instant::now();
        let mut tx = KissTx::new(&c, src, dest, t0);
        let counters = LinkCounters::default();
        tx.out.clear();
        // Before the TNC has answered, airtime rules; a query goes first.
        tx.pump(t0, &counters);
        assert_eq!(tx.out, b"\xC0\x06TXBUF:\xC0");
        let answer = &wire::Decoder::new().push(b"\xC0\x06TXBUF:0\xC0")[0];
        assert_eq!(tx.receive(answer, t0, &counters), Rx::Queued(0));
        assert_eq!(
            tx.room(t0),
            256,
            "two frames may wait; one is at most the MTU"
        );
        tx.out.clear();
        tx.offer("t", Bytes::from_static(b"skywave"), false, t0, &counters);
        tx.pump(t0, &counters);
        let mut d = wire::Decoder::new();
        let f = d.push(&tx.out);
        assert_eq!(f.len(), 1);
        let ui = ax25::parse_ui(&f[0].data).unwrap();
        assert_eq!(
            (ui.source, ui.dest, ui.pid, ui.info),
            (src, dest, 0xCF, &b"skywave"[..])
        );
        assert_eq!(LinkCounters::get(&counters.frames_out), 1);
        // 544 bytes allowed, 23 held: the next frame is still a whole one.
        assert_eq!(tx.credit.held(t0), 16 + 7);
        // The same bytes coming from the TNC are read back as the frame.
        let got = tx.receive(&f[0], t0, &counters);
        assert_eq!(got, Rx::Frame(Bytes::from_static(b"skywave")));
    }

    /// Frames in a turn the daemon holds have the TNC key at once (persistence 255, a
    /// 10 ms slot); the first frame out of one brings the configured backoff back, and
    /// so does the TNC's queue emptying after the turn. The settings go just ahead of
    /// the frame, once per change.
    #[test]
    fn frames_in_a_held_turn_key_at_once_and_others_draw_the_backoff() {
        let c = KissConfig {
            callsign: Some("N0CALL-1".into()),
            persistence: 63,
            slot_time: Duration::from_millis(100),
            ..KissConfig::new("tcp://127.0.0.1:8001")
        };
        let (src, dest) = c.check().unwrap();
        let t0 = Instant::now();
        let mut tx = KissTx::new(&c, src, dest, t0);
        let counters = LinkCounters::default();
        let answer = &wire::Decoder::new().push(b"\xC0\x06TXBUF:0\xC0")[0];
        // What the TNC is told for each frame: (command, value) of the parameters
        // ahead of it.
        let send = |tx: &mut KissTx, in_turn: bool| {
            tx.pump(t0, &counters);
            tx.receive(answer, t0, &counters);
            tx.out.clear();
            tx.offer("t", Bytes::from_static(b"frame"), in_turn, t0, &counters);
            tx.pump(t0, &counters);
            let got = wire::Decoder::new().push(&tx.out);
            assert_eq!(got.last().unwrap().command, wire::cmd::DATA);
            got[..got.len() - 1]
                .iter()
                .filter(|f| f.command != wire::cmd::SET_HARDWARE)
                .map(|f| (f.command, f.data[0]))
                .collect::<Vec<_>>()
        };
        let at_once = vec![(wire::cmd::PERSISTENCE, 255), (wire::cmd::SLOT_TIME, 1)];
        let backoff = vec![(wire::cmd::PERSISTENCE, 63), (wire::cmd::SLOT_TIME, 10)];
        assert_eq!(
            send(&mut tx, false),
            vec![],
            "contended: the configured backoff"
        );
        assert_eq!(send(&mut tx, true), at_once);
        assert_eq!(send(&mut tx, true), vec![], "once per change");
        assert_eq!(send(&mut tx, false), backoff);
        assert_eq!(send(&mut tx, false), vec![]);
        assert_eq!(send(&mut tx, true), at_once);
        // A TNC that reconnects has the configured settings again.
        tx.reset(t0, &c);
        tx.out.clear();
        assert_eq!(send(&mut tx, true), at_once);
        // Once the turn's frames have left the TNC's queue, and not before, it is set
        // back to its configured backoff, for whatever else it sends meanwhile.
        let told = |tx: &mut KissTx| {
            tx.out.clear();
            tx.pump(t0, &counters);
            wire::Decoder::new()
                .push(&tx.out)
                .iter()
                .filter(|f| f.command != wire::cmd::SET_HARDWARE)
                .map(|f| (f.command, f.data[0]))
                .collect::<Vec<_>>()
        };
        assert_eq!(told(&mut tx), vec![], "the frame is still queued");
        tx.receive(answer, t0, &counters);
        assert_eq!(told(&mut tx), backoff);
        assert_eq!(told(&mut tx), vec![]);
        assert_eq!(send(&mut tx, true), at_once);
    }
}
