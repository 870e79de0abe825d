//! Rateless invertible Bloom lookup tables (Yang, Gilad, Alizadeh, SIGCOMM 2024).
//!
//! A set of 64-bit ids is encoded as an endless stream of coded symbols; a peer holding
//! a similar set subtracts its own symbols and peels the difference out of the first
//! ~1.35-1.7·d symbols, d being the size of the symmetric difference, whatever the
//! sizes of the sets. Element `x` always lands in symbol 0 and then in a sparse,
//! pseudo-random sequence of later symbols (density ~1/(1 + i/2)), so a prefix of the
//! stream works for any d.
//!
//! On the wire a symbol is 13 bytes: the XOR of its ids (8), the XOR of their checksums
//! truncated to 32 bits (4), and the count modulo 256 (1). Counts and checksums only
//! ever combine by wrapping addition and XOR, so the truncations are exact.
//!
//! [`Encoder`] keeps the produced prefix current as ids are added and removed, so a
//! long-lived session never rebuilds it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

/// Bytes of one coded symbol on the wire.
pub const SYMBOL_LEN: usize = 13;

/// One coded symbol.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Symbol {
    pub sum: u64,
    pub checksum: u32,
    pub count: u8,
}

impl Symbol {
    fn apply(&mut self, id: u64, add: bool) {
        self.sum ^= id;
        self.checksum ^= checksum(id);
        self.count = if add {
            self.count.wrapping_add(1)
        } else {
            self.count.wrapping_sub(1)
        };
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.sum.to_le_bytes());
        out.extend_from_slice(&self.checksum.to_le_bytes());
        out.push(self.count);
    }

    /// Reads one symbol from exactly [`SYMBOL_LEN`] bytes.
    pub fn decode(b: &[u8; SYMBOL_LEN]) -> Self {
        let mut sum = [0u8; 8];
        sum.copy_from_slice(&b[..8]);
        let mut ck = [0u8; 4];
        ck.copy_from_slice(&b[8..12]);
        Self {
            sum: u64::from_le_bytes(sum),
            checksum: u32::from_le_bytes(ck),
            count: b[12],
        }
    }

    fn is_zero(&self) -> bool {
        self.sum == 0 && self.checksum == 0 && self.count == 0
    }
}

/// SplitMix64 finaliser: ids are already salted hashes, so a mixer suffices.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn checksum(id: u64) -> u32 {
    mix(id ^ 0x5ca1_ab1e_0dd5_eed5) as u32
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
        self.mappings.contains_key(&id)
    }

    /// Symbols produced so far.
    pub fn produced(&self) -> usize {
        self.symbols.len()
    }

    /// Adds `id` (no-op if present), updating every symbol already produced.
    pub fn insert(&mut self, id: u64) -> bool {
        if self.mappings.contains_key(&id) {
            return false;
        }
        let m = self.walk(id, true);
        self.mappings.insert(id, m);
        self.pending.push(Reverse((m.last, id)));
        true
    }

    /// Removes `id` (no-op if absent), updating every symbol already produced.
    pub fn remove(&mut self, id: u64) -> bool {
        if self.mappings.remove(&id).is_none() {
            return false;
        }
        // Its heap entry is dropped lazily when it surfaces.
        self.walk(id, false);
        true
    }

    /// Applies `id` to produced symbols; returns its mapping positioned at the first
    /// index not yet produced.
    fn walk(&mut self, id: u64, add: bool) -> Mapping {
        let mut m = Mapping::new(id);
        let n = self.symbols.len() as u64;
        while m.last < n {
            self.symbols[m.last as usize].apply(id, add);
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
                s.apply(id, true);
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

/// Peels the difference between a remote set (its coded symbols arrive in order) and
/// the local set (encoded by a local [`Encoder`] over ids with the same salt).
#[derive(Debug, Clone, Default)]
pub struct Decoder {
    /// remote - local, with decoded ids peeled off.
    diff: Vec<Symbol>,
    remote_only: Vec<u64>,
    local_only: Vec<u64>,
    seen: HashSet<u64>,
    /// Decoded ids by the next index they map to: (index, id, is_local, prng state).
    pending: BinaryHeap<Reverse<(u64, u64, bool, u64)>>,
    pure: Vec<usize>,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Symbols received so far.
    pub fn received(&self) -> usize {
        self.diff.len()
    }

    /// Adds the next remote symbol (index = [`Decoder::received`]); `local` supplies
    /// the local set's symbol at that index.
    pub fn push(&mut self, remote: Symbol, local: &mut Encoder) {
        let idx = self.diff.len() as u64;
        let l = local.symbol(idx as usize);
        let mut d = Symbol {
            sum: remote.sum ^ l.sum,
            checksum: remote.checksum ^ l.checksum,
            count: remote.count.wrapping_sub(l.count),
        };
        // Peel ids already decoded that map here.
        while let Some(&Reverse((next, id, is_local, prng))) = self.pending.peek() {
            if next != idx {
                break;
            }
            self.pending.pop();
            d.apply(id, is_local);
            let mut m = Mapping { prng, last: next };
            m.next();
            self.pending.push(Reverse((m.last, id, is_local, m.prng)));
        }
        self.diff.push(d);
        self.pure.push(idx as usize);
        self.peel();
    }

    fn peel(&mut self) {
        while let Some(i) = self.pure.pop() {
            let s = self.diff[i];
            let is_local = match s.count {
                1 => false,  // one remote id: remove it
                255 => true, // one local id (count -1): add it back
                _ => continue,
            };
            if checksum(s.sum) != s.checksum || !self.seen.insert(s.sum) {
                continue;
            }
            let id = s.sum;
            let mut m = Mapping::new(id);
            let n = self.diff.len() as u64;
            while m.last < n {
                let j = m.last as usize;
                self.diff[j].apply(id, is_local);
                if matches!(self.diff[j].count, 1 | 255) {
                    self.pure.push(j);
                }
                m.next();
            }
            self.pending.push(Reverse((m.last, id, is_local, m.prng)));
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
        self.diff.first().is_some_and(Symbol::is_zero)
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
