//! Virtual time: a point in time in nanoseconds since the start of a run.
//!
//! Nanoseconds, not microseconds: a 1500 B frame takes 12 us on a 1 Gbit/s link, so a
//! microsecond clock would round serialization by up to 8%. A `u64` of nanoseconds lasts
//! 584 years. Durations are plain [`std::time::Duration`]s.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// A point in virtual (or emulated) time, in nanoseconds since the start of the run.
///
/// The link models never read a clock: every `handle_*` and `poll_*` method takes `now`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(u64);

impl SimTime {
    /// The start of the run.
    pub const ZERO: SimTime = SimTime(0);
    /// Later than any event; used as "never".
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_nanos(nanos: u64) -> Self {
        SimTime(nanos)
    }
    pub const fn from_micros(micros: u64) -> Self {
        SimTime(micros.saturating_mul(1_000))
    }
    pub const fn from_millis(millis: u64) -> Self {
        SimTime(millis.saturating_mul(1_000_000))
    }
    pub const fn from_secs(secs: u64) -> Self {
        SimTime(secs.saturating_mul(1_000_000_000))
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// The time elapsed since `earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: SimTime) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
    /// `self + nanos`, saturating at [`SimTime::MAX`].
    pub(crate) fn plus_nanos(self, nanos: u64) -> SimTime {
        SimTime(self.0.saturating_add(nanos))
    }
}

/// Converts a duration to whole nanoseconds, saturating at `u64::MAX`.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Time to put `bytes` on the air at `rate_bps`, rounded up to the next nanosecond.
pub fn airtime_nanos(bytes: u64, rate_bps: u64) -> u64 {
    let bits = u128::from(bytes) * 8 * 1_000_000_000;
    let rate = u128::from(rate_bps.max(1));
    u64::try_from(bits.div_ceil(rate)).unwrap_or(u64::MAX)
}

impl Add<Duration> for SimTime {
    type Output = SimTime;
    fn add(self, rhs: Duration) -> SimTime {
        self.plus_nanos(nanos(rhs))
    }
}

impl AddAssign<Duration> for SimTime {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub<SimTime> for SimTime {
    type Output = Duration;
    /// Saturates at zero, like [`SimTime::saturating_since`].
    fn sub(self, rhs: SimTime) -> Duration {
        self.saturating_since(rhs)
    }
}

impl fmt::Display for SimTime {
    /// Seconds with nine decimals, e.g. `4.005423729`: exact and sortable as text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09}",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn airtime_rounds_up() {
        assert_eq!(airtime_nanos(1500, 1_000_000_000), 12_000);
        // 1 byte at 1475 bit/s = 5423728.81.. ns
        assert_eq!(airtime_nanos(1, 1475), 5_423_729);
        assert_eq!(airtime_nanos(0, 1475), 0);
    }

    #[test]
    fn display_is_exact() {
        assert_eq!(
            SimTime::from_nanos(4_005_423_729).to_string(),
            "4.005423729"
        );
        assert_eq!(SimTime::ZERO.to_string(), "0.000000000");
    }

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(SimTime::MAX + Duration::from_secs(1), SimTime::MAX);
        assert_eq!(SimTime::ZERO - SimTime::from_secs(1), Duration::ZERO);
    }
}
