//! `rfd900`: a Serval RFD900 packet radio running the CSMA firmware of the Mesh
//! Extenders (and LBARD's radio simulator).
//!
//! Like LBARD, the host protects each frame with Reed-Solomon parity before handing it
//! to the radio, which sends the bytes as they are; a receiving host checks and corrects
//! them. Writes are paced by the airtime they need (frame, parity and preamble at the air
//! rate), and the buffer space the radio reports with each received frame caps the
//! estimate.

pub mod emulator;
pub mod rs;
pub mod wire;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Deserialize;
use skywave_node::adapter::QUEUED_FRAMES;
use skywave_proto::LinkParams;
use skywave_sim::LinkConfig;
use tokio::sync::mpsc;

use crate::device::Device;
use crate::link::{Backoff, Closed, MIN_ROOM, Shared, sleep_until, wait_away};
use crate::serial::check_baud;
use crate::stream::TICK;
use crate::{Error, LinkCounters, LinkEvent, LinkHandle, RadioStatus};
use rs::{MAX_DATA, PARITY, Rs};
use skywave_node::credit::ModemCredit;
use skywave_node::pacer::Pacer;
use wire::{Rx, RxParser};

pub use emulator::{MediumConfig, RadioStats, Rfd900Medium};

/// Airtime of the preamble and sync word the radio sends before each frame, in bytes.
pub const PREAMBLE: usize = 8;

/// `[[link]] type = "rfd900"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rfd900Config {
    pub device: PathBuf,
    /// Serial rate between host and radio (the firmware's default is 230400).
    #[serde(default = "default_baud")]
    pub baud: u32,
    /// On-air bit rate the radio is configured for.
    #[serde(default = "default_air_rate")]
    pub air_rate: u64,
    /// Take the link down (and reset the radio) when it sends nothing, not even a status
    /// frame, for this long (e.g. `"10s"`). Unset: silence is normal.
    #[serde(default, deserialize_with = "crate::de::opt_duration")]
    pub silence_timeout: Option<Duration>,
    #[serde(default)]
    pub name: Option<String>,
    /// Frames the driver lets wait in the radio (at least 1). Unset: 1 when the daemon
    /// takes turns on the channel for the radio (`channel_access = "driver"`, the default
    /// for shared radios), else 2.
    #[serde(default)]
    pub queue_frames: Option<usize>,
}

fn default_baud() -> u32 {
    230_400
}

fn default_air_rate() -> u64 {
    128_000
}

impl Rfd900Config {
    pub fn new(device: impl Into<PathBuf>) -> Rfd900Config {
        Rfd900Config {
            device: device.into(),
            baud: default_baud(),
            air_rate: default_air_rate(),
            silence_timeout: None,
            name: None,
            queue_frames: None,
        }
    }
}

/// Time the host's scheduling may add between a frame handed to the driver and its
/// write to the port.
const HOST_SCHEDULING: Duration = Duration::from_millis(5);

/// What the protocol is told about an RFD900 link at `air_rate`, its port at `baud`: the
/// simulator's `uhf-csma` parameters at that rate, with each frame's airtime counting the
/// Reed-Solomon parity the driver adds as well as the preamble, and a frame's way to the
/// air counting its transfer over the port (a tenth more for escaped bytes).
pub fn params(air_rate: u64, baud: u32) -> LinkParams {
    let mut cfg = LinkConfig::profile("uhf-csma").expect("built-in profile");
    cfg.up.rate_bps = air_rate;
    cfg.down.rate_bps = air_rate;
    LinkParams {
        frame_overhead: PREAMBLE + PARITY,
        handoff: Duration::from_secs_f64(
            (wire::MAX_AIR as f64 * 1.1 + 5.0) * 10.0 / f64::from(baud.max(1)),
        ) + HOST_SCHEDULING,
        ..skywave_node::device_params(&cfg)
    }
}

pub fn spawn(cfg: Rfd900Config) -> Result<LinkHandle, Error> {
    spawn_with(cfg, Box::new(()))
}

