//! UDP mode: datagrams between two local endpoints through the model.

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::Duration;

use bytes::Bytes;
use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, SockaddrStorage, recvmsg, setsockopt, sockopt,
};
use skywave_sim::{LinkConfig, LinkEvent, LinkKind, TransmitError};
use tokio::io::Interest;
use tokio::net::UdpSocket;

use crate::driver::Driver;
use crate::{EmulateError, Options, Summary};

/// Largest UDP payload read; anything up to this reaches the model, which refuses what
/// exceeds the link MTU.
const MAX_DATAGRAM: usize = 65_536;

/// Forwards datagrams between side A and side B through the model.
///
/// Side A's program sends to the listen address; the first datagram teaches the emulator
/// A's address (a later datagram from elsewhere replaces it, so a restarted program keeps
/// working). Datagrams go out to side B from a socket connected to the forward address,
/// so B's replies come back through the model to A. Port 0 of the model is A, port 1 B.
#[derive(Debug)]
pub struct UdpEmulator {
    driver: Driver,
    sock_a: UdpSocket,
    sock_b: UdpSocket,
    peer_a: Option<SocketAddr>,
}

impl UdpEmulator {
    /// Binds the listen socket and the socket towards `forward`.
    pub async fn bind(
        link: &LinkConfig,
        opts: &Options,
        listen: SocketAddr,
        forward: SocketAddr,
    ) -> Result<Self, EmulateError> {
        if link.kind == LinkKind::Stream {
            return Err(EmulateError::WrongKind {
                link: link.name.clone(),
                kind: "stream",
                mode: "UDP",
                need: "frame or csma",
                hint: "carry a byte stream with --stream tcp or --stream pty",
            });
        }
        let driver = Driver::new(link, opts)?;
        let sock_a = UdpSocket::bind(listen)
            .await
            .map_err(|source| EmulateError::Bind {
                what: "the listen socket",
                addr: listen,
                source,
            })?;
        let any = match forward.ip() {
            IpAddr::V4(ip) if ip.is_loopback() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(ip) if ip.is_loopback() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        let local_b = SocketAddr::new(any, 0);
        let sock_b = UdpSocket::bind(local_b)
            .await
            .map_err(|source| EmulateError::Bind {
                what: "the socket towards side B",
                addr: local_b,
                source,
            })?;
        // Connected, so only B's datagrams are read on this socket.
        sock_b
            .connect(forward)
            .await
            .map_err(|source| EmulateError::Connect {
                addr: forward,
                source,
            })?;
        enable_stamps(&sock_a);
        enable_stamps(&sock_b);
        Ok(UdpEmulator {
            driver,
            sock_a,
            sock_b,
            peer_a: None,
        })
    }

    /// The address side A's program sends to.
    pub fn local_addr(&self) -> Result<SocketAddr, EmulateError> {
        self.sock_a
            .local_addr()
            .map_err(EmulateError::io("reading the listen address"))
    }

    /// The address datagrams to side B come from.
    pub fn forward_source_addr(&self) -> Result<SocketAddr, EmulateError> {
        self.sock_b
            .local_addr()
            .map_err(EmulateError::io("reading the forward socket address"))
    }

    /// Runs until `shutdown` completes; returns the counters.
    pub async fn run(
        mut self,
        shutdown: impl Future<Output = ()>,
    ) -> Result<Summary, EmulateError> {
        tokio::pin!(shutdown);
        let mut buf_a = vec![0u8; MAX_DATAGRAM];
        let mut buf_b = vec![0u8; MAX_DATAGRAM];
        let mut tick = stats_ticker(self.driver.opts().stats_interval);
        loop {
            let deadline = self.driver.deadline();
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                r = self.driver.sleep(deadline) => {
                    r?;
                    // What arrived while the emulator was not running enters the model
                    // before it moves on to now.
                    self.drain(&mut buf_a);
                    if let Some((due, _)) = deadline {
                        self.driver.fire(due);
                    }
                }
                r = recv_stamped(&self.sock_a, &mut buf_a) => match r {
                    Ok(d) => self.take(0, &buf_a, d),
                    Err(e) => recv_error("listen socket", &e),
                },
                r = recv_stamped(&self.sock_b, &mut buf_b) => match r {
                    Ok(d) => self.take(1, &buf_b, d),
                    Err(e) => recv_error("socket towards side B", &e),
                },
                _ = tick.tick() => self.driver.log_stats(),
            }
            self.forward_events().await;
        }
        self.driver.log_stats();
        Ok(self.driver.summary())
    }

