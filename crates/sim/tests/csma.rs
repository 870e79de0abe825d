//! The shared CSMA medium: who hears whom, collisions, hidden terminals, carrier sense.

mod common;

use common::{drain, frame};
use skywave_sim::time::airtime_nanos;
use skywave_sim::{
    Adjacency, CsmaMedium, DropReason, LinkConfig, LinkModel, RefEndpoint, SimTime, Simulator,
    TransmitError,
};

const SEED: u64 = 0xc5aa;

fn medium(spec: &str, adj: Adjacency) -> CsmaMedium {
    CsmaMedium::new(&LinkConfig::parse_spec(spec).unwrap(), adj, SEED, 0).unwrap()
}

#[test]
fn a_transmission_is_heard_by_every_radio_in_range_only() {
    // Star: 0 in the middle, 1..=3 around it; 1 and 2 also hear each other.
    let mut adj = Adjacency::new(4);
    for i in 1..4 {
        adj.connect(0, i);
    }
    adj.connect(1, 2);
    let mut m = medium("profile=uhf-csma", adj);
    m.handle_transmit(SimTime::ZERO, 1, frame(200, 1)).unwrap();
    let seen = drain(&mut m, SimTime::MAX);
    let mut ports: Vec<usize> = seen.iter().map(|s| s.port).collect();
    ports.sort();
    assert_eq!(ports, [0, 2]);
    assert_eq!(m.stats(1).delivered.frames, 2);
    assert_eq!(m.stats(3).received.frames, 0);
}

#[test]
fn frame_airtime_includes_the_preamble() {
    let mut m = medium("profile=uhf-csma,cw-min=1", Adjacency::full(2));
    m.handle_transmit(SimTime::ZERO, 0, frame(223, 1)).unwrap();
    let seen = drain(&mut m, SimTime::MAX);
    // (223 + 8) B at 128 kbit/s = 14.4375 ms, no backoff with cw-min=1, no delay.
    assert_eq!(seen[0].time.as_nanos(), airtime_nanos(231, 128_000));
    assert_eq!(seen[0].time.as_nanos(), 14_437_500);
}

#[test]
fn overlapping_frames_collide_at_the_receiver() {
    // cw-min=1: no backoff, so 0 and 1 start together; 2 hears both.
    let mut m = medium("profile=uhf-csma,cw-min=1,cw-max=1", Adjacency::full(3));
    m.handle_transmit(SimTime::ZERO, 0, frame(100, 1)).unwrap();
    m.handle_transmit(SimTime::ZERO, 1, frame(100, 2)).unwrap();
    let seen = drain(&mut m, SimTime::MAX);
    assert!(seen.is_empty(), "{seen:?}");
    for s in [0, 1] {
        let st = m.stats(s);
        assert_eq!(st.dropped(DropReason::Collision).frames, 1, "at radio 2");
        assert_eq!(
            st.dropped(DropReason::ReceiverBusy).frames,
            1,
            "at the other sender"
        );
    }
}

#[test]
fn frames_that_do_not_overlap_do_not_collide() {
    let mut m = medium("profile=uhf-csma,cw-min=1,cw-max=1", Adjacency::full(3));
    m.handle_transmit(SimTime::ZERO, 0, frame(100, 1)).unwrap();
    // 108 B take 6.75 ms; the second starts after the first ended.
    let t = SimTime::from_millis(7);
    m.handle_timeout(t);
    m.handle_transmit(t, 1, frame(100, 2)).unwrap();
    let seen = drain(&mut m, SimTime::MAX);
    assert_eq!(seen.len(), 4);
    assert_eq!(m.stats(2).received.frames, 2);
    assert_eq!(m.stats(0).dropped_total().frames, 0);
}

#[test]
fn a_start_within_one_preamble_collides_but_later_ones_defer() {
    // 8 B preamble = 500 us: a radio senses a transmission only after that.
    let spec = "profile=uhf-csma,cw-min=1,cw-max=1";
    for (offset_us, collide) in [(400, true), (600, false)] {
        let mut m = medium(spec, Adjacency::full(3));
        m.handle_transmit(SimTime::ZERO, 0, frame(100, 1)).unwrap();
        let t = SimTime::from_micros(offset_us);
        m.handle_timeout(t);
        m.handle_transmit(t, 1, frame(100, 2)).unwrap();
        drain(&mut m, SimTime::MAX);
        let collided = m.stats(0).dropped(DropReason::Collision).frames;
        assert_eq!(collided == 1, collide, "offset {offset_us} us");
        if !collide {
            assert_eq!(m.stats(2).received.frames, 2);
        }
    }
}

