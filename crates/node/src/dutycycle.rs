//! A radio's duty-cycle budget: at most a fraction of any window on the air (EU 868 MHz
//! sub-bands: 1% or 10% of any hour, ETSI EN 300 220).
//!
//! The driver asks [`DutyCycle::next_allowed`] before it hands the radio a frame of a
//! given air time, holds the frame until then (to the protocol that is back-pressure: the
//! link has no room), and records each frame it hands over ([`DutyCycle::record`]).
//!
//! The rule. A new transmission `[t, t + a]` can only add to windows that overlap it;
//! of those, the one ending at `t + a` holds the most earlier air time (a window starting
//! earlier loses as much of the new frame as it gains of older ones, since one radio's
//! transmissions never overlap). The budget counts a little more than that window holds:
//! every earlier transmission that ends after `t - window`, whole, plus `a`, must be
//! within the allowance. Counting from `t - window` rather than `t + a - window` costs at
//! most one frame's air time of waiting per window, and makes the answer monotone in the
//! frame's length: if a largest frame may go, so may any smaller one, so a driver can ask
//! once, before it knows what the protocol will give it. Earlier transmissions are also
//! counted as ending `guard` later than recorded: a radio may start a frame later than it
//! was handed over (carrier sense, backoff), and the budget must hold on the air, not
//! only in the driver's books. A driver that learns when a frame really ended
//! ([`DutyCycle::ended`]) moves its record.
//!
//! Sans-IO: time is passed in, as a `Duration` since any fixed origin.

use std::collections::VecDeque;
use std::time::Duration;

/// What the budget allows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DutyCycleConfig {
    /// Fraction of any window on the air, above 0 and at most 1.
    pub fraction: f64,
    /// The window (EU 868 MHz: one hour).
    pub window: Duration,
    /// How much later than recorded a transmission may end (see the module docs).
    pub guard: Duration,
}

impl DutyCycleConfig {
    /// `fraction` of any hour, with a 10 s guard.
    pub fn hourly(fraction: f64) -> DutyCycleConfig {
        DutyCycleConfig {
            fraction,
            window: Duration::from_secs(3600),
            guard: Duration::from_secs(10),
        }
    }

    /// Air time allowed in any window.
    pub fn allowance(&self) -> Duration {
        self.window.mul_f64(self.fraction.clamp(0.0, 1.0))
    }
}

/// Why a frame can never be sent under the budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "a frame of {air:?} air time exceeds the duty-cycle allowance of {allowance:?} per window: send smaller frames or use a faster setting"
)]
pub struct TooLong {
    pub air: Duration,
    pub allowance: Duration,
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct DutyCycle {
    cfg: DutyCycleConfig,
    /// Transmissions still able to count: `(start, air)`, oldest first.
    log: VecDeque<(Duration, Duration)>,
    /// Air time recorded in all.
    pub total_air: Duration,
    /// Frames recorded.
    pub frames: u64,
}

impl DutyCycle {
    pub fn new(cfg: DutyCycleConfig) -> DutyCycle {
        DutyCycle {
            cfg,
            log: VecDeque::new(),
            total_air: Duration::ZERO,
            frames: 0,
        }
    }

    pub fn config(&self) -> DutyCycleConfig {
        self.cfg
    }

    /// Air time allowed in any window.
    pub fn allowance(&self) -> Duration {
        self.cfg.allowance()
    }

    fn end(&self, &(start, air): &(Duration, Duration)) -> Duration {
        start + air + self.cfg.guard
    }

    fn prune(&mut self, now: Duration) {
        // Nothing ending before `now - window` can count for a frame starting at `now`
        // or later.
        while let Some(r) = self.log.front() {
            if self.end(r) + self.cfg.window <= now {
                self.log.pop_front();
            } else {
                break;
            }
        }
    }

    /// The earliest time from `now` at which a frame of `air` may start; `Err` if it
    /// never may (longer than the whole allowance).
    pub fn next_allowed(&self, now: Duration, air: Duration) -> Result<Duration, TooLong> {
        let allowance = self.allowance();
        if air > allowance {
            return Err(TooLong { air, allowance });
        }
        // Records that still count at `now` (ending after now - window), and their sum;
        // drop the oldest until the rest and the new frame fit.
        let from = now.saturating_sub(self.cfg.window);
        let mut live: VecDeque<&(Duration, Duration)> =
            self.log.iter().filter(|r| self.end(r) > from).collect();
        let mut used: Duration = live.iter().map(|r| r.1).sum();
        let mut at = now;
        while used + air > allowance {
            let Some(r) = live.pop_front() else { break };
            used -= r.1;
            // It stops counting a window after it ended.
            at = at.max(self.end(r) + self.cfg.window);
        }
        Ok(at)
    }

    /// Whether a frame of `air` may start now.
    pub fn allows(&self, now: Duration, air: Duration) -> bool {
        self.next_allowed(now, air) == Ok(now)
    }

    /// A frame of `air` was handed to the radio at `now`.
    pub fn record(&mut self, now: Duration, air: Duration) {
        self.prune(now);
        self.log.push_back((now, air));
        self.total_air += air;
        self.frames += 1;
    }

    /// The radio says its last frame ended at `now`: if that is later than recorded, the
    /// record moves (the frame started later than it was handed over).
    pub fn ended(&mut self, now: Duration) {
        if let Some((start, air)) = self.log.back_mut()
            && *start + *air < now
        {
            *start = now - *air;
        }
    }

