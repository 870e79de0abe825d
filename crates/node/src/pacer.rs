//! How full the device's transmit buffer is, estimated from what was written and the
//! time the device needs to send it.
//!
//! A serial line drains at its baud rate, a packet radio at its air rate (plus a preamble
//! per frame), an HF modem at its air rate, but only while it holds the turn of a
//! half-duplex channel. None of them says how much it still holds (a pty has no CTS line
//! and its output queue always reads 0), so the driver keeps the estimate and offers the
//! protocol only what fits.
//!
//! Full duplex: the estimate drains at the rate as time passes.
//!
//! Half duplex: the modem sends only while it holds the turn. An ARQ modem keeps the turn
//! while it has data (up to its longest over, if it has one) and hands it over when its
//! buffer runs dry and the other side has data. The driver keeps two figures: an upper
//! bound of what the modem holds (what the safety rule, never past the buffer less one
//! chunk, counts) and a lower bound (drain counted whenever the modem might have sent,
//! 1% fast; the upper bound counts it 1% slow). Drain is certain in two cases, and is
//! then counted at once:
//! - **Our modem holds the turn and has not run dry since it was known to hold it**
//!   (the lower bound stayed above zero): it does not give the turn away while it has
//!   data. The driver keeps it fed, so a whole over drains at the modem's rate whatever
//!   the buffer size.
//! - **The other side's stream ended while our modem held data written during it**:
//!   the turn came to us then, and our modem has sent since (a turnaround later), as long
//!   as the lower bound says it had data all along. The end of a stream is known once no
//!   byte arrived for two chunk times (plus jitter and the host's delay) after the last
//!   one.
//!
//! Otherwise (the modem may have run dry and the other side may have taken the turn),
//! drain is first booked as *pending*, from when the turn can have come to us (a write
//! into a modem that may be idle while the other side may hold the turn waits a
//! turnaround); it is confirmed once no received byte could still show that the other
//! side held the channel at that time (latency + turnaround + one chunk + the host's
//! delay), and revoked if one does (and, after a refill while the other side may have
//! held the turn, up to a turnaround after the refill). Receiving anything while our
//! modem is believed to hold the turn (the model was wrong: a slower modem, a burst of
//! lost chunks) revokes recent drain and falls back to the pending rule.
//!
//! The limit of knowing nothing: after every moment the modem may have run dry, at most
//! the buffer (less a chunk) can be written until a confirmation window has passed. A
//! modem whose buffer drains faster than the time from the turn coming to us until we
//! can know it (latency - turnaround + the end of a stream; 256 B at 1475 bit/s and 4 s)
//! therefore runs at about buffer / window, however the protocol behaves, unless it is
//! told: the drivers announce the ends of their overs to each other ([`OverEnd`], see
//! `crate::modem_tx`), and a side that was passed the turn knows when its modem takes it
//! and that it keeps it while it has data ([`Pacer::over_end`]). A modem that reports its
//! buffer (CTS flow control, ARDOP/VARA `BUFFER n`) needs none of this.

use std::collections::VecDeque;
use std::ops::{Add, Sub};
use std::time::Duration;
#[cfg(test)]
use std::time::Instant;

use crate::framing::OverEnd;

/// A point in time the pacer can count from: the daemon's `Instant`, or the simulator's
/// virtual time as a `Duration` since the run began.
pub trait PacerTime:
    Copy + Ord + std::fmt::Debug + Add<Duration, Output = Self> + Sub<Self, Output = Duration>
{
    /// `self - d`, or `None` before the clock's origin.
    fn checked_sub_duration(self, d: Duration) -> Option<Self>;
}

impl PacerTime for std::time::Instant {
    fn checked_sub_duration(self, d: Duration) -> Option<Self> {
        self.checked_sub(d)
    }
}

impl PacerTime for Duration {
    fn checked_sub_duration(self, d: Duration) -> Option<Self> {
        self.checked_sub(d)
    }
}

/// The over count after `seq`: 1..=255, wrapping past 0 (which says "none heard").
fn next_seq(seq: u8) -> u8 {
    if seq == u8::MAX { 1 } else { seq + 1 }
}

/// Bytes a modem sending at `rate` bytes/s puts on the air while an announcement
/// written in front of them crosses the latency (and a chunk, and the host's delay).
pub fn announce_lead(rate: f64, h: &HalfDuplex) -> usize {
    let t = h.latency + HOST_DELAY;
    (rate * t.as_secs_f64()).ceil() as usize + h.chunk
}

/// [`announce_lead`] if a write of at most `max` bytes takes it (less an eighth, so
/// that the write comes before the modem runs dry), else `None`: a modem whose buffer
/// is smaller than the lead cannot have the end of an over announced that far ahead.
pub fn lead_fitting(rate: f64, h: &HalfDuplex, max: usize) -> Option<usize> {
    let lead = announce_lead(rate, h);
    (lead <= max - max / 8).then_some(lead)
}

/// The other side passed us the turn in answer to our over ([`Pacer::take_answered`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered<T> {
    /// When we announced that over's end: everything written before was in it.
    pub over_ended: T,
    /// By when the other side's over has all arrived.
    pub all_in: T,
    /// The other side's over carried nothing.
    pub idle: bool,
}

impl<T> Answered<T> {
    /// The same answer on another clock.
    pub fn map<U>(self, f: impl Fn(T) -> U) -> Answered<U> {
        Answered {
            over_ended: f(self.over_ended),
            all_in: f(self.all_in),
            idle: self.idle,
        }
    }
}

impl From<Answered<Duration>> for skywave_proto::Answer {
    fn from(a: Answered<Duration>) -> Self {
        Self {
            over_ended: a.over_ended,
            all_in: a.all_in,
            idle: a.idle,
        }
    }
}

/// A half-duplex modem's timing, as the driver assumes it.
#[derive(Debug, Clone, Copy)]
pub struct HalfDuplex {
    /// Longest one-way latency beyond serialization (at least the modem's real one).
    pub latency: Duration,
    /// How much shorter than `latency` a byte may take: the latency varies in
    /// `[latency - 2 x jitter, latency]`.
    pub jitter: Duration,
    /// Dead air when the turn changes.
    pub turnaround: Duration,
    /// The modem's transmit buffer; writing past it drops the call.
    pub buffer: usize,
    /// Bytes the modem puts on the air as one unit.
    pub chunk: usize,
    /// Longest over while the other side waits with data (`None`: the holder keeps the
    /// turn while it has data).
    pub max_over: Option<Duration>,
}

#[derive(Debug, Clone, Copy)]
struct Credit<T> {
    start: T,
    end: T,
    bytes: f64,
    /// The modem certainly had data throughout (the lower bound stayed above zero): if
    /// nothing is heard, it was sending, and so held the turn.
    sure: bool,
}

/// Our modem holds the turn and certainly has data.
#[derive(Debug, Clone, Copy)]
struct Mine<T> {
    /// The modem may have sent from here (the lower bound drains from here; drain is
    /// revoked from here if the other side is heard).
    start: T,
    /// The modem has certainly sent from here (the upper bound drains from here).
    certain: T,
    /// No over of ours began before this (for a modem with a longest over).
    over_from: T,
    /// Drain counted while this held (what a revocation can take back at most).
    drained: f64,
    /// The turn passed to us may still be on the other side's modem (ours was empty
    /// when its over ended): it comes over a turnaround after our next write.
    turn_pending: bool,
}

/// The other side's stream, as received: its modem held the turn throughout.
#[derive(Debug, Clone, Copy)]
struct Run<T> {
    /// When its first byte arrived.
    first: T,
    last: T,
    /// An announcement (or a copy of one) was heard in it.
    announced: bool,
    /// Bytes we wrote while the other side certainly held the turn: still in our modem
    /// when its stream ends.
    secured: f64,
}

/// Who may write on a half-duplex modem whose overs are announced
/// ([`crate::framing::OverEnd`]).
#[derive(Debug, Clone, Copy)]
enum Token<T> {
    /// No agreement (the start of a call, a lost announcement): either side may write
    /// at any time, and the estimate alone rules.
    Unknown,
    /// We announced the end of our over: nothing more is written until the other side
    /// answers with its own announcement, or until `deadline` (it was lost).
    Passed {
        seq: u8,
        rank: u16,
        /// When we announced: everything written before is in the over it ends.
        at: T,
        deadline: T,
        /// The latest the deadline may be put off to (hearing the other side puts it off).
        last: T,
    },
    /// The other side passed us the turn (at `since`) and writes nothing until we pass
    /// it back: our modem holds the turn whenever it has data. `idle`: the other side
    /// had nothing to send.
    Held { since: T, idle: bool },
}

/// Longest a side keeps a passed turn (the other side's silence is bounded by it): ten
/// handovers' worth (latency and turnaround), within these bounds.
pub const HOLD_MAX: Duration = Duration::from_secs(60);
const HOLD_MIN: Duration = Duration::from_secs(5);

/// Below this many bytes a figure counts as zero (float rounding).
const EPS: f64 = 0.5;

/// How far the modem's real rate may be from the configured one (half duplex: the upper
/// bound drains this much slower, the lower bound this much faster). Over a long over the
/// error would otherwise add up beyond the buffer's slack.
const RATE_ERROR: f64 = 0.01;

/// How late the host may see bytes the modem received (serial transfer, the driver's
/// read and timers): every time taken from a reception is this much earlier at worst.
/// The latency's own spread is the link's jitter, counted apart.
const HOST_DELAY: Duration = Duration::from_millis(50);

/// Writes remembered for the end of the other side's stream.
const MAX_WRITES: usize = 1024;

#[derive(Debug)]
pub struct Pacer<T: PacerTime> {
    /// Bytes per second the device sends.
    rate: f64,
    /// Airtime per write, in bytes at `rate` (a radio's preamble).
    per_write: f64,
    /// Largest optimistic occupancy: what may wait in the device.
    limit: f64,
    /// Half duplex, while the turn is not known to be ours: what may wait so that the
    /// modem still has data when the turn comes to us and we learn it.
    limit_waiting: f64,
    /// Writes smaller than this wait for more room, unless the modem may run dry first.
    unit: usize,
    half: Option<HalfDuplex>,
    /// Safety margin of the half-duplex windows ([`HOST_DELAY`]).
    margin: Duration,
    /// Bytes in the device, not counting pending drain: an upper bound.
    queued: f64,
    pending: VecDeque<Credit<T>>,
    pending_sum: f64,
    last: T,
    /// No drain before this (the modem turning the channel round to us).
    credit_from: T,
    /// Half duplex: the turn came to our modem (or it was sending) and the other side was
    /// not heard since. Tentative: if the other side took the turn meanwhile, hearing it
    /// revokes the drain booked since.
    holds_turn: bool,
    /// Half duplex: a write into a modem that may have been empty asked for the turn;
    /// it comes to us by `credit_from` at the latest.
    turn_asked: bool,
    /// Half duplex: the last write into a modem that may have been empty (a refill).
    refill_at: Option<T>,
    /// Half duplex: a lower bound of the bytes in the device (drain counted whenever
    /// the modem might have sent).
    lo: f64,
    /// The last time the lower bound was zero (the modem may have run dry then).
    lo_empty_at: T,
    /// Drain confirmed up to here.
    confirmed_to: T,
    mine: Option<Mine<T>>,
    run: Option<Run<T>>,
    /// Recent writes not yet known to wait behind the other side's stream.
    writes: VecDeque<(T, f64)>,
    /// When the other side was last heard.
    heard_at: Option<T>,
    /// When the call began (the start of the first over).
    origin: T,
    /// The other side announced the end of its over: its stream may still be heard until
    /// this (our modem takes the turn after it).
    expect_until: Option<T>,
    /// The last time our modem certainly held the turn and was sending.
    held_at: Option<T>,
    /// Who may write (announced over ends; see [`Token`]).
    token: Token<T>,
    /// Our last announcement's count, and the last one heard from the other side.
    my_seq: u8,
    their_seq: u8,
    /// Announce the ends of our overs (off once the other side has shown it does not).
    announce_ok: bool,
    /// Draws announcement ranks.
    rng: u64,
    /// Writes were forgotten from `writes` up to here (the list is complete after it).
    writes_forgot: T,
    /// Our last announcement (whatever became of the turn): repeated while the turn
    /// stays passed and the other side silent (the announcement or its answer was
    /// lost), or, an idle answer that left the turn to no one, when the other side's
    /// copy shows it never heard it.
    said: Option<OverEnd>,
    /// The other side passed us the turn in answer to our over. Taken by
    /// [`Pacer::take_answered`].
    answered: Option<Answered<T>>,
    /// The last write into the modem.
    wrote_at: Option<T>,
    /// The most our modem held just after that write (the upper bound then): what it
    /// had to send before an announcement written last reached the other side.
    held_after_write: f64,
    /// Repeats of `said` so far (each waits twice as long as the one before).
    repeats: u32,
    /// The other side repeated what we answered: our answer is repeated at once.
    repeat_now: bool,
    /// The other side repeated the idle over we answered with our own idle one (the
    /// turn became no one's here): it never heard our answer, and waits for it.
    reanswer: bool,
    /// The other side's stream answering our over ended, unannounced, when its last
    /// byte arrived at this time ([`Pacer::over_unannounced`]).
    unannounced: Option<T>,
    /// Overs of the other side taken as ended without their announcement.
    pub unannounced_ends: u64,
}

