//! Verbs that run or talk to the daemon: `daemon`, `config example`, `status`, `peers`,
//! `events`, and the daemon-side forms of `add`, `append`, `ls`, `show` and `get`.

use std::borrow::Cow;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use skywave_bundle::BundleId;
use skywave_bundle::sealed::OpenWriter;
use skywave_bundle::text::printable;
use skywave_daemon::DaemonConfig;
use skywave_daemon::client::Client;
use skywave_daemon::status::Status;
use skywave_store::read_node_key;

use crate::store_cmd::{
    AddArgs, AppendArgs, GetArgs, IdArg, LsArgs, copy_error, deliver, destination, must_open,
};
use crate::util::bytes;

/// The first `n` characters of a string the daemon sent (an id), safe to print.
fn short(s: &str, n: usize) -> Cow<'_, str> {
    printable(s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i]))
}

#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// Configuration file (TOML; `skywave config example` prints an annotated one).
    #[arg(long, short, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// HTTP API address (default 127.0.0.1:7473).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// Listen for peers: udp://IP:PORT or tcp://IP:PORT (repeatable).
    #[arg(long, value_name = "URL")]
    pub listen: Vec<String>,
    /// A peer to reach: udp://HOST:PORT or tcp://HOST:PORT, HOST an IP address or a
    /// name (looked up by the daemon, again after a failure and when the peer falls
    /// silent) (repeatable).
    #[arg(long, value_name = "URL")]
    pub peer: Vec<String>,
    /// A driver link: TYPE:KEY=VALUE,... with TYPE serial, rfd900, hf-modem or emulated
    /// (e.g. serial:device=/dev/ttyUSB0,baud=57600) (repeatable).
    #[arg(long, value_name = "SPEC")]
    pub link: Vec<String>,
    /// Let reads (GET, HEAD, /metrics) go without the HTTP token; only on a loopback
    /// address. Calls that change the node always need it.
    #[arg(long)]
    pub open_reads: bool,
    /// A name the HTTP API is reached by besides its address, e.g. node.local or
    /// node.local:8080 (repeatable): requests must name the daemon in their Host header.
    #[arg(long, value_name = "NAME")]
    pub http_host: Vec<String>,
    /// Obsolete (every call that changes the node needs the token); accepted and ignored.
    #[arg(long, hide = true)]
    pub require_token: bool,
    /// Store quota (e.g. 10GiB).
    #[arg(long, value_name = "SIZE")]
    pub quota: Option<String>,
    /// Largest UDP datagram payload and TCP frame, for every UDP and TCP link
    /// (overrides the file's `mtu`); path MTU discovery probes up to it. At least 145 on
    /// encrypted links (a handshake message and the smallest frame), 48 on plaintext
    /// ones.
    #[arg(long, value_name = "BYTES")]
    pub mtu: Option<usize>,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print an annotated example configuration.
    Example,
    /// Check a configuration file and print what it sets up.
    Check { file: PathBuf },
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Refresh every second until interrupted.
    #[arg(long)]
    pub watch: bool,
    /// Say what keeps the node from syncing, and what to do (exit status 1 if anything).
    #[arg(long)]
    pub why: bool,
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Replay events after this id first (ids are in every event).
    #[arg(long)]
    pub since: Option<u64>,
    /// Stop after this many events.
    #[arg(long)]
    pub count: Option<u64>,
}

