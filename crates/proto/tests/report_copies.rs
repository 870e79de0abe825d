//! Shared channels: a receiver's "I hold it all" (`HAVE_ALL`) rides a second time in a
//! later frame only while frames to the sender are expected to be lost; on a clean
//! channel the copy is airtime for nothing.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{RadioPair, shared_radio};
use skywave_proto::wire::{self, Message};

/// A holds 20 bundles of 100 B, B none, on a channel that loses nothing but whose
/// driver expects `loss_hint`: how many bundles B said it holds, and how many times it
/// said so in all.
fn reports(loss_hint: f64) -> (usize, usize) {
    let mut pair = RadioPair::new(shared_radio(223, loss_hint), (11, 22));
    let ids: Vec<_> = (0..20).map(|k| pair.insert(0, 700 + k, 100)).collect();
    let mut said: HashMap<[u8; 8], usize> = HashMap::new();
    pair.run(Duration::from_secs(60), |side, _, f| {
        if side == 1 {
            let (_, msgs) = wire::parse(f).expect("well formed");
            for m in msgs {
                if let Message::HaveAll { r } = m {
                    *said.entry(r.prefix).or_default() += 1;
                }
            }
        }
        true
    });
    let held = ids
        .iter()
        .filter(|id| pair.stores[1].held.contains_key(*id))
        .count();
    assert_eq!(held, 20, "loss hint {loss_hint}: sync did not finish");
    (said.len(), said.values().sum())
}

#[test]
fn reports_are_copied_only_where_frames_are_expected_to_be_lost() {
    let (bundles, said) = reports(0.0);
    assert_eq!(bundles, 20);
    assert_eq!(said, 20, "a clean channel: each said once");
    let (bundles, said) = reports(0.1);
    assert_eq!(bundles, 20);
    assert!(said >= 30, "10% expected lost: copies ride ({said} for 20)");
}
