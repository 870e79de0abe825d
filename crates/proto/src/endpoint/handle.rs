//! Handling of received messages other than HELLO and SYMBOLS.

use std::time::Duration;

use skywave_bundle::{ManifestError, RangeSet, SignedManifest};

use super::cc::PieceRef;
use super::{Endpoint, Event, enqueue, short_id};
use crate::store::{BundleStore, Offer, Written};
use crate::wire::{Ack, BundleRef, Message};

/// Transfers a peer may have open towards us at once. Far above what an honest sender
/// keeps in flight; a flood of manifests stops here instead of in the store.
pub(crate) const MAX_INCOMING_PER_PEER: usize = 1024;

/// Bundles told at once as having come without their manifest (NAMELESS).
pub(super) const MAX_NAMELESS: usize = 16;

impl Endpoint {
    pub(super) fn on_want(
        &mut self,
        now: Duration,
        key: [u8; 32],
        len: u8,
        prefixes: &[u8],
        store: &mut dyn BundleStore,
    ) {
        // Before any backing off: the request itself says the peer still lacks it.
        let unbacked = self.unbacked_rto_of(&key).unwrap_or(Duration::from_secs(1));
        // Asked by short id: the set that names them, if a skipped round left it unbuilt.
        self.build_recon_set(&key, store);
        let p = self.peers.get_mut(&key).expect("checked");
        let half_duplex = self
            .links
            .get(&p.link)
            .is_some_and(|l| l.params.half_duplex);
        let data_sent_at = p.data_sent_at;
        p.recon.bytes += 1 + prefixes.len() as u64;
        p.recon.messages += 1;
        // A WANT by the whole short id is a request repeated because nothing came
        // (or a suspect payload asked for again): it says nothing of the round under
        // way. Any shorter WANT is a decoder's, and only a decoder that has finished
        // asks, so the stream can stop even if its RECON_DONE was lost. (A decoder needs
        // all six bytes only for ids sharing five with a neighbour, about n^2 / 2^41 of
        // sets; its RECON_DONE, repeated while symbols come, then stops the stream.)
        let again = len == crate::wire::MAX_WANT_LEN;
        if !again {
            p.recon.stopped = true;
            p.recon.apply_deferred();
        }
        let shift = 48 - 8 * u32::from(len);
        for prefix in Message::want_prefixes(len, prefixes) {
            // The decoder chose a prefix unique in our set as the symbols described it;
            // a bundle that arrived since may share it, and is offered too (a wrong
            // offer costs a manifest and an "I have it").
            let lo = prefix << shift;
            let hi = lo | ((1u64 << shift) - 1);
            let found: Vec<(skywave_bundle::BundleId, u64)> = p
                .recon
                .shorts
                .range(lo..=hi)
                .take(8)
                .map(|(_, &b)| b)
                .collect();
            // A bundle this link withholds is not in the set the peer reconciled with,
            // but a WANT may still name it (a guessed or colliding prefix): refused.
            let withheld = p.recon.withheld.range(lo..=hi).take(8).count();
            if withheld > 0 {
                tracing::debug!(peer = %super::hex8(&key), withheld, "WANT of a bundle this link withholds refused");
                self.stats.withheld_wants_refused += withheld as u64;
            }
            // A repeated request is served even if the peer was said to hold the
            // bundle, and a transfer whose manifest went out a resend timeout ago
            // unconfirmed sends it again now rather than at its own (possibly backed-off)
            // timer. What is queued already is not looked up again: a peer repeating a
            // long WANT costs a lookup per id, not a store read.
            for (id, version) in found {
                if p.peer_has.contains(&(id, version)) {
                    if !again {
                        continue; // a late duplicate request for something delivered
                    }
                    p.peer_has.remove(&(id, version));
                }
                if let Some(o) = p
                    .out
                    .iter_mut()
                    .find(|o| o.id == id && o.r.version >= version)
                {
                    if again
                        && !o.manifest_acked
                        && o.manifest_sent_at.is_some_and(|t| {
                            now >= super::peer::wait_start(t, data_sent_at, half_duplex) + unbacked
                        })
                    {
                        // Asked again a whole timeout after the manifest went: it was
                        // lost, and with it every piece sent under it (the peer drops
                        // pieces of a bundle it has no manifest for). Both go again
                        // now; the manifest alone would leave the pieces to a timer.
                        o.resend_from_manifest(now);
                    } else if again
                        && o.manifest_acked
                        && !o.in_flight.is_empty()
                        && now
                            >= super::peer::wait_start(o.progress_at, data_sent_at, half_duplex)
                                + unbacked
                    {
                        // The peer has the manifest and asks again: what is in flight
                        // for a whole timeout, not counting its backing off, did not
                        // arrive. Sent again now, not at a timer that after a run of
                        // losses waits a minute.
                        o.presume_in_flight_lost();
                        o.sends.clear();
                        o.progress_at = now;
                        self.stats.want_resends += 1;
                    }
                    continue;
                }
                if p.backlog.get(&id).is_some_and(|q| q.version >= version) {
                    continue;
                }
                if let Some(m) = store.manifest(&id).filter(|m| m.version() == version) {
                    enqueue(p, &m, now);
                }
            }
        }
    }