impl<T: PacerTime> Pacer<T> {
    /// A full-duplex device draining `rate` bytes/s, kept at most `limit` bytes deep.
    pub fn full(now: T, rate: f64, per_write: usize, limit: usize) -> Pacer<T> {
        Pacer {
            rate: rate.max(1.0),
            per_write: per_write as f64,
            limit: limit as f64,
            limit_waiting: limit as f64,
            unit: 0,
            half: None,
            margin: Duration::ZERO,
            queued: 0.0,
            pending: VecDeque::new(),
            pending_sum: 0.0,
            last: now,
            credit_from: now,
            holds_turn: true,
            turn_asked: false,
            refill_at: None,
            lo: 0.0,
            lo_empty_at: now,
            confirmed_to: now,
            mine: None,
            run: None,
            writes: VecDeque::new(),
            heard_at: None,
            origin: now,
            expect_until: None,
            held_at: None,
            writes_forgot: now,
            token: Token::Unknown,
            my_seq: 0,
            their_seq: 0,
            announce_ok: true,
            rng: 0x9e37_79b9_7f4a_7c15,
            said: None,
            answered: None,
            wrote_at: None,
            held_after_write: 0.0,
            repeats: 0,
            repeat_now: false,
            reanswer: false,
            unannounced: None,
            unannounced_ends: 0,
        }
    }

    /// A half-duplex modem draining `rate` bytes/s while it holds the turn.
    pub fn half(now: T, rate: f64, limit: usize, half: HalfDuplex) -> Pacer<T> {
        let margin = HOST_DELAY;
        let mut p = Pacer {
            half: Some(half),
            margin,
            holds_turn: false,
            ..Pacer::full(now, rate, 0, limit)
        };
        // Enough to keep the modem sending from the moment the turn comes to us until
        // we can know it did: a latency (less the turnaround) and the end of the stream.
        let blind = half.latency.saturating_sub(half.turnaround) + p.gap(&half);
        p.limit_waiting = p.limit + p.rate * blind.as_secs_f64();
        p
    }

    /// Seeds the draw of announcement ranks (each side of a link needs its own).
    pub fn with_seed(mut self, seed: u64) -> Pacer<T> {
        self.rng = seed | 1;
        self
    }

    /// Writes of fewer than `unit` bytes are not offered while the modem has enough to
    /// send meanwhile (a frame's header is paid per write).
    pub fn with_unit(mut self, unit: usize) -> Pacer<T> {
        self.unit = unit;
        self
    }

    fn secs(&self, bytes: f64) -> Duration {
        Duration::from_secs_f64((bytes / self.rate).max(0.0))
    }

    fn bytes_in(&self, from: T, to: T) -> f64 {
        if to > from {
            self.rate * (to - from).as_secs_f64()
        } else {
            0.0
        }
    }

    /// Half duplex: drain the upper bound may count (the modem may be slightly slow).
    fn drain_hi(&self, from: T, to: T) -> f64 {
        self.bytes_in(from, to) * (1.0 - RATE_ERROR)
    }

    /// Half duplex: drain the lower bound must count (the modem may be slightly fast).
    fn drain_lo(&self, from: T, to: T) -> f64 {
        self.bytes_in(from, to) * (1.0 + RATE_ERROR)
    }

    fn chunk_time(&self, h: &HalfDuplex) -> Duration {
        self.secs(h.chunk as f64)
    }

    /// How long pending drain waits to be confirmed.
    fn window(&self, h: &HalfDuplex) -> Duration {
        h.latency + h.turnaround + self.chunk_time(h) + self.margin
    }

    /// Silence after which the other side's stream has ended: two chunk times (one may
    /// be lost), the latency's spread and a margin for the host's timers.
    fn gap(&self, h: &HalfDuplex) -> Duration {
        self.chunk_time(h) * 2 + h.jitter * 2 + HOST_DELAY * 2
    }

    fn latency_min(h: &HalfDuplex) -> Duration {
        h.latency.saturating_sub(h.jitter * 2)
    }

    /// No over of ours began before this: the turn came to us after the other side was
    /// last on the air (and a turnaround), or at the start of the call.
    fn over_floor(&self, h: &HalfDuplex) -> T {
        self.heard_at
            .and_then(|r| r.checked_sub_duration(h.latency))
            .map_or(self.origin, |x| (x + h.turnaround).max(self.origin))
    }

    /// Books the drain up to `now`.
    pub fn advance(&mut self, now: T) {
        let Some(h) = self.half else {
            if now > self.last {
                let from = self.last.max(self.credit_from);
                let bytes = self.bytes_in(from, now).min(self.queued);
                self.queued -= bytes;
                self.last = now;
            }
            self.queued = self.queued.max(0.0);
            return;
        };
        if let Token::Passed { deadline, .. } = self.token
            && now >= deadline
        {
            self.token = Token::Unknown;
            if self.their_seq == 0 {
                // Not one announcement heard on this call: the other side does not make
                // them (an older version). The estimate alone rules from here.
                tracing::info!(
                    "modem: the other side does not announce the ends of its overs; pacing by the estimate alone on this call"
                );
                self.announce_ok = false;
            } else {
                tracing::debug!(
                    "modem pacer: the other side never answered our announced over end; writing again"
                );
            }
        }
        // The turn is ours while the other side stays silent: from its announcement until
        // ours has gone out (after it, our modem only empties).
        let held = match self.token {
            Token::Held { .. } => true,
            Token::Passed { .. } => self.mine.is_some(),
            Token::Unknown => false,
        };
        if now > self.last {
            let last = self.last;
            // The lower bound drains whenever the modem might: when did it run out?
            let lo_from = self.mine.map_or(last, |m| last.max(m.start)).min(now);
            let lo_out = if self.lo <= EPS {
                Some(lo_from)
            } else if self.drain_lo(lo_from, now) >= self.lo {
                Some(lo_from + self.secs(self.lo / (1.0 + RATE_ERROR)))
            } else {
                None
            };
            self.lo = (self.lo - self.drain_lo(lo_from, now)).max(0.0);
            if self.lo <= EPS {
                self.lo = 0.0;
                self.lo_empty_at = now;
            }
            let mut from = last.max(self.credit_from);
            if let Some(m) = self.mine {
                // Certain drain, until the modem may have run dry or its over may end
                // (with the turn passed to us, it keeps the turn while it has data).
                let mut cut = if held { now } else { lo_out.unwrap_or(now) };
                if let Some(o) = h.max_over {
                    cut = cut.min((m.over_from + o).max(last));
                }
                let bytes = self.drain_hi(last.max(m.certain), cut).min(self.queued);
                self.queued -= bytes;
                if let Some(m) = self.mine.as_mut() {
                    m.drained += bytes;
                }
                if cut > m.certain {
                    self.held_at = Some(cut);
                }
                if matches!(self.token, Token::Passed { .. }) && self.queued <= EPS {
                    // Our announced over has certainly gone out.
                    self.queued = 0.0;
                    self.mine = None;
                    from = now;
                } else if cut < now {
                    tracing::trace!(t = ?now, queued = self.queued, "modem pacer: the modem may have run dry");
                    self.mine = None;
                    self.holds_turn = true;
                    from = cut;
                } else {
                    from = now;
                }
            }
            if self.mine.is_none() && now > from {
                let avail = (self.queued - self.pending_sum).max(0.0);
                let bytes = self.drain_hi(from, now).min(avail);
                if bytes > 1e-6 {
                    // The drain ends when the buffer ran empty, not at `now`.
                    let end = (from + self.secs(bytes / (1.0 - RATE_ERROR))).min(now);
                    self.pending.push_back(Credit {
                        start: from,
                        end,
                        bytes,
                        sure: lo_out.is_none_or(|x| x > end),
                    });
                    self.pending_sum += bytes;
                }
            }
            self.last = now;
        }
        if self.turn_asked && now >= self.credit_from {
            // The turn our write asked for has come (or the modem had it all along).
            self.turn_asked = false;
            self.holds_turn = true;
        }
        let window = self.window(&h);
        while let Some(c) = self.pending.front().copied() {
            if c.end + window > now {
                break;
            }
            self.pending.pop_front();
            self.pending_sum -= c.bytes;
            self.queued -= c.bytes;
            self.confirmed_to = self.confirmed_to.max(c.end);
            // Our modem had the turn at `c.end`; it still has it unless the other side
            // was on the air later (drain booked before its stream is confirmed after it).
            let heard_later = self.heard_at.is_some_and(|r| {
                r.checked_sub_duration(Self::latency_min(&h))
                    .is_none_or(|x| x > c.end)
            });
            if heard_later || !c.sure {
                // (A modem that may have been empty did not need the turn.)
                continue;
            }
            self.holds_turn = true;
            let over_ok = h.max_over.is_none_or(|o| self.over_floor(&h) + o > now);
            if self.mine.is_none()
                && self.run.is_none()
                && over_ok
                && self.lo > EPS
                && self.lo_empty_at < c.end
            {
                // Our modem held the turn at `c.end` and has had data ever since: it
                // still holds it, and has sent all the while.
                tracing::trace!(t = ?now, lo = self.lo, "modem pacer: our modem holds the turn (drain confirmed)");
                let since = self.drain_hi(c.end, now);
                self.queued = (self.queued - since).max(self.lo);
                self.pending.clear();
                self.pending_sum = 0.0;
                self.confirmed_to = now;
                self.mine = Some(Mine {
                    start: c.end,
                    certain: c.end,
                    over_from: self.over_floor(&h),
                    drained: 0.0,
                    turn_pending: false,
                });
            }
        }
        if self.pending.is_empty() {
            self.pending_sum = 0.0;
        }
        self.settle();
        self.check_stream_end(now, &h);
        self.over_unannounced(now, &h);
    }

    fn settle(&mut self) {
        self.queued = self.queued.max(0.0);
        self.lo = self.lo.min(self.queued);
    }

