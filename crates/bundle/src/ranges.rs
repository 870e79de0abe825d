//! A set of byte ranges, as held by a receiver of a partial payload.

use crate::varint;

/// Disjoint, non-adjacent, sorted half-open ranges `[start, end)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: Vec<(u64, u64)>,
}

impl RangeSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `[start, end)`, merging with neighbours. Returns the bytes newly covered.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        // First range whose end reaches `start` (touching ranges merge).
        let i = self.ranges.partition_point(|&(_, e)| e < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        let mut merged = 0;
        while j < self.ranges.len() && self.ranges[j].0 <= end {
            let (rs, re) = self.ranges[j];
            s = s.min(rs);
            e = e.max(re);
            merged += re - rs;
            j += 1;
        }
        // In place where possible: a transfer extends its last range once per piece.
        match j - i {
            0 => self.ranges.insert(i, (s, e)),
            1 => self.ranges[i] = (s, e),
            _ => {
                self.ranges[i] = (s, e);
                self.ranges.drain(i + 1..j);
            }
        }
        // The merged ranges are disjoint and inside `[s, e)`.
        (e - s) - merged
    }

    /// Removes `[start, end)`, splitting a range that straddles it. Returns the bytes
    /// no longer covered.
    pub fn remove(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let before = self.covered();
        let i = self.ranges.partition_point(|&(_, e)| e <= start);
        let mut j = i;
        let mut rest = Vec::with_capacity(2);
        while j < self.ranges.len() && self.ranges[j].0 < end {
            let (s, e) = self.ranges[j];
            if s < start {
                rest.push((s, start));
            }
            if e > end {
                rest.push((end, e));
            }
            j += 1;
        }
        self.ranges.splice(i..j, rest);
        before - self.covered()
    }

    /// Total bytes covered.
    pub fn covered(&self) -> u64 {
        self.ranges.iter().map(|(s, e)| e - s).sum()
    }

    /// Whether `[start, end)` is wholly covered.
    pub fn contains(&self, start: u64, end: u64) -> bool {
        if start >= end {
            return true;
        }
        let i = self.ranges.partition_point(|&(_, e)| e <= start);
        self.ranges
            .get(i)
            .is_some_and(|&(s, e)| s <= start && end <= e)
    }

    /// Whether `[0, len)` is wholly covered.
    pub fn is_complete(&self, len: u64) -> bool {
        self.contains(0, len)
    }

    /// The gaps inside `[0, len)`, in order.
    pub fn missing(&self, len: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = 0;
        for &(s, e) in &self.ranges {
            if s >= len {
                break;
            }
            if s > at {
                out.push((at, s));
            }
            at = at.max(e);
        }
        if at < len {
            out.push((at, len));
        }
        out
    }

    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().copied()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// `varint(count)` then per range `varint(start - previous end) varint(len)`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        varint::put(&mut out, self.ranges.len() as u64);
        let mut prev = 0;
        for &(s, e) in &self.ranges {
            varint::put(&mut out, s - prev);
            varint::put(&mut out, e - s);
            prev = e;
        }
        out
    }

    /// Parses [`RangeSet::encode`]'s output; `None` if malformed or not canonical.
    pub fn decode(buf: &[u8]) -> Option<(Self, usize)> {
        let (count, mut pos) = varint::get(buf).ok()?;
        let mut ranges = Vec::new();
        let mut prev = 0u64;
        for i in 0..count {
            let (gap, a) = varint::get(buf.get(pos..)?).ok()?;
            pos += a;
            let (len, b) = varint::get(buf.get(pos..)?).ok()?;
            pos += b;
            // Ranges are non-empty and separated by a gap (else they would have merged).
            if len == 0 || (i > 0 && gap == 0) {
                return None;
            }
            let s = prev.checked_add(gap)?;
            let e = s.checked_add(len)?;
            ranges.push((s, e));
            prev = e;
        }
        Some((Self { ranges }, pos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_and_reports_missing() {
        let mut r = RangeSet::new();
        assert_eq!(r.insert(10, 20), 10);
        assert_eq!(r.insert(30, 40), 10);
        assert_eq!(r.insert(15, 35), 10);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(10, 40)]);
        assert_eq!(r.insert(40, 50), 10, "touching ranges merge");
        assert_eq!(r.iter().count(), 1);
        assert_eq!(r.missing(60), vec![(0, 10), (50, 60)]);
        assert!(r.contains(12, 50));
        assert!(!r.contains(5, 12));
        assert!(!r.is_complete(50));
        r.insert(0, 10);
        assert!(r.is_complete(50));
        assert_eq!(r.encode(), vec![1, 0, 50]);
    }

    proptest::proptest! {
        #[test]
        fn matches_a_bitmap(ops in proptest::collection::vec((0u64..200, 0u64..50, proptest::bool::weighted(0.3)), 0..40)) {
            let mut r = RangeSet::new();
            let mut bits = vec![false; 260];
            for (s, l, remove) in ops {
                let (changed, want) = if remove {
                    (r.remove(s, s + l), false)
                } else {
                    (r.insert(s, s + l), true)
                };
                let mut flipped = 0;
                for b in &mut bits[s as usize..(s + l) as usize] {
                    if *b != want { flipped += 1; *b = want; }
                }
                proptest::prop_assert_eq!(changed, flipped);
                // Still disjoint, sorted and non-adjacent.
                for w in r.ranges.windows(2) {
                    proptest::prop_assert!(w[0].1 < w[1].0);
                }
                proptest::prop_assert!(r.ranges.iter().all(|(a, b)| a < b));
            }
            proptest::prop_assert_eq!(r.covered(), bits.iter().filter(|b| **b).count() as u64);
            let gaps: u64 = r.missing(260).iter().map(|(s, e)| e - s).sum();
            proptest::prop_assert_eq!(gaps + r.covered(), 260);
            let enc = r.encode();
            let (back, used) = RangeSet::decode(&enc).unwrap();
            proptest::prop_assert_eq!(back, r);
            proptest::prop_assert_eq!(used, enc.len());
        }
    }
}
