//! Signed bundles: the unit skywave keeps in sync.
//!
//! A bundle is a [`SignedManifest`] plus a payload. The bundle id is an Ed25519 public
//! key and the manifest is signed by its secret key, so only the author can publish a
//! newer version. This crate owns the canonical compact manifest encoding (described byte
//! by byte in `docs/bundle-format.md`), payload hashing, and the resumable tree hash that
//! lets a node holding a journal's prefix verify a new tail without re-reading it, and
//! the sealing of a payload to its recipient's node key ([`sealed`]).
//!
//! It does no I/O: the store and the protocol core both build on it.

mod journal;
mod keys;
mod manifest;
mod ranges;
pub mod sealed;
pub mod text;
pub mod varint;

pub use journal::{JournalState, JournalStateError};
pub use keys::{BundleId, Identity, KeyParseError, SecretKey, x25519_public_of};
pub use manifest::{
    DATE_EPOCH, MAX_MANIFEST_LEN, Manifest, ManifestError, ManifestJson, PayloadHash, Priority,
    SignedManifest, well_known_service,
};
pub use ranges::RangeSet;
pub use sealed::SealError;

/// Hashes a whole payload held in memory (see [`PayloadHasher`] for streams).
pub fn hash_payload(data: &[u8]) -> PayloadHash {
    PayloadHash::from_blake3(&blake3::hash(data))
}

/// Streaming payload hash, for payloads that are never held in memory whole.
#[derive(Debug, Default, Clone)]
pub struct PayloadHasher {
    inner: blake3::Hasher,
    len: u64,
}

impl PayloadHasher {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn update(&mut self, data: &[u8]) {
        self.inner.update(data);
        self.len += data.len() as u64;
    }

    /// Bytes hashed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn finalize(&self) -> PayloadHash {
        PayloadHash::from_blake3(&self.inner.finalize())
    }
}
