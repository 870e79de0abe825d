//! Shared helpers for the commands: node directory, clock, progress, formatting.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line per event for people: time, level, message, fields.
    Text,
    /// One JSON object per line (timestamp, level, fields, target) for log collectors.
    Json,
}

/// Sets up logging: to standard error, or appended to `file`; colour only on a
/// terminal (never in a file or a pipe, where escape codes are noise).
pub fn init_tracing(level: &str, format: LogFormat, file: Option<&Path>) -> anyhow::Result<()> {
    use tracing_subscriber::fmt::writer::BoxMakeWriter;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let (writer, ansi) = match file {
        Some(p) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| {
                    format!(
                        "opening the log file {} (--log-file): check the directory exists and is writable",
                        p.display()
                    )
                })?;
            (BoxMakeWriter::new(std::sync::Mutex::new(f)), false)
        }
        None => (
            BoxMakeWriter::new(std::io::stderr),
            std::io::stderr().is_terminal(),
        ),
    };
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(ansi);
    // A second initialisation (tests) keeps the first.
    let _ = match format {
        LogFormat::Text => b.try_init(),
        LogFormat::Json => b.json().flatten_event(true).try_init(),
    };
    Ok(())
}

/// `--dir`, else `$SKYWAVE_HOME`, else the XDG data directory.
pub fn node_dir(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(d) = flag {
        return Ok(d.to_path_buf());
    }
    if let Some(d) = std::env::var_os("SKYWAVE_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(d).join("skywave"));
    }
    match std::env::var_os("HOME") {
        Some(h) => Ok(PathBuf::from(h).join(".local/share/skywave")),
        None => bail!("no node directory: pass --dir DIR or set SKYWAVE_HOME"),
    }
}

/// Unix seconds now.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Opens an existing node's store.
pub fn open_store(dir: &Path) -> anyhow::Result<skywave_store::Store> {
    open_store_with(dir, None)
}

/// Opens an existing node's store keeping to `quota` bytes (`--quota`), if given.
pub fn open_store_with(dir: &Path, quota: Option<u64>) -> anyhow::Result<skywave_store::Store> {
    if !dir.join("store.db").exists() {
        bail!(
            "no skywave node in {}; create one with `skywave init --dir {}`",
            dir.display(),
            dir.display()
        );
    }
    let cfg = skywave_store::StoreConfig {
        quota,
        ..Default::default()
    };
    skywave_store::Store::open(dir, cfg)
        .with_context(|| format!("opening the store in {}", dir.display()))
}

/// Human-readable byte count.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Wraps a reader and reports progress on stderr when it is a terminal.
#[derive(Debug)]
pub struct Progress<R> {
    inner: R,
    what: &'static str,
    total: Option<u64>,
    done: u64,
    last: Instant,
    started: Instant,
    show: bool,
}

impl<R: Read> Progress<R> {
    pub fn new(inner: R, what: &'static str, total: Option<u64>) -> Self {
        let now = Instant::now();
        Self {
            inner,
            what,
            total,
            done: 0,
            last: now,
            started: now,
            show: std::io::stderr().is_terminal(),
        }
    }

    fn report(&self, last: bool) {
        let rate = self.done as f64 / self.started.elapsed().as_secs_f64().max(1e-3);
        let total = self
            .total
            .map(|t| format!(" / {}", bytes(t)))
            .unwrap_or_default();
        eprint!(
            "\r{}: {}{} ({}/s)   ",
            self.what,
            bytes(self.done),
            total,
            bytes(rate as u64)
        );
        if last {
            eprintln!();
        }
    }
}

impl<R: Read> Read for Progress<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.done += n as u64;
        if self.show {
            if n == 0 && self.started.elapsed() > Duration::from_secs(1) {
                self.report(true);
            } else if self.last.elapsed() > Duration::from_millis(250) {
                self.last = Instant::now();
                self.report(false);
            }
        }
        Ok(n)
    }
}

/// 12345 -> "12,345".
pub fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `--store-dir` as given, made once up front when it does not exist yet (so a typo fails
/// one clear error here rather than every run of a sweep later).
pub fn store_dir_flag(flag: Option<&Path>) -> anyhow::Result<Option<&Path>> {
    if let Some(d) = flag {
        std::fs::create_dir_all(d).with_context(|| {
            format!(
                "creating --store-dir {}: give a directory that exists or can be made",
                d.display()
            )
        })?;
    }
    Ok(flag)
}

/// `--store-dir` (made when missing), else /dev/shm when a directory can be made there
/// (stores in RAM keep fsyncs off the disk), else `None`: the system's temporary directory.
pub fn ram_store_dir(flag: Option<&Path>) -> anyhow::Result<Option<PathBuf>> {
    if let Some(d) = store_dir_flag(flag)? {
        return Ok(Some(d.to_path_buf()));
    }
    let shm = Path::new("/dev/shm");
    let usable = shm.is_dir()
        && tempfile::Builder::new()
            .prefix("skywave-probe-")
            .tempdir_in(shm)
            .is_ok();
    Ok(usable.then(|| shm.to_path_buf()))
}
