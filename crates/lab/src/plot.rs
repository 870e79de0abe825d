//! Hand-written SVG figures: a matrix's scenarios, one panel each judged by its own
//! metric ([`scenario_panels_svg`]), and the sweep's heat maps ([`heatmap_svg`]).
//! Plain SVG 1.1, no scripts, no external fonts.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::runner::Report;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// "1.5 Mbit/s" style labels for bit rates.
pub fn rate_label(bps: f64) -> String {
    let (v, unit) = if bps >= 1e9 {
        (bps / 1e9, "Gbit/s")
    } else if bps >= 1e6 {
        (bps / 1e6, "Mbit/s")
    } else if bps >= 1e3 {
        (bps / 1e3, "kbit/s")
    } else {
        (bps, "bit/s")
    };
    if v >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.1} {unit}")
    }
}

fn secs_label(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.0} h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.0} min", s / 60.0)
    } else if s >= 1.0 {
        format!("{s:.0} s")
    } else {
        format!("{:.0} ms", s * 1000.0)
    }
}

/// A log10 axis covering `lo..hi`, in whole decades.
struct LogAxis {
    lo: f64,
    hi: f64,
}

impl LogAxis {
    fn new(lo: f64, hi: f64) -> Self {
        let lo = lo.max(1e-9).log10().floor();
        let hi = hi.max(1e-9).log10().ceil().max(lo + 1.0);
        LogAxis { lo, hi }
    }

    /// Position of `v` in 0..=1.
    fn pos(&self, v: f64) -> f64 {
        ((v.max(1e-12).log10() - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0)
    }

    fn decades(&self) -> impl Iterator<Item = f64> {
        (self.lo as i32..=self.hi as i32).map(|e| 10f64.powi(e))
    }
}

fn header(out: &mut String, w: u32, h: u32, title: &str) {
    let _ = writeln!(
        out,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">
<rect x="0" y="0" width="{w}" height="{h}" fill="white"/>
<text x="{}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        w / 2,
        esc(title)
    );
}

/// Okabe-Ito colours, one per agent: distinct for colour-blind readers and in grey.
const AGENT_COLOURS: [&str; 4] = ["#0072B2", "#E69F00", "#009E73", "#CC79A7"];

/// What a scenario is judged by, from its reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Writes after the start: the p99 time from a write to a receiver holding it.
    Lag,
    /// Deadline-measured scenarios (a stream, a table of what arrived by a time).
    Goodput,
    /// Everything else: virtual time until every node holds everything.
    Completion,
}

impl Metric {
    /// The metric that matters for the runs of one scenario.
    pub fn of(reports: &[&Report]) -> Metric {
        if reports.iter().any(|r| r.latency.is_some()) {
            Metric::Lag
        } else if reports.iter().all(|r| {
            r.completion_seconds
                .is_none_or(|c| (c - r.deadline_seconds).abs() < 1e-9)
        }) {
            Metric::Goodput
        } else {
            Metric::Completion
        }
    }

    fn value(self, r: &Report) -> Option<f64> {
        match self {
            Metric::Lag => r.latency.map(|l| l.p99_seconds),
            Metric::Goodput => Some(r.goodput_bps),
            Metric::Completion => r.completion_seconds.filter(|_| r.complete),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Metric::Lag => "write-to-delivery lag, p99 (lower is better)",
            Metric::Goodput => "goodput (higher is better)",
            Metric::Completion => "time to complete (lower is better)",
        }
    }

    /// An axis label (whole decades).
    fn tick(self, v: f64) -> String {
        match self {
            Metric::Goodput => rate_label(v),
            // Decades: 100 s reads better than "2 min".
            _ if (1.0..=1000.0).contains(&v) => format!("{v:.0} s"),
            _ => secs_label(v),
        }
    }

    fn fmt(self, v: f64) -> String {
        match self {
            Metric::Goodput => rate_label(v),
            _ => {
                if v >= 100.0 {
                    format!("{v:.0} s")
                } else if v >= 1.0 {
                    format!("{v:.1} s")
                } else {
                    format!("{:.0} ms", v * 1000.0)
                }
            }
        }
    }
}

