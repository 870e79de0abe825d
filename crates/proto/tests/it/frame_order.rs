//! What goes where in a frame: a message ahead of the reports owed, a small bundle kept
//! whole in one frame on a point-to-point link rather than split across two, and a
//! message not cut at the end of a half-duplex over.

use std::time::Duration;

use crate::common::Net;
use skywave_bundle::{Manifest, SignedManifest, hash_payload};
use skywave_proto::fuzzing::{self, DATE};
use skywave_proto::wire::{self, Message, ty};
use skywave_proto::{Config, Endpoint};

/// Peer `n`'s message bundle (service `message`: high priority).
fn message(n: u64) -> (SignedManifest, Vec<u8>) {
    message_of(
        n,
        b"urgent: the pass is closed, take the north route".to_vec(),
    )
}

fn message_of(n: u64, payload: Vec<u8>) -> (SignedManifest, Vec<u8>) {
    let k = fuzzing::bundle_key(n);
    let mut m = Manifest::new(
        k.bundle_id(),
        1,
        payload.len() as u64,
        hash_payload(&payload),
        DATE,
    );
    m.service = Some("message".into());
    (m.sign(&k).expect("valid"), payload)
}

#[test]
fn a_message_goes_ahead_of_the_reports_owed_in_the_frame_that_starts_it() {
    // Half-duplex modem profile (250 B frames at 9600 bit/s).
    let mut net = Net::new(2, 3);
    net.keep_log = true;
    net.connect(0, 1);
    assert!(net.run_until(Duration::from_secs(30), |n| n.log.len() >= 4));
    // Bulk both ways: each side's frames follow one another, and each of peer 0's
    // carries the reports for what arrived while the one before was on the air.
    for i in 0..40 {
        net.peers[1].insert(net.now, 100 + i, 1, 100);
        net.peers[0].insert(net.now, 300 + i, 1, 100);
    }
    let got = |n: &Net| {
        (0..40)
            .filter(|i| n.peers[0].holds(&fuzzing::bundle(100 + i, 1, 0).0.id()))
            .count()
    };
    assert!(net.run_until(Duration::from_secs(120), |n| got(n) >= 10));
    let (m, payload) = message(7);
    let id = m.id();
    let at = net.log.len();
    let now = net.now;
    let p = &mut net.peers[0];
    p.store.insert(m, payload);
    p.ep.bundle_stored(now, id, &mut p.store);
    assert!(net.run_until(Duration::from_secs(120), |n| n.peers[1].holds(&id)));

    let first = net.log[at..]
        .iter()
        .filter(|(from, _, _)| *from == 0)
        .find_map(|(_, _, f)| {
            let (_, msgs) = wire::parse(f).expect("frames parse");
            msgs.iter()
                .position(|m| {
                    matches!(m, Message::Manifest { bytes: b, .. } if SignedManifest::decode(b).is_ok_and(|s| s.id() == id))
                })
                .map(|i| (i, wire::message_sizes(f)))
        });
    let (i, sizes) = first.expect("the message's manifest was sent");
    let reports_before = sizes[..i]
        .iter()
        .filter(|(t, _)| matches!(*t, ty::HAVE_ALL | ty::HAVE | ty::DONE))
        .count();
    let reports_after = sizes[i..]
        .iter()
        .filter(|(t, _)| matches!(*t, ty::HAVE_ALL | ty::HAVE | ty::DONE))
        .count();
    assert_eq!(reports_before, 0, "reports ahead of the message: {sizes:?}");
    // The frame did owe reports (else the order proves nothing).
    assert!(
        reports_after > 0,
        "no report in the message's frame: {sizes:?}"
    );
    // Nothing is lost by the order: every bundle still arrives.
    assert!(net.run_until(Duration::from_secs(300), |n| got(n) == 40));
}

