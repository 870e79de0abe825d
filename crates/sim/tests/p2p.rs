//! Point-to-point links against closed forms: serialization, pacing, queues, MTU, half
//! duplex, the HF modem's call drops, and the impairments' long-run rates.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{drain, frame, secs};
use skywave_sim::time::airtime_nanos;
use skywave_sim::{
    DropReason, Endpoint, LinkConfig, LinkInfo, LinkModel, PortId, RefEndpoint, SimTime, Simulator,
    TransmitError, link::Link,
};

const SEED: u64 = 0x5eed;

fn link(spec: &str) -> Link {
    Link::new(&LinkConfig::parse_spec(spec).unwrap(), SEED, 0).unwrap()
}

#[test]
fn n_bytes_take_8n_over_r_plus_overhead_and_delay() {
    // 100 datagrams of 1000 B + 28 B IP/UDP header (the default of a frame spec) + 8 B
    // overhead at 64 kbit/s, 250 ms one-way.
    let mut l = link("rate=64kbps,delay=250ms,overhead=8,buffer=1MiB");
    for i in 0..100 {
        l.handle_transmit(SimTime::ZERO, 0, frame(1000, i)).unwrap();
    }
    let seen = drain(&mut l, SimTime::MAX);
    assert_eq!(seen.len(), 100);
    let per_frame = airtime_nanos(1036, 64_000);
    assert_eq!(per_frame, 129_500_000);
    for (k, s) in seen.iter().enumerate() {
        let expect = (k as u64 + 1) * per_frame + 250_000_000;
        assert_eq!(s.time.as_nanos(), expect, "frame {k}");
        assert_eq!(s.port, 1);
        assert_eq!(
            s.frame.len(),
            1000,
            "the receiver gets the datagram, not the header"
        );
    }
    // Byte counters count bytes on the wire: datagram + header.
    let st = l.stats(0);
    assert_eq!(st.sent.bytes, 102_800);
    assert_eq!(st.delivered.bytes, 102_800);
    assert_eq!(st.air_nanos, 100 * per_frame);
    assert_eq!(l.stats(1).received.bytes, 102_800);
}

#[test]
fn without_a_header_n_bytes_take_exactly_8n_over_r() {
    let mut l = link("rate=64kbps,delay=250ms,overhead=8,buffer=1MiB,header=0B");
    for i in 0..100 {
        l.handle_transmit(SimTime::ZERO, 0, frame(1000, i)).unwrap();
    }
    let seen = drain(&mut l, SimTime::MAX);
    let per_frame = airtime_nanos(1008, 64_000);
    assert_eq!(per_frame, 126_000_000);
    assert_eq!(seen[99].time.as_nanos(), 100 * per_frame + 250_000_000);
    assert_eq!(l.stats(0).sent.bytes, 100_000);
    assert_eq!(l.stats(1).received.bytes, 100_000);
}

#[test]
fn the_largest_datagram_is_the_mtu_less_the_ip_udp_header() {
    let mut l = link("rate=1Mbps,mtu=1500");
    assert_eq!(l.info(SimTime::ZERO, 0).mtu, 1472);
    let err = l.handle_transmit(SimTime::ZERO, 0, frame(1473, 1));
    assert_eq!(
        err,
        Err(TransmitError::TooBig {
            len: 1473,
            mtu: 1472
        })
    );
    l.handle_transmit(SimTime::ZERO, 0, frame(1472, 2)).unwrap();
    let seen = drain(&mut l, SimTime::MAX);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].frame.len(), 1472);
    // A 1500 B IP packet on the wire.
    assert_eq!(l.stats(0).sent.bytes, 1500);
    assert_eq!(
        l.stats(0).refused,
        skywave_sim::Counter {
            frames: 1,
            bytes: 1501
        }
    );
    // The same on a named IP profile.
    let lfn = Link::new(&LinkConfig::profile("lfn").unwrap(), SEED, 0).unwrap();
    assert_eq!(lfn.info(SimTime::ZERO, 0).mtu, 1472);
}

