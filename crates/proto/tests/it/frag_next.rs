//! On a shared channel a message cut into fragments goes on, in the frame right after
//! the one its fragment ended, as a FRAG_NEXT that does not name it again; a FRAG_NEXT
//! whose frame before was lost is dropped, counted, and the message sent again.

use std::time::Duration;

use crate::common::{self, shared_radio};
use skywave_proto::wire::{self, Message};

/// What A sent on a 48 B radio whose expected loss is `loss_hint`, holding `n` bundles
/// B lacks, with A's frames numbered in `lose` dropped: (pn, messages) of each of A's
/// frames, and how many of the bundles B then holds.
fn run(loss_hint: f64, n: u64, lose: &[u64]) -> (Vec<(u64, Vec<String>)>, usize, u64) {
    let mut pair = common::RadioPair::new(shared_radio(48, loss_hint), (11, 22));
    let ids: Vec<_> = (0..n).map(|k| pair.insert(0, 800 + k, 60)).collect();
    let mut frames = Vec::new();
    // Where the message whose fragment ended A's frame before stands: (id, end, total).
    let mut ended: Option<(u64, u64, u64)> = None;
    pair.run(Duration::from_secs(120), |side, _, f| {
        if side != 0 {
            return true;
        }
        let (h, msgs) = wire::parse(f).expect("A's frames parse");
        let before = ended.take();
        let kinds = msgs
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let (kind, at) = match m {
                    Message::Frag {
                        id,
                        offset,
                        total,
                        data,
                    } => ("FRAG", Some((*id, offset + data.len() as u64, *total))),
                    Message::FragNext { data } => (
                        "FRAG_NEXT",
                        before
                            .filter(|_| i == 0)
                            .map(|(id, e, t)| (id, e + data.len() as u64, t)),
                    ),
                    Message::FragParity { id, .. } => return format!("FRAG_PARITY {id}"),
                    m => return format!("{m:?}").chars().take(12).collect(),
                };
                // "+": the fragment leaves its message unfinished.
                let open = at.filter(|(_, e, t)| e < t);
                if i + 1 == msgs.len() {
                    ended = open;
                }
                let id = at.map_or(String::new(), |a| format!(" {}", a.0));
                format!("{kind}{}{id}", if open.is_some() { "+" } else { "" })
            })
            .collect();
        frames.push((h.pn, kinds));
        !lose.contains(&h.pn)
    });
    let held = ids
        .iter()
        .filter(|id| pair.stores[1].held.contains_key(*id))
        .count();
    (frames, held, pair.eps[1].stats().fragments_dropped)
}

/// A fragment that leaves its message unfinished.
fn open_frag(k: &str) -> bool {
    k.starts_with("FRAG+") || k.starts_with("FRAG_NEXT+")
}

/// The message id a fragment or parity names (for a FRAG_NEXT, the one it continues;
/// `None` for one that continues no open fragment of A's frame before).
fn frag_id(k: &str) -> Option<&str> {
    k.starts_with("FRAG")
        .then(|| k.split_once(' ').map(|(_, id)| id))
        .flatten()
}

#[test]
fn a_fragment_goes_on_from_the_frame_before_without_naming_its_message() {
    let (frames, held, dropped) = run(0.0, 3, &[]);
    assert_eq!(held, 3, "B holds {held} of 3");
    assert_eq!(dropped, 0);
    let mut next = 0;
    for w in frames.windows(2) {
        let ((pn0, before), (pn1, this)) = (&w[0], &w[1]);
        for (i, k) in this.iter().enumerate() {
            if !k.starts_with("FRAG_NEXT") {
                continue;
            }
            next += 1;
            // First in its frame, right after a frame that ended with a fragment.
            assert_eq!(i, 0, "a FRAG_NEXT after other messages: {this:?}");
            assert_eq!(pn0 + 1, *pn1);
            assert!(
                before.last().is_some_and(|k| open_frag(k)),
                "{before:?} then {this:?}"
            );
        }
        // A fragment that continues the frame before's last one is never a full FRAG.
        if pn0 + 1 == *pn1 && before.last().is_some_and(|k| open_frag(k)) {
            assert!(
                this.first().is_some_and(|k| k.starts_with("FRAG_NEXT")),
                "{before:?} then {this:?}"
            );
        }
    }
    // Each 130-odd byte manifest in 48 B frames: a FRAG and at least two FRAG_NEXTs.
    assert!(next >= 6, "{next} FRAG_NEXTs for 3 manifests");
}

#[test]
fn a_fragment_after_a_lost_frame_is_dropped_and_its_message_sent_again() {
    // The first frame that ends with a fragment and is followed by a FRAG_NEXT.
    let (clean, _, _) = run(0.0, 2, &[]);
    let lost = clean
        .windows(2)
        .find(|w| w[1].1.first().is_some_and(|k| k.starts_with("FRAG_NEXT")))
        .map(|w| w[0].0)
        .expect("a FRAG_NEXT");
    let (_, held, dropped) = run(0.0, 2, &[lost]);
    assert_eq!(held, 2, "B holds {held} of 2: the manifest went again");
    assert!(dropped >= 1, "the orphaned FRAG_NEXT was not counted");
}

#[test]
fn a_message_with_a_parity_names_itself_in_every_fragment() {
    // Where the link loses frames a parity follows the fragments; one lost frame must
    // cost one fragment only, which the parity rebuilds.
    let (frames, held, _) = run(0.1, 3, &[]);
    assert_eq!(held, 3);
    let all = || frames.iter().flat_map(|(_, k)| k.iter());
    let with_parity: Vec<&str> = all()
        .filter(|k| k.starts_with("FRAG_PARITY"))
        .filter_map(|k| frag_id(k))
        .collect();
    assert!(with_parity.len() >= 3, "parities: {with_parity:?}");
    for k in all().filter(|k| k.starts_with("FRAG_NEXT")) {
        let id = frag_id(k).unwrap_or_else(|| {
            panic!("{k}: continues no open fragment of the frame before (nothing was lost)")
        });
        assert!(
            !with_parity.contains(&id),
            "{k}: a message with a parity continued without naming itself"
        );
    }
}
