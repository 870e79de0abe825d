//! `skywave demo`: the first command to run. Two nodes sync sample bundles over a
//! simulated link (the HF modem by default) in virtual time, with a live timeline on
//! stderr and a closing table against the link's capacity and LBARD's published figures.
//!
//! It is a lab run (`skywave_lab::run_with` with the skywave agent: the real protocol over
//! real stores in temporary directories) of a workload built here, not one of the lab's
//! named scenarios. Each node's agent is wrapped to watch the run as it happens (bytes
//! handed to the link, bundles accepted); the figures of the closing table come from the
//! lab's report.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;

use anyhow::Context;
use bytes::Bytes;
use clap::Args;
use serde::Serialize;
use skywave_lab::plot::rate_label;
use skywave_lab::scenario::MANIFEST_LEN;
use skywave_lab::{
    Accepted, AgentFactory, AgentStats, BundleKey, BundleKind, BundleSpec, Completion, LabAgent,
    LabError, NodeContext, Progress, Report, RunOptions, Scenario, SkywaveAgent, SkywaveFactory,
    Topology, Workload,
};
use skywave_sim::{
    Duplex, Endpoint, LinkConfig, LinkInfo, LinkKind, PROFILES, PortId, SimTime, TransmitError,
};

/// Sample bundles' payload size (as in the lab's hf-100x100).
const PAYLOAD: u64 = 100;
/// The text message's size (an SMS-sized note).
const MESSAGE: u64 = 160;
/// Key blocks: shared bundles, A's new ones, B's new ones, the message.
const GROUP: u64 = 1 << 32;
/// Virtual time after which the run stops, synced or not.
const DEADLINE_SECS: u64 = 8 * 3600;

/// LBARD's published figures (shared/design.md, the lab's scenarios).
const LBARD_HF_100X100_SECS: (f64, f64) = (4.0 * 3600.0, 5.0 * 3600.0);
const LBARD_HF_BUNDLES_PER_1000S: u64 = 33;
const LBARD_HF_BYTES_PER_SEC: f64 = 80.0;
const LBARD_UHF_100X100_SECS: f64 = 345.9;
const LBARD_UHF_100X100_BYTES: u64 = 306_944;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Link profile the two nodes share (see `skywave lab list`; `formant-RTT-LOSS` as
    /// e.g. `formant-180-1`), or a link spec such as `profile=hf-modem,delay=8s`.
    #[arg(long, default_value = "hf-modem", value_name = "PROFILE")]
    pub profile: String,
    /// Seed of every random stream of the run; the same seed gives the same figures.
    #[arg(long, default_value = "1", value_name = "N", value_parser = parse_seed)]
    pub seed: u64,
    /// New bundles (100 B payloads) at each node that the other lacks.
    #[arg(long, default_value = "100", value_name = "N", value_parser = parse_count)]
    pub bundles: u64,
    /// Bundles both nodes already hold (the sync must not resend them).
    #[arg(long, default_value = "10000", value_name = "N")]
    pub shared: u64,
    /// Where the nodes' temporary stores live; default /dev/shm when it exists (fast,
    /// nothing touches the disk), else the system's temporary directory.
    #[arg(long, value_name = "DIR")]
    pub store_dir: Option<PathBuf>,
    /// Write B's message as an ordinary file (no priority), to see what priorities do.
    #[arg(long)]
    pub message_as_file: bool,
    /// When B writes its message, in seconds of virtual time; default a quarter of the
    /// time a perfect sender would need for the new bundles (50 s on `hf-modem`), so
    /// that the message meets the bulk in flight.
    #[arg(long, value_name = "SECONDS", value_parser = parse_at)]
    pub message_at: Option<f64>,
}

fn parse_at(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && (0.0..=DEADLINE_SECS as f64).contains(&t) => Ok(t),
        _ => Err(format!("expected seconds from 0 to {DEADLINE_SECS}")),
    }
}

