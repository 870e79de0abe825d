//! Byte-stream mode: two programs talk through the HF-modem model over TCP or ptys.
//!
//! What a host sees is what it would see on a modem's serial port with no status lines:
//! bytes it writes enter the modem's TX buffer; bytes the other side wrote come out in
//! chunks after serialization and delay. Writing more than the buffer's free space drops
//! the call: everything buffered or in flight is lost, bytes written during the redial
//! time are discarded, and then the call comes back. Nothing is signalled in-band; the
//! emulator logs each drop and redial (`warn` / `info`) and counts the bytes lost.

use std::fs::File;
use std::future::Future;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::sys::termios::{self, SetArg};
use skywave_sim::{LinkConfig, LinkEvent, LinkKind, TransmitError};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::driver::Driver;
use crate::udp::{side_name, stats_ticker};
use crate::{EmulateError, Options, Summary};

const READ_BUF: usize = 4096;

/// The slave ends of the two pseudo-terminals: open them as serial ports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtyPaths {
    pub a: PathBuf,
    pub b: PathBuf,
}

enum Transport {
    Tcp {
        listener: TcpListener,
        forward: SocketAddr,
    },
    Pty {
        masters: [Arc<AsyncFd<File>>; 2],
        // Held open so a master never reads EIO when a program closes its end.
        _slaves: [OwnedFd; 2],
        paths: PtyPaths,
    },
}

/// Carries a byte stream between side A and side B through a stream link model.
pub struct StreamEmulator {
    driver: Driver,
    transport: Transport,
}

impl std::fmt::Debug for StreamEmulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamEmulator")
            .field("driver", &self.driver)
            .finish_non_exhaustive()
    }
}

fn check_stream(link: &LinkConfig, mode: &'static str) -> Result<(), EmulateError> {
    if link.kind != LinkKind::Stream {
        return Err(EmulateError::WrongKind {
            link: link.name.clone(),
            kind: link.kind.as_str(),
            mode,
            need: "stream",
            hint: "use --profile hf-modem (or kind=stream in --link), or drop --stream for UDP",
        });
    }
    Ok(())
}

impl StreamEmulator {
    /// TCP: accepts side A's connection on `listen`, then connects to side B at
    /// `forward`. When either side closes, both connections close and the next one from
    /// A is accepted; the modem model (and its call state) carries on.
    pub async fn tcp(
        link: &LinkConfig,
        opts: &Options,
        listen: SocketAddr,
        forward: SocketAddr,
    ) -> Result<Self, EmulateError> {
        check_stream(link, "TCP stream")?;
        let driver = Driver::new(link, opts)?;
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|source| EmulateError::Bind {
                what: "the TCP listener",
                addr: listen,
                source,
            })?;
        Ok(StreamEmulator {
            driver,
            transport: Transport::Tcp { listener, forward },
        })
    }

    /// Two pseudo-terminals in raw mode; programs open [`StreamEmulator::pty_paths`].
    pub fn pty(link: &LinkConfig, opts: &Options) -> Result<Self, EmulateError> {
        check_stream(link, "pty stream")?;
        let driver = Driver::new(link, opts)?;
        let (ma, sa, pa) = open_pty()?;
        let (mb, sb, pb) = open_pty()?;
        Ok(StreamEmulator {
            driver,
            transport: Transport::Pty {
                masters: [Arc::new(ma), Arc::new(mb)],
                _slaves: [sa, sb],
                paths: PtyPaths { a: pa, b: pb },
            },
        })
    }

    /// TCP: the address side A connects to.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &self.transport {
            Transport::Tcp { listener, .. } => listener.local_addr().ok(),
            Transport::Pty { .. } => None,
        }
    }

    /// Pty: the serial-port paths of side A and side B.
    pub fn pty_paths(&self) -> Option<&PtyPaths> {
        match &self.transport {
            Transport::Pty { paths, .. } => Some(paths),
            Transport::Tcp { .. } => None,
        }
    }

    /// Runs until `shutdown` completes; returns the counters.
    pub async fn run(
        mut self,
        shutdown: impl Future<Output = ()>,
    ) -> Result<Summary, EmulateError> {
        tokio::pin!(shutdown);
        match &self.transport {
            Transport::Pty { masters, .. } => {
                let sides = [Side::pty(masters[0].clone()), Side::pty(masters[1].clone())];
                run_session(&mut self.driver, sides, &mut shutdown).await?;
            }
            Transport::Tcp { listener, forward } => loop {
                let a = tokio::select! {
                    () = &mut shutdown => break,
                    r = listener.accept() => match r {
                        Ok((s, from)) => {
                            tracing::info!(%from, "side A connected");
                            s
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "accepting side A failed; waiting for the next connection");
                            continue;
                        }
                    },
                };
                let b = match TcpStream::connect(forward).await {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::warn!(%forward, error = %e, "cannot connect to side B; closing side A's connection (start side B first)");
                        continue;
                    }
                };
                let _ = a.set_nodelay(true);
                let _ = b.set_nodelay(true);
                let (ra, wa) = a.into_split();
                let (rb, wb) = b.into_split();
                let sides = [Side::tcp(ra, wa), Side::tcp(rb, wb)];
                if run_session(&mut self.driver, sides, &mut shutdown).await? {
                    break;
                }
                tracing::info!("a side closed its connection; waiting for side A again");
            },
        }
        self.driver.log_stats();
        Ok(self.driver.summary())
    }
}

/// One side of a session: where its bytes come from, and a writer task for what the
/// model delivers to it (so a slow reader never stalls the model's clock).
struct Side {
    reader: Reader,
    tx: mpsc::UnboundedSender<Bytes>,
    open: bool,
}

