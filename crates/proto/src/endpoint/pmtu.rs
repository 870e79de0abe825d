//! Path MTU discovery on IP paths, in the manner of RFC 8899 (DPLPMTUD).
//!
//! Datagrams leave with don't-fragment set: a path with a smaller MTU than the link's
//! configured one (a VPN, PPPoE, a cellular carrier, IPv6 tunnels) drops the larger ones
//! without a word. So frames start at a size every path carries ([`BASE`], or the
//! configured MTU if smaller) and probe upward: a probe is a frame of data padded to
//! the size being tried (only data, whose loss the acknowledgements repair at once). Its acknowledgement raises the size; two losses of the same
//! size lower the search's upper bound (one loss may be random). The search halves the
//! gap until it is under [`DONE_WITHIN`] bytes. A probe's loss is not congestion.
//! If frames at the size in use later vanish while smaller ones arrive (the path
//! changed: a black hole), the size falls back to the largest acknowledged and the search
//! runs again after [`RAISE_AFTER`].

use std::time::Duration;

/// Frames up to this size are assumed to cross any IP path (QUIC's minimum datagram).
pub(crate) const BASE: u64 = 1200;
/// The search stops when the size in use is this close to the largest that failed.
const DONE_WITHIN: u64 = 16;
/// Losses of one probe size before it is taken as too large.
const PROBE_TRIES: u32 = 2;
/// Frames above the base size lost in a row, while frames of the base size arrive,
/// that mark a black hole.
const BLACK_HOLE_LOSSES: u32 = 8;
/// After a black hole, how long before the search for a larger size runs again.
const RAISE_AFTER: Duration = Duration::from_secs(600);

#[derive(Debug, Clone)]
pub(crate) struct Pmtu {
    /// The size frames are sent at (the largest known to cross the path).
    pub size: u64,
    /// The largest size the link allows (the configured MTU).
    max: u64,
    /// Smallest size known (or taken) not to cross; the search probes below it.
    too_big: u64,
    /// The probe in flight: its packet number and size.
    probe: Option<(u64, u64)>,
    /// Losses of the size now being probed.
    tries: u32,
    /// Whether the search is over (until `raise_at`).
    done: bool,
    raise_at: Option<Duration>,
    /// Frames above the base size lost in a row (none acknowledged in between), and
    /// whether a frame of the base size or less was acknowledged meanwhile.
    large_lost_in_a_row: u32,
    small_acked: bool,
}

impl Pmtu {
    /// `max`: the link's configured MTU; `search`: whether to discover (IP paths).
    pub fn new(max: u64, search: bool) -> Self {
        let size = if search { max.min(BASE) } else { max };
        Self {
            size,
            max,
            too_big: max + 1,
            probe: None,
            tries: 0,
            done: !search || size >= max,
            raise_at: None,
            large_lost_in_a_row: 0,
            small_acked: false,
        }
    }

    /// The size of the next probe, if one is due at `now` (none in flight).
    pub fn probe_size(&mut self, now: Duration) -> Option<u64> {
        if self.raise_at.is_some_and(|t| now >= t) {
            self.raise_at = None;
            self.done = false;
            self.too_big = self.max + 1;
            self.tries = 0;
        }
        if self.done || self.probe.is_some() {
            return None;
        }
        // Upward by half again (the configured 1472 B at once from 1200, which most
        // paths carry) until a size fails, then halving the gap. Not the configured size
        // first whatever it is: an interface's MTU (65 KB on loopback, 9000 B on a
        // jumbo-frame LAN) says little of the path beyond, and each failed size costs two
        // probes of it, lost, and their time on the first hop.
        let hi = self.too_big - 1;
        Some(if self.too_big > self.max {
            self.max.min(self.size * 3 / 2)
        } else {
            self.size + (hi - self.size).div_ceil(2)
        })
    }

    /// A probe of `size` bytes left as packet number `pn`.
    pub fn probe_sent(&mut self, pn: u64, size: u64) {
        self.probe = Some((pn, size));
    }

    /// Frame `pn` of `bytes` was acknowledged.
    pub fn on_acked(&mut self, pn: u64, bytes: u64) {
        if bytes > BASE {
            self.large_lost_in_a_row = 0;
            self.small_acked = false;
        } else {
            self.small_acked = true;
        }
        if let Some((p, size)) = self.probe
            && p == pn
        {
            self.probe = None;
            self.tries = 0;
            self.size = self.size.max(size);
            tracing::debug!(size, "path MTU probe acknowledged");
            self.check_done();
        }
    }