#[test]
fn hidden_terminals_collide_at_the_middle_of_a_chain() {
    // A - B - C: A and C cannot sense each other; with default backoff (< 8 ms) their
    // 14.4 ms frames always overlap at B.
    let mut m = medium("profile=uhf-csma", Adjacency::chain(3));
    m.handle_transmit(SimTime::ZERO, 0, frame(223, 1)).unwrap();
    m.handle_transmit(SimTime::ZERO, 2, frame(223, 2)).unwrap();
    let seen = drain(&mut m, SimTime::MAX);
    assert!(seen.is_empty(), "seed {SEED}: {seen:?}");
    assert_eq!(m.stats(0).dropped(DropReason::Collision).frames, 1);
    assert_eq!(m.stats(2).dropped(DropReason::Collision).frames, 1);
}

#[test]
fn carrier_sense_keeps_collisions_rare_among_radios_in_range() {
    let cfg = LinkConfig::profile("uhf-csma").unwrap();
    let mut sim = Simulator::new(SEED);
    let nodes: Vec<_> = (0..4)
        .map(|_| sim.add_node(RefEndpoint::saturating(223)))
        .collect();
    let l = sim.add_medium(&nodes, Adjacency::full(4), &cfg).unwrap();
    sim.run_until(SimTime::from_secs(60));
    let (mut sent, mut collided, mut air) = (0, 0, 0);
    for &n in &nodes {
        let st = sim.link_stats(l, n).unwrap();
        sent += st.sent.frames;
        collided += st.dropped(DropReason::Collision).frames;
        air += st.air_nanos;
    }
    // Each frame is heard by 3 receivers.
    let collision_rate = collided as f64 / (3 * sent) as f64;
    let utilisation = air as f64 / 60e9;
    assert!(collision_rate < 0.06, "seed {SEED}: {collision_rate}");
    assert!(utilisation > 0.75, "seed {SEED}: utilisation {utilisation}");
}

#[test]
fn relay_chain_forwards_only_to_neighbours() {
    // In a chain of 5 every radio hears at most 2 others.
    let adj = Adjacency::chain(5);
    assert!(adj.in_range(1, 2) && !adj.in_range(0, 2));
    let grid = Adjacency::grid(3, 3, 1.5);
    assert_eq!(grid.neighbors(4).len(), 8);
    assert_eq!(grid.neighbors(0).len(), 3);
}

#[test]
fn radio_queue_is_drop_tail_and_mtu_is_enforced() {
    let mut m = medium("profile=uhf-csma", Adjacency::full(2));
    assert_eq!(
        m.handle_transmit(SimTime::ZERO, 0, frame(224, 1)),
        Err(TransmitError::TooBig { len: 224, mtu: 223 })
    );
    let mut accepted = 0;
    while m.handle_transmit(SimTime::ZERO, 0, frame(200, 1)).is_ok() {
        accepted += 1;
    }
    // Nothing has left the queue yet (backoff pending): 20 x 200 B = 4000 <= 4096.
    assert_eq!(accepted, 20);
    assert_eq!(m.stats(0).dropped(DropReason::QueueFull).frames, 1);
    assert_eq!(m.info(SimTime::ZERO, 0).free, 96);
}

#[test]
fn lossy_profile_loses_ten_percent_per_receiver() {
    let cfg = LinkConfig::profile("uhf-csma-lossy").unwrap();
    let mut sim = Simulator::new(SEED);
    let a = sim.add_node(RefEndpoint::saturating(223).with_limit(223 * 20_000));
    let b = sim.add_node(RefEndpoint::sink());
    let l = sim.add_medium(&[a, b], Adjacency::full(2), &cfg).unwrap();
    sim.run_until(SimTime::from_secs(3600));
    let st = sim.link_stats(l, a).unwrap();
    assert_eq!(st.sent.frames, 20_000);
    let loss = st.dropped(DropReason::Loss).frames as f64 / 20_000.0;
    assert!((loss - 0.10).abs() < 0.011, "seed {SEED}: {loss}");
}

// --- txqueue: radios with and without a transmit queue ---

