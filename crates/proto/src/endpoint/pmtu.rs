//! Path MTU discovery on IP paths, in the manner of RFC 8899 (DPLPMTUD).
//!
//! Datagrams leave with don't-fragment set: a path with a smaller MTU than the link's
//! configured one (a VPN, PPPoE, a cellular carrier, IPv6 tunnels) drops the larger ones
//! without a word. So frames start at a size every path carries ([`BASE`], or the
//! configured MTU if smaller) and probe upward: a probe is a frame of data padded to
//! the size being tried (only data, whose loss the acknowledgements repair at once).
//! [`PROBES`] sizes spread over the range still open go at once, so the search takes a
//! few round trips, not one per size tried (one at a time, a 1280 B path took ten round
//! trips, half a minute on a 3 s satellite path). An acknowledged probe raises the
//! size; the second smallest size lost bounds the search from above (one loss may be
//! random), until the gap is under [`done_within`]. A probe's loss is not congestion.
//! If frames at the size in use later vanish while smaller ones arrive (the path
//! changed: a black hole), the size falls back to the largest acknowledged and the search
//! runs again after [`RAISE_AFTER`].

use std::time::Duration;

/// Frames up to this size are assumed to cross any IP path (QUIC's minimum datagram).
pub(crate) const BASE: u64 = 1200;
/// Probes in flight at once, of sizes spread evenly over the range still open.
const PROBES: u64 = 4;
// (`probe_size`'s orders of the spread sizes assume four.)

