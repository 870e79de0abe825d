//! Baselines measured in skywave's own simulator, on the same link models and seeds as
//! skywave itself.
//!
//! - [`quic`]: a real QUIC connection (quinn-proto, sans-IO) carrying one stream across a
//!   simulated link in virtual time, with quinn tuned for the path (window from the
//!   bandwidth-delay product, initial RTT and MTU from the link, BBR, Cubic or NewReno).
//!
//! ```no_run
//! use skywave_baseline::quic;
//! use skywave_sim::{config::LinkConfig, time::SimTime};
//!
//! let lfn = LinkConfig::profile("lfn")?;
//! let r = quic::run(&lfn, 8_000_000, 1, SimTime::from_secs(60))?;
//! println!("{:.1} Mbit/s ({})", r.goodput_bps / 1e6, r.settings);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The crate reads the clock exactly once (a base `Instant` that quinn's virtual times are
//! offsets from; see `quic::base_instant`); everything else runs in virtual time.

#![deny(clippy::disallowed_methods)]

pub mod quic;

pub use quic::{BaselineReport, Congestion, Settings};
