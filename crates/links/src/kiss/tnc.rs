//! One connection to a TNC, shared by the `kiss` links on its KISS ports.
//!
//! A multi-port TNC (a dual-port hardware TNC, Dire Wolf with several radio channels)
//! carries every channel over one byte stream, the port in each frame's first byte.
//! The TNC task owns that stream: it opens it (retrying with backoff), splits what it
//! reads into KISS frames and hands each to the link on its port, and writes what the
//! links queue, whole frames in the order queued. Each link keeps its own addresses,
//! credit and pacing (`super::run`) and learns from [`TncState`] when the stream is
//! open and why it closed: a failing device takes every port's link down with the same
//! reason, and they come back together when it reopens.
//!
//! Frames on a port no link is configured for, and bytes that form no KISS frame,
//! belong to no link: they are counted as dropped on the device's first link (the
//! first configured on it), once, rather than on every link sharing the device.
//!
//! What this does not do: share a TNC named two ways (`tcp://localhost:8001` and
//! `tcp://127.0.0.1:8001` are two connections), or share one across daemons.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, watch};

use super::wire;
use crate::LinkCounters;
use crate::device::Device;
use crate::link::{Backoff, tcp_read, tcp_write_some};

/// Where the TNC is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Tcp(String),
    Serial(PathBuf),
}

impl Endpoint {
    pub(crate) fn parse(tnc: &str) -> Endpoint {
        match tnc.strip_prefix("tcp://") {
            Some(a) => Endpoint::Tcp(a.to_string()),
            None => Endpoint::Serial(PathBuf::from(tnc)),
        }
    }

    /// What two links naming the same TNC have in common: the address, or the device
    /// the path leads to (`/dev/serial/by-id/...` and `/dev/ttyUSB0` are one device).
    pub(crate) fn key(&self) -> Endpoint {
        match self {
            Endpoint::Serial(p) => Endpoint::Serial(std::fs::canonicalize(p).unwrap_or(p.clone())),
            tcp => tcp.clone(),
        }
    }
}

/// The TNC's byte stream.
enum Stream {
    Tcp(tokio::net::TcpStream),
    Serial(Device),
}

impl Stream {
    async fn open(endpoint: &Endpoint, baud: u32) -> std::io::Result<Stream> {
        match endpoint {
            Endpoint::Tcp(a) => {
                let s = tokio::net::TcpStream::connect(a.as_str()).await?;
                // Frames are small and each should leave at once.
                s.set_nodelay(true)?;
                Ok(Stream::Tcp(s))
            }
            Endpoint::Serial(p) => Ok(Stream::Serial(Device::open(p, baud)?)),
        }
    }

    /// Cancel-safe: nothing is read unless it returns.
    async fn read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Serial(d) => d.read(buf).await,
            Stream::Tcp(s) => tcp_read(s, buf).await,
        }
    }

    /// Cancel-safe: nothing is written unless it returns.
    async fn write_some(&self, data: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Serial(d) => d.write_some(data).await,
            Stream::Tcp(s) => tcp_write_some(s, data).await,
        }
    }
}

/// Whether the TNC's stream is open, as the links on it see it.
#[derive(Debug, Clone, Default)]
pub(crate) struct TncState {
    /// Openings so far: a link's session belongs to one of them.
    pub opened: u64,
    pub up: bool,
    /// Why the stream last closed.
    pub reason: String,
}

/// A link's side of its TNC.
#[derive(Debug)]
pub(crate) struct PortIo {
    /// Frames the TNC sent on the link's port.
    pub frames: mpsc::Receiver<wire::Frame>,
    out: mpsc::UnboundedSender<(u64, Vec<u8>)>,
    pub state: watch::Receiver<TncState>,
}

impl PortIo {
    /// Queues whole KISS frames for the stream of opening `opened`. Dropped if that
    /// stream has closed since: the link starts each new one with its parameters.
    pub(crate) fn write(&self, opened: u64, frames: Vec<u8>) {
        let _ = self.out.send((opened, frames));
    }
}

/// Received frames waiting for one link: a link that falls this far behind (its daemon
/// not reading) loses frames, counted, rather than holding up the other ports.
const PORT_QUEUE: usize = 256;

/// A link on the TNC, as the TNC task sees it.
pub(crate) struct Port {
    pub port: u8,
    pub name: String,
    pub counters: Arc<LinkCounters>,
}

struct PortTx {
    port: Port,
    frames: mpsc::Sender<wire::Frame>,
}

