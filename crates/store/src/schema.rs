//! The SQLite schema and the queries that need a transaction of their own.

use rusqlite::{Connection, params};
use skywave_bundle::{BundleId, Identity};

const SCHEMA_VERSION: i64 = 2;

pub(crate) fn init(conn: &Connection, sync_every_commit: bool) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(
        None,
        "synchronous",
        if sync_every_commit { "FULL" } else { "NORMAL" },
    )?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // Checkpoint the WAL every 16 MiB rather than 4: fewer, larger copies into the db.
    conn.pragma_update(None, "wal_autocheckpoint", 4000)?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
         INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', 2), ('deleted_max_token', 0);
         CREATE TABLE IF NOT EXISTS bundles (
             id        BLOB PRIMARY KEY,
             version   INTEGER NOT NULL,
             token     INTEGER NOT NULL UNIQUE,
             length    INTEGER NOT NULL,
             hash      BLOB NOT NULL,
             service   TEXT,
             name      TEXT,
             recipient BLOB,
             sender    BLOB,
             date      INTEGER NOT NULL,
             journal   INTEGER NOT NULL,
             own       INTEGER NOT NULL,
             manifest  BLOB NOT NULL,
             inline    BLOB,
             jstate    BLOB,
             expires   INTEGER,
             deleted   INTEGER NOT NULL DEFAULT 0
         ) WITHOUT ROWID;
         CREATE INDEX IF NOT EXISTS bundles_service ON bundles (service, token);
         CREATE INDEX IF NOT EXISTS bundles_recipient ON bundles (recipient, token)
             WHERE recipient IS NOT NULL;
         CREATE INDEX IF NOT EXISTS bundles_hash ON bundles (hash) WHERE inline IS NULL;
         CREATE TABLE IF NOT EXISTS partials (
             id       BLOB PRIMARY KEY,
             version  INTEGER NOT NULL,
             manifest BLOB NOT NULL,
             ranges   BLOB NOT NULL
         ) WITHOUT ROWID;",
    )?;
    let mut v: i64 = conn.query_row(
        "SELECT value FROM meta WHERE key = 'schema_version'",
        [],
        |r| r.get(0),
    )?;
    if v == 1 {
        // Version 2 adds tombstones and expiry. No version-1 manifest carries either
        // record, so the defaults describe every existing row.
        conn.execute_batch(
            "BEGIN;
             ALTER TABLE bundles ADD COLUMN expires INTEGER;
             ALTER TABLE bundles ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;
             UPDATE meta SET value = 2 WHERE key = 'schema_version';
             COMMIT;",
        )?;
        v = 2;
    }
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS bundles_expires ON bundles (expires) WHERE expires IS NOT NULL;",
    )?;
    totals(conn)?;
    if v != SCHEMA_VERSION {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISMATCH),
            Some(format!(
                "store schema version {v} is not {SCHEMA_VERSION}; upgrade skywave"
            )),
        ));
    }
    Ok(())
}

/// Keeps the store's totals (bundles, payload and manifest bytes) in a one-row table
/// that triggers update with every row written or removed, so status screens and the
/// quota check read them in O(1) instead of summing a million rows under the store's
/// lock. Tombstones are not counted as bundles (their bytes are). A row replaced by
/// `INSERT OR REPLACE` fires the delete trigger only with `recursive_triggers` on.
fn totals(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "recursive_triggers", "ON")?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS totals (
             k        INTEGER PRIMARY KEY CHECK (k = 0),
             bundles  INTEGER NOT NULL,
             payload  INTEGER NOT NULL,
             manifest INTEGER NOT NULL
         );
         CREATE TRIGGER IF NOT EXISTS totals_insert AFTER INSERT ON bundles BEGIN
             UPDATE totals SET bundles = bundles + (NEW.deleted = 0),
                 payload = payload + NEW.length, manifest = manifest + length(NEW.manifest);
         END;
         CREATE TRIGGER IF NOT EXISTS totals_delete AFTER DELETE ON bundles BEGIN
             UPDATE totals SET bundles = bundles - (OLD.deleted = 0),
                 payload = payload - OLD.length, manifest = manifest - length(OLD.manifest);
         END;
         CREATE TRIGGER IF NOT EXISTS totals_update AFTER UPDATE ON bundles BEGIN
             UPDATE totals SET bundles = bundles - (OLD.deleted = 0) + (NEW.deleted = 0),
                 payload = payload - OLD.length + NEW.length,
                 manifest = manifest - length(OLD.manifest) + length(NEW.manifest);
         END;",
    )?;
    let seeded: i64 = conn.query_row("SELECT count(*) FROM totals", [], |r| r.get(0))?;
    if seeded == 0 {
        // Once per store (a new one, or one from before the table): sum what is there.
        conn.execute(
            "INSERT INTO totals (k, bundles, payload, manifest)
             SELECT 0, coalesce(sum(deleted = 0), 0), coalesce(sum(length), 0),
                    coalesce(sum(length(manifest)), 0) FROM bundles",
            [],
        )?;
    }
    Ok(())
}

