//! IP links: UDP sockets (many peers per socket, learnt from traffic and beacons) and TCP
//! connections (one per peer, frames length-prefixed, reconnect with backoff).
//!
//! These tasks only move bytes. Which peer a datagram belongs to, and every protocol
//! decision, is the core's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::config::PeerAddr;
use crate::core::Input;
use crate::limits::{Limit, Limits, Permit};

/// Largest datagram read; anything longer is counted as oversize and dropped.
pub const MAX_DATAGRAM: usize = skywave_node::adapter::MAX_DATAGRAM;

/// The most a UDP datagram to `to` carries unfragmented, as the kernel knows it: the
/// MTU of its route (the outgoing interface's, or a smaller path MTU learnt since)
/// less the IP and UDP headers. Nothing is sent: connecting a UDP socket only looks
/// the route up. This bounds path MTU discovery (RFC 8899's MAX_PLPMTU: the local
/// interface's MTU), so a jumbo-frame LAN or loopback is not held to Ethernet's 1472.
/// IPv4 on Linux; `None` elsewhere, and the link's default applies.
pub fn route_payload(to: std::net::SocketAddr) -> Option<usize> {
    #[cfg(target_os = "linux")]
    if to.is_ipv4() {
        let s = std::net::UdpSocket::bind((std::net::Ipv4Addr::UNSPECIFIED, 0)).ok()?;
        s.connect(to).ok()?;
        let mtu = nix::sys::socket::getsockopt(&s, nix::sys::socket::sockopt::IpMtu).ok()?;
        return usize::try_from(mtu).ok()?.checked_sub(20 + 8);
    }
    let _ = to;
    None
}

/// Route MTUs looked up, by host and when: a host's new ports (a NAT's, a flood's)
/// reuse the answer rather than a socket and two system calls each. An answer lives
/// `RouteMtus::TTL`, as routes and learnt path MTUs change.
#[derive(Debug, Default)]
pub struct RouteMtus(std::collections::HashMap<std::net::IpAddr, (Instant, Option<usize>)>);

impl RouteMtus {
    const TTL: Duration = Duration::from_secs(60);
    /// Hosts remembered; the table is emptied when full.
    const MAX: usize = 4096;

    /// `lookup(to)` (normally [`route_payload`]), or its answer for `to`'s host while fresh.
    pub fn get(
        &mut self,
        to: std::net::SocketAddr,
        now: Instant,
        lookup: impl FnOnce(std::net::SocketAddr) -> Option<usize>,
    ) -> Option<usize> {
        if let Some(&(at, mtu)) = self.0.get(&to.ip())
            && now.saturating_duration_since(at) < Self::TTL
        {
            return mtu;
        }
        if self.0.len() >= Self::MAX {
            self.0.clear();
        }
        let mtu = lookup(to);
        self.0.insert(to.ip(), (now, mtu));
        mtu
    }
}

/// Beacon: magic, wire version, then the node key.
pub const BEACON_MAGIC: &[u8; 8] = b"SKYWAVE\x01";

pub fn beacon(node: &[u8; 32]) -> Vec<u8> {
    let mut b = Vec::with_capacity(40);
    b.extend_from_slice(BEACON_MAGIC);
    b.extend_from_slice(node);
    b
}

/// The node key in a beacon, if `d` is one.
pub fn parse_beacon(d: &[u8]) -> Option<[u8; 32]> {
    if d.len() != 40 || &d[..8] != BEACON_MAGIC {
        return None;
    }
    d[8..].try_into().ok()
}

/// The writer's half of a TCP link, as the core holds it.
#[derive(Debug, Clone)]
pub struct TcpTx {
    pub frames: mpsc::Sender<Bytes>,
    /// Set by the core when it found the queue full; the writer then reports room.
    pub waiting: Arc<AtomicBool>,
}

/// Frames queued per TCP connection: enough to keep the socket busy between wakes.
const TCP_QUEUE: usize = 256;