/// Starts the task for the TNC at `tnc` (as configured, for logs) and its `ports`
/// (the first takes the device's own drops); returns each port's side, in order.
pub(crate) fn spawn(tnc: String, endpoint: Endpoint, baud: u32, ports: Vec<Port>) -> Vec<PortIo> {
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let (state_tx, state_rx) = watch::channel(TncState::default());
    let mut ios = Vec::with_capacity(ports.len());
    let mut txs = Vec::with_capacity(ports.len());
    for port in ports {
        let (tx, rx) = mpsc::channel(PORT_QUEUE);
        txs.push(PortTx { port, frames: tx });
        ios.push(PortIo {
            frames: rx,
            out: out_tx.clone(),
            state: state_rx.clone(),
        });
    }
    tokio::spawn(run(tnc, endpoint, baud, Demux::new(txs), out_rx, state_tx));
    ios
}

/// Splits the stream into frames and hands each to its port's link.
struct Demux {
    ports: Vec<PortTx>,
    decoder: wire::Decoder,
    /// The decoder's counts already added to the first link's counters.
    garbage: u64,
    bad: u64,
    /// Unconfigured ports already reported (one bit each).
    reported: u16,
}

impl Demux {
    fn new(ports: Vec<PortTx>) -> Demux {
        assert!(!ports.is_empty(), "a TNC task serves at least one link");
        Demux {
            ports,
            decoder: wire::Decoder::new(),
            garbage: 0,
            bad: 0,
            reported: 0,
        }
    }

    /// A new stream: a frame cut short by the old one is not glued to the new one.
    fn reset(&mut self) {
        self.decoder = wire::Decoder::new();
        self.garbage = 0;
        self.bad = 0;
    }

    fn push(&mut self, tnc: &str, data: &[u8]) {
        let frames = self.decoder.push(data);
        let first = &self.ports[0].port;
        LinkCounters::add(
            &first.counters.garbage_bytes,
            self.decoder.garbage - self.garbage,
        );
        LinkCounters::add(
            &first.counters.dropped_frames,
            self.decoder.bad_frames - self.bad,
        );
        self.garbage = self.decoder.garbage;
        self.bad = self.decoder.bad_frames;
        for f in frames {
            let Some(p) = self.ports.iter().find(|p| p.port.port == f.port) else {
                let bit = 1u16 << (f.port & 0x0F);
                if self.reported & bit == 0 {
                    self.reported |= bit;
                    tracing::warn!(
                        tnc,
                        port = f.port,
                        link = %first.name,
                        "frames arrive on KISS port {}, which no link is configured for: dropped, and counted on the TNC's first link",
                        f.port
                    );
                }
                tracing::debug!(
                    tnc,
                    port = f.port,
                    command = f.command,
                    len = f.data.len(),
                    "kiss: frame for an unconfigured port dropped"
                );
                LinkCounters::add(&first.counters.dropped_frames, 1);
                LinkCounters::add(&first.counters.foreign_frames, 1);
                continue;
            };
            match p.frames.try_send(f) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    tracing::warn!(link = %p.port.name, "kiss: received frame dropped: the link is {PORT_QUEUE} frames behind");
                    LinkCounters::add(&p.port.counters.dropped_frames, 1);
                }
                // (The daemon has let the link go.)
                Err(TrySendError::Closed(_)) => {}
            }
        }
    }

    fn names(&self) -> String {
        let names: Vec<&str> = self.ports.iter().map(|p| p.port.name.as_str()).collect();
        names.join(", ")
    }
}

async fn run(
    tnc: String,
    endpoint: Endpoint,
    baud: u32,
    mut demux: Demux,
    mut out: mpsc::UnboundedReceiver<(u64, Vec<u8>)>,
    state: watch::Sender<TncState>,
) {
    let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(30));
    let mut failures = 0u32;
    let mut opened = 0u64;
    loop {
        let stream = match Stream::open(&endpoint, baud).await {
            Ok(s) => s,
            Err(e) => {
                if failures == 0 {
                    tracing::warn!(tnc, links = %demux.names(), error = %e, "cannot reach the TNC; retrying with backoff until it answers");
                }
                failures += 1;
                if !discard_for(&mut out, backoff.next_delay()).await {
                    return;
                }
                continue;
            }
        };
        failures = 0;
        backoff.reset();
        opened += 1;
        demux.reset();
        tracing::info!(tnc, links = %demux.names(), "TNC open");
        state.send_modify(|s| {
            s.opened = opened;
            s.up = true;
        });
        let Some(reason) = carry(&tnc, &stream, opened, &mut demux, &mut out).await else {
            return;
        };
        drop(stream);
        if demux.ports.len() > 1 {
            tracing::warn!(tnc, %reason, "TNC lost: its {} links go down", demux.ports.len());
        }
        state.send_modify(|s| {
            s.up = false;
            s.reason = reason;
        });
        if !discard_for(&mut out, backoff.next_delay()).await {
            return;
        }
    }
}

