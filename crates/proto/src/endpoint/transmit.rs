//! Building frames and running timers.

use std::collections::HashMap;
use std::time::Duration;

use super::cc::PieceRef;
use super::frag::{FragAbout, FragIds, FragOut, note_parity, parity_pays};
use super::peer::{FrameNote, Peer};
use bytes::Bytes;
use skywave_bundle::{Priority, RangeSet};

use super::{DONE_REPEATS, Endpoint, FecMode, HELLO_HEARD, LinkId, LinkParams, Transmit};
use crate::store::BundleStore;
use crate::wire::{self, Ack, BundleRef, FrameWriter, Header};

/// Sends remembered per bundle on links without acks (older ones fall to the timeout).
const MAX_TRACKED_SENDS: usize = 256;

/// Shared medium: the longest run of frames to one peer without hearing from it, in
/// largest frames. A radio that always has a frame queued wins the channel (the other's
/// backoff doubles each time it finds the channel busy), so the peer's reports would
/// wait for seconds and everything they answer would be resent; pausing lets them
/// through. In frames, not milliseconds: the same share of the channel at any rate.
pub(super) const SHARED_OVER_FRAMES: u32 = 8;

/// Shared medium: how long, in largest frames' airtime, a sender that ended its over
/// stays off the channel when the peer does not speak (a report may be waiting in the
/// peer's radio behind its own queue): then it goes on.
const SHARED_PAUSE_FRAMES: u32 = 3;

/// Frames past an over's limit a high-priority bundle with bytes unsent may take, so that
/// a message is not cut at the over's end: the rest would wait out the peer's whole over
/// (on the HF demo, a message whose first frame closed an over arrived 52 s after it was
/// written instead of 13 s).
const URGENT_STRETCH_FRAMES: u64 = 4;

/// The most of the bulk's throughput on a half-duplex link that shorter overs may cost
/// to bring urgent data within `Config::urgent_latency`: where they would cost more (a
/// change of turn dear against the over the bound leaves), overs stay `max_over` long.
const URGENT_BULK_COST: f64 = 0.10;

/// Largest frames of `rtt_hint` (both latencies, both turnarounds and six frames of
/// queueing) that are not part of an urgent bundle's wait beside the other side's over:
/// the wait is the part of its own side's over already committed to the modem (about a
/// latency of air and a frame), a turnaround, the other side's over (ending at most
/// half a frame past its limit), a turnaround, its own air (a frame or two) and the
/// path. On `hf-modem` the worst of 156 write times (demo, seeds 1, 2 and 4) came 29.5 s
/// after the write.
const URGENT_MARGIN_FRAMES: u32 = 3;

/// The longest over on a half-duplex link, in air time: `max_over`, or shorter where an
/// urgent bundle written while the other side holds the turn would otherwise wait past
/// `urgent_latency`. The over is then `urgent_latency` less the rest of that wait
/// (`rtt_hint` less `URGENT_MARGIN_FRAMES` frames), where the turns allow it cheaply:
/// the over is at least the shortest the driver hands over at the turnaround's cost
/// (`Turns::min_over`), and the change of turn each shorter over pays costs the bulk at
/// most `URGENT_BULK_COST`. Elsewhere (turns that cost two latencies more, a modem
/// that keeps its own turns) shorter overs would cost the bulk a fifth or more without
/// bringing the wait within the bound.
pub(super) fn over_air(cfg: &super::Config, params: &LinkParams) -> Duration {
    let (Some(turns), Some(frame)) = (params.turns, frame_airtime(params)) else {
        return cfg.max_over;
    };
    let bound = (cfg.urgent_latency + frame * URGENT_MARGIN_FRAMES).saturating_sub(params.rtt_hint);
    if bound >= cfg.max_over {
        return cfg.max_over;
    }
    // Air per byte of bulk, relative to a whole over of air.
    let cost = |over: Duration| (over + turns.cost).as_secs_f64() / over.as_secs_f64();
    if bound < turns.min_over.max(frame * 2)
        || cost(bound) > cost(cfg.max_over) * (1.0 + URGENT_BULK_COST)
    {
        return cfg.max_over;
    }
    bound
}

/// Airtime of a largest frame on a link of known rate.
pub(super) fn frame_airtime(params: &LinkParams) -> Option<Duration> {
    let rate = params.rate_bps.filter(|&r| r > 0)?;
    Some(Duration::from_secs_f64(
        8.0 * (params.mtu + params.frame_overhead) as f64 / rate as f64,
    ))
}

/// Pieces smaller than this are not worth a header when more data would follow.
const MIN_PIECE: usize = 24;

/// Whether starting `o` (manifest and payload) in what is left of `w` would split a
/// bundle that fits whole in a frame of its own, when the split costs more than ending
/// the frame here. The rest would go in a `PIECE` that names the bundle again; an early
/// end costs, on average, the share of a frame's fixed cost (header and the link's
/// per-frame airtime) that the unused room stands for. On shared channels only under a
/// duty cycle: elsewhere a frame also costs a contention for the air.
fn splits_for_nothing(
    w: &FrameWriter,
    o: &super::peer::Outgoing,
    seq: Option<u64>,
    params: &LinkParams,
) -> bool {
    if w.is_empty() || o.length == 0 || o.manifest_sent_at.is_some() {
        return false;
    }
    let whole = FrameWriter::cost(FrameWriter::offer_body(seq, o.manifest.len()))
        + FrameWriter::cost(skywave_bundle::varint::len(0) + o.length as usize);
    if whole <= w.remaining() || whole > w.capacity() {
        return false;
    }
    let split = o.r.encoded_len() + skywave_bundle::varint::len(o.length) + 1;
    let frame_cost = w.header_len() + params.frame_overhead;
    w.remaining() * frame_cost < split * w.capacity()
}

/// The share of a duty-cycle budget discovery beacons may use.
const BEACON_SHARE: f64 = 0.1;

/// The parts of a frame, in the order [`Endpoint::build_for_peer`] writes them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Messages' manifests and pieces, when one has bytes not yet sent.
    Urgent,
    /// Acks, "I hold it all", reconciliation control and progress reports.
    Control,
    /// Symbols, manifests and pieces.
    Data,
}

impl Endpoint {
    fn over_limit(&self, params: &LinkParams) -> u64 {
        match (params.half_duplex, params.shared, params.rate_bps) {
            (true, _, Some(r)) => {
                (r as f64 / 8.0 * over_air(&self.cfg, params).as_secs_f64()) as u64
            }
            (false, true, Some(_)) => u64::from(SHARED_OVER_FRAMES) * params.mtu as u64,
            _ => u64::MAX,
        }
    }

    /// The next frame to send on `link`, at most `max_len` bytes (the space the driver
    /// has now). `None` when there is nothing to send, or nothing worth a frame yet.
    pub fn poll_transmit(
        &mut self,
        now: Duration,
        link: LinkId,
        max_len: usize,
        store: &mut dyn BundleStore,
    ) -> Option<Vec<u8>> {
        self.poll_transmit_parts(now, link, max_len, store)
            .map(Transmit::into_vec)
    }

