//! What the protocol needs from the bundle store, and an in-memory store for tests.
//!
//! The core never touches a disk: the driver passes a [`BundleStore`] into each call.
//! The daemon and the lab implement it over `skywave_store::Store`.

use std::collections::HashMap;

use bytes::Bytes;
use skywave_bundle::{BundleId, RangeSet, SignedManifest, hash_payload};

/// The answer to a manifest offered by a peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offer {
    /// This version (or a newer one) is already held.
    Held,
    /// Accepted and complete at once (an empty payload): a new bundle.
    Accepted,
    /// A transfer is open; these byte ranges are already held (resumed, journal prefix).
    Partial(RangeSet),
    /// Not wanted (policy, or an older version than a transfer in progress).
    Refused(String),
    /// Wanted, but there is no room for it now (the store's quota, the disk): asked for
    /// again after a backoff, when room may have returned.
    NoRoom(String),
}

/// What a received piece did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    Stored,
    Duplicate,
    /// The bundle is complete, verified and visible.
    Complete,
    /// The bytes received do not make the signed payload (its hash, or a journal's
    /// prefix, does not match): the sender is at fault. The transfer was reset.
    Corrupt(String),
    /// The store could not take the bytes (disk, quota): nobody's fault on the wire.
    /// The transfer was reset.
    Failed(String),
    /// No transfer of that version is open (its manifest never arrived).
    Unknown,
}

pub trait BundleStore {
    /// Every bundle version held: `(id, version, payload length)`.
    fn inventory(&mut self) -> Vec<(BundleId, u64, u64)>;
    /// The held manifest of `id`.
    fn manifest(&mut self, id: &BundleId) -> Option<SignedManifest>;
    /// Every held bundle version whose payload is sealed to a recipient (end-to-end
    /// encrypted): left out of sessions on links that must not carry encryption
    /// ([`crate::Endpoint::withhold_sealed`]). A store that lists manifests cheaply
    /// answers in one pass; the default reads each manifest.
    fn sealed_versions(&mut self) -> Vec<(BundleId, u64)> {
        self.inventory()
            .into_iter()
            .filter(|(id, version, _)| {
                self.manifest(id)
                    .is_some_and(|m| m.version() == *version && m.manifest().sealed.is_some())
            })
            .map(|(id, version, _)| (id, version))
            .collect()
    }
    /// Reads held payload bytes of `id` at `version` into `buf`; returns bytes read
    /// (0 if that version is not held).
    fn read(&mut self, id: &BundleId, version: u64, offset: u64, buf: &mut [u8]) -> usize;
    /// Held payload bytes `[offset, offset + len)` of `id` at `version` (fewer at the
    /// end) as a handle on a buffer the store keeps in memory, so that frames to many
    /// peers share it; `None` if the store has no such buffer (then [`Self::read`]).
    fn read_shared(
        &mut self,
        id: &BundleId,
        version: u64,
        offset: u64,
        len: usize,
    ) -> Option<Bytes> {
        let _ = (id, version, offset, len);
        None
    }
    /// A peer offers this manifest.
    fn offer(&mut self, m: &SignedManifest) -> Offer;
    /// A piece of an offered bundle arrived.
    fn write(&mut self, id: &BundleId, version: u64, offset: u64, data: &[u8]) -> Written;
    /// `m` is an older version of a journal whose newer version is being received, and
    /// every byte of `m`'s payload is held: publish `m` (verified) and carry on with the
    /// transfer. `Complete` when published; `Unknown` when the store cannot do this (the
    /// default) or holds no such transfer; `Failed` when the prefix does not verify.
    fn commit_prefix(&mut self, m: &SignedManifest) -> Written {
        let _ = m;
        Written::Unknown
    }
}

/// Largest payload [`MemStore`] accepts.
const MEM_MAX: u64 = 1 << 30;

/// A store in memory, for tests and fuzzing.
#[derive(Debug, Default, Clone)]
pub struct MemStore {
    pub held: HashMap<BundleId, (SignedManifest, Vec<u8>)>,
    /// Insertion order, oldest first: `inventory` lists in this order, as a real store
    /// lists by insertion token.
    pub order: HashMap<BundleId, u64>,
    next: u64,
    pub partial: HashMap<BundleId, (SignedManifest, Vec<u8>, RangeSet)>,
    /// Payload bytes it may hold: a received bundle past it fails at completion (and is
    /// dropped), as a real store's commit does when over its quota.
    pub quota: Option<u64>,
    /// Room for a new transfer: an offer of a larger payload is turned down up front
    /// (`Offer::NoRoom`), as a real store does when the disk lacks the space.
    pub room: Option<u64>,
    /// Calls of [`BundleStore::manifest`] so far (each a lookup in a real store).
    pub manifest_lookups: u64,
}

impl MemStore {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, m: SignedManifest, payload: Vec<u8>) {
        self.note(m.id());
        self.held.insert(m.id(), (m, payload));
    }

    fn note(&mut self, id: BundleId) {
        self.next += 1;
        self.order.insert(id, self.next);
    }
}