/// Starts the driver; its task holds `keep` (an emulator it talks to) until it ends.
pub(crate) fn spawn_with(
    cfg: Rfd900Config,
    keep: Box<dyn std::any::Any + Send>,
) -> Result<LinkHandle, Error> {
    check_baud(cfg.baud)?;
    if cfg.air_rate < 1000 {
        return Err(Error::Invalid {
            field: "air_rate".into(),
            value: cfg.air_rate.to_string(),
            expected: "the radio's air rate in bit/s, at least 1000 (e.g. 128000)".into(),
        });
    }
    if cfg.queue_frames == Some(0) {
        return Err(Error::Invalid {
            field: "queue_frames".into(),
            value: "0".into(),
            expected: "frames the radio may hold, at least 1".into(),
        });
    }
    let name = cfg
        .name
        .clone()
        .unwrap_or_else(|| format!("rfd900:{}", cfg.device.display()));
    let (shared, handle, frames) = Shared::new(name);
    tokio::spawn(async move {
        let _ = run(shared, frames, cfg).await;
        drop(keep);
    });
    Ok(handle)
}

/// A frame written to the radio and not yet known to be off the air.
#[derive(Debug, Clone, Copy)]
struct OnAir {
    /// Where it ends in the count of bytes written.
    end: f64,
    /// The earliest it can be off the air.
    earliest: Instant,
    /// The count of bytes written before it ([`ModemCredit::written`]), and its bytes
    /// (with parity).
    mark: u64,
    len: usize,
}

/// Outgoing frames: protected, escaped, paced by airtime, capped by the free space the
/// radio reports (while another radio keeps the channel busy, ours may drain nothing, so
/// we write no more than that until the report is two longest frames old).
#[derive(Debug)]
struct RadioTx {
    credit: ModemCredit<Instant>,
    rs: Rs,
    queue: Option<Bytes>,
    out: Vec<u8>,
    /// Frames the radio may hold, counting the one on the air.
    queue_frames: usize,
    /// Bytes of airtime written since the start (what the pacer counts), and for each
    /// frame not yet known to be off the air: where it ends in that count, and the
    /// earliest it can end (its bytes crossing the serial line, then its airtime). A
    /// radio without a queue sends a frame the moment it has it: a second frame written
    /// before the first is off the air collides with it, however small both are.
    written: f64,
    frames: VecDeque<OnAir>,
    air_rate: u64,
    baud: u32,
}

impl RadioTx {
    fn new(air_rate: u64, baud: u32, queue_frames: usize) -> RadioTx {
        let queue_frames = queue_frames.max(1);
        let limit = queue_frames * (wire::MAX_AIR + PREAMBLE);
        let report_life = Duration::from_secs_f64(
            2.0 * ((wire::MAX_AIR + PREAMBLE) * 8) as f64 / air_rate as f64,
        );
        RadioTx {
            credit: ModemCredit::new(Pacer::full(
                Instant::now(),
                air_rate as f64 / 8.0,
                PREAMBLE,
                limit,
            ))
            .with_report_life(report_life),
            rs: Rs::new(),
            queue: None,
            out: Vec::new(),
            queue_frames,
            written: 0.0,
            frames: VecDeque::new(),
            air_rate,
            baud,
        }
    }

    /// Bytes of airtime the pacer counts as sent, in the count of bytes written.
    fn drained(&self) -> f64 {
        self.written - self.credit.pacer().queued() as f64
    }

    /// Forgets the frames that are off the air by now: the pacer drained past their end
    /// and their airtime after the serial transfer has passed.
    fn retire(&mut self, now: Instant) {
        let drained = self.drained();
        while let Some(&f) = self.frames.front() {
            if f.end > drained + 0.5 || now < f.earliest {
                break;
            }
            self.frames.pop_front();
            // One frame at a time: a frame written after the last report and now off the
            // air no longer takes the room that report left. (With more, a frame the
            // estimate retires may still wait behind another radio's: the report's cap
            // stands until it expires.)
            if self.queue_frames == 1 {
                self.credit.off_air(f.mark, f.len);
            }
        }
    }