    /// Reads the datagrams waiting on either socket (at most `DRAIN_MAX` from each, so
    /// a flood cannot hold the timers back), and hands them to the model in the order
    /// they arrived.
    fn drain(&mut self, buf: &mut [u8]) {
        let mut got: Vec<(usize, Datagram, Bytes)> = Vec::new();
        for port in 0..2 {
            let sock = if port == 0 {
                &self.sock_a
            } else {
                &self.sock_b
            };
            for _ in 0..DRAIN_MAX {
                // Straight to the (non-blocking) socket: tokio's cached readiness may be
                // clear with datagrams waiting (a timer already past wakes no reactor).
                match recv_once(sock.as_raw_fd(), buf) {
                    Ok(d) => {
                        let data = Bytes::copy_from_slice(&buf[..d.len]);
                        got.push((port, d, data));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        recv_error(side_name(port), &e);
                        break;
                    }
                }
            }
        }
        // In arrival order; one without a stamp is taken as read now, after the rest.
        got.sort_by_key(|g| g.1.stamp.unwrap_or(Duration::MAX));
        for (port, d, data) in got {
            self.take_bytes(port, d, data);
        }
    }

    /// A datagram read from side `port` into `buf`.
    fn take(&mut self, port: usize, buf: &[u8], d: Datagram) {
        let data = Bytes::copy_from_slice(&buf[..d.len]);
        self.take_bytes(port, d, data);
    }

    fn take_bytes(&mut self, port: usize, d: Datagram, data: Bytes) {
        if port == 0
            && let Some(from) = d.from
            && self.peer_a != Some(from)
        {
            tracing::info!(%from, "side A's address learned");
            self.peer_a = Some(from);
        }
        let side = side_name(port);
        match self.driver.transmit_stamped(port, data, d.stamp) {
            Ok(()) => {}
            Err(e @ TransmitError::TooBig { .. }) => {
                tracing::debug!(side, error = %e, "datagram refused");
            }
            Err(e) => tracing::trace!(side, error = %e, "datagram dropped"),
        }
    }

    async fn forward_events(&mut self) {
        while let Some(ev) = self.driver.poll_event() {
            let LinkEvent::Deliver { port, frame } = ev else {
                continue;
            };
            let sent = match port {
                0 => match self.peer_a {
                    Some(a) => self.sock_a.send_to(&frame, a).await.map(|_| ()),
                    None => Err(io::Error::new(
                        io::ErrorKind::NotConnected,
                        "side A has not sent anything yet",
                    )),
                },
                _ => self.sock_b.send(&frame).await.map(|_| ()),
            };
            match sent {
                Ok(()) => self.driver.delivered(port, frame.len()),
                Err(e) => {
                    tracing::debug!(to = side_name(port), error = %e, "delivery not sent");
                    self.driver.unroutable(port);
                }
            }
        }
    }
}

pub(crate) fn side_name(port: usize) -> &'static str {
    if port == 0 { "A" } else { "B" }
}

/// The most datagrams read from one socket before a timer fires.
const DRAIN_MAX: usize = 1024;

/// One datagram read: its length, sender, and when it reached the host (the kernel's
/// receive stamp, `SO_TIMESTAMPNS`: wall-clock time since the Unix epoch).
#[derive(Debug, Clone, Copy)]
struct Datagram {
    len: usize,
    from: Option<SocketAddr>,
    stamp: Option<Duration>,
}

/// Waits for and reads one datagram. Cancel-safe: a datagram is taken from the socket
/// only by the synchronous read.
async fn recv_stamped(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<Datagram> {
    loop {
        sock.readable().await?;
        match sock.try_io(Interest::READABLE, || recv_once(sock.as_raw_fd(), buf)) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

fn recv_once(fd: std::os::fd::RawFd, buf: &mut [u8]) -> io::Result<Datagram> {
    let mut iov = [io::IoSliceMut::new(buf)];
    let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
    let msg = recvmsg::<SockaddrStorage>(fd, &mut iov, Some(&mut cmsg), MsgFlags::empty())
        .map_err(io::Error::from)?;
    let mut stamp = None;
    for c in msg.cmsgs().map_err(io::Error::from)? {
        if let ControlMessageOwned::ScmTimestampns(ts) = c {
            stamp = Some(Duration::from(ts));
        }
    }
    let from = msg.address.and_then(|a: SockaddrStorage| {
        a.as_sockaddr_in()
            .map(|a| SocketAddr::V4((*a).into()))
            .or_else(|| a.as_sockaddr_in6().map(|a| SocketAddr::V6((*a).into())))
    });
    Ok(Datagram {
        len: msg.bytes,
        from,
        stamp,
    })
}

/// Asks the kernel to stamp each datagram `sock` receives with its arrival time.
fn enable_stamps(sock: &UdpSocket) {
    if let Err(e) = setsockopt(sock, sockopt::ReceiveTimestampns, &true) {
        // The model then takes datagrams when they are read.
        tracing::warn!(error = %e, "no receive timestamps (SO_TIMESTAMPNS) on this socket");
    }
}

fn recv_error(what: &str, e: &io::Error) {
    // ECONNREFUSED after an ICMP port unreachable just means B was not listening yet.
    tracing::debug!(socket = what, error = %e, "receive error (ignored)");
}

/// An interval for the periodic stats log; never fires when `every` is `None`.
pub(crate) fn stats_ticker(every: Option<Duration>) -> tokio::time::Interval {
    let every = every.unwrap_or(Duration::from_secs(365 * 24 * 3600));
    let mut t = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    t
}