    /// The other side's stream has ended: if our modem held data written during it, the
    /// turn came to us then.
    fn check_stream_end(&mut self, now: T, h: &HalfDuplex) {
        let Some(run) = self.run else {
            return;
        };
        let gap = self.gap(h);
        if now < run.last + gap {
            return;
        }
        self.run = None;
        if let Token::Passed { at, .. } = self.token
            && !run.announced
            && run.first >= at + Self::latency_min(h) * 2 + h.turnaround
        {
            self.unannounced = Some(run.last);
        }
        // A turn that went to us and back within a gap would not show: only trusted when
        // two turnarounds are longer than the gap.
        if self.mine.is_some() || run.secured <= EPS || h.turnaround * 2 <= gap {
            return;
        }
        let (Some(end_early), Some(end_late)) = (
            run.last.checked_sub_duration(h.latency + self.margin),
            run.last.checked_sub_duration(Self::latency_min(h)),
        ) else {
            return;
        };
        self.take_turn(
            now,
            h,
            run.secured,
            end_early,
            end_late,
            "the other side's stream ended",
        );
    }

    /// A stream that began after the other side could have heard our announcement is
    /// its over answering ours, and a side holding the turn keeps its modem fed until
    /// it announces that over's end, but for two waits: for drain to be confirmed
    /// before it writes more than a buffer (at most a latency, a turnaround and a chunk
    /// after its modem may have run dry), and for our over to have all arrived before
    /// it ends its own (at most a latency after its modem took the turn). A stream that
    /// ended unannounced and stays silent for longer than those, and than a burst of
    /// lost chunks could last (four chunks), lost its announcement with its last chunk:
    /// the over is taken as ended then and announced
    /// with the count the other side gave it (the next after its last heard), as if
    /// heard. Waiting for the other side to say it again cost a whole answer's wait
    /// (14 s at 9600 bit/s and 4 s of latency; a third of the time on a lossy link went
    /// so). Had the other side announced nothing since (it gave up waiting, an older
    /// version), our answer names an over it did not end and it takes the two as
    /// crossed, as before; had its stream only paused, hearing it again ends our hold
    /// ([`Pacer::received`]).
    fn over_unannounced(&mut self, now: T, h: &HalfDuplex) {
        let Some(last) = self.unannounced else {
            return;
        };
        if !matches!(self.token, Token::Passed { .. }) || self.run.is_some() {
            self.unannounced = None;
            return;
        }
        if now < last + self.unannounced_silence(h) {
            return;
        }
        self.unannounced = None;
        self.unannounced_ends += 1;
        let m = OverEnd {
            after: 0,
            seq: next_seq(self.their_seq),
            heard: self.my_seq,
            rank: 0,
            idle: false,
        };
        tracing::debug!(t = ?now, ?m, "modem pacer: the other side's over ended unannounced (its announcement was lost with its last chunk); taken as announced");
        // Its last chunk, the announcement's, would have arrived a chunk after the last
        // one heard.
        // Not an answer the endpoint can read the lost end of our over from: the
        // chunk lost may have held the other side's report (a short over is all report).
        self.passed_to_us(now, last + self.chunk_time(h), *h, m, false);
    }

    /// The least our modem can hold at `now`: `secured` bytes held when it may first have
    /// sent (`from`), the later writes as they came, drained at the fastest rate. A modem
    /// that runs dry may lose the turn: unless `refill` (the other side is known to be
    /// silent, so the turn stays), the answer is then 0.
    fn least_held(&self, secured: f64, from: T, now: T, refill: bool) -> f64 {
        let mut lo = secured;
        let mut t = from;
        for &(w, n) in &self.writes {
            if w > t {
                lo -= self.drain_lo(t, w);
                t = w;
                if lo <= EPS {
                    if !refill {
                        return 0.0;
                    }
                    lo = 0.0;
                }
            }
            lo += n;
        }
        (lo - self.drain_lo(t, now)).max(0.0)
    }

    /// The other side's over ended (or ends) within `[end_early, end_late]`: our modem,
    /// holding `secured` bytes written while the other side held the turn (and the later
    /// writes), took the turn a turnaround later, unless it ran dry before.
    fn take_turn(
        &mut self,
        now: T,
        h: &HalfDuplex,
        secured: f64,
        end_early: T,
        end_late: T,
        why: &str,
    ) {
        let (start_early, start_late) = (end_early + h.turnaround, end_late + h.turnaround);
        // The least our modem can hold now: the secured bytes from when it may first have
        // sent, the later writes as they came; if it may have run dry, the turn may have
        // gone back.
        let lo = self.least_held(secured, start_early, now, false);
        if lo <= EPS {
            // (It did go out, but the other side may have taken the turn back since:
            // what drained is not known.)
            tracing::trace!(t = ?now, secured, "modem pacer: {why}; our modem may have run dry since");
            return;
        }
        tracing::trace!(t = ?now, secured, lo, "modem pacer: {why}: the turn is ours");
        // Our over began no earlier than `start_early`; a modem with a longest over may
        // have handed the turn back when it ran out.
        let over_end = h.max_over.map(|o| start_early + o);
        let until = over_end.map_or(now, |e| e.min(now));
        let drained = self.drain_hi(start_late.max(self.confirmed_to), until);
        // Pending drain that may overlap what is now certain is dropped (never counted
        // twice).
        self.pending.retain(|c| c.end <= start_early);
        self.pending_sum = self.pending.iter().map(|c| c.bytes).sum();
        self.queued = (self.queued - drained).max(lo);
        self.lo = self.lo.max(lo).min(self.queued);
        self.holds_turn = true;
        self.turn_asked = false;
        if until < now {
            // The over may have ended: what drained since is not known.
            return;
        }
        self.mine = Some(Mine {
            start: start_early,
            certain: start_late,
            over_from: start_early,
            drained: 0.0,
            turn_pending: false,
        });
    }

    /// Once, after the other side passed us the turn in answer to our over. What it did
    /// not report of that over by the time its own has all arrived, it never got (its
    /// reports lead its over): the endpoint need not wait out a resend timeout for it
    /// ([`skywave_proto::Answer`]).
    pub fn take_answered(&mut self) -> Option<Answered<T>> {
        self.answered.take()
    }

    /// Longest a side keeps a passed turn on this link (see [`HOLD_MAX`]).
    pub fn hold_max(&self) -> Duration {
        self.half.map_or(HOLD_MAX, |h| {
            ((h.latency + h.turnaround) * 10).clamp(HOLD_MIN, HOLD_MAX)
        })
    }

    /// Dead air when the turn changes (half duplex; zero otherwise).
    pub fn turnaround(&self) -> Duration {
        self.half.map_or(Duration::ZERO, |h| h.turnaround)
    }

    /// Half duplex: whether our modem may have run dry (the lower bound of what it
    /// holds is zero), so that the next write may start a new burst on the air.
    pub fn may_be_dry(&self) -> bool {
        self.half.is_some() && self.lo <= EPS
    }

    /// Whether the ends of overs are announced on this link ([`Pacer::over_end`]): a
    /// half-duplex modem that keeps the turn while it has data (with a longest over, the
    /// modem, not the driver, decides when an over ends).
    pub fn announces(&self) -> bool {
        self.announce_ok && self.half.is_some_and(|h| h.max_over.is_none())
    }

    /// Whether the other side passed us the turn: our modem holds it whenever it has
    /// data, until we announce the end of our over.
    pub fn holding(&self) -> bool {
        matches!(self.token, Token::Held { .. })
    }

    /// Whether the other side's last over may still be arriving (its stream is heard, or
    /// its announced end is not yet): what it says may give the endpoint more to send,
    /// so our over should not end yet.
    pub fn hearing(&self, now: T) -> bool {
        self.run.is_some() || self.expect_until.is_some_and(|t| now <= t)
    }

    /// Bytes our modem sends while an announcement written now in front of them
    /// travels to the other side (the longest latency, a chunk and the margin): an over
    /// whose end is announced that far ahead is heard to end before it does (0 but on
    /// half duplex).
    pub fn announce_lead(&self) -> usize {
        self.half.map_or(0, |h| announce_lead(self.rate, &h))
    }

    /// [`Pacer::announce_lead`] if the modem takes that much in one write (less an
    /// eighth, so that the write comes before the modem runs dry), else 0: a modem
    /// whose buffer is smaller than the lead gains nothing from frames held back for
    /// the announcement, and they would only wait on the host.
    pub fn lead_in_one_write(&self) -> usize {
        self.half
            .and_then(|h| lead_fitting(self.rate, &h, self.max_write()))
            .unwrap_or(0)
    }

    /// The largest write the driver ever makes at once (what the modem's buffer takes,
    /// and the driver's own limit of bytes ahead of the modem; a frame larger than
    /// this, framed, would never go).
    pub fn max_write(&self) -> usize {
        match self.half {
            Some(h) => h.buffer.saturating_sub(h.chunk).min(self.limit as usize),
            None => self.limit as usize,
        }
    }

    /// Whether the turn is passed either way (time alone changes what may be written:
    /// an over's longest hold, the wait for an answer).
    pub fn waits_for_turn(&self) -> bool {
        !matches!(self.token, Token::Unknown)
    }

    /// Whether the driver may take frames from the endpoint: not after announcing the
    /// end of our over, until the other side passes the turn back.
    pub fn may_take(&self) -> bool {
        !matches!(self.token, Token::Passed { .. })
    }

    /// While the other side has passed us the turn: since when (an over ends within
    /// [`HOLD_MAX`]).
    pub fn held(&self) -> Option<T> {
        match self.token {
            Token::Held { since, .. } => Some(since),
            _ => None,
        }
    }

    /// Our over ends `after` stream bytes past the announcement being written now (the
    /// driver writes exactly those, then nothing until the other side answers). Returns
    /// the announcement to write.
    pub fn announce(&mut self, now: T, after: u16, idle: bool) -> OverEnd {
        self.advance(now);
        self.my_seq = next_seq(self.my_seq);
        self.step_rng();
        let rank = (self.rng >> 32) as u16;
        let m = OverEnd {
            after,
            seq: self.my_seq,
            heard: self.their_seq,
            rank,
            idle,
        };
        self.token = if idle && matches!(self.token, Token::Held { idle: true, .. }) {
            // Neither side has anything to send: the turn is no one's (either side
            // writes when it has something, and announces when done), rather than
            // passed back and forth for nothing.
            Token::Unknown
        } else {
            Token::Passed {
                seq: m.seq,
                rank,
                at: now,
                deadline: now + self.pass_timeout(),
                last: now + self.pass_timeout() * 2,
            }
        };
        self.said = Some(m);
        self.repeats = 0;
        self.repeat_now = false;
        self.reanswer = false;
        tracing::trace!(t = ?now, ?m, "modem pacer: our over ends (announced)");
        m
    }

    /// A tiny xorshift: the pacer has no RNG of its own, only the seed it was given.
    fn step_rng(&mut self) {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
    }

    /// How long we stay silent after passing the turn with no answer: the other side
    /// may hold the turn for [`HOLD_MAX`] after it had it, which may be a turnaround and
    /// our modem's content after the last we heard of it, and its answer takes a
    /// latency and its own lead to arrive.
    fn pass_timeout(&self) -> Duration {
        self.hold_max() + self.answer_wait()
    }

    /// The longest an answer to our announcement takes to be heard once our last write
    /// went in: our modem empties (at most its buffer), the announcement crosses, the
    /// other side's modem turns round (or it waits for the end of our stream and
    /// answers that it has nothing), and the answer crosses back.
    fn answer_wait(&self) -> Duration {
        self.answer_wait_holding(self.half.map_or(0.0, |h| h.buffer as f64))
    }

