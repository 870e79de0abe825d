//! Registering owned descriptors with the tokio reactor.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;

use tokio::io::unix::AsyncFd;

use crate::clock::TimerFdOwned;

/// Registers an open file (pty master, TUN device).
pub(crate) fn register_file(f: File) -> io::Result<AsyncFd<File>> {
    // SAFETY: `File` owns its descriptor: it is open, and stays open and the same for as
    // long as the `AsyncFd` owns the `File`.
    Ok(unsafe { AsyncFd::register(f) }?)
}

/// Registers a timerfd.
pub(crate) fn register_timer(t: TimerFdOwned) -> io::Result<AsyncFd<TimerFdOwned>> {
    // SAFETY: `TimerFdOwned` owns its descriptor (an `OwnedFd` inside nix's `TimerFd`)
    // and returns the same one from every `as_raw_fd` call.
    Ok(unsafe { AsyncFd::register(t) }?)
}
