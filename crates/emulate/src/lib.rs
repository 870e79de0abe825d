//! The skywave link models on the real clock.
//!
//! The models of `skywave-sim` are sans-IO: they take `now` and say when they next need
//! attention. This crate drives one of them against the wall clock so that real programs
//! talk through it:
//!
//! - [`UdpEmulator`]: datagrams between two local UDP endpoints (no root needed).
//! - [`StreamEmulator`]: a byte stream through the HF-modem model, over a TCP
//!   listen/connect pair ([`StreamEmulator::tcp`]) or two pseudo-terminals
//!   ([`StreamEmulator::pty`]) so serial programs can be tested unmodified.
//! - [`TunEmulator`]: two network namespaces joined by TUN devices, so unmodified kernel
//!   TCP runs through the model (needs root).
//!
//! Real time maps to [`SimTime`] as the time elapsed since the emulator started. Timers
//! are armed with a `timerfd` (nanosecond resolution), not the millisecond tokio timer,
//! so a 50 ms delay is not rounded up by a whole tick. Serialization is scheduled by the
//! model from its own event times, so a late wake-up delays one delivery but never slows
//! the link down. The model's randomness is seeded as in the simulator (link 0), so loss
//! and jitter draws follow the seed; what arrives when still depends on the wall clock.
//!
//! ```no_run
//! # async fn demo() -> Result<(), skywave_emulate::EmulateError> {
//! use skywave_emulate::{Options, UdpEmulator};
//! let link = "rate=2Mbps,delay=50ms".parse().unwrap();
//! let emu = UdpEmulator::bind(
//!     &link,
//!     &Options::default(),
//!     "127.0.0.1:0".parse().unwrap(),
//!     "127.0.0.1:9000".parse().unwrap(),
//! )
//! .await?;
//! println!("send to {}", emu.local_addr()?);
//! let summary = emu.run(async { tokio::signal::ctrl_c().await.ok(); }).await?;
//! println!("{summary}");
//! # Ok(()) }
//! ```

mod clock;
mod driver;
mod error;
mod fd;
mod stream;
mod summary;
mod tun;
mod udp;

use std::time::Duration;

use skywave_sim::{Adjacency, CsmaMedium, Link, LinkConfig, LinkKind, LinkModel};

pub use error::EmulateError;
pub use stream::{PtyPaths, StreamEmulator};
pub use summary::{DirSummary, Summary, TimerSummary};
pub use tun::{TUN_DEVICE, TunConfig, TunEmulator};
pub use udp::UdpEmulator;

pub use skywave_sim::SimTime;

/// Settings shared by every mode.
#[derive(Clone, Debug)]
pub struct Options {
    /// Seed of the model's random draws (loss, jitter, CSMA backoff).
    pub seed: u64,
    /// How often to log the counters at `info` level; `None`: never.
    pub stats_interval: Option<Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seed: 1,
            stats_interval: Some(Duration::from_secs(10)),
        }
    }
}

/// Builds the model of `cfg` as link 0 of `seed`: a point-to-point [`Link`] for frame and
/// stream links, a two-radio [`CsmaMedium`] for `csma` links.
pub fn build_model(cfg: &LinkConfig, seed: u64) -> Result<Box<dyn LinkModel + Send>, EmulateError> {
    let model: Box<dyn LinkModel + Send> = match cfg.kind {
        LinkKind::Csma => Box::new(CsmaMedium::new(cfg, Adjacency::full(2), seed, 0)?),
        LinkKind::Frame | LinkKind::Stream => Box::new(Link::new(cfg, seed, 0)?),
    };
    Ok(model)
}