#[test]
fn an_unqueued_radio_overlaps_its_own_back_to_back_frames_and_both_collide() {
    // Serval's fakecsmaradio: each frame goes on the air the moment it is handed over.
    let mut m = medium("profile=uhf-csma,txqueue=none", Adjacency::full(3));
    m.handle_transmit(SimTime::ZERO, 0, frame(200, 1)).unwrap();
    m.handle_transmit(SimTime::ZERO, 0, frame(200, 2)).unwrap();
    let seen = drain(&mut m, SimTime::MAX);
    assert!(seen.is_empty(), "{seen:?}");
    let st = m.stats(0);
    assert_eq!(st.offered.frames, 2);
    assert_eq!(st.sent.frames, 2);
    // Both frames are lost at both receivers.
    assert_eq!(st.dropped(DropReason::Collision).frames, 4);
    assert_eq!(st.delivered.frames, 0);
    assert_eq!(m.stats(1).received.frames + m.stats(2).received.frames, 0);
}

#[test]
fn an_unqueued_radio_overlaps_a_frame_still_on_the_air() {
    // 200 + 8 B at 128 kbit/s = 13 ms; the second is handed over 5 ms into the first.
    let mut m = medium("profile=uhf-csma,txqueue=none", Adjacency::full(2));
    m.handle_transmit(SimTime::ZERO, 0, frame(200, 1)).unwrap();
    let t = SimTime::from_millis(5);
    m.handle_timeout(t);
    m.handle_transmit(t, 0, frame(200, 2)).unwrap();
    assert!(drain(&mut m, SimTime::MAX).is_empty());
    assert_eq!(m.stats(0).dropped(DropReason::Collision).frames, 2);
    // Handed over after the first ended, both arrive, with no backoff.
    let mut m = medium("profile=uhf-csma,txqueue=none", Adjacency::full(2));
    m.handle_transmit(SimTime::ZERO, 0, frame(200, 1)).unwrap();
    let t = SimTime::from_millis(13);
    assert_eq!(t.as_nanos(), airtime_nanos(208, 128_000));
    m.handle_timeout(t);
    let mut seen = Vec::new();
    common::collect(&mut m, t, &mut seen);
    assert_eq!(seen.len(), 1, "the first arrived as it ended");
    m.handle_transmit(t, 0, frame(200, 2)).unwrap();
    seen.extend(drain(&mut m, SimTime::MAX));
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].time, t + std::time::Duration::from_millis(13));
}

#[test]
fn an_unqueued_radio_does_not_sense_the_carrier() {
    // Radio 1 is 5 ms into a frame (well past its preamble); radio 0 starts anyway, and
    // radio 2, hearing both, loses both. A queued radio would have deferred.
    let mut m = medium("profile=uhf-csma,txqueue=none", Adjacency::full(3));
    m.handle_transmit(SimTime::ZERO, 1, frame(200, 1)).unwrap();
    let t = SimTime::from_millis(5);
    m.handle_timeout(t);
    m.handle_transmit(t, 0, frame(200, 2)).unwrap();
    drain(&mut m, SimTime::MAX);
    assert_eq!(m.stats(2).received.frames, 0);
    assert_eq!(m.stats(0).dropped(DropReason::Collision).frames, 1, "at 2");
    assert_eq!(m.stats(1).dropped(DropReason::Collision).frames, 1, "at 2");
    // Each sender was transmitting while the other's frame arrived.
    assert_eq!(m.stats(0).dropped(DropReason::ReceiverBusy).frames, 1);
    assert_eq!(m.stats(1).dropped(DropReason::ReceiverBusy).frames, 1);
}

#[test]
fn an_unqueued_radio_reports_one_frame_of_room_only_while_silent() {
    let mut m = medium("profile=uhf-csma,txqueue=none", Adjacency::full(2));
    let idle = m.info(SimTime::ZERO, 0);
    assert_eq!((idle.free, idle.buffer, idle.mtu), (223, 223, 223));
    m.handle_transmit(SimTime::ZERO, 0, frame(223, 1)).unwrap();
    assert_eq!(m.info(SimTime::ZERO, 0).free, 0);
    // Still accepted while busy (and it will collide): the radio has nothing to refuse with.
    assert!(m.handle_transmit(SimTime::ZERO, 0, frame(10, 2)).is_ok());
    let mut writable = false;
    let t = SimTime::from_millis(20);
    m.handle_timeout(t);
    while let Some(ev) = m.poll_event() {
        writable |= ev == skywave_sim::LinkEvent::Writable { port: 0 };
    }
    assert!(writable, "the sender hears when the radio fell silent");
    assert_eq!(m.info(t, 0).free, 223);
    assert_eq!(
        m.handle_transmit(t, 0, frame(224, 3)),
        Err(TransmitError::TooBig { len: 224, mtu: 223 })
    );
}

