//! Links without acks, point to point: a peer says which of our frames it missed
//! (MISSED) and which bundles' pieces came without their manifest (NAMELESS), and what
//! only those frames said goes again at once instead of after a resend timeout.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use crate::common::{Net, has_type};
use skywave_proto::fuzzing;
use skywave_proto::wire::ty;

/// Half-duplex modem profile: 250 B frames at 9600 bit/s, 200 ms each way.
const MODEM: u8 = 3;
/// Point-to-point serial profile: 200 B frames at 64 kbit/s, full duplex, no acks.
const SERIAL: u8 = 1;

/// Two connected peers, past reconciliation of their empty sets.
fn pair(profile: u8) -> Net {
    let mut net = Net::new(2, profile);
    net.keep_log = true;
    net.connect(0, 1);
    assert!(net.run_until(Duration::from_secs(30), |n| n.log.len() >= 4));
    net
}

fn held(net: &Net, peer: usize, first: u64, n: u64) -> usize {
    (0..n)
        .filter(|i| net.peers[peer].holds(&fuzzing::bundle(first + i, 1, 0).0.id()))
        .count()
}

/// Drops the first `count` frames from `from` that carry a message of type `ty`, then
/// (if `always`) every frame of type `also`.
fn drop_first(
    net: &mut Net,
    from: usize,
    ty: u8,
    count: usize,
    also: Option<u8>,
) -> Rc<RefCell<usize>> {
    let dropped = Rc::new(RefCell::new(0usize));
    let d = dropped.clone();
    net.hook = Box::new(move |f, _, bytes| {
        if f == from && *d.borrow() < count && has_type(&bytes, ty) {
            *d.borrow_mut() += 1;
            return vec![];
        }
        if f != from && also.is_some_and(|t| has_type(&bytes, t)) {
            return vec![];
        }
        vec![bytes]
    });
    dropped
}

#[test]
fn a_lost_report_is_said_again_once_the_peer_misses_its_frame() {
    for profile in [MODEM, SERIAL] {
        let mut net = pair(profile);
        // Bulk both ways, so that frames of the reporting side follow the lost one.
        for i in 0..30 {
            net.peers[1].insert(net.now, 100 + i, 1, 150);
            net.peers[0].insert(net.now, 300 + i, 1, 150);
        }
        let dropped = drop_first(&mut net, 0, ty::DONE, 1, None);
        assert!(
            net.run_until(Duration::from_secs(600), |n| held(n, 0, 100, 30) == 30
                && held(n, 1, 300, 30) == 30),
            "profile {profile}: sync did not finish"
        );
        assert_eq!(*dropped.borrow(), 1, "profile {profile}");
        // Peer 1 sent the bundles whose report was lost: it learnt they arrived from
        // the report said again, not from a timeout and a resend.
        let s1 = net.peers[1].ep.stats();
        let s0 = net.peers[0].ep.stats();
        assert!(s1.missed_frames_told >= 1, "profile {profile}: {s1:?}");
        assert!(s0.missed_frames_repaired >= 1, "profile {profile}: {s0:?}");
        assert_eq!(
            s1.resend_timeouts, 0,
            "profile {profile}: the sender timed out waiting for a report said again"
        );
    }
}

#[test]
fn a_lost_word_of_missed_frames_is_told_again() {
    // A report is lost; then the frame telling its sender that it was missed is lost
    // too. The teller hears of that second loss in turn and tells the first again, so
    // the report is said again within a few overs, not after the bundles' sender times
    // out. (Half duplex: full-duplex links send each report twice anyway.)
    let run = |lose_missed: bool| {
        let mut net = pair(MODEM);
        for i in 0..30 {
            net.peers[1].insert(net.now, 100 + i, 1, 150);
            net.peers[0].insert(net.now, 300 + i, 1, 150);
        }
        let start = net.now;
        let lost = Rc::new(RefCell::new((0usize, 0usize)));
        let l = lost.clone();
        net.hook = Box::new(move |from, _, bytes| {
            let mut l = l.borrow_mut();
            if from == 0 && l.0 == 0 && has_type(&bytes, ty::DONE) {
                l.0 += 1;
                return vec![];
            }
            if lose_missed && from == 1 && l.0 == 1 && l.1 == 0 && has_type(&bytes, ty::MISSED) {
                l.1 += 1;
                return vec![];
            }
            vec![bytes]
        });
        assert!(
            net.run_until(Duration::from_secs(600), |n| held(n, 0, 100, 30) == 30
                && held(n, 1, 300, 30) == 30),
            "sync did not finish"
        );
        assert_eq!(*lost.borrow(), (1, usize::from(lose_missed)));
        (net.now - start, net)
    };
    let (once, _) = run(false);
    let (twice, net) = run(true);
    let s1 = net.peers[1].ep.stats();
    assert!(s1.missed_frames_told >= 2, "{s1:?}");
    assert!(s1.missed_frames_repaired >= 1, "{s1:?}");
    // Told again: a round trip or two more. Not told: the report waited out the
    // bundles' resend timeout.
    let rtt = net.profile.params.rtt_hint;
    assert!(
        twice < once + rtt * 3,
        "sync took {twice:?}, {once:?} with only the report lost (rtt hint {rtt:?})"
    );
}

