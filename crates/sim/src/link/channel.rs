//! The impairments a frame meets after it leaves the air: loss, corruption, delay with
//! jitter, reordering and duplication. One `Channel` per link direction (per receiving
//! radio on a medium), each with its own seeded RNG.

use bytes::Bytes;
use rand_chacha::ChaCha8Rng;

use super::DropReason;
use crate::config::{DirConfig, LossModel};
use crate::rng::{below, chance, unit};
use crate::time::{SimTime, nanos};

#[derive(Debug)]
pub(crate) struct Channel {
    loss: LossModel,
    ge_bad: bool,
    delay: u64,
    jitter: f64,
    corr: f64,
    jitter_prev: f64,
    reorder: f64,
    reorder_delay: u64,
    duplicate: f64,
    corrupt: f64,
    crc: bool,
    /// Delivery time of the last in-order frame: jitter never reorders by itself.
    last_delivery: SimTime,
    pub(crate) rng: ChaCha8Rng,
}

/// What happens to one frame.
#[derive(Debug)]
pub(crate) struct Fate {
    pub at: SimTime,
    pub frame: Bytes,
    pub corrupted: bool,
    pub reordered: bool,
    /// Deliver a second copy at the same time.
    pub duplicate: bool,
}

impl Channel {
    pub(crate) fn new(d: &DirConfig, crc: bool, rng: ChaCha8Rng) -> Self {
        Channel {
            loss: d.loss,
            ge_bad: false,
            delay: nanos(d.delay),
            jitter: nanos(d.jitter) as f64,
            corr: d.jitter_corr,
            jitter_prev: 0.0,
            reorder: d.reorder,
            reorder_delay: nanos(d.reorder_delay),
            duplicate: d.duplicate,
            corrupt: d.corrupt,
            crc,
            last_delivery: SimTime::ZERO,
            rng,
        }
    }

    fn lost(&mut self) -> bool {
        match self.loss {
            LossModel::None => false,
            LossModel::Bernoulli(p) => chance(&mut self.rng, p),
            LossModel::GilbertElliott(ge) => {
                // Step the state, then draw loss in the new state (as netem does).
                let flip = if self.ge_bad { ge.r } else { ge.p };
                if chance(&mut self.rng, flip) {
                    self.ge_bad = !self.ge_bad;
                }
                let deliver = if self.ge_bad { ge.h } else { ge.k };
                chance(&mut self.rng, 1.0 - deliver)
            }
        }
    }

    /// The fate of `frame`, whose last bit left the sender at `end`.
    pub(crate) fn transit(&mut self, end: SimTime, frame: Bytes) -> Result<Fate, DropReason> {
        if self.lost() {
            return Err(DropReason::Loss);
        }
        let mut frame = frame;
        let mut corrupted = false;
        if !frame.is_empty() && chance(&mut self.rng, self.corrupt) {
            if self.crc {
                return Err(DropReason::Corrupt);
            }
            let bit = below(&mut self.rng, frame.len() as u64 * 8) as usize;
            let mut v = frame.to_vec();
            v[bit / 8] ^= 1 << (bit % 8);
            frame = Bytes::from(v);
            corrupted = true;
        }
        let mut delay = self.delay as f64;
        if self.jitter > 0.0 {
            // netem-style correlation: a weighted mean of a fresh draw and the last one.
            let fresh = (unit(&mut self.rng) * 2.0 - 1.0) * self.jitter;
            let j = self.corr * self.jitter_prev + (1.0 - self.corr) * fresh;
            self.jitter_prev = j;
            delay = (delay + j).max(0.0);
        }
        let mut at = end.plus_nanos(delay.round() as u64);
        let reordered = chance(&mut self.rng, self.reorder);
        if reordered {
            // Held back and exempt from the in-order clamp, so later frames overtake it.
            at = at.plus_nanos(self.reorder_delay);
        } else {
            at = at.max(self.last_delivery);
            self.last_delivery = at;
        }
        let duplicate = chance(&mut self.rng, self.duplicate);
        Ok(Fate {
            at,
            frame,
            corrupted,
            reordered,
            duplicate,
        })
    }
}