    /// The peer says frames of ours never arrived (MISSED): what only they said goes
    /// again now, not after the timeouts that would otherwise find it out. A lost
    /// MISSED is told again; a lost report is said again (the sender would resend what
    /// we hold); a lost request is made again, by the whole short id; a lost manifest
    /// goes again with every piece sent since (the peer dropped them, having no manifest
    /// to put them under).
    pub(super) fn on_missed(&mut self, now: Duration, key: [u8; 32], ranges: &[(u64, u64)]) {
        let Some(p) = self.peers.get_mut(&key) else {
            return;
        };
        let notes = p.take_missed_notes(ranges);
        if notes.is_empty() {
            return;
        }
        let held: Vec<BundleRef> = notes
            .iter()
            .flat_map(|n| n.reports.iter())
            .filter(|r| self.holds(r))
            .copied()
            .collect();
        let p = self.peers.get_mut(&key).expect("checked");
        // A message with a parity, one of whose frames alone is missed here, the peer
        // rebuilt: it is not sent again. (Two missed in separate reports are each taken
        // for one; the manifest's resend timer repairs that.)
        let rebuilt: Vec<u64> = notes
            .iter()
            .filter_map(|n| n.parity_frag)
            .filter(|id| {
                p.parity_sent.contains(id)
                    && notes.iter().filter(|n| n.parity_frag == Some(*id)).count() == 1
            })
            .collect();
        for n in notes {
            self.stats.missed_frames_repaired += 1;
            // Our own word of frames we missed, lost with it: said again.
            p.retell_missed(&n.missed);
            for r in n.reports {
                if p.incoming.contains_key(&r) {
                    queue_have(p, r, now);
                } else if held.contains(&r) {
                    queue_have_all(p, r);
                }
            }
            for sid in n.wants {
                if p.asked.remove(sid) && !p.recon.shorts.contains_key(&sid) {
                    p.wants_out.push_back((sid, crate::wire::MAX_WANT_LEN));
                }
            }
            let manifests = if n.parity_frag.is_some_and(|id| rebuilt.contains(&id)) {
                Vec::new()
            } else {
                n.manifests
            };
            for (r, at) in manifests {
                if let Some(o) = p
                    .out
                    .iter_mut()
                    .find(|o| o.r == r && !o.manifest_acked && o.manifest_sent_at == Some(at))
                {
                    o.resend_from_manifest(now);
                }
            }
        }
    }

    /// DONE: the peer holds whole the offers numbered `seqs`. A report meant for an
    /// earlier incarnation of ours (its tag is another nonce's) names other offers, and
    /// is ignored; numbers of offers already settled name nothing.
    pub(super) fn on_done(
        &mut self,
        now: Duration,
        key: [u8; 32],
        tag: u8,
        seqs: &RangeSet,
        heard: Option<u64>,
    ) {
        if tag != self.nonce as u8 {
            tracing::debug!(peer = %super::hex8(&key), tag, "DONE for another incarnation of this node ignored");
            return;
        }
        let Some(p) = self.peers.get(&key) else {
            return;
        };
        let done: Vec<BundleRef> = p
            .out
            .iter()
            .filter(|o| o.offer_seq.is_some_and(|s| seqs.contains(s, s + 1)))
            .map(|o| o.r)
            .collect();
        for r in done {
            self.on_have(now, key, r, None, heard);
        }
    }

