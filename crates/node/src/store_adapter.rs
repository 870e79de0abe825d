//! The protocol's view of a real `skywave_store::Store`.

use std::io::Read;

use bytes::Bytes;

use skywave_bundle::{BundleId, SignedManifest};
use skywave_proto::{BundleStore, Offer, Written};
use skywave_store::{PayloadReader, PieceOutcome, Store, StoreError};

/// Adapts a [`Store`] for the protocol core. Payloads are read through a cache of the
/// last bundle opened, so sending a bundle piece by piece neither reopens nor rescans
/// it: small payloads are held in memory, large ones through an open reader that seeks.
/// A journal's cache is extended by its new tail when a newer version is read.
#[derive(Debug)]
pub struct StoreAdapter {
    pub store: Store,
    cache: Option<Cached>,
}

#[derive(Debug)]
struct Cached {
    id: BundleId,
    version: u64,
    journal: bool,
    body: Body,
}

#[derive(Debug)]
enum Body {
    /// A journal: grows in place as newer versions are read.
    Mem(Vec<u8>),
    /// A plain bundle: frames to every peer carry slices of this one buffer.
    Shared(Bytes),
    Reader {
        r: PayloadReader,
        pos: u64,
        /// Read ahead: the payload's bytes from `ahead_at` (see [`READ_AHEAD`]).
        ahead: Vec<u8>,
        ahead_at: u64,
    },
}

/// A payload too large to cache is read this much at a time: a frame's piece is about
/// 1.4 KB on IP, and a read call per piece cost the sender more than the bytes.
const READ_AHEAD: usize = 256 * 1024;

/// Payloads up to this size are cached whole while being sent.
const CACHE_MAX: u64 = 64 << 20;

impl StoreAdapter {
    pub fn new(store: Store) -> Self {
        Self { store, cache: None }
    }

    /// Makes the cache serve `id` at `version`; false if that version is not held.
    fn load(&mut self, id: &BundleId, version: u64) -> bool {
        if let Some(c) = &self.cache
            && c.id == *id
            && c.version == version
        {
            return true;
        }
        let Some((b, inline)) = self.store.get_with_inline(id).ok().flatten() else {
            return false;
        };
        let m = b.manifest.manifest();
        let held = b.manifest.version();
        // An older version can still be served from a journal: it is a prefix.
        if held != version && !(m.journal && held > version) {
            return false;
        }
        let (journal, length) = (m.journal, m.length);
        // A journal that grew: read only the new tail.
        if let Some(c) = &mut self.cache
            && c.id == *id
            && c.journal
            && journal
            && let Body::Mem(data) = &mut c.body
            && length <= CACHE_MAX
            && data.len() as u64 <= length
        {
            let from = data.len() as u64;
            let ok = match self.store.open_payload(id) {
                Ok(mut r) => r.skip(from).and_then(|_| r.read_to_end(data)).is_ok(),
                Err(_) => false,
            };
            if ok && data.len() as u64 == length {
                c.version = held;
                return true;
            }
            data.truncate(from as usize);
        }
        let body = if let (Some(data), false) = (inline, journal) {
            Body::Shared(Bytes::from(data))
        } else if length <= CACHE_MAX {
            match self.store.read_payload(id) {
                Ok(data) if journal => Body::Mem(data),
                Ok(data) => Body::Shared(Bytes::from(data)),
                Err(e) => {
                    tracing::error!(%id, "reading payload: {e}");
                    return false;
                }
            }
        } else {
            match self.store.open_payload(id) {
                Ok(r) => Body::Reader {
                    r,
                    pos: 0,
                    ahead: Vec::new(),
                    ahead_at: 0,
                },
                Err(e) => {
                    tracing::error!(%id, "opening payload: {e}");
                    return false;
                }
            }
        };
        self.cache = Some(Cached {
            id: *id,
            version: held,
            journal,
            body,
        });
        true
    }
}

impl BundleStore for StoreAdapter {
    fn inventory(&mut self) -> Vec<(BundleId, u64, u64)> {
        // Tombstones are versions like any other: they travel so deletions do.
        self.store.inventory().unwrap_or_else(|e| {
            tracing::error!("listing the store: {e}");
            Vec::new()
        })
    }

    fn sealed_versions(&mut self) -> Vec<(BundleId, u64)> {
        self.store.sealed_versions().unwrap_or_else(|e| {
            tracing::error!("listing the store: {e}");
            Vec::new()
        })
    }

    fn manifest(&mut self, id: &BundleId) -> Option<SignedManifest> {
        self.store.get(id).ok().flatten().map(|b| b.manifest)
    }

    fn read_shared(
        &mut self,
        id: &BundleId,
        version: u64,
        offset: u64,
        len: usize,
    ) -> Option<Bytes> {
        let served = self
            .cache
            .as_ref()
            .is_some_and(|c| c.id == *id && c.version == version);
        if !served && !self.load(id, version) {
            return None;
        }
        match &self.cache.as_ref()?.body {
            Body::Shared(data) if self.cache.as_ref()?.version == version => {
                let start = (offset as usize).min(data.len());
                let end = start.saturating_add(len).min(data.len());
                Some(data.slice(start..end))
            }
            _ => None,
        }
    }

