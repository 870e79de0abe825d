//! The skywave bundle store.
//!
//! Manifests, indexes and partial-transfer state live in SQLite (WAL mode); payloads up
//! to [`StoreConfig::inline_max`] bytes live in their row, larger ones in files named by
//! their hash under `payloads/`, journals in files under `journals/` that only ever grow.
//!
//! Durability rule: payload bytes are written and fsynced before the row that makes them
//! visible is committed, so a crash at any instant leaves the old state or the new one.
//! Files a crash leaves behind without a row are invisible and `fsck` removes them.
//! On-disk layout and policies: `docs/store.md`.

mod batch;
mod error;
mod fsck;
pub mod fuzzing;
pub mod io;
mod keys;
mod partial;
mod schema;

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, params};
use skywave_bundle::sealed::{SEALED_V1, SealReader};
use skywave_bundle::{
    BundleId, Identity, JournalState, Manifest, ManifestError, PayloadHash, PayloadHasher,
    SecretKey, SignedManifest,
};

pub use error::{Result, StoreError};
pub use fsck::FsckReport;
pub use io::{FailAfter, IoHook, IoStep, RealIo};
pub use keys::{Keyring, random_key, read_node_key};
pub use partial::{PartialInfo, PieceOutcome};

use error::{db_err, io_err};

const COPY_BUF: usize = 256 * 1024;

/// Store settings.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Payloads up to this many bytes are kept in their SQLite row.
    pub inline_max: u64,
    /// Byte limit for payloads and manifests; `None` for no limit.
    pub quota: Option<u64>,
    /// `true`: fsync the database on every commit (survives power loss).
    /// `false` (default): WAL with `synchronous=NORMAL`, which survives any process crash
    /// and stays consistent on power loss, but may lose the last commits then.
    pub sync_every_commit: bool,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            inline_max: 4096,
            quota: None,
            sync_every_commit: false,
        }
    }
}

/// A bundle held by the store.
#[derive(Debug, Clone)]
pub struct StoredBundle {
    pub manifest: SignedManifest,
    /// Insertion token: increases with every insert or replacement.
    pub token: u64,
    /// Authored on this node.
    pub own: bool,
}

/// Why an id or prefix given by a person names no bundle ([`Store::unresolved`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnresolvedId {
    /// Not an id or a prefix of one (too short, too long, not hex).
    Invalid(String),
    /// Well formed, but no single held bundle matches it.
    NoMatch(String),
}

impl std::fmt::Display for UnresolvedId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnresolvedId::Invalid(m) | UnresolvedId::NoMatch(m) => f.write_str(m),
        }
    }
}

/// What [`Store::list`] selects.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pub service: Option<String>,
    pub recipient: Option<Identity>,
    /// Only bundles inserted or replaced after this token.
    pub since: Option<u64>,
    pub limit: Option<u64>,
    /// Tombstones too (hidden by default: they are what is left of deleted bundles).
    pub include_deleted: bool,
}

/// Options for a bundle authored on this node.
#[derive(Debug, Clone, Default)]
pub struct NewBundle {
    pub service: Option<String>,
    pub name: Option<String>,
    pub recipient: Option<Identity>,
    /// Seal the payload to `recipient`'s node key: relays carry it, only that node reads
    /// it (`skywave_bundle::sealed`). Needs a recipient; not for journals.
    pub seal: bool,
    /// Name this node's identity as the sender (32 more bytes on every link).
    pub sign_sender: bool,
    pub fields: std::collections::BTreeMap<String, String>,
    pub journal: bool,
    /// Unix seconds; the caller supplies the clock.
    pub date: u64,
    /// Unix seconds after which every node drops the bundle.
    pub expires: Option<u64>,
    /// `None`: the service's default.
    pub priority: Option<skywave_bundle::Priority>,
}

/// Sizes and counts, for status screens and metrics.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct StoreStats {
    pub bundles: u64,
    pub payload_bytes: u64,
    pub manifest_bytes: u64,
    pub partials: u64,
    pub last_token: u64,
    pub quota: Option<u64>,
}

/// An open store. One process at a time holds it (a lock file enforces this).
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    db_path: PathBuf,
    conn: Connection,
    config: StoreConfig,
    hook: Arc<dyn IoHook>,
    keyring: Keyring,
    node: SecretKey,
    partials: partial::OpenPartials,
    batch: batch::Batch,
    _lock: File,
}

/// hash, length, inline payload, journal.
type PayloadRow = (Vec<u8>, i64, Option<Vec<u8>>, bool);

/// A reader over a stored payload; never holds a large payload in memory.
#[derive(Debug)]
pub enum PayloadReader {
    Inline(std::io::Cursor<Vec<u8>>),
    File(std::io::Take<File>),
}

impl PayloadReader {
    /// Moves forward by `n` bytes without reading them (a seek for files).
    pub fn skip(&mut self, n: u64) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom};
        match self {
            PayloadReader::Inline(c) => {
                c.set_position(c.position().saturating_add(n));
            }
            PayloadReader::File(t) => {
                let n = n.min(t.limit());
                t.get_mut().seek(SeekFrom::Current(n as i64))?;
                t.set_limit(t.limit() - n);
            }
        }
        Ok(())
    }
}

impl Read for PayloadReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            PayloadReader::Inline(c) => c.read(buf),
            PayloadReader::File(f) => f.read(buf),
        }
    }
}

/// Where a bundle being committed comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Authored here.
    Own,
    /// Added or imported whole (not authored here).
    Other,
    /// Received by a transfer: joins the open batch (`batch.rs`).
    Received,
}

impl Origin {
    fn of(own: bool) -> Self {
        if own { Origin::Own } else { Origin::Other }
    }
}

impl Store {
    /// Opens the store in `dir`, creating it (and the node identity) if absent.
    pub fn open(dir: impl AsRef<Path>, config: StoreConfig) -> Result<Self> {
        Self::open_with_hook(dir, config, Arc::new(RealIo))
    }