    /// The last of our frames that a `DONE` among `msgs` shows the peer received, on a
    /// shared channel (frames from one radio arrive there in order or not at all): the
    /// peer learns an offer's number from the frame that carried its manifest, so a
    /// `DONE` naming an offer whose manifest went once proves that frame arrived (whether
    /// the bundle then came from us or from another neighbour). The frame's reports then
    /// count as if `HEARD` named it (see `on_have`), and
    /// [`Endpoint::lost_before_done`] takes what it proves lost.
    pub(super) fn done_arrived(&self, key: &[u8; 32], msgs: &[Message<'_>]) -> Option<u64> {
        let p = self.peers.get(key)?;
        let l = self.links.get(&p.link)?;
        if !l.params.shared || l.params.paced || l.params.reliable {
            return None;
        }
        msgs.iter()
            .filter_map(|m| match m {
                Message::Done { tag, seqs } if *tag == self.nonce as u8 => Some(seqs),
                _ => None,
            })
            .flat_map(|seqs| {
                p.out
                    .iter()
                    .filter(|o| o.offer_seq.is_some_and(|s| seqs.contains(s, s + 1)))
                    .filter_map(|o| o.manifest_pn)
            })
            .max()
    }

    /// After a frame whose `DONE` showed that our frame `arrived` reached the peer (see
    /// `done_arrived`): a bundle whose only manifest went in an earlier frame, and which
    /// the peer never reported, lost that frame (the peer drops pieces of a bundle it
    /// has no manifest for), and goes again at once. Its resend timer, backed off by the
    /// collisions that lose frames there, left the channel idle for seconds (a 9.6
    /// kbit/s chain of hidden radios waited 16 s). Only bundles of at most two frames:
    /// a peer's report of a bundle it holds in part may come a frame after its `DONE`
    /// (reports wait for the channel to quiet), and then what goes again for nothing is
    /// at most two frames.
    pub(super) fn lost_before_done(&mut self, now: Duration, key: [u8; 32], arrived: u64) {
        let Some(p) = self.peers.get_mut(&key) else {
            return;
        };
        let Some(mtu) = self.links.get(&p.link).map(|l| l.params.mtu as u64) else {
            return;
        };
        for o in p.out.iter_mut().filter(|o| {
            !o.manifest_acked
                && o.fec.is_none()
                && o.manifest_sent_at.is_some()
                && o.manifest.len() as u64 + o.length <= 2 * mtu
                && o.manifest_pn.is_some_and(|m| m < arrived)
        }) {
            tracing::trace!(t = now.as_secs_f64(), id = %o.id, "manifest's frame lost (a later offer is done): sent again");
            o.resend_from_manifest(now);
            self.stats.answered_resends += 1;
        }
    }

    /// The peer says pieces of `r` came without its manifest: the manifest goes again,
    /// with the pieces (dropped) after it. Not for a manifest sent again within a round
    /// trip (the word may be about pieces ahead of it). On links that may reorder or
    /// lose frames unseen (`in_order` false) only for a manifest the peer had confirmed:
    /// it lost the bundle since (its commit was rolled back), and says so on any link.
    pub(super) fn on_nameless(
        &mut self,
        now: Duration,
        key: [u8; 32],
        r: BundleRef,
        in_order: bool,
    ) {
        let Some(p) = self.peers.get_mut(&key) else {
            return;
        };
        let rtt = p.cc.srtt.unwrap_or_else(|| {
            self.links
                .get(&p.link)
                .map_or(Duration::from_secs(1), |l| l.params.rtt_hint)
        });
        let Some(o) = p
            .out
            .iter_mut()
            .find(|o| o.r == r && (in_order || o.manifest_acked))
        else {
            return;
        };
        if o.manifest_sent_at.is_some_and(|t| now >= t + rtt) {
            if o.manifest_acked {
                // It held the manifest and has lost it since: all of it goes again (by
                // FEC, from the source symbols).
                o.manifest_acked = false;
                o.held = RangeSet::new();
                o.delivered = RangeSet::new();
                o.reset_fec();
            }
            o.resend_from_manifest(now);
            self.stats.nameless_resent += 1;
        }
    }

    pub(super) fn on_manifest(
        &mut self,
        now: Duration,
        key: [u8; 32],
        decoded: Result<SignedManifest, ManifestError>,
        store: &mut dyn BundleStore,
    ) -> Option<BundleRef> {
        let m = match decoded {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(peer = %super::hex8(&key), "bad manifest: {e}");
                self.stats.bad_manifests += 1;
                return None;
            }
        };
        let r = BundleRef::new(&m.id(), m.version());
        self.on_signed_manifest(now, key, m, store);
        Some(r)
    }