/// `skywave config ...`
pub fn config(a: ConfigArgs, json: bool) -> anyhow::Result<ExitCode> {
    match a.command {
        ConfigCommand::Example => print!("{}", skywave_daemon::config::EXAMPLE),
        ConfigCommand::Check { file } => {
            let c = DaemonConfig::load(&file)?;
            c.validate()?;
            // A radio link's network key is read here as the daemon reads it at start.
            for (i, t) in &c.network_tags {
                skywave_daemon::trust::read_network_key(&t.key_file)
                    .with_context(|| format!("link #{}", i + 1))?;
            }
            for w in &c.warnings {
                eprintln!("warning: {w}");
            }
            let http = c.http.map_or_else(
                || skywave_daemon::config::DEFAULT_HTTP.to_string(),
                |h| h.to_string(),
            );
            let links: Vec<(String, Vec<(&str, String)>)> = c
                .links
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let (ty, mut kv) = describe_link(l, c.radio_access.contains(&i));
                    if let Some(t) = c.network_tags.get(&i) {
                        kv.push((
                            "network_tag",
                            format!("{} B, key {}", t.tag_bytes, t.key_file.display()),
                        ));
                    }
                    (ty, kv)
                })
                .collect();
            if json {
                let list: Vec<serde_json::Value> = links
                    .iter()
                    .map(|(ty, kv)| {
                        let mut o = serde_json::Map::new();
                        o.insert("type".into(), ty.clone().into());
                        for (k, v) in kv {
                            o.insert((*k).into(), v.clone().into());
                        }
                        o.into()
                    })
                    .collect();
                println!(
                    "{}",
                    serde_json::json!({
                        "file": file.display().to_string(),
                        "links": c.links.len(),
                        "link_settings": list,
                        "http": http,
                        "quota_bytes": c.quota,
                        "dir": c.dir.as_ref().map(|d| d.display().to_string()),
                        "warnings": c.warnings,
                    })
                );
            } else {
                println!("{}: valid", file.display());
                println!(
                    "  HTTP API   http://{http}{}",
                    if c.open_reads {
                        " (reads without the token)"
                    } else {
                        ""
                    }
                );
                if let Some(d) = &c.dir {
                    println!("  directory  {}", d.display());
                }
                if let Some(q) = c.quota {
                    println!("  quota      {}", bytes(q));
                }
                if links.is_empty() {
                    println!(
                        "  no links: add [[link]] tables, or --listen, --peer or --link when starting"
                    );
                }
                for (i, (ty, kv)) in links.iter().enumerate() {
                    let rest: Vec<String> = kv.iter().map(|(k, v)| format!("{k} {v}")).collect();
                    println!("  link {:<3} {ty:<9} {}", i + 1, rest.join(", "));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A link's type and its settings worth reading, in the words of the file's keys.
fn describe_link(
    l: &skywave_daemon::LinkConfig,
    radio_access: bool,
) -> (String, Vec<(&'static str, String)>) {
    use skywave_daemon::LinkConfig;
    use skywave_links::DriverConfig;
    let list = |p: &[skywave_daemon::config::PeerAddr]| {
        p.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let security = |plaintext: bool, trust: skywave_daemon::trust::TrustMode| {
        if plaintext {
            "plaintext (no encryption, any peer)".to_string()
        } else {
            format!("encrypted (trust {})", trust.as_str())
        }
    };
    match l {
        LinkConfig::Udp(u) => {
            let mut kv = vec![("bind", u.bind.to_string())];
            if !u.peers.is_empty() {
                kv.push(("peers", list(&u.peers)));
            }
            if let Some(d) = u.discovery {
                kv.push(("discovery", format!("{d} every {:?}", u.beacon_interval)));
            }
            kv.push((
                "mtu",
                match u.mtu {
                    Some(m) => format!("{m} B"),
                    None => "what each peer's route carries".into(),
                },
            ));
            if let Some(r) = u.rate {
                kv.push(("rate", format!("{r} bit/s")));
            }
            kv.push(("security", security(u.plaintext, u.trust)));
            ("udp".into(), kv)
        }
        LinkConfig::Tcp(t) => {
            let mut kv = Vec::new();
            if let Some(a) = t.listen {
                kv.push(("listen", a.to_string()));
            }
            if !t.peers.is_empty() {
                kv.push(("peers", list(&t.peers)));
            }
            kv.push(("mtu", format!("{} B", t.mtu)));
            kv.push(("security", security(t.plaintext, t.trust)));
            ("tcp".into(), kv)
        }
        LinkConfig::Driver(d) => {
            let access = (
                "channel_access",
                if radio_access { "radio" } else { "driver" }.to_string(),
            );
            match d {
                DriverConfig::Serial(c) => {
                    let mut kv = vec![
                        ("device", c.device.display().to_string()),
                        ("baud", c.baud.to_string()),
                    ];
                    if let Some(p) = &c.profile {
                        kv.push(("profile", p.clone()));
                    }
                    ("serial".into(), kv)
                }
                DriverConfig::Rfd900(c) => (
                    "rfd900".into(),
                    vec![
                        ("device", c.device.display().to_string()),
                        ("baud", c.baud.to_string()),
                        ("air_rate", format!("{} bit/s", c.air_rate)),
                        access,
                    ],
                ),
                DriverConfig::HfModem(c) => {
                    let mut kv = vec![
                        ("device", c.device.display().to_string()),
                        ("baud", c.baud.to_string()),
                    ];
                    match &c.station {
                        Some(s) => kv.push(("station", format!("dial {s}"))),
                        None => kv.push(("station", "answer calls".into())),
                    }
                    if !c.channels.is_empty() {
                        kv.push(("channels", c.channels.join(" ")));
                    }
                    kv.push(("redial", format!("{:?}", c.redial)));
                    ("hf-modem".into(), kv)
                }
                DriverConfig::Kiss(c) => {
                    let mut kv = vec![
                        ("tnc", c.tnc.clone()),
                        ("port", c.port.to_string()),
                        (
                            "callsign",
                            c.callsign.clone().unwrap_or_else(|| "(not set)".into()),
                        ),
                        ("air_rate", format!("{} bit/s", c.air_rate)),
                        ("mtu", format!("{} B", c.mtu)),
                    ];
                    if c.amateur {
                        kv.push(("amateur", "yes: identified, never encrypted".into()));
                    }
                    kv.push(access);
                    ("kiss".into(), kv)
                }
                DriverConfig::Rnode(c) => {
                    let mut kv = vec![
                        ("device", c.device.clone()),
                        ("frequency", format!("{} Hz", c.frequency)),
                        (
                            "modulation",
                            format!(
                                "SF{} {} kHz CR 4/{} {} dBm",
                                c.sf,
                                c.bandwidth / 1000,
                                c.cr,
                                c.txpower
                            ),
                        ),
                        ("mtu", format!("{} B", c.mtu)),
                    ];
                    if let Some(d) = c.duty_cycle {
                        kv.push((
                            "duty_cycle",
                            format!("{}% of any {:?}", d * 100.0, c.duty_window),
                        ));
                    }
                    kv.push(access);
                    ("rnode".into(), kv)
                }
                DriverConfig::Vara(c) => {
                    let mut kv = vec![
                        ("modem", c.modem.clone()),
                        ("data", c.data_addr()),
                        (
                            "callsign",
                            c.callsign.clone().unwrap_or_else(|| "(not set)".into()),
                        ),
                    ];
                    match &c.station {
                        Some(s) => kv.push((
                            "station",
                            format!("call {s} when there is something to send"),
                        )),
                        None => {
                            kv.push(("station", "answer calls; call back the last caller".into()))
                        }
                    }
                    kv.push(("bandwidth", format!("{} Hz", c.bandwidth)));
                    kv.push(("buffer", format!("{} B", c.buffer)));
                    if c.amateur {
                        kv.push(("amateur", "yes: identified by VARA, never encrypted".into()));
                    }
                    ("vara".into(), kv)
                }
                DriverConfig::Ardop(c) => {
                    let mut kv = vec![
                        ("modem", c.modem.clone()),
                        (
                            "callsign",
                            c.callsign.clone().unwrap_or_else(|| "(not set)".into()),
                        ),
                        (
                            "mode",
                            match (c.mode, &c.call) {
                                (skywave_links::ardop::ArdopMode::Fec, _) => "FEC broadcast".into(),
                                (_, Some(s)) => format!("ARQ, calling {s}"),
                                (_, None) => "ARQ, answering calls".into(),
                            },
                        ),
                        ("buffer", format!("at most {} B in the modem", c.buffer())),
                        (
                            "amateur",
                            "yes: identified by the modem, never encrypted".into(),
                        ),
                    ];
                    kv.push(access);
                    ("ardop".into(), kv)
                }
                DriverConfig::Emulated(c) => (
                    "emulated".into(),
                    vec![
                        ("profile", c.profile.clone()),
                        ("peer_device", c.peer_device.display().to_string()),
                        access,
                    ],
                ),
            }
        }
    }
}

/// `skywave daemon`: runs until interrupted (SIGINT or SIGTERM).
pub fn daemon(dir: &Path, a: DaemonArgs) -> anyhow::Result<ExitCode> {
    let mut cfg = match &a.config {
        Some(p) => DaemonConfig::load(p)?,
        None => DaemonConfig::default(),
    };
    if let Some(d) = &cfg.dir
        && !dir_flag_given()
    {
        // The file's dir applies unless --dir or SKYWAVE_HOME said otherwise.
        return daemon_in(d.clone(), cfg, a);
    }
    cfg.dir = None;
    daemon_in(dir.to_path_buf(), cfg, a)
}

fn dir_flag_given() -> bool {
    std::env::args().any(|a| a == "--dir" || a.starts_with("--dir="))
        || std::env::var_os("SKYWAVE_HOME").is_some_and(|v| !v.is_empty())
}

fn daemon_in(dir: PathBuf, mut cfg: DaemonConfig, a: DaemonArgs) -> anyhow::Result<ExitCode> {
    if let Some(h) = a.http {
        cfg.http = Some(h);
    }
    if a.require_token {
        cfg.warnings.push(
            "--require-token is obsolete and ignored: every call that changes the node needs the token, on any address; remove it".into(),
        );
    }
    cfg.open_reads |= a.open_reads;
    cfg.http_hosts.extend(a.http_host.iter().cloned());
    if let Some(q) = &a.quota {
        cfg.quota = Some(
            skywave_daemon::config::parse_size(q)
                .map_err(|e| anyhow::anyhow!("invalid value '{q}' for --quota: {e}"))?,
        );
    }
    for u in &a.listen {
        cfg.add_url(u, true)?;
    }
    for u in &a.peer {
        cfg.add_url(u, false)?;
    }
    for l in &a.link {
        cfg.add_link_flag(l)?;
    }
    if let Some(m) = a.mtu {
        cfg.set_ip_mtu(m)?;
    }
    cfg.validate()?;
    if let Some(c) = Client::find(&dir) {
        bail!(
            "a daemon is already running on {} ({}); stop it first",
            dir.display(),
            c.base
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let shutdown = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("SIGTERM handler");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            tracing::info!("shutting down");
        };
        skywave_daemon::run(dir, cfg, shutdown).await
    })?;
    Ok(ExitCode::SUCCESS)
}

fn need(dir: &Path) -> anyhow::Result<Client> {
    Client::find(dir).with_context(|| {
        format!(
            "no daemon is running on {}; start one with `skywave daemon --dir {}`",
            dir.display(),
            dir.display()
        )
    })
}

fn bar(held: u64, total: u64, width: usize) -> String {
    let f = if total == 0 {
        1.0
    } else {
        held as f64 / total as f64
    };
    let n = ((f * width as f64).round() as usize).min(width);
    format!(
        "[{}{}] {:>5.1}%",
        "#".repeat(n),
        ".".repeat(width - n),
        f * 100.0
    )
}

fn rate(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.2} Mbit/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.1} kbit/s", bps / 1e3)
    } else {
        format!("{bps:.0} bit/s")
    }
}

/// The one-screen status.
pub fn render_status(s: &Status) -> String {
    let mut o = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        o,
        "node {}  up {:.0} s  api http://{}  store {} bundles, {}{}",
        short(&s.node, 16),
        s.uptime_seconds,
        printable(&s.http),
        s.store.bundles,
        bytes(s.store.payload_bytes + s.store.manifest_bytes),
        if s.store.partials > 0 {
            format!(", {} partial", s.store.partials)
        } else {
            String::new()
        }
    );
    if let Some(t) = s.store.no_room_seconds {
        let _ = writeln!(
            o,
            "NO ROOM for received bundles for {t:.0} s (quota or disk full): offers are turned down and asked for again later; free space or raise the quota"
        );
    }
    let _ = writeln!(o, "\nLINKS");
    if s.links.is_empty() {
        let _ = writeln!(o, "  (none: add --listen, --peer or --link)");
    }
    for l in &s.links {
        let util = l.utilisation.map_or_else(String::new, |u| {
            format!(
                "  {:.0}% of {}",
                u * 100.0,
                rate(l.rate_bps.unwrap_or(0) as f64)
            )
        });
        // A driver link that takes nothing, or a radio waiting for its turn, says so:
        // that is why nothing goes out.
        let waiting = match (l.room, l.turn_in_ms) {
            (_, Some(ms)) => format!("  turn in {ms:.0} ms"),
            (Some(0), None) => "  device busy".to_string(),
            _ => String::new(),
        };
        let turns = match (l.over_ends_sent, l.over_ends_heard) {
            (Some(s), Some(h)) => format!("  turns passed {s}, heard {h}"),
            _ => String::new(),
        };
        let sec = match (&l.encryption, &l.trust) {
            (Some(e), Some(t)) => format!("  {e}, trust {t}"),
            (Some(e), None) => format!("  {e}"),
            _ => String::new(),
        };
        let util = util + &waiting + &turns + &sec;
        let state = match (l.up, l.state.as_str()) {
            (true, "" | "up") => "up".to_string(),
            (true, st) => printable(st).into_owned(),
            (false, _) => "down".to_string(),
        };
        let _ = writeln!(
            o,
            "  {:>2} {:<28} {:<22} out {:>12} in {:>12}{}",
            l.id,
            printable(&l.name),
            state,
            rate(l.out_bps),
            rate(l.in_bps),
            util
        );
        why_line(&mut o, l.reason.as_deref());
        device_line(&mut o, &l.device);
    }
    let _ = writeln!(o, "\nPEERS");
    if s.peers.is_empty() {
        let _ = writeln!(o, "  (none yet)");
    }
    for p in &s.peers {
        let _ = writeln!(
            o,
            "  {}  link {:<2} {:<12} {:<8} rtt {:>9}  mtu {:>6}  recon {:>8}  sending {} receiving {}  heard {:.0} s ago",
            short(&p.node, 16),
            p.link,
            printable(&p.state),
            printable(&p.identity),
            p.rtt_ms.map_or("-".into(), |r| format!("{r:.1} ms")),
            path_mtu(p),
            bytes(p.recon_bytes),
            p.sending,
            p.receiving,
            p.silent_seconds
        );
        why_line(&mut o, p.reason.as_deref());
    }
    let _ = writeln!(o, "\nTRANSFERS");
    if s.transfers.is_empty() {
        let synced = s.peers.iter().filter(|p| p.state == "synced").count();
        let _ = match (s.peers.len(), synced) {
            (0, _) => writeln!(
                o,
                "  (none: no peer has answered, so nothing is syncing; see LINKS, or `skywave status --why`)"
            ),
            (_, 0) => writeln!(o, "  (none yet: no peer has finished reconciling)"),
            (n, k) if k == n => writeln!(o, "  (none: in sync with {k} peer(s))"),
            (n, k) => writeln!(o, "  (none: in sync with {k} of {n} peers)"),
        };
    }
    for t in &s.transfers {
        let eta = t
            .eta_seconds
            .map_or_else(|| "-".into(), |e| format!("{e:.0} s"));
        let _ = writeln!(
            o,
            "  {} {:<7} {} {}  {} / {}  {:>12}  eta {:>6}  {}",
            short(&t.id, 16),
            printable(&t.direction),
            short(&t.peer, 8),
            bar(t.held_bytes, t.total_bytes, 20),
            bytes(t.held_bytes),
            bytes(t.total_bytes),
            rate(t.rate_bps * 8.0),
            eta,
            printable(&t.state)
        );
        why_line(&mut o, t.reason.as_deref());
    }
    let p = &s.protocol;
    let dropped: u64 = p.dropped.values().sum();
    let _ = writeln!(
        o,
        "\nreceived {} bundles ({} useful), delivered {}; sent {} in {} frames, {} recon, {} resent; {} frames dropped",
        p.bundles_received,
        bytes(p.useful_bytes_received),
        p.bundles_delivered,
        bytes(p.bytes_sent),
        p.frames_sent,
        bytes(p.recon_bytes_sent),
        bytes(p.piece_bytes_resent),
        dropped
    );
    o
}

