//! Pacing and congestion control for links where the core paces itself (IP paths).
//!
//! A model-based controller in the manner of BBR: the bottleneck rate is the maximum
//! delivery rate seen over the last ~10 round trips, the propagation RTT the minimum
//! seen over 10 s. Frames leave paced at `gain × rate` with at most 2 BDP in flight.
//! Loss marks frames' contents for resending but does not cut the rate: on the paths we
//! serve, most loss is random (radio, cellular), and a rate that halves on every loss
//! (Reno, Cubic) collapses there. Queueing shows up as RTT above the minimum, which the
//! in-flight cap bounds.

use std::collections::BTreeMap;
use std::time::Duration;

use skywave_bundle::BundleId;

/// One piece of a bundle carried by a frame: (bundle, version, offset, length).
/// How far behind `now` the pacing schedule may fall (see [`Cc::on_sent`]).
const PACING_SLACK: Duration = Duration::from_millis(2);

pub(crate) type PieceRef = (BundleId, u64, u64, u64);

#[derive(Debug, Clone)]
pub(crate) struct Sent {
    pub time: Duration,
    pub bytes: u64,
    pub delivered: u64,
    pub delivered_at: Duration,
    pub pieces: Vec<PieceRef>,
}

const STARTUP_GAIN: f64 = 2.885;
/// Frames up to this size are assumed to cross any IP path (QUIC's minimum datagram):
/// black-hole detection never caps below it.
const BASE_DATAGRAM: u64 = 1200;
/// Frames larger than any acknowledged one, lost in a row, that mark a black hole.
const BLACK_HOLE_LOSSES: u32 = 8;
const CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
const BW_WINDOW_ROUNDS: u64 = 10;
const MIN_RTT_WINDOW: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub(crate) struct Cc {
    pub enabled: bool,
    mtu: u64,
    /// The link's expected round trip, until one is measured: a probe timeout shorter
    /// than the path's RTT would declare the whole first flight lost.
    initial_rtt: Duration,
    pub srtt: Option<Duration>,
    /// The last round-trip sample: a queue filling raises it before the smoothed one.
    latest_rtt: Duration,
    rttvar: Duration,
    min_rtt: Option<(Duration, Duration)>,
    /// (round, highest rate in bytes/s seen in it) for the windowed max.
    bw_samples: Vec<(u64, f64)>,
    initial_rate: f64,
    delivered: u64,
    delivered_at: Duration,
    pub in_flight: u64,
    next_send: Duration,
    startup: bool,
    /// After startup: pacing below the estimate until the queue startup built is gone
    /// (in flight down to one BDP), as BBR's DRAIN.
    draining: bool,
    full_bw: f64,
    full_bw_rounds: u32,
    round: u64,
    round_end_delivered: u64,
    cycle_index: usize,
    cycle_start: Duration,
    pub sent: BTreeMap<u64, Sent>,
    /// Start of the current aggregation epoch and bytes acknowledged in it.
    ack_epoch: (Duration, u64),
    /// (round, extra bytes acknowledged) samples for the windowed max.
    extra_samples: Vec<(u64, u64)>,
    largest_acked: Option<u64>,
    pto_count: u32,
    /// Bytes declared lost, for the stats.
    pub lost_bytes: u64,
    /// The largest frame the peer has acknowledged.
    largest_acked_len: u64,
    /// Frames larger than any acknowledged one lost in a row (no large frame
    /// acknowledged in between): a path that drops every datagram above its MTU.
    large_lost_in_a_row: u32,
    /// Set once the path looks like such a black hole: the largest frame to send.
    pub mtu_cap: Option<u64>,
}

impl Cc {
    pub fn new(params: &super::LinkParams) -> Self {
        let mtu = params.mtu;
        // Without a hint, start as TCP would: 10 frames per 100 ms. With one, at half the
        // nominal rate: startup's gain then overshoots it by less than the 1 BDP of
        // queue a path is expected to have.
        let initial_rate = params
            .rate_bps
            .map_or(10.0 * mtu as f64 / 0.1, |r| r as f64 / 8.0 / 2.0);
        Self {
            enabled: params.paced,
            mtu: mtu as u64,
            initial_rtt: params.rtt_hint.max(Duration::from_millis(1)),
            srtt: None,
            rttvar: Duration::ZERO,
            min_rtt: None,
            bw_samples: Vec::new(),
            initial_rate,
            delivered: 0,
            delivered_at: Duration::ZERO,
            in_flight: 0,
            next_send: Duration::ZERO,
            startup: true,
            latest_rtt: Duration::ZERO,
            draining: false,
            full_bw: 0.0,
            full_bw_rounds: 0,
            round: 0,
            round_end_delivered: 0,
            cycle_index: 0,
            cycle_start: Duration::ZERO,
            sent: BTreeMap::new(),
            largest_acked: None,
            pto_count: 0,
            lost_bytes: 0,
            largest_acked_len: 0,
            large_lost_in_a_row: 0,
            mtu_cap: None,
            ack_epoch: (Duration::ZERO, 0),
            extra_samples: Vec::new(),
        }
    }

