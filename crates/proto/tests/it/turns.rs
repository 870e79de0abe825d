//! Point-to-point half-duplex links (sides take turns, one peer each side): losses are
//! random there, not congestion, so a resend timeout does not stay backed off once the
//! peer is heard, and a request repeated after a lost manifest brings the manifest and
//! its pieces at once.

use std::time::Duration;

use crate::common::{RadioPair, frame};
use skywave_proto::Answer;
use skywave_proto::fuzzing::Profile;
use skywave_proto::wire::{self, Message};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Whether frame `f` carries a manifest or bundle bytes.
fn carries_data(f: &[u8]) -> bool {
    let (_, msgs) = wire::parse(f).unwrap();
    msgs.iter().any(|m| {
        matches!(
            m,
            Message::Manifest { .. } | Message::Piece { .. } | Message::PieceNext { .. }
        )
    })
}

/// How the sender hears of the peer while its resends are lost.
#[derive(Clone, Copy, Debug)]
enum Heard {
    /// Not at all.
    Nothing,
    /// Its driver hears the peer's driver (an end-of-over announcement).
    Driver,
    /// A frame from the peer arrives (one with nothing for the sender's transfers).
    Frame,
}

/// Two sides of a half-duplex modem link with 30 bundles each that the other lacks:
/// side 0 decodes the reconciliation and asks for side 1's. After its first request,
/// everything side 0 says is lost, and so is every frame of side 1's with data: side 1's
/// resend timeout backs off. At its first resend after 200 s, side 1 hears of side 0 as
/// `heard` says. Returns the time from that resend to the next one.
fn next_resend_after(heard: Heard) -> Duration {
    let mut pair = two_sets();
    let mut asked = false;
    let mut resends: Vec<Duration> = Vec::new();
    let step = |pair: &mut RadioPair, resends: &mut Vec<Duration>, asked: &mut bool| {
        let end = pair.now + Duration::from_millis(250);
        pair.run(end, |side, now, f| {
            if side == 1 {
                if *asked && carries_data(f) {
                    resends.push(now);
                    return false;
                }
                return true;
            }
            if *asked {
                return false;
            }
            let (_, msgs) = wire::parse(f).unwrap();
            *asked = msgs.iter().any(|m| matches!(m, Message::Want { .. }));
            true
        });
    };
    while !resends.iter().any(|&t| t >= secs(200)) {
        assert!(pair.now < secs(600), "no resend after 200 s: {resends:?}");
        step(&mut pair, &mut resends, &mut asked);
    }
    let first = *resends.last().unwrap();
    let gaps: Vec<Duration> = resends.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter()
            .rev()
            .find(|g| !g.is_zero())
            .is_some_and(|&g| g >= secs(20)),
        "the timeout did not back off: resends at {resends:?}"
    );
    let now = pair.now;
    match heard {
        Heard::Nothing => {}
        Heard::Driver => pair.eps[1].link_heard(now, 0, None),
        Heard::Frame => {
            let f = frame(1_000, |w| {
                assert!(w.heard(3));
            });
            pair.eps[1].handle_frame(now, 0, &f, &mut pair.stores[1]);
        }
    }
    let n = resends.len();
    while resends.len() == n {
        assert!(pair.now < secs(900), "no resend after {first:?}");
        step(&mut pair, &mut resends, &mut asked);
    }
    resends[n] - first
}

/// See [`next_resend_after`]; side 1 also holds bundle 701 (600 B) for side 0.
fn two_sets() -> RadioPair {
    let mut pair = RadioPair::new(Profile::pick(3).params, (11, 22));
    for k in 0..30 {
        pair.insert(0, 800 + k, 100);
        pair.insert(1, 900 + k, 100);
    }
    pair.insert(1, 701, 600);
    pair
}

#[test]
fn a_peer_heard_on_a_turn_link_ends_the_backoff() {
    let backed = next_resend_after(Heard::Nothing);
    assert!(backed >= secs(20), "not backed off: {backed:?}");
    for heard in [Heard::Driver, Heard::Frame] {
        let next = next_resend_after(heard);
        assert!(
            next <= secs(5),
            "{heard:?}: the next resend came {next:?} after the peer was heard (backed off: {backed:?})"
        );
    }
}