/// The reason under a row of the status screen, when there is one.
/// What the driver reports of its device (an RNode: the duty-cycle budget, its own air
/// time and the channel load), on one line.
fn device_line(o: &mut String, d: &std::collections::BTreeMap<String, f64>) {
    use std::fmt::Write as _;
    if d.is_empty() {
        return;
    }
    let mut parts = Vec::new();
    if let (Some(used), Some(left), Some(limit)) = (
        d.get("duty_cycle_used_s"),
        d.get("duty_cycle_remaining_s"),
        d.get("duty_cycle_limit_pct"),
    ) {
        parts.push(format!(
            "duty cycle {used:.1} s used, {left:.1} s left (limit {limit}% of {:.0} s)",
            d.get("duty_cycle_window_s").copied().unwrap_or(3600.0)
        ));
    }
    if let (Some(a), Some(l)) = (d.get("airtime_long_pct"), d.get("channel_load_long_pct")) {
        parts.push(format!("own air time {a:.2}%, channel load {l:.2}%"));
    }
    if let (Some(r), Some(n)) = (d.get("rssi_dbm"), d.get("noise_floor_dbm")) {
        parts.push(format!("rssi {r:.0} dBm, noise floor {n:.0} dBm"));
    }
    if parts.is_empty() {
        return;
    }
    let _ = writeln!(o, "       device: {}", parts.join("; "));
}