/// min, median, max of `v` (sorted here).
fn spread(mut v: Vec<f64>) -> Option<(f64, f64, f64)> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let med = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some((v[0], med, v[n - 1]))
}

/// Small multiples: one panel per scenario, judged by the metric that matters for it
/// ([`Metric::of`]: lag for live writes and streams, goodput against capacity for
/// deadline scenarios, time to complete otherwise), one row per agent (and link, when a
/// scenario ran on several): the median as a bar, min to max over seeds as a whisker,
/// and runs that did not complete counted. Scenarios are never averaged together.
pub fn scenario_panels_svg(reports: &[Report]) -> String {
    let mut by_sc: BTreeMap<&str, Vec<&Report>> = BTreeMap::new();
    for r in reports {
        by_sc.entry(r.scenario.as_str()).or_default().push(r);
    }
    let mut agents: Vec<&str> = reports.iter().map(|r| r.agent.as_str()).collect();
    agents.sort_unstable();
    agents.dedup();
    let colour = |a: &str| {
        let i = agents.iter().position(|x| *x == a).unwrap_or(0);
        AGENT_COLOURS[i % AGENT_COLOURS.len()]
    };
    let (cols, panel_w, left, right, row_h) = (2usize, 520.0, 150.0, 110.0, 26.0);
    // Each panel: title, rows, axis.
    struct Row<'a> {
        label: String,
        agent: &'a str,
        spread: Option<(f64, f64, f64)>,
        done: usize,
        runs: usize,
        capacity: Option<f64>,
    }
    let panels: Vec<(&str, Metric, Vec<Row<'_>>)> = by_sc
        .iter()
        .map(|(sc, rs)| {
            let metric = Metric::of(rs);
            let mut links: Vec<&str> = rs.iter().map(|r| r.link.as_str()).collect();
            links.sort_unstable();
            links.dedup();
            let mut groups: BTreeMap<(&str, &str), Vec<&Report>> = BTreeMap::new();
            for r in rs {
                groups.entry((&r.agent, &r.link)).or_default().push(r);
            }
            let rows = groups
                .into_iter()
                .map(|((agent, link), g)| Row {
                    label: if links.len() > 1 {
                        format!("{agent} @ {link}")
                    } else {
                        agent.to_string()
                    },
                    agent,
                    spread: spread(g.iter().filter_map(|r| metric.value(r)).collect()),
                    done: g.iter().filter(|r| metric.value(r).is_some()).count(),
                    runs: g.len(),
                    capacity: (metric == Metric::Goodput)
                        .then(|| g.iter().map(|r| r.capacity_bps as f64).fold(0.0, f64::max)),
                })
                .collect();
            (*sc, metric, rows)
        })
        .collect();
    let panel_h = |n: usize| 46.0 + row_h * n.max(1) as f64 + 34.0;
    let mut heights = Vec::new();
    for chunk in panels.chunks(cols) {
        heights.push(chunk.iter().map(|p| panel_h(p.2.len())).fold(0.0, f64::max));
    }
    let top = 64.0;
    let width = panel_w * cols as f64;
    let height = top + heights.iter().sum::<f64>() + 10.0;
    let mut out = String::new();
    header(
        &mut out,
        width as u32,
        height as u32,
        "Each scenario by what matters for it: median bar, min-max over seeds",
    );
    // Legend: one colour per agent.
    for (i, a) in agents.iter().enumerate() {
        let x = 20.0 + 160.0 * i as f64;
        let _ = writeln!(
            out,
            r#"<rect x="{x:.1}" y="34" width="14" height="10" fill="{}"/><text x="{:.1}" y="43">{}</text>"#,
            colour(a),
            x + 18.0,
            esc(a)
        );
    }
    let mut y0 = top;
    for (ci, chunk) in panels.chunks(cols).enumerate() {
        for (pi, (sc, metric, rows)) in chunk.iter().enumerate() {
            let x0 = panel_w * pi as f64;
            let plot_w = panel_w - left - right;
            let vals: Vec<f64> = rows
                .iter()
                .filter_map(|r| r.spread)
                .flat_map(|(a, _, b)| [a, b])
                .chain(rows.iter().filter_map(|r| r.capacity))
                .filter(|v| *v > 0.0)
                .collect();
            let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = vals.iter().copied().fold(0.0, f64::max);
            let axis = LogAxis::new(if lo.is_finite() { lo } else { 1.0 }, hi.max(1e-6));
            let _ = writeln!(out, r#"<g class="panel" data-scenario="{}">"#, esc(sc));
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="{:.1}" font-weight="bold">{}</text><text x="{:.1}" y="{:.1}" font-size="11" fill="#444444">{}</text>"##,
                x0 + 12.0,
                y0 + 16.0,
                esc(sc),
                x0 + 12.0,
                y0 + 31.0,
                metric.label()
            );
            let ptop = y0 + 42.0;
            let bottom = ptop + row_h * rows.len().max(1) as f64;
            for d in axis.decades() {
                let x = x0 + left + axis.pos(d) * plot_w;
                let _ = writeln!(
                    out,
                    r##"<line x1="{x:.1}" y1="{ptop:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#dddddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"##,
                    bottom + 14.0,
                    esc(&metric.tick(d))
                );
            }
            for (i, r) in rows.iter().enumerate() {
                let y = ptop + row_h * i as f64;
                let _ = writeln!(
                    out,
                    r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                    x0 + left - 8.0,
                    y + row_h / 2.0 + 4.0,
                    esc(&r.label)
                );
                if let Some(cap) = r.capacity {
                    let x = x0 + left + axis.pos(cap) * plot_w;
                    let _ = writeln!(
                        out,
                        r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#555555" stroke-dasharray="3,2"><title>capacity {}</title></line>"##,
                        y + 2.0,
                        y + row_h - 2.0,
                        esc(&rate_label(cap))
                    );
                }
                let note = if r.done < r.runs {
                    format!(", {} of {} incomplete", r.runs - r.done, r.runs)
                } else {
                    String::new()
                };
                match r.spread {
                    Some((mn, med, mx)) => {
                        let (xa, xm, xb) = (
                            x0 + left + axis.pos(mn) * plot_w,
                            x0 + left + axis.pos(med) * plot_w,
                            x0 + left + axis.pos(mx) * plot_w,
                        );
                        let c = colour(r.agent);
                        let _ = writeln!(
                            out,
                            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="10" fill="{c}" opacity="0.85"><title>median {}</title></rect>"#,
                            x0 + left,
                            y + 8.0,
                            (xm - x0 - left).max(1.0),
                            esc(&metric.fmt(med))
                        );
                        let _ = writeln!(
                            out,
                            r#"<line x1="{xa:.1}" y1="{:.1}" x2="{xb:.1}" y2="{:.1}" stroke="black"/><line x1="{xa:.1}" y1="{:.1}" x2="{xa:.1}" y2="{:.1}" stroke="black"/><line x1="{xb:.1}" y1="{:.1}" x2="{xb:.1}" y2="{:.1}" stroke="black"/>"#,
                            y + 13.0,
                            y + 13.0,
                            y + 8.0,
                            y + 18.0,
                            y + 8.0,
                            y + 18.0
                        );
                        let _ = writeln!(
                            out,
                            r#"<text x="{:.1}" y="{:.1}" font-size="11">{}{}</text>"#,
                            xb.max(xm) + 5.0,
                            y + 17.0,
                            esc(&metric.fmt(med)),
                            esc(&note)
                        );
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            r#"<text x="{:.1}" y="{:.1}" font-size="11">no run completed ({} runs)</text>"#,
                            x0 + left + 4.0,
                            y + 17.0,
                            r.runs
                        );
                    }
                }
            }
            out.push_str("</g>\n");
        }
        y0 += heights[ci];
    }
    out.push_str("</svg>\n");
    out
}

