//! Units, the compact spec grammar, TOML link files, and validation.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::{
    BufferSize, ConfigError, DirConfig, Duplex, DutyLimit, GilbertElliott, IP_UDP_HEADER,
    LinkConfig, LinkKind, LossModel, TxQueue,
};
use crate::time::nanos;

/// Every key the spec grammar and TOML tables accept. Direction keys may be prefixed with
/// `up.` or `down.` to set one direction only.
pub const SPEC_KEYS: &[&str] = &[
    "profile",
    "kind",
    "duplex",
    "turnaround",
    "over",
    "redial",
    "chunk",
    "crc",
    "slot",
    "cw-min",
    "cw-max",
    "txqueue",
    "sf",
    "bw",
    "cr",
    "preamble",
    "duty",
    "duty-window",
    "up",
    "down",
    // direction keys
    "rate",
    "delay",
    "jitter",
    "corr",
    "loss",
    "ge",
    "ge-p",
    "ge-r",
    "ge-h",
    "ge-k",
    "reorder",
    "reorder-delay",
    "dup",
    "corrupt",
    "mtu",
    "overhead",
    "header",
    "buffer",
];

const RATE_UNITS: &str = "a bit rate: a number with unit bps, kbps, Mbps or Gbps (also bit/s, kbit/s, Mbit/s, Gbit/s), e.g. 1475bps, 128kbps, 20Mbps";
const DURATION_UNITS: &str =
    "a duration: a number with unit ns, us, ms, s, min or h, e.g. 50us, 115ms, 4s";
const SIZE_UNITS: &str =
    "a size: a whole number of bytes, optionally with unit B, KB, KiB, MB, MiB, GB or GiB";
const PROB: &str = "a probability: a percentage like 1% or a fraction in 0..=1 like 0.01";
const TXQUEUE: &str = "none (no queue: each frame goes on the air at once), a whole number of frames of at least 1 (e.g. txqueue=1), or bytes (the default: only buffer= limits the queue)";

fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..end], s[end..].trim())
}

/// `number x multiplier`, exact for whole numbers, rounded for decimals.
fn scaled(num: &str, mult: u64) -> Option<u64> {
    if num.is_empty() {
        return None;
    }
    if !num.contains('.') {
        return num.parse::<u64>().ok()?.checked_mul(mult);
    }
    let v: f64 = num.parse().ok()?;
    let r = (v * mult as f64).round();
    (r.is_finite() && r >= 0.0 && r < u64::MAX as f64).then_some(r as u64)
}

/// Parses a bit rate such as `1475bps`, `128kbps`, `20Mbit/s`; a bare number is bit/s.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let (num, unit) = split_number(s.trim());
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "bps" | "bit/s" | "b/s" => 1,
        "kbps" | "kbit/s" | "kb/s" => 1_000,
        "mbps" | "mbit/s" | "mb/s" => 1_000_000,
        "gbps" | "gbit/s" | "gb/s" => 1_000_000_000,
        _ => return Err(RATE_UNITS.to_string()),
    };
    scaled(num, mult).ok_or_else(|| RATE_UNITS.to_string())
}

/// Parses a duration such as `50us`, `115ms`, `4s`, `1.5s`; `0` needs no unit.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = split_number(s.trim());
    let mult = match unit {
        "" if num.parse::<f64>() == Ok(0.0) => 1,
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return Err(DURATION_UNITS.to_string()),
    };
    scaled(num, mult)
        .map(Duration::from_nanos)
        .ok_or_else(|| DURATION_UNITS.to_string())
}

/// Parses a size such as `1024`, `1KiB`, `4KB`; a bare number is bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (num, unit) = split_number(s.trim());
    let mult = match unit {
        "" | "B" => 1,
        "KB" | "kB" => 1_000,
        "KiB" => 1 << 10,
        "MB" => 1_000_000,
        "MiB" => 1 << 20,
        "GB" => 1_000_000_000,
        "GiB" => 1 << 30,
        _ => return Err(SIZE_UNITS.to_string()),
    };
    scaled(num, mult).ok_or_else(|| SIZE_UNITS.to_string())
}

