//! A scripted fake KISS TNC over TCP, for tests: two or more TNCs on one channel.
//!
//! Each TNC listens on a loopback port and speaks KISS to any number of clients. Data
//! frames a client sends join the TNC's queue; the TNC sends them one at a time at the
//! channel's rate (a frame leaves the queue when its transmission starts, as in Dire
//! Wolf) and every other TNC hands them to its clients on the same KISS port (port `p`
//! of every TNC is one radio channel: a multi-port TNC is on several). `TXBUF:` queries
//! (KISS command 6) are answered with the bytes queued for the query's port, unless the
//! script says not to answer; a TNC can be told to stop sending (its queue then never
//! drains), raw bytes can be put in front of its clients (garbage, frames that are not
//! AX.25), and its connections can be cut (a TNC restarting). What it does not do:
//! carrier sense, collisions, loss.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::wire;
use crate::link::writer;

/// What one fake TNC saw and did.
#[derive(Debug, Default, Clone)]
pub struct FakeTncStats {
    /// Data frames taken from clients.
    pub frames_in: u64,
    /// Of those, by KISS port.
    pub frames_in_port: [u64; 16],
    /// Data frames sent on the channel.
    pub frames_sent: u64,
    /// Most bytes (AX.25) ever queued.
    pub max_queued: usize,
    /// `TXBUF:` queries received, and answered.
    pub queries: u64,
    pub answers: u64,
    /// Parameter frames (commands 1-5) received: (port, command, value).
    pub parameters: Vec<(u8, u8, u8)>,
}

#[derive(Debug)]
struct Tnc {
    queue: VecDeque<(u8, Vec<u8>)>,
    /// Bytes queued, by KISS port.
    queued: [usize; 16],
    answer_txbuf: bool,
    sending: bool,
    clients: Vec<Client>,
    /// Connections accepted so far.
    accepted: u64,
    stats: FakeTncStats,
}

#[derive(Debug)]
struct Client {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    reader: AbortHandle,
}

#[derive(Debug)]
struct Channel {
    tncs: Vec<Tnc>,
}

/// Fake TNCs sharing one channel (see the module docs).
#[derive(Debug, Clone)]
pub struct FakeTncs {
    inner: Arc<Mutex<Channel>>,
    addrs: Vec<SocketAddr>,
}

impl FakeTncs {
    /// `n` TNCs on a channel carrying `rate` bytes per second. Must be called within a
    /// tokio runtime; the TNCs run until the runtime ends.
    pub async fn start(n: usize, rate: f64) -> std::io::Result<FakeTncs> {
        let inner = Arc::new(Mutex::new(Channel {
            tncs: (0..n)
                .map(|_| Tnc {
                    queue: VecDeque::new(),
                    queued: [0; 16],
                    answer_txbuf: true,
                    sending: true,
                    clients: Vec::new(),
                    accepted: 0,
                    stats: FakeTncStats::default(),
                })
                .collect(),
        }));
        let mut addrs = Vec::new();
        for i in 0..n {
            let l = TcpListener::bind("127.0.0.1:0").await?;
            addrs.push(l.local_addr()?);
            tokio::spawn(listen(l, i, inner.clone()));
            tokio::spawn(transmit(i, inner.clone(), rate));
        }
        Ok(FakeTncs { inner, addrs })
    }

    /// TNC `i`'s KISS address as a `kiss` link's `tnc` setting.
    pub fn url(&self, i: usize) -> String {
        format!("tcp://{}", self.addrs[i])
    }

    pub fn stats(&self, i: usize) -> FakeTncStats {
        self.lock().tncs[i].stats.clone()
    }

    /// Whether TNC `i` answers `TXBUF:` queries.
    pub fn answer_txbuf(&self, i: usize, yes: bool) {
        self.lock().tncs[i].answer_txbuf = yes;
    }

    /// Whether TNC `i` sends its queue (no: it keeps everything, as with a channel that
    /// is never clear).
    pub fn sending(&self, i: usize, yes: bool) {
        self.lock().tncs[i].sending = yes;
    }

    /// Bytes TNC `i` holds now.
    pub fn queued(&self, i: usize) -> usize {
        self.lock().tncs[i].queued.iter().sum()
    }

