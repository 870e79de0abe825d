//! A scripted fake VARA modem pair over TCP, for tests, written from VARA's published
//! host commands (VARA itself is closed source).
//!
//! Each modem listens on a loopback command port and a data port and serves one client
//! at a time (a new connection replaces the old). It answers `MYCALL`, `LISTEN ON|OFF`,
//! `COMPRESSION`, `BW500|BW2300|BW2750`, `CWID`, `PUBLIC`, `VERSION`, `CONNECT SRC DST`,
//! `DISCONNECT` and `ABORT` with `OK` (anything else, or a malformed one, with `WRONG`),
//! and sends `IAMALIVE` every `alive_interval`. A `CONNECT` to the other modem's
//! `MYCALL` while it listens connects both after `connect_delay` (`CONNECTED SRC DST
//! 2300` to each); otherwise the caller gets `DISCONNECTED` after `call_timeout`.
//!
//! The air: bytes written to the data port wait in the modem's buffer (`BUFFER n` after
//! each write and as it drains) and cross at `rate` bytes a second, one direction at a
//! time. The side that holds the turn keeps it while it has data, up to `max_over`, and
//! the turn passes (after `turnaround`) when the other side has data, as an ARQ modem's
//! does; `PTT ON`/`PTT OFF` mark each over. `DISCONNECT` ends the session at once and
//! discards what was still buffered (counted: a careful host waits for `BUFFER 0`).
//!
//! Scripted faults: refuse commands by prefix (`WRONG`), go silent (no answers, no
//! `IAMALIVE`), stop sending (the buffer never drains), report the channel busy, and put
//! raw bytes on the command port. What it does not do: loss, retries, speed levels.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::link::writer;

/// How the fake air behaves.
#[derive(Debug, Clone)]
pub struct FakeVaraConfig {
    /// Bytes per second on the air, one direction at a time.
    pub rate: f64,
    /// Dead time each time the turn changes hands.
    pub turnaround: Duration,
    /// Longest over while the other side waits with data.
    pub max_over: Duration,
    pub connect_delay: Duration,
    pub call_timeout: Duration,
    pub alive_interval: Duration,
}

impl Default for FakeVaraConfig {
    fn default() -> Self {
        FakeVaraConfig {
            rate: 1000.0,
            turnaround: Duration::from_millis(200),
            max_over: Duration::from_secs(4),
            connect_delay: Duration::from_millis(500),
            call_timeout: Duration::from_secs(3),
            alive_interval: Duration::from_secs(1),
        }
    }
}

/// What one fake modem saw and did.
#[derive(Debug, Default, Clone)]
pub struct FakeVaraStats {
    /// Command lines received, in order.
    pub commands: Vec<String>,
    pub wrong: u64,
    pub sessions: u64,
    /// Bytes taken from the data port, and sent over the air.
    pub bytes_in: u64,
    pub bytes_sent: u64,
    /// Most bytes ever buffered.
    pub max_buffered: usize,
    /// Bytes thrown away by `DISCONNECT`/`ABORT` or a lost client.
    pub discarded: u64,
    /// `CONNECT`s received while the modem reported the channel busy.
    pub connects_while_busy: u64,
    /// Connections accepted on the command port.
    pub clients: u64,
}

#[derive(Debug, Default)]
struct Modem {
    mycall: Option<String>,
    listen: bool,
    buffer: Vec<u8>,
    cmd: Option<mpsc::UnboundedSender<Vec<u8>>>,
    data: Option<mpsc::UnboundedSender<Vec<u8>>>,
    refuse: Vec<String>,
    silent: bool,
    sending: bool,
    busy: bool,
    /// A call placed: when it gives up, and to whom.
    calling: Option<(Instant, String)>,
    /// The BUFFER figure last reported, and when a draining buffer was last reported.
    reported: Option<usize>,
    reported_at: Option<Instant>,
    stats: FakeVaraStats,
}

impl Modem {
    fn say(&self, line: &str) {
        if self.silent {
            return;
        }
        if let Some(c) = &self.cmd {
            let _ = c.send(format!("{line}\r").into_bytes());
        }
    }