/// Parses `1%`, `0.5%`, `0.01` or `1e-3` into a probability in 0..=1.
pub fn parse_probability(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let v = match s.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map(|v| v / 100.0),
        None => s.parse::<f64>(),
    };
    match v {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(PROB.to_string()),
    }
}

fn parse_buffer(s: &str) -> Result<BufferSize, String> {
    const EXPECTED: &str = "a size like 1KiB or 4096, or a multiple of the bandwidth-delay product like bdp, 1bdp, 0.5bdp";
    let t = s.trim();
    if let Some(k) = t.strip_suffix("bdp") {
        let k = if k.is_empty() {
            Ok(1.0)
        } else {
            k.parse::<f64>()
        };
        return match k {
            Ok(k) if k.is_finite() && k > 0.0 => Ok(BufferSize::Bdp(k)),
            _ => Err(EXPECTED.to_string()),
        };
    }
    parse_size(t)
        .map(BufferSize::Bytes)
        .map_err(|_| EXPECTED.to_string())
}

fn parse_txqueue(s: &str) -> Result<TxQueue, String> {
    match s.trim() {
        "none" => Ok(TxQueue::None),
        "bytes" => Ok(TxQueue::Bytes),
        n => match n.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(TxQueue::Frames(n)),
            _ => Err(TXQUEUE.to_string()),
        },
    }
}

fn fmt_txqueue(q: TxQueue) -> String {
    match q {
        TxQueue::Bytes => "bytes".to_string(),
        TxQueue::None => "none".to_string(),
        TxQueue::Frames(n) => n.to_string(),
    }
}

fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err("on or off (also true/false)".to_string()),
    }
}

/// A LoRa bandwidth: `125kHz`, `250kHz`, `500kHz` (a bare number is kHz).
fn parse_bandwidth(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let khz = t.strip_suffix("kHz").unwrap_or(t).trim();
    match khz {
        "125" => Ok(125_000),
        "250" => Ok(250_000),
        "500" => Ok(500_000),
        _ => Err("a LoRa bandwidth: 125kHz, 250kHz or 500kHz".into()),
    }
}

/// A LoRa coding rate: `4/5`..`4/8` (or 5..8).
fn parse_coding_rate(s: &str) -> Result<u8, String> {
    let t = s.trim();
    let d = t.strip_prefix("4/").unwrap_or(t);
    match d.parse::<u8>() {
        Ok(n) if (5..=8).contains(&n) => Ok(n),
        _ => Err("a coding rate 4/5, 4/6, 4/7 or 4/8".into()),
    }
}

fn parse_ge(s: &str) -> Result<GilbertElliott, String> {
    const EXPECTED: &str = "2 to 4 probabilities p,r[,h[,k]]: p good->bad, r bad->good, h and k delivery probability in the bad and good state (default h=0, k=1), e.g. ge=1%,30% or ge=0.01,0.3,0.1,1";
    let parts: Vec<&str> = s.split(',').collect();
    if !(2..=4).contains(&parts.len()) {
        return Err(EXPECTED.to_string());
    }
    let mut v = [0.0, 0.0, 0.0, 1.0];
    for (slot, part) in v.iter_mut().zip(&parts) {
        *slot = parse_probability(part).map_err(|_| EXPECTED.to_string())?;
    }
    Ok(GilbertElliott {
        p: v[0],
        r: v[1],
        h: v[2],
        k: v[3],
    })
}

/// Splits `a=1,ge=1%,30%,b=2` into key/value pairs; a bare value continues a `ge` list.
fn items(spec: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for raw in spec.split(',') {
        let item = raw.trim();
        if item.is_empty() {
            continue;
        }
        match item.split_once('=') {
            Some((k, v)) => out.push((k.trim().to_string(), v.trim().to_string())),
            None => match out.last_mut() {
                Some((k, v)) if k == "ge" || k.ends_with(".ge") => {
                    v.push(',');
                    v.push_str(item);
                }
                _ => {
                    return Err(ConfigError::invalid(
                        item,
                        item,
                        "key=value; accepted keys are listed in docs/sim.md",
                    ));
                }
            },
        }
    }
    Ok(out)
}

