//! A manifest cut into fragments is lost with any one of them. On a link that loses
//! enough frames, its fragments are followed by their parity (FRAG_PARITY), and a
//! receiver missing exactly one fragment rebuilds the manifest without it being sent
//! again; on a clean link no parity goes.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use crate::common::{self, shared_radio};
use skywave_proto::wire::{self, Message};

/// Runs `pair` for a minute. Of A's messages cut into fragments whose type is one of
/// `types` (a fragment's data starts with its message's type), the first `limit` lose
/// their second fragment; nothing else is lost. Returns how many such messages A sent
/// and the parities it sent after them.
fn second_fragment_lost(
    pair: &mut common::RadioPair,
    types: &[u8],
    limit: usize,
) -> (usize, usize) {
    // Per message of those types: fragments seen.
    let mut fragments: HashMap<u64, u32> = HashMap::new();
    let mut dropped: BTreeSet<u64> = BTreeSet::new();
    let (mut sent, mut parities) = (0, 0);
    // The message whose fragment ended A's frame before (a FRAG_NEXT goes on with it).
    let mut ended: Option<u64> = None;
    pair.run(Duration::from_secs(60), |side, _, f| {
        if side != 0 {
            return true;
        }
        let (_, msgs) = wire::parse(f).expect("A's frames parse");
        let mut keep = true;
        let last = ended.take();
        for (i, m) in msgs.iter().enumerate() {
            let frag = match m {
                Message::Frag {
                    id, offset, data, ..
                } => {
                    if *offset == 0 && types.contains(&data[0]) {
                        fragments.insert(*id, 0);
                        sent += 1;
                    }
                    Some(*id)
                }
                Message::FragNext { .. } if i == 0 => last,
                _ => None,
            };
            if i + 1 == msgs.len() {
                ended = frag;
            }
            match (m, frag) {
                (Message::Frag { .. } | Message::FragNext { .. }, Some(id)) => {
                    let id = &id;
                    let Some(n) = fragments.get_mut(id) else {
                        continue;
                    };
                    *n += 1;
                    if *n == 2 && (dropped.contains(id) || dropped.len() < limit) {
                        dropped.insert(*id);
                        keep = false;
                    }
                }
                (Message::FragParity { id, .. }, _) if fragments.contains_key(id) => parities += 1,
                _ => {}
            }
        }
        keep
    });
    (sent, parities)
}

/// A holds three bundles, B none, on a 48 B shared radio whose expected loss is
/// `loss_hint`; the first three manifests lose their second fragment. Returns the
/// manifests A sent, the parities it sent after them and how many bundles B holds.
fn run(loss_hint: f64) -> (usize, usize, usize) {
    let mut pair = common::RadioPair::new(shared_radio(48, loss_hint), (11, 22));
    let ids: Vec<_> = (0..3).map(|k| pair.insert(0, 700 + k, 60)).collect();
    let (sent, parities) =
        second_fragment_lost(&mut pair, &[wire::ty::MANIFEST, wire::ty::OFFER], 3);
    let held = ids
        .iter()
        .filter(|id| pair.stores[1].held.contains_key(*id))
        .count();
    assert_eq!(
        pair.eps[1].stats().fragments_rebuilt,
        if loss_hint > 0.0 { 3 } else { 0 },
        "messages B rebuilt"
    );
    (sent, parities, held)
}

#[test]
fn a_lost_fragment_is_rebuilt_from_the_parity_where_the_link_loses_frames() {
    let (sent, parities, held) = run(0.1);
    assert_eq!(held, 3, "B holds {held} of 3");
    assert!(parities >= 3, "a parity follows each manifest: {parities}");
    assert_eq!(
        sent, 3,
        "a manifest missing one fragment was sent again: B should have rebuilt it"
    );
}

#[test]
fn a_clean_link_sends_no_parity_and_a_lost_fragment_costs_the_manifest() {
    let (sent, parities, held) = run(0.0);
    assert_eq!(held, 3, "B holds {held} of 3");
    assert_eq!(parities, 0, "a parity on a link that loses nothing");
    assert!(
        sent >= 6,
        "each manifest missing a fragment goes again: {sent} sent"
    );
}

/// A's HELLOs (too large for 48 B frames) all lose their second fragment. Returns
/// whether B has a session with A after a minute, and the parities A sent.
fn greet(loss_hint: f64) -> (bool, usize) {
    let mut pair = common::RadioPair::new(shared_radio(48, loss_hint), (11, 22));
    pair.insert(0, 750, 60);
    let (_, parities) = second_fragment_lost(&mut pair, &[wire::ty::HELLO], usize::MAX);
    let a = *pair.eps[0].node_key();
    (pair.eps[1].peers().any(|k| *k == a), parities)
}

#[test]
fn a_greeting_missing_a_fragment_is_rebuilt_where_the_link_loses_frames() {
    let (met, parities) = greet(0.1);
    assert!(parities > 0, "no parity after a HELLO's fragments");
    assert!(met, "B never rebuilt A's HELLO");
    let (met, parities) = greet(0.0);
    assert_eq!(parities, 0);
    assert!(
        !met,
        "B met A with every HELLO of A's missing a fragment and no parity"
    );
}
