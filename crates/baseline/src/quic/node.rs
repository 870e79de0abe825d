//! A skywave-sim [`Endpoint`] that wraps a quinn-proto endpoint and its one connection.
//!
//! Virtual time maps to the `Instant`s quinn wants as `base + offset`; quinn only adds,
//! subtracts and compares the instants it is given, so the base's value never shows.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Event, ReadError, StreamId,
    WriteError,
};
use skywave_sim::link::{LinkInfo, TransmitError};
use skywave_sim::sim::{Endpoint, PortId};
use skywave_sim::time::SimTime;

/// Payload source: the stream carries zeros (the link model does not look at contents, and
/// QUIC encrypts them anyway).
static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];

/// What this node does with its connection.
#[derive(Debug)]
pub(crate) enum Role {
    /// Opens one unidirectional stream, writes `total` bytes, finishes it.
    Client {
        total: u64,
        written: u64,
        stream: Option<StreamId>,
        finished: bool,
    },
    /// Accepts streams and reads them to the end.
    Server {
        streams: Vec<StreamId>,
        received: u64,
        finished_streams: usize,
    },
}

pub(crate) struct QuicNode {
    base: Instant,
    endpoint: quinn_proto::Endpoint,
    conn: Option<(ConnectionHandle, Connection)>,
    peer: SocketAddr,
    role: Role,
    /// Stateless packets from the endpoint (e.g. version negotiation), sent before the
    /// connection's own.
    out: VecDeque<Bytes>,
    buf: Vec<u8>,
    pub(crate) connected_at: Option<SimTime>,
    /// Server: when the last byte and the FIN of the stream were read.
    pub(crate) done_at: Option<SimTime>,
    /// Why the connection ended or could not start, if it did.
    pub(crate) failure: Option<String>,
}

impl std::fmt::Debug for QuicNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicNode")
            .field("role", &self.role)
            .field("connected_at", &self.connected_at)
            .field("done_at", &self.done_at)
            .field("failure", &self.failure)
            .finish()
    }
}

impl QuicNode {
    pub(crate) fn client(
        base: Instant,
        mut endpoint: quinn_proto::Endpoint,
        config: ClientConfig,
        server: SocketAddr,
        server_name: &str,
        total: u64,
    ) -> Result<Self, String> {
        let (ch, conn) = endpoint
            .connect(base, config, server, server_name)
            .map_err(|e| format!("QUIC connect: {e}"))?;
        Ok(QuicNode {
            base,
            endpoint,
            conn: Some((ch, conn)),
            peer: server,
            role: Role::Client {
                total,
                written: 0,
                stream: None,
                finished: false,
            },
            out: VecDeque::new(),
            buf: Vec::new(),
            connected_at: None,
            done_at: None,
            failure: None,
        })
    }

    pub(crate) fn server(
        base: Instant,
        endpoint: quinn_proto::Endpoint,
        client: SocketAddr,
    ) -> Self {
        QuicNode {
            base,
            endpoint,
            conn: None,
            peer: client,
            role: Role::Server {
                streams: Vec::new(),
                received: 0,
                finished_streams: 0,
            },
            out: VecDeque::new(),
            buf: Vec::new(),
            connected_at: None,
            done_at: None,
            failure: None,
        }
    }

    pub(crate) fn connection(&self) -> Option<&Connection> {
        self.conn.as_ref().map(|(_, c)| c)
    }

    /// Bytes of stream payload read by the server (0 on the client).
    pub(crate) fn received(&self) -> u64 {
        match self.role {
            Role::Server { received, .. } => received,
            Role::Client { .. } => 0,
        }
    }

    fn instant(&self, t: SimTime) -> Instant {
        self.base + Duration::from_nanos(t.as_nanos())
    }

