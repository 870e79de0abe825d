//! How many bytes a driver may still hand a modem: one model for every modem driver.
//!
//! Modems say how full they are in different ways, or not at all: Dire Wolf answers a
//! KISS `TXBUF:` query with the bytes it still has queued, ARDOP and VARA send
//! `BUFFER n` on their own, an RFD900 reports its free space with each frame it hands
//! up, and a hardware TNC or a bare line says nothing. [`ModemCredit`] takes whichever
//! the driver has:
//!
//! - **Queued-byte reports** (answers to the driver's queries, or sent unasked): the
//!   modem holds the reported bytes plus everything written after the moment the report
//!   counts from (for an answer, the moment of its query: a modem handles its host's
//!   bytes in order). No drain is assumed between reports, so the figure is never
//!   optimistic.
//! - **Free-space reports**: a report caps the airtime estimate, less what was written
//!   since, until it is `report_life` old.
//! - **Nothing** (no reports, or a modem that stopped answering): airtime at the
//!   configured rate, or at the rate measured while it did answer ([`Pacer`]).
//!
//! Whatever the source, the bytes believed in the modem never exceed the limit the
//! driver chose. The rate the queue drains at is measured from successive queued-byte
//! reports over stretches in which the modem never ran empty, and is what the driver
//! tells the protocol as the link's rate. A modem that keeps bytes without sending any
//! (a channel kept busy, a transmitter that never keys) is reported as stalled, with
//! since when, so that the driver can say why it waits; a modem that reports the channel
//! busy is given nothing while it does.
//!
//! Sans-IO: time is passed in.

use std::collections::VecDeque;
use std::time::Duration;

use crate::pacer::{Pacer, PacerTime};

/// Unanswered queries kept; beyond them the driver stops asking until they are old.
const MAX_ASKS: usize = 8;

/// How much drain the rate is measured over (the latest stretches).
const METER_WINDOW: Duration = Duration::from_secs(60);

/// Least observation before a measured rate is trusted.
const METER_MIN: Duration = Duration::from_secs(2);

/// Where the credit comes from now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreditSource {
    /// The modem's own reports of what it holds.
    Reports,
    /// Airtime at the configured or measured rate (the modem reports nothing, or has
    /// stopped answering).
    Airtime,
}

#[derive(Debug, Clone, Copy)]
struct QueuedReport<T> {
    at: T,
    queued: usize,
    /// The count of bytes written that the report includes.
    mark: u64,
}

#[derive(Debug, Clone, Copy)]
struct FreeReport<T> {
    at: T,
    free: usize,
    mark: u64,
    /// Bytes written after the report that are known to have left the modem.
    back: u64,
}

/// The drain rate: bytes the modem took from its queue over the time until it next took
/// some, summed over the latest stretches in which it never ran empty.
#[derive(Debug, Default)]
struct DrainMeter {
    samples: VecDeque<(Duration, f64)>,
    secs: Duration,
    bytes: f64,
}

impl DrainMeter {
    fn add(&mut self, dt: Duration, bytes: f64) {
        self.samples.push_back((dt, bytes));
        self.secs += dt;
        self.bytes += bytes;
        while self.secs > METER_WINDOW
            && let Some((d, b)) = self.samples.pop_front()
        {
            self.secs -= d;
            self.bytes -= b;
        }
    }

