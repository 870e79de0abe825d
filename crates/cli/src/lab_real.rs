//! `skywave lab real`: real `skywave daemon` processes through `skywave emulate` (or the
//! emulated RFD900 radios), beside the lab's figures for the same link and workload.
//!
//! For each cell the lab runs first, in process (the skywave agent over the cell's link
//! spec, the cell's workload built as a [`Scenario`]); then two daemons, each on its own
//! node directory in a temporary directory, carry the same workload through the real-clock
//! emulator. The bundles are written into the stores before the daemons start, so both
//! runs start from nothing and pay their handshakes; the real clock starts when the last
//! daemon has written its runtime file (its links are up) and stops when every bundle is
//! held where it belongs. Bytes on the wire come from the emulator's own summary (UDP and
//! pty cells) or from the daemons' link counters plus the Reed-Solomon parity the RFD900
//! driver adds to every frame (RFD900 cells: the radios run inside daemon A).
//!
//! Every child process is killed and the temporary directory removed on every path: a
//! finished cell, a failed or timed-out one, an error, Ctrl-C or SIGTERM (with SIGKILL of
//! this process itself, the children are left behind).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use clap::Args;
use serde::Serialize;
use skywave_daemon::client::Client;
use skywave_daemon::{RUNTIME_FILE, RuntimeInfo};
use skywave_lab::{
    AgentKind, AgentOptions, BundleKey, BundleKind, BundleSpec, Completion, Report, RunOptions,
    Scenario, Topology, Workload,
};
use skywave_sim::config::parse_duration;
use skywave_sim::{LinkConfig, LinkKind, SimTime};

/// Reed-Solomon parity the RFD900 driver appends to every frame (docs/links.md).
const RFD900_PARITY: u64 = 32;
/// Real and lab figures that differ by more than this are flagged.
const TOLERANCE: f64 = 0.10;
/// How often the harness checks whether the bundles have arrived.
const POLL: Duration = Duration::from_millis(20);
/// How long a daemon or the emulator may take to come up.
const STARTUP: Duration = Duration::from_secs(20);

#[derive(Debug, Args)]
#[command(after_help = "Cells:
  lfn              profile=lfn: one 20 MB bundle A->B over UDP
  lfn-0.05bdp      profile=lfn,buffer=0.05bdp: the same through a 0.05 BDP bottleneck buffer
  cellular         profile=cellular: one 10 MB bundle A->B over UDP (3% loss)
  satellite        profile=satellite: one 10 MB bundle A->B on the 20 Mbit/s downlink
  hf-modem         profile=hf-modem: 2 bundles of 200 B each way over the modem's byte stream (ptys)
  rfd900           profile=uhf-csma: 8 bundles of 2,000 B each way over emulated RFD900 radios
  rfd900-unqueued  profile=uhf-csma,txqueue=none: as rfd900 with radios without a transmit queue

Examples:
  skywave lab real                                  # every cell (about a minute)
  skywave lab real --cell lfn --cell cellular --scale 0.1 --json
  skywave lab real --cell hf-modem --timeout 10min")]
pub struct RealArgs {
    /// A cell to run (repeatable; default: every cell, see below).
    #[arg(long = "cell", value_name = "NAME")]
    pub cells: Vec<String>,
    /// Multiply every bundle size (at least 1 byte) for shorter or longer runs.
    #[arg(long, default_value = "1", value_name = "FACTOR")]
    pub scale: f64,
    /// Seed of the lab run and of the emulator's model draws.
    #[arg(long, default_value = "1", value_name = "N")]
    pub seed: u64,
    /// Wall-clock limit of each real run (default: per cell, 2 to 6 minutes).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Where the temporary node directories (and the lab's stores) live; default /dev/shm
    /// when it exists, else the system's temporary directory.
    #[arg(long, value_name = "DIR")]
    pub store_dir: Option<PathBuf>,
    /// Keep each cell's temporary directory (daemon and emulator logs) and print its path.
    #[arg(long)]
    pub keep: bool,
    /// The daemons' log verbosity (a level or a RUST_LOG-style filter, e.g.
    /// `info,skywave_proto::endpoint::cc=debug`); read their logs with --keep.
    #[arg(long, default_value = "info", value_name = "LEVEL")]
    pub daemon_log: String,
}

/// How the two daemons are joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    /// UDP links through `skywave emulate --listen --forward`.
    Udp,
    /// `serial` links paced for the profile, on the two ptys of `skywave emulate --stream pty`.
    Pty,
    /// Daemon A runs the emulated radios (an `emulated` link), daemon B the `rfd900` driver.
    Rfd900,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Udp => "udp via skywave emulate",
            Transport::Pty => "serial via skywave emulate --stream pty",
            Transport::Rfd900 => "rfd900 via emulated radios",
        }
    }
}

/// One cell: a link, how the daemons reach each other, and the workload.
#[derive(Clone, Copy, Debug)]
struct Cell {
    name: &'static str,
    link: &'static str,
    transport: Transport,
    /// Bundles written at A for B, and their payload size.
    a_to_b: (u64, u64),
    /// Bundles written at B for A.
    b_to_a: (u64, u64),
    /// A sits on side B of the link (so A->B runs on the `down` direction), as in the
    /// lab's satellite scenarios.
    a_on_side_b: bool,
    timeout: Duration,
}