#[test]
fn the_header_takes_airtime_queue_space_and_counts_as_sent() {
    // 1000 B + 28 B at 1 Mbit/s = 8.224 ms.
    let mut l = link("rate=1Mbps,buffer=2056B");
    l.handle_transmit(SimTime::ZERO, 0, frame(1000, 1)).unwrap();
    // The first is on the air; two more fill the 2056 B queue exactly (2 x 1028 B).
    l.handle_transmit(SimTime::ZERO, 0, frame(1000, 2)).unwrap();
    assert_eq!(l.info(SimTime::ZERO, 0).free, 1000);
    l.handle_transmit(SimTime::ZERO, 0, frame(1000, 3)).unwrap();
    assert_eq!(l.info(SimTime::ZERO, 0).free, 0);
    let err = l.handle_transmit(SimTime::ZERO, 0, frame(1, 4));
    assert_eq!(err, Err(TransmitError::QueueFull { len: 1, free: 0 }));
    let seen = drain(&mut l, SimTime::MAX);
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].time.as_nanos(), 8_224_000);
    assert_eq!(seen[2].time.as_nanos(), 3 * 8_224_000);
    let st = l.stats(0);
    assert_eq!(st.air_nanos, 3 * 8_224_000);
    assert_eq!(st.offered.bytes, 3 * 1028 + 29);
    assert_eq!(st.sent.bytes, 3 * 1028);
    assert_eq!(st.delivered.bytes, 3 * 1028);
    assert_eq!(st.dropped(DropReason::QueueFull).bytes, 29);
    assert_eq!(l.stats(1).received.bytes, 3 * 1028);
}

#[test]
fn one_megabyte_through_the_simulator_matches_closed_form() {
    let cfg = LinkConfig::parse_spec("rate=10Mbps,delay=20ms").unwrap();
    let mut sim = Simulator::new(SEED);
    let a = sim.add_node(RefEndpoint::saturating(1250).with_limit(1_000_000));
    let b = sim.add_node(RefEndpoint::sink());
    sim.connect(a, b, &cfg).unwrap();
    sim.run_until(secs(10.0));
    let sink = sim.node::<RefEndpoint>(b).unwrap().stats();
    assert_eq!(sink.recv_bytes, 1_000_000);
    // 800 datagrams of 1250 B + 28 B header: 8 * 1,022,400 / 1e7 = 0.81792 s of
    // serialization, plus 20 ms.
    assert_eq!(sink.last_rx, Some(secs(0.83792)), "seed {SEED}");
}

fn throughput(spec: &str, sender: RefEndpoint, secs_run: u64) -> (f64, u64) {
    let cfg = LinkConfig::parse_spec(spec).unwrap();
    let mut sim = Simulator::new(SEED);
    let a = sim.add_node(sender);
    let b = sim.add_node(RefEndpoint::sink());
    let l = sim.connect(a, b, &cfg).unwrap();
    sim.run_until(SimTime::from_secs(secs_run));
    let sink = sim.node::<RefEndpoint>(b).unwrap().stats().clone();
    let drops = sim
        .link_stats(l, a)
        .unwrap()
        .dropped(DropReason::QueueFull)
        .frames;
    let (first, last) = (sink.first_rx.unwrap(), sink.last_rx.unwrap());
    // Bits delivered after the first frame, over the time they took.
    let bits = (sink.recv_bytes - sink.recv_bytes / sink.recv_frames) as f64 * 8.0;
    (bits / (last - first).as_secs_f64(), drops)
}

