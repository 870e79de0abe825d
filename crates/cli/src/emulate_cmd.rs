//! `skywave emulate`: run a link model on the real clock between real programs.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use skywave_emulate::{Options, StreamEmulator, Summary, TunConfig, TunEmulator, UdpEmulator};
use skywave_sim::LinkConfig;
use skywave_sim::config::parse_duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StreamMode {
    /// Accept side A on --listen, connect to side B at --forward.
    Tcp,
    /// Two pseudo-terminals; their paths are printed.
    Pty,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  skywave emulate --link rate=2Mbps,delay=50ms --listen 127.0.0.1:7000 --forward 127.0.0.1:7001
  skywave emulate --profile cellular --listen 127.0.0.1:7000 --forward 127.0.0.1:7001 --seed 3
  skywave emulate --profile hf-modem --stream tcp --listen 127.0.0.1:7000 --forward 127.0.0.1:7001
  skywave emulate --profile hf-modem --stream pty
  skywave emulate --profile lfn --tun          (root: netns skywave-a 10.201.0.1, skywave-b 10.201.0.2)")]
pub struct EmulateArgs {
    /// Link profile (hf-modem, uhf-csma, satellite, cellular, lfn, lan, formant-RTT-LOSS, ...).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,

    /// Link spec, e.g. rate=2Mbps,delay=50ms; with --profile its keys override the
    /// profile's. Also a name from --links.
    #[arg(long, value_name = "SPEC")]
    pub link: Option<String>,

    /// TOML file of [links.NAME] tables, for --link NAME.
    #[arg(long, value_name = "FILE")]
    pub links: Option<PathBuf>,

    /// UDP: where side A's program sends. TCP: where side A connects.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,

    /// Side B's address (UDP: datagrams go there and its replies come back to A; TCP:
    /// connected to when A connects).
    #[arg(long, value_name = "ADDR")]
    pub forward: Option<SocketAddr>,

    /// Carry a byte stream through a stream link (the HF modem) instead of datagrams.
    #[arg(long, value_enum, value_name = "MODE")]
    pub stream: Option<StreamMode>,

    /// Join two new network namespaces with TUN devices through the link (needs root).
    #[arg(long, conflicts_with_all = ["stream", "listen", "forward"])]
    pub tun: bool,

    /// TUN: names of the namespaces of side A and side B.
    #[arg(long, num_args = 2, value_names = ["A", "B"], default_values = ["skywave-a", "skywave-b"])]
    pub netns: Vec<String>,

    /// TUN: the /24 subnet; side A gets .1, side B .2.
    #[arg(long, value_name = "A.B.C.0", default_value = "10.201.0.0")]
    pub subnet: Ipv4Addr,

    /// Seed of the model's random draws (loss, jitter, backoff).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Stop after this long (e.g. 30s, 5min); default: until Ctrl-C.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// How often to log the counters at info level (--log info); 0 turns it off.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    pub stats_interval: Duration,
}

/// The link a user asked for: a profile, a spec, a TOML name, or a profile with
/// overrides.
fn resolve_link(a: &EmulateArgs) -> anyhow::Result<LinkConfig> {
    let custom = match &a.links {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading the link file {}", p.display()))?;
            LinkConfig::parse_toml(&text)?
        }
        None => BTreeMap::new(),
    };
    let cfg = match (&a.profile, &a.link) {
        (Some(p), None) => LinkConfig::profile(p)?,
        (None, Some(l)) => LinkConfig::lookup(l, &custom)?,
        (Some(p), Some(l)) if l.contains('=') => {
            LinkConfig::parse_spec(&format!("profile={p},{l}"))?
        }
        (Some(_), Some(l)) => bail!(
            "--link {l} names a whole link; give either --profile NAME or --link NAME, or \
             override a profile with --link KEY=VALUE,..."
        ),
        (None, None) => bail!(
            "no link given: pass --profile NAME (e.g. hf-modem, lfn) or --link SPEC (e.g. \
             rate=2Mbps,delay=50ms)"
        ),
    };
    Ok(cfg)
}

fn need(addr: Option<SocketAddr>, flag: &str, what: &str) -> anyhow::Result<SocketAddr> {
    addr.with_context(|| format!("{flag} ADDR is required: {what}"))
}