    /// When the last report stops capping the room, if it is still in force. (A report
    /// of no free space, heard while our own frame was on the air, caps the room at 0
    /// with nothing else due to wake the driver: without this wake the room stayed 0.)
    fn report_expiry(&self, now: Instant) -> Option<Instant> {
        self.credit.report_expiry(now)
    }

    /// When the oldest frame still counted may be off the air.
    fn next_retire(&self, now: Instant) -> Option<Instant> {
        let f = self.frames.front()?;
        let left = ((f.end - self.drained()).max(0.0) * 8.0) / self.air_rate as f64;
        Some(f.earliest.max(now + Duration::from_secs_f64(left)))
    }

    /// Bytes the radio takes now: the airtime estimate, and the last report's free space.
    fn device_room(&mut self, now: Instant) -> usize {
        if self.frames.len() >= self.queue_frames {
            return 0;
        }
        self.credit.room(now)
    }

    fn offer(&mut self, name: &str, f: Bytes, counters: &LinkCounters) {
        if f.is_empty() || f.len() > MAX_DATA {
            tracing::warn!(
                link = name,
                len = f.len(),
                "frame refused: empty or over the radio's 223 bytes"
            );
            LinkCounters::add(&counters.dropped_frames, 1);
            return;
        }
        if f.len() > self.room() {
            LinkCounters::add(&counters.over_room, 1);
        }
        self.queue = Some(f);
    }

    fn pump(&mut self, now: Instant, counters: &LinkCounters) {
        self.credit.pacer_mut().advance(now);
        self.retire(now);
        let Some(f) = &self.queue else {
            return;
        };
        if f.len() + PARITY > self.device_room(now) {
            return;
        }
        let f = self.queue.take().expect("checked");
        let mut air = Vec::with_capacity(f.len() + PARITY);
        self.rs.encode(&f, &mut air);
        // As LBARD does: a lone `C` completes an escape the radio may be left in, then
        // `!C` clears whatever stray bytes sit in its buffer, so they cannot prefix the frame.
        self.out.extend_from_slice(b"C!C");
        wire::encode_tx(&air, &mut self.out);
        // 10 bits per byte on the serial line, behind what is still to be written.
        let serial = Duration::from_secs_f64(self.out.len() as f64 * 10.0 / f64::from(self.baud));
        let airtime =
            Duration::from_secs_f64(((air.len() + PREAMBLE) * 8) as f64 / self.air_rate as f64);
        let mark = self.credit.written();
        self.credit.wrote(now, air.len());
        self.written += (air.len() + PREAMBLE) as f64;
        let after_prev = self.frames.back().map_or(now, |f| f.earliest);
        self.frames.push_back(OnAir {
            end: self.written,
            earliest: (now + serial).max(after_prev) + airtime,
            mark,
            len: air.len(),
        });
        LinkCounters::add(&counters.frames_out, 1);
        LinkCounters::add(&counters.bytes_out, f.len() as u64);
    }

    fn room(&mut self) -> usize {
        if self.queue.is_some() {
            return 0;
        }
        let r = self
            .device_room(Instant::now())
            .saturating_sub(PARITY)
            .min(MAX_DATA);
        if r < MIN_ROOM { 0 } else { r }
    }

    fn report(&mut self, now: Instant, space: u16) {
        self.credit.reported_free(now, usize::from(space));
    }
}