    fn read(&mut self, id: &BundleId, version: u64, offset: u64, buf: &mut [u8]) -> usize {
        // A cached journal newer than asked serves the older version's bytes (a prefix).
        let served = match &self.cache {
            Some(c) => c.id == *id && (c.version == version || (c.journal && c.version > version)),
            None => false,
        };
        if !served && !self.load(id, version) {
            return 0;
        }
        let Some(c) = &mut self.cache else {
            return 0;
        };
        let copy_from = |data: &[u8], buf: &mut [u8]| {
            let start = (offset as usize).min(data.len());
            let n = (data.len() - start).min(buf.len());
            buf[..n].copy_from_slice(&data[start..start + n]);
            n
        };
        match &mut c.body {
            Body::Shared(data) => copy_from(data, buf),
            Body::Mem(data) => copy_from(data, buf),
            Body::Reader {
                r,
                pos,
                ahead,
                ahead_at,
            } => {
                let end = offset.saturating_add(buf.len() as u64);
                let window = *ahead_at + ahead.len() as u64;
                if offset < *ahead_at || end > window {
                    // Not in the window: read a new one from `offset`.
                    ahead.clear();
                    *ahead_at = offset;
                    if offset < *pos {
                        // Backwards (a resend): reopen, then seek forward.
                        match self.store.open_payload(id) {
                            Ok(fresh) => {
                                *r = fresh;
                                *pos = 0;
                            }
                            Err(_) => return 0,
                        }
                    }
                    if offset > *pos {
                        if r.skip(offset - *pos).is_err() {
                            return 0;
                        }
                        *pos = offset;
                    }
                    let want = READ_AHEAD.max(buf.len());
                    ahead.resize(want, 0);
                    let mut n = 0;
                    while n < want {
                        match r.read(&mut ahead[n..]) {
                            Ok(0) | Err(_) => break,
                            Ok(k) => n += k,
                        }
                    }
                    ahead.truncate(n);
                    *pos += n as u64;
                }
                let start = (offset - *ahead_at) as usize;
                let n = ahead.len().saturating_sub(start).min(buf.len());
                buf[..n].copy_from_slice(&ahead[start..start + n]);
                n
            }
        }
    }

    fn offer(&mut self, m: &SignedManifest) -> Offer {
        if m.manifest().length == 0 {
            return match self.store.insert(m, &[][..]) {
                Ok(_) => Offer::Accepted,
                Err(StoreError::Stale { .. }) => Offer::Held,
                Err(e) => refused(e),
            };
        }
        match self.store.begin_partial(m) {
            Ok(info) => Offer::Partial(info.held),
            Err(StoreError::Stale { id, .. }) => {
                if self
                    .store
                    .get(&id)
                    .ok()
                    .flatten()
                    .is_some_and(|b| b.manifest.version() >= m.version())
                {
                    Offer::Held
                } else {
                    Offer::Refused("an older version than the transfer in progress".into())
                }
            }
            Err(e) => refused(e),
        }
    }

    fn commit_prefix(&mut self, m: &SignedManifest) -> Written {
        match self.store.commit_journal_prefix(m) {
            Ok(_) => Written::Complete,
            Err(StoreError::Stale { .. }) => Written::Duplicate,
            Err(StoreError::NoPartial { .. }) => Written::Unknown,
            Err(e) => failed(e),
        }
    }

    fn write(&mut self, id: &BundleId, version: u64, offset: u64, data: &[u8]) -> Written {
        match self.store.write_piece(id, version, offset, data) {
            Ok(PieceOutcome::Stored { .. }) => Written::Stored,
            Ok(PieceOutcome::Duplicate) => Written::Duplicate,
            Ok(PieceOutcome::Complete(_)) => Written::Complete,
            Err(StoreError::NoPartial { .. }) => {
                if self
                    .store
                    .get(id)
                    .ok()
                    .flatten()
                    .is_some_and(|b| b.manifest.version() >= version)
                {
                    Written::Duplicate
                } else {
                    Written::Unknown
                }
            }
            Err(e) => failed(e),
        }
    }
}

/// An offer the store cannot take: for lack of room (asked for again later) or not.
fn refused(e: StoreError) -> Offer {
    match e {
        StoreError::NoRoom { .. }
        | StoreError::QuotaExceeded { .. }
        | StoreError::DiskFull { .. } => Offer::NoRoom(e.to_string()),
        e => Offer::Refused(e.to_string()),
    }
}

/// A store error on received bytes: the sender's fault when they do not verify.
fn failed(e: StoreError) -> Written {
    match e {
        StoreError::HashMismatch { .. }
        | StoreError::LengthMismatch { .. }
        | StoreError::JournalFork { .. } => Written::Corrupt(e.to_string()),
        e => Written::Failed(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skywave_bundle::{Manifest, SecretKey, hash_payload};
    use skywave_store::StoreConfig;

    /// A payload too large to cache is read through a window: pieces forwards, a resend
    /// backwards, a jump ahead and the short last piece all give the payload's bytes.
    #[test]
    fn a_payload_too_large_to_cache_reads_right_in_any_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), StoreConfig::default()).unwrap();
        let len = CACHE_MAX as usize + 300_001;
        let payload: Vec<u8> = (0..len)
            .map(|i| (i % 251) as u8 ^ (i >> 16) as u8)
            .collect();
        let k = SecretKey::from_bytes(&[7; 32]);
        let m = Manifest::new(
            k.bundle_id(),
            1,
            len as u64,
            hash_payload(&payload),
            1_795_305_600,
        )
        .sign(&k)
        .unwrap();
        store.insert(&m, &payload[..]).unwrap();
        let mut a = StoreAdapter::new(store);
        let id = k.bundle_id();
        let mut check = |offset: usize, n: usize| {
            let mut buf = vec![0u8; n];
            let got = a.read(&id, 1, offset as u64, &mut buf);
            let want = n.min(len - offset);
            assert_eq!(got, want, "at {offset}");
            assert_eq!(buf[..got], payload[offset..offset + got], "at {offset}");
        };
        for i in 0..400 {
            check(i * 1400, 1400);
        }
        check(1400 * 17, 1400);
        check(40 << 20, 1400);
        check(3, 1_000_000);
        check(len - 1000, 1400);
        check(len - 5000, 1400);
    }
}
