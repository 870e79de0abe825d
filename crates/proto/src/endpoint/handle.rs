//! Handling of received messages other than HELLO and SYMBOLS.

use std::time::Duration;

use skywave_bundle::{RangeSet, SignedManifest};

use super::cc::PieceRef;
use super::{Endpoint, Event, enqueue, short_id};
use crate::store::{BundleStore, Offer, Written};
use crate::wire::{Ack, BundleRef, Message};

impl Endpoint {
    pub(super) fn on_want(
        &mut self,
        now: Duration,
        key: [u8; 32],
        ids: &[u8],
        store: &mut dyn BundleStore,
    ) {
        let p = self.peers.get_mut(&key).expect("checked");
        p.recon.bytes += ids.len() as u64;
        p.recon.messages += 1;
        // Only a decoder that has finished asks: the stream can stop even if its
        // RECON_DONE was lost.
        p.recon.stopped = true;
        p.recon.apply_deferred();
        for sid in Message::want_ids(ids) {
            let Some(&(id, version)) = p.recon.shorts.get(&sid) else {
                continue;
            };
            if p.peer_has.contains(&(id, version)) {
                continue; // a late duplicate request for something delivered
            }
            if let Some(m) = store.manifest(&id).filter(|m| m.version() == version) {
                enqueue(p, &m, now);
            }
        }
    }

