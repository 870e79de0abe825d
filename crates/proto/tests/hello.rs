//! What greeting a peer costs: each side's set sketch crosses once per session, and a
//! session whose sketch was lost still reconciles without a burst sized for disjoint
//! sets.

mod common;

use std::time::Duration;

use common::*;
use skywave_proto::wire::{self, Message};

/// Peers 0 and 1 sharing `shared` bundles, each with `unique` of its own.
fn overlapping(profile: u8, shared: u64, unique: u64) -> Net {
    let mut net = Net::new(2, profile);
    let now = net.now;
    for n in 0..shared {
        for p in 0..2 {
            net.peers[p].insert(now, n, 1, 40);
        }
    }
    for n in 0..unique {
        net.peers[0].insert(now, 10_000 + n, 1, 40);
        net.peers[1].insert(now, 20_000 + n, 1, 40);
    }
    net.keep_log = true;
    net
}

fn synced(n: &Net, total: usize) -> bool {
    n.peers.iter().all(|p| p.store.held.len() == total)
}

/// HELLOs `from` sent: (carried a sketch, flags).
fn hellos(net: &Net, from: usize) -> Vec<(bool, u8)> {
    let mut out = Vec::new();
    for (f, _, bytes) in &net.log {
        if *f != from {
            continue;
        }
        let Ok((_, msgs)) = wire::parse(bytes) else {
            continue;
        };
        for m in msgs {
            if let Message::Hello { sketch, flags, .. } = m {
                out.push((!sketch.is_empty(), flags));
            }
        }
    }
    out
}

/// Symbol bytes `from` sent.
fn symbol_bytes(net: &Net, from: usize) -> usize {
    net.log
        .iter()
        .filter(|(f, _, _)| *f == from)
        .flat_map(|(_, _, b)| wire::message_sizes(b))
        .filter(|(t, _)| *t == wire::ty::SYMBOLS)
        .map(|(_, n)| n)
        .sum()
}

#[test]
fn crossing_hellos_are_answered_without_a_second_sketch() {
    // An IP path and a half-duplex modem: both greet at once, so the HELLOs cross.
    for profile in [0, 3] {
        let mut net = overlapping(profile, 300, 20);
        net.connect(0, 1);
        assert!(
            net.run_until(Duration::from_secs(600), |n| synced(n, 340)),
            "profile {profile}: not synced"
        );
        for p in 0..2 {
            let h = hellos(&net, p);
            let sketches = h.iter().filter(|(s, _)| *s).count();
            // Before: the answer carried the sketch again (two per side).
            assert_eq!(sketches, 1, "profile {profile}, peer {p}: {h:?}");
            assert!(
                h.len() >= 2,
                "profile {profile}, peer {p}: no answer: {h:?}"
            );
        }
    }
}

#[test]
fn a_session_whose_sketch_was_lost_reconciles_with_a_small_first_burst() {
    for profile in [0, 3] {
        let mut net = overlapping(profile, 300, 20);
        // Peer 0's first HELLO (its sketch) is lost; its answer to peer 1 goes bare.
        let mut dropped = false;
        net.hook = Box::new(move |from, _, f| {
            if from == 0 && !dropped && has_type(&f, wire::ty::HELLO) {
                dropped = true;
                return Vec::new();
            }
            vec![f]
        });
        net.connect(0, 1);
        assert!(
            net.run_until(Duration::from_secs(600), |n| synced(n, 340)),
            "profile {profile}: not synced"
        );
        let bare_answer = hellos(&net, 0)
            .iter()
            .any(|(s, flags)| !s && flags & 4 != 0);
        assert!(bare_answer, "profile {profile}: {:?}", hellos(&net, 0));
        // A difference of 40 takes about 55 symbols of 9 B. A burst sized from the set
        // sizes alone (disjoint sets of 320) would be ten times that.
        let symbols = symbol_bytes(&net, 0) + symbol_bytes(&net, 1);
        assert!(
            symbols < 9 * 160,
            "profile {profile}: {symbols} B of symbols"
        );
    }
}