    fn report_buffer(&mut self) {
        if self.reported != Some(self.buffer.len()) {
            self.reported = Some(self.buffer.len());
            self.say(&format!("BUFFER {}", self.buffer.len()));
        }
    }
}

#[derive(Debug)]
struct Air {
    cfg: FakeVaraConfig,
    modems: [Modem; 2],
    /// The session: (caller, callee) calls; connected once `at` has passed.
    session: Option<Session>,
}

#[derive(Debug, Clone)]
struct Session {
    src: String,
    dst: String,
    connect_at: Instant,
    connected: bool,
    /// Who holds the turn, since when, and until when the turn is dead (turnaround).
    turn: usize,
    over_since: Instant,
    dead_until: Instant,
    keyed: bool,
    /// Bytes of credit accrued by the sender (fractions of a byte carried over).
    carry: f64,
}

/// Two fake VARA modems on one channel (see the module docs).
#[derive(Debug, Clone)]
pub struct FakeVaras {
    inner: Arc<Mutex<Air>>,
    cmd: [SocketAddr; 2],
    data: [SocketAddr; 2],
}

impl FakeVaras {
    /// Two modems; must be called within a tokio runtime; they run until it ends.
    pub async fn start(cfg: FakeVaraConfig) -> std::io::Result<FakeVaras> {
        let inner = Arc::new(Mutex::new(Air {
            cfg: cfg.clone(),
            modems: [Modem::default(), Modem::default()],
            session: None,
        }));
        for m in &mut inner.lock().unwrap_or_else(|e| e.into_inner()).modems {
            m.sending = true;
        }
        let mut cmd = Vec::new();
        let mut data = Vec::new();
        for i in 0..2 {
            let c = TcpListener::bind("127.0.0.1:0").await?;
            let d = TcpListener::bind("127.0.0.1:0").await?;
            cmd.push(c.local_addr()?);
            data.push(d.local_addr()?);
            tokio::spawn(serve_cmd(c, i, inner.clone()));
            tokio::spawn(serve_data(d, i, inner.clone()));
        }
        tokio::spawn(air(inner.clone()));
        Ok(FakeVaras {
            inner,
            cmd: [cmd[0], cmd[1]],
            data: [data[0], data[1]],
        })
    }

    /// Modem `i`'s command port, as a `vara` link's `modem` setting.
    pub fn cmd_addr(&self, i: usize) -> String {
        self.cmd[i].to_string()
    }

    /// Modem `i`'s data port, as a `vara` link's `data` setting.
    pub fn data_addr(&self, i: usize) -> String {
        self.data[i].to_string()
    }

    pub fn stats(&self, i: usize) -> FakeVaraStats {
        self.lock().modems[i].stats.clone()
    }

    /// Bytes modem `i` holds now.
    pub fn buffered(&self, i: usize) -> usize {
        self.lock().modems[i].buffer.len()
    }

    pub fn connected(&self) -> bool {
        self.lock().session.as_ref().is_some_and(|s| s.connected)
    }

    /// Modem `i` answers `WRONG` to commands starting with any of `prefixes` ("" for
    /// every command).
    pub fn refuse(&self, i: usize, prefixes: &[&str]) {
        self.lock().modems[i].refuse = prefixes.iter().map(|s| s.to_string()).collect();
    }

    /// Modem `i` sends nothing at all on its command port (a hung modem program).
    pub fn silent(&self, i: usize, yes: bool) {
        self.lock().modems[i].silent = yes;
    }

    /// Whether modem `i` sends its buffer (no: it keeps everything, as when the far
    /// station stops acknowledging).
    pub fn sending(&self, i: usize, yes: bool) {
        self.lock().modems[i].sending = yes;
    }

    /// Modem `i` reports the channel busy (`BUSY ON`) or clear.
    pub fn busy(&self, i: usize, yes: bool) {
        let mut a = self.lock();
        a.modems[i].busy = yes;
        a.modems[i].say(if yes { "BUSY ON" } else { "BUSY OFF" });
    }

