//! Link drivers as the daemon runs them.
//!
//! Every driver (serial byte stream, RFD900 radio, HF modem, and the daemon's own IP
//! links) runs as a task and hands the daemon a [`LinkHandle`]: a stream of
//! [`LinkEvent`]s, a channel for frames to send, and the number of frame bytes it can
//! take now without overrunning the device. The protocol core asks for a frame only
//! when one fits ([`skywave_proto::Endpoint::poll_transmit`] with `max_len = room`), so
//! back-pressure reaches the protocol instead of a modem buffer.

pub mod ardop;
mod de;
mod device;
pub mod emulated;
mod fd;
pub mod fuzzing;
pub mod hf;
pub mod kiss;
mod link;
pub mod pty;
pub mod rfd900;
pub mod rnode;
pub mod serial;
mod stream;
pub mod vara;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use serde::Deserialize;
pub use skywave_proto::LinkParams;
use tokio::sync::{mpsc, watch};

pub use ardop::ArdopConfig;
pub use emulated::EmulatedConfig;
pub use hf::HfModemConfig;
pub use kiss::KissConfig;
pub use pty::NullModem;
pub use rfd900::Rfd900Config;
pub use rnode::RnodeConfig;
pub use serial::SerialConfig;
pub use vara::VaraConfig;

/// Sent on a driver's frame channel when the daemon has nothing more to send for now
/// (the endpoint gave nothing though the link had room): a half-duplex modem's driver
/// then ends its over and says so ([`skywave_node::modem_tx`]). Other drivers are never
/// sent it, and ignore it.
pub const IDLE: Bytes = Bytes::new();

/// What a link driver reports.
#[derive(Debug, Clone)]
pub enum LinkEvent {
    /// The link is usable (device open, call connected) with these parameters.
    Up(LinkParams),
    /// The link is not usable; the driver keeps trying to bring it back.
    Down { reason: String },
    /// A whole, checked frame arrived.
    Frame(Bytes),
    /// The peer's driver was heard saying something of its own (a half-duplex modem's
    /// end-of-over announcement): the peer is there, though it sent no frame.
    /// `answered`: it passed us the turn in answer to our over
    /// ([`skywave_node::pacer::Pacer::take_answered`]).
    Heard {
        answered: Option<skywave_node::pacer::Answered<std::time::Instant>>,
    },
    /// Radio status as the device reports it.
    Status(RadioStatus),
    /// A modem's own account of itself, for the status screen (ARDOP: the station
    /// connected to, its state, its buffer, busy or clear).
    Modem(String),
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
    /// Of those, well-formed frames for someone else (other stations' traffic on a
    /// shared channel, another KISS port).
    pub foreign_frames: AtomicU64,
    /// Times the link went down.
    pub downs: AtomicU64,
    /// Frames the daemon sent larger than the room it was given (queued, not lost).
    pub over_room: AtomicU64,
    /// Half-duplex modems: over-end announcements sent and heard (turns passed each
    /// way; none heard on a busy link means the other side does not announce).
    pub over_ends_sent: AtomicU64,
    pub over_ends_heard: AtomicU64,
    /// Of the other side's overs, those that ended with no announcement heard (lost
    /// with the over's last chunk) and were taken as announced after a silence.
    pub over_ends_unannounced: AtomicU64,
    /// Figures a driver reports of its device for status (e.g. an RNode's duty-cycle
    /// budget and channel load), by name; empty for most drivers.
    pub device_state: std::sync::Mutex<std::collections::BTreeMap<String, f64>>,
}

impl LinkCounters {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// For a count kept elsewhere and mirrored here.
    pub fn set(counter: &AtomicU64, n: u64) {
        counter.store(n, Ordering::Relaxed);
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
    /// than fits queues it rather than overrun the device, and counts it (`over_room`).
    /// The driver takes a frame only when none waits inside it, and the channel is
    /// small, so a sender that ignores `room` is held back rather than queueing seconds
    /// of data.
    pub frames: mpsc::Sender<Bytes>,
    /// Frame bytes the driver can take now without overrunning the device. The driver
    /// updates it after taking each frame (and as the device drains), so right after a
    /// send it may still show the room before that frame: use
    /// [`LinkHandle::send_frame`] to send and wait for the new value.
    pub room: watch::Receiver<usize>,
    pub counters: Arc<LinkCounters>,
    /// Set by a daemon that takes turns on a shared channel while the channel is its own
    /// (its over goes on, or the peer's over-end frame handed it over): the frames it
    /// hands now need no contention. A driver whose radio draws a backoff of its own
    /// before keying (a TNC's p-persistence) has it skip that; other drivers ignore it.
    pub turn: Arc<AtomicBool>,
}

/// The driver has stopped (its task ended).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the link driver has stopped")]
pub struct DriverStopped;

impl LinkHandle {
    /// Sends `frame` and waits until the driver has taken it, so that `room` then
    /// counts it.
    pub async fn send_frame(&mut self, frame: Bytes) -> Result<(), DriverStopped> {
        self.room.mark_unchanged();
        self.frames.send(frame).await.map_err(|_| DriverStopped)?;
        self.room.changed().await.map_err(|_| DriverStopped)
    }
}

/// Why a link could not be started. Every variant names the setting and what it accepts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("invalid value '{value}' for link setting '{field}': expected {expected}")]
    Invalid {
        field: String,
        value: String,
        expected: String,
    },
    #[error("{what} failed: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

/// One `[[link]]` table of the daemon's configuration, by its `type`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum DriverConfig {
    Serial(SerialConfig),
    Rfd900(Rfd900Config),
    HfModem(HfModemConfig),
    Kiss(KissConfig),
    Rnode(RnodeConfig),
    Vara(VaraConfig),
    Ardop(ArdopConfig),
    Emulated(EmulatedConfig),
}

