//! An RFD900 radio running the CSMA firmware, emulated on the far side of a pty, and the
//! shared channel that two or more of them transmit on.
//!
//! Each radio parses what its host writes (`!.`, `!!`, `!C`, `!Z`, `!V`), keeps a finite
//! buffer (bytes past it are lost and counted, as in the firmware), and queues frames for
//! the air. The channel carries one frame at a time (carrier sense: a radio waits for the
//! air to be free, so frames do not collide), each for its airtime (preamble + bytes at
//! the air rate), and hands it to every other radio, which passes it to its host with the
//! trailer (signal figures and its own free buffer space). Frames can be lost or have
//! bytes corrupted on the way. Every radio sends a status frame periodically.
//!
//! [`MediumConfig::unqueued`] models Serval's RFD900 simulator (fakecsmaradio) instead, as
//! the lab's CSMA `txqueue=none` does: a frame handed over goes on the air at once, with
//! no carrier sense, backoff or queue beyond the frame on the air; the free space a radio
//! reports is one frame while it is silent and 0 while it sends; and frames that overlap
//! on the air (a radio's own previous frame, or another radio's) are lost at every
//! receiver.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use skywave_sim::{LinkConfig, LinkKind};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::wire::{self, HostItem, HostParser, MAX_AIR};
use crate::RadioStatus;
use crate::device::Pty;
use crate::link::sleep_until;

/// The channel and its radios.
#[derive(Debug, Clone, PartialEq)]
pub struct MediumConfig {
    pub radios: usize,
    /// On-air bit rate.
    pub air_rate: u64,
    /// Airtime added to each frame, in bytes.
    pub preamble: usize,
    /// Each radio's buffer (bytes from its host not yet on the air).
    pub buffer: usize,
    /// Interval of the status frames; `None`: none.
    pub heartbeat: Option<Duration>,
    /// Probability that a radio misses a frame.
    pub loss: f64,
    /// Bytes corrupted in every frame a radio hears (the parity corrects up to 16).
    pub corrupt_bytes: usize,
    pub seed: u64,
    /// No transmit queue and no carrier sense (the lab's CSMA `txqueue=none`, Serval's
    /// fakecsmaradio): each frame goes on the air the moment the host hands it over, and
    /// overlapping frames collide. Default off (queued radios that sense the carrier).
    pub unqueued: bool,
}

impl MediumConfig {
    /// `radios` radios at the firmware's defaults: 128 kbit/s, 8-byte preamble, 4 KiB
    /// buffer, a status frame every 500 ms, no loss.
    pub fn new(radios: usize) -> MediumConfig {
        MediumConfig {
            radios,
            air_rate: 128_000,
            preamble: super::PREAMBLE,
            buffer: 4096,
            heartbeat: Some(Duration::from_millis(500)),
            loss: 0.0,
            corrupt_bytes: 0,
            seed: 1,
            unqueued: false,
        }
    }

    /// The radios of a `csma` link profile (e.g. `uhf-csma`, `uhf-csma-lossy`);
    /// `txqueue=none` makes them [`unqueued`](MediumConfig::unqueued) (other `txqueue`
    /// settings keep the default queued radios).
    pub fn from_profile(cfg: &LinkConfig, radios: usize) -> Result<MediumConfig, String> {
        if cfg.kind != LinkKind::Csma {
            return Err(format!(
                "profile '{}' is not a shared radio channel (kind {}); use a csma profile such as uhf-csma",
                cfg.name,
                cfg.kind.as_str()
            ));
        }
        let buffer = usize::try_from(cfg.buffer_bytes(skywave_sim::Side::A)).unwrap_or(4096);
        Ok(MediumConfig {
            air_rate: cfg.up.rate_bps,
            preamble: cfg.up.overhead,
            buffer,
            loss: cfg.up.loss.mean_loss(),
            unqueued: cfg.csma.txqueue == skywave_sim::config::TxQueue::None,
            ..MediumConfig::new(radios)
        })
    }
}

