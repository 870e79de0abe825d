//! Bundles whose received payload failed verification, and the peers that sent it.
//!
//! A payload that does not hash to its signed manifest was corrupted by its sender (a
//! damaged store, or malice: frames are checked on every link). Fetching it again at
//! once from the same peer would fetch the same bad bytes for ever, so the version is
//! suspect: the peers that sent bytes into the failed copy are blamed, and a blamed peer
//! is not taken as a source of that version again until a backoff (doubling with every
//! failure) has passed. A peer not blamed is taken at once. After a failure one source
//! at a time fills the copy, so that the next failure names its culprit alone.

use std::collections::HashMap;
use std::time::Duration;

use skywave_bundle::BundleId;

/// Suspect versions remembered; past this the one due soonest is forgotten (a peer
/// cannot grow the table without bound by serving many bad payloads).
const MAX_SUSPECTS: usize = 1024;
/// The longest wait before a blamed peer is asked again.
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

#[derive(Debug)]
pub(crate) struct Suspect {
    pub failures: u32,
    /// Blamed peers may be asked again from then.
    pub retry_at: Duration,
    /// The retry after the last failure has been asked for.
    pub retried: bool,
    /// Failed copies each peer sent bytes into.
    pub blamed: Vec<([u8; 32], u32)>,
    /// The last copy verified but could not be stored (no room): no peer is to blame,
    /// and none is taken until the backoff ends.
    pub held_back: bool,
}

impl Suspect {
    pub fn blame(&self, peer: &[u8; 32]) -> u32 {
        self.blamed
            .iter()
            .find(|(k, _)| k == peer)
            .map_or(0, |(_, n)| *n)
    }
}

#[derive(Debug, Default)]
pub(crate) struct Suspects(HashMap<(BundleId, u64), Suspect>);

impl Suspects {
    /// Records a failed copy of `id` at `version` that `sources` sent bytes into (none:
    /// the copy was good but could not be stored, and every source waits); `base`
    /// is the first backoff (doubled per failure), stretched by `jitter` in [0, 1) so
    /// that nodes fed by the same bad source do not retry in step. Returns the time
    /// blamed peers may be asked again.
    pub fn failed(
        &mut self,
        id: BundleId,
        version: u64,
        sources: &[[u8; 32]],
        now: Duration,
        base: Duration,
        jitter: f64,
    ) -> Duration {
        if self.0.len() >= MAX_SUSPECTS
            && !self.0.contains_key(&(id, version))
            && let Some(k) = self
                .0
                .iter()
                .min_by_key(|(_, s)| s.retry_at)
                .map(|(k, _)| *k)
        {
            self.0.remove(&k);
        }
        let s = self.0.entry((id, version)).or_insert(Suspect {
            failures: 0,
            retry_at: now,
            retried: false,
            blamed: Vec::new(),
            held_back: false,
        });
        s.held_back = sources.is_empty();
        s.failures += 1;
        for k in sources {
            match s.blamed.iter_mut().find(|(b, _)| b == k) {
                Some((_, n)) => *n += 1,
                None => s.blamed.push((*k, 1)),
            }
        }
        let wait = (base * 2u32.pow((s.failures - 1).min(16))).min(MAX_BACKOFF);
        s.retry_at = now + wait.mul_f64(1.0 + jitter);
        s.retried = false;
        s.retry_at
    }

    pub fn get(&self, id: &BundleId, version: u64) -> Option<&Suspect> {
        self.0.get(&(*id, version))
    }

    /// Whether an offer of `id` at `version` from `peer` is turned down: the peer is
    /// blamed and its backoff runs, or (after any failure) another peer is already
    /// filling the copy.
    pub fn refuses(
        &self,
        id: &BundleId,
        version: u64,
        peer: &[u8; 32],
        now: Duration,
        other_source: bool,
    ) -> bool {
        self.get(id, version).is_some_and(|s| {
            other_source || ((s.held_back || s.blame(peer) > 0) && now < s.retry_at)
        })
    }

    /// The version arrived whole and verified: nothing to remember.
    pub fn verified(&mut self, id: &BundleId, version: u64) {
        self.0.remove(&(*id, version));
    }

    /// Suspect versions whose backoff has ended and that were not asked for again yet,
    /// marked as asked.
    pub fn due(&mut self, now: Duration) -> Vec<(BundleId, u64)> {
        self.0
            .iter_mut()
            .filter(|(_, s)| !s.retried && now >= s.retry_at)
            .map(|(k, s)| {
                s.retried = true;
                *k
            })
            .collect()
    }

    /// When the next backoff ends.
    pub fn next_retry(&self) -> Option<Duration> {
        self.0
            .values()
            .filter(|s| !s.retried)
            .map(|s| s.retry_at)
            .min()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn backoff_doubles_per_failure_and_is_capped() {
        let mut t = Suspects::default();
        let id = BundleId([1; 32]);
        let a = [1; 32];
        assert_eq!(t.failed(id, 1, &[a], Duration::ZERO, S * 10, 0.0), S * 10);
        assert_eq!(t.failed(id, 1, &[a], S * 10, S * 10, 0.0), S * 30);
        assert_eq!(t.failed(id, 1, &[a], S * 30, S * 10, 0.0), S * 70);
        for _ in 0..20 {
            t.failed(id, 1, &[a], S * 100, S * 10, 0.0);
        }
        assert_eq!(t.get(&id, 1).unwrap().retry_at, S * 100 + MAX_BACKOFF);
    }

    #[test]
    fn a_blamed_peer_waits_and_others_are_taken_one_at_a_time() {
        let mut t = Suspects::default();
        let id = BundleId([1; 32]);
        let (bad, good) = ([1; 32], [2; 32]);
        let at = t.failed(id, 1, &[bad], S, S * 10, 0.0);
        assert!(t.refuses(&id, 1, &bad, S * 2, false));
        assert!(!t.refuses(&id, 1, &good, S * 2, false));
        assert!(
            t.refuses(&id, 1, &good, S * 2, true),
            "one source at a time"
        );
        assert!(!t.refuses(&id, 1, &bad, at, false));
        assert!(!t.refuses(&id, 2, &bad, S * 2, false), "another version");
        assert_eq!(t.due(at - S), vec![]);
        assert_eq!(t.due(at), vec![(id, 1)]);
        assert_eq!(t.due(at), vec![], "asked once per backoff");
        t.verified(&id, 1);
        assert!(!t.refuses(&id, 1, &bad, S * 2, false));
    }

    #[test]
    fn a_copy_that_could_not_be_stored_holds_every_source_back() {
        let mut t = Suspects::default();
        let id = BundleId([1; 32]);
        let at = t.failed(id, 1, &[], S, S * 10, 0.0);
        assert!(t.refuses(&id, 1, &[9; 32], S * 2, false));
        assert!(!t.refuses(&id, 1, &[9; 32], at, false));
        assert_eq!(t.due(at), vec![(id, 1)]);
    }

    #[test]
    fn the_table_is_bounded() {
        let mut t = Suspects::default();
        for i in 0..(MAX_SUSPECTS as u64 + 50) {
            t.failed(BundleId([7; 32]), i, &[[1; 32]], S * i as u32, S, 0.0);
        }
        assert_eq!(t.len(), MAX_SUSPECTS);
    }
}
