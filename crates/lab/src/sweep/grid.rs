//! The sweep's families, their axes, the grid a command line asks for, and each cell's
//! physical floor.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use skywave_sim::config::{parse_duration, parse_rate, parse_size};
use skywave_sim::{Duplex, LinkConfig, LinkKind, SimTime};

use crate::LabError;
use crate::runner::AgentKind;
use crate::scenario::{Completion, MANIFEST_LEN, Scenario};

/// A cell's run stops at `max(TIMEOUT_FLOORS x floor, TIMEOUT_MIN)` virtual seconds,
/// never later than `TIMEOUT_MAX`.
pub const TIMEOUT_FLOORS: f64 = 20.0;
pub const TIMEOUT_MIN: Duration = Duration::from_secs(60);
pub const TIMEOUT_MAX: Duration = Duration::from_secs(8 * 3600);

/// The `ip` family's bundle is `rate x IP_FLOOR_SECONDS / 8` bytes, at most
/// [`IP_MAX_BUNDLE`] (each node's store holds a copy, and runs are in memory when the
/// stores are in /dev/shm).
pub const IP_FLOOR_SECONDS: u64 = 10;
/// The largest `ip` bundle: 50,000,000 B, the size of the design's `lfn-50mb` scenario.
pub const IP_MAX_BUNDLE: u64 = 50_000_000;

/// The Gilbert-Elliott setting the `ip` family's `loss=ge` stands for: `p` (good->bad)
/// and `r` (bad->good) in percent, nothing delivered in the bad state: 3.2% of frames
/// lost on average, in bursts of 3.3 frames on average.
pub const GE_DEFAULT: (f64, f64) = (1.0, 30.0);

/// A family of cells: one workload on one kind of link, with the axes it varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Two radios on one CSMA channel, 100 + 100 bundles of 100 B (as `uhf-100x100`).
    Radio,
    /// Radios A-B-C, A and C out of range, 20 bundles of 100 B at A for C (as `uhf-chain`).
    Chain,
    /// An HF byte-stream modem, 10,000 shared + 100 unique bundles each (as `hf-100x100`).
    Hf,
    /// An IP path, one bundle A->B sized for a 10 s floor.
    Ip,
}

impl Family {
    pub const ALL: [Family; 4] = [Family::Radio, Family::Chain, Family::Hf, Family::Ip];

    pub fn name(self) -> &'static str {
        match self {
            Family::Radio => "radio",
            Family::Chain => "chain",
            Family::Hf => "hf",
            Family::Ip => "ip",
        }
    }

    /// Parses one name of `--family`.
    pub fn parse(text: &str) -> Result<Family, LabError> {
        Family::ALL
            .into_iter()
            .find(|f| f.name() == text)
            .ok_or_else(|| LabError::invalid("--family", text, "one of: radio, chain, hf, ip"))
    }

    /// The link spec every cell of the family starts from.
    pub fn base_link(self) -> &'static str {
        match self {
            Family::Radio | Family::Chain => "profile=uhf-csma",
            Family::Hf => "profile=hf-modem",
            Family::Ip => "profile=lfn",
        }
    }

    /// The workload, in words.
    pub fn workload(self) -> String {
        match self {
            Family::Radio => "2 radios on one channel, 100 + 100 unique bundles of 100 B (as uhf-100x100); complete when both hold all 200".into(),
            Family::Chain => "radios A-B-C on one channel, A and C out of range; 20 bundles of 100 B at A (as uhf-chain); complete when C holds all 20".into(),
            Family::Hf => "2 nodes, 10,000 shared + 100 unique bundles each, 100 B payloads (as hf-100x100); complete when both hold all 10,200".into(),
            Family::Ip => format!(
                "one bundle A->B of rate x {IP_FLOOR_SECONDS} s / 8 bytes (at most {IP_MAX_BUNDLE} B); complete when B holds it"
            ),
        }
    }

    /// The family's axes, in table order.
    pub fn axes(self) -> &'static [AxisDef] {
        match self {
            Family::Radio | Family::Chain => RADIO_AXES,
            Family::Hf => HF_AXES,
            Family::Ip => IP_AXES,
        }
    }

    /// The axes of a heat map: x, y, panel columns, then panel rows (the rest).
    pub fn plot_order(self) -> &'static [&'static str] {
        match self {
            Family::Radio | Family::Chain => &["rate", "mtu", "loss", "txqueue"],
            Family::Hf => &["rate", "buffer", "loss", "delay"],
            Family::Ip => &["rtt", "loss", "buffer", "rate", "mtu"],
        }
    }

    /// The axis called `name`.
    pub fn axis(self, name: &str) -> Option<&'static AxisDef> {
        self.axes().iter().find(|a| a.name == name)
    }

    fn axis_names(self) -> String {
        let v: Vec<&str> = self.axes().iter().map(|a| a.name).collect();
        v.join(", ")
    }

    /// The named scenario whose workload and topology the family runs.
    fn scenario(self) -> &'static str {
        match self {
            Family::Radio => "uhf-100x100",
            Family::Chain => "uhf-chain",
            Family::Hf => "hf-100x100",
            Family::Ip => "lfn-50mb",
        }
    }
}

