//! The first symbols of a reconciliation are its densest (symbol i holds each id with a
//! chance of about 1/(1 + i/2)). A decoder that missed them (the session not yet known
//! on its side, its first frames lost) asks for the whole run missing from symbol 0, not
//! for symbol 0 alone: fresh symbols are worth far less. On a 48 B radio at 10% loss a
//! decoder that had heard the streamer's HELLO late decoded at index 943 instead of
//! about 300.

use std::time::Duration;

use crate::common::{self, shared_radio};
use skywave_proto::wire::{self, Message};

#[test]
fn a_decoder_that_missed_the_first_symbols_asks_for_all_of_them() {
    let mut pair = common::RadioPair::new(shared_radio(100, 0.0), (11, 22));
    // 40 ids differ: about 57 symbols decode them.
    for k in 0..20 {
        pair.insert(0, 800 + k, 30);
        pair.insert(1, 900 + k, 30);
    }
    // Which side streams: the lower key.
    let streamer = usize::from(pair.eps[1].node_key() < pair.eps[0].node_key());
    let mut dropped = 0;
    let mut asked: Vec<(u64, u64)> = Vec::new();
    let mut used = None;
    pair.run(Duration::from_secs(120), |side, _, f| {
        let (_, msgs) = wire::parse(f).expect("frames parse");
        let mut keep = true;
        for m in &msgs {
            match *m {
                // The streamer's first 30 symbols, as first sent, never arrive.
                Message::Symbols { first, .. }
                    if side == streamer && first < 30 && dropped < 30 =>
                {
                    dropped += Message::symbols(match m {
                        Message::Symbols { data, .. } => data,
                        _ => unreachable!(),
                    })
                    .count();
                    keep = false;
                }
                Message::ReconMore { from, count, .. } if side != streamer => {
                    asked.push((from, count))
                }
                Message::ReconDone { used: u, .. } if side != streamer => used = Some(u),
                _ => {}
            }
        }
        keep
    });
    assert!(dropped >= 25, "dropped {dropped}");
    let used = used.expect("reconciled");
    assert!(
        asked.iter().any(|&(from, count)| from == 0 && count >= 25),
        "the run missing from symbol 0 was not asked for: {asked:?}"
    );
    // Decoded from about as many symbols as without the loss (plus the refetched
    // prefix's place in the count): not from a long run of sparse fresh ones.
    assert!(used <= 100, "decoded at index {used}");
}
