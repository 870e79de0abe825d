//! Partial transfers: pieces of a bundle received before the whole payload is held.
//!
//! Pieces are written in place in a file of their own (`partial/<id>`; for a journal,
//! beyond the committed end of `journals/<id>`). The ranges held are recorded in SQLite
//! only at a checkpoint, after the file has been fsynced, so a recorded range is always
//! backed by durable bytes; pieces after the last checkpoint are simply fetched again.
//! When every byte is held the payload is verified and published in one commit.
//!
//! A bundle small enough to live in its row (at most [`StoreConfig::inline_max`]) is
//! received in memory instead, with neither file nor recorded ranges: after a crash it
//! is fetched again, which costs less than the file, the row and the two extra commits
//! that made it resumable (half the receiver's work per bundle in a sync of many small
//! ones).
//!
//! [`StoreConfig::inline_max`]: crate::StoreConfig::inline_max

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rusqlite::{OptionalExtension, params};
use skywave_bundle::{BundleId, JournalState, PayloadHasher, RangeSet, SignedManifest};

use crate::batch::Savepoint;
use crate::error::{Result, StoreError, db_err, io_err};
use crate::{IoStep, Store, StoredBundle, check_payload, corrupt};

/// Unsynced piece bytes after which a checkpoint happens on its own.
const AUTO_CHECKPOINT_BYTES: u64 = 8 << 20;
/// A plain transfer's payload is hashed as it arrives, read back from its file a step at
/// a time once this much more of its start is held (while the pages are still cached),
/// so completing it hashes at most this much, not the whole payload read back cold.
const HASH_STEP: u64 = 1 << 20;
/// A plain transfer's consecutive pieces are written to its file together, up to this
/// much at a time: a piece is a datagram's worth (about 1.4 KB on IP), and a write per
/// piece spent more on the call than on the bytes (a fifth of a receiving daemon's time).
const WRITE_BEHIND: usize = 64 * 1024;

/// A transfer in progress.
#[derive(Debug, Clone)]
pub struct PartialInfo {
    pub manifest: SignedManifest,
    /// Byte ranges held (for a journal, including the prefix already committed).
    pub held: RangeSet,
}

/// What a received piece did.
#[derive(Debug)]
pub enum PieceOutcome {
    /// New bytes were stored; the bundle is not complete yet.
    Stored { new_bytes: u64 },
    /// Every byte of the piece was already held.
    Duplicate,
    /// The piece completed the payload, which verified and is now published.
    Complete(Box<StoredBundle>),
}

/// Where a transfer's bytes are kept until it completes.
#[derive(Debug)]
enum Body {
    /// `partial/<id>` (or the journal's own file), recorded in the `partials` table.
    File(File),
    /// The whole payload in memory, recorded nowhere (see the module docs).
    Memory(Vec<u8>),
}

#[derive(Debug)]
pub(crate) struct OpenPartial {
    manifest: SignedManifest,
    held: RangeSet,
    body: Body,
    /// A file body's path (empty for a memory body, which no error names: building it
    /// was 1% of a receiver's work on small bundles).
    path: PathBuf,
    unsynced: u64,
    /// Committed journal length the transfer builds on (0 for plain bundles).
    base: u64,
    /// A plain file body's hash of its first `len()` bytes (see [`HASH_STEP`]); in
    /// memory only: a transfer resumed after a restart hashes from the start.
    hashed: Option<Box<PayloadHasher>>,
    /// A plain file body's pieces not yet written (see [`WRITE_BEHIND`]): consecutive
    /// bytes starting at `pending_at`, written before anything reads or syncs the file.
    /// They count as held, and like any piece not yet checkpointed are fetched again
    /// after a crash.
    pending: Vec<u8>,
    pending_at: u64,
}

impl OpenPartial {
    /// A transfer's state on open; a plain payload in a file is hashed as it arrives.
    fn new(manifest: SignedManifest, held: RangeSet, body: Body, path: PathBuf, base: u64) -> Self {
        let hashed =
            (matches!(body, Body::File(_)) && !manifest.manifest().journal).then(Box::default);
        Self {
            manifest,
            held,
            body,
            path,
            unsynced: 0,
            base,
            hashed,
            pending: Vec::new(),
            pending_at: 0,
        }
    }

