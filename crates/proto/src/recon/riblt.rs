//! Rateless invertible Bloom lookup tables (Yang, Gilad, Alizadeh, SIGCOMM 2024).
//!
//! A set of 48-bit ids is encoded as an endless stream of coded symbols; a peer holding
//! a similar set subtracts its own symbols and peels the difference out of the first
//! ~1.35-1.7·d symbols, d being the size of the symmetric difference, whatever the
//! sizes of the sets. Element `x` always lands in symbol 0 and then in a sparse,
//! pseudo-random sequence of later symbols (density ~1/(1 + i/2)), so a prefix of the
//! stream works for any d.
//!
//! On the wire a symbol is 9 bytes: the XOR of its ids (6) and the XOR of their 24-bit
//! checksums (3). There is no count: a symbol is taken as pure (one id) when its
//! checksum matches its sum *and* the id it names maps to that symbol's index (an id
//! lands in symbol `i > 0` with probability ~2/(i + 2)); which side the id is on is
//! then known without a count, because the decoder knows its own set (an id it holds
//! is local-only, any other remote-only). A false peel needs an impure symbol whose
//! XORed checksums equal the checksum of its XORed ids (2^-24) and whose sum maps to
//! its index; a d = 200 reconciliation makes ~5,000 purity checks, so about one in
//! 10^5 or fewer reconciliations would stall (the decoder would not converge; the
//! next session's salt gives fresh ids).
//!
//! [`Encoder`] keeps the produced prefix current as ids are added and removed, so a
//! long-lived session never rebuilds it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

/// Bytes of one coded symbol on the wire.
pub const SYMBOL_LEN: usize = 9;

/// Bits of an id (a session's short ids are below `2^ID_BITS`).
pub const ID_BITS: u32 = 48;
/// Mask of the id bits.
pub const ID_MASK: u64 = (1 << ID_BITS) - 1;
/// Mask of the checksum bits.
const CHECK_MASK: u32 = (1 << 24) - 1;

/// One coded symbol: XOR of 48-bit ids and XOR of their 24-bit checksums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Symbol {
    pub sum: u64,
    pub checksum: u32,
}

impl Symbol {
    fn apply(&mut self, id: u64) {
        self.sum ^= id;
        self.checksum ^= checksum(id);
    }

    /// `sum` as `u48` then `checksum` as `u24`, little-endian (bits above are dropped).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.sum.to_le_bytes()[..6]);
        out.extend_from_slice(&self.checksum.to_le_bytes()[..3]);
    }

    /// Reads one symbol from exactly [`SYMBOL_LEN`] bytes.
    pub fn decode(b: &[u8; SYMBOL_LEN]) -> Self {
        let mut sum = [0u8; 8];
        sum[..6].copy_from_slice(&b[..6]);
        let mut ck = [0u8; 4];
        ck[..3].copy_from_slice(&b[6..9]);
        Self {
            sum: u64::from_le_bytes(sum),
            checksum: u32::from_le_bytes(ck),
        }
    }

    fn is_zero(&self) -> bool {
        self.sum == 0 && self.checksum == 0
    }
}

/// SplitMix64 finaliser: ids are already salted hashes, so a mixer suffices.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn checksum(id: u64) -> u32 {
    mix(id ^ 0x5ca1_ab1e_0dd5_eed5) as u32 & CHECK_MASK
}

/// The pseudo-random sequence of symbol indices an id is mapped to.
#[derive(Debug, Clone, Copy)]
struct Mapping {
    prng: u64,
    last: u64,
}

impl Mapping {
    fn new(id: u64) -> Self {
        Self {
            prng: mix(id ^ 0x9e37_79b9_7f4a_7c15),
            last: 0,
        }
    }

    /// Index after `last`: gaps grow so that P(x in symbol i) ~ 1/(1 + i/2).
    fn next(&mut self) -> u64 {
        self.prng = self.prng.wrapping_mul(0xda94_2042_e4dd_58b5);
        // r/2^64 is uniform u in [0, 1); the gap is (last + 1.5)(1/sqrt(u) - 1).
        let r = self.prng as f64;
        let step =
            ((self.last as f64 + 1.5) * ((1u64 << 32) as f64 / (r + 1.0).sqrt() - 1.0)).ceil();
        self.last = self.last.saturating_add(if step.is_finite() {
            step.max(1.0) as u64
        } else {
            u64::MAX / 2
        });
        self.last
    }
}