/// Runs one TCP connection as link `link` until it breaks; then tells the core. An
/// accepted connection holds its place under the caps (`accepted`) until it ends, and
/// must deliver a first frame within `limits.tcp_first_frame_timeout`.
pub async fn tcp_connection(
    link: usize,
    stream: TcpStream,
    mtu: usize,
    idle: Duration,
    accepted: Option<Permit>,
    core: mpsc::Sender<Input>,
) {
    let _ = stream.set_nodelay(true);
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "?".into(), |a| a.to_string());
    let (mut rd, mut wr) = stream.into_split();
    let (ftx, mut frx) = mpsc::channel::<Bytes>(TCP_QUEUE);
    let waiting = Arc::new(AtomicBool::new(false));
    let tx = TcpTx {
        frames: ftx,
        waiting: waiting.clone(),
    };
    if core
        .send(Input::TcpUp {
            link,
            tx,
            peer: peer.clone(),
        })
        .await
        .is_err()
    {
        return;
    }
    let core_w = core.clone();
    let writer = async move {
        let mut buf = BytesMut::with_capacity(64 * 1024);
        while let Some(f) = frx.recv().await {
            buf.clear();
            put_frame(&mut buf, &f);
            // Coalesce whatever else is queued into one write.
            while buf.len() < 60 * 1024 {
                match frx.try_recv() {
                    Ok(f) => put_frame(&mut buf, &f),
                    Err(_) => break,
                }
            }
            if waiting.swap(false, Ordering::AcqRel)
                && core_w.send(Input::Room { link, room: mtu }).await.is_err()
            {
                return "the daemon stopped".to_string();
            }
            if let Err(e) = wr.write_all(&buf).await {
                return format!("write failed: {e}");
            }
        }
        "closed".to_string()
    };
    let core_r = core.clone();
    // A connection that never greets holds its place until this; then it is cut off.
    let mut first_frame = accepted.as_ref().map(|p| {
        let t = p.limits().cfg.tcp_first_frame_timeout;
        (tokio::time::Instant::now() + t, t, p.limits().clone())
    });
    let reader = async move {
        let mut frames = TcpDeframer::new(mtu.max(skywave_node::adapter::MIN_FRAME));
        let mut buf = vec![0u8; 64 * 1024];
        let mut deadline = tokio::time::Instant::now();
        loop {
            // Silence between frames is fine (a synced session is quiet); a peer that
            // takes longer than `idle` over one frame is cut off.
            let mid = frames.mid_frame().then_some(deadline);
            let first = first_frame.as_ref().map(|f| f.0);
            let read = match (mid, first) {
                (None, None) => rd.read(&mut buf).await,
                (m, f) => {
                    let until = m.into_iter().chain(f).min().expect("one is set");
                    match tokio::time::timeout_at(until, rd.read(&mut buf)).await {
                        Ok(r) => r,
                        Err(_) => match &first_frame {
                            Some((at, t, limits)) if *at <= until => {
                                limits.hit(Limit::TcpFirstFrameTimeout);
                                return format!(
                                    "sent no frame within {t:?} of connecting (limits.tcp_first_frame_timeout)"
                                );
                            }
                            _ => return "stalled mid-frame".to_string(),
                        },
                    }
                }
            };
            let n = match read {
                Ok(0) => return "closed by the peer".to_string(),
                Ok(n) => n,
                Err(e) => return format!("read failed: {e}"),
            };
            let was_mid = frames.mid_frame();
            let got = match frames.push(&buf[..n]) {
                Ok(f) => f,
                Err(e) => return e.to_string(),
            };
            if frames.mid_frame() && (!was_mid || !got.is_empty()) {
                deadline = tokio::time::Instant::now() + idle;
            }
            if !got.is_empty() {
                first_frame = None;
            }
            for data in got {
                if core_r.send(Input::Frame { link, data }).await.is_err() {
                    return "the daemon stopped".to_string();
                }
            }
        }
    };
    let reason = tokio::select! {
        r = writer => r,
        r = reader => r,
    };
    tracing::info!(link, %peer, %reason, "tcp connection ended");
    let _ = core.send(Input::Down { link, reason }).await;
    drop(accepted);
}