    /// Writes the pieces held back. If that fails their ranges are no longer held (they
    /// are asked for again), and the error is returned.
    fn write_pending(&mut self, hook: &dyn crate::io::IoHook) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let Body::File(file) = &self.body else {
            self.pending.clear();
            return Ok(());
        };
        let at = self.pending_at;
        let r = hook
            .before(IoStep::Write)
            .and_then(|()| file.write_all_at(&self.pending, at))
            .map_err(|e| io_err("write piece", &self.path, e));
        if r.is_err() {
            let n = self.held.remove(at, at + self.pending.len() as u64);
            self.unsynced = self.unsynced.saturating_sub(n);
        }
        // Given back: many transfers may be open, few are receiving at any moment.
        self.pending = Vec::new();
        r
    }
}

pub(crate) type OpenPartials = HashMap<BundleId, OpenPartial>;

impl Store {
    fn partial_path(&self, id: &BundleId) -> PathBuf {
        self.dir.join("partial").join(id.to_hex())
    }

    fn committed_journal(&self, id: &BundleId) -> Result<Option<(u64, JournalState)>> {
        let row: Option<(i64, Option<Vec<u8>>)> = self
            .conn
            .query_row(
                "SELECT length, jstate FROM bundles WHERE id = ?1 AND journal = 1",
                [id.as_bytes().as_slice()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.db(e))?;
        match row {
            None => Ok(None),
            Some((len, st)) => {
                let st = JournalState::decode(st.as_deref().unwrap_or_default())
                    .map_err(|e| corrupt(*id, &e.to_string()))?;
                Ok(Some((len as u64, st)))
            }
        }
    }

    /// Starts (or resumes) receiving the bundle described by `signed`.
    ///
    /// A transfer of an older version of the same bundle is abandoned, except that a
    /// journal keeps the bytes it already holds: they are a prefix of every later version.
    pub fn begin_partial(&mut self, signed: &SignedManifest) -> Result<PartialInfo> {
        let m = signed.manifest();
        self.check_fresh(m)?;
        self.load_partial(&m.id)?;
        if let Some(p) = self.partials.get_mut(&m.id) {
            let have = p.manifest.version();
            if have == m.version {
                return Ok(PartialInfo {
                    manifest: p.manifest.clone(),
                    held: p.held.clone(),
                });
            }
            if have > m.version {
                return Err(StoreError::Stale {
                    id: m.id,
                    held: have,
                    offered: m.version,
                });
            }
            if m.journal && p.manifest.manifest().journal {
                p.manifest = signed.clone();
                let info = PartialInfo {
                    manifest: signed.clone(),
                    held: p.held.clone(),
                };
                self.conn
                    .execute(
                        "UPDATE partials SET version = ?2, manifest = ?3 WHERE id = ?1",
                        params![
                            m.id.as_bytes().as_slice(),
                            m.version as i64,
                            signed.as_bytes()
                        ],
                    )
                    .map_err(|e| self.db(e))?;
                return Ok(info);
            }
            self.abandon_partial(&m.id)?;
        }
        self.check_room(signed)?;
        if !m.journal && m.length <= self.config.inline_max {
            let info = PartialInfo {
                manifest: signed.clone(),
                held: RangeSet::new(),
            };
            self.partials.insert(
                m.id,
                OpenPartial::new(
                    signed.clone(),
                    RangeSet::new(),
                    Body::Memory(vec![0; m.length as usize]),
                    PathBuf::new(),
                    0,
                ),
            );
            return Ok(info);
        }
        let (path, base) = if m.journal {
            let base = self.committed_journal(&m.id)?.map_or(0, |(l, _)| l);
            (self.journal_path(&m.id), base)
        } else {
            (self.partial_path(&m.id), 0)
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(!m.journal)
            .open(&path)
            .map_err(|e| io_err("create partial file", &path, e))?;
        if m.journal {
            file.set_len(base)
                .map_err(|e| io_err("truncate journal", &path, e))?;
        }
        let mut held = RangeSet::new();
        held.insert(0, base);
        self.step(IoStep::Commit, "record transfer", &self.db_path.clone())?;
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO partials (id, version, manifest, ranges) VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    m.id.as_bytes().as_slice(),
                    m.version as i64,
                    signed.as_bytes(),
                    held.encode()
                ])
            })
            .map_err(|e| self.db(e))?;
        let info = PartialInfo {
            manifest: signed.clone(),
            held: held.clone(),
        };
        self.partials.insert(
            m.id,
            OpenPartial::new(signed.clone(), held, Body::File(file), path, base),
        );
        Ok(info)
    }

    /// Refuses a new transfer whose claimed payload can never be held: larger than the
    /// quota (eviction cannot make room for it), or than the disk's free space less what
    /// the transfers in progress still need. A peer claiming terabytes is thus turned
    /// away before a byte is written; one that merely does not fit beside the bundles
    /// held is still taken (eviction decides at commit).
    fn check_room(&self, signed: &SignedManifest) -> Result<()> {
        let m = signed.manifest();
        let need = m.length + signed.as_bytes().len() as u64;
        if let Some(quota) = self.config.quota
            && need > quota
        {
            return Err(StoreError::NoRoom {
                id: m.id,
                need,
                room: format!("the store quota of {quota} bytes"),
            });
        }
        let owed: u64 = self
            .partials
            .values()
            .map(|p| {
                p.manifest
                    .manifest()
                    .length
                    .saturating_sub(p.held.covered())
            })
            .sum();
        if let Some(free) = free_space(&self.dir)
            && need.saturating_add(owed) > free
        {
            return Err(StoreError::NoRoom {
                id: m.id,
                need,
                room: format!(
                    "the {free} bytes free on the disk holding {}, less {owed} bytes owed to transfers in progress",
                    self.dir.display()
                ),
            });
        }
        Ok(())
    }

    /// Loads a transfer recorded by an earlier run into memory, if there is one.
    fn load_partial(&mut self, id: &BundleId) -> Result<()> {
        if self.partials.contains_key(id) {
            return Ok(());
        }
        let row: Option<(Vec<u8>, Vec<u8>)> = self
            .conn
            .prepare_cached("SELECT manifest, ranges FROM partials WHERE id = ?1")
            .and_then(|mut st| {
                st.query_row([id.as_bytes().as_slice()], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(|e| self.db(e))?;
        let Some((mbytes, rbytes)) = row else {
            return Ok(());
        };
        let manifest =
            SignedManifest::decode_stored(&mbytes).map_err(|e| corrupt(*id, &e.to_string()))?;
        let held = RangeSet::decode(&rbytes)
            .map(|(r, _)| r)
            .ok_or_else(|| corrupt(*id, "stored ranges"))?;
        let journal = manifest.manifest().journal;
        let path = if journal {
            self.journal_path(id)
        } else {
            self.partial_path(id)
        };
        let base = if journal {
            self.committed_journal(id)?.map_or(0, |(l, _)| l)
        } else {
            0
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_err("open partial file", &path, e))?;
        self.partials.insert(
            *id,
            OpenPartial::new(manifest, held, Body::File(file), path, base),
        );
        Ok(())
    }

    /// The transfer of `id` in progress, if any.
    pub fn partial(&mut self, id: &BundleId) -> Result<Option<PartialInfo>> {
        self.load_partial(id)?;
        Ok(self.partials.get(id).map(|p| PartialInfo {
            manifest: p.manifest.clone(),
            held: p.held.clone(),
        }))
    }

    /// Every transfer in progress (as last checkpointed, merged with pieces since, and
    /// those received in memory).
    pub fn partials(&mut self) -> Result<Vec<PartialInfo>> {
        let ids: Vec<Vec<u8>> = {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT id FROM partials")
                .map_err(|e| self.db(e))?;
            stmt.query_map([], |r| r.get(0))
                .map_err(|e| self.db(e))?
                .collect::<rusqlite::Result<_>>()
                .map_err(|e| self.db(e))?
        };
        let mut out = Vec::new();
        for id in ids {
            let Ok(id) = <[u8; 32]>::try_from(id.as_slice()) else {
                continue;
            };
            if let Some(p) = self.partial(&BundleId(id))? {
                out.push(p);
            }
        }
        out.extend(
            self.partials
                .values()
                .filter(|p| matches!(p.body, Body::Memory(_)))
                .map(|p| PartialInfo {
                    manifest: p.manifest.clone(),
                    held: p.held.clone(),
                }),
        );
        Ok(out)
    }

    /// Transfers received in memory, recorded nowhere (see the module docs).
    pub(crate) fn memory_partials(&self) -> usize {
        self.partials
            .values()
            .filter(|p| matches!(p.body, Body::Memory(_)))
            .count()
    }

    /// Stores one received piece of bundle `id` at `version`.
    pub fn write_piece(
        &mut self,
        id: &BundleId,
        version: u64,
        offset: u64,
        data: &[u8],
    ) -> Result<PieceOutcome> {
        self.load_partial(id)?;
        let Some(p) = self.partials.get_mut(id) else {
            return Err(StoreError::NoPartial { id: *id, version });
        };
        if p.manifest.version() != version {
            return Err(StoreError::NoPartial { id: *id, version });
        }
        let length = p.manifest.manifest().length;
        let end = offset.saturating_add(data.len() as u64);
        if end > length || data.is_empty() {
            return Err(StoreError::PieceOutOfRange {
                id: *id,
                start: offset,
                end,
                length,
            });
        }
        if p.held.contains(offset, end) {
            return Ok(PieceOutcome::Duplicate);
        }
        let new_bytes = match &mut p.body {
            Body::Memory(buf) => {
                buf[offset as usize..end as usize].copy_from_slice(data);
                p.held.insert(offset, end)
            }
            Body::File(file) if p.manifest.manifest().journal => {
                self.hook
                    .before(IoStep::Write)
                    .map_err(|e| io_err("write piece", &p.path, e))?;
                file.write_all_at(data, offset)
                    .map_err(|e| io_err("write piece", &p.path, e))?;
                let new_bytes = p.held.insert(offset, end);
                p.unsynced += new_bytes;
                new_bytes
            }
            Body::File(_) => {
                // Bytes already hashed are never written again (a piece overlapping
                // them, maybe with other bytes, would change what was verified).
                let skip = p
                    .hashed
                    .as_ref()
                    .map_or(0, |h| h.len().saturating_sub(offset).min(data.len() as u64));
                let (at, bytes) = (offset + skip, &data[skip as usize..]);
                if !p.pending.is_empty() && at != p.pending_at + p.pending.len() as u64 {
                    p.write_pending(&*self.hook)?;
                }
                if p.pending.is_empty() {
                    p.pending_at = at;
                    p.pending.reserve_exact(WRITE_BEHIND + bytes.len());
                }
                p.pending.extend_from_slice(bytes);
                let new_bytes = p.held.insert(offset, end);
                p.unsynced += new_bytes;
                if p.pending.len() >= WRITE_BEHIND {
                    p.write_pending(&*self.hook)?;
                }
                let start = p.held.iter().next().filter(|r| r.0 == 0).map_or(0, |r| r.1);
                let step_due = p
                    .hashed
                    .as_ref()
                    .is_some_and(|h| start >= h.len() + HASH_STEP && start < length);
                if step_due {
                    p.write_pending(&*self.hook)?;
                }
                if step_due
                    && let (Body::File(file), Some(h)) = (&p.body, p.hashed.as_deref_mut())
                    && let Err(e) = hash_file_range(file, h.len(), start, &p.path, |b| h.update(b))
                {
                    // The piece is stored: only the running hash is given up, and
                    // completion hashes the whole file (where the error, if it lasts,
                    // fails the transfer).
                    tracing::warn!(%id, "hashing a transfer as it arrives failed: {e}");
                    p.hashed = None;
                }
                new_bytes
            }
        };
        if p.held.is_complete(length) {
            return self
                .finish_partial(id)
                .map(|b| PieceOutcome::Complete(Box::new(b)));
        }
        if p.unsynced >= AUTO_CHECKPOINT_BYTES {
            self.checkpoint()?;
        }
        Ok(PieceOutcome::Stored { new_bytes })
    }

    /// Publishes `signed`, an older version of the journal being received, once the
    /// transfer holds its whole payload (a prefix of the version in transfer). The
    /// transfer carries on towards its own version from there. A journal's reader can
    /// thus see each version as soon as its bytes are in, however far the writer has
    /// moved on. A prefix that fails verification abandons the transfer, as a failed
    /// completion does.
    pub fn commit_journal_prefix(&mut self, signed: &SignedManifest) -> Result<StoredBundle> {
        let m = signed.manifest().clone();
        self.check_fresh(&m)?;
        self.load_partial(&m.id)?;
        let no_partial = StoreError::NoPartial {
            id: m.id,
            version: m.version,
        };
        let Some(p) = self.partials.get(&m.id) else {
            return Err(no_partial);
        };
        if !m.journal
            || !p.manifest.manifest().journal
            || p.manifest.version() <= m.version
            || m.length <= p.base
            || !p.held.contains(0, m.length)
        {
            return Err(no_partial);
        }
        let Body::File(file) = &p.body else {
            return Err(no_partial);
        };
        self.hook
            .before(IoStep::Sync)
            .map_err(|e| io_err("sync piece", &p.path, e))?;
        file.sync_data()
            .map_err(|e| io_err("sync piece", &p.path, e))?;
        let (base, mut state) = match self.committed_journal(&m.id)? {
            Some(x) => x,
            None => (0, JournalState::new()),
        };
        hash_file_range(file, base, m.length, &p.path.clone(), |b| state.update(b))?;
        if let Err(e) = check_payload(&m, m.length, state.finalize()) {
            tracing::warn!(id = %m.id, version = m.version, "journal prefix failed verification: {e}");
            self.abandon_partial(&m.id)?;
            return Err(e);
        }
        let stored = self.commit_received(signed, None, Some(&state), None)?;
        if let Some(p) = self.partials.get_mut(&m.id) {
            p.base = m.length;
        }
        Ok(stored)
    }

    /// Makes every piece received so far durable and records its range.
    pub fn checkpoint(&mut self) -> Result<()> {
        let dirty: Vec<BundleId> = self
            .partials
            .iter()
            .filter(|(_, p)| p.unsynced > 0)
            .map(|(id, _)| *id)
            .collect();
        if dirty.is_empty() {
            return Ok(());
        }
        for id in &dirty {
            let p = self.partials.get_mut(id).expect("listed above");
            p.write_pending(&*self.hook)?;
            // Only file bodies count unsynced bytes.
            let Body::File(file) = &p.body else { continue };
            self.hook
                .before(IoStep::Sync)
                .map_err(|e| io_err("sync piece", &p.path, e))?;
            file.sync_data()
                .map_err(|e| io_err("sync piece", &p.path, e))?;
        }
        self.step(IoStep::Commit, "record pieces", &self.db_path.clone())?;
        let tx = Savepoint::new(&self.conn).map_err(|e| db_err(&self.db_path, e))?;
        for id in &dirty {
            let p = &self.partials[id];
            tx.execute(
                "UPDATE partials SET ranges = ?2 WHERE id = ?1",
                params![id.as_bytes().as_slice(), p.held.encode()],
            )
            .map_err(|e| db_err(&self.db_path, e))?;
        }
        tx.release().map_err(|e| db_err(&self.db_path, e))?;
        for id in &dirty {
            if let Some(p) = self.partials.get_mut(id) {
                p.unsynced = 0;
            }
        }
        Ok(())
    }

    fn finish_partial(&mut self, id: &BundleId) -> Result<StoredBundle> {
        let hook = self.hook.clone();
        self.partials
            .get_mut(id)
            .ok_or(StoreError::NoPartial {
                id: *id,
                version: 0,
            })?
            .write_pending(&*hook)?;
        let p = &self.partials[id];
        let file = match &p.body {
            Body::File(file) => file,
            Body::Memory(_) => return self.finish_in_memory(id),
        };
        let signed = p.manifest.clone();
        let m = signed.manifest().clone();
        self.hook
            .before(IoStep::Sync)
            .map_err(|e| io_err("sync piece", &p.path, e))?;
        file.sync_all()
            .map_err(|e| io_err("sync piece", &p.path, e))?;
        let path = p.path.clone();
        let verified = if m.journal {
            let (base, mut state) = match self.committed_journal(id)? {
                Some(x) => x,
                None => (0, JournalState::new()),
            };
            debug_assert_eq!(base, p.base);
            hash_file_range(file, base, m.length, &path, |b| state.update(b))
                .map(|()| (m.length, state.finalize(), Some(state)))
        } else {
            // The rest after what was hashed as it arrived.
            let mut h = p.hashed.as_deref().cloned().unwrap_or_default();
            hash_file_range(file, h.len(), m.length, &path, |b| h.update(b))
                .map(|()| (h.len(), h.finalize(), None))
        };
        let (len, hash, jstate) = verified?;
        if let Err(e) = check_payload(&m, len, hash) {
            tracing::warn!(%id, version = m.version, "completed transfer failed verification: {e}");
            self.abandon_partial(id)?;
            return Err(e);
        }
        let mut linked = None;
        let committed = if m.journal {
            self.commit_received(&signed, None, jstate.as_ref(), Some(m.version))
        } else if m.length <= self.config.inline_max {
            let mut data = Vec::with_capacity(m.length as usize);
            File::open(&path)
                .and_then(|f| f.take(m.length).read_to_end(&mut data))
                .map_err(|e| io_err("read partial file", &path, e))
                .and_then(|_| self.commit_received(&signed, Some(&data), None, Some(m.version)))
        } else {
            let dest = self.payload_path(&m.hash);
            let link = if dest.exists() {
                Ok(())
            } else {
                // A second name, not a rename: until the row commits, the transfer's
                // recorded ranges must stay backed by its own file.
                linked = Some(dest.clone());
                self.link_into_place(&path, &dest)
            };
            link.and_then(|()| self.commit_received(&signed, None, None, Some(m.version)))
        };
        match committed {
            Ok(stored) => {
                if !m.journal {
                    self.remove_after_commit(path);
                }
                self.partials.remove(id);
                Ok(stored)
            }
            Err(e) => {
                if let Some(dest) = linked {
                    let _ = fs::remove_file(&dest);
                }
                // No room (quota, full disk): the transfer is dropped and its bytes
                // freed, leaving nothing behind (the sender is asked again later, when
                // there may be room); kept, a copy nobody can commit would hold its space
                // for ever. Any other failure keeps the transfer as recorded, to be
                // completed on a later try or after a restart.
                if matches!(
                    e,
                    StoreError::QuotaExceeded { .. } | StoreError::DiskFull { .. }
                ) {
                    tracing::warn!(%id, version = m.version, "received bundle could not be stored, its bytes are freed: {e}");
                    self.abandon_partial(id)?;
                }
                Err(e)
            }
        }
    }

    /// Commits a received bundle, in the open batch if there is one.
    fn commit_received(
        &mut self,
        signed: &SignedManifest,
        inline: Option<&[u8]>,
        jstate: Option<&JournalState>,
        drop_partial: Option<u64>,
    ) -> Result<StoredBundle> {
        self.commit_row(
            signed,
            inline,
            jstate,
            crate::Origin::Received,
            drop_partial,
        )
    }

    /// Verifies and commits a payload received in memory. As with a file, a transfer
    /// that cannot be stored for want of room is dropped, and one that failed otherwise
    /// is kept to be committed on a later try.
    fn finish_in_memory(&mut self, id: &BundleId) -> Result<StoredBundle> {
        let Some(p) = self.partials.remove(id) else {
            return Err(StoreError::NoPartial {
                id: *id,
                version: 0,
            });
        };
        let Body::Memory(data) = &p.body else {
            unreachable!("finish_in_memory is called for memory bodies only");
        };
        let m = p.manifest.manifest();
        let mut h = PayloadHasher::new();
        h.update(data);
        if let Err(e) = check_payload(m, h.len(), h.finalize()) {
            tracing::warn!(%id, version = m.version, "completed transfer failed verification: {e}");
            return Err(e);
        }
        match self.commit_received(&p.manifest, Some(data), None, Some(m.version)) {
            Ok(stored) => Ok(stored),
            Err(e) => {
                if matches!(
                    e,
                    StoreError::QuotaExceeded { .. } | StoreError::DiskFull { .. }
                ) {
                    tracing::warn!(%id, version = m.version, "received bundle could not be stored, its bytes are freed: {e}");
                } else {
                    self.partials.insert(*id, p);
                }
                Err(e)
            }
        }
    }

    /// Drops a transfer and the bytes it held (a journal keeps its committed prefix).
    pub fn abandon_partial(&mut self, id: &BundleId) -> Result<()> {
        self.load_partial(id)?;
        if let Some(p) = self.partials.remove(id) {
            match p.body {
                // Recorded nowhere (a recorded older version was abandoned when it began).
                Body::Memory(_) => return Ok(()),
                Body::File(file) if p.manifest.manifest().journal => {
                    let _ = file.set_len(p.base);
                }
                Body::File(_) => {
                    let _ = fs::remove_file(&p.path);
                }
            }
        }
        self.conn
            .execute(
                "DELETE FROM partials WHERE id = ?1",
                [id.as_bytes().as_slice()],
            )
            .map_err(|e| self.db(e))?;
        Ok(())
    }
}

fn hash_file_range(
    f: &File,
    start: u64,
    end: u64,
    path: &std::path::Path,
    mut sink: impl FnMut(&[u8]),
) -> Result<()> {
    let mut buf = vec![0u8; 256 * 1024];
    let mut at = start;
    while at < end {
        let n = ((end - at) as usize).min(buf.len());
        f.read_exact_at(&mut buf[..n], at)
            .map_err(|e| io_err("read partial file", path, e))?;
        sink(&buf[..n]);
        at += n as u64;
    }
    Ok(())
}

/// Bytes an unprivileged writer may still use on the file system holding `dir` (`None`
/// when the file system cannot say).
fn free_space(dir: &Path) -> Option<u64> {
    let st = nix::sys::statvfs::statvfs(dir).ok()?;
    Some((st.blocks_available() as u64).saturating_mul(st.fragment_size() as u64))
}