pub fn run(a: EmulateArgs, json: bool) -> anyhow::Result<ExitCode> {
    let link = resolve_link(&a)?;
    let opts = Options {
        seed: a.seed,
        stats_interval: (!a.stats_interval.is_zero()).then_some(a.stats_interval),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let summary = rt.block_on(emulate(a, link, opts, json))?;
    if json {
        println!("{}", serde_json::json!({ "summary": summary }));
    } else {
        println!("{summary}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Completes on Ctrl-C, SIGTERM or after `limit`.
async fn shutdown(limit: Option<Duration>) {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    let limit = async {
        match limit {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
        () = limit => {}
    }
}

/// Tells the user (or a script) where to connect: text, or one JSON line.
fn ready(json: bool, text: &str, value: serde_json::Value) {
    if json {
        println!("{}", serde_json::json!({ "ready": value }));
    } else {
        println!("{text}");
    }
}

async fn emulate(
    a: EmulateArgs,
    link: LinkConfig,
    opts: Options,
    json: bool,
) -> anyhow::Result<Summary> {
    let stop = shutdown(a.duration);
    let spec = link.to_spec();
    if a.tun {
        let o = a.subnet.octets();
        let cfg = TunConfig {
            netns: [a.netns[0].clone(), a.netns[1].clone()],
            addrs: [
                Ipv4Addr::new(o[0], o[1], o[2], 1),
                Ipv4Addr::new(o[0], o[1], o[2], 2),
            ],
            prefix_len: 24,
        };
        let emu = TunEmulator::create(&link, &opts, &cfg)?;
        ready(
            json,
            &format!(
                "link: {spec}\nside A: netns {} device {} address {}\nside B: netns {} device {} address {}\nrun programs with `ip netns exec {} CMD`; Ctrl-C stops and removes both namespaces",
                cfg.netns[0],
                skywave_emulate::TUN_DEVICE,
                cfg.addrs[0],
                cfg.netns[1],
                skywave_emulate::TUN_DEVICE,
                cfg.addrs[1],
                cfg.netns[0]
            ),
            serde_json::json!({
                "mode": "tun", "link": spec,
                "netns": cfg.netns, "addrs": cfg.addrs.map(|x| x.to_string()),
            }),
        );
        return Ok(emu.run(stop).await?);
    }
    match a.stream {
        None => {
            let listen = need(a.listen, "--listen", "where side A's program sends")?;
            let forward = need(a.forward, "--forward", "side B's address")?;
            let emu = UdpEmulator::bind(&link, &opts, listen, forward).await?;
            let local = emu.local_addr()?;
            ready(
                json,
                &format!(
                    "link: {spec}\nlistening on {local} (side A sends here), forwarding to {forward} (side B)\nCtrl-C stops and prints the counters"
                ),
                serde_json::json!({
                    "mode": "udp", "link": spec,
                    "listen": local.to_string(), "forward": forward.to_string(),
                }),
            );
            Ok(emu.run(stop).await?)
        }
        Some(StreamMode::Tcp) => {
            let listen = need(a.listen, "--listen", "where side A connects")?;
            let forward = need(a.forward, "--forward", "side B's TCP address")?;
            let emu = StreamEmulator::tcp(&link, &opts, listen, forward).await?;
            let local = emu.local_addr().unwrap_or(listen);
            ready(
                json,
                &format!(
                    "link: {spec}\nlistening on {local} (side A connects here), connecting to {forward} (side B)\nCtrl-C stops and prints the counters"
                ),
                serde_json::json!({
                    "mode": "tcp", "link": spec,
                    "listen": local.to_string(), "forward": forward.to_string(),
                }),
            );
            Ok(emu.run(stop).await?)
        }
        Some(StreamMode::Pty) => {
            if a.listen.is_some() || a.forward.is_some() {
                bail!(
                    "--stream pty takes no --listen or --forward: it prints the two serial ports to open"
                );
            }
            let emu = StreamEmulator::pty(&link, &opts)?;
            let paths = emu
                .pty_paths()
                .context("the pty emulator has no paths")?
                .clone();
            ready(
                json,
                &format!(
                    "link: {spec}\nside A: {}\nside B: {}\nCtrl-C stops and prints the counters",
                    paths.a.display(),
                    paths.b.display()
                ),
                serde_json::json!({
                    "mode": "pty", "link": spec,
                    "a": paths.a, "b": paths.b,
                }),
            );
            Ok(emu.run(stop).await?)
        }
    }
}