    /// As [`Store::open`], with every durable step first passed through `hook`.
    pub fn open_with_hook(
        dir: impl AsRef<Path>,
        config: StoreConfig,
        hook: Arc<dyn IoHook>,
    ) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        if dir.exists() && !dir.is_dir() {
            return Err(StoreError::NotAStore {
                path: dir,
                reason: "it is a file, not a directory".into(),
            });
        }
        fs::create_dir_all(&dir).map_err(|e| io_err("create store directory", &dir, e))?;
        for sub in ["payloads", "journals", "partial", "tmp", "quarantine"] {
            let p = dir.join(sub);
            fs::create_dir_all(&p).map_err(|e| io_err("create store directory", &p, e))?;
        }
        let lock_path = dir.join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| io_err("open lock file", &lock_path, e))?;
        // A holder that is exiting (or a child process between fork and exec, which
        // briefly shares the lock) lets go within moments: wait a little before
        // reporting the store as in use.
        let mut tries = 0;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(fs::TryLockError::WouldBlock) if tries < 20 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(25));
                }
                Err(fs::TryLockError::WouldBlock) => return Err(StoreError::Locked { dir }),
                Err(fs::TryLockError::Error(e)) => return Err(io_err("lock", &lock_path, e)),
            }
        }
        let db_path = dir.join("store.db");
        let conn = Connection::open(&db_path).map_err(|e| db_err(&db_path, e))?;
        schema::init(&conn, config.sync_every_commit).map_err(|e| match e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
                StoreError::NotAStore {
                    path: db_path.clone(),
                    reason: "the database file is not SQLite (damaged or foreign)".into(),
                }
            }
            e => db_err(&db_path, e),
        })?;
        let node_path = dir.join(keys::NODE_KEY_FILE);
        let node = if node_path.exists() {
            keys::read_key(&node_path)?
        } else {
            let k = random_key()?;
            keys::write_key(&node_path, &k)?;
            k
        };
        let keyring = Keyring::open(dir.join("keyring"))?;
        let store = Self {
            dir,
            db_path,
            conn,
            config,
            hook,
            keyring,
            node,
            partials: Default::default(),
            batch: Default::default(),
            _lock: lock,
        };
        store.clear_tmp();
        Ok(store)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// This node's identity.
    pub fn node_key(&self) -> &SecretKey {
        &self.node
    }

    pub fn keyring(&self) -> &Keyring {
        &self.keyring
    }

    fn step(&self, step: IoStep, op: &'static str, path: &Path) -> Result<()> {
        self.hook.before(step).map_err(|e| io_err(op, path, e))
    }

    fn db(&self, e: rusqlite::Error) -> StoreError {
        db_err(&self.db_path, e)
    }

    fn clear_tmp(&self) {
        // Leftovers of interrupted inserts: never referenced by a row.
        if let Ok(rd) = fs::read_dir(self.dir.join("tmp")) {
            for e in rd.flatten() {
                let _ = fs::remove_file(e.path());
            }
        }
    }

    fn payload_path(&self, hash: &PayloadHash) -> PathBuf {
        let h = hash.to_hex();
        self.dir.join("payloads").join(&h[..2]).join(&h)
    }

    fn journal_path(&self, id: &BundleId) -> PathBuf {
        self.dir.join("journals").join(id.to_hex())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.step(IoStep::Sync, "sync directory", dir)?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_err("sync directory", dir, e))
    }

    // ---- reading -------------------------------------------------------------------

    /// The bundle with this id, if held.
    pub fn get(&self, id: &BundleId) -> Result<Option<StoredBundle>> {
        self.conn
            .prepare_cached("SELECT manifest, token, own FROM bundles WHERE id = ?1")
            .map_err(|e| db_err(&self.db_path, e))?
            .query_row([id.as_bytes().as_slice()], row_to_bundle)
            .optional()
            .map_err(|e| self.db(e))?
            .transpose()
    }

    /// The bundle with this id, if held, with its payload when that lives in the row
    /// (at most [`StoreConfig::inline_max`] bytes): one lookup where `get` and
    /// `read_payload` take two, for a sender serving many small bundles.
    pub fn get_with_inline(
        &self,
        id: &BundleId,
    ) -> Result<Option<(StoredBundle, Option<Vec<u8>>)>> {
        self.conn
            .prepare_cached("SELECT manifest, token, own, inline FROM bundles WHERE id = ?1")
            .map_err(|e| db_err(&self.db_path, e))?
            .query_row([id.as_bytes().as_slice()], |r| {
                Ok(row_to_bundle(r)?.map(|b| (b, r.get::<_, Option<Vec<u8>>>(3).ok().flatten())))
            })
            .optional()
            .map_err(|e| self.db(e))?
            .transpose()
    }

    /// Why `prefix` names no bundle, in words for people: not an id or prefix at all,
    /// or no single held bundle matching it. The CLI and the HTTP API say the same.
    pub fn unresolved(prefix: &str) -> UnresolvedId {
        let well_formed =
            (4..=64).contains(&prefix.len()) && prefix.bytes().all(|b| b.is_ascii_hexdigit());
        if well_formed {
            UnresolvedId::NoMatch(format!(
                "no bundle matches '{prefix}' (or the prefix matches more than one): give the full 64-digit id or a unique prefix (`skywave ls` lists them)"
            ))
        } else {
            UnresolvedId::Invalid(format!(
                "invalid bundle id '{prefix}': give the full 64-digit hex id or a unique prefix of at least 4 hex digits"
            ))
        }
    }

    /// Resolves a unique hex prefix (at least 4 digits) of a held bundle's id.
    pub fn resolve_prefix(&self, prefix: &str) -> Result<Option<BundleId>> {
        if let Ok(id) = prefix.parse::<BundleId>() {
            return Ok(Some(id));
        }
        let p = prefix.to_ascii_lowercase();
        if p.len() < 4 || !p.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM bundles WHERE hex(id) LIKE ?1 || '%' LIMIT 2")
            .map_err(|e| self.db(e))?;
        let ids: Vec<Vec<u8>> = stmt
            .query_map([p.to_ascii_uppercase()], |r| r.get(0))
            .map_err(|e| self.db(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.db(e))?;
        Ok(match ids.as_slice() {
            [one] => one.as_slice().try_into().ok().map(BundleId),
            _ => None,
        })
    }

    /// Bundles matching `q`, in insertion-token order.
    pub fn list(&self, q: &Query) -> Result<Vec<StoredBundle>> {
        let mut sql = String::from("SELECT manifest, token, own FROM bundles WHERE token > ?");
        let mut args: Vec<Box<dyn rusqlite::ToSql>> = vec![Box::new(q.since.unwrap_or(0) as i64)];
        if !q.include_deleted {
            sql.push_str(" AND deleted = 0");
        }
        if let Some(s) = &q.service {
            sql.push_str(" AND service = ?");
            args.push(Box::new(s.clone()));
        }
        if let Some(r) = &q.recipient {
            sql.push_str(" AND recipient = ?");
            args.push(Box::new(r.0.to_vec()));
        }
        sql.push_str(" ORDER BY token LIMIT ?");
        args.push(Box::new(q.limit.map_or(-1, |l| l as i64)));
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.db(e))?;
        let mut rows = stmt
            .query(rusqlite::params_from_iter(args.iter()))
            .map_err(|e| self.db(e))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.db(e))? {
            out.push(row_to_bundle(row).map_err(|e| self.db(e))??);
        }
        Ok(out)
    }

    /// Every version held, tombstones included, as `(id, version, payload length)` in
    /// insertion-token order (newest last, as [`Store::list`]): read from the table's
    /// columns, so a store of a million bundles costs 48 B each here rather than a
    /// decoded manifest each.
    pub fn inventory(&self) -> Result<Vec<(BundleId, u64, u64)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT token, id, version, length FROM bundles")
            .map_err(|e| self.db(e))?;
        // Sized up front: a Vec grown by doubling would hold up to twice the million.
        let count: i64 = self
            .conn
            .query_row("SELECT count(*) FROM bundles", [], |r| r.get(0))
            .map_err(|e| self.db(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.db(e))?;
        let mut out = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
        while let Some(row) = rows.next().map_err(|e| self.db(e))? {
            let token: i64 = row.get(0).map_err(|e| self.db(e))?;
            let id: Vec<u8> = row.get(1).map_err(|e| self.db(e))?;
            let version: i64 = row.get(2).map_err(|e| self.db(e))?;
            let length: i64 = row.get(3).map_err(|e| self.db(e))?;
            let id = id.as_slice().try_into().map_err(|_| {
                corrupt(
                    BundleId([0; 32]),
                    &format!("a bundle id of {} bytes in the index", id.len()),
                )
            })?;
            out.push((token, BundleId(id), version as u64, length as u64));
        }
        // In `token` order, sorted here: read through the token index, each row cost a
        // lookup of the table by id, a random read (a million took 5-10 s, holding the
        // daemon's core at a peer's first session); the table read straight through
        // costs a fraction of that.
        out.sort_unstable_by_key(|r| r.0);
        // Collected in place (the allocation is reused), then fitted to the shorter rows.
        let mut out: Vec<(BundleId, u64, u64)> =
            out.into_iter().map(|(_, id, v, l)| (id, v, l)).collect();
        out.shrink_to_fit();
        Ok(out)
    }

    /// `(id, version)` of every live bundle whose payload is sealed to a recipient. Each
    /// manifest is decoded and dropped in turn, so memory does not grow with the store.
    pub fn sealed_versions(&self) -> Result<Vec<(BundleId, u64)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT manifest, token, own FROM bundles WHERE deleted = 0")
            .map_err(|e| self.db(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.db(e))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.db(e))? {
            let b = row_to_bundle(row).map_err(|e| self.db(e))??;
            if b.manifest.manifest().sealed.is_some() {
                out.push((b.manifest.id(), b.manifest.version()));
            }
        }
        Ok(out)
    }

    /// Opens the payload of the bundle with this id for streaming.
    pub fn open_payload(&self, id: &BundleId) -> Result<PayloadReader> {
        let row: Option<PayloadRow> = self
            .conn
            .prepare_cached("SELECT hash, length, inline, journal FROM bundles WHERE id = ?1")
            .map_err(|e| db_err(&self.db_path, e))?
            .query_row([id.as_bytes().as_slice()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()
            .map_err(|e| self.db(e))?;
        let (hash, length, inline, journal) = row.ok_or(StoreError::NotFound(*id))?;
        if let Some(data) = inline {
            return Ok(PayloadReader::Inline(std::io::Cursor::new(data)));
        }
        let length = length as u64;
        if length == 0 {
            return Ok(PayloadReader::Inline(std::io::Cursor::new(Vec::new())));
        }
        let path = if journal {
            self.journal_path(id)
        } else {
            self.payload_path(&to_hash(&hash).ok_or_else(|| corrupt(*id, "hash column"))?)
        };
        let f = File::open(&path).map_err(|e| io_err("open payload", &path, e))?;
        Ok(PayloadReader::File(f.take(length)))
    }

    /// Reads a whole payload into memory; for small payloads and tests.
    pub fn read_payload(&self, id: &BundleId) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.open_payload(id)?
            .read_to_end(&mut out)
            .map_err(|e| io_err("read payload", self.dir.join("payloads"), e))?;
        Ok(out)
    }

    pub fn stats(&self) -> Result<StoreStats> {
        let (bundles, payload_bytes, manifest_bytes) =
            schema::read_totals(&self.conn).map_err(|e| self.db(e))?;
        let partials: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM partials")
            .map_err(|e| db_err(&self.db_path, e))?
            .query_row([], |r| r.get(0))
            .map_err(|e| self.db(e))?;
        Ok(StoreStats {
            bundles,
            payload_bytes,
            manifest_bytes,
            partials: partials as u64 + self.memory_partials() as u64,
            last_token: schema::next_token(&self.conn).map_err(|e| self.db(e))? - 1,
            quota: self.config.quota,
        })
    }

    fn held_version(&self, id: &BundleId) -> Result<Option<u64>> {
        self.conn
            .prepare_cached("SELECT version FROM bundles WHERE id = ?1")
            .map_err(|e| db_err(&self.db_path, e))?
            .query_row([id.as_bytes().as_slice()], |r| r.get::<_, i64>(0))
            .optional()
            .map(|v| v.map(|v| v as u64))
            .map_err(|e| self.db(e))
    }

    fn check_fresh(&self, m: &Manifest) -> Result<Option<u64>> {
        if m.expired_at(unix_now()) {
            return Err(StoreError::Expired {
                id: m.id,
                at: m.expires.unwrap_or_default(),
            });
        }
        let held = self.held_version(&m.id)?;
        if let Some(h) = held.filter(|h| *h >= m.version) {
            return Err(StoreError::Stale {
                id: m.id,
                held: h,
                offered: m.version,
            });
        }
        Ok(held)
    }

    // ---- writing -------------------------------------------------------------------

    /// Inserts a bundle whose whole payload is at hand.
    ///
    /// The payload is checked against the manifest's length and hash before anything
    /// becomes visible. A version at or below the one held is refused as stale.
    pub fn insert(
        &mut self,
        manifest: &SignedManifest,
        payload: impl Read,
    ) -> Result<StoredBundle> {
        self.insert_inner(manifest, payload, false)
    }

    /// Decodes and verifies an encoded manifest, then inserts as [`Store::insert`].
    pub fn insert_encoded(&mut self, manifest: &[u8], payload: impl Read) -> Result<StoredBundle> {
        let signed = SignedManifest::decode(manifest)?;
        self.insert(&signed, payload)
    }

    fn insert_inner(
        &mut self,
        signed: &SignedManifest,
        mut payload: impl Read,
        own: bool,
    ) -> Result<StoredBundle> {
        let m = signed.manifest();
        let held = self.check_fresh(m)?;
        if m.journal {
            return self.insert_journal(signed, payload, held, own);
        }
        if m.length <= self.config.inline_max {
            let mut data = Vec::with_capacity(m.length as usize);
            (&mut payload)
                .take(m.length + 1)
                .read_to_end(&mut data)
                .map_err(|e| io_err("read payload", "<input>", e))?;
            check_payload(m, data.len() as u64, skywave_bundle::hash_payload(&data))?;
            return self.commit_row(signed, Some(&data), None, Origin::of(own), None);
        }
        let path = self.payload_path(&m.hash);
        if !path.exists() {
            let (tmp, len, hash) = self.write_tmp(&mut payload, m.length)?;
            if let Err(e) = check_payload(m, len, hash) {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
            self.publish_tmp(&tmp, &path)?;
        } else {
            // Same content already stored for another bundle: still verify the input.
            let mut h = PayloadHasher::new();
            copy_hashing(&mut payload, &mut std::io::sink(), &mut h, m.length + 1)
                .map_err(|e| io_err("read payload", "<input>", e))?;
            check_payload(m, h.len(), h.finalize())?;
        }
        self.commit_row(signed, None, None, Origin::of(own), None)
    }

    /// Streams `src` into a new file under `tmp/`, hashing as it goes, fsynced.
    fn write_tmp(&self, src: &mut impl Read, expect: u64) -> Result<(PathBuf, u64, PayloadHash)> {
        let tmp = self.dir.join("tmp").join(format!("{:016x}", random_u64()));
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io_err("create temporary payload file", &tmp, e))?;
        let mut h = PayloadHasher::new();
        let mut buf = vec![0u8; COPY_BUF];
        let limit = expect + 1;
        let res = (|| -> Result<()> {
            loop {
                let want = (limit - h.len()).min(buf.len() as u64) as usize;
                if want == 0 {
                    return Ok(());
                }
                let n = src
                    .read(&mut buf[..want])
                    .map_err(|e| io_err("read payload", "<input>", e))?;
                if n == 0 {
                    return Ok(());
                }
                self.step(IoStep::Write, "write payload", &tmp)?;
                f.write_all(&buf[..n])
                    .map_err(|e| io_err("write payload", &tmp, e))?;
                h.update(&buf[..n]);
            }
        })()
        .and_then(|_| {
            self.step(IoStep::Sync, "sync payload", &tmp)?;
            f.sync_all().map_err(|e| io_err("sync payload", &tmp, e))
        });
        if let Err(e) = res {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        Ok((tmp, h.len(), h.finalize()))
    }

    fn link_into_place(&self, src: &Path, path: &Path) -> Result<()> {
        let parent = path.parent().unwrap_or(&self.dir);
        fs::create_dir_all(parent).map_err(|e| io_err("create payload directory", parent, e))?;
        self.step(IoStep::Rename, "link payload into place", path)?;
        fs::hard_link(src, path).map_err(|e| io_err("link payload into place", path, e))?;
        self.sync_dir(parent)
    }

    fn publish_tmp(&self, tmp: &Path, path: &Path) -> Result<()> {
        let parent = path.parent().unwrap_or(&self.dir);
        fs::create_dir_all(parent).map_err(|e| io_err("create payload directory", parent, e))?;
        self.step(IoStep::Rename, "move payload into place", path)?;
        fs::rename(tmp, path).map_err(|e| io_err("move payload into place", path, e))?;
        self.sync_dir(parent)
    }

    /// Commits the row that makes a bundle visible, replacing an older version and
    /// evicting for the quota in the same transaction. Files no longer referenced are
    /// removed after the commit (a crash before that leaves orphans for `fsck`).
    fn commit_row(
        &mut self,
        signed: &SignedManifest,
        inline: Option<&[u8]>,
        jstate: Option<&JournalState>,
        origin: Origin,
        drop_partial: Option<u64>,
    ) -> Result<StoredBundle> {
        let m = signed.manifest();
        self.step(IoStep::Commit, "commit bundle", &self.db_path)?;
        let batched = self.join_batch(origin == Origin::Received)?;
        let tx = batch::Savepoint::new(&self.conn).map_err(|e| db_err(&self.db_path, e))?;
        let old: Option<(Vec<u8>, Option<Vec<u8>>, bool)> = tx
            .prepare_cached("SELECT hash, inline, journal FROM bundles WHERE id = ?1")
            .map_err(|e| db_err(&self.db_path, e))?
            .query_row([m.id.as_bytes().as_slice()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
            .map_err(|e| db_err(&self.db_path, e))?;
        let mut evicted = Vec::new();
        if let Some(quota) = self.config.quota {
            let need = m.length + signed.as_bytes().len() as u64;
            // Everything held but the version this one replaces (O(1): `schema::totals`).
            let (_, payload, manifests) =
                schema::read_totals(&tx).map_err(|e| db_err(&self.db_path, e))?;
            let replaced: i64 = tx
                .prepare_cached("SELECT length + length(manifest) FROM bundles WHERE id = ?1")
                .map_err(|e| db_err(&self.db_path, e))?
                .query_row([m.id.as_bytes().as_slice()], |r| r.get(0))
                .optional()
                .map_err(|e| db_err(&self.db_path, e))?
                .unwrap_or(0);
            let used = (payload + manifests).saturating_sub(replaced.max(0) as u64);
            if used + need > quota {
                evicted = schema::evict(
                    &tx,
                    quota,
                    used,
                    need,
                    &m.id,
                    &self.node.identity(),
                    unix_now(),
                )
                .map_err(|e| db_err(&self.db_path, e))?
                .map_err(|evictable| StoreError::QuotaExceeded {
                    need,
                    quota,
                    used,
                    evictable,
                })?;
            }
        }
        let token = schema::next_token(&tx).map_err(|e| db_err(&self.db_path, e))?;
        let own = origin == Origin::Own || self.keyring.contains(&m.id);
        tx.prepare_cached(
            "INSERT OR REPLACE INTO bundles
             (id, version, token, length, hash, service, name, recipient, sender, date, journal,
              own, manifest, inline, jstate, expires, deleted)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        )
        .map_err(|e| db_err(&self.db_path, e))?
        .execute(params![
            m.id.as_bytes().as_slice(),
            m.version as i64,
            token as i64,
            m.length as i64,
            m.hash.0.as_slice(),
            m.service,
            m.name,
            m.recipient.map(|r| r.0.to_vec()),
            m.sender.map(|r| r.0.to_vec()),
            m.date as i64,
            m.journal,
            own,
            signed.as_bytes(),
            inline,
            jstate.map(JournalState::encode),
            m.expires.map(|e| e.min(i64::MAX as u64) as i64),
            m.deleted,
        ])
        .map_err(|e| db_err(&self.db_path, e))?;
        if drop_partial.is_some() || !m.journal {
            tx.prepare_cached("DELETE FROM partials WHERE id = ?1 AND version <= ?2")
                .map_err(|e| db_err(&self.db_path, e))?
                .execute(params![m.id.as_bytes().as_slice(), m.version as i64])
                .map_err(|e| db_err(&self.db_path, e))?;
        }
        tx.release().map_err(|e| db_err(&self.db_path, e))?;
        if batched {
            self.joined(m.id);
        }
        tracing::debug!(id = %m.id, version = m.version, token, "bundle committed");
        // Unreferenced files, after the commit (of the batch, inside one).
        match old {
            Some((hash, None, false)) if hash != m.hash.0 => self.release_payload(&hash),
            // A journal replaced by something that is not one (a tombstone).
            Some((_, _, true)) if !m.journal => {
                self.remove_after_commit(self.journal_path(&m.id));
            }
            _ => {}
        }
        for (id, hash, journal) in evicted {
            tracing::info!(%id, "evicted to stay within the store quota");
            if journal {
                self.remove_after_commit(self.journal_path(&id));
            } else {
                self.release_payload(&hash);
            }
        }
        Ok(StoredBundle {
            manifest: signed.clone(),
            token,
            own,
        })
    }

    fn remove_payload_if_unused(&self, hash: &[u8]) {
        let Some(h) = to_hash(hash) else { return };
        let used: i64 = self
            .conn
            .prepare_cached(
                "SELECT count(*) FROM bundles WHERE hash = ?1 AND inline IS NULL AND journal = 0",
            )
            .and_then(|mut st| st.query_row([hash], |r| r.get(0)))
            .unwrap_or(1);
        if used == 0 {
            let path = self.payload_path(&h);
            if self.step(IoStep::Remove, "remove payload", &path).is_ok() {
                let _ = fs::remove_file(path);
            }
        }
    }

    fn insert_journal(
        &mut self,
        signed: &SignedManifest,
        mut payload: impl Read,
        held: Option<u64>,
        own: bool,
    ) -> Result<StoredBundle> {
        let m = signed.manifest();
        // A transfer in progress writes past the committed end; this insert supersedes it.
        self.abandon_partial(&m.id)?;
        let path = self.journal_path(&m.id);
        let held_len = held.unwrap_or(0);
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_err("open journal", &path, e))?;
        // Bytes past the committed length are leftovers of an interrupted write.
        f.set_len(held_len)
            .map_err(|e| io_err("truncate journal", &path, e))?;
        let mut state = JournalState::new();
        let mut buf = vec![0u8; COPY_BUF];
        let mut at = 0u64;
        let mut existing = vec![0u8; COPY_BUF];
        loop {
            let want = (m.length + 1 - at).min(buf.len() as u64) as usize;
            if want == 0 {
                break;
            }
            let n = payload
                .read(&mut buf[..want])
                .map_err(|e| io_err("read payload", "<input>", e))?;
            if n == 0 {
                break;
            }
            let chunk = &buf[..n];
            // The prefix already held must be identical: journals only grow.
            let overlap = held_len.saturating_sub(at).min(n as u64) as usize;
            if overlap > 0 {
                f.read_exact_at(&mut existing[..overlap], at)
                    .map_err(|e| io_err("read journal", &path, e))?;
                if existing[..overlap] != chunk[..overlap] {
                    return Err(StoreError::JournalFork {
                        id: m.id,
                        held: held_len,
                        offered: m.version,
                    });
                }
            }
            if overlap < n && at + (n as u64) <= m.length {
                self.step(IoStep::Write, "write journal", &path)?;
                f.write_all_at(&chunk[overlap..], at + overlap as u64)
                    .map_err(|e| io_err("write journal", &path, e))?;
            }
            state.update(chunk);
            at += n as u64;
        }
        check_payload(m, at, state.finalize())?;
        self.step(IoStep::Sync, "sync journal", &path)?;
        f.sync_all().map_err(|e| io_err("sync journal", &path, e))?;
        self.sync_dir(&self.dir.join("journals"))?;
        self.commit_row(signed, None, Some(&state), Origin::of(own), Some(m.version))
    }

    /// The manifest of a bundle authored here, as `opts` describe it (unsigned).
    fn new_manifest(
        &self,
        id: BundleId,
        version: u64,
        len: u64,
        hash: PayloadHash,
        opts: &NewBundle,
    ) -> Manifest {
        let mut m = Manifest::new(id, version, len, hash, opts.date);
        m.journal = opts.journal;
        if m.journal {
            m.version = len;
        }
        m.service = opts.service.clone();
        m.name = opts.name.clone();
        m.recipient = opts.recipient;
        m.sealed = opts.seal.then_some(SEALED_V1);
        m.sender = opts.sign_sender.then(|| self.node.identity());
        m.fields = opts.fields.clone();
        m.expires = opts.expires;
        m.priority = opts.priority;
        m
    }

    /// Creates and stores a new bundle authored here, with a fresh key kept in the keyring.
    /// A bundle refused (quota, disk, a bad option) leaves nothing behind: neither its
    /// payload nor its key.
    pub fn create(&mut self, payload: impl Read, opts: &NewBundle) -> Result<StoredBundle> {
        let key = self.keyring.generate()?;
        let res = self.create_with_key(&key, 1, payload, opts);
        if res.is_err() {
            self.keyring.remove(&key.bundle_id());
        }
        res
    }

    /// Creates a bundle from a file inside the store's directory that is handed over (an
    /// HTTP upload spooled there), hashed beforehand by [`HashedFile::hash`] without the
    /// store: it is moved into place, so an upload never needs twice its size free.
    /// Whatever the outcome the file is gone afterwards, and a refused bundle leaves
    /// nothing behind (no payload, no key). Sealed bundles, journals and payloads small
    /// enough to live in the database are copied as [`Self::create`] does (sealing
    /// rewrites every byte anyway).
    pub fn create_from_file(&mut self, file: HashedFile, opts: &NewBundle) -> Result<StoredBundle> {
        let res = self.create_from_file_inner(&file, opts);
        let _ = fs::remove_file(&file.path);
        res
    }

    fn create_from_file_inner(
        &mut self,
        file: &HashedFile,
        opts: &NewBundle,
    ) -> Result<StoredBundle> {
        let HashedFile { path, len, hash } = file;
        let (path, len) = (path.as_path(), *len);
        let now = fs::metadata(path)
            .map_err(|e| io_err("read the uploaded payload's size", path, e))?
            .len();
        if now != len {
            return Err(io_err(
                "read the uploaded payload",
                path,
                std::io::Error::other("it changed after it was hashed"),
            ));
        }
        if opts.seal || opts.journal || len <= self.config.inline_max {
            let f = File::open(path).map_err(|e| io_err("open the uploaded payload", path, e))?;
            return self.create(std::io::BufReader::new(f), opts);
        }
        // Refused before anything is written when it can never fit.
        if let Some(quota) = self.config.quota
            && len > quota
        {
            return Err(StoreError::QuotaExceeded {
                need: len,
                quota,
                used: 0,
                evictable: 0,
            });
        }
        let key = keys::random_key()?;
        let m = self.new_manifest(key.bundle_id(), 1, len, *hash, opts);
        let signed = m.sign(&key)?;
        self.check_fresh(signed.manifest())?;
        // The key is kept before the bundle is visible (a crash never leaves a bundle its
        // author cannot update), and dropped again if the bundle is refused.
        self.keyring.insert(&key)?;
        let dest = self.payload_path(&m.hash);
        let placed = !dest.exists();
        let res = if placed {
            self.publish_tmp(path, &dest)
        } else {
            Ok(())
        }
        .and_then(|()| self.commit_row(&signed, None, None, Origin::Own, None));
        if res.is_err() {
            if placed {
                self.remove_payload_if_unused(&m.hash.0);
            }
            self.keyring.remove(&m.id);
        }
        res
    }

    /// Stores a bundle signed with `key` at `version` (which must beat any held version).
    pub fn create_with_key(
        &mut self,
        key: &SecretKey,
        version: u64,
        mut payload: impl Read,
        opts: &NewBundle,
    ) -> Result<StoredBundle> {
        let id = key.bundle_id();
        // Hash first (streaming to a temporary file), then sign, then publish. A sealed
        // payload is sealed on the way in: only the sealed bytes touch the disk.
        let (tmp, len, hash) = if opts.seal {
            let to = opts.recipient.ok_or_else(|| ManifestError::InvalidField {
                field: "sealed",
                reason: "a sealed payload needs a recipient to be sealed to".into(),
            })?;
            if opts.journal {
                return Err(ManifestError::InvalidField {
                    field: "sealed",
                    reason: "a journal cannot be sealed".into(),
                }
                .into());
            }
            let mut rng = keys::seal_rng()?;
            let mut sealed = SealReader::new(payload, &to, &id, &mut rng)?;
            self.write_tmp(&mut sealed, u64::MAX - 1)?
        } else {
            self.write_tmp(&mut payload, u64::MAX - 1)?
        };
        let m = self.new_manifest(id, version, len, hash, opts);
        let signed = match m.sign(key) {
            Ok(s) => s,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(e.into());
            }
        };
        let res = if !m.journal && m.length > self.config.inline_max {
            // The temporary file already holds the verified, fsynced payload: move it
            // into place rather than copying it a second time.
            self.check_fresh(signed.manifest()).and_then(|_| {
                let dest = self.payload_path(&m.hash);
                let placed = !dest.exists();
                if placed {
                    self.publish_tmp(&tmp, &dest)?;
                }
                let res = self.commit_row(&signed, None, None, Origin::Own, None);
                if res.is_err() && placed {
                    // Refused at commit (quota, disk): the file moved in goes again.
                    self.remove_payload_if_unused(&m.hash.0);
                }
                res
            })
        } else {
            File::open(&tmp)
                .map_err(|e| io_err("open temporary payload", &tmp, e))
                .and_then(|f| self.insert_inner(&signed, f, true))
        };
        let _ = fs::remove_file(&tmp);
        res
    }

    /// Appends `data` to journal `id`, signing the new version with the keyring's key.
    /// Only the new bytes are hashed, thanks to the stored tree-hash state. Empty `data`
    /// changes nothing: the journal is returned as it was, not signed again.
    pub fn append(
        &mut self,
        id: &BundleId,
        mut data: impl Read,
        date: u64,
    ) -> Result<StoredBundle> {
        let key = self.keyring.get(id)?.ok_or(StoreError::NoKey(*id))?;
        let (old, jstate): (Vec<u8>, Option<Vec<u8>>) = self
            .conn
            .prepare_cached("SELECT manifest, jstate FROM bundles WHERE id = ?1")
            .map_err(|e| db_err(&self.db_path, e))?
            .query_row([id.as_bytes().as_slice()], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(|e| self.db(e))?
            .ok_or(StoreError::NotFound(*id))?;
        let old = SignedManifest::decode_stored(&old).map_err(|e| corrupt(*id, &e.to_string()))?;
        if !old.manifest().journal {
            return Err(StoreError::NotJournal(*id));
        }
        let mut state = JournalState::decode(jstate.as_deref().unwrap_or_default())
            .map_err(|e| corrupt(*id, &e.to_string()))?;
        let held = old.manifest().length;
        if state.len() != held {
            return Err(corrupt(*id, "journal hash state does not match its length"));
        }
        // A transfer of another copy of this journal writes where this append will.
        self.abandon_partial(id)?;
        let path = self.journal_path(id);
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_err("open journal", &path, e))?;
        f.set_len(held)
            .map_err(|e| io_err("truncate journal", &path, e))?;
        let mut buf = vec![0u8; COPY_BUF];
        let mut at = held;
        loop {
            let n = data
                .read(&mut buf)
                .map_err(|e| io_err("read input", "<input>", e))?;
            if n == 0 {
                break;
            }
            self.step(IoStep::Write, "write journal", &path)?;
            f.write_all_at(&buf[..n], at)
                .map_err(|e| io_err("write journal", &path, e))?;
            state.update(&buf[..n]);
            at += n as u64;
        }
        if at == held {
            // Nothing to add: the version held stays (signing it again at the same version
            // would give peers a second manifest they refuse as stale).
            return self.get(id)?.ok_or(StoreError::NotFound(*id));
        }
        self.step(IoStep::Sync, "sync journal", &path)?;
        f.sync_all().map_err(|e| io_err("sync journal", &path, e))?;
        let mut m = old.manifest().clone();
        m.length = at;
        m.version = at;
        m.hash = state.finalize();
        m.date = date.max(m.date);
        let signed = m.sign(&key)?;
        self.commit_row(&signed, None, Some(&state), Origin::Own, None)
    }

    /// Deletes a bundle authored here: stores a signed tombstone (a newer version with no
    /// payload) that replaces it on every node it reaches, freeing the payload there.
    /// The tombstone keeps the name, service and expiry, so listings can say what went
    /// and it is dropped when the bundle would have expired.
    pub fn delete(&mut self, id: &BundleId, date: u64) -> Result<StoredBundle> {
        let key = self.keyring.get(id)?.ok_or(StoreError::NoKey(*id))?;
        let old = self.get(id)?.ok_or(StoreError::NotFound(*id))?;
        let o = old.manifest.manifest();
        if o.deleted {
            return Ok(old);
        }
        self.abandon_partial(id)?;
        let mut m = Manifest::new(
            *id,
            o.version + 1,
            0,
            PayloadHash::empty(),
            date.max(o.date),
        );
        m.service = o.service.clone();
        m.name = o.name.clone();
        m.recipient = o.recipient;
        m.sender = o.sender;
        m.expires = o.expires.filter(|e| *e >= m.date);
        m.deleted = true;
        let signed = m.sign(&key)?;
        self.commit_row(&signed, Some(&[]), None, Origin::Own, None)
    }

    /// Publishes a new version of a bundle authored here with a new payload (and the
    /// options given, which replace the old ones): peers replace the old version.
    pub fn replace(
        &mut self,
        id: &BundleId,
        payload: impl Read,
        opts: &NewBundle,
    ) -> Result<StoredBundle> {
        let key = self.keyring.get(id)?.ok_or(StoreError::NoKey(*id))?;
        let held = self.held_version(id)?.ok_or(StoreError::NotFound(*id))?;
        self.abandon_partial(id)?;
        self.create_with_key(&key, held + 1, payload, opts)
    }

    /// The bundle authored here with this name and payload, if one is held (so adding the
    /// same file twice can answer with it instead of signing a second copy). `hash` is
    /// called only when a bundle of this name and length exists, so a caller holding a
    /// file need not hash it otherwise.
    pub fn find_own(
        &self,
        name: Option<&str>,
        length: u64,
        hash: impl FnOnce() -> Result<PayloadHash>,
    ) -> Result<Option<StoredBundle>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT manifest, token, own FROM bundles
                 WHERE own = 1 AND deleted = 0 AND journal = 0 AND length = ?1 AND name IS ?2",
            )
            .map_err(|e| self.db(e))?;
        let mut rows = stmt
            .query(params![length.min(i64::MAX as u64) as i64, name])
            .map_err(|e| self.db(e))?;
        let mut candidates = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.db(e))? {
            candidates.push(row_to_bundle(row).map_err(|e| self.db(e))??);
        }
        if candidates.is_empty() {
            return Ok(None);
        }
        let h = hash()?;
        Ok(candidates
            .into_iter()
            .find(|b| b.manifest.manifest().hash == h))
    }

    /// Removes every bundle (tombstones included) and transfer whose expiry is at or
    /// before `now` (Unix seconds); returns the ids removed.
    pub fn expire(&mut self, now: u64) -> Result<Vec<BundleId>> {
        let ids: Vec<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT id FROM bundles WHERE expires IS NOT NULL AND expires <= ?1")
            .map_err(|e| self.db(e))?
            .query_map([now.min(i64::MAX as u64) as i64], |r| r.get(0))
            .map_err(|e| self.db(e))?
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.db(e))?;
        let mut out = Vec::new();
        for id in ids {
            let Ok(id) = <[u8; 32]>::try_from(id.as_slice()).map(BundleId) else {
                continue;
            };
            if self.remove(&id)? {
                tracing::info!(%id, "expired");
                out.push(id);
            }
        }
        // Transfers of expired versions will never be accepted.
        for p in self.partials()? {
            if p.manifest.manifest().expired_at(now) {
                self.abandon_partial(&p.manifest.id())?;
            }
        }
        Ok(out)
    }

    /// The earliest expiry of any held bundle (Unix seconds).
    pub fn next_expiry(&self) -> Result<Option<u64>> {
        // The condition lets SQLite read the partial index `bundles_expires` (one step);
        // without it, `min` scanned every row (26 ms at 100,000 bundles, once a second).
        self.conn
            .prepare_cached("SELECT min(expires) FROM bundles WHERE expires IS NOT NULL")
            .map_err(|e| self.db(e))?
            .query_row([], |r| r.get::<_, Option<i64>>(0))
            .map(|v| v.map(|v| v.max(0) as u64))
            .map_err(|e| self.db(e))
    }

    /// Removes a bundle (its payload file too, when nothing else uses it).
    pub fn remove(&mut self, id: &BundleId) -> Result<bool> {
        self.settle();
        let old: Option<(Vec<u8>, bool)> = self
            .conn
            .prepare_cached("SELECT hash, journal FROM bundles WHERE id = ?1")
            .map_err(|e| db_err(&self.db_path, e))?
            .query_row([id.as_bytes().as_slice()], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(|e| self.db(e))?;
        let Some((hash, journal)) = old else {
            return Ok(false);
        };
        self.step(IoStep::Commit, "commit removal", &self.db_path)?;
        schema::delete_bundle(&self.conn, id).map_err(|e| self.db(e))?;
        if journal {
            let _ = fs::remove_file(self.journal_path(id));
        } else {
            self.remove_payload_if_unused(&hash);
        }
        Ok(true)
    }
}

