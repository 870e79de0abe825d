//! A peer whose offers the application paused (its hourly budget spent) gets none of its
//! new transfers taken; once resumed, they arrive.

use std::time::Duration;

use crate::common::*;
use skywave_proto::fuzzing;

#[test]
fn offers_from_a_paused_peer_wait_until_it_is_resumed() {
    let mut net = Net::new(2, 0);
    let now = net.now;
    let ids: Vec<_> = (0..10)
        .map(|i| net.peers[1].insert(now, 50 + i, 1, 400))
        .collect();
    net.peers[0]
        .ep
        .pause_offers_from(fuzzing::node_key(2), true);
    net.connect(0, 1);
    net.run_for(Duration::from_secs(120));
    assert!(
        ids.iter().all(|id| !net.peers[0].holds(id)),
        "taken while paused"
    );
    assert!(net.peers[0].ep.stats().paused_offers > 0);
    net.peers[0]
        .ep
        .pause_offers_from(fuzzing::node_key(2), false);
    assert!(
        net.run_until(Duration::from_secs(600), |n| ids
            .iter()
            .all(|id| n.peers[0].holds(id))),
        "not taken after resuming"
    );
}