    /// [`Pacer::answer_wait`] counted from our last write, with what our modem held
    /// then instead of a whole buffer: a lost announcement written after a short over
    /// is said again a latency and two turnarounds later, not after the time a full
    /// buffer takes to drain (6.8 s for 8 KiB at 9600 bit/s, 3.6 minutes at 300).
    fn answer_wait_after_write(&self) -> Duration {
        let buffer = self.half.map_or(0.0, |h| h.buffer as f64);
        self.answer_wait_holding(self.held_after_write.min(buffer))
    }

    fn answer_wait_holding(&self, held: f64) -> Duration {
        let Some(h) = self.half else {
            return Duration::ZERO;
        };
        // And, for an over that answered one of the other side's, the wait before an
        // answer to an over whose announcement was lost: the other side's answer may
        // come that much later (`over_unannounced`), and a repeat written before it
        // arrives would wait in our modem and take the turn at the first gap in that
        // answer, while the other side's driver counts its own modem as sending (a call
        // dropped at 9600 bit/s, 4 s, 256 B, 5%). An over that answered nothing (the
        // call's first, which may cross the other side's) began with the call, before
        // anything of ours could be heard, and is not taken as ended so: its repeat
        // keeps the shorter wait (the call's start is where announcements cross).
        let late = if self.said.is_some_and(|m| m.heard != 0) {
            self.unannounced_silence(&h)
        } else {
            Duration::ZERO
        };
        (h.latency + h.turnaround) * 2 + self.secs(held) + self.gap(&h) + self.margin * 4 + late
    }

    /// How long a stream answering our over stays silent before it is taken as ended
    /// unannounced ([`Pacer::over_unannounced`]).
    fn unannounced_silence(&self, h: &HalfDuplex) -> Duration {
        h.latency + h.turnaround + self.chunk_time(h) * 4 + h.jitter * 2 + HOST_DELAY * 2
    }

    /// While the turn is passed and nothing was heard for [`Pacer::answer_wait_after_write`] since
    /// our last write (and since the other side was last heard): our announcement or its
    /// answer was lost, so it is said again (the same count: a side that heard it
    /// ignores the copy, but answers again if its own answer was lost). Each repeat
    /// waits twice as long as the last, with jitter, until the turn's longest wait runs
    /// out. Rather than a silent channel until then: on lossy HF a lost announcement
    /// left both sides waiting for minutes.
    pub fn repeat_due(&mut self, now: T) -> Option<OverEnd> {
        let (Token::Passed { .. }, Some(m), Some(wrote)) = (self.token, self.said, self.wrote_at)
        else {
            return None;
        };
        let quiet = self.heard_at.map_or(wrote, |h| h.max(wrote));
        let at_once = self.repeat_now;
        let wait = if at_once {
            if self.run.is_some() || now < wrote + self.answer_wait() {
                // The copy may have been written before ours reached the other side
                // (ours crosses as its copy crosses back): then it holds the turn now,
                // and its stream arrives up to an answer's wait after our write. A repeat
                // written into that stream waits in our modem and takes the turn at its
                // first gap, while the other side's driver counts its modem as sending.
                // (The whole buffer's wait, not `answer_wait_after_write`: counting only
                // what our modem held, a repeat came 0.6 s before the other side's
                // stream and a call dropped at 1475 bit/s, 4 s, 256 B, 15%.)
                return None;
            }
            self.repeat_now = false;
            Duration::ZERO
        } else {
            // (The pacer's own xorshift: no RNG of its own, only its seed.)
            let jitter = 1.0 + (self.rng >> 40) as f64 / (1u64 << 24) as f64 / 2.0;
            self.answer_wait_after_write()
                .mul_f64(f64::from(1u32 << self.repeats.min(6)) * jitter)
        };
        if now < quiet + wait {
            return None;
        }
        self.step_rng();
        self.repeats += 1;
        let (answer_by, patience) = (now + self.answer_wait(), now + self.pass_timeout() * 2);
        let announces = self.their_seq != 0;
        if let Token::Passed { deadline, last, .. } = &mut self.token {
            // The turn is offered again, and the other side may take it only now: its
            // stream may take an answer's wait to be heard (the next repeat waits longer,
            // so a silent side still lets the deadline pass), and it may then hold the
            // turn for its longest over (hearing it puts the deadline off as far as
            // `last`; not for a side never heard to announce: it may never answer).
            *deadline = (*deadline).max(answer_by);
            if announces {
                *last = (*last).max(patience);
            }
        }
        tracing::debug!(t = ?now, ?m, repeats = self.repeats, answer_lost = at_once, "modem pacer: no answer to our announced over end; saying it again");
        Some(OverEnd { after: 0, ..m })
    }

    /// Our idle answer again, once the copy of the announcement it answered has ended
    /// with nothing after it ([`Pacer::over_end`]): the turn stays no one's.
    pub fn reanswer_due(&mut self) -> Option<OverEnd> {
        if !self.reanswer || self.run.is_some() || !matches!(self.token, Token::Unknown) {
            return None;
        }
        self.reanswer = false;
        let m = self.said?;
        tracing::debug!(
            ?m,
            "modem pacer: the other side never heard our idle answer; saying it again"
        );
        Some(OverEnd { after: 0, ..m })
    }

    /// The other side repeated an announcement we heard and answered: our answer was
    /// lost, so ours is due again as soon as the other side cannot have heard it (an
    /// answer's wait after our write) and its stream has ended.
    fn answer_lost(&mut self) {
        if matches!(self.token, Token::Passed { .. }) && self.said.is_some() {
            self.repeat_now = true;
        }
    }

    /// The other side announced the end of its over ([`OverEnd`]): `after` stream bytes
    /// past the frame just received, its modem runs dry, and it writes nothing until our
    /// announcement. Our modem takes the turn then (at once if it holds data written
    /// while the other side held it, else a turnaround after our next write), and keeps
    /// it while it has data: its drain is certain until we announce our own end.
    pub fn over_end(&mut self, now: T, m: OverEnd) {
        self.advance(now);
        if let Some(r) = self.run.as_mut() {
            r.announced = true;
        }
        let Some(h) = self.half else {
            return;
        };
        if h.max_over.is_some() {
            return;
        }
        if m.seq == self.their_seq {
            // A copy of an announcement already taken: if it does not name our answer,
            // the other side never heard that.
            match self.token {
                Token::Passed { seq, .. } if m.heard != seq => self.answer_lost(),
                Token::Unknown
                    if self
                        .said
                        .is_some_and(|l| l.idle && l.heard == m.seq && m.heard != l.seq) =>
                {
                    // Our idle answer to its idle over left the turn to no one here;
                    // the other side never heard it and stays silent until its longest
                    // wait runs out (a minute and more on HF), even with data to send.
                    self.reanswer = true;
                }
                _ => {}
            }
            return;
        }
        self.passed_to_us(now, now, h, m, true);
    }

    /// The other side passed us the turn (`m`, new), its announcement heard at
    /// `heard_at`; `answers`: the endpoint may learn from it what our over lost
    /// ([`Pacer::take_answered`]).
    fn passed_to_us(&mut self, now: T, heard_at: T, h: HalfDuplex, m: OverEnd, answers: bool) {
        self.announce_ok = true;
        self.their_seq = m.seq;
        if let Token::Passed { seq, .. } = self.token
            && m.heard == seq
            && m.idle
            && self.said.is_some_and(|s| s.idle)
        {
            // The answer to our idle over is idle too: the turn is no one's.
            self.token = Token::Unknown;
            return;
        }
        if let Token::Passed { seq, rank, .. } = self.token
            && m.heard != seq
            && m.rank >= rank
        {
            // Both announced without hearing the other: the higher rank takes the turn
            // (both sides decide alike); we wait for its answer to ours.
            tracing::trace!(t = ?now, ?m, "modem pacer: both sides announced; the other side takes the turn");
            return;
        }
        // The announcing frame's last byte left the air in the chunk heard now; up to a
        // chunk of what follows it left with it.
        let after = f64::from(m.after);
        let (Some(aired_early), Some(aired_late)) = (
            heard_at.checked_sub_duration(h.latency + self.margin),
            heard_at.checked_sub_duration(Self::latency_min(&h)),
        ) else {
            return;
        };
        let end_early =
            aired_early + self.secs((after - h.chunk as f64).max(0.0) / (1.0 + RATE_ERROR));
        let end_late = aired_late + self.secs(after / (1.0 - RATE_ERROR));
        let (start_early, start_late) = (end_early + h.turnaround, end_late + h.turnaround);
        // The least our modem holds: what was written while the other side held the
        // turn (and since), less what it may have sent from the earliest start.
        let secured = self.run.map_or(0.0, |r| r.secured);
        let lo = self.least_held(secured, start_early, now, true);
        // When our modem surely sends: a turnaround after the end if it held the bytes
        // written while the other side held the turn; else a turnaround after the first
        // write since the end (it may have been empty then); else after our next write.
        let first_after = self
            .writes
            .iter()
            .map(|&(w, _)| w)
            .find(|&w| w >= end_early);
        let before_end: f64 = self
            .writes
            .iter()
            .filter(|&&(w, _)| w < end_early)
            .map(|&(_, n)| n)
            .sum();
        // Whatever our modem held at the end went out from a turnaround later at the
        // latest, if it held anything at all (if it held nothing, the upper bound's figure
        // was drain not yet confirmed): counted up to now.
        let written_since: f64 = self
            .writes
            .iter()
            .filter(|&&(w, _)| w >= end_early)
            .map(|&(_, n)| n)
            .sum();
        let at_end = (self.queued - written_since).max(0.0);
        self.queued -= self.drain_hi(start_late, now).min(at_end);
        // From when our later writes surely go out: the modem took the turn a turnaround
        // after the end if it held data written while the other side held the turn;
        // else a turnaround after the first write since the end; else it may still be
        // on the other side's modem, until a turnaround after our next write.
        let (certain, turn_pending) = if secured + before_end > EPS {
            (start_late, false)
        } else if let Some(w) = first_after {
            (start_late.max(w + h.turnaround), false)
        } else {
            (start_late, true)
        };
        self.pending.clear();
        self.pending_sum = 0.0;
        self.queued = self.queued.max(lo);
        self.lo = lo.min(self.queued);
        if self.lo <= EPS {
            self.lo_empty_at = now;
        }
        self.holds_turn = true;
        self.turn_asked = false;
        self.mine = Some(Mine {
            start: start_early,
            certain: certain.max(now),
            over_from: start_early,
            drained: 0.0,
            turn_pending,
        });
        let answered = match self.token {
            Token::Passed { seq, at, .. } if answers && m.heard == seq => Some(at),
            _ => None,
        };
        self.token = Token::Held {
            since: now.max(start_late),
            idle: m.idle,
        };
        // Its stream goes on until then: hearing it is no sign that the model is wrong.
        let heard_all = end_late + h.latency + self.chunk_time(&h) + self.margin;
        self.expect_until = Some(heard_all);
        self.answered = answered.map(|over_ended| Answered {
            over_ended,
            all_in: heard_all,
            idle: m.idle,
        });
        tracing::trace!(t = ?now, ?m, lo, queued = self.queued, "modem pacer: the other side passed us the turn");
    }

