//! Reed-Solomon (255,223) over GF(256) as LBARD and the Serval RFD900 firmware use it:
//! the CCSDS code (field polynomial x^8+x^7+x^2+x+1, first consecutive root 112,
//! primitive element alpha^11, 32 parity bytes) in the conventional basis, shortened to
//! the frame's length (virtual zero padding in front), parity after the data. This is
//! Phil Karn's `encode_rs_8`/`decode_rs_8` from libfec, which LBARD links; the `fec`
//! crate implements the same code.

use fec::reed_solomon::{Decoder, Encoder};

/// Parity bytes per frame.
pub const PARITY: usize = 32;
/// Largest frame the code protects.
pub const MAX_DATA: usize = 223;

/// Why a received block was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RsError {
    /// Shorter than the parity, or longer than a code block.
    BadLength,
    /// More byte errors than the parity can correct.
    Uncorrectable,
}

/// An encoder and decoder pair (they keep scratch space, so reuse one).
#[derive(Debug)]
pub struct Rs {
    enc: Encoder,
    dec: Decoder,
    block: Vec<u8>,
}

impl Default for Rs {
    fn default() -> Self {
        Rs::new()
    }
}

impl Rs {
    pub fn new() -> Rs {
        Rs {
            enc: Encoder::new_ccsds(),
            dec: Decoder::new_ccsds(),
            block: vec![0; 255],
        }
    }

    /// Appends `data` (at most [`MAX_DATA`] bytes) and its parity to `out`.
    pub fn encode(&mut self, data: &[u8], out: &mut Vec<u8>) {
        assert!(data.len() <= MAX_DATA, "frame longer than {MAX_DATA} bytes");
        let n = data.len() + PARITY;
        self.enc
            .encode(data, &mut self.block[..n])
            .expect("length checked");
        out.extend_from_slice(&self.block[..n]);
    }

    /// Checks and corrects `block` (data then parity); returns the data and the number of
    /// bytes corrected.
    pub fn decode(&mut self, block: &[u8]) -> Result<(Vec<u8>, usize), RsError> {
        if block.len() <= PARITY || block.len() > MAX_DATA + PARITY {
            return Err(RsError::BadLength);
        }
        let data_len = block.len() - PARITY;
        let mut data = vec![0u8; data_len];
        let corrected = self
            .dec
            .decode(block, &mut data)
            .map_err(|_| RsError::Uncorrectable)?;
        if corrected > 0 {
            // The decoder may "correct" a position in the virtual padding, which is no
            // codeword of the shortened code: re-encode and require the result within
            // the code's reach of what was received.
            let mut check = Vec::with_capacity(block.len());
            self.encode(&data, &mut check);
            let differ = check.iter().zip(block).filter(|(a, b)| a != b).count();
            if differ > PARITY / 2 {
                return Err(RsError::Uncorrectable);
            }
        }
        Ok((data, corrected))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Phil Karn's encoder (libfec `encode_rs.h` with the CCSDS parameters of `fixed.h`),
    /// written out to check that the crate computes the parity LBARD does.
    fn karn_parity(data: &[u8]) -> Vec<u8> {
        const NN: usize = 255;
        const A0: usize = NN;
        let (fcr, prim, nroots, gfpoly) = (112usize, 11usize, 32usize, 0x187u32);
        let mut alpha_to = [0u8; 256];
        let mut index_of = [0usize; 256];
        let mut sr = 1u32;
        index_of[0] = A0;
        for (i, a) in alpha_to.iter_mut().enumerate().take(NN) {
            index_of[sr as usize] = i;
            *a = sr as u8;
            sr <<= 1;
            if sr & 256 != 0 {
                sr ^= gfpoly;
            }
        }
        let modnn = |x: usize| x % NN;
        let mut genpoly = vec![0u8; nroots + 1];
        genpoly[0] = 1;
        let mut root = fcr * prim;
        for i in 0..nroots {
            genpoly[i + 1] = 1;
            for j in (1..=i).rev() {
                genpoly[j] = if genpoly[j] != 0 {
                    genpoly[j - 1] ^ alpha_to[modnn(index_of[genpoly[j] as usize] + root)]
                } else {
                    genpoly[j - 1]
                };
            }
            genpoly[0] = alpha_to[modnn(index_of[genpoly[0] as usize] + root)];
            root += prim;
        }
        let gen_idx: Vec<usize> = genpoly.iter().map(|&g| index_of[g as usize]).collect();
        let mut parity = vec![0u8; nroots];
        for &d in data {
            let feedback = index_of[(d ^ parity[0]) as usize];
            if feedback != A0 {
                for j in 1..nroots {
                    parity[j] ^= alpha_to[modnn(feedback + gen_idx[nroots - j])];
                }
            }
            parity.rotate_left(1);
            parity[nroots - 1] = if feedback != A0 {
                alpha_to[modnn(feedback + gen_idx[0])]
            } else {
                0
            };
        }
        parity
    }

    fn data(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn parity_matches_libfec_for_every_length() {
        let mut rs = Rs::new();
        for len in 1..=MAX_DATA {
            let d = data(len as u64, len);
            let mut out = Vec::new();
            rs.encode(&d, &mut out);
            assert_eq!(&out[..len], &d[..]);
            assert_eq!(&out[len..], &karn_parity(&d)[..], "length {len}");
        }
    }

    #[test]
    fn corrects_up_to_sixteen_errors_and_refuses_more() {
        let mut rs = Rs::new();
        for (seed, len) in [(1u64, 223usize), (2, 100), (3, 33), (4, 1)] {
            let d = data(seed, len);
            let mut block = Vec::new();
            rs.encode(&d, &mut block);
            let n = block.len();
            let mut bad = block.clone();
            let errors = 16.min(n);
            for k in 0..errors {
                bad[(k * 7 + seed as usize) % n] ^= 0x5a;
            }
            let (got, fixed) = rs.decode(&bad).unwrap();
            assert_eq!(got, d);
            assert!(fixed > 0 && fixed <= 16);
            if n >= 40 {
                // Beyond the code's reach the block is refused, not "corrected" wrongly.
                let mut worse = block.clone();
                for k in 0..24 {
                    worse[(k * 7 + 3) % n] ^= 0xa5;
                }
                assert_eq!(rs.decode(&worse), Err(RsError::Uncorrectable));
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn random_blocks_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let mut rs = Rs::new();
            let _ = rs.decode(&bytes);
        }
    }
}