    /// Frame `pn` of `bytes` was declared lost. True if it was a probe: its loss says
    /// nothing of congestion.
    pub fn on_lost(&mut self, pn: u64, bytes: u64) -> bool {
        if let Some((p, size)) = self.probe
            && p == pn
        {
            self.probe = None;
            self.tries += 1;
            if self.tries >= PROBE_TRIES {
                self.tries = 0;
                self.too_big = self.too_big.min(size);
                self.check_done();
            }
            return true;
        }
        if bytes > BASE {
            self.large_lost_in_a_row += 1;
        }
        if self.large_lost_in_a_row >= BLACK_HOLE_LOSSES && self.small_acked && self.size > BASE {
            // Every larger frame was lost while small ones arrive: the path changed under
            // us and drops what does not fit.
            tracing::warn!(
                was = self.size,
                "frames of {} B no longer arrive but {BASE} B ones do: the path's MTU \
                 shrank; sending at most {BASE} B and searching again later",
                self.size
            );
            self.too_big = self.size;
            self.size = BASE;
            self.probe = None;
            self.large_lost_in_a_row = 0;
            self.done = true;
            self.raise_at = Some(Duration::MAX);
        }
        false
    }

    /// Schedules the search to run again `RAISE_AFTER` from `now` after a black hole.
    pub fn tick(&mut self, now: Duration) {
        if self.raise_at == Some(Duration::MAX) {
            self.raise_at = Some(now + RAISE_AFTER);
        }
    }

    fn check_done(&mut self) {
        if self.too_big.saturating_sub(self.size) <= DONE_WITHIN || self.size >= self.max {
            self.done = true;
            tracing::debug!(size = self.size, "path MTU found");
        }
    }

    /// Whether the search has settled.
    pub fn settled(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the search against a path carrying at most `path` bytes; returns the size
    /// found and the probes it took.
    fn search(max: u64, path: u64) -> (u64, u32) {
        let mut p = Pmtu::new(max, true);
        let mut pn = 0;
        let mut probes = 0;
        while let Some(size) = p.probe_size(Duration::ZERO) {
            probes += 1;
            assert!(probes < 40, "no end to the search");
            assert!(size <= max && size > p.size);
            p.probe_sent(pn, size);
            if size <= path {
                p.on_acked(pn, size);
            } else {
                assert!(p.on_lost(pn, size));
            }
            pn += 1;
        }
        (p.size, probes)
    }

    #[test]
    fn finds_the_path_mtu_below_the_configured_one() {
        for (max, path) in [
            (1472, 1472),
            (1472, 1252),
            (1472, 1372),
            (1472, 1200),
            (9000, 1472),
        ] {
            let (size, probes) = search(max, path);
            assert!(
                size <= path && size + DONE_WITHIN >= path.min(max),
                "{max}/{path}: {size}"
            );
            assert!(probes <= 24, "{max}/{path}: {probes} probes");
        }
        // A link configured below the base size is used as configured.
        let p = Pmtu::new(600, true);
        assert_eq!((p.size, p.settled()), (600, true));
    }

    #[test]
    fn one_random_loss_of_a_probe_does_not_shrink_the_search() {
        let mut p = Pmtu::new(1472, true);
        let s = p.probe_size(Duration::ZERO).unwrap();
        p.probe_sent(0, s);
        assert!(p.on_lost(0, s));
        assert_eq!(p.probe_size(Duration::ZERO), Some(1472));
        p.probe_sent(1, 1472);
        p.on_acked(1, 1472);
        assert_eq!(p.size, 1472);
        assert!(p.settled());
    }

    #[test]
    fn a_black_hole_falls_back_and_searches_again_later() {
        let mut p = Pmtu::new(1472, true);
        p.probe_sent(0, 1472);
        p.on_acked(0, 1472);
        assert_eq!(p.size, 1472);
        // The path shrinks: full-size frames vanish, small ones (acks, reports) arrive.
        for pn in 2..2 + u64::from(BLACK_HOLE_LOSSES) {
            p.on_acked(100 + pn, 300);
            assert!(!p.on_lost(pn, 1472));
        }
        assert_eq!(p.size, BASE);
        p.tick(Duration::from_secs(1));
        assert_eq!(p.probe_size(Duration::from_secs(2)), None);
        assert!(p.probe_size(Duration::from_secs(1) + RAISE_AFTER).is_some());
    }
}
