//! A session in which one side holds nothing: when that side is the one that streams the
//! reconciliation symbols, none are sent (they would describe nothing; the other side
//! pushes its whole set), on a shared channel as on any link.

use std::time::Duration;

use skywave_proto::fuzzing;
use skywave_proto::wire;
use skywave_proto::{Config, Endpoint, LinkParams, MemStore};

/// Node `holder` (0 or 1) holds 20 small bundles, the other none, on one shared channel
/// that delivers at once. Returns the SYMBOLS bytes each side sent, whether the other
/// side holds all 20 after 60 s, and whether the empty side was the streamer (the
/// smaller key streams).
fn session(holder: usize) -> ([u64; 2], bool, bool) {
    let params = LinkParams {
        mtu: 223,
        shared: true,
        paced: false,
        half_duplex: false,
        rate_bps: Some(9600),
        rtt_hint: Duration::from_millis(300),
        loss_hint: 0.0,
        discover_mtu: false,
        frame_overhead: 0,
        handoff: Duration::ZERO,
        duty: None,
        reliable: false,
        turns: None,
    };
    let mut eps = [
        Endpoint::new(Config::default(), fuzzing::node_key(1), 11),
        Endpoint::new(Config::default(), fuzzing::node_key(2), 22),
    ];
    let mut stores = [MemStore::new(), MemStore::new()];
    let mut ids = Vec::new();
    for k in 0..20 {
        let (m, payload) = fuzzing::bundle(700 + k, 1, 100);
        ids.push(m.id());
        let id = m.id();
        stores[holder].insert(m, payload);
        eps[holder].bundle_stored(Duration::ZERO, id, &mut stores[holder]);
    }
    for ep in &mut eps {
        ep.link_up(Duration::ZERO, 0, params);
    }
    let mut now = Duration::ZERO;
    let end = Duration::from_secs(60);
    while now < end {
        for i in 0..2 {
            let (a, b) = eps.split_at_mut(1);
            let (me, other) = if i == 0 {
                (&mut a[0], &mut b[0])
            } else {
                (&mut b[0], &mut a[0])
            };
            let (sa, sb) = stores.split_at_mut(1);
            let (mine, theirs) = if i == 0 {
                (&mut sa[0], &mut sb[0])
            } else {
                (&mut sb[0], &mut sa[0])
            };
            while let Some(f) = me.poll_transmit(now, 0, 223, mine) {
                other.handle_frame(now, 0, &f, theirs);
            }
        }
        let next = eps
            .iter()
            .filter_map(|e| e.poll_timeout())
            .min()
            .unwrap_or(now + Duration::from_secs(1))
            .max(now + Duration::from_millis(1));
        now = next.min(end);
        for ep in &mut eps {
            ep.handle_timeout(now);
        }
    }
    let symbols = [0, 1].map(|i| eps[i].stats().sent_by_type[wire::ty::SYMBOLS as usize]);
    let synced = ids
        .iter()
        .all(|id| stores[1 - holder].held.contains_key(id));
    let empty_streams = eps[1 - holder].node_key() < eps[holder].node_key();
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