fn parse_seed(s: &str) -> Result<u64, String> {
    s.parse::<u64>()
        .map_err(|_| format!("expected a seed: an integer from 0 to {}", u64::MAX))
}

fn parse_count(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if (1..=100_000).contains(&n) => Ok(n),
        _ => Err("expected a number of bundles from 1 to 100000".to_string()),
    }
}

/// The demo's workload, as reported.
#[derive(Clone, Debug, Serialize)]
struct DemoWorkload {
    shared: u64,
    new_per_node: u64,
    payload_bytes: u64,
    message_bytes: u64,
    message_at_seconds: f64,
}

/// One line of the live timeline.
#[derive(Clone, Debug, Serialize)]
struct Sample {
    virtual_seconds: f64,
    a_to_b: u64,
    b_to_a: u64,
    /// Bytes both nodes handed to the link so far (see [`Monitor::sent`]).
    bytes_sent: u64,
}

/// What LBARD achieved on a comparable link, next to this run's figure.
#[derive(Clone, Debug, Serialize)]
struct Comparison {
    measure: String,
    skywave: String,
    lbard: String,
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
struct DemoReport {
    profile: String,
    seed: u64,
    workload: DemoWorkload,
    /// Virtual time when both nodes held everything (the message included).
    sync_seconds: Option<f64>,
    message_latency_seconds: Option<f64>,
    /// Bundles delivered per direction by t = 1000 s (LBARD's HF measure).
    delivered_by_1000s: BTreeMap<String, u64>,
    lbard: Vec<Comparison>,
    timeline: Vec<Sample>,
    report: Report,
}

/// The run as it happens, shared by the two nodes' wrappers.
struct Monitor {
    /// Bytes each node handed to its link (and the link took): on the air, or waiting in
    /// a radio's queue.
    sent: [u64; 2],
    /// Bundles accepted per direction: [A->B, B->A], and by t = 1000 s.
    delivered: [u64; 2],
    delivered_by_1000s: [u64; 2],
    next_mark: f64,
    step: f64,
    timeline: Vec<Sample>,
}

impl Monitor {
    fn sample(&self, at: f64) -> Sample {
        Sample {
            virtual_seconds: at,
            a_to_b: self.delivered[0],
            b_to_a: self.delivered[1],
            bytes_sent: self.sent[0] + self.sent[1],
        }
    }

    /// Called with the time of each event before it is handled: one timeline line for
    /// the last mark passed (nothing happened between the previous event and now).
    fn tick(&mut self, now: SimTime) {
        let t = now.as_secs_f64();
        if t < self.next_mark {
            return;
        }
        let mut mark = self.next_mark;
        while self.next_mark <= t {
            mark = self.next_mark;
            self.next_mark += self.step;
        }
        self.record(mark, "");
        // Keep the timeline short on a slow run: double the step every 10 lines.
        if self.timeline.len().is_multiple_of(10) {
            self.step *= 2.0;
            self.next_mark = mark + self.step;
        }
    }

    fn record(&mut self, at: f64, note: &str) {
        let s = self.sample(at);
        let line = format!(
            "  {:>12} {:>8} {:>8} {:>12}  {note}",
            secs_short(at),
            s.a_to_b,
            s.b_to_a,
            crate::util::grouped(s.bytes_sent)
        );
        eprintln!("{}", line.trim_end());
        self.timeline.push(s);
    }

    fn accept(&mut self, receiver: usize, a: &Accepted) {
        if receiver < 2 {
            // Every bundle a node accepts came from the other one.
            self.delivered[1 - receiver] += 1;
            if a.at.as_secs_f64() <= 1000.0 {
                self.delivered_by_1000s[1 - receiver] += 1;
            }
        }
    }
}

/// A skywave agent that tells the monitor what it sends and accepts.
struct Watched {
    inner: SkywaveAgent,
    index: usize,
    seen: usize,
    last_sent: usize,
    mon: Rc<RefCell<Monitor>>,
}

impl Watched {
    fn before(&self, now: SimTime) {
        self.mon.borrow_mut().tick(now);
    }

