//! `hf-modem`: an AT-command HF data modem (Codan 3012 / Barrett style, as LBARD drives
//! them) on a serial port.
//!
//! The driver sets the modem up (`ATE0`, `AT&I=` self id, `AT%C0` compression off,
//! `AT&C=` listen channels, any extra commands), then dials the configured station
//! (`ATD`) or answers a `RING` (`ATA`). Once `CONNECT` comes the link is up: frames are
//! framed as on a `serial` link and paced so the modem's buffer never overruns (see
//! [`skywave_node::pacer`]: airtime at the modem rate, one direction at a time, confirmed a
//! latency later). `NO CARRIER` (the modem's own report of a lost call, the in-band
//! stand-in for DCD) takes the link down; the caller redials after `redial`, the answerer
//! waits for the next ring. Dropping the handle hangs up (`+++`, `ATH`).

pub mod emulator;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::device::Device;
use crate::link::{Backoff, Closed, Shared, StreamRx, StreamTx};
use crate::serial::{StreamSpec, check_baud, lookup_profile};
use crate::stream::{self, Ended, Hook};
use crate::{Error, LinkCounters, LinkEvent, LinkHandle};

pub use emulator::{HfConfig, HfModems, ModemStats};

/// `[[link]] type = "hf-modem"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HfModemConfig {
    pub device: PathBuf,
    #[serde(default = "default_baud")]
    pub baud: u32,
    /// The station to call (`ATD<station>`); unset: answer calls instead.
    #[serde(default)]
    pub station: Option<String>,
    /// This station's id (`AT&I=<id>`); unset: the modem's own setting.
    #[serde(default)]
    pub self_id: Option<String>,
    /// Channels to listen and call on (`AT&C=1,2,3`); empty: the modem's own list.
    #[serde(default)]
    pub channels: Vec<String>,
    /// Link profile or spec describing the modem's channel, for pacing and for what the
    /// protocol is told (rate, latency, turnaround, buffer).
    #[serde(default = "default_profile")]
    pub profile: String,
    /// Leave the modem's compression on (`AT%C1`). Off by default (`AT%C0`): it adds
    /// seconds of latency (7-10 s instead of 4 s on the HF Data Modem 3012).
    #[serde(default)]
    pub compression: bool,
    /// More AT commands sent after the standard ones, each answered `OK`
    /// (e.g. `"AT&K=3"` for RTS/CTS flow control on a wired port).
    #[serde(default)]
    pub init: Vec<String>,
    /// How long a dial may take to connect.
    #[serde(
        default = "default_call_timeout",
        deserialize_with = "crate::de::duration"
    )]
    pub call_timeout: Duration,
    /// Wait before redialling after a failed or dropped call.
    #[serde(default = "default_redial", deserialize_with = "crate::de::duration")]
    pub redial: Duration,
    /// Silence around `+++` (the modem's escape guard time).
    #[serde(default = "default_guard", deserialize_with = "crate::de::duration")]
    pub guard: Duration,
    /// How long the modem may take to answer a command.
    #[serde(
        default = "default_command_timeout",
        deserialize_with = "crate::de::duration"
    )]
    pub command_timeout: Duration,
    #[serde(default)]
    pub name: Option<String>,
}

fn default_baud() -> u32 {
    9600
}
fn default_profile() -> String {
    "hf-modem".into()
}
fn default_call_timeout() -> Duration {
    Duration::from_secs(120)
}
fn default_redial() -> Duration {
    Duration::from_secs(10)
}
fn default_guard() -> Duration {
    Duration::from_secs(1)
}
fn default_command_timeout() -> Duration {
    Duration::from_secs(5)
}

impl HfModemConfig {
    pub fn new(device: impl Into<PathBuf>) -> HfModemConfig {
        HfModemConfig {
            device: device.into(),
            baud: default_baud(),
            station: None,
            self_id: None,
            channels: Vec::new(),
            profile: default_profile(),
            compression: false,
            init: Vec::new(),
            call_timeout: default_call_timeout(),
            redial: default_redial(),
            guard: default_guard(),
            command_timeout: default_command_timeout(),
            name: None,
        }
    }

