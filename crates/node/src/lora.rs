//! LoRa air time for the drivers: Semtech's formula, kept in `skywave-sim` (the link
//! models below this crate time frames by it too) and re-exported here, so a driver
//! and the simulator cost a frame identically.

pub use skywave_sim::lora::{BANDWIDTHS, LoraError, LoraPhy, MAX_PAYLOAD, max_window_air};

use std::time::Duration;

/// Air time of a frame of `len` bytes: by the LoRa formula when the radio is LoRa, else
/// its bytes and the per-frame `overhead` (preamble, parity) at `rate_bps`. The one rule
/// for the link adapter's pacing and the soft MAC's waits.
pub fn frame_airtime(
    lora: Option<LoraPhy>,
    len: usize,
    overhead: usize,
    rate_bps: u64,
) -> Duration {
    match lora {
        Some(p) => p.airtime(len),
        None => Duration::from_secs_f64(8.0 * (len + overhead) as f64 / rate_bps.max(1) as f64),
    }
}