fn why_line(o: &mut String, reason: Option<&str>) {
    use std::fmt::Write as _;
    if let Some(r) = reason {
        let _ = writeln!(o, "       why: {}", printable(r));
    }
}

/// What keeps the node from syncing, each with what to do, worst first; empty when
/// nothing does.
pub fn diagnose(s: &skywave_daemon::status::Status) -> Vec<String> {
    let mut out = Vec::new();
    if s.links.is_empty() {
        out.push(
            "no links: give --listen udp://0.0.0.0:7474 or --peer udp://HOST:7474 (or links in a config file)".into(),
        );
    }
    for l in &s.links {
        let state = if l.up { l.state.as_str() } else { "down" };
        if !matches!(state, "" | "up") {
            out.push(format!(
                "link {} ({}): {}",
                l.id,
                l.name,
                l.reason.as_deref().unwrap_or(state)
            ));
        }
    }
    if s.peers.is_empty() && !s.links.is_empty() {
        out.push(
            "no peer has answered on any link: nothing can sync until one does (a listening node waits for others to dial it)".into(),
        );
    }
    for p in &s.peers {
        if p.state == "down" {
            out.push(format!(
                "peer {} is down: {}",
                &p.node[..p.node.len().min(16)],
                p.reason.as_deref().unwrap_or("not heard")
            ));
        }
    }
    for t in s.transfers.iter().filter(|t| t.reason.is_some()) {
        out.push(format!(
            "{} of {} {} peer {}: {}",
            t.direction,
            &t.id[..t.id.len().min(16)],
            if t.direction == "send" { "to" } else { "from" },
            &t.peer[..t.peer.len().min(16)],
            t.reason.as_deref().unwrap_or_default()
        ));
    }
    if let Some(t) = s.store.no_room_seconds {
        out.push(format!(
            "the store has had no room for {t:.0} s: received bundles are turned down; delete bundles (`skywave rm`), free disk space or raise --quota"
        ));
    }
    let d = &s.protocol.dropped;
    let count = |k: &str| d.get(k).copied().unwrap_or(0);
    if count("untrusted_peer") > 0 {
        out.push(format!(
            "{} handshakes were refused: those peers are not on a link's trust list (`skywave trust add KEY`)",
            count("untrusted_peer")
        ));
    }
    if count("wrong_identity") > 0 {
        out.push(format!(
            "{} greetings claimed another node's key than their link proved and were dropped",
            count("wrong_identity")
        ));
    }
    if count("bad_payload") > 0 {
        out.push(format!(
            "{} received payloads failed verification and were fetched again elsewhere",
            count("bad_payload")
        ));
    }
    out
}