/// What an axis varies, and so how its values parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxisKind {
    /// `rate`: a bit rate; a bare number is in `unit` (bit/s x unit).
    Rate { unit: u64 },
    /// `mtu`: the frame budget in bytes.
    FrameBudget,
    /// `loss`: Bernoulli loss in percent (a bare number is percent).
    Loss,
    /// `loss` of IP paths: as [`AxisKind::Loss`], or `ge` / `ge:P:R` for Gilbert-Elliott.
    BurstLoss,
    /// `txqueue`: `queued` (the radio's transmit queue) or `none`.
    TxQueue,
    /// `delay`: one-way latency; a bare number is seconds.
    Delay,
    /// `rtt`: round-trip time, half of it each way; a bare number is milliseconds.
    Rtt,
    /// `buffer`: the modem's buffer in bytes (`256B`, `1KiB`; a bare number is bytes).
    ModemBuffer,
    /// `buffer`: the bottleneck queue in bandwidth-delay products (`0.05bdp`, a bare
    /// number is BDPs).
    BdpBuffer,
}

/// One axis of a family.
#[derive(Clone, Copy, Debug)]
pub struct AxisDef {
    pub name: &'static str,
    pub kind: AxisKind,
    /// The full grid's values.
    pub values: &'static [&'static str],
    /// `--quick`'s values.
    pub quick: &'static [&'static str],
    pub help: &'static str,
}

const RADIO_AXES: &[AxisDef] = &[
    AxisDef {
        name: "rate",
        kind: AxisKind::Rate { unit: 1000 },
        values: &["1.2k", "2.4k", "4.8k", "9.6k", "19.2k", "38.4k", "128k"],
        quick: &["9.6k", "128k"],
        help: "on-air bit rate (bare numbers: kbit/s)",
    },
    AxisDef {
        name: "mtu",
        kind: AxisKind::FrameBudget,
        values: &["48", "64", "100", "150", "223"],
        quick: &["100", "223"],
        help: "frame budget in bytes",
    },
    AxisDef {
        name: "loss",
        kind: AxisKind::Loss,
        values: &["0", "5", "10"],
        quick: &["0", "10"],
        help: "frames lost at each receiver, percent",
    },
    AxisDef {
        name: "txqueue",
        kind: AxisKind::TxQueue,
        values: &["queued", "none"],
        quick: &["queued", "none"],
        help: "queued: the radio's 4 KiB transmit queue; none: a radio without one (txqueue=none)",
    },
];

const HF_AXES: &[AxisDef] = &[
    AxisDef {
        name: "rate",
        kind: AxisKind::Rate { unit: 1 },
        values: &["300", "1475", "9600"],
        quick: &["300", "1475", "9600"],
        help: "modem bit rate (bare numbers: bit/s)",
    },
    AxisDef {
        name: "delay",
        kind: AxisKind::Delay,
        values: &["1s", "4s", "8s"],
        quick: &["4s"],
        help: "one-way delay (bare numbers: seconds)",
    },
    AxisDef {
        name: "buffer",
        kind: AxisKind::ModemBuffer,
        values: &["256B", "1KiB", "8KiB"],
        quick: &["256B", "1KiB"],
        help: "modem transmit buffer (bare numbers: bytes)",
    },
    AxisDef {
        name: "loss",
        kind: AxisKind::Loss,
        values: &["0", "2", "5", "15"],
        quick: &["0", "5"],
        help: "64 B chunks lost on the modem link, percent (a lost chunk costs the frames in it)",
    },
];