#[test]
fn a_lost_request_is_made_again_once_the_peer_misses_its_frame() {
    // The sets differ before the session: reconciliation finds the difference, and the
    // decoding side asks for what it lacks in WANTs.
    let run = |lose: bool| {
        let mut net = Net::new(2, MODEM);
        for i in 0..30 {
            net.peers[1].insert(net.now, 100 + i, 1, 150);
            net.peers[0].insert(net.now, 300 + i, 1, 150);
        }
        let asker = Rc::new(RefCell::new(None));
        let a = asker.clone();
        net.hook = Box::new(move |from, _, bytes| {
            if lose && a.borrow().is_none() && has_type(&bytes, ty::WANT) {
                *a.borrow_mut() = Some(from);
                return vec![];
            }
            vec![bytes]
        });
        net.connect(0, 1);
        assert!(
            net.run_until(Duration::from_secs(900), |n| held(n, 0, 100, 30) == 30
                && held(n, 1, 300, 30) == 30)
        );
        let asker = *asker.borrow();
        (net.now, asker, net)
    };
    let (clean, _, _) = run(false);
    let (lossy, asker, net) = run(true);
    let asker = asker.expect("a WANT was lost");
    let s = net.peers[asker].ep.stats();
    assert!(s.missed_frames_repaired >= 1, "{s:?}");
    // Without the word the request waited out the asker's patience (twice a resend
    // timeout): 8.2 s more than the clean run. With it, about the link's round-trip
    // hint more (0.8 s; 0.86 s once reports went by number, as the overs fall).
    let rtt = net.profile.params.rtt_hint;
    assert!(
        lossy < clean + rtt * 2,
        "sync took {lossy:?}, {clean:?} without the loss (rtt hint {rtt:?})"
    );
}

#[test]
fn pieces_without_their_manifest_bring_it_again() {
    let mut net = pair(MODEM);
    for i in 0..10 {
        net.peers[1].insert(net.now, 100 + i, 1, 600);
    }
    // The first manifest peer 1 sends is lost, and so is every MISSED peer 0 sends:
    // only NAMELESS (pieces came without it) can tell peer 1 before a timeout.
    let dropped = drop_first(&mut net, 1, ty::OFFER, 1, Some(ty::MISSED));
    assert!(net.run_until(Duration::from_secs(600), |n| held(n, 0, 100, 10) == 10));
    assert_eq!(*dropped.borrow(), 1);
    let s1 = net.peers[1].ep.stats();
    assert!(s1.nameless_resent >= 1, "{s1:?}");
    assert_eq!(s1.resend_timeouts, 0, "{s1:?}");
}

/// Whether `f` carries the first fragment of a manifest.
fn opens_a_manifest(f: &[u8]) -> bool {
    let Ok((_, msgs)) = skywave_proto::wire::parse(f) else {
        return false;
    };
    msgs.iter().any(|m| {
        matches!(m, skywave_proto::wire::Message::Frag { offset: 0, data, .. }
            if data.first().is_some_and(|t| [ty::MANIFEST, ty::OFFER].contains(t)))
    })
}

/// A manifest too large for the link's frames goes in fragments. The peer missing a
/// frame that carried one of them sends the manifest again at once, though its resend
/// timer runs from its last fragment: the frames name the copy they carried.
#[test]
fn a_missed_fragment_of_a_manifest_brings_it_again() {
    let mut net = Net::new(2, MODEM);
    net.profile.params.mtu = 64;
    net.keep_log = true;
    net.connect(0, 1);
    assert!(net.run_until(Duration::from_secs(60), |n| n.log.len() >= 4));
    for i in 0..5 {
        net.peers[1].insert(net.now, 100 + i, 1, 100);
    }
    let dropped = Rc::new(RefCell::new(0usize));
    let d = dropped.clone();
    net.hook = Box::new(move |f, _, bytes| {
        if f == 1 && *d.borrow() == 0 && opens_a_manifest(&bytes) {
            *d.borrow_mut() += 1;
            return vec![];
        }
        vec![bytes]
    });
    assert!(net.run_until(Duration::from_secs(600), |n| held(n, 0, 100, 5) == 5));
    assert_eq!(*dropped.borrow(), 1);
    let s1 = net.peers[1].ep.stats();
    assert!(s1.missed_frames_repaired >= 1, "{s1:?}");
    assert_eq!(s1.resend_timeouts, 0, "{s1:?}");
}
