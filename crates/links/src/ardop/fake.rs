//! A scripted fake ardopcf, for tests: two or more modems on one channel, each with a
//! command port and a data port one above it, speaking ardopcf's host protocol.
//!
//! A modem answers the setup commands as ardopcf does, connects an `ARQCALL` to a
//! listening modem with that `MYCALL` (both hosts get `CONNECTED`) or fails it (`STATUS
//! CONNECT TO x FAILED!`), takes data-port bytes into its buffer (answering `BUFFER n`,
//! discarding beyond 100,000 as ardopcf does) and sends the buffer at the channel's rate
//! to the connected modem (ARQ) or every other modem (after `FECSEND TRUE`), with a
//! `BUFFER n` after each piece. The script can make a modem stop answering, stop
//! sending (its buffer never drains), send in bursts (long frames), report the channel
//! busy, put raw bytes in front of its host, or freeze its session as two real modems
//! once did (one in `IRS`, the other in `IRStoISS`: connected, nothing moving, and
//! `DISCONNECT` answered but without effect). `ABORT` ends a session as ardopcf's does:
//! the modem goes to `DISC` (no `DISCONNECTED`) and drops its buffer; the far modem
//! hears nothing more and ends its side a second later (its ARQ timeout, shortened).
//! What it does not do: turns, loss, timing of real frames.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::host;

/// ardopcf's transmit buffer.
const CAPACITY: usize = 100_000;

/// What one fake modem saw and did.
#[derive(Debug, Default, Clone)]
pub struct FakeArdopStats {
    /// Every command line received, in order.
    pub commands: Vec<String>,
    /// The largest buffer it held.
    pub max_buffer: usize,
    /// Bytes discarded for want of room (ardopcf drops them silently).
    pub discarded: usize,
    /// Bytes sent on the channel.
    pub sent: usize,
    /// Host connections accepted on the command port, and on the data port.
    pub connections: u64,
    pub data_connections: u64,
}

#[derive(Debug, Default)]
struct Modem {
    mycall: String,
    listen: bool,
    fec: bool,
    fec_sending: bool,
    state: String,
    buffer: VecDeque<u8>,
    peer: Option<usize>,
    mute: bool,
    stuck: bool,
    /// The session is frozen: nothing sent, DISCONNECT without effect.
    frozen: bool,
    /// Sends only every so often, what the rate allows meanwhile (long frames).
    burst: Option<Duration>,
    busy_at_connect: bool,
    cmd: Option<mpsc::UnboundedSender<Vec<u8>>>,
    data: Option<mpsc::UnboundedSender<Vec<u8>>>,
    stats: FakeArdopStats,
}

impl Modem {
    fn say(&self, line: &str) {
        if let Some(c) = &self.cmd {
            let _ = c.send(format!("{line}\r").into_bytes());
        }
    }

    fn deliver(&self, tag: &[u8; 3], bytes: &[u8]) {
        if let Some(d) = &self.data {
            let mut m = ((bytes.len() + 3) as u16).to_be_bytes().to_vec();
            m.extend_from_slice(tag);
            m.extend_from_slice(bytes);
            let _ = d.send(m);
        }
    }

    fn set_state(&mut self, s: &str) {
        self.state = s.into();
        self.say(&format!("NEWSTATE {s}"));
    }
}

/// Fake ardopcf modems on one channel (see the module docs).
#[derive(Debug, Clone)]
pub struct FakeArdops {
    inner: Arc<Mutex<Vec<Modem>>>,
    addrs: Vec<SocketAddr>,
}