    /// Puts raw bytes on modem `i`'s command port.
    pub fn inject(&self, i: usize, bytes: &[u8]) {
        if let Some(c) = &self.lock().modems[i].cmd {
            let _ = c.send(bytes.to_vec());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Air> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn lock(inner: &Mutex<Air>) -> std::sync::MutexGuard<'_, Air> {
    inner.lock().unwrap_or_else(|e| e.into_inner())
}

/// Accepts command-port clients; each replaces the last.
async fn serve_cmd(l: TcpListener, i: usize, inner: Arc<Mutex<Air>>) {
    while let Ok((s, _)) = l.accept().await {
        let _ = s.set_nodelay(true);
        let (mut r, w) = s.into_split();
        {
            let mut a = lock(&inner);
            a.modems[i].cmd = Some(writer(w));
            a.modems[i].stats.clients += 1;
            a.modems[i].reported = None;
        }
        let inner = inner.clone();
        tokio::spawn(async move {
            let mut line = Vec::new();
            let mut buf = vec![0u8; 1024];
            while let Ok(n) = r.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                for &b in &buf[..n] {
                    if b == b'\r' || b == b'\n' {
                        if !line.is_empty() {
                            let l = String::from_utf8_lossy(&line).trim().to_string();
                            command(&mut lock(&inner), i, &l);
                            line.clear();
                        }
                    } else {
                        line.push(b);
                    }
                }
            }
            // The client went away: VARA ends any session.
            let mut a = lock(&inner);
            end_session(&mut a);
        });
    }
}

/// Accepts data-port clients; each replaces the last.
async fn serve_data(l: TcpListener, i: usize, inner: Arc<Mutex<Air>>) {
    while let Ok((s, _)) = l.accept().await {
        let _ = s.set_nodelay(true);
        let (mut r, w) = s.into_split();
        lock(&inner).modems[i].data = Some(writer(w));
        let inner = inner.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            while let Ok(n) = r.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut a = lock(&inner);
                let m = &mut a.modems[i];
                m.buffer.extend_from_slice(&buf[..n]);
                m.stats.bytes_in += n as u64;
                m.stats.max_buffered = m.stats.max_buffered.max(m.buffer.len());
                m.report_buffer();
            }
        });
    }
}

fn end_session(a: &mut Air) {
    if let Some(s) = a.session.take() {
        for m in &mut a.modems {
            m.stats.discarded += m.buffer.len() as u64;
            m.buffer.clear();
            m.calling = None;
            if s.keyed {
                m.say("PTT OFF");
            }
            m.say("DISCONNECTED");
            m.report_buffer();
        }
    }
}

fn command(a: &mut Air, i: usize, line: &str) {
    let free = a.session.is_none();
    let m = &mut a.modems[i];
    m.stats.commands.push(line.to_string());
    if m.silent {
        return;
    }
    let refused = m.refuse.iter().any(|p| line.starts_with(p.as_str()));
    let w: Vec<&str> = line.split_ascii_whitespace().collect();
    let valid = |c: &str| {
        !c.is_empty()
            && c.len() <= 10
            && c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-')
    };
    let ok = !refused
        && match w.as_slice() {
            ["MYCALL", calls @ ..] if !calls.is_empty() && calls.iter().all(|c| valid(c)) => {
                m.mycall = Some(calls[0].to_string());
                true
            }
            ["LISTEN", "ON"] => {
                m.listen = true;
                true
            }
            ["LISTEN", "OFF"] => {
                m.listen = false;
                true
            }
            ["COMPRESSION", "OFF" | "TEXT" | "FILES"]
            | ["BW500" | "BW2300" | "BW2750"]
            | ["CWID", "ON" | "OFF"]
            | ["PUBLIC", "ON" | "OFF"] => true,
            ["VERSION"] => {
                m.say("VERSION skywave-fake");
                return;
            }
            ["CONNECT", src, dst] if valid(src) && valid(dst) && m.mycall.is_some() && free => true,
            ["DISCONNECT" | "ABORT"] => true,
            _ => false,
        };
    if !ok {
        m.stats.wrong += 1;
        m.say("WRONG");
        return;
    }
    m.say("OK");
    match w.as_slice() {
        ["CONNECT", src, dst] => {
            if m.busy {
                m.stats.connects_while_busy += 1;
            }
            let now = Instant::now();
            let timeout = a.cfg.call_timeout;
            let delay = a.cfg.connect_delay;
            let m = &mut a.modems[i];
            m.calling = Some((now + timeout, dst.to_string()));
            let other = &a.modems[1 - i];
            if other.listen && other.mycall.as_deref() == Some(*dst) {
                other.say("PENDING");
                a.session = Some(Session {
                    src: src.to_string(),
                    dst: dst.to_string(),
                    connect_at: now + delay,
                    connected: false,
                    turn: i,
                    over_since: now,
                    dead_until: now,
                    keyed: false,
                    carry: 0.0,
                });
            }
        }
        ["DISCONNECT" | "ABORT"] => {
            a.modems[i].calling = None;
            end_session(a);
        }
        _ => {}
    }
}

