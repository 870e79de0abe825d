//! Bundles a session leaves out: sealed bundles on links that must not carry encryption
//! (amateur bands). See docs/daemon.md, "Amateur links".

use std::collections::{BTreeMap, HashSet};

use skywave_bundle::BundleId;

use super::{Endpoint, LinkId, short_id};
use crate::store::BundleStore;

impl Endpoint {
    /// Sessions on `link` leave sealed bundles (payload end-to-end encrypted to a
    /// recipient) out: they are not in the set the session reconciles, never offered
    /// nor sent (neither manifest nor payload), a WANT naming one is refused and counted
    /// (`Stats::withheld_wants_refused`), and a peer's offer of one is not taken
    /// (`Stats::withheld_offers_refused`). Other links carry them as before.
    ///
    /// Set before the link's sessions start: a session under way keeps its set until
    /// it starts again (transfers not yet queued are gated at once).
    pub fn withhold_sealed(&mut self, link: LinkId, on: bool) {
        if on {
            self.no_sealed.insert(link);
        } else {
            self.no_sealed.remove(&link);
        }
        for p in self.peers.values_mut().filter(|p| p.link == link) {
            p.no_sealed = on;
        }
    }

    /// Whether sessions on `link` leave sealed bundles out.
    pub fn withholds_sealed(&self, link: LinkId) -> bool {
        self.no_sealed.contains(&link)
    }

    /// At the start of `key`'s session salted with `salt`: takes what the session
    /// withholds out of `inv` and returns it by short id.
    pub(super) fn withheld_for(
        &mut self,
        key: &[u8; 32],
        salt: &[u8; 32],
        inv: &mut Vec<(BundleId, u64, u64)>,
        store: &mut dyn BundleStore,
    ) -> BTreeMap<u64, (BundleId, u64)> {
        let Some(p) = self.peers.get_mut(key) else {
            return BTreeMap::new();
        };
        p.no_sealed = self.no_sealed.contains(&p.link);
        if !p.no_sealed {
            return BTreeMap::new();
        }
        let sealed: HashSet<(BundleId, u64)> = store.sealed_versions().into_iter().collect();
        if sealed.is_empty() {
            return BTreeMap::new();
        }
        inv.retain(|(id, v, _)| !sealed.contains(&(*id, *v)));
        sealed
            .into_iter()
            .map(|(id, v)| (short_id(salt, &id, v), (id, v)))
            .collect()
    }
}
