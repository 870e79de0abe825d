//! Sans-IO link models: the point-to-point [`Link`] (frames or a modem byte stream, full or
//! half duplex) and the shared [`CsmaMedium`].
//!
//! A model never reads a clock or schedules itself: the driver (the simulator, or a
//! real-clock emulator) passes `now` into every call, calls [`LinkModel::handle_timeout`]
//! when [`LinkModel::poll_timeout`] says so, and drains [`LinkModel::poll_event`].
//! Calling `handle_timeout` early or twice is harmless; calling it late delivers late.

mod channel;
mod csma;
mod p2p;

use std::time::Duration;

use bytes::Bytes;

pub use csma::{Adjacency, CsmaMedium};
pub use p2p::Link;

use crate::time::SimTime;
use crate::trace::TraceEvent;

/// How a port carries data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortKind {
    /// Datagrams up to `mtu`, to the single peer.
    Frame,
    /// A byte stream: writes of any size up to `free`; reads arrive in arbitrary chunks.
    Stream,
    /// Datagrams up to `mtu`, heard by every radio in range.
    Broadcast,
}

/// What a sender needs to know to use a port well: the size limit, back-pressure, rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkInfo {
    pub kind: PortKind,
    /// Largest frame accepted; for streams, the TX buffer size (largest write that can
    /// succeed when the buffer is empty).
    pub mtu: usize,
    /// Bytes that can be written now without a drop (frame: queue space; stream: modem
    /// buffer space). Zero while the link is down.
    pub free: usize,
    /// The transmit queue (or modem buffer) size.
    pub buffer: usize,
    /// On-air bit rate of this port's sending direction.
    pub rate_bps: u64,
    /// Per-frame airtime overhead in bytes (e.g. preamble).
    pub overhead: usize,
    /// Configured one-way delay (excluding serialization and jitter).
    pub delay: Duration,
    /// False while a stream link's call is down.
    pub up: bool,
}

/// Why a frame did not reach a receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Drop-tail: the transmit queue had no room.
    QueueFull,
    /// The loss process (Bernoulli or Gilbert-Elliott).
    Loss,
    /// A bit was flipped and the link's frame check (`crc=on`) discarded it.
    Corrupt,
    /// Overlapped at the receiver with another transmission.
    Collision,
    /// The receiving radio was transmitting itself.
    ReceiverBusy,
    /// Lost when the modem call dropped (buffered, on the air, or in flight).
    CallDropped,
    /// Written while the call was down.
    LinkDown,
}

impl DropReason {
    pub const ALL: [DropReason; 7] = [
        DropReason::QueueFull,
        DropReason::Loss,
        DropReason::Corrupt,
        DropReason::Collision,
        DropReason::ReceiverBusy,
        DropReason::CallDropped,
        DropReason::LinkDown,
    ];

    fn index(self) -> usize {
        self as usize
    }

    pub(crate) fn trace_name(self) -> &'static str {
        match self {
            DropReason::QueueFull => "drop:queue-full",
            DropReason::Loss => "drop:loss",
            DropReason::Corrupt => "drop:corrupt",
            DropReason::Collision => "drop:collision",
            DropReason::ReceiverBusy => "drop:receiver-busy",
            DropReason::CallDropped => "drop:call-dropped",
            DropReason::LinkDown => "drop:link-down",
        }
    }
}

/// Frames and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counter {
    pub frames: u64,
    pub bytes: u64,
}

impl Counter {
    pub(crate) fn add(&mut self, bytes: usize) {
        self.frames += 1;
        self.bytes += bytes as u64;
    }
}

