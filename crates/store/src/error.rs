use std::io;
use std::path::PathBuf;

use skywave_bundle::{BundleId, ManifestError, PayloadHash, SealError};

/// Why a store operation failed. Nothing already stored is damaged by any of these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "the disk holding {path} is full while trying to {op}; free space or lower the store quota"
    )]
    DiskFull { op: &'static str, path: PathBuf },
    #[error("store database {path}: {source}")]
    Db {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "store {dir} is in use by another skywave process; stop it, or give this one its own --dir"
    )]
    Locked { dir: PathBuf },
    #[error("{path} is not a skywave store: {reason}")]
    NotAStore { path: PathBuf, reason: String },
    #[error("no bundle {0} in this store")]
    NotFound(BundleId),
    #[error("bundle {id} version {offered} is stale: version {held} is already held")]
    Stale {
        id: BundleId,
        held: u64,
        offered: u64,
    },
    #[error("manifest rejected: {0}")]
    Manifest(#[from] ManifestError),
    #[error("cannot seal the payload: {0}")]
    Seal(#[from] SealError),
    #[error("payload for {id} is {got} bytes but its manifest says {expected}")]
    LengthMismatch {
        id: BundleId,
        expected: u64,
        got: u64,
    },
    #[error("payload for {id} hashes to {got} but its manifest says {expected}")]
    HashMismatch {
        id: BundleId,
        expected: PayloadHash,
        got: PayloadHash,
    },
    #[error("journal {id} version {offered} does not extend the {held} bytes already held")]
    JournalFork {
        id: BundleId,
        held: u64,
        offered: u64,
    },
    #[error(
        "storing {need} bytes would exceed the store quota of {quota} bytes ({used} used, {evictable} evictable); raise the quota or delete bundles (`skywave rm`)"
    )]
    QuotaExceeded {
        need: u64,
        quota: u64,
        used: u64,
        evictable: u64,
    },
    #[error(
        "bundle {id} claims {need} bytes, which cannot fit {room}; it is refused before any byte is received"
    )]
    NoRoom {
        id: BundleId,
        need: u64,
        /// What it does not fit: "the store quota of N bytes", or "the N bytes free on
        /// the disk holding DIR, less M bytes owed to transfers in progress".
        room: String,
    },
    #[error(
        "bundle {id} expired at {at} (Unix seconds); no node keeps, offers or accepts it after that"
    )]
    Expired { id: BundleId, at: u64 },
    #[error("no secret key for bundle {0} in the keyring; only its author can change it")]
    NoKey(BundleId),
    #[error("bundle {0} is not a journal; only journals can be appended to")]
    NotJournal(BundleId),
    #[error("no transfer of bundle {id} version {version} is in progress")]
    NoPartial { id: BundleId, version: u64 },
    #[error("piece [{start}, {end}) lies outside bundle {id}'s {length} bytes")]
    PieceOutOfRange {
        id: BundleId,
        start: u64,
        end: u64,
        length: u64,
    },
    #[error("stored data for bundle {id} is damaged: {reason}; run `skywave fsck`")]
    Corrupt { id: BundleId, reason: String },
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

pub(crate) fn io_err(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> StoreError {
    let path = path.into();
    // ENOSPC and EDQUOT: say what to do rather than "os error 28".
    if matches!(source.raw_os_error(), Some(28) | Some(122))
        || source.kind() == io::ErrorKind::StorageFull
    {
        return StoreError::DiskFull { op, path };
    }
    StoreError::Io { op, path, source }
}

pub(crate) fn db_err(path: impl Into<PathBuf>, source: rusqlite::Error) -> StoreError {
    let path = path.into();
    if let rusqlite::Error::SqliteFailure(e, _) = &source
        && e.code == rusqlite::ErrorCode::DiskFull
    {
        return StoreError::DiskFull {
            op: "commit to the store database",
            path,
        };
    }
    StoreError::Db { path, source }
}