enum Reader {
    Tcp(OwnedReadHalf),
    Pty(Arc<AsyncFd<File>>),
}

impl Reader {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Reader::Tcp(r) => r.read(buf).await,
            Reader::Pty(fd) => loop {
                let mut g = fd.readable().await?;
                if let Ok(r) = g.try_io(|f| f.get_ref().read(buf)) {
                    return r;
                }
            },
        }
    }
}

impl Side {
    fn tcp(r: OwnedReadHalf, mut w: tokio::net::tcp::OwnedWriteHalf) -> Side {
        let (tx, mut rx) = mpsc::unbounded_channel::<Bytes>();
        tokio::spawn(async move {
            while let Some(b) = rx.recv().await {
                if w.write_all(&b).await.is_err() {
                    break;
                }
            }
            let _ = w.shutdown().await;
        });
        Side {
            reader: Reader::Tcp(r),
            tx,
            open: true,
        }
    }

    fn pty(fd: Arc<AsyncFd<File>>) -> Side {
        let (tx, mut rx) = mpsc::unbounded_channel::<Bytes>();
        let w = fd.clone();
        tokio::spawn(async move {
            while let Some(b) = rx.recv().await {
                if write_all_fd(&w, &b).await.is_err() {
                    break;
                }
            }
        });
        Side {
            reader: Reader::Pty(fd),
            tx,
            open: true,
        }
    }
}

async fn write_all_fd(fd: &AsyncFd<File>, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        let mut g = fd.writable().await?;
        if let Ok(r) = g.try_io(|f| f.get_ref().write(data)) {
            data = &data[r?..];
        }
    }
    Ok(())
}

/// Pumps bytes until a side closes (returns `false`) or shutdown (returns `true`).
async fn run_session(
    driver: &mut Driver,
    mut sides: [Side; 2],
    shutdown: &mut (impl Future<Output = ()> + Unpin),
) -> Result<bool, EmulateError> {
    let mut buf_a = vec![0u8; READ_BUF];
    let mut buf_b = vec![0u8; READ_BUF];
    let mut tick = stats_ticker(driver.opts().stats_interval);
    let stop = loop {
        let deadline = driver.deadline();
        let [sa, sb] = &mut sides;
        let (read, port) = tokio::select! {
            biased;
            () = &mut *shutdown => break true,
            r = driver.sleep(deadline) => {
                r?;
                if let Some((due, _)) = deadline {
                    driver.fire(due);
                }
                (None, 0)
            }
            r = sa.reader.read(&mut buf_a), if sa.open => (Some(r), 0),
            r = sb.reader.read(&mut buf_b), if sb.open => (Some(r), 1),
            _ = tick.tick() => { driver.log_stats(); (None, 0) }
        };
        match read {
            None => {}
            Some(Ok(0)) => {
                tracing::info!(side = side_name(port), "end of stream");
                sides[port].open = false;
                break false;
            }
            Some(Ok(n)) => {
                let buf = if port == 0 { &buf_a } else { &buf_b };
                transmit(driver, port, Bytes::copy_from_slice(&buf[..n]));
            }
            Some(Err(e)) => {
                tracing::info!(side = side_name(port), error = %e, "read failed; ending the session");
                break false;
            }
        }
        forward_events(driver, &sides);
    };
    forward_events(driver, &sides);
    Ok(stop)
}

fn transmit(driver: &mut Driver, port: usize, data: Bytes) {
    let side = side_name(port);
    let len = data.len();
    match driver.transmit(port, data) {
        Ok(()) => {}
        Err(TransmitError::CallDropped { len, free }) => {
            tracing::warn!(
                side,
                written = len,
                free,
                redial_secs = driver.link().redial.as_secs_f64(),
                "modem buffer overrun: the call dropped; buffered and in-flight data is lost, and writes are discarded until the redial completes"
            );
        }
        Err(TransmitError::LinkDown) => {
            tracing::debug!(side, len, "call down: written bytes discarded");
        }
        Err(e) => tracing::warn!(side, error = %e, "write refused by the model"),
    }
}

fn forward_events(driver: &mut Driver, sides: &[Side; 2]) {
    while let Some(ev) = driver.poll_event() {
        match ev {
            LinkEvent::Deliver { port, frame } => {
                let len = frame.len();
                if sides[port].open && sides[port].tx.send(frame).is_ok() {
                    driver.delivered(port, len);
                } else {
                    driver.unroutable(port);
                }
            }
            // Both ports report a state change; log it once.
            LinkEvent::State { port: 0, up: true } => {
                tracing::info!("modem call re-established");
            }
            LinkEvent::State { port: 0, up: false } => {
                tracing::warn!("modem call down");
            }
            _ => {}
        }
    }
}

/// Opens a pty in raw mode; returns the non-blocking master, the slave and its path.
fn open_pty() -> Result<(AsyncFd<File>, OwnedFd, PathBuf), EmulateError> {
    let pty = nix::pty::openpty(None, None).map_err(|e| EmulateError::Pty(e.into()))?;
    // Raw: no echo, no line editing, no CR/LF translation; a serial port carries bytes.
    let mut t = termios::tcgetattr(&pty.slave).map_err(|e| EmulateError::Pty(e.into()))?;
    termios::cfmakeraw(&mut t);
    termios::tcsetattr(&pty.slave, SetArg::TCSANOW, &t).map_err(|e| EmulateError::Pty(e.into()))?;
    let path = nix::unistd::ttyname(&pty.slave).map_err(|e| EmulateError::Pty(e.into()))?;
    set_nonblocking(&pty.master).map_err(EmulateError::Pty)?;
    let master = crate::fd::register_file(File::from(pty.master)).map_err(EmulateError::Pty)?;
    Ok((master, pty.slave, path))
}

pub(crate) fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}