/// Counters of one sending port (a direction of a point-to-point link, or one radio).
/// `received` counts what this port received from others.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Handed to the link by the sender (excluding MTU refusals).
    pub offered: Counter,
    /// Refused for exceeding the MTU.
    pub refused: Counter,
    /// Put on the air (payload bytes; stream links count chunks).
    pub sent: Counter,
    /// Airtime used by this sender, in nanoseconds, including per-frame overhead.
    pub air_nanos: u64,
    /// Delivered to a receiver (CSMA: once per receiving radio).
    pub delivered: Counter,
    /// Received by this port from others.
    pub received: Counter,
    /// Extra copies delivered.
    pub duplicated: u64,
    /// Delivered with a flipped bit.
    pub corrupted: u64,
    /// Held back so that later frames overtook them.
    pub reordered: u64,
    /// Times this side got the turn of a half-duplex link.
    pub turnarounds: u64,
    /// Calls dropped by this side overrunning the modem buffer.
    pub call_drops: u64,
    /// Every transmission, `(start, air time)` in nanoseconds, kept only on a medium with
    /// a duty-cycle limit (see [`crate::lora::max_window_air`]).
    pub air_log: Vec<(u64, u64)>,
    drops: [Counter; DropReason::ALL.len()],
}

impl LinkStats {
    pub fn dropped(&self, reason: DropReason) -> Counter {
        self.drops[reason.index()]
    }

    pub fn dropped_total(&self) -> Counter {
        self.drops.iter().fold(Counter::default(), |a, c| Counter {
            frames: a.frames + c.frames,
            bytes: a.bytes + c.bytes,
        })
    }

    pub(crate) fn drop(&mut self, reason: DropReason, bytes: usize) {
        self.drops[reason.index()].add(bytes);
    }
}

/// Output of a link model, drained with [`LinkModel::poll_event`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkEvent {
    /// A frame (or stream chunk) arrives at `port`.
    Deliver { port: usize, frame: Bytes },
    /// Queue or buffer space opened at `port`: a sender waiting for room may try again.
    Writable { port: usize },
    /// The call went down or came back up (stream links).
    State { port: usize, up: bool },
    /// A trace record (only while tracing is on).
    Trace(TraceEvent),
}

/// Why [`LinkModel::handle_transmit`] did not take the data. The model has already counted
/// it; the data is gone.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransmitError {
    #[error("frame of {len} bytes exceeds the MTU of {mtu} bytes")]
    TooBig { len: usize, mtu: usize },
    #[error("transmit queue full: {len} bytes offered, {free} free")]
    QueueFull { len: usize, free: usize },
    #[error("modem buffer overrun ({len} bytes written, {free} free): the call dropped")]
    CallDropped { len: usize, free: usize },
    #[error("the link is down")]
    LinkDown,
    #[error("no port {0} on this link")]
    NoSuchPort(usize),
}

/// A link model driven by `now`. Implemented by [`Link`] and [`CsmaMedium`]; the simulator
/// and the real-clock emulator drive any model through this trait.
pub trait LinkModel {
    /// Number of ports (2 for point-to-point links, N for a medium).
    fn ports(&self) -> usize;
    /// Back-pressure, size limit and rate of `port` at `now`. Reflects the events processed
    /// so far: call `handle_timeout(now)` first if `poll_timeout` is due.
    fn info(&self, now: SimTime, port: usize) -> LinkInfo;
    /// The sender at `port` hands over a frame (or, on a stream, bytes to write).
    /// Processes anything due before `now` first.
    fn handle_transmit(
        &mut self,
        now: SimTime,
        port: usize,
        data: Bytes,
    ) -> Result<(), TransmitError>;
    /// Processes every internal event due at or before `now`.
    fn handle_timeout(&mut self, now: SimTime);
    /// When `handle_timeout` next has work, if ever.
    fn poll_timeout(&mut self) -> Option<SimTime>;
    /// Deliveries, state changes and trace records, in order.
    fn poll_event(&mut self) -> Option<LinkEvent>;
    /// Counters of what `port` sent (and received).
    fn stats(&self, port: usize) -> &LinkStats;
    /// Turns trace events on or off.
    fn set_trace(&mut self, on: bool);
}
