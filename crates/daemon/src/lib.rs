//! The skywave daemon: drives the protocol core over real links (UDP, TCP, serial,
//! RFD900 radios, HF modems, emulated links) and serves the HTTP API.
//!
//! [`run`] is the whole daemon; [`client`] is how the CLI finds and talks to a running
//! one. docs/daemon.md describes both.

mod access;
pub mod client;
pub mod config;
mod core;
pub mod events;
pub mod fuzzing;
mod http;
mod ip;
mod known_peers;
mod limits;
mod liveness;
mod metrics;
mod resolve;
mod serve;
pub mod status;
pub mod trust;
mod webui;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use skywave_node::StoreAdapter;
use skywave_proto::{Config, Endpoint};
use skywave_store::{Store, StoreConfig};
use tokio::sync::mpsc;

pub use config::{DaemonConfig, LinkConfig};

use crate::core::{Core, Shared};

/// The file in the node directory that names the running daemon.
pub const RUNTIME_FILE: &str = "daemon.json";
/// The file holding the HTTP API token.
pub const TOKEN_FILE: &str = "http-token";

/// What a running daemon writes to [`RUNTIME_FILE`].
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RuntimeInfo {
    pub pid: u32,
    /// The HTTP API's address as bound (a configured port 0 is resolved).
    pub http: SocketAddr,
    pub node: String,
    /// Local addresses of IP links, as bound.
    pub udp: Vec<SocketAddr>,
    pub tcp: Vec<SocketAddr>,
}

/// Reads the token, creating it (random, owner-only) if missing. A token file others
/// may read (group or world bits set) is made owner-only again, with a warning.
pub fn ensure_token(dir: &Path) -> anyhow::Result<String> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(TOKEN_FILE);
    if let Ok(meta) = std::fs::metadata(&path)
        && meta.permissions().mode() & 0o077 != 0
    {
        let was = meta.permissions().mode() & 0o777;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("making {} owner-only (it is {was:04o})", path.display()))?;
        tracing::warn!(
            "{} was mode {was:04o}, readable by others; it is now 0600 (anyone who read it holds the token: delete the file and restart to make a new one)",
            path.display()
        );
    }
    if let Ok(t) = std::fs::read_to_string(&path) {
        let t = t.trim().to_string();
        if t.len() >= 32 {
            return Ok(t);
        }
    }
    let mut raw = [0u8; 24];
    getrandom::fill(&mut raw).map_err(|e| anyhow::anyhow!("no randomness for the token: {e}"))?;
    let t = hex::encode(raw);
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    std::io::Write::write_all(&mut f, t.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(t)
}

