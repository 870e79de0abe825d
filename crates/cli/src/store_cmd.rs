//! Offline verbs that work on the store directly.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use clap::Args;
use skywave_bundle::sealed::{OpenReader, SEALED_V1, plain_len};
use skywave_bundle::text::printable;
use skywave_bundle::{BundleId, Identity, SealError};
use skywave_store::{NewBundle, Query, Store, StoreConfig, StoredBundle};

use crate::util::{Progress, bytes, now_secs, open_store, open_store_with};

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The file to add ('-' for standard input).
    pub file: PathBuf,
    /// Service the bundle belongs to (e.g. file, message, telemetry, log).
    #[arg(long, default_value = "file")]
    pub service: String,
    /// Name shown to people; defaults to the file's name.
    #[arg(long)]
    pub name: Option<String>,
    /// Identity (64 hex digits) the bundle is addressed to; the payload stays in clear.
    #[arg(long)]
    pub recipient: Option<Identity>,
    /// Seal the payload to this node identity (64 hex digits) and address the bundle to
    /// it: relays carry and verify it, only that node can read it. Name and size stay
    /// in clear.
    #[arg(long, value_name = "IDENTITY", conflicts_with_all = ["recipient", "journal"])]
    pub to: Option<Identity>,
    /// Name this node as the sender in the manifest (costs 32 bytes on every link).
    #[arg(long)]
    pub sender: bool,
    /// Make it a journal: append-only, peers fetch only new tails.
    #[arg(long)]
    pub journal: bool,
    /// Extra key=value field (repeatable).
    #[arg(long = "field", value_name = "KEY=VALUE", value_parser = parse_field)]
    pub fields: Vec<(String, String)>,
    /// Store quota (e.g. 10GiB) to keep to, as `skywave daemon --quota` does: others'
    /// bundles are evicted to make room, and the bundle is refused if that is not
    /// enough. Offline only: a running daemon keeps to its own.
    #[arg(long, value_name = "SIZE", value_parser = parse_quota)]
    pub quota: Option<u64>,
}

fn parse_quota(s: &str) -> Result<u64, String> {
    skywave_daemon::config::parse_size(s)
}

fn parse_field(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("{s:?} is not KEY=VALUE"))
}

#[derive(Debug, Args)]
pub struct AppendArgs {
    /// The journal's bundle id (or a unique prefix of at least 4 hex digits).
    pub id: String,
    /// The file whose bytes to append ('-' for standard input).
    pub file: PathBuf,
    /// Store quota to keep to, as for `add`.
    #[arg(long, value_name = "SIZE", value_parser = parse_quota)]
    pub quota: Option<u64>,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    #[arg(long)]
    pub service: Option<String>,
    #[arg(long)]
    pub recipient: Option<Identity>,
    /// Only bundles inserted after this token (see `--json` output).
    #[arg(long)]
    pub since: Option<u64>,
    #[arg(long)]
    pub limit: Option<u64>,
}

#[derive(Debug, Args)]
pub struct IdArg {
    /// Bundle id (or a unique prefix of at least 4 hex digits).
    pub id: String,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// Bundle id (or a unique prefix of at least 4 hex digits).
    pub id: String,
    /// Output file (default: standard output).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

fn input(path: &Path) -> anyhow::Result<(Box<dyn Read>, Option<u64>)> {
    if path == Path::new("-") {
        return Ok((Box::new(io::stdin().lock()), None));
    }
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let len = f.metadata().ok().map(|m| m.len());
    Ok((Box::new(io::BufReader::with_capacity(1 << 20, f)), len))
}

fn resolve(store: &Store, id: &str) -> anyhow::Result<BundleId> {
    match store.resolve_prefix(id)? {
        Some(id) => Ok(id),
        None => bail!("{}", Store::unresolved(id)),
    }
}

fn print_bundle(b: &StoredBundle, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(&bundle_json(b)?)?);
    } else {
        println!("{}", b.manifest.id());
    }
    Ok(())
}

