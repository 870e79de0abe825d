//! Shared channels: a receiver's "I hold it all" (`HAVE_ALL`) rides a second time in a
//! later frame unless the channel has shown itself clean: no loss expected by the
//! driver, and none found in data the receiver sent that peer. A hint of 0 may only mean
//! the driver does not know, so a receiver that sends nothing keeps its copies.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{RadioPair, shared_radio};
use skywave_proto::wire::{self, Message};

/// A holds 30 bundles of 200 B, and B `b_holds` of its own, on a channel that loses
/// nothing but whose driver expects `loss_hint`: how many times B said it holds one of
/// A's 30 bundles, in all.
fn reports(loss_hint: f64, b_holds: u64) -> usize {
    let mut pair = RadioPair::new(shared_radio(223, loss_hint), (11, 22));
    let mut ids: Vec<_> = (0..30).map(|k| pair.insert(0, 700 + k, 200)).collect();
    ids.extend((0..b_holds).map(|k| pair.insert(1, 900 + k, 200)));
    let ours: Vec<[u8; 8]> = ids[..30]
        .iter()
        .map(|id| id.as_bytes()[..8].try_into().expect("8 bytes"))
        .collect();
    let mut said: HashMap<[u8; 8], usize> = HashMap::new();
    pair.run(Duration::from_secs(120), |side, _, f| {
        if side == 1 {
            let (_, msgs) = wire::parse(f).expect("well formed");
            for m in msgs {
                if let Message::HaveAll { r } = m
                    && ours.contains(&r.prefix)
                {
                    *said.entry(r.prefix).or_default() += 1;
                }
            }
        }
        true
    });
    for (i, id) in ids.iter().enumerate() {
        let at = usize::from(i < 30);
        assert!(
            pair.stores[at].held.contains_key(id),
            "hint {loss_hint}, B holds {b_holds}: sync did not finish"
        );
    }
    assert_eq!(said.len(), 30, "hint {loss_hint}, B holds {b_holds}");
    said.values().sum()
}

#[test]
fn reports_are_copied_until_the_channel_shows_itself_clean() {
    // Both send: once B's own data has gone through clean (4 KiB, two thirds of it),
    // its copies stop.
    let clean = reports(0.0, 30);
    assert!(clean < 60, "copies kept on a clean channel: {clean} for 30");
    // B sends nothing: nothing tells it the channel is clean, so every copy rides.
    assert_eq!(
        reports(0.0, 0),
        60,
        "a receiver that sends nothing keeps its copies"
    );
    // The driver expects loss: every copy rides.
    assert_eq!(reports(0.1, 30), 60);
}