#[test]
fn paced_sender_throughput_equals_link_rate() {
    // The link carries 1028 B per 1000 B datagram: pacing the datagrams at the link rate
    // less the header share fills it exactly.
    let payload_bps = 2e6 * 1000.0 / 1028.0;
    let (bps, drops) = throughput(
        "rate=2Mbps,delay=50ms",
        RefEndpoint::paced(payload_bps as u64, 1000),
        30,
    );
    assert!(
        (bps / payload_bps - 1.0).abs() < 1e-4,
        "seed {SEED}: {bps} bit/s"
    );
    assert_eq!(drops, 0);
    let (bps, _) = throughput(
        "rate=2Mbps,delay=50ms",
        RefEndpoint::paced(500_000, 1000),
        30,
    );
    assert!((bps / 5e5 - 1.0).abs() < 1e-4, "seed {SEED}: {bps} bit/s");
}

#[test]
fn saturating_sender_fills_the_link_without_drops() {
    // Datagrams of mtu - header = 1472 B; the header's share of the rate is not goodput.
    let (bps, drops) = throughput("rate=30Mbps,delay=115ms", RefEndpoint::saturating(1500), 5);
    let payload_bps = 30e6 * 1472.0 / 1500.0;
    assert!(
        (bps / payload_bps - 1.0).abs() < 1e-4,
        "seed {SEED}: {bps} bit/s"
    );
    assert_eq!(drops, 0, "a sender that respects free space never overruns");
}

#[test]
fn asymmetric_rates_per_direction() {
    let cfg = LinkConfig::profile("satellite").unwrap();
    let cfg = LinkConfig {
        up: skywave_sim::DirConfig {
            loss: skywave_sim::LossModel::None,
            ..cfg.up.clone()
        },
        down: skywave_sim::DirConfig {
            loss: skywave_sim::LossModel::None,
            ..cfg.down.clone()
        },
        ..cfg
    };
    let mut sim = Simulator::new(SEED);
    let a = sim.add_node(RefEndpoint::saturating(1500));
    let b = sim.add_node(RefEndpoint::saturating(1500));
    let l = sim.connect(a, b, &cfg).unwrap();
    sim.run_until(SimTime::from_secs(10));
    let up = sim.link_stats(l, a).unwrap().delivered.bytes as f64 * 8.0 / 9.7;
    let down = sim.link_stats(l, b).unwrap().delivered.bytes as f64 * 8.0 / 9.7;
    assert!((up / 2e6 - 1.0).abs() < 0.01, "up {up}");
    assert!((down / 20e6 - 1.0).abs() < 0.01, "down {down}");
}

#[test]
fn mtu_refuses_oversize_frames_never_truncates() {
    let mut l = link("rate=1Mbps,mtu=1500,header=0B");
    let err = l.handle_transmit(SimTime::ZERO, 0, frame(1501, 1));
    assert_eq!(
        err,
        Err(TransmitError::TooBig {
            len: 1501,
            mtu: 1500
        })
    );
    l.handle_transmit(SimTime::ZERO, 0, frame(1500, 2)).unwrap();
    let seen = drain(&mut l, SimTime::MAX);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].frame.len(), 1500);
    assert_eq!(l.stats(0).refused.frames, 1);
    assert_eq!(l.stats(0).offered.frames, 1);
    assert_eq!(l.info(SimTime::ZERO, 0).mtu, 1500);
}

#[test]
fn drop_tail_counts_only_bytes_waiting_to_be_sent() {
    // 1000 B datagrams + 28 B header take 1.028 s each; 5 s one-way delay.
    let mut l = link("rate=8kbps,delay=5s,buffer=3084B");
    let t0 = SimTime::ZERO;
    // The first goes straight on the air and does not count against the queue.
    for i in 0..4 {
        l.handle_transmit(t0, 0, frame(1000, i)).unwrap();
    }
    assert_eq!(l.info(t0, 0).free, 0);
    let err = l.handle_transmit(t0, 0, frame(1, 9));
    assert_eq!(err, Err(TransmitError::QueueFull { len: 1, free: 0 }));
    assert_eq!(l.stats(0).dropped(DropReason::QueueFull).frames, 1);
    // After 4 s everything has left the air but is still propagating: the queue is empty,
    // and the largest datagram that fits is the queue less one header.
    l.handle_timeout(SimTime::from_secs(4));
    assert_eq!(l.info(SimTime::from_secs(4), 0).free, 3084 - 28);
    let seen = drain(&mut l, SimTime::MAX);
    assert_eq!(seen.len(), 4);
    assert_eq!(seen[3].time, secs(9.112));
}