    fn after(&mut self) {
        let acc = self.inner.accepted();
        if acc.len() > self.seen {
            let mut m = self.mon.borrow_mut();
            for a in &acc[self.seen..] {
                m.accept(self.index, a);
            }
            self.seen = acc.len();
        }
    }
}

impl Endpoint for Watched {
    fn handle_frame(&mut self, now: SimTime, port: PortId, frame: Bytes) {
        self.before(now);
        self.inner.handle_frame(now, port, frame);
        self.after();
    }

    fn handle_link_state(&mut self, now: SimTime, port: PortId, up: bool) {
        self.before(now);
        self.inner.handle_link_state(now, port, up);
        self.after();
    }

    fn handle_transmit_error(&mut self, now: SimTime, port: PortId, error: &TransmitError) {
        // The link refused what `poll_transmit` just returned: it never went on the air.
        if let Some(n) = self.mon.borrow_mut().sent.get_mut(self.index) {
            *n = n.saturating_sub(self.last_sent as u64);
        }
        self.inner.handle_transmit_error(now, port, error);
    }

    fn handle_timeout(&mut self, now: SimTime) {
        self.before(now);
        self.inner.handle_timeout(now);
        self.after();
    }

    fn poll_transmit(&mut self, now: SimTime, port: PortId, link: &LinkInfo) -> Option<Bytes> {
        let frame = self.inner.poll_transmit(now, port, link);
        self.last_sent = frame.as_ref().map_or(0, |f| f.len());
        if let Some(n) = self.mon.borrow_mut().sent.get_mut(self.index) {
            *n += self.last_sent as u64;
        }
        frame
    }

    fn poll_timeout(&mut self) -> Option<SimTime> {
        self.inner.poll_timeout()
    }
}

impl LabAgent for Watched {
    fn attach_link(&mut self, port: PortId, link: &LinkConfig, dials: bool) {
        self.inner.attach_link(port, link, dials);
    }

    fn handle_insert(&mut self, now: SimTime, bundle: &BundleSpec) {
        self.inner.handle_insert(now, bundle);
        self.after();
    }

    fn handle_append(&mut self, now: SimTime, key: BundleKey, bytes: u64) {
        self.inner.handle_append(now, key, bytes);
        self.after();
    }

    fn accepted(&self) -> &[Accepted] {
        self.inner.accepted()
    }

    fn stats(&self) -> AgentStats {
        self.inner.stats()
    }

    fn finish(&mut self, now: SimTime) {
        self.inner.finish(now);
    }

    fn failure(&self) -> Option<String> {
        self.inner.failure()
    }
}

struct WatchedFactory {
    inner: SkywaveFactory,
    mon: Rc<RefCell<Monitor>>,
}

impl AgentFactory for WatchedFactory {
    type Agent = Watched;

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn create(&self, ctx: NodeContext<'_>) -> Result<Watched, LabError> {
        let index = ctx.index;
        Ok(Watched {
            inner: self.inner.create(ctx)?,
            index,
            seen: 0,
            last_sent: 0,
            mon: Rc::clone(&self.mon),
        })
    }
}

fn plain(key: u64, payload_len: u64) -> BundleSpec {
    BundleSpec {
        key: BundleKey(key),
        kind: BundleKind::Plain,
        payload_len,
        manifest_len: MANIFEST_LEN,
    }
}

/// 1, 2 or 5 times a power of ten, at most `x` (at least a microsecond).
fn nice_below(x: f64) -> f64 {
    let x = x.max(1e-6);
    let p = 10f64.powf(x.log10().floor());
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * p)
        .find(|v| *v <= x)
        .unwrap_or(p)
}