fn accepted_keys() -> String {
    let mut s = SPEC_KEYS.join(", ");
    s.push_str(" (direction keys rate..buffer also as up.KEY / down.KEY)");
    s
}

fn apply_dir(d: &mut DirConfig, field: &str, key: &str, v: &str) -> Result<(), ConfigError> {
    let bad = |e: String| ConfigError::invalid(field, v, e);
    match key {
        "rate" => d.rate_bps = parse_rate(v).map_err(bad)?,
        "delay" => d.delay = parse_duration(v).map_err(bad)?,
        "jitter" => d.jitter = parse_duration(v).map_err(bad)?,
        "corr" => d.jitter_corr = parse_probability(v).map_err(bad)?,
        "loss" => {
            let p = parse_probability(v).map_err(bad)?;
            d.loss = if p == 0.0 {
                LossModel::None
            } else {
                LossModel::Bernoulli(p)
            };
        }
        "ge" => d.loss = LossModel::GilbertElliott(parse_ge(v).map_err(bad)?),
        "ge-p" | "ge-r" | "ge-h" | "ge-k" => {
            let p = parse_probability(v).map_err(bad)?;
            let mut ge = match d.loss {
                LossModel::GilbertElliott(ge) => ge,
                _ => GilbertElliott {
                    p: 0.0,
                    r: 1.0,
                    h: 0.0,
                    k: 1.0,
                },
            };
            match key {
                "ge-p" => ge.p = p,
                "ge-r" => ge.r = p,
                "ge-h" => ge.h = p,
                _ => ge.k = p,
            }
            d.loss = LossModel::GilbertElliott(ge);
        }
        "reorder" => d.reorder = parse_probability(v).map_err(bad)?,
        "reorder-delay" => d.reorder_delay = parse_duration(v).map_err(bad)?,
        "dup" => d.duplicate = parse_probability(v).map_err(bad)?,
        "corrupt" => d.corrupt = parse_probability(v).map_err(bad)?,
        "mtu" => d.mtu = to_usize(parse_size(v).map_err(bad)?, field, v)?,
        "overhead" => d.overhead = to_usize(parse_size(v).map_err(bad)?, field, v)?,
        "header" => d.header = to_usize(parse_size(v).map_err(bad)?, field, v)?,
        "buffer" => d.buffer = parse_buffer(v).map_err(bad)?,
        _ => {
            return Err(ConfigError::UnknownField {
                field: field.to_string(),
                accepted: accepted_keys(),
            });
        }
    }
    Ok(())
}

fn to_usize(n: u64, field: &str, v: &str) -> Result<usize, ConfigError> {
    usize::try_from(n).map_err(|_| ConfigError::invalid(field, v, "a size that fits in memory"))
}