/// Carries bytes both ways until the stream fails (`Some(why)`) or every link has gone
/// (`None`).
async fn carry(
    tnc: &str,
    stream: &Stream,
    opened: u64,
    demux: &mut Demux,
    out: &mut mpsc::UnboundedReceiver<(u64, Vec<u8>)>,
) -> Option<String> {
    let mut buf = vec![0u8; 4096];
    let mut pending = Vec::new();
    loop {
        tokio::select! {
            r = stream.read(&mut buf) => match r {
                Ok(0) => return Some(match stream {
                    Stream::Tcp(_) => "the TNC closed the connection".into(),
                    Stream::Serial(_) => "the TNC's serial device reached end of file (unplugged?)".into(),
                }),
                Ok(n) => demux.push(tnc, &buf[..n]),
                Err(e) => return Some(format!("read from the TNC failed: {e}")),
            },
            r = stream.write_some(&pending), if !pending.is_empty() => match r {
                Ok(n) => {
                    pending.drain(..n);
                }
                Err(e) => return Some(format!("write to the TNC failed: {e}")),
            },
            m = out.recv() => match m {
                Some((o, frames)) if o == opened => pending.extend_from_slice(&frames),
                // (For a stream closed since.)
                Some(_) => {}
                None => return None,
            },
        }
    }
}

/// Waits `delay`, discarding what links queue meanwhile (it was for a closed stream);
/// `false` once every link has gone.
async fn discard_for(out: &mut mpsc::UnboundedReceiver<(u64, Vec<u8>)>, delay: Duration) -> bool {
    let until = tokio::time::Instant::now() + delay;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(until) => return true,
            m = out.recv() => if m.is_none() {
                return false;
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(port: u8) -> (PortTx, mpsc::Receiver<wire::Frame>) {
        let (tx, rx) = mpsc::channel(PORT_QUEUE);
        (
            PortTx {
                port: Port {
                    port,
                    name: format!("p{port}"),
                    counters: Arc::default(),
                },
                frames: tx,
            },
            rx,
        )
    }

    #[test]
    fn frames_go_to_their_port_and_the_rest_is_counted_on_the_first_link() {
        let (p0, mut r0) = port(0);
        let (p1, mut r1) = port(1);
        let (c0, c1) = (p0.port.counters.clone(), p1.port.counters.clone());
        let mut d = Demux::new(vec![p0, p1]);
        let mut s = Vec::new();
        wire::encode(1, wire::cmd::DATA, b"one", &mut s);
        wire::encode(0, wire::cmd::DATA, b"zero", &mut s);
        wire::encode(5, wire::cmd::DATA, b"five", &mut s);
        wire::encode(1, wire::cmd::SET_HARDWARE, b"TXBUF:9", &mut s);
        s.extend_from_slice(&[wire::FEND, 0x10, wire::FESC, 0x00, wire::FEND]);
        // Split anywhere, as a stream is read.
        for c in s.chunks(3) {
            d.push("t", c);
        }
        assert_eq!(r0.try_recv().unwrap().data, b"zero");
        assert!(r0.try_recv().is_err());
        assert_eq!(r1.try_recv().unwrap().data, b"one");
        let q = r1.try_recv().unwrap();
        assert_eq!((q.port, q.command, &q.data[..]), (1, 6, &b"TXBUF:9"[..]));
        // Port 5's frame and the broken escape: the first link's, once.
        assert_eq!(LinkCounters::get(&c0.dropped_frames), 2);
        assert_eq!(LinkCounters::get(&c0.foreign_frames), 1);
        assert_eq!(LinkCounters::get(&c0.garbage_bytes), 3);
        assert_eq!(LinkCounters::get(&c1.dropped_frames), 0);
        // A link that stopped reading loses frames, counted on it.
        for _ in 0..PORT_QUEUE + 3 {
            let mut f = Vec::new();
            wire::encode(1, wire::cmd::DATA, b"x", &mut f);
            d.push("t", &f);
        }
        assert_eq!(LinkCounters::get(&c1.dropped_frames), 3);
    }
}