/// A peer's path MTU for the status screens: `1252`, `1200?` while still searching, `-`
/// on links that do not discover one.
fn path_mtu(p: &skywave_daemon::status::PeerView) -> String {
    match (p.path_mtu, p.path_mtu_searching) {
        (Some(m), Some(true)) => format!("{m}?"),
        (Some(m), _) => m.to_string(),
        _ => "-".into(),
    }
}

pub fn status(dir: &Path, a: StatusArgs, json: bool) -> anyhow::Result<ExitCode> {
    let c = need(dir)?;
    if a.why {
        let s = c.status()?;
        let found = diagnose(&s);
        if json {
            println!("{}", serde_json::json!({ "problems": found }));
        } else if found.is_empty() {
            let synced = s.peers.iter().filter(|p| p.state == "synced").count();
            println!(
                "nothing keeps this node from syncing: {synced} of {} peer(s) in sync, {} transfer(s) under way",
                s.peers.len(),
                s.transfers.len()
            );
        } else {
            for f in &found {
                println!("- {}", printable(f));
            }
        }
        return Ok(if found.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    loop {
        let s = c.status()?;
        if json {
            println!("{}", serde_json::to_string_pretty(&s)?);
        } else {
            if a.watch && io::stdout().is_terminal() {
                print!("\x1b[2J\x1b[H");
            }
            print!("{}", render_status(&s));
        }
        if !a.watch {
            return Ok(ExitCode::SUCCESS);
        }
        io::stdout().flush()?;
        std::thread::sleep(Duration::from_secs(1));
    }
}

pub fn peers(dir: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let s = need(dir)?.status()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&s.peers)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<64}  {:<4}  {:<12}  {:<8}  {:<7}  {:>9}  {:>6}  {:>8}",
        "NODE", "LINK", "STATE", "IDENTITY", "TRUST", "RTT", "MTU", "RECON"
    );
    for p in &s.peers {
        println!(
            "{:<64}  {:<4}  {:<12}  {:<8}  {:<7}  {:>9}  {:>6}  {:>8}",
            printable(&p.node),
            p.link,
            printable(&p.state),
            printable(&p.identity),
            printable(p.trust.as_deref().unwrap_or("-")),
            p.rtt_ms.map_or("-".into(), |r| format!("{r:.1} ms")),
            path_mtu(p),
            bytes(p.recon_bytes)
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn events(dir: &Path, a: EventsArgs, json: bool) -> anyhow::Result<ExitCode> {
    let c = need(dir)?;
    // Read while the process has one thread (the local offset is unknowable after).
    let offset = time::UtcOffset::current_local_offset().unwrap_or(time::UtcOffset::UTC);
    let mut n = 0u64;
    let out = io::stdout();
    let followed = c.follow_events(a.since, |v| {
        let mut o = out.lock();
        let _ = if json {
            writeln!(o, "{v}")
        } else {
            writeln!(o, "{}", render_event(&v, offset))
        };
        let _ = o.flush();
        n += 1;
        a.count.is_none_or(|c| n < c)
    });
    if a.count.is_some_and(|c| n >= c) {
        return Ok(ExitCode::SUCCESS);
    }
    // The stream ends only when the daemon does: a script following it must know.
    let why = match followed {
        Ok(()) => "it closed the event stream".to_string(),
        Err(e) => format!("{e:#}"),
    };
    // A stopping daemon closes its streams first and exits within a few seconds (in-flight
    // requests get 3 s): wait for that before telling a stop from a closed stream.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let gone = loop {
        if Client::find(dir).is_none() {
            break true;
        }
        if std::time::Instant::now() >= deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    bail!(
        "the daemon at {} {} ({why}){}",
        c.base,
        if gone {
            "stopped"
        } else {
            "ended the event stream"
        },
        if gone {
            format!(
                "; start it again with `skywave daemon --dir {}`, then follow from the last id with `skywave events --since ID`",
                dir.display()
            )
        } else {
            "; follow on from the last id with `skywave events --since ID`".into()
        }
    )
}

/// One event as a line for people: local time, kind, what it is about (short ids,
/// names with their control characters escaped), and the peer.
fn render_event(v: &serde_json::Value, offset: time::UtcOffset) -> String {
    let d = &v["data"];
    let clock = v["at_ms"]
        .as_u64()
        .and_then(|ms| {
            time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()
        })
        .map_or_else(
            || "--:--:--".into(),
            |t| {
                let t = t.to_offset(offset);
                format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second())
            },
        );
    let s = |k: &str| d[k].as_str().unwrap_or("");
    let kind = v["kind"].as_str().unwrap_or("?");
    let what = match kind {
        "bundle" => {
            let name = match d["name"].as_str() {
                Some(n) => format!(" \"{}\"", printable(n)),
                None => String::new(),
            };
            let from = match (s("source"), s("from")) {
                ("peer", f) => format!("from {}", short(f, 8)),
                (src, _) if !src.is_empty() => format!("added ({})", printable(src)),
                _ => String::new(),
            };
            format!(
                "{} v{}{} {}{}  {}",
                short(s("id"), 8),
                d["version"],
                name,
                bytes(d["length"].as_u64().unwrap_or(0)),
                if d["journal"].as_bool() == Some(true) {
                    " journal"
                } else {
                    ""
                },
                from
            )
        }
        "delivered" => format!(
            "{} v{}  to {}",
            short(s("id"), 8),
            d["version"],
            short(s("to"), 8)
        ),
        "peer" => {
            let silent = d["silent_seconds"]
                .as_f64()
                .map_or_else(String::new, |t| format!(" (silent {t:.0} s)"));
            format!(
                "{} {} on link {}{silent}",
                short(s("node"), 8),
                printable(s("state")),
                d["link"]
            )
        }
        "reconciled" => format!(
            "{}  they lack {}, we lack {} ({} symbols)",
            short(s("node"), 8),
            d["they_lack"],
            d["we_lack"],
            d["symbols"]
        ),
        "link" => {
            let state = if d["up"].as_bool() == Some(true) {
                "up".to_string()
            } else {
                match d["reason"].as_str() {
                    Some(r) => format!("down: {}", printable(r)),
                    None => "down".into(),
                }
            };
            format!("{} {} {state}", d["link"], printable(s("name")))
        }
        // A kind this CLI does not know yet: its data, escaped.
        _ => printable(&d.to_string()).into_owned(),
    };
    format!("{clock}  {:<10}  {what}", printable(kind),)
}

/// `application/x-www-form-urlencoded`-style escaping for query values.
fn enc(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

fn open_input(file: &Path) -> anyhow::Result<Box<dyn Read>> {
    if file == Path::new("-") {
        return Ok(Box::new(io::stdin()));
    }
    Ok(Box::new(
        std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?,
    ))
}

fn print_remote(v: &serde_json::Value, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(v)?);
    } else {
        println!("{}", printable(v["id"].as_str().unwrap_or("")));
    }
    Ok(())
}

