//! Deterministic link models and a discrete-event simulator for skywave.
//!
//! - [`link`]: sans-IO link models driven by `now`: a point-to-point [`Link`] (frames or an
//!   HF-modem byte stream that drops the call on buffer overrun; full or half duplex) and
//!   a shared [`CsmaMedium`] where overlapping frames collide. The same models run in
//!   virtual time here and against the wall clock in an emulator.
//! - [`config`]: the design's named profiles, the compact `--link` spec string and TOML
//!   link files.
//! - [`sim`]: the [`Simulator`] that joins sans-IO [`Endpoint`]s with link models and jumps
//!   from event to event; the same seed gives byte-identical traces.
//! - [`reference`]: a saturating or paced sender and sink.
//!
//! No clock, socket, file or global RNG is used anywhere in this crate (see
//! `docs/sim.md`).
//!
//! ```
//! use skywave_sim::{LinkConfig, RefEndpoint, SimTime, Simulator};
//!
//! let mut sim = Simulator::new(7);
//! let a = sim.add_node(RefEndpoint::saturating(1000).with_limit(1_000_000));
//! let b = sim.add_node(RefEndpoint::sink());
//! let link = sim.connect(a, b, &"rate=8Mbps,delay=50ms".parse::<LinkConfig>()?)?;
//! sim.run_until(SimTime::from_secs(5));
//! let sink = sim.node::<RefEndpoint>(b).unwrap().stats();
//! assert_eq!(sink.recv_bytes, 1_000_000);
//! // 1000 datagrams of 1000 B + 28 B IP/UDP header: 8.224e6 bits at 8 Mbit/s, plus 50 ms.
//! assert_eq!(sink.last_rx, Some(SimTime::from_millis(1078)));
//! // Bytes on the wire include the headers.
//! assert_eq!(sim.link_stats(link, a).unwrap().sent.bytes, 1_028_000);
//! # Ok::<(), skywave_sim::ConfigError>(())
//! ```

#![deny(clippy::disallowed_methods)]

pub mod config;
pub mod link;
pub mod lora;
pub mod reference;
pub mod rng;
pub mod sim;
pub mod time;
pub mod trace;

pub use config::{
    BufferSize, ConfigError, CsmaConfig, DirConfig, Duplex, DutyLimit, GilbertElliott, LinkConfig,
    LinkKind, LossModel, PROFILES, Side,
};
pub use link::{
    Adjacency, Counter, CsmaMedium, DropReason, Link, LinkEvent, LinkInfo, LinkModel, LinkStats,
    PortKind, TransmitError,
};
pub use lora::LoraPhy;
pub use reference::{RefEndpoint, RefStats, Traffic};
pub use sim::{Endpoint, LinkId, NodeId, PortId, Simulator};
pub use time::SimTime;
pub use trace::{TraceEvent, TraceKind, TraceRecord, frame_hash, write_trace};
