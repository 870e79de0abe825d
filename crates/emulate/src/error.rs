//! Errors that name what failed and what to do about it.

use std::io;
use std::net::SocketAddr;

use skywave_sim::ConfigError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmulateError {
    #[error("invalid link: {0}")]
    Config(#[from] ConfigError),
    #[error("link '{link}' is a {kind} link, but {mode} mode needs a {need} link; {hint}")]
    WrongKind {
        link: String,
        kind: &'static str,
        mode: &'static str,
        need: &'static str,
        hint: &'static str,
    },
    #[error("cannot bind {what} to {addr}: {source}; pick a free address or port")]
    Bind {
        what: &'static str,
        addr: SocketAddr,
        source: io::Error,
    },
    #[error("cannot connect to side B at {addr}: {source}; start the program on side B first")]
    Connect { addr: SocketAddr, source: io::Error },
    #[error("cannot create a pseudo-terminal: {0}; check that /dev/ptmx is usable")]
    Pty(io::Error),
    #[error("cannot set up the timer: {0}")]
    Timer(io::Error),
    #[error("TUN mode: {what}: {source}{hint}")]
    Tun {
        what: String,
        source: io::Error,
        hint: &'static str,
    },
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: io::Error,
    },
}

impl EmulateError {
    pub(crate) fn io(what: &'static str) -> impl FnOnce(io::Error) -> EmulateError {
        move |source| EmulateError::Io { what, source }
    }
}
