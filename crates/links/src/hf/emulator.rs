//! Two AT-command HF data modems joined by a half-duplex channel, each on the far side of
//! a pty, for tests and demos.
//!
//! Command mode takes `AT` commands (`AT&I=id`, `AT&C=channels`, `AT%C0`/`AT%C1`,
//! `AT&K=n`, `AT&M=n`, `ATE0`, `ATZ`, `ATDid`, `ATA`, `ATH`, `ATO`) and answers `OK`,
//! `ERROR`, `RING`, `CONNECT 1475`, `NO CARRIER`, `NO ANSWER`. A dial reaches the other
//! modem after the call set-up time if its id matches and the two channel lists share a
//! channel; the other modem rings until its host answers. In a call, bytes from the host
//! go into a finite transmit buffer; the channel carries them in chunks at the air rate,
//! one direction at a time (the side holding the turn keeps it while it has data; a change
//! of direction costs the turnaround), and delivers them a latency later. Writing more than
//! the buffer holds drops the call, as the simulator's `hf-modem` model does: both hosts
//! get `NO CARRIER` and everything buffered or in flight is lost. `+++` between two guard
//! times returns to command mode with the call up.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use skywave_sim::{Duplex, LinkConfig, LinkKind};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::device::Pty;

/// The modems and their channel. Scale the rate up and the times down for fast tests.
#[derive(Debug, Clone, PartialEq)]
pub struct HfConfig {
    /// Air rate, bit/s.
    pub rate_bps: u64,
    /// One-way latency beyond serialization, compression off (`AT%C0`).
    pub latency: Duration,
    /// One-way latency with compression on (`AT%C1`, the default, as on real modems).
    pub latency_compressed: Duration,
    pub turnaround: Duration,
    /// Each modem's transmit buffer; a write past it drops the call.
    pub buffer: usize,
    /// Bytes sent on the air as one unit.
    pub chunk: usize,
    /// From dial to ring (link establishment).
    pub call_setup: Duration,
    /// How long a called modem rings before the caller gets `NO ANSWER`.
    pub answer_timeout: Duration,
    /// Silence needed before and after `+++`.
    pub guard: Duration,
}

impl Default for HfConfig {
    /// The `hf-modem` profile: 1475 bit/s, 4 s (8 s compressed), 2 s turnaround,
    /// 1024-byte buffer, 64-byte chunks; 15 s call set-up.
    fn default() -> Self {
        HfConfig {
            rate_bps: 1475,
            latency: Duration::from_secs(4),
            latency_compressed: Duration::from_secs(8),
            turnaround: Duration::from_secs(2),
            buffer: 1024,
            chunk: 64,
            call_setup: Duration::from_secs(15),
            answer_timeout: Duration::from_secs(30),
            guard: Duration::from_secs(1),
        }
    }
}

impl HfConfig {
    /// The channel of a half-duplex stream profile (`hf-modem`, `hf-modem-slow`, or a
    /// spec based on them). Call set-up scales with the latency (15 s at the profile's
    /// 4 s), so a sped-up profile sets up calls faster too; the guard time stays 1 s.
    pub fn from_profile(cfg: &LinkConfig) -> Result<HfConfig, String> {
        if cfg.kind != LinkKind::Stream || cfg.duplex != Duplex::Half {
            return Err(format!(
                "profile '{}' is not a half-duplex modem stream; use hf-modem or hf-modem-slow",
                cfg.name
            ));
        }
        let latency = cfg.up.delay.max(cfg.down.delay);
        Ok(HfConfig {
            rate_bps: cfg.up.rate_bps.min(cfg.down.rate_bps),
            latency,
            latency_compressed: latency * 2,
            turnaround: cfg.turnaround,
            buffer: usize::try_from(cfg.buffer_bytes(skywave_sim::Side::A)).unwrap_or(1024),
            chunk: cfg.chunk,
            call_setup: Duration::from_secs_f64((15.0 * latency.as_secs_f64() / 4.0).max(0.1)),
            ..HfConfig::default()
        })
    }
}