#[test]
fn bdp_buffer_is_rate_times_rtt() {
    let cfg = LinkConfig::profile("lfn").unwrap();
    // 30 Mbit/s x 230 ms = 862,500 B.
    assert_eq!(cfg.buffer_bytes(skywave_sim::Side::A), 862_500);
    let l = Link::new(&cfg, SEED, 0).unwrap();
    // Free space is for a datagram, whose header also takes queue space.
    assert_eq!(l.info(SimTime::ZERO, 0).free, 862_500 - 28);
    assert_eq!(l.info(SimTime::ZERO, 0).buffer, 862_500);
}

#[test]
fn half_duplex_one_over_each_way_costs_one_turnaround() {
    // 100 B at 800 bit/s = 1 s; turnaround 2 s; one-way 4 s. A half-duplex radio's frames
    // carry no IP header.
    let mut l = link("rate=800bps,delay=4s,duplex=half,turnaround=2s,header=0B");
    l.handle_transmit(SimTime::ZERO, 0, frame(100, 1)).unwrap();
    l.handle_transmit(SimTime::ZERO, 1, frame(100, 2)).unwrap();
    let seen = drain(&mut l, SimTime::MAX);
    assert_eq!(seen.len(), 2);
    assert_eq!((seen[0].port, seen[0].time), (1, SimTime::from_secs(5)));
    // B waits for A's frame (1 s) and the turnaround (2 s), then sends (1 s).
    assert_eq!((seen[1].port, seen[1].time), (0, SimTime::from_secs(8)));
    assert_eq!(l.stats(0).turnarounds + l.stats(1).turnarounds, 1);
    assert_eq!(l.stats(1).turnarounds, 1);
}

#[test]
fn half_duplex_never_has_both_directions_on_the_air() {
    let mut l = link("rate=800bps,delay=0,duplex=half,turnaround=500ms,header=0B");
    for i in 0..5 {
        l.handle_transmit(SimTime::ZERO, 0, frame(100, i)).unwrap();
        l.handle_transmit(SimTime::ZERO, 1, frame(100, i)).unwrap();
    }
    let seen = drain(&mut l, SimTime::MAX);
    // A sends its 5 (5 s), turnaround, B sends its 5: no interleaving, one turnaround.
    let ports: Vec<usize> = seen.iter().map(|s| s.port).collect();
    assert_eq!(ports, [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]);
    assert_eq!(seen[9].time, secs(10.5));
    assert_eq!(l.stats(1).turnarounds, 1);
}

#[test]
fn half_duplex_max_over_alternates_saturating_sides() {
    // Frames of 100 B take 1 s; overs of at most 10 s; 2 s turnaround: a 12 s cycle per
    // side, so 24 s per full exchange, with 10 frames each way per exchange.
    let cfg = LinkConfig::parse_spec(
        "rate=800bps,duplex=half,turnaround=2s,over=10s,buffer=1KiB,header=0B",
    )
    .unwrap();
    let mut sim = Simulator::new(SEED);
    let a = sim.add_node(RefEndpoint::saturating(100));
    let b = sim.add_node(RefEndpoint::saturating(100));
    let l = sim.connect(a, b, &cfg).unwrap();
    sim.run_until(SimTime::from_secs(239));
    let (sa, sb) = (sim.link_stats(l, a).unwrap(), sim.link_stats(l, b).unwrap());
    // B gains the turn at 10 + 24k s, A at 22 + 24k s: 10 times each by 239 s (A's last
    // turnaround, from 238 s, is still running).
    assert_eq!(sb.turnarounds, 10, "seed {SEED}");
    assert_eq!(sa.turnarounds, 10, "seed {SEED}");
    assert_eq!(sa.sent.frames, 100);
    assert_eq!(sb.sent.frames, 100);
    // Airtime accounting: 200 s of frames + 19 whole turnarounds x 2 s = 238 s.
    assert_eq!(sa.air_nanos + sb.air_nanos, 200_000_000_000);
}

