//! A link that withholds sealed bundles (amateur bands forbid encryption): its sessions
//! leave them out of the set they reconcile, never offer or send them, refuse a WANT
//! naming one, and still reach "in sync" while plain bundles sync fully.

use std::time::Duration;

use crate::common::*;
use skywave_bundle::{BundleId, SignedManifest};
use skywave_proto::ReconState;
use skywave_proto::fuzzing;
use skywave_proto::wire::{self, Message, ty};

/// Inserts sealed bundle `n` (sealed to node 9, a node not in the test) into `peer`.
fn insert_sealed(p: &mut Peer, now: Duration, n: u64, size: usize) -> (SignedManifest, Vec<u8>) {
    let (m, payload) = fuzzing::sealed_bundle(n, 1, size, 9);
    p.store.insert(m.clone(), payload.clone());
    p.ep.bundle_stored(now, m.id(), &mut p.store);
    (m, payload)
}

/// Every frame `from` sent: no MANIFEST or PIECE of `sealed`, and none of its manifest's
/// or payload's bytes anywhere (fragments included).
fn assert_nothing_of(net: &Net, from: usize, sealed: &[(SignedManifest, Vec<u8>)]) {
    let ids: Vec<BundleId> = sealed.iter().map(|(m, _)| m.id()).collect();
    let mut frames = 0;
    for (_, _, bytes) in net.log.iter().filter(|(f, _, _)| *f == from) {
        frames += 1;
        let (_, msgs) = wire::parse(bytes).expect("an honest endpoint's frame parses");
        for msg in msgs {
            match msg {
                Message::Manifest { bytes: b, .. } => {
                    let m = SignedManifest::decode(b).expect("manifest decodes");
                    assert!(m.manifest().sealed.is_none(), "a sealed manifest was sent");
                    assert!(!ids.contains(&m.id()));
                }
                Message::Piece { r, .. } | Message::Fec { r, .. } => {
                    for id in &ids {
                        assert_ne!(r, wire::BundleRef::new(id, 1), "a sealed payload was sent");
                    }
                }
                _ => {}
            }
        }
        for (m, payload) in sealed {
            // The manifest's signature, and every 24-byte window of the payload at
            // 16-byte steps: none is in any frame.
            let sig = &m.as_bytes()[m.as_bytes().len() - 32..];
            assert!(!contains(bytes, sig), "sealed manifest bytes crossed");
            for w in payload.chunks(16).filter(|w| w.len() == 16) {
                assert!(!contains(bytes, w), "sealed payload bytes crossed");
            }
        }
    }
    assert!(
        frames > 3,
        "the sender sent almost nothing: {frames} frames"
    );
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn synced(net: &Net, i: usize) -> bool {
    let infos = net.peers[i].ep.peer_infos();
    !infos.is_empty() && infos.iter().all(|p| p.recon == ReconState::Synced)
}

#[test]
fn sealed_bundles_stay_off_a_withholding_link_while_plain_ones_sync() {
    let mut net = Net::new(2, 0);
    net.keep_log = true;
    let now = net.now;
    let a_plain: Vec<_> = (0..6)
        .map(|i| net.peers[0].insert(now, 10 + i, 1, 700))
        .collect();
    let b_plain: Vec<_> = (0..6)
        .map(|i| net.peers[1].insert(now, 30 + i, 1, 700))
        .collect();
    let mut sealed: Vec<_> = (0..3)
        .map(|i| insert_sealed(&mut net.peers[0], now, 50 + i, 900))
        .collect();
    // Link 0 on node 0's side withholds sealed bundles; node 1 does not (its side is
    // configured apart).
    net.peers[0].ep.withhold_sealed(0, true);
    net.connect(0, 1);
    assert!(
        net.run_until(Duration::from_secs(600), |n| {
            a_plain.iter().all(|id| n.peers[1].holds(id))
                && b_plain.iter().all(|id| n.peers[0].holds(id))
        }),
        "plain bundles did not sync: {:?}",
        net.peers[0].ep.describe_sessions()
    );
    // A sealed bundle written while the session runs is not offered either; a plain one
    // is.
    let now = net.now;
    sealed.push(insert_sealed(&mut net.peers[0], now, 60, 400));
    let late = net.peers[0].insert(now, 61, 1, 400);
    assert!(net.run_until(Duration::from_secs(300), |n| n.peers[1].holds(&late)));
    net.run_for(Duration::from_secs(120));
    // In sync, and it stays so: no reconciliation symbols nor lists go out any more.
    assert!(
        synced(&net, 0) && synced(&net, 1),
        "{:?}",
        net.peers[0].ep.describe_sessions()
    );
    let symbols = |n: &Net| {
        n.peers
            .iter()
            .map(|p| {
                let sent = &p.ep.stats().sent_by_type;
                sent[ty::SYMBOLS as usize] + sent[ty::IDS as usize]
            })
            .sum::<u64>()
    };
    let before = symbols(&net);
    net.run_for(Duration::from_secs(600));
    assert_eq!(symbols(&net), before, "reconciliation did not end");
    assert!(synced(&net, 0) && synced(&net, 1));
    assert_eq!(net.peers[0].ep.pending_transfers(), 0);
    for (m, _) in &sealed {
        assert!(!net.peers[1].holds(&m.id()));
    }
    assert_nothing_of(&net, 0, &sealed);

    // The peer names everything there is with one-byte prefixes: the sealed bundles are
    // refused and counted, nothing of them is sent.
    let prefixes: Vec<u64> = (0..=255).collect();
    let want = frame(1_000_000, |w| {
        assert!(w.want(1, &prefixes) > 0);
    });
    net.inject(0, 0, &want);
    net.run_for(Duration::from_secs(120));
    assert!(
        net.peers[0].ep.stats().withheld_wants_refused >= sealed.len() as u64,
        "{:?}",
        net.peers[0].ep.stats()
    );
    assert_nothing_of(&net, 0, &sealed);
}

#[test]
fn a_sealed_bundle_offered_on_a_withholding_link_is_not_taken_and_sync_ends() {
    // Node 1's side does not withhold; node 0's does: node 1 offers its sealed bundle,
    // node 0 answers it as held (so the offer stops) and counts it. Node 0 also holds a
    // sealed bundle of its own, and a copy of node 1's: neither crosses from it.
    let mut net = Net::new(2, 0);
    net.keep_log = true;
    let now = net.now;
    let shared = insert_sealed(&mut net.peers[1], now, 70, 600);
    let a = &mut net.peers[0];
    a.store.insert(shared.0.clone(), shared.1.clone());
    a.ep.bundle_stored(now, shared.0.id(), &mut a.store);
    let only_b = insert_sealed(&mut net.peers[1], now, 71, 600);
    let only_a = insert_sealed(&mut net.peers[0], now, 72, 600);
    let a_plain = net.peers[0].insert(now, 80, 1, 500);
    let b_plain = net.peers[1].insert(now, 81, 1, 500);
    net.peers[0].ep.withhold_sealed(0, true);
    net.connect(0, 1);
    assert!(net.run_until(Duration::from_secs(600), |n| {
        n.peers[1].holds(&a_plain) && n.peers[0].holds(&b_plain)
    }));
    net.run_for(Duration::from_secs(300));
    assert!(
        synced(&net, 0) && synced(&net, 1),
        "{:?}",
        net.peers[0].ep.describe_sessions()
    );
    assert_eq!(
        net.peers[1].ep.pending_transfers(),
        0,
        "the offers never stopped"
    );
    assert!(!net.peers[0].holds(&only_b.0.id()));
    assert!(!net.peers[1].holds(&only_a.0.id()));
    assert!(net.peers[0].ep.stats().withheld_offers_refused >= 1);
    assert_nothing_of(&net, 0, &[shared, only_a]);
}

#[test]
fn other_links_still_carry_sealed_bundles() {
    // Node 0 withholds on link 0 (to node 1) only: node 2, on link 1, gets the sealed
    // bundle; node 1 does not.
    let mut net = Net::new(3, 0);
    let now = net.now;
    let (m, _) = insert_sealed(&mut net.peers[0], now, 90, 800);
    net.peers[0].ep.withhold_sealed(0, true);
    net.connect(0, 1);
    net.connect(0, 2);
    assert!(net.run_until(Duration::from_secs(600), |n| n.peers[2].holds(&m.id())));
    net.run_for(Duration::from_secs(120));
    assert!(!net.peers[1].holds(&m.id()));
}