impl FakeArdops {
    /// `n` modems on a channel carrying `rate` bytes per second. Must be called within a
    /// tokio runtime; the modems run until the runtime ends.
    pub async fn start(n: usize, rate: f64) -> std::io::Result<FakeArdops> {
        let inner = Arc::new(Mutex::new(
            (0..n)
                .map(|_| Modem {
                    state: "OFFLINE".into(),
                    listen: true,
                    ..Modem::default()
                })
                .collect::<Vec<_>>(),
        ));
        let mut addrs = Vec::new();
        for i in 0..n {
            // The data port is the command port plus one: find a free pair.
            let (c, d) = loop {
                let c = TcpListener::bind("127.0.0.1:0").await?;
                let p = c.local_addr()?.port();
                if p == u16::MAX {
                    continue;
                }
                if let Ok(d) = TcpListener::bind(("127.0.0.1", p + 1)).await {
                    break (c, d);
                }
            };
            addrs.push(c.local_addr()?);
            tokio::spawn(accept_commands(c, i, inner.clone()));
            tokio::spawn(accept_data(d, i, inner.clone()));
        }
        tokio::spawn(transmit(inner.clone(), rate));
        Ok(FakeArdops { inner, addrs })
    }

    /// Modem `i`'s command port, as an `ardop` link's `modem` setting.
    pub fn addr(&self, i: usize) -> String {
        self.addrs[i].to_string()
    }

    pub fn stats(&self, i: usize) -> FakeArdopStats {
        self.lock()[i].stats.clone()
    }

    /// Bytes modem `i` holds now.
    pub fn buffered(&self, i: usize) -> usize {
        self.lock()[i].buffer.len()
    }

    /// Whether modem `i` answers and reports at all (no: its ports stay open, silent).
    pub fn answering(&self, i: usize, yes: bool) {
        self.lock()[i].mute = !yes;
    }

    /// Whether modem `i` sends its buffer (no: it never drains).
    pub fn sending(&self, i: usize, yes: bool) {
        self.lock()[i].stuck = !yes;
    }

    /// Modem `i` sends its buffer only every `every` (a long frame's time), what the
    /// channel's rate carries meanwhile; `None`: a piece every 50 ms.
    pub fn bursts(&self, i: usize, every: Option<Duration>) {
        self.lock()[i].burst = every;
    }

    /// Modem `i`'s session freezes in protocol state `s` (say `IRStoISS`): it sends
    /// nothing more and answers `DISCONNECT` without ending the session, until `ABORT`
    /// (its own or the far modem's) or `thaw`.
    pub fn freeze(&self, i: usize, s: &str) {
        let mut ms = self.lock();
        ms[i].frozen = true;
        ms[i].set_state(s);
    }

    /// Modem `i`'s session moves again.
    pub fn thaw(&self, i: usize) {
        self.lock()[i].frozen = false;
    }

    /// Whether modem `i` is connected to another.
    pub fn connected(&self, i: usize) -> bool {
        self.lock()[i].peer.is_some()
    }

    /// Whether modem `i` reports the channel busy as a host connects.
    pub fn busy_at_connect(&self, i: usize, yes: bool) {
        self.lock()[i].busy_at_connect = yes;
    }

    /// Modem `i` reports the channel busy or clear.
    pub fn busy(&self, i: usize, yes: bool) {
        self.lock()[i].say(if yes { "BUSY TRUE" } else { "BUSY FALSE" });
    }

    /// Modem `i` enters protocol state `s` (and says so).
    pub fn set_state(&self, i: usize, s: &str) {
        self.lock()[i].set_state(s);
    }

    /// Puts raw bytes in front of modem `i`'s host on the command port.
    pub fn inject_command(&self, i: usize, bytes: &[u8]) {
        if let Some(c) = &self.lock()[i].cmd {
            let _ = c.send(bytes.to_vec());
        }
    }