/// The time a perfect sender would need for the new bundles: a scale for the timeline
/// and for when the message is written.
fn ideal_seconds(cfg: &LinkConfig, useful_bytes: u64) -> f64 {
    let rate = match (cfg.kind, cfg.duplex) {
        (LinkKind::Csma, _) | (_, Duplex::Half) => cfg.up.rate_bps as f64,
        _ => (cfg.up.rate_bps + cfg.down.rate_bps) as f64,
    };
    useful_bytes as f64 * 8.0 / rate.max(1.0)
}

fn build(args: &DemoArgs, cfg: &LinkConfig) -> (Scenario, DemoWorkload) {
    let n = args.bundles;
    let useful = (2 * n + 1) * (MANIFEST_LEN + PAYLOAD);
    let message_at = args
        .message_at
        .unwrap_or_else(|| nice_below(ideal_seconds(cfg, useful) / 4.0));
    let mut initial = Vec::new();
    for i in 0..args.shared {
        initial.push((0, plain(i, PAYLOAD)));
        initial.push((1, plain(i, PAYLOAD)));
    }
    for node in 0..2 {
        let base = (1 + node as u64) * GROUP;
        initial.extend((0..n).map(|i| (node, plain(base + i, PAYLOAD))));
    }
    let message = skywave_lab::scenario::Action {
        at: SimTime::from_nanos((message_at * 1e9).round() as u64),
        node: 1,
        op: skywave_lab::scenario::Op::Insert(BundleSpec {
            kind: if args.message_as_file {
                BundleKind::Plain
            } else {
                BundleKind::Message
            },
            ..plain(3 * GROUP, MESSAGE)
        }),
    };
    let scenario = Scenario {
        name: "demo".to_string(),
        summary: format!(
            "2 nodes, {} shared + {n} new each ({PAYLOAD} B payloads), a {MESSAGE} B message from B at t={}",
            args.shared,
            secs(message_at)
        ),
        link: args.profile.clone(),
        topology: Topology::pair(),
        workload: Workload {
            initial,
            actions: vec![message],
        },
        deadline: SimTime::from_secs(DEADLINE_SECS),
        completion: Completion::AllSynced,
    };
    let workload = DemoWorkload {
        shared: args.shared,
        new_per_node: n,
        payload_bytes: PAYLOAD,
        message_bytes: MESSAGE,
        message_at_seconds: message_at,
    };
    (scenario, workload)
}