fn apply(cfg: &mut LinkConfig, key: &str, v: &str) -> Result<(), ConfigError> {
    let bad = |e: &str| ConfigError::invalid(key, v, e);
    match key {
        "kind" => {
            cfg.kind = match v {
                "frame" => LinkKind::Frame,
                "stream" => LinkKind::Stream,
                "csma" => LinkKind::Csma,
                _ => return Err(bad("one of frame, stream, csma")),
            }
        }
        "duplex" => {
            cfg.duplex = match v {
                "full" => Duplex::Full,
                "half" => Duplex::Half,
                _ => return Err(bad("one of full, half")),
            }
        }
        "turnaround" => cfg.turnaround = parse_duration(v).map_err(|e| bad(&e))?,
        "over" => {
            cfg.max_over = match v {
                "none" => None,
                _ => Some(parse_duration(v).map_err(|e| bad(&format!("none or {e}")))?),
            }
        }
        "redial" => cfg.redial = parse_duration(v).map_err(|e| bad(&e))?,
        "chunk" => cfg.chunk = to_usize(parse_size(v).map_err(|e| bad(&e))?, key, v)?,
        "crc" => cfg.crc = parse_bool(v).map_err(|e| bad(&e))?,
        "slot" => cfg.csma.slot = parse_duration(v).map_err(|e| bad(&e))?,
        "cw-min" | "cw-max" => {
            let n: u32 = v
                .parse()
                .map_err(|_| bad("a whole number of slots, at least 1"))?;
            if key == "cw-min" {
                cfg.csma.cw_min = n;
            } else {
                cfg.csma.cw_max = n;
            }
        }
        "txqueue" => cfg.csma.txqueue = parse_txqueue(v).map_err(|e| bad(&e))?,
        "sf" | "bw" | "cr" | "preamble" => {
            let mut p = cfg.lora.unwrap_or_default();
            match key {
                "sf" => {
                    p.sf = v
                        .parse()
                        .map_err(|_| bad("a spreading factor from 7 to 12"))?
                }
                "bw" => p.bw_hz = parse_bandwidth(v).map_err(|e| bad(&e))?,
                "cr" => p.cr = parse_coding_rate(v).map_err(|e| bad(&e))?,
                _ => {
                    p.preamble = v
                        .parse()
                        .map_err(|_| bad("a whole number of preamble symbols (6 to 1000)"))?
                }
            }
            p.check().map_err(|e| bad(e.expected))?;
            // The nominal bit rate stands for the link's capacity; frames are timed by
            // the formula.
            let rate = p.bit_rate().round() as u64;
            cfg.up.rate_bps = rate;
            cfg.down.rate_bps = rate;
            cfg.lora = Some(p);
        }
        "duty" | "duty-window" => {
            let mut d = cfg.duty.unwrap_or(DutyLimit::hourly(1.0));
            if key == "duty" {
                d.fraction = parse_probability(v).map_err(|e| bad(&e))?;
            } else {
                d.window = parse_duration(v).map_err(|e| bad(&e))?;
            }
            cfg.duty = Some(d);
        }
        "up" => cfg.up.rate_bps = parse_rate(v).map_err(|e| bad(&e))?,
        "down" => cfg.down.rate_bps = parse_rate(v).map_err(|e| bad(&e))?,
        "profile" => return Err(bad("profile only once, as the first item")),
        _ => {
            if let Some(k) = key.strip_prefix("up.") {
                apply_dir(&mut cfg.up, key, k, v)?;
            } else if let Some(k) = key.strip_prefix("down.") {
                apply_dir(&mut cfg.down, key, k, v)?;
            } else {
                apply_dir(&mut cfg.up, key, key, v)?;
                apply_dir(&mut cfg.down, key, key, v)?;
            }
        }
    }
    Ok(())
}

/// The per-datagram header a link of `kind` has unless told otherwise: IPv4 + UDP for
/// frame links (IP paths), none for radios and modems.
fn default_header(kind: LinkKind) -> usize {
    match kind {
        LinkKind::Frame => IP_UDP_HEADER,
        LinkKind::Stream | LinkKind::Csma => 0,
    }
}

/// Builds a config from key/value items; a `profile` item must come first.
fn build(name: &str, items: &[(String, String)]) -> Result<LinkConfig, ConfigError> {
    let (mut cfg, rest, base_kind) = match items.first() {
        Some((k, v)) if k == "profile" => {
            let p = super::profiles::profile(v)?;
            let kind = p.kind;
            (p, &items[1..], Some(kind))
        }
        _ => (LinkConfig::default(), items, None),
    };
    for (k, v) in rest {
        apply(&mut cfg, k, v)?;
    }
    // A direction whose header was not given keeps the profile's, unless the kind changed
    // (or there is no profile): then it gets the default of the final kind.
    if base_kind != Some(cfg.kind) {
        let given = |dir: &str| {
            rest.iter()
                .any(|(k, _)| k == "header" || k.strip_prefix(dir) == Some("header"))
        };
        let h = default_header(cfg.kind);
        if !given("up.") {
            cfg.up.header = h;
        }
        if !given("down.") {
            cfg.down.header = h;
        }
    }
    if cfg.up.rate_bps == 0 || cfg.down.rate_bps == 0 {
        return Err(ConfigError::Missing {
            field: "rate".to_string(),
            hint: "give rate=RATE (or up=RATE and down=RATE), or start from profile=NAME"
                .to_string(),
        });
    }
    cfg.name = name.to_string();
    cfg.validate()?;
    Ok(cfg)
}