impl DriverConfig {
    /// Starts the driver as a task on the current tokio runtime.
    pub fn spawn(self) -> Result<LinkHandle, Error> {
        match self {
            DriverConfig::Serial(c) => serial::spawn(c),
            DriverConfig::Rfd900(c) => rfd900::spawn(c),
            DriverConfig::HfModem(c) => hf::spawn(c),
            DriverConfig::Kiss(c) => kiss::spawn(c),
            DriverConfig::Rnode(c) => rnode::spawn(c),
            DriverConfig::Vara(c) => vara::spawn(c),
            DriverConfig::Ardop(c) => ardop::spawn(c),
            DriverConfig::Emulated(c) => emulated::spawn(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[derive(Debug, Deserialize)]
    struct Daemon {
        link: Vec<DriverConfig>,
    }

    #[test]
    fn every_driver_reads_from_toml() {
        let text = r#"
            [[link]]
            type = "serial"
            device = "/dev/ttyUSB0"
            baud = 57600

            [[link]]
            type = "rfd900"
            device = "/dev/ttyUSB1"
            silence_timeout = "10s"

            [[link]]
            type = "hf-modem"
            device = "/dev/ttyS0"
            station = "2045"
            self_id = "1021"
            channels = ["1", "4", "9"]
            redial = "60s"

            [[link]]
            type = "emulated"
            profile = "hf-modem"
            peer_device = "/tmp/skywave-peer"

            [[link]]
            type = "rnode"
            device = "/dev/ttyACM0"
            frequency = 869525000
            sf = 10
            duty_cycle = 0.1
            duty_window = "30min"
        "#;
        let d: Daemon = toml::from_str(text).unwrap();
        assert_eq!(d.link.len(), 5);
        match &d.link[4] {
            DriverConfig::Rnode(r) => {
                assert_eq!((r.frequency, r.sf, r.bandwidth), (869_525_000, 10, 125_000));
                assert_eq!(r.duty_cycle, Some(0.1));
                assert_eq!(r.duty_window, Duration::from_secs(1800));
                r.check().unwrap();
            }
            other => panic!("{other:?}"),
        }
        match &d.link[0] {
            DriverConfig::Serial(s) => {
                assert_eq!((s.baud, s.profile.as_deref()), (57600, None));
            }
            other => panic!("{other:?}"),
        }
        match &d.link[1] {
            DriverConfig::Rfd900(r) => {
                assert_eq!((r.baud, r.air_rate), (230_400, 128_000));
                assert_eq!(r.silence_timeout, Some(Duration::from_secs(10)));
            }
            other => panic!("{other:?}"),
        }
        match &d.link[2] {
            DriverConfig::HfModem(h) => {
                assert_eq!(h.station.as_deref(), Some("2045"));
                assert_eq!(h.redial, Duration::from_secs(60));
                assert_eq!(
                    h.setup_commands(),
                    ["ATE0", "ATH", "AT&I=1021", "AT%C0", "AT&C=1,4,9"]
                );
            }
            other => panic!("{other:?}"),
        }
        match &d.link[3] {
            DriverConfig::Emulated(e) => {
                assert_eq!(
                    (e.profile.as_str(), e.framing, e.seed),
                    ("hf-modem", None, 1)
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn mistakes_are_named() {
        let e = toml::from_str::<Daemon>("[[link]]\ntype = \"serial\"\ndevise = \"/dev/x\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("devise"), "{e}");
        let e = toml::from_str::<Daemon>("[[link]]\ntype = \"carrier-pigeon\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("carrier-pigeon") && e.contains("hf-modem"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn bad_settings_are_refused_at_spawn() {
        let e = serial::spawn(SerialConfig::new("/dev/null", 12345))
            .unwrap_err()
            .to_string();
        assert!(e.contains("baud") && e.contains("115200"), "{e}");
        let mut h = HfModemConfig::new("/dev/null");
        h.station = Some("bad station".into());
        let e = hf::spawn(h).unwrap_err().to_string();
        assert!(
            e.contains("station") && e.contains("letters and digits"),
            "{e}"
        );
        let mut s = SerialConfig::new("/dev/null", 9600);
        s.profile = Some("uhf-csma".into());
        let e = serial::spawn(s).unwrap_err().to_string();
        assert!(e.contains("byte-stream"), "{e}");
    }
}
