//! Shared channels: the last frame of a sender's over says so (`OVER_END`, naming the
//! peer it is addressed to), and the peer answers at once instead of waiting out a
//! silence long enough to be sure the over ended.

use std::time::Duration;

use crate::common::{RadioPair, shared_radio};
use skywave_proto::wire;

/// A frame as sent: who sent it, when, and its bytes.
struct Sent {
    from: usize,
    at: Duration,
    frame: Vec<u8>,
}

/// A (holding 30 bundles of `size` bytes, several overs' worth) and B (holding nothing) on one
/// shared channel that delivers every frame at once; `alter` may change a frame before
/// the other side gets it. Runs 20 s. Returns the frames, the two tags, and B's bytes
/// received and duplicate bytes received.
fn exchange(size: usize, alter: impl Fn(&mut Vec<u8>)) -> (Vec<Sent>, [u32; 2], [u64; 2]) {
    let mut pair = RadioPair::new(shared_radio(223, 0.0), (11, 22));
    for n in 0..30 {
        pair.insert(0, 100 + n, size);
    }
    let tags = [pair.eps[0].tag(), pair.eps[1].tag()];
    let mut log = Vec::new();
    pair.run(Duration::from_secs(20), |from, at, f| {
        log.push(Sent {
            from,
            at,
            frame: f.clone(),
        });
        alter(f);
        true
    });
    let b = pair.eps[1].stats();
    (log, tags, [b.bytes_received, b.duplicate_bytes_received])
}

const SIZE: usize = 3000;

fn carries_data(f: &[u8]) -> bool {
    use wire::ty;
    wire::message_sizes(f)
        .iter()
        .any(|(t, _)| [ty::MANIFEST, ty::PIECE, ty::PIECE_NEXT, ty::FRAG].contains(t))
}

/// Runs of frames one side sent in a row at one instant (one over, or its start).
fn bursts(log: &[Sent]) -> Vec<&[Sent]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=log.len() {
        if i == log.len() || log[i].from != log[start].from || log[i].at != log[start].at {
            out.push(&log[start..i]);
            start = i;
        }
    }
    out
}

#[test]
fn the_last_frame_of_an_over_names_the_peer_and_no_other_frame_is_marked() {
    let (log, tags, _) = exchange(SIZE, |_| {});
    let data_bursts: Vec<&[Sent]> = bursts(&log)
        .into_iter()
        .filter(|b| b[0].from == 0 && b.iter().any(|s| carries_data(&s.frame)))
        .collect();
    assert!(
        data_bursts.len() >= 3,
        "{} overs with data",
        data_bursts.len()
    );
    let mut ended = 0;
    for b in &data_bursts {
        // Frames to B (a discovery HELLO to everyone may follow the over).
        let to_b: Vec<&Sent> = b
            .iter()
            .filter(|s| wire::parse(&s.frame).unwrap().0.is_to(tags[1]))
            .collect();
        let (last, before) = to_b.split_last().unwrap();
        for s in before {
            assert_eq!(
                wire::over_end_to(&s.frame, tags[1]),
                None,
                "a frame mid-over at {:?}",
                s.at
            );
        }
        // An over full to its length, or all A had: the peer is named.
        if wire::over_end_to(&last.frame, tags[1]) == Some(true) {
            ended += 1;
        }
    }
    assert_eq!(
        ended,
        data_bursts.len(),
        "overs whose last frame handed over"
    );
    // B's frames to A name A when they end B's over.
    assert!(
        log.iter()
            .filter(|s| s.from == 1)
            .filter_map(|s| wire::over_end_to(&s.frame, tags[0]))
            .all(|to_a| to_a)
    );
}

/// B, with nothing of its own to send, reports what it got (HAVE: bundles larger than an
/// over) as soon as the frame ending A's over arrives; the same frame without the mark
/// leaves B waiting for two frames' silence first.
#[test]
fn the_peer_answers_an_ended_over_at_once() {
    let answered_at_once = |log: &[Sent]| {
        let bs = bursts(log);
        bs.windows(2)
            .filter(|w| w[0][0].from == 0 && carries_data(&w[0][0].frame))
            .filter(|w| w[1][0].from == 1 && w[1][0].at == w[0][0].at)
            .filter(|w| {
                w[1].iter().any(|s| {
                    wire::message_sizes(&s.frame)
                        .iter()
                        .any(|(t, _)| *t == wire::ty::HAVE)
                })
            })
            .count()
    };
    let (marked, _, got_marked) = exchange(SIZE, |_| {});
    let (unmarked, _, got_unmarked) = exchange(SIZE, |f| f[1] &= !2);
    let (with, without) = (answered_at_once(&marked), answered_at_once(&unmarked));
    assert!(with >= 3, "B answered {with} of A's overs at once");
    assert_eq!(
        without, 0,
        "B answered {without} unmarked overs without waiting"
    );
    // The early reports are right: B gets more in the same time, and nothing twice.
    assert!(
        got_marked[0] > got_unmarked[0],
        "{got_marked:?} against {got_unmarked:?}"
    );
    assert_eq!(got_marked[1], 0, "duplicate bytes at B");
}