pub(super) fn parse_spec(spec: &str) -> Result<LinkConfig, ConfigError> {
    build(spec.trim(), &items(spec)?)
}

fn toml_value(field: &str, v: &toml::Value) -> Result<String, ConfigError> {
    Ok(match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Array(a) => a
            .iter()
            .map(|x| toml_value(field, x))
            .collect::<Result<Vec<_>, _>>()?
            .join(","),
        _ => {
            return Err(ConfigError::invalid(
                field,
                &v.to_string(),
                "a string, number, boolean or array",
            ));
        }
    })
}

pub(super) fn parse_toml(text: &str) -> Result<BTreeMap<String, LinkConfig>, ConfigError> {
    let top: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Toml {
        message: e.to_string(),
    })?;
    let mut out = BTreeMap::new();
    for (key, links) in &top {
        if key != "links" {
            return Err(ConfigError::UnknownField {
                field: key.clone(),
                accepted: "links (a table of [links.NAME] tables)".to_string(),
            });
        }
        let Some(links) = links.as_table() else {
            return Err(ConfigError::invalid(
                "links",
                &links.to_string(),
                "a table of [links.NAME] tables",
            ));
        };
        for (name, link) in links {
            let prefix = format!("links.{name}.");
            let Some(link) = link.as_table() else {
                return Err(ConfigError::invalid(
                    &format!("links.{name}"),
                    &link.to_string(),
                    "a table of link fields",
                ));
            };
            let mut items = Vec::new();
            // `profile` first, whatever the key order in the file.
            if let Some(p) = link.get("profile") {
                items.push(("profile".to_string(), toml_value("profile", p)?));
            }
            // TOML tables are unordered: plain keys first, then the more specific
            // [links.NAME.up] / [links.NAME.down] tables.
            let mut specific = Vec::new();
            for (k, v) in link {
                match (k.as_str(), v.as_table()) {
                    ("profile", _) => {}
                    ("up" | "down", Some(t)) => {
                        no_loss_conflict(t).map_err(|e| e.within(&format!("{prefix}{k}.")))?;
                        for (k2, v2) in t {
                            let f = format!("{k}.{k2}");
                            specific.push((f.clone(), toml_value(&f, v2)?));
                        }
                    }
                    _ => items.push((k.clone(), toml_value(k, v)?)),
                }
            }
            no_loss_conflict(link).map_err(|e| e.within(&prefix))?;
            items.extend(specific);
            let cfg = build(name, &items).map_err(|e| e.within(&prefix))?;
            out.insert(name.clone(), cfg);
        }
    }
    Ok(out)
}

/// `loss` and `ge*` set the same field; in an unordered TOML table neither can win.
fn no_loss_conflict(t: &toml::Table) -> Result<(), ConfigError> {
    let ge = t.keys().find(|k| k.starts_with("ge"));
    match (t.get("loss"), ge) {
        (Some(v), Some(ge)) => Err(ConfigError::invalid(
            "loss",
            &v.to_string(),
            format!("either loss or {ge} (Gilbert-Elliott) in one table, not both"),
        )),
        _ => Ok(()),
    }
}