    /// The AT commands sent after the modem is opened, in order.
    pub fn setup_commands(&self) -> Vec<String> {
        let mut c = vec!["ATE0".to_string(), "ATH".to_string()];
        if let Some(id) = &self.self_id {
            c.push(format!("AT&I={id}"));
        }
        c.push(if self.compression { "AT%C1" } else { "AT%C0" }.to_string());
        if !self.channels.is_empty() {
            c.push(format!("AT&C={}", self.channels.join(",")));
        }
        c.extend(self.init.iter().cloned());
        c
    }
}

fn check_word(field: &str, v: &str) -> Result<(), Error> {
    if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Error::Invalid {
            field: field.into(),
            value: v.into(),
            expected: "letters and digits only (it is sent in an AT command)".into(),
        });
    }
    Ok(())
}

pub fn spawn(cfg: HfModemConfig) -> Result<LinkHandle, Error> {
    spawn_with(cfg, Box::new(()))
}

/// Starts the driver; its task holds `keep` (an emulator it talks to) until it ends.
pub(crate) fn spawn_with(
    cfg: HfModemConfig,
    keep: Box<dyn std::any::Any + Send>,
) -> Result<LinkHandle, Error> {
    check_baud(cfg.baud)?;
    if let Some(s) = &cfg.station {
        check_word("station", s)?;
    }
    if let Some(s) = &cfg.self_id {
        check_word("self_id", s)?;
    }
    for c in &cfg.channels {
        check_word("channels", c)?;
    }
    for c in &cfg.init {
        if !c.to_ascii_uppercase().starts_with("AT") || c.contains(['\r', '\n']) {
            return Err(Error::Invalid {
                field: "init".into(),
                value: c.clone(),
                expected: "AT commands, one per string, without line ends".into(),
            });
        }
    }
    let mut profile = lookup_profile("profile", &cfg.profile)?;
    if cfg.compression {
        // Compression on roughly doubles the modem's latency.
        profile.up.delay *= 2;
        profile.down.delay *= 2;
    }
    let spec = StreamSpec::profile(&profile)?;
    let name = cfg
        .name
        .clone()
        .unwrap_or_else(|| format!("hf-modem:{}", cfg.device.display()));
    let (shared, handle, frames) = Shared::new(name);
    tokio::spawn(async move {
        let _ = run(shared, frames, cfg, spec).await;
        drop(keep);
    });
    Ok(handle)
}

/// Why waiting on the modem stopped.
enum Wait {
    Closed,
    Device(String),
}

impl From<Closed> for Wait {
    fn from(_: Closed) -> Wait {
        Wait::Closed
    }
}

/// The modem's command-mode text: lines in (CR or LF ends one), and after a `CONNECT`
/// line the bytes that follow it, which start the data stream.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    partial: Vec<u8>,
    lines: std::collections::VecDeque<String>,
    /// Bytes after a `CONNECT` line: the start of the data stream.
    pub rest: Vec<u8>,
    /// The `CONNECT` line's CR ended a read: its LF starts the next one.
    pub skip_lf: bool,
}

impl Lines {
    /// The longest line kept; the rest of a longer one is dropped.
    pub const MAX_LINE: usize = 512;

    /// The next complete, non-empty line.
    pub fn pop(&mut self) -> Option<String> {
        self.lines.pop_front()
    }

    /// Adds what the modem sent; stops at the end of a `CONNECT` line, keeping what
    /// follows in [`Lines::rest`].
    pub fn take(&mut self, data: &[u8]) {
        for (k, &b) in data.iter().enumerate() {
            if b == b'\r' || b == b'\n' {
                let line = String::from_utf8_lossy(&self.partial).trim().to_string();
                self.partial.clear();
                if !line.is_empty() {
                    tracing::debug!(line, "from modem");
                    let connect = line.starts_with("CONNECT");
                    self.lines.push_back(line);
                    if connect {
                        // What follows the line's end (CR LF) is data, not text.
                        let skip = usize::from(b == b'\r' && data.get(k + 1) == Some(&b'\n'));
                        self.rest = data[k + 1 + skip..].to_vec();
                        self.skip_lf = b == b'\r' && k + 1 == data.len();
                        return;
                    }
                }
            } else if self.partial.len() < Self::MAX_LINE {
                self.partial.push(b);
            }
        }
    }
}