const CELLS: &[Cell] = &[
    Cell {
        name: "lfn",
        link: "profile=lfn",
        transport: Transport::Udp,
        a_to_b: (1, 20_000_000),
        b_to_a: (0, 0),
        a_on_side_b: false,
        timeout: Duration::from_secs(120),
    },
    Cell {
        name: "lfn-0.05bdp",
        link: "profile=lfn,buffer=0.05bdp",
        transport: Transport::Udp,
        a_to_b: (1, 20_000_000),
        b_to_a: (0, 0),
        a_on_side_b: false,
        timeout: Duration::from_secs(120),
    },
    Cell {
        name: "cellular",
        link: "profile=cellular",
        transport: Transport::Udp,
        a_to_b: (1, 10_000_000),
        b_to_a: (0, 0),
        a_on_side_b: false,
        timeout: Duration::from_secs(120),
    },
    Cell {
        name: "satellite",
        link: "profile=satellite",
        transport: Transport::Udp,
        a_to_b: (1, 10_000_000),
        b_to_a: (0, 0),
        a_on_side_b: true,
        timeout: Duration::from_secs(120),
    },
    Cell {
        name: "hf-modem",
        link: "profile=hf-modem",
        transport: Transport::Pty,
        a_to_b: (2, 200),
        b_to_a: (2, 200),
        a_on_side_b: false,
        timeout: Duration::from_secs(360),
    },
    Cell {
        name: "rfd900",
        link: "profile=uhf-csma",
        transport: Transport::Rfd900,
        a_to_b: (8, 2_000),
        b_to_a: (8, 2_000),
        a_on_side_b: false,
        timeout: Duration::from_secs(120),
    },
    Cell {
        name: "rfd900-unqueued",
        link: "profile=uhf-csma,txqueue=none",
        transport: Transport::Rfd900,
        a_to_b: (8, 2_000),
        b_to_a: (8, 2_000),
        a_on_side_b: false,
        timeout: Duration::from_secs(120),
    },
];

/// Why a cell cannot run on real daemons yet, if it cannot.
fn unsupported(cell: &Cell, cfg: &LinkConfig) -> Option<String> {
    if cell.transport == Transport::Rfd900
        && let skywave_sim::config::TxQueue::Frames(n) = cfg.csma.txqueue
    {
        // The emulated radios (skywave_links::rfd900::MediumConfig) either buffer 4 KiB
        // and send after carrier sense, or send each frame at once (txqueue=none).
        return Some(format!(
            "the emulated RFD900 radios (skywave_links::rfd900::Rfd900Medium) have a 4 KiB \
             queue or none (txqueue=none); they cannot hold exactly txqueue={n} frames, so a \
             real run would measure another radio"
        ));
    }
    None
}

fn scaled(size: u64, scale: f64) -> u64 {
    ((size as f64 * scale).round() as u64).max(1)
}