const IP_AXES: &[AxisDef] = &[
    AxisDef {
        name: "rate",
        kind: AxisKind::Rate { unit: 1_000_000 },
        values: &["1M", "30M", "1G"],
        quick: &["1M", "30M"],
        help: "path bit rate (bare numbers: Mbit/s)",
    },
    AxisDef {
        name: "rtt",
        kind: AxisKind::Rtt,
        values: &["1ms", "60ms", "230ms", "600ms", "3000ms"],
        quick: &["60ms", "230ms"],
        help: "round-trip time, half each way (bare numbers: ms)",
    },
    AxisDef {
        name: "loss",
        kind: AxisKind::BurstLoss,
        values: &["0", "1", "5", "ge"],
        quick: &["0", "1", "ge"],
        help: "random loss in percent, or ge (Gilbert-Elliott p=1%, r=30%) / ge:P:R",
    },
    AxisDef {
        name: "buffer",
        kind: AxisKind::BdpBuffer,
        values: &["0.05bdp", "1bdp", "4bdp"],
        quick: &["1bdp"],
        help: "bottleneck queue in bandwidth-delay products (bare numbers: BDPs)",
    },
    AxisDef {
        name: "mtu",
        kind: AxisKind::FrameBudget,
        values: &["1280", "1500"],
        quick: &["1500"],
        help: "path MTU in bytes (IPv4 + UDP headers included)",
    },
];

/// A value on an axis: its label (what tables and plots show) and the link spec items
/// it stands for (none for `txqueue=queued`, the default radio).
#[derive(Clone, Debug, PartialEq)]
pub struct AxisValue {
    pub label: String,
    pub spec: Option<String>,
    /// A number for sorting and plots (bit/s, bytes, percent, seconds, BDPs).
    pub number: f64,
}

/// `1200` -> `1.2k`, `1475` -> `1475`, `30000000` -> `30M`.
pub fn rate_short(bps: u64) -> String {
    let trim = |v: f64| {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if bps >= 1_000_000_000 {
        format!("{}G", trim(bps as f64 / 1e9))
    } else if bps >= 1_000_000 {
        format!("{}M", trim(bps as f64 / 1e6))
    } else if bps >= 1000 && (bps.is_multiple_of(100) || bps >= 10_000) {
        format!("{}k", trim(bps as f64 / 1e3))
    } else {
        bps.to_string()
    }
}

fn trim_num(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A duration in the largest unit that keeps it whole: `4s`, `30ms`, `500us`, `7ns`.
fn duration_spec(d: Duration) -> String {
    let n = d.as_nanos();
    if n.is_multiple_of(1_000_000_000) {
        format!("{}s", n / 1_000_000_000)
    } else if n.is_multiple_of(1_000_000) {
        format!("{}ms", n / 1_000_000)
    } else if n.is_multiple_of(1000) {
        format!("{}us", n / 1000)
    } else {
        format!("{n}ns")
    }
}

fn size_label(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{}MiB", n >> 20)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{}KiB", n >> 10)
    } else {
        format!("{n}B")
    }
}

/// A bare number or a number with `%`, as percent in 0..=100.
fn percent(text: &str) -> Option<f64> {
    let t = text.strip_suffix('%').unwrap_or(text).trim();
    let v: f64 = t.parse().ok()?;
    (v.is_finite() && (0.0..=100.0).contains(&v)).then_some(v)
}

fn is_bare(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || c == '.')
}