    fn on_signed_manifest(
        &mut self,
        now: Duration,
        key: [u8; 32],
        m: SignedManifest,
        store: &mut dyn BundleStore,
    ) {
        let (id, version) = (m.id(), m.version());
        let r = BundleRef::new(&id, version);
        let p = self.peers.get_mut(&key).expect("checked");
        // The peer is answering our WANT: the rest of it is on its way too.
        let sid = short_id(&p.salt, &id, version);
        p.asked.answered(sid, now);
        if !p.wants_out.is_empty() || (p.recon.dec.is_some() && !p.recon.decoded) {
            // Offered before we asked (a guess, a relay), or before the round that would
            // have us ask ended: not to be asked for (the request would wait for an
            // answer that came already, and be made again).
            p.wants_answered.insert(sid);
        }
        p.peer_has.insert((id, version));
        if p.no_sealed && m.manifest().sealed.is_some() {
            // This link must not carry encrypted payloads: answered as held, so that the
            // sender (whose side of the link is not set to withhold them) stops offering.
            tracing::debug!(%id, version, peer = %super::hex8(&key), "sealed bundle offered on a link that withholds them: not taken");
            self.stats.withheld_offers_refused += 1;
            queue_have_all(p, r);
            return;
        }
        if m.manifest().journal {
            let l = p.journal_held.entry(id).or_default();
            *l = (*l).max(m.manifest().length);
            // An older version than the one being received (late or resent): kept to be
            // published when its prefix is in.
            if let Some(inc) = p
                .incoming
                .values_mut()
                .find(|inc| inc.id == id && inc.version > version)
            {
                if self.held.get(&r.prefix).is_none_or(|h| h.1 < version) {
                    inc.remember_older(m);
                }
                return;
            }
        }
        if self.suspects.get(&id, version).is_some() {
            let other_source = self
                .peers
                .values()
                .any(|q| q.key != key && q.incoming.contains_key(&r));
            if self.suspects.refuses(&id, version, &key, now, other_source) {
                // Stop this sender for now; the version is asked for again, by whole
                // short id, when a source may be tried (see `retry_suspects`).
                tracing::debug!(%id, version, peer = %super::hex8(&key), "offer of a suspect payload turned down");
                self.stats.suspect_offers_refused += 1;
                queue_have_all(self.peers.get_mut(&key).expect("checked"), r);
                return;
            }
        }
        let held = self.holds(&r);
        let p = self.peers.get_mut(&key).expect("checked");
        if !held && !p.incoming.contains_key(&r) && self.paused.contains(&key) {
            // Its budget is spent: like the cap below, the manifest is not confirmed and
            // comes again after the sender's resend timeout.
            self.stats.paused_offers += 1;
            return;
        }
        if !held && p.incoming.len() >= MAX_INCOMING_PER_PEER && !p.incoming.contains_key(&r) {
            // A peer opening transfers without end (each a partial in the store): the
            // manifest is not confirmed, so an honest sender offers it again after its
            // resend timeout, once transfers under way have finished.
            self.stats.incoming_limit += 1;
            return;
        }
        match store.offer(&m) {
            Offer::Held => queue_have_all(p, r),
            Offer::Accepted => {
                queue_have_all(p, r);
                self.completed(now, key, &m);
            }
            Offer::Partial(held) => {
                // A newer version of a journal continues the older one's transfer; the
                // sender already knows what that one holds, so no report is owed at once.
                let replaced: Vec<BundleRef> = p
                    .incoming
                    .iter()
                    .filter(|(_, inc)| inc.id == id && inc.version < version)
                    .map(|(k, _)| *k)
                    .collect();
                let continued = !replaced.is_empty();
                let resumed = !held.is_empty() && !continued;
                let mut inc = super::peer::Incoming {
                    id,
                    version,
                    from_nonce: p.peer_nonce,
                    held,
                    manifest: m,
                    older: Default::default(),
                };
                for k in replaced {
                    if let Some(old) = p.incoming.remove(&k) {
                        for o in old.older {
                            inc.remember_older(o);
                        }
                        inc.remember_older(old.manifest);
                    }
                }
                p.incoming.insert(r, inc);
                // The bytes may already complete an older version.
                self.publish_prefixes(now, key, r, store);
                let p = self.peers.get_mut(&key).expect("checked");
                // Say at once what is already held so none of it is sent again; otherwise
                // the first batched report confirms the manifest.
                let due = if resumed {
                    now
                } else {
                    now + self.cfg.report_interval
                };
                queue_have(p, r, due);
            }
            Offer::Refused(why) => {
                tracing::debug!(%id, "refused offer: {why}");
                queue_have_all(p, r);
            }
            Offer::NoRoom(why) => {
                // The sender stops (nothing would be stored); the version waits out a
                // backoff like a copy that could not be stored, and is then asked for
                // again by whole short id (see `retry_suspects`).
                queue_have_all(p, r);
                self.stats.offers_refused_no_room += 1;
                self.no_room(now, id, version, &why);
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
        self.store_piece(now, key, r, offset, data, true, store);
    }

    /// Stores received payload bytes in the transfer of `r` from `key` (a piece, an FEC
    /// source symbol, or decoded bytes), and owes the report. `sent_to_us`: `key` sent
    /// these bytes to us, so bytes we hold mean it missed a report.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn store_piece(
        &mut self,
        now: Duration,
        key: [u8; 32],
        r: BundleRef,
        offset: u64,
        data: &[u8],
        sent_to_us: bool,
        store: &mut dyn BundleStore,
    ) {
        let holds = self.holds(&r);
        let lost = !self.lost.is_empty() && self.lost.contains(&r.prefix);
        let p = self.peers.get_mut(&key).expect("checked");
        // Journal versions share their prefix: a piece of an older version (sent before
        // a newer one was offered) belongs to the newer one's transfer, and a piece of a
        // newer version whose manifest is not here yet does too if it lies within the
        // version being received (past it, it is dropped and the sender learns so from
        // the next report).
        let (r, other_version) = if p.incoming.contains_key(&r) {
            (r, false)
        } else {
            p.incoming
                .iter()
                .find(|(k, inc)| k.prefix == r.prefix && inc.manifest.manifest().journal)
                .map_or((r, false), |(k, _)| (*k, true))
        };
        let Some(inc) = p.incoming.get_mut(&r) else {
            if holds {
                // The answer to any piece of a bundle already held.
                self.stats.duplicate_bytes_received += data.len() as u64;
                queue_have_all(p, r);
            } else if sent_to_us
                && !p.nameless.contains(&r)
                && p.nameless.len() < MAX_NAMELESS
                && (lost
                    || self
                        .links
                        .get(&p.link)
                        .is_some_and(|l| l.params.numbered_in_order()))
            {
                // Its manifest was lost: said at once, where the sender would wait out
                // a resend timeout (a report on pieces it cannot know we dropped).
                // Point to point only: on shared channels (radio and chain cells, two
                // seeds) it made as many cells worse as better, up to 1.65x the time.
                p.nameless.push(r);
            }
            return;
        };
        let end = offset.saturating_add(data.len() as u64);
        if end > inc.manifest.manifest().length {
            if !other_version {
                self.stats.dropped_malformed += 1;
            }
            return;
        }
        match store.write(&inc.id, inc.version, offset, data) {
            Written::Stored => {
                inc.held.insert(offset, end);
                let older = !inc.older.is_empty();
                queue_have(p, r, now + self.cfg.report_interval);
                if older {
                    self.publish_prefixes(now, key, r, store);
                }
            }
            Written::Duplicate => {
                self.stats.duplicate_bytes_received += data.len() as u64;
                inc.held.insert(offset, end);
                if sent_to_us {
                    // The sender resent bytes we hold: it missed our report (lost, or
                    // collided on a shared channel). Say again what we hold, or it
                    // resends them at every timeout and never gets to the rest.
                    queue_have(p, r, now + self.cfg.report_interval);
                }
            }
            Written::Complete => {
                let inc = p.incoming.remove(&r).expect("present");
                p.have.retain(|x| *x != r);
                queue_have_all(p, r);
                self.completed(now, key, &inc.manifest);
            }
            Written::Corrupt(why) => {
                let (id, version) = (inc.id, inc.version);
                self.payload_corrupt(now, key, id, version, &why);
            }
            Written::Failed(why) => {
                let (id, version) = (inc.id, inc.version);
                self.store_failed(now, key, id, version, &why);
            }
            Written::Unknown => {}
        }
    }

    /// Journals: publishes the newest older version whose whole prefix transfer `r`
    /// now holds (older ones are superseded by it).
    fn publish_prefixes(
        &mut self,
        now: Duration,
        key: [u8; 32],
        r: BundleRef,
        store: &mut dyn BundleStore,
    ) {
        let Some(p) = self.peers.get_mut(&key) else {
            return;
        };
        let Some(inc) = p.incoming.get_mut(&r) else {
            return;
        };
        let contiguous = inc
            .held
            .iter()
            .next()
            .filter(|&(s, _)| s == 0)
            .map_or(0, |(_, e)| e);
        let n = inc
            .older
            .partition_point(|m| m.manifest().length <= contiguous);
        if n == 0 {
            return;
        }
        let ready: Vec<SignedManifest> = inc.older.drain(..n).collect();
        let Some(m) = ready.last() else { return };
        match store.commit_prefix(m) {
            Written::Complete => {
                let m = m.clone();
                self.completed(now, key, &m);
            }
            Written::Corrupt(why) => {
                // The bytes the transfer holds do not make the older version: the
                // version being fetched is suspect.
                let (id, version) = (inc.id, inc.version);
                self.payload_corrupt(now, key, id, version, &why);
            }
            Written::Failed(why) => {
                let (id, version) = (inc.id, inc.version);
                self.store_failed(now, key, id, version, &why);
            }
            Written::Stored | Written::Duplicate | Written::Unknown => {}
        }
    }

    /// Ends the transfer of `r` from `key` and from every other peer sending it: each
    /// is told it is held, so it stops. Returns the senders, `key` first.
    fn stop_senders(&mut self, key: [u8; 32], r: BundleRef) -> Vec<[u8; 32]> {
        let mut senders = vec![key];
        for q in self.peers.values_mut() {
            if q.incoming.remove(&r).is_some() || q.key == key {
                q.have.retain(|x| *x != r);
                queue_have_all(q, r);
                if q.key != key {
                    senders.push(q.key);
                }
            }
        }
        self.fec_rx.remove(&r);
        senders
    }

    /// The copy of `r` that `key` (and any other peer sending it) filled does not
    /// verify; the store has dropped it. Every sender is blamed and told to stop; the
    /// version is fetched again from the least blamed source after a backoff.
    fn payload_corrupt(
        &mut self,
        now: Duration,
        key: [u8; 32],
        id: skywave_bundle::BundleId,
        version: u64,
        why: &str,
    ) {
        self.stats.failed_transfers += 1;
        self.stats.bad_payloads += 1;
        let sources = self.stop_senders(key, BundleRef::new(&id, version));
        let base = self
            .rto_of(&key)
            .unwrap_or(Duration::from_secs(1))
            .max(Duration::from_secs(5))
            * 4;
        let jitter = self.unit();
        let retry_at = self
            .suspects
            .failed(id, version, &sources, now, base, jitter);
        let blamed: Vec<String> = sources.iter().map(super::hex8).collect();
        tracing::warn!(%id, version, ?blamed, retry_in_s = (retry_at - now).as_secs(), "received payload does not verify ({why}): discarded, its senders not asked again before the backoff ends");
    }

    /// The store could not keep the bytes of `id` at `version` (no room, a failing
    /// disk) and dropped them. Starting again at once would fetch the same bytes into
    /// the same failure for ever: every sender is told to stop, and the version is asked
    /// for again after a backoff, when there may be room.
    fn store_failed(
        &mut self,
        now: Duration,
        key: [u8; 32],
        id: skywave_bundle::BundleId,
        version: u64,
        why: &str,
    ) {
        self.stats.failed_transfers += 1;
        self.stop_senders(key, BundleRef::new(&id, version));
        self.no_room(now, id, version, why);
    }

    /// A received bundle the store cannot take (quota, disk): it waits out a backoff
    /// (20 s, doubling) and is then asked for again by whole short id (`retry_suspects`).
    /// Logged when the node enters that state, not for every bundle: a full disk under a
    /// flood of offers writes one line, and one more when a bundle is stored again.
    fn no_room(&mut self, now: Duration, id: skywave_bundle::BundleId, version: u64, why: &str) {
        let jitter = self.unit();
        let retry_at = self
            .suspects
            .failed(id, version, &[], now, Duration::from_secs(20), jitter);
        let retry_in_s = (retry_at - now).as_secs();
        if self.no_room_since.is_none() {
            self.no_room_since = Some(now);
            tracing::warn!(%id, version, retry_in_s, "received bundles cannot be stored ({why}): turned down and asked for again after a backoff (logged once until a bundle is stored again)");
        } else {
            tracing::debug!(%id, version, retry_in_s, "not stored: {why}");
        }
    }

    /// Asks again for suspect versions whose backoff has ended, each from the peer
    /// known to hold it that is least blamed for it (one that never sent it bad first).
    pub(super) fn retry_suspects(&mut self, now: Duration) {
        for (id, version) in self.suspects.due(now) {
            if self.holds(&BundleRef::new(&id, version)) {
                self.suspects.verified(&id, version);
                continue;
            }
            let Some(s) = self.suspects.get(&id, version) else {
                continue;
            };
            let Some(key) = self
                .peers
                .values()
                .filter(|p| p.established && p.peer_has.contains(&(id, version)))
                .min_by_key(|p| s.blame(&p.key))
                .map(|p| p.key)
            else {
                continue; // asked again when a peer offers it
            };
            let p = self.peers.get_mut(&key).expect("listed");
            let sid = short_id(&p.salt, &id, version);
            tracing::debug!(%id, version, peer = %super::hex8(&key), "asking again for a suspect payload");
            p.asked.insert(sid, now);
            p.wants_out.push_back((sid, crate::wire::MAX_WANT_LEN));
        }
    }

    /// A bundle arrived complete from `from`: announce it and offer it onwards.
    pub(super) fn completed(&mut self, now: Duration, from: [u8; 32], m: &SignedManifest) {
        self.stats.bundles_received += 1;
        self.suspects.verified(&m.id(), m.version());
        if let Some(since) = self.no_room_since.take() {
            tracing::info!(
                after_s = (now.saturating_sub(since)).as_secs(),
                "room again: a received bundle was stored"
            );
        }
        let r = BundleRef::new(&m.id(), m.version());
        self.fec_rx.remove(&r);
        // Other peers sending the same bundle (relays racing on a shared channel) are
        // told at once that it is held.
        for q in self.peers.values_mut().filter(|q| q.key != from) {
            if q.incoming.remove(&r).is_some() {
                q.have.retain(|x| *x != r);
                queue_have_all(q, r);
            }
        }
        self.note_held(m.id(), m.version());
        if !self.lost.is_empty() {
            self.lost.remove(&r.prefix);
        }
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
        heard: Option<u64>,
    ) {
        let rtt_hint = self
            .links
            .values()
            .map(|l| l.params.rtt_hint)
            .next()
            .unwrap_or(Duration::from_secs(1));
        // A report later than twice the resend timeout answers something else (a new
        // session's first report after an idle hour): no RTT sample.
        let max_sample = self.rto_of(&key).map_or(Duration::MAX, |r| r * 2);
        let p = self.peers.get_mut(&key).expect("checked");
        let (rtt_hint, half_duplex) = self.links.get(&p.link).map_or((rtt_hint, false), |l| {
            (l.params.rtt_hint, l.params.half_duplex)
        });
        let Some(i) = p.out.iter().position(|o| o.r == r) else {
            // A report on an older version of a journal we now send newer: what it
            // holds is a prefix of the newer version.
            if let Some(o) = p
                .out
                .iter_mut()
                .find(|o| o.journal && o.r.prefix == r.prefix && o.r.version > r.version)
            {
                let ranges_given = ranges.is_some();
                let held = ranges.unwrap_or_else(|| {
                    let mut all = RangeSet::new();
                    all.insert(0, r.version);
                    all
                });
                let snapshot = ranges_given;
                if held.is_complete(r.version) {
                    p.peer_has.insert((o.id, r.version));
                    let l = p.journal_held.entry(o.id).or_default();
                    *l = (*l).max(r.version);
                }
                absorb_journal_report(o, &held, now);
                if snapshot {
                    drop_undelivered(o, &held);
                }
                p.backoff = 0;
            }
            return;
        };
        // How long after a send a report must be to have seen its data: the resend
        // timeout without its backoff (reports can sit behind a busy channel).
        let covered_after = p.cc.srtt.map_or(rtt_hint * 2, |s| {
            s + (p.cc.rttvar() * 4).max(s / 2) + self.cfg.report_interval
        });
        // `heard`, the HEARD ahead of this report: which of our frames it reflects.
        // Only for telling lost from late below (on half duplex it also times the
        // peer's answers, in `handle_frame`); elsewhere the RTT sample stays the time
        // since our last send of the bundle, as a report answering it
        // would be (timed from the frame it heard, it would count the wait for the
        // channel, and the FEC rule would put more repair up front than the loss needs).
        let heard = heard.filter(|_| !p.cc.enabled);
        if !p.cc.enabled && !p.out[i].resent {
            // No acks on this link: a report answering our last send is the RTT sample.
            // Not after a resend: which copy it answers is unknown (Karn). Not on half
            // duplex, where the time since a send counts the rest of our over: there the
            // samples are timed from the frame the peer's `HEARD` names (`Peer::answer_time`).
            let sample = now.saturating_sub(p.out[i].last_sent_at);
            if !half_duplex && sample <= max_sample {
                p.cc.rtt_sample(sample);
            }
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
                let o = p.out.swap_remove(i);
                p.peer_has.insert((o.id, o.r.version));
                if o.journal {
                    let l = p.journal_held.entry(o.id).or_default();
                    *l = (*l).max(o.length);
                }
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
                    // An entry is one send instant (pieces sent together are one
                    // entry): any of it held is such a frame.
                    let newest_held = o
                        .sends
                        .iter()
                        .filter(|&&(s, e, _, _)| {
                            !held.missing(e).iter().any(|&(ms, me)| ms <= s && me >= e)
                        })
                        .map(|x| x.2)
                        .max();
                    let mut keep = std::collections::VecDeque::new();
                    for (s, e, at, pn) in o.sends.drain(..) {
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
                        // With HEARD the report says which frames it reflects;
                        // without, a send old enough is taken as covered.
                        let lost = match heard {
                            Some(h) => pn <= h,
                            None => at <= cutoff,
                        } || newest_held.is_some_and(|n| at < n);
                        if lost {
                            tracing::trace!(
                                t = now.as_secs_f64(),
                                id = %o.id,
                                pn,
                                heard = ?heard,
                                sent = at.as_secs_f64(),
                                ?missing,
                                "report leaves pieces lost"
                            );
                            for (a, b) in missing {
                                still.remove(a, b);
                                p.loss.on_lost(b - a);
                            }
                        } else {
                            keep.push_back((s, e, at, pn));
                        }
                    }
                    o.sends = keep;
                }
                o.in_flight = still;
                drop_undelivered(o, &held);
                o.held = held;
            }
        }
    }

    pub(super) fn on_ack(&mut self, now: Duration, key: [u8; 32], ack: &Ack) {
        let p = self.peers.get_mut(&key).expect("checked");
        let delay = Duration::from_micros(ack.delay_us);
        p.backoff = 0;
        let (acked, lost) = p.cc.on_ack(now, &ack.ranges, delay);
        for &(id, version, off, len) in &acked {
            if let Some(o) = p
                .out
                .iter_mut()
                .find(|o| o.id == id && (o.r.version == version || o.journal))
            {
                let (s, e) = (off, (off + len).min(o.length));
                if s < e && !o.held.contains(s, e) {
                    o.delivered.insert(s, e);
                    // An acknowledgement is progress: the resend timer is for silence,
                    // not for reports that are slow to come (or too long to send).
                    o.progress_at = now;
                }
            }
        }
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
        p.loss.on_lost(len);
        if let Some(o) = p
            .out
            .iter_mut()
            .find(|o| o.id == id && (o.r.version == version || o.journal))
        {
            o.in_flight.remove(off, off + len);
        }
    }
}

