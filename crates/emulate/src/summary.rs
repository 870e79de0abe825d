//! What an emulator run did, printed on exit.

use std::fmt;

use serde::Serialize;
use skywave_sim::{DropReason, LinkStats};

use crate::driver::SideCounters;

/// Counters of one direction (A->B: what side A's program sent, and B received).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DirSummary {
    /// Datagrams (stream: reads) and bytes taken from the sending program.
    pub read_frames: u64,
    pub read_bytes: u64,
    /// Refused for exceeding the link MTU (never truncated).
    pub refused_mtu: u64,
    /// Dropped because the transmit queue was full.
    pub dropped_queue: u64,
    /// Lost on the air: loss process, failed frame check, collisions.
    pub dropped_loss: u64,
    /// Stream: bytes lost to a dropped call (buffered, in flight, or written while down).
    pub dropped_call_bytes: u64,
    /// Bytes put on the air.
    pub sent_bytes: u64,
    /// Delivered by the model to the receiving side.
    pub delivered_frames: u64,
    pub delivered_bytes: u64,
    /// Written to the receiving program.
    pub written_frames: u64,
    pub written_bytes: u64,
    /// Delivered with nowhere to go (no peer address yet, connection closed).
    pub unroutable: u64,
    /// Times the sender overran the modem buffer and dropped the call.
    pub call_drops: u64,
    /// Half duplex: times this side got the turn.
    pub turnarounds: u64,
}

impl DirSummary {
    pub(crate) fn new(st: &LinkStats, from: &SideCounters, to: &SideCounters) -> Self {
        let frames = |r| st.dropped(r).frames;
        DirSummary {
            read_frames: from.read_frames,
            read_bytes: from.read_bytes,
            refused_mtu: st.refused.frames,
            dropped_queue: frames(DropReason::QueueFull),
            dropped_loss: frames(DropReason::Loss)
                + frames(DropReason::Corrupt)
                + frames(DropReason::Collision)
                + frames(DropReason::ReceiverBusy),
            dropped_call_bytes: st.dropped(DropReason::CallDropped).bytes
                + st.dropped(DropReason::LinkDown).bytes,
            sent_bytes: st.sent.bytes,
            delivered_frames: st.delivered.frames,
            delivered_bytes: st.delivered.bytes,
            written_frames: to.written_frames,
            written_bytes: to.written_bytes,
            unroutable: to.unroutable,
            call_drops: st.call_drops,
            turnarounds: st.turnarounds,
        }
    }
}

/// How promptly the model's timers were served.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TimerSummary {
    pub wakeups: u64,
    /// Wake-up after the model's deadline, mean and worst, in microseconds.
    pub late_mean_us: f64,
    pub late_max_us: f64,
    /// The longest a datagram waited in the kernel before the emulator read it, in
    /// microseconds (the model takes it at its arrival: `Driver::transmit_stamped`).
    pub read_late_max_us: f64,
}

/// Everything counted during a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Profile name or spec as given.
    pub link: String,
    /// The canonical spec of the link.
    pub spec: String,
    pub seed: u64,
    pub elapsed_secs: f64,
    pub a_to_b: DirSummary,
    pub b_to_a: DirSummary,
    pub timer: TimerSummary,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "emulated {} (seed {}) for {:.1} s",
            self.link, self.seed, self.elapsed_secs
        )?;
        writeln!(
            f,
            "{:<6} {:>10} {:>12} {:>8} {:>8} {:>8} {:>12} {:>10} {:>12} {:>6} {:>6}",
            "dir",
            "read",
            "read B",
            "mtu-ref",
            "q-drop",
            "lost",
            "call-lost B",
            "delivered",
            "delivered B",
            "unrout",
            "calls"
        )?;
        for (name, d) in [("A->B", &self.a_to_b), ("B->A", &self.b_to_a)] {
            writeln!(
                f,
                "{:<6} {:>10} {:>12} {:>8} {:>8} {:>8} {:>12} {:>10} {:>12} {:>6} {:>6}",
                name,
                d.read_frames,
                d.read_bytes,
                d.refused_mtu,
                d.dropped_queue,
                d.dropped_loss,
                d.dropped_call_bytes,
                d.written_frames,
                d.written_bytes,
                d.unroutable,
                d.call_drops
            )?;
        }
        write!(
            f,
            "timer: {} wake-ups, late by {:.0} us on average, {:.0} us at worst; datagrams read up to {:.0} us after they arrived",
            self.timer.wakeups,
            self.timer.late_mean_us,
            self.timer.late_max_us,
            self.timer.read_late_max_us
        )
    }
}