    /// Air time recorded in the window ending `now` (each frame clipped to it): what
    /// status shows as used.
    pub fn used(&self, now: Duration) -> Duration {
        let from = now.saturating_sub(self.cfg.window);
        self.log
            .iter()
            .map(|&(s, a)| (s + a).min(now).saturating_sub(s.max(from)))
            .sum()
    }

    /// Air time left in the window ending `now`.
    pub fn remaining(&self, now: Duration) -> Duration {
        self.allowance().saturating_sub(self.used(now))
    }

    /// One line for logs and status.
    pub fn describe(&self, now: Duration) -> String {
        format!(
            "{:.1} s of {:.1} s used in the last {:.0} s ({:.2}% of {:.2}%)",
            self.used(now).as_secs_f64(),
            self.allowance().as_secs_f64(),
            self.cfg.window.as_secs_f64(),
            100.0 * self.used(now).as_secs_f64() / self.cfg.window.as_secs_f64(),
            100.0 * self.cfg.fraction
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: f64) -> Duration {
        Duration::from_secs_f64(n)
    }

    fn cfg(fraction: f64, window: f64, guard: f64) -> DutyCycleConfig {
        DutyCycleConfig {
            fraction,
            window: s(window),
            guard: s(guard),
        }
    }

    /// The most air time in any window, brute force over 10 ms steps.
    fn busiest(log: &[(Duration, Duration)], window: Duration, until: Duration) -> Duration {
        let mut best = Duration::ZERO;
        let mut a = Duration::ZERO;
        while a < until {
            let b = a + window;
            let sum: Duration = log
                .iter()
                .map(|&(st, air)| (st + air).min(b).saturating_sub(st.max(a)))
                .sum();
            best = best.max(sum);
            a += Duration::from_millis(10);
        }
        best
    }

    #[test]
    fn one_percent_of_an_hour_is_36_seconds_then_it_waits() {
        let mut d = DutyCycle::new(DutyCycleConfig::hourly(0.01));
        assert_eq!(d.allowance(), s(36.0));
        let air = s(1.25);
        let mut t = Duration::ZERO;
        let mut sent = 0;
        while d.allows(t, air) {
            d.record(t, air);
            t += air;
            sent += 1;
        }
        assert_eq!(sent, 28, "28 x 1.25 s fit in 36 s");
        assert_eq!(d.used(t), s(35.0));
        assert_eq!(d.remaining(t), s(1.0));
        // The next may go once the first frame (and its guard) is an hour old.
        let next = d.next_allowed(t, air).unwrap();
        assert_eq!(next, s(1.25 + 10.0 + 3600.0));
        // Monotone in the length: a shorter frame may go no later.
        assert!(d.next_allowed(t, s(0.1)).unwrap() <= next);
        assert!(d.describe(t).contains("35.0 s of 36.0 s"));
    }

    #[test]
    fn a_frame_longer_than_the_allowance_is_refused() {
        let d = DutyCycle::new(cfg(0.001, 60.0, 0.0));
        let e = d.next_allowed(Duration::ZERO, s(1.0)).unwrap_err();
        assert!(e.to_string().contains("allowance"), "{e}");
    }

    /// A driver that always sends as soon as the budget allows, frames of varying air
    /// time, each starting up to `delay` late on the air: no window ever holds more than
    /// the allowance, and the long-run rate is close to it.
    #[test]
    fn never_exceeded_on_the_air_even_when_frames_start_late() {
        let window = 60.0;
        let c = cfg(0.1, window, 2.0);
        let mut d = DutyCycle::new(c);
        let mut rng = 12345u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut air_log = Vec::new();
        let mut t = Duration::ZERO;
        let mut radio_free = Duration::ZERO;
        let until = s(600.0);
        while t < until {
            let air = Duration::from_millis(200 + next() % 1300);
            let at = d.next_allowed(t, air).unwrap().max(radio_free);
            d.record(at, air);
            // The radio starts it up to 2 s late (carrier sense).
            let start = at + Duration::from_millis(next() % 2000);
            air_log.push((start, air));
            radio_free = start + air;
            d.ended(radio_free);
            t = radio_free;
        }
        let most = busiest(&air_log, s(window), until);
        assert!(most <= c.allowance(), "{most:?} > {:?}", c.allowance());
        let sent: Duration = air_log.iter().map(|r| r.1).sum();
        let rate = sent.as_secs_f64() / t.as_secs_f64();
        // At most 10%, and not far below (the first window may be used whole at once).
        assert!(
            rate > 0.08 && rate <= 0.1 * (1.0 + window / t.as_secs_f64()),
            "{rate}"
        );
    }

    #[test]
    fn used_counts_only_the_window() {
        let mut d = DutyCycle::new(cfg(0.5, 10.0, 0.0));
        d.record(s(0.0), s(2.0));
        d.record(s(5.0), s(2.0));
        assert_eq!(d.used(s(7.0)), s(4.0));
        // At 11 s the window is [1, 11]: 1 s of the first, 2 s of the second.
        assert_eq!(d.used(s(11.0)), s(3.0));
        assert_eq!(d.used(s(30.0)), Duration::ZERO);
        assert_eq!(d.total_air, s(4.0));
        assert_eq!(d.frames, 2);
    }
}