/// Appends `f` as a TCP link sends it: its length (u16, big-endian), then its bytes.
pub fn put_frame(buf: &mut BytesMut, f: &[u8]) {
    buf.extend_from_slice(&(f.len() as u16).to_be_bytes());
    buf.extend_from_slice(f);
}

/// A length no frame of this link may have: the stream is out of step or hostile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("bad frame length {len} (largest accepted {max})")]
pub struct BadLength {
    pub len: usize,
    pub max: usize,
}

/// Reassembles a TCP link's frames ([`put_frame`]) from whatever the reads return.
#[derive(Debug)]
pub struct TcpDeframer {
    buf: Vec<u8>,
    max: usize,
}

impl TcpDeframer {
    /// Frames of 1 to `max` bytes are accepted (`max` at most `u16::MAX`).
    pub fn new(max: usize) -> TcpDeframer {
        TcpDeframer {
            buf: Vec::new(),
            max: max.min(usize::from(u16::MAX)),
        }
    }

    /// Whether part of a frame has been read.
    pub fn mid_frame(&self) -> bool {
        !self.buf.is_empty()
    }

    /// Adds bytes read; returns the frames they complete. After an error the stream
    /// cannot be trusted to be in step: the connection is to be closed.
    pub fn push(&mut self, mut data: &[u8]) -> Result<Vec<Bytes>, BadLength> {
        let mut out = Vec::new();
        while !data.is_empty() {
            // Holds at most one frame and its length: 2 + max bytes.
            let want = match self.buf.len() {
                n @ 0..2 => 2 - n,
                // (The length was checked when it was complete.)
                _ => {
                    2 + usize::from(u16::from_be_bytes([self.buf[0], self.buf[1]])) - self.buf.len()
                }
            };
            let (take, rest) = data.split_at(want.min(data.len()));
            self.buf.extend_from_slice(take);
            data = rest;
            if self.buf.len() == 2 {
                let len = usize::from(u16::from_be_bytes([self.buf[0], self.buf[1]]));
                if len == 0 || len > self.max {
                    return Err(BadLength { len, max: self.max });
                }
            } else if self.buf.len() > 2 && want == take.len() {
                out.push(Bytes::copy_from_slice(&self.buf[2..]));
                self.buf.clear();
            }
        }
        Ok(out)
    }
}