#[test]
fn a_sender_that_respects_free_never_collides_with_itself_on_an_unqueued_radio() {
    let cfg = LinkConfig::parse_spec("profile=uhf-csma,txqueue=none").unwrap();
    let mut sim = Simulator::new(SEED);
    let a = sim.add_node(RefEndpoint::saturating(223).with_limit(223 * 1000));
    let b = sim.add_node(RefEndpoint::sink());
    let l = sim.add_medium(&[a, b], Adjacency::full(2), &cfg).unwrap();
    sim.run_until(SimTime::from_secs(60));
    let st = sim.link_stats(l, a).unwrap();
    assert_eq!(st.sent.frames, 1000);
    assert_eq!(st.delivered.frames, 1000);
    assert_eq!(st.dropped_total().frames, 0);
    // Back to back, with no backoff: 1000 x 14.4375 ms.
    let last = sim.node::<RefEndpoint>(b).unwrap().stats().last_rx.unwrap();
    assert_eq!(last.as_nanos(), 1000 * airtime_nanos(231, 128_000));
}

#[test]
fn a_queued_radio_sends_back_to_back_frames_one_after_the_other() {
    let mut m = medium("profile=uhf-csma", Adjacency::full(3));
    m.handle_transmit(SimTime::ZERO, 0, frame(200, 1)).unwrap();
    m.handle_transmit(SimTime::ZERO, 0, frame(200, 2)).unwrap();
    let seen = drain(&mut m, SimTime::MAX);
    assert_eq!(seen.len(), 4, "both frames at both receivers");
    assert_eq!(m.stats(0).dropped_total().frames, 0);
    for r in [1, 2] {
        let got: Vec<u8> = seen
            .iter()
            .filter(|s| s.port == r)
            .map(|s| s.frame[0])
            .collect();
        assert_eq!(got, [1, 2]);
    }
}

#[test]
fn txqueue_limits_the_frames_waiting() {
    // txqueue=1: the first frame waits out its backoff in the queue; the second finds the
    // queue full although 4 KiB of buffer are free.
    let mut m = medium("profile=uhf-csma,txqueue=1", Adjacency::full(2));
    m.handle_transmit(SimTime::ZERO, 0, frame(200, 1)).unwrap();
    assert_eq!(m.info(SimTime::ZERO, 0).free, 0);
    assert_eq!(
        m.handle_transmit(SimTime::ZERO, 0, frame(200, 2)),
        Err(TransmitError::QueueFull { len: 200, free: 0 })
    );
    let seen = drain(&mut m, SimTime::MAX);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].frame[0], 1);
    let st = m.stats(0);
    assert_eq!(st.dropped(DropReason::QueueFull).frames, 1);
    assert_eq!(st.sent.frames, 1);
    assert_eq!(m.info(SimTime::MAX, 0).free, 4096);
    // txqueue=2: both fit; the byte limit still applies.
    let mut m = medium("profile=uhf-csma,txqueue=2,buffer=300B", Adjacency::full(2));
    m.handle_transmit(SimTime::ZERO, 0, frame(200, 1)).unwrap();
    assert_eq!(
        m.handle_transmit(SimTime::ZERO, 0, frame(200, 2)),
        Err(TransmitError::QueueFull {
            len: 200,
            free: 100
        })
    );
    m.handle_transmit(SimTime::ZERO, 0, frame(100, 3)).unwrap();
    assert!(m.handle_transmit(SimTime::ZERO, 0, frame(1, 4)).is_err());
    assert_eq!(drain(&mut m, SimTime::MAX).len(), 2);
}

#[test]
fn txqueue_applies_to_csma_media_only() {
    for spec in ["profile=lfn,txqueue=none", "profile=hf-modem,txqueue=1"] {
        let e = LinkConfig::parse_spec(spec).unwrap_err().to_string();
        assert!(e.contains("'txqueue'") && e.contains("csma"), "{spec}: {e}");
    }
    // Switching a csma profile to another kind keeps the default, so that is fine...
    LinkConfig::parse_spec("profile=uhf-csma,kind=frame").unwrap();
    // ...but not with a csma-only queue.
    assert!(LinkConfig::parse_spec("profile=uhf-csma,txqueue=none,kind=frame").is_err());
}
