//! Unsigned LEB128 varints, as used throughout the manifest and wire encodings.
//!
//! Decoding is strict: an over-long encoding (a redundant trailing zero group) or a
//! value past `u64::MAX` is rejected, so every value has exactly one encoding.

/// Bytes needed to encode `v`.
pub fn len(v: u64) -> usize {
    let bits = 64 - v.leading_zeros() as usize;
    bits.div_ceil(7).max(1)
}

/// Appends the encoding of `v` to `out`.
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The input ended inside the varint.
    Truncated,
    /// The encoding is longer than needed or exceeds 64 bits.
    NonCanonical,
}

/// Reads a varint from the front of `buf`, returning the value and the bytes used.
pub fn get(buf: &[u8]) -> Result<(u64, usize), VarintError> {
    let mut v: u64 = 0;
    for (i, &b) in buf.iter().enumerate() {
        if i == 9 && b > 1 {
            return Err(VarintError::NonCanonical);
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if b == 0 && i > 0 {
                return Err(VarintError::NonCanonical);
            }
            return Ok((v, i + 1));
        }
        if i == 9 {
            return Err(VarintError::NonCanonical);
        }
    }
    Err(VarintError::Truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_encodings() {
        let cases: &[(u64, &[u8])] = &[
            (0, &[0x00]),
            (1, &[0x01]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (300, &[0xac, 0x02]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ];
        for &(v, bytes) in cases {
            let mut out = Vec::new();
            put(&mut out, v);
            assert_eq!(out, bytes, "encoding {v}");
            assert_eq!(len(v), bytes.len());
            assert_eq!(get(bytes), Ok((v, bytes.len())));
        }
    }

    #[test]
    fn rejects_bad_encodings() {
        assert_eq!(get(&[]), Err(VarintError::Truncated));
        assert_eq!(get(&[0x80]), Err(VarintError::Truncated));
        assert_eq!(get(&[0x80, 0x00]), Err(VarintError::NonCanonical));
        assert_eq!(get(&[0xff; 10]), Err(VarintError::NonCanonical));
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert_eq!(get(&over), Err(VarintError::NonCanonical));
    }

    proptest::proptest! {
        #[test]
        fn round_trip(v: u64) {
            let mut out = Vec::new();
            put(&mut out, v);
            proptest::prop_assert_eq!(get(&out), Ok((v, out.len())));
        }
    }
}