async fn run(
    shared: Shared,
    mut frames: mpsc::Receiver<Bytes>,
    cfg: Rfd900Config,
) -> Result<(), Closed> {
    let params = params(cfg.air_rate, cfg.baud);
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    let mut failures = 0u32;
    loop {
        let dev = match Device::open(&cfg.device, cfg.baud) {
            Ok(d) => d,
            Err(e) => {
                if failures == 0 {
                    tracing::warn!(link = %shared.name, device = %cfg.device.display(), error = %e, "cannot open the radio; retrying until it appears");
                }
                failures += 1;
                wait_away(&shared, &mut frames, backoff.next_delay()).await?;
                continue;
            }
        };
        failures = 0;
        backoff.reset();
        // A lone `C` first: if the radio was left after a `!`, it completes that escape
        // harmlessly instead of turning our `!C` into `!!` (transmit).
        if let Err(e) = dev.write_all(b"C!C").await {
            shared
                .down(format!("cannot write to the radio: {e}"))
                .await?;
            wait_away(&shared, &mut frames, backoff.next_delay()).await?;
            continue;
        }
        tracing::info!(link = %shared.name, device = %cfg.device.display(), baud = cfg.baud, air_rate = cfg.air_rate, "radio link up");
        shared.emit(LinkEvent::Up(params)).await?;
        let reason = session(&shared, &dev, &mut frames, &cfg).await?;
        if reason.contains("silent") {
            // LBARD resets a radio that stopped hearing anything; so do we.
            let _ = dev.write_all(b"!Z").await;
        }
        drop(dev);
        shared.down(reason).await?;
        wait_away(&shared, &mut frames, backoff.next_delay()).await?;
    }
}

