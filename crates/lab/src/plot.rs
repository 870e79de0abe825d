//! Hand-written SVG figures of a matrix: goodput against capacity per link, and
//! completion-time CDFs per scenario. Plain SVG 1.1, no scripts, no external fonts.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::runner::Report;

const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f",
];

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

/// Horizontal bars on a log scale: per link, the capacity (grey) and the mean goodput over
/// the runs on that link (coloured), labelled with the efficiency.
pub fn goodput_svg(reports: &[Report]) -> String {
    let mut by_link: BTreeMap<&str, (u64, Vec<f64>)> = BTreeMap::new();
    for r in reports {
        let e = by_link
            .entry(r.link.as_str())
            .or_insert((r.capacity_bps, Vec::new()));
        e.0 = e.0.max(r.capacity_bps);
        e.1.push(r.goodput_bps);
    }
    let rows: Vec<(&str, f64, f64)> = by_link
        .iter()
        .map(|(l, (cap, g))| {
            (
                *l,
                *cap as f64,
                g.iter().sum::<f64>() / g.len().max(1) as f64,
            )
        })
        .collect();
    let (left, right, top, row_h) = (170.0, 90.0, 60.0, 34.0);
    let width = 900.0;
    let plot_w = width - left - right;
    let height = top + row_h * rows.len().max(1) as f64 + 60.0;
    let lo = rows
        .iter()
        .map(|r| r.2.max(1.0))
        .fold(f64::INFINITY, f64::min)
        .min(rows.iter().map(|r| r.1).fold(f64::INFINITY, f64::min));
    let hi = rows.iter().map(|r| r.1.max(r.2)).fold(1.0, f64::max);
    let axis = LogAxis::new(if lo.is_finite() { lo } else { 1.0 }, hi);
    let mut out = String::new();
    header(
        &mut out,
        width as u32,
        height as u32,
        "Goodput vs capacity per link (mean over runs)",
    );
    let bottom = top + row_h * rows.len().max(1) as f64;
    // Decade grid and labels.
    for d in axis.decades() {
        let x = left + axis.pos(d) * plot_w;
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}" stroke="#dddddd"/>"##
        );
        let _ = writeln!(
            out,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            bottom + 16.0,
            esc(&rate_label(d))
        );
    }
    let _ = writeln!(
        out,
        r##"<line x1="{left}" y1="{bottom}" x2="{:.1}" y2="{bottom}" stroke="black"/>"##,
        left + plot_w
    );
    let _ = writeln!(
        out,
        r##"<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="black"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">bit rate (log scale)</text>"#,
        left + plot_w / 2.0,
        bottom + 36.0
    );
    for (i, (link, cap, good)) in rows.iter().enumerate() {
        let y = top + row_h * i as f64;
        let wc = axis.pos(*cap) * plot_w;
        let wg = axis.pos(good.max(1e-12)) * plot_w;
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            left - 8.0,
            y + row_h / 2.0 + 4.0,
            esc(link)
        );
        let _ = writeln!(
            out,
            r##"<rect x="{left}" y="{:.1}" width="{wc:.1}" height="12" fill="#bbbbbb"><title>capacity {}</title></rect>"##,
            y + 4.0,
            esc(&rate_label(*cap))
        );
        let _ = writeln!(
            out,
            r#"<rect x="{left}" y="{:.1}" width="{wg:.1}" height="12" fill="{}"><title>goodput {}</title></rect>"#,
            y + 17.0,
            PALETTE[0],
            esc(&rate_label(*good))
        );
        let eff = if *cap > 0.0 { good / cap * 100.0 } else { 0.0 };
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}">{eff:.1}%</text>"#,
            left + wg + 4.0,
            y + 27.0
        );
    }
    // Legend.
    let lx = left + plot_w - 200.0;
    let _ = writeln!(
        out,
        r##"<rect x="{lx:.1}" y="34" width="12" height="10" fill="#bbbbbb"/><text x="{:.1}" y="43">capacity</text>"##,
        lx + 16.0
    );
    let _ = writeln!(
        out,
        r#"<rect x="{:.1}" y="34" width="12" height="10" fill="{}"/><text x="{:.1}" y="43">goodput (efficiency %)</text>"#,
        lx + 80.0,
        PALETTE[0],
        lx + 96.0
    );
    out.push_str("</svg>\n");
    out
}

