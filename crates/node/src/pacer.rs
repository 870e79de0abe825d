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
//! Half duplex: the modem sends only while it holds the turn, and whether it did is learnt
//! only a latency later, when the other side's data would have arrived. So drain is first
//! booked as *pending*; it is confirmed once no received byte could still show that the
//! other side held the channel at that time (latency + turnaround + one chunk + a
//! margin), and revoked if one does. The pessimistic figure (pending drain not counted)
//! never exceeds the modem's buffer; the optimistic one (pending drain counted) is kept
//! within a few frames so that what is queued does not wait long.

use std::collections::VecDeque;
use std::ops::{Add, Sub};
use std::time::Duration;
#[cfg(test)]
use std::time::Instant;

/// A point in time the pacer can count from: the daemon's `Instant`, or the simulator's
/// virtual time as a `Duration` since the run began.
pub trait PacerTime:
    Copy + Ord + Add<Duration, Output = Self> + Sub<Self, Output = Duration>
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

/// A half-duplex modem's timing, as the driver assumes it.
#[derive(Debug, Clone, Copy)]
pub struct HalfDuplex {
    /// One-way latency beyond serialization (at least the modem's real one).
    pub latency: Duration,
    /// Dead air when the turn changes.
    pub turnaround: Duration,
    /// The modem's transmit buffer; writing past it drops the call.
    pub buffer: usize,
    /// Bytes the modem puts on the air as one unit.
    pub chunk: usize,
}

#[derive(Debug, Clone, Copy)]
struct Credit<T> {
    start: T,
    end: T,
    bytes: f64,
}

#[derive(Debug)]
pub struct Pacer<T: PacerTime> {
    /// Bytes per second the device sends.
    rate: f64,
    /// Airtime per write, in bytes at `rate` (a radio's preamble).
    per_write: f64,
    /// Largest optimistic occupancy: what may wait in the device.
    limit: f64,
    half: Option<HalfDuplex>,
    /// Safety margin of the half-duplex windows.
    margin: Duration,
    /// Bytes in the device, not counting pending drain: an upper bound.
    queued: f64,
    pending: VecDeque<Credit<T>>,
    pending_sum: f64,
    last: T,
    /// No drain before this (the modem turning the channel round to us).
    credit_from: T,
    /// Half duplex: our modem had the turn at the last confirmed drain and nothing was
    /// heard since.
    holds_turn: bool,
}

impl<T: PacerTime> Pacer<T> {
    /// A full-duplex device draining `rate` bytes/s, kept at most `limit` bytes deep.
    pub fn full(now: T, rate: f64, per_write: usize, limit: usize) -> Pacer<T> {
        Pacer {
            rate: rate.max(1.0),
            per_write: per_write as f64,
            limit: limit as f64,
            half: None,
            margin: Duration::ZERO,
            queued: 0.0,
            pending: VecDeque::new(),
            pending_sum: 0.0,
            last: now,
            credit_from: now,
            holds_turn: true,
        }
    }

    /// A half-duplex modem draining `rate` bytes/s while it holds the turn.
    pub fn half(now: T, rate: f64, limit: usize, half: HalfDuplex) -> Pacer<T> {
        let margin = Duration::from_millis(250) + half.latency / 10;
        Pacer {
            half: Some(half),
            margin,
            holds_turn: false,
            ..Pacer::full(now, rate, 0, limit)
        }
    }

    fn chunk_time(&self, h: &HalfDuplex) -> Duration {
        Duration::from_secs_f64(h.chunk as f64 / self.rate)
    }

    /// How long pending drain waits to be confirmed.
    fn window(&self, h: &HalfDuplex) -> Duration {
        h.latency + h.turnaround + self.chunk_time(h) + self.margin
    }

    /// Books the drain up to `now`.
    pub fn advance(&mut self, now: T) {
        if now > self.last {
            let from = self.last.max(self.credit_from);
            if now > from {
                let avail = (self.queued - self.pending_sum).max(0.0);
                let bytes = (self.rate * (now - from).as_secs_f64()).min(avail);
                if bytes > 0.0 {
                    if self.half.is_some() {
                        // The drain ends when the buffer ran empty, not at `now`.
                        let end = (from + Duration::from_secs_f64(bytes / self.rate)).min(now);
                        self.pending.push_back(Credit {
                            start: from,
                            end,
                            bytes,
                        });
                        self.pending_sum += bytes;
                    } else {
                        self.queued -= bytes;
                    }
                }
            }
            self.last = now;
        }
        if let Some(h) = self.half {
            let window = self.window(&h);
            while let Some(c) = self.pending.front().copied() {
                if c.end + window > now {
                    break;
                }
                self.pending.pop_front();
                self.pending_sum -= c.bytes;
                self.queued -= c.bytes;
                self.holds_turn = true;
            }
        }
        if self.pending.is_empty() {
            self.pending_sum = 0.0;
        }
        self.queued = self.queued.max(0.0);
    }

    /// `n` bytes were written to the device.
    pub fn wrote(&mut self, now: T, n: usize) {
        self.advance(now);
        if let Some(h) = self.half
            && !self.holds_turn
            && self.queued - self.pending_sum <= 0.5
        {
            // Idle, and the other side may hold the turn: the modem turns round first.
            self.credit_from = self.credit_from.max(now + h.turnaround);
        }
        self.queued += n as f64 + self.per_write;
    }