    /// Puts raw bytes in front of modem `i`'s host on the data port.
    pub fn inject_data(&self, i: usize, bytes: &[u8]) {
        if let Some(d) = &self.lock()[i].data {
            let _ = d.send(bytes.to_vec());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Modem>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn writer(s: tokio::net::tcp::OwnedWriteHalf) -> mpsc::UnboundedSender<Vec<u8>> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let mut w = s;
    tokio::spawn(async move {
        while let Some(b) = rx.recv().await {
            if w.write_all(&b).await.is_err() {
                break;
            }
        }
    });
    tx
}

async fn accept_commands(l: TcpListener, i: usize, inner: Arc<Mutex<Vec<Modem>>>) {
    while let Ok((s, _)) = l.accept().await {
        let (mut r, w) = s.into_split();
        {
            let mut ms = inner.lock().unwrap_or_else(|e| e.into_inner());
            ms[i].cmd = Some(writer(w));
            ms[i].stats.connections += 1;
            if ms[i].busy_at_connect {
                ms[i].say("BUSY TRUE");
            }
        }
        let inner = inner.clone();
        tokio::spawn(async move {
            let mut line = Vec::new();
            let mut buf = vec![0u8; 4096];
            while let Ok(n) = r.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                for &b in &buf[..n] {
                    if b != b'\r' {
                        line.push(b);
                        continue;
                    }
                    let text = String::from_utf8_lossy(&line).to_string();
                    line.clear();
                    let mut ms = inner.lock().unwrap_or_else(|e| e.into_inner());
                    if ms[i].mute {
                        continue;
                    }
                    ms[i].stats.commands.push(text.clone());
                    command(&mut ms, i, &text, &inner);
                }
            }
        });
    }
}

fn command(ms: &mut [Modem], i: usize, text: &str, inner: &Arc<Mutex<Vec<Modem>>>) {
    let (word, rest) = text.split_once(' ').unwrap_or((text, ""));
    let m = &mut ms[i];
    match word.to_ascii_uppercase().as_str() {
        "INITIALIZE" => {
            m.say("INITIALIZE");
            m.set_state("DISC");
        }
        "MYCALL" => {
            m.mycall = rest.to_string();
            m.say(&format!("MYCALL now {rest}"));
        }
        "PROTOCOLMODE" => {
            m.fec = rest.eq_ignore_ascii_case("FEC");
            m.say(&format!("PROTOCOLMODE now {rest}"));
        }
        "LISTEN" => {
            m.listen = rest.eq_ignore_ascii_case("TRUE");
            m.say(&format!("LISTEN now {rest}"));
        }
        "ARQBW" | "ARQTIMEOUT" | "BUSYDET" | "FECMODE" | "FECREPEATS" => {
            m.say(&format!("{word} now {rest}"));
        }
        "STATE" => {
            let s = m.state.clone();
            m.say(&format!("STATE {s}"));
        }
        "BUFFER" => {
            let n = m.buffer.len();
            m.say(&format!("BUFFER {n}"));
        }
        "PURGEBUFFER" => {
            m.buffer.clear();
            m.say("BUFFER 0");
        }
        "FECSEND" => {
            m.fec_sending = rest.eq_ignore_ascii_case("TRUE");
            m.say(&format!("FECSEND now {rest}"));
        }
        "ARQCALL" => {
            m.say(text);
            let target = rest.split_whitespace().next().unwrap_or("").to_string();
            let me = m.mycall.clone();
            let inner = inner.clone();
            // A call takes a moment on the air.
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let mut ms = inner.lock().unwrap_or_else(|e| e.into_inner());
                let j = ms
                    .iter()
                    .position(|o| o.mycall == target && o.listen && o.peer.is_none() && !o.mute);
                match j {
                    Some(j) if j != i => {
                        ms[i].peer = Some(j);
                        ms[j].peer = Some(i);
                        ms[i].say(&format!("CONNECTED {target} 2000"));
                        ms[i].set_state("IDLE");
                        ms[j].say(&format!("CONNECTED {me} 2000"));
                        ms[j].set_state("IDLE");
                    }
                    _ => {
                        ms[i].say(&format!("STATUS CONNECT TO {target} FAILED!"));
                        ms[i].set_state("DISC");
                    }
                }
            });
        }
        // (The fake's channel carries both ways at once: no turn to ask for.)
        "BREAK" => m.say("BREAK"),
        "DISCONNECT" if m.frozen && m.peer.is_some() => m.say("DISCONNECT NOW TRUE"),
        "DISCONNECT" => match m.peer.take() {
            Some(j) => {
                m.say("DISCONNECT NOW TRUE");
                m.say("DISCONNECTED");
                m.set_state("DISC");
                ms[j].peer = None;
                ms[j].say("DISCONNECTED");
                ms[j].set_state("DISC");
            }
            None => m.say("DISCONNECT IGNORED"),
        },
        "ABORT" => {
            m.say("ABORT");
            m.frozen = false;
            m.buffer.clear();
            if let Some(j) = m.peer.take() {
                m.set_state("DISC");
                ms[j].frozen = false;
                let inner = inner.clone();
                // The far modem hears nothing more: its side ends by its ARQ timeout.
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    let mut ms = inner.lock().unwrap_or_else(|e| e.into_inner());
                    if ms[j].peer == Some(i) {
                        ms[j].peer = None;
                        ms[j].say("DISCONNECTED");
                        ms[j].set_state("DISC");
                    }
                });
            }
        }
        _ => m.say(&format!("FAULT {text}")),
    }
}