    fn sim_time(&self, t: Instant) -> SimTime {
        let d = t.saturating_duration_since(self.base);
        SimTime::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    /// Runs everything the connection can do without new input: endpoint events both ways,
    /// application events, stream reads and writes. Returns whether anything happened.
    fn drive(&mut self, now: SimTime) -> bool {
        let mut progress = false;
        loop {
            let mut again = false;
            let Some((ch, conn)) = self.conn.as_mut() else {
                return progress;
            };
            while let Some(ev) = conn.poll_endpoint_events() {
                again = true;
                if let Some(cev) = self.endpoint.handle_event(*ch, ev) {
                    conn.handle_event(cev);
                }
            }
            while let Some(ev) = conn.poll() {
                again = true;
                match ev {
                    Event::Connected => {
                        self.connected_at.get_or_insert(now);
                    }
                    Event::ConnectionLost { reason } => {
                        self.failure
                            .get_or_insert_with(|| format!("connection lost: {reason}"));
                    }
                    // Streams are served below on every pass, whatever the event.
                    _ => {}
                }
            }
            again |= match &mut self.role {
                Role::Client {
                    total,
                    written,
                    stream,
                    finished,
                } => write_stream(conn, *total, written, stream, finished),
                Role::Server {
                    streams,
                    received,
                    finished_streams,
                } => {
                    let (p, fin) = read_streams(conn, streams, received, finished_streams);
                    if fin && self.done_at.is_none() {
                        self.done_at = Some(now);
                    }
                    p
                }
            };
            if !again {
                return progress;
            }
            progress = true;
        }
    }
}

/// Opens the stream once the handshake allows it and writes until quinn's send buffer is
/// full; finishes the stream after the last byte.
fn write_stream(
    conn: &mut Connection,
    total: u64,
    written: &mut u64,
    stream: &mut Option<StreamId>,
    finished: &mut bool,
) -> bool {
    if *finished {
        return false;
    }
    let id = match *stream {
        Some(id) => id,
        None => match conn.streams().open(Dir::Uni) {
            Some(id) => *stream.insert(id),
            // Not connected yet (the peer's stream limit is unknown).
            None => return false,
        },
    };
    let mut progress = false;
    let mut s = conn.send_stream(id);
    while *written < total {
        let n = (total - *written).min(ZEROS.len() as u64) as usize;
        match s.write(&ZEROS[..n]) {
            Ok(k) => {
                *written += k as u64;
                progress = true;
            }
            Err(WriteError::Blocked) => return progress,
            // Stopped or closed: nothing more to do on this stream.
            Err(_) => {
                *finished = true;
                return progress;
            }
        }
    }
    // The stream is open and unfinished, so finish() can only fail if it was reset.
    let _ = s.finish();
    *finished = true;
    true
}

/// Accepts new streams and drains every readable one. Returns (progress, all finished).
fn read_streams(
    conn: &mut Connection,
    streams: &mut Vec<StreamId>,
    received: &mut u64,
    finished: &mut usize,
) -> (bool, bool) {
    let mut progress = false;
    while let Some(id) = conn.streams().accept(Dir::Uni) {
        streams.push(id);
        progress = true;
    }
    let mut i = 0;
    while i < streams.len() {
        let mut recv = conn.recv_stream(streams[i]);
        let mut done = false;
        if let Ok(mut chunks) = recv.read(true) {
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(chunk)) => {
                        *received += chunk.bytes.len() as u64;
                        progress = true;
                    }
                    Ok(None) => {
                        done = true;
                        break;
                    }
                    Err(ReadError::Blocked) => break,
                    Err(ReadError::Reset(_)) => {
                        done = true;
                        break;
                    }
                }
            }
            // Flow-control credit is queued inside the connection; the transmit poll
            // that follows every event sends it.
            let _ = chunks.finalize();
        }
        if done {
            streams.swap_remove(i);
            *finished += 1;
            progress = true;
        } else {
            i += 1;
        }
    }
    (progress, *finished > 0 && streams.is_empty())
}

impl Endpoint for QuicNode {
    fn handle_frame(&mut self, now: SimTime, _port: PortId, frame: Bytes) {
        let at = self.instant(now);
        let data = BytesMut::from(&frame[..]);
        self.buf.clear();
        let Some(ev) = self
            .endpoint
            .handle(at, self.peer, None, None, data, &mut self.buf)
        else {
            return;
        };
        match ev {
            DatagramEvent::NewConnection(incoming) => {
                if self.conn.is_some() {
                    // One connection per run: a second one is refused.
                    self.buf.clear();
                    let t = self.endpoint.refuse(incoming, &mut self.buf);
                    self.out
                        .push_back(Bytes::copy_from_slice(&self.buf[..t.size]));
                    return;
                }
                self.buf.clear();
                match self.endpoint.accept(incoming, at, &mut self.buf, None) {
                    Ok((ch, conn)) => self.conn = Some((ch, conn)),
                    Err(e) => {
                        if let Some(t) = e.response {
                            self.out
                                .push_back(Bytes::copy_from_slice(&self.buf[..t.size]));
                        }
                        self.failure = Some(format!("accept: {}", e.cause));
                    }
                }
            }
            DatagramEvent::ConnectionEvent(ch, cev) => {
                if let Some((h, conn)) = self.conn.as_mut()
                    && *h == ch
                {
                    conn.handle_event(cev);
                }
            }
            DatagramEvent::Response(t) => {
                self.out
                    .push_back(Bytes::copy_from_slice(&self.buf[..t.size]));
            }
        }
        self.drive(now);
    }

    fn handle_transmit_error(&mut self, _now: SimTime, _port: PortId, error: &TransmitError) {
        // A full bottleneck queue is ordinary drop-tail loss, which QUIC recovers from;
        // anything else (MTU) means the configuration is wrong.
        if !matches!(error, TransmitError::QueueFull { .. }) {
            self.failure
                .get_or_insert_with(|| format!("link refused a datagram: {error}"));
        }
    }

    fn handle_timeout(&mut self, now: SimTime) {
        let at = self.instant(now);
        if let Some((_, conn)) = self.conn.as_mut() {
            conn.handle_timeout(at);
        }
        self.drive(now);
    }

    fn poll_transmit(&mut self, now: SimTime, _port: PortId, _link: &LinkInfo) -> Option<Bytes> {
        if let Some(b) = self.out.pop_front() {
            return Some(b);
        }
        // `_link.free` is not consulted: a QUIC sender on a real host does not see the
        // bottleneck queue, it learns about it through loss and delay.
        let at = self.instant(now);
        for _ in 0..2 {
            let (_, conn) = self.conn.as_mut()?;
            self.buf.clear();
            // One datagram per call: the link takes frames, not GSO batches.
            if let Some(t) = conn.poll_transmit(at, 1, &mut self.buf) {
                return Some(Bytes::copy_from_slice(&self.buf[..t.size]));
            }
            if !self.drive(now) {
                break;
            }
        }
        None
    }

    fn poll_timeout(&mut self) -> Option<SimTime> {
        let (_, conn) = self.conn.as_mut()?;
        let t = conn.poll_timeout()?;
        Some(self.sim_time(t))
    }
}
