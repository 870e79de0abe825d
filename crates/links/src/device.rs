//! Serial devices and pseudo-terminals: opening, raw mode, baud rate, non-blocking I/O.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::sys::termios::{self, BaudRate, SetArg};
use tokio::io::unix::AsyncFd;

/// A serial device (or pty slave) opened raw and non-blocking.
#[derive(Debug)]
pub(crate) struct Device {
    fd: AsyncFd<File>,
}

/// The termios constant for a baud rate, if the rate is a standard one.
pub(crate) fn baud_rate(baud: u32) -> Option<BaudRate> {
    Some(match baud {
        300 => BaudRate::B300,
        600 => BaudRate::B600,
        1200 => BaudRate::B1200,
        2400 => BaudRate::B2400,
        4800 => BaudRate::B4800,
        9600 => BaudRate::B9600,
        19200 => BaudRate::B19200,
        38400 => BaudRate::B38400,
        57600 => BaudRate::B57600,
        115200 => BaudRate::B115200,
        230400 => BaudRate::B230400,
        460800 => BaudRate::B460800,
        921600 => BaudRate::B921600,
        _ => return None,
    })
}

/// The standard rates, for error messages.
pub(crate) const BAUD_RATES: &str =
    "300, 600, 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600";

impl Device {
    /// Opens `path` (following symlinks), sets raw mode and `baud`, and registers it with
    /// the reactor. A pty accepts any baud setting and ignores it.
    pub(crate) fn open(path: &Path, baud: u32) -> io::Result<Device> {
        let rate = baud_rate(baud).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("unsupported baud rate {baud}; use one of {BAUD_RATES}"),
            )
        })?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags((OFlag::O_NOCTTY | OFlag::O_NONBLOCK).bits())
            .open(path)?;
        configure_raw(file.as_fd(), Some(rate))?;
        Ok(Device {
            fd: crate::fd::register(file)?,
        })
    }

    /// Reads what is available, waiting until something is. `Ok(0)` is end of file.
    pub(crate) async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut g = self.fd.readable().await?;
            if let Ok(r) = g.try_io(|f| f.get_ref().read(buf)) {
                return r;
            }
        }
    }

    /// Writes some of `data` once the device takes any; returns how much. Cancel-safe:
    /// nothing is written unless it returns.
    pub(crate) async fn write_some(&self, data: &[u8]) -> io::Result<usize> {
        loop {
            let mut g = self.fd.writable().await?;
            if let Ok(r) = g.try_io(|f| f.get_ref().write(data)) {
                return match r? {
                    0 if !data.is_empty() => Err(io::ErrorKind::WriteZero.into()),
                    n => Ok(n),
                };
            }
        }
    }

    /// Writes all of `data`.
    pub(crate) async fn write_all(&self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let n = self.write_some(data).await?;
            data = &data[n..];
        }
        Ok(())
    }
}

/// Raw mode: no echo, no line editing, no CR/LF translation, no flow-control characters;
/// 8 data bits. Sets `rate` in both directions when given.
pub(crate) fn configure_raw(fd: impl AsFd, rate: Option<BaudRate>) -> io::Result<()> {
    let mut t = termios::tcgetattr(&fd)?;
    termios::cfmakeraw(&mut t);
    // Reads return what is there; the reactor tells when that is.
    t.control_chars[termios::SpecialCharacterIndices::VMIN as usize] = 1;
    t.control_chars[termios::SpecialCharacterIndices::VTIME as usize] = 0;
    t.control_flags |= termios::ControlFlags::CLOCAL | termios::ControlFlags::CREAD;
    if let Some(rate) = rate {
        termios::cfsetspeed(&mut t, rate)?;
    }
    termios::tcsetattr(&fd, SetArg::TCSANOW, &t)?;
    Ok(())
}

/// A pseudo-terminal for an emulated device: the non-blocking master (the device side)
/// and the slave's path (what a driver opens). The slave stays open here so the master
/// never reads EIO while no driver has the port open.
#[derive(Debug)]
pub(crate) struct Pty {
    pub(crate) master: AsyncFd<File>,
    _slave: OwnedFd,
    pub(crate) path: PathBuf,
}

impl Pty {
    pub(crate) fn open() -> io::Result<Pty> {
        let pty = nix::pty::openpty(None, None)?;
        // openpty(3) leaves both ends inheritable: a process spawned meanwhile (a test
        // starting a daemon) would hold the master open, and an unplugged cable would
        // never read as gone at the far end.
        for fd in [&pty.master, &pty.slave] {
            nix::fcntl::fcntl(
                fd,
                nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
            )?;
        }
        configure_raw(&pty.slave, None)?;
        let path = nix::unistd::ttyname(&pty.slave)?;
        let flags = OFlag::from_bits_truncate(nix::fcntl::fcntl(
            &pty.master,
            nix::fcntl::FcntlArg::F_GETFL,
        )?);
        nix::fcntl::fcntl(
            &pty.master,
            nix::fcntl::FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK),
        )?;
        Ok(Pty {
            master: crate::fd::register(File::from(pty.master))?,
            _slave: pty.slave,
            path,
        })
    }

    /// Reads from the master (what the driver wrote). `Ok(0)` never happens while the
    /// slave is held open.
    pub(crate) async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut g = self.master.readable().await?;
            if let Ok(r) = g.try_io(|f| f.get_ref().read(buf)) {
                return r;
            }
        }
    }

    /// Writes to the master (what the driver will read).
    pub(crate) async fn write_all(&self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let mut g = self.master.writable().await?;
            if let Ok(r) = g.try_io(|f| f.get_ref().write(data)) {
                data = &data[r?..];
            }
        }
        Ok(())
    }
}