async fn accept_data(l: TcpListener, i: usize, inner: Arc<Mutex<Vec<Modem>>>) {
    while let Ok((s, _)) = l.accept().await {
        let (mut r, w) = s.into_split();
        {
            let mut ms = inner.lock().unwrap_or_else(|e| e.into_inner());
            ms[i].data = Some(writer(w));
            ms[i].stats.data_connections += 1;
        }
        let inner = inner.clone();
        tokio::spawn(async move {
            let mut pending = Vec::new();
            let mut buf = vec![0u8; 8192];
            while let Ok(n) = r.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                pending.extend_from_slice(&buf[..n]);
                while let Some(msg) = super::host::take_data(&mut pending) {
                    let mut ms = inner.lock().unwrap_or_else(|e| e.into_inner());
                    let m = &mut ms[i];
                    if m.buffer.len() + msg.len() >= CAPACITY {
                        m.stats.discarded += msg.len();
                        continue;
                    }
                    m.buffer.extend(msg);
                    m.stats.max_buffer = m.stats.max_buffer.max(m.buffer.len());
                    if !m.mute {
                        let n = m.buffer.len();
                        m.say(&format!("BUFFER {n}"));
                    }
                }
            }
        });
    }
}

/// Sends every modem's buffer at `rate` bytes per second, in pieces.
async fn transmit(inner: Arc<Mutex<Vec<Modem>>>, rate: f64) {
    const TICK: Duration = Duration::from_millis(50);
    let mut owed = Vec::<f64>::new();
    let mut last_burst = Vec::<tokio::time::Instant>::new();
    loop {
        tokio::time::sleep(TICK).await;
        let now = tokio::time::Instant::now();
        let mut ms = inner.lock().unwrap_or_else(|e| e.into_inner());
        owed.resize(ms.len(), 0.0);
        last_burst.resize(ms.len(), now);
        for i in 0..ms.len() {
            let m = &ms[i];
            let may = !m.stuck && !m.frozen && (m.peer.is_some() || (m.fec && m.fec_sending));
            if m.buffer.is_empty() || !may {
                owed[i] = 0.0;
                last_burst[i] = now;
                continue;
            }
            owed[i] += rate * TICK.as_secs_f64();
            if let Some(every) = m.burst {
                if now < last_burst[i] + every {
                    continue;
                }
                last_burst[i] = now;
            }
            let take = (owed[i] as usize)
                .min(m.buffer.len())
                .min(host::MAX_DATA_WRITE);
            if take == 0 {
                continue;
            }
            owed[i] -= take as f64;
            let piece: Vec<u8> = ms[i].buffer.drain(..take).collect();
            ms[i].stats.sent += take;
            let left = ms[i].buffer.len();
            if !ms[i].mute {
                ms[i].say(&format!("BUFFER {left}"));
            }
            if ms[i].fec {
                for (j, o) in ms.iter().enumerate() {
                    if j != i && o.fec {
                        o.deliver(b"FEC", &piece);
                    }
                }
            } else if let Some(j) = ms[i].peer {
                ms[j].deliver(b"ARQ", &piece);
            }
        }
    }
}