/// What one modem saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModemStats {
    pub commands: u64,
    /// Calls connected (as caller or answerer).
    pub connects: u64,
    /// Calls dropped by a buffer overrun on this side.
    pub overruns: u64,
    /// Calls ended by `ATH` on this side.
    pub hangups: u64,
    /// Bytes taken from the host in data mode, and delivered to it.
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub max_used: usize,
    pub compression: bool,
    pub channels: Vec<String>,
    pub id: String,
    /// The last dial string.
    pub dialled: Option<String>,
}

enum Cmd {
    DropCall,
}

/// Two emulated modems.
#[derive(Debug)]
pub struct HfModems {
    paths: [PathBuf; 2],
    stats: Arc<Mutex<[ModemStats; 2]>>,
    cmd: mpsc::Sender<Cmd>,
}

impl HfModems {
    /// Starts two modems whose ids are `ids` (a host may change them with `AT&I=`).
    pub fn start(cfg: HfConfig, ids: [&str; 2]) -> io::Result<HfModems> {
        if cfg.rate_bps == 0 || cfg.chunk == 0 || cfg.buffer == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "HF modem emulator: rate, chunk and buffer must be non-zero",
            ));
        }
        let ptys = [Arc::new(Pty::open()?), Arc::new(Pty::open()?)];
        let paths = [ptys[0].path.clone(), ptys[1].path.clone()];
        let mut st: [ModemStats; 2] = Default::default();
        for (s, id) in st.iter_mut().zip(ids) {
            s.id = id.to_string();
            s.compression = true;
        }
        let stats = Arc::new(Mutex::new(st));
        let (cmd, rx) = mpsc::channel(8);
        tokio::spawn(run(cfg, ptys, stats.clone(), rx));
        Ok(HfModems { paths, stats, cmd })
    }

    /// The serial port of modem `i`.
    pub fn path(&self, i: usize) -> &Path {
        &self.paths[i.min(1)]
    }

    pub fn stats(&self, i: usize) -> ModemStats {
        self.stats.lock().expect("stats lock")[i.min(1)].clone()
    }

    /// Loses the call (a fade): both hosts get `NO CARRIER`.
    pub async fn drop_call(&self) {
        let _ = self.cmd.send(Cmd::DropCall).await;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Command,
    /// Dialled; the far modem rings at `ring_at`.
    Dialing {
        ring_at: Instant,
    },
    /// Waiting for the far host to answer (caller side), until `until`.
    Calling {
        until: Instant,
    },
    /// Ringing here; the host answers with `ATA`.
    Ringing,
    Online,
    /// In a call, in command mode after `+++`.
    OnlineCommand,
}

struct Modem {
    mode: Mode,
    line: Vec<u8>,
    tx: VecDeque<u8>,
    out: mpsc::UnboundedSender<Vec<u8>>,
    last_byte: Option<Instant>,
    /// `+` bytes held back as a possible escape, and when the last came.
    plus: usize,
    plus_at: Option<Instant>,
    compression: bool,
    channels: Vec<String>,
}

impl Modem {
    fn say(&self, s: &str) {
        let _ = self.out.send(format!("\r\n{s}\r\n").into_bytes());
    }

    fn in_call(&self) -> bool {
        matches!(self.mode, Mode::Online | Mode::OnlineCommand)
    }
}

struct Air {
    holder: usize,
    turning_until: Option<Instant>,
    on_air: Option<(usize, Vec<u8>, Instant)>,
    flights: VecDeque<(Instant, usize, Vec<u8>)>,
}