/// What one radio saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RadioStats {
    /// Frames and bytes this radio put on the air.
    pub frames_sent: u64,
    pub bytes_sent: u64,
    /// Frames passed to this radio's host.
    pub frames_heard: u64,
    /// Frames this radio missed (loss).
    pub frames_missed: u64,
    /// Unqueued radios: frames this radio lost because they overlapped another frame on
    /// the air (counted at each receiver, like `frames_heard`).
    pub frames_collided: u64,
    /// Bytes from the host that did not fit the buffer.
    pub overrun_bytes: u64,
    /// `!` followed by a byte with no meaning.
    pub broken_escapes: u64,
    /// `!C` and `!Z` commands.
    pub clears: u64,
    /// The fullest the buffer has been.
    pub max_used: usize,
}

enum Cmd {
    Inject(usize, Vec<u8>),
    Corrupt(usize),
}

/// A running channel of emulated radios.
#[derive(Debug)]
pub struct Rfd900Medium {
    paths: Vec<PathBuf>,
    stats: Arc<Mutex<Vec<RadioStats>>>,
    cmd: mpsc::Sender<Cmd>,
}

impl Rfd900Medium {
    /// Opens a pty per radio and starts the channel (needs a tokio runtime).
    pub fn start(cfg: MediumConfig) -> io::Result<Rfd900Medium> {
        if cfg.radios < 2 || cfg.air_rate == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an RFD900 channel needs at least 2 radios and a non-zero air rate",
            ));
        }
        let ptys = (0..cfg.radios)
            .map(|_| Pty::open().map(Arc::new))
            .collect::<io::Result<Vec<_>>>()?;
        let paths = ptys.iter().map(|p| p.path.clone()).collect();
        let stats = Arc::new(Mutex::new(vec![RadioStats::default(); cfg.radios]));
        let (cmd, cmd_rx) = mpsc::channel(16);
        tokio::spawn(run(cfg, ptys, stats.clone(), cmd_rx));
        Ok(Rfd900Medium { paths, stats, cmd })
    }

    /// The serial port of radio `i` (a pty slave).
    pub fn path(&self, i: usize) -> &Path {
        &self.paths[i]
    }

    pub fn stats(&self, i: usize) -> RadioStats {
        self.stats.lock().expect("stats lock")[i]
    }

    /// Writes raw bytes to radio `i`'s host, as noise on its serial line would.
    pub async fn inject(&self, i: usize, bytes: Vec<u8>) {
        let _ = self.cmd.send(Cmd::Inject(i, bytes)).await;
    }

    /// Corrupts `n` bytes of every frame heard from now on.
    pub async fn set_corrupt_bytes(&self, n: usize) {
        let _ = self.cmd.send(Cmd::Corrupt(n)).await;
    }
}

struct Radio {
    parser: HostParser,
    input: Vec<u8>,
    queue: VecDeque<Vec<u8>>,
    queued: usize,
    /// Unqueued radios: this radio's frames on the air.
    sending: usize,
    out: mpsc::UnboundedSender<Vec<u8>>,
}

impl Radio {
    fn used(&self) -> usize {
        self.input.len() + self.queued
    }

    /// The free space the radio reports to its host.
    fn free(&self, cfg: &MediumConfig) -> usize {
        if cfg.unqueued {
            // One frame while silent, nothing while sending.
            if self.sending > 0 {
                0
            } else {
                MAX_AIR.saturating_sub(self.input.len())
            }
        } else {
            cfg.buffer.saturating_sub(self.used())
        }
    }

    /// Whether one more byte from the host fits.
    fn room(&self, cfg: &MediumConfig) -> bool {
        if cfg.unqueued {
            self.input.len() < MAX_AIR
        } else {
            self.used() < cfg.buffer
        }
    }
}

