//! The protocol's view of a real `skywave_store::Store`.

use skywave_bundle::{BundleId, SignedManifest};
use skywave_proto::{BundleStore, Offer, Written};
use skywave_store::{PieceOutcome, Query, Store, StoreError};

/// Adapts a [`Store`] for the protocol core. Payloads are read through a cache of
/// the last bundle opened, so sending a large bundle piece by piece does not reopen it.
#[derive(Debug)]
pub struct StoreAdapter {
    pub store: Store,
    cache: Option<(BundleId, u64, Vec<u8>)>,
}

/// Payloads up to this size are cached whole while being sent.
const CACHE_MAX: u64 = 64 << 20;

impl StoreAdapter {
    pub fn new(store: Store) -> Self {
        Self { store, cache: None }
    }
}

impl BundleStore for StoreAdapter {
    fn inventory(&mut self) -> Vec<(BundleId, u64, u64)> {
        match self.store.list(&Query::default()) {
            Ok(v) => v
                .iter()
                .map(|b| {
                    (
                        b.manifest.id(),
                        b.manifest.version(),
                        b.manifest.manifest().length,
                    )
                })
                .collect(),
            Err(e) => {
                tracing::error!("listing the store: {e}");
                Vec::new()
            }
        }
    }

    fn manifest(&mut self, id: &BundleId) -> Option<SignedManifest> {
        self.store.get(id).ok().flatten().map(|b| b.manifest)
    }

    fn read(&mut self, id: &BundleId, version: u64, offset: u64, buf: &mut [u8]) -> usize {
        let fresh = !matches!(&self.cache, Some((i, v, _)) if i == id && *v == version);
        if fresh {
            let Some(b) = self.store.get(id).ok().flatten() else {
                return 0;
            };
            if b.manifest.version() != version || b.manifest.manifest().length > CACHE_MAX {
                return read_direct(&self.store, id, offset, buf);
            }
            match self.store.read_payload(id) {
                Ok(data) => self.cache = Some((*id, version, data)),
                Err(e) => {
                    tracing::error!(%id, "reading payload: {e}");
                    return 0;
                }
            }
        }
        let Some((_, _, data)) = &self.cache else {
            return 0;
        };
        let start = (offset as usize).min(data.len());
        let n = (data.len() - start).min(buf.len());
        buf[..n].copy_from_slice(&data[start..start + n]);
        n
    }

    fn offer(&mut self, m: &SignedManifest) -> Offer {
        if m.manifest().length == 0 {
            return match self.store.insert(m, &[][..]) {
                Ok(_) => Offer::Accepted,
                Err(StoreError::Stale { .. }) => Offer::Held,
                Err(e) => Offer::Refused(e.to_string()),
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
            Err(e) => Offer::Refused(e.to_string()),
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
            Err(e) => Written::Failed(e.to_string()),
        }
    }
}

fn read_direct(store: &Store, id: &BundleId, offset: u64, buf: &mut [u8]) -> usize {
    use std::io::Read;
    let Ok(mut r) = store.open_payload(id) else {
        return 0;
    };
    // Skip to the offset; large payloads are file-backed and rarely read this way.
    if std::io::copy(&mut (&mut r).take(offset), &mut std::io::sink()).is_err() {
        return 0;
    }
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    n
}
