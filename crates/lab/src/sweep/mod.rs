//! `skywave lab sweep`: a grid over the link space, each cell measured against its
//! physical floor.
//!
//! A **family** is one workload on one kind of link ([`Family`]: `radio`, `chain`, `hf`,
//! `ip`); its **axes** (rate, frame budget, loss, transmit queue, delay, buffer, RTT, MTU)
//! span a grid of **cells**; each cell runs for several seeds with the chosen agent (the
//! skywave agent by default) through the lab's own runner ([`crate::run_agent_with`]).
//!
//! # The physical floor
//!
//! The least time the link's physics allows for the cell's workload
//! (shared/design.md, Metrics):
//!
//! ```text
//! floor = U x 8 / R  +  RTT  +  T x turnaround
//! ```
//!
//! - `U`: the useful bytes the workload needs: payload + manifest bytes of every bundle
//!   version each receiver must newly accept (the lab's definition of useful bytes). A
//!   receiver's copy is carried from its predecessor on a shortest path from the
//!   bundle's origin (the chain's far radio hears only the relay: each of its bundles is
//!   on the air twice, and the relay's copy is useful bytes too). When a seed of the cell
//!   completes, `U` is that run's useful bytes (the agent's real manifest sizes); before,
//!   manifests count at the lab's nominal 134 B (`basis` says which).
//! - `R`: on a shared radio channel (CSMA) or a half-duplex link, all useful bytes of all
//!   senders share the one channel rate; on a full-duplex link each direction carries its
//!   own bytes at its own rate and the slower direction counts.
//! - `RTT`: one round trip, the sum of both directions' one-way delays (0 on the
//!   `uhf-csma` radio, 2 x delay on an HF modem, the path's RTT on IP).
//! - `T`: the half-duplex turnarounds the workload forces: 2 (one pair) when both
//!   directions of a half-duplex link carry useful bytes, else 0.
//!
//! Per-frame overheads (preambles, headers, framing) are not in the floor: they are part
//! of what the sweep measures. `time / floor` and `bytes on air / useful bytes` are the
//! sweep's measures.
//!
//! # Time limits
//!
//! A cell's runs stop at `min(max(20 x floor, 60 s), 8 h)` virtual time (floor from the
//! nominal workload); a run still incomplete then is a `timeout` with what it delivered.

mod grid;
mod output;

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde::Serialize;

pub use grid::{
    AxisDef, AxisKind, AxisValue, Cell, CellSetup, Family, FamilyGrid, Floor, GE_DEFAULT, Grid,
    IP_FLOOR_SECONDS, IP_MAX_BUNDLE, NOMINAL_MANIFEST, TIMEOUT_FLOORS, TIMEOUT_MAX, TIMEOUT_MIN,
    floor, parse_families, rate_short, timeout_for,
};
pub use output::{CSV_COLUMNS, heatmaps, table, write_csv};

use crate::LabError;
use crate::runner::{AgentKind, AgentOptions, Report, RunOptions, fec_name, run_agent_with};

/// The floor formula, as the JSON report states it.
pub const FLOOR_FORMULA: &str = "floor = U x 8 / R + RTT + T x turnaround; U: useful bytes the workload needs (payload + manifest of each bundle version each receiver newly accepts; a complete run's useful bytes, else manifests at the nominal 134 B); R: the channel rate all senders share (CSMA radio, half duplex) or, full duplex, each direction's own rate (the slower direction counts); RTT: up + down one-way delay; T: 2 turnarounds on a half-duplex link when both directions carry data, else 0";

/// Options of a sweep.
#[derive(Clone, Copy)]
pub struct SweepOptions<'a> {
    pub seeds: &'a [u64],
    pub agent: AgentKind,
    pub agent_opts: AgentOptions,
    /// Where the skywave agent's stores live (see [`RunOptions::scratch_dir`]).
    pub scratch_dir: Option<&'a Path>,
    /// Worker threads (at least 1).
    pub threads: usize,
    /// Called after every run (from the worker threads).
    pub on_run: Option<&'a (dyn Fn(&RunDone<'_>) + Sync)>,
}

impl std::fmt::Debug for SweepOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SweepOptions")
            .field("seeds", &self.seeds)
            .field("agent", &self.agent)
            .field("threads", &self.threads)
            .field("scratch_dir", &self.scratch_dir)
            .finish()
    }
}

