//! `skywave lab`: list, run and sweep the design's scenarios in virtual time.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use skywave_lab::plot::{rate_label, scenario_panels_svg};
use skywave_lab::scenario::SCENARIOS;
use skywave_lab::{AgentKind, AgentOptions, Progress, Report, RunOptions, Scenario};
use skywave_sim::{LinkConfig, PROFILES, SimTime};

#[derive(Debug, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// List the scenarios and the link profiles.
    List,
    /// Run one scenario and report its measurements (progress on stderr).
    Run(RunArgs),
    /// Run scenarios x seeds; write results.csv and scenarios.svg (a panel per scenario).
    Matrix(MatrixArgs),
    /// Run a grid over the link space; each cell against its physical floor.
    Sweep(SweepArgs),
    /// Real daemons through `skywave emulate`, beside the lab's figures for the same cells.
    Real(crate::lab_real::RealArgs),
}

/// The node implementation the scenarios run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    /// The skywave protocol endpoint, each node over a real store in a temporary directory.
    #[default]
    Skywave,
    /// The plain windowed sender: a yardstick, not the protocol.
    Reference,
}

impl From<Agent> for AgentKind {
    fn from(a: Agent) -> Self {
        match a {
            Agent::Skywave => AgentKind::Skywave,
            Agent::Reference => AgentKind::Reference,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Baseline {
    /// A real QUIC connection (quinn-proto) over the same link model and seed.
    Quic,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario name (see `skywave lab list`).
    pub scenario: String,
    /// Seed of every random stream of the run.
    #[arg(long, default_value = "1", value_name = "N", value_parser = parse_seed)]
    pub seed: u64,
    /// Replace the scenario's link: a profile name or a spec (see docs/sim.md), e.g.
    /// `profile=lfn,loss=2%`.
    #[arg(long, value_name = "SPEC")]
    pub link: Option<String>,
    /// Multiply bundle counts, sizes and stream duration (quick runs).
    #[arg(long, default_value = "1", value_name = "FACTOR")]
    pub scale: f64,
    /// The node implementation to run.
    #[arg(long, value_enum, default_value_t = Agent::Skywave, value_name = "AGENT")]
    pub agent: Agent,
    /// Forward error correction of the skywave agent, set on every node's protocol
    /// config: off (pieces and retransmission only), auto (the adaptive rule decides per
    /// transfer) or always (every transfer that can be coded is).
    #[arg(long, default_value = "auto", value_name = "off|auto|always")]
    pub fec: String,
    /// Where the skywave agent's stores live during the run (temporary directories,
    /// removed at the end); default: the system's temporary directory. A RAM-backed
    /// directory such as /dev/shm keeps fsyncs off the disk and runs much faster.
    #[arg(long, value_name = "DIR")]
    pub store_dir: Option<PathBuf>,
    /// Also run a baseline on the same link and seed (single-transfer scenarios) and print
    /// both side by side.
    #[arg(long, value_enum, value_name = "PROTOCOL")]
    pub baseline: Option<Baseline>,
}

#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// Comma-separated scenario names (default: all; `formant-stream` means all its cells).
    #[arg(long, value_name = "A,B")]
    pub scenarios: Option<String>,
    /// Seeds: `7`, `1-5`, `1-3,9`.
    #[arg(long, default_value = "1-5", value_name = "RANGE")]
    pub seeds: String,
    /// Output directory.
    #[arg(long, default_value = "lab-results", value_name = "DIR")]
    pub out: PathBuf,
    /// Multiply bundle counts, sizes and stream duration (quick runs).
    #[arg(long, default_value = "1", value_name = "FACTOR")]
    pub scale: f64,
    /// The node implementation to run.
    #[arg(long, value_enum, default_value_t = Agent::Skywave, value_name = "AGENT")]
    pub agent: Agent,
    /// Forward error correction of the skywave agent, set on every node's protocol
    /// config: off (pieces and retransmission only), auto (the adaptive rule decides per
    /// transfer) or always (every transfer that can be coded is).
    #[arg(long, default_value = "auto", value_name = "off|auto|always")]
    pub fec: String,
    /// Where the skywave agent's stores live during the run (temporary directories,
    /// removed at the end); default: the system's temporary directory. A RAM-backed
    /// directory such as /dev/shm keeps fsyncs off the disk and runs much faster.
    #[arg(long, value_name = "DIR")]
    pub store_dir: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

/// Writes to stdout; a closed pipe (`| head`) ends the output quietly.
fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to standard output"),
    }
}

fn parse_seed(s: &str) -> Result<u64, String> {
    s.parse::<u64>()
        .map_err(|_| format!("expected a seed: an integer from 0 to {}", u64::MAX))
}

pub fn run(args: LabArgs, json: bool) -> anyhow::Result<ExitCode> {
    match args.command {
        LabCommand::List => list(json),
        LabCommand::Run(a) => run_one(a, json),
        LabCommand::Matrix(a) => matrix(a, json),
        LabCommand::Sweep(a) => sweep(a, json),
        LabCommand::Real(a) => crate::lab_real::run(a, json),
    }
}

fn list(json: bool) -> anyhow::Result<ExitCode> {
    if json {
        let v = serde_json::json!({
            "scenarios": SCENARIOS.iter().map(|s| serde_json::json!({
                "name": s.name, "link": s.link, "summary": s.summary,
            })).collect::<Vec<_>>(),
            "profiles": PROFILES.iter().map(|p| serde_json::json!({
                "name": p.name, "summary": p.summary,
            })).collect::<Vec<_>>(),
        });
        emit(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut o = String::new();
    let o = &mut o;
    let _ = writeln!(o, "Scenarios (skywave lab run NAME):");
    for s in SCENARIOS {
        let _ = writeln!(o, "  {:<17} {:<17} {}", s.name, s.link, s.summary);
    }
    let _ = writeln!(
        o,
        "\nLink profiles (--link NAME, or a spec such as profile=lfn,loss=2%):"
    );
    for p in PROFILES {
        let _ = writeln!(o, "  {:<17} {}", p.name, p.summary);
    }
    emit(o)?;
    Ok(ExitCode::SUCCESS)
}

/// Progress on stderr: in place on a terminal, else a line every few seconds.
struct ProgressLine {
    tty: bool,
    last: Option<Instant>,
    every: Duration,
}

impl ProgressLine {
    fn new() -> Self {
        let tty = std::io::stderr().is_terminal();
        ProgressLine {
            tty,
            last: None,
            every: if tty {
                Duration::from_millis(100)
            } else {
                Duration::from_secs(5)
            },
        }
    }

    fn show(&mut self, name: &str, p: &Progress) {
        let final_line = p.complete || p.virtual_seconds >= p.deadline_seconds;
        if !final_line && self.last.is_some_and(|t| t.elapsed() < self.every) {
            return;
        }
        self.last = Some(Instant::now());
        let line = format!(
            "{name}: t={:.1}/{:.0} s virtual, {} bundles delivered, {} useful bytes{}",
            p.virtual_seconds,
            p.deadline_seconds,
            p.bundles_delivered,
            p.useful_bytes,
            if p.complete { ", complete" } else { "" }
        );
        let mut err = std::io::stderr().lock();
        let _ = if self.tty {
            write!(err, "\r\x1b[2K{line}")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }

    fn finish(&self) {
        if self.tty && self.last.is_some() {
            eprintln!();
        }
    }
}

fn resolve_link(spec: Option<&str>) -> anyhow::Result<Option<LinkConfig>> {
    spec.map(|s| LinkConfig::lookup(s, &BTreeMap::new()).map_err(skywave_lab::LabError::from))
        .transpose()
        .map_err(Into::into)
}

/// `--fec`, checked by the lab (the error names the accepted values).
fn agent_options(fec: &str) -> anyhow::Result<AgentOptions> {
    Ok(AgentOptions {
        fec: skywave_lab::parse_fec(fec)?,
    })
}

fn run_one(a: RunArgs, json: bool) -> anyhow::Result<ExitCode> {
    let scenario = Scenario::lookup_scaled(&a.scenario, a.scale)?;
    let agent_opts = agent_options(&a.fec)?;
    let link = resolve_link(a.link.as_deref())?;
    let transfer = scenario.single_transfer();
    if a.baseline.is_some() && transfer.is_none() {
        anyhow::bail!(
            "invalid value 'quic' for field '--baseline' with scenario '{}': the baseline runs only for the single-transfer scenarios (lfn-50mb, lfn-lossy-50mb, cellular-20mb, satellite-10mb)",
            scenario.name
        );
    }
    let mut line = ProgressLine::new();
    let name = scenario.name.clone();
    let mut cb = |p: &Progress| line.show(&name, p);
    let report = skywave_lab::run_agent_with(
        &scenario,
        a.agent.into(),
        agent_opts,
        RunOptions {
            seed: a.seed,
            link_override: link.clone(),
            progress: Some(&mut cb),
            scratch_dir: crate::util::store_dir_flag(a.store_dir.as_deref())?,
        },
    )?;
    line.finish();
    let baseline = match (a.baseline, transfer) {
        (Some(Baseline::Quic), Some((bytes, reversed))) => {
            let cfg = match link {
                Some(c) => c,
                None => LinkConfig::lookup(&scenario.link, &BTreeMap::new())?,
            };
            // QUIC sends A->B on `up`; give it the direction the scenario's data takes.
            let cfg = if reversed { swapped(&cfg) } else { cfg };
            let deadline = SimTime::from_nanos((report.deadline_seconds * 1e9) as u64);
            let b = skywave_baseline::quic::run(&cfg, bytes, a.seed, deadline)
                .map_err(|e| anyhow::anyhow!("QUIC baseline: {e}"))?;
            Some(b)
        }
        _ => None,
    };
    if json {
        let mut v = serde_json::to_value(&report)?;
        if let (Some(b), Some(obj)) = (&baseline, v.as_object_mut()) {
            obj.insert("baseline".to_string(), serde_json::to_value(b)?);
        }
        emit(&format!("{}\n", serde_json::to_string(&v)?))?;
    } else {
        let mut o = String::new();
        print_report(&mut o, &report);
        if let Some(b) = &baseline {
            print_side_by_side(&mut o, &report, b);
        }
        emit(&o)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn swapped(cfg: &LinkConfig) -> LinkConfig {
    let mut c = cfg.clone();
    std::mem::swap(&mut c.up, &mut c.down);
    c
}

fn print_report(o: &mut String, r: &Report) {
    let fec = r
        .fec
        .as_deref()
        .map_or_else(String::new, |f| format!(", fec {f}"));
    let _ = writeln!(
        o,
        "scenario   {} (agent: {}{fec}, seed {})",
        r.scenario, r.agent, r.seed
    );
    let _ = writeln!(o, "link       {}", r.link);
    let _ = writeln!(o, "           {}", r.link_spec);
    let done = match (r.complete, r.completion_seconds) {
        (true, Some(t)) => format!("yes, at {t:.3} s virtual"),
        _ => format!("no (deadline {:.0} s)", r.deadline_seconds),
    };
    let _ = writeln!(
        o,
        "complete   {done}; {:.3} s wall, {} events",
        r.wall_seconds,
        crate::util::grouped(r.events)
    );
    for (dir, n) in &r.bundles_delivered {
        let bytes = r.bytes_delivered.get(dir).copied().unwrap_or(0);
        let bps = r.goodput_bps_by_direction.get(dir).copied().unwrap_or(0.0);
        let _ = writeln!(
            o,
            "delivered  {dir}: {} bundles, {} B ({:.1} B/s)",
            crate::util::grouped(*n),
            crate::util::grouped(bytes),
            bps / 8.0
        );
    }
    let _ = writeln!(
        o,
        "goodput    {} of {} capacity: efficiency {:.1}%",
        rate_label(r.goodput_bps),
        rate_label(r.capacity_bps as f64),
        r.efficiency * 100.0
    );
    let overhead = r
        .overhead
        .map_or_else(|| "-".to_string(), |o| format!("{o:.2}x"));
    let _ = writeln!(
        o,
        "on air     {} B (overhead {overhead}); retransmitted {} B; calls dropped {}",
        crate::util::grouped(r.bytes_on_air),
        crate::util::grouped(r.retransmitted_bytes),
        r.dropped_calls
    );
    if let Some(d) = r.dropped_at_bottleneck {
        let _ = writeln!(
            o,
            "bottleneck {:.1}% of the bytes sent dropped by the path's queue",
            d * 100.0
        );
    }
    let _ = writeln!(
        o,
        "recon      {} B in {} messages",
        crate::util::grouped(r.recon_bytes),
        r.recon_messages
    );
    if let Some(l) = r.latency {
        let _ = writeln!(
            o,
            "latency    p50 {:.3} s, p99 {:.3} s, max {:.3} s ({} samples)",
            l.p50_seconds, l.p99_seconds, l.max_seconds, l.samples
        );
    }
    if let Some(b) = r.backlog_max_bytes {
        let _ = writeln!(o, "backlog    at most {} B", crate::util::grouped(b));
    }
    if let Some(d) = &r.duty_cycle {
        let _ = writeln!(
            o,
            "duty cycle at most {:.3}% of any {:.0} s on the air (limit {:.3}%: {}), measured per radio",
            100.0 * d.max_seen,
            d.window_seconds,
            100.0 * d.limit,
            if d.exceeded { "EXCEEDED" } else { "kept" }
        );
        let air: Vec<String> = d
            .useful_air_seconds
            .iter()
            .map(|(n, s)| format!("{n} {s:.2} s"))
            .collect();
        let _ = writeln!(
            o,
            "floor      {:.1} s: the useful air ({}) within each node's budget of {:.0} s per {:.0} s, on one channel{}",
            d.floor_seconds,
            air.join(", "),
            d.limit * d.window_seconds,
            d.window_seconds,
            d.time_over_floor
                .map(|x| format!("; time = {x:.3} x the floor"))
                .unwrap_or_default()
        );
    }
}

fn print_side_by_side(o: &mut String, r: &Report, b: &skywave_baseline::BaselineReport) {
    let yes = |c: bool| if c { "yes" } else { "no" }.to_string();
    let rows = [
        ("complete", yes(r.complete), yes(b.complete)),
        (
            "virtual time",
            format!("{:.3} s", r.virtual_seconds),
            format!("{:.3} s", b.virtual_seconds),
        ),
        (
            "goodput",
            rate_label(r.goodput_bps),
            rate_label(b.goodput_bps),
        ),
        (
            "efficiency",
            format!("{:.1}%", r.efficiency * 100.0),
            format!(
                "{:.1}%",
                b.goodput_bps / r.capacity_bps.max(1) as f64 * 100.0
            ),
        ),
        (
            "bytes on air",
            crate::util::grouped(r.bytes_on_air),
            crate::util::grouped(b.bytes_on_air),
        ),
        (
            "resent bytes",
            crate::util::grouped(r.retransmitted_bytes),
            crate::util::grouped(b.resent_bytes),
        ),
    ];
    o.push('\n');
    let _ = writeln!(
        o,
        "{:<14} {:>20} {:>20}",
        "",
        format!("skywave ({})", r.agent),
        "quic"
    );
    for (k, x, y) in rows {
        let _ = writeln!(o, "{k:<14} {x:>20} {y:>20}");
    }
    let _ = writeln!(o, "quic settings: {}", b.settings);
    let _ = writeln!(
        o,
        "(skywave's useful bytes include the manifest; QUIC's goodput counts payload only)"
    );
}

fn matrix(a: MatrixArgs, json: bool) -> anyhow::Result<ExitCode> {
    let seeds = skywave_lab::parse_seeds(&a.seeds)?;
    let agent_opts = agent_options(&a.fec)?;
    let names: Vec<String> = match &a.scenarios {
        Some(s) => s
            .split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect(),
        None => SCENARIOS.iter().map(|s| s.name.to_string()).collect(),
    };
    if names.is_empty() {
        anyhow::bail!(
            "invalid value '' for field '--scenarios': expected comma-separated scenario names (see `skywave lab list`)"
        );
    }
    let mut scenarios = Vec::new();
    for n in &names {
        scenarios.extend(Scenario::expand(n, a.scale)?);
    }
    let total = scenarios.len() * seeds.len();
    let threads = a
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let done = std::sync::atomic::AtomicUsize::new(0);
    let tty = std::io::stderr().is_terminal();
    let on_done = |r: &Report| {
        let k = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let line = format!(
            "[{k}/{total}] {} seed {}: {}",
            r.scenario,
            r.seed,
            if r.complete { "complete" } else { "incomplete" }
        );
        if tty {
            eprint!("\r\x1b[2K{line}");
        } else {
            eprintln!("{line}");
        }
    };
    let reports = skywave_lab::matrix::matrix_with(
        &scenarios,
        &seeds,
        a.agent.into(),
        agent_opts,
        crate::util::store_dir_flag(a.store_dir.as_deref())?,
        threads,
        &on_done,
    )?;
    if tty {
        eprintln!();
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let csv = a.out.join("results.csv");
    let file =
        std::fs::File::create(&csv).with_context(|| format!("creating {}", csv.display()))?;
    skywave_lab::write_csv(&reports, std::io::BufWriter::new(file))?;
    let panels = a.out.join("scenarios.svg");
    std::fs::write(&panels, scenario_panels_svg(&reports))
        .with_context(|| format!("writing {}", panels.display()))?;
    if json {
        emit(&format!("{}\n", serde_json::to_string(&reports)?))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut o = String::new();
    let o = &mut o;
    let agent = AgentKind::from(a.agent);
    match agent {
        AgentKind::Skywave => {
            let _ = writeln!(
                o,
                "agent: {agent} (fec {})",
                skywave_lab::fec_name(agent_opts.fec)
            );
        }
        AgentKind::Reference => {
            let _ = writeln!(o, "agent: {agent}");
        }
    }
    let _ = writeln!(
        o,
        "{:<22} {:>5} {:>9} {:>12} {:>13} {:>13} {:>7} {:>12}",
        "scenario", "runs", "complete", "median t (s)", "goodput", "capacity", "eff", "on air (B)"
    );
    let mut by: BTreeMap<&str, Vec<&Report>> = BTreeMap::new();
    for r in &reports {
        by.entry(r.scenario.as_str()).or_default().push(r);
    }
    for (name, rs) in by {
        let n = rs.len() as f64;
        let mut t: Vec<f64> = rs
            .iter()
            .filter_map(|r| r.completion_seconds.filter(|_| r.complete))
            .collect();
        t.sort_by(f64::total_cmp);
        let median = t
            .get(t.len().saturating_sub(1) / 2)
            .map_or("-".to_string(), |m| format!("{m:.2}"));
        let goodput = rs.iter().map(|r| r.goodput_bps).sum::<f64>() / n;
        let eff = rs.iter().map(|r| r.efficiency).sum::<f64>() / n;
        let air = rs.iter().map(|r| r.bytes_on_air).sum::<u64>() / rs.len() as u64;
        let _ = writeln!(
            o,
            "{:<22} {:>5} {:>9} {:>12} {:>13} {:>13} {:>6.1}% {:>12}",
            name,
            rs.len(),
            rs.iter().filter(|r| r.complete).count(),
            median,
            rate_label(goodput),
            rate_label(rs[0].capacity_bps as f64),
            eff * 100.0,
            crate::util::grouped(air)
        );
    }
    let _ = writeln!(o, "\nwrote {}, {}", csv.display(), panels.display());
    emit(o)?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Families to sweep, comma-separated: radio, chain, hf, ip (default: all four).
    #[arg(long, value_name = "radio,chain,hf,ip")]
    pub family: Option<String>,
    /// An axis's values, `AXIS=V1,V2` (every swept family with that axis) or
    /// `FAMILY.AXIS=V1,V2`; repeatable, e.g. `--axis rate=1.2k,9.6k --axis hf.delay=1s,8s`.
    /// Axes: radio and chain: rate, mtu, loss, txqueue; hf: rate, delay, buffer; ip: rate,
    /// rtt, loss, buffer, mtu.
    #[arg(long, value_name = "AXIS=V1,V2")]
    pub axis: Vec<String>,
    /// A reduced grid (a few cells per family; seeds 1-2 unless --seeds) for a quick look.
    #[arg(long)]
    pub quick: bool,
    /// Seeds of every cell: `7`, `1-5`, `1-3,9` (default 1-3; 1-2 with --quick).
    #[arg(long, value_name = "RANGE")]
    pub seeds: Option<String>,
    /// Also write one CSV row per cell and seed to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Also write SVG heat maps (time / floor and bytes on air / useful bytes, per family)
    /// to DIR.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Print the grid's cells (link, floor, time limit, or why a cell cannot be built)
    /// without running them.
    #[arg(long)]
    pub plan: bool,
    /// The node implementation to run.
    #[arg(long, value_enum, default_value_t = Agent::Skywave, value_name = "AGENT")]
    pub agent: Agent,
    /// Forward error correction of the skywave agent: off, auto or always.
    #[arg(long, default_value = "auto", value_name = "off|auto|always")]
    pub fec: String,
    /// Where the skywave agent's stores live during the runs; default /dev/shm when it
    /// exists (nothing touches the disk), else the system's temporary directory.
    #[arg(long, value_name = "DIR")]
    pub store_dir: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

fn sweep(a: SweepArgs, json: bool) -> anyhow::Result<ExitCode> {
    use skywave_lab::sweep::{self as sw, Grid, RunStatus};
    let families = sw::parse_families(a.family.as_deref())?;
    let grid = Grid::new(&families, &a.axis, a.quick)?;
    let seeds = skywave_lab::parse_seeds(a.seeds.as_deref().unwrap_or(if a.quick {
        "1-2"
    } else {
        "1-3"
    }))?;
    let agent_opts = agent_options(&a.fec)?;
    let agent = AgentKind::from(a.agent);
    let cells = grid.cells(agent);
    if let Some(bad) = cells.iter().find(|c| c.setup.is_err())
        && cells.iter().all(|c| c.setup.is_err())
    {
        anyhow::bail!(
            "no cell of the grid can be built; e.g. {} {}: {}",
            bad.family.name(),
            bad.label(),
            bad.setup.as_ref().err().map_or("", String::as_str)
        );
    }
    if a.plan {
        let rows: Vec<serde_json::Value> = cells
            .iter()
            .map(|c| {
                let (floor, timeout, error) = match &c.setup {
                    Ok(s) => (Some(s.floor.seconds), Some(s.timeout.as_secs_f64()), None),
                    Err(e) => (None, None, Some(e.clone())),
                };
                serde_json::json!({
                    "family": c.family, "cell": c.label(), "link": c.link,
                    "floor_seconds": floor, "timeout_seconds": timeout, "error": error,
                })
            })
            .collect();
        if json {
            let v = serde_json::json!({ "seeds": seeds, "cells": rows });
            emit(&format!("{}\n", serde_json::to_string(&v)?))?;
        } else {
            let mut o = String::new();
            for c in &cells {
                let _ = match &c.setup {
                    Ok(s) => writeln!(
                        o,
                        "{:<6} {:<44} floor {:>9.3} s, limit {:>6.0} s  {}",
                        c.family.name(),
                        c.label(),
                        s.floor.seconds,
                        s.timeout.as_secs_f64(),
                        c.link
                    ),
                    Err(e) => writeln!(o, "{:<6} {:<44} error: {e}", c.family.name(), c.label()),
                };
            }
            let _ = writeln!(
                o,
                "{} cells x {} seeds = {} runs ({} cells cannot be built)",
                cells.len(),
                seeds.len(),
                cells.iter().filter(|c| c.setup.is_ok()).count() * seeds.len(),
                cells.iter().filter(|c| c.setup.is_err()).count()
            );
            emit(&o)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let store_dir = crate::util::ram_store_dir(a.store_dir.as_deref())?;
    let threads = a
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let tty = std::io::stderr().is_terminal();
    let on_run = |d: &sw::RunDone<'_>| {
        let r = d.result;
        let what = match r.status {
            RunStatus::Complete => format!(
                "complete {:.2} s ({:.2}x floor)",
                r.time_seconds.unwrap_or(0.0),
                d.cell
                    .setup
                    .as_ref()
                    .map_or(0.0, |s| r.time_seconds.unwrap_or(0.0) / s.floor.seconds)
            ),
            RunStatus::Timeout => format!("timeout at {:.0} s", r.virtual_seconds),
            RunStatus::Error => format!("error: {}", r.error.as_deref().unwrap_or("?")),
        };
        let line = format!(
            "[cells {}/{}, runs {}/{}] {} {} seed {}: {what}",
            d.cells_done,
            d.cells_total,
            d.runs_done,
            d.runs_total,
            d.cell.family.name(),
            d.cell.label(),
            r.seed
        );
        let mut err = std::io::stderr().lock();
        let _ = if tty {
            write!(err, "\r\x1b[2K{line}")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    };
    let report = sw::sweep(
        &grid,
        &sw::SweepOptions {
            seeds: &seeds,
            agent,
            agent_opts,
            scratch_dir: store_dir.as_deref(),
            threads,
            on_run: Some(&on_run),
        },
    )?;
    if tty {
        eprintln!();
    }
    let mut wrote = Vec::new();
    if let Some(path) = &a.csv {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let file =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        sw::write_csv(&report, std::io::BufWriter::new(file))?;
        wrote.push(path.display().to_string());
    }
    if let Some(dir) = &a.plots {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (name, svg) in sw::heatmaps(&report) {
            let path = dir.join(name);
            std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
            wrote.push(path.display().to_string());
        }
    }
    if json {
        emit(&format!("{}\n", serde_json::to_string(&report)?))?;
        if !wrote.is_empty() {
            eprintln!("wrote {}", wrote.join(", "));
        }
    } else {
        let mut o = sw::table(&report);
        if !wrote.is_empty() {
            let _ = writeln!(o, "\nwrote {}", wrote.join(", "));
        }
        emit(&o)?;
    }
    Ok(ExitCode::SUCCESS)
}