impl BundleStore for MemStore {
    fn inventory(&mut self) -> Vec<(BundleId, u64, u64)> {
        let mut v: Vec<_> = self
            .held
            .values()
            .map(|(m, p)| (m.id(), m.version(), p.len() as u64))
            .collect();
        v.sort();
        v
    }

    fn manifest(&mut self, id: &BundleId) -> Option<SignedManifest> {
        self.manifest_lookups += 1;
        self.held.get(id).map(|(m, _)| m.clone())
    }

    fn read(&mut self, id: &BundleId, version: u64, offset: u64, buf: &mut [u8]) -> usize {
        match self.held.get(id) {
            // An older version of a journal is a prefix of the one held.
            Some((m, p))
                if (m.version() == version || (m.manifest().journal && m.version() > version))
                    && offset < p.len() as u64 =>
            {
                let end = if m.manifest().journal {
                    (version as usize).min(p.len())
                } else {
                    p.len()
                };
                let src = &p[(offset as usize).min(end)..end];
                let n = src.len().min(buf.len());
                buf[..n].copy_from_slice(&src[..n]);
                n
            }
            _ => 0,
        }
    }

    fn offer(&mut self, m: &SignedManifest) -> Offer {
        if self
            .held
            .get(&m.id())
            .is_some_and(|(h, _)| h.version() >= m.version())
        {
            return Offer::Held;
        }
        let len = m.manifest().length;
        if len > MEM_MAX {
            return Offer::Refused(format!(
                "{len} bytes is more than this in-memory store holds"
            ));
        }
        if self.room.is_some_and(|r| len > r) {
            return Offer::NoRoom(format!("{len} bytes do not fit the room left"));
        }
        if len == 0 {
            self.note(m.id());
            self.held.insert(m.id(), (m.clone(), Vec::new()));
            return Offer::Accepted;
        }
        let journal = m.manifest().journal;
        match self.partial.get_mut(&m.id()) {
            Some((p, _, r)) if p.version() == m.version() => Offer::Partial(r.clone()),
            Some((p, _, _)) if p.version() > m.version() => Offer::Refused("older".into()),
            // A journal's newer version continues the transfer of an older one.
            Some((p, buf, r)) if journal && p.manifest().journal => {
                *p = m.clone();
                buf.resize(len as usize, 0);
                Offer::Partial(r.clone())
            }
            _ => {
                let mut buf = vec![0; len as usize];
                let mut held = RangeSet::new();
                // A journal's held version is a prefix of every newer one.
                if let Some((h, data)) = self.held.get(&m.id())
                    && journal
                    && h.manifest().journal
                    && data.len() <= buf.len()
                {
                    buf[..data.len()].copy_from_slice(data);
                    held.insert(0, data.len() as u64);
                }
                self.partial.insert(m.id(), (m.clone(), buf, held.clone()));
                Offer::Partial(held)
            }
        }
    }

    fn write(&mut self, id: &BundleId, version: u64, offset: u64, data: &[u8]) -> Written {
        if self
            .held
            .get(id)
            .is_some_and(|(m, _)| m.version() >= version)
        {
            return Written::Duplicate;
        }
        let Some((m, buf, ranges)) = self.partial.get_mut(id) else {
            return Written::Unknown;
        };
        if m.version() != version {
            return Written::Unknown;
        }
        let end = offset.saturating_add(data.len() as u64);
        if end > buf.len() as u64 {
            return Written::Failed("piece past the end".into());
        }
        if ranges.contains(offset, end) {
            return Written::Duplicate;
        }
        buf[offset as usize..end as usize].copy_from_slice(data);
        ranges.insert(offset, end);
        if !ranges.is_complete(buf.len() as u64) {
            return Written::Stored;
        }
        let (m, buf, _) = self.partial.remove(id).expect("present above");
        if hash_payload(&buf) != m.manifest().hash {
            return Written::Corrupt("payload hash mismatch".into());
        }
        let held = || self.held.values().map(|(_, p)| p.len() as u64).sum::<u64>();
        if self.quota.is_some_and(|q| held() + buf.len() as u64 > q) {
            return Written::Failed("over the store quota".into());
        }
        self.note(*id);
        self.held.insert(*id, (m, buf));
        Written::Complete
    }

    fn commit_prefix(&mut self, m: &SignedManifest) -> Written {
        let id = m.id();
        let len = m.manifest().length;
        if self
            .held
            .get(&id)
            .is_some_and(|(h, _)| h.version() >= m.version())
        {
            return Written::Duplicate;
        }
        let Some((p, buf, ranges)) = self.partial.get(&id) else {
            return Written::Unknown;
        };
        if !m.manifest().journal
            || !p.manifest().journal
            || p.version() <= m.version()
            || !ranges.contains(0, len)
        {
            return Written::Unknown;
        }
        let prefix = buf[..len as usize].to_vec();
        if hash_payload(&prefix) != m.manifest().hash {
            self.partial.remove(&id);
            return Written::Corrupt("journal prefix hash mismatch".into());
        }
        self.note(id);
        self.held.insert(id, (m.clone(), prefix));
        Written::Complete
    }
}