/// Per scenario, the fraction of runs complete by time t (log time axis). Runs that did
/// not complete keep the curve below 1.
pub fn completion_cdf_svg(reports: &[Report]) -> String {
    let mut by_sc: BTreeMap<&str, (usize, Vec<f64>)> = BTreeMap::new();
    for r in reports {
        let e = by_sc.entry(r.scenario.as_str()).or_insert((0, Vec::new()));
        e.0 += 1;
        if r.complete
            && let Some(t) = r.completion_seconds
        {
            e.1.push(t);
        }
    }
    let times: Vec<f64> = by_sc.values().flat_map(|v| v.1.iter().copied()).collect();
    let lo = times.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = times.iter().copied().fold(0.0, f64::max);
    let axis = LogAxis::new(if lo.is_finite() { lo } else { 0.1 }, hi.max(1.0));
    let (left, top, plot_w, plot_h): (f64, f64, f64, f64) = (70.0, 50.0, 560.0, 320.0);
    let legend_w = 230.0;
    let width = left + plot_w + legend_w;
    let height = (top + plot_h + 60.0).max(top + 18.0 * by_sc.len() as f64 + 20.0);
    let mut out = String::new();
    header(
        &mut out,
        width as u32,
        height as u32,
        "Completion time per scenario (CDF over seeds)",
    );
    let bottom = top + plot_h;
    for d in axis.decades() {
        let x = left + axis.pos(d) * plot_w;
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}" stroke="#dddddd"/>"##
        );
        let _ = writeln!(
            out,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            bottom + 16.0,
            esc(&secs_label(d))
        );
    }
    for i in 0..=4 {
        let f = f64::from(i) / 4.0;
        let y = bottom - f * plot_h;
        let _ = writeln!(
            out,
            r##"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eeeeee"/>"##,
            left + plot_w
        );
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{f:.2}</text>"#,
            left - 6.0,
            y + 4.0
        );
    }
    let _ = writeln!(
        out,
        r##"<line x1="{left}" y1="{bottom}" x2="{:.1}" y2="{bottom}" stroke="black"/>"##,
        left + plot_w
    );
    let _ = writeln!(
        out,
        r##"<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="black"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">virtual time to completion (log scale)</text>"#,
        left + plot_w / 2.0,
        bottom + 36.0
    );
    let _ = writeln!(
        out,
        r#"<text x="18" y="{:.1}" text-anchor="middle" transform="rotate(-90 18 {:.1})">fraction of runs complete</text>"#,
        top + plot_h / 2.0,
        top + plot_h / 2.0
    );
    for (i, (name, (runs, ts))) in by_sc.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let mut ts = ts.clone();
        ts.sort_by(f64::total_cmp);
        let mut pts = vec![(left, bottom)];
        for (k, t) in ts.iter().enumerate() {
            let x = left + axis.pos(*t) * plot_w;
            let y0 = bottom - k as f64 / *runs as f64 * plot_h;
            let y1 = bottom - (k + 1) as f64 / *runs as f64 * plot_h;
            pts.push((x, y0));
            pts.push((x, y1));
        }
        if let Some(&(_, y)) = pts.last() {
            pts.push((left + plot_w, y));
        }
        let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"><title>{}</title></polyline>"#,
            path.join(" "),
            esc(name)
        );
        let ly = top + 18.0 * i as f64;
        let lx = left + plot_w + 20.0;
        let _ = writeln!(
            out,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="3"/>"#,
            lx + 18.0
        );
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}">{} ({}/{})</text>"#,
            lx + 24.0,
            ly + 4.0,
            esc(name),
            ts.len(),
            runs
        );
    }
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
        let a = LogAxis::new(1475.0, 30e6);
        assert_eq!((a.lo, a.hi), (3.0, 8.0));
        assert!((a.pos(1e5) - 0.4).abs() < 1e-9);
    }
}