    /// [`Endpoint::poll_transmit`] with the frame as head and shared tail: payload data
    /// and FEC symbols are handles on buffers shared by every peer they go to.
    pub fn poll_transmit_parts(
        &mut self,
        now: Duration,
        link: LinkId,
        max_len: usize,
        store: &mut dyn BundleStore,
    ) -> Option<Transmit> {
        self.now = self.now.max(now);
        self.load_held(store);
        self.queue_unqueued(store);
        let l = self.links.get(&link)?;
        if !l.up {
            return None;
        }
        let budget = max_len.min(l.params.mtu);
        if budget < wire::MIN_FRAME {
            return None;
        }
        // A point-to-point link has one peer: no scan of every session, no list, while
        // it has something to send. It may have had others (the node at the far end
        // replaced, a HELLO garbled into another key): their sessions are served
        // after it (they starved, data and HELLO due, no frame and no timer).
        let first = l.peer.filter(|_| !l.params.shared);
        if let Some(k) = first
            && let Some(f) = self.build_for_peer(now, link, k, budget, store)
        {
            return Some(f);
        }
        let keys: Vec<[u8; 32]> = self
            .peers
            .values()
            .filter(|p| p.link == link && p.established && Some(p.key) != first)
            .map(|p| p.key)
            .collect();
        let start = self.links.get(&link)?.rr;
        for i in 0..keys.len() {
            let key = keys[(start + i) % keys.len()];
            if let Some(f) = self.build_for_peer(now, link, key, budget, store) {
                if let Some(l) = self.links.get_mut(&link) {
                    l.rr = (start + i + 1) % keys.len().max(1);
                }
                return Some(f);
            }
        }
        // Discovery: a HELLO to whoever hears it.
        let l = self.links.get_mut(&link)?;
        if let Some(mut f) = l.frag_out.take() {
            // The rest of a HELLO too large for one frame.
            let addr = l.params.shared.then_some((self.tag, wire::BROADCAST));
            let mut w = FrameWriter::new(
                Header {
                    addr,
                    pn: l.pn,
                    short_tags: false,
                },
                budget,
            );
            let (n, keep) = if f.parity_left() {
                // Its parity, once every fragment is out (see `frag`).
                let before = w.len();
                let gone = f.write_parity(&mut w);
                (w.len() - before, !gone)
            } else {
                let in_order_pn = l.params.goes_on_across_frames().then_some(l.pn);
                let (n, done) = f.write_at(&mut w, 0, in_order_pn);
                (n, !(done && f.write_parity(&mut w)))
            };
            if keep {
                l.frag_out = Some(f);
            }
            if n > 0 {
                l.pn += 1;
                let f = Transmit {
                    head: w.finish(),
                    tail: Bytes::new(),
                };
                self.stats.count_frame(&f);
                return Some(f);
            }
        }
        let needs = l.params.shared
            || l.peer
                .is_none_or(|k| !self.peers.get(&k).is_some_and(|p| p.established));
        if needs && now >= l.hello_next {
            // Not sooner than a round trip: on a modem that has to wait for its turn,
            // earlier retries would only pile up in its buffer behind the first.
            let interval = l.hello_interval.max(l.params.rtt_hint);
            l.hello_interval = (l.hello_interval * 2).min(self.cfg.hello_max);
            // +-25%: discovery beacons of radios started together drift apart.
            let jitter = 0.75 + 0.5 * self.unit();
            let l = self.links.get_mut(&link)?;
            l.hello_next = now + interval.mul_f64(jitter);
            let addr = l.params.shared.then_some((self.tag, wire::BROADCAST));
            let pn = l.pn;
            l.pn += 1;
            let mut w = FrameWriter::new(
                Header {
                    addr,
                    pn,
                    short_tags: false,
                },
                budget,
            );
            let sketch = super::sketch_words(&self.cells, &self.sketch);
            let greeting = Greeting {
                key: &self.key,
                nonce: self.nonce,
                set_size: self.held.len() as u64,
                flags: 0,
            };
            match hello_fitting(
                &mut w,
                &mut self.frag_ids,
                greeting,
                &sketch,
                l.params.loss_hint,
                l.params.goes_on_across_frames().then_some(pn),
            ) {
                HelloOut::Fragments(f) => l.frag_out = Some(f),
                HelloOut::Sent(false) => l.bare_beacon = true,
                HelloOut::Sent(true) | HelloOut::NoRoom => {}
            }
            // Under a duty-cycle rule a beacon spends the air the bundles need (a 184 B
            // one a minute is 1.5% of the time at SF9 LoRa, past a 1% budget on its
            // own): beacons keep to `BEACON_SHARE` of what the node may send.
            if let Some(duty) = l.params.duty_limit()
                && let Some(full) = frame_airtime(&l.params)
            {
                let share = (w.len() + l.params.frame_overhead) as f64
                    / (l.params.mtu + l.params.frame_overhead).max(1) as f64;
                let gap = full.mul_f64(share).div_f64(BEACON_SHARE * duty);
                l.hello_next = l.hello_next.max(now + gap.mul_f64(jitter));
            }
            let f = Transmit {
                head: w.finish(),
                tail: Bytes::new(),
            };
            self.stats.count_frame(&f);
            return Some(f);
        }
        None
    }

