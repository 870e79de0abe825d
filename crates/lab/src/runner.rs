//! Runs one scenario with one agent and measures it.
//!
//! Metric definitions (shared/design.md, one definition everywhere):
//! - **useful bytes**: manifest + payload bytes of bundle versions newly accepted by a
//!   receiver (journals: manifest + the new tail), summed over all receivers;
//! - **goodput** = useful bytes x 8 / virtual seconds of the run, in bit/s;
//! - **capacity**: the link's on-air rate, shared by all senders on half-duplex and CSMA
//!   links; for a one-way workload on a full-duplex point-to-point link, the rate of the
//!   direction the data flows in;
//! - **efficiency** = goodput / capacity; **overhead** = bytes on air / useful bytes;
//! - **bytes on air**: every byte each sender put on the air (data, acknowledgements,
//!   retransmissions, inventories), excluding per-frame preamble overhead.
//!
//! The run stops at the event that completes the scenario, or at its deadline.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use skywave_proto::FecMode;
use skywave_sim::{
    Adjacency, DropReason, Duplex, LinkConfig, LinkId, LinkKind, NodeId, SimTime, Simulator,
};

use crate::LabError;
use crate::agent::{AgentFactory, AgentStats, BundleKey, LabAgent, NodeContext};
use crate::reference::ReferenceFactory;
use crate::scenario::{Completion, Op, Scenario};
use crate::skywave_agent::SkywaveFactory;

/// How often (in simulator events) the progress callback is called.
const PROGRESS_EVERY: u64 = 4096;

/// A snapshot for progress displays.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    pub virtual_seconds: f64,
    pub deadline_seconds: f64,
    pub bundles_delivered: u64,
    pub useful_bytes: u64,
    pub complete: bool,
}

/// Options of one run.
#[derive(Default)]
pub struct RunOptions<'a> {
    pub seed: u64,
    /// Replaces the scenario's link (any kind: a `csma` link puts the topology on one
    /// medium, a point-to-point link joins each edge with its own link).
    pub link_override: Option<LinkConfig>,
    /// Called every few thousand events and once at the end.
    pub progress: Option<&'a mut dyn FnMut(&Progress)>,
    /// Where agents that keep state on disk (the `skywave` agent's stores) create their
    /// temporary directories; `None`: the system's temporary directory. A RAM-backed
    /// directory (`/dev/shm`) keeps fsyncs off the disk and makes runs much faster; the
    /// report does not depend on it.
    pub scratch_dir: Option<&'a Path>,
}

impl fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunOptions")
            .field("seed", &self.seed)
            .field(
                "link_override",
                &self.link_override.as_ref().map(|c| c.to_spec()),
            )
            .field("progress", &self.progress.is_some())
            .field("scratch_dir", &self.scratch_dir)
            .finish()
    }
}

/// Latency from a write (insert or append after t = 0) to a receiver holding it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LatencyStats {
    pub samples: u64,
    pub p50_seconds: f64,
    pub p99_seconds: f64,
    pub max_seconds: f64,
}

/// Counters of one node's port on a link (what it sent, and what it received).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PortReport {
    pub node: String,
    pub offered_frames: u64,
    pub offered_bytes: u64,
    pub sent_frames: u64,
    pub sent_bytes: u64,
    pub air_seconds: f64,
    pub delivered_frames: u64,
    pub received_frames: u64,
    pub received_bytes: u64,
    /// Frames dropped by reason (`queue-full`, `loss`, `collision`, ...); zero counts omitted.
    pub dropped: BTreeMap<String, u64>,
    pub turnarounds: u64,
    pub call_drops: u64,
    /// On a band with a duty-cycle limit: the most air time this radio used in any window
    /// of the limit's length, as a fraction of the window, measured on the air.
    pub max_duty_cycle: Option<f64>,
}

