//! Seeded randomness. One independent ChaCha8 stream per link direction (or per radio)
//! and per node, so adding a node or a link never changes the draws of another one.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

fn derive(seed: u64, tag: &[u8; 8], a: u64, b: u64) -> ChaCha8Rng {
    // Key layout: seed | a | b | tag, all little-endian. Documented in docs/sim.md.
    let mut key = [0u8; 32];
    key[0..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&a.to_le_bytes());
    key[16..24].copy_from_slice(&b.to_le_bytes());
    key[24..32].copy_from_slice(tag);
    ChaCha8Rng::from_seed(key)
}

/// The RNG of link `link`, stream `index` (the sending port of a point-to-point link, or
/// the radio of a shared medium).
pub fn link_rng(seed: u64, link: u64, index: u64) -> ChaCha8Rng {
    derive(seed, b"sw-link\0", link, index)
}

/// The RNG the simulator offers to node `node` (see `Simulator::node_rng`).
pub fn node_rng(seed: u64, node: u64) -> ChaCha8Rng {
    derive(seed, b"sw-node\0", node, 0)
}

/// A uniform draw in [0, 1) with 53 bits of precision.
pub(crate) fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// True with probability `p`. Draws nothing when `p` is 0, so a disabled impairment does
/// not shift the stream of the enabled ones.
pub(crate) fn chance(rng: &mut ChaCha8Rng, p: f64) -> bool {
    p > 0.0 && unit(rng) < p
}

/// A uniform integer in `0..n` (`n > 0`).
pub(crate) fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    // Lemire's multiply-shift; the bias is below 2^-32 for the small n used here.
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}