/// Progress: one run has finished.
#[derive(Debug)]
pub struct RunDone<'a> {
    pub cell: &'a Cell,
    pub result: &'a SeedResult,
    pub runs_done: usize,
    pub runs_total: usize,
    /// Cells whose every seed has finished (cells that could not be built count as done).
    pub cells_done: usize,
    pub cells_total: usize,
}

/// How one run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Complete,
    /// Still incomplete at the cell's time limit.
    Timeout,
    /// The run failed (an agent error or a panic); `error` says why.
    Error,
}

/// One seed of one cell.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeedResult {
    pub seed: u64,
    pub status: RunStatus,
    pub error: Option<String>,
    /// Virtual time to complete (complete runs).
    pub time_seconds: Option<f64>,
    /// Virtual time when the run stopped (completion, else the time limit).
    pub virtual_seconds: f64,
    /// time / the cell's floor (complete runs).
    pub time_over_floor: Option<f64>,
    /// Useful bytes delivered (the lab's definition).
    pub useful_bytes: u64,
    /// Bundle versions newly accepted, summed over receivers.
    pub bundles_delivered: u64,
    pub bytes_on_air: u64,
    /// bytes on air / useful bytes (when anything was delivered).
    pub overhead: Option<f64>,
    /// Bytes the agents sent again.
    pub resent_bytes: u64,
    /// IP paths: bytes the bottleneck queue dropped, as a fraction of the bytes the
    /// senders handed to the path (the report's `dropped_at_bottleneck`).
    pub dropped_at_bottleneck: Option<f64>,
    pub wall_seconds: f64,
}

/// Min / median / max over the runs a metric is defined for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
    /// Runs the figures are taken over.
    pub n: usize,
}

impl Spread {
    /// `None` when `values` is empty. The median of an even count is the mean of the two
    /// middle values.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            min: v[0],
            median,
            max: v[n - 1],
            n,
        })
    }
}

/// Min / median / max of each metric: time measures over complete runs, byte measures
/// over complete runs too (so that cells compare like with like; every run's own
/// figures are in `runs`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CellStats {
    pub time_seconds: Option<Spread>,
    pub time_over_floor: Option<Spread>,
    pub overhead: Option<Spread>,
    pub bytes_on_air: Option<Spread>,
    pub useful_bytes: Option<Spread>,
    pub resent_bytes: Option<Spread>,
    pub dropped_at_bottleneck: Option<Spread>,
}

/// The status of a cell over its seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CellStatus {
    /// Every seed complete.
    Complete,
    /// Some seeds complete, some not.
    Partial,
    /// No seed complete; at least one timed out.
    Timeout,
    /// The cell could not be built, or every run failed.
    Error,
}

/// One cell's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellReport {
    pub family: Family,
    /// Axis name -> value label.
    pub axes: std::collections::BTreeMap<String, String>,
    /// The link spec the cell ran on.
    pub link: String,
    pub status: CellStatus,
    /// Why the cell failed (`status` error): its build error, or the first run's error.
    pub error: Option<String>,
    pub complete_runs: usize,
    pub runs: usize,
    pub floor: Option<Floor>,
    pub timeout_seconds: Option<f64>,
    pub stats: CellStats,
    pub results: Vec<SeedResult>,
}

impl CellReport {
    /// The status as tables show it: `complete`, `partial 2/3`, `timeout`, `error: ...`.
    pub fn status_text(&self) -> String {
        match self.status {
            CellStatus::Complete => "complete".into(),
            CellStatus::Partial => format!("partial {}/{}", self.complete_runs, self.runs),
            CellStatus::Timeout => "timeout".into(),
            CellStatus::Error => format!("error: {}", self.error.as_deref().unwrap_or("?")),
        }
    }
}

/// A family as swept: its workload, base link and axis values.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FamilySummary {
    pub family: Family,
    pub workload: String,
    pub base_link: String,
    /// `(axis, values)` in the family's axis order.
    pub axes: Vec<AxisSummary>,
    pub cells: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AxisSummary {
    pub name: String,
    pub values: Vec<String>,
}

/// Everything a sweep measured: one entry per cell, none dropped.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepReport {
    pub agent: String,
    pub fec: Option<String>,
    pub seeds: Vec<u64>,
    pub quick: bool,
    pub threads: usize,
    pub wall_seconds: f64,
    pub floor_formula: String,
    pub families: Vec<FamilySummary>,
    pub cells: Vec<CellReport>,
}