async fn run(
    cfg: HfConfig,
    ptys: [Arc<Pty>; 2],
    stats: Arc<Mutex<[ModemStats; 2]>>,
    mut cmd: mpsc::Receiver<Cmd>,
) {
    let (in_tx, mut input) = mpsc::channel::<(usize, Vec<u8>)>(64);
    let mut modems = Vec::new();
    for (i, p) in ptys.iter().enumerate() {
        let (out, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let w = p.clone();
        tokio::spawn(async move {
            while let Some(b) = out_rx.recv().await {
                if w.write_all(&b).await.is_err() {
                    break;
                }
            }
        });
        let r = p.clone();
        let tx = in_tx.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            loop {
                match r.read(&mut buf).await {
                    Ok(n) if n > 0 => {
                        if tx.send((i, buf[..n].to_vec())).await.is_err() {
                            break;
                        }
                    }
                    _ => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            }
        });
        modems.push(Modem {
            mode: Mode::Command,
            line: Vec::new(),
            tx: VecDeque::new(),
            out,
            last_byte: None,
            plus: 0,
            plus_at: None,
            compression: true,
            channels: Vec::new(),
        });
    }
    drop(in_tx);
    let mut air = Air {
        holder: 0,
        turning_until: None,
        on_air: None,
        flights: VecDeque::new(),
    };
    loop {
        let now = Instant::now();
        kick(&cfg, &mut modems, &mut air, now);
        let mut wake: Vec<Instant> = Vec::new();
        wake.extend(air.on_air.as_ref().map(|a| a.2));
        wake.extend(air.turning_until);
        wake.extend(air.flights.front().map(|f| f.0));
        for m in &modems {
            match m.mode {
                Mode::Dialing { ring_at } => wake.push(ring_at),
                Mode::Calling { until } => wake.push(until),
                _ => {}
            }
            if let Some(t) = m.plus_at
                && m.plus > 0
            {
                wake.push(t + cfg.guard);
            }
        }
        let wake = wake.into_iter().min();
        tokio::select! {
            got = input.recv() => {
                let Some((i, bytes)) = got else { return };
                host_bytes(&cfg, &mut modems, &mut air, &stats, i, &bytes);
            }
            c = cmd.recv() => match c {
                Some(Cmd::DropCall) => {
                    if modems.iter().any(Modem::in_call) {
                        tracing::info!("emulated HF call lost");
                        drop_call(&mut modems, &mut air);
                    }
                }
                None => return,
            },
            _ = crate::link::sleep_until(wake) => timers(&cfg, &mut modems, &mut air, &stats, Instant::now()),
        }
    }
}

/// Ends the call; modems in it whose `notify` is set get `NO CARRIER`.
fn end_call(modems: &mut [Modem], air: &mut Air, notify: [bool; 2]) {
    for (m, tell) in modems.iter_mut().zip(notify) {
        if m.in_call() && tell {
            m.say("NO CARRIER");
        }
        m.mode = Mode::Command;
        m.tx.clear();
        m.plus = 0;
        m.plus_at = None;
    }
    air.on_air = None;
    air.turning_until = None;
    air.flights.clear();
}

fn drop_call(modems: &mut [Modem], air: &mut Air) {
    end_call(modems, air, [true, true]);
}

fn connect(modems: &mut [Modem], stats: &Mutex<[ModemStats; 2]>, cfg: &HfConfig) {
    let mut st = stats.lock().expect("stats lock");
    for (m, s) in modems.iter_mut().zip(st.iter_mut()) {
        m.mode = Mode::Online;
        m.tx.clear();
        m.say(&format!("CONNECT {}", cfg.rate_bps));
        s.connects += 1;
    }
}

fn host_bytes(
    cfg: &HfConfig,
    modems: &mut [Modem],
    air: &mut Air,
    stats: &Mutex<[ModemStats; 2]>,
    i: usize,
    bytes: &[u8],
) {
    let now = Instant::now();
    for &b in bytes {
        let quiet = modems[i]
            .last_byte
            .is_none_or(|t| now.duration_since(t) >= cfg.guard);
        modems[i].last_byte = Some(now);
        if modems[i].mode == Mode::Online {
            // Escape: `+++` after a guard time of silence, then silence again.
            if b == b'+' && (modems[i].plus > 0 || quiet) && modems[i].plus < 3 {
                modems[i].plus += 1;
                modems[i].plus_at = Some(now);
                continue;
            }
            let held = std::mem::take(&mut modems[i].plus);
            modems[i].plus_at = None;
            for _ in 0..held {
                if !data_byte(modems, air, stats, i, b'+', cfg) {
                    return;
                }
            }
            if !data_byte(modems, air, stats, i, b, cfg) {
                return;
            }
            continue;
        }
        match b {
            b'\r' | b'\n' => {
                let line = std::mem::take(&mut modems[i].line);
                if !line.is_empty() {
                    let text = String::from_utf8_lossy(&line).trim().to_string();
                    command(cfg, modems, air, stats, i, &text, now);
                }
            }
            _ if modems[i].line.len() < 256 => modems[i].line.push(b),
            _ => {}
        }
    }
}