impl AxisDef {
    fn expected(&self) -> String {
        match self.kind {
            AxisKind::Rate { unit } => format!(
                "a bit rate such as {} (k, M, G or a unit such as kbps; a bare number is {})",
                self.values.join(", "),
                match unit {
                    1 => "bit/s",
                    1000 => "kbit/s",
                    _ => "Mbit/s",
                }
            ),
            AxisKind::FrameBudget => "a frame budget in bytes, e.g. 64, 223, 1500".into(),
            AxisKind::Loss => "a loss percentage from 0 to 100, e.g. 0, 5%, 10".into(),
            AxisKind::BurstLoss => "a loss percentage from 0 to 100 (0, 1%, 5), ge (Gilbert-Elliott p=1%, r=30%) or ge:P:R (e.g. ge:0.5%:25%)".into(),
            AxisKind::TxQueue => "queued or none".into(),
            AxisKind::Delay => "a one-way delay such as 1s, 500ms (a bare number is seconds)".into(),
            AxisKind::Rtt => "a round-trip time such as 60ms, 1.5s (a bare number is milliseconds)".into(),
            AxisKind::ModemBuffer => "a buffer size such as 256B, 1KiB, 8KiB (a bare number is bytes)".into(),
            AxisKind::BdpBuffer => "a multiple of the bandwidth-delay product such as 0.05bdp, 1bdp, 4 (a bare number is BDPs)".into(),
        }
    }

    /// Parses one value of this axis.
    pub fn parse(&self, family: Family, text: &str) -> Result<AxisValue, LabError> {
        let t = text.trim();
        let bad = || {
            LabError::invalid(
                &format!("--axis {}.{}", family.name(), self.name),
                text,
                self.expected(),
            )
        };
        let v = match self.kind {
            AxisKind::Rate { unit } => {
                let suffix = |c: char| match c {
                    'k' | 'K' => Some(1e3),
                    'M' => Some(1e6),
                    'G' => Some(1e9),
                    _ => None,
                };
                let last = t.chars().last().unwrap_or(' ');
                let bps = if is_bare(t) {
                    let v: f64 = t.parse().map_err(|_| bad())?;
                    (v * unit as f64).round() as u64
                } else if let (Some(m), Some(num)) = (suffix(last), t.get(..t.len() - 1))
                    && is_bare(num)
                {
                    let v: f64 = num.parse().map_err(|_| bad())?;
                    (v * m).round() as u64
                } else {
                    parse_rate(t).map_err(|_| bad())?
                };
                if !(10..=100_000_000_000).contains(&bps) {
                    return Err(bad());
                }
                AxisValue {
                    label: rate_short(bps),
                    spec: Some(format!("rate={bps}bps")),
                    number: bps as f64,
                }
            }
            AxisKind::FrameBudget => {
                let n = parse_size(t).map_err(|_| bad())?;
                if n == 0 || n > 65_535 {
                    return Err(bad());
                }
                AxisValue {
                    label: n.to_string(),
                    spec: Some(format!("mtu={n}B")),
                    number: n as f64,
                }
            }
            AxisKind::Loss | AxisKind::BurstLoss => {
                let ge = if self.kind == AxisKind::BurstLoss {
                    if t == "ge" {
                        Some(GE_DEFAULT)
                    } else if let Some(rest) = t.strip_prefix("ge:") {
                        let (p, r) = rest.split_once(':').ok_or_else(bad)?;
                        Some((percent(p).ok_or_else(bad)?, percent(r).ok_or_else(bad)?))
                    } else {
                        None
                    }
                } else {
                    None
                };
                match ge {
                    Some((p, r)) => {
                        if r == 0.0 {
                            return Err(bad());
                        }
                        let label = if (p, r) == GE_DEFAULT {
                            "ge".to_string()
                        } else {
                            format!("ge:{}%:{}%", trim_num(p), trim_num(r))
                        };
                        AxisValue {
                            label,
                            spec: Some(format!(
                                "ge-p={}%,ge-r={}%,ge-h=0,ge-k=1",
                                trim_num(p),
                                trim_num(r)
                            )),
                            // The stationary loss, in percent.
                            number: p / (p + r) * 100.0,
                        }
                    }
                    None => {
                        let p = percent(t).ok_or_else(bad)?;
                        AxisValue {
                            label: format!("{}%", trim_num(p)),
                            spec: Some(format!("loss={}%", trim_num(p))),
                            number: p,
                        }
                    }
                }
            }
            AxisKind::TxQueue => match t {
                "queued" => AxisValue {
                    label: "queued".into(),
                    spec: None,
                    number: 1.0,
                },
                "none" => AxisValue {
                    label: "none".into(),
                    spec: Some("txqueue=none".into()),
                    number: 0.0,
                },
                _ => return Err(bad()),
            },
            AxisKind::Delay | AxisKind::Rtt => {
                let d = if is_bare(t) {
                    let v: f64 = t.parse().map_err(|_| bad())?;
                    let secs = if self.kind == AxisKind::Rtt {
                        v / 1000.0
                    } else {
                        v
                    };
                    Duration::try_from_secs_f64(secs).map_err(|_| bad())?
                } else {
                    parse_duration(t).map_err(|_| bad())?
                };
                if d > Duration::from_secs(3600) {
                    return Err(bad());
                }
                if self.kind == AxisKind::Rtt {
                    if d.is_zero() {
                        return Err(bad());
                    }
                    let ms = d.as_secs_f64() * 1000.0;
                    AxisValue {
                        label: format!("{}ms", trim_num(ms)),
                        // Half each way.
                        spec: Some(format!("delay={}", duration_spec(d / 2))),
                        number: d.as_secs_f64(),
                    }
                } else {
                    AxisValue {
                        label: if d.subsec_nanos() == 0 {
                            format!("{}s", d.as_secs())
                        } else {
                            format!("{}ms", trim_num(d.as_secs_f64() * 1000.0))
                        },
                        spec: Some(format!("delay={}", duration_spec(d))),
                        number: d.as_secs_f64(),
                    }
                }
            }
            AxisKind::ModemBuffer => {
                let n = parse_size(t).map_err(|_| bad())?;
                if n == 0 {
                    return Err(bad());
                }
                AxisValue {
                    label: size_label(n),
                    spec: Some(format!("buffer={n}B")),
                    number: n as f64,
                }
            }
            AxisKind::BdpBuffer => {
                let num = t
                    .strip_suffix("bdp")
                    .or_else(|| t.strip_suffix("BDP"))
                    .unwrap_or(t)
                    .trim();
                let k: f64 = num.parse().map_err(|_| bad())?;
                if !(k.is_finite() && k > 0.0 && k <= 1000.0) {
                    return Err(bad());
                }
                AxisValue {
                    label: format!("{}bdp", trim_num(k)),
                    spec: Some(format!("buffer={}bdp", trim_num(k))),
                    number: k,
                }
            }
        };
        Ok(v)
    }
}