/// Side 1 holds bundle 701 (600 B: a manifest and pieces over several frames) among
/// others for side 0 ([`two_sets`]). Every frame of side 1's with that bundle's manifest
/// or pieces is lost until side 0 asks again by the whole short id. For two minutes from the first loss
/// everything side 0 says is lost too, so side 1's resend timeout backs off past side
/// 0's wait for an answer. Returns whether side 1's answer to the
/// repeated request, before side 0 says anything more, carried the manifest, how many
/// of the bundle's bytes it carried, and whether side 0 then held the bundle.
fn answer_to_a_repeated_request() -> (bool, u64, bool) {
    let dark = secs(120);
    let mut pair = two_sets();
    let (m, _) = skywave_proto::fuzzing::bundle(701, 1, 600);
    let (id, manifest_bytes) = (m.id(), m.as_bytes().to_vec());
    let (mut lost, mut asked_again, mut answered) = (0, false, false);
    let mut dark_from: Option<Duration> = None;
    let (mut manifest, mut bytes) = (false, 0u64);
    pair.run(secs(900), |side, now, f| {
        let (_, msgs) = wire::parse(f).unwrap();
        if side == 0 {
            if dark_from.is_some_and(|t| now < t + dark) {
                return false;
            }
            if asked_again {
                answered = true;
            }
            asked_again |= msgs
                .iter()
                .any(|m| matches!(m, Message::Want { len: 6, .. }));
            return true;
        }
        // The bundle's manifest (with the piece after it) or a piece naming it.
        let ours = msgs.iter().any(|m| match m {
            Message::Manifest { bytes, .. } => *bytes == manifest_bytes,
            Message::Piece { r, .. } => *r == wire::BundleRef::new(&id, 1),
            _ => false,
        });
        if asked_again && !answered {
            manifest |= ours;
            for m in &msgs {
                if let Message::Piece { data, .. } | Message::PieceNext { data, .. } = m {
                    bytes += data.len() as u64;
                }
            }
        }
        if ours && !asked_again {
            lost += 1;
            dark_from.get_or_insert(now);
            return false;
        }
        true
    });
    assert!(
        lost > 0 && asked_again,
        "lost {lost}; asked again: {asked_again}"
    );
    (manifest, bytes, pair.stores[0].held.contains_key(&id))
}

#[test]
fn a_request_repeated_after_a_lost_manifest_brings_its_pieces_too() {
    let (manifest, bytes, held) = answer_to_a_repeated_request();
    assert!(held, "B never got the bundle");
    assert!(manifest, "the answer had no manifest");
    assert!(
        bytes >= 600,
        "the answer carried {bytes} of the bundle's 600 bytes: the rest waited for a timer"
    );
}

/// What side 1's driver tells of the peer's answer in [`resend_after_answer`].
#[derive(Clone, Copy, Debug, PartialEq)]
enum Told {
    Nothing,
    /// An idle answer to the over that carried the bundle.
    Idle,
    /// An answer to that over, with frames, none of them missing.
    Whole,
    /// An answer to that over, with frames, some missing (a report may be among them).
    FramesMissing,
    /// An idle answer to an over that ended before the bundle went.
    EarlierOver,
}

/// Side 1 sends bundle 701 ([`two_sets`]); every frame with its manifest or pieces is
/// lost the first time it goes. 100 ms after the first loss, side 1's driver says the
/// peer answered an over (and its own over has all arrived), as `told` says. Returns
/// how long after that side 1 sent the bundle again, and the endpoint's count of
/// transfers sent again for an answer.
fn resend_after_answer(told: Told) -> (Duration, u64) {
    let mut pair = two_sets();
    let (m, _) = skywave_proto::fuzzing::bundle(701, 1, 600);
    let id = m.id();
    let manifest_bytes = m.as_bytes().to_vec();
    let ours = move |f: &[u8]| {
        let (_, msgs) = wire::parse(f).unwrap();
        msgs.iter().any(|m| match m {
            Message::Manifest { bytes, .. } => *bytes == manifest_bytes,
            Message::Piece { r, .. } => *r == wire::BundleRef::new(&id, 1),
            _ => false,
        })
    };
    let mut sends: Vec<Duration> = Vec::new();
    let mut last_pn = 0;
    let step = |pair: &mut RadioPair, sends: &mut Vec<Duration>, last_pn: &mut u64| {
        let end = pair.now + Duration::from_millis(10);
        pair.run(end, |side, now, f| {
            if side == 0 {
                *last_pn = wire::parse(f).unwrap().0.pn;
            } else if ours(f) {
                sends.push(now);
                return now != sends[0];
            }
            true
        });
    };
    while sends.is_empty() {
        assert!(pair.now < secs(60), "bundle 701 never sent");
        step(&mut pair, &mut sends, &mut last_pn);
    }
    let first = sends[0];
    while pair.now < first + Duration::from_millis(100) {
        step(&mut pair, &mut sends, &mut last_pn);
    }
    let now = pair.now;
    let before = pair.eps[1].stats().answered_resends;
    let answer = |over_ended, idle| Answer {
        over_ended,
        all_in: now,
        idle,
    };
    let answer = match told {
        Told::Nothing => None,
        Told::Idle => Some(answer(now, true)),
        Told::EarlierOver => Some(answer(first - Duration::from_millis(1), true)),
        Told::Whole | Told::FramesMissing => {
            // A frame of the peer's answer: the next it numbers, or one after a gap.
            let skip = if told == Told::Whole { 1 } else { 3 };
            let f = frame(last_pn + skip, |w| {
                assert!(w.heard(3));
            });
            pair.eps[1].handle_frame(now, 0, &f, &mut pair.stores[1]);
            Some(answer(first, false))
        }
    };
    if answer.is_some() {
        pair.eps[1].link_heard(now, 0, answer);
    }
    let n = sends.iter().filter(|&&t| t == first).count();
    while sends.len() == n {
        assert!(pair.now < secs(60), "bundle 701 never sent again");
        step(&mut pair, &mut sends, &mut last_pn);
    }
    (
        sends[n].saturating_sub(now),
        pair.eps[1].stats().answered_resends - before,
    )
}

