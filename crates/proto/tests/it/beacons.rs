//! HELLOs on shared channels: discovery beacons keep within a duty-cycle budget, and a
//! peer that has heard our sketch is not sent it again.

use std::time::Duration;

use crate::common::Net;
use skywave_proto::fuzzing::{self, Profile};
use skywave_proto::wire::{self, Message};
use skywave_proto::{Config, Endpoint, MemStore};

/// Beacons one lone node sends on a shared LoRa-like channel (1758 bit/s, 255 B frames)
/// in `hours`, and the air they take.
fn lone_beacons(duty: Option<f64>, hours: u64) -> (usize, Duration) {
    let mut params = Profile::pick(2).params;
    params.rate_bps = Some(1758);
    params.duty = duty;
    let mut ep = Endpoint::new(Config::default(), fuzzing::node_key(1), 7);
    let mut store = MemStore::new();
    ep.link_up(Duration::ZERO, 0, params);
    let (mut n, mut air) = (0, Duration::ZERO);
    let mut now = Duration::ZERO;
    while now < Duration::from_secs(3600 * hours) {
        ep.handle_timeout(now);
        while let Some(f) = ep.poll_transmit(now, 0, params.mtu, &mut store) {
            n += 1;
            air += Duration::from_secs_f64(f.len() as f64 * 8.0 / 1758.0);
        }
        now += Duration::from_millis(500);
    }
    (n, air)
}

#[test]
fn beacons_keep_to_a_tenth_of_a_duty_cycle_budget() {
    // 1% of two hours is 72 s of air; beacons may take a tenth of it, plus the first.
    let (n, air) = lone_beacons(Some(0.01), 2);
    assert!(n >= 2, "{n} beacons: a node must still be found");
    let first = air / n as u32;
    assert!(
        air <= Duration::from_secs_f64(7.2) + first,
        "{n} beacons, {air:?} of air"
    );
    // Without a duty-cycle rule, the usual schedule (every minute at most).
    let (free, _) = lone_beacons(None, 2);
    assert!(free >= 100, "{free} beacons without a duty cycle");
}

/// HELLOs from `from` in `log` that carry the set's sketch.
fn sketches_from(log: &[(usize, usize, Vec<u8>)], from: usize) -> usize {
    log.iter()
        .filter(|(f, _, _)| *f == from)
        .filter_map(|(_, _, b)| wire::parse(b).ok())
        .flat_map(|(_, msgs)| msgs)
        .filter(|m| matches!(m, Message::Hello { sketch, .. } if !sketch.is_empty()))
        .count()
}

#[test]
fn a_peer_that_heard_our_sketch_is_not_sent_it_again() {
    // Shared channel under a duty cycle: each node's beacon carries its sketch, and the
    // HELLO that starts a session says it heard the other. The answer to it needs no
    // sketch.
    let mut net = Net::new(2, 2);
    net.profile.params.duty = Some(0.01);
    net.keep_log = true;
    for i in 0..10 {
        net.peers[0].insert(net.now, 10 + i, 1, 100);
        net.peers[1].insert(net.now, 40 + i, 1, 100);
    }
    net.connect(0, 1);
    let all = |n: &Net| {
        (0..10).all(|i| {
            n.peers[1].holds(&fuzzing::bundle(10 + i, 1, 0).0.id())
                && n.peers[0].holds(&fuzzing::bundle(40 + i, 1, 0).0.id())
        })
    };
    assert!(net.run_until(Duration::from_secs(60), all), "not synced");
    let (a, b) = (sketches_from(&net.log, 0), sketches_from(&net.log, 1));
    // One beacon each, and one session HELLO between them (from the side that had not
    // yet heard it was heard).
    assert!(a + b <= 3, "sketches sent: A {a}, B {b}");
    assert!(a >= 1 && b >= 1, "sketches sent: A {a}, B {b}");
}

/// When a lone node's beacons go out on a shared channel at `rate` bit/s (223 B frames),
/// in the first 10 s.
fn first_beacons(rate: u64) -> Vec<Duration> {
    let mut params = Profile::pick(2).params;
    params.rate_bps = Some(rate);
    params.mtu = 223;
    params.duty = None;
    let mut ep = Endpoint::new(Config::default(), fuzzing::node_key(1), 7);
    let mut store = MemStore::new();
    ep.link_up(Duration::ZERO, 0, params);
    let mut sent = Vec::new();
    let mut now = Duration::ZERO;
    while now < Duration::from_secs(10) {
        ep.handle_timeout(now);
        while ep.poll_transmit(now, 0, params.mtu, &mut store).is_some() {
            sent.push(now);
        }
        now += Duration::from_millis(1);
    }
    sent
}

/// An unanswered first HELLO (two radios started together collide) is repeated after a
/// wait in the channel's airtime: at 128 kbit/s within 16 frames (a quarter of a second,
/// with jitter), not the configured second; at 9.6 kbit/s, where 16 frames are 3 s, the
/// configured second is the bound. Then the waits double.
#[test]
fn a_first_hello_is_repeated_after_frames_not_a_fixed_second() {
    let frame = |rate: u64| Duration::from_secs_f64(8.0 * 223.0 / rate as f64);
    let fast = first_beacons(128_000);
    assert!(fast.len() >= 4, "{fast:?}");
    let first_gap = fast[1] - fast[0];
    assert!(first_gap <= frame(128_000) * 20, "{fast:?}");
    assert!(fast[2] - fast[1] > first_gap, "the wait doubles: {fast:?}");
    let slow = first_beacons(9600);
    let gap = slow[1] - slow[0];
    assert!(
        gap >= Duration::from_millis(700) && gap <= Duration::from_millis(1300),
        "{slow:?}"
    );
}
