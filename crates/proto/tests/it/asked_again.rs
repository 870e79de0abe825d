//! A peer that asks again, by the whole short id, for a bundle whose manifest it never
//! got is answered at once, however far the sender's resend timeout has backed off
//! after a run of losses: the request says what the timer can only guess.

use std::time::Duration;

use crate::common::{RadioPair, shared_radio};
use skywave_proto::wire::{self, Message};

/// A and B hold 5 bundles each that the other lacks. Every frame with a manifest or a
/// piece is lost for the first `dark` seconds, so the resend timeouts back off; then
/// nothing is lost. Returns how long the asked side took to send a manifest or piece
/// after the first repeated WANT (by the whole short id) it received after `dark` (`None`:
/// the resend timers brought everything before any WANT was repeated), and how many
/// bundles each side then held.
fn answer_delay(dark: Duration) -> (Option<Duration>, [usize; 2]) {
    let mut pair = RadioPair::new(shared_radio(223, 0.0), (11, 22));
    for k in 0..5 {
        pair.insert(0, 500 + k, 100);
        pair.insert(1, 600 + k, 100);
    }
    // (asked side, when)
    let mut asked: Option<(usize, Duration)> = None;
    let mut answered_at = None;
    pair.run(dark + Duration::from_secs(300), |side, now, f| {
        let (_, msgs) = wire::parse(f).unwrap();
        if now >= dark
            && asked.is_none()
            && msgs
                .iter()
                .any(|m| matches!(m, Message::Want { len: 6, .. }))
        {
            asked = Some((1 - side, now));
        }
        let data = msgs.iter().any(|m| {
            matches!(
                m,
                Message::Manifest { .. } | Message::Piece { .. } | Message::PieceNext { .. }
            )
        });
        if data && answered_at.is_none() && asked.is_some_and(|(s, _)| s == side) {
            answered_at = Some(now);
        }
        !(data && now < dark)
    });
    let delay = asked.map(|(_, at)| {
        answered_at.expect("the asked side sent data again after the repeated WANT") - at
    });
    (
        delay,
        [pair.stores[0].held.len(), pair.stores[1].held.len()],
    )
}

#[test]
fn a_repeated_want_is_answered_at_once_not_at_the_backed_off_timer() {
    // Whether a WANT is repeated after the dark spell before a resend timer fires is
    // the timers' draw: over several spells, several are.
    let mut asked = 0;
    for dark in [60, 100, 150, 200, 250, 300, 400] {
        let (delay, held) = answer_delay(Duration::from_secs(dark));
        assert_eq!(held, [10, 10], "dark {dark} s");
        if let Some(delay) = delay {
            asked += 1;
            assert!(
                delay < Duration::from_secs(2),
                "dark {dark} s: the asked side answered the repeated request {delay:?} after it"
            );
        }
    }
    assert!(
        asked >= 3,
        "a WANT repeated after only {asked} of 7 dark spells"
    );
}