#[test]
fn hf_modem_saturated_for_1000s_delivers_at_the_line_rate_without_drops() {
    let cfg = LinkConfig::profile("hf-modem").unwrap();
    let mut sim = Simulator::new(SEED);
    let a = sim.add_node(RefEndpoint::saturating(256));
    let b = sim.add_node(RefEndpoint::sink());
    let l = sim.connect(a, b, &cfg).unwrap();
    sim.run_until(SimTime::from_secs(1000));
    let st = sim.link_stats(l, a).unwrap();
    assert_eq!(st.call_drops, 0, "seed {SEED}");
    assert_eq!(st.dropped_total().frames, 0);
    let got = sim.node::<RefEndpoint>(b).unwrap().stats().recv_bytes as f64;
    // The line is busy from t=0; bytes that left by t = 996 s have arrived.
    let expect = 996.0 * 1475.0 / 8.0;
    assert!(
        (got - expect).abs() <= 64.0,
        "seed {SEED}: {got} vs {expect}"
    );
}

/// Writes scripted sizes at scripted times, ignoring the free space it is told about.
struct Writer {
    script: Vec<(SimTime, usize)>,
    next: usize,
    errors: Vec<TransmitError>,
    states: Vec<(SimTime, bool)>,
    received: usize,
}

impl Writer {
    fn new(script: &[(SimTime, usize)]) -> Self {
        Writer {
            script: script.to_vec(),
            next: 0,
            errors: Vec::new(),
            states: Vec::new(),
            received: 0,
        }
    }
}

impl Endpoint for Writer {
    fn handle_frame(&mut self, _now: SimTime, _port: PortId, frame: Bytes) {
        self.received += frame.len();
    }
    fn handle_link_state(&mut self, now: SimTime, _port: PortId, up: bool) {
        self.states.push((now, up));
    }
    fn handle_transmit_error(&mut self, _now: SimTime, _port: PortId, e: &TransmitError) {
        self.errors.push(e.clone());
    }
    fn poll_transmit(&mut self, now: SimTime, _port: PortId, _l: &LinkInfo) -> Option<Bytes> {
        let &(t, len) = self.script.get(self.next)?;
        if now < t {
            return None;
        }
        self.next += 1;
        Some(frame(len, 7))
    }
    fn poll_timeout(&mut self) -> Option<SimTime> {
        self.script.get(self.next).map(|s| s.0)
    }
}

fn hf_run(script: &[(SimTime, usize)], until: u64) -> (Simulator, skywave_sim::NodeId) {
    let cfg = LinkConfig::profile("hf-modem").unwrap();
    let mut sim = Simulator::new(SEED);
    let a = sim.add_node(Writer::new(script));
    let b = sim.add_node(Writer::new(&[]));
    sim.connect(a, b, &cfg).unwrap();
    sim.run_until(SimTime::from_secs(until));
    (sim, a)
}

#[test]
fn hf_modem_buffer_exactly_full_does_not_drop() {
    let (sim, a) = hf_run(&[(SimTime::ZERO, 1024)], 30);
    let w = sim.node::<Writer>(a).unwrap();
    assert!(w.errors.is_empty(), "{:?}", w.errors);
    assert_eq!(
        sim.node::<Writer>(skywave_sim::NodeId(1)).unwrap().received,
        1024
    );
}