    fn build_for_peer(
        &mut self,
        now: Duration,
        link: LinkId,
        key: [u8; 32],
        budget: usize,
        store: &mut dyn BundleStore,
    ) -> Option<Transmit> {
        let params = self.links.get(&link)?.params;
        let over_limit = self.over_limit(&params);
        let report_now = self.cfg.report_interval;
        let set_size = self.held.len() as u64;
        let (my_key, my_tag, nonce) = (self.key, self.tag, self.nonce);
        let pn = self.links.get(&link)?.pn;
        // Shared channels (frames from one radio arrive in order, or not at all): what
        // our frame just before this one, to the same peer, named last may be continued
        // without naming it again. (Not on IP paths: datagrams may be reordered.) A piece
        // so continued is lost with the frame before it, so only while the peer's loss
        // rate makes that expected loss (up to a frame's worth) cheaper than the
        // reference it saves.
        let carried = self
            .links
            .get(&link)?
            .last_named
            .filter(|&(last, to, r)| {
                params.goes_on_across_frames()
                    && last.checked_add(1) == Some(pn)
                    && to == key
                    && self.peers.get(&key).is_some_and(|p| {
                        p.loss.rate(params.loss_hint) * budget as f64 <= r.encoded_len() as f64
                    })
            })
            .map(|(_, _, r)| r);
        let fec_mode = self.cfg.fec;
        // Neighbours on a shared link that would hear an FEC symbol and lack the bundle:
        // counted only while a transfer waits for the rule.
        let mut receivers: HashMap<BundleRef, u32> = HashMap::new();
        if fec_mode != FecMode::Off
            && params.shared
            && self
                .peers
                .get(&key)
                .is_some_and(|p| p.out.iter().any(|o| !o.fec_decided))
        {
            for q in self
                .peers
                .values()
                .filter(|q| q.link == link && q.established)
            {
                for o in &q.out {
                    *receivers.entry(o.r).or_default() += 1;
                }
            }
        }
        // Shared channel: whether another peer has something of ours still to go (then
        // our over does not end with this frame).
        let others_unsent = params.shared
            && self
                .peers
                .values()
                .any(|q| q.link == link && q.established && q.key != key && has_unsent(q));
        // Shared channel: short tags where they name one node each (see `tags`), and the
        // HELLO flag that says whether we take them from this peer.
        let (short_tags, tags_flag) = match self.peers.get(&key) {
            Some(p) if params.shared => (
                p.takes_short_tags && self.may_use_short_tags(link, p.tag),
                self.short_tags_flag(link, p.tag),
            ),
            _ => (false, 0),
        };
        let mut fec_sent: Vec<(BundleRef, Vec<u64>)> = Vec::new();
        let p = self
            .peers
            .get_mut(&key)
            .filter(|p| p.link == link && p.established)?;
        let rto = Self::rto_for(&self.cfg, p, &params);
        let header = Header {
            addr: params.shared.then_some((my_tag, p.tag)),
            pn,
            short_tags,
        };
        // IP paths: frames of the size known to cross the path; now and then one is
        // padded to a larger size to probe for more (see `pmtu`, and below).
        let mut probe = None;
        let frame_size = if params.paced {
            p.cc.pmtu.size as usize
        } else {
            params.mtu
        };
        let budget = if params.paced {
            // Probes, lost whenever their size does not cross, are at most a quarter of
            // the window, and none while the first pairs of frames measure the path's
            // rate: a probe lost as the second of a pair left the rate at the HELLO's
            // pace, one frame a second, for three round trips (6 s on a 3 s path). With
            // no data to pace, a `PING` probes whatever the phase.
            let most = (p.cc.cwnd() / (4 * p.cc.frame())).max(1);
            probe =
                p.cc.pmtu
                    .probe_size(now, most)
                    .filter(|_| !p.cc.in_pair() || !has_data(p))
                    .map(|s| s as usize)
                    // Only where the window has room for all of it: a 16 KB probe (the MTU of
                    // loopback's route) in a first window of 12 KB held every other frame
                    // back until a timeout declared it lost, a quarter second each.
                    .filter(|&s| s <= budget && p.cc.send_time(s as u64).is_some_and(|t| t <= now));
            budget.min(frame_size)
        } else {
            // Modems and point-to-point radios: frames sized to what the measured loss
            // lets through (IP paths lose datagrams whatever their size, and are left
            // alone). Not on shared channels, whose loss is mostly collisions: shorter
            // frames there mean more of them per byte, each contending for the channel,
            // which raises the loss that shortened them. Not while a transfer goes by
            // FEC: its symbols were sized to the link's frames, and its code repairs the
            // loss.
            if params.shared || p.out.iter().any(|o| o.fec.is_some()) {
                budget
            } else {
                let overhead = params.frame_overhead + header.encoded_len() + PIECE_OVERHEAD;
                budget.min(p.loss.best_frame(params.loss_hint, overhead, budget))
            }
        };
        let mut w = FrameWriter::new(header, budget);
        if let Some(r) = carried {
            w.named(r);
        }
        let mut substantive = false;
        let mut eliciting = false;
        let mut pieces: Vec<PieceRef> = Vec::new();
        // Whether the frame carries bytes sent before (not to go in a probe).
        let mut resent = false;
        // Point-to-point links without acks: frames are numbered in order, so the peer
        // tells us which it missed, and we keep what each said (see `Peer::notes`).
        let tells_missed = params.numbered_in_order();
        // Frames lost, as measured: whether a fragmented message carries a parity.
        let loss = p.loss.rate(params.loss_hint);
        let mut note = FrameNote {
            pn,
            ..Default::default()
        };
        // Frames from one radio arrive in order or not at all: a fragment may go on from
        // the one that ended the frame before (see `FragOut::write_at`).
        let in_order_pn = params.goes_on_across_frames().then_some(pn);

        // 1. The rest of a message too large for one frame, before anything else:
        // it is worth nothing until whole.
        if let Some(f) = p.frag_out.as_mut()
            && f.parity_left()
        {
            // Every fragment went in earlier frames: their parity leads this one. (Its
            // frame carries no note: lost alone, it loses nothing.)
            let id = f.parity_id();
            if f.write_parity(&mut w) {
                p.frag_out = None;
                substantive = true;
                note_parity(p, id);
            }
        } else if let Some(f) = p.frag_out.as_mut() {
            let mut about = f.about;
            let parity_id = f.parity_id();
            let (n, done) = f.write_at(&mut w, 0, in_order_pn);
            if n > 0 {
                note.parity_frag = parity_id;
            }
            if done {
                // The receiver names the bundle of a manifest its last fragment completes.
                if let FragAbout::Manifest(r, start) = about {
                    w.named(r);
                    // Its resend timer runs from now, when the manifest has left whole:
                    // a manifest cut across overs can have started one timeout ago. The
                    // frames that carried this copy's fragments name it by that time too
                    // (a frame the peer missed sends the copy it carried again).
                    if let Some(o) = p
                        .out
                        .iter_mut()
                        .find(|o| o.r == r && o.manifest_sent_at == Some(start))
                    {
                        o.manifest_sent_at = Some(now);
                        o.manifest_pn = None;
                        o.last_sent_at = now;
                        for m in p.notes.iter_mut().flat_map(|n| n.manifests.iter_mut()) {
                            if *m == (r, start) {
                                m.1 = now;
                            }
                        }
                        about = FragAbout::Manifest(r, now);
                    }
                }
                // The parity in this frame if it fits (after the naming above: it ends
                // it, for the receiver too), else first in the next.
                if f.write_parity(&mut w) {
                    p.frag_out = None;
                    note_parity(p, parity_id);
                }
            }
            if n > 0 {
                substantive = true;
                eliciting = true;
                match about {
                    FragAbout::Manifest(r, at) => note.manifests.push((r, at)),
                    FragAbout::Report(r) => note.reports.push(r),
                    FragAbout::Other => {}
                }
            }
        }
        // 2. HELLO, when the peer has not confirmed hearing us.
        if p.hello_due && now >= p.hello_after && p.frag_out.is_none() {
            // Not in front of our own symbols (a half-duplex link, where the side with
            // the first turn streams): they describe our set better than the sketch, which
            // only sizes the other side's stream, and its ~190 B cost symbols in the over.
            // Nor in front of our listed set, which tells the set exactly (10 entries and
            // a bare HELLO fit one 223 B frame; with the sketch they took two).
            let streaming =
                p.established && streams(p) && (p.recon.either || p.recon.list.is_some());
            let sketch = if p.hello_sketch && !streaming {
                super::sketch_words(&self.cells, &self.sketch)
            } else {
                Vec::new()
            };
            let greeting = Greeting {
                key: &my_key,
                nonce,
                set_size,
                flags: HELLO_HEARD | tags_flag,
            };
            let out = hello_fitting(
                &mut w,
                &mut self.frag_ids,
                greeting,
                &sketch,
                loss,
                in_order_pn,
            );
            if !matches!(out, HelloOut::NoRoom) {
                if matches!(out, HelloOut::Sent(false)) {
                    p.bare_hello = true;
                }
                if let HelloOut::Fragments(f) = out {
                    p.frag_out = Some(f);
                }
                p.hello_due = false;
                p.hello_at = now;
                p.hello_sent = true;
                p.hello_sketch = false;
                substantive = true;
            }
        }
        // A message (priority high) with bytes not yet sent goes ahead of reports and
        // reconciliation: they are small and can wait a frame, and on a half-duplex
        // link the peer reads none of them before the over ends anyway, so order within
        // an over only decides when each item arrives.
        super::promote(p, store, now);
        let urgent = p.out.iter().any(|o| {
            o.priority == Priority::High
                && ((!o.manifest_acked && o.manifest_sent_at.is_none())
                    || o.next_range(u64::MAX).is_some())
        });
        let mut ack_written = false;
        let mut spacing_written = false;
        let mut again_riding = Vec::new();
        // The numbers the frame's DONE named, once written.
        let mut done_written: Option<RangeSet> = None;
        for stage in [Stage::Urgent, Stage::Control, Stage::Data] {
            if stage == Stage::Urgent && !urgent {
                continue;
            }
            if stage == Stage::Control {
                // 3. Acknowledgements (paced links), piggybacked whenever anything is owed.
                if params.paced && p.unacked_eliciting > 0 && !p.ack_ranges.is_empty() {
                    let ack = Ack {
                        largest: p.ack_ranges[0].1,
                        delay_us: now.saturating_sub(p.ack_largest_at).as_micros() as u64,
                        ranges: p.ack_ranges.clone(),
                    };
                    if w.ack(&ack) {
                        ack_written = true;
                        if let Some((pn, bytes, gap)) = p.rx_spacing {
                            let gap_ns = gap.as_nanos().min(u128::from(u64::MAX)) as u64;
                            spacing_written = w.spacing(pn, bytes, gap_ns);
                        }
                        if p.ack_due.is_some_and(|d| d <= now) {
                            substantive = true;
                        }
                    }
                }
                // 3. "I hold it all": never displaced by anything else. Each goes out twice, in
                // two frames. On a shared medium the copy only rides in a frame sent anyway: a
                // frame of its own is one more contention for the channel, delaying every report.
                // Riding copies are written last, into room the frame has left: written first,
                // a dozen of them can leave no room for the manifest or piece the frame would
                // carry, and then no frame is sent at all.
                // Half duplex: reports say which of the peer's frames they follow, which
                // times the peer's resend timers (see `Peer::answer_time`).
                // The peer's frames that never arrived: it says again what they said.
                if tells_missed && !p.missed.is_empty() {
                    let n = w.missed(&p.missed);
                    if n > 0 {
                        self.stats.missed_frames_told += n as u64;
                        note.missed.extend_from_slice(&p.missed[..n]);
                        p.missed.drain(..n);
                        substantive = true;
                    }
                }
                // Bundles whose pieces came without their manifest.
                while let Some(r) = p.nameless.last() {
                    if !w.nameless(r) {
                        break;
                    }
                    p.nameless.pop();
                    substantive = true;
                }
                let mut heard_said = false;
                if params.half_duplex
                    && !p.cc.enabled
                    && (!p.have_all.is_empty()
                        || !p.have_all_again.is_empty()
                        || !p.have.is_empty())
                    && let Some(h) = p.heard_pn
                {
                    heard_said = w.heard(h);
                }
                // Offers the peer numbered go first, all in one DONE, by number.
                let mut sent_now = Vec::new();
                if !p.offer_seqs.is_empty() {
                    let fresh = numbered(
                        p,
                        p.have_all
                            .iter()
                            .chain(p.have_all_again.iter().filter(|_| !params.shared)),
                    );
                    if let Some(written) = write_done(&mut w, p, &fresh) {
                        done_written = Some(written.clone());
                        substantive = true;
                        let seqs = &p.offer_seqs;
                        let told = |r: &BundleRef| names(seqs, &written, r);
                        let (told_now, rest): (Vec<_>, Vec<_>) =
                            p.have_all.iter().partition(|r| told(r));
                        p.have_all = rest.into();
                        sent_now = told_now;
                        if !params.shared {
                            let (copies, rest): (Vec<_>, Vec<_>) =
                                p.have_all_again.iter().partition(|r| told(r));
                            p.have_all_again = rest;
                            if tells_missed {
                                note.reports.extend_from_slice(&copies);
                            }
                        }
                    }
                }
                let again = std::mem::take(&mut p.have_all_again);
                let mut again_rest = Vec::new();
                for r in again {
                    if params.shared {
                        again_riding.push(r);
                    } else if w.have_all(&r) {
                        substantive = true;
                        if tells_missed {
                            note.reports.push(r);
                        }
                    } else {
                        again_rest.push(r);
                    }
                }
                while let Some(r) = p.have_all.front() {
                    if !w.have_all(r) {
                        break;
                    }
                    sent_now.extend(p.have_all.pop_front());
                    substantive = true;
                }
                if tells_missed {
                    note.reports.extend_from_slice(&sent_now);
                }
                // On a shared or half-duplex channel the copy is left out once the channel
                // has shown itself clean: no loss expected by the driver (a hint of 0 may
                // only mean it does not know) and none found in the data we sent the peer
                // so far (a receiver that sends nothing keeps its copies). Half duplex: the
                // copy goes in the over's next frame (or, if the over has no more, with the
                // next over's report, in the same message); without it, a lost report left
                // the peer to send again all it covered once its resend timers ran out (a
                // whole over's data: 14 KB at 9600 bit/s, a link losing 5% of chunks).
                let clean = (params.shared || params.half_duplex)
                    && params.loss_hint == 0.0
                    && p.loss.measured_clean();
                if !clean {
                    again_rest.extend(sent_now);
                }
                p.have_all_again = again_rest;
                // 4. Reconciliation control.
                if p.recon.done_to_send && w.recon_done(p.recon.epoch, p.recon.symbols_used) {
                    // Sent twice, in two frames: it stops the symbol stream.
                    p.recon.done_to_send = p.recon.done_repeat == 0;
                    p.recon.done_repeat += 1;
                    p.recon.bytes += 4;
                    p.recon.messages += 1;
                    substantive = true;
                }
                if !p.recon.decoded
                    && let Some((from, count)) = p.recon.more_to_send
                    && w.recon_more(p.recon.epoch, from, count)
                {
                    p.recon.more_to_send = None;
                    p.recon.bytes += 4;
                    p.recon.messages += 1;
                    substantive = true;
                }
                if !p.wants_answered.is_empty() {
                    let answered = std::mem::take(&mut p.wants_answered);
                    p.wants_out.retain(|(s, _)| !answered.contains(s));
                }
                while let Some(&(_, len)) = p.wants_out.front() {
                    // One message per prefix length (the queue is grouped by length).
                    let shift = 48 - 8 * u32::from(len);
                    let prefixes: Vec<u64> = p
                        .wants_out
                        .iter()
                        .take_while(|w| w.1 == len)
                        .map(|w| w.0 >> shift)
                        .collect();
                    let n = w.want(len, &prefixes);
                    if n == 0 {
                        break;
                    }
                    for (sid, _) in p.wants_out.drain(..n) {
                        p.asked.insert(sid, now);
                        if tells_missed {
                            note.wants.push(sid);
                        }
                    }
                    p.recon.bytes += 1 + u64::from(len) * n as u64;
                    p.recon.messages += 1;
                    substantive = true;
                }
                // 5. Progress reports, batched.
                // On a shared channel a report handed to the radio while the peer is mid-over
                // waits in the radio's backoff, which doubles each time it finds the air busy:
                // held here until the peer falls quiet, it goes at once onto a free channel.
                let quiet_at = peer_quiet_at(p, &params);
                let report_due = (p.have_due.is_some_and(|d| d <= now)
                    && quiet_at.is_none_or(|q| q <= now))
                    || (params.half_duplex && !p.have.is_empty());
                if report_due {
                    // Say which of the peer's frames a report reflects, when it reports a
                    // bundle not yet whole (else there is nothing to tell apart): the peer
                    // then knows a piece it sent is lost from this report alone, where its
                    // own guess of how late a report may be is too long (a shared channel
                    // can hold a report for long). On a shared channel only for bundles
                    // larger than a frame: for all partial reports there, the 8-seed radio
                    // and chain cells moved both ways and one chain run (128k, 223 B, 10%)
                    // did not complete. Half duplex says it ahead of every report (above).
                    // Links with acks have them.
                    let needs_heard = |r: &BundleRef| {
                        p.incoming.get(r).is_some_and(|inc| {
                            let len = inc.manifest.manifest().length;
                            if params.shared {
                                len > params.mtu as u64
                            } else {
                                !inc.held.is_complete(len)
                            }
                        })
                    };
                    if !heard_said
                        && !p.cc.enabled
                        && p.have.iter().any(needs_heard)
                        && let Some(h) = p.heard_pn
                    {
                        let _ = w.heard(h);
                    }
                    let i = 0;
                    while i < p.have.len() {
                        let r = p.have[i];
                        let Some(inc) = p.incoming.get(&r) else {
                            p.have.remove(i);
                            continue;
                        };
                        if !w.have(&r, &inc.held) {
                            // A report too long for the link's frames goes in fragments.
                            if p.frag_out.is_some() {
                                break;
                            }
                            let Some(mut f) = self.frag_ids.start(|m| m.have(&r, &inc.held)) else {
                                break;
                            };
                            if parity_pays(loss, f.len(), w.capacity(), 0) {
                                f = f.with_parity();
                            }
                            if f.fits_whole(&w)
                                || f.write_at(&mut w, f.min_first(in_order_pn), in_order_pn).0 == 0
                            {
                                break;
                            }
                            f.about = FragAbout::Report(r);
                            if tells_missed {
                                note.reports.push(r);
                            }
                            p.frag_out = Some(f);
                            p.have.remove(i);
                            substantive = true;
                            break;
                        }
                        if let Some(rx) = self.fec_rx.get(&r) {
                            // Decoding: the sender tops up by what is still needed.
                            let _ = w.need(&r, rx.dec.needed(), rx.last_esi);
                        }
                        if tells_missed {
                            note.reports.push(r);
                        }
                        p.have.remove(i);
                        substantive = true;
                    }
                    if p.have.is_empty() {
                        p.have_due = None;
                    } else {
                        p.have_due = Some(now + report_now);
                    }
                }
                continue;
            }
            let only_urgent = stage == Stage::Urgent;
            // 6. Data: symbols, manifests, pieces; paced and bounded per over.
            let stretch = if urgent {
                URGENT_STRETCH_FRAMES * params.mtu as u64
            } else {
                0
            };
            // Half duplex: the over ends nearest its limit, a frame beginning in it
            // only if at least half of it falls within (an urgent stretch aside): the
            // over runs at most half a frame past its limit (`over_air` counts on it).
            let half_frame = if urgent || !params.half_duplex {
                0
            } else {
                (w.len() + w.remaining() / 2) as u64
            };
            let may_send_data = p.over_bytes.saturating_add(half_frame)
                < over_limit.saturating_add(stretch)
                && p.cc
                    .send_time(w.remaining() as u64)
                    .is_some_and(|t| t <= now);
            if may_send_data {
                let track_sends = !p.cc.enabled;
                let track_acks = p.cc.enabled;
                if !only_urgent {
                    p.frames += 1;
                }
                // While reconciliation runs, the first two frames and every third after
                // them put pushes (guesses and store-and-forward) ahead of symbols: the
                // first bundle arrives while the sets are still being compared.
                let pushes_first =
                    only_urgent || streams(p) && (p.frames <= 2 || p.frames % 3 == 1);
                let path = super::coding::PathView {
                    loss: p.loss.rate(params.loss_hint),
                    rtt: p.cc.srtt.unwrap_or(params.rtt_hint),
                    rate: if p.cc.enabled {
                        p.cc.rate_estimate() as u64
                    } else {
                        params.rate_bps.map_or(0, |r| r / 8)
                    },
                    params,
                    frame: frame_size,
                    // Bytes still to send: what keeps the link busy while a report is due.
                    // Only counted while a transfer waits for the rule (every frame else).
                    queued_total: if fec_mode != FecMode::Off
                        && p.out.iter().any(|o| !o.fec_decided)
                    {
                        queued_bytes(p)
                    } else {
                        0
                    },
                };
                // (`Peer::waits_from`, with `p.out` borrowed below.)
                let data_sent_at = p.data_sent_at;
                let p_waits_from =
                    |t: Duration| super::peer::wait_start(t, data_sent_at, params.half_duplex);
                for phase in 0..2 - usize::from(only_urgent) {
                    if (phase == 0) == pushes_first {
                        super::promote(p, store, now);
                        sort_outgoing(p);
                        for o in p.out.iter_mut() {
                            if w.remaining() < wire::MIN_FRAME / 2 {
                                break;
                            }
                            if only_urgent && o.priority != Priority::High {
                                continue;
                            }
                            if !o.manifest_acked
                                && o.manifest_sent_at.is_none_or(|t| {
                                    !params.reliable && now >= p_waits_from(t) + rto
                                })
                            {
                                // Numbered for a peer that reports by number; a manifest
                                // sent again keeps its number.
                                let seq = p
                                    .numbers_offers
                                    .then(|| o.offer_seq.unwrap_or(p.next_offer_seq));
                                if params.air_is_dear() && splits_for_nothing(&w, o, seq, &params) {
                                    break;
                                }
                                let whole = w.offer(seq, &o.manifest);
                                if whole {
                                    w.named(o.r);
                                }
                                if !whole {
                                    // Larger than the link's frames: in fragments, one
                                    // message at a time.
                                    // (The message as written: an OFFER is its number longer.)
                                    let body = FrameWriter::offer_body(seq, o.manifest.len());
                                    if !w.needs_fragments(body) || p.frag_out.is_some() {
                                        break;
                                    }
                                    let Some(mut f) =
                                        self.frag_ids.start(|m| m.offer(seq, &o.manifest))
                                    else {
                                        break;
                                    };
                                    // A manifest lost takes with it the pieces sent after
                                    // it (the peer has nothing to put them under).
                                    let after = o.length.min(o.manifest.len() as u64) as usize;
                                    if parity_pays(loss, f.len(), w.capacity(), after) {
                                        f = f.with_parity();
                                    }
                                    let min = f.min_first(in_order_pn);
                                    if f.write_at(&mut w, min, in_order_pn).0 == 0 {
                                        break;
                                    }
                                    f.about = FragAbout::Manifest(o.r, now);
                                    p.frag_out = Some(f);
                                }
                                if let Some(before) = o.manifest_sent_at {
                                    tracing::trace!(
                                        t = now.as_secs_f64(),
                                        id = %o.id,
                                        before = before.as_secs_f64(),
                                        "manifest again"
                                    );
                                    self.stats.manifests_resent += 1;
                                    o.resent = true;
                                }
                                self.stats.manifests_sent += 1;
                                // Only a first copy, whole in this frame, names its frame.
                                o.manifest_pn = (o.offer_seq.is_none()
                                    && seq.is_some()
                                    && p.frag_out.is_none())
                                .then_some(pn);
                                if o.offer_seq.is_none() && seq.is_some() {
                                    o.offer_seq = seq;
                                    p.next_offer_seq += 1;
                                }
                                o.manifest_sent_at = Some(now);
                                if tells_missed {
                                    note.manifests.push((o.r, now));
                                }
                                o.last_sent_at = now;
                                substantive = true;
                                eliciting = true;
                                if !whole {
                                    // The frame is full; the rest goes first in the next.
                                    break;
                                }
                                if o.length == 0 {
                                    continue;
                                }
                            }
                            if o.manifest_sent_at.is_none() && !o.manifest_acked {
                                continue;
                            }
                            if !o.fec_decided {
                                // Decided when its data would start, with the loss measured
                                // by then: not with the manifests that may all go at once.
                                // A multi-frame payload that could be coded waits for a
                                // frame with room for its data.
                                let codable = !o.journal
                                    && o.length > budget as u64
                                    && o.length <= super::coding::FEC_MAX_LEN;
                                if fec_mode != FecMode::Off && codable && w.remaining() * 2 < budget
                                {
                                    continue;
                                }
                                Self::decide_fec(
                                    fec_mode,
                                    &self.policy,
                                    &mut self.fec_tx,
                                    &mut self.stats,
                                    link,
                                    o,
                                    &path,
                                    receivers.get(&o.r).copied().unwrap_or(1),
                                    store,
                                );
                            }
                            if o.fec.is_some() {
                                if let Some(tx) = self.fec_tx.get_mut(&(link, o.r)) {
                                    let esis = Self::write_fec_symbols(
                                        &mut w,
                                        o,
                                        tx,
                                        &mut self.stats,
                                        &mut pieces,
                                        now,
                                    );
                                    if !esis.is_empty() {
                                        substantive = true;
                                        eliciting = true;
                                        if params.shared {
                                            fec_sent.push((o.r, esis));
                                        }
                                    }
                                    continue;
                                }
                                // The code was dropped: carry on with pieces.
                                o.fec = None;
                            }
                            while let Some((start, end)) = o.next_range(u64::MAX) {
                                // Bytes sent before go again because something was lost:
                                // perhaps the frame a continuation from the frame before
                                // relies on. They name their bundle (a continuation after
                                // a lost frame is dropped, and so is every one after it).
                                if carried == Some(o.r)
                                    && w.last_named() == Some(o.r)
                                    && o.sent_ever.contains(start, start + 1)
                                {
                                    w.unname();
                                }
                                let room = w.piece_room(&o.r, start);
                                let want = (end - start) as usize;
                                // A short piece is worth its header when the frame has
                                // room for nothing more (the link's frames are tiny).
                                if room == 0 || (room < MIN_PIECE && want > room && !w.is_empty()) {
                                    break;
                                }
                                let n = room.min(want);
                                // A handle on the payload if the store holds it in memory,
                                // else a copy.
                                let got = match store.read_shared(&o.id, o.r.version, start, n) {
                                    Some(b) if !b.is_empty() => {
                                        let got = b.len();
                                        if !w.piece_shared(&o.r, start, b) {
                                            break;
                                        }
                                        got
                                    }
                                    _ => {
                                        let n = n.min(self.buf.len());
                                        let got = store.read(
                                            &o.id,
                                            o.r.version,
                                            start,
                                            &mut self.buf[..n],
                                        );
                                        if got == 0 || !w.piece(&o.r, start, &self.buf[..got]) {
                                            break;
                                        }
                                        got
                                    }
                                };
                                let stop = start + got as u64;
                                resent |= o.sent_ever.contains(start, stop);
                                if o.in_flight.is_empty() {
                                    // The resend timer runs from the first byte in flight.
                                    o.progress_at = now;
                                }
                                o.last_sent_at = now;
                                o.in_flight.insert(start, stop);
                                if track_sends {
                                    match o.sends.back_mut() {
                                        // Sent at the same instant, right after: one entry,
                                        // numbered by its last frame.
                                        Some(b) if b.1 == start && b.2 == now => {
                                            b.1 = stop;
                                            b.3 = pn;
                                        }
                                        _ => {
                                            if o.sends.len() >= MAX_TRACKED_SENDS {
                                                o.sends.pop_front();
                                            }
                                            o.sends.push_back((start, stop, now, pn));
                                        }
                                    }
                                }
                                let fresh = o.sent_ever.insert(start, stop);
                                if fresh < got as u64 {
                                    o.resent = true;
                                }
                                self.stats.piece_bytes_sent += got as u64;
                                self.stats.piece_bytes_resent += got as u64 - fresh;
                                p.loss.on_sent(got as u64, budget);
                                if track_acks {
                                    pieces.push((o.id, o.r.version, start, got as u64));
                                }
                                substantive = true;
                                eliciting = true;
                            }
                        }
                    } else {
                        // Symbols need not wait for the peer to confirm our HELLO: one went
                        // out ahead of them (HELLOs are handled first on receipt), which
                        // saves a round trip; if it was lost, the peer asks for the gap.
                        while streams(p) && (p.heard_us || p.hello_sent) {
                            // Lost symbols first, then new ones.
                            let (first, end, again) = match p.recon.resend.front() {
                                Some(&(a, b)) => (a, b.min(p.recon.next_symbol), true),
                                None if p.recon.next_symbol < p.recon.burst_end => {
                                    (p.recon.next_symbol, p.recon.burst_end, false)
                                }
                                None => break,
                            };
                            // (A listed set has no entries past its end.)
                            let end = p
                                .recon
                                .list
                                .as_ref()
                                .map_or(end, |l| end.min(l.len() as u64));
                            if first >= end {
                                if !again {
                                    break;
                                }
                                p.recon.resend.pop_front();
                                continue;
                            }
                            let max = (end - first) as usize;
                            let (n, each) = match &p.recon.list {
                                Some(list) => (
                                    w.ids(p.recon.epoch, list.len() as u64, first, max, |i| {
                                        list[i as usize]
                                    }),
                                    wire::LISTED_ID_LEN,
                                ),
                                None => {
                                    let enc = &mut p.recon.enc;
                                    let n = w.symbols(p.recon.epoch, first, max, |i| {
                                        enc.symbol(i as usize)
                                    });
                                    (n, crate::recon::riblt::SYMBOL_LEN)
                                }
                            };
                            if n == 0 {
                                break;
                            }
                            if again {
                                let front = p.recon.resend.front_mut().expect("matched above");
                                front.0 += n as u64;
                            } else {
                                p.recon.next_symbol += n as u64;
                            }
                            // The decoder's silence is timed from here (`streamer_waits`).
                            p.recon.last_symbol_at = now;
                            p.recon.bytes += (each * n) as u64;
                            p.recon.messages += 1;
                            substantive = true;
                            eliciting = true;
                        }
                    }
                }
            }
        }
        // A probe due with nothing of ours to carry it (the data ran out before the
        // search ended, or none came): a PING, acknowledged like data, padded to the size.
        let pure_probe = probe.is_some()
            && !eliciting
            && !has_data(p)
            && p.frag_out.is_none()
            && w.only_expendable()
            && w.ping();
        if pure_probe {
            substantive = true;
            eliciting = true;
        }
        if !substantive {
            // Nothing worth a frame: the riding copies wait for the next one.
            again_riding.append(&mut p.have_all_again);
            p.have_all_again = again_riding;
            return None;
        }
        // Riding copies of reports by number: named by the frame's DONE already, or
        // in one of their own.
        let riding = numbered(p, again_riding.iter());
        if !riding.is_empty()
            && !riding
                .iter()
                .all(|(a, b)| done_written.as_ref().is_some_and(|d| d.contains(a, b)))
        {
            let more = write_done(&mut w, p, &riding);
            done_written = match (done_written, more) {
                (Some(mut d), Some(m)) => {
                    for (a, b) in m.iter() {
                        d.insert(a, b);
                    }
                    Some(d)
                }
                (d, m) => d.or(m),
            };
        }
        for r in again_riding {
            let told = done_written
                .as_ref()
                .is_some_and(|d| names(&p.offer_seqs, d, &r));
            if !told && !w.have_all(&r) {
                p.have_all_again.push(r);
            }
        }
        if ack_written {
            p.unacked_eliciting = 0;
            p.ack_due = None;
        }
        // Only now: a frame given up before this point (nothing in it due yet) sent
        // nothing, and the pair it carried goes in the next.
        if spacing_written {
            p.rx_spacing = None;
        }
        // A probe is lost whenever the size does not cross: only a frame whose loss the
        // acknowledgements repair at once is one: data and acknowledgements, with more
        // data to follow (the next frames' acknowledgements show it lost). A HELLO, the
        // symbols or a report in a lost probe waited for a timer (after a restart on a
        // path smaller than the link's MTU, the answering HELLO and symbols went in two
        // probes, and the session took 2 s more), and so did the last piece of a queue.
        // And only with a window of data behind it, whose acknowledgements show it lost
        // while data still flows: a probe lost near a transfer's end made its end wait
        // for the resend, a round trip or two (6.7 s of 25 on a 3 s path). Never bytes
        // sent before: lost in a probe once, they went in the next and were lost again.
        let unsent = has_unsent(p);
        let probe = probe.filter(|&s| {
            eliciting
                && w.only_expendable()
                && !resent
                && (pure_probe || unsent && unsent_bytes(p) >= p.cc.cwnd())
                && w.pad_to_beyond(s)
        });
        let named_last = w.last_named();
        // Shared channel: the last frame of our over says so, and the peer may take the
        // channel at once instead of waiting out a silence long enough to be sure.
        let ends_over = params.shared
            && !params.half_duplex
            && (p.over_bytes + w.len() as u64 >= over_limit || (!unsent && !others_unsent));
        if ends_over {
            w.end_over();
        }
        let (head, tail) = w.finish_parts();
        let f = Transmit { head, tail };
        if tracing::enabled!(tracing::Level::TRACE) {
            let flat = f.clone().into_vec();
            if let Ok((h, msgs)) = wire::parse(&flat) {
                tracing::trace!(t = now.as_secs_f64(), node = %super::hex8(&my_key), pn = h.pn, len = flat.len(), over_end = ends_over, msgs = ?msgs.iter().map(super::describe).collect::<Vec<_>>(), "tx");
            }
        }
        if params.half_duplex {
            p.sent_in_over(now, f.len() as u64);
        } else {
            p.over_bytes += f.len() as u64;
        }
        if p.over_bytes >= over_limit && p.over_full_at.is_none() {
            p.over_full_at = Some(now);
        }
        if params.half_duplex && !p.cc.enabled {
            p.sent_pn(pn, now);
        }
        if tells_missed {
            p.keep_note(note);
        }
        if eliciting {
            p.data_sent_at = now;
            p.cc.on_sent(now, pn, f.len() as u64, pieces);
            if params.paced && !unsent {
                // Nothing more to send: what this frame's acknowledgement shows is our
                // pace, not the path's (see `Cc::set_app_limited`).
                p.cc.set_app_limited();
            }
            if let Some(size) = probe {
                p.cc.pmtu.probe_sent(pn, size as u64);
            }
        }
        if let Some(l) = self.links.get_mut(&link) {
            l.pn += 1;
            l.last_named = named_last.map(|r| (pn, key, r));
        }
        self.stats.count_frame(&f);
        for (r, esis) in fec_sent {
            self.overheard_by_others(now, link, key, r, &esis);
        }
        Some(f)
    }
}