/// Folds a report on an older version of a journal into the newer version's transfer:
/// held ranges only grow, and what they cover is no longer in flight.
fn absorb_journal_report(o: &mut super::peer::Outgoing, held: &RangeSet, now: Duration) {
    let before = o.held.covered();
    for (s, e) in held.iter() {
        let e = e.min(o.length);
        if s < e {
            o.held.insert(s, e);
            o.in_flight.remove(s, e);
        }
    }
    if o.held.covered() > before {
        o.progress_at = now;
    }
    o.sends.retain(|&(s, e, _, _)| !o.held.contains(s, e));
}

/// A report (a snapshot of what the peer held when it was built) lacking ranges whose
/// frames the peer had already acknowledged: the peer dropped them. They are no longer
/// in flight, so they are sent again.
fn drop_undelivered(o: &mut super::peer::Outgoing, held: &RangeSet) {
    if o.delivered.is_empty() {
        return;
    }
    let delivered = std::mem::take(&mut o.delivered);
    for (s, e) in delivered.iter() {
        for (ms, me) in held.missing(e) {
            let (a, b) = (ms.max(s), me.min(e));
            if a < b {
                o.in_flight.remove(a, b);
            }
        }
    }
}

/// Owes `p` a HAVE on `r`, due at `due` at the latest (reports are batched).
pub(super) fn queue_have(p: &mut super::peer::Peer, r: BundleRef, due: Duration) {
    if !p.have.contains(&r) {
        p.have.push(r);
    }
    p.have_due = Some(p.have_due.map_or(due, |d| d.min(due)));
}

pub(super) fn queue_have_all(p: &mut super::peer::Peer, r: BundleRef) {
    if !p.have_all.contains(&r) {
        p.have_all.push_back(r);
    }
}