impl Mapping {
    /// Whether the id this mapping started from lands in symbol `i`.
    fn hits(mut self, i: u64) -> bool {
        while self.last < i {
            self.next();
        }
        self.last == i
    }
}

/// Coded symbols for a set of ids, produced on demand and kept current under changes.
#[derive(Debug, Clone, Default)]
pub struct Encoder {
    symbols: Vec<Symbol>,
    /// Per id: the next index at or beyond `symbols.len()` it maps to.
    pending: BinaryHeap<Reverse<(u64, u64)>>,
    mappings: HashMap<u64, Mapping>,
}

impl Encoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.mappings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.mappings.is_empty()
    }

    pub fn contains(&self, id: u64) -> bool {
        self.mappings.contains_key(&(id & ID_MASK))
    }

    /// The ids of the set, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.mappings.keys().copied()
    }

    /// Symbols produced so far.
    pub fn produced(&self) -> usize {
        self.symbols.len()
    }

    /// Adds `id` (no-op if present), updating every symbol already produced. Only the
    /// low [`ID_BITS`] bits of `id` are used.
    pub fn insert(&mut self, id: u64) -> bool {
        let id = id & ID_MASK;
        if self.mappings.contains_key(&id) {
            return false;
        }
        let m = self.walk(id);
        self.mappings.insert(id, m);
        self.pending.push(Reverse((m.last, id)));
        true
    }

    /// Removes `id` (no-op if absent), updating every symbol already produced.
    pub fn remove(&mut self, id: u64) -> bool {
        let id = id & ID_MASK;
        if self.mappings.remove(&id).is_none() {
            return false;
        }
        // Its heap entry is dropped lazily when it surfaces.
        self.walk(id);
        true
    }

    /// Applies `id` to produced symbols; returns its mapping positioned at the first
    /// index not yet produced.
    fn walk(&mut self, id: u64) -> Mapping {
        let mut m = Mapping::new(id);
        let n = self.symbols.len() as u64;
        while m.last < n {
            self.symbols[m.last as usize].apply(id);
            m.next();
        }
        m
    }

    /// Symbol `i`, producing symbols up to it if needed.
    pub fn symbol(&mut self, i: usize) -> Symbol {
        self.extend_to(i + 1);
        self.symbols[i]
    }

    /// Produces symbols until `n` exist.
    pub fn extend_to(&mut self, n: usize) {
        while self.symbols.len() < n {
            let idx = self.symbols.len() as u64;
            let mut s = Symbol::default();
            while let Some(&Reverse((next, id))) = self.pending.peek() {
                if next != idx {
                    break;
                }
                self.pending.pop();
                let Some(m) = self.mappings.get_mut(&id) else {
                    continue;
                };
                if m.last != idx {
                    continue; // stale entry of an id removed and re-added
                }
                s.apply(id);
                m.next();
                self.pending.push(Reverse((m.last, id)));
            }
            self.symbols.push(s);
        }
    }
}

/// What a [`Decoder`] learned once the difference is fully peeled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Difference {
    /// Ids the remote set holds and the local set lacks.
    pub remote_only: Vec<u64>,
    /// Ids the local set holds and the remote set lacks.
    pub local_only: Vec<u64>,
}

/// Peels the difference between a remote set and the local set (encoded by a local
/// [`Encoder`] over ids with the same salt). The remote symbols may come with gaps (a
/// lost frame) and the missing ones later or never: the code is rateless, so any
/// `~1.38 d` of them decode, and only symbol 0 (which holds every id, and so tells when
/// the difference is whole) is needed in particular.
#[derive(Debug, Clone, Default)]
pub struct Decoder {
    /// remote - local, with decoded ids peeled off (where `got`).
    diff: Vec<Symbol>,
    /// Which indices hold a received symbol (the rest are gaps).
    got: Vec<bool>,
    /// Symbols received (`got` set).
    count: usize,
    remote_only: Vec<u64>,
    local_only: Vec<u64>,
    seen: HashSet<u64>,
    /// Decoded ids by the next index they map to: (index, id, prng state).
    pending: BinaryHeap<Reverse<(u64, u64, u64)>>,
    pure: Vec<usize>,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// One past the highest index received: where fresh symbols continue.
    pub fn received(&self) -> usize {
        self.diff.len()
    }

    /// Symbols actually received (gaps not counted).
    pub fn count(&self) -> usize {
        self.count
    }

    /// The first run of missing indices below [`Decoder::received`]: `(from, count)`.
    pub fn first_gap(&self) -> Option<(u64, u64)> {
        let from = self.got.iter().position(|&g| !g)?;
        let count = self.got[from..].iter().take_while(|&&g| !g).count();
        Some((from as u64, count as u64))
    }