/// A LoRa band with a duty-cycle limit: what the lab measured against it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DutyReport {
    /// The limit: a fraction of any window.
    pub limit: f64,
    pub window_seconds: f64,
    /// The most air time any radio used in any window, as a fraction of the window
    /// (measured from the simulator's record of every transmission, not from the nodes).
    pub max_seen: f64,
    pub exceeded: bool,
    /// Air time each node needs at least: its bundles' useful bytes (manifest +
    /// payload, as delivered; the workload's nominal sizes if the run did not complete)
    /// in largest LoRa packets back to back, by Semtech's formula.
    pub useful_air_seconds: BTreeMap<String, f64>,
    /// The floor: the least time the budget and the channel allow. Each node has its
    /// own budget of `limit x window` air in any window: air within it can go at once,
    /// and each budget beyond the first waits a window for the air before it to age
    /// out. The nodes share one channel, so their air adds up. The floor is the larger
    /// of the two (not air / limit: that is the long-run rate, and a run whose air fits
    /// one window's budget is not bound by it).
    pub floor_seconds: f64,
    /// Completion time / floor.
    pub time_over_floor: Option<f64>,
}

/// One link (or medium) of the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkReport {
    pub id: u32,
    pub kind: String,
    pub ports: Vec<PortReport>,
}

/// The measurements of one run. Everything except `wall_seconds` is a pure function of
/// scenario, seed, link and agent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub scenario: String,
    pub agent: String,
    /// The agent's forward error correction mode (`off`, `auto`, `always`: `--fec`);
    /// `None` for agents without one (the reference agent).
    pub fec: Option<String>,
    pub seed: u64,
    /// Profile name, or the spec given with `--link`.
    pub link: String,
    /// The canonical spec of the link used.
    pub link_spec: String,
    pub virtual_seconds: f64,
    pub wall_seconds: f64,
    pub complete: bool,
    /// When the scenario became complete (deadline-measured scenarios: the deadline).
    pub completion_seconds: Option<f64>,
    pub deadline_seconds: f64,
    /// Bundle versions newly accepted, per "ORIGIN->RECEIVER".
    pub bundles_delivered: BTreeMap<String, u64>,
    /// Useful bytes per "ORIGIN->RECEIVER".
    /// Virtual time of the first bundle accepted, per `ORIGIN->RECEIVER`.
    pub first_delivery_seconds: BTreeMap<String, f64>,
    pub bytes_delivered: BTreeMap<String, u64>,
    pub goodput_bps_by_direction: BTreeMap<String, f64>,
    pub useful_bytes: u64,
    pub bytes_on_air: u64,
    pub goodput_bps: f64,
    pub capacity_bps: u64,
    pub efficiency: f64,
    /// Bytes on air / useful bytes (absent when nothing was delivered).
    pub overhead: Option<f64>,
    pub recon_bytes: u64,
    pub recon_messages: u64,
    pub retransmitted_bytes: u64,
    pub dropped_calls: u64,
    /// IP links: bytes the bottleneck queue dropped (drop-tail) as a fraction of the
    /// bytes senders handed to the path; `None` on radios and modems.
    pub dropped_at_bottleneck: Option<f64>,
    /// For writes after t = 0 (hf-live, journal records).
    pub latency: Option<LatencyStats>,
    /// Journals: the most bytes written but not yet held by a receiver.
    pub backlog_max_bytes: Option<u64>,
    pub events: u64,
    pub links: Vec<LinkReport>,
    /// LoRa links with a duty-cycle limit.
    pub duty_cycle: Option<DutyReport>,
}

/// The least time in which nodes with `air` seconds each to send, sharing one channel,
/// can send it all under a budget of `fraction` of any `window` seconds per node.
fn duty_floor(air: impl Iterator<Item = f64>, fraction: f64, window: f64) -> f64 {
    let budget = fraction * window;
    let (mut one, mut all) = (0.0f64, 0.0);
    for a in air {
        all += a;
        // The budgets used up before the last one, each a window's wait.
        let waits = if budget > 0.0 {
            ((a / budget).ceil() - 1.0).max(0.0)
        } else {
            0.0
        };
        one = one.max(waits * window + (a - waits * budget));
    }
    one.max(all)
}