#[test]
fn hf_modem_overrun_drops_the_call_and_redials_after_60s() {
    let t = SimTime::from_secs;
    // 1000 B then 100 B at once: 1100 > 1024 free (a chunk on the air still counts).
    let script = [(t(0), 1000), (t(0), 100), (t(30), 10), (t(61), 10)];
    let (sim, a) = hf_run(&script, 120);
    let w = sim.node::<Writer>(a).unwrap();
    assert_eq!(
        w.errors,
        [
            TransmitError::CallDropped { len: 100, free: 24 },
            TransmitError::LinkDown
        ]
    );
    assert_eq!(w.states, [(t(0), false), (t(60), true)]);
    let b = sim.node::<Writer>(skywave_sim::NodeId(1)).unwrap();
    // Nothing from before the drop arrives; the write after the redial does.
    assert_eq!(b.received, 10);
    let st = sim.link_stats(skywave_sim::LinkId(0), a).unwrap();
    assert_eq!(st.call_drops, 1);
    assert_eq!(st.dropped(DropReason::CallDropped).bytes, 1100);
    assert_eq!(st.dropped(DropReason::LinkDown).bytes, 10);
}

#[test]
fn hf_modem_buffer_space_drains_continuously() {
    let cfg = LinkConfig::profile("hf-modem").unwrap();
    let mut l = Link::new(&cfg, SEED, 0).unwrap();
    l.handle_transmit(SimTime::ZERO, 0, frame(1024, 1)).unwrap();
    assert_eq!(l.info(SimTime::ZERO, 0).free, 0);
    // 1475 bit/s = 184.375 B/s: after 2 s about 368 bytes have left.
    l.handle_timeout(SimTime::from_secs(2));
    let free = l.info(SimTime::from_secs(2), 0).free;
    assert!((360..=369).contains(&free), "{free}");
}

fn impaired(spec: &str, frames: u64) -> (Simulator, skywave_sim::NodeId, skywave_sim::LinkId) {
    let cfg = LinkConfig::parse_spec(spec).unwrap();
    let mut sim = Simulator::new(SEED);
    let a = sim.add_node(RefEndpoint::saturating(100).with_limit(frames * 100));
    let b = sim.add_node(RefEndpoint::sink());
    let l = sim.connect(a, b, &cfg).unwrap();
    sim.run_until(SimTime::from_secs(3600));
    (sim, a, l)
}

#[test]
fn bernoulli_loss_matches_its_rate() {
    let n = 200_000;
    let (sim, a, l) = impaired("rate=100Mbps,delay=1ms,loss=5%", n);
    let st = sim.link_stats(l, a).unwrap();
    assert_eq!(st.sent.frames, n);
    let lost = st.dropped(DropReason::Loss).frames;
    assert_eq!(lost + st.delivered.frames, n);
    let rate = lost as f64 / n as f64;
    // 5 sigma of a binomial(200000, 0.05) is 0.0024.
    assert!((rate - 0.05).abs() < 0.0025, "seed {SEED}: loss {rate}");
}

#[test]
fn gilbert_elliott_long_run_loss_matches_stationary_rate() {
    let n = 400_000;
    let spec = "rate=100Mbps,delay=1ms,ge=1%,10%,20%,99%";
    let ge = skywave_sim::GilbertElliott {
        p: 0.01,
        r: 0.10,
        h: 0.20,
        k: 0.99,
    };
    let expect = ge.stationary_loss();
    assert!((expect - 0.081818).abs() < 1e-5);
    let (sim, a, l) = impaired(spec, n);
    let st = sim.link_stats(l, a).unwrap();
    let rate = st.dropped(DropReason::Loss).frames as f64 / n as f64;
    assert!(
        (rate - expect).abs() < 0.004,
        "seed {SEED}: loss {rate}, stationary {expect}"
    );
}