/// Carries frames until the radio fails; `Err` when the daemon drops the handle.
async fn session(
    shared: &Shared,
    dev: &Device,
    frames: &mut mpsc::Receiver<Bytes>,
    cfg: &Rfd900Config,
) -> Result<String, Closed> {
    let counters = &shared.counters;
    let mut tx = RadioTx::new(
        cfg.air_rate,
        cfg.baud,
        cfg.queue_frames.unwrap_or(QUEUED_FRAMES),
    );
    let mut parser = RxParser::new();
    let mut rs = Rs::new();
    let mut garbage = 0u64;
    let mut buf = vec![0u8; 4096];
    let mut last_heard = Instant::now();
    let mut last_status: Option<(RadioStatus, Instant)> = None;
    loop {
        let now = Instant::now();
        tx.pump(now, counters);
        shared.set_room(tx.room());
        if let Some(limit) = cfg.silence_timeout
            && now.duration_since(last_heard) > limit
        {
            return Ok(format!(
                "radio silent for {} s (no frame or status)",
                limit.as_secs_f64()
            ));
        }
        let busy = tx.credit.pacer().busy() || tx.queue.is_some() || cfg.silence_timeout.is_some();
        // Wake when a frame leaves the air or the last report expires (the room opens
        // then), or each tick while busy.
        let wake = tx
            .next_retire(now)
            .into_iter()
            .chain(tx.report_expiry(now))
            .chain(busy.then(|| now + TICK))
            .min();
        tokio::select! {
            r = dev.read(&mut buf) => match r {
                Ok(0) => return Ok("end of file on the radio's port".into()),
                Ok(n) => {
                    last_heard = Instant::now();
                    for rx in parser.push(&buf[..n]) {
                        let status = match rx {
                            Rx::Heartbeat => continue,
                            Rx::Truncated(s) => {
                                LinkCounters::add(&counters.dropped_frames, 1);
                                s
                            }
                            Rx::Frame(air, s) => {
                                // Carrier sense held our radio back while this was on the air.
                                tx.credit.pacer_mut().channel_busy(last_heard, air.len() + PREAMBLE);
                                match rs.decode(&air) {
                                    Ok((data, fixed)) => {
                                        if fixed > 0 {
                                            tracing::debug!(link = %shared.name, fixed, "Reed-Solomon corrected bytes");
                                        }
                                        LinkCounters::add(&counters.frames_in, 1);
                                        LinkCounters::add(&counters.bytes_in, data.len() as u64);
                                        shared.emit(LinkEvent::Frame(Bytes::from(data))).await?;
                                    }
                                    Err(e) => {
                                        tracing::debug!(link = %shared.name, len = air.len(), error = ?e, "frame dropped: Reed-Solomon check failed");
                                        LinkCounters::add(&counters.dropped_frames, 1);
                                    }
                                }
                                s
                            }
                        };
                        tx.report(last_heard, status.buffer_space);
                        // Signal figures change slowly: say them when they change, or each second.
                        let due = last_status.is_none_or(|(prev, at)| {
                            prev != status || last_heard.duration_since(at) >= Duration::from_secs(1)
                        });
                        if due {
                            last_status = Some((status, last_heard));
                            shared.emit(LinkEvent::Status(status)).await?;
                        }
                    }
                    LinkCounters::add(&counters.garbage_bytes, parser.garbage - garbage);
                    garbage = parser.garbage;
                }
                Err(e) => return Ok(format!("read from the radio failed: {e}")),
            },
            r = dev.write_some(&tx.out), if !tx.out.is_empty() => match r {
                Ok(n) => {
                    tx.out.drain(..n);
                }
                Err(e) => return Ok(format!("write to the radio failed: {e}")),
            },
            f = frames.recv(), if tx.queue.is_none() => match f {
                Some(f) => {
                    tx.offer(&shared.name, f, counters);
                    tx.pump(Instant::now(), counters);
                    shared.took_frame(tx.room());
                }
                None => return Err(Closed),
            },
            _ = sleep_until(wake) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters() -> LinkCounters {
        LinkCounters::default()
    }

    /// One frame at a time: the next is taken only once the previous is off the air,
    /// however small both are (a radio without a queue would overlap them).
    #[test]
    fn one_frame_at_a_time_waits_for_the_air() {
        let c = counters();
        let mut tx = RadioTx::new(2400, 230_400, 1);
        let t0 = Instant::now();
        tx.offer("t", Bytes::from(vec![7u8; 40]), &c);
        tx.pump(t0, &c);
        assert_eq!(tx.frames.len(), 1);
        // 40 + 32 parity + 8 preamble bytes at 300 B/s: 0.27 s on the air.
        assert_eq!(tx.device_room(t0 + Duration::from_millis(100)), 0);
        let free_at = tx.next_retire(t0).expect("a frame on the air");
        assert!(
            free_at >= t0 + Duration::from_millis(266),
            "{:?}",
            free_at - t0
        );
        let later = free_at + Duration::from_millis(1);
        tx.pump(later, &c);
        assert!(tx.frames.is_empty());
        assert!(
            tx.device_room(later) >= 223 + PARITY,
            "{}",
            tx.device_room(later)
        );
    }

    /// A report of no free space (heard while our frame was on the air) caps the room
    /// at 0 until it expires, and the driver is woken then; a frame off the air is
    /// credited back against a report heard before it was written.
    #[test]
    fn a_report_caps_the_room_until_it_expires_or_frames_leave() {
        let c = counters();
        let mut tx = RadioTx::new(2400, 230_400, 1);
        let t0 = Instant::now();
        tx.report(t0, 0);
        assert_eq!(tx.device_room(t0), 0);
        let expiry = tx
            .report_expiry(t0)
            .expect("a report in force wakes the driver");
        assert_eq!(
            expiry,
            t0 + Duration::from_secs_f64(2.0 * 263.0 * 8.0 / 2400.0)
        );
        assert!(tx.device_room(expiry) > 0);
        assert_eq!(tx.report_expiry(expiry), None);

        let mut tx = RadioTx::new(2400, 230_400, 1);
        tx.report(t0, 255);
        tx.offer("t", Bytes::from(vec![7u8; 150]), &c);
        tx.pump(t0, &c);
        let off = tx.next_retire(t0).unwrap() + Duration::from_millis(1);
        assert!(off < t0 + Duration::from_secs_f64(2.0 * 263.0 * 8.0 / 2400.0));
        tx.pump(off, &c);
        // Without the credit the room would be 255 - 182 until the report expired.
        assert!(
            tx.device_room(off) >= 223 + PARITY,
            "{}",
            tx.device_room(off)
        );
    }
}
