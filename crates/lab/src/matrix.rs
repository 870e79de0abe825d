//! Scenarios x seeds, and the CSV of the results.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::LabError;
use crate::runner::{AgentKind, AgentOptions, Report, RunOptions, run_agent_with};
use crate::scenario::Scenario;

const SEEDS_EXPECTED: &str =
    "a seed (7), a range (1-5) or a comma-separated list of them (1-3,9); at most 10000 seeds";
const MAX_SEEDS: usize = 10_000;

/// Parses `--seeds`: `7`, `1-5`, `1-3,9`.
pub fn parse_seeds(text: &str) -> Result<Vec<u64>, LabError> {
    let bad = || LabError::invalid("--seeds", text, SEEDS_EXPECTED);
    let mut seeds = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse::<u64>().map_err(|_| bad())?,
                b.trim().parse::<u64>().map_err(|_| bad())?,
            ),
            None => {
                let v = part.parse::<u64>().map_err(|_| bad())?;
                (v, v)
            }
        };
        if lo > hi || hi - lo >= MAX_SEEDS as u64 {
            return Err(bad());
        }
        seeds.extend(lo..=hi);
        if seeds.len() > MAX_SEEDS {
            return Err(bad());
        }
    }
    Ok(seeds)
}

/// Runs every scenario with every seed with `agent`, on all cores; reports in
/// scenario-major, seed-minor order.
pub fn matrix(
    scenarios: &[Scenario],
    seeds: &[u64],
    agent: AgentKind,
) -> Result<Vec<Report>, LabError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    matrix_with(
        scenarios,
        seeds,
        agent,
        AgentOptions::default(),
        None,
        threads,
        &|_| {},
    )
}

/// [`matrix`] with the agent's options (`--fec`), a thread count and a callback for each
/// finished run (in completion order, for progress displays).
pub fn matrix_with(
    scenarios: &[Scenario],
    seeds: &[u64],
    agent: AgentKind,
    agent_opts: AgentOptions,
    scratch_dir: Option<&Path>,
    threads: usize,
    on_done: &(dyn Fn(&Report) + Sync),
) -> Result<Vec<Report>, LabError> {
    let jobs: Vec<(&Scenario, u64)> = scenarios
        .iter()
        .flat_map(|s| seeds.iter().map(move |&seed| (s, seed)))
        .collect();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Report, LabError>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(sc, seed)) = jobs.get(i) else {
                        break;
                    };
                    let r = run_agent_with(
                        sc,
                        agent,
                        agent_opts,
                        RunOptions {
                            seed,
                            scratch_dir,
                            ..RunOptions::default()
                        },
                    );
                    if let Ok(rep) = &r {
                        on_done(rep);
                    }
                    // A poisoned lock means another worker panicked; the scope re-raises it.
                    if let Ok(mut v) = results.lock() {
                        v[i] = Some(r);
                    }
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(LabError::invalid("matrix", "job", "every job to run"))))
        .collect()
}

/// The CSV columns, in order.
pub const CSV_COLUMNS: &[&str] = &[
    "scenario",
    "agent",
    "seed",
    "link",
    "complete",
    "completion_seconds",
    "virtual_seconds",
    "wall_seconds",
    "bundles_delivered",
    "useful_bytes",
    "bytes_on_air",
    "goodput_bps",
    "capacity_bps",
    "efficiency",
    "overhead",
    "recon_bytes",
    "recon_messages",
    "retransmitted_bytes",
    "dropped_calls",
    "latency_p50_seconds",
    "latency_p99_seconds",
    "backlog_max_bytes",
    "events",
    "fec",
    "dropped_at_bottleneck",
];

/// One CSV field, quoted as RFC 4180 requires.
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// An optional CSV value: empty when absent.
pub(crate) fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// Writes one header row and one row per report (RFC 4180 quoting).
pub fn write_csv(reports: &[Report], mut w: impl Write) -> Result<(), LabError> {
    writeln!(w, "{}", CSV_COLUMNS.join(","))?;
    for r in reports {
        let delivered = r
            .bundles_delivered
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect::<Vec<_>>()
            .join(";");
        let row = [
            r.scenario.clone(),
            r.agent.clone(),
            r.seed.to_string(),
            r.link.clone(),
            r.complete.to_string(),
            opt(r.completion_seconds),
            r.virtual_seconds.to_string(),
            format!("{:.3}", r.wall_seconds),
            delivered,
            r.useful_bytes.to_string(),
            r.bytes_on_air.to_string(),
            format!("{:.1}", r.goodput_bps),
            r.capacity_bps.to_string(),
            format!("{:.6}", r.efficiency),
            opt(r.overhead.map(|o| format!("{o:.4}"))),
            r.recon_bytes.to_string(),
            r.recon_messages.to_string(),
            r.retransmitted_bytes.to_string(),
            r.dropped_calls.to_string(),
            opt(r.latency.map(|l| l.p50_seconds)),
            opt(r.latency.map(|l| l.p99_seconds)),
            opt(r.backlog_max_bytes),
            r.events.to_string(),
            opt(r.fec.as_deref()),
            opt(r.dropped_at_bottleneck.map(|d| format!("{d:.4}"))),
        ];
        let line: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
        writeln!(w, "{}", line.join(","))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_parse() {
        assert_eq!(parse_seeds("1-5").unwrap(), vec![1, 2, 3, 4, 5]);
        assert_eq!(parse_seeds("7").unwrap(), vec![7]);
        assert_eq!(parse_seeds("1-2, 9").unwrap(), vec![1, 2, 9]);
        for bad in ["", "5-1", "a", "1-", "0-99999", "1..3"] {
            let e = parse_seeds(bad).unwrap_err().to_string();
            assert!(e.contains("--seeds") && e.contains("1-5"), "{bad}: {e}");
        }
    }

    #[test]
    fn csv_quotes() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
    }
}
