//! Timers: resend timeouts, and what runs when they are due (`poll_timeout`,
//! `handle_timeout`).

use std::time::Duration;

use super::handle::requeue_lost;
use super::peer::Peer;
use super::transmit::*;
use super::{Endpoint, LinkParams};
use crate::wire;

/// A WANT is repeated after this many resend timeouts without any answer to it (each
/// manifest that answers it restarts the wait for the rest).
const WANT_PATIENCE: u32 = 2;

/// The longest a resend timeout backs off to (unless one unbacked timeout is longer).
const RTO_MAX: Duration = Duration::from_secs(60);

/// Fresh symbols a streamer sends when its decoder stays silent after a burst.
const NUDGE_SYMBOLS: u64 = 4;

impl Endpoint {
    fn rto(&self, p: &Peer, params: &LinkParams) -> Duration {
        Self::rto_for(&self.cfg, p, params)
    }

    /// The resend timeout of the session with `key` (`None`: no such session, or its
    /// link is gone).
    pub(super) fn rto_of(&self, key: &[u8; 32]) -> Option<Duration> {
        let p = self.peers.get(key)?;
        let l = self.links.get(&p.link)?;
        Some(self.rto(p, &l.params))
    }

    /// The resend timeout of the session with `key` before any backing off: how long a
    /// report takes at most on a path that works.
    pub(super) fn unbacked_rto_of(&self, key: &[u8; 32]) -> Option<Duration> {
        let p = self.peers.get(key)?;
        let l = self.links.get(&p.link)?;
        Some(Self::unbacked_rto(&self.cfg, p, &l.params))
    }

    pub(super) fn rto_for(cfg: &super::Config, p: &Peer, params: &LinkParams) -> Duration {
        let t = Self::unbacked_rto(cfg, p, params);
        // Backing off stops at a minute (or two unbacked timeouts on a slower link), as
        // TCP's does: a path silent for an hour is tried again within a minute of
        // coming back.
        let backed = (t * 2u32.pow(p.backoff.min(5))).min((t * 2).max(RTO_MAX));
        backed.mul_f64(1.0 + p.rto_jitter)
    }

    fn unbacked_rto(cfg: &super::Config, p: &Peer, params: &LinkParams) -> Duration {
        let measured =
            p.cc.srtt
                .map(|s| s + (p.cc.rttvar() * 4).max(Duration::from_millis(10)));
        // Until measured, twice the hint. On half duplex no over is added: our own is out
        // of every wait (they start when it ends, `Peer::waits_from`), and the peer's
        // answer leads its over. (Two 30 s overs more kept a modem losing 15% of its
        // chunks silent for 90 s after each lost request.)
        let rtt = measured.unwrap_or(params.rtt_hint * 2).max(params.rtt_hint);
        let mut t = rtt + cfg.report_interval + Duration::from_millis(10);
        if params.shared {
            // On a shared channel a report may wait out the peer's over and ours (each up
            // to an over of SHARED_OVER_FRAMES) and a radio queue before it is heard: a
            // shorter timer resends what was not lost.
            let over = frame_airtime(params).unwrap_or_default() * SHARED_OVER_FRAMES;
            t = t.max(over * 2 + params.rtt_hint + cfg.report_interval);
        }
        t
    }

    /// Silence after which the decoder asks for symbols again: the resend timeout,
    /// doubled for every request already repeated.
    fn recon_retry_after(p: &Peer, rto: Duration) -> Duration {
        rto * 2u32.pow(p.recon.more_retries.min(6))
    }

    /// How long a streamer waits for a silent decoder: four of the decoder's own waits,
    /// so that a decoder that is waiting too asks first (its request says what it
    /// lacks) and the streamer's symbols go only where nothing else would move.
    fn nudge_after(p: &Peer, rto: Duration) -> Duration {
        Self::recon_retry_after(p, rto) * 4
    }