/// Bytes a piece of data pays in a frame beside its data: message type and length, the
/// bundle's reference (8 B prefix and version) and the offset.
const PIECE_OVERHEAD: usize = 1 + 2 + 9 + 3;

/// Whether we stream symbols to `p`, have sent all asked for, and wait for the decoder's
/// answer (its silence is timed from our last symbol).
pub(super) fn streamer_waits(p: &Peer) -> bool {
    streams(p)
        && !p.recon.skipped
        && p.recon.next_symbol > 0
        && p.recon.next_symbol >= p.recon.burst_end
        && p.recon.resend.is_empty()
}

pub(super) fn has_data(p: &Peer) -> bool {
    !p.out.is_empty() || !p.backlog.is_empty() || !p.unqueued.is_empty() || symbols_due(p)
}

/// We stream symbols to `p` and have some of the current burst still to send.
fn symbols_due(p: &Peer) -> bool {
    streams(p) && p.recon.next_symbol < p.recon.burst_end
}

/// Whether we stream symbols to `p` this round: the streamer by key order; on a link
/// where either side may ([`super::peer::Recon::either`]), either side while it has
/// heard none of the other's symbols (once its decoder has some, it asks for more rather
/// than describe its own set as well), and the streamer by key order once it began (two
/// streams that crossed: the other side decodes ours, see `Endpoint::on_symbols`).
fn streams(p: &Peer) -> bool {
    let r = &p.recon;
    !r.stopped
        && if r.either {
            !r.decoded && (r.heard_none() || p.streamer && r.next_symbol > 0)
        } else {
            p.streamer
        }
}