/// The duty-cycle measures of a LoRa run with a limit (see [`DutyReport`]).
fn duty_report(
    scenario: &Scenario,
    cfg: &LinkConfig,
    links: &[LinkReport],
    completed_at: Option<SimTime>,
    delivered: &BTreeMap<String, u64>,
) -> Option<DutyReport> {
    let (phy, limit) = (cfg.lora?, cfg.duty?);
    let mtu = cfg.up.mtu.min(skywave_sim::lora::MAX_PAYLOAD);
    // What each node had to send: once complete, the bytes its bundles took as the
    // receivers counted them (the manifests' real sizes; one broadcast reaches every
    // receiver, so the most any one receiver got); before that, the workload's nominal
    // sizes.
    let mut useful: BTreeMap<String, u64> = BTreeMap::new();
    if completed_at.is_some() && !delivered.is_empty() {
        for (dir, &b) in delivered {
            if let Some((origin, _)) = dir.split_once("->") {
                let e = useful.entry(origin.to_string()).or_default();
                *e = (*e).max(b);
            }
        }
    } else {
        for (node, spec, payload) in scenario.bundles() {
            *useful
                .entry(scenario.topology.nodes[node].clone())
                .or_default() += spec.manifest_len + payload;
        }
    }
    let air = |bytes: u64| {
        let full = bytes / mtu as u64;
        let rest = (bytes % mtu as u64) as usize;
        let mut t = phy.airtime(mtu).as_secs_f64() * full as f64;
        if rest > 0 {
            t += phy.airtime(rest).as_secs_f64();
        }
        t
    };
    let useful_air: BTreeMap<String, f64> = useful.into_iter().map(|(n, b)| (n, air(b))).collect();
    let floor = duty_floor(
        useful_air.values().copied(),
        limit.fraction,
        limit.window.as_secs_f64(),
    );
    let max_seen = links
        .iter()
        .flat_map(|l| l.ports.iter().filter_map(|p| p.max_duty_cycle))
        .fold(0.0, f64::max);
    Some(DutyReport {
        limit: limit.fraction,
        window_seconds: limit.window.as_secs_f64(),
        max_seen,
        // A nanosecond of rounding is not an excess.
        exceeded: max_seen > limit.fraction + 1e-9,
        useful_air_seconds: useful_air,
        floor_seconds: floor,
        time_over_floor: completed_at
            .filter(|_| floor > 0.0)
            .map(|t| t.as_secs_f64() / floor),
    })
}

/// Runs `scenario` with the `reference` agent (the yardstick; see [`run_agent`]).
pub fn run(scenario: &Scenario, opts: RunOptions<'_>) -> Result<Report, LabError> {
    run_with(scenario, &ReferenceFactory, opts)
}

/// The node implementations the lab can run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AgentKind {
    /// The skywave protocol endpoint over real stores ([`SkywaveFactory`]).
    #[default]
    Skywave,
    /// The plain windowed sender ([`ReferenceFactory`]).
    Reference,
}

impl AgentKind {
    pub const ALL: [AgentKind; 2] = [AgentKind::Skywave, AgentKind::Reference];

    /// The name shown in reports and accepted by `--agent`.
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::Skywave => "skywave",
            AgentKind::Reference => "reference",
        }
    }

    /// Parses `--agent`.
    pub fn parse(text: &str) -> Result<Self, LabError> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == text)
            .ok_or_else(|| LabError::invalid("--agent", text, "one of: skywave, reference"))
    }
}

impl fmt::Display for AgentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The accepted values of `--fec`, in the order error messages list them.
pub const FEC_MODES: [FecMode; 3] = [FecMode::Off, FecMode::Auto, FecMode::Always];

/// The name of a FEC mode, as `--fec` accepts it and reports show it.
pub fn fec_name(mode: FecMode) -> &'static str {
    match mode {
        FecMode::Off => "off",
        FecMode::Auto => "auto",
        FecMode::Always => "always",
    }
}