    /// When [`Endpoint::handle_timeout`] should next be called.
    ///
    /// Deadlines for sending (a report, an ack, a paced frame, a HELLO) that have passed
    /// are not returned: they wait for the driver's next poll, which comes when the link
    /// can take a frame. Returning them would wake the driver for nothing.
    pub fn poll_timeout(&self) -> Option<Duration> {
        let now = self.now;
        let mut t: Option<Duration> = None;
        let mut at = |d: Duration| t = Some(t.map_or(d, |x| x.min(d)));
        let send_at = |d: Duration, at: &mut dyn FnMut(Duration)| {
            if d > now {
                at(d);
            }
        };
        for l in self.links.values().filter(|l| l.up) {
            let needs = l.params.shared
                || l.peer
                    .is_none_or(|k| !self.peers.get(&k).is_some_and(|p| p.established));
            if needs {
                send_at(l.hello_next, &mut at);
            }
        }
        if let Some(r) = self.suspects.next_retry() {
            at(r);
        }
        // More of a whole set to queue, the allowance spent: renewed at once (the host
        // sees to what else is waiting first).
        if self.queue_allowance == 0 && self.peers.values().any(|p| !p.unqueued.is_empty()) {
            at(now);
        }
        for p in self.peers.values().filter(|p| p.established) {
            let Some(l) = self.links.get(&p.link).filter(|l| l.up) else {
                continue;
            };
            let rto = self.rto(p, &l.params);
            if !p.heard_us && !p.hello_due {
                at(p.hello_at + l.hello_interval.max(rto));
            }
            if p.hello_due {
                send_at(p.hello_after, &mut at);
            }
            if let Some(d) = p.have_due {
                let d = peer_quiet_at(p, &l.params).map_or(d, |q| d.max(q));
                send_at(d, &mut at);
            }
            if let Some(d) = p.ack_due {
                send_at(d, &mut at);
            }
            if let Some(d) = p.cc.pto() {
                at(d);
            }
            if let Some(a) = p.answered {
                at(a.all_in);
            }
            // A frame of the size the path carries (not the link's MTU: 16 KB on
            // loopback's route, which a window with room for a frame would never wake for).
            if p.cc.enabled && has_data(p) && p.cc.send_time(p.cc.pmtu.size).is_some() {
                send_at(p.cc.next_send(), &mut at);
            }
            let hd = l.params.half_duplex;
            for o in p.out.iter().filter(|_| !l.params.reliable) {
                if !o.in_flight.is_empty() {
                    at(p.waits_from(o.progress_at, hd) + rto);
                }
                if let Some(s) = o.manifest_sent_at.filter(|_| !o.manifest_acked) {
                    send_at(p.waits_from(s, hd) + rto, &mut at);
                }
                if let Some(t) = o.fec.as_ref().and_then(|f| f.await_since) {
                    at(p.waits_from(t, hd) + rto);
                }
            }
            if let Some(t) = p
                .asked
                .due_at(rto * WANT_PATIENCE, p.waits_from(Duration::ZERO, hd))
            {
                at(t);
            }
            if p.recon.dec.is_some()
                && !p.recon.decoded
                && !streams_unheard(p)
                && p.recon.more_to_send.is_none()
            {
                at(p.waits_from(p.recon.last_symbol_at, hd) + Self::recon_retry_after(p, rto));
            }
            if streamer_waits(p) {
                at(p.waits_from(p.recon.last_symbol_at, hd) + Self::nudge_after(p, rto));
            }
            if p.over_bytes > 0 && l.params.half_duplex {
                at(p.waits_from(p.last_heard.max(p.hello_at), hd) + rto);
            }
            if let Some(t) = p.over_full_at.filter(|_| l.params.shared) {
                at(t + shared_pause(p, &l.params));
            }
        }
        t
    }

