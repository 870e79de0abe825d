//! Group commit of received bundles.
//!
//! A node receiving many small bundles spent a commit on each: a SQLite transaction that
//! writes every page it touched (the row's leaf, the token and service indexes, the
//! totals) into the WAL. Between [`Store::begin_batch`] and [`Store::end_batch`] the
//! bundles that transfers complete commit together instead: the first opens one
//! transaction, each then runs in a savepoint of it (a failed one undoes only itself),
//! and `end_batch` commits them at once. The caller ends the batch before anything it
//! did with those bundles leaves the process (a report to the sender, an event), so a
//! crash inside a batch loses only bundles nobody was told about; they are fetched again.
//!
//! Files a commit makes unreferenced (an old version's payload, a finished transfer's
//! file) are removed only once the batch is committed, as they are after a lone commit.
//! Every other change to the store (a local add, a removal, expiry) first commits the
//! open batch, so nothing but received bundles waits for it.

use std::fs;
use std::path::PathBuf;

use rusqlite::Connection;
use skywave_bundle::BundleId;

use crate::Store;
use crate::error::{Result, db_err};

#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// Between `begin_batch` and `end_batch`.
    on: bool,
    /// The batch's transaction is open.
    open: bool,
    /// Bundles committed in the open transaction.
    ids: Vec<BundleId>,
    /// Bundles whose batch failed to commit, for `end_batch` to return.
    lost: Vec<BundleId>,
    /// Removed once the transaction commits.
    files: Vec<PathBuf>,
    payloads: Vec<Vec<u8>>,
}

/// A SQLite savepoint: a transaction of its own outside a batch, nested in the batch's
/// inside one. Rolled back unless released.
pub(crate) struct Savepoint<'a> {
    conn: &'a Connection,
    done: bool,
}

impl<'a> Savepoint<'a> {
    pub(crate) fn new(conn: &'a Connection) -> rusqlite::Result<Self> {
        conn.prepare_cached("SAVEPOINT commit_row")?.execute([])?;
        Ok(Self { conn, done: false })
    }

    pub(crate) fn release(mut self) -> rusqlite::Result<()> {
        self.conn
            .prepare_cached("RELEASE commit_row")?
            .execute([])?;
        self.done = true;
        Ok(())
    }
}

impl std::ops::Deref for Savepoint<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Savepoint<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self
                .conn
                .execute_batch("ROLLBACK TO commit_row; RELEASE commit_row");
        }
    }
}

impl Store {
    /// Gathers the commits of bundles received from now on into one transaction, until
    /// [`Store::end_batch`] (see the module docs).
    pub fn begin_batch(&mut self) {
        self.batch.on = true;
    }

    /// Commits the bundles received since [`Store::begin_batch`]. If that commit fails
    /// (a full disk, an I/O error) it is rolled back and the ids of the bundles it held
    /// are returned: the caller must forget them, as removed; they are fetched again.
    pub fn end_batch(&mut self) -> Vec<BundleId> {
        self.settle();
        self.batch.on = false;
        std::mem::take(&mut self.batch.lost)
    }

    /// Commits the open batch, if any, and removes what it left unreferenced. Called
    /// also before any change that must not wait for the batch. A failed commit is
    /// rolled back and logged, and its bundles kept for `end_batch` to return.
    pub(crate) fn settle(&mut self) {
        if !self.batch.open {
            return;
        }
        self.batch.open = false;
        let ids = std::mem::take(&mut self.batch.ids);
        let files = std::mem::take(&mut self.batch.files);
        let payloads = std::mem::take(&mut self.batch.payloads);
        let committed = self
            .step(
                crate::IoStep::Commit,
                "commit received bundles",
                &self.db_path,
            )
            .and_then(|()| {
                self.conn
                    .execute_batch("COMMIT")
                    .map_err(|e| db_err(&self.db_path, e))
            });
        match committed {
            Ok(()) => {
                for f in files {
                    let _ = fs::remove_file(f);
                }
                for hash in payloads {
                    self.remove_payload_if_unused(&hash);
                }
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                tracing::error!(
                    bundles = ids.len(),
                    "committing received bundles failed, they will be fetched again: {e}"
                );
                self.batch.lost.extend(ids);
            }
        }
    }

    /// Opens the batch's transaction if a received bundle is committing inside one, and
    /// says whether the commit joins it (only received bundles do).
    pub(crate) fn join_batch(&mut self, received: bool) -> Result<bool> {
        if !(self.batch.on && received) {
            self.settle();
            return Ok(false);
        }
        if !self.batch.open {
            self.conn
                .execute_batch("BEGIN")
                .map_err(|e| db_err(&self.db_path, e))?;
            self.batch.open = true;
        }
        Ok(true)
    }

    /// Records a bundle committed inside the batch.
    pub(crate) fn joined(&mut self, id: BundleId) {
        self.batch.ids.push(id);
    }

    /// Removes `path` now, or once the batch commits if one is open.
    pub(crate) fn remove_after_commit(&mut self, path: PathBuf) {
        if self.batch.open {
            self.batch.files.push(path);
        } else {
            let _ = fs::remove_file(path);
        }
    }

    /// Removes the payload file of `hash` if no row uses it, now or once the batch
    /// commits.
    pub(crate) fn release_payload(&mut self, hash: &[u8]) {
        if self.batch.open {
            self.batch.payloads.push(hash.to_vec());
        } else {
            self.remove_payload_if_unused(hash);
        }
    }
}