/// Watches a call's data stream for the modem's `NO CARRIER`, which may come split
/// over reads, and drops the LF of a `CONNECT` line whose CR ended the previous read.
#[derive(Debug, Default)]
pub(crate) struct CarrierWatch {
    /// The last bytes seen, for a message split over reads.
    tail: Vec<u8>,
    skip_lf: bool,
}

impl CarrierWatch {
    pub fn new(skip_lf: bool) -> CarrierWatch {
        CarrierWatch {
            tail: Vec::new(),
            skip_lf,
        }
    }

    /// What a received chunk holds: a leading LF to skip, and where `NO CARRIER`
    /// starts (0 when it began in an earlier chunk).
    pub fn check(&mut self, data: &[u8]) -> Hook {
        if data.is_empty() {
            return Hook::default();
        }
        let skip = usize::from(std::mem::take(&mut self.skip_lf) && data.first() == Some(&b'\n'));
        let mut w = std::mem::take(&mut self.tail);
        let before = w.len();
        w.extend_from_slice(data);
        if let Some(pos) = w.windows(10).position(|x| x == b"NO CARRIER") {
            let stop = (
                pos.saturating_sub(before),
                "call dropped (NO CARRIER)".into(),
            );
            return Hook {
                skip,
                stop: Some(stop),
            };
        }
        self.tail = w[w.len().saturating_sub(9)..].to_vec();
        Hook { skip, stop: None }
    }
}

/// The start of a call's data stream, from what followed the `CONNECT` line in the same
/// read: the data in it, the watch for the rest of the call, and why the call ended if
/// it already did (a `NO CARRIER` there is as final as one read later).
pub(crate) fn call_start(text: &mut Lines) -> (Vec<u8>, CarrierWatch, Option<String>) {
    let rest = std::mem::take(&mut text.rest);
    let mut watch = CarrierWatch::new(text.skip_lf);
    let first = watch.check(&rest);
    let data = rest[first.data(rest.len())].to_vec();
    (data, watch, first.stop.map(|s| s.1))
}

/// The modem's command side: lines in, commands out.
struct Port<'a> {
    dev: &'a Device,
    text: Lines,
}