/// We stream our symbols and have heard none of the other side's: we wait as a
/// streamer (for its RECON_DONE or RECON_MORE), not as a decoder.
pub(super) fn streams_unheard(p: &Peer) -> bool {
    p.recon.either && p.recon.next_symbol > 0 && p.recon.heard_none()
}

/// Bytes of the transfers under way to the peer not yet sent nor acknowledged.
fn unsent_bytes(p: &Peer) -> u64 {
    p.out
        .iter()
        .map(|o| {
            o.length
                .saturating_sub(o.held.covered())
                .saturating_sub(o.in_flight.covered())
        })
        .sum::<u64>()
}

/// Bytes queued for the peer: the transfers' and those waiting to start.
fn queued_bytes(p: &Peer) -> u64 {
    unsent_bytes(p) + p.backlog.bytes()
}

/// Whether anything of ours for `p` is still unsent now: the rest of a fragmented
/// message, a HELLO, a transfer whose manifest or some bytes have not gone, FEC symbols
/// due, the backlog, or the streamer's symbols. (Sent and awaiting a report is not unsent.)
pub(super) fn has_unsent(p: &Peer) -> bool {
    p.frag_out.is_some()
        || p.hello_due
        || !p.backlog.is_empty()
        || !p.unqueued.is_empty()
        || symbols_due(p)
        || p.out.iter().any(|o| {
            (!o.manifest_acked && o.manifest_sent_at.is_none())
                || match &o.fec {
                    // Symbols owed, or the source pass not over.
                    Some(f) => f.await_since.is_none(),
                    None => o.next_range(u64::MAX).is_some(),
                }
        })
}