fn fmt_duration(d: Duration) -> String {
    let ns = nanos(d);
    for (unit, n) in [
        ("h", 3_600_000_000_000u64),
        ("min", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
    ] {
        if ns != 0 && ns.is_multiple_of(n) {
            return format!("{}{unit}", ns / n);
        }
    }
    if ns == 0 {
        "0s".to_string()
    } else {
        format!("{ns}ns")
    }
}

fn dir_fields(d: &DirConfig, kind: LinkKind) -> Vec<(&'static str, String)> {
    let loss = match d.loss {
        LossModel::None => ("loss", "0".to_string()),
        LossModel::Bernoulli(p) => ("loss", format!("{p}")),
        LossModel::GilbertElliott(g) => ("ge", format!("{},{},{},{}", g.p, g.r, g.h, g.k)),
    };
    let buffer = match d.buffer {
        BufferSize::Bytes(n) => format!("{n}B"),
        BufferSize::Bdp(k) => format!("{k}bdp"),
    };
    let mut v = vec![
        ("rate", format!("{}bps", d.rate_bps)),
        ("delay", fmt_duration(d.delay)),
        ("jitter", fmt_duration(d.jitter)),
        ("corr", format!("{}", d.jitter_corr)),
        loss,
        ("reorder", format!("{}", d.reorder)),
        ("reorder-delay", fmt_duration(d.reorder_delay)),
        ("dup", format!("{}", d.duplicate)),
        ("corrupt", format!("{}", d.corrupt)),
        ("mtu", format!("{}B", d.mtu)),
        ("overhead", format!("{}B", d.overhead)),
    ];
    // Only frame links have a header (and their parsed default is not 0, so it is always
    // written); the other kinds' header is 0 by validation.
    if kind == LinkKind::Frame {
        v.push(("header", format!("{}B", d.header)));
    }
    v.push(("buffer", buffer));
    v
}

pub(super) fn to_spec(cfg: &LinkConfig) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "kind={},duplex={},turnaround={},over={},redial={},chunk={}B,crc={},slot={},cw-min={},cw-max={}",
        cfg.kind.as_str(),
        match cfg.duplex {
            Duplex::Full => "full",
            Duplex::Half => "half",
        },
        fmt_duration(cfg.turnaround),
        cfg.max_over.map_or("none".to_string(), fmt_duration),
        fmt_duration(cfg.redial),
        cfg.chunk,
        if cfg.crc { "on" } else { "off" },
        fmt_duration(cfg.csma.slot),
        cfg.csma.cw_min,
        cfg.csma.cw_max,
    );
    // Written only when not the default, so csma specs without it read as before.
    if cfg.csma.txqueue != TxQueue::Bytes {
        let _ = write!(s, ",txqueue={}", fmt_txqueue(cfg.csma.txqueue));
    }
    if let Some(p) = cfg.lora {
        let _ = write!(
            s,
            ",sf={},bw={}kHz,cr=4/{},preamble={}",
            p.sf,
            p.bw_hz / 1000,
            p.cr,
            p.preamble
        );
    }
    if let Some(d) = cfg.duty {
        let _ = write!(
            s,
            ",duty={},duty-window={}",
            d.fraction,
            fmt_duration(d.window)
        );
    }
    // Direction keys: plain when both directions agree, else up./down. prefixed. The rate
    // goes first so that a spec without a profile always sets it.
    for ((ku, up), (kd, down)) in dir_fields(&cfg.up, cfg.kind)
        .into_iter()
        .zip(dir_fields(&cfg.down, cfg.kind))
    {
        if ku == kd && up == down {
            let _ = write!(s, ",{ku}={up}");
        } else {
            // `loss` and `ge` share a slot, so the keys may differ between directions.
            let _ = write!(s, ",up.{ku}={up},down.{kd}={down}");
        }
    }
    s
}

fn check_prob(field: &str, p: f64) -> Result<(), ConfigError> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(ConfigError::invalid(field, &p.to_string(), PROB))
    }
}

