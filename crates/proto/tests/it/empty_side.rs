//! A session in which one side holds nothing: when that side is the one that streams the
//! reconciliation symbols, none are sent (they would describe nothing; the other side
//! pushes its whole set), on a shared channel as on any link.

use std::time::Duration;

use crate::common::{Net, RadioPair, shared_radio};
use skywave_proto::wire;

/// Node `holder` (0 or 1) holds 20 small bundles, the other none, on one shared channel
/// that delivers at once. Returns the SYMBOLS bytes each side sent, whether the other
/// side holds all 20 after 60 s, and whether the empty side was the streamer (the
/// smaller key streams).
fn session(holder: usize) -> ([u64; 2], bool, bool) {
    let mut pair = RadioPair::new(shared_radio(223, 0.0), (11, 22));
    let ids: Vec<_> = (0..20).map(|k| pair.insert(holder, 700 + k, 100)).collect();
    pair.run(Duration::from_secs(60), |_, _, _| true);
    let symbols = [0, 1].map(|i| pair.eps[i].stats().sent_by_type[wire::ty::SYMBOLS as usize]);
    let synced = ids
        .iter()
        .all(|id| pair.stores[1 - holder].held.contains_key(id));
    let empty_streams = pair.eps[1 - holder].node_key() < pair.eps[holder].node_key();
    (symbols, synced, empty_streams)
}

#[test]
fn an_empty_streamer_sends_no_symbols_and_everything_arrives() {
    let mut empty_streamed = 0;
    for holder in [0, 1] {
        let (symbols, synced, empty_streams) = session(holder);
        assert!(synced, "holder {holder}: not synced");
        if empty_streams {
            empty_streamed += 1;
            assert_eq!(symbols, [0, 0], "holder {holder}: SYMBOLS bytes sent");
        }
    }
    assert_eq!(
        empty_streamed, 1,
        "one of the two runs has the empty side stream"
    );
}

/// A whole set many times the queueing chunk (1,024) for a peer that holds nothing:
/// it is queued a chunk per turn, never all in the call that opens the session (a
/// million store lookups held a daemon's loop, API and SIGTERM for 19 s), and all of
/// it arrives. Counted as store lookups per step of the network (a step is a round of
/// arrivals, sends and timers, so at most two chunks and the odd lookup besides).
#[test]
fn a_whole_set_for_an_empty_peer_is_queued_a_chunk_at_a_time_and_all_arrives() {
    let mut net = Net::new(2, 0);
    let n = 3 * 1024 + 100;
    let ids: Vec<_> = (0..n)
        .map(|k| net.peers[0].insert(Duration::ZERO, 50_000 + k, 1, 40))
        .collect();
    net.connect(0, 1);
    let (mut last, mut most) = (net.peers[0].store.manifest_lookups, 0);
    let done = net.run_until(Duration::from_secs(300), |net| {
        let l = net.peers[0].store.manifest_lookups;
        most = most.max(l - last);
        last = l;
        ids.iter().all(|id| net.peers[1].holds(id))
    });
    assert!(
        done,
        "B holds {} of {n}",
        ids.iter().filter(|id| net.peers[1].holds(id)).count()
    );
    assert!(
        most <= 2 * 1024 + 64,
        "{most} manifests looked up in one step (the whole set is {n})"
    );
}