pub fn run(args: DemoArgs, json: bool) -> anyhow::Result<ExitCode> {
    let cfg = LinkConfig::lookup(&args.profile, &BTreeMap::new()).map_err(|e| {
        anyhow::anyhow!(
            "invalid value '{}' for field '--profile': {e} (see `skywave lab list`; or a link spec, docs/sim.md)",
            args.profile
        )
    })?;
    let (scenario, workload) = build(&args, &cfg);
    let scratch = crate::util::ram_store_dir(args.store_dir.as_deref())?;
    let describe = PROFILES
        .iter()
        .find(|p| p.name == args.profile)
        .map_or_else(|| cfg.to_spec(), |p| p.summary.to_string());
    eprintln!("skywave demo: two nodes, A and B, over {}", args.profile);
    eprintln!("  link: {describe}");
    eprintln!(
        "  both hold {} bundles; each has {} new bundles ({PAYLOAD} B) the other lacks; B writes a {MESSAGE} B message at t={}",
        crate::util::grouped(args.shared),
        crate::util::grouped(args.bundles),
        secs(workload.message_at_seconds)
    );
    eprintln!(
        "  setting up the two stores, then running in virtual time (seed {})",
        args.seed
    );
    eprintln!(
        "  {:>12} {:>8} {:>8} {:>12}",
        "virtual time", "A->B", "B->A", "sent (B)"
    );

    let step =
        nice_below(ideal_seconds(&cfg, (2 * args.bundles + 1) * (MANIFEST_LEN + PAYLOAD)) / 3.0);
    let mon = Rc::new(RefCell::new(Monitor {
        sent: [0; 2],
        delivered: [0; 2],
        delivered_by_1000s: [0; 2],
        next_mark: step,
        step,
        timeline: Vec::new(),
    }));
    let factory = WatchedFactory {
        inner: SkywaveFactory::new(),
        mon: Rc::clone(&mon),
    };
    let mut last: Option<Progress> = None;
    let mut cb = |p: &Progress| last = Some(*p);
    let report = skywave_lab::run_with(
        &scenario,
        &factory,
        RunOptions {
            seed: args.seed,
            link_override: Some(cfg.clone()),
            progress: Some(&mut cb),
            scratch_dir: scratch.as_deref(),
        },
    )?;
    let mut m = mon.borrow_mut();
    let end = last.map_or(report.virtual_seconds, |p| p.virtual_seconds);
    let note = if report.complete {
        format!(
            "full sync; {} B on air",
            crate::util::grouped(report.bytes_on_air)
        )
    } else {
        "deadline: not synced".to_string()
    };
    m.record(end, &note);
    let _ = std::io::stderr().flush();

    let dirs = ["A->B", "B->A"];
    let out = DemoReport {
        profile: args.profile.clone(),
        seed: args.seed,
        workload,
        sync_seconds: report.completion_seconds.filter(|_| report.complete),
        message_latency_seconds: report.latency.map(|l| l.max_seconds),
        delivered_by_1000s: dirs
            .iter()
            .zip(m.delivered_by_1000s)
            .map(|(d, n)| (d.to_string(), n))
            .collect(),
        lbard: compare(&args, &cfg, &report, &m.delivered_by_1000s),
        timeline: std::mem::take(&mut m.timeline),
        report,
    };
    if json {
        emit(&format!("{}\n", serde_json::to_string(&out)?))?;
    } else {
        emit(&closing(&out))?;
    }
    Ok(if out.report.complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// LBARD's figures for the kind of link the demo ran on (HF or UHF), else both for scale.
fn compare(args: &DemoArgs, cfg: &LinkConfig, r: &Report, by_1000s: &[u64; 2]) -> Vec<Comparison> {
    let hf = cfg.kind == LinkKind::Stream && cfg.duplex == Duplex::Half;
    let uhf = cfg.kind == LinkKind::Csma;
    let sync = match r.completion_seconds.filter(|_| r.complete) {
        Some(t) => secs(t),
        None => format!("not synced in {}", secs(r.deadline_seconds)),
    };
    let n = args.bundles;
    let mut v = Vec::new();
    if hf {
        v.push(Comparison {
            measure: format!("HF: time to sync {n}+{n} new bundles"),
            skywave: sync.clone(),
            lbard: format!(
                "4-5 h ({}-{} s) for 100+100",
                crate::util::grouped(LBARD_HF_100X100_SECS.0 as u64),
                crate::util::grouped(LBARD_HF_100X100_SECS.1 as u64)
            ),
        });
        v.push(Comparison {
            measure: "HF: bundles per direction in 1000 s".to_string(),
            skywave: format!(
                "{} / {}{}",
                by_1000s[0],
                by_1000s[1],
                if r.complete && r.virtual_seconds <= 1000.0 {
                    " (all)"
                } else {
                    ""
                }
            ),
            lbard: format!("{LBARD_HF_BUNDLES_PER_1000S} at best"),
        });
        let per_dir = |d: &str| r.goodput_bps_by_direction.get(d).copied().unwrap_or(0.0) / 8.0;
        let air = |node: &str| {
            let sent: u64 = r
                .links
                .iter()
                .flat_map(|l| &l.ports)
                .filter(|p| p.node == node)
                .map(|p| p.sent_bytes)
                .sum();
            sent as f64 / r.virtual_seconds.max(1e-9)
        };
        v.push(Comparison {
            measure: "HF: B/s per direction, on air (useful)".to_string(),
            skywave: format!(
                "{:.0} / {:.0} ({:.0} / {:.0})",
                air("A"),
                air("B"),
                per_dir("A->B"),
                per_dir("B->A")
            ),
            lbard: format!("{LBARD_HF_BYTES_PER_SEC:.0} at best"),
        });
    } else if uhf {
        v.push(Comparison {
            measure: format!("UHF: time to sync {n}+{n} new bundles"),
            skywave: sync,
            lbard: format!("{LBARD_UHF_100X100_SECS} s for 100+100"),
        });
        v.push(Comparison {
            measure: "UHF: bytes on air".to_string(),
            skywave: crate::util::grouped(r.bytes_on_air),
            lbard: crate::util::grouped(LBARD_UHF_100X100_BYTES),
        });
    } else {
        // LBARD was measured on HF and UHF only: its figures for scale.
        v.push(Comparison {
            measure: format!("time to sync {n}+{n} new bundles"),
            skywave: sync,
            lbard: format!("HF 4-5 h, UHF {LBARD_UHF_100X100_SECS} s (other links)"),
        });
        v.push(Comparison {
            measure: "bytes on air".to_string(),
            skywave: crate::util::grouped(r.bytes_on_air),
            lbard: format!(
                "UHF {} (other link)",
                crate::util::grouped(LBARD_UHF_100X100_BYTES)
            ),
        });
    }
    v
}

fn closing(d: &DemoReport) -> String {
    let r = &d.report;
    let mut o = String::new();
    let o = &mut o;
    let _ = writeln!(
        o,
        "\nskywave demo: A and B over {} (seed {}), agent {}",
        d.profile, d.seed, r.agent
    );
    let sync = match d.sync_seconds {
        Some(t) => format!(
            "yes: both hold all {} bundles at {} virtual ({:.1} s wall)",
            crate::util::grouped(d.workload.shared + 2 * d.workload.new_per_node + 1),
            secs(t),
            r.wall_seconds
        ),
        None => format!(
            "NO: not synced by the {} deadline ({:.1} s wall)",
            secs(r.deadline_seconds),
            r.wall_seconds
        ),
    };
    let _ = writeln!(o, "synced         {sync}");
    for dir in ["A->B", "B->A"] {
        let n = r.bundles_delivered.get(dir).copied().unwrap_or(0);
        let b = r.bytes_delivered.get(dir).copied().unwrap_or(0);
        let _ = writeln!(
            o,
            "delivered      {dir}: {n} bundles, {} useful bytes",
            crate::util::grouped(b)
        );
    }
    if let Some(l) = d.message_latency_seconds {
        let _ = writeln!(
            o,
            "message        written at B at t={}, held by A {} later",
            secs(d.workload.message_at_seconds),
            secs(l)
        );
    }
    let _ = writeln!(o, "\nagainst the link's capacity");
    let rows = [
        (
            "capacity",
            format!(
                "{} ({})",
                if r.capacity_bps < 10_000 {
                    format!("{} bit/s", r.capacity_bps)
                } else {
                    rate_label(r.capacity_bps as f64)
                },
                if r.link_spec.contains("kind=csma") {
                    "one radio channel shared by both"
                } else if r.link_spec.contains("duplex=half") {
                    "half duplex: both directions share it"
                } else {
                    "per direction"
                }
            ),
        ),
        (
            "goodput",
            format!(
                "{} = {:.1}% of capacity",
                rate_label(r.goodput_bps),
                r.efficiency * 100.0
            ),
        ),
        ("useful bytes", crate::util::grouped(r.useful_bytes)),
        (
            "bytes on air",
            format!(
                "{} (overhead {} of useful bytes)",
                crate::util::grouped(r.bytes_on_air),
                r.overhead
                    .map_or_else(|| "-".to_string(), |x| format!("{x:.2}x"))
            ),
        ),
        (
            "reconciliation",
            format!(
                "{} B in {} messages ({:.1}% of bytes on air)",
                crate::util::grouped(r.recon_bytes),
                r.recon_messages,
                r.recon_bytes as f64 * 100.0 / r.bytes_on_air.max(1) as f64
            ),
        ),
        (
            "resent",
            format!(
                "{} B; calls dropped: {}",
                crate::util::grouped(r.retransmitted_bytes),
                r.dropped_calls
            ),
        ),
        (
            "time to sync",
            d.sync_seconds.map_or_else(|| "-".to_string(), secs),
        ),
    ];
    for (k, v) in rows {
        let _ = writeln!(o, "  {k:<16} {v}");
    }
    let _ = writeln!(o, "\nagainst LBARD's published figures");
    let w = d
        .lbard
        .iter()
        .map(|c| c.measure.len())
        .max()
        .unwrap_or(0)
        .max(7);
    let _ = writeln!(o, "  {:<w$}  {:<24} LBARD", "", "skywave (this run)");
    for c in &d.lbard {
        let _ = writeln!(o, "  {:<w$}  {:<24} {}", c.measure, c.skywave, c.lbard);
    }
    if d.workload.new_per_node != 100 {
        let _ = writeln!(
            o,
            "  (LBARD's figures are for 100 new bundles per side; this run had {})",
            d.workload.new_per_node
        );
    }
    let _ = writeln!(
        o,
        "\nmore: skywave lab list; skywave lab run hf-100x100; docs/lab.md"
    );
    o.clone()
}

/// Writes to stdout; a closed pipe (`| head`) ends the output quietly.
fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to standard output"),
    }
}