/// Parses `--fec`: `off`, `auto` or `always`.
pub fn parse_fec(text: &str) -> Result<FecMode, LabError> {
    FEC_MODES
        .into_iter()
        .find(|m| fec_name(*m) == text)
        .ok_or_else(|| {
            let names: Vec<&str> = FEC_MODES.into_iter().map(fec_name).collect();
            LabError::invalid("--fec", text, format!("one of: {}", names.join(", ")))
        })
}

/// Settings of the node implementation, the same on every node of a run (on the command
/// line: `--fec`). The skywave agent puts them on each node's protocol `Config`; the
/// reference agent has none and ignores them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgentOptions {
    /// `Config::fec`: whether transfers may use forward error correction.
    pub fec: FecMode,
}

/// Runs `scenario` with the agent `agent` and the default [`AgentOptions`].
pub fn run_agent(
    scenario: &Scenario,
    agent: AgentKind,
    opts: RunOptions<'_>,
) -> Result<Report, LabError> {
    run_agent_with(scenario, agent, AgentOptions::default(), opts)
}

/// Runs `scenario` with the agent `agent` set up with `agent_opts`.
pub fn run_agent_with(
    scenario: &Scenario,
    agent: AgentKind,
    agent_opts: AgentOptions,
    opts: RunOptions<'_>,
) -> Result<Report, LabError> {
    match agent {
        AgentKind::Skywave => run_with(
            scenario,
            &SkywaveFactory::new().with_fec(agent_opts.fec),
            opts,
        ),
        AgentKind::Reference => run_with(scenario, &ReferenceFactory, opts),
    }
}

struct Tracker {
    /// Key -> (origin node, final version).
    bundles: BTreeMap<BundleKey, (usize, u64, bool)>,
    /// Per node: key -> version held.
    held: Vec<BTreeMap<BundleKey, u64>>,
    /// Per node: must it hold everything for completion?
    target: Vec<bool>,
    outstanding: u64,
    /// (node, key) -> writes not yet held there: (version, written at).
    waiting: BTreeMap<(usize, BundleKey), VecDeque<(u64, SimTime)>>,
    latencies: Vec<u64>,
    /// Journals: key -> version at the author.
    journal_head: BTreeMap<BundleKey, u64>,
    backlog_max: Option<u64>,
    names: Vec<String>,
    delivered: BTreeMap<String, u64>,
    delivered_bytes: BTreeMap<String, u64>,
    first: BTreeMap<String, f64>,
    useful: u64,
    accepted_total: u64,
}

impl Tracker {
    fn new(sc: &Scenario) -> Self {
        let n = sc.topology.nodes.len();
        let bundles: BTreeMap<BundleKey, (usize, u64, bool)> = sc
            .bundles()
            .into_iter()
            .map(|(origin, spec, final_len)| {
                let journal = spec.kind == crate::agent::BundleKind::Journal;
                (spec.key, (origin, spec.version_at(final_len), journal))
            })
            .collect();
        let target = (0..n)
            .map(|i| match sc.completion {
                Completion::AllSynced | Completion::Deadline => true,
                Completion::NodeHolds(t) => t == i,
            })
            .collect::<Vec<bool>>();
        let outstanding = target.iter().filter(|t| **t).count() as u64 * bundles.len() as u64;
        Tracker {
            bundles,
            held: vec![BTreeMap::new(); n],
            target,
            outstanding,
            waiting: BTreeMap::new(),
            latencies: Vec::new(),
            journal_head: BTreeMap::new(),
            backlog_max: None,
            names: sc.topology.nodes.clone(),
            delivered: BTreeMap::new(),
            delivered_bytes: BTreeMap::new(),
            first: BTreeMap::new(),
            useful: 0,
            accepted_total: 0,
        }
    }

    /// Node `node` now holds `version` of `key`.
    fn hold(&mut self, now: SimTime, node: usize, key: BundleKey, version: u64) {
        let Some(&(_, final_version, journal)) = self.bundles.get(&key) else {
            return;
        };
        let old = self.held[node].get(&key).copied().unwrap_or(0);
        if version <= old {
            return;
        }
        self.held[node].insert(key, version);
        if self.target[node] && old < final_version && version >= final_version {
            self.outstanding -= 1;
        }
        if let Some(q) = self.waiting.get_mut(&(node, key)) {
            while q.front().is_some_and(|(v, _)| *v <= version) {
                if let Some((_, t)) = q.pop_front() {
                    self.latencies.push((now - t).as_nanos() as u64);
                }
            }
        }
        if journal {
            self.update_backlog(key);
        }
    }