/// One family's part of a grid: the values of each axis, in the family's axis order.
#[derive(Clone, Debug)]
pub struct FamilyGrid {
    pub family: Family,
    pub axes: Vec<(&'static AxisDef, Vec<AxisValue>)>,
}

impl FamilyGrid {
    /// Cells of this family (the Cartesian product of its axes).
    pub fn len(&self) -> usize {
        self.axes.iter().map(|(_, v)| v.len()).product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What `skywave lab sweep` runs: families and their axis values.
#[derive(Clone, Debug)]
pub struct Grid {
    pub families: Vec<FamilyGrid>,
    pub quick: bool,
}

/// Parses `--family` (comma-separated; `None`: every family).
pub fn parse_families(text: Option<&str>) -> Result<Vec<Family>, LabError> {
    let Some(text) = text else {
        return Ok(Family::ALL.to_vec());
    };
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let f = Family::parse(part)?;
        if !out.contains(&f) {
            out.push(f);
        }
    }
    if out.is_empty() {
        return Err(LabError::invalid(
            "--family",
            text,
            "one or more of radio, chain, hf, ip, comma-separated (the grid would be empty)",
        ));
    }
    Ok(out)
}

impl Grid {
    /// The grid for `families`, each axis at its full (or `quick`) values, except the
    /// axes `overrides` set: `AXIS=V1,V2` (every listed family with that axis) or
    /// `FAMILY.AXIS=V1,V2`.
    pub fn new(families: &[Family], overrides: &[String], quick: bool) -> Result<Grid, LabError> {
        if families.is_empty() {
            return Err(LabError::invalid(
                "--family",
                "",
                "one or more of radio, chain, hf, ip (the grid would be empty)",
            ));
        }
        let mut grid = Grid {
            families: Vec::new(),
            quick,
        };
        for &family in families {
            let mut axes = Vec::new();
            for def in family.axes() {
                let list = if quick { def.quick } else { def.values };
                let values = list
                    .iter()
                    .map(|v| def.parse(family, v))
                    .collect::<Result<Vec<_>, _>>()?;
                axes.push((def, values));
            }
            grid.families.push(FamilyGrid { family, axes });
        }
        for o in overrides {
            grid.apply(o)?;
        }
        Ok(grid)
    }

