//! Sessions: a peer's HELLO starts or refreshes one, its set-up freezes the sets and
//! sizes reconciliation, and the decoder takes the streamer's symbols.

use super::peer::ListRx;
use super::*;
use crate::recon::riblt::Difference;

impl Endpoint {
    pub(super) fn start_session(
        &mut self,
        now: Duration,
        key: [u8; 32],
        nonce: u64,
        set_size: u64,
        store: &mut dyn BundleStore,
    ) {
        self.load_held(store);
        let mut inv = store.inventory();
        // The set size the HELLOs carried: both ends size the round from the same counts.
        let local = inv.len() as u64;
        let salt = session_salt((self.key, self.nonce), (key, nonce));
        let streamer = self.key < key;
        let withheld = self.withheld_for(&key, &salt, &mut inv, store);
        let p = self.peers.get_mut(&key).expect("peer exists");
        let params = self.links.get(&p.link).map(|l| l.params);
        let half = params.is_some_and(|l| l.half_duplex);
        p.peer_nonce = nonce;
        // A new session means a new incarnation on one side (a restart: packet numbers
        // start again from 0). What was learnt about the old one's frames would now
        // describe frames never sent: its acknowledgement ranges would acknowledge the new
        // sender's lost and unsent frames, and its delivery-rate estimate explode. It is
        // forgotten, and congestion control starts as on a new path.
        p.heard_pn = None;
        p.named_last = None;
        p.missed.clear();
        p.notes.clear();
        p.nameless.clear();
        p.ack_ranges.clear();
        p.ack_largest_at = now;
        p.ack_due = None;
        p.unacked_eliciting = 0;
        p.rx_spacing = None;
        p.rx_last = None;
        if let Some(params) = params {
            p.cc = Cc::new(&params);
        }
        p.loss = peer::LossMeter::default();
        p.backoff = 0;
        p.over_bytes = 0;
        p.sent_lately.clear();
        p.forget_answers();
        // Offers are numbered per session, both ways.
        p.next_offer_seq = 0;
        p.offer_seqs.clear();
        p.done_seqs = RangeSet::new();
        p.last_heard = now;
        p.salt = salt;
        p.streamer = streamer;
        p.established = true;
        p.hello_sent = false;
        p.hello_sketch = true;
        let epoch = p.recon.epoch + 1;
        p.recon = peer::Recon {
            epoch,
            last_symbol_at: now,
            withheld,
            ..Default::default()
        };
        // The streamer's set empty: its symbols would describe nothing, on any link (the
        // other side pushes its whole set, below).
        let streamer_empty = if streamer { local == 0 } else { set_size == 0 };
        let skip =
            ((local == 0 || set_size == 0) && !params.is_some_and(|l| l.shared)) || streamer_empty;
        if skip {
            p.recon.unbuilt = true;
        } else {
            set_recon_set(p, &inv);
        }
        let d_est = estimate_set_difference(
            (&self.cells, &self.sketch),
            local,
            (p.peer_cells.as_ref(), &p.peer_sketch),
            set_size,
        )
        .max(local.abs_diff(set_size));
        // Both ends compute the same estimate from the same two HELLOs, so the decoder
        // knows where the streamer's first burst ends and asks for more the moment it
        // has all of it undecoded, instead of waiting out a silence.
        let streamer_set = if streamer { local } else { set_size };
        p.recon.burst_end =
            first_burst(params.as_ref(), d_est, streamer_set, self.cfg.initial_burst);
        // From the link alone, so that both sides agree (a side that skipped the round,
        // below, decodes the other's stream when it begins the round after all).
        p.recon.either = params.is_some_and(|l| l.half_duplex && !l.shared);
        if !streamer || (p.recon.either && !skip) {
            p.recon.dec = Some(Decoder::new());
        }
        // A set small beside the difference is listed whole rather than coded: 6 bytes
        // an entry against ~1.38 symbols of 9 per id of the difference, and the list
        // tells the difference exactly (two disjoint sets of 10 on a 223 B radio: 60 B
        // instead of 62 symbols). The choice is the streamer's alone (where either side
        // streams, each side's for its own set); the decoder reads whichever comes.
        // Only on what the sketches tell: a HELLO without one bounds the difference by
        // the set sizes alone, and the largest it could be chose a list of all 10,100
        // on HF (60 KB; the difference was 200) when the peer's first HELLO was lost
        // and its bare repeat came instead. Without a sketch, the least it could be.
        let informed = p.peer_cells.is_some() || !p.peer_sketch.is_empty();
        let list_burst = if informed {
            p.recon.burst_end
        } else {
            let least = local.abs_diff(set_size);
            first_burst(params.as_ref(), least, streamer_set, self.cfg.initial_burst)
        };
        let list_worth = list_burst as usize * crate::recon::riblt::SYMBOL_LEN;
        if (streamer || p.recon.either)
            && !skip
            && p.takes_lists
            && (p.recon.shorts.len() as u64) <= wire::MAX_LISTED
            && p.recon.shorts.len() * wire::LISTED_ID_LEN <= list_worth
        {
            p.recon.list = Some(p.recon.shorts.keys().copied().collect());
            p.recon.burst_end = p.recon.shorts.len() as u64;
        }
        if skip {
            // One side holds nothing: the difference is the other side's whole set,
            // which it pushes (below); symbols would only describe it. The round is not
            // begun, but a side that counted otherwise (a bundle stored between its HELLO
            // and the session) still gets one: symbols arriving, or a request for them,
            // start it (`Recon::skipped`).
            // Not on a shared channel yet: there the round's time lets every empty
            // neighbour's session come up before data starts, and the FEC rule, which
            // counts the neighbours a transfer serves when its data starts, then codes
            // one transfer for all (skipping, the source sent 75 KB against 58 KB to
            // four empty neighbours, `one_transmission_serves_every_neighbour`).
            p.recon.skipped = true;
            p.recon.burst_end = 0;
            p.recon.decoded = !streamer;
        }
        // While reconciliation runs, push a few of the newest small bundles on a guess:
        // on slow links it takes minutes, and these are the likeliest to be missing. A
        // wrong guess costs a manifest and an "I have it".
        // Only when a guess is likely right: the estimate says the peer lacks at least
        // half of what we hold.
        let likely_missing = d_est as f64 / 2.0 >= 0.5 * local as f64;
        p.unqueued = Vec::new();
        if set_size == 0 {
            // The peer holds nothing: everything is missing, no need to reconcile first.
            // The first chunk is queued now, the rest a chunk per turn of the host
            // (`Endpoint::queue_unqueued`), the inventory's memory given back as it goes.
            // Nothing below needs it then (every recent one is queued).
            p.backlog.reserve(inv.len());
            inv.reverse();
            p.unqueued = std::mem::take(&mut inv);
            super::queue::queue_unqueued(p, QUEUE_CHUNK, store, now);
        }
        let mut budget = speculative_budget(params);
        let recent: Vec<(BundleId, u64)> = inv
            .iter()
            .rev()
            .filter(|_| half && likely_missing)
            .filter(|(_, _, len)| *len <= SPECULATIVE_MAX_LEN)
            .take(SPECULATIVE_COUNT)
            .enumerate()
            .take_while(|(i, (_, _, len))| {
                // At least a few, whatever the budget.
                let cost = MANIFEST_BYTES + len;
                let fits = budget.is_none_or(|b| *i < 4 || cost <= b);
                budget = budget.map(|b| b.saturating_sub(cost));
                fits
            })
            .map(|(_, (id, v, _))| (*id, *v))
            .collect();
        for (id, version) in recent {
            if let Some(m) = store.manifest(&id).filter(|m| m.version() == version)
                && !p.out.iter().any(|o| o.id == id)
                && p.backlog.get(&id).is_none()
            {
                enqueue_shared(p, &m, &Bytes::copy_from_slice(m.as_bytes()), now, true);
            }
        }
        // Transfers in progress resume: the peer answers the manifest with what it holds.
        for o in &mut p.out {
            o.manifest_acked = false;
            o.manifest_sent_at = None;
            o.in_flight = RangeSet::new();
            o.sends.clear();
            // Acknowledged by the old session's packet numbers: meaningless now.
            o.delivered = RangeSet::new();
            o.timeouts = 0;
            o.offer_seq = None;
            o.progress_at = now;
            o.reset_fec();
        }
        p.wants_out.clear();
        p.wants_answered.clear();
        p.asked.clear();
        let link = p.link;
        self.events.push_back(Event::PeerUp { peer: key, link });
        tracing::debug!(peer = %hex8(&key), streamer, local, remote = set_size, "session established");
    }