/// Queues a data byte; `false` when it overran the buffer and dropped the call.
fn data_byte(
    modems: &mut [Modem],
    air: &mut Air,
    stats: &Mutex<[ModemStats; 2]>,
    i: usize,
    b: u8,
    cfg: &HfConfig,
) -> bool {
    let on_air = air
        .on_air
        .as_ref()
        .filter(|a| a.0 == i)
        .map_or(0, |a| a.1.len());
    let mut st = stats.lock().expect("stats lock");
    if modems[i].tx.len() + on_air >= cfg.buffer {
        st[i].overruns += 1;
        drop(st);
        tracing::warn!(
            modem = i,
            buffer = cfg.buffer,
            "emulated HF modem: transmit buffer overrun; the call drops"
        );
        drop_call(modems, air);
        return false;
    }
    modems[i].tx.push_back(b);
    st[i].bytes_in += 1;
    st[i].max_used = st[i].max_used.max(modems[i].tx.len() + on_air);
    true
}

fn command(
    cfg: &HfConfig,
    modems: &mut [Modem],
    air: &mut Air,
    stats: &Mutex<[ModemStats; 2]>,
    i: usize,
    text: &str,
    now: Instant,
) {
    stats.lock().expect("stats lock")[i].commands += 1;
    let upper = text.to_ascii_uppercase();
    let Some(rest) = upper.strip_prefix("AT") else {
        modems[i].say("ERROR");
        return;
    };
    let arg = &text[2..];
    let o = 1 - i;
    let ok = match rest {
        "" | "E0" | "E1" | "Z" | "&W" => true,
        _ if rest.starts_with("&I=") => {
            let id = arg[3..].trim().to_string();
            let valid = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric());
            if valid {
                stats.lock().expect("stats lock")[i].id = id;
            }
            valid
        }
        _ if rest.starts_with("&K=") || rest.starts_with("&M=") => rest[3..].parse::<u8>().is_ok(),
        "%C0" | "%C1" => {
            modems[i].compression = rest == "%C1";
            stats.lock().expect("stats lock")[i].compression = modems[i].compression;
            true
        }
        _ if rest.starts_with("&C=") => {
            let list: Vec<String> = arg[3..].split(',').map(|c| c.trim().to_string()).collect();
            let valid = list
                .iter()
                .all(|c| !c.is_empty() && c.chars().all(|c| c.is_ascii_alphanumeric()));
            if valid {
                modems[i].channels = list.clone();
                stats.lock().expect("stats lock")[i].channels = list;
            }
            valid
        }
        _ if rest.starts_with('D') => {
            if modems[i].mode != Mode::Command {
                false
            } else {
                let target = arg[1..].trim();
                stats.lock().expect("stats lock")[i].dialled = Some(target.to_string());
                modems[i].mode = Mode::Dialing {
                    ring_at: now + cfg.call_setup,
                };
                // The result comes when the call is made or fails.
                return;
            }
        }
        "A" => {
            if modems[i].mode == Mode::Ringing {
                connect(modems, stats, cfg);
                return;
            }
            false
        }
        "H" | "H0" => {
            if modems[i].in_call() || modems[o].in_call() {
                stats.lock().expect("stats lock")[i].hangups += 1;
                let mut notify = [true, true];
                notify[i] = false;
                end_call(modems, air, notify);
            } else if matches!(modems[i].mode, Mode::Dialing { .. } | Mode::Calling { .. }) {
                modems[i].mode = Mode::Command;
                if modems[o].mode == Mode::Ringing {
                    modems[o].mode = Mode::Command;
                }
            }
            modems[i].mode = Mode::Command;
            true
        }
        "O" | "O0" => {
            if modems[i].mode == Mode::OnlineCommand {
                modems[i].mode = Mode::Online;
                modems[i].say(&format!("CONNECT {}", cfg.rate_bps));
                return;
            }
            modems[i].say("NO CARRIER");
            return;
        }
        _ => false,
    };
    modems[i].say(if ok { "OK" } else { "ERROR" });
}