    /// `node` wrote `version` of `key` at `now` (after t = 0): every other target node
    /// now waits for it.
    fn written(&mut self, now: SimTime, node: usize, key: BundleKey, version: u64) {
        for other in 0..self.held.len() {
            if other != node && self.target[other] {
                self.waiting
                    .entry((other, key))
                    .or_default()
                    .push_back((version, now));
            }
        }
        if self.bundles.get(&key).is_some_and(|b| b.2) {
            self.journal_head.insert(key, version);
        }
        self.hold(now, node, key, version);
    }

    fn update_backlog(&mut self, key: BundleKey) {
        let Some(&head) = self.journal_head.get(&key) else {
            return;
        };
        let lag = (0..self.held.len())
            .filter(|&n| self.target[n])
            .map(|n| head.saturating_sub(self.held[n].get(&key).copied().unwrap_or(0)))
            .max()
            .unwrap_or(0);
        self.backlog_max = Some(self.backlog_max.unwrap_or(0).max(lag));
    }

    fn accept(&mut self, node: usize, a: &crate::agent::Accepted) {
        let origin = self.bundles.get(&a.key).map_or(node, |b| b.0);
        let dir = format!("{}->{}", self.names[origin], self.names[node]);
        let bytes = a.manifest_bytes + a.payload_bytes;
        *self.delivered.entry(dir.clone()).or_insert(0) += 1;
        self.first
            .entry(dir.clone())
            .or_insert_with(|| a.at.as_secs_f64());
        *self.delivered_bytes.entry(dir).or_insert(0) += bytes;
        self.useful += bytes;
        self.accepted_total += 1;
        self.hold(a.at, node, a.key, a.version);
    }
}

/// Nearest-rank percentile of sorted nanoseconds, in seconds.
fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64 / 1e9
}

/// The capacity metric for this scenario on this link (see the module documentation).
fn capacity(sc: &Scenario, cfg: &LinkConfig) -> u64 {
    let shared = cfg.kind == LinkKind::Csma || cfg.duplex == Duplex::Half;
    if !shared && sc.topology.edges.len() == 1 {
        let origins: std::collections::BTreeSet<usize> = sc.bundles().iter().map(|b| b.0).collect();
        let (a, _) = sc.topology.edges[0];
        if origins.len() == 1 {
            return if origins.contains(&a) {
                cfg.up.rate_bps
            } else {
                cfg.down.rate_bps
            };
        }
    }
    cfg.capacity_bps()
}

fn drop_name(r: DropReason) -> &'static str {
    match r {
        DropReason::QueueFull => "queue-full",
        DropReason::Loss => "loss",
        DropReason::Corrupt => "corrupt",
        DropReason::Collision => "collision",
        DropReason::ReceiverBusy => "receiver-busy",
        DropReason::CallDropped => "call-dropped",
        DropReason::LinkDown => "link-down",
    }
}

/// The error for node `node` if its agent reports a failure.
fn check_failure<A: LabAgent>(
    sim: &Simulator,
    ids: &[NodeId],
    scenario: &Scenario,
    node: usize,
) -> Result<(), LabError> {
    match sim.node::<A>(ids[node]).and_then(|a| a.failure()) {
        Some(message) => Err(LabError::Agent {
            node: scenario.topology.nodes[node].clone(),
            message,
        }),
        None => Ok(()),
    }
}

