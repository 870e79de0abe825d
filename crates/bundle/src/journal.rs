//! Resumable BLAKE3 tree hashing for journals.
//!
//! BLAKE3 hashes 1 KiB chunks into a binary tree. A node that holds a journal's first
//! `n` bytes keeps the chaining values of the complete subtrees covering them plus the
//! last (partial) chunk: at most 54 values and 1 KiB. With that [`JournalState`] it can
//! hash only a newly received tail and still obtain the root hash of the whole payload,
//! to check it against the new manifest, without re-reading the prefix.

use blake3::hazmat::{
    ChainingValue, HasherExt, Mode, merge_subtrees_non_root, merge_subtrees_root,
};

use crate::PayloadHash;
use crate::varint;

const CHUNK: usize = 1024;

/// Hash state after the first `len` bytes of a payload; serialisable, so it can be
/// stored beside a journal and resumed after a restart.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JournalState {
    len: u64,
    /// Chaining values of complete subtrees, largest (leftmost) first. Every complete
    /// chunk except the last one held is folded in here.
    stack: Vec<ChainingValue>,
    /// The last chunk's bytes (1..=1024 of them when `len > 0`), kept out of the stack
    /// because whether it is the root depends on what follows.
    last: Vec<u8>,
}

/// Why a stored journal state could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stored journal hash state is corrupt: {0}")]
pub struct JournalStateError(&'static str);

impl JournalState {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes hashed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Chunks folded into the stack.
    fn stacked_chunks(&self) -> u64 {
        self.len.saturating_sub(1) / CHUNK as u64
    }

    pub fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.last.len() == CHUNK {
                // More input follows a full chunk: it is not the last, fold it in.
                let index = self.stacked_chunks();
                let mut h = blake3::Hasher::new();
                h.set_input_offset(index * CHUNK as u64);
                h.update(&self.last);
                let mut cv = h.finalize_non_root();
                let mut total = index + 1;
                while total & 1 == 0 {
                    let left = self.stack.pop().unwrap_or_default();
                    cv = merge_subtrees_non_root(&left, &cv, Mode::Hash);
                    total >>= 1;
                }
                self.stack.push(cv);
                self.last.clear();
            }
            let take = (CHUNK - self.last.len()).min(data.len());
            self.last.extend_from_slice(&data[..take]);
            self.len += take as u64;
            data = &data[take..];
        }
    }

    /// The payload hash of everything hashed so far. Does not consume the state.
    pub fn finalize(&self) -> PayloadHash {
        if self.stack.is_empty() {
            return PayloadHash::from_blake3(&blake3::hash(&self.last));
        }
        let mut h = blake3::Hasher::new();
        h.set_input_offset(self.stacked_chunks() * CHUNK as u64);
        h.update(&self.last);
        let mut cv = h.finalize_non_root();
        for (i, left) in self.stack.iter().enumerate().rev() {
            if i == 0 {
                return PayloadHash::from_blake3(&merge_subtrees_root(left, &cv, Mode::Hash));
            }
            cv = merge_subtrees_non_root(left, &cv, Mode::Hash);
        }
        unreachable!("the loop returns at i == 0 because the stack is not empty")
    }

    /// Serialises the state: `varint(len) varint(stack count) cv* last-chunk-bytes`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + 32 * self.stack.len() + self.last.len());
        varint::put(&mut out, self.len);
        varint::put(&mut out, self.stack.len() as u64);
        for cv in &self.stack {
            out.extend_from_slice(cv);
        }
        out.extend_from_slice(&self.last);
        out
    }

    pub fn decode(buf: &[u8]) -> Result<Self, JournalStateError> {
        let (len, a) = varint::get(buf).map_err(|_| JournalStateError("length"))?;
        let (count, b) = varint::get(&buf[a..]).map_err(|_| JournalStateError("count"))?;
        let mut state = Self {
            len,
            stack: Vec::new(),
            last: Vec::new(),
        };
        if count != u64::from(state.stacked_chunks().count_ones()) {
            return Err(JournalStateError("stack size does not match length"));
        }
        let mut rest = &buf[a + b..];
        for _ in 0..count {
            let (cv, r) = rest
                .split_first_chunk::<32>()
                .ok_or(JournalStateError("stack"))?;
            state.stack.push(*cv);
            rest = r;
        }
        let expect_last = (len - state.stacked_chunks() * CHUNK as u64) as usize;
        if rest.len() != expect_last {
            return Err(JournalStateError("last chunk length"));
        }
        state.last = rest.to_vec();
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 + i / 1024) as u8).collect()
    }

    #[test]
    fn matches_blake3_at_boundaries() {
        for n in [
            0,
            1,
            1023,
            1024,
            1025,
            2048,
            2049,
            3072,
            4096,
            4097,
            8192 + 7,
            65536,
            100_000,
        ] {
            let d = data(n);
            let mut s = JournalState::new();
            s.update(&d);
            assert_eq!(s.finalize(), crate::hash_payload(&d), "length {n}");
        }
    }

    #[test]
    fn resumes_from_encoded_state() {
        let d = data(50_000);
        for split in [0, 1, 1024, 1500, 4096, 30_000, 49_999] {
            let mut s = JournalState::new();
            s.update(&d[..split]);
            let mut resumed = JournalState::decode(&s.encode()).unwrap();
            assert_eq!(resumed, s);
            resumed.update(&d[split..]);
            assert_eq!(resumed.finalize(), crate::hash_payload(&d), "split {split}");
        }
    }

    #[test]
    fn state_is_small() {
        let mut s = JournalState::new();
        s.update(&data(1 << 20));
        // 1 MiB = 1024 chunks: 1023 stacked chunks -> 10 CVs, plus the last chunk
        assert!(
            s.encode().len() <= 10 * 32 + 1024 + 8,
            "{}",
            s.encode().len()
        );
    }

    #[test]
    fn rejects_corrupt_state() {
        let mut s = JournalState::new();
        s.update(&data(5000));
        let enc = s.encode();
        assert!(JournalState::decode(&enc[..enc.len() - 1]).is_err());
        assert!(JournalState::decode(&[]).is_err());
        let mut bad = enc.clone();
        bad[1] += 1;
        assert!(JournalState::decode(&bad).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_split_matches(len in 0usize..20_000, cuts in proptest::collection::vec(0usize..20_000, 0..5)) {
            let d = data(len);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(len)).collect();
            cuts.sort();
            let mut s = JournalState::new();
            let mut at = 0;
            for c in cuts {
                s.update(&d[at..c]);
                s = JournalState::decode(&s.encode()).unwrap();
                at = c;
            }
            s.update(&d[at..]);
            proptest::prop_assert_eq!(s.finalize(), crate::hash_payload(&d));
        }
    }
}
