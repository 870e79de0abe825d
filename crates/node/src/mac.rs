//! Channel access for radios that have none of their own.
//!
//! Some radios put a frame on the air the moment the host hands it over, with no carrier
//! sense and no backoff (Serval's RFD900 simulator, bare LoRa modules driven raw, many
//! serial radios in transparent mode). Two such radios answering the same frame start
//! together and collide; a retry sent the same way collides again, for ever (LBARD's
//! livelock). The driver of such a radio does the listening itself, from the only
//! things it sees: when a frame from the channel ended (it arrives whole), and when its
//! own frame ends (the radio falls silent).
//!
//! - A station that was the last to send keeps the channel while it has frames: it
//!   sends the next one as soon as its radio falls silent. Everyone else hears a frame at
//!   most one frame time after the previous one, so nobody else starts meanwhile.
//! - When the channel has been quiet for one largest frame's airtime plus a guard (no
//!   continuation can still be on its way), stations that were not the last sender
//!   contend: each waits a random number of slots (a slot is a largest frame's airtime:
//!   without carrier sense, starts closer than that overlap). The last sender waits
//!   until every other station's window is over, so two stations take turns without
//!   ever colliding and a third is rarely unlucky.
//! - A frame that ends its sender's over says so (`OVER_END`, docs/protocol.md) and
//!   names the station it is addressed to: that station may start as soon as the frame
//!   is heard (the frame arrived whole, so its sender is done), without waiting out a
//!   quiet frame or drawing a slot;
//!   the sender stops holding the channel. Others wait a guard longer than they would,
//!   so the named station's frame is heard before their window opens. Two stations
//!   exchanging overs thus hand the channel back and forth at the cost of a guard, not
//!   of two or three frames of silence. A lost over-end frame leaves the quiet rule.
//! - Every wait is in airtime of the link's own frames, so the same rules hold from
//!   1.2 kbit/s to 128 kbit/s.
//! - A radio that does sense the carrier and draws a backoff of its own before keying (a
//!   TNC's p-persistence) is told when the channel is the station's own
//!   ([`SoftMac::holds_turn`]: its over goes on, or it was handed the channel), so that
//!   it keys once the channel is clear instead of leaving it idle for its draw.
//!
//! Sans-IO: time comes in, and the randomness is a seeded xorshift.

use std::time::Duration;

use skywave_proto::{LinkParams, wire};

/// Contention window of stations that were not the last sender, in slots, with one
/// neighbour; it grows with the neighbours that may contend.
const CW_MIN: u64 = 4;
const CW_MAX: u64 = 64;

/// Airtime counted for each frame beyond its bytes when the link says less: a preamble
/// and sync word, and the radio's turnaround from receiving to sending.
const MIN_FRAME_OVERHEAD: usize = 16;

/// How long after a frame that handed it the channel a station starts.
const HANDED_MARGIN: Duration = Duration::from_millis(2);

/// Frames one station may send back to back before it lets others in, whatever it has.
const MAX_OVER_FRAMES: u32 = 16;

/// Channel access in software for one radio link. See the module docs.
#[derive(Clone, Debug)]
pub struct SoftMac {
    rate_bps: u64,
    /// A LoRa radio: air time by Semtech's formula rather than bytes at a rate.
    lora: Option<crate::lora::LoraPhy>,
    mtu: usize,
    /// Airtime the radio adds to each frame (preamble, sync, parity), as a byte count.
    frame_overhead: usize,
    /// The link's [`LinkParams::handoff`]: how late after our last frame ended the next
    /// one may start while we keep the channel.
    handoff: Duration,
    rng: u64,
    /// Contention window, in slots.
    cw: u64,
    /// End of the last frame heard on the channel.
    heard_at: Option<Duration>,
    /// When our own last frame ends on the air.
    tx_end: Option<Duration>,
    /// We sent the last frame on the channel and may go on.
    holding: bool,
    frames_in_over: u32,
    /// When this station may start, once chosen for the current quiet spell.
    start_at: Option<Duration>,
    /// `start_at` came from an over-end frame that named this station.
    handed: bool,
    /// The last frame heard ended its sender's over and named another station: wait a
    /// guard longer, so that station's frame is on the air and heard first.
    other_named: bool,
    /// Since this time the station had nothing to send when its turn came: whatever
    /// started meanwhile is still unheard, so it listens a whole frame from when it
    /// next has something.
    passed: bool,
    /// Counters for status and tests.
    pub handoffs: u64,
    pub contentions: u64,
    pub continuations: u64,
}