/// Transfers under way in sending order ([`super::peer::Rank`]).
fn sort_outgoing(p: &mut Peer) {
    p.out.sort_by_cached_key(|o| o.rank());
}

/// Shared channels: when the peer, now sending, will have been quiet long enough to
/// take its over as ended (two full frames on the air, or at once when its last frame
/// said so). `None` when reports need not
/// wait: another link kind, or we have data of our own to send (reports ride on it).
/// Never past a whole over after the report fell due.
pub(super) fn peer_quiet_at(p: &Peer, params: &LinkParams) -> Option<Duration> {
    if !params.shared || has_data(p) {
        return None;
    }
    if p.handed_us {
        // Its over ended with the frame last heard.
        return Some(p.last_heard);
    }
    let frame = frame_airtime(params)?;
    let cap = p.have_due? + frame * SHARED_OVER_FRAMES * 2;
    Some((p.last_heard + frame * 2).min(cap))
}

/// How long a sender whose over is full stays off a shared channel for the peer: a few
/// frames' airtime, doubled for each pause in a row the peer let pass in silence (its
/// frames, or ours, are colliding), stretched at random so that two stations never
/// resume in step.
pub(super) fn shared_pause(p: &Peer, params: &LinkParams) -> Duration {
    let base = frame_airtime(params).unwrap_or(Duration::from_millis(50)) * SHARED_PAUSE_FRAMES;
    (base * 2u32.pow(p.pauses_unanswered.min(8))).mul_f64(1.0 + p.rto_jitter)
}