    /// Whether symbol `i` was received.
    pub fn has(&self, i: u64) -> bool {
        self.got.get(i as usize).copied().unwrap_or(false)
    }

    /// Adds the remote symbol at index `idx`, leaving a gap for any skipped before it
    /// and filling a gap when one comes late (a symbol already held is ignored).
    pub fn insert(&mut self, idx: u64, remote: Symbol, local: &mut Encoder) {
        let len = self.diff.len() as u64;
        if idx < len {
            if self.got[idx as usize] {
                return;
            }
            // A late symbol: every id decoded so far that maps here comes off it.
            let l = local.symbol(idx as usize);
            let mut d = Symbol {
                sum: (remote.sum ^ l.sum) & ID_MASK,
                checksum: (remote.checksum ^ l.checksum) & CHECK_MASK,
            };
            for &id in self.remote_only.iter().chain(&self.local_only) {
                if Mapping::new(id).hits(idx) {
                    d.apply(id);
                }
            }
            self.diff[idx as usize] = d;
            self.got[idx as usize] = true;
            self.count += 1;
            self.pure.push(idx as usize);
            self.peel(local);
            return;
        }
        while (self.diff.len() as u64) < idx {
            self.skip();
        }
        self.push(remote, local);
    }

    /// A gap at the next index: decoded ids mapping there move on past it.
    fn skip(&mut self) {
        let idx = self.diff.len() as u64;
        while let Some(&Reverse((next, id, prng))) = self.pending.peek() {
            if next != idx {
                break;
            }
            self.pending.pop();
            let mut m = Mapping { prng, last: next };
            m.next();
            self.pending.push(Reverse((m.last, id, m.prng)));
        }
        self.diff.push(Symbol::default());
        self.got.push(false);
    }

    /// Adds the next remote symbol (index = [`Decoder::received`]); `local` supplies
    /// the local set's symbol at that index.
    pub fn push(&mut self, remote: Symbol, local: &mut Encoder) {
        let idx = self.diff.len() as u64;
        let l = local.symbol(idx as usize);
        let mut d = Symbol {
            sum: (remote.sum ^ l.sum) & ID_MASK,
            checksum: (remote.checksum ^ l.checksum) & CHECK_MASK,
        };
        // Peel ids already decoded that map here.
        while let Some(&Reverse((next, id, prng))) = self.pending.peek() {
            if next != idx {
                break;
            }
            self.pending.pop();
            d.apply(id);
            let mut m = Mapping { prng, last: next };
            m.next();
            self.pending.push(Reverse((m.last, id, m.prng)));
        }
        self.diff.push(d);
        self.got.push(true);
        self.count += 1;
        self.pure.push(idx as usize);
        self.peel(local);
    }

    fn peel(&mut self, local: &Encoder) {
        while let Some(i) = self.pure.pop() {
            let s = self.diff[i];
            // Pure: one id, whose checksum matches and which maps to this index.
            if !self.got[i]
                || s.sum == 0
                || checksum(s.sum) != s.checksum
                || !Mapping::new(s.sum).hits(i as u64)
                || self.seen.contains(&s.sum)
            {
                continue;
            }
            let id = s.sum;
            self.seen.insert(id);
            // No count on the wire: an id we hold is ours, any other is the peer's.
            let is_local = local.contains(id);
            let mut m = Mapping::new(id);
            let n = self.diff.len() as u64;
            while m.last < n {
                let j = m.last as usize;
                if self.got[j] {
                    self.diff[j].apply(id);
                    if self.diff[j].sum != 0 {
                        self.pure.push(j);
                    }
                }
                m.next();
            }
            self.pending.push(Reverse((m.last, id, m.prng)));
            if is_local {
                self.local_only.push(id);
            } else {
                self.remote_only.push(id);
            }
        }
    }

    /// Whether the difference is fully known: symbol 0 holds every id of both sets, so
    /// it peels to zero exactly when every differing id has been decoded.
    pub fn is_decoded(&self) -> bool {
        self.has(0) && self.diff[0].is_zero()
    }

    /// The difference decoded so far (all of it once [`Decoder::is_decoded`]).
    pub fn difference(&self) -> Difference {
        let mut remote_only = self.remote_only.clone();
        let mut local_only = self.local_only.clone();
        remote_only.sort_unstable();
        local_only.sort_unstable();
        Difference {
            remote_only,
            local_only,
        }
    }
}

#[cfg(test)]
mod tests;