    /// Applies one `--axis`.
    fn apply(&mut self, text: &str) -> Result<(), LabError> {
        let listed: Vec<&str> = self.families.iter().map(|f| f.family.name()).collect();
        let Some((name, values)) = text.split_once('=') else {
            return Err(LabError::invalid(
                "--axis",
                text,
                "AXIS=V1,V2 or FAMILY.AXIS=V1,V2, e.g. rate=1.2k,9.6k or hf.delay=1s,8s",
            ));
        };
        let name = name.trim();
        let (family, axis) = match name.split_once('.') {
            Some((f, a)) => (Some(Family::parse(f.trim())?), a.trim()),
            None => (None, name),
        };
        let values: Vec<&str> = values
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .collect();
        if values.is_empty() {
            return Err(LabError::invalid(
                "--axis",
                text,
                format!("at least one value for axis '{name}' (the grid would be empty)"),
            ));
        }
        let mut hit = false;
        for fg in &mut self.families {
            if family.is_some_and(|f| f != fg.family) {
                continue;
            }
            let Some(slot) = fg.axes.iter_mut().find(|(d, _)| d.name == axis) else {
                continue;
            };
            let mut parsed: Vec<AxisValue> = Vec::new();
            for v in &values {
                let p = slot.0.parse(fg.family, v)?;
                if !parsed.iter().any(|q| q.label == p.label) {
                    parsed.push(p);
                }
            }
            slot.1 = parsed;
            hit = true;
        }
        if !hit {
            let accepted: Vec<String> = Family::ALL
                .iter()
                .filter(|f| family.is_none_or(|x| x == **f))
                .map(|f| format!("{}: {}", f.name(), f.axis_names()))
                .collect();
            let msg = match family {
                Some(f) if !listed.contains(&f.name()) => format!(
                    "a family in the sweep (--family is {}); axes: {}",
                    listed.join(","),
                    accepted.join("; ")
                ),
                _ => format!(
                    "an axis of the families swept ({}); axes: {}",
                    listed.join(", "),
                    accepted.join("; ")
                ),
            };
            return Err(LabError::invalid("--axis", name, msg));
        }
        Ok(())
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.families.iter().map(FamilyGrid::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every cell, family by family, the first axis varying slowest. A cell whose link
    /// or scenario cannot be built carries the error (`build`).
    pub fn cells(&self, agent: AgentKind) -> Vec<Cell> {
        let mut out = Vec::new();
        for fg in &self.families {
            let n = fg.len();
            for i in 0..n {
                // Mixed-radix index, last axis fastest.
                let mut rest = i;
                let mut picks = vec![0usize; fg.axes.len()];
                for (k, (_, vals)) in fg.axes.iter().enumerate().rev() {
                    picks[k] = rest % vals.len();
                    rest /= vals.len();
                }
                let axes: Vec<(String, AxisValue)> = fg
                    .axes
                    .iter()
                    .zip(&picks)
                    .map(|((d, vals), &p)| (d.name.to_string(), vals[p].clone()))
                    .collect();
                out.push(Cell::build(fg.family, axes, agent));
            }
        }
        out
    }
}

/// The physical floor of a cell: the least time the link's physics allows for the
/// workload (see the module documentation for the formula).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Floor {
    /// Useful bytes the receivers must accept (the lab's definition: payload + manifest
    /// of every bundle version each receiver newly accepts).
    pub useful_bytes: u64,
    /// `measured`: the useful bytes of a complete run of the cell; `nominal`: from the
    /// workload with each manifest counted at the lab's nominal 134 B (no seed
    /// completed).
    pub basis: String,
    /// Seconds to carry the useful bytes at the link's rate (shared channel: all of
    /// them at the one rate; full duplex: the slower direction).
    pub transfer_seconds: f64,
    /// One round trip: the sum of both directions' one-way delays.
    pub round_trip_seconds: f64,
    /// Half-duplex turnarounds the workload forces (2 when both directions carry data).
    pub turnarounds: u32,
    pub turnaround_seconds: f64,
    /// transfer + round trip + turnarounds x turnaround.
    pub seconds: f64,
}

/// Useful bytes a workload needs per hop: `(from, to) -> bytes`, each receiver's copy
/// carried from its predecessor on a shortest path from the bundle's origin.
fn hop_bytes(sc: &Scenario) -> BTreeMap<(usize, usize), u64> {
    let n = sc.topology.nodes.len();
    let mut adj = vec![Vec::new(); n];
    for &(a, b) in &sc.topology.edges {
        adj[a].push(b);
        adj[b].push(a);
    }
    let mut holders: BTreeMap<_, Vec<usize>> = BTreeMap::new();
    for (node, spec) in &sc.workload.initial {
        holders.entry(spec.key).or_default().push(*node);
    }
    let mut hops: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    for (origin, spec, final_len) in sc.bundles() {
        let held = holders.get(&spec.key).cloned().unwrap_or_default();
        // Breadth-first predecessors from the origin.
        let mut pred = vec![usize::MAX; n];
        pred[origin] = origin;
        let mut q = VecDeque::from([origin]);
        while let Some(u) = q.pop_front() {
            for &v in &adj[u] {
                if pred[v] == usize::MAX {
                    pred[v] = u;
                    q.push_back(v);
                }
            }
        }
        let targets: Vec<usize> = match sc.completion {
            Completion::NodeHolds(t) => vec![t],
            Completion::AllSynced | Completion::Deadline => (0..n).collect(),
        };
        let mut receivers = std::collections::BTreeSet::new();
        for t in targets {
            let mut v = t;
            while v != origin && pred[v] != usize::MAX && !held.contains(&v) {
                receivers.insert((pred[v], v));
                v = pred[v];
            }
        }
        for hop in receivers {
            *hops.entry(hop).or_insert(0) += final_len + spec.manifest_len;
        }
    }
    hops
}

/// The floor of `scenario` on `cfg`; `useful` replaces the workload's nominal useful
/// bytes (the measured bytes of a complete run), scaled over the hops.
pub fn floor(scenario: &Scenario, cfg: &LinkConfig, useful: Option<u64>) -> Floor {
    let mut hops = hop_bytes(scenario);
    let nominal: u64 = hops.values().sum();
    let basis = match useful {
        Some(u) if nominal > 0 => {
            for b in hops.values_mut() {
                *b = (*b as u128 * u as u128 / nominal as u128) as u64;
            }
            "measured"
        }
        _ => "nominal",
    };
    let total: u64 = hops.values().sum();
    let secs = |bytes: u64, rate: u64| bytes as f64 * 8.0 / rate.max(1) as f64;
    let shared = cfg.kind == LinkKind::Csma;
    let half = cfg.duplex == Duplex::Half && !shared;
    // Which direction of which link each hop takes: edge (a, b) has a on side A.
    let mut per_link: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
    for (&(from, to), &b) in &hops {
        if let Some(i) = scenario
            .topology
            .edges
            .iter()
            .position(|&(a, c)| (a, c) == (from, to) || (a, c) == (to, from))
        {
            let e = per_link.entry(i).or_insert((0, 0));
            if scenario.topology.edges[i].0 == from {
                e.0 += b;
            } else {
                e.1 += b;
            }
        }
    }
    let transfer = if shared {
        secs(total, cfg.up.rate_bps)
    } else if half {
        per_link
            .values()
            .map(|(u, d)| secs(u + d, cfg.up.rate_bps))
            .fold(0.0, f64::max)
    } else {
        per_link
            .values()
            .map(|(u, d)| secs(*u, cfg.up.rate_bps).max(secs(*d, cfg.down.rate_bps)))
            .fold(0.0, f64::max)
    };
    let rtt = (cfg.up.delay + cfg.down.delay).as_secs_f64();
    let both_ways = per_link.values().any(|(u, d)| *u > 0 && *d > 0);
    let turnarounds = if half && both_ways { 2 } else { 0 };
    let ta = cfg.turnaround.as_secs_f64();
    Floor {
        useful_bytes: total,
        basis: basis.to_string(),
        transfer_seconds: transfer,
        round_trip_seconds: rtt,
        turnarounds,
        turnaround_seconds: ta,
        seconds: transfer + rtt + f64::from(turnarounds) * ta,
    }
}

/// The virtual-time limit of a cell with this floor.
pub fn timeout_for(floor_seconds: f64) -> Duration {
    let t = Duration::try_from_secs_f64(floor_seconds * TIMEOUT_FLOORS).unwrap_or(TIMEOUT_MAX);
    t.max(TIMEOUT_MIN).min(TIMEOUT_MAX)
}

/// What a cell runs: built link, scenario, floor and time limit.
#[derive(Clone, Debug)]
pub struct CellSetup {
    pub link: LinkConfig,
    pub scenario: Scenario,
    /// The floor from the workload's nominal sizes (the report's floor is recomputed
    /// from a complete run's useful bytes).
    pub floor: Floor,
    pub timeout: Duration,
}

/// One cell of the grid.
#[derive(Clone, Debug)]
pub struct Cell {
    pub family: Family,
    /// `(axis name, value)`, in the family's axis order.
    pub axes: Vec<(String, AxisValue)>,
    /// The link spec: the family's base and the axes' items.
    pub link: String,
    /// The cell's setup, or why it cannot be built.
    pub setup: Result<CellSetup, String>,
}

impl Cell {
    /// `rate=9.6k mtu=223 loss=0% txqueue=queued`.
    pub fn label(&self) -> String {
        let mut s = String::new();
        for (i, (name, v)) in self.axes.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            let _ = write!(s, "{name}={}", v.label);
        }
        s
    }