/// The numbers the peer gave the offers `refs` name (those it numbered).
fn numbered<'a>(p: &Peer, refs: impl Iterator<Item = &'a BundleRef>) -> RangeSet {
    let mut seqs = RangeSet::new();
    for r in refs {
        if let Some(&s) = p.offer_seqs.get(r) {
            seqs.insert(s, s + 1);
        }
    }
    seqs
}

/// Whether the numbers `d` name the offer of `r` (`seqs`: the peer's numbers).
fn names(seqs: &HashMap<BundleRef, u64>, d: &RangeSet, r: &BundleRef) -> bool {
    seqs.get(r).is_some_and(|&s| d.contains(s, s + 1))
}

/// Writes a DONE naming `fresh` (as many of its ranges as one may name beside the
/// repeats) and the latest ranges reported before; returns the numbers it names, or
/// `None` if it did not fit. What it names is reported from then on.
fn write_done(w: &mut FrameWriter, p: &mut Peer, fresh: &RangeSet) -> Option<RangeSet> {
    if fresh.is_empty() {
        return None;
    }
    let mut new = RangeSet::new();
    for (a, b) in fresh.iter().take(wire::MAX_DONE_RANGES - DONE_REPEATS) {
        new.insert(a, b);
    }
    let mut msg = new.clone();
    let earlier: Vec<(u64, u64)> = p.done_seqs.iter().collect();
    for &(a, b) in earlier.iter().rev().take(DONE_REPEATS) {
        msg.insert(a, b);
    }
    if !w.done(p.peer_nonce as u8, &msg) {
        return None;
    }
    for (a, b) in new.iter() {
        p.done_seqs.insert(a, b);
    }
    let n = p.done_seqs.iter().count();
    if n > wire::MAX_DONE_RANGES {
        // Only the latest are ever repeated.
        let keep: Vec<(u64, u64)> = p.done_seqs.iter().skip(n - wire::MAX_DONE_RANGES).collect();
        p.done_seqs = RangeSet::new();
        for (a, b) in keep {
            p.done_seqs.insert(a, b);
        }
    }
    Some(msg)
}

