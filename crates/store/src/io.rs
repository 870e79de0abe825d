//! A seam in front of every durable step, so tests can fail any one of them.
//!
//! The store performs its own file and database operations; before each one it asks
//! the [`IoHook`], which may return an error in its place (a full disk, a crash point).

use std::fmt::Debug;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The durable steps of the store, in the order an insert takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoStep {
    /// Writing payload bytes to a temporary or partial file.
    Write,
    /// fsync of a file or directory.
    Sync,
    /// Renaming a finished temporary file into place.
    Rename,
    /// Committing a database transaction.
    Commit,
    /// Removing a file that is no longer referenced.
    Remove,
}

pub trait IoHook: Send + Sync + Debug {
    /// Called before each step; an error is returned to the caller instead of doing it.
    fn before(&self, step: IoStep) -> io::Result<()>;
}

/// The hook used in production: every step proceeds.
#[derive(Debug, Default)]
pub struct RealIo;

impl IoHook for RealIo {
    fn before(&self, _: IoStep) -> io::Result<()> {
        Ok(())
    }
}

/// Fails the `n`-th step (0-based) and every step after it with the given error kind,
/// as a disk that filled up or a process that died at that point would.
#[derive(Debug)]
pub struct FailAfter {
    remaining: AtomicU64,
    error: fn() -> io::Error,
}

impl FailAfter {
    pub fn new(n: u64, error: fn() -> io::Error) -> Arc<Self> {
        Arc::new(Self {
            remaining: AtomicU64::new(n),
            error,
        })
    }

    /// ENOSPC, as a full disk reports it.
    pub fn disk_full() -> io::Error {
        io::Error::from_raw_os_error(28)
    }

    /// Steps left before failures start.
    pub fn remaining(&self) -> u64 {
        self.remaining.load(Ordering::SeqCst)
    }
}

impl IoHook for FailAfter {
    fn before(&self, _: IoStep) -> io::Result<()> {
        let left = self.remaining.load(Ordering::SeqCst);
        if left == 0 {
            return Err((self.error)());
        }
        self.remaining.store(left - 1, Ordering::SeqCst);
        Ok(())
    }
}