/// Runs the daemon for node directory `dir` until `shutdown` resolves (or the process is
/// signalled). Link or port failures at start are errors naming what failed.
pub async fn run(
    dir: PathBuf,
    cfg: DaemonConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    cfg.validate()?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let store = Store::open(
        &dir,
        StoreConfig {
            quota: cfg.quota,
            ..StoreConfig::default()
        },
    )
    .with_context(|| format!("opening the store in {}", dir.display()))?;
    remove_stale_uploads(&dir);
    let node = store.node_key().public();
    let store_secret = store.node_key().clone();
    let token = ensure_token(&dir)?;
    let http_addr: SocketAddr = cfg
        .http
        .unwrap_or_else(|| config::DEFAULT_HTTP.parse().expect("valid default"));
    let listener = tokio::net::TcpListener::bind(http_addr)
        .await
        .with_context(|| {
            format!("binding the HTTP API to {http_addr} (another daemon? choose one with --http)")
        })?;
    let http_local = listener.local_addr()?;
    for w in &cfg.warnings {
        tracing::warn!("{w}");
    }
    let access = access::Access::new(token, http_local, cfg.open_reads, &cfg.http_hosts);
    if cfg.open_reads && !access.open_reads() {
        tracing::warn!(
            "open_reads is ignored: the HTTP API is bound to {http_local}, not a loopback address, and reads need the token"
        );
    }

    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (in_tx, in_rx) = mpsc::channel(1024);
    let shared = Arc::new(Shared::new(
        StoreAdapter::new(store),
        events::EventLog::new(Some(dir.join("events.mark"))),
        cmd_tx,
        node,
        access,
        stop_rx,
        limits::Limits::new(cfg.limits.clone()),
    ));
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    let ep = Endpoint::new(Config::default(), node, u64::from_le_bytes(nonce));
    let mut core = Core::new(ep, shared.clone(), in_tx, store_secret, dir.clone());
    for a in cfg.amateur_links() {
        let call = a.callsign.as_deref().unwrap_or("?");
        if let Some(how) = a.identifies {
            tracing::info!(link = a.index + 1, callsign = call, "amateur link: {how}");
        } else {
            tracing::warn!(
                link = a.index + 1,
                callsign = call,
                "amateur link: its frames carry no station address; identify the station by the radio's or modem's own means (e.g. an HF modem's self id, a CW identifier) at least every 10 minutes"
            );
        }
    }
    // Amateur rules forbid encryption on the air: sealed bundles stay off those links.
    let amateur: std::collections::HashSet<usize> =
        cfg.amateur_links().iter().map(|a| a.index).collect();
    let (mut udp, mut tcp) = (Vec::new(), Vec::new());
    let mut driver_links = 0;
    // `kiss` links naming the same TNC share one connection to it: started together.
    let (kiss_at, kiss): (Vec<usize>, Vec<skywave_links::KissConfig>) = cfg
        .links
        .iter()
        .enumerate()
        .filter_map(|(i, l)| match l {
            LinkConfig::Driver(skywave_links::DriverConfig::Kiss(k)) => Some((i, k.clone())),
            _ => None,
        })
        .unzip();
    let mut kiss: std::collections::HashMap<usize, skywave_links::LinkHandle> = kiss_at
        .into_iter()
        .zip(skywave_links::kiss::spawn_shared(kiss).context("starting the kiss links")?)
        .collect();
    for (i, l) in cfg.links.into_iter().enumerate() {
        let amateur = amateur.contains(&i);
        match l {
            LinkConfig::Udp(u) => udp.push(core.add_udp(u, amateur).await?),
            LinkConfig::Tcp(t) => {
                if let Some(a) = core.add_tcp(t, amateur).await? {
                    tcp.push(a);
                }
            }
            LinkConfig::Driver(mut d) => {
                // Shared radios: the daemon takes turns on the channel unless the link
                // says `channel_access = "radio"`, and then keeps one frame in the radio.
                let take_turns = !cfg.radio_access.contains(&i);
                if take_turns {
                    match &mut d {
                        skywave_links::DriverConfig::Rfd900(r) => {
                            r.queue_frames.get_or_insert(1);
                        }
                        skywave_links::DriverConfig::Emulated(e) => {
                            e.queue_frames.get_or_insert(1);
                        }
                        _ => {}
                    }
                }
                let kind = LinkConfig::Driver(d.clone()).kind();
                let tag = match cfg.network_tags.get(&i) {
                    None => None,
                    Some(t) => {
                        let key = trust::read_network_key(&t.key_file)
                            .with_context(|| format!("the network key of the {kind} link"))?;
                        let tag = skywave_node::netkey::FrameTag::new(&key, t.tag_bytes)
                            .map_err(anyhow::Error::msg)?;
                        tracing::info!(tag_bytes = t.tag_bytes, file = %t.key_file.display(), "{kind} link: frames carry a network-key tag");
                        Some(tag)
                    }
                };
                let h = match kiss.remove(&i) {
                    Some(h) => h,
                    None => d
                        .spawn()
                        .with_context(|| format!("starting a {kind} link"))?,
                };
                tracing::info!(device = %h.name, channel_access = if take_turns { "driver" } else { "radio" }, "{kind} link: starting");
                core.add_driver(kind, h, take_turns, amateur, tag);
                driver_links += 1;
            }
        }
    }
    let info = RuntimeInfo {
        pid: std::process::id(),
        http: http_local,
        node: hex::encode(node),
        udp,
        tcp,
    };
    let runtime = dir.join(RUNTIME_FILE);
    std::fs::write(&runtime, serde_json::to_vec_pretty(&info)?)
        .with_context(|| format!("writing {}", runtime.display()))?;
    // The line a person looks for first: who this node is and where to reach it (each
    // link logged its own line above).
    tracing::info!(
        node = %info.node,
        api = %format!("http://{http_local}"),
        dir = %dir.display(),
        links = info.udp.len() + info.tcp.len() + driver_links,
        "daemon started"
    );
    tracing::info!(
        "web UI at http://{http_local}/ (it asks for the token in {})",
        dir.join(TOKEN_FILE).display()
    );
    // The core runs on a thread of its own, not on one of the runtime's two workers:
    // while a large sync comes in its wakes take a hundred milliseconds or more, and a
    // task it woke on its worker (an API call it answered) waited for the next one.
    let handle = tokio::runtime::Handle::current();
    let (stop_core, core_stop) = tokio::sync::watch::channel(false);
    let core_thread = std::thread::Builder::new()
        .name("skywave-core".into())
        .spawn(move || handle.block_on(core.run(in_rx, cmd_rx, core_stop)))
        .context("starting the daemon's core thread")?;
    let app = http::router(shared.clone());
    let mut stopped = stop_tx.subscribe();
    let server = serve::serve(listener, app, shared.limits.clone(), stop_tx.subscribe());
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    // In-flight requests get a moment to finish; a stuck client does not hold us up.
    tokio::select! {
        () = server => {}
        _ = async {
            let _ = stopped.wait_for(|s| *s).await;
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        } => {}
    }
    // The core ends at its next wake (it watches `stop_core`).
    let _ = stop_core.send(true);
    let joined = tokio::task::spawn_blocking(move || core_thread.join()).await;
    if !matches!(joined, Ok(Ok(()))) {
        tracing::error!("the daemon's core panicked");
    }
    if let Err(e) = shared.store().store.checkpoint() {
        tracing::warn!("checkpointing partial transfers at shutdown: {e}");
    }
    let _ = std::fs::remove_file(&runtime);
    tracing::info!("daemon stopped");
    Ok(())
}

/// Uploads interrupted by a crash leave spool files behind; they are never a bundle.
fn remove_stale_uploads(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(".upload-") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}