#[test]
fn gilbert_elliott_losses_come_in_bursts() {
    // Pure Gilbert (h=0, k=1): every loss is in the bad state, whose mean sojourn is
    // 1/r = 5 frames, so the mean run of consecutive losses is 5.
    let cfg = LinkConfig::parse_spec("rate=100Mbps,ge=2%,20%,0,1").unwrap();
    let mut l = Link::new(&cfg, SEED, 0).unwrap();
    let n = 100_000u64;
    let mut lost_flags = Vec::with_capacity(n as usize);
    let mut t = SimTime::ZERO;
    for i in 0..n {
        let before = l.stats(0).dropped(DropReason::Loss).frames;
        l.handle_transmit(t, 0, Bytes::from(i.to_be_bytes().to_vec()))
            .unwrap();
        t = t.plus(Duration::from_millis(1));
        l.handle_timeout(t);
        lost_flags.push(l.stats(0).dropped(DropReason::Loss).frames > before);
        while l.poll_event().is_some() {}
    }
    let losses = lost_flags.iter().filter(|&&x| x).count() as f64;
    let runs = lost_flags.windows(2).filter(|w| w[1] && !w[0]).count() as f64;
    let mean_run = losses / runs;
    assert!(
        (mean_run - 5.0).abs() < 0.4,
        "seed {SEED}: mean burst {mean_run}"
    );
}

trait Plus {
    fn plus(self, d: Duration) -> SimTime;
}
impl Plus for SimTime {
    fn plus(self, d: Duration) -> SimTime {
        self + d
    }
}

#[test]
fn jitter_stays_in_bounds_and_never_reorders_by_itself() {
    let (sim, a, l) = impaired("rate=10Mbps,delay=100ms,jitter=20ms,corr=25%", 20_000);
    let sink = sim
        .node::<RefEndpoint>(skywave_sim::NodeId(1))
        .unwrap()
        .stats();
    assert_eq!(sink.out_of_order, 0, "seed {SEED}");
    assert_eq!(sim.link_stats(l, a).unwrap().delivered.frames, 20_000);
    // First frame: (100 + 28) B = 102.4 us serialization + 100 ms +- 20 ms.
    let first = sink.first_rx.unwrap().as_secs_f64();
    assert!((0.0801..=0.12011).contains(&first), "{first}");
}

#[test]
fn reorder_duplicate_and_corrupt_rates() {
    let n = 50_000;
    let (sim, a, l) = impaired("rate=10Mbps,delay=10ms,reorder=2%,dup=3%,corrupt=4%", n);
    let st = sim.link_stats(l, a).unwrap();
    let sink = sim
        .node::<RefEndpoint>(skywave_sim::NodeId(1))
        .unwrap()
        .stats();
    let frac = |x: u64| x as f64 / n as f64;
    assert!((frac(st.reordered) - 0.02).abs() < 0.003, "seed {SEED}");
    assert!((frac(st.duplicated) - 0.03).abs() < 0.004, "seed {SEED}");
    assert!((frac(st.corrupted) - 0.04).abs() < 0.004, "seed {SEED}");
    assert_eq!(st.delivered.frames, n + st.duplicated);
    assert_eq!(sink.recv_frames, n + st.duplicated);
    // A held-back frame is overtaken by the ~125 frames sent in the next 10 ms.
    assert!(sink.out_of_order >= st.reordered, "seed {SEED}");
}

#[test]
fn crc_drops_corrupted_frames() {
    let n = 20_000;
    let (sim, a, l) = impaired("rate=10Mbps,corrupt=10%,crc=on", n);
    let st = sim.link_stats(l, a).unwrap();
    let dropped = st.dropped(DropReason::Corrupt).frames;
    assert_eq!(st.corrupted, 0);
    assert_eq!(dropped + st.delivered.frames, n);
    assert!(
        (dropped as f64 / n as f64 - 0.1).abs() < 0.011,
        "seed {SEED}"
    );
    let _ = sim;
}