    /// `n` bytes were written to the device.
    pub fn wrote(&mut self, now: T, n: usize) {
        self.advance(now);
        if let (Some(h), Token::Held { .. }, Some(m)) = (self.half, self.token, self.mine.as_mut())
            && self.lo <= EPS
        {
            // The modem may have run dry: it still holds the turn (the other side writes
            // nothing) and sends again at once; but if it has been empty since the turn
            // came, the turn is still on the other side's modem, and comes over a
            // turnaround after this write.
            m.start = m.start.max(now);
            if m.turn_pending {
                m.turn_pending = false;
                m.certain = m.certain.max(now + h.turnaround);
            }
        }
        if let Some(h) = self.half {
            if self.mine.is_none() && self.lo <= EPS {
                self.refill_at = Some(now);
                if !self.holds_turn && !self.turn_asked {
                    // Maybe idle, and the other side may hold the turn (idle, after it
                    // was heard): the modem turns round first.
                    self.credit_from = self.credit_from.max(now + h.turnaround);
                    self.turn_asked = true;
                }
            }
            if self.writes.len() >= MAX_WRITES {
                // Forgetting a write only lowers the lower bound (and stops the cap
                // below from counting it).
                if let Some((w, _)) = self.writes.pop_front() {
                    self.writes_forgot = self.writes_forgot.max(w);
                }
            }
            self.writes.push_back((now, n as f64 + self.per_write));
        }
        self.queued += n as f64 + self.per_write;
        self.lo += n as f64 + self.per_write;
        self.wrote_at = Some(now);
        self.held_after_write = self.queued;
    }

    /// Bytes arrived from the other side (half duplex: it held the channel a latency
    /// ago). Drain booked for the time it may have held it is revoked.
    pub fn received(&mut self, now: T) {
        self.advance(now);
        let Some(h) = self.half else {
            return;
        };
        // The other side's chunk was on the air in [now - latency - chunk, now - latency];
        // ours could not be then, nor while the turn went over and back.
        let lo = now
            .checked_sub_duration(h.latency + self.chunk_time(&h) + h.turnaround + self.margin)
            .map_or(self.origin, |t| t.max(self.origin));
        let expected = self.expect_until.is_some_and(|t| now <= t);
        self.reanswer = false;
        if std::mem::take(&mut self.repeat_now) {
            // More after its copy: it was not waiting for our answer (it holds the
            // turn, or gave up waiting), so the answer is not said into its stream; if
            // the answer was lost after all, the usual wait brings it again.
            tracing::trace!(t = ?now, "modem pacer: the other side goes on after its copy; no repeat at once");
        }
        match self.token {
            Token::Held { .. } if !expected => {
                // The other side writes though it passed us the turn (its announcement
                // was older than we took it for, or it gave up waiting): no agreement.
                tracing::debug!(
                    "modem pacer: the other side was heard after it passed us the turn"
                );
                self.token = Token::Unknown;
            }
            Token::Passed {
                seq,
                rank,
                at,
                deadline,
                last,
            } => {
                // It still holds the turn: its answer comes after this (within its
                // longest hold: a side that never stops talking does not keep us silent).
                self.token = Token::Passed {
                    seq,
                    rank,
                    at,
                    deadline: deadline.max(now + self.pass_timeout()).min(last),
                    last,
                };
            }
            _ => {}
        }
        if expected {
            // The rest of an over whose end was announced: our modem takes the turn after it.
        } else if matches!(self.token, Token::Passed { .. }) {
            // Our announced over went out and the other side took the turn: our modem
            // is dry (what it was known to send is counted; the new stream caps the rest).
            self.mine = None;
        } else if let Some(m) = self.mine.take() {
            // Our modem was believed to hold the turn: the model was wrong (a slower
            // modem, lost chunks read as the end of a stream). Drain counted since it may
            // have lost the turn is revoked.
            let from = lo.max(m.start);
            self.queued += self.drain_lo(from, now).min(m.drained);
            self.lo = 0.0;
            self.lo_empty_at = now;
            tracing::debug!("modem pacer: the other side was heard while our modem held the turn");
        }
        self.holds_turn = false;
        self.turn_asked = false;
        self.heard_at = Some(now);
        // The latest its last chunk may have left the air: a least latency ago.
        let mut hi = now
            .checked_sub_duration(Self::latency_min(&h))
            .unwrap_or(self.origin)
            .max(lo)
            + h.turnaround
            + self.margin;
        // A refill while the other side may have held the turn (sending, or idle after
        // its last chunk, not yet heard): our modem sent only a turnaround after it.
        if let Some(x) = self.refill_at.filter(|&x| x >= lo) {
            hi = hi.max(x + h.turnaround + self.margin);
        }
        let before = self.pending.len();
        self.pending.retain(|c| c.end <= lo || c.start >= hi);
        if self.pending.len() != before {
            self.pending_sum = self.pending.iter().map(|c| c.bytes).sum();
        }
        // Our modem gets the turn back only after the other side stops and turns round.
        self.credit_from = self.credit_from.max(now.max(hi));
        // The other side's stream: its modem held the turn from a (least) latency before
        // its first byte arrived until a (longest) latency before its last.
        let run = match self.run {
            Some(mut r) => {
                r.last = now;
                r
            }
            None => {
                self.cap_after_handover(now, &h);
                // The stream's first chunk was on the air by `now - latency_min`. Had our
                // modem held the turn (with data) at a write, the other side could only
                // have started a turnaround after our modem ran dry: writes later than
                // that less a turnaround were still in our modem when the stream began.
                // Earlier ones may have been sent before it.
                if let Some(from) = now.checked_sub_duration(Self::latency_min(&h) + h.turnaround) {
                    while self.writes.front().is_some_and(|&(w, _)| w <= from) {
                        self.writes.pop_front();
                    }
                }
                Run {
                    first: now,
                    last: now,
                    announced: false,
                    secured: 0.0,
                }
            }
        };
        self.run = Some(run);
        if let (Some(r), Some(upto)) = (
            self.run.as_mut(),
            now.checked_sub_duration(h.latency + self.margin),
        ) {
            while let Some(&(w, n)) = self.writes.front() {
                if w > upto {
                    break;
                }
                self.writes.pop_front();
                r.secured += n;
            }
        }
        self.settle();
    }

    /// A new stream of the other side began after our modem certainly held the turn: our
    /// modem (which keeps the turn while it has data) ran dry when the turn went over, a
    /// turnaround before that stream's first chunk. All it can hold now is what was
    /// written since. Without this, drain the estimate could not confirm (revoked by the
    /// other side's stream) would stay in the upper bound for good, and shrink the room
    /// over after over.
    fn cap_after_handover(&mut self, now: T, h: &HalfDuplex) {
        let Some(held) = self.held_at.take() else {
            return;
        };
        if h.max_over.is_some() {
            // (A modem with a longest over hands the turn over with data left.)
            return;
        }
        let Some(first_aired) =
            now.checked_sub_duration(h.latency + self.margin + self.chunk_time(h))
        else {
            return;
        };
        // The other side could not send while our modem held the turn: this stream began
        // after `held` only if its first chunk did.
        if first_aired <= held {
            return;
        }
        let dry_by = first_aired
            .checked_sub_duration(h.turnaround)
            .map_or(held, |t| t.max(held));
        if self.writes_forgot >= dry_by {
            return;
        }
        let cap: f64 = self
            .writes
            .iter()
            .filter(|&&(w, _)| w >= dry_by)
            .map(|&(_, n)| n)
            .sum();
        if cap + EPS < self.queued {
            tracing::trace!(t = ?now, queued = self.queued, cap, "modem pacer: our modem ran dry when the turn went over");
            self.queued = cap;
            // Drain booked but not confirmed is in the cap already.
            self.pending.clear();
            self.pending_sum = 0.0;
            self.settle();
        }
    }

    /// The shared channel carried someone else's `n` bytes (airtime included): our
    /// device, if it had anything queued, waited that long.
    pub fn channel_busy(&mut self, now: T, n: usize) {
        self.advance(now);
        if self.queued > 0.0 {
            self.queued += n as f64;
        }
    }

    /// A radio reported `used` bytes in its buffer.
    pub fn observe_used(&mut self, now: T, used: usize) {
        self.advance(now);
        self.queued = self.queued.max(used as f64);
    }

    /// A modem reported holding exactly `queued` bytes (full duplex: the estimate is
    /// replaced, up or down; see [`crate::credit`]).
    pub fn observe_queued(&mut self, now: T, queued: usize) {
        self.advance(now);
        self.queued = queued as f64;
        self.lo = self.lo.min(self.queued);
    }

    /// The rate the device drains at, as measured (bytes per second).
    pub fn set_rate(&mut self, now: T, rate: f64) {
        self.advance(now);
        if rate.is_finite() {
            self.rate = rate.max(1.0);
        }
    }

    /// Bytes per second the estimate drains at.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The device lost what it held (a dropped call, a reopened port).
    pub fn reset(&mut self, now: T) {
        self.queued = 0.0;
        self.pending.clear();
        self.pending_sum = 0.0;
        self.last = now;
        self.credit_from = now;
        self.holds_turn = self.half.is_none();
        self.turn_asked = false;
        self.refill_at = None;
        self.lo = 0.0;
        self.lo_empty_at = now;
        self.confirmed_to = now;
        self.mine = None;
        self.run = None;
        self.writes.clear();
        self.heard_at = None;
        self.origin = now;
        self.expect_until = None;
        self.held_at = None;
        self.writes_forgot = now;
        self.token = Token::Unknown;
        self.their_seq = 0;
        self.announce_ok = true;
        self.said = None;
        self.answered = None;
        self.wrote_at = None;
        self.held_after_write = 0.0;
        self.repeats = 0;
        self.repeat_now = false;
        self.reanswer = false;
    }

    /// Bytes that may be written now.
    pub fn room(&self) -> usize {
        self.whole_writes(self.room_any())
    }

    /// `room` bytes the estimate allows, as [`Pacer::room`] offers them: none short of a
    /// write's worth unless the modem is running dry.
    fn whole_writes(&self, room: usize) -> usize {
        let Some(h) = self.half else {
            return room;
        };
        let unit = self.unit.min(h.buffer.saturating_sub(h.chunk));
        // While our modem holds the turn, a smaller write keeps it from running dry (and
        // the turn from going over); otherwise waiting for room costs no airtime.
        // (With the turn passed to us, a modem that runs dry keeps it: a whole frame is
        // worth the wait.)
        let running_dry = self.mine.is_some()
            && self.lo < unit as f64
            && !matches!(self.token, Token::Held { .. });
        if room < unit && !running_dry { 0 } else { room }
    }

    /// Bytes that may be written now where a write costs nothing of its own (the rest of
    /// a frame begun, a frame larger than the room): any room of a chunk or more, so
    /// that the modem is topped up while it still holds data, else [`Pacer::room`] (a
    /// few bytes into a modem run dry would go on the air as a chunk of their own).
    pub fn room_for_bytes(&self) -> usize {
        let any = self.room_any();
        match self.half {
            Some(h) if any < h.chunk => self.whole_writes(any),
            _ => any,
        }
    }

    /// Whether nothing was announced yet on this call (its first over).
    pub fn announced_nothing(&self) -> bool {
        self.said.is_none()
    }

    /// Bytes the estimate allows written now, however few.
    pub fn room_any(&self) -> usize {
        let Some(h) = self.half else {
            let room = self.limit - self.queued - self.per_write;
            return room.max(0.0).floor() as usize;
        };
        let (expected, limit) = match self.mine {
            // Sending: a few frames ahead of the modem.
            Some(_) => (self.lo, self.limit),
            // Waiting for the turn, or not knowing: enough to bridge the time until we
            // know that the turn came to us.
            None => (
                (self.queued - self.pending_sum).max(0.0),
                self.limit_waiting,
            ),
        };
        // One chunk of slack for rate error.
        let safe = h.buffer.saturating_sub(h.chunk) as f64;
        (limit - expected - self.per_write)
            .min(safe - self.queued)
            .max(0.0)
            .floor() as usize
    }