    fn rate(&self) -> Option<f64> {
        (self.secs >= METER_MIN && self.bytes > 0.5).then(|| self.bytes / self.secs.as_secs_f64())
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct ModemCredit<T: PacerTime> {
    pacer: Pacer<T>,
    limit: usize,
    /// Bytes written so far.
    written: u64,
    /// Queries sent and not answered: when, and the bytes written by then.
    asks: VecDeque<(T, u64)>,
    last_ask: Option<T>,
    /// Queries sent since the last answer.
    unanswered: usize,
    answer_timeout: Duration,
    poll_interval: Duration,
    queued: Option<QueuedReport<T>>,
    free: Option<FreeReport<T>>,
    report_life: Duration,
    /// Largest free space reported (the buffer's size, seen when it was empty).
    capacity: usize,
    meter: DrainMeter,
    /// The last report at which the modem took bytes (when, how many, and whether the
    /// modem was idle before), while more waited behind them.
    run: Option<(T, f64, bool)>,
    busy: bool,
    /// The modem has held bytes and sent none of them since then (by its reports).
    stalled_since: Option<T>,
}

impl<T: PacerTime> ModemCredit<T> {
    /// Credit for a modem paced by `airtime` until it reports; at most the pacer's
    /// limit ([`Pacer::max_write`]) is ever let wait in the modem.
    pub fn new(airtime: Pacer<T>) -> ModemCredit<T> {
        let limit = airtime.max_write();
        ModemCredit {
            pacer: airtime,
            limit,
            written: 0,
            asks: VecDeque::new(),
            last_ask: None,
            unanswered: 0,
            answer_timeout: Duration::from_secs(2),
            poll_interval: Duration::from_millis(250),
            queued: None,
            free: None,
            report_life: Duration::ZERO,
            capacity: 0,
            meter: DrainMeter::default(),
            run: None,
            busy: false,
            stalled_since: None,
        }
    }

    /// Queries unanswered for this long mean the modem does not answer (airtime rules
    /// until it does again); queries are repeated at most once per `poll` while bytes
    /// may be in the modem.
    pub fn with_queries(mut self, answer_timeout: Duration, poll: Duration) -> ModemCredit<T> {
        self.answer_timeout = answer_timeout;
        self.poll_interval = poll;
        self
    }

    /// How long a free-space report caps the room.
    pub fn with_report_life(mut self, life: Duration) -> ModemCredit<T> {
        self.report_life = life;
        self
    }

    pub fn pacer(&self) -> &Pacer<T> {
        &self.pacer
    }

    pub fn pacer_mut(&mut self) -> &mut Pacer<T> {
        &mut self.pacer
    }

    /// The most bytes ever let wait in the modem.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes written so far (a mark for [`ModemCredit::off_air`]).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// `n` bytes were handed to the modem.
    pub fn wrote(&mut self, now: T, n: usize) {
        self.pacer.wrote(now, n);
        self.written += n as u64;
    }

    /// Whether a query for the modem's queue should be sent now: while bytes may be in
    /// it (or before the first answer), one at a time every poll interval, repeated once
    /// per answer timeout while unanswered, and never more than a few unanswered (a modem
    /// that does not answer at all is left alone, and asked again much later).
    pub fn ask_due(&self, now: T) -> bool {
        if !self.asks.is_empty() {
            let every = if self.unanswered >= MAX_ASKS {
                self.answer_timeout * 8
            } else {
                self.answer_timeout
            };
            return self.last_ask.is_none_or(|t| now >= t + every);
        }
        let want = match self.queued {
            None => true,
            Some(r) => r.queued > 0 || self.written > r.mark,
        };
        want && self.last_ask.is_none_or(|t| now >= t + self.poll_interval)
    }

    /// A query was sent.
    pub fn asked(&mut self, now: T) {
        if self.asks.len() >= MAX_ASKS {
            // Long unanswered: the modem lost them (or never answers). Forgetting them
            // risks a very late answer being matched to a newer query; after eight
            // answer timeouts that is the lesser risk.
            self.asks.clear();
        }
        self.asks.push_back((now, self.written));
        self.last_ask = Some(now);
        self.unanswered += 1;
    }

    /// The modem answered the oldest query: it holds `queued` bytes, counting every
    /// byte written before that query.
    pub fn answered(&mut self, now: T, queued: usize) {
        let mark = match self.asks.pop_front() {
            Some((_, m)) => m,
            // Unasked (or asked long ago and forgotten): it counts what was written.
            None => self.written,
        };
        self.unanswered = 0;
        self.take_report(now, queued, mark);
    }

    /// The modem said, unasked, that it holds `queued` bytes (everything written so far
    /// included).
    pub fn reported_queued(&mut self, now: T, queued: usize) {
        self.take_report(now, queued, self.written);
    }

    /// The modem said, unasked, that it holds `queued` bytes, counting the bytes written
    /// up to `mark` ([`ModemCredit::written`] at some earlier moment): those written
    /// after it may still have been on their way to the modem when it counted (a
    /// report sent as the host's next bytes crossed a socket). Counting them as held too
    /// keeps the modem within the limit.
    pub fn reported_queued_upto(&mut self, now: T, queued: usize, mark: u64) {
        self.take_report(now, queued, mark.min(self.written));
    }

    fn take_report(&mut self, now: T, queued: usize, mark: u64) {
        match self.queued {
            Some(p) if mark >= p.mark && now > p.at => {
                let drained = p.queued as f64 + (mark - p.mark) as f64 - queued as f64;
                if drained > 0.5 {
                    // A modem takes bytes from its queue when it starts sending them (Dire
                    // Wolf takes a frame at a time): bytes taken at one report went out
                    // until the next report at which more were taken, if more were already
                    // waiting at the first (it never ran empty). The time counts whatever
                    // kept it from sending (the channel, its key-up): that is the rate we
                    // get.
                    // The first bytes taken after the modem was idle are not counted: a
                    // modem fills its audio buffers faster than real time as it keys
                    // up, so it takes the next ones early.
                    if let Some((t1, b1, first)) = self.run
                        && !first
                    {
                        self.meter.add(now - t1, b1);
                        if let Some(r) = self.meter.rate() {
                            self.pacer.set_rate(now, r);
                        }
                    }
                    let first = self.run.is_none();
                    self.run = (queued > 0).then_some((now, drained, first));
                    self.stalled_since = None;
                } else if queued > 0 {
                    // Held since the last report, unless the modem was empty then: the
                    // bytes came after it (a write after a long quiet spell has not
                    // stalled for all that spell).
                    self.stalled_since
                        .get_or_insert(if p.queued > 0 { p.at } else { now });
                }
                if queued == 0 {
                    self.run = None;
                }
            }
            // (The first report, or one older than the last: nothing to compare.)
            _ => self.run = None,
        }
        if queued == 0 {
            self.stalled_since = None;
        }
        self.queued = Some(QueuedReport {
            at: now,
            queued,
            mark,
        });
        let held = queued as u64 + self.written.saturating_sub(mark);
        self.pacer
            .observe_queued(now, usize::try_from(held).unwrap_or(usize::MAX));
    }

    /// The modem reported `free` bytes of room in its buffer.
    pub fn reported_free(&mut self, now: T, free: usize) {
        self.capacity = self.capacity.max(free);
        self.pacer.observe_used(now, self.capacity - free);
        self.free = Some(FreeReport {
            at: now,
            free,
            mark: self.written,
            back: 0,
        });
    }

    /// `n` bytes written at `mark` ([`ModemCredit::written`] before the write) are known
    /// to have left the modem: a free-space report older than the write no longer
    /// counts them.
    pub fn off_air(&mut self, mark: u64, n: usize) {
        if let Some(f) = &mut self.free
            && mark >= f.mark
        {
            f.back += n as u64;
        }
    }

    /// When the last free-space report stops capping the room, if it still does.
    pub fn report_expiry(&self, now: T) -> Option<T> {
        let end = self.free?.at + self.report_life;
        (end > now).then_some(end)
    }

    /// The modem says the channel is busy (or no longer): nothing is handed to it
    /// meanwhile.
    pub fn set_busy(&mut self, busy: bool) {
        self.busy = busy;
    }

    pub fn busy(&self) -> bool {
        self.busy
    }

    /// Whether the modem's queue reports are current: one has come, and no query has
    /// gone unanswered past the timeout.
    pub fn source(&self, now: T) -> CreditSource {
        let overdue = self
            .asks
            .front()
            .is_some_and(|&(t, _)| now >= t + self.answer_timeout);
        if self.queued.is_some() && !overdue {
            CreditSource::Reports
        } else {
            CreditSource::Airtime
        }
    }

    /// Bytes believed in the modem now (never less than it may hold).
    pub fn held(&mut self, now: T) -> usize {
        self.pacer.advance(now);
        match (self.source(now), self.queued) {
            (CreditSource::Reports, Some(r)) => {
                let h = r.queued as u64 + self.written.saturating_sub(r.mark);
                usize::try_from(h).unwrap_or(usize::MAX)
            }
            _ => self.pacer.queued(),
        }
    }

    /// Bytes that may be handed to the modem now.
    pub fn room(&mut self, now: T) -> usize {
        if self.busy {
            return 0;
        }
        let mut room = match self.source(now) {
            CreditSource::Reports => self.limit.saturating_sub(self.held(now)),
            CreditSource::Airtime => {
                self.pacer.advance(now);
                self.pacer.room()
            }
        };
        if let Some(f) = self.free
            && now < f.at + self.report_life
        {
            let since = (self.written - f.mark).saturating_sub(f.back);
            room = room.min(
                f.free
                    .saturating_sub(usize::try_from(since).unwrap_or(usize::MAX)),
            );
        }
        room
    }

    /// The rate the modem's queue drains at, measured (bytes per second).
    pub fn measured_rate(&self) -> Option<f64> {
        self.meter.rate()
    }

    /// Since when the modem has held bytes without sending any of them (by its reports).
    pub fn stalled_since(&self, now: T) -> Option<T> {
        if self.source(now) == CreditSource::Reports {
            self.stalled_since
        } else {
            None
        }
    }

    /// Whether time alone changes the room (the driver should look again soon).
    pub fn changing(&self, now: T) -> bool {
        self.pacer.busy() || !self.asks.is_empty() || self.report_expiry(now).is_some()
    }

    /// The modem lost what it held (a reconnection, a reopened port). The measured rate
    /// is kept: it is the channel's.
    pub fn reset(&mut self, now: T) {
        self.pacer.reset(now);
        self.asks.clear();
        self.last_ask = None;
        self.unanswered = 0;
        self.queued = None;
        self.free = None;
        self.run = None;
        self.busy = false;
        self.stalled_since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// 150 B/s of airtime (1200 bit/s), at most 1024 bytes in the modem.
    fn credit() -> ModemCredit<Duration> {
        ModemCredit::new(Pacer::full(Duration::ZERO, 150.0, 0, 1024))
            .with_queries(ms(2000), ms(250))
    }

    #[test]
    fn answers_count_the_writes_after_their_query() {
        let mut c = credit();
        let t = ms(0);
        assert!(c.ask_due(t), "asks before the first answer");
        c.asked(t);
        c.wrote(t, 300);
        // The answer counts nothing written after the query: 300 bytes are still held.
        c.answered(ms(10), 0);
        assert_eq!(c.source(ms(10)), CreditSource::Reports);
        assert_eq!(c.held(ms(10)), 300);
        assert_eq!(c.room(ms(10)), 724);
        // No drain is assumed between reports, however long.
        assert_eq!(c.room(ms(5000)), 724);
        c.asked(ms(5000));
        c.answered(ms(5010), 40);
        assert_eq!(c.room(ms(5010)), 984);
    }

    #[test]
    fn never_more_than_the_limit_in_the_modem() {
        let mut c = credit();
        c.asked(ms(0));
        c.answered(ms(1), 0);
        let mut t = ms(1);
        for _ in 0..100 {
            let r = c.room(t);
            c.wrote(t, r.min(256));
            assert!(c.held(t) <= 1024);
            t += ms(100);
            if c.ask_due(t) {
                c.asked(t);
                // A modem that sends nothing: whatever it holds is reported back.
                let h = c.held(t);
                c.answered(t + ms(5), h);
            }
        }
        assert_eq!(c.held(t), 1024);
        assert_eq!(c.room(t), 0);
    }

    #[test]
    fn the_drain_rate_is_measured_from_reports() {
        let mut c = credit();
        // A modem draining 134 B/s, kept about 600 bytes deep, asked every 250 ms.
        let mut modem = 0.0f64;
        let mut t = ms(0);
        while t < ms(20_000) {
            modem = (modem - 134.0 * 0.05).max(0.0);
            let r = c.room(t).min(256);
            if r >= 256 && c.held(t) < 600 {
                c.wrote(t, r);
                modem += r as f64;
            }
            if c.ask_due(t) {
                c.asked(t);
                c.answered(t, modem.round() as usize);
            }
            t += ms(50);
        }
        let rate = c.measured_rate().expect("measured");
        assert!((rate - 134.0).abs() < 134.0 * 0.1, "{rate}");
        // The airtime fallback now uses it.
        assert!((c.pacer().rate() - rate).abs() < 1e-9);
    }

    /// A modem that takes a whole frame from its queue when it starts sending it (as
    /// Dire Wolf does), asked every 250 ms: the rate is its rate, not biased by the
    /// steps in its reports, nor by the frames it takes early as it keys up.
    #[test]
    fn the_drain_rate_of_a_frame_at_a_time_modem() {
        for (rate, lead, bursts) in [
            (134.0f64, 0.0, false),
            (1050.0, 0.0, false),
            (134.0, 0.5, true),
        ] {
            let mut c = ModemCredit::new(Pacer::full(Duration::ZERO, 150.0, 0, 816))
                .with_queries(ms(2000), ms(250));
            let mut queue: VecDeque<usize> = VecDeque::new();
            let mut busy_until = ms(0);
            let mut t = ms(0);
            while t < ms(60_000) {
                if t >= busy_until
                    && let Some(f) = queue.pop_front()
                {
                    // Keying up after a pause, the modem fills its audio buffers at once
                    // (`lead` seconds of it) and takes the next frame that much early.
                    let idle = t > busy_until + ms(10);
                    let early = if idle { lead } else { 0.0 };
                    busy_until = t + Duration::from_secs_f64(f as f64 / rate - early);
                }
                // With `bursts`, the writer has data 6 s out of every 20 (the modem runs dry).
                let writing = !bursts || t.as_millis() % 20_000 < 6_000;
                if writing && c.room(t) >= 272 {
                    c.wrote(t, 272);
                    queue.push_back(272);
                }
                if c.ask_due(t) {
                    c.asked(t);
                    c.answered(t, queue.iter().sum());
                }
                t += ms(10);
            }
            let m = c.measured_rate().expect("measured");
            assert!(
                (m - rate).abs() < rate * 0.03,
                "{m} for {rate} (lead {lead})"
            );
        }
    }

    #[test]
    fn a_modem_that_stops_answering_falls_back_to_airtime() {
        let mut c = credit();
        c.asked(ms(0));
        c.answered(ms(5), 0);
        c.wrote(ms(10), 900);
        c.asked(ms(300));
        assert_eq!(c.source(ms(2000)), CreditSource::Reports);
        assert_eq!(c.room(ms(2000)), 124);
        // Unanswered past the timeout: airtime from the held estimate, at 150 B/s.
        assert_eq!(c.source(ms(2300)), CreditSource::Airtime);
        let r = c.room(ms(2300));
        assert!((440..=470).contains(&r), "{r}");
        // Asked again once per timeout, a few times, then left alone.
        let mut t = ms(2300);
        let mut asks = 0;
        while t < ms(40_000) {
            if c.ask_due(t) {
                c.asked(t);
                asks += 1;
            }
            t += ms(100);
        }
        assert!((7..=10).contains(&asks), "{asks}");
        // An answer brings the reports back.
        c.answered(ms(40_000), 0);
        assert_eq!(c.source(ms(40_000)), CreditSource::Reports);
        assert_eq!(c.room(ms(40_000)), 1024);
    }

    #[test]
    fn a_queue_that_never_drains_is_a_stall_and_gets_nothing_more() {
        let mut c = credit();
        c.asked(ms(0));
        c.answered(ms(1), 0);
        c.wrote(ms(2), 1024);
        assert!(c.stalled_since(ms(2)).is_none());
        let mut t = ms(250);
        while t < ms(30_000) {
            if c.ask_due(t) {
                c.asked(t);
                c.answered(t, 1024);
            }
            assert_eq!(c.room(t), 0);
            t += ms(50);
        }
        let since = c.stalled_since(t).expect("stalled");
        assert!(since <= ms(300), "{since:?}");
        assert_eq!(c.measured_rate(), None, "nothing drained: no rate");
        // It drains: no longer stalled.
        c.asked(t);
        c.answered(t, 768);
        assert!(c.stalled_since(t).is_none());
        assert_eq!(c.room(t), 256);
    }

    /// Bytes written after a long quiet spell (an empty modem) have not been held for
    /// that spell: the stall counts from the first report that holds them.
    #[test]
    fn a_write_after_a_quiet_spell_is_not_a_stall_at_once() {
        let mut c = credit();
        c.reported_queued(ms(0), 0);
        c.wrote(ms(60_000), 500);
        c.reported_queued(ms(60_010), 500);
        assert_eq!(c.stalled_since(ms(60_010)), Some(ms(60_010)));
        c.reported_queued(ms(61_000), 500);
        assert_eq!(c.stalled_since(ms(61_000)), Some(ms(60_010)));
        c.reported_queued(ms(62_000), 300);
        assert_eq!(c.stalled_since(ms(62_000)), None);
    }

    #[test]
    fn free_space_reports_cap_the_airtime_estimate_until_they_expire() {
        let mut c =
            ModemCredit::new(Pacer::full(Duration::ZERO, 300.0, 8, 526)).with_report_life(ms(1000));
        assert_eq!(c.room(ms(0)), 518);
        c.reported_free(ms(0), 255);
        c.reported_free(ms(1), 100);
        assert!(c.room(ms(1)) <= 100);
        let mark = c.written();
        c.wrote(ms(2), 80);
        assert!(c.room(ms(2)) <= 20);
        // That frame left the modem: the report no longer counts it.
        c.off_air(mark, 80);
        assert!(c.room(ms(3)) <= 100 && c.room(ms(3)) >= 20);
        assert_eq!(c.report_expiry(ms(3)), Some(ms(1001)));
        assert_eq!(c.report_expiry(ms(1001)), None);
        assert!(c.room(ms(5000)) > 255);
    }

    #[test]
    fn bytes_on_their_way_when_a_report_was_made_still_count() {
        let mut c = credit();
        c.reported_queued(ms(0), 0);
        c.wrote(ms(10), 600);
        let before = c.written();
        c.wrote(ms(20), 400);
        // A report made before the last 400 bytes reached the modem.
        c.reported_queued_upto(ms(21), 500, before);
        assert_eq!(c.held(ms(21)), 900);
        assert_eq!(c.room(ms(21)), 124);
        // Counted by the next report: not twice.
        c.reported_queued_upto(ms(300), 700, c.written());
        assert_eq!(c.held(ms(300)), 700);
        assert!(c.stalled_since(ms(300)).is_none());
    }

    #[test]
    fn a_busy_channel_gets_nothing() {
        let mut c = credit();
        assert!(c.room(ms(0)) > 0);
        c.set_busy(true);
        assert_eq!(c.room(ms(0)), 0);
        c.set_busy(false);
        assert_eq!(c.room(ms(0)), 1024);
    }

    #[test]
    fn a_reset_forgets_the_modem_but_keeps_the_rate() {
        let mut c = credit();
        c.asked(ms(0));
        c.answered(ms(0), 500);
        c.asked(ms(1000));
        c.answered(ms(1000), 400);
        c.asked(ms(2000));
        c.answered(ms(2000), 300);
        c.asked(ms(4000));
        c.answered(ms(4000), 100);
        // The 100 bytes taken by 2 s went out until more were taken, at 4 s (those taken
        // by 1 s, the first after the start, are not counted).
        assert_eq!(c.measured_rate(), Some(50.0));
        c.reset(ms(3000));
        assert_eq!(c.source(ms(3000)), CreditSource::Airtime);
        assert_eq!(c.room(ms(3000)), 1024);
        assert_eq!(c.measured_rate(), Some(50.0));
    }
}