/// What became of a HELLO.
enum HelloOut {
    /// Not even its first fragment fits what is left of the frame.
    NoRoom,
    /// Whole in the frame; `true` with (part of) the set's sketch.
    Sent(bool),
    /// Its first fragment is in the frame; the rest goes first in the next frames.
    Fragments(FragOut),
}

/// Who greets, in a HELLO ([`hello_fitting`]).
struct Greeting<'a> {
    key: &'a [u8; 32],
    nonce: u64,
    set_size: u64,
    flags: u8,
}

/// Writes a HELLO with as much of the set's sketch as the frame has room for: the whole
/// sketch, else the count cells and fewer bottom-k hashes, else no sketch at all (the
/// peer then estimates the difference from the set sizes). A frame budget too small for
/// the sketch must not keep the session from starting. Frames too small for even a bare
/// HELLO (LoRa at long range) get it in fragments, with the count cells, and with their
/// parity where the link's `loss` makes it pay.
fn hello_fitting(
    w: &mut FrameWriter,
    ids: &mut FragIds,
    g: Greeting<'_>,
    sketch: &[u64],
    loss: f64,
    in_order_pn: Option<u64>,
) -> HelloOut {
    let Greeting {
        key,
        nonce,
        set_size,
        flags,
    } = g;
    let flags = flags | super::HELLO_NUMBERS | super::HELLO_LISTS;
    let cells = super::CELLS / 4;
    for n in (cells..=sketch.len().min(wire::MAX_SKETCH)).rev() {
        if w.hello(
            key,
            nonce,
            set_size,
            flags | super::HELLO_CELLS,
            &sketch[..n],
        ) {
            return HelloOut::Sent(true);
        }
    }
    // No room for the count cells: the smallest bottom-k hashes that fit, alone (flag
    // `CELLS` clear). Even two or three tell disjoint sets from shared ones; with none,
    // the peer knows the difference only to lie between the sets' sizes' difference
    // and their sum (100 B radio frames: no listed set for two disjoint sets of 100).
    let hashes = sketch.get(cells..).unwrap_or_default();
    for n in (1..=hashes.len()).rev() {
        if w.hello(key, nonce, set_size, flags, &hashes[..n]) {
            return HelloOut::Sent(true);
        }
    }
    if w.hello(key, nonce, set_size, flags, &[]) {
        return HelloOut::Sent(false);
    }
    let Some(mut f) = ids.start(|m| {
        m.hello(
            key,
            nonce,
            set_size,
            flags | super::HELLO_CELLS,
            &sketch[..cells.min(sketch.len())],
        )
    }) else {
        return HelloOut::NoRoom;
    };
    if f.fits_whole(w) {
        // A whole frame would hold it: wait for one.
        return HelloOut::NoRoom;
    }
    if parity_pays(loss, f.len(), w.capacity(), 0) {
        f = f.with_parity();
    }
    match f.write_at(w, super::frag::MIN_FIRST, in_order_pn) {
        (0, _) => HelloOut::NoRoom,
        (_, true) if f.write_parity(w) => HelloOut::Sent(true),
        _ => HelloOut::Fragments(f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::{Config, Turns};

    /// `hf-modem` as its driver describes it: 1475 bit/s, 250 B frames, 4 s each way,
    /// 2 s turnarounds.
    fn hf(turns: Option<Turns>) -> LinkParams {
        LinkParams {
            mtu: 250,
            rtt_hint: Duration::from_secs_f64(20.14),
            turns,
            ..crate::endpoint::peer::tests::hf_params()
        }
    }

    #[test]
    fn overs_are_shortened_for_urgent_data_only_where_turns_are_cheap() {
        let cfg = Config::default();
        let cheap = Turns {
            cost: Duration::from_secs(2),
            min_over: Duration::from_secs(13),
        };
        let over = over_air(&cfg, &hf(Some(cheap)));
        // 30 s less the rest of a message's wait (the round trip less three frames).
        assert!(
            over > Duration::from_secs(13) && over < Duration::from_secs(15),
            "{over:?}"
        );
        // Nothing known of the turns (a modem that keeps its own): as configured.
        assert_eq!(over_air(&cfg, &hf(None)), cfg.max_over);
        // A turn that costs two latencies more: the shorter overs would cost the bulk
        // far more than a tenth.
        let dear = Turns {
            cost: Duration::from_secs(10),
            ..cheap
        };
        assert_eq!(over_air(&cfg, &hf(Some(dear))), cfg.max_over);
        // An over barely longer than what the driver commits ahead of its end hands
        // the turn over late.
        let deep = Turns {
            min_over: Duration::from_secs(16),
            ..cheap
        };
        assert_eq!(over_air(&cfg, &hf(Some(deep))), cfg.max_over);
        // A link with a shorter round trip leaves more of the 30 s to the over.
        let near = LinkParams {
            rate_bps: Some(9600),
            rtt_hint: Duration::from_secs(5),
            ..hf(Some(cheap))
        };
        let over = over_air(&cfg, &near);
        assert!(
            over > Duration::from_secs(25) && over < cfg.max_over,
            "{over:?}"
        );
        // One whose round trip alone takes the 30 s: as configured.
        let far = LinkParams {
            rtt_hint: Duration::from_secs(40),
            ..hf(Some(cheap))
        };
        assert_eq!(over_air(&cfg, &far), cfg.max_over);
    }
}