/// Accepts connections; the core numbers each as a new link. A connection past the
/// caps (`limits.tcp_connections`, `limits.tcp_connections_per_address`) is closed at
/// once, before the core sees it; [`Limits`] counts and logs it.
pub async fn tcp_listener(l: TcpListener, limits: Arc<Limits>, core: mpsc::Sender<Input>) {
    loop {
        match l.accept().await {
            Ok((s, from)) => {
                let Ok(permit) = limits.admit_tcp(from.ip()) else {
                    drop(s);
                    continue;
                };
                tracing::info!(%from, "tcp connection accepted");
                if core
                    .send(Input::TcpAccepted {
                        stream: s,
                        mtu: 0,
                        trust: None,
                        amateur: false,
                        permit,
                    })
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "tcp accept");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Keeps a connection to `addr` up as link `link`: connect, run, back off, repeat. A
/// host name is looked up again at every attempt, so a peer that moves is followed.
pub async fn tcp_connector(
    link: usize,
    addr: PeerAddr,
    mtu: usize,
    max_backoff: Duration,
    core: mpsc::Sender<Input>,
) {
    let min = Duration::from_millis(250);
    let mut backoff = min;
    let target = addr.to_string();
    loop {
        // Every address the name has is tried in turn (the resolver's order).
        let connected = match tokio::time::timeout(
            CONNECT_TIMEOUT,
            TcpStream::connect(target.as_str()),
        )
        .await
        {
            Ok(r) => r,
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no answer within {CONNECT_TIMEOUT:?}"),
            )),
        };
        match connected {
            Ok(s) => {
                backoff = min;
                tcp_connection(link, s, mtu, IDLE, None, core.clone()).await;
                if core.is_closed() {
                    return;
                }
            }
            Err(e) => {
                tracing::debug!(%addr, error = %e, "tcp connect");
                let what = match &addr {
                    PeerAddr::Ip(_) => "connecting to",
                    PeerAddr::Name { .. } => "resolving and connecting to",
                };
                let _ = core
                    .send(Input::Down {
                        link,
                        reason: format!("{what} {addr}: {e}"),
                    })
                    .await;
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(max_backoff.max(min));
    }
}

/// A connection attempt (the name's look-up included) that takes longer has failed.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A TCP peer that stops this long in the middle of a frame is disconnected.
pub const IDLE: Duration = Duration::from_secs(30);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn the_route_to_loopback_carries_what_its_interface_does() {
        // The loopback interface's MTU as the system shows it (65536 unless set otherwise).
        let lo: usize = std::fs::read_to_string("/sys/class/net/lo/mtu")
            .map_or(65536, |s| s.trim().parse().unwrap());
        let m = route_payload("127.0.0.1:9".parse().unwrap()).expect("IPv4 route MTU");
        // (An IPv4 packet is at most 65535 B, whatever the interface.)
        assert_eq!(m, lo.min(65535) - 28);
        assert_eq!(route_payload("[::1]:9".parse().unwrap()), None);
    }

    #[test]
    fn a_hosts_route_mtu_is_looked_up_once_a_minute_whatever_its_ports() {
        let mut c = RouteMtus::default();
        let looked = std::cell::Cell::new(0);
        let lookup = |_| {
            looked.set(looked.get() + 1);
            Some(1472)
        };
        let t0 = Instant::now();
        for port in 1..=100 {
            let to = std::net::SocketAddr::from(([192, 0, 2, 1], port));
            assert_eq!(c.get(to, t0, lookup), Some(1472));
        }
        assert_eq!(looked.get(), 1, "one host, one lookup");
        c.get("192.0.2.2:1".parse().unwrap(), t0, lookup);
        assert_eq!(looked.get(), 2, "another host is looked up");
        c.get(
            "192.0.2.1:7".parse().unwrap(),
            t0 + Duration::from_secs(61),
            lookup,
        );
        assert_eq!(looked.get(), 3, "a stale answer is looked up again");
        // A flood of hosts empties the table rather than grow it.
        for i in 0..2 * RouteMtus::MAX as u32 {
            c.get((std::net::Ipv4Addr::from(i), 9).into(), t0, lookup);
        }
        assert!(c.0.len() <= RouteMtus::MAX);
    }

    #[test]
    fn tcp_frames_split_anywhere_and_bad_lengths_end_the_stream() {
        let mut d = TcpDeframer::new(4);
        assert_eq!(d.push(&[0, 2, 9]), Ok(vec![]));
        assert!(d.mid_frame());
        assert_eq!(
            d.push(&[8, 0, 1, 7]),
            Ok(vec![Bytes::from_static(&[9, 8]), Bytes::from_static(&[7])])
        );
        assert!(!d.mid_frame());
        assert_eq!(d.push(&[0]), Ok(vec![]));
        assert_eq!(d.push(&[5]), Err(BadLength { len: 5, max: 4 }));
        assert_eq!(
            TcpDeframer::new(4).push(&[0, 0, 1]),
            Err(BadLength { len: 0, max: 4 })
        );
        let mut out = BytesMut::new();
        put_frame(&mut out, &[1, 2, 3]);
        assert_eq!(&out[..], [0, 3, 1, 2, 3]);
    }

    #[test]
    fn beacons_round_trip_and_reject_lookalikes() {
        let k = [7u8; 32];
        assert_eq!(parse_beacon(&beacon(&k)), Some(k));
        let mut b = beacon(&k);
        b[0] = b'X';
        assert_eq!(parse_beacon(&b), None);
        assert_eq!(parse_beacon(&beacon(&k)[..39]), None);
        assert_eq!(parse_beacon(b""), None);
    }
}