/// One cell of a heat map.
#[derive(Clone, Debug, PartialEq)]
pub enum HeatCell {
    /// A measured value, drawn in the scale's colour with `text` on it; `partial`: not
    /// every run of the cell contributed (marked with `*` and a dashed outline).
    Value {
        value: f64,
        text: String,
        partial: bool,
    },
    /// No run of the cell completed in its time limit.
    Timeout,
    /// The cell could not be built, or every run failed.
    Error,
    /// No such cell in the grid.
    Empty,
}

/// One panel: a grid of cells, `cells[y][x]` (y = 0 is drawn at the bottom).
#[derive(Clone, Debug, PartialEq)]
pub struct HeatPanel {
    pub title: String,
    pub cells: Vec<Vec<HeatCell>>,
}

/// A heat map: small multiples of panels sharing one x axis, one y axis and one colour
/// scale (logarithmic from `scale.0` to `scale.1`; values outside are clamped).
#[derive(Clone, Debug, PartialEq)]
pub struct HeatMap {
    pub title: String,
    /// Lines under the title (what was run, what the colour means).
    pub subtitle: Vec<String>,
    pub x_label: String,
    pub x_ticks: Vec<String>,
    pub y_label: String,
    pub y_ticks: Vec<String>,
    /// Rows of panels.
    pub panels: Vec<Vec<HeatPanel>>,
    /// What the colour shows, e.g. "time / floor".
    pub scale_label: String,
    pub scale: (f64, f64),
}

