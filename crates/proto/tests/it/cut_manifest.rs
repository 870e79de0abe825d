//! A manifest too large for one frame goes as fragments, which on a busy shared channel
//! can be spread over several overs. Its resend timer runs from its last fragment, when
//! the manifest has left whole: timed from the first, a manifest begun at the end of one
//! over went again right after its last fragment in the next, before the peer could
//! answer.

use crate::common;

use std::collections::VecDeque;
use std::time::Duration;

use crate::common::shared_radio;
use skywave_proto::wire::{self, Message};
use skywave_proto::{Config, Endpoint, LinkParams, MemStore, fuzzing};

/// A holds three bundles, B none; 48 B frames, so each manifest takes several. A sends
/// in overs of `per_over` frames 50 ms apart, one every `every` (the channel is others'
/// in between); B's frames reach A 1.5 s after B sends them. Nothing is lost. Returns
/// the manifests A sent again, the first fragments of manifests A sent, and how many
/// bundles B ends up holding.
fn run(per_over: u32, every: Duration) -> (u64, usize, usize) {
    let params = LinkParams {
        rtt_hint: Duration::from_secs(1),
        ..shared_radio(48, 0.0)
    };
    let b_delay = Duration::from_millis(1500);
    let mut eps = [
        Endpoint::new(Config::default(), fuzzing::node_key(1), 11),
        Endpoint::new(Config::default(), fuzzing::node_key(2), 22),
    ];
    let mut stores = [MemStore::new(), MemStore::new()];
    for ep in &mut eps {
        ep.link_up(Duration::ZERO, 0, params);
    }
    let ids: Vec<_> = (0..3)
        .map(|k| {
            let (m, payload) = fuzzing::bundle(500 + k, 1, 40);
            let id = m.id();
            stores[0].insert(m, payload);
            eps[0].bundle_stored(Duration::ZERO, id, &mut stores[0]);
            id
        })
        .collect();
    let held = |s: &MemStore| ids.iter().filter(|id| s.held.contains_key(*id)).count();

    let mut to_a: VecDeque<(Duration, Vec<u8>)> = VecDeque::new();
    let mut first_fragments = 0;
    let mut now = Duration::ZERO;
    // A's next turn to send, and its place in the over.
    let (mut a_next, mut slot) = (Duration::ZERO, 0);
    let end = Duration::from_secs(1200);
    while now < end && held(&stores[1]) < ids.len() {
        let [a, b] = &mut eps;
        let [sa, sb] = &mut stores;
        while to_a.front().is_some_and(|(t, _)| *t <= now) {
            let (_, f) = to_a.pop_front().unwrap();
            a.handle_frame(now, 0, &f, sa);
        }
        if now >= a_next {
            if let Some(f) = a.poll_transmit(now, 0, params.mtu, sa) {
                let (_, msgs) = wire::parse(&f).unwrap();
                // A fragment's data starts with its message's type: a manifest, numbered
                // (OFFER) or not.
                first_fragments += msgs
                    .iter()
                    .filter(|m| {
                        matches!(m, Message::Frag { offset: 0, data, .. }
                            if [wire::ty::MANIFEST, wire::ty::OFFER].contains(&data[0]))
                    })
                    .count();
                b.handle_frame(now, 0, &f, sb);
            }
            slot += 1;
            a_next = if slot < per_over {
                now + Duration::from_millis(50)
            } else {
                slot = 0;
                now + every
            };
        }
        while let Some(f) = b.poll_transmit(now, 0, params.mtu, sb) {
            to_a.push_back((now + b_delay, f));
        }
        let next = eps
            .iter()
            .filter_map(|e| e.poll_timeout())
            .chain([a_next].into_iter().filter(|&t| t > now))
            .chain(to_a.front().map(|(t, _)| *t))
            .min()
            .unwrap_or(now + Duration::from_secs(1))
            .max(now + Duration::from_millis(1));
        now = next.min(end);
        for ep in &mut eps {
            ep.handle_timeout(now);
        }
    }
    (
        eps[0].stats().manifests_resent,
        first_fragments,
        held(&stores[1]),
    )
}

#[test]
fn a_manifest_sent_in_fragments_is_timed_from_its_last_one() {
    // Overs of 2-5 frames cut the manifests at different places.
    for per_over in 2..=5 {
        let (resent, firsts, held) = run(per_over, Duration::from_secs(10));
        assert_eq!(held, 3, "{per_over} frames an over: B holds {held} of 3");
        assert_eq!(
            (resent, firsts),
            (0, 3),
            "{per_over} frames an over: A sent manifests again though nothing was lost"
        );
    }
}

#[test]
fn a_manifest_goes_whatever_the_frame_budget() {
    // Every budget around a manifest's size (about 130 B): one that fits a plain
    // MANIFEST but not the same manifest numbered (OFFER, a byte or two longer) must
    // cut it into fragments, not wait for a frame that will never be larger (HF cells
    // at 15% loss, whose frames settle at 136 B, stalled for hours).
    for mtu in 120..=170 {
        let mut pair = common::RadioPair::new(shared_radio(mtu, 0.0), (11, 22));
        let ids: Vec<_> = (0..3).map(|k| pair.insert(0, 600 + k, 60)).collect();
        pair.run(Duration::from_secs(120), |_, _, _| true);
        let held = ids
            .iter()
            .filter(|id| pair.stores[1].held.contains_key(*id))
            .count();
        assert_eq!(held, 3, "{mtu} B frames: B holds {held} of 3");
    }
}