#[test]
fn small_bundles_are_not_split_across_frames_on_a_point_to_point_link() {
    // IP paths (1472 B frames) and a point-to-point radio (200 B).
    for (profile, most) in [(0, 400), (1, 60)] {
        let mut net = Net::new(2, profile);
        net.keep_log = true;
        net.connect(0, 1);
        // Payloads of 1 B to `most`, each whole with its manifest in one frame:
        // several to a frame on IP, where the last would otherwise be split.
        let ids: Vec<_> = (0..60)
            .map(|i| net.peers[0].insert(net.now, 200 + i, 1, 1 + (i as usize * 37) % most))
            .collect();
        assert!(
            net.run_until(Duration::from_secs(600), |n| ids
                .iter()
                .all(|id| n.peers[1].holds(id))),
            "profile {profile}: not synced"
        );
        let (mut split, mut whole) = (0, 0);
        for (from, _, f) in &net.log {
            if *from != 0 {
                continue;
            }
            for (t, _) in wire::message_sizes(f) {
                match t {
                    ty::PIECE => split += 1,
                    ty::PIECE_NEXT => whole += 1,
                    _ => {}
                }
            }
        }
        // Every payload here fits in a frame with its manifest: each follows its
        // manifest, none is continued in another frame.
        assert_eq!(
            split, 0,
            "profile {profile}: {split} pieces continued a bundle"
        );
        assert!(
            whole >= 60,
            "profile {profile}: {whole} pieces after their manifests"
        );
    }
}

#[test]
fn a_message_begun_as_an_over_fills_up_is_finished_in_that_over() {
    // Half-duplex modem profile (250 B frames at 9600 bit/s), peer 0's overs 1 s long
    // (1,200 B: a handful of frames).
    let mut net = Net::new(2, 3);
    net.peers[0].ep = Endpoint::new(
        Config {
            max_over: Duration::from_secs(1),
            ..Config::default()
        },
        fuzzing::node_key(0),
        0xabc0,
    );
    net.connect(0, 1);
    assert!(net.run_until(Duration::from_secs(30), |n| {
        n.peers[0].ep.peers().next().is_some()
    }));
    let ids: Vec<_> = (0..40)
        .map(|i| net.peers[0].insert(net.now, 100 + i, 1, 100))
        .collect();
    // Peer 0 sends until its over is full, with bulk left (no time passes: the peer is
    // not heard, so the over does not end).
    let now = net.now;
    let p = &mut net.peers[0];
    let mut bulk_frames = 0;
    while p.ep.poll_transmit(now, 0, 250, &mut p.store).is_some() {
        bulk_frames += 1;
        assert!(bulk_frames < 40, "the over never filled");
    }
    assert!(bulk_frames >= 3, "{bulk_frames} frames in the over");
    assert!(ids.iter().filter(|id| !net.peers[1].holds(id)).count() > 20);
    // A message too large for one frame with its manifest is written now: it goes out
    // whole in this over, past the limit, and nothing else does.
    let (m, payload) = message_of(7, vec![b'!'; 300]);
    let id = m.id();
    let p = &mut net.peers[0];
    p.store.insert(m, payload);
    p.ep.bundle_stored(now, id, &mut p.store);
    let mut sent = 0u64;
    let mut frames = 0;
    while let Some(f) = p.ep.poll_transmit(now, 0, 250, &mut p.store) {
        frames += 1;
        assert!(frames <= 4, "the over ran on past the message");
        let (_, msgs) = wire::parse(&f).expect("frames parse");
        for m in msgs {
            match m {
                Message::Manifest { bytes: b, .. } => {
                    let s = SignedManifest::decode(b).expect("manifest");
                    assert_eq!(s.id(), id, "a bulk manifest went past the over's limit");
                }
                Message::Piece { data, .. } | Message::PieceNext { data, .. } => {
                    sent += data.len() as u64;
                }
                _ => {}
            }
        }
    }
    assert!(frames >= 2, "the message took {frames} frames");
    assert_eq!(sent, 300, "the message's payload was cut at the over's end");
}