/// The search stops when the size in use is this close to the smallest that failed:
/// 1.5% (the last step would gain less than that of each frame).
fn done_within(size: u64) -> u64 {
    (size / 64).max(16)
}
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
    /// Probes in flight: packet number and size.
    probes: Vec<(u64, u64)>,
    /// A size lost once, below `too_big` (it may have been a random loss).
    lost_once: Option<u64>,
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
            probes: Vec::new(),
            lost_once: None,
            done: !search || size >= max,
            raise_at: None,
            large_lost_in_a_row: 0,
            small_acked: false,
        }
    }

    /// The size of the next probe, if one is due at `now` with fewer than `most` in
    /// flight: of the sizes spread over the open range, one not in flight yet.
    pub fn probe_size(&mut self, now: Duration, most: u64) -> Option<u64> {
        if self.raise_at.is_some_and(|t| now >= t) {
            self.raise_at = None;
            self.done = false;
            self.too_big = self.max + 1;
            self.lost_once = None;
        }
        if self.done || self.probes.len() as u64 >= most.min(PROBES) {
            return None;
        }
        // Up to half again (the configured 1472 B from 1200, which most paths carry)
        // until a size fails, then below the smallest that failed. Not up to the
        // configured size whatever it is: an interface's MTU (65 KB on loopback, 9000 B
        // on a jumbo-frame LAN) says little of the path beyond, and each failed size
        // costs two probes of it, lost, and their time on the first hop.
        let lo = self.size;
        let upward = self.too_big > self.max && self.lost_once.is_none();
        let mut hi = if self.too_big > self.max {
            self.max.min(self.size * 3 / 2)
        } else {
            self.too_big - 1
        };
        // A size lost once is likely too big: probe below it, and again at it only when
        // nothing else is left to try.
        if let Some(l) = self.lost_once {
            if l - 1 > lo + done_within(lo) {
                hi = l - 1;
            } else {
                return (!self.probes.iter().any(|p| p.1 == l)).then_some(l);
            }
        }
        // The largest first while going up; else the middle first, so that probes sent
        // one at a time (a small window) bisect.
        let order: &[u64] = if upward { &[4, 3, 2, 1] } else { &[2, 4, 1, 3] };
        order
            .iter()
            .map(|&j| lo + ((hi - lo) * j).div_ceil(PROBES))
            .filter(|&s| s > lo)
            .find(|s| !self.probes.iter().any(|p| p.1 == *s))
    }

    /// A probe of `size` bytes left as packet number `pn`.
    pub fn probe_sent(&mut self, pn: u64, size: u64) {
        self.probes.push((pn, size));
    }

    /// Frame `pn` of `bytes` was acknowledged.
    pub fn on_acked(&mut self, pn: u64, bytes: u64) {
        if bytes > BASE {
            self.large_lost_in_a_row = 0;
            self.small_acked = false;
        } else {
            self.small_acked = true;
        }
        if let Some(i) = self.probes.iter().position(|p| p.0 == pn) {
            let (_, size) = self.probes.swap_remove(i);
            self.size = self.size.max(size);
            // A smaller size lost was a random loss.
            self.lost_once = self.lost_once.filter(|&l| l > self.size);
            tracing::debug!(size, "path MTU probe acknowledged");
            self.check_done();
        }
    }

    /// Frame `pn` of `bytes` was declared lost. True if it was a probe: its loss says
    /// nothing of congestion.
    pub fn on_lost(&mut self, pn: u64, bytes: u64) -> bool {
        if let Some(i) = self.probes.iter().position(|p| p.0 == pn) {
            let (_, size) = self.probes.swap_remove(i);
            // Two losses at or below a size bound the search (one may be random): the
            // second smallest size lost is too big.
            if size > self.size && size < self.too_big {
                match self.lost_once {
                    Some(l) => {
                        self.too_big = l.max(size);
                        self.lost_once = Some(l.min(size)).filter(|&l| l < self.too_big);
                    }
                    None => self.lost_once = Some(size),
                }
                tracing::debug!(size, too_big = self.too_big, lost_once = ?self.lost_once, "path MTU probe lost");
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
            self.probes.clear();
            self.lost_once = None;
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
        // Not while a size lost once may yet cross (the loss may have been random):
        // `probe_size` tries it again.
        let near = self.too_big.saturating_sub(self.size) <= done_within(self.size)
            && self.lost_once.is_none();
        if near || self.size >= self.max {
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
        while let Some(size) = p.probe_size(Duration::ZERO, PROBES) {
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
                size <= path && size + done_within(size) >= path.min(max),
                "{max}/{path}: {size}"
            );
            assert!(probes <= 24, "{max}/{path}: {probes} probes");
        }
        // A link configured below the base size is used as configured.
        let p = Pmtu::new(600, true);
        assert_eq!((p.size, p.settled()), (600, true));
    }

    /// Round trips the search takes when every probe it allows goes at once and each
    /// round's answers come back together.
    fn rounds(max: u64, path: u64) -> (u64, u64, u32) {
        let mut p = Pmtu::new(max, true);
        let (mut pn, mut rounds) = (0, 0);
        while !p.settled() {
            rounds += 1;
            assert!(rounds < 20, "no end to the search");
            let mut sent = Vec::new();
            while let Some(size) = p.probe_size(Duration::ZERO, PROBES) {
                p.probe_sent(pn, size);
                sent.push((pn, size));
                pn += 1;
            }
            assert!(!sent.is_empty() && sent.len() as u64 <= PROBES);
            for (pn, size) in sent {
                if size <= path {
                    p.on_acked(pn, size);
                } else {
                    assert!(p.on_lost(pn, size));
                }
            }
        }
        (p.size, pn, rounds)
    }

    #[test]
    fn probes_in_parallel_find_the_size_in_a_few_round_trips() {
        for path in [1200, 1232, 1252, 1300, 1372, 1400, 1452, 1471, 1472] {
            let (size, probes, rounds) = rounds(1472, path);
            assert!(
                size <= path && size + done_within(size) >= path,
                "{path}: {size}"
            );
            // One size at a time took ten round trips to a 1252 B path.
            assert!(rounds <= 4, "{path}: {rounds} round trips");
            assert!(probes <= 4 * PROBES, "{path}: {probes} probes");
        }
        let (size, _, rounds) = rounds(9000, 8972);
        assert!(
            size + done_within(size) >= 8972 && rounds <= 8,
            "{size} {rounds}"
        );
    }

    #[test]
    fn one_random_loss_of_a_probe_does_not_shrink_the_search() {
        let mut p = Pmtu::new(1472, true);
        let s = p.probe_size(Duration::ZERO, PROBES).unwrap();
        p.probe_sent(0, s);
        assert!(p.on_lost(0, s));
        // The path carries 1472 B: the search goes on below, then tries 1472 again.
        let mut pn = 1;
        while let Some(size) = p.probe_size(Duration::ZERO, PROBES) {
            assert!(pn < 12, "no end to the search");
            p.probe_sent(pn, size);
            p.on_acked(pn, size);
            pn += 1;
        }
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
        assert_eq!(p.probe_size(Duration::from_secs(2), PROBES), None);
        assert!(
            p.probe_size(Duration::from_secs(1) + RAISE_AFTER, PROBES)
                .is_some()
        );
    }
}
