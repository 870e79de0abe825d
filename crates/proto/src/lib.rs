//! The skywave sync protocol as a sans-IO state machine.
//!
//! No clock, socket, file or global RNG is used here: time, received frames and random
//! bytes are passed in; frames to send, timers and events come out. The same code runs
//! in the daemon, in the simulator and under the fuzzers.
#![deny(clippy::disallowed_methods)]

pub mod endpoint;
pub mod fanout;
pub mod fec;
pub mod fuzzing;
pub mod recon;
pub mod store;
pub mod wire;

pub use endpoint::{
    Answer, Config, Direction, Endpoint, Event, FecMode, LinkId, LinkParams, PeerInfo, ReconState,
    Stats, TransferInfo, TransferState, Transmit, Turns,
};
pub use store::{BundleStore, MemStore, Offer, Written};
