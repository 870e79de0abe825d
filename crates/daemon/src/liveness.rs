//! Keep-alives and peer liveness.
//!
//! A synced session is quiet, so silence alone cannot tell a peer with nothing to say
//! from one that is gone, or one that restarted and forgot the session (a base that only
//! listens knows nobody after a restart: it must be greeted). So:
//! - A peer on a point-to-point link (UDP, TCP, serial, modem) silent for its keep-alive
//!   interval is greeted again: the endpoint is told the link is up again
//!   ([`skywave_proto::Endpoint::link_up`]), which sends the peer a HELLO that a live
//!   peer answers, and a restarted one answers with a new session. The interval is at
//!   least [`KEEPALIVE_MIN`], and long enough that the exchange costs at most
//!   1/[`AIRTIME_SHARE`] of the link's airtime (minutes on an HF modem).
//! - While it does not answer, it is greeted again with exponential backoff and random
//!   jitter (from about a round trip, up to once a minute); after [`DOWN_AFTER`]
//!   unanswered greetings it is marked down (status, and a `peer` event), and greeted on.
//! - A peer on a shared medium (radio) is greeted by the link's discovery beacons, which
//!   every neighbour answers (at most a minute apart); it is marked down after
//!   [`SHARED_SILENCE`] of silence.
//!
//! Any frame from the peer proves it there: it is up again (and an event says so).

use std::collections::HashMap;
use std::time::Duration;

use skywave_proto::{LinkId, LinkParams, PeerInfo};

/// What liveness needs to know of a session.
#[derive(Debug, Clone, Copy)]
pub struct Session {
    pub key: [u8; 32],
    pub link: LinkId,
    pub established: bool,
    /// Time since the peer was last heard.
    pub silent_for: Duration,
    pub srtt: Option<Duration>,
}

impl From<&PeerInfo> for Session {
    fn from(p: &PeerInfo) -> Self {
        Session {
            key: p.key,
            link: p.link,
            established: p.established,
            silent_for: p.silent_for,
            srtt: p.srtt,
        }
    }
}

/// Shortest keep-alive interval: a restarted peer is greeted again within about this.
pub const KEEPALIVE_MIN: Duration = Duration::from_secs(5);
/// The keep-alive exchange (a HELLO each way) costs at most 1/this of the link's time.
pub const AIRTIME_SHARE: f64 = 200.0;
/// Bytes of a HELLO with its sketch, headers included (for the airtime estimate).
const HELLO_BYTES: f64 = 230.0;
/// Unanswered greetings after which a peer is marked down.
pub const DOWN_AFTER: u32 = 3;
/// Longest wait between greetings of a silent peer.
const GREET_MAX: Duration = Duration::from_secs(60);
/// Silence after which a peer on a shared medium is marked down (four of the longest
/// discovery intervals).
pub const SHARED_SILENCE: Duration = Duration::from_secs(240);

/// What the core is to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Greet the peers of this link again (`Endpoint::link_up`).
    Greet(LinkId),
    /// A peer fell silent: report it down.
    Down {
        peer: [u8; 32],
        link: LinkId,
        silent: Duration,
    },
    /// A peer marked down was heard again.
    Up { peer: [u8; 32], link: LinkId },
}

#[derive(Debug, Clone, Copy)]
struct Watch {
    /// When the peer was last heard.
    heard_at: Duration,
    /// Silence after which it is greeted (the keep-alive interval, jittered per round).
    quiet: Duration,
    /// Greetings sent since it was last heard, and when the next is due.
    greetings: u32,
    next: Duration,
    down: bool,
}

/// See the module docs.
#[derive(Debug)]
pub struct Liveness {
    peers: HashMap<[u8; 32], Watch>,
    rng: u64,
}

/// The keep-alive interval of a link: [`KEEPALIVE_MIN`], or longer where a HELLO each way
/// (and a turnaround on a half-duplex link) is a larger share of the link's time.
pub fn keepalive_interval(params: &LinkParams) -> Duration {
    let airtime = params
        .rate_bps
        .map_or(0.0, |r| 2.0 * HELLO_BYTES * 8.0 / r.max(1) as f64);
    let turnaround = if params.half_duplex {
        params.rtt_hint.as_secs_f64()
    } else {
        0.0
    };
    KEEPALIVE_MIN.max(Duration::from_secs_f64(
        ((airtime + turnaround) * AIRTIME_SHARE).min(86_400.0),
    ))
}