impl<'a> Port<'a> {
    fn new(dev: &'a Device) -> Port<'a> {
        Port {
            dev,
            text: Lines::default(),
        }
    }

    async fn send(&self, cmd: &str) -> Result<(), Wait> {
        tracing::debug!(command = cmd, "to modem");
        self.dev
            .write_all(format!("{cmd}\r").as_bytes())
            .await
            .map_err(|e| Wait::Device(format!("write to the modem failed: {e}")))
    }

    /// The next non-empty line, or `None` at `deadline`. Frames the daemon sends
    /// meanwhile are dropped and counted (the room says 0).
    async fn line(
        &mut self,
        shared: &Shared,
        frames: &mut mpsc::Receiver<Bytes>,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Option<String>, Wait> {
        let mut buf = [0u8; 1024];
        loop {
            if let Some(l) = self.text.pop() {
                return Ok(Some(l));
            }
            tokio::select! {
                r = self.dev.read(&mut buf) => match r {
                    Ok(0) => return Err(Wait::Device("end of file on the modem's port".into())),
                    Ok(n) => self.text.take(&buf[..n]),
                    Err(e) => return Err(Wait::Device(format!("read from the modem failed: {e}"))),
                },
                f = frames.recv() => match f {
                    // (Nothing to send: no over to end while the call is set up.)
                    Some(f) if f.is_empty() => {}
                    Some(_) => {
                        LinkCounters::add(&shared.counters.dropped_frames, 1);
                        shared.took_frame(0);
                    }
                    None => return Err(Wait::Closed),
                },
                _ = crate::link::sleep_until(deadline) => return Ok(None),
            }
        }
    }

    /// Sends `cmd` and waits for `OK`.
    async fn command(
        &mut self,
        shared: &Shared,
        frames: &mut mpsc::Receiver<Bytes>,
        cmd: &str,
        timeout: Duration,
    ) -> Result<Result<(), String>, Wait> {
        self.send(cmd).await?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match self.line(shared, frames, Some(deadline)).await? {
                Some(l) if l == "OK" => return Ok(Ok(())),
                Some(l) if l.starts_with("ERROR") => {
                    return Ok(Err(format!("the modem refused '{cmd}' (ERROR)")));
                }
                Some(_) => continue,
                None => {
                    return Ok(Err(format!(
                        "the modem did not answer '{cmd}' within {} s",
                        timeout.as_secs_f64()
                    )));
                }
            }
        }
    }
}

/// Why a call attempt ended without a call.
enum NoCall {
    /// Worth retrying after the redial delay.
    Retry(String),
    Wait(Wait),
}

impl From<Wait> for NoCall {
    fn from(w: Wait) -> NoCall {
        NoCall::Wait(w)
    }
}

async fn run(
    shared: Shared,
    mut frames: mpsc::Receiver<Bytes>,
    cfg: HfModemConfig,
    spec: StreamSpec,
) -> Result<(), Closed> {
    let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(10));
    let mut tx = StreamTx::new(spec.pacer(Instant::now()), spec.params.mtu);
    let mut rx = StreamRx::default();
    let mut failures = 0u32;
    loop {
        let dev = match Device::open(&cfg.device, cfg.baud) {
            Ok(d) => d,
            Err(e) => {
                if failures == 0 {
                    tracing::warn!(link = %shared.name, device = %cfg.device.display(), error = %e, "cannot open the modem; retrying until it appears");
                }
                failures += 1;
                stream::wait_down(&shared, &mut frames, &mut tx, backoff.next_delay()).await?;
                continue;
            }
        };
        failures = 0;
        backoff.reset();
        let reason =
            match modem_session(&shared, &dev, &mut frames, &cfg, &spec, &mut tx, &mut rx).await {
                Ok(never) => match never {},
                Err(Wait::Closed) => {
                    hang_up(&dev, cfg.guard).await;
                    return Err(Closed);
                }
                Err(Wait::Device(reason)) => reason,
            };
        drop(dev);
        tracing::warn!(link = %shared.name, %reason, "modem unavailable; reopening");
        stream::wait_down(&shared, &mut frames, &mut tx, backoff.next_delay()).await?;
    }
}

/// Sets the modem up and keeps calls going until the device fails or the daemon stops.
async fn modem_session(
    shared: &Shared,
    dev: &Device,
    frames: &mut mpsc::Receiver<Bytes>,
    cfg: &HfModemConfig,
    spec: &StreamSpec,
    tx: &mut StreamTx,
    rx: &mut StreamRx,
) -> Result<std::convert::Infallible, Wait> {
    let mut port = Port::new(dev);
    // In case the modem was left in a call: escape to command mode, end the junk line.
    tokio::time::sleep(cfg.guard).await;
    dev.write_all(b"+++")
        .await
        .map_err(|e| Wait::Device(format!("write to the modem failed: {e}")))?;
    tokio::time::sleep(cfg.guard).await;
    port.send("").await?;
    let settle = tokio::time::Instant::now() + cfg.guard;
    while port.line(shared, frames, Some(settle)).await?.is_some() {}
    for c in cfg.setup_commands() {
        if let Err(why) = port
            .command(shared, frames, &c, cfg.command_timeout)
            .await?
        {
            return Err(Wait::Device(format!(
                "{why}; check the modem and its settings"
            )));
        }
    }
    tracing::info!(link = %shared.name, station = cfg.station.as_deref().unwrap_or("(answering)"), "modem ready");
    loop {
        match call(shared, &mut port, frames, cfg).await {
            Ok(()) => {}
            Err(NoCall::Retry(why)) => {
                tracing::warn!(link = %shared.name, %why, redial_secs = cfg.redial.as_secs_f64(), "no call");
                stream::wait_down(shared, frames, tx, cfg.redial).await?;
                continue;
            }
            Err(NoCall::Wait(w)) => return Err(w),
        }
        // Connected.
        let now = Instant::now();
        tx.reset(now);
        tracing::info!(link = %shared.name, "call connected");
        shared.emit(LinkEvent::Up(spec.params)).await?;
        let (data, mut watch, dropped) = call_start(&mut port.text);
        let (arrived, heard) = tx.incoming(rx.push(&data, &shared.counters));
        for f in arrived {
            shared.emit(LinkEvent::Frame(f)).await?;
        }
        if let Some(ev) = heard {
            shared.emit(ev).await?;
        }
        let ended = match dropped {
            Some(reason) => Ended::Hook(reason),
            None => stream::run(shared, dev, frames, tx, rx, |data| watch.check(data)).await?,
        };
        rx.reset(&shared.counters);
        tx.reset(Instant::now());
        match ended {
            Ended::Hook(reason) => {
                shared.down(reason).await?;
                port = Port::new(dev);
                if cfg.station.is_some() {
                    stream::wait_down(shared, frames, tx, cfg.redial).await?;
                }
            }
            Ended::Device(reason) => {
                shared.down(reason.clone()).await?;
                return Err(Wait::Device(reason));
            }
        }
    }
}