/// Unqueued radios: a frame on the air.
struct Tx {
    from: usize,
    frame: Vec<u8>,
    end: Instant,
    /// It overlapped another frame on the air: every receiver loses it.
    collided: bool,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

async fn run(
    mut cfg: MediumConfig,
    ptys: Vec<Arc<Pty>>,
    stats: Arc<Mutex<Vec<RadioStats>>>,
    mut cmd: mpsc::Receiver<Cmd>,
) {
    let (in_tx, mut input) = mpsc::channel::<(usize, Vec<u8>)>(64);
    let mut radios = Vec::new();
    for (i, p) in ptys.iter().enumerate() {
        let (out, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let w = p.clone();
        tokio::spawn(async move {
            while let Some(b) = out_rx.recv().await {
                if w.write_all(&b).await.is_err() {
                    break;
                }
            }
        });
        let r = p.clone();
        let tx = in_tx.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            loop {
                match r.read(&mut buf).await {
                    Ok(n) if n > 0 => {
                        if tx.send((i, buf[..n].to_vec())).await.is_err() {
                            break;
                        }
                    }
                    Ok(_) => tokio::time::sleep(Duration::from_millis(5)).await,
                    Err(e) => {
                        tracing::debug!(radio = i, error = %e, "emulated radio: read failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        });
        radios.push(Radio {
            parser: HostParser::default(),
            input: Vec::new(),
            queue: VecDeque::new(),
            queued: 0,
            sending: 0,
            out,
        });
    }
    drop(in_tx);
    let mut rng = Rng(cfg.seed);
    let mut on_air: Option<(usize, Vec<u8>, Instant)> = None;
    // Unqueued radios: every frame on the air (overlapping ones collide).
    let mut air: Vec<Tx> = Vec::new();
    let mut next_radio = 0usize;
    let mut next_heartbeat = cfg.heartbeat.map(|h| Instant::now() + h);
    loop {
        // Carrier sense: the next radio in turn with a frame takes the free air.
        if on_air.is_none() {
            let n = radios.len();
            if let Some(i) = (0..n)
                .map(|k| (next_radio + k) % n)
                .find(|&i| !radios[i].queue.is_empty())
            {
                let frame = radios[i].queue.pop_front().expect("non-empty");
                radios[i].queued -= frame.len();
                let air = airtime(&cfg, frame.len());
                let mut st = stats.lock().expect("stats lock");
                st[i].frames_sent += 1;
                st[i].bytes_sent += frame.len() as u64;
                drop(st);
                on_air = Some((i, frame, Instant::now() + air));
                next_radio = (i + 1) % n;
            }
        }
        let air_end = on_air
            .as_ref()
            .map(|a| a.2)
            .into_iter()
            .chain(air.iter().map(|t| t.end))
            .min();
        let wake = [air_end, next_heartbeat].into_iter().flatten().min();
        tokio::select! {
            got = input.recv() => {
                let Some((i, bytes)) = got else { return };
                let r = &mut radios[i];
                let mut st = stats.lock().expect("stats lock");
                for b in bytes {
                    match r.parser.push(b) {
                        None => {}
                        Some(HostItem::Data(d)) => {
                            if r.room(&cfg) {
                                r.input.push(d);
                            } else {
                                st[i].overrun_bytes += 1;
                            }
                        }
                        Some(HostItem::Transmit) => {
                            let n = r.input.len().min(MAX_AIR);
                            if n > 0 && cfg.unqueued {
                                // On the air at once, whatever else is on it.
                                let frame: Vec<u8> = r.input.drain(..n).collect();
                                let now = Instant::now();
                                let mut collided = false;
                                for t in air.iter_mut().filter(|t| t.end > now) {
                                    tracing::debug!(
                                        radio = i,
                                        on_air = t.from,
                                        left_us = (t.end - now).as_micros() as u64,
                                        "emulated radio: a frame goes on the air over another"
                                    );
                                    t.collided = true;
                                    collided = true;
                                }
                                r.sending += 1;
                                st[i].frames_sent += 1;
                                st[i].bytes_sent += frame.len() as u64;
                                let end = now + airtime(&cfg, frame.len());
                                air.push(Tx { from: i, frame, end, collided });
                            } else if n > 0 {
                                let frame: Vec<u8> = r.input.drain(..n).collect();
                                r.queued += frame.len();
                                r.queue.push_back(frame);
                            }
                        }
                        Some(HostItem::Clear) => {
                            r.input.clear();
                            st[i].clears += 1;
                        }
                        Some(HostItem::Reset) => {
                            r.input.clear();
                            r.queue.clear();
                            r.queued = 0;
                            st[i].clears += 1;
                        }
                        Some(HostItem::Version) => {
                            let _ = r.out.send(b"1".to_vec());
                        }
                        Some(HostItem::Setting(_)) => {}
                        Some(HostItem::BrokenEscape(_)) => st[i].broken_escapes += 1,
                    }
                    st[i].max_used = st[i].max_used.max(r.used());
                }
            }
            c = cmd.recv() => match c {
                Some(Cmd::Inject(i, bytes)) => {
                    if let Some(r) = radios.get(i) {
                        let _ = r.out.send(bytes);
                    }
                }
                Some(Cmd::Corrupt(n)) => cfg.corrupt_bytes = n,
                None => return,
            },
            _ = sleep_until(wake) => {
                let now = Instant::now();
                if let Some((from, frame, end)) = on_air.take() {
                    if end <= now {
                        deliver(&cfg, &mut rng, &radios, &stats, from, &frame);
                    } else {
                        on_air = Some((from, frame, end));
                    }
                }
                let mut k = 0;
                while k < air.len() {
                    if air[k].end > now {
                        k += 1;
                        continue;
                    }
                    let t = air.swap_remove(k);
                    radios[t.from].sending -= 1;
                    if t.collided {
                        let mut st = stats.lock().expect("stats lock");
                        for (j, s) in st.iter_mut().enumerate() {
                            if j != t.from {
                                s.frames_collided += 1;
                            }
                        }
                    } else {
                        deliver(&cfg, &mut rng, &radios, &stats, t.from, &t.frame);
                    }
                }
                if let Some(h) = cfg.heartbeat
                    && next_heartbeat.is_some_and(|t| t <= now)
                {
                    for r in &radios {
                        let _ = r.out.send(wire::heartbeat([0xff; 6]).to_vec());
                    }
                    next_heartbeat = Some(now + h);
                }
            }
        }
    }
}

/// How long a frame of `len` bytes is on the air.
fn airtime(cfg: &MediumConfig, len: usize) -> Duration {
    Duration::from_secs_f64(((len + cfg.preamble) * 8) as f64 / cfg.air_rate as f64)
}

fn deliver(
    cfg: &MediumConfig,
    rng: &mut Rng,
    radios: &[Radio],
    stats: &Mutex<Vec<RadioStats>>,
    from: usize,
    frame: &[u8],
) {
    let mut st = stats.lock().expect("stats lock");
    for (j, r) in radios.iter().enumerate() {
        if j == from {
            continue;
        }
        if rng.chance(cfg.loss) {
            st[j].frames_missed += 1;
            continue;
        }
        let mut air = frame.to_vec();
        for _ in 0..cfg.corrupt_bytes.min(air.len()) {
            let at = (rng.next() % air.len() as u64) as usize;
            air[at] ^= (rng.next() % 255 + 1) as u8;
        }
        let status = RadioStatus {
            rssi: 200,
            remote_rssi: 100,
            temperature: 28,
            buffer_space: r.free(cfg).min(0xffff) as u16,
        };
        let mut out = Vec::with_capacity(air.len() + wire::TRAILER);
        wire::encode_rx(&air, status, &mut out);
        let _ = r.out.send(out);
        st[j].frames_heard += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;

    async fn send(d: &Device, len: usize, frames: usize) {
        let mut out = Vec::new();
        for _ in 0..frames {
            wire::encode_tx(&vec![0x55; len], &mut out);
        }
        d.write_all(&out).await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unqueued_frames_that_overlap_are_lost_at_every_receiver() {
        let medium = Rfd900Medium::start(MediumConfig {
            air_rate: 9600,
            heartbeat: None,
            unqueued: true,
            ..MediumConfig::new(2)
        })
        .unwrap();
        let a = Device::open(medium.path(0), 57_600).unwrap();
        let b = Device::open(medium.path(1), 57_600).unwrap();
        // ~90 ms on the air each; wait well past it.
        let settle = || tokio::time::sleep(Duration::from_millis(400));
        send(&a, 100, 1).await;
        settle().await;
        assert_eq!(medium.stats(1).frames_heard, 1);
        // Two frames back to back: the second overlaps the first.
        send(&a, 100, 2).await;
        settle().await;
        assert_eq!(medium.stats(0).frames_sent, 3);
        assert_eq!(medium.stats(1).frames_heard, 1);
        assert_eq!(medium.stats(1).frames_collided, 2);
        // Both radios at once: neither frame gets through.
        let (x, y) = (send(&a, 100, 1), send(&b, 100, 1));
        tokio::join!(x, y);
        settle().await;
        assert_eq!(medium.stats(0).frames_heard, 0);
        assert_eq!(medium.stats(0).frames_collided, 1);
        assert_eq!(medium.stats(1).frames_heard, 1);
        assert_eq!(medium.stats(1).frames_collided, 3);
    }
}
