//! Offline verbs that work on the store directly.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use clap::Args;
use skywave_bundle::sealed::{OpenReader, plain_len};
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
    /// Publish the file as a new version of this bundle (id or prefix; authored here):
    /// every node replaces the old version.
    #[arg(long, value_name = "ID", conflicts_with = "journal")]
    pub replace: Option<String>,
    /// Drop the bundle on every node after this long (e.g. 90m, 12h, 7d).
    #[arg(long, value_name = "LIFETIME", value_parser = skywave_daemon::config::parse_lifetime)]
    pub expires: Option<u64>,
    /// Add even when a bundle authored here has the same name and content.
    #[arg(long)]
    pub force: bool,
    /// How soon it goes out ahead of others: bulk, normal or high (default: high for
    /// the message service, bulk for log, else normal).
    #[arg(long, value_name = "PRIORITY")]
    pub priority: Option<skywave_bundle::Priority>,
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
    /// Tombstones of deleted bundles too (marked "deleted").
    #[arg(long)]
    pub all: bool,
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

fn bundle_json(b: &StoredBundle) -> anyhow::Result<serde_json::Value> {
    let mut v = serde_json::to_value(b.manifest.to_json())?;
    v["token"] = b.token.into();
    v["own"] = b.own.into();
    Ok(v)
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
    let date = now_secs();
    let opts = NewBundle {
        service: Some(a.service),
        name,
        recipient: a.to.or(a.recipient),
        seal: a.to.is_some(),
        sign_sender: a.sender,
        fields: a.fields.into_iter().collect::<BTreeMap<_, _>>(),
        journal: a.journal,
        date,
        expires: a.expires.map(|l| date.saturating_add(l)),
        priority: a.priority,
    };
    if let Some(r) = &a.replace {
        let id = resolve(&store, r)?;
        let b = store
            .replace(&id, Progress::new(src, "adding", len), &opts)
            .with_context(|| format!("publishing {} as a new version of {id}", a.file.display()))?;
        print_bundle(&b, json)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !a.force
        && !opts.seal
        && !opts.journal
        && let Some(b) = same_as_held(&store, &a.file, opts.name.as_deref(), len)?
    {
        warn_same(&b.manifest.id().to_hex(), opts.name.as_deref());
        print_bundle(&b, json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let b = store
        .create(Progress::new(src, "adding", len), &opts)
        .with_context(|| format!("adding {}", a.file.display()))?;
    print_bundle(&b, json)?;
    Ok(ExitCode::SUCCESS)
}

/// A bundle authored here with this name and the file's content. The file is hashed
/// only when one with its name and length exists.
fn same_as_held(
    store: &Store,
    file: &Path,
    name: Option<&str>,
    len: Option<u64>,
) -> anyhow::Result<Option<StoredBundle>> {
    let Some(len) = len.filter(|_| file != Path::new("-")) else {
        return Ok(None);
    };
    store
        .find_own(
            name,
            len,
            || Ok(skywave_store::HashedFile::hash(file)?.hash),
        )
        .with_context(|| format!("comparing {} with the bundles held", file.display()))
}

/// Adding what is already held: say so, and name the bundle that holds it.
pub fn warn_same(id: &str, name: Option<&str>) {
    eprintln!(
        "warning: {} is already held as bundle {id} with the same content; not added again (--force adds a second bundle, --replace ID publishes a new version)",
        printable(name.unwrap_or("this file"))
    );
}

/// Deletes a bundle authored here: a signed tombstone replaces it on every node.
pub fn rm(dir: &Path, a: IdArg, json: bool) -> anyhow::Result<ExitCode> {
    let mut store = open_store(dir)?;
    let id = resolve(&store, &a.id)?;
    let b = store
        .delete(&id, now_secs())
        .with_context(|| format!("deleting {id}"))?;
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
        include_deleted: a.all,
    };
    let list = store.list(&q)?;
    let out = io::stdout();
    let mut out = BufWriter::new(out.lock());
    if json {
        let v = list
            .iter()
            .map(bundle_json)
            .collect::<anyhow::Result<Vec<_>>>()?;
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let me = store.node_key().identity();
    let views: Vec<BundleView> = list.iter().map(BundleView::of).collect();
    write!(out, "{}", ls_table(&views, Some(&me)))?;
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
    print!(
        "{}",
        show_text(&BundleView::of(&b), Some(&store.node_key().identity()))
    );
    Ok(ExitCode::SUCCESS)
}

/// A bundle as `ls` and `show` present it, from the store or from the daemon's API
/// (the same JSON), so both print the same.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct BundleView {
    #[serde(flatten)]
    pub m: skywave_bundle::ManifestJson,
    #[serde(default)]
    pub token: u64,
    #[serde(default)]
    pub own: bool,
}

impl BundleView {
    pub fn of(b: &StoredBundle) -> BundleView {
        BundleView {
            m: b.manifest.to_json(),
            token: b.token,
            own: b.own,
        }
    }
}

/// The `ls` table: a header and a row per bundle, columns as wide as their widest cell.
pub(crate) fn ls_table(list: &[BundleView], me: Option<&Identity>) -> String {
    let rows: Vec<[String; 6]> = list
        .iter()
        .map(|b| {
            let m = &b.m;
            let mark = if m.deleted {
                " (deleted)"
            } else if m.journal {
                " (journal)"
            } else {
                ""
            };
            [
                m.id.to_hex()[..16].to_string(),
                m.version.to_string(),
                bytes(m.length),
                printable(m.service.as_deref().unwrap_or("-")).into_owned(),
                m.date_utc.clone(),
                format!(
                    "{}{mark}{}",
                    printable(m.name.as_deref().unwrap_or("")),
                    sealed_mark(m.sealed.is_some(), m.recipient, me)
                ),
            ]
        })
        .collect();
    let head = ["ID", "VERSION", "SIZE", "SERVICE", "DATE", "NAME"];
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([head[i].len()])
            .max()
            .unwrap_or(0)
    };
    let w: Vec<usize> = (0..5).map(width).collect();
    let mut o = String::new();
    for r in std::iter::once(head.map(String::from)).chain(rows) {
        use std::fmt::Write as _;
        let _ = writeln!(
            o,
            "{:<w0$}  {:>w1$}  {:>w2$}  {:<w3$}  {:<w4$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3],
            w4 = w[4]
        );
    }
    o
}

/// `show`'s text: one aligned `key: value` line per field.
pub(crate) fn show_text(b: &BundleView, me: Option<&Identity>) -> String {
    use std::fmt::Write as _;
    let j = &b.m;
    let mut o = String::new();
    let mut line = |k: &str, v: &str| {
        let _ = writeln!(o, "{:<10} {v}", format!("{k}:"));
    };
    line("id", &j.id.to_hex());
    line("version", &j.version.to_string());
    line("length", &format!("{} ({})", j.length, bytes(j.length)));
    line("hash", &j.hash);
    line("date", &j.date_utc);
    line("journal", &j.journal.to_string());
    if j.deleted {
        line(
            "deleted",
            "yes (a tombstone: the author deleted this bundle)",
        );
    }
    if let Some(e) = &j.expires_utc {
        line("expires", e);
    }
    line("priority", &j.priority.to_string());
    if let Some(v) = &j.service {
        line("service", &printable(v));
    }
    if let Some(v) = &j.name {
        line("name", &printable(v));
    }
    if let Some(s) = j.sender {
        line("sender", &s.to_hex());
    }
    if let Some(r) = j.recipient {
        line("recipient", &r.to_hex());
    }
    if let Some(scheme) = j.sealed {
        let whose = if j.recipient.as_ref() == me {
            "this node can read it"
        } else {
            "carried sealed: only the recipient can read it"
        };
        match j.plain_length {
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
    for (k, v) in &j.fields {
        line("field", &format!("{}={}", printable(k), printable(v)));
    }
    line("manifest", &format!("{} bytes signed", j.manifest_bytes));
    line(
        "token",
        &format!("{}{}", b.token, if b.own { " (authored here)" } else { "" }),
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

/// [`skywave_bundle::sealed::must_open`], its error naming the bundle.
pub(crate) fn must_open(
    id: &BundleId,
    sealed: Option<u8>,
    recipient: Option<Identity>,
    me: &Identity,
) -> anyhow::Result<bool> {
    skywave_bundle::sealed::must_open(sealed, recipient, me)
        .map_err(|e| anyhow!("{}", skywave_bundle::sealed::refusal(id, &e)))
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