fn timers(
    cfg: &HfConfig,
    modems: &mut [Modem],
    air: &mut Air,
    stats: &Mutex<[ModemStats; 2]>,
    now: Instant,
) {
    for i in 0..2 {
        let o = 1 - i;
        // An escape completes after the second guard time.
        if modems[i].plus == 3 && modems[i].plus_at.is_some_and(|t| now >= t + cfg.guard) {
            modems[i].plus = 0;
            modems[i].plus_at = None;
            modems[i].mode = Mode::OnlineCommand;
            modems[i].say("OK");
        } else if modems[i].plus > 0
            && modems[i].plus < 3
            && modems[i].plus_at.is_some_and(|t| now >= t + cfg.guard)
        {
            // Not an escape: the pluses were data.
            let held = std::mem::take(&mut modems[i].plus);
            modems[i].plus_at = None;
            for _ in 0..held {
                if !data_byte(modems, air, stats, i, b'+', cfg) {
                    return;
                }
            }
        }
        match modems[i].mode {
            Mode::Dialing { ring_at } if now >= ring_at => {
                let (dialled, other_id) = {
                    let st = stats.lock().expect("stats lock");
                    (st[i].dialled.clone().unwrap_or_default(), st[o].id.clone())
                };
                let (ci, co) = (&modems[i].channels, &modems[o].channels);
                let common = ci.is_empty() || co.is_empty() || ci.iter().any(|c| co.contains(c));
                if dialled.eq_ignore_ascii_case(&other_id)
                    && common
                    && modems[o].mode == Mode::Command
                {
                    modems[i].mode = Mode::Calling {
                        until: now + cfg.answer_timeout,
                    };
                    modems[o].mode = Mode::Ringing;
                    modems[o].say("RING");
                } else {
                    modems[i].mode = Mode::Command;
                    modems[i].say("NO CARRIER");
                }
            }
            Mode::Calling { until } if now >= until => {
                modems[i].mode = Mode::Command;
                modems[i].say("NO ANSWER");
                if modems[o].mode == Mode::Ringing {
                    modems[o].mode = Mode::Command;
                }
            }
            _ => {}
        }
    }
    if let Some((from, chunk, end)) = air.on_air.take() {
        if end <= now {
            let latency = if modems[from].compression || modems[1 - from].compression {
                cfg.latency_compressed
            } else {
                cfg.latency
            };
            air.flights.push_back((end + latency, 1 - from, chunk));
            // A modem's serializer is clocked: the next chunk starts where this one ended,
            // not when this task woke, so wake-up lateness does not slow the air down.
            kick(cfg, modems, air, end);
        } else {
            air.on_air = Some((from, chunk, end));
        }
    }
    if let Some(t) = air.turning_until.filter(|t| *t <= now) {
        air.turning_until = None;
        kick(cfg, modems, air, t);
    }
    while air.flights.front().is_some_and(|f| f.0 <= now) {
        let (_, to, chunk) = air.flights.pop_front().expect("front");
        stats.lock().expect("stats lock")[to].bytes_out += chunk.len() as u64;
        if modems[to].in_call() {
            let _ = modems[to].out.send(chunk);
        }
    }
    kick(cfg, modems, air, now);
}

/// Starts the next chunk on the air, as the half-duplex turn allows.
fn kick(cfg: &HfConfig, modems: &mut [Modem], air: &mut Air, now: Instant) {
    if air.on_air.is_some() || air.turning_until.is_some() || !modems.iter().any(Modem::in_call) {
        return;
    }
    let h = air.holder;
    let o = 1 - h;
    if !modems[h].tx.is_empty() {
        let n = modems[h].tx.len().min(cfg.chunk);
        let chunk: Vec<u8> = modems[h].tx.drain(..n).collect();
        let t = Duration::from_secs_f64((n * 8) as f64 / cfg.rate_bps as f64);
        air.on_air = Some((h, chunk, now + t));
    } else if !modems[o].tx.is_empty() {
        air.holder = o;
        air.turning_until = Some(now + cfg.turnaround);
    }
}