    /// Bytes estimated in the device now, pessimistically.
    pub fn queued(&self) -> usize {
        self.queued.ceil() as usize
    }

    /// Whether our modem is known to hold the turn (half duplex).
    #[cfg(test)]
    fn sending(&self) -> bool {
        self.mine.is_some()
    }

    /// The estimate's state, for logs and test failures.
    pub fn describe(&self) -> String {
        format!(
            "U {:.0} pending {:.0} ({}) lo {:.0} mine {:?} holds {} run {:?} token {:?}",
            self.queued,
            self.pending_sum,
            self.pending.len(),
            self.lo,
            self.mine.map(|m| (m.start, m.certain)),
            self.holds_turn,
            self.run.map(|r| r.secured),
            self.token,
        )
    }

    /// Whether the estimate is still changing (so `room` should be checked again soon).
    pub fn busy(&self) -> bool {
        self.queued > 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn full_duplex_drains_at_the_rate() {
        let t0 = Instant::now();
        let mut p = Pacer::full(t0, 1000.0, 0, 500);
        assert_eq!(p.room(), 500);
        p.wrote(t0, 400);
        assert_eq!(p.room(), 100);
        p.advance(t0 + ms(200));
        assert_eq!(p.queued(), 200);
        assert_eq!(p.room(), 300);
        p.advance(t0 + ms(1000));
        assert_eq!(p.queued(), 0);
        assert!(!p.busy());
    }

    #[test]
    fn per_write_airtime_counts() {
        let t0 = Instant::now();
        let mut p = Pacer::full(t0, 1000.0, 8, 600);
        p.wrote(t0, 100);
        p.wrote(t0, 100);
        assert_eq!(p.queued(), 216);
        // Room leaves space for the next write's preamble too.
        assert_eq!(p.room(), 600 - 216 - 8);
    }

    #[test]
    fn another_senders_airtime_delays_ours() {
        let t0 = Instant::now();
        let mut p = Pacer::full(t0, 1000.0, 0, 500);
        p.channel_busy(t0, 300);
        assert_eq!(p.queued(), 0);
        p.wrote(t0, 100);
        p.channel_busy(t0, 300);
        assert_eq!(p.queued(), 400);
    }

    #[test]
    fn radio_report_raises_the_estimate() {
        let t0 = Instant::now();
        let mut p = Pacer::full(t0, 1000.0, 0, 500);
        p.observe_used(t0, 450);
        assert_eq!(p.room(), 50);
        p.observe_used(t0, 10);
        assert_eq!(p.queued(), 450);
    }

    fn hf() -> HalfDuplex {
        HalfDuplex {
            latency: ms(4000),
            jitter: Duration::ZERO,
            turnaround: ms(2000),
            buffer: 1024,
            chunk: 64,
            max_over: None,
        }
    }

    fn marker(seq: u8, heard: u8, rank: u16, idle: bool) -> OverEnd {
        OverEnd {
            after: 0,
            seq,
            heard,
            rank,
            idle,
        }
    }

    /// The other side's stream, heard from `from` to `to` (a chunk every 350 ms).
    fn hear(p: &mut Pacer<Instant>, from: Instant, to: Instant) {
        let mut t = from;
        while t <= to {
            p.received(t);
            t += ms(350);
        }
    }

    #[test]
    fn an_announcement_passes_the_turn_and_its_drain_is_certain() {
        let t0 = Instant::now();
        let mut p = Pacer::half(t0, 184.0, 508, hf()).with_seed(7);
        // The other side's over: we write while it holds the turn.
        hear(&mut p, t0 + ms(4000), t0 + ms(9000));
        p.wrote(t0 + ms(5000), 300);
        // Its announcement arrives with the last chunk: the turn is ours a turnaround
        // after that chunk left the air (4 s ago), and the driver may write again.
        p.over_end(t0 + ms(9000), marker(1, 0, 10, false));
        assert!(p.holding());
        assert!(p.hearing(t0 + ms(9000)));
        // Our modem sends from 7 s on: by 11 s, 4 s at 184 B/s (less 1%) have gone.
        p.advance(t0 + ms(11_000));
        assert_eq!(p.queued(), 0);
        // It keeps the turn when it runs dry (the other side writes nothing), so a
        // write is counted from at once.
        p.wrote(t0 + ms(11_000), 400);
        p.advance(t0 + ms(12_000));
        assert_eq!(p.queued(), 400 - 182);
        assert!(p.holding());
    }

    /// The other side took the turn (its over 1 passed it to us) and we passed it back
    /// with ours at 11 s: its answer can arrive from 21 s (a latency, a turnaround and a
    /// latency later).
    fn turn_passed_back(t0: Instant) -> (Pacer<Instant>, OverEnd) {
        let mut p = Pacer::half(t0, 184.0, 508, hf()).with_seed(7);
        hear(&mut p, t0 + ms(4000), t0 + ms(9000));
        p.over_end(t0 + ms(9000), marker(1, 0, 10, false));
        p.wrote(t0 + ms(10_000), 100);
        let ours = p.announce(t0 + ms(11_000), 0, false);
        let _ = p.take_answered();
        (p, ours)
    }

    #[test]
    fn an_answer_ending_unannounced_passes_the_turn() {
        let t0 = Instant::now();
        let (mut p, ours) = turn_passed_back(t0);
        // Its over answering ours, whose announcement was lost with its last chunk.
        hear(&mut p, t0 + ms(21_000), t0 + ms(25_000));
        // A pause as long as its driver may wait to confirm drain (a latency and a
        // turnaround) and a burst of three lost chunks does not end it.
        p.advance(t0 + ms(25_200 + 6000 + 1100));
        assert!(!p.holding() && !p.may_take());
        // That and four chunks' silence (348 ms each, and the host's delay) does.
        p.advance(t0 + ms(25_200 + 6000 + 1600));
        assert!(p.holding() && p.may_take(), "the turn is ours");
        assert_eq!(p.unannounced_ends, 1);
        // Not an answer to read our over's losses from (the lost chunk may have held
        // the other side's report).
        assert_eq!(p.take_answered(), None);
        // Our next over answers its over 2 (the count it gave that over), so the other
        // side, waiting for an answer to it, takes the turn as usual.
        p.wrote(t0 + ms(33_000), 50);
        let next = p.announce(t0 + ms(33_000), 0, false);
        assert_eq!((next.heard, next.seq), (2, ours.seq + 1));
        // Had its announcement arrived after all (late), it is a copy: no change.
        p.over_end(t0 + ms(33_100), marker(2, ours.seq, 10, false));
        assert!(!p.may_take());
    }

    #[test]
    fn an_unannounced_end_is_not_taken_from_a_crossing_a_copy_or_a_pause() {
        let t0 = Instant::now();
        // A stream that began before the other side could have heard ours is not its
        // answer (it may be waiting for ours to arrive).
        let (mut p, _) = turn_passed_back(t0);
        hear(&mut p, t0 + ms(15_000), t0 + ms(16_000));
        p.advance(t0 + ms(24_000));
        assert!(!p.holding() && !p.may_take());
        // A stream carrying a copy of its last announcement is its repeat (it never
        // heard our answer): the usual answer to a copy, not a turn taken.
        let (mut p, _) = turn_passed_back(t0);
        hear(&mut p, t0 + ms(21_000), t0 + ms(21_000));
        p.over_end(t0 + ms(21_000), marker(1, 0, 10, false));
        p.advance(t0 + ms(29_000));
        assert!(!p.holding() && !p.may_take());
        assert_eq!(p.unannounced_ends, 0);
        // A stream that pauses (a burst of lost chunks) and goes on is still its over;
        // its announcement then passes the turn with the other side's own count.
        let (mut p, _) = turn_passed_back(t0);
        hear(&mut p, t0 + ms(21_000), t0 + ms(23_000));
        p.advance(t0 + ms(23_100 + 7000));
        hear(&mut p, t0 + ms(30_200), t0 + ms(32_000));
        assert!(!p.holding());
        p.over_end(t0 + ms(32_000), marker(2, 1, 10, false));
        assert!(p.holding());
        assert!(p.take_answered().is_some(), "a heard answer");
        assert_eq!(p.unannounced_ends, 0);
    }

    #[test]
    fn crossing_announcements_give_the_turn_to_the_higher_rank() {
        for (ours_wins, their_rank) in [(true, 0), (false, u16::MAX)] {
            let t0 = Instant::now();
            let mut p = Pacer::half(t0, 184.0, 508, hf()).with_seed(7);
            let ours = p.announce(t0, 0, false);
            assert!(!p.may_take(), "silent after announcing");
            hear(&mut p, t0 + ms(4000), t0 + ms(5000));
            // The other side announced before it heard ours (heard 0).
            p.over_end(t0 + ms(5000), marker(1, 0, their_rank, false));
            assert_eq!(p.holding(), ours_wins, "rank {} vs {their_rank}", ours.rank);
            assert_eq!(p.may_take(), ours_wins);
            if !ours_wins {
                // Its next announcement answers ours: then the turn is ours.
                hear(&mut p, t0 + ms(9000), t0 + ms(12_000));
                p.over_end(t0 + ms(12_000), marker(2, ours.seq, their_rank, false));
                assert!(p.holding());
                // A repeat of an announcement already taken changes nothing.
                p.over_end(t0 + ms(12_100), marker(2, ours.seq, their_rank, false));
                assert!(p.holding());
            }
        }
    }

    #[test]
    fn an_unanswered_announcement_frees_the_driver_after_the_longest_hold() {
        let t0 = Instant::now();
        let mut p = Pacer::half(t0, 184.0, 508, hf()).with_seed(7);
        p.announce(t0, 0, false);
        p.advance(t0 + HOLD_MAX);
        assert!(!p.may_take(), "the other side may still hold the turn");
        p.advance(t0 + HOLD_MAX * 2 + ms(60_000));
        assert!(p.may_take() && !p.waits_for_turn());
    }

    /// Polls `repeat_due` every 100 ms from `from` to `to` (after `advance`, as
    /// `ModemTx` does), writing each repeat: when each came.
    fn repeats(p: &mut Pacer<Instant>, from: Instant, to: Instant) -> Vec<(Instant, OverEnd)> {
        let mut out = Vec::new();
        let mut t = from;
        while t <= to {
            p.advance(t);
            if let Some(m) = p.repeat_due(t) {
                p.wrote(t, 9);
                out.push((t, m));
            }
            t += ms(100);
        }
        out
    }

    #[test]
    fn a_lost_announcement_is_said_again_later_each_time_until_the_longest_wait() {
        let t0 = Instant::now();
        let mut p = Pacer::half(t0, 184.0, 508, hf()).with_seed(7);
        let ours = p.announce(t0, 40, false);
        p.wrote(t0, 60);
        let wait = p.answer_wait_after_write();
        // Its answer may take this long: nothing before.
        assert!(repeats(&mut p, t0, t0 + wait - ms(100)).is_empty());
        let longest = p.pass_timeout() * 2;
        let got = repeats(&mut p, t0 + wait, t0 + longest);
        assert!(got.len() >= 2, "{got:?}");
        assert!(got[0].0 <= t0 + wait.mul_f64(1.5) + ms(100), "{got:?}");
        for (i, (_, m)) in got.iter().enumerate() {
            // The same announcement (a side that heard it ignores the copy), with nothing
            // after it: the over ended long ago.
            assert_eq!(
                (m.seq, m.heard, m.rank, m.after),
                (ours.seq, ours.heard, ours.rank, 0)
            );
            if i > 0 {
                let gap = got[i].0 - got[i - 1].0;
                let before = if i > 1 {
                    got[i - 1].0 - got[i - 2].0
                } else {
                    wait
                };
                assert!(gap >= before.mul_f64(1.3), "no backoff: {got:?}");
            }
        }
        // None after the longest wait (the turn is no one's then).
        let deadline = t0 + p.pass_timeout();
        assert!(got.iter().all(|(t, _)| *t < deadline), "{got:?}");
        assert!(p.may_take(), "the longest wait ran out");
        assert!(p.repeat_due(t0 + p.pass_timeout() * 4).is_none());
    }

    #[test]
    fn a_lost_announcement_after_a_short_over_is_not_waited_for_as_long_as_a_full_buffer() {
        // A large modem buffer (8 KiB: 44 s at 184 B/s) and a short over (60 B): the
        // answer can come once those 60 B, the announcement and two turnarounds and
        // latencies are through, and the repeat comes then, not after 44 s more.
        let t0 = Instant::now();
        let mut p = Pacer::half(
            t0,
            184.0,
            508,
            HalfDuplex {
                buffer: 8192,
                ..hf()
            },
        )
        .with_seed(7);
        p.announce(t0, 40, false);
        p.wrote(t0, 60);
        let (short, full) = (p.answer_wait_after_write(), p.answer_wait());
        assert!(full > short + Duration::from_secs(40), "{short:?} {full:?}");
        assert!(repeats(&mut p, t0, t0 + short - ms(100)).is_empty());
        let got = repeats(&mut p, t0 + short - ms(100), t0 + full);
        assert!(
            got.first()
                .is_some_and(|(t, _)| *t <= t0 + short.mul_f64(1.5) + ms(100)),
            "first repeat {:?} after the write",
            got.first().map(|(t, _)| *t - t0)
        );
    }

    #[test]
    fn hearing_the_other_side_puts_a_repeat_off() {
        let t0 = Instant::now();
        let mut p = Pacer::half(t0, 184.0, 508, hf()).with_seed(7);
        p.announce(t0, 0, false);
        p.wrote(t0, 9);
        let wait = p.answer_wait_after_write();
        // It still holds the turn (our announcement crossed its over): it is heard.
        hear(&mut p, t0 + ms(4000), t0 + wait);
        assert!(repeats(&mut p, t0, t0 + wait * 2 - ms(500)).is_empty());
    }

    #[test]
    fn a_copy_of_what_we_answered_brings_our_answer_again_when_its_stream_ends() {
        let t0 = Instant::now();
        let mut p = Pacer::half(t0, 184.0, 508, hf()).with_seed(7);
        hear(&mut p, t0 + ms(4000), t0 + ms(6000));
        p.over_end(t0 + ms(6000), marker(1, 0, 10, false));
        assert!(p.holding());
        let answer = p.announce(t0 + ms(12_000), 0, true);
        assert_eq!(answer.heard, 1);
        p.wrote(t0 + ms(12_000), 9);
        // Its copy of announcement 1, still naming none of ours: our answer was lost.
        let copy = t0 + ms(13_000) + p.answer_wait();
        p.received(copy);
        p.over_end(copy, marker(1, 0, 10, false));
        // Not while its stream may go on (it may hold the turn after all: the copy was
        // written before it heard ours)...
        assert!(p.repeat_due(copy).is_none());
        // ...but as soon as it has ended.
        let end = copy + p.gap(&hf());
        p.advance(end);
        let again = p.repeat_due(end).expect("our answer again");
        assert_eq!((again.seq, again.heard, again.idle), (answer.seq, 1, true));
        // Once: the next waits for the answer again.
        p.wrote(end, 9);
        assert!(p.repeat_due(end + ms(1000)).is_none());
    }

    /// The other side's over (4-6 s) passed us the turn (its announcement 1); we
    /// passed it back at 12 s (9 bytes written), and wait for its answer.
    fn passed_back(t0: Instant, seed: u64) -> Pacer<Instant> {
        let mut p = Pacer::half(t0, 184.0, 508, hf()).with_seed(seed);
        hear(&mut p, t0 + ms(4000), t0 + ms(6000));
        p.over_end(t0 + ms(6000), marker(1, 0, 10, false));
        p.announce(t0 + ms(12_000), 0, false);
        p.wrote(t0 + ms(12_000), 9);
        p
    }

    #[test]
    fn an_answer_to_our_over_says_when_that_over_ended_and_when_the_answer_is_all_in() {
        let t0 = Instant::now();
        let mut p = passed_back(t0, 7);
        let ours = p.said.expect("announced");
        assert_eq!(p.take_answered(), None);
        // A copy of its announcement 1 answers nothing.
        p.received(t0 + ms(16_000));
        p.over_end(t0 + ms(16_000), marker(1, 0, 10, false));
        assert_eq!(p.take_answered(), None);
        // Its over 2, naming ours, 200 bytes still behind the announcement.
        p.received(t0 + ms(20_000));
        let mut m = marker(2, ours.seq, 10, false);
        m.after = 200;
        p.over_end(t0 + ms(20_000), m);
        assert!(p.holding());
        let a = p.take_answered().expect("an answer to our over");
        assert!(!a.idle);
        assert_eq!(a.over_ended, t0 + ms(12_000));
        let all_in = a.all_in;
        // The 200 bytes (1.1 s at 184 B/s) and a latency are still to come.
        assert!(all_in >= t0 + ms(20_000) + ms(1000), "{:?}", all_in - t0);
        assert!(all_in <= t0 + ms(20_000) + ms(7000), "{:?}", all_in - t0);
        // Once.
        assert_eq!(p.take_answered(), None);
    }

    #[test]
    fn an_over_that_did_not_hear_ours_answers_nothing() {
        let t0 = Instant::now();
        let mut p = passed_back(t0, 7);
        let ours = p.said.expect("announced");
        // Its over 2 crossed ours (it names its last heard, not ours) and ranks higher:
        // it takes the turn, and we wait for its answer to ours.
        p.received(t0 + ms(14_000));
        p.over_end(t0 + ms(14_000), marker(2, ours.seq - 1, u16::MAX, false));
        assert_eq!(p.take_answered(), None);
    }

    #[test]
    fn a_copy_followed_by_a_stream_brings_no_answer_into_that_stream() {
        let t0 = Instant::now();
        let mut p = passed_back(t0, 7);
        // Its copy of announcement 1 (written before ours reached it), then its over:
        // it holds the turn, and a repeat of ours would only contend for it.
        p.received(t0 + ms(20_000));
        p.over_end(t0 + ms(20_000), marker(1, 0, 10, false));
        // Its over comes with holes (lost chunks) longer than a stream's gap.
        assert!(p.gap(&hf()) < ms(2000));
        let mut t = t0 + ms(20_000);
        while t <= t0 + ms(40_000) {
            if (t - t0).as_millis() % 3000 < 1000 {
                p.received(t);
            }
            p.advance(t);
            assert!(
                p.repeat_due(t).is_none(),
                "a repeat went into its stream at {:?}",
                t - t0
            );
            t += ms(100);
        }
    }

    #[test]
    fn a_copy_that_crossed_our_answer_brings_no_repeat_before_its_reply_could_come() {
        let t0 = Instant::now();
        let mut p = passed_back(t0, 7);
        // Its copy, on the air while ours crossed to it: its reply to ours (its over)
        // arrives up to an answer's wait after our write, and nothing is said before.
        p.received(t0 + ms(16_500));
        p.over_end(t0 + ms(16_500), marker(1, 0, 10, false));
        let reply_by = t0 + ms(12_000) + p.answer_wait();
        let got = repeats(&mut p, t0 + ms(16_500), reply_by + ms(200));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].0 >= reply_by,
            "repeated {:?} early",
            reply_by - got[0].0
        );
    }

    #[test]
    fn every_repeat_leaves_time_for_its_answer_and_a_whole_over() {
        for seed in 1..=20 {
            let t0 = Instant::now();
            let fresh = || passed_back(t0, seed);
            // Nothing heard: every repeat, the last one too, gets its answer's wait.
            let mut p = fresh();
            let mut t = t0 + ms(12_000);
            let mut got = Vec::new();
            while !p.may_take() {
                got.extend(repeats(&mut p, t, t));
                t += ms(100);
            }
            let last = got.last().expect("at least one repeat").0;
            assert!(
                t >= last + p.answer_wait(),
                "seed {seed}: gave up {:?} after the last repeat ({got:?})",
                t - last
            );
            // The last repeat is heard: the other side takes the turn then and holds it
            // for its longest over, heard throughout.
            let mut p = fresh();
            let mut t = t0 + ms(12_000);
            while t <= last {
                repeats(&mut p, t, t);
                t += ms(100);
            }
            let taken = last + hf().latency;
            let mut t = taken + hf().latency;
            while t < taken + p.hold_max() {
                p.received(t);
                assert!(
                    !p.may_take(),
                    "seed {seed}: gave up {:?} into its over",
                    t - taken
                );
                t += ms(350);
            }
        }
    }

    #[test]
    fn a_side_that_never_announces_turns_announcements_off() {
        let t0 = Instant::now();
        let mut p = Pacer::half(t0, 184.0, 508, hf()).with_seed(7);
        p.announce(t0, 0, false);
        // It talks on and on (an older version, which does not know of the silence):
        // hearing it puts our deadline off, but not for ever.
        hear(&mut p, t0 + ms(4000), t0 + HOLD_MAX * 6);
        assert!(p.may_take());
        assert!(!p.announces(), "no announcement was ever heard from it");
        // One heard turns them back on.
        p.over_end(t0 + HOLD_MAX * 6, marker(1, 0, 10, false));
        assert!(p.announces() && p.holding());
    }

    #[test]
    fn two_idle_overs_leave_the_turn_to_no_one() {
        let t0 = Instant::now();
        let mut p = Pacer::half(t0, 184.0, 508, hf()).with_seed(7);
        hear(&mut p, t0 + ms(4000), t0 + ms(4000));
        p.over_end(t0 + ms(4000), marker(1, 0, 10, true));
        assert!(p.holding());
        p.advance(t0 + ms(9000));
        // Nothing to send either: the answer says so, and the turn is no one's.
        let m = p.announce(t0 + ms(9000), 0, true);
        assert!(m.idle && m.heard == 1);
        assert!(p.may_take() && !p.waits_for_turn());
    }

    #[test]
    fn an_idle_answer_the_other_side_never_heard_is_said_again() {
        let t0 = Instant::now();
        let mut p = Pacer::half(t0, 184.0, 508, hf()).with_seed(7);
        hear(&mut p, t0 + ms(4000), t0 + ms(4000));
        p.over_end(t0 + ms(4000), marker(1, 0, 10, true));
        let ours = p.announce(t0 + ms(9000), 0, true);
        p.wrote(t0 + ms(9000), 9);
        assert!(p.reanswer_due().is_none());
        // Its copy, still naming none of ours: our idle answer was lost.
        let copy = t0 + ms(40_000);
        p.received(copy);
        p.over_end(copy, marker(1, 0, 10, true));
        assert!(p.reanswer_due().is_none(), "not while its stream may go on");
        p.advance(copy + p.gap(&hf()));
        let again = p.reanswer_due().expect("our idle answer again");
        assert_eq!((again.seq, again.heard, again.idle), (ours.seq, 1, true));
        assert!(p.reanswer_due().is_none(), "once");
        assert!(
            p.may_take() && !p.waits_for_turn(),
            "the turn stays no one's"
        );
        // A copy that names our answer asks for nothing.
        p.received(copy + ms(20_000));
        p.over_end(copy + ms(20_000), marker(1, ours.seq, 10, true));
        p.advance(copy + ms(25_000));
        assert!(p.reanswer_due().is_none());
    }

    #[test]
    fn hearing_the_other_side_after_it_passed_the_turn_ends_the_agreement() {
        let t0 = Instant::now();
        let mut p = Pacer::half(t0, 184.0, 508, hf()).with_seed(7);
        hear(&mut p, t0 + ms(4000), t0 + ms(6000));
        p.wrote(t0 + ms(4500), 200);
        p.over_end(t0 + ms(6000), marker(1, 0, 10, false));
        assert!(p.holding());
        // Its stream goes on well past the announced end: it did not stop.
        hear(&mut p, t0 + ms(6350), t0 + ms(12_000));
        assert!(!p.holding() && !p.waits_for_turn());
        assert!(
            p.queued() > 0,
            "drain counted while it held the turn is not kept"
        );
    }

    #[test]
    fn half_duplex_confirms_drain_only_after_the_window() {
        let t0 = Instant::now();
        let mut p = Pacer::half(t0, 184.0, 508, hf());
        // Fresh call: the other side may hold the turn, so the first turnaround is dead.
        p.wrote(t0, 500);
        p.advance(t0 + ms(2000));
        assert_eq!(p.queued(), 500);
        p.advance(t0 + ms(3000));
        // 182 bytes (a second, less 1% for rate error) drained, pending: the safe bound
        // (960 B) does not grow.
        assert_eq!(p.room(), 960 - 500);
        assert_eq!(p.queued(), 500);
        // Latency + turnaround + chunk + margin (about 7 s) later, it is confirmed.
        p.advance(t0 + ms(3000 + 7010));
        assert_eq!(p.queued(), 318);
        assert!(
            !p.sending(),
            "the modem may have run dry: the turn is not known"
        );
        p.advance(t0 + ms(20_000));
        assert_eq!(p.queued(), 0);
    }

    #[test]
    fn the_other_side_holding_the_channel_revokes_drain() {
        let t0 = Instant::now() + ms(60_000);
        let run = |heard: bool| {
            let mut p = Pacer::half(t0, 184.0, 508, hf());
            p.wrote(t0, 500);
            p.advance(t0 + ms(5000));
            if heard {
                // The other side's data: it held the channel from about t0 + 1 s.
                p.received(t0 + ms(5000));
            }
            p.advance(t0 + ms(12_000));
            p.queued()
        };
        assert_eq!(run(false), 0);
        assert_eq!(run(true), 500);
    }

    /// Two modems on one half-duplex channel, as the simulator's stream model runs them
    /// (the holder keeps the turn while it has data, or until its longest over if the
    /// other has data; turnaround on a change; chunks of `h.chunk` bytes at exact times;
    /// delivery a latency, less up to twice the jitter, after the chunk), each side
    /// writing whatever its pacer allows (up to a frame) when `writes(side, t, bytes
    /// written since it last heard the other)` says it has data, and with `reports` a
    /// small frame whenever it heard something. Returns the bytes each side delivered,
    /// or the overrun with the last events. Debugging: `PACER_LOG=1` prints the events
    /// (with `--nocapture`), `PACER_CASE=N` runs one case of the random test.
    fn channel(
        h: HalfDuplex,
        rate: f64,
        secs: u64,
        reports: bool,
        writes: impl Fn(usize, Duration, usize) -> bool,
    ) -> Result<[usize; 2], String> {
        let pacing = crate::adapter::ModemPacing {
            rate,
            half: Some(h),
            mtu: 250,
        };
        let t0 = Duration::ZERO;
        let step = ms(10);
        let mut pacers = [pacing.pacer(t0), pacing.pacer(t0)];
        let mut buf = [0usize; 2];
        let mut holder = 0usize;
        let mut on_air: Option<(usize, Duration, usize)> = None; // side, end, bytes
        let mut flight: VecDeque<(Duration, usize)> = VecDeque::new(); // arrival, receiver
        let mut delivered = [0usize; 2];
        let mut log: VecDeque<String> = VecDeque::new();
        let mut note = |t: Duration, m: String| {
            if log.len() > 400 {
                log.pop_front();
            }
            log.push_back(format!("{:9.3} {m}", (t - t0).as_secs_f64()));
        };
        let mut t = t0;
        let jitter_of = |i: usize| {
            // Deterministic spread over [0, 2 x jitter].
            let x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            h.jitter.mul_f64(2.0 * (x as f64 / (1u64 << 24) as f64))
        };
        let mut chunks = 0usize;
        let mut last_arrival = [t0; 2];
        // Bytes each side wrote since it last heard the other (an over's length).
        let mut since_heard = [0usize; 2];
        // When the air is next free: the end of the chunk on the air or of the turnaround.
        let mut air_free: Option<Duration> = None;
        let mut over_start = t0;
        let mut last_air_end = t0;
        for _ in 0..secs * 100 {
            t += step;
            // The air, event by event at exact times up to `t`; an idle modem starts at
            // `t` on what was written before.
            loop {
                let at = match air_free {
                    Some(x) if x <= t => x,
                    Some(_) => break,
                    None => t,
                };
                let turned = air_free.is_some() && on_air.is_none();
                if turned {
                    over_start = at;
                }
                if let Some((s, end, n)) = on_air.take() {
                    last_air_end = end;
                    chunks += 1;
                    let arrive = (end + h.latency - jitter_of(chunks)).max(last_arrival[1 - s]);
                    last_arrival[1 - s] = arrive;
                    flight.push_back((arrive, 1 - s));
                    delivered[s] += n;
                }
                air_free = None;
                let o = 1 - holder;
                let over_expired = h.max_over.is_some_and(|m| at - over_start >= m);
                if buf[holder] > 0 && !(buf[o] > 0 && over_expired) {
                    if at > last_air_end && !turned {
                        over_start = at;
                    }
                    let n = buf[holder].min(h.chunk);
                    buf[holder] -= n;
                    let end = at + Duration::from_secs_f64(n as f64 / rate);
                    on_air = Some((holder, end, n));
                    air_free = Some(end);
                } else if buf[o] > 0 {
                    holder = o;
                    note(at, format!("turn to {o}"));
                    air_free = Some(at + h.turnaround);
                } else {
                    break;
                }
            }
            let mut heard_now = [false; 2];
            while let Some(&(at, side)) = flight.front() {
                if at > t {
                    break;
                }
                flight.pop_front();
                heard_now[side] = true;
                pacers[side].received(t);
                since_heard[side] = 0;
                note(
                    t,
                    format!(
                        "side {side} heard; modem {} {}",
                        buf[side],
                        pacers[side].describe()
                    ),
                );
            }
            for s in 0..2 {
                // A report for what was heard: one small frame, data or not.
                let report = reports && heard_now[s];
                if !report && !writes(s, t - t0, since_heard[s]) {
                    continue;
                }
                pacers[s].advance(t);
                let room = pacers[s].room().min(if report { 68 } else { 254 });
                if room >= 68.min(h.buffer - h.chunk) {
                    pacers[s].wrote(t, room);
                    buf[s] += room;
                    since_heard[s] += room;
                    note(
                        t,
                        format!(
                            "side {s} wrote {room}: modem {} {}",
                            buf[s],
                            pacers[s].describe()
                        ),
                    );
                    if buf[s] > h.buffer {
                        let log: Vec<String> = log.drain(..).collect();
                        return Err(format!(
                            "side {s} overran: {} bytes\n{}",
                            buf[s],
                            log.join("\n")
                        ));
                    }
                }
            }
        }
        if std::env::var_os("PACER_LOG").is_some() {
            eprintln!("{}", log.iter().cloned().collect::<Vec<_>>().join("\n"));
        }
        Ok(delivered)
    }

    /// Writers that stop after an over's worth of bytes until they hear the other side
    /// (as the protocol does), and pause at random: over rates from 300 bit/s to
    /// 9600 bit/s, latencies of 0.5-8 s with and without jitter, turnarounds of 0.2-3 s,
    /// buffers of 256 B to 8 KiB, no modem is ever overrun.
    #[test]
    fn no_overrun_over_rates_latencies_buffers_and_writers() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for case in 0..64u64 {
            let rate = [37.5, 184.0, 1200.0][(case % 3) as usize];
            let h = HalfDuplex {
                latency: ms([500, 1000, 4000, 8000][(case / 3 % 4) as usize]),
                jitter: ms([0, 0, 150][(next() % 3) as usize]),
                turnaround: ms([200, 2000, 3000][(next() % 3) as usize]),
                buffer: [256, 1024, 8192][(case / 12 % 3) as usize],
                chunk: [32, 64, 64, 128][(next() % 4) as usize],
                max_over: [None, None, Some(ms(10_000))][(next() % 3) as usize],
            };
            let over = (rate * [4.0, 12.0, 30.0][(next() % 3) as usize]) as usize;
            let seed = next();
            // Each side has data for stretches of 1-64 s, then nothing for 0-32 s.
            let has_data = move |s: usize, t: Duration| {
                let slot = t.as_secs() / 8 + 1000 * s as u64;
                let x = (slot ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60;
                x < 11
            };
            let reports = next() % 2 == 0;
            if std::env::var("PACER_CASE").is_ok_and(|c| c.parse::<u64>().ok() != Some(case)) {
                continue;
            }
            let d = channel(h, rate, 900, reports, |s, t, since_heard| {
                since_heard < over && has_data(s, t)
            })
            .unwrap_or_else(|e| panic!("case {case}: {h:?} rate {rate} over {over}: {e}"));
            assert!(d[0] + d[1] > 0, "case {case}: nothing moved");
        }
    }

    fn run_channel(writers: [bool; 2]) -> [usize; 2] {
        channel(hf(), 184.0, 600, false, |s, _, _| writers[s]).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn greedy_writers_never_overrun_a_half_duplex_modem() {
        // 600 s of both sides writing all they may, each over at most 12 s long (as the
        // protocol bounds them): no overrun, and both directions move. (Without a bound
        // the side holding the turn keeps it: the modem gives it up only when it runs dry.)
        let d = channel(hf(), 184.0, 600, false, |_, _, since_heard| {
            since_heard < 184 * 12
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(d[0] > 20_000 && d[1] > 20_000, "{d:?}");
        assert!(d[0] + d[1] > 80_000, "{d:?}");
    }

    #[test]
    fn one_writer_keeps_most_of_the_channel_busy() {
        // A lone writer never learns that the turn stayed with it while its modem ran
        // dry: the confirmation window (about 7.3 s) over the safe buffer (960 B) bounds
        // it at about 131 B/s of the 184, less the rounding to whole 254-byte writes.
        let d = run_channel([true, false]);
        assert_eq!(d[1], 0);
        assert!(d[0] > 60_000, "{d:?}");
    }

    /// A writer whose modem holds the turn (it has had data ever since the other side's
    /// stream ended) keeps it fed: the whole over goes at the modem's rate.
    #[test]
    fn an_over_after_the_other_sides_stream_runs_at_the_modems_rate() {
        // Side 1 has 10 s of data at the start; side 0 writes from 2 s (while side 1's
        // stream is on the air) and then has an over's worth (40 s) more.
        let d = channel(hf(), 184.0, 50, false, |s, t, since_heard| {
            if s == 1 {
                t < Duration::from_secs(1) && since_heard < 1840
            } else {
                t >= Duration::from_secs(2) && since_heard < 184 * 40
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
        // Side 1's stream ends at about 12 s, side 0 sends from about 14 s: 36 s at the
        // rate make 6.6 kB. Without knowing the turn is its own, a writer can keep at most
        // its safe buffer (960 B) unconfirmed per 7.3 s: 4.7 kB.
        assert!(d[0] >= 6_000, "{d:?}");
    }
}