/// Sequential colour ramp (ColorBrewer YlOrRd): light = low (near the floor), dark =
/// high; lightness falls monotonically, so it reads in grey and for colour-blind readers.
const RAMP: [(u8, u8, u8); 8] = [
    (0xff, 0xff, 0xcc),
    (0xff, 0xed, 0xa0),
    (0xfe, 0xd9, 0x76),
    (0xfe, 0xb2, 0x4c),
    (0xfd, 0x8d, 0x3c),
    (0xfc, 0x4e, 0x2a),
    (0xe3, 0x1a, 0x1c),
    (0xb1, 0x00, 0x26),
];

/// The ramp's colour at `t` in 0..=1.
fn ramp(t: f64) -> String {
    let t = t.clamp(0.0, 1.0) * (RAMP.len() - 1) as f64;
    let i = (t.floor() as usize).min(RAMP.len() - 2);
    let f = t - i as f64;
    let (a, b) = (RAMP[i], RAMP[i + 1]);
    let mix = |x: u8, y: u8| (f64::from(x) + (f64::from(y) - f64::from(x)) * f).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// Position of `v` on a log scale from `lo` to `hi`, in 0..=1.
fn log_pos(v: f64, lo: f64, hi: f64) -> f64 {
    let (lo, hi) = (lo.max(1e-12), hi.max(lo * 1.000_001));
    ((v.max(1e-12).ln() - lo.ln()) / (hi.ln() - lo.ln())).clamp(0.0, 1.0)
}

/// Ticks of the 1-2-5 sequence from `lo` to `hi` (at most about 8).
fn ticks_125(lo: f64, hi: f64) -> Vec<f64> {
    let mut all = Vec::new();
    let mut e = lo.max(1e-12).log10().floor() as i32;
    while 10f64.powi(e) <= hi * 1.000_001 {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(e);
            if v >= lo * 0.999_999 && v <= hi * 1.000_001 {
                all.push(v);
            }
        }
        e += 1;
    }
    if all.len() > 8 {
        all.retain(|v| {
            let m = v / 10f64.powf(v.log10().floor());
            (m - 1.0).abs() < 1e-6
        });
    }
    all
}