    /// The axis value of `name`.
    pub fn axis(&self, name: &str) -> Option<&AxisValue> {
        self.axes.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    fn build(family: Family, axes: Vec<(String, AxisValue)>, agent: AgentKind) -> Cell {
        let mut link = family.base_link().to_string();
        for (_, v) in &axes {
            if let Some(s) = &v.spec {
                link.push(',');
                link.push_str(s);
            }
        }
        let mut cell = Cell {
            family,
            axes,
            link,
            setup: Err(String::new()),
        };
        cell.setup = cell.setup(agent);
        cell
    }

    fn setup(&self, agent: AgentKind) -> Result<CellSetup, String> {
        let cfg = LinkConfig::parse_spec(&self.link)
            .map_err(|e| format!("invalid link '{}': {e}", self.link))?;
        if agent == AgentKind::Skywave && cfg.kind != LinkKind::Stream {
            let budget = cfg.up.mtu.min(cfg.down.mtu);
            let least = skywave_proto::wire::MIN_FRAME;
            if budget < least {
                return Err(format!(
                    "frame budget (mtu) {budget} B is below the smallest frame the skywave protocol sends ({least} B)"
                ));
            }
        }
        let mut sc = Scenario::lookup(self.family.scenario()).map_err(|e| e.to_string())?;
        sc.name = format!("sweep-{} {}", self.family.name(), self.label());
        sc.summary = self.family.workload();
        sc.link = self.link.clone();
        if self.family == Family::Ip {
            let bytes = (cfg.up.rate_bps / 8 * IP_FLOOR_SECONDS).clamp(1, IP_MAX_BUNDLE);
            for (_, spec) in &mut sc.workload.initial {
                spec.payload_len = bytes;
            }
        }
        let nominal = floor(&sc, &cfg, None);
        if nominal.seconds.is_nan() || nominal.seconds <= 0.0 {
            return Err("the cell's floor is zero: nothing to carry".into());
        }
        let timeout = timeout_for(nominal.seconds);
        sc.deadline = SimTime::from_nanos(timeout.as_nanos() as u64);
        Ok(CellSetup {
            link: cfg,
            scenario: sc,
            floor: nominal,
            timeout,
        })
    }
}

/// The lab's nominal manifest size, re-exported for the documentation of floors.
pub const NOMINAL_MANIFEST: u64 = MANIFEST_LEN;