    fn btl_bw(&self) -> f64 {
        // The initial rate stands in only until the path has been measured: kept as a
        // floor, it would pace a path slower than the guess above its capacity forever.
        if self.bw_samples.is_empty() {
            return self.initial_rate;
        }
        self.bw_samples.iter().map(|s| s.1).fold(0.0, f64::max)
    }

    fn min_rtt(&self) -> Duration {
        self.min_rtt.map_or(self.initial_rtt, |m| m.0)
    }

    fn gain(&self) -> f64 {
        if self.startup {
            STARTUP_GAIN
        } else if self.draining {
            1.0 / STARTUP_GAIN
        } else {
            CYCLE[self.cycle_index]
        }
    }

    /// Estimated bottleneck rate, bytes per second.
    pub fn rate_estimate(&self) -> f64 {
        self.btl_bw()
    }

    pub fn pacing_rate(&self) -> f64 {
        self.gain() * self.btl_bw()
    }

    pub fn cwnd(&self) -> u64 {
        let bdp = self.btl_bw() * self.min_rtt().as_secs_f64();
        let gain = if self.startup { STARTUP_GAIN } else { 2.0 };
        ((gain * bdp) as u64 + self.extra_acked()).max(4 * self.mtu)
    }

    /// Bytes acknowledged beyond what the delivery rate explains, at most ~100 ms of
    /// it (BBR's `extra_acked`): a receiver that acknowledges in batches (a daemon
    /// reading a burst of datagrams before it answers) would otherwise hold the window
    /// to the bytes one batch covers.
    fn extra_acked(&self) -> u64 {
        let max = self.extra_samples.iter().map(|s| s.1).max().unwrap_or(0);
        max.min((self.btl_bw() * 0.1) as u64)
    }

    fn note_acked(&mut self, now: Duration, bytes: u64) {
        let expected = self.btl_bw() * now.saturating_sub(self.ack_epoch.0).as_secs_f64();
        if (self.ack_epoch.1 as f64) <= expected || self.ack_epoch.1 > self.cwnd() * 4 {
            self.ack_epoch = (now, 0);
        }
        self.ack_epoch.1 += bytes;
        let expected = self.btl_bw() * now.saturating_sub(self.ack_epoch.0).as_secs_f64();
        let extra = (self.ack_epoch.1 as f64 - expected).max(0.0) as u64;
        match self.extra_samples.last_mut() {
            Some(last) if last.0 == self.round => last.1 = last.1.max(extra),
            _ => self.extra_samples.push((self.round, extra)),
        }
        let round = self.round;
        self.extra_samples
            .retain(|(r, _)| r + BW_WINDOW_ROUNDS >= round);
    }

    /// When a frame of `bytes` may leave, or `None` if the window is full.
    pub fn send_time(&self, bytes: u64) -> Option<Duration> {
        if !self.enabled {
            return Some(Duration::ZERO);
        }
        if self.in_flight + bytes > self.cwnd() {
            return None;
        }
        Some(self.next_send)
    }

    pub fn on_sent(&mut self, now: Duration, pn: u64, bytes: u64, pieces: Vec<PieceRef>) {
        if !self.enabled {
            return;
        }
        if self.in_flight == 0 {
            self.delivered_at = now;
        }
        self.in_flight += bytes;
        let interval = Duration::from_secs_f64(bytes as f64 / self.pacing_rate().max(1.0));
        // A driver woken late (a timer's granularity, a busy host) may catch up a little:
        // the schedule lags `now` by at most PACING_SLACK, so a late wake sends a short
        // burst instead of losing the time it slept.
        self.next_send = self.next_send.max(now.saturating_sub(PACING_SLACK)) + interval;
        self.sent.insert(
            pn,
            Sent {
                time: now,
                bytes,
                delivered: self.delivered,
                delivered_at: self.delivered_at,
                pieces,
            },
        );
    }

