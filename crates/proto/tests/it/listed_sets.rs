//! Listed sets: a streamer whose set is small beside the difference sends the set itself
//! (`IDS`, 6 bytes an entry) instead of coded symbols (~1.38 symbols of 9 bytes per id
//! of the difference), and the decoder reads the difference off it exactly.

use std::time::Duration;

use crate::common::{RadioPair, clear_hello_flags, shared_radio};
use skywave_proto::wire::{self, Message};

const HELLO_LISTS: u8 = 16;

/// What each side sent in a run: frames carrying each message type.
#[derive(Default, Debug)]
struct Sent {
    frames_with: [[u32; wire::TYPES]; 2],
    ids_firsts: [Vec<u64>; 2],
}

/// Two radios on a shared channel of `mtu`-byte frames, each with `unique` bundles of
/// its own and `shared` held by both, run for `secs`; `deliver` as in
/// [`RadioPair::run`]. Returns whether both hold everything, what was sent, and which
/// side streams (the smaller key).
fn run_at(
    mtu: usize,
    unique: u64,
    shared: u64,
    secs: u64,
    mut deliver: impl FnMut(usize, &mut Vec<u8>) -> bool,
) -> (bool, Sent, usize) {
    let mut pair = RadioPair::new(shared_radio(mtu, 0.0), (11, 22));
    let mut ids = Vec::new();
    for side in 0..2 {
        for k in 0..unique {
            ids.push(pair.insert(side, 1_000 * (side as u64 + 1) + k, 100));
        }
    }
    for k in 0..shared {
        for side in 0..2 {
            ids.push(pair.insert(side, 5_000 + k, 40));
        }
    }
    let mut sent = Sent::default();
    pair.run(Duration::from_secs(secs), |side, _, f| {
        if let Ok((_, msgs)) = wire::parse(f) {
            let mut types = [false; wire::TYPES];
            for m in &msgs {
                let ty = match m {
                    Message::Ids { first, .. } => {
                        sent.ids_firsts[side].push(*first);
                        wire::ty::IDS
                    }
                    Message::Symbols { .. } => wire::ty::SYMBOLS,
                    Message::Want { .. } => wire::ty::WANT,
                    Message::ReconMore { .. } => wire::ty::RECON_MORE,
                    Message::ReconDone { .. } => wire::ty::RECON_DONE,
                    _ => continue,
                };
                types[ty as usize] = true;
            }
            for (t, &b) in types.iter().enumerate() {
                sent.frames_with[side][t] += u32::from(b);
            }
        }
        deliver(side, f)
    });
    let synced = ids
        .iter()
        .all(|id| pair.stores[0].held.contains_key(id) && pair.stores[1].held.contains_key(id));
    let streamer = usize::from(pair.eps[1].node_key() < pair.eps[0].node_key());
    (synced, sent, streamer)
}

/// [`run_at`] on a 223 B channel.
fn run(
    unique: u64,
    shared: u64,
    secs: u64,
    deliver: impl FnMut(usize, &mut Vec<u8>) -> bool,
) -> (bool, Sent, usize) {
    run_at(223, unique, shared, secs, deliver)
}

/// Issue target: a small difference (d = 20) reconciles in one frame each way on a
/// 223 B radio. The streamer's HELLO and its list of 10 go in one frame (the HELLO
/// without its sketch: the list tells the set exactly), the decoder's `RECON_DONE` and
/// `WANT`s in one. With coded symbols it took 62 symbols in four frames.
#[test]
fn a_small_difference_reconciles_in_one_frame_each_way() {
    let (synced, sent, s) = run(10, 0, 60, |_, _| true);
    assert!(synced, "not synced: {sent:?}");
    let d = 1 - s;
    let [streamer, decoder] = [&sent.frames_with[s], &sent.frames_with[d]];
    assert_eq!(streamer[wire::ty::IDS as usize], 1, "{sent:?}");
    assert_eq!(streamer[wire::ty::SYMBOLS as usize], 0, "{sent:?}");
    assert_eq!(decoder[wire::ty::WANT as usize], 1, "{sent:?}");
    assert_eq!(decoder[wire::ty::RECON_MORE as usize], 0, "{sent:?}");
    assert_eq!(decoder[wire::ty::SYMBOLS as usize], 0, "{sent:?}");
}

