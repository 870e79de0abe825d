//! A sweep's text table, CSV and heat maps.

use std::fmt::Write as _;
use std::io::Write;

use super::{CellReport, CellStatus, Family, FamilySummary, RunStatus, Spread, SweepReport};
use crate::LabError;
use crate::matrix::{csv_field, opt};
use crate::plot::{HeatCell, HeatMap, HeatPanel, heatmap_svg};

/// Three significant digits: `0.00123`, `1.23`, `12.3`, `123`, `1234`.
fn sig3(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        let digits = (2 - a.log10().floor() as i32).clamp(2, 9) as usize;
        format!("{v:.digits$}")
    }
}

/// Bytes, short: `950`, `9,500`, `95.0k`, `1.23M`.
fn bytes_short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e5 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn pct(v: f64) -> String {
    let p = v * 100.0;
    if p == 0.0 {
        "0%".into()
    } else if p < 0.1 {
        format!("{p:.3}%")
    } else {
        format!("{p:.1}%")
    }
}

/// `min/median/max`, or one figure when they agree.
fn spread(s: Option<Spread>, f: fn(f64) -> String) -> String {
    match s {
        None => "-".into(),
        Some(s) => {
            let (a, b, c) = (f(s.min), f(s.median), f(s.max));
            if a == c { a } else { format!("{a}/{b}/{c}") }
        }
    }
}