pub(super) fn validate(cfg: &LinkConfig) -> Result<(), ConfigError> {
    for (prefix, d) in [("up.", &cfg.up), ("down.", &cfg.down)] {
        let f = |k: &str| format!("{prefix}{k}");
        if d.rate_bps == 0 {
            return Err(ConfigError::invalid(&f("rate"), "0", RATE_UNITS));
        }
        check_prob(&f("corr"), d.jitter_corr)?;
        check_prob(&f("reorder"), d.reorder)?;
        check_prob(&f("dup"), d.duplicate)?;
        check_prob(&f("corrupt"), d.corrupt)?;
        match d.loss {
            LossModel::None => {}
            LossModel::Bernoulli(p) => check_prob(&f("loss"), p)?,
            LossModel::GilbertElliott(g) => {
                for p in [g.p, g.r, g.h, g.k] {
                    check_prob(&f("ge"), p)?;
                }
            }
        }
        if d.mtu == 0 {
            return Err(ConfigError::invalid(&f("mtu"), "0", "at least 1 byte"));
        }
        if d.header != 0 && cfg.kind != LinkKind::Frame {
            return Err(ConfigError::invalid(
                &f("header"),
                &format!("{}B", d.header),
                format!(
                    "0B for kind {}: header is what an IP network adds to each datagram of a frame link (per-frame airtime of a radio or modem is overhead=)",
                    cfg.kind.as_str()
                ),
            ));
        }
        if d.header >= d.mtu {
            return Err(ConfigError::invalid(
                &f("header"),
                &format!("{}B", d.header),
                format!(
                    "less than the mtu ({} B): the largest datagram is mtu - header",
                    d.mtu
                ),
            ));
        }
        match d.buffer {
            BufferSize::Bytes(0) => {
                return Err(ConfigError::invalid(&f("buffer"), "0", "at least 1 byte"));
            }
            BufferSize::Bdp(k) if !(k.is_finite() && k > 0.0) => {
                return Err(ConfigError::invalid(
                    &f("buffer"),
                    &format!("{k}bdp"),
                    "a positive multiple of the BDP",
                ));
            }
            _ => {}
        }
    }
    if cfg.chunk == 0 {
        return Err(ConfigError::invalid("chunk", "0", "at least 1 byte"));
    }
    match cfg.csma.txqueue {
        TxQueue::Bytes => {}
        q if cfg.kind != LinkKind::Csma => {
            return Err(ConfigError::invalid(
                "txqueue",
                &fmt_txqueue(q),
                format!(
                    "bytes (the default) for kind {}: txqueue=none and txqueue=N apply to kind csma only",
                    cfg.kind.as_str()
                ),
            ));
        }
        TxQueue::Frames(0) => return Err(ConfigError::invalid("txqueue", "0", TXQUEUE)),
        _ => {}
    }
    if let Some(p) = cfg.lora {
        if cfg.kind != LinkKind::Csma {
            return Err(ConfigError::invalid(
                "sf",
                &p.sf.to_string(),
                format!(
                    "no LoRa settings (sf, bw, cr, preamble) for kind {}: LoRa radios share a channel (kind csma)",
                    cfg.kind.as_str()
                ),
            ));
        }
        if let Err(e) = p.check() {
            return Err(ConfigError::invalid(e.field, &e.value, e.expected));
        }
        if cfg.up.mtu > crate::lora::MAX_PAYLOAD {
            return Err(ConfigError::invalid(
                "mtu",
                &cfg.up.mtu.to_string(),
                "at most 255 bytes on a LoRa link (one LoRa packet)",
            ));
        }
    }
    if let Some(d) = cfg.duty {
        if !(d.fraction > 0.0 && d.fraction <= 1.0) {
            return Err(ConfigError::invalid(
                "duty",
                &d.fraction.to_string(),
                "a fraction of air time above 0 and at most 1, e.g. 1% or 10%",
            ));
        }
        if d.window.is_zero() {
            return Err(ConfigError::invalid(
                "duty-window",
                "0",
                "a duration above 0 (EU 868 MHz: 1h)",
            ));
        }
        if cfg.kind != LinkKind::Csma {
            return Err(ConfigError::invalid(
                "duty",
                &d.fraction.to_string(),
                format!(
                    "no duty cycle for kind {}: it applies to radios on a shared band (kind csma)",
                    cfg.kind.as_str()
                ),
            ));
        }
    }
    if cfg.kind == LinkKind::Csma {
        if cfg.up != cfg.down {
            return Err(ConfigError::invalid(
                "down",
                "differs from up",
                "csma media are symmetric: set direction keys without up./down. and no down=",
            ));
        }
        let c = cfg.csma;
        if c.cw_min == 0 || c.cw_max < c.cw_min {
            return Err(ConfigError::invalid(
                "cw-min",
                &format!("{}..{}", c.cw_min, c.cw_max),
                "1 <= cw-min <= cw-max",
            ));
        }
        if c.slot.is_zero() {
            return Err(ConfigError::invalid("slot", "0", "a duration above 0"));
        }
    }
    Ok(())
}