/// A number for a tick: `1`, `2.5`, `100`, `2k`.
fn tick_label(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if v >= 10.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Draws a heat map: panels of coloured cells with the value written in each, a colour
/// bar with ticks, and markers for partial, timed-out and failed cells.
pub fn heatmap_svg(h: &HeatMap) -> String {
    let (cw, ch) = (58.0, 26.0);
    let ylab_w = 78.0;
    let title_h = 20.0;
    let xtick_h = 30.0;
    let gap = 26.0;
    let nx = h.x_ticks.len().max(1) as f64;
    let ny = h.y_ticks.len().max(1) as f64;
    let pw = ylab_w + nx * cw;
    let ph = title_h + ny * ch + xtick_h;
    let cols = h.panels.iter().map(Vec::len).max().unwrap_or(1).max(1) as f64;
    let rows = h.panels.len().max(1) as f64;
    let left = 16.0;
    let top = 44.0 + 16.0 * h.subtitle.len() as f64 + 8.0;
    let legend_w = 230.0;
    // Wide enough for the longest subtitle (about 6.6 px per character at 12 px).
    let text_w = h
        .subtitle
        .iter()
        .map(|l| l.chars().count() as f64 * 6.6 + 40.0)
        .fold(0.0, f64::max);
    let width = (left + cols * pw + (cols - 1.0) * gap + 30.0 + legend_w)
        .max(560.0)
        .max(text_w);
    let height = (top + rows * ph + (rows - 1.0) * gap + 24.0).max(top + 330.0);
    let mut out = String::new();
    header(&mut out, width as u32, height as u32, &h.title);
    for (i, line) in h.subtitle.iter().enumerate() {
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#444444">{}</text>"##,
            width / 2.0,
            42.0 + 16.0 * i as f64,
            esc(line)
        );
    }
    let _ = writeln!(
        out,
        r##"<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#eeeeee"/><line x1="0" y1="0" x2="0" y2="6" stroke="#999999" stroke-width="2"/></pattern></defs>"##
    );
    let (lo, hi) = h.scale;
    for (r, row) in h.panels.iter().enumerate() {
        for (c, panel) in row.iter().enumerate() {
            let px = left + c as f64 * (pw + gap);
            let py = top + r as f64 * (ph + gap);
            let gx = px + ylab_w;
            let gy = py + title_h;
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-weight="bold">{}</text>"#,
                gx + nx * cw / 2.0,
                py + 13.0,
                esc(&panel.title)
            );
            // y ticks (y = 0 at the bottom) and the axis name.
            for (j, t) in h.y_ticks.iter().enumerate() {
                let y = gy + (ny - 1.0 - j as f64) * ch + ch / 2.0 + 4.0;
                let _ = writeln!(
                    out,
                    r#"<text x="{:.1}" y="{y:.1}" text-anchor="end">{}</text>"#,
                    gx - 5.0,
                    esc(t)
                );
            }
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#444444" transform="rotate(-90 {:.1} {:.1})">{}</text>"##,
                px + 8.0,
                gy + ny * ch / 2.0,
                px + 8.0,
                gy + ny * ch / 2.0,
                esc(&h.y_label)
            );
            for (i, t) in h.x_ticks.iter().enumerate() {
                let _ = writeln!(
                    out,
                    r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                    gx + i as f64 * cw + cw / 2.0,
                    gy + ny * ch + 13.0,
                    esc(t)
                );
            }
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#444444">{}</text>"##,
                gx + nx * cw / 2.0,
                gy + ny * ch + 27.0,
                esc(&h.x_label)
            );
            for (j, line) in panel.cells.iter().enumerate() {
                for (i, cell) in line.iter().enumerate() {
                    let x = gx + i as f64 * cw;
                    let y = gy + (ny - 1.0 - j as f64) * ch;
                    let tip = format!(
                        "{} {}, {} {}",
                        h.x_label,
                        h.x_ticks.get(i).map_or("", String::as_str),
                        h.y_label,
                        h.y_ticks.get(j).map_or("", String::as_str)
                    );
                    let (fill, text, text_fill, dashed, what) = match cell {
                        HeatCell::Value {
                            value,
                            text,
                            partial,
                        } => {
                            let t = log_pos(*value, lo, hi);
                            let tf = if t > 0.62 { "#ffffff" } else { "#000000" };
                            let text = if *partial {
                                format!("{text}*")
                            } else {
                                text.clone()
                            };
                            let what = format!(
                                "{}: {text}{}",
                                h.scale_label,
                                if *partial {
                                    " (not every run complete)"
                                } else {
                                    ""
                                }
                            );
                            (ramp(t), text, tf, *partial, what)
                        }
                        HeatCell::Timeout => (
                            "#303030".to_string(),
                            "timeout".to_string(),
                            "#ffffff",
                            false,
                            "timeout: no run complete".to_string(),
                        ),
                        HeatCell::Error => (
                            "url(#hatch)".to_string(),
                            "error".to_string(),
                            "#000000",
                            false,
                            "error: the cell could not be built or run".to_string(),
                        ),
                        HeatCell::Empty => continue,
                    };
                    let dash = if dashed {
                        r#" stroke-dasharray="3,2" stroke-width="1.5""#
                    } else {
                        ""
                    };
                    let _ = writeln!(
                        out,
                        r##"<rect x="{x:.1}" y="{y:.1}" width="{cw}" height="{ch}" fill="{fill}" stroke="#ffffff"{dash}><title>{}</title></rect>"##,
                        esc(&format!("{tip}: {what}"))
                    );
                    if dashed {
                        let _ = writeln!(
                            out,
                            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#000000" stroke-dasharray="3,2"/>"##,
                            x + 1.5,
                            y + 1.5,
                            cw - 3.0,
                            ch - 3.0
                        );
                    }
                    let _ = writeln!(
                        out,
                        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11" fill="{text_fill}">{}</text>"#,
                        x + cw / 2.0,
                        y + ch / 2.0 + 4.0,
                        esc(&text)
                    );
                }
            }
        }
    }
    // Legend: the colour bar (log scale) and the markers.
    let lx = width - legend_w + 10.0;
    let bar_h = 200.0;
    let by = top + 18.0;
    let _ = writeln!(
        out,
        r#"<text x="{lx:.1}" y="{:.1}" font-weight="bold">{}</text>"#,
        top + 6.0,
        esc(&h.scale_label)
    );
    let steps = 40;
    for k in 0..steps {
        let t0 = k as f64 / steps as f64;
        let y = by + bar_h * (1.0 - t0 - 1.0 / steps as f64);
        let _ = writeln!(
            out,
            r#"<rect x="{lx:.1}" y="{y:.1}" width="18" height="{:.2}" fill="{}"/>"#,
            bar_h / steps as f64 + 0.5,
            ramp(t0 + 0.5 / steps as f64)
        );
    }
    let _ = writeln!(
        out,
        r##"<rect x="{lx:.1}" y="{by:.1}" width="18" height="{bar_h}" fill="none" stroke="#666666"/>"##
    );
    for t in ticks_125(lo, hi) {
        let y = by + bar_h * (1.0 - log_pos(t, lo, hi));
        let _ = writeln!(
            out,
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#000000"/><text x="{:.1}" y="{:.1}">{}</text>"##,
            lx + 18.0,
            lx + 23.0,
            lx + 26.0,
            y + 4.0,
            tick_label(t)
        );
    }
    let _ = writeln!(
        out,
        r##"<text x="{lx:.1}" y="{:.1}" fill="#444444">log scale; beyond: clamped</text>"##,
        by + bar_h + 16.0
    );
    let my = by + bar_h + 34.0;
    let _ = writeln!(
        out,
        r##"<rect x="{lx:.1}" y="{my:.1}" width="18" height="14" fill="#303030"/><text x="{:.1}" y="{:.1}">timeout (no run complete)</text>"##,
        lx + 24.0,
        my + 11.0
    );
    let _ = writeln!(
        out,
        r##"<rect x="{lx:.1}" y="{:.1}" width="18" height="14" fill="url(#hatch)" stroke="#999999"/><text x="{:.1}" y="{:.1}">error (not built / failed)</text>"##,
        my + 20.0,
        lx + 24.0,
        my + 31.0
    );
    let _ = writeln!(
        out,
        r##"<rect x="{lx:.1}" y="{:.1}" width="18" height="14" fill="{}" stroke="#000000" stroke-dasharray="3,2"/><text x="{:.1}" y="{:.1}">* some runs incomplete</text>"##,
        my + 40.0,
        ramp(0.3),
        lx + 24.0,
        my + 51.0
    );
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(rate_label(1475.0), "1.5 kbit/s");
        assert_eq!(rate_label(30e6), "30 Mbit/s");
        assert_eq!(secs_label(0.1), "100 ms");
        assert_eq!(secs_label(7200.0), "2 h");
        assert_eq!(esc("a<b&\"c\""), "a&lt;b&amp;&quot;c&quot;");
        assert_eq!(ticks_125(1.0, 10.0), vec![1.0, 2.0, 5.0, 10.0]);
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(ramp(0.0), "#ffffcc");
        assert_eq!(ramp(1.0), "#b10026");
        let a = LogAxis::new(1475.0, 30e6);
        assert_eq!((a.lo, a.hi), (3.0, 8.0));
        assert!((a.pos(1e5) - 0.4).abs() < 1e-9);
    }
}