/// Dials (or waits for a ring and answers) until `CONNECT`.
async fn call(
    shared: &Shared,
    port: &mut Port<'_>,
    frames: &mut mpsc::Receiver<Bytes>,
    cfg: &HfModemConfig,
) -> Result<(), NoCall> {
    match &cfg.station {
        Some(station) => {
            tracing::info!(link = %shared.name, station, "dialling");
            port.send(&format!("ATD{station}")).await?;
        }
        None => loop {
            match port.line(shared, frames, None).await? {
                Some(l) if l.starts_with("RING") => {
                    tracing::info!(link = %shared.name, "incoming call; answering");
                    port.send("ATA").await?;
                    break;
                }
                _ => continue,
            }
        },
    }
    let deadline = tokio::time::Instant::now() + cfg.call_timeout;
    loop {
        match port.line(shared, frames, Some(deadline)).await? {
            Some(l) if l.starts_with("CONNECT") => return Ok(()),
            Some(l)
                if l.starts_with("NO CARRIER")
                    || l.starts_with("NO ANSWER")
                    || l.starts_with("BUSY")
                    || l.starts_with("NO DIALTONE")
                    || l.starts_with("ERROR") =>
            {
                return Err(NoCall::Retry(format!("call failed: {l}")));
            }
            Some(_) => continue,
            None => {
                // Abandon the attempt so the modem is free for the next.
                port.send("ATH").await?;
                return Err(NoCall::Retry(format!(
                    "no CONNECT within {} s",
                    cfg.call_timeout.as_secs_f64()
                )));
            }
        }
    }
}

/// Best effort: escape to command mode and hang up.
async fn hang_up(dev: &Device, guard: Duration) {
    tokio::time::sleep(guard).await;
    if dev.write_all(b"+++").await.is_ok() {
        tokio::time::sleep(guard + guard / 2).await;
        let _ = dev.write_all(b"ATH\r").await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_carrier_in_the_connect_read_ends_the_call() {
        let mut text = Lines::default();
        text.take(b"RING\r\nCONNECT 2400\r\n\x01\x02NO CARRIER\r\n");
        assert_eq!(text.pop().as_deref(), Some("RING"));
        assert_eq!(text.pop().as_deref(), Some("CONNECT 2400"));
        let (data, _, dropped) = call_start(&mut text);
        assert_eq!(data, [1, 2]);
        assert_eq!(dropped.as_deref(), Some("call dropped (NO CARRIER)"));
    }

    #[test]
    fn a_connect_line_split_after_its_cr_skips_the_lf() {
        let mut text = Lines::default();
        text.take(b"CONNECT\r");
        let (data, mut watch, dropped) = call_start(&mut text);
        assert!(data.is_empty() && dropped.is_none());
        let hook = watch.check(b"\nab");
        assert_eq!(hook.data(3), 1..3);
        // NO CARRIER split over reads: the call ends in the read that completes it.
        assert!(watch.check(b"NO CAR").stop.is_none());
        assert_eq!(watch.check(b"RIER\r\n").stop.map(|s| s.0), Some(0));
    }
}