/// `--quota` on a verb that goes through the daemon: the daemon's own quota applies.
fn no_quota_through_daemon(quota: Option<u64>, c: &Client) -> anyhow::Result<()> {
    if quota.is_some() {
        bail!(
            "--quota applies to a store opened offline, and a daemon is running on it ({}): it keeps to its own quota (`skywave daemon --quota SIZE`); drop --quota, or stop the daemon",
            c.base
        );
    }
    Ok(())
}

pub fn add(c: &Client, a: AddArgs, json: bool) -> anyhow::Result<ExitCode> {
    no_quota_through_daemon(a.quota, c)?;
    let name = a.name.clone().or_else(|| {
        (a.file != Path::new("-"))
            .then(|| a.file.file_name().map(|n| n.to_string_lossy().into_owned()))
            .flatten()
    });
    let mut q = vec![format!("service={}", enc(&a.service))];
    if let Some(n) = name {
        q.push(format!("name={}", enc(&n)));
    }
    if let Some(r) = a.recipient {
        q.push(format!("recipient={r}"));
    }
    if let Some(r) = a.to {
        q.push(format!("to={r}"));
    }
    if a.sender {
        q.push("sign_sender=true".into());
    }
    if a.journal {
        q.push("journal=true".into());
    }
    for (k, v) in &a.fields {
        q.push(format!("field={}", enc(&format!("{k}={v}"))));
    }
    if let Some(r) = &a.replace {
        q.push(format!("replace={}", enc(r)));
    }
    if let Some(l) = a.expires {
        q.push(format!("lifetime={l}"));
    }
    if a.force {
        q.push("force=true".into());
    }
    if let Some(p) = a.priority {
        q.push(format!("priority={p}"));
    }
    let mut src = open_input(&a.file)?;
    let v = c
        .post_reader(&format!("/v1/bundles?{}", q.join("&")), &mut src)
        .with_context(|| format!("adding {} through the daemon", a.file.display()))?;
    if v["existing"].as_bool() == Some(true) {
        crate::store_cmd::warn_same(v["id"].as_str().unwrap_or(""), v["name"].as_str());
    }
    print_remote(&v, json)?;
    Ok(ExitCode::SUCCESS)
}