fn row_to_bundle(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<StoredBundle>> {
    let bytes: Vec<u8> = r.get(0)?;
    let token: i64 = r.get(1)?;
    let own: bool = r.get(2)?;
    Ok(SignedManifest::decode_stored(&bytes)
        .map(|manifest| StoredBundle {
            manifest,
            token: token as u64,
            own,
        })
        .map_err(|e| StoreError::Corrupt {
            id: bytes
                .get(1..33)
                .and_then(|b| b.try_into().ok())
                .map(BundleId)
                .unwrap_or(BundleId([0; 32])),
            reason: format!("stored manifest no longer verifies: {e}"),
        }))
}

fn to_hash(b: &[u8]) -> Option<PayloadHash> {
    b.try_into().ok().map(PayloadHash)
}

fn corrupt(id: BundleId, reason: &str) -> StoreError {
    StoreError::Corrupt {
        id,
        reason: reason.to_owned(),
    }
}

pub(crate) fn check_payload(m: &Manifest, len: u64, hash: PayloadHash) -> Result<()> {
    if len != m.length {
        return Err(StoreError::LengthMismatch {
            id: m.id,
            expected: m.length,
            got: len,
        });
    }
    if hash != m.hash {
        return Err(StoreError::HashMismatch {
            id: m.id,
            expected: m.hash,
            got: hash,
        });
    }
    Ok(())
}

/// Copies at most `limit` bytes from `src` to `dst`, hashing them.
/// A payload file hashed and synced to disk, ready for [`Store::create_from_file`].
/// Hashing is the slow part of taking an upload; it needs no store, so it runs without
/// the store's lock.
#[derive(Debug)]
pub struct HashedFile {
    pub path: PathBuf,
    pub len: u64,
    pub hash: PayloadHash,
}

impl HashedFile {
    pub fn hash(path: &Path) -> Result<HashedFile> {
        let f = File::open(path).map_err(|e| io_err("open the uploaded payload", path, e))?;
        let mut h = PayloadHasher::new();
        copy_hashing(
            &mut std::io::BufReader::with_capacity(COPY_BUF, &f),
            &mut std::io::sink(),
            &mut h,
            u64::MAX,
        )
        .map_err(|e| io_err("read the uploaded payload", path, e))?;
        f.sync_all()
            .map_err(|e| io_err("sync the uploaded payload", path, e))?;
        Ok(HashedFile {
            path: path.to_path_buf(),
            len: h.len(),
            hash: h.finalize(),
        })
    }
}

pub(crate) fn copy_hashing(
    src: &mut impl Read,
    dst: &mut impl Write,
    h: &mut PayloadHasher,
    limit: u64,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; COPY_BUF];
    loop {
        let want = (limit - h.len()).min(buf.len() as u64) as usize;
        if want == 0 {
            return Ok(());
        }
        let n = src.read(&mut buf[..want])?;
        if n == 0 {
            return Ok(());
        }
        dst.write_all(&buf[..n])?;
        h.update(&buf[..n]);
    }
}

/// The wall clock in Unix seconds: what expiry is judged by, and what callers stamp
/// new bundles and the expiry sweep with, so all agree.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // Only names temporary files; a failure falls back to the process id and time.
    if getrandom::fill(&mut b).is_err() {
        return u64::from(std::process::id()) << 32;
    }
    u64::from_le_bytes(b)
}