impl SweepReport {
    /// Cells of `family`, in grid order.
    pub fn family_cells(&self, family: Family) -> impl Iterator<Item = &CellReport> {
        self.cells.iter().filter(move |c| c.family == family)
    }
}

fn seed_result(seed: u64, r: Result<Report, String>, wall: f64) -> SeedResult {
    match r {
        Ok(rep) => SeedResult {
            seed,
            status: if rep.complete {
                RunStatus::Complete
            } else {
                RunStatus::Timeout
            },
            error: None,
            time_seconds: rep.completion_seconds.filter(|_| rep.complete),
            virtual_seconds: rep.virtual_seconds,
            time_over_floor: None,
            useful_bytes: rep.useful_bytes,
            bundles_delivered: rep.bundles_delivered.values().sum(),
            bytes_on_air: rep.bytes_on_air,
            overhead: rep.overhead,
            resent_bytes: rep.retransmitted_bytes,
            dropped_at_bottleneck: rep.dropped_at_bottleneck,
            wall_seconds: rep.wall_seconds,
        },
        Err(e) => SeedResult {
            seed,
            status: RunStatus::Error,
            error: Some(e),
            time_seconds: None,
            virtual_seconds: 0.0,
            time_over_floor: None,
            useful_bytes: 0,
            bundles_delivered: 0,
            bytes_on_air: 0,
            overhead: None,
            resent_bytes: 0,
            dropped_at_bottleneck: None,
            wall_seconds: wall,
        },
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Runs one seed of a built cell; a failure (agent error, panic) becomes an error
/// result.
fn run_one(setup: &CellSetup, seed: u64, opts: &SweepOptions<'_>) -> SeedResult {
    let wall = Instant::now();
    let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
        run_agent_with(
            &setup.scenario,
            opts.agent,
            opts.agent_opts,
            RunOptions {
                seed,
                link_override: Some(setup.link.clone()),
                progress: None,
                scratch_dir: opts.scratch_dir,
            },
        )
    }));
    let r = match r {
        Ok(Ok(rep)) => Ok(rep),
        Ok(Err(e)) => Err(e.to_string()),
        Err(p) => Err(format!("the run panicked: {}", panic_text(p.as_ref()))),
    };
    seed_result(seed, r, wall.elapsed().as_secs_f64())
}

fn summarize(cell: &Cell, mut results: Vec<SeedResult>) -> CellReport {
    let axes = cell
        .axes
        .iter()
        .map(|(n, v)| (n.clone(), v.label.clone()))
        .collect();
    let setup = match &cell.setup {
        Ok(s) => s,
        Err(e) => {
            return CellReport {
                family: cell.family,
                axes,
                link: cell.link.clone(),
                status: CellStatus::Error,
                error: Some(e.clone()),
                complete_runs: 0,
                runs: 0,
                floor: None,
                timeout_seconds: None,
                stats: CellStats::default(),
                results,
            };
        }
    };
    results.sort_by_key(|r| r.seed);
    let complete: Vec<&SeedResult> = results
        .iter()
        .filter(|r| r.status == RunStatus::Complete)
        .collect();
    let measured = complete.iter().map(|r| r.useful_bytes).max();
    let fl = floor(&setup.scenario, &setup.link, measured);
    for r in &mut results {
        if let Some(t) = r.time_seconds {
            r.time_over_floor = Some(t / fl.seconds);
        }
    }
    let complete: Vec<&SeedResult> = results
        .iter()
        .filter(|r| r.status == RunStatus::Complete)
        .collect();
    let spread =
        |f: &dyn Fn(&SeedResult) -> Option<f64>| Spread::of(complete.iter().filter_map(|r| f(r)));
    let stats = CellStats {
        time_seconds: spread(&|r| r.time_seconds),
        time_over_floor: spread(&|r| r.time_over_floor),
        overhead: spread(&|r| r.overhead),
        bytes_on_air: spread(&|r| Some(r.bytes_on_air as f64)),
        useful_bytes: spread(&|r| Some(r.useful_bytes as f64)),
        resent_bytes: spread(&|r| Some(r.resent_bytes as f64)),
        dropped_at_bottleneck: spread(&|r| r.dropped_at_bottleneck),
    };
    let n = results.len();
    let done = complete.len();
    let errors = results
        .iter()
        .filter(|r| r.status == RunStatus::Error)
        .count();
    let status = if n > 0 && done == n {
        CellStatus::Complete
    } else if done > 0 {
        CellStatus::Partial
    } else if errors == n {
        CellStatus::Error
    } else {
        CellStatus::Timeout
    };
    let error = results.iter().find_map(|r| r.error.clone());
    CellReport {
        family: cell.family,
        axes,
        link: cell.link.clone(),
        status,
        error,
        complete_runs: done,
        runs: n,
        floor: Some(fl),
        timeout_seconds: Some(setup.timeout.as_secs_f64()),
        stats,
        results,
    }
}