pub fn rm(c: &Client, a: IdArg, json: bool) -> anyhow::Result<ExitCode> {
    let v = c
        .delete_json(&format!("/v1/bundles/{}", enc(&a.id)))
        .with_context(|| format!("deleting {} through the daemon", a.id))?;
    print_remote(&v, json)?;
    Ok(ExitCode::SUCCESS)
}

pub fn append(c: &Client, a: AppendArgs, json: bool) -> anyhow::Result<ExitCode> {
    no_quota_through_daemon(a.quota, c)?;
    let mut src = open_input(&a.file)?;
    let v = c
        .post_reader(&format!("/v1/bundles/{}/append", enc(&a.id)), &mut src)
        .with_context(|| format!("appending {} through the daemon", a.file.display()))?;
    print_remote(&v, json)?;
    Ok(ExitCode::SUCCESS)
}

pub fn ls(c: &Client, dir: &Path, a: LsArgs, json: bool) -> anyhow::Result<ExitCode> {
    let mut q = Vec::new();
    if let Some(s) = &a.service {
        q.push(format!("service={}", enc(s)));
    }
    if let Some(r) = a.recipient {
        q.push(format!("recipient={r}"));
    }
    if let Some(s) = a.since {
        q.push(format!("since={s}"));
    }
    if a.all {
        q.push("deleted=true".into());
    }
    q.push(format!("limit={}", a.limit.unwrap_or(10_000)));
    let v: serde_json::Value = c.get_json(&format!("/v1/bundles?{}", q.join("&")))?;
    let list = v["bundles"].as_array().cloned().unwrap_or_default();
    if json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    let me = read_node_key(dir).ok().map(|k| k.identity());
    let views: Vec<crate::store_cmd::BundleView> = list
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<_, _>>()
        .context("the daemon's bundle list is not the expected JSON")?;
    print!("{}", crate::store_cmd::ls_table(&views, me.as_ref()));
    Ok(ExitCode::SUCCESS)
}

