//! Bundles that leave a store (expired, evicted) leave the endpoint too: their transfers
//! stop and they drop out of the set each session reconciles.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use crate::common::*;
use skywave_proto::{Config, Endpoint, FecMode, fuzzing};

#[test]
fn a_bundle_removed_while_it_is_sent_stops_its_transfer() {
    let mut net = Net::new(2, 0);
    let now = net.now;
    let big = net.peers[0].insert(now, 1, 1, 200_000);
    net.connect(0, 1);
    assert!(
        net.run_until(Duration::from_secs(120), |n| n.peers[1]
            .store
            .partial
            .get(&big)
            .is_some_and(|(_, _, r)| !r.is_empty())),
        "the transfer never began"
    );
    let p = &mut net.peers[0];
    p.store.held.remove(&big);
    p.ep.bundles_removed(&[big], &mut p.store);
    // Nothing is left to send of it (before: read 0 bytes forever, never finished).
    assert_eq!(net.peers[0].ep.pending_transfers(), 0);
    // And sync goes on: a bundle written afterwards arrives.
    let now = net.now;
    let next = net.peers[0].insert(now, 2, 1, 500);
    assert!(
        net.run_until(Duration::from_secs(120), |n| n.peers[1].holds(&next)),
        "a later bundle did not arrive"
    );
    net.run_for(Duration::from_secs(30));
    assert_eq!(
        net.peers[0].ep.pending_transfers(),
        0,
        "{:?}",
        net.peers[0].ep.describe_sessions()
    );
    assert!(!net.peers[1].holds(&big));
}

#[test]
fn a_bundle_removed_on_both_sides_is_not_asked_for_again() {
    let mut net = Net::new(2, 0);
    let now = net.now;
    let ids: Vec<_> = (0..20)
        .map(|i| net.peers[0].insert(now, 10 + i, 1, 300))
        .collect();
    net.connect(0, 1);
    assert!(net.run_until(Duration::from_secs(300), |n| {
        ids.iter().all(|id| n.peers[1].holds(id))
    }));
    // Both expire five of them at the same moment.
    let gone = &ids[..5];
    for p in &mut net.peers {
        for id in gone {
            p.store.held.remove(id);
        }
        p.ep.bundles_removed(gone, &mut p.store);
    }
    // Then a new bundle on each side: the next reconciliations find exactly those.
    let now = net.now;
    let a = net.peers[0].insert(now, 100, 1, 300);
    let b = net.peers[1].insert(now, 101, 1, 300);
    assert!(
        net.run_until(Duration::from_secs(300), |n| n.peers[0].holds(&b)
            && n.peers[1].holds(&a))
    );
    net.run_for(Duration::from_secs(120));
    for p in &net.peers {
        assert_eq!(p.ep.pending_transfers(), 0);
        for id in gone {
            assert!(!p.holds(id));
        }
    }
}

#[test]
fn a_received_bundle_whose_commit_is_rolled_back_is_not_reported_and_is_fetched_again() {
    // Every kind of link: paced IP, serial, a shared radio channel, half-duplex HF.
    // A bundle in one piece and one in many, and one sent by FEC symbols.
    for profile in 0..4 {
        for size in [300, 20_000] {
            rolled_back_and_fetched_again(profile, size, FecMode::Off);
        }
        rolled_back_and_fetched_again(profile, 20_000, FecMode::Always);
    }
}

fn rolled_back_and_fetched_again(profile: u8, size: usize, fec: FecMode) {
    let mut net = Net::new(2, profile);
    for (i, p) in net.peers.iter_mut().enumerate() {
        let k = i as u64 + 1;
        let cfg = Config {
            fec,
            ..Config::default()
        };
        p.ep = Endpoint::new(cfg, fuzzing::node_key(k), 0xabc0 + k);
    }
    let now = net.now;
    let id = net.peers[0].insert(now, 1, 1, size);
    net.peers[1].defer_events = true;
    // The daemon's batch holding it fails to commit: after the frames that completed it
    // are handled, and before anything is sent, the store no longer has it and the
    // endpoint is told; then events are taken.
    let rolled_back = Rc::new(Cell::new(false));
    let flag = rolled_back.clone();
    net.after_arrivals = Some(Box::new(move |i, p| {
        if i != 1 {
            return;
        }
        if !flag.get() && p.holds(&id) {
            p.store.held.remove(&id);
            p.ep.bundles_lost(&[id], &mut p.store);
            flag.set(true);
            assert_eq!(p.received.get(&(id, 1)), None);
        }
        p.collect();
    }));
    net.connect(0, 1);
    assert!(net.run_until(Duration::from_secs(120), |_| rolled_back.get()));
    assert_eq!(
        net.peers[1].received.get(&(id, 1)),
        None,
        "profile {profile}, {size} B, {fec:?}: a bundle rolled back was reported received"
    );
    // It is not lost: the session fetches it again.
    assert!(
        net.run_until(Duration::from_secs(300), |n| n.peers[1].holds(&id)),
        "profile {profile}, {size} B, {fec:?}: the rolled-back bundle was not fetched again"
    );
    net.run_for(Duration::from_secs(10));
    assert_eq!(
        net.peers[1].received.get(&(id, 1)),
        Some(&1),
        "profile {profile}, {size} B, {fec:?}"
    );
    if fec == FecMode::Always {
        assert!(
            net.peers[0].ep.stats().fec_transfers > 0,
            "profile {profile}: not sent by FEC"
        );
    }
}
