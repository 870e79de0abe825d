//! The queue of transfers to a peer: what is offered next, and the backlog behind it.

use std::time::Duration;

use bytes::Bytes;
use skywave_bundle::SignedManifest;

use super::peer::{self, Outgoing, Peer};
use super::*;
use crate::store::BundleStore;

/// Transfers not yet begun kept under way ahead of the backlog: enough to fill several
/// frames with small bundles, few enough that the transmit path's work per frame does not
/// grow with the queue.
const READY: usize = 64;

pub(super) fn enqueue(p: &mut Peer, m: &SignedManifest, now: Duration) {
    enqueue_shared(p, m, &Bytes::copy_from_slice(m.as_bytes()), now, false);
}

/// Queues up to `n` more of `p.unqueued` (a store lookup each, for the manifest that
/// ranks it), giving their memory back as it goes (48 MB for a million, 3 MB at a
/// time). Returns how many were taken.
pub(super) fn queue_unqueued(
    p: &mut Peer,
    n: usize,
    store: &mut dyn BundleStore,
    now: Duration,
) -> usize {
    let mut taken = 0;
    while taken < n {
        let Some((id, version, _)) = p.unqueued.pop() else {
            break;
        };
        taken += 1;
        if let Some(m) = store.manifest(&id).filter(|m| m.version() == version) {
            enqueue(p, &m, now);
        }
    }
    if p.unqueued.capacity() - p.unqueued.len() >= 1 << 16 {
        p.unqueued.shrink_to_fit();
    }
    taken
}

/// [`enqueue`] with the manifest's bytes already in a shared buffer; `speculative`: a
/// guess pushed before reconciliation said the peer lacks it.
pub(super) fn enqueue_shared(
    p: &mut Peer,
    m: &SignedManifest,
    encoded: &Bytes,
    now: Duration,
    speculative: bool,
) {
    let (id, version) = (m.id(), m.version());
    if p.peer_has.contains(&(id, version)) || (p.no_sealed && m.manifest().sealed.is_some()) {
        return;
    }
    if let Some(q) = p.backlog.get(&id) {
        if q.version >= version {
            return;
        }
        p.backlog.remove(&id);
    }
    if p.out.iter().any(|o| o.id == id && o.r.version >= version) {
        return;
    }
    let old = p
        .out
        .iter()
        .position(|o| o.id == id)
        .map(|i| p.out.swap_remove(i));
    p.out_seq += 1;
    let seq = p.out_seq;
    if old.is_none()
        && (!p.backlog.is_empty() || p.out.iter().filter(|o| o.unstarted()).count() >= READY)
    {
        let addressed = m.manifest().recipient.is_some_and(|r| r.0 == p.key);
        let length = m.manifest().length;
        p.backlog.insert(
            peer::Rank::new(
                addressed,
                m.manifest().effective_priority(),
                length + encoded.len() as u64,
                now,
                seq,
            ),
            peer::Pending {
                id,
                version,
                length,
                speculative,
                queued_at: now,
                seq,
            },
        );
        return;
    }
    if p.out.capacity() == 0 {
        // Most peers have one transfer at a time: no room for four (~1 KB) per peer.
        p.out.reserve_exact(1);
    }
    let o = new_outgoing(p, m, encoded, now, (now, seq, speculative), old);
    p.out.push(o);
}

/// A transfer of `m` to `p`, queued at `queued.0` as number `queued.1`; `old`: the
/// transfer of an older version it replaces.
fn new_outgoing(
    p: &Peer,
    m: &SignedManifest,
    encoded: &Bytes,
    now: Duration,
    queued: (Duration, u64, bool),
    old: Option<Outgoing>,
) -> Outgoing {
    let (id, version) = (m.id(), m.version());
    let journal = m.manifest().journal;
    let length = m.manifest().length;
    // A journal only grows: what the peer holds of an older version, and what is on its
    // way, is a prefix of this one. Only the tail is sent.
    let mut held = RangeSet::new();
    let (mut in_flight, mut sends, mut sent_ever, mut delivered) = (
        RangeSet::new(),
        VecDeque::new(),
        RangeSet::new(),
        RangeSet::new(),
    );
    if journal {
        if let Some(&l) = p.journal_held.get(&id) {
            held.insert(0, l.min(length));
        }
        if let Some(o) = old.filter(|o| o.journal) {
            for (s, e) in o.held.iter() {
                held.insert(s, e.min(length));
            }
            in_flight = o.in_flight;
            sends = o.sends;
            sent_ever = o.sent_ever;
            delivered = o.delivered;
        }
    }
    Outgoing {
        id,
        r: BundleRef::new(&id, version),
        length,
        journal,
        manifest: encoded.clone(),
        manifest_acked: false,
        manifest_sent_at: None,
        manifest_pn: None,
        held,
        in_flight,
        sends,
        sent_ever,
        delivered,
        progress_at: now,
        last_sent_at: now,
        resent: false,
        speculative: queued.2,
        addressed_to_peer: m.manifest().recipient.is_some_and(|r| r.0 == p.key),
        priority: m.manifest().effective_priority(),
        queued_at: queued.0,
        seq: queued.1,
        offer_seq: None,
        timeouts: 0,
        fec_decided: false,
        fec: None,
    }
}

/// Moves transfers from the backlog to those under way so that [`READY`] unstarted ones
/// wait there, and lets a queued transfer ranked ahead of an unstarted one under way take
/// its place (a small or addressed bundle queued behind a long backlog goes first, as if
/// the whole queue were sorted).
pub(super) fn promote(p: &mut Peer, store: &mut dyn BundleStore, now: Duration) {
    if p.backlog.is_empty() {
        return;
    }
    let mut fresh = p.out.iter().filter(|o| o.unstarted()).count();
    while let Some(first) = p.backlog.first_rank() {
        if fresh >= READY {
            let Some((i, worst)) = p
                .out
                .iter()
                .enumerate()
                .filter(|(_, o)| o.unstarted())
                .map(|(i, o)| (i, o.rank()))
                .max_by_key(|(_, r)| *r)
            else {
                break;
            };
            if first >= worst {
                break;
            }
            let o = p.out.swap_remove(i);
            p.backlog.insert(
                worst,
                peer::Pending {
                    id: o.id,
                    version: o.r.version,
                    length: o.length,
                    speculative: o.speculative,
                    queued_at: o.queued_at,
                    seq: o.seq,
                },
            );
            fresh -= 1;
            continue;
        }
        let q = p.backlog.pop_first().expect("a first entry");
        // Gone or replaced since it was queued: a newer version is queued on its own.
        let Some(m) = store.manifest(&q.id).filter(|m| m.version() == q.version) else {
            continue;
        };
        let encoded = Bytes::copy_from_slice(m.as_bytes());
        let o = new_outgoing(
            p,
            &m,
            &encoded,
            now,
            (q.queued_at, q.seq, q.speculative),
            None,
        );
        p.out.push(o);
        fresh += 1;
    }
}