/// A frame of the list lost, in the middle or at its end (then only the decoder's
/// silence tells): the decoder asks for what is missing, and the round completes.
#[test]
fn a_lost_part_of_a_list_is_asked_for() {
    for lose_last in [false, true] {
        let mut lost = false;
        let (synced, sent, s) = run(100, 0, 600, |side, f| {
            let Ok((_, msgs)) = wire::parse(f) else {
                return true;
            };
            let part = msgs.iter().find_map(|m| match m {
                Message::Ids {
                    total, first, data, ..
                } => Some((
                    *first,
                    *first + (data.len() / wire::LISTED_ID_LEN) as u64,
                    *total,
                )),
                _ => None,
            });
            let hit = part.is_some_and(|(first, end, total)| {
                if lose_last {
                    end == total
                } else {
                    first > 0 && end < total
                }
            });
            if hit && !lost {
                lost = true;
                let _ = side;
                return false;
            }
            true
        });
        assert!(
            lost,
            "lose_last {lose_last}: no such part of a list was sent: {sent:?}"
        );
        assert!(synced, "lose_last {lose_last}: not synced: {sent:?}");
        let d = 1 - s;
        assert!(
            sent.frames_with[d][wire::ty::RECON_MORE as usize] >= 1,
            "lose_last {lose_last}: {sent:?}"
        );
        assert_eq!(sent.frames_with[s][wire::ty::SYMBOLS as usize], 0);
        // Sent again: some part went twice.
        let mut firsts = sent.ids_firsts[s].clone();
        let n = firsts.len();
        firsts.sort_unstable();
        firsts.dedup();
        assert!(
            firsts.len() < n,
            "lose_last {lose_last}: nothing sent again: {sent:?}"
        );
    }
}

/// A set large beside the difference (300 shared, 5 unique each) is described by coded
/// symbols: its list would cost 1,830 B against ~150 B of symbols.
#[test]
fn a_set_large_beside_the_difference_is_coded() {
    let (synced, sent, s) = run(5, 300, 120, |_, _| true);
    assert!(synced, "{sent:?}");
    assert_eq!(sent.frames_with[s][wire::ty::IDS as usize], 0, "{sent:?}");
    assert!(
        sent.frames_with[s][wire::ty::SYMBOLS as usize] >= 1,
        "{sent:?}"
    );
}

/// A peer whose HELLO does not say it takes lists (an older node) gets coded symbols.
#[test]
fn a_peer_that_takes_no_lists_gets_symbols() {
    let (synced, sent, s) = run(10, 0, 60, |_, f| {
        clear_hello_flags(f, HELLO_LISTS);
        true
    });
    assert!(synced, "{sent:?}");
    assert_eq!(sent.frames_with[s][wire::ty::IDS as usize], 0, "{sent:?}");
    assert!(
        sent.frames_with[s][wire::ty::SYMBOLS as usize] >= 1,
        "{sent:?}"
    );
}

/// Frames of 100 B have no room for a HELLO's count cells: it carries the few smallest
/// bottom-k hashes that fit instead, which tell disjoint sets apart, and the set is
/// listed. With no sketch at all the difference was only known to lie between 0 and 200,
/// and symbols went instead of the list of 100.
#[test]
fn frames_too_small_for_the_count_cells_still_list_a_disjoint_set() {
    let (synced, sent, s) = run_at(100, 100, 0, 300, |_, _| true);
    assert!(synced, "{sent:?}");
    assert!(sent.frames_with[s][wire::ty::IDS as usize] >= 1, "{sent:?}");
    assert_eq!(
        sent.frames_with[s][wire::ty::SYMBOLS as usize],
        0,
        "{sent:?}"
    );
}