/// Bundles (tombstones aside), payload bytes and manifest bytes held.
pub(crate) fn read_totals(conn: &Connection) -> rusqlite::Result<(u64, u64, u64)> {
    conn.prepare_cached("SELECT bundles, payload, manifest FROM totals")?
        .query_row([], |r| {
            Ok((
                r.get::<_, i64>(0)?.max(0) as u64,
                r.get::<_, i64>(1)?.max(0) as u64,
                r.get::<_, i64>(2)?.max(0) as u64,
            ))
        })
}

/// The token the next insert will take.
///
/// It is one past the highest token ever handed out: the highest held by a row, or by a
/// row since deleted (recorded in `meta` only when a delete takes the highest one). So
/// an insert writes no counter page of its own.
pub(crate) fn next_token(conn: &Connection) -> rusqlite::Result<u64> {
    conn.prepare_cached(
        "SELECT max(coalesce((SELECT max(token) FROM bundles), 0),
                    (SELECT value FROM meta WHERE key = 'deleted_max_token')) + 1",
    )?
    .query_row([], |r| r.get::<_, i64>(0))
    .map(|v| v as u64)
}

/// Deletes bundle rows, keeping the token high-water mark if one of them held it.
pub(crate) fn delete_bundle(conn: &Connection, id: &BundleId) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE meta SET value = max(value, (SELECT token FROM bundles WHERE id = ?1))
         WHERE key = 'deleted_max_token' AND (SELECT token FROM bundles WHERE id = ?1) IS NOT NULL",
        [id.as_bytes().as_slice()],
    )?;
    conn.execute(
        "DELETE FROM bundles WHERE id = ?1",
        [id.as_bytes().as_slice()],
    )?;
    Ok(())
}

/// Evicts to make room for `need` bytes under `quota`.
///
/// Policy: bundles authored here, bundles addressed to this node and tombstones (small,
/// and dropping one would let the deleted version come back) are never evicted; of the
/// rest, expired ones go first, then the least recently received (lowest token). Either enough is
/// evicted (returns what was evicted, for file removal after commit) or nothing is and
/// `Err(evictable bytes)` comes back.
#[allow(clippy::type_complexity)]
pub(crate) fn evict(
    tx: &Connection,
    quota: u64,
    used: u64,
    need: u64,
    incoming: &BundleId,
    node: &Identity,
    now: u64,
) -> rusqlite::Result<Result<Vec<(BundleId, Vec<u8>, bool)>, u64>> {
    let deficit = (used + need).saturating_sub(quota);
    let mut stmt = tx.prepare(
        "SELECT id, hash, journal, length + length(manifest) FROM bundles
         WHERE own = 0 AND deleted = 0 AND id != ?1 AND (recipient IS NULL OR recipient != ?2)
         ORDER BY (expires IS NOT NULL AND expires <= ?3) DESC, token",
    )?;
    let mut rows = stmt.query(params![
        incoming.as_bytes().as_slice(),
        node.as_bytes().as_slice(),
        now as i64
    ])?;
    let mut chosen = Vec::new();
    let mut freed = 0u64;
    while freed < deficit {
        let Some(r) = rows.next()? else { break };
        let id: Vec<u8> = r.get(0)?;
        let size: i64 = r.get(3)?;
        freed += size as u64;
        if let Ok(id) = <[u8; 32]>::try_from(id.as_slice()) {
            chosen.push((BundleId(id), r.get::<_, Vec<u8>>(1)?, r.get::<_, bool>(2)?));
        }
    }
    drop(rows);
    drop(stmt);
    if freed < deficit {
        // Count all that could go, for the error message.
        let mut evictable = freed;
        let mut stmt = tx.prepare(
            "SELECT coalesce(sum(length + length(manifest)), 0) FROM bundles
             WHERE own = 0 AND deleted = 0 AND id != ?1 AND (recipient IS NULL OR recipient != ?2)",
        )?;
        evictable = evictable.max(stmt.query_row(
            params![incoming.as_bytes().as_slice(), node.as_bytes().as_slice()],
            |r| r.get::<_, i64>(0),
        )? as u64);
        return Ok(Err(evictable));
    }
    for (id, _, _) in &chosen {
        delete_bundle(tx, id)?;
    }
    Ok(Ok(chosen))
}