impl SoftMac {
    /// A radio sending `rate_bps` bit/s with frames up to `mtu` bytes; `seed` must
    /// differ between stations (a node key's bytes).
    pub fn new(rate_bps: u64, mtu: usize, seed: u64) -> Self {
        Self {
            rate_bps,
            lora: None,
            mtu,
            frame_overhead: MIN_FRAME_OVERHEAD,
            handoff: Duration::ZERO,
            rng: seed | 1,
            cw: CW_MIN,
            heard_at: None,
            tx_end: None,
            holding: false,
            frames_in_over: 0,
            start_at: None,
            handed: false,
            other_named: false,
            passed: false,
            handoffs: 0,
            contentions: 0,
            continuations: 0,
        }
    }

    /// Channel access for a link the driver describes with `params`: its rate, largest
    /// frame and per-frame airtime overhead (at least [`MIN_FRAME_OVERHEAD`]).
    pub fn for_link(params: &LinkParams, seed: u64) -> Self {
        Self {
            frame_overhead: params.frame_overhead.max(MIN_FRAME_OVERHEAD),
            handoff: params.handoff,
            ..Self::new(params.rate_bps.unwrap_or(9600), params.mtu, seed)
        }
    }

    /// A LoRa radio: every wait is in its frames' air time by the formula.
    pub fn with_lora(self, phy: crate::lora::LoraPhy) -> Self {
        Self {
            lora: Some(phy),
            ..self
        }
    }

    fn airtime(&self, bytes: usize) -> Duration {
        crate::lora::frame_airtime(self.lora, bytes, self.frame_overhead, self.rate_bps)
    }

    /// Airtime of a largest frame: the slot, and what a quiet channel must last before
    /// no continuation can be under way.
    pub fn slot(&self) -> Duration {
        self.airtime(self.mtu)
    }

    fn guard(&self) -> Duration {
        self.airtime(0) + Duration::from_millis(2) + self.handoff
    }

    fn draw(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n.max(1)
    }

    /// A frame from the channel arrived whole at `now`; `neighbours` may contend for
    /// the channel (the sessions on the link): the window grows with them, so that two of
    /// them rarely draw the same slot.
    pub fn heard(&mut self, now: Duration, neighbours: usize) {
        self.cw = (2 * neighbours as u64).clamp(CW_MIN, CW_MAX);
        self.heard_at = Some(now);
        self.holding = false;
        self.frames_in_over = 0;
        self.start_at = None;
        self.handed = false;
        self.other_named = false;
        self.passed = false;
    }

    /// The frame just [`SoftMac::heard`] (at `now`), whose sender verified, as the
    /// protocol reads it: if it ends its sender's over, the channel is handed to us (our
    /// node tag `my_tag`) or to another station.
    pub fn read_heard(&mut self, now: Duration, frame: &[u8], my_tag: u32) {
        if let Some(to_us) = wire::over_end_to(frame, my_tag) {
            self.handed_over(now, to_us);
        }
    }

    /// The frame just heard (at `now`) ended its sender's over and handed the channel to
    /// us (`to_us`) or to another station.
    fn handed_over(&mut self, now: Duration, to_us: bool) {
        if to_us {
            // The frame arrived whole: its sender's radio is done and listening. Only the
            // host's own scheduling is allowed for; a radio that senses the carrier
            // still defers to any tail of it.
            self.start_at = Some(now + HANDED_MARGIN);
            self.handed = true;
            self.handoffs += 1;
        } else {
            self.other_named = true;
        }
    }

    /// The frame just sent ended our over: we stop holding the channel and contend for
    /// it again like the station that sent last.
    fn ended_over(&mut self) {
        self.holding = false;
        self.frames_in_over = 0;
    }

    /// Whether a frame may be handed to the radio now; if not, when to ask again.
    pub fn may_send(&mut self, now: Duration) -> Result<(), Duration> {
        // The radio itself says when its frame is done (it takes the next one): the
        // estimate of our own frame's end only times the quiet after it.
        if self.holding && self.frames_in_over < MAX_OVER_FRAMES {
            return Ok(());
        }
        let start = match self.start_at {
            Some(t) => t,
            None => {
                let mut quiet_from = self.heard_at.max(self.tx_end).unwrap_or(Duration::ZERO);
                if self.passed {
                    // A frame may have started while we had nothing: listen for one.
                    quiet_from = quiet_from.max(now);
                }
                let slot = self.slot();
                let mut wait = slot + self.guard();
                if self.other_named {
                    wait += self.guard();
                }
                let last_sender = self.tx_end.is_some() && self.tx_end >= self.heard_at;
                if last_sender {
                    // Let every other station's window pass first.
                    wait += slot * self.cw as u32 + self.guard();
                }
                let cw = self.cw;
                wait += slot * self.draw(cw) as u32;
                let t = quiet_from + wait;
                self.start_at = Some(t);
                self.contentions += 1;
                t
            }
        };
        if now >= start { Ok(()) } else { Err(start) }
    }

