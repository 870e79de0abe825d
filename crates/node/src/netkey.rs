//! The network-key tag on radio links: every frame carries a truncated keyed hash of its
//! bytes under a key the network's nodes share, and a frame without a valid tag is
//! dropped before the protocol sees it (like Reticulum's interface access codes).
//!
//! Authentication only: the frame stays in clear, so a link under amateur rules may
//! carry it (a tag does not obscure what is sent). It keeps out frames from stations
//! without the key (strangers, other networks on the channel, line noise). It does not
//! stop a replay: a frame heard on the air and sent again verifies. That is harmless to
//! the protocol: bundles are signed and versioned (a replayed manifest or piece is
//! a duplicate), and a replayed HELLO only greets again. docs/daemon.md, "Network key".

use subtle::ConstantTimeEq;

/// Tag lengths accepted, in bytes, and the default.
pub const MIN_TAG: usize = 4;
pub const MAX_TAG: usize = 32;
pub const DEFAULT_TAG: usize = 8;

/// Context of the tag key's derivation: the network key may also key an IP link's
/// handshake (`trust = "network"`), and each use gets its own key.
const CONTEXT: &str = "skywave radio frame tag v1";

/// Tags and checks frames under one network key.
#[derive(Clone)]
pub struct FrameTag {
    key: [u8; 32],
    len: usize,
}

impl std::fmt::Debug for FrameTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("FrameTag").field("len", &self.len).finish()
    }
}

impl FrameTag {
    /// Tags of `len` bytes ([`MIN_TAG`]..=[`MAX_TAG`]) under `network_key`.
    pub fn new(network_key: &[u8; 32], len: usize) -> Result<FrameTag, String> {
        if !(MIN_TAG..=MAX_TAG).contains(&len) {
            return Err(format!(
                "a network tag of {len} bytes: expected {MIN_TAG} to {MAX_TAG} (default {DEFAULT_TAG})"
            ));
        }
        Ok(FrameTag {
            key: blake3::derive_key(CONTEXT, network_key),
            len,
        })
    }

    /// Bytes each frame grows by.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn tag(&self, body: &[u8]) -> blake3::Hash {
        blake3::keyed_hash(&self.key, body)
    }

    /// Appends the tag of `frame` to it.
    pub fn append(&self, frame: &mut Vec<u8>) {
        let t = self.tag(frame);
        frame.extend_from_slice(&t.as_bytes()[..self.len]);
    }

    /// The frame without its tag if the tag is valid; `None` (drop it) otherwise,
    /// including a frame too short to hold a tag and a body.
    pub fn verify<'a>(&self, frame: &'a [u8]) -> Option<&'a [u8]> {
        if frame.len() <= self.len {
            return None;
        }
        let (body, tag) = frame.split_at(frame.len() - self.len);
        let want = self.tag(body);
        bool::from(want.as_bytes()[..self.len].ct_eq(tag)).then_some(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tagged(t: &FrameTag, body: &[u8]) -> Vec<u8> {
        let mut f = body.to_vec();
        t.append(&mut f);
        f
    }

    #[test]
    fn a_tagged_frame_verifies_and_loses_its_tag() {
        let t = FrameTag::new(&[7; 32], DEFAULT_TAG).unwrap();
        let f = tagged(&t, b"a frame of the protocol");
        assert_eq!(f.len(), 23 + 8);
        assert_eq!(t.verify(&f), Some(&b"a frame of the protocol"[..]));
    }

    #[test]
    fn every_flipped_bit_is_refused() {
        let t = FrameTag::new(&[7; 32], 8).unwrap();
        let f = tagged(&t, &[0x5a; 40]);
        for i in 0..f.len() * 8 {
            let mut g = f.clone();
            g[i / 8] ^= 1 << (i % 8);
            assert_eq!(t.verify(&g), None, "bit {i} flipped and still verified");
        }
    }

    #[test]
    fn another_key_or_length_is_refused() {
        let t = FrameTag::new(&[7; 32], 8).unwrap();
        let f = tagged(&t, b"hello");
        assert_eq!(FrameTag::new(&[8; 32], 8).unwrap().verify(&f), None);
        assert_eq!(FrameTag::new(&[7; 32], 12).unwrap().verify(&f), None);
        // An untagged frame.
        assert_eq!(t.verify(b"a frame sent without any tag at all"), None);
    }

    #[test]
    fn short_frames_are_refused_without_panic() {
        let t = FrameTag::new(&[1; 32], 8).unwrap();
        for n in 0..=8 {
            assert_eq!(t.verify(&vec![0u8; n]), None);
        }
        // The tag of an empty body is never accepted as a frame either.
        let f = tagged(&t, b"");
        assert_eq!(t.verify(&f), None);
    }

    #[test]
    fn lengths_outside_the_range_are_refused() {
        assert!(FrameTag::new(&[0; 32], MIN_TAG - 1).is_err());
        assert!(FrameTag::new(&[0; 32], MAX_TAG + 1).is_err());
        assert!(FrameTag::new(&[0; 32], MAX_TAG).is_ok());
    }

    #[test]
    fn the_key_is_not_in_debug_output() {
        let t = FrameTag::new(&[0xab; 32], 8).unwrap();
        assert!(!format!("{t:?}").contains("171"));
    }
}