    /// Clients TNC `i` has connected now.
    pub fn clients(&self, i: usize) -> usize {
        self.lock().tncs[i].clients.len()
    }

    /// Connections TNC `i` has accepted so far.
    pub fn accepted(&self, i: usize) -> u64 {
        self.lock().tncs[i].accepted
    }

    /// Puts raw bytes in front of TNC `i`'s clients.
    pub fn inject(&self, i: usize, bytes: &[u8]) {
        for c in &self.lock().tncs[i].clients {
            let _ = c.tx.send(bytes.to_vec());
        }
    }

    /// Closes every connection to TNC `i`, as a TNC that restarts does (it listens
    /// again at once; what it held stays queued).
    pub fn disconnect(&self, i: usize) {
        for c in self.lock().tncs[i].clients.drain(..) {
            // The reader's half and, once the writer sees its channel closed, the
            // writer's: the socket closes.
            c.reader.abort();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Channel> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

async fn listen(l: TcpListener, i: usize, inner: Arc<Mutex<Channel>>) {
    while let Ok((s, _)) = l.accept().await {
        let (mut r, w) = s.into_split();
        let tx = writer(w);
        // (Registered under the lock the reader takes first: a disconnect cannot miss it.)
        let mut ch = inner.lock().unwrap_or_else(|e| e.into_inner());
        let inner2 = inner.clone();
        let reply = tx.clone();
        let reader = tokio::spawn(async move {
            let inner = inner2;
            let tx = reply;
            let mut d = wire::Decoder::new();
            let mut buf = vec![0u8; 4096];
            while let Ok(n) = r.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                for f in d.push(&buf[..n]) {
                    let mut ch = inner.lock().unwrap_or_else(|e| e.into_inner());
                    let t = &mut ch.tncs[i];
                    match f.command {
                        wire::cmd::DATA => {
                            t.stats.frames_in += 1;
                            t.stats.frames_in_port[usize::from(f.port)] += 1;
                            t.queued[usize::from(f.port)] += f.data.len();
                            let total = t.queued.iter().sum();
                            t.stats.max_queued = t.stats.max_queued.max(total);
                            t.queue.push_back((f.port, f.data));
                        }
                        wire::cmd::SET_HARDWARE if f.data == b"TXBUF:" => {
                            t.stats.queries += 1;
                            if t.answer_txbuf {
                                t.stats.answers += 1;
                                let mut out = Vec::new();
                                let answer = format!("TXBUF:{}", t.queued[usize::from(f.port)]);
                                wire::encode(
                                    f.port,
                                    wire::cmd::SET_HARDWARE,
                                    answer.as_bytes(),
                                    &mut out,
                                );
                                let _ = tx.send(out);
                            }
                        }
                        c @ 1..=5 => {
                            t.stats.parameters.push((
                                f.port,
                                c,
                                f.data.first().copied().unwrap_or(0),
                            ));
                        }
                        _ => {}
                    }
                }
            }
        });
        let t = &mut ch.tncs[i];
        t.accepted += 1;
        t.clients.push(Client {
            tx,
            reader: reader.abort_handle(),
        });
    }
}

async fn transmit(i: usize, inner: Arc<Mutex<Channel>>, rate: f64) {
    loop {
        let next = {
            let mut ch = inner.lock().unwrap_or_else(|e| e.into_inner());
            let t = &mut ch.tncs[i];
            if t.sending {
                t.queue.pop_front().inspect(|(port, f)| {
                    t.queued[usize::from(*port)] -= f.len();
                    t.stats.frames_sent += 1;
                })
            } else {
                None
            }
        };
        let Some((port, f)) = next else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        tokio::time::sleep(Duration::from_secs_f64(f.len() as f64 / rate)).await;
        let mut out = Vec::new();
        wire::encode(port, wire::cmd::DATA, &f, &mut out);
        let ch = inner.lock().unwrap_or_else(|e| e.into_inner());
        for (j, t) in ch.tncs.iter().enumerate() {
            if j != i {
                for c in &t.clients {
                    let _ = c.tx.send(out.clone());
                }
            }
        }
    }
}