    /// Whether the channel is this station's now, rather than contended for: it sent the
    /// last frame and its over goes on, or an over-end frame handed it the channel. A
    /// radio that draws a backoff of its own before it keys (a TNC's p-persistence) need
    /// not then: nobody else is about to start. Meaningful once [`SoftMac::may_send`]
    /// allowed a frame.
    pub fn holds_turn(&self) -> bool {
        (self.holding && self.frames_in_over < MAX_OVER_FRAMES) || self.handed
    }

    /// When a station waiting for its turn should ask again (after `now`).
    pub fn waiting_until(&self, now: Duration) -> Option<Duration> {
        self.start_at.filter(|&t| t > now)
    }

    /// What the endpoint gave when asked at `now` (after [`SoftMac::may_send`] allowed
    /// it): a frame that went to the radio (ending our over if it says so), or nothing,
    /// which ended the turn.
    pub fn polled(&mut self, now: Duration, frame: Option<&[u8]>) {
        match frame {
            Some(f) => {
                self.sent(now, f.len());
                if wire::ends_over(f) {
                    self.ended_over();
                }
            }
            None => self.idle(),
        }
    }

    /// A frame of `len` bytes went to the radio at `now`.
    pub fn sent(&mut self, now: Duration, len: usize) {
        if self.holding {
            self.continuations += 1;
        }
        self.tx_end = Some(now + self.airtime(len));
        self.holding = true;
        self.frames_in_over += 1;
        self.start_at = None;
        self.handed = false;
        self.passed = false;
    }