pub fn init(dir: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let existed = dir.join("store.db").exists();
    let store = Store::open(dir, StoreConfig::default())
        .with_context(|| format!("creating a node in {}", dir.display()))?;
    let id = store.node_key().identity();
    if json {
        println!(
            "{}",
            serde_json::json!({ "dir": dir, "node": id, "created": !existed })
        );
    } else if existed {
        println!("node {id} already exists in {}", dir.display());
    } else {
        println!("created node {id} in {}", dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

pub fn add(dir: &Path, a: AddArgs, json: bool) -> anyhow::Result<ExitCode> {
    let mut store = open_store_with(dir, a.quota)?;
    let (src, len) = input(&a.file)?;
    let name = a.name.or_else(|| {
        (a.file != Path::new("-"))
            .then(|| a.file.file_name().map(|n| n.to_string_lossy().into_owned()))
            .flatten()
    });
    let opts = NewBundle {
        service: Some(a.service),
        name,
        recipient: a.to.or(a.recipient),
        seal: a.to.is_some(),
        sign_sender: a.sender,
        fields: a.fields.into_iter().collect::<BTreeMap<_, _>>(),
        journal: a.journal,
        date: now_secs(),
    };
    let b = store
        .create(Progress::new(src, "adding", len), &opts)
        .with_context(|| format!("adding {}", a.file.display()))?;
    print_bundle(&b, json)?;
    Ok(ExitCode::SUCCESS)
}

pub fn append(dir: &Path, a: AppendArgs, json: bool) -> anyhow::Result<ExitCode> {
    let mut store = open_store_with(dir, a.quota)?;
    let id = resolve(&store, &a.id)?;
    let (src, len) = input(&a.file)?;
    let b = store
        .append(&id, Progress::new(src, "appending", len), now_secs())
        .with_context(|| format!("appending {} to {id}", a.file.display()))?;
    print_bundle(&b, json)?;
    Ok(ExitCode::SUCCESS)
}

pub fn ls(dir: &Path, a: LsArgs, json: bool) -> anyhow::Result<ExitCode> {
    let store = open_store(dir)?;
    let q = Query {
        service: a.service,
        recipient: a.recipient,
        since: a.since,
        limit: a.limit,
    };
    let list = store.list(&q)?;
    let out = io::stdout();
    let mut out = BufWriter::new(out.lock());
    if json {
        let v: Vec<_> = list
            .iter()
            .map(|b| {
                let mut v = serde_json::to_value(b.manifest.to_json()).unwrap_or_default();
                v["token"] = b.token.into();
                v["own"] = b.own.into();
                v
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<16}  {:>8}  {:>10}  {:<10}  {:<20}  NAME",
        "ID", "VERSION", "SIZE", "SERVICE", "DATE"
    )?;
    let me = store.node_key().identity();
    for b in &list {
        let m = b.manifest.manifest();
        let j = b.manifest.to_json();
        writeln!(
            out,
            "{:<16}  {:>8}  {:>10}  {:<10}  {:<20}  {}{}{}",
            &m.id.to_hex()[..16],
            m.version,
            bytes(m.length),
            printable(m.service.as_deref().unwrap_or("-")),
            j.date_utc,
            printable(m.name.as_deref().unwrap_or("")),
            if m.journal { " (journal)" } else { "" },
            sealed_mark(m.sealed.is_some(), m.recipient, Some(&me)),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn show(dir: &Path, a: IdArg, json: bool) -> anyhow::Result<ExitCode> {
    let store = open_store(dir)?;
    let id = resolve(&store, &a.id)?;
    let Some(b) = store.get(&id)? else {
        bail!("no bundle {id} in this store")
    };
    if json {
        print_bundle(&b, true)?;
        return Ok(ExitCode::SUCCESS);
    }
    let v = bundle_json(&b)?;
    print!("{}", render_show(&v, Some(&store.node_key().identity())));
    Ok(ExitCode::SUCCESS)
}

/// A bundle as `show --json` prints it and the daemon serves it: the manifest's JSON
/// view with the store's `token` and `own`.
fn bundle_json(b: &StoredBundle) -> anyhow::Result<serde_json::Value> {
    let mut v = serde_json::to_value(b.manifest.to_json())?;
    v["token"] = b.token.into();
    v["own"] = b.own.into();
    Ok(v)
}

/// `show`'s text: the same from the store and through the daemon (both render the
/// bundle's JSON), dates in UTC, sizes with units, text a peer wrote escaped. `me`:
/// this node's identity, to say whether a sealed payload is ours to read.
pub(crate) fn render_show(v: &serde_json::Value, me: Option<&Identity>) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let text = |k: &str| v[k].as_str().map(printable);
    let mut line = |k: &str, val: &str| {
        let _ = writeln!(o, "{:<10} {val}", format!("{k}:"));
    };
    line("id", &text("id").unwrap_or_default());
    line("version", &v["version"].to_string());
    let len = v["length"].as_u64().unwrap_or(0);
    line("length", &format!("{len} ({})", bytes(len)));
    line("hash", &text("hash").unwrap_or_default());
    line("date", &text("date_utc").unwrap_or_default());
    line("journal", &v["journal"].to_string());
    for k in ["service", "name", "sender", "recipient"] {
        if let Some(t) = text(k) {
            line(k, &t);
        }
    }
    if let Some(scheme) = v["sealed"].as_u64() {
        let recipient = v["recipient"]
            .as_str()
            .and_then(|r| r.parse::<Identity>().ok());
        let whose = if recipient.is_some() && recipient.as_ref() == me {
            "this node can read it"
        } else {
            "carried sealed: only the recipient can read it"
        };
        match v["plain_length"].as_u64() {
            Some(n) => line(
                "sealed",
                &format!("to the recipient, {n} bytes inside ({whose})"),
            ),
            None => line(
                "sealed",
                &format!("with scheme {scheme}, unknown to this version"),
            ),
        }
    }
    if let Some(fields) = v["fields"].as_object() {
        for (k, val) in fields {
            let val = val.as_str().unwrap_or_default();
            line("field", &format!("{}={}", printable(k), printable(val)));
        }
    }
    if let Some(ext) = v["unknown_extensions"].as_array() {
        let ext: Vec<String> = ext.iter().map(ToString::to_string).collect();
        line(
            "unknown",
            &format!("extensions {} (kept and relayed)", ext.join(", ")),
        );
    }
    line("manifest", &format!("{} bytes signed", v["manifest_bytes"]));
    line(
        "token",
        &format!(
            "{}{}",
            v["token"],
            if v["own"].as_bool() == Some(true) {
                " (authored here)"
            } else {
                ""
            }
        ),
    );
    o
}

/// The marker `ls` puts after a bundle's name when its payload is sealed.
pub(crate) fn sealed_mark(
    sealed: bool,
    recipient: Option<Identity>,
    me: Option<&Identity>,
) -> String {
    match recipient.filter(|_| sealed) {
        None => String::new(),
        Some(r) if Some(&r) == me => " (sealed to this node)".into(),
        Some(r) => format!(" (sealed to {})", &r.to_hex()[..16]),
    }
}

/// Whether a payload must be opened before it is handed out: false for a payload in
/// clear, true for one sealed to `me`, and an error naming the recipient for one that
/// this node only carries, so sealed bytes are never given out as the content.
pub(crate) fn must_open(
    id: &BundleId,
    sealed: Option<u8>,
    recipient: Option<Identity>,
    me: &Identity,
) -> anyhow::Result<bool> {
    let Some(scheme) = sealed else {
        return Ok(false);
    };
    if scheme != SEALED_V1 {
        bail!("bundle {id}: {}", SealError::UnknownScheme(scheme));
    }
    match recipient {
        Some(r) if r == *me => Ok(true),
        Some(r) => bail!(
            "bundle {id} is sealed to node {r}; this node ({me}) carries it but cannot read it"
        ),
        // Manifest validation refuses a sealed bundle without a recipient.
        None => bail!("bundle {id} is sealed but names no recipient"),
    }
}

/// An error from handing a payload out: a sealing error says what is wrong with the
/// payload, anything else gets `doing` as context.
pub(crate) fn copy_error(e: io::Error, doing: &str) -> anyhow::Error {
    match SealError::from_io(&e) {
        Some(s) => anyhow!("{s}"),
        None => anyhow::Error::new(e).context(doing.to_owned()),
    }
}

/// Where `get` writes, for messages.
pub(crate) fn destination(output: Option<&Path>) -> String {
    output.map_or("standard output".into(), |p| p.display().to_string())
}

/// Runs `copy` into `output` (a temporary file beside it, renamed once complete and
/// removed on failure) or into standard output.
pub(crate) fn deliver(
    output: Option<&Path>,
    copy: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let Some(path) = output else {
        let out = io::stdout();
        let mut out = out.lock();
        return match copy(&mut out) {
            Err(e)
                if e.downcast_ref::<io::Error>()
                    .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe) =>
            {
                Ok(())
            }
            r => r,
        };
    };
    let tmp = path.with_extension("skywave-part");
    let res = (|| {
        let mut f = BufWriter::with_capacity(
            1 << 20,
            File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?,
        );
        copy(&mut f)?;
        f.into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

pub fn get(dir: &Path, a: GetArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(dir)?;
    let id = resolve(&store, &a.id)?;
    let Some(b) = store.get(&id)? else {
        bail!("no bundle {id} in this store")
    };
    let m = b.manifest.manifest();
    let node = store.node_key();
    let payload = store.open_payload(&id)?;
    let (src, len): (Box<dyn Read>, u64) =
        if must_open(&id, m.sealed, m.recipient, &node.identity())? {
            let r = OpenReader::new(payload, node, &id)
                .map_err(|e| copy_error(e, "reading the payload"))
                .with_context(|| format!("reading bundle {id}"))?;
            (Box::new(r), plain_len(m.length).unwrap_or(m.length))
        } else {
            (Box::new(payload), m.length)
        };
    let mut src = Progress::new(src, "reading", Some(len));
    let to = format!("writing {}", destination(a.output.as_deref()));
    deliver(a.output.as_deref(), |w| {
        io::copy(&mut src, w).map_err(|e| copy_error(e, &to))?;
        Ok(())
    })
    .with_context(|| format!("reading bundle {id}"))?;
    Ok(ExitCode::SUCCESS)
}

pub fn fsck(dir: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let mut store = open_store(dir)?;
    let r = store.fsck()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!("checked {} bundles", r.bundles_checked);
        for (id, why) in &r.quarantined {
            println!("quarantined {id}: {}", printable(why));
        }
        println!(
            "removed {} orphan files; reset {} transfers",
            r.orphans_removed, r.partials_reset
        );
        println!(
            "{}",
            if r.is_clean() {
                "store is clean"
            } else {
                "damage found and quarantined"
            }
        );
    }
    Ok(if r.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
