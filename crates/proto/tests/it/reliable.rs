//! Links that deliver every frame while they are up (TCP, an ARQ modem session): the
//! answers may come minutes late (an ARQ modem sends them only when the peer has the
//! turn), and nothing is sent again for that; a link that goes down loses what was in
//! flight, and that goes again when it is back.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use crate::common::*;

/// A point-to-point link without acks whose answers from peer 1 to peer 0 are held and
/// handed over every `turn`, one after another, as an ARQ modem keeps the receiver's
/// bytes until it has the turn. Returns the run's end time and peer 0's resend counters.
fn run_with_turns(reliable: bool, turn: Duration) -> (Duration, u64, u64, u64) {
    let mut net = Net::new(2, 1);
    net.profile.params.reliable = reliable;
    let now = net.now;
    let ids: Vec<_> = [20_000, 300, 5_000]
        .iter()
        .enumerate()
        .map(|(i, &size)| net.peers[0].insert(now, 10 + i as u64, 1, size))
        .collect();
    let held: Rc<RefCell<Vec<Vec<u8>>>> = Rc::default();
    let h = held.clone();
    net.hook = Box::new(move |from, _, f| {
        if from == 1 {
            h.borrow_mut().push(f);
            Vec::new()
        } else {
            vec![f]
        }
    });
    let link = net.connect(0, 1);
    let done = |n: &Net| ids.iter().all(|id| n.peers[1].holds(id));
    let mut complete = false;
    // (Peer 1's HELLO too waits for the first turn: the session begins there.)
    for _ in 0..60 {
        if net.run_until(turn, done) {
            complete = true;
            break;
        }
        // The peer's turn: its answers arrive one after another, as its modem sends them.
        let answers: Vec<Vec<u8>> = held.borrow_mut().drain(..).collect();
        for f in answers {
            net.inject(0, link, &f);
            net.run_for(Duration::from_millis(50));
        }
    }
    assert!(
        complete,
        "not synced in 60 turns of {turn:?}: {:?}",
        net.peers[0].ep.describe_sessions()
    );
    let s = net.peers[0].ep.stats();
    (
        net.now,
        s.piece_bytes_resent,
        s.manifests_resent,
        s.resend_timeouts,
    )
}

#[test]
fn answers_a_turn_late_are_waited_for_on_a_reliable_link() {
    for turn in [Duration::from_secs(10), Duration::from_secs(60)] {
        let (at, resent, manifests, timeouts) = run_with_turns(true, turn);
        assert_eq!(
            (resent, manifests, timeouts),
            (0, 0, 0),
            "turn {turn:?}: resent on a link that loses nothing"
        );
        // Sent in the first turn, confirmed in the next ones.
        assert!(at <= turn * 4, "turn {turn:?}: synced only at {at:?}");
        // The same link taken for one that may lose frames times out and resends: what
        // the flag spares.
        let (_, resent, _, timeouts) = run_with_turns(false, turn);
        assert!(
            resent > 0 && timeouts > 0,
            "turn {turn:?}: a lossy link's timers never fired ({resent} B, {timeouts})"
        );
    }
}

#[test]
fn what_was_in_flight_when_a_reliable_link_went_down_goes_again_when_it_is_back() {
    let mut net = Net::new(2, 1);
    net.profile.params.reliable = true;
    let now = net.now;
    let big = net.peers[0].insert(now, 1, 1, 30_000);
    let link = net.connect(0, 1);
    assert!(
        net.run_until(Duration::from_secs(60), |n| n.peers[1]
            .store
            .partial
            .get(&big)
            .is_some_and(|(_, _, r)| !r.is_empty())),
        "the transfer never began"
    );
    // Down with frames on the way (they are lost), and up again a minute later.
    net.set_up(link, false);
    net.run_for(Duration::from_secs(60));
    net.set_up(link, true);
    assert!(
        net.run_until(Duration::from_secs(120), |n| n.peers[1].holds(&big)),
        "not delivered after the link came back: {:?}",
        net.peers[0].ep.describe_sessions()
    );
    assert_eq!(net.peers[0].ep.stats().resend_timeouts, 0);
}