    /// The station had nothing to send when it could have: its turn ends.
    pub fn idle(&mut self) {
        self.holding = false;
        self.frames_in_over = 0;
        if self.start_at.is_some() || self.tx_end.is_some() {
            self.start_at = None;
            self.passed = true;
        }
        self.handed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Two stations that both always have frames, in overs of 2 frames: each frame is
    /// heard by the other at its end. With `handoff`, the second frame of an over says it
    /// ends the over (`OVER_END`, naming the other). Returns the number of overlapping
    /// transmissions, the frames of the station that sent fewer, and when the last frame
    /// ended.
    fn two_busy_stations(
        rate: u64,
        mtu: usize,
        frames: usize,
        handoff: bool,
    ) -> (usize, usize, Duration) {
        let mut macs = [SoftMac::new(rate, mtu, 11), SoftMac::new(rate, mtu, 29)];
        // (sender, start, end, ends its over)
        let mut on_air: Vec<(usize, Duration, Duration, bool)> = Vec::new();
        let mut now = Duration::ZERO;
        let mut sent = [0usize; 2];
        let mut overlaps = 0;
        let mut last_end = Duration::ZERO;
        while sent[0] + sent[1] < frames {
            // Frames that ended by `now` are heard by the other station.
            on_air.retain(|&(who, _, end, ends_over)| {
                if end <= now {
                    macs[1 - who].heard(end, 1);
                    if ends_over {
                        macs[1 - who].handed_over(end, true);
                    }
                    false
                } else {
                    true
                }
            });
            let mut next = now + Duration::from_secs(10);
            for who in 0..2 {
                match macs[who].may_send(now) {
                    Ok(()) => {
                        // An over of at most 2 frames, as the endpoint's over limit does.
                        if macs[who].frames_in_over >= 2 {
                            macs[who].idle();
                            if let Err(t) = macs[who].may_send(now) {
                                next = next.min(t);
                            }
                            continue;
                        }
                        let air = macs[who].airtime(mtu);
                        if on_air.iter().any(|&(_, s, e, _)| s < now + air && now < e) {
                            overlaps += 1;
                        }
                        macs[who].sent(now, mtu);
                        let ends_over = handoff && macs[who].frames_in_over == 2;
                        if ends_over {
                            macs[who].ended_over();
                        }
                        on_air.push((who, now, now + air, ends_over));
                        last_end = last_end.max(now + air);
                        sent[who] += 1;
                        next = next.min(now + air);
                    }
                    Err(t) => next = next.min(t),
                }
            }
            for &(_, _, e, _) in &on_air {
                next = next.min(e);
            }
            now = next.max(now + Duration::from_micros(1));
        }
        (overlaps, sent[0].min(sent[1]), last_end)
    }

    #[test]
    fn two_stations_without_carrier_sense_take_turns_without_colliding() {
        for rate in [1200, 9600, 128_000] {
            let (overlaps, least, _) = two_busy_stations(rate, 223, 200, false);
            assert_eq!(overlaps, 0, "{rate} bit/s");
            assert!(least >= 80, "{rate} bit/s: one station starved ({least})");
        }
    }

    /// A frame that ends its over hands the channel to the station it names, which
    /// starts at once instead of after a quiet frame and a drawn slot: no collision, and
    /// the channel is busy almost all the time (without the handoff, overs of two frames
    /// leave it idle about half of it).
    #[test]
    fn an_over_handed_to_the_peer_leaves_the_channel_idle_only_for_a_moment() {
        for rate in [1200, 9600, 128_000] {
            let (overlaps, least, end) = two_busy_stations(rate, 223, 200, true);
            assert_eq!(overlaps, 0, "{rate} bit/s");
            assert!(least >= 99, "{rate} bit/s: one station starved ({least})");
            let mac = SoftMac::new(rate, 223, 1);
            let busy = mac.airtime(223) * 200;
            let idle = end - busy;
            // The host's margin per change of turn (100 of them), and the first
            // contention.
            assert!(
                idle <= HANDED_MARGIN * 100 + mac.slot() * 5 + mac.guard() * 2,
                "{rate} bit/s: idle {idle:?} of {end:?}"
            );
            let (_, _, without) = two_busy_stations(rate, 223, 200, false);
            assert!(
                end.mul_f64(1.4) < without,
                "{rate} bit/s: {end:?} against {without:?}"
            );
        }
    }

    /// The channel is the station's own after an over-end frame named it and while its
    /// over goes on; not when it won a contention, nor past an over's length.
    #[test]
    fn a_turn_is_held_when_handed_over_or_going_on_not_when_contended_for() {
        let mut m = SoftMac::new(9600, 223, 7);
        // Contention: a frame heard that hands the channel to nobody.
        m.heard(Duration::ZERO, 1);
        let at = m.may_send(Duration::ZERO).unwrap_err();
        assert!(m.may_send(at).is_ok());
        assert!(!m.holds_turn(), "won by contention");
        m.sent(at, 223);
        assert!(m.may_send(at).is_ok() && m.holds_turn(), "its over goes on");
        for _ in 1..MAX_OVER_FRAMES {
            m.sent(at, 223);
        }
        assert!(!m.holds_turn(), "past an over's length");
        // Handed the channel by the peer's over-end frame.
        let t = Duration::from_secs(10);
        m.heard(t, 1);
        m.handed_over(t, true);
        assert!(m.may_send(t + HANDED_MARGIN).is_ok() && m.holds_turn());
        // Another station named: contention again.
        let t = Duration::from_secs(20);
        m.heard(t, 2);
        m.handed_over(t, false);
        let at = m.may_send(t).unwrap_err();
        assert!(m.may_send(at).is_ok() && !m.holds_turn());
        // Nothing to send when handed the channel: the turn is given up.
        let t = Duration::from_secs(30);
        m.heard(t, 1);
        m.handed_over(t, true);
        m.idle();
        assert!(!m.holds_turn());
    }

    #[test]
    fn waits_scale_with_airtime_and_retries_differ() {
        let mut slow = SoftMac::new(1200, 100, 5);
        let mut fast = SoftMac::new(128_000, 100, 5);
        slow.heard(Duration::ZERO, 1);
        fast.heard(Duration::ZERO, 1);
        let s = slow.may_send(Duration::ZERO).unwrap_err();
        let f = fast.may_send(Duration::ZERO).unwrap_err();
        assert!(s > f * 50, "slow {s:?} fast {f:?}");
        // Repeated contentions after the same event draw different waits.
        let mut waits = std::collections::BTreeSet::new();
        for k in 0..32 {
            let t = Duration::from_secs(k);
            slow.heard(t, 1);
            waits.insert(slow.may_send(t).unwrap_err() - t);
        }
        assert!(waits.len() > 1, "every retry waited the same: {waits:?}");
        assert!(slow.may_send(Duration::from_secs(1000)).is_ok());
        let _ = MS;
    }
}
