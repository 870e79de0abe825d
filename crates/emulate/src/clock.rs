//! Wall clock to [`SimTime`], and a precise one-shot timer.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::{Duration, Instant};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use skywave_sim::SimTime;
use tokio::io::unix::AsyncFd;

/// Real time since the emulator started, as the model's `now`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    start: Instant,
}

impl Clock {
    pub(crate) fn start() -> Self {
        Clock {
            start: Instant::now(),
        }
    }

    pub(crate) fn now(&self) -> SimTime {
        SimTime::from_nanos(u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    pub(crate) fn instant(&self, t: SimTime) -> Instant {
        self.start + Duration::from_nanos(t.as_nanos())
    }
}

/// `TimerFd` with `AsRawFd`, as `AsyncFd` wants.
#[derive(Debug)]
pub(crate) struct TimerFdOwned(TimerFd);

impl AsRawFd for TimerFdOwned {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

impl AsFd for TimerFdOwned {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// A one-shot timer on a `timerfd`. The tokio timer rounds every sleep up to the next
/// millisecond, which alone would add up to 2% to a 50 ms delay; a timerfd wakes within
/// the kernel's timer slack (about 50 us).
#[derive(Debug)]
pub(crate) struct PreciseTimer {
    fd: AsyncFd<TimerFdOwned>,
}

impl PreciseTimer {
    pub(crate) fn new() -> io::Result<Self> {
        let tfd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        Ok(PreciseTimer {
            fd: crate::fd::register_timer(TimerFdOwned(tfd))?,
        })
    }

    /// Waits until `deadline`; forever if `None`. Cancel-safe: re-arming replaces any
    /// earlier expiry.
    pub(crate) async fn sleep_until(&self, deadline: Option<Instant>) -> io::Result<()> {
        let Some(deadline) = deadline else {
            return std::future::pending().await;
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        // A zero expiry would disarm the timer, so the wait is at least 1 ns.
        self.fd.get_ref().0.set(
            Expiration::OneShot(TimeSpec::from_duration(left.max(Duration::from_nanos(1)))),
            TimerSetTimeFlags::empty(),
        )?;
        loop {
            let mut guard = self.fd.readable().await?;
            // Reading clears the expiry count; EAGAIN means a stale readiness from an
            // earlier, cancelled arm.
            match guard.try_io(|fd| fd.get_ref().0.wait().map_err(io::Error::from)) {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
    }
}