fn workload_label(cell: &Cell, scale: f64) -> String {
    let one =
        |(n, size): (u64, u64)| format!("{n} x {} B", crate::util::grouped(scaled(size, scale)));
    match (cell.a_to_b.0, cell.b_to_a.0) {
        (_, 0) => format!("{} A->B", one(cell.a_to_b)),
        (0, _) => format!("{} B->A", one(cell.b_to_a)),
        _ => format!("{} each way", one(cell.a_to_b)),
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Ctrl-C and SIGTERM set [`INTERRUPTED`]; the harness then stops its children, removes
/// its temporary directories and exits.
fn watch_signals() {
    let _ = std::thread::Builder::new()
        .name("lab-real-signals".into())
        .spawn(|| {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                let term = async {
                    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    {
                        Ok(mut s) => {
                            s.recv().await;
                        }
                        Err(_) => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    () = term => {}
                }
            });
            INTERRUPTED.store(true, Ordering::SeqCst);
            eprintln!("lab real: interrupted; stopping the daemons and the emulator");
        });
}

/// The real run's figures.
#[derive(Debug, Clone, Serialize)]
struct RealFigures {
    /// From the moment both daemons were up to the last bundle held where it belongs.
    seconds: f64,
    /// From starting the first process to both daemons up (not counted in `seconds`).
    startup_seconds: f64,
    /// Bytes put on the wire or air, both directions: the emulator's `sent_bytes` (IP
    /// cells: datagrams plus 28 B of IP and UDP header each, as the lab counts; stream
    /// cells: the modem's chunks); RFD900 cells: frames plus their parity.
    bytes_on_air: u64,
    /// RFD900 cells: the frames alone (what the lab's radio carries).
    #[serde(skip_serializing_if = "Option::is_none")]
    frame_bytes: Option<u64>,
    /// IP cells: datagrams the bottleneck queue dropped / datagrams offered to it, in the
    /// direction the data takes.
    #[serde(skip_serializing_if = "Option::is_none")]
    dropped_fraction: Option<f64>,
    /// Useful bytes (manifest + payload) received, summed over the daemons.
    useful_bytes: u64,
    /// Piece bytes the daemons sent again.
    resent_bytes: u64,
    /// Frames the daemons' protocol endpoints sent (both).
    frames_sent: u64,
    /// Half-duplex links: times the turn changed (both sides, the emulator's count).
    #[serde(skip_serializing_if = "Option::is_none")]
    turnarounds: Option<u64>,
    /// The emulator's summary (`skywave --json emulate`), when it ran as a process.
    #[serde(skip_serializing_if = "Option::is_none")]
    emulator: Option<serde_json::Value>,
}

/// The lab's figures for the same cell.
#[derive(Debug, Clone, Serialize)]
struct LabFigures {
    complete: bool,
    /// Completion time (virtual); the deadline when incomplete.
    seconds: f64,
    bytes_on_air: u64,
    /// IP cells: as for the real run, from the link's counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    dropped_fraction: Option<f64>,
    /// The lab's own measure: bytes the bottleneck queue dropped over bytes offered to
    /// the path, both directions (IP cells).
    #[serde(skip_serializing_if = "Option::is_none")]
    dropped_at_bottleneck: Option<f64>,
    useful_bytes: u64,
    resent_bytes: u64,
    /// Half-duplex links: times the turn changed (both sides).
    #[serde(skip_serializing_if = "Option::is_none")]
    turnarounds: Option<u64>,
    wall_seconds: f64,
    link_spec: String,
    /// The lab's per-port counters.
    links: Vec<skywave_lab::LinkReport>,
}

#[derive(Debug, Clone, Copy, Serialize)]
struct Ratios {
    time: f64,
    bytes: f64,
}

/// One row of the output.
#[derive(Debug, Clone, Serialize)]
struct CellResult {
    cell: String,
    link: String,
    transport: String,
    workload: String,
    /// `complete`, `failed`, `timeout`, `unsupported` or `interrupted` (the real run).
    status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    real: Option<RealFigures>,
    lab: Option<LabFigures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lab_error: Option<String>,
    /// real / lab, when both completed.
    ratio: Option<Ratios>,
    /// Time or bytes differ by more than 10%.
    differs: bool,
    /// What differs, e.g. `time +23%`.
    flags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kept_dir: Option<String>,
}

pub fn run(a: RealArgs, json: bool) -> anyhow::Result<ExitCode> {
    if !(a.scale > 0.0 && a.scale <= 100.0) {
        bail!(
            "invalid value '{}' for field '--scale': expected a number greater than 0 and at most 100",
            a.scale
        );
    }
    let names: Vec<&str> = if a.cells.is_empty() {
        CELLS.iter().map(|c| c.name).collect()
    } else {
        a.cells.iter().map(String::as_str).collect()
    };
    let mut cells = Vec::new();
    for n in names {
        let c = CELLS.iter().find(|c| c.name == n).ok_or_else(|| {
            let accepted: Vec<&str> = CELLS.iter().map(|c| c.name).collect();
            anyhow!(
                "invalid value '{n}' for field '--cell': expected one of: {}",
                accepted.join(", ")
            )
        })?;
        cells.push(*c);
    }
    let root = match crate::util::store_dir_flag(a.store_dir.as_deref())? {
        Some(d) => d.to_path_buf(),
        None if Path::new("/dev/shm").is_dir() => PathBuf::from("/dev/shm"),
        None => std::env::temp_dir(),
    };
    let exe = std::env::current_exe().context("finding the skywave executable")?;
    watch_signals();

    let total = cells.len();
    let mut results = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        let tag = format!("[{}/{total}] {}", i + 1, cell.name);
        if interrupted() {
            results.push(not_run(cell, a.scale, "interrupted before it started"));
            continue;
        }
        results.push(run_cell(cell, &a, &exe, &root, &tag));
    }

    let command = std::env::args().collect::<Vec<_>>().join(" ");
    if json {
        let v = serde_json::json!({
            "command": command,
            "seed": a.seed,
            "scale": a.scale,
            "tolerance": TOLERANCE,
            "cells": results,
        });
        println!("{}", serde_json::to_string(&v)?);
    } else {
        print!("{}", table(&results, &command));
    }
    let _ = std::io::stdout().flush();
    if interrupted() {
        return Ok(ExitCode::from(130));
    }
    let failed = results
        .iter()
        .any(|r| r.status != "complete" && r.status != "unsupported");
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn not_run(cell: &Cell, scale: f64, why: &str) -> CellResult {
    CellResult {
        cell: cell.name.into(),
        link: cell.link.into(),
        transport: cell.transport.name().into(),
        workload: workload_label(cell, scale),
        status: "interrupted".into(),
        reason: Some(why.into()),
        real: None,
        lab: None,
        lab_error: None,
        ratio: None,
        differs: false,
        flags: Vec::new(),
        kept_dir: None,
    }
}

fn run_cell(cell: &Cell, a: &RealArgs, exe: &Path, root: &Path, tag: &str) -> CellResult {
    let mut r = not_run(cell, a.scale, "");
    r.reason = None;
    let cfg = match LinkConfig::lookup(cell.link, &BTreeMap::new()) {
        Ok(c) => c,
        Err(e) => {
            r.status = "failed".into();
            r.reason = Some(format!("link spec '{}': {e}", cell.link));
            return r;
        }
    };

    eprintln!("{tag}: lab ({}, {})", cell.link, r.workload);
    match run_lab(cell, &cfg, a, root) {
        Ok(l) => {
            eprintln!(
                "{tag}: lab {} at {:.3} s virtual, {} B on air ({:.1} s wall)",
                if l.complete { "complete" } else { "INCOMPLETE" },
                l.seconds,
                crate::util::grouped(l.bytes_on_air),
                l.wall_seconds
            );
            r.lab = Some(l);
        }
        Err(e) => {
            eprintln!("{tag}: lab failed: {e:#}");
            r.lab_error = Some(format!("{e:#}"));
        }
    }

    if let Some(why) = unsupported(cell, &cfg) {
        eprintln!("{tag}: real: unsupported: {why}");
        r.status = "unsupported".into();
        r.reason = Some(why);
        return r;
    }
    if interrupted() {
        r.reason = Some("interrupted before the real run".into());
        return r;
    }
    let timeout = a.timeout.unwrap_or(cell.timeout);
    eprintln!(
        "{tag}: real ({}, timeout {:.0} s)",
        cell.transport.name(),
        timeout.as_secs_f64()
    );
    let tmp = match tempfile::Builder::new()
        .prefix(&format!("skywave-lab-real-{}-", cell.name))
        .tempdir_in(root)
    {
        Ok(t) => t,
        Err(e) => {
            r.status = "failed".into();
            r.reason = Some(format!(
                "creating a temporary directory in {}: {e}",
                root.display()
            ));
            return r;
        }
    };
    let outcome =
        RealRun::new(exe, tmp.path(), cell, &cfg, a, tag).and_then(|mut run| run.execute(timeout));
    match outcome {
        Ok(f) => {
            eprintln!(
                "{tag}: real complete in {:.3} s, {} B on the wire",
                f.seconds,
                crate::util::grouped(f.bytes_on_air)
            );
            r.status = "complete".into();
            r.real = Some(f);
        }
        Err(RunError { status, reason }) => {
            eprintln!("{tag}: real {status}: {reason}");
            r.status = status.into();
            r.reason = Some(reason);
        }
    }
    if a.keep {
        let p = tmp.keep();
        eprintln!("{tag}: kept {}", p.display());
        r.kept_dir = Some(p.display().to_string());
    }
    compare(&mut r);
    r
}

fn compare(r: &mut CellResult) {
    let Some(real) = &r.real else {
        return;
    };
    // A real run that completed where the lab did not (or could not run) differs.
    let Some(lab) = r.lab.as_ref().filter(|l| l.complete) else {
        r.flags.push(if r.lab.is_some() {
            "lab incomplete".into()
        } else {
            "lab failed".into()
        });
        r.differs = true;
        return;
    };
    if lab.seconds <= 0.0 || lab.bytes_on_air == 0 {
        return;
    }
    let ratio = Ratios {
        time: real.seconds / lab.seconds,
        bytes: real.bytes_on_air as f64 / lab.bytes_on_air as f64,
    };
    for (what, x) in [("time", ratio.time), ("bytes", ratio.bytes)] {
        if (x - 1.0).abs() > TOLERANCE {
            r.flags.push(format!("{what} {:+.0}%", (x - 1.0) * 100.0));
        }
    }
    r.differs = !r.flags.is_empty();
    r.ratio = Some(ratio);
}

/// Key block of the bundles written at node `node` (0: A, 1: B).
fn lab_key(node: u64, i: u64) -> BundleKey {
    BundleKey(((node + 1) << 32) | i)
}

fn lab_scenario(cell: &Cell, scale: f64) -> Scenario {
    let mut initial = Vec::new();
    for (node, (n, size)) in [(0usize, cell.a_to_b), (1, cell.b_to_a)] {
        for i in 0..n {
            initial.push((
                node,
                BundleSpec {
                    key: lab_key(node as u64, i),
                    kind: BundleKind::Plain,
                    payload_len: scaled(size, scale),
                    manifest_len: skywave_lab::scenario::MANIFEST_LEN,
                },
            ));
        }
    }
    let mut topology = Topology::pair();
    if cell.a_on_side_b {
        topology.edges = vec![(1, 0)];
    }
    Scenario {
        name: format!("real-{}", cell.name),
        summary: format!("lab real cell {}", cell.name),
        link: cell.link.to_string(),
        topology,
        workload: Workload {
            initial,
            actions: Vec::new(),
        },
        deadline: SimTime::from_secs(600),
        completion: Completion::AllSynced,
    }
}

fn run_lab(cell: &Cell, cfg: &LinkConfig, a: &RealArgs, root: &Path) -> anyhow::Result<LabFigures> {
    let scenario = lab_scenario(cell, a.scale);
    let report = skywave_lab::run_agent_with(
        &scenario,
        AgentKind::Skywave,
        AgentOptions::default(),
        RunOptions {
            seed: a.seed,
            link_override: Some(cfg.clone()),
            progress: None,
            scratch_dir: Some(root),
        },
    )?;
    Ok(LabFigures {
        complete: report.complete,
        seconds: report.completion_seconds.unwrap_or(report.virtual_seconds),
        bytes_on_air: report.bytes_on_air,
        dropped_fraction: (cfg.kind == LinkKind::Frame).then(|| lab_dropped(&report)),
        dropped_at_bottleneck: report.dropped_at_bottleneck,
        useful_bytes: report.useful_bytes,
        resent_bytes: report.retransmitted_bytes,
        turnarounds: (cfg.kind == LinkKind::Stream && cfg.duplex == skywave_sim::Duplex::Half)
            .then(|| {
                report
                    .links
                    .iter()
                    .flat_map(|l| &l.ports)
                    .map(|p| p.turnarounds)
                    .sum()
            }),
        wall_seconds: report.wall_seconds,
        link_spec: report.link_spec.clone(),
        links: report.links.clone(),
    })
}

/// Queue drops over datagrams offered, at the port the data leaves from.
fn lab_dropped(report: &Report) -> f64 {
    // Node A's port sends the data (A->B), wherever A sits on the link.
    let Some(p) = report
        .links
        .first()
        .and_then(|l| l.ports.iter().find(|p| p.node == "A"))
    else {
        return 0.0;
    };
    let dropped = p.dropped.get("queue-full").copied().unwrap_or(0);
    if p.offered_frames == 0 {
        0.0
    } else {
        dropped as f64 / p.offered_frames as f64
    }
}

/// A failed real run: `failed`, `timeout` or `interrupted`, and why.
#[derive(Debug)]
struct RunError {
    status: &'static str,
    reason: String,
}

impl RunError {
    fn failed(reason: impl Into<String>) -> Self {
        RunError {
            status: "failed",
            reason: reason.into(),
        }
    }
}

impl From<anyhow::Error> for RunError {
    fn from(e: anyhow::Error) -> Self {
        if interrupted() {
            return RunError {
                status: "interrupted",
                reason: format!("interrupted ({e:#})"),
            };
        }
        RunError::failed(format!("{e:#}"))
    }
}

/// A child process, killed (and reaped) when dropped.
struct Proc {
    name: String,
    child: Child,
    log: PathBuf,
    /// Standard output lines (the emulator's JSON lines).
    lines: Option<mpsc::Receiver<String>>,
}

impl Proc {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(why)` if the process has exited.
    fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(st)) => Some(format!(
                "{} exited ({st}){}",
                self.name,
                log_tail(&self.log, 3)
            )),
            Ok(None) => None,
            Err(e) => Some(format!("{}: {e}", self.name)),
        }
    }

    fn signal(&self, sig: &str) {
        let _ = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// Waits up to `limit` for the process to exit; kills it after that.
    fn reap(&mut self, limit: Duration) {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

fn log_tail(log: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = lines[lines.len().saturating_sub(n)..].join(" | ");
    format!("; log: {tail}")
}

/// A running daemon.
struct DaemonProc {
    proc_: Proc,
    info: RuntimeInfo,
    client: Client,
}

/// One real run of one cell.
struct RealRun<'a> {
    exe: &'a Path,
    tmp: &'a Path,
    cell: &'a Cell,
    cfg: &'a LinkConfig,
    seed: u64,
    tag: &'a str,
    daemon_log: &'a str,
    dirs: [PathBuf; 2],
    /// Per node (A, B): bundle ids it must receive.
    expect: [Vec<String>; 2],
    emulator: Option<Proc>,
    daemons: Vec<DaemonProc>,
}

impl<'a> RealRun<'a> {
    /// Creates both node directories and writes each node's bundles into its store.
    fn new(
        exe: &'a Path,
        tmp: &'a Path,
        cell: &'a Cell,
        cfg: &'a LinkConfig,
        args: &'a RealArgs,
        tag: &'a str,
    ) -> Result<Self, RunError> {
        let (seed, scale, daemon_log) = (args.seed, args.scale, args.daemon_log.as_str());
        let dirs = [tmp.join("a"), tmp.join("b")];
        let mut written: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        for (node, (n, size)) in [(0usize, cell.a_to_b), (1, cell.b_to_a)] {
            let name = ["a", "b"][node];
            cli(exe, &dirs[node], &["init"])?;
            for i in 0..n {
                let file = tmp.join(format!("payload-{name}-{i}"));
                write_payload(
                    &file,
                    scaled(size, scale),
                    seed ^ ((node as u64 + 1) << 32) ^ i,
                )?;
                let out = cli(
                    exe,
                    &dirs[node],
                    &[
                        "--json",
                        "add",
                        &file.display().to_string(),
                        "--name",
                        &format!("real-{}-{name}{i}", cell.name),
                    ],
                )?;
                let _ = std::fs::remove_file(&file);
                let v: serde_json::Value = serde_json::from_str(&out)
                    .map_err(|e| RunError::failed(format!("skywave add printed '{out}': {e}")))?;
                let id = v["id"]
                    .as_str()
                    .ok_or_else(|| RunError::failed(format!("no id in '{out}'")))?;
                written[node].push(id.to_string());
            }
        }
        let [wa, wb] = written;
        Ok(RealRun {
            exe,
            tmp,
            cell,
            cfg,
            seed,
            tag,
            daemon_log,
            dirs,
            expect: [wb, wa],
            emulator: None,
            daemons: Vec::new(),
        })
    }

    fn spawn(&self, name: &str, args: &[String], piped: bool) -> anyhow::Result<Proc> {
        let log = self.tmp.join(format!("{name}.log"));
        let logf =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut child = Command::new(self.exe)
            .args(args)
            .env_remove("SKYWAVE_HOME")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(if piped { Stdio::piped() } else { Stdio::null() })
            .stderr(logf)
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        let lines = if piped {
            let out = child.stdout.take().context("emulator stdout")?;
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { return };
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            });
            Some(rx)
        } else {
            None
        };
        Ok(Proc {
            name: name.to_string(),
            child,
            log,
            lines,
        })
    }

    /// Starts `skywave --json emulate ... ARGS` and returns its `ready` object.
    fn start_emulator(&mut self, args: &[String]) -> anyhow::Result<serde_json::Value> {
        let mut full: Vec<String> = ["--json", "--log", "info", "emulate", "--link"]
            .map(String::from)
            .to_vec();
        full.push(self.cell.link.to_string());
        full.extend(["--seed".into(), self.seed.to_string()]);
        full.extend(["--stats-interval".into(), "0".into()]);
        full.extend(args.iter().cloned());
        let mut p = self.spawn("emulator", &full, true)?;
        let line = next_line(&mut p, STARTUP)?;
        let v: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("the emulator's start-up line '{line}'"))?;
        self.emulator = Some(p);
        Ok(v["ready"].clone())
    }

    /// Starts `skywave --dir DIR daemon --http 127.0.0.1:0 ARGS` for node `node` and waits
    /// for its runtime file.
    fn start_daemon(&mut self, node: usize, args: &[String]) -> anyhow::Result<()> {
        let name = ["daemon-a", "daemon-b"][node];
        let dir = &self.dirs[node];
        let _ = std::fs::remove_file(dir.join(RUNTIME_FILE));
        let mut full: Vec<String> = vec![
            "--dir".into(),
            dir.display().to_string(),
            "--log".into(),
            self.daemon_log.to_string(),
            "daemon".into(),
            "--http".into(),
            "127.0.0.1:0".into(),
        ];
        full.extend(args.iter().cloned());
        let mut p = self.spawn(name, &full, false)?;
        let start = Instant::now();
        let info = loop {
            if let Some(why) = p.exited() {
                bail!("{why}");
            }
            if interrupted() {
                bail!("interrupted while {name} started");
            }
            if let Ok(text) = std::fs::read_to_string(dir.join(RUNTIME_FILE))
                && let Ok(info) = serde_json::from_str::<RuntimeInfo>(&text)
                && info.pid == p.pid()
            {
                break info;
            }
            if start.elapsed() > STARTUP {
                bail!(
                    "{name} wrote no {RUNTIME_FILE} within {} s{}",
                    STARTUP.as_secs(),
                    log_tail(&p.log, 3)
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let client = Client::for_node(dir, &info);
        self.daemons.push(DaemonProc {
            proc_: p,
            info,
            client,
        });
        Ok(())
    }

    fn daemon(&self, node: usize) -> &DaemonProc {
        // Daemons are pushed in start order; find by directory.
        self.daemons
            .iter()
            .find(|d| d.proc_.name == ["daemon-a", "daemon-b"][node])
            .expect("daemon started")
    }

    fn write_config(&self, name: &str, text: &str) -> anyhow::Result<String> {
        let p = self.tmp.join(name);
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
        Ok(p.display().to_string())
    }

    /// A UDP link configured as the lab configures its agents' (a fair user's settings,
    /// `skywave_node::adapter::ip_config_for`): datagrams of what an Ethernet route
    /// carries (the emulator listens on loopback, whose route would allow 16 KB), the
    /// path's MTU left to discovery, and the round trip to expect; not the path's rate
    /// or loss.
    fn udp_config(&self, peer: Option<SocketAddr>) -> String {
        let mtu = skywave_node::adapter::DEFAULT_UDP_MTU;
        let rtt = self.cfg.up.delay + self.cfg.down.delay;
        let mut t = format!(
            "[[link]]\ntype = \"udp\"\nbind = \"127.0.0.1:0\"\nmtu = {mtu}\nrtt = \"{}us\"\n",
            rtt.as_micros().max(100)
        );
        if let Some(p) = peer {
            let _ = writeln!(t, "peers = [\"{p}\"]");
        }
        t
    }

    /// Starts the processes of the cell's transport; the last daemon up starts the clock.
    fn start(&mut self) -> anyhow::Result<()> {
        match self.cell.transport {
            Transport::Udp => {
                // Side B of the link listens; side A sends to the emulator and dials.
                let (side_a, side_b) = if self.cell.a_on_side_b {
                    (1, 0)
                } else {
                    (0, 1)
                };
                let conf = self.write_config("listen.toml", &self.udp_config(None))?;
                self.start_daemon(side_b, &["-c".into(), conf])?;
                let fwd = *self
                    .daemon(side_b)
                    .info
                    .udp
                    .first()
                    .context("no UDP socket")?;
                let ready = self.start_emulator(&[
                    "--listen".into(),
                    "127.0.0.1:0".into(),
                    "--forward".into(),
                    fwd.to_string(),
                ])?;
                let listen: SocketAddr = ready["listen"]
                    .as_str()
                    .and_then(|s| s.parse().ok())
                    .with_context(|| format!("no listen address in {ready}"))?;
                let conf = self.write_config("dial.toml", &self.udp_config(Some(listen)))?;
                self.start_daemon(side_a, &["-c".into(), conf])?;
            }
            Transport::Pty => {
                let ready = self.start_emulator(&["--stream".into(), "pty".into()])?;
                for (node, key) in [(1, "b"), (0, "a")] {
                    let dev = ready[key]
                        .as_str()
                        .with_context(|| format!("no pty for side {key} in {ready}"))?;
                    let conf = self.write_config(
                        &format!("{key}.toml"),
                        &format!(
                            "[[link]]\ntype = \"serial\"\ndevice = {}\nprofile = {}\n",
                            toml_str(dev),
                            toml_str(self.cell.link)
                        ),
                    )?;
                    self.start_daemon(node, &["-c".into(), conf])?;
                }
            }
            Transport::Rfd900 => {
                let radio = self.tmp.join("radio").display().to_string();
                let conf = self.write_config(
                    "a.toml",
                    &format!(
                        "[[link]]\ntype = \"emulated\"\nprofile = {}\npeer_device = {}\nseed = {}\n",
                        toml_str(self.cell.link),
                        toml_str(&radio),
                        self.seed
                    ),
                )?;
                self.start_daemon(0, &["-c".into(), conf])?;
                let conf = self.write_config(
                    "b.toml",
                    &format!(
                        "[[link]]\ntype = \"rfd900\"\ndevice = {}\nair_rate = {}\n",
                        toml_str(&radio),
                        self.cfg.up.rate_bps
                    ),
                )?;
                self.start_daemon(1, &["-c".into(), conf])?;
            }
        }
        Ok(())
    }

    /// Checks every child; the first that has exited fails the run.
    fn check_alive(&mut self) -> anyhow::Result<()> {
        if let Some(e) = self.emulator.as_mut()
            && let Some(why) = e.exited()
        {
            bail!("{why}");
        }
        for d in &mut self.daemons {
            if let Some(why) = d.proc_.exited() {
                bail!("{why}");
            }
        }
        Ok(())
    }

    /// Bundles of `expect[node]` held so far at `node`, checking at most one new id.
    fn held(&self, node: usize, done: &mut [usize; 2]) -> bool {
        let ids = &self.expect[node];
        while done[node] < ids.len() {
            let id = &ids[done[node]];
            let d = self.daemon(node);
            match d
                .client
                .get_json::<serde_json::Value>(&format!("/v1/bundles/{id}"))
            {
                Ok(_) => done[node] += 1,
                Err(_) => return false,
            }
        }
        true
    }

    /// Who holds what so far (and how far the transfers under way are).
    fn progress(&self, done: &[usize; 2]) -> String {
        let mut parts = Vec::new();
        for node in 0..2 {
            let want = self.expect[node].len();
            if want == 0 {
                continue;
            }
            let name = ["A", "B"][node];
            let mut s = format!("{name} holds {}/{want}", done[node]);
            if let Ok(st) = self.daemon(node).client.status() {
                let (held, total) = st
                    .transfers
                    .iter()
                    .filter(|t| t.direction == "receive")
                    .fold((0, 0), |(h, n), t| (h + t.held_bytes, n + t.total_bytes));
                if total > 0 {
                    let _ = write!(s, " (receiving {:.0}%)", held as f64 * 100.0 / total as f64);
                }
            }
            parts.push(s);
        }
        parts.join(", ")
    }

    /// Sends SIGINT to the emulator and reads its summary.
    fn stop_emulator(&mut self) -> Option<serde_json::Value> {
        let mut p = self.emulator.take()?;
        p.signal("INT");
        let mut summary = None;
        let end = Instant::now() + Duration::from_secs(10);
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            let Ok(line) = p.lines.as_ref()?.recv_timeout(left) else {
                break;
            };
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                && v.get("summary").is_some()
            {
                summary = Some(v["summary"].clone());
                break;
            }
        }
        p.reap(Duration::from_secs(2));
        summary
    }

    fn stop_daemons(&mut self) {
        for d in &self.daemons {
            d.proc_.signal("TERM");
        }
        for d in &mut self.daemons {
            d.proc_.reap(Duration::from_secs(4));
        }
        self.daemons.clear();
    }

    fn execute(&mut self, timeout: Duration) -> Result<RealFigures, RunError> {
        let r = self.execute_inner(timeout);
        // On every path: the emulator (if still there) and the daemons.
        if let Some(mut e) = self.emulator.take() {
            e.signal("INT");
            e.reap(Duration::from_secs(2));
        }
        self.stop_daemons();
        r
    }

    fn execute_inner(&mut self, timeout: Duration) -> Result<RealFigures, RunError> {
        let launched = Instant::now();
        self.start()?;
        let t0 = Instant::now();
        let startup_seconds = (t0 - launched).as_secs_f64();
        let mut done = [0usize; 2];
        let mut next_progress = t0 + Duration::from_secs(2);
        let seconds = loop {
            if interrupted() {
                return Err(RunError {
                    status: "interrupted",
                    reason: format!(
                        "interrupted after {:.1} s: {}",
                        t0.elapsed().as_secs_f64(),
                        self.progress(&done)
                    ),
                });
            }
            let a = self.held(0, &mut done);
            let b = self.held(1, &mut done);
            if a && b {
                break t0.elapsed().as_secs_f64();
            }
            if let Err(e) = self.check_alive() {
                // Ctrl-C on a terminal reaches the children too: let the flag catch up.
                std::thread::sleep(Duration::from_millis(300));
                return Err(e.into());
            }
            let now = Instant::now();
            if now - t0 > timeout {
                let line = self.progress(&done);
                let emu = self.stop_emulator();
                let mut reason =
                    format!("no full sync within {:.0} s: {line}", timeout.as_secs_f64());
                if let Some(s) = emu {
                    let _ = write!(reason, "; emulator: {}", emulator_brief(&s));
                }
                return Err(RunError {
                    status: "timeout",
                    reason,
                });
            }
            if now >= next_progress {
                eprintln!(
                    "{}: real {:.1} s: {}",
                    self.tag,
                    (now - t0).as_secs_f64(),
                    self.progress(&done)
                );
                next_progress = now + Duration::from_secs(2);
            }
            std::thread::sleep(POLL);
        };
        // Stop the clock's counters first: the emulator's summary at the moment of sync.
        let emulator = match self.cell.transport {
            Transport::Udp | Transport::Pty => Some(
                self.stop_emulator()
                    .ok_or_else(|| RunError::failed("the emulator printed no summary"))?,
            ),
            Transport::Rfd900 => None,
        };
        let mut useful = 0;
        let mut resent = 0;
        let mut frames_sent = 0;
        let mut frames_out = 0;
        let mut bytes_out = 0;
        for node in 0..2 {
            let st = self
                .daemon(node)
                .client
                .status()
                .map_err(|e| RunError::failed(format!("status of node {node}: {e:#}")))?;
            useful += st.protocol.useful_bytes_received;
            resent += st.protocol.piece_bytes_resent;
            frames_sent += st.protocol.frames_sent;
            for l in &st.links {
                frames_out += l.frames_out;
                bytes_out += l.bytes_out;
            }
        }
        let (bytes_on_air, frame_bytes, dropped_fraction) = match &emulator {
            Some(s) => {
                let dirs = [&s["a_to_b"], &s["b_to_a"]];
                let sent: u64 = dirs
                    .iter()
                    .map(|d| d["sent_bytes"].as_u64().unwrap_or(0))
                    .sum();
                let dropped = (self.cfg.kind == LinkKind::Frame).then(|| {
                    // The data leaves from A: link direction a_to_b unless A sits on side B.
                    let d = dirs[usize::from(self.cell.a_on_side_b)];
                    let offered = d["read_frames"].as_u64().unwrap_or(0)
                        - d["refused_mtu"].as_u64().unwrap_or(0);
                    let q = d["dropped_queue"].as_u64().unwrap_or(0);
                    if offered == 0 {
                        0.0
                    } else {
                        q as f64 / offered as f64
                    }
                });
                (sent, None, dropped)
            }
            None => (
                bytes_out + frames_out * RFD900_PARITY,
                Some(bytes_out),
                None,
            ),
        };
        Ok(RealFigures {
            seconds,
            startup_seconds,
            bytes_on_air,
            frame_bytes,
            dropped_fraction,
            useful_bytes: useful,
            resent_bytes: resent,
            frames_sent,
            turnarounds: emulator
                .as_ref()
                .filter(|_| {
                    self.cfg.kind == LinkKind::Stream
                        && self.cfg.duplex == skywave_sim::Duplex::Half
                })
                .map(|s| {
                    s["a_to_b"]["turnarounds"].as_u64().unwrap_or(0)
                        + s["b_to_a"]["turnarounds"].as_u64().unwrap_or(0)
                }),
            emulator,
        })
    }
}

fn emulator_brief(s: &serde_json::Value) -> String {
    let d = |k: &str, f: &str| s[k][f].as_u64().unwrap_or(0);
    format!(
        "A->B sent {} B, {} queue drops, {} lost, {} calls dropped; B->A sent {} B",
        d("a_to_b", "sent_bytes"),
        d("a_to_b", "dropped_queue"),
        d("a_to_b", "dropped_loss"),
        d("a_to_b", "call_drops") + d("b_to_a", "call_drops"),
        d("b_to_a", "sent_bytes"),
    )
}

fn next_line(p: &mut Proc, limit: Duration) -> anyhow::Result<String> {
    let end = Instant::now() + limit;
    loop {
        if interrupted() {
            bail!("interrupted while {} started", p.name);
        }
        let rx = p.lines.as_ref().context("no output pipe")?;
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(l) => return Ok(l),
            Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < end => {}
            Err(_) => {
                let why = p
                    .exited()
                    .unwrap_or_else(|| format!("{} printed nothing", p.name));
                bail!("{why}{}", log_tail(&p.log, 3));
            }
        }
    }
}

/// Runs `skywave --dir DIR ARGS` to completion; its standard output.
fn cli(exe: &Path, dir: &Path, args: &[&str]) -> Result<String, RunError> {
    let out = Command::new(exe)
        .arg("--dir")
        .arg(dir)
        .args(args)
        .env_remove("SKYWAVE_HOME")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| RunError::failed(format!("running skywave {args:?}: {e}")))?;
    if !out.status.success() {
        return Err(RunError::failed(format!(
            "skywave {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `n` incompressible bytes (xorshift64*), different for every seed.
fn write_payload(path: &Path, n: u64, seed: u64) -> Result<(), RunError> {
    let f = std::fs::File::create(path)
        .map_err(|e| RunError::failed(format!("creating {}: {e}", path.display())))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut left = n;
    let mut buf = Vec::with_capacity(1 << 16);
    while left > 0 {
        buf.clear();
        while buf.len() < (1 << 16) && (buf.len() as u64) < left {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            buf.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        let take = (buf.len() as u64).min(left) as usize;
        w.write_all(&buf[..take])
            .map_err(|e| RunError::failed(format!("writing {}: {e}", path.display())))?;
        left -= take as u64;
    }
    w.flush()
        .map_err(|e| RunError::failed(format!("writing {}: {e}", path.display())))
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |f| format!("{:.1}%", f * 100.0))
}

fn table(results: &[CellResult], command: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{command}");
    let _ = writeln!(
        o,
        "{:<16} {:>10} {:>10} {:>6} {:>12} {:>12} {:>6} {:>15}  flags",
        "cell",
        "real time",
        "lab time",
        "ratio",
        "real bytes",
        "lab bytes",
        "ratio",
        "dropped r / l",
    );
    for r in results {
        let real_t = r
            .real
            .as_ref()
            .map_or("-".into(), |f| format!("{:.2} s", f.seconds));
        let lab_t = r.lab.as_ref().map_or("-".into(), |l| {
            if l.complete {
                format!("{:.2} s", l.seconds)
            } else {
                "incomplete".into()
            }
        });
        let real_b = r
            .real
            .as_ref()
            .map_or("-".into(), |f| crate::util::grouped(f.bytes_on_air));
        let lab_b = r
            .lab
            .as_ref()
            .map_or("-".into(), |l| crate::util::grouped(l.bytes_on_air));
        let (rt, rb) = r.ratio.map_or(("-".into(), "-".into()), |x| {
            (format!("{:.2}", x.time), format!("{:.2}", x.bytes))
        });
        let dropped = match (&r.real, &r.lab) {
            (_, Some(l)) if l.dropped_fraction.is_some() => format!(
                "{} / {}",
                pct(r.real.as_ref().and_then(|f| f.dropped_fraction)),
                pct(l.dropped_fraction)
            ),
            _ => "-".into(),
        };
        let flags = if r.status != "complete" {
            r.status.to_uppercase()
        } else if r.differs {
            format!("DIFFERS: {}", r.flags.join(", "))
        } else {
            "within 10%".into()
        };
        let _ = writeln!(
            o,
            "{:<16} {:>10} {:>10} {:>6} {:>12} {:>12} {:>6} {:>15}  {}",
            r.cell, real_t, lab_t, rt, real_b, lab_b, rb, dropped, flags
        );
    }
    let _ = writeln!(o);
    for r in results {
        let _ = writeln!(
            o,
            "{}: {} over {} ({})",
            r.cell, r.workload, r.link, r.transport
        );
        if let Some(why) = &r.reason {
            let _ = writeln!(o, "  {}: {why}", r.status);
        }
        if let Some(e) = &r.lab_error {
            let _ = writeln!(o, "  lab failed: {e}");
        }
        if let Some(f) = &r.real
            && let Some(fb) = f.frame_bytes
        {
            let _ = writeln!(
                o,
                "  real bytes: {} B of frames + {} B of Reed-Solomon parity",
                crate::util::grouped(fb),
                crate::util::grouped(f.bytes_on_air - fb)
            );
        }
        if let (Some(f), Some(l)) = (&r.real, &r.lab)
            && let (Some(rt), Some(lt)) = (f.turnarounds, l.turnarounds)
        {
            let _ = writeln!(o, "  turn changes: real {rt}, lab {lt}");
        }
        if let Some(d) = &r.kept_dir {
            let _ = writeln!(o, "  kept {d}");
        }
    }
    o
}