pub fn show(c: &Client, dir: &Path, a: IdArg, json: bool) -> anyhow::Result<ExitCode> {
    let v: serde_json::Value = c.get_json(&format!("/v1/bundles/{}", enc(&a.id)))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    let b: crate::store_cmd::BundleView =
        serde_json::from_value(v).context("the daemon's answer is not the expected JSON")?;
    let me = read_node_key(dir).ok().map(|k| k.identity());
    print!("{}", crate::store_cmd::show_text(&b, me.as_ref()));
    Ok(ExitCode::SUCCESS)
}

pub fn get(c: &Client, dir: &Path, a: GetArgs) -> anyhow::Result<ExitCode> {
    let v: serde_json::Value = c.get_json(&format!("/v1/bundles/{}", enc(&a.id)))?;
    let id: BundleId = v["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .context("the daemon's answer names no bundle id")?;
    if v["sealed"].is_null() {
        deliver(a.output.as_deref(), |w| {
            c.payload(&id.to_hex(), w)?;
            Ok(())
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    // Sealed: opened here with the node's key as it streams from the daemon, which
    // serves the payload as it holds it.
    let scheme = v["sealed"].as_u64().map_or(u8::MAX, |s| s.min(255) as u8);
    let recipient = v["recipient"].as_str().and_then(|r| r.parse().ok());
    let key = read_node_key(dir)
        .with_context(|| format!("reading this node's key to open sealed bundle {id}"))?;
    must_open(&id, Some(scheme), recipient, &key.identity())?;
    let to = format!("writing {}", destination(a.output.as_deref()));
    deliver(a.output.as_deref(), |w| {
        let mut w = OpenWriter::new(w, &key, &id);
        c.payload(&id.to_hex(), &mut w)?;
        w.finish().map_err(|e| copy_error(e, &to))?;
        Ok(())
    })
    .with_context(|| format!("reading bundle {id}"))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_escaped() {
        assert_eq!(enc("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
        assert_eq!(enc("plain-1.txt"), "plain-1.txt");
    }

    #[test]
    fn bars_are_bounded() {
        assert!(bar(0, 0, 10).starts_with("[##########]"));
        assert!(bar(5, 10, 10).starts_with("[#####.....]"));
        assert!(bar(20, 10, 10).starts_with("[##########]"));
    }
}