/// Runs the air: call set-up and time-outs, IAMALIVE, and bytes crossing.
async fn air(inner: Arc<Mutex<Air>>) {
    let tick = Duration::from_millis(10);
    let mut last_alive = Instant::now();
    loop {
        tokio::time::sleep(tick).await;
        let now = Instant::now();
        let mut a = lock(&inner);
        if now >= last_alive + a.cfg.alive_interval {
            last_alive = now;
            for m in &a.modems {
                m.say("IAMALIVE");
            }
        }
        // Calls that found no one give up.
        let free = a.session.is_none();
        for m in &mut a.modems {
            if let Some((until, _)) = &m.calling
                && now >= *until
                && free
            {
                m.calling = None;
                m.say("DISCONNECTED");
            }
        }
        let Some(mut s) = a.session.clone() else {
            continue;
        };
        if !s.connected {
            if now >= s.connect_at {
                s.connected = true;
                s.over_since = now;
                let line = format!("CONNECTED {} {} 2300", s.src, s.dst);
                for m in &mut a.modems {
                    m.calling = None;
                    m.stats.sessions += 1;
                    m.say(&line);
                }
            }
            a.session = Some(s);
            continue;
        }
        let (rate, turnaround, max_over) = (a.cfg.rate, a.cfg.turnaround, a.cfg.max_over);
        let me = s.turn;
        let other = 1 - me;
        let mine = !a.modems[me].buffer.is_empty() && a.modems[me].sending;
        let theirs = !a.modems[other].buffer.is_empty() && a.modems[other].sending;
        if now < s.dead_until {
            a.session = Some(s);
            continue;
        }
        // The turn passes when the holder is done, or has had its longest over, and the
        // other side has data.
        if theirs && (!mine || now >= s.over_since + max_over) {
            if s.keyed {
                a.modems[me].say("PTT OFF");
                s.keyed = false;
            }
            s.turn = other;
            s.over_since = now;
            s.dead_until = now + turnaround;
            s.carry = 0.0;
            a.session = Some(s);
            continue;
        }
        if mine {
            if !s.keyed {
                a.modems[me].say("PTT ON");
                s.keyed = true;
            }
            s.carry += rate * tick.as_secs_f64();
            let n = (s.carry as usize).min(a.modems[me].buffer.len());
            s.carry -= n as f64;
            if n > 0 {
                let bytes: Vec<u8> = a.modems[me].buffer.drain(..n).collect();
                a.modems[me].stats.bytes_sent += n as u64;
                if let Some(d) = &a.modems[other].data {
                    let _ = d.send(bytes);
                }
                // (VARA reports as its buffer drains, not for every byte.)
                let m = &mut a.modems[me];
                if m.buffer.is_empty()
                    || m.reported_at
                        .is_none_or(|t| now >= t + Duration::from_millis(250))
                {
                    m.reported_at = Some(now);
                    m.report_buffer();
                }
            }
        } else {
            if s.keyed {
                a.modems[me].say("PTT OFF");
                s.keyed = false;
            }
            s.carry = 0.0;
        }
        a.session = Some(s);
    }
}
