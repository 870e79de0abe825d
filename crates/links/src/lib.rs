//! Link drivers as the daemon runs them.
//!
//! Every driver (serial byte stream, RFD900 radio, HF modem, and the daemon's own IP
//! links) runs as a task and hands the daemon a [`LinkHandle`]: a stream of
//! [`LinkEvent`]s, a channel for frames to send, and the number of frame bytes it can
//! take now without overrunning the device. The protocol core asks for a frame only
//! when one fits ([`skywave_proto::Endpoint::poll_transmit`] with `max_len = room`), so
//! back-pressure reaches the protocol instead of a modem buffer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
pub use skywave_proto::LinkParams;
use tokio::sync::{mpsc, watch};

/// What a link driver reports.
#[derive(Debug, Clone)]
pub enum LinkEvent {
    /// The link is usable (device open, call connected) with these parameters.
    Up(LinkParams),
    /// The link is not usable; the driver keeps trying to bring it back.
    Down { reason: String },
    /// A whole, checked frame arrived.
    Frame(Bytes),
    /// Radio status as the device reports it.
    Status(RadioStatus),
}

/// Signal and buffer figures from a radio.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RadioStatus {
    pub rssi: u8,
    pub remote_rssi: u8,
    pub temperature: u8,
    /// Free bytes in the radio's transmit buffer.
    pub buffer_space: u16,
}

/// Counters a driver keeps; the daemon exports them as metrics.
#[derive(Debug, Default)]
pub struct LinkCounters {
    pub frames_out: AtomicU64,
    pub bytes_out: AtomicU64,
    pub frames_in: AtomicU64,
    pub bytes_in: AtomicU64,
    /// Bytes read that did not form a valid frame (noise, bad CRC, broken escapes).
    pub garbage_bytes: AtomicU64,
    pub dropped_frames: AtomicU64,
    /// Times the link went down.
    pub downs: AtomicU64,
}

impl LinkCounters {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// A running link driver, as the daemon holds it.
#[derive(Debug)]
pub struct LinkHandle {
    /// A name for logs and the status screen (e.g. `serial:/dev/ttyUSB0`).
    pub name: String,
    pub events: mpsc::Receiver<LinkEvent>,
    /// Frames to send. Send one only when it fits in `room`; a driver given more
    /// than fits queues it rather than overrun the device, and counts it.
    pub frames: mpsc::Sender<Bytes>,
    /// Frame bytes the driver can take now without overrunning the device.
    pub room: watch::Receiver<usize>,
    pub counters: Arc<LinkCounters>,
}
