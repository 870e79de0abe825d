//! LoRa air time for the drivers: Semtech's formula, kept in `skywave-sim` (the link
//! models below this crate time frames by it too) and re-exported here, so a driver
//! and the simulator cost a frame identically.

pub use skywave_sim::lora::{BANDWIDTHS, LoraError, LoraPhy, MAX_PAYLOAD, max_window_air};
