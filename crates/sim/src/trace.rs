//! Per-frame trace records and their text dump format (`docs/sim.md`, "Traces").
//!
//! Link models emit [`TraceEvent`]s when tracing is on; the simulator stamps them with the
//! link id. The text format is one line per record, stable across versions of this crate
//! so traces can be diffed: `TIME LINK FROM>TO EVENT LEN HASH`.

use std::fmt;

use crate::link::DropReason;
use crate::time::SimTime;

/// The `to` of an event heard by every radio in range (a CSMA transmission).
pub const BROADCAST: u32 = u32::MAX;

/// What happened to a frame (or to the link).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    /// Accepted into the transmit queue.
    Enqueue,
    /// Refused: larger than the MTU. Never truncated.
    Refuse,
    /// Discarded, with why.
    Drop(DropReason),
    /// Serialization started (the frame left the queue and is on the air).
    Send,
    /// Handed to the receiving port.
    Deliver,
    /// Delivered with a flipped bit (the hash is of the corrupted bytes).
    DeliverCorrupt,
    /// A half-duplex link changed direction; `from` is the side that gets the turn.
    Turnaround,
    /// The call dropped (stream links).
    Down,
    /// The call is back up after the redial time.
    Up,
}

impl TraceKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            TraceKind::Enqueue => "enqueue",
            TraceKind::Refuse => "refuse",
            TraceKind::Drop(r) => r.trace_name(),
            TraceKind::Send => "send",
            TraceKind::Deliver => "deliver",
            TraceKind::DeliverCorrupt => "deliver-corrupt",
            TraceKind::Turnaround => "turnaround",
            TraceKind::Down => "down",
            TraceKind::Up => "up",
        }
    }
}

/// One event inside a link model. `from` and `to` are link ports (for CSMA, radios).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    pub time: SimTime,
    pub from: u32,
    /// Receiving port, or [`BROADCAST`].
    pub to: u32,
    pub kind: TraceKind,
    /// Frame (or stream chunk) length in bytes; 0 for link events.
    pub len: u32,
    /// [`frame_hash`] of the bytes; 0 for link events.
    pub hash: u64,
}

/// A trace event stamped with the simulator's link id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    pub link: u32,
    pub event: TraceEvent,
}

impl fmt::Display for TraceRecord {
    /// `4.005423729 L0 0>1 deliver 64 9ae16a3b2f90404f`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.event;
        write!(f, "{} L{} {}>", e.time, self.link, e.from)?;
        if e.to == BROADCAST {
            f.write_str("*")?;
        } else {
            write!(f, "{}", e.to)?;
        }
        write!(f, " {} {} {:016x}", e.kind.as_str(), e.len, e.hash)
    }
}

/// Appends the text dump of `records` (one line each, `\n`-terminated) to `out`.
pub fn write_trace(records: &[TraceRecord], out: &mut String) {
    use fmt::Write as _;
    for r in records {
        // Writing to a String cannot fail.
        let _ = writeln!(out, "{r}");
    }
}

/// 64-bit FNV-1a of the frame: short, dependency-free, easy to recompute in a script.
pub fn frame_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_known_vectors() {
        assert_eq!(frame_hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(frame_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(frame_hash(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn line_format() {
        let r = TraceRecord {
            link: 2,
            event: TraceEvent {
                time: SimTime::from_nanos(4_005_423_729),
                from: 0,
                to: BROADCAST,
                kind: TraceKind::Drop(DropReason::Collision),
                len: 223,
                hash: 0xab,
            },
        };
        assert_eq!(
            r.to_string(),
            "4.005423729 L2 0>* drop:collision 223 00000000000000ab"
        );
    }
}