fn seeds_text(seeds: &[u64]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < seeds.len() {
        let mut j = i;
        while j + 1 < seeds.len() && seeds[j + 1] == seeds[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", seeds[i], seeds[j])
        } else {
            seeds[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

fn pad_rows(o: &mut String, rows: &[Vec<String>], right_from: usize) {
    let ncol = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut w = vec![0usize; ncol];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            // The last cell of a short row (a note) does not widen its column.
            if r.len() == ncol || i + 1 < r.len() {
                w[i] = w[i].max(c.chars().count());
            }
        }
    }
    for r in rows {
        let mut line = String::from("  ");
        for (i, c) in r.iter().enumerate() {
            let pad = w[i].saturating_sub(c.chars().count());
            let note = r.len() < ncol && i + 1 == r.len();
            if i >= right_from && !note {
                line.push_str(&" ".repeat(pad));
                line.push_str(c);
            } else {
                line.push_str(c);
                if i + 1 < r.len() {
                    line.push_str(&" ".repeat(pad));
                }
            }
            if i + 1 < r.len() {
                line.push_str("  ");
            }
        }
        o.push_str(line.trim_end());
        o.push('\n');
    }
}

/// The human table: per family, one row per cell (none dropped) with min/median/max
/// over the seeds; distinct errors listed once under the family's table.
pub fn table(r: &SweepReport) -> String {
    let mut o = String::new();
    let runs: usize = r.cells.iter().map(|c| c.runs).sum();
    let _ = writeln!(
        o,
        "skywave lab sweep: agent {}{}, seeds {}{}; {} cells, {} runs, {} threads, {:.1} s wall",
        r.agent,
        r.fec
            .as_deref()
            .map_or_else(String::new, |f| format!(" (fec {f})")),
        seeds_text(&r.seeds),
        if r.quick { ", quick grid" } else { "" },
        r.cells.len(),
        runs,
        r.threads,
        r.wall_seconds
    );
    let _ = writeln!(
        o,
        "floor = useful bytes x 8 / shared rate + one round trip + forced turnarounds (~: manifests at the nominal 134 B, no run complete);\nfigures are min/median/max over a cell's complete runs"
    );
    for fam in &r.families {
        family_table(&mut o, r, fam);
    }
    o
}

fn family_table(o: &mut String, r: &SweepReport, fam: &FamilySummary) {
    let cells: Vec<&CellReport> = r.family_cells(fam.family).collect();
    let count = |s: CellStatus| cells.iter().filter(|c| c.status == s).count();
    let _ = writeln!(o, "\n{}: {}", fam.family.name(), fam.workload);
    let _ = writeln!(
        o,
        "  link {} + the axes; {} cells: {} complete, {} partial, {} timeout, {} error",
        fam.base_link,
        cells.len(),
        count(CellStatus::Complete),
        count(CellStatus::Partial),
        count(CellStatus::Timeout),
        count(CellStatus::Error)
    );
    let ip = fam.family == Family::Ip;
    let mut head: Vec<String> = fam.axes.iter().map(|a| a.name.clone()).collect();
    let naxes = head.len();
    head.extend(
        [
            "status",
            "floor s",
            "time s",
            "time/floor",
            "air/useful",
            "resent B",
        ]
        .map(String::from),
    );
    if ip {
        head.push("queue drop".into());
    }
    let mut rows = vec![head];
    let mut errors: Vec<String> = Vec::new();
    for c in &cells {
        let mut row: Vec<String> = fam
            .axes
            .iter()
            .map(|a| c.axes.get(&a.name).cloned().unwrap_or_default())
            .collect();
        if c.status == CellStatus::Error {
            let e = c.error.clone().unwrap_or_default();
            let k = match errors.iter().position(|x| *x == e) {
                Some(k) => k,
                None => {
                    errors.push(e);
                    errors.len() - 1
                }
            };
            row.push(format!("error ({})", k + 1));
            rows.push(row);
            continue;
        }
        row.push(c.status_text());
        // `~`: the floor from nominal manifest sizes (no run of the cell completed).
        row.push(c.floor.as_ref().map_or("-".into(), |f| {
            let tilde = if f.basis == "nominal" { "~" } else { "" };
            format!("{tilde}{}", sig3(f.seconds))
        }));
        if c.complete_runs == 0 {
            // What the timed-out runs delivered by the limit.
            let got = Spread::of(
                c.results
                    .iter()
                    .filter(|x| x.status == RunStatus::Timeout)
                    .map(|x| x.useful_bytes as f64),
            );
            let need = c.floor.as_ref().map_or(0, |f| f.useful_bytes);
            row.push(format!(
                "> {} (delivered {} of {} useful B)",
                sig3(c.timeout_seconds.unwrap_or(0.0)),
                spread(got, bytes_short),
                bytes_short(need as f64)
            ));
            rows.push(row);
            continue;
        }
        row.push(spread(c.stats.time_seconds, sig3));
        row.push(spread(c.stats.time_over_floor, sig3));
        row.push(spread(c.stats.overhead, sig3));
        row.push(spread(c.stats.resent_bytes, bytes_short));
        if ip {
            row.push(spread(c.stats.dropped_at_bottleneck, pct));
        }
        rows.push(row);
    }
    pad_rows(o, &rows, naxes + 1);
    for (k, e) in errors.iter().enumerate() {
        let _ = writeln!(o, "  ({}) {e}", k + 1);
    }
}

/// Every axis any family has, in CSV column order.
const AXIS_COLUMNS: [&str; 7] = ["rate", "mtu", "loss", "txqueue", "delay", "buffer", "rtt"];

/// The CSV columns (one row per cell and seed; a cell that could not be built has one
/// row with an empty seed).
pub const CSV_COLUMNS: &[&str] = &[
    "family",
    "rate",
    "mtu",
    "loss",
    "txqueue",
    "delay",
    "buffer",
    "rtt",
    "link",
    "seed",
    "status",
    "error",
    "time_seconds",
    "floor_seconds",
    "floor_basis",
    "time_over_floor",
    "useful_bytes",
    "floor_useful_bytes",
    "bytes_on_air",
    "overhead",
    "resent_bytes",
    "dropped_at_bottleneck",
    "bundles_delivered",
    "virtual_seconds",
    "timeout_seconds",
    "wall_seconds",
];

/// Writes the CSV: a header, then one row per cell and seed (RFC 4180 quoting).
pub fn write_csv(r: &SweepReport, mut w: impl Write) -> Result<(), LabError> {
    writeln!(w, "{}", CSV_COLUMNS.join(","))?;
    for c in &r.cells {
        let mut base: Vec<String> = vec![c.family.name().to_string()];
        base.extend(
            AXIS_COLUMNS
                .iter()
                .map(|a| c.axes.get(*a).cloned().unwrap_or_default()),
        );
        base.push(c.link.clone());
        let floor = c.floor.as_ref();
        if c.results.is_empty() {
            let mut row = base.clone();
            row.extend([
                String::new(),
                "error".into(),
                c.error.clone().unwrap_or_default(),
            ]);
            row.extend(std::iter::repeat_n(
                String::new(),
                CSV_COLUMNS.len() - row.len(),
            ));
            let line: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
            writeln!(w, "{}", line.join(","))?;
            continue;
        }
        for s in &c.results {
            let mut row = base.clone();
            row.extend([
                s.seed.to_string(),
                match s.status {
                    RunStatus::Complete => "complete",
                    RunStatus::Timeout => "timeout",
                    RunStatus::Error => "error",
                }
                .to_string(),
                s.error.clone().unwrap_or_default(),
                opt(s.time_seconds),
                opt(floor.map(|f| f.seconds)),
                opt(floor.map(|f| f.basis.clone())),
                opt(s.time_over_floor.map(|x| format!("{x:.4}"))),
                s.useful_bytes.to_string(),
                opt(floor.map(|f| f.useful_bytes)),
                s.bytes_on_air.to_string(),
                opt(s.overhead.map(|x| format!("{x:.4}"))),
                s.resent_bytes.to_string(),
                opt(s.dropped_at_bottleneck.map(|x| format!("{x:.6}"))),
                s.bundles_delivered.to_string(),
                s.virtual_seconds.to_string(),
                opt(c.timeout_seconds),
                format!("{:.3}", s.wall_seconds),
            ]);
            let line: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
            writeln!(w, "{}", line.join(","))?;
        }
    }
    Ok(())
}

/// The smallest 1-2-5 number at least `v`.
fn nice_ceil(v: f64) -> f64 {
    let e = v.max(1e-9).log10().floor();
    for m in [1.0, 2.0, 5.0, 10.0] {
        let x = m * 10f64.powf(e);
        if x >= v * 0.999_999 {
            return x;
        }
    }
    10f64.powf(e + 1.0)
}

/// The heat maps of a sweep: per family, `FAMILY-time-over-floor.svg` and
/// `FAMILY-overhead.svg` (bytes on air / useful bytes), as `(file name, SVG)`. The
/// family's first two plot axes are x and y; the third makes the columns of small
/// multiples and the rest the rows. Each cell shows the median over its complete runs.
pub fn heatmaps(r: &SweepReport) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for fam in &r.families {
        let cells: Vec<&CellReport> = r.family_cells(fam.family).collect();
        for (file, label, pick, floor_of) in [
            (
                "time-over-floor",
                "time / floor",
                (|c: &CellReport| c.stats.time_over_floor) as fn(&CellReport) -> Option<Spread>,
                10.0,
            ),
            (
                "overhead",
                "bytes on air / useful bytes",
                (|c: &CellReport| c.stats.overhead) as fn(&CellReport) -> Option<Spread>,
                2.0,
            ),
        ] {
            let map = family_heatmap(r, fam, &cells, label, pick, floor_of);
            out.push((
                format!("{}-{file}.svg", fam.family.name()),
                heatmap_svg(&map),
            ));
        }
    }
    out
}

fn family_heatmap(
    r: &SweepReport,
    fam: &FamilySummary,
    cells: &[&CellReport],
    label: &str,
    pick: fn(&CellReport) -> Option<Spread>,
    least_hi: f64,
) -> HeatMap {
    let order: Vec<&str> = fam.family.plot_order().to_vec();
    let values_of = |name: &str| -> Vec<String> {
        fam.axes
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.values.clone())
            .unwrap_or_default()
    };
    let xs = values_of(order[0]);
    let ys = values_of(order[1]);
    let col_axis = order.get(2).copied();
    let cols = col_axis
        .map(&values_of)
        .unwrap_or_else(|| vec![String::new()]);
    // Panel rows: the Cartesian product of the remaining axes.
    let mut row_keys: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for name in order.iter().skip(3) {
        let mut next = Vec::new();
        for k in &row_keys {
            for v in values_of(name) {
                let mut k2 = k.clone();
                k2.push((name.to_string(), v));
                next.push(k2);
            }
        }
        row_keys = next;
    }
    let find = |fixed: &[(String, String)]| -> Option<&CellReport> {
        cells
            .iter()
            .find(|c| fixed.iter().all(|(n, v)| c.axes.get(n) == Some(v)))
            .copied()
    };
    let max = cells
        .iter()
        .filter_map(|c| pick(c).map(|s| s.median))
        .fold(1.0, f64::max);
    let hi = nice_ceil(max.max(least_hi));
    let mut panels = Vec::new();
    for rk in &row_keys {
        let mut prow = Vec::new();
        for cv in &cols {
            let mut fixed: Vec<(String, String)> = rk.clone();
            if let Some(ca) = col_axis {
                fixed.push((ca.to_string(), cv.clone()));
            }
            let title: Vec<String> = fixed.iter().map(|(n, v)| format!("{n}={v}")).collect();
            let mut grid = Vec::new();
            for y in &ys {
                let mut line = Vec::new();
                for x in &xs {
                    let mut f = fixed.clone();
                    f.push((order[0].to_string(), x.clone()));
                    f.push((order[1].to_string(), y.clone()));
                    line.push(match find(&f) {
                        None => HeatCell::Empty,
                        Some(c) => match (c.status, pick(c)) {
                            (CellStatus::Error, _) => HeatCell::Error,
                            (_, Some(s)) => HeatCell::Value {
                                value: s.median,
                                text: sig3(s.median),
                                partial: c.status != CellStatus::Complete,
                            },
                            (CellStatus::Timeout, None) => HeatCell::Timeout,
                            (_, None) => HeatCell::Error,
                        },
                    });
                }
                grid.push(line);
            }
            prow.push(HeatPanel {
                title: title.join(" "),
                cells: grid,
            });
        }
        panels.push(prow);
    }
    let panel_axes: Vec<&str> = order.iter().skip(2).copied().collect();
    let mut subtitle = vec![
        fam.workload.clone(),
        format!(
            "agent {}, seeds {}; each cell: the median over its complete runs; 1 = the physical floor",
            r.agent,
            seeds_text(&r.seeds)
        ),
    ];
    if !panel_axes.is_empty() {
        subtitle.push(format!(
            "x: {}, y: {}; panels by {}; link {} + the axes",
            order[0],
            order[1],
            panel_axes.join(", "),
            fam.base_link
        ));
    }
    HeatMap {
        title: format!("skywave lab sweep, {}: {label}", fam.family.name()),
        subtitle,
        x_label: order[0].to_string(),
        x_ticks: xs,
        y_label: order[1].to_string(),
        y_ticks: ys,
        panels,
        scale_label: label.to_string(),
        scale: (1.0, hi),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(sig3(0.0123), "0.0123");
        assert_eq!(sig3(1.234), "1.23");
        assert_eq!(sig3(12.34), "12.3");
        assert_eq!(sig3(1234.0), "1234");
        assert_eq!(bytes_short(950.0), "950");
        assert_eq!(bytes_short(95_000.0), "95.0k");
        assert_eq!(bytes_short(1_234_567.0), "1.23M");
        assert_eq!(seeds_text(&[1, 2, 3, 7, 9, 10]), "1-3,7,9-10");
        assert_eq!(nice_ceil(3.2), 5.0);
        assert_eq!(nice_ceil(10.0), 10.0);
        assert_eq!(nice_ceil(11.0), 20.0);
        assert_eq!(pct(0.0123), "1.2%");
    }
}
