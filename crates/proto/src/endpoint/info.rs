//! Read-only views of sessions and transfers, for status screens and metrics.
//!
//! Nothing here changes state; the views are built on demand (the daemon asks a few
//! times a second at most).

use std::time::Duration;

use skywave_bundle::BundleId;

use super::{Endpoint, LinkId};

/// Where a session's reconciliation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReconState {
    /// HELLOs not yet exchanged both ways.
    Greeting,
    /// Coded symbols are being streamed or decoded.
    Reconciling,
    /// Both sides know the difference; new bundles are announced as they arrive.
    Synced,
}

impl ReconState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReconState::Greeting => "greeting",
            ReconState::Reconciling => "reconciling",
            ReconState::Synced => "synced",
        }
    }
}

/// One peer's session.
#[derive(Debug, Clone)]
pub struct PeerInfo {
    pub key: [u8; 32],
    pub link: LinkId,
    pub established: bool,
    pub recon: ReconState,
    /// Reconciliation bytes and messages exchanged with this peer.
    pub recon_bytes: u64,
    pub recon_messages: u64,
    /// Smoothed round trip, once measured.
    pub srtt: Option<Duration>,
    /// Current pacing rate in bytes per second (paced links).
    pub pacing_bps: Option<f64>,
    /// Bytes sent and not yet acknowledged.
    pub in_flight: u64,
    /// IP paths: the largest frame known to cross the path, and whether the search
    /// for a larger one has settled.
    pub path_mtu: Option<(u64, bool)>,
    /// Time since the peer was last heard.
    pub silent_for: Duration,
    /// Transfers to the peer not yet confirmed, queued ones included.
    pub sending: usize,
    pub receiving: usize,
}

/// Which way a transfer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Send,
    Receive,
}

/// Why a transfer is where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransferState {
    /// The manifest is on its way; the peer has not confirmed it.
    Offering,
    /// Pieces are moving.
    Sending,
    /// Everything was sent; waiting for the peer to report it held.
    AwaitingReport,
    /// Sent on a guess during reconciliation; cancelled if the peer has it.
    Speculative,
    /// Queued behind the transfers under way; nothing sent yet.
    Queued,
    /// Receiving pieces.
    Receiving,
    /// The peer's session is not established or its link is down.
    Stalled,
}

impl TransferState {
    /// A stable reason code for APIs.
    pub fn as_str(self) -> &'static str {
        match self {
            TransferState::Offering => "offering",
            TransferState::Sending => "sending",
            TransferState::AwaitingReport => "awaiting_report",
            TransferState::Speculative => "speculative",
            TransferState::Queued => "queued",
            TransferState::Receiving => "receiving",
            TransferState::Stalled => "stalled",
        }
    }
}

/// Queued transfers listed per peer by [`Endpoint::transfers`], next first.
pub const QUEUED_LISTED: usize = 32;

/// One bundle version moving to or from one peer.
#[derive(Debug, Clone)]
pub struct TransferInfo {
    pub peer: [u8; 32],
    pub id: BundleId,
    pub version: u64,
    pub direction: Direction,
    pub state: TransferState,
    /// Payload bytes the receiver holds (as last reported, for sends).
    pub held: u64,
    /// Payload length of this version.
    pub total: u64,
    /// Bytes sent and not yet reported held (sends).
    pub in_flight: u64,
    /// Time since the transfer started or last made progress.
    pub idle_for: Duration,
}

impl Endpoint {
    /// Every peer with a session (established or being set up).
    pub fn peer_infos(&self) -> Vec<PeerInfo> {
        let now = self.now;
        self.peers
            .values()
            .map(|p| {
                let recon = if !p.established {
                    ReconState::Greeting
                } else if p.recon.active(p.streamer) {
                    ReconState::Reconciling
                } else {
                    ReconState::Synced
                };
                PeerInfo {
                    key: p.key,
                    link: p.link,
                    established: p.established,
                    recon,
                    recon_bytes: p.recon.bytes,
                    recon_messages: p.recon.messages,
                    srtt: p.cc.srtt,
                    pacing_bps: p.cc.enabled.then(|| p.cc.pacing_rate()),
                    in_flight: p.cc.in_flight,
                    path_mtu: p.cc.enabled.then(|| (p.cc.pmtu.size, p.cc.pmtu.settled())),
                    silent_for: now.saturating_sub(p.last_heard),
                    sending: p.out.len() + p.backlog.len() + p.unqueued.len(),
                    receiving: p.incoming.len(),
                }
            })
            .collect()
    }