    /// Bytes arrived from the other side (half duplex: it held the channel a latency
    /// ago). Drain booked for the time it may have held it is revoked.
    pub fn received(&mut self, now: T) {
        self.advance(now);
        let Some(h) = self.half else {
            return;
        };
        self.holds_turn = false;
        // The other side's chunk was on the air in [now - latency - chunk, now - latency];
        // ours could not be then, nor while the turn went over and back.
        let lo = now
            .checked_sub_duration(h.latency + self.chunk_time(&h) + h.turnaround + self.margin)
            .unwrap_or(now);
        let hi =
            now.checked_sub_duration(h.latency).unwrap_or(now).max(lo) + h.turnaround + self.margin;
        let before = self.pending.len();
        self.pending.retain(|c| c.end <= lo || c.start >= hi);
        if self.pending.len() != before {
            self.pending_sum = self.pending.iter().map(|c| c.bytes).sum();
        }
        // Our modem gets the turn back only after the other side stops and turns round.
        self.credit_from = self.credit_from.max(now.max(hi));
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

    /// The device lost what it held (a dropped call, a reopened port).
    pub fn reset(&mut self, now: T) {
        self.queued = 0.0;
        self.pending.clear();
        self.pending_sum = 0.0;
        self.last = now;
        self.credit_from = now;
        self.holds_turn = self.half.is_none();
    }

    /// Bytes that may be written now.
    pub fn room(&self) -> usize {
        let optimistic = (self.queued - self.pending_sum).max(0.0);
        let mut room = self.limit - optimistic - self.per_write;
        if let Some(h) = self.half {
            // One chunk of slack for rate error.
            let safe = h.buffer.saturating_sub(h.chunk) as f64;
            room = room.min(safe - self.queued);
        }
        room.max(0.0).floor() as usize
    }

    /// Bytes estimated in the device now, pessimistically.
    #[cfg(test)]
    pub fn queued(&self) -> usize {
        self.queued.ceil() as usize
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
            turnaround: ms(2000),
            buffer: 1024,
            chunk: 64,
        }
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
        // 184 bytes drained (pending): optimistic room grows, the safe bound does not.
        assert_eq!(p.room(), 508 - 316);
        assert_eq!(p.queued(), 500);
        // Latency + turnaround + chunk + margin (about 7 s) later, it is confirmed.
        p.advance(t0 + ms(3000 + 7010));
        assert_eq!(p.queued(), 316);
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
    /// (the holder keeps the turn while it has data, turnaround on a change, 64-byte
    /// chunks, delivery a latency after the chunk), each side writing greedily whatever
    /// its pacer allows. The real buffers never overflow and both directions move.
    fn run_channel(writers: [bool; 2]) -> [usize; 2] {
        let h = hf();
        let rate = 184.0;
        let t0 = Instant::now();
        let step = ms(10);
        let mut pacers = [Pacer::half(t0, rate, 508, h), Pacer::half(t0, rate, 508, h)];
        let mut buf = [0usize; 2];
        let mut max_buf = 0;
        let mut holder = 0usize;
        let mut turning_until: Option<Instant> = None;
        let mut on_air: Option<(usize, Instant, usize)> = None; // side, end, bytes
        let mut flight: Vec<(Instant, usize)> = Vec::new(); // arrival, receiving side
        let mut delivered = [0usize; 2];
        let mut t = t0;
        for _ in 0..60_000 {
            t += step;
            if let Some((s, end, n)) = on_air
                && end <= t
            {
                flight.push((end + h.latency, 1 - s));
                delivered[s] += n;
                on_air = None;
            }
            flight.retain(|&(at, side)| {
                if at <= t {
                    pacers[side].received(t);
                    false
                } else {
                    true
                }
            });
            if turning_until.is_some_and(|u| u <= t) {
                turning_until = None;
            }
            if on_air.is_none() && turning_until.is_none() {
                let o = 1 - holder;
                if buf[holder] > 0 {
                    let n = buf[holder].min(h.chunk);
                    buf[holder] -= n;
                    on_air = Some((holder, t + Duration::from_secs_f64(n as f64 / rate), n));
                } else if buf[o] > 0 {
                    holder = o;
                    turning_until = Some(t + h.turnaround);
                }
            }
            for s in (0..2).filter(|&s| writers[s]) {
                pacers[s].advance(t);
                let room = pacers[s].room().min(250);
                if room >= 64 {
                    pacers[s].wrote(t, room);
                    buf[s] += room;
                    max_buf = max_buf.max(buf[s]);
                    assert!(buf[s] <= h.buffer, "side {s} overran: {} bytes", buf[s]);
                }
            }
        }
        assert!(max_buf > 400, "{max_buf}");
        delivered
    }

    #[test]
    fn greedy_writers_never_overrun_a_half_duplex_modem() {
        // 600 s of both sides writing all the time: no overrun, and both directions move.
        let d = run_channel([true, true]);
        assert!(d[0] > 5_000 && d[1] > 5_000, "{d:?}");
        assert!(d[0] + d[1] > 40_000, "{d:?}");
    }

    #[test]
    fn one_writer_keeps_most_of_the_channel_busy() {
        // The confirmation window (about 7 s) over the safe buffer (960 B) bounds one
        // direction at about 137 B/s of the 184.
        let d = run_channel([true, false]);
        assert_eq!(d[1], 0);
        assert!(d[0] > 70_000, "{d:?}");
    }
}
