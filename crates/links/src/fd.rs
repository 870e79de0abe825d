//! Registering owned descriptors with the tokio reactor.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;

use tokio::io::unix::AsyncFd;

/// Registers an open file (a tty or pty master) with the reactor.
pub(crate) fn register(f: File) -> io::Result<AsyncFd<File>> {
    // SAFETY: `File` owns its descriptor: it is open, and stays open and the same for as
    // long as the `AsyncFd` owns the `File`.
    Ok(unsafe { AsyncFd::register(f) }?)
}