    /// Processes acknowledged ranges; returns the pieces of frames now deemed lost.
    pub fn on_ack(
        &mut self,
        now: Duration,
        ranges: &[(u64, u64)],
        ack_delay: Duration,
    ) -> (Vec<PieceRef>, Vec<PieceRef>) {
        let mut acked_pieces = Vec::new();
        let mut acked_bytes = 0u64;
        let Some(&(_, largest)) = ranges.first() else {
            return (Vec::new(), Vec::new());
        };
        let mut newest: Option<Sent> = None;
        for &(lo, hi) in ranges {
            let pns: Vec<u64> = self.sent.range(lo..=hi).map(|(pn, _)| *pn).collect();
            for pn in pns {
                let s = self.sent.remove(&pn).expect("listed above");
                self.in_flight = self.in_flight.saturating_sub(s.bytes);
                self.delivered += s.bytes;
                acked_bytes += s.bytes;
                if s.bytes >= self.largest_acked_len.max(BASE_DATAGRAM) {
                    self.large_lost_in_a_row = 0;
                }
                self.largest_acked_len = self.largest_acked_len.max(s.bytes);
                self.delivered_at = now;
                acked_pieces.extend(s.pieces.iter().copied());
                if pn == largest {
                    newest = Some(s.clone());
                }
                // Delivery rate over the interval since this frame left.
                let dt = now.saturating_sub(s.delivered_at);
                if dt > Duration::ZERO {
                    let rate = (self.delivered - s.delivered) as f64 / dt.as_secs_f64();
                    // One sample per round (its maximum) keeps the windowed max cheap.
                    match self.bw_samples.last_mut() {
                        Some(last) if last.0 == self.round => last.1 = last.1.max(rate),
                        _ => self.bw_samples.push((self.round, rate)),
                    }
                }
                if self.delivered >= self.round_end_delivered
                    && s.delivered >= self.round_end_delivered.saturating_sub(1)
                {
                    self.round += 1;
                    self.round_end_delivered = self.delivered + self.in_flight;
                    self.on_round();
                }
            }
        }
        self.bw_samples
            .retain(|(r, _)| r + BW_WINDOW_ROUNDS >= self.round);
        let acked: u64 = acked_bytes;
        if acked > 0 {
            self.note_acked(now, acked);
        }
        if let Some(s) = newest {
            self.pto_count = 0;
            self.rtt_sample(now.saturating_sub(s.time).saturating_sub(ack_delay));
            let raw = now.saturating_sub(s.time);
            self.latest_rtt = raw;
            if self
                .min_rtt
                .is_none_or(|(m, at)| raw <= m || now.saturating_sub(at) > MIN_RTT_WINDOW)
            {
                self.min_rtt = Some((raw, now));
            }
        }
        self.largest_acked = Some(self.largest_acked.map_or(largest, |l| l.max(largest)));
        let bdp = self.btl_bw() * self.min_rtt().as_secs_f64();
        if self.draining && self.in_flight as f64 <= bdp {
            self.draining = false;
            self.cycle_start = now;
        }
        (acked_pieces, self.detect_losses(now))
    }

    /// Folds in a round-trip sample (RFC 6298 smoothing). Also used on links the core
    /// does not pace, where reports rather than acks give the samples.
    pub fn rtt_sample(&mut self, sample: Duration) {
        let sample = sample.max(Duration::from_micros(1));
        match self.srtt {
            None => {
                self.srtt = Some(sample);
                self.rttvar = sample / 2;
            }
            Some(srtt) => {
                let diff = srtt.abs_diff(sample);
                self.rttvar = (self.rttvar * 3 + diff) / 4;
                self.srtt = Some((srtt * 7 + sample) / 8);
            }
        }
    }

    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    fn on_round(&mut self) {
        if self.startup {
            let bw = self.btl_bw();
            if bw >= self.full_bw * 1.25 {
                self.full_bw = bw;
                self.full_bw_rounds = 0;
            } else {
                self.full_bw_rounds += 1;
                if self.full_bw_rounds >= 3 {
                    self.startup = false;
                    self.draining = true;
                }
            }
        }
    }

    fn detect_losses(&mut self, now: Duration) -> Vec<PieceRef> {
        let Some(largest) = self.largest_acked else {
            return Vec::new();
        };
        // As QUIC (RFC 9002 6.1.2): the larger of the smoothed and the latest RTT, so a
        // growing queue does not make frames still in it look lost.
        let rtt = self.srtt.unwrap_or(self.initial_rtt).max(self.latest_rtt);
        let threshold = now.saturating_sub(rtt * 9 / 8);
        let lost: Vec<u64> = self
            .sent
            .range(..largest)
            .filter(|(pn, s)| largest - **pn >= 3 || s.time <= threshold)
            .map(|(pn, _)| *pn)
            .collect();
        self.remove_lost(&lost)
    }