impl Liveness {
    pub fn new(seed: u64) -> Liveness {
        // SplitMix64's finaliser: nearby seeds give unrelated streams.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Liveness {
            peers: HashMap::new(),
            rng: (z ^ (z >> 31)) | 1,
        }
    }

    /// A uniform draw in [lo, hi).
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        lo + (hi - lo) * ((self.rng >> 11) as f64 / (1u64 << 53) as f64)
    }

    /// Whether `peer` is marked down.
    pub fn is_down(&self, peer: &[u8; 32]) -> bool {
        self.peers.get(peer).is_some_and(|w| w.down)
    }

    /// A new session started with `peer` (its up event is the session's): it is up.
    pub fn session_started(&mut self, peer: &[u8; 32]) {
        if let Some(w) = self.peers.get_mut(peer) {
            w.down = false;
            w.greetings = 0;
        }
    }

    /// Looks at every session at `now`; `link` gives a link's parameters and whether it
    /// is up (None: the link is gone). Returns what to do, greetings at most once per link.
    pub fn tick(
        &mut self,
        now: Duration,
        peers: &[Session],
        link: impl Fn(LinkId) -> Option<(LinkParams, bool)>,
    ) -> Vec<Action> {
        let mut out = Vec::new();
        for p in peers.iter().filter(|p| p.established) {
            let Some((params, up)) = link(p.link) else {
                continue;
            };
            let heard_at = now.saturating_sub(p.silent_for);
            let keepalive = keepalive_interval(&params);
            let quiet = keepalive.mul_f64(self.uniform(0.8, 1.0));
            let w = self.peers.entry(p.key).or_insert(Watch {
                heard_at,
                quiet,
                greetings: 0,
                next: now,
                down: false,
            });
            if heard_at > w.heard_at {
                w.heard_at = heard_at;
                w.quiet = quiet;
                w.greetings = 0;
                if w.down {
                    w.down = false;
                    out.push(Action::Up {
                        peer: p.key,
                        link: p.link,
                    });
                }
            }
            let silent = now.saturating_sub(w.heard_at);
            if params.shared {
                // The discovery beacons greet; only the verdict is ours.
                if !w.down && silent >= SHARED_SILENCE.max(keepalive) {
                    w.down = true;
                    out.push(Action::Down {
                        peer: p.key,
                        link: p.link,
                        silent,
                    });
                }
                continue;
            }
            if silent < w.quiet || (w.greetings > 0 && now < w.next) {
                continue;
            }
            if w.greetings >= DOWN_AFTER && !w.down {
                w.down = true;
                out.push(Action::Down {
                    peer: p.key,
                    link: p.link,
                    silent,
                });
            }
            w.greetings += 1;
            // From about a round trip (at least a second), doubling, jittered.
            let rtt = p.srtt.unwrap_or(params.rtt_hint);
            let base = (rtt * 2).max(Duration::from_secs(1));
            let n = w.greetings.min(16) - 1;
            let wait = (base * 2u32.pow(n)).min(GREET_MAX);
            let jitter = self.uniform(0.75, 1.25);
            let w = self.peers.get_mut(&p.key).expect("inserted above");
            w.next = now + wait.mul_f64(jitter);
            if up && !out.contains(&Action::Greet(p.link)) {
                out.push(Action::Greet(p.link));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(rate: Option<u64>, half: bool, shared: bool) -> LinkParams {
        LinkParams {
            mtu: 1472,
            shared,
            paced: !shared && !half,
            half_duplex: half,
            rate_bps: rate,
            rtt_hint: Duration::from_millis(if half { 10_000 } else { 100 }),
            loss_hint: 0.0,
            discover_mtu: false,
            frame_overhead: 0,
            handoff: Duration::ZERO,
            duty: None,
            reliable: false,
            turns: None,
        }
    }

    fn info(silent: Duration) -> Session {
        Session {
            key: [7; 32],
            link: 3,
            established: true,
            silent_for: silent,
            srtt: Some(Duration::from_millis(10)),
        }
    }

    #[test]
    fn keepalives_cost_little_airtime() {
        assert_eq!(
            keepalive_interval(&params(None, false, false)),
            KEEPALIVE_MIN
        );
        // An HF modem: a HELLO each way and a turnaround, at most 0.5% of the time.
        let hf = keepalive_interval(&params(Some(1475), true, false));
        assert!(hf >= Duration::from_secs(20 * 60), "{hf:?}");
    }

    /// A peer that stops answering is greeted with growing, jittered gaps, marked down
    /// after three unanswered greetings, and up again when heard.
    #[test]
    fn a_silent_peer_is_greeted_with_backoff_then_down_then_up() {
        let mut l = Liveness::new(42);
        let p = params(None, false, false);
        let link = |_| Some((p, true));
        let last_heard = Duration::from_secs(100);
        let mut greets = Vec::new();
        let mut down_at = None;
        let mut t = last_heard;
        while t < last_heard + Duration::from_secs(200) {
            for a in l.tick(t, &[info(t - last_heard)], link) {
                match a {
                    Action::Greet(3) => greets.push(t),
                    Action::Down { silent, .. } => {
                        assert!(down_at.is_none());
                        down_at = Some(silent);
                    }
                    other => panic!("{other:?}"),
                }
            }
            t += Duration::from_millis(100);
        }
        let first = greets[0] - last_heard;
        assert!(
            first >= KEEPALIVE_MIN * 4 / 5 && first <= KEEPALIVE_MIN,
            "{first:?}"
        );
        let gaps: Vec<f64> = greets
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64())
            .collect();
        // Doubling (within the jitter), capped at a minute.
        for w in gaps.windows(2).take(4) {
            assert!(w[1] > w[0], "{gaps:?}");
        }
        assert!(gaps.iter().all(|&g| g <= 75.0), "{gaps:?}");
        let down = down_at.expect("marked down");
        assert!(down <= Duration::from_secs(15), "{down:?}");
        assert!(l.is_down(&[7; 32]));
        // Heard again: up, once.
        let t = t + Duration::from_secs(1);
        let acts = l.tick(t, &[info(Duration::ZERO)], link);
        assert_eq!(
            acts,
            vec![Action::Up {
                peer: [7; 32],
                link: 3
            }]
        );
        assert!(!l.is_down(&[7; 32]));
        assert!(l.tick(t, &[info(Duration::ZERO)], link).is_empty());
    }

    #[test]
    fn jitter_differs_between_nodes() {
        let p = params(None, false, false);
        let first = |seed| {
            let mut l = Liveness::new(seed);
            let mut t = Duration::ZERO;
            loop {
                if !l.tick(t, &[info(t)], |_| Some((p, true))).is_empty() {
                    return t;
                }
                t += Duration::from_millis(10);
            }
        };
        assert_ne!(first(1), first(2));
    }
}
