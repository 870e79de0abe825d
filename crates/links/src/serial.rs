//! `serial`: frames over a byte-stream device (a serial port, a USB serial adapter, a
//! pty), COBS-framed with a CRC-16, paced by the line's rate.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Deserialize;
use skywave_node::adapter::STREAM_MTU;
use skywave_proto::LinkParams;
use skywave_sim::{LinkConfig, LinkKind};
use tokio::sync::mpsc;

use crate::device::{BAUD_RATES, Device, baud_rate};
use crate::link::{Backoff, Closed, Shared, StreamRx, StreamTx};
use crate::stream::{self, Ended};
use crate::{Error, LinkEvent, LinkHandle};
use skywave_node::adapter::ModemPacing;
use skywave_node::pacer::Pacer;

/// `[[link]] type = "serial"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SerialConfig {
    /// The device or pty path (symlinks are followed, and re-read on every reopen).
    pub device: PathBuf,
    /// Line rate; 8 data bits, no parity, one stop bit (10 bits on the wire per byte).
    #[serde(default = "default_baud")]
    pub baud: u32,
    /// Pace for a modem described by this link profile or spec instead of the bare line
    /// (e.g. `"hf-modem"` when the far end of the line is such a modem, or the emulator's
    /// side of one): its rate, latency, turnaround and buffer.
    #[serde(default)]
    pub profile: Option<String>,
    /// Name for logs and the status screen (default `serial:DEVICE`).
    #[serde(default)]
    pub name: Option<String>,
}

fn default_baud() -> u32 {
    115_200
}

impl SerialConfig {
    pub fn new(device: impl Into<PathBuf>, baud: u32) -> SerialConfig {
        SerialConfig {
            device: device.into(),
            baud,
            profile: None,
            name: None,
        }
    }
}

/// How a byte stream is paced and what the protocol is told about it.
#[derive(Debug, Clone)]
pub(crate) struct StreamSpec {
    pub params: LinkParams,
    pub pacing: ModemPacing,
}

impl StreamSpec {
    /// A bare line at `baud` (8N1), full duplex, no latency.
    pub(crate) fn line(baud: u32) -> StreamSpec {
        let dir = skywave_sim::DirConfig {
            rate_bps: u64::from(baud) * 8 / 10,
            mtu: STREAM_MTU,
            ..Default::default()
        };
        let cfg = LinkConfig {
            kind: LinkKind::Stream,
            up: dir.clone(),
            down: dir,
            ..LinkConfig::default()
        };
        StreamSpec {
            params: skywave_node::device_params(&cfg),
            pacing: ModemPacing::for_profile(&cfg),
        }
    }

    /// A modem described by a stream link profile.
    pub(crate) fn profile(cfg: &LinkConfig) -> Result<StreamSpec, Error> {
        if cfg.kind != LinkKind::Stream {
            return Err(Error::Invalid {
                field: "profile".into(),
                value: cfg.name.clone(),
                expected: "a byte-stream profile (kind stream, e.g. hf-modem)".into(),
            });
        }
        Ok(StreamSpec {
            params: skywave_node::device_params(cfg),
            pacing: ModemPacing::for_profile(cfg),
        })
    }

    pub(crate) fn pacer(&self, now: Instant) -> Pacer<Instant> {
        self.pacing.pacer(now)
    }
}

/// Resolves a profile name or spec (`hf-modem`, `profile=hf-modem,delay=1s`).
pub(crate) fn lookup_profile(field: &str, text: &str) -> Result<LinkConfig, Error> {
    LinkConfig::lookup(text, &Default::default()).map_err(|e| Error::Invalid {
        field: field.into(),
        value: text.into(),
        expected: e.to_string(),
    })
}

pub(crate) fn check_baud(baud: u32) -> Result<(), Error> {
    if baud_rate(baud).is_none() {
        return Err(Error::Invalid {
            field: "baud".into(),
            value: baud.to_string(),
            expected: format!("one of {BAUD_RATES}"),
        });
    }
    Ok(())
}

/// Starts a `serial` link. The device need not exist yet: the driver opens it when it
/// appears and reopens it whenever it goes away.
pub fn spawn(cfg: SerialConfig) -> Result<LinkHandle, Error> {
    check_baud(cfg.baud)?;
    let spec = match &cfg.profile {
        Some(p) => StreamSpec::profile(&lookup_profile("profile", p)?)?,
        None => StreamSpec::line(cfg.baud),
    };
    let name = cfg
        .name
        .clone()
        .unwrap_or_else(|| format!("serial:{}", cfg.device.display()));
    let (shared, handle, frames) = Shared::new(name);
    tokio::spawn(async move {
        let _ = run(shared, frames, cfg.device, cfg.baud, spec).await;
    });
    Ok(handle)
}

pub(crate) async fn run(
    shared: Shared,
    mut frames: mpsc::Receiver<Bytes>,
    device: PathBuf,
    baud: u32,
    spec: StreamSpec,
) -> Result<(), Closed> {
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    let mut tx = StreamTx::new(spec.pacer(Instant::now()), spec.params.mtu);
    let mut rx = StreamRx::default();
    let mut open_failures = 0u32;
    loop {
        let dev = match Device::open(&device, baud) {
            Ok(d) => d,
            Err(e) => {
                // Said once at warn; a device that stays away is not news every second.
                if open_failures == 0 {
                    tracing::warn!(link = %shared.name, device = %device.display(), error = %e, "cannot open the device; retrying until it appears");
                } else {
                    tracing::debug!(link = %shared.name, error = %e, "device still unavailable");
                }
                open_failures += 1;
                stream::wait_down(&shared, &mut frames, &mut tx, backoff.next_delay()).await?;
                continue;
            }
        };
        open_failures = 0;
        backoff.reset();
        tx.reset(Instant::now());
        tracing::info!(link = %shared.name, device = %device.display(), baud, "link up");
        shared.emit(LinkEvent::Up(spec.params)).await?;
        let ended = stream::run(&shared, &dev, &mut frames, &mut tx, &mut rx, |_| {
            stream::Hook::default()
        })
        .await?;
        drop(dev);
        rx.reset(&shared.counters);
        let (Ended::Device(reason) | Ended::Hook(reason)) = ended;
        shared.down(reason).await?;
        stream::wait_down(&shared, &mut frames, &mut tx, backoff.next_delay()).await?;
    }
}