    /// Runs the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Duration) {
        self.now = self.now.max(now);
        self.queue_allowance = super::QUEUE_CHUNK;
        self.prune_fec();
        self.retry_suspects(now);
        let keys: Vec<[u8; 32]> = self.peers.keys().copied().collect();
        for key in keys {
            let Some(p) = self.peers.get(&key) else {
                continue;
            };
            let Some(l) = self.links.get(&p.link) else {
                continue;
            };
            let (params, hello_interval) = (l.params, l.hello_interval);
            let rto = self.rto(p, &params);
            let spread = self.hello_spread(&params);
            let draw = 0.25 * self.unit();
            let p = self.peers.get_mut(&key).expect("listed");
            if !p.established {
                continue;
            }
            if !p.heard_us && !p.hello_due && now >= p.hello_at + hello_interval.max(rto) {
                p.hello_due = true;
                p.hello_after = now + spread;
            }
            if p.cc.pto().is_some_and(|t| now >= t) {
                let lost = p.cc.on_pto();
                requeue_lost(p, &lost);
            }
            p.cc.tick(now);
            let mut backoff = false;
            let loss = p.loss.rate(params.loss_hint);
            let (data_sent_at, hd) = (p.data_sent_at, params.half_duplex);
            let waits_from = |t: Duration| super::peer::wait_start(t, data_sent_at, hd);
            // (A reliable link loses nothing while up: what is unanswered is late.)
            for o in p.out.iter_mut().filter(|_| !params.reliable) {
                if let Some(f) = o.fec.as_mut()
                    && f.await_since.is_some_and(|t| now >= waits_from(t) + rto)
                {
                    // No report on the symbols sent: send what was last said to be
                    // needed again (the code is rateless: any fresh symbols serve).
                    f.owed = self.policy.top_up(f.needed.max(1), loss);
                    f.await_since = None;
                    f.sent.clear();
                    self.stats.resend_timeouts += 1;
                    backoff = true;
                }
                if !o.in_flight.is_empty() && now >= waits_from(o.progress_at) + rto {
                    tracing::trace!(t = now.as_secs_f64(), id = %o.id, rto = rto.as_secs_f64(), since = (now - o.progress_at).as_secs_f64(), "resend timeout");
                    // No report for a whole timeout: what was sent is presumed lost, and
                    // the timeout doubles until a clean round trip (the path is slower
                    // than measured, or loaded).
                    // Ranges the peer acknowledged are not lost: resending them is
                    // what livelocked a shallow bottleneck (every timeout resent
                    // megabytes the receiver held, while its reports, too fragmented
                    // to fit a frame, never came).
                    o.presume_in_flight_lost();
                    // The manifest is due again too when the pieces timed out went with
                    // it (a lost frame lost both: on LoRa the piece alone cost air the
                    // duty cycle then withheld for an hour), or when its own timer ran
                    // out by now: the writer checks that timer only after this timeout
                    // has doubled it, so a daemon woken once for both (a manifest and
                    // the piece continuing it in the next frame, built a moment later)
                    // sent the piece alone, for the peer to drop.
                    let manifest_due = o.manifest_sent_at.is_some_and(|m| {
                        now >= waits_from(m) + rto || o.sends.iter().any(|&(_, _, at, _)| at == m)
                    });
                    o.sends.clear();
                    o.timeouts = o.timeouts.saturating_add(1);
                    if !o.manifest_acked && (o.timeouts >= 2 || manifest_due) {
                        // Never a report on this bundle: its manifest may be what was
                        // lost (pieces without it are dropped), so it goes again too,
                        // with the pieces after it.
                        o.manifest_sent_at = None;
                    }
                    self.stats.resend_timeouts += 1;
                    backoff = true;
                    o.progress_at = now;
                }
            }
            let mut idle_answer = None;
            if let Some(a) = p.answered
                && now >= a.all_in
            {
                p.answered = None;
                // Its answer is whole if idle, or if a frame of it was heard and none of
                // the peer's frames went missing since our over ended.
                let whole = a.idle || (p.last_heard > a.over_ended && p.gap_at <= a.over_ended);
                if a.idle {
                    idle_answer = Some(a.over_ended);
                }
                for o in p.out.iter_mut().filter(|o| o.fec.is_none() && whole) {
                    if o.in_flight.is_empty() || o.last_sent_at > a.over_ended {
                        continue;
                    }
                    // Sent in the over the peer answered, and not reported in its answer
                    // (see `Endpoint::link_heard`).
                    tracing::trace!(t = now.as_secs_f64(), id = %o.id, sent = o.last_sent_at.as_secs_f64(), "not in the peer's answer: sent again");
                    if o.manifest_acked {
                        o.presume_in_flight_lost();
                        o.sends.clear();
                        o.progress_at = now;
                    } else {
                        o.resend_from_manifest(now);
                    }
                    self.stats.answered_resends += 1;
                }
            }
            if backoff {
                p.backoff += 1;
            }
            if backoff {
                // A fresh draw for the next wait (see `Peer::rto_jitter`).
                p.rto_jitter = draw;
            }
            let mut stale =
                p.asked
                    .take_stale(now, rto * WANT_PATIENCE, waits_from(Duration::ZERO));
            if let Some(over_ended) = idle_answer {
                // The peer answered the over that asked with nothing at all: it never
                // got the requests (it would have sent what they name), so they go
                // again now, not after twice a resend timeout (220 s of silence at 9600
                // bit/s, 4 s, 15%: three WANT frames lost, the announcement after them
                // not).
                let lost = p.asked.take_asked_by(over_ended);
                self.stats.answered_wants += lost.len() as u64;
                stale.extend(lost);
            }
            let coming = if stale.is_empty() {
                Default::default()
            } else {
                super::session::incoming_shorts(p)
            };
            for sid in stale {
                if p.recon.shorts.contains_key(&sid) || coming.contains(&sid) {
                    continue; // it arrived since, or is arriving (another way than as the answer)
                }
                // Asked again by the whole short id: unambiguous whatever arrived since.
                p.wants_out.push_back((sid, wire::MAX_WANT_LEN));
            }
            if let Some(dec) = p.recon.dec.as_ref()
                && !p.recon.decoded
                && !streams_unheard(p)
                && p.recon.more_to_send.is_none()
                && now >= waits_from(p.recon.last_symbol_at) + Self::recon_retry_after(p, rto)
            {
                p.recon.more_retries += 1;
                p.rto_jitter = draw;
                // Silence: our request (or the stream) was lost. Ask for fresh symbols
                // (any serve), or for symbol 0 if that is what is missing.
                p.recon.more_to_send = Some(match &p.recon.listed {
                    // A listed set: what is missing of it (its end, if that is lost).
                    Some(l) => l.missing().unwrap_or((0, 1)),
                    None if dec.has(0) => (dec.received() as u64, 0),
                    None => (0, 1),
                });
                p.recon.last_symbol_at = now;
            }
            if streamer_waits(p)
                && now >= waits_from(p.recon.last_symbol_at) + Self::nudge_after(p, rto)
            {
                // Our burst is out and the decoder has said nothing, neither RECON_MORE
                // nor RECON_DONE: the burst or the answer was lost, or the decoder skipped
                // a round we began (it counted one set empty). A few fresh symbols (any
                // serve) wake it: it asks for more, or says again that it is done.
                p.recon.more_retries += 1;
                p.rto_jitter = draw;
                match p.recon.list.as_ref().map(|l| l.len() as u64) {
                    // A listed set has no fresh entries: its last ones go again.
                    Some(total) => p
                        .recon
                        .resend
                        .push_back((total.saturating_sub(NUDGE_SYMBOLS), total)),
                    None => p.recon.burst_end = p.recon.next_symbol + NUDGE_SYMBOLS,
                }
                p.recon.last_symbol_at = now;
            }
            // (From the end of our over: the peer is silent while we send, and a reset
            // mid-over would let the over run past its limit.)
            if params.half_duplex
                && p.over_bytes > 0
                && now >= waits_from(p.last_heard.max(p.hello_at)) + rto
            {
                p.over_bytes = 0;
                p.sent_lately.clear();
            }
            // Shared channel: the peer had its chance to speak and did not.
            if params.shared
                && !params.half_duplex
                && p.over_full_at
                    .is_some_and(|t| now >= t + shared_pause(p, &params))
            {
                p.over_bytes = 0;
                p.over_full_at = None;
                p.pauses_unanswered += 1;
                p.rto_jitter = draw;
            }
        }
    }
}