    fn remove_lost(&mut self, pns: &[u64]) -> Vec<PieceRef> {
        let mut out = Vec::new();
        for pn in pns {
            if let Some(s) = self.sent.remove(pn) {
                self.in_flight = self.in_flight.saturating_sub(s.bytes);
                self.lost_bytes += s.bytes;
                if s.bytes > self.largest_acked_len.max(BASE_DATAGRAM) {
                    self.large_lost_in_a_row += 1;
                }
                out.extend(s.pieces);
            }
        }
        if self.mtu_cap.is_none() && self.large_lost_in_a_row >= BLACK_HOLE_LOSSES {
            // Every frame above this size was lost, and smaller ones arrive: the path's
            // MTU is smaller than configured (a tunnel, PPPoE, a cellular carrier) and it
            // drops what does not fit (don't-fragment) without a word.
            let cap = self.largest_acked_len.max(BASE_DATAGRAM);
            tracing::warn!(
                cap,
                "frames above {cap} B never arrive: the path's MTU is smaller than the link's \
                 configured mtu; sending at most {cap} B (set the link's mtu to silence this)"
            );
            self.mtu_cap = Some(cap);
        }
        out
    }

    /// Probe timeout: when nothing has been acknowledged for this long, everything in
    /// flight is presumed lost.
    pub fn pto(&self) -> Option<Duration> {
        if !self.enabled || self.sent.is_empty() {
            return None;
        }
        let srtt = self.srtt.unwrap_or(self.initial_rtt);
        let base =
            srtt + (self.rttvar * 4).max(Duration::from_millis(5)) + Duration::from_millis(25);
        let oldest = self.sent.values().map(|s| s.time).min()?;
        Some(oldest + base * 2u32.pow(self.pto_count.min(6)))
    }

    pub fn on_pto(&mut self, now: Duration) -> Vec<PieceRef> {
        self.pto_count += 1;
        let _ = now;
        let all: Vec<u64> = self.sent.keys().copied().collect();
        self.remove_lost(&all)
    }

    /// Advances the gain cycle (once per min RTT).
    pub fn tick(&mut self, now: Duration) {
        if !self.startup && !self.draining && now.saturating_sub(self.cycle_start) >= self.min_rtt()
        {
            self.cycle_start = now;
            self.cycle_index = (self.cycle_index + 1) % CYCLE.len();
        }
    }

    pub fn next_send(&self) -> Duration {
        self.next_send
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1 GB/s path with next to no delay, whose receiver acknowledges once per
    /// millisecond everything that arrived (as a daemon reading datagrams in batches
    /// does): the window must grow past one batch, or the rate is a few frames per ms.
    #[test]
    fn batched_acks_do_not_pin_the_window() {
        let params = crate::LinkParams {
            mtu: 1400,
            shared: false,
            paced: true,
            half_duplex: false,
            rate_bps: None,
            rtt_hint: Duration::from_millis(1),
            loss_hint: 0.0,
        };
        let mut cc = Cc::new(&params);
        let capacity = 1e9; // bytes per second
        let mut now = Duration::ZERO;
        let (mut pn, mut acked_to, mut wire_free) = (0u64, 0u64, Duration::ZERO);
        let mut arrived: Vec<(u64, Duration)> = Vec::new();
        let mut next_ack = Duration::from_millis(1);
        let step = Duration::from_micros(5);
        let end = Duration::from_millis(100);
        let mut delivered_late = 0u64;
        while now < end {
            while let Some(t) = cc.send_time(1400) {
                if t > now {
                    break;
                }
                cc.on_sent(now, pn, 1400, Vec::new());
                // Serialised at the path's rate, then delivered.
                wire_free = wire_free.max(now) + Duration::from_secs_f64(1400.0 / capacity);
                arrived.push((pn, wire_free));
                pn += 1;
            }
            if now >= next_ack {
                next_ack += Duration::from_millis(1);
                let upto = arrived
                    .iter()
                    .filter(|(_, t)| *t <= now)
                    .map(|(p, _)| *p)
                    .max();
                if let Some(hi) = upto
                    && hi + 1 > acked_to
                {
                    let (_, lost) = cc.on_ack(now, &[(acked_to, hi)], Duration::ZERO);
                    assert!(lost.is_empty());
                    if now >= end / 2 {
                        delivered_late += (hi + 1 - acked_to) * 1400;
                    }
                    acked_to = hi + 1;
                    arrived.retain(|(p, _)| *p > hi);
                }
            }
            now += step;
        }
        let rate = delivered_late as f64 / (end / 2).as_secs_f64();
        assert!(
            rate > 0.5 * capacity,
            "{:.0} MB/s of {:.0}",
            rate / 1e6,
            capacity / 1e6
        );
    }
}