    pub(super) fn on_manifest(
        &mut self,
        now: Duration,
        key: [u8; 32],
        bytes: &[u8],
        store: &mut dyn BundleStore,
    ) {
        let m = match SignedManifest::decode(bytes) {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(peer = %super::hex8(&key), "bad manifest: {e}");
                self.stats.bad_manifests += 1;
                return;
            }
        };
        let (id, version) = (m.id(), m.version());
        let r = BundleRef::new(&id, version);
        let p = self.peers.get_mut(&key).expect("checked");
        if p.asked.remove(&short_id(&p.salt, &id, version)).is_some() {
            // The peer is answering our WANT: the rest of it is on its way too.
            for t in p.asked.values_mut() {
                *t = now;
            }
        }
        p.peer_has.insert((id, version));
        match store.offer(&m) {
            Offer::Held => queue_have_all(p, r),
            Offer::Accepted => {
                queue_have_all(p, r);
                self.completed(now, key, &m);
            }
            Offer::Partial(held) => {
                let resumed = !held.is_empty();
                p.incoming.insert(
                    r,
                    super::peer::Incoming {
                        id,
                        version,
                        held,
                        manifest: m,
                    },
                );
                // Say at once what is already held so none of it is sent again; otherwise
                // the first batched report confirms the manifest.
                if !p.have.contains(&r) {
                    p.have.push(r);
                }
                let due = if resumed {
                    now
                } else {
                    now + self.cfg.report_interval
                };
                p.have_due = Some(p.have_due.map_or(due, |d| d.min(due)));
            }
            Offer::Refused(why) => {
                tracing::debug!(%id, "refused offer: {why}");
                queue_have_all(p, r);
            }
        }
    }

    pub(super) fn on_piece(
        &mut self,
        now: Duration,
        key: [u8; 32],
        r: BundleRef,
        offset: u64,
        data: &[u8],
        store: &mut dyn BundleStore,
    ) {
        self.stats.piece_bytes_received += data.len() as u64;
        let holds = self.holds(&r);
        let p = self.peers.get_mut(&key).expect("checked");
        let Some(inc) = p.incoming.get_mut(&r) else {
            if holds {
                // The answer to any piece of a bundle already held.
                self.stats.duplicate_bytes_received += data.len() as u64;
                queue_have_all(p, r);
            }
            return;
        };
        let end = offset.saturating_add(data.len() as u64);
        if end > inc.manifest.manifest().length {
            self.stats.dropped_malformed += 1;
            return;
        }
        match store.write(&inc.id, inc.version, offset, data) {
            Written::Stored => {
                let before = inc.held.covered();
                inc.held.insert(offset, end);
                let _ = before;
                if !p.have.contains(&r) {
                    p.have.push(r);
                }
                let due = now + self.cfg.report_interval;
                p.have_due = Some(p.have_due.map_or(due, |d| d.min(due)));
            }
            Written::Duplicate => {
                self.stats.duplicate_bytes_received += data.len() as u64;
            }
            Written::Complete => {
                let inc = p.incoming.remove(&r).expect("present");
                p.have.retain(|x| *x != r);
                queue_have_all(p, r);
                self.completed(now, key, &inc.manifest);
            }
            Written::Failed(why) => {
                tracing::warn!(id = %inc.id, "transfer failed: {why}");
                self.stats.failed_transfers += 1;
                let inc = p.incoming.remove(&r).expect("present");
                // Start again: the store dropped what it had; tell the sender so.
                if let Offer::Partial(held) = store.offer(&inc.manifest) {
                    let m = inc.manifest.clone();
                    p.incoming.insert(
                        r,
                        super::peer::Incoming {
                            held,
                            manifest: m,
                            ..inc
                        },
                    );
                }
                if !p.have.contains(&r) {
                    p.have.push(r);
                }
                p.have_due = Some(now);
            }
            Written::Unknown => {}
        }
    }

    /// A bundle arrived complete from `from`: announce it and offer it onwards.
    pub(super) fn completed(&mut self, now: Duration, from: [u8; 32], m: &SignedManifest) {
        self.stats.bundles_received += 1;
        self.note_held(m.id(), m.version());
        self.events.push_back(Event::Received {
            id: m.id(),
            version: m.version(),
            from,
        });
        self.offer_to_peers(now, m, Some(from));
    }

    pub(super) fn on_have(
        &mut self,
        now: Duration,
        key: [u8; 32],
        r: BundleRef,
        ranges: Option<RangeSet>,
    ) {
        let rtt_hint = self
            .links
            .values()
            .map(|l| l.params.rtt_hint)
            .next()
            .unwrap_or(Duration::from_secs(1));
        let p = self.peers.get_mut(&key).expect("checked");
        let rtt_hint = self
            .links
            .get(&p.link)
            .map_or(rtt_hint, |l| l.params.rtt_hint);
        let Some(i) = p.out.iter().position(|o| o.r == r) else {
            return;
        };
        // How long after a send a report must be to have seen its data: the resend
        // timeout without its backoff (reports can sit behind a busy channel).
        let covered_after = p.cc.srtt.map_or(rtt_hint * 2, |s| {
            s + (p.cc.rttvar() * 4).max(s / 2) + self.cfg.report_interval
        });
        if !p.cc.enabled && !p.out[i].resent {
            // No acks on this link: a report answering our last send is the RTT sample.
            // Not after a resend: which copy it answers is unknown (Karn).
            let sample = now.saturating_sub(p.out[i].last_sent_at);
            p.cc.rtt_sample(sample);
            p.backoff = 0;
        }
        // Progress proves the path works: the resend timeout stops backing off (Karn's
        // rule withholds the RTT sample after a resend, not this).
        let progress = ranges
            .as_ref()
            .is_none_or(|h| h.covered() > p.out[i].held.covered());
        if progress {
            p.backoff = 0;
        }
        match ranges {
            None => {
                let o = p.out.remove(i);
                p.peer_has.insert((o.id, o.r.version));
                self.stats.bundles_delivered += 1;
                self.events.push_back(Event::Delivered {
                    id: o.id,
                    version: o.r.version,
                    to: key,
                });
            }
            Some(held) => {
                let o = &mut p.out[i];
                o.manifest_acked = true;
                if held.covered() > o.held.covered() || o.held != held {
                    o.progress_at = now;
                }
                // Anything in flight that is now held is done; the rest stays in flight.
                let mut still = RangeSet::new();
                for (s, e) in o.in_flight.iter() {
                    for (ms, me) in held.missing(e) {
                        let (a, b) = (ms.max(s), me.min(e));
                        if a < b {
                            still.insert(a, b);
                        }
                    }
                }
                // A range that left long enough ago to be in this report, and is not,
                // was lost: send it again now rather than after a timeout.
                if !o.sends.is_empty() {
                    let cutoff = now.checked_sub(covered_after).unwrap_or_default();
                    // Frames leave and arrive in order: a range sent before one the
                    // report holds, and not held itself, was lost.
                    let newest_held = o
                        .sends
                        .iter()
                        .filter(|(s, e, _)| held.contains(*s, *e))
                        .map(|x| x.2)
                        .max();
                    let mut keep = std::collections::VecDeque::new();
                    for (s, e, at) in o.sends.drain(..) {
                        let missing: Vec<(u64, u64)> = held
                            .missing(e)
                            .into_iter()
                            .filter_map(|(ms, me)| {
                                let (a, b) = (ms.max(s), me.min(e));
                                (a < b).then_some((a, b))
                            })
                            .collect();
                        if missing.is_empty() {
                            continue;
                        }
                        if at <= cutoff || newest_held.is_some_and(|n| at < n) {
                            for (a, b) in missing {
                                still.remove(a, b);
                            }
                        } else {
                            keep.push_back((s, e, at));
                        }
                    }
                    o.sends = keep;
                }
                o.in_flight = still;
                o.held = held;
            }
        }
    }

    pub(super) fn on_ack(&mut self, now: Duration, key: [u8; 32], ack: &Ack) {
        let p = self.peers.get_mut(&key).expect("checked");
        let delay = Duration::from_micros(ack.delay_us);
        p.backoff = 0;
        let (_, lost) = p.cc.on_ack(now, &ack.ranges, delay);
        if !lost.is_empty() {
            tracing::trace!(
                t = now.as_secs_f64(),
                pieces = lost.len(),
                "frames declared lost"
            );
        }
        requeue_lost(p, &lost);
    }
}

/// Pieces in frames declared lost go back to "unsent" unless the peer holds them.
pub(super) fn requeue_lost(p: &mut super::peer::Peer, lost: &[PieceRef]) {
    for &(id, version, off, len) in lost {
        if let Some(o) = p
            .out
            .iter_mut()
            .find(|o| o.id == id && o.r.version == version)
        {
            o.in_flight.remove(off, off + len);
        }
    }
}

fn queue_have_all(p: &mut super::peer::Peer, r: BundleRef) {
    if !p.have_all.contains(&r) {
        p.have_all.push_back(r);
    }
}