/// Seconds for people: "412.7 s (6.9 min)", "8.90 s", "350 us".
fn secs(s: f64) -> String {
    if s >= 3600.0 {
        format!("{s:.0} s ({:.1} h)", s / 3600.0)
    } else if s >= 120.0 {
        format!("{s:.1} s ({:.1} min)", s / 60.0)
    } else if s >= 10.0 {
        format!("{s:.1} s")
    } else if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.0} us", s * 1e6)
    }
}

/// Seconds without the minutes: "412.7 s", "8.90 s", "350 us".
fn secs_short(s: f64) -> String {
    if s >= 10.0 {
        format!("{s:.1} s")
    } else {
        secs(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_and_labels() {
        assert_eq!(nice_below(63.0), 50.0);
        assert_eq!(nice_below(0.3), 0.2);
        assert_eq!(nice_below(1.0), 1.0);
        assert_eq!(crate::util::grouped(306_944), "306,944");
        assert_eq!(secs(412.7), "412.7 s (6.9 min)");
        assert_eq!(secs(0.00035), "350 us");
    }

    #[test]
    fn workload_has_shared_new_and_one_message() {
        let cfg = LinkConfig::lookup("hf-modem", &BTreeMap::new()).unwrap();
        let args = DemoArgs {
            profile: "hf-modem".into(),
            seed: 1,
            bundles: 100,
            shared: 1000,
            store_dir: None,
            message_as_file: false,
            message_at: None,
        };
        let (sc, w) = build(&args, &cfg);
        assert_eq!(sc.workload.initial.len(), 2 * 1000 + 2 * 100);
        // 1000 shared + 200 new + the message.
        assert_eq!(sc.bundles().len(), 1201);
        // An ideal sender needs ~255 s for the new bundles on the HF modem: the message
        // is written early in the sync.
        assert_eq!(w.message_at_seconds, 50.0);
        assert_eq!(sc.workload.actions.len(), 1);
        // `--message-at` moves it (to probe every phase of the overs).
        let args = DemoArgs {
            message_at: Some(123.5),
            ..args
        };
        let (sc, w) = build(&args, &cfg);
        assert_eq!(w.message_at_seconds, 123.5);
        assert_eq!(
            sc.workload.actions[0].at,
            SimTime::from_nanos(123_500_000_000)
        );
        assert!(parse_at("-1").is_err() && parse_at("NaN").is_err() && parse_at("1e9").is_err());
        assert_eq!(parse_at("7.5"), Ok(7.5));
    }
}