/// Runs every cell of `grid` for every seed (cells that cannot be built are reported
/// with their error, not run) and summarizes each cell.
pub fn sweep(grid: &Grid, opts: &SweepOptions<'_>) -> Result<SweepReport, LabError> {
    let wall = Instant::now();
    if grid.is_empty() {
        return Err(LabError::invalid(
            "--axis",
            "",
            "at least one value on every axis (the grid is empty)",
        ));
    }
    if opts.seeds.is_empty() {
        return Err(LabError::invalid(
            "--seeds",
            "",
            "at least one seed (the grid would be empty)",
        ));
    }
    let cells = grid.cells(opts.agent);
    let jobs: Vec<(usize, u64)> = cells
        .iter()
        .enumerate()
        .filter(|(_, c)| c.setup.is_ok())
        .flat_map(|(i, _)| opts.seeds.iter().map(move |&s| (i, s)))
        .collect();
    let unbuilt = cells.iter().filter(|c| c.setup.is_err()).count();
    let next = AtomicUsize::new(0);
    let runs_done = AtomicUsize::new(0);
    let cells_done = AtomicUsize::new(unbuilt);
    let remaining: Vec<AtomicUsize> = cells
        .iter()
        .map(|c| AtomicUsize::new(if c.setup.is_ok() { opts.seeds.len() } else { 0 }))
        .collect();
    let results: Mutex<Vec<Vec<SeedResult>>> = Mutex::new(vec![Vec::new(); cells.len()]);
    let threads = opts.threads.clamp(1, jobs.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(i, seed)) = jobs.get(k) else {
                        break;
                    };
                    let cell = &cells[i];
                    let Ok(setup) = &cell.setup else {
                        continue;
                    };
                    let r = run_one(setup, seed, opts);
                    let rd = runs_done.fetch_add(1, Ordering::Relaxed) + 1;
                    let cd = if remaining[i].fetch_sub(1, Ordering::Relaxed) == 1 {
                        cells_done.fetch_add(1, Ordering::Relaxed) + 1
                    } else {
                        cells_done.load(Ordering::Relaxed)
                    };
                    if let Some(cb) = opts.on_run {
                        cb(&RunDone {
                            cell,
                            result: &r,
                            runs_done: rd,
                            runs_total: jobs.len(),
                            cells_done: cd,
                            cells_total: cells.len(),
                        });
                    }
                    if let Ok(mut v) = results.lock() {
                        v[i].push(r);
                    }
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    let reports: Vec<CellReport> = cells
        .iter()
        .zip(results)
        .map(|(c, r)| summarize(c, r))
        .collect();
    let families = grid
        .families
        .iter()
        .map(|fg| FamilySummary {
            family: fg.family,
            workload: fg.family.workload(),
            base_link: fg.family.base_link().to_string(),
            axes: fg
                .axes
                .iter()
                .map(|(d, v)| AxisSummary {
                    name: d.name.to_string(),
                    values: v.iter().map(|x| x.label.clone()).collect(),
                })
                .collect(),
            cells: fg.len(),
        })
        .collect();
    Ok(SweepReport {
        agent: opts.agent.name().to_string(),
        fec: (opts.agent == AgentKind::Skywave).then(|| fec_name(opts.agent_opts.fec).to_string()),
        seeds: opts.seeds.to_vec(),
        quick: grid.quick,
        threads,
        wall_seconds: wall.elapsed().as_secs_f64(),
        floor_formula: FLOOR_FORMULA.to_string(),
        families,
        cells: reports,
    })
}

#[cfg(test)]
mod tests;