#[test]
fn what_the_peer_answered_without_reporting_goes_again_at_once() {
    let (timer, counted) = resend_after_answer(Told::Nothing);
    assert!(timer >= Duration::from_millis(300), "{timer:?}");
    assert_eq!(counted, 0);
    // An answer to an over before the bundle went says nothing of it: the timer
    // decides.
    let (t, counted) = resend_after_answer(Told::EarlierOver);
    assert!(t >= Duration::from_millis(300), "{t:?}");
    assert_eq!(counted, 0);
    // Nor one that came with frames missing (a report may be among them). (Here the
    // gap has the bundle sent again soon anyway: the frame after it makes side 1 tell
    // its gap, so side 0 finds the gap in side 1's numbers and tells it: MISSED.)
    assert_eq!(resend_after_answer(Told::FramesMissing).1, 0);
    for told in [Told::Idle, Told::Whole] {
        let (answered, counted) = resend_after_answer(told);
        assert!(
            answered <= Duration::from_millis(20),
            "{told:?}: sent again {answered:?} after the answer (by the timer: {timer:?})"
        );
        assert_eq!(counted, 1, "{told:?}");
    }
}

/// Side 0 asks for side 1's bundles ([`two_sets`]); every frame of side 0's from its
/// first WANT on is lost until 100 ms later, when side 0's driver says the peer answered
/// the over that carried them with nothing (`idle_answer`), or says nothing. Returns how
/// long after that side 0 asked again (by the whole short id, as a repeat asks), and
/// the endpoint's count of requests asked again for an answer.
fn want_again_after(idle_answer: bool) -> (Duration, u64) {
    let mut pair = two_sets();
    // (first WANT, a WANT by the whole short id)
    let want = |f: &[u8]| {
        let (_, msgs) = wire::parse(f).unwrap();
        let any = msgs.iter().any(|m| matches!(m, Message::Want { .. }));
        let whole = msgs
            .iter()
            .any(|m| matches!(m, Message::Want { len, .. } if *len == wire::MAX_WANT_LEN));
        (any, whole)
    };
    let mut first: Option<Duration> = None;
    let mut again: Option<Duration> = None;
    let step = |pair: &mut RadioPair,
                first: &mut Option<Duration>,
                again: &mut Option<Duration>,
                until: Duration| {
        let end = pair.now + Duration::from_millis(10);
        pair.run(end, |side, now, f| {
            if side != 0 {
                return true;
            }
            let (any, whole) = want(f);
            if any && first.is_none() {
                *first = Some(now);
            }
            if whole && now > until && again.is_none() {
                *again = Some(now);
            }
            // Everything side 0 says from its first request on is lost until then (so
            // that no later frame of its shows side 1 a gap to tell: MISSED).
            first.is_none() || now > until
        });
    };
    while first.is_none() {
        assert!(pair.now < secs(60), "side 0 never asked");
        step(&mut pair, &mut first, &mut again, secs(3600));
    }
    let lose_until = first.unwrap() + Duration::from_millis(100);
    while pair.now < lose_until {
        step(&mut pair, &mut first, &mut again, lose_until);
    }
    let now = pair.now;
    let before = pair.eps[0].stats().answered_wants;
    if idle_answer {
        let answer = Answer {
            over_ended: lose_until,
            all_in: now,
            idle: true,
        };
        pair.eps[0].link_heard(now, 0, Some(answer));
    }
    while again.is_none() {
        assert!(pair.now < secs(300), "side 0 never asked again");
        step(&mut pair, &mut first, &mut again, lose_until);
    }
    (
        again.unwrap().saturating_sub(now),
        pair.eps[0].stats().answered_wants - before,
    )
}

#[test]
fn requests_the_peer_answered_with_nothing_go_again_at_once() {
    // Without an answer, once side 1 tells of the gap in side 0's frames, or twice a
    // resend timeout.
    let (timer, counted) = want_again_after(false);
    assert!(timer >= Duration::from_millis(300), "{timer:?}");
    assert_eq!(counted, 0);
    // The peer answered the over that asked with nothing: it never got the requests.
    let (answered, counted) = want_again_after(true);
    assert!(
        answered <= Duration::from_millis(20),
        "asked again {answered:?} after the answer (by the timer: {timer:?})"
    );
    assert!(counted >= 1, "{counted}");
}