/// Runs `scenario` with agents from `factory`.
pub fn run_with<F: AgentFactory>(
    scenario: &Scenario,
    factory: &F,
    mut opts: RunOptions<'_>,
) -> Result<Report, LabError> {
    let wall = Instant::now();
    let cfg = match opts.link_override.take() {
        Some(c) => c,
        None => LinkConfig::lookup(&scenario.link, &BTreeMap::new())?,
    };
    let n = scenario.topology.nodes.len();
    let mut sim = Simulator::new(opts.seed);
    // A per-frame trace for looking into one run (docs/sim.md, "Traces").
    let trace_to = std::env::var_os("SKYWAVE_LAB_TRACE");
    sim.set_trace(trace_to.is_some());
    let mut ids = Vec::with_capacity(n);
    for (i, name) in scenario.topology.nodes.iter().enumerate() {
        let agent = factory.create(NodeContext {
            index: i,
            name,
            nodes: n,
            seed: opts.seed,
            rng: sim.node_rng(NodeId(i as u32)),
            scratch_dir: opts.scratch_dir,
        })?;
        ids.push(sim.add_node(agent));
    }
    let mut links: Vec<(LinkId, Vec<usize>)> = Vec::new();
    if cfg.kind == LinkKind::Csma {
        let mut adj = Adjacency::new(n);
        for &(a, b) in &scenario.topology.edges {
            adj.connect(a, b);
        }
        links.push((sim.add_medium(&ids, adj, &cfg)?, (0..n).collect()));
    } else {
        for &(a, b) in &scenario.topology.edges {
            links.push((sim.connect(ids[a], ids[b], &cfg)?, vec![a, b]));
        }
    }

    // Tell each node what it is joined to before anything runs.
    for (lid, nodes) in &links {
        for &node in nodes {
            // Each side is told the link as seen from it: its `up` is its sending
            // direction (the second end of a point-to-point link sends on `down`).
            let mut seen = cfg.clone();
            if cfg.kind != LinkKind::Csma && nodes.len() == 2 && node == nodes[1] {
                std::mem::swap(&mut seen.up, &mut seen.down);
            }
            if let Some(port) = sim.port(ids[node], *lid)
                && let Some(agent) = sim.node_mut::<F::Agent>(ids[node])
            {
                let dials = cfg.kind == LinkKind::Csma || node == nodes[0];
                agent.attach_link(port, &seen, dials);
            }
        }
    }

    let mut tr = Tracker::new(scenario);
    for &(node, spec) in &scenario.workload.initial {
        if let Some(agent) = sim.node_mut::<F::Agent>(ids[node]) {
            agent.handle_insert(SimTime::ZERO, &spec);
        }
        tr.hold(
            SimTime::ZERO,
            node,
            spec.key,
            spec.version_at(spec.payload_len),
        );
    }
    for (key, &(origin, _, journal)) in &tr.bundles {
        if journal {
            let v = tr.held[origin].get(key).copied().unwrap_or(0);
            tr.journal_head.insert(*key, v);
        }
    }

    let deadline = scenario.deadline;
    let actions = &scenario.workload.actions;
    let mut next_action = 0;
    let mut cursors = vec![0usize; n];
    let mut completed_at: Option<SimTime> = None;
    let stop_early = scenario.completion != Completion::Deadline;
    let mut last_progress = 0u64;
    let mut progress = opts.progress.take();

    loop {
        let t_event = sim.next_event();
        let t_action = actions.get(next_action).map(|a| a.at);
        let take_action = match (t_event, t_action) {
            (_, Some(ta)) if ta > deadline => false,
            (Some(te), Some(ta)) => ta <= te,
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if take_action {
            let a = actions[next_action];
            next_action += 1;
            sim.run_until(a.at);
            let now = sim.now();
            if let Some(agent) = sim.node_mut::<F::Agent>(ids[a.node]) {
                match a.op {
                    Op::Insert(spec) => agent.handle_insert(now, &spec),
                    Op::Append { key, bytes } => agent.handle_append(now, key, bytes),
                }
            }
            check_failure::<F::Agent>(&sim, &ids, scenario, a.node)?;
            match a.op {
                Op::Insert(spec) => {
                    tr.written(now, a.node, spec.key, spec.version_at(spec.payload_len))
                }
                Op::Append { key, bytes } => {
                    let v = tr.held[a.node].get(&key).copied().unwrap_or(0) + bytes;
                    tr.written(now, a.node, key, v);
                }
            }
        } else {
            match t_event {
                Some(te) if te <= deadline => {
                    sim.step();
                }
                _ => break,
            }
        }
        for (i, id) in ids.iter().enumerate() {
            if let Some(agent) = sim.node::<F::Agent>(*id) {
                let acc = agent.accepted();
                if acc.len() > cursors[i] {
                    let new: Vec<_> = acc[cursors[i]..].to_vec();
                    cursors[i] = acc.len();
                    for a in &new {
                        tr.accept(i, a);
                    }
                }
            }
        }
        if stop_early && tr.outstanding == 0 && next_action == actions.len() {
            completed_at = Some(sim.now());
            break;
        }
        if let Some(cb) = progress.as_mut()
            && sim.steps() >= last_progress + PROGRESS_EVERY
        {
            last_progress = sim.steps();
            cb(&Progress {
                virtual_seconds: sim.now().as_secs_f64(),
                deadline_seconds: deadline.as_secs_f64(),
                bundles_delivered: tr.accepted_total,
                useful_bytes: tr.useful,
                complete: false,
            });
        }
    }
    if completed_at.is_none() {
        sim.run_until(deadline);
        if !stop_early {
            completed_at = Some(deadline);
        }
    }
    let end = sim.now();
    if let Some(path) = &trace_to {
        let mut text = String::new();
        skywave_sim::write_trace(&sim.take_trace(), &mut text);
        if let Err(e) = std::fs::write(path, text) {
            tracing::warn!(path = %Path::new(path).display(), error = %e, "could not write the trace");
        }
    }
    let secs = end.as_secs_f64();
    for (i, id) in ids.iter().enumerate() {
        if let Some(agent) = sim.node_mut::<F::Agent>(*id) {
            agent.finish(end);
        }
        check_failure::<F::Agent>(&sim, &ids, scenario, i)?;
    }

    let mut link_reports = Vec::new();
    let mut bytes_on_air = 0;
    let mut dropped_calls = 0;
    let (mut ip_offered, mut ip_queue_dropped) = (0u64, 0u64);
    for (lid, nodes) in &links {
        let mut ports = Vec::new();
        for &node in nodes {
            let Some(st) = sim.link_stats(*lid, ids[node]) else {
                continue;
            };
            bytes_on_air += st.sent.bytes;
            dropped_calls += st.call_drops;
            if cfg.kind == LinkKind::Frame {
                ip_offered += st.offered.bytes;
                ip_queue_dropped += st.dropped(DropReason::QueueFull).bytes;
            }
            ports.push(PortReport {
                node: scenario.topology.nodes[node].clone(),
                offered_frames: st.offered.frames,
                offered_bytes: st.offered.bytes,
                sent_frames: st.sent.frames,
                sent_bytes: st.sent.bytes,
                air_seconds: st.air_nanos as f64 / 1e9,
                delivered_frames: st.delivered.frames,
                received_frames: st.received.frames,
                received_bytes: st.received.bytes,
                dropped: DropReason::ALL
                    .iter()
                    .filter(|r| st.dropped(**r).frames > 0)
                    .map(|r| (drop_name(*r).to_string(), st.dropped(*r).frames))
                    .collect(),
                turnarounds: st.turnarounds,
                call_drops: st.call_drops,
                max_duty_cycle: cfg.duty.map(|d| {
                    let w = d.window.as_nanos() as u64;
                    skywave_sim::lora::max_window_air(&st.air_log, w) as f64 / w as f64
                }),
            });
        }
        link_reports.push(LinkReport {
            id: lid.0,
            kind: cfg.kind.as_str().to_string(),
            ports,
        });
    }
    let agent_stats = ids.iter().fold(AgentStats::default(), |acc, id| {
        let s = sim
            .node::<F::Agent>(*id)
            .map(|a| a.stats())
            .unwrap_or_default();
        AgentStats {
            recon_bytes: acc.recon_bytes + s.recon_bytes,
            recon_messages: acc.recon_messages + s.recon_messages,
            retransmitted_bytes: acc.retransmitted_bytes + s.retransmitted_bytes,
        }
    });

    let rate = |bytes: u64| {
        if secs > 0.0 {
            bytes as f64 * 8.0 / secs
        } else {
            0.0
        }
    };
    let goodput = rate(tr.useful);
    let cap = capacity(scenario, &cfg);
    let mut lat = std::mem::take(&mut tr.latencies);
    lat.sort_unstable();
    let latency = (!lat.is_empty()).then(|| LatencyStats {
        samples: lat.len() as u64,
        p50_seconds: percentile(&lat, 0.50),
        p99_seconds: percentile(&lat, 0.99),
        max_seconds: percentile(&lat, 1.0),
    });
    let complete = completed_at.is_some();
    let report = Report {
        scenario: scenario.name.clone(),
        agent: factory.name().to_string(),
        fec: factory.fec().map(|m| fec_name(m).to_string()),
        seed: opts.seed,
        link: cfg.name.clone(),
        link_spec: cfg.to_spec(),
        virtual_seconds: secs,
        wall_seconds: wall.elapsed().as_secs_f64(),
        complete,
        completion_seconds: completed_at.map(SimTime::as_secs_f64),
        deadline_seconds: deadline.as_secs_f64(),
        goodput_bps_by_direction: tr
            .delivered_bytes
            .iter()
            .map(|(k, v)| (k.clone(), rate(*v)))
            .collect(),
        bundles_delivered: tr.delivered.clone(),
        first_delivery_seconds: tr.first.clone(),
        bytes_delivered: tr.delivered_bytes.clone(),
        useful_bytes: tr.useful,
        bytes_on_air,
        goodput_bps: goodput,
        capacity_bps: cap,
        efficiency: if cap > 0 { goodput / cap as f64 } else { 0.0 },
        overhead: (tr.useful > 0).then(|| bytes_on_air as f64 / tr.useful as f64),
        recon_bytes: agent_stats.recon_bytes,
        recon_messages: agent_stats.recon_messages,
        retransmitted_bytes: agent_stats.retransmitted_bytes,
        dropped_calls,
        dropped_at_bottleneck: (cfg.kind == LinkKind::Frame && ip_offered > 0)
            .then(|| ip_queue_dropped as f64 / ip_offered as f64),
        latency,
        backlog_max_bytes: tr.backlog_max,
        events: sim.steps(),
        duty_cycle: duty_report(
            scenario,
            &cfg,
            &link_reports,
            completed_at,
            &tr.delivered_bytes,
        ),
        links: link_reports,
    };
    if let Some(cb) = progress.as_mut() {
        cb(&Progress {
            virtual_seconds: secs,
            deadline_seconds: deadline.as_secs_f64(),
            bundles_delivered: tr.accepted_total,
            useful_bytes: tr.useful,
            complete,
        });
    }
    tracing::debug!(scenario = %report.scenario, seed = report.seed, complete, virtual = secs, "lab run done");
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::duty_floor;

    #[test]
    fn the_duty_floor_is_the_budget_windows_or_the_shared_channel() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // 1% of an hour is 36 s. Air within it goes at once; two nodes share the air.
        assert!(close(duty_floor([20.0].into_iter(), 0.01, 3600.0), 20.0));
        assert!(close(
            duty_floor([20.0, 30.0].into_iter(), 0.01, 3600.0),
            50.0
        ));
        // 100 s: 36 now, 36 after the first hour, 28 after the second.
        assert!(close(duty_floor([100.0].into_iter(), 0.01, 3600.0), 7228.0));
        // Exactly one budget: no wait.
        assert!(close(duty_floor([36.0].into_iter(), 0.01, 3600.0), 36.0));
        assert!(close(
            duty_floor([36.0, 1.0].into_iter(), 0.01, 3600.0),
            37.0
        ));
        // No limit (100%): the air itself.
        assert!(close(duty_floor([100.0].into_iter(), 1.0, 3600.0), 100.0));
    }
}