    /// Builds the set of a session whose round was skipped, now that it is begun after
    /// all (see `Recon::unbuilt`): the set as held now, as `start_session` plus every
    /// bundle stored since would have made it.
    pub(super) fn build_recon_set(&mut self, key: &[u8; 32], store: &mut dyn BundleStore) {
        if !self.peers.get(key).is_some_and(|p| p.recon.unbuilt) {
            return;
        }
        let mut inv = store.inventory();
        let salt = self.peers[key].salt;
        let withheld = self.withheld_for(key, &salt, &mut inv, store);
        let p = self.peers.get_mut(key).expect("checked");
        p.recon.withheld.extend(withheld);
        set_recon_set(p, &inv);
        p.recon.unbuilt = false;
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn handle_hello(
        &mut self,
        now: Duration,
        link: LinkId,
        key: [u8; 32],
        nonce: u64,
        set_size: u64,
        flags: u8,
        sketch: Vec<u64>,
        store: &mut dyn BundleStore,
    ) {
        if key == self.key {
            return;
        }
        let Some((params, identity)) = self.links.get(&link).map(|l| (l.params, l.identity)) else {
            return;
        };
        if identity.is_some() && skywave_bundle::x25519_public_of(&key) != identity {
            self.stats.dropped_wrong_identity += 1;
            return;
        }
        let spread = self.hello_spread(&params);
        let first_interval = self.cfg.hello_interval;
        let l = self.links.get_mut(&link).expect("checked");
        if !params.shared {
            l.peer = Some(key);
            // The peer is there: greetings on this link (repeated after `link_up` with
            // backoff) start again from the first interval.
            l.hello_interval = first_interval;
        }
        let p = self
            .peers
            .get_or_insert_with(key, || Peer::new(key, link, now, Cc::new(&params)));
        if p.link != link {
            p.link = link;
            p.cc = Cc::new(&params);
            // Packet numbers are the link's.
            p.forget_answers();
        }
        p.no_sealed = self.no_sealed.contains(&link);
        let new_session = !p.established || p.peer_nonce != nonce;
        // Short tags (see `tags`): taken from a HELLO that heard us (a beacon's flag
        // would be for whoever hears it); a new session starts without them.
        if new_session {
            p.takes_short_tags = false;
        }
        if flags & HELLO_HEARD != 0 {
            p.takes_short_tags = flags & HELLO_SHORT_TAGS != 0;
        }
        let tag = p.tag;
        if p.established && p.peer_nonce != nonce {
            // The peer restarted: its packet numbers start again, and a fragment that
            // ended one of its old frames is nothing to go on from. (Not at first
            // contact: the frame that completed this HELLO may end with a fragment the
            // next one goes on from.)
            self.reassembly.forget_ended((link, tag));
        }
        self.learn_tag(now, link, tag, key);
        let p = self.peers.get_mut(&key).expect("inserted above");
        // On a point-to-point link, a HELLO of the current session that comes more than
        // a round trip after our last one is not an answer to it, nor one crossing it: the
        // peer is probing (a keep-alive, or it lost our HELLO) and is answered. Within the
        // window it is not, so two peers never answer each other's answers.
        let window = (p.cc.rtt_bound() * 2
            + if params.half_duplex {
                self.cfg.max_over * 2
            } else {
                Duration::ZERO
            })
        .max(first_interval / 2);
        let probe = !params.shared && !new_session && now >= p.hello_at + window;
        if flags & HELLO_HEARD != 0 {
            p.heard_us = true;
        }
        if (flags & HELLO_HEARD == 0 || probe) && !p.hello_due {
            p.hello_due = true;
            p.hello_after = now + spread;
        }
        if new_session {
            if let Some(p) = self.peers.get_mut(&key) {
                let (cells, hashes) = split_sketch(flags, sketch);
                p.peer_cells = cells;
                p.peer_sketch = hashes;
                p.numbers_offers = flags & HELLO_NUMBERS != 0;
                p.takes_lists = flags & HELLO_LISTS != 0;
            }
            self.start_session(now, key, nonce, set_size, store);
        }
        // The peer heard a HELLO of ours, and each it could have heard carried our
        // sketch (a beacon on a shared channel, a first HELLO): it has the sketch, and
        // our answer goes without it (on LoRa at 1% an hour, 134 B of air is a minute).
        // Not on a shared channel without a duty cycle, where the sketch rides with the
        // HELLO that settles the session's timing and the saving is a few milliseconds.
        let bare_beacon = self.links.get(&link).is_some_and(|l| l.bare_beacon);
        if flags & HELLO_HEARD != 0
            && params.air_is_dear()
            && !bare_beacon
            && let Some(p) = self.peers.get_mut(&key)
            && !p.bare_hello
        {
            p.hello_sketch = false;
        }
    }

    /// The other side's stream (symbols or a listed set, `bytes` of it) arrived: whether
    /// we decode it now. A round we skipped, begun by the other side after all, is
    /// decoded here (on a link where either side streams, also by the streamer by key
    /// order); where our streams crossed, the other side decodes ours and we do not; a
    /// round decoded already only says so again (the streamer has not heard our
    /// `RECON_DONE` yet).
    fn takes_stream(
        &mut self,
        now: Duration,
        key: [u8; 32],
        bytes: usize,
        store: &mut dyn BundleStore,
    ) -> bool {
        let p = &self.peers[&key];
        let begun = p.recon.skipped && (p.recon.dec.is_some() || p.recon.either);
        if begun {
            self.build_recon_set(&key, store);
        }
        let p = self.peers.get_mut(&key).expect("checked");
        p.recon.bytes += bytes as u64;
        p.recon.messages += 1;
        if begun {
            // The streamer counted otherwise and began the round: decode after all.
            p.recon.skipped = false;
            p.recon.decoded = false;
            p.recon.dec.get_or_insert_with(Decoder::new);
        }
        if p.recon.either && p.streamer && p.recon.next_symbol > 0 {
            // Our streams crossed: the other side (the decoder by key order) decodes
            // ours and stops its own, so this is not needed.
            p.recon.dec = None;
        }
        if p.recon.dec.is_none() {
            return false;
        }
        p.recon.last_symbol_at = now;
        p.recon.more_retries = 0;
        if p.recon.decoded {
            p.recon.done_to_send = true;
            return false;
        }
        true
    }

    pub(super) fn on_symbols(
        &mut self,
        now: Duration,
        key: [u8; 32],
        first: u64,
        data: &[u8],
        store: &mut dyn BundleStore,
    ) {
        if !self.takes_stream(now, key, data.len(), store) {
            return;
        }
        let p = self.peers.get_mut(&key).expect("checked");
        let Some(dec) = p.recon.dec.as_mut() else {
            return;
        };
        let half = self
            .links
            .get(&p.link)
            .is_some_and(|l| l.params.half_duplex);
        for (k, sym) in Message::symbols(data).enumerate() {
            let idx = first + k as u64;
            // Symbols after a lost frame are used at once, the gap left open: the code
            // is rateless, so fresh symbols serve as well as the lost ones (at most a
            // few thousand ahead, which bounds the decoder's memory).
            if idx < dec.received() as u64 + 4096 {
                dec.insert(idx, sym, &mut p.recon.enc);
            }
            if dec.is_decoded() {
                break;
            }
        }
        if dec.is_decoded() {
            let used = dec.received() as u64;
            let diff = dec.difference();
            self.reconciled(now, key, used, diff, store);
        } else {
            let have = dec.received() as u64;
            if !dec.has(0) {
                // Symbol 0 holds every id: without it the difference cannot be known to
                // be whole. Asked for by itself, once. Other gaps are not asked for:
                // fresh symbols serve as well (asking for each gap, as before, measured
                // worse at 15% loss on HF: 14 against 16 complete runs of 24).
                if p.recon.gap_asked != Some(0) {
                    p.recon.gap_asked = Some(0);
                    p.recon.more_to_send = Some((0, 1));
                }
            } else if half {
                // Bursts on half-duplex links: the burst is over when we get the turn.
                p.recon.more_to_send = Some((have, 0));
            } else if have >= p.recon.burst_end {
                // The whole first burst is here and did not decode: ask for more now.
                // The streamer extends as below on RECON_MORE with count 0.
                p.recon.more_to_send = Some((have, 0));
                p.recon.burst_end = have + have.max(self.cfg.initial_burst);
            }
        }
    }

    /// A listed set's entries `[first, ..)` of `total` arrived (`IDS`): once all are in,
    /// the difference is known exactly; a gap once the list's end went by is asked for.
    pub(super) fn on_ids(
        &mut self,
        now: Duration,
        key: [u8; 32],
        total: u64,
        first: u64,
        data: &[u8],
        store: &mut dyn BundleStore,
    ) {
        if !self.takes_stream(now, key, data.len(), store) {
            return;
        }
        let p = self.peers.get_mut(&key).expect("checked");
        let list = p.recon.listed.get_or_insert_with(|| ListRx::new(total));
        if list.total() != total {
            // One list a round: a part of another is not ours to mix in.
            self.stats.dropped_malformed += 1;
            return;
        }
        for (k, id) in Message::listed_ids(data).enumerate() {
            list.insert(first + k as u64, id);
        }
        if list.complete() {
            let theirs: std::collections::HashSet<u64> = list.ids.iter().copied().collect();
            let ours = &p.recon.enc;
            // Sorted: the encoder's ids come in a hash map's order, and the pushes in
            // that order made seeded lab runs differ from one process to the next.
            let mut local_only: Vec<u64> = ours.ids().filter(|s| !theirs.contains(s)).collect();
            local_only.sort_unstable();
            let diff = Difference {
                remote_only: list
                    .ids
                    .iter()
                    .copied()
                    .filter(|s| !ours.contains(*s))
                    .collect(),
                local_only,
            };
            self.reconciled(now, key, total, diff, store);
        } else if list.end_heard()
            && let Some(gap) = list.missing()
            && p.recon.gap_asked != Some(gap.0)
        {
            p.recon.gap_asked = Some(gap.0);
            p.recon.more_to_send = Some(gap);
        }
    }

    /// The round is decoded (`used` symbols, or entries of a listed set): what only the
    /// peer holds is asked for, what only we hold is pushed.
    fn reconciled(
        &mut self,
        now: Duration,
        key: [u8; 32],
        used: u64,
        diff: Difference,
        store: &mut dyn BundleStore,
    ) {
        let p = self.peers.get_mut(&key).expect("checked");
        // The streamer's set as the symbols describe it (ours frozen for the round,
        // less what only we hold, plus what only it holds): each WANT names a short id
        // by the fewest bytes that are unique in it.
        let local_only: std::collections::HashSet<u64> = diff.local_only.iter().copied().collect();
        let mut theirs: Vec<u64> = p
            .recon
            .enc
            .ids()
            .filter(|s| !local_only.contains(s))
            .chain(diff.remote_only.iter().copied())
            .collect();
        let lens = want_lengths(&mut theirs, &diff.remote_only);
        drop(theirs);
        p.recon.decoded = true;
        if p.recon.either {
            // Our own stream, if we began one, is not needed now.
            p.recon.stopped = true;
        }
        p.recon.apply_deferred();
        p.recon.done_to_send = true;
        p.recon.more_to_send = None;
        p.recon.symbols_used = used;
        let mut wants: Vec<(u8, u64)> = Vec::new();
        // Transfers under way from this peer (pushed before the round ended): their
        // manifest came before any WANT could name them, so none would answer one,
        // and the request, repeated by the whole short id once it seemed unanswered,
        // had the peer send the bundle again after it was whole.
        let coming = incoming_shorts(p);
        for (sid, len) in diff.remote_only.iter().zip(lens) {
            // Not what arrived meanwhile (pushed on a guess, or relayed).
            let got = p.recon.withheld.contains_key(sid)
                || coming.contains(sid)
                || p.wants_answered.contains(sid)
                || p.recon.shorts.get(sid).is_some_and(|(id, v)| {
                    self.held
                        .get(&BundleRef::new(id, *v).prefix)
                        .is_some_and(|h| h.1 >= *v)
                });
            if !got {
                wants.push((len, *sid));
            }
        }
        // Grouped by prefix length: one WANT message per length.
        wants.sort_unstable();
        p.wants_out.extend(wants.into_iter().map(|(l, s)| (s, l)));
        let push: Vec<(BundleId, u64)> = diff
            .local_only
            .iter()
            .filter_map(|sid| p.recon.shorts.get(sid).copied())
            .collect();
        tracing::debug!(peer = %hex8(&key), used, they_lack = push.len(), we_lack = diff.remote_only.len(), "reconciled");
        self.events.push_back(Event::Reconciled {
            peer: key,
            symbols: used,
            they_lack: push.len(),
            we_lack: diff.remote_only.len(),
        });
        // Guesses the peer turned out to hold are dropped, unless already underway.
        let lacking: std::collections::HashSet<(BundleId, u64)> = push.iter().copied().collect();
        p.out.retain(|o| {
            !o.speculative || o.manifest_acked || lacking.contains(&(o.id, o.r.version))
        });
        p.backlog
            .retain(|q| !q.speculative || lacking.contains(&(q.id, q.version)));
        for (id, version) in push {
            if let Some(m) = store.manifest(&id).filter(|m| m.version() == version) {
                enqueue(p, &m, now);
            }
        }
    }
}

/// Short ids of the transfers under way from `p`: begun by its present incarnation (one
/// left by a sender that restarted since resumes only if asked for).
pub(super) fn incoming_shorts(p: &Peer) -> std::collections::HashSet<u64> {
    p.incoming
        .values()
        .filter(|inc| inc.from_nonce == p.peer_nonce)
        .map(|inc| short_id(&p.salt, &inc.id, inc.version))
        .collect()
}

/// The session's reconciliation set from an inventory: short ids and the encoder.
fn set_recon_set(p: &mut Peer, inv: &[(BundleId, u64, u64)]) {
    p.recon.enc = Encoder::new();
    let mut shorts: Vec<(u64, (BundleId, u64))> = inv
        .iter()
        .map(|(id, version, _)| (short_id(&p.salt, id, *version), (*id, *version)))
        .collect();
    for (sid, _) in &shorts {
        p.recon.enc.insert(*sid);
    }
    // Built from sorted entries the map's nodes are full: a third less memory than
    // inserting a million short ids one by one, in random order. A stable sort, so
    // that of two ids with one short id the later stays, as inserting would keep it.
    shorts.sort_by_key(|(sid, _)| *sid);
    p.recon.shorts = shorts.into_iter().collect();
}
