//! The progress watchdog of a connected ARQ session.
//!
//! Two ardopcf modems can stay connected while nothing moves: both think they receive
//! (one in `IRS`, the other in `IRStoISS` sending BREAKs the first ignores), each
//! frame they exchange resets ardopcf's own ARQ timeout, and the session never ends.
//! The watchdog's clock runs while something waits to move (bytes in our modem, a frame
//! waiting for room, the modem asking for the turn) and restarts whenever something
//! moves (bytes arrive on the data port, `BUFFER` goes down). Its limit comes from the
//! session's own figures: [`MULT`] times the typical wait for something to move (or one
//! modem frame's time, whichever is longer), and at least twice the longest wait seen,
//! kept between [`FLOOR`] and the link's `stall_timeout`.

use std::time::{Duration, Instant};

/// The limit is this many typical waits: a change of turn on a poor channel takes a
/// few ARQ cycles (each repeated frame one more), a deadlock takes forever.
pub(crate) const MULT: u32 = 8;

/// The least limit (unless `stall_timeout` is lower): a few of ARDOP's ARQ cycles
/// (about 6 s each at 2000 Hz).
pub(crate) const FLOOR: Duration = Duration::from_secs(30);

/// The longest wait for a session to close after `DISCONNECT` before `ABORT` (and after
/// `ABORT` before the host interface is reconnected): ardopcf repeats its DISC frame up
/// to five times, 2 s apart, before it gives up on the far station's answer.
pub(crate) const CLOSE_WAIT: Duration = Duration::from_secs(20);

#[derive(Debug, Default)]
pub(crate) struct Watch {
    /// Since when something has waited to move with nothing moving.
    since: Option<Instant>,
    /// The typical wait for something to move (a running average), and the longest.
    /// Both outlive a session: the channel and the far station stay the same.
    typical: Option<Duration>,
    longest: Duration,
    /// Sessions ended for standing still.
    pub resets: u64,
}

impl Watch {
    /// Something moved: the wait it ended is learned.
    pub(crate) fn moved(&mut self, now: Instant) {
        if let Some(t) = self.since.take() {
            let gap = now.saturating_duration_since(t);
            self.typical = Some(match self.typical {
                None => gap,
                Some(a) => (a * 3 + gap) / 4,
            });
            self.longest = self.longest.max(gap);
        }
    }

    /// Whether something waits to move now: the clock runs only then.
    pub(crate) fn waiting(&mut self, now: Instant, yes: bool) {
        if yes {
            self.since.get_or_insert(now);
        } else {
            self.since = None;
        }
    }

    /// How long nothing may move: `frame` is one modem frame's time at the measured
    /// rate, `ceiling` the link's `stall_timeout`.
    pub(crate) fn limit(&self, frame: Duration, ceiling: Duration) -> Duration {
        let base = self.typical.unwrap_or_default().max(frame);
        (base * MULT)
            .max(self.longest * 2)
            .clamp(FLOOR.min(ceiling), ceiling)
    }

    /// The typical wait learned so far.
    pub(crate) fn typical(&self) -> Option<Duration> {
        self.typical
    }

    /// How long nothing has moved while something waited, once that reaches `limit`.
    pub(crate) fn stalled(&self, now: Instant, limit: Duration) -> Option<Duration> {
        let d = now.saturating_duration_since(self.since?);
        (d >= limit).then_some(d)
    }

    /// Since when nothing has moved, if something waits.
    pub(crate) fn since(&self) -> Option<Instant> {
        self.since
    }
}

/// A tiny xorshift for jitter (no quality needed: two stations only must not draw alike).
#[derive(Debug)]
pub(crate) struct Jitter(u64);

impl Jitter {
    pub(crate) fn new(seed: u64) -> Jitter {
        Jitter(seed | 1)
    }

    /// `d` plus up to half of it again, at random.
    pub(crate) fn spread(&mut self, d: Duration) -> Duration {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        let frac = (x >> 11) as f64 / (1u64 << 53) as f64;
        d + d.mul_f64(frac / 2.0)
    }
}
