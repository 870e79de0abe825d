//! The model on the wall clock: `now` from a [`Clock`], timers from a [`PreciseTimer`],
//! and the emulator's own counters.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use skywave_sim::{LinkConfig, LinkEvent, LinkModel, SimTime, TransmitError};

use crate::clock::{Clock, PreciseTimer};
use crate::summary::{DirSummary, Summary, TimerSummary};
use crate::{EmulateError, Options, build_model};

/// What the emulator itself saw at one side (the model counts the rest).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SideCounters {
    /// Datagrams (or reads) and bytes taken from this side's program.
    pub read_frames: u64,
    pub read_bytes: u64,
    /// Delivered by the model and written to this side's program.
    pub written_frames: u64,
    pub written_bytes: u64,
    /// Delivered by the model for this side but with nowhere to go (no peer yet, a
    /// closed connection, a send error).
    pub unroutable: u64,
}

/// The oldest receive stamp taken as one (see [`Driver::transmit_stamped`]).
const STAMP_MAX_AGE: Duration = Duration::from_secs(1);

pub(crate) struct Driver {
    model: Box<dyn LinkModel + Send>,
    clock: Clock,
    timer: PreciseTimer,
    link: LinkConfig,
    opts: Options,
    pub(crate) sides: [SideCounters; 2],
    wakeups: u64,
    late_total: Duration,
    late_max: Duration,
    /// The model's last event: a stamped datagram is never handed to it earlier.
    last: SimTime,
    /// The longest a datagram waited in the socket before the emulator read it.
    read_late_max: Duration,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("link", &self.link.name)
            .field("seed", &self.opts.seed)
            .finish_non_exhaustive()
    }
}

impl Driver {
    pub(crate) fn new(link: &LinkConfig, opts: &Options) -> Result<Self, EmulateError> {
        Ok(Driver {
            model: build_model(link, opts.seed)?,
            clock: Clock::start(),
            timer: PreciseTimer::new().map_err(EmulateError::Timer)?,
            link: link.clone(),
            opts: opts.clone(),
            sides: Default::default(),
            wakeups: 0,
            late_total: Duration::ZERO,
            late_max: Duration::ZERO,
            last: SimTime::ZERO,
            read_late_max: Duration::ZERO,
        })
    }

    pub(crate) fn link(&self) -> &LinkConfig {
        &self.link
    }

    pub(crate) fn opts(&self) -> &Options {
        &self.opts
    }

    /// Hands what side `port`'s program wrote to the model, at the current wall time.
    pub(crate) fn transmit(&mut self, port: usize, data: Bytes) -> Result<(), TransmitError> {
        self.transmit_stamped(port, data, None)
    }

    /// [`Driver::transmit`] for a datagram the kernel stamped as arrived at `stamp`
    /// (wall-clock time since the Unix epoch): the model takes it then, not when the
    /// emulator got round to reading it. An emulator that was not scheduled for a while
    /// reads what queued meanwhile at once, and a bottleneck fed a path's paced
    /// datagrams as one burst drops what the real path would have carried. Never before
    /// the model's last event.
    pub(crate) fn transmit_stamped(
        &mut self,
        port: usize,
        data: Bytes,
        stamp: Option<Duration>,
    ) -> Result<(), TransmitError> {
        let s = &mut self.sides[port];
        s.read_frames += 1;
        s.read_bytes += data.len() as u64;
        let now = self.clock.now();
        // A stamp ahead of the clock, or older than a second, is a step of the wall clock
        // between the stamp and now: the read time stands.
        let late = match (stamp, SystemTime::now().duration_since(UNIX_EPOCH)) {
            (Some(stamp), Ok(wall)) if stamp <= wall && wall - stamp <= STAMP_MAX_AGE => {
                wall - stamp
            }
            _ => Duration::ZERO,
        };
        self.read_late_max = self.read_late_max.max(late);
        let at = SimTime::from_nanos(
            now.as_nanos()
                .saturating_sub(u64::try_from(late.as_nanos()).unwrap_or(u64::MAX)),
        )
        .max(self.last);
        self.last = at;
        self.model.handle_transmit(at, port, data)
    }

    /// When the model next needs `handle_timeout`, on the wall clock.
    pub(crate) fn deadline(&mut self) -> Option<(SimTime, Instant)> {
        self.model
            .poll_timeout()
            .map(|t| (t, self.clock.instant(t)))
    }

    /// Sleeps until `deadline` (from [`Driver::deadline`]); forever if `None`. The
    /// future holds only the timer, so it stays `Send` while the model is not `Sync`.
    pub(crate) fn sleep(
        &self,
        deadline: Option<(SimTime, Instant)>,
    ) -> impl Future<Output = Result<(), EmulateError>> + Send + '_ {
        let timer = &self.timer;
        async move {
            timer
                .sleep_until(deadline.map(|d| d.1))
                .await
                .map_err(EmulateError::Timer)
        }
    }

    /// Runs the model's due events; records how late the wake-up was.
    pub(crate) fn fire(&mut self, due: SimTime) {
        let now = self.clock.now();
        self.last = now;
        let late = now - due;
        self.wakeups += 1;
        self.late_total += late;
        self.late_max = self.late_max.max(late);
        self.model.handle_timeout(now);
    }

    pub(crate) fn poll_event(&mut self) -> Option<LinkEvent> {
        self.model.poll_event()
    }

    pub(crate) fn delivered(&mut self, port: usize, bytes: usize) {
        self.sides[port].written_frames += 1;
        self.sides[port].written_bytes += bytes as u64;
    }

    pub(crate) fn unroutable(&mut self, port: usize) {
        self.sides[port].unroutable += 1;
    }

    pub(crate) fn summary(&self) -> Summary {
        let dir = |from: usize| {
            let st = self.model.stats(from);
            DirSummary::new(st, &self.sides[from], &self.sides[1 - from])
        };
        Summary {
            link: self.link.name.clone(),
            spec: self.link.to_spec(),
            seed: self.opts.seed,
            elapsed_secs: self.clock.now().as_secs_f64(),
            a_to_b: dir(0),
            b_to_a: dir(1),
            timer: TimerSummary {
                wakeups: self.wakeups,
                late_mean_us: if self.wakeups == 0 {
                    0.0
                } else {
                    self.late_total.as_secs_f64() * 1e6 / self.wakeups as f64
                },
                late_max_us: self.late_max.as_secs_f64() * 1e6,
                read_late_max_us: self.read_late_max.as_secs_f64() * 1e6,
            },
        }
    }

    /// Logs the counters at `info` level.
    pub(crate) fn log_stats(&self) {
        let s = self.summary();
        for (name, d) in [("A->B", &s.a_to_b), ("B->A", &s.b_to_a)] {
            tracing::info!(
                direction = name,
                read = d.read_frames,
                read_bytes = d.read_bytes,
                refused_mtu = d.refused_mtu,
                dropped_queue = d.dropped_queue,
                dropped_loss = d.dropped_loss,
                delivered = d.delivered_frames,
                delivered_bytes = d.delivered_bytes,
                call_drops = d.call_drops,
                "emulator counters"
            );
        }
    }
}