    /// Every transfer under way, to and from every peer, and the next
    /// [`QUEUED_LISTED`] queued to each.
    pub fn transfers(&self) -> Vec<TransferInfo> {
        let now = self.now;
        let mut v = Vec::new();
        for p in self.peers.values() {
            let link_up = self.links.get(&p.link).is_some_and(|l| l.up);
            let live = p.established && link_up;
            for o in &p.out {
                let held = o.held.iter().map(|(s, e)| e - s).sum::<u64>();
                let in_flight = o.in_flight.iter().map(|(s, e)| e - s).sum::<u64>();
                let state = if !live {
                    TransferState::Stalled
                } else if o.speculative {
                    TransferState::Speculative
                } else if !o.manifest_acked {
                    TransferState::Offering
                } else if o.next_range(1).is_none() {
                    TransferState::AwaitingReport
                } else {
                    TransferState::Sending
                };
                v.push(TransferInfo {
                    peer: p.key,
                    id: o.id,
                    version: o.r.version,
                    direction: Direction::Send,
                    state,
                    held,
                    total: o.length,
                    in_flight,
                    idle_for: now.saturating_sub(o.progress_at),
                });
            }
            // Only the next few queued: a peer lacking a million bundles must not make
            // every status call list a million ([`PeerInfo::sending`] counts them all).
            for q in p.backlog.iter().take(QUEUED_LISTED) {
                v.push(TransferInfo {
                    peer: p.key,
                    id: q.id,
                    version: q.version,
                    direction: Direction::Send,
                    state: if live {
                        TransferState::Queued
                    } else {
                        TransferState::Stalled
                    },
                    held: 0,
                    total: q.length,
                    in_flight: 0,
                    idle_for: now.saturating_sub(q.queued_at),
                });
            }
            for inc in p.incoming.values() {
                let held = inc.held.iter().map(|(s, e)| e - s).sum::<u64>();
                v.push(TransferInfo {
                    peer: p.key,
                    id: inc.id,
                    version: inc.version,
                    direction: Direction::Receive,
                    state: if live {
                        TransferState::Receiving
                    } else {
                        TransferState::Stalled
                    },
                    held,
                    total: inc.manifest.manifest().length,
                    in_flight: 0,
                    idle_for: Duration::ZERO,
                });
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use skywave_bundle::{Manifest, SecretKey, hash_payload};

    use crate::store::MemStore;
    use crate::{Config, Endpoint, LinkParams};

    use super::*;

    fn params() -> LinkParams {
        LinkParams {
            mtu: 1200,
            shared: false,
            paced: true,
            half_duplex: false,
            rate_bps: Some(10_000_000),
            rtt_hint: Duration::from_millis(10),
            loss_hint: 0.0,
            discover_mtu: false,
            frame_overhead: 0,
            handoff: Duration::ZERO,
            duty: None,
            reliable: false,
            turns: None,
        }
    }

    /// Steps two endpoints joined by an ideal link until `until` says stop.
    fn run(
        a: &mut Endpoint,
        sa: &mut MemStore,
        b: &mut Endpoint,
        sb: &mut MemStore,
        mut until: impl FnMut(&Endpoint, &Endpoint) -> bool,
    ) -> Duration {
        let mut now = Duration::ZERO;
        for _ in 0..100_000 {
            if until(a, b) {
                return now;
            }
            let mut moved = false;
            while let Some(f) = a.poll_transmit(now, 0, 1200, sa) {
                b.handle_frame(now, 0, &f, sb);
                moved = true;
            }
            while let Some(f) = b.poll_transmit(now, 0, 1200, sb) {
                a.handle_frame(now, 0, &f, sa);
                moved = true;
            }
            if !moved {
                let t = [a.poll_timeout(), b.poll_timeout()]
                    .into_iter()
                    .flatten()
                    .min()
                    .unwrap_or(now + Duration::from_millis(1));
                now = t.max(now + Duration::from_micros(10));
                a.handle_timeout(now);
                b.handle_timeout(now);
            }
        }
        panic!("did not finish");
    }

    #[test]
    fn peers_and_transfers_are_reported_until_done() {
        let key = SecretKey::from_bytes(&[9; 32]);
        let payload = vec![5u8; 200_000];
        let m = Manifest::new(
            key.bundle_id(),
            1,
            payload.len() as u64,
            hash_payload(&payload),
            1_790_000_000,
        )
        .sign(&key)
        .unwrap();
        let (mut sa, mut sb) = (MemStore::new(), MemStore::new());
        sa.insert(m, payload);
        let mut a = Endpoint::new(Config::default(), [1; 32], 11);
        let mut b = Endpoint::new(Config::default(), [2; 32], 22);
        assert!(a.peer_infos().is_empty() && a.transfers().is_empty());
        a.link_up(Duration::ZERO, 0, params());
        b.link_up(Duration::ZERO, 0, params());
        // Until B starts receiving: A shows a send, B a receive, of the same bundle.
        run(&mut a, &mut sa, &mut b, &mut sb, |_, b| {
            !b.transfers().is_empty()
        });
        let tb = b.transfers();
        assert_eq!(tb.len(), 1);
        assert_eq!(tb[0].direction, Direction::Receive);
        assert_eq!(tb[0].total, 200_000);
        assert_eq!(tb[0].peer, [1; 32]);
        let ta = a.transfers();
        assert_eq!(ta.len(), 1);
        assert_eq!(ta[0].direction, Direction::Send);
        assert_eq!(ta[0].id, tb[0].id);
        assert!(ta[0].held < ta[0].total);
        let pa = a.peer_infos();
        assert_eq!(pa.len(), 1);
        assert_eq!(pa[0].key, [2; 32]);
        assert!(pa[0].established);
        assert_eq!(pa[0].sending, 1);
        // Until A hears it was delivered: nothing left on either side, both synced.
        run(&mut a, &mut sa, &mut b, &mut sb, |a, b| {
            a.transfers().is_empty() && b.transfers().is_empty()
        });
        assert!(a.stats().bundles_delivered == 1);
        for p in a.peer_infos().into_iter().chain(b.peer_infos()) {
            assert_eq!(p.recon, ReconState::Synced, "{p:?}");
            // B held nothing: A pushed its bundle and no round ran.
            assert_eq!(p.recon_bytes, 0, "{p:?}");
        }
    }
}
