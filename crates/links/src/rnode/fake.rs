//! Scripted fake RNodes on pseudo-terminals, for tests: two or more radios on one
//! channel, each behind a serial device path an `rnode` link opens.
//!
//! A fake answers the configuration commands with the values it now uses (as the
//! firmware's `kiss_indicate_*` do), queues data frames, puts each on the air for its
//! air time by Semtech's formula at the configured settings (one at a time), hands it
//! to every other fake's host, and then tells its own host `READY`. It answers `READY`
//! queries (ready while nothing is on the air or queued) and reports channel statistics
//! (`STAT_CHTM`) after each frame. It keeps what a test checks: the most frames it ever
//! held at once, every transmission's start and air time, the commands it got. It can
//! be told to refuse the next frames (`ERROR QUEUE_FULL`), to go silent (a hung device:
//! it reads and drops everything), and to put raw bytes in front of its host. What it
//! does not do: carrier sense, collisions, loss, or the firmware's own airtime locks.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use skywave_node::lora::LoraPhy;
use tokio::sync::mpsc;

use super::wire::{self, cmd};
use crate::device::Pty;

/// What one fake saw and did.
#[derive(Debug, Default, Clone)]
pub struct FakeRnodeStats {
    /// Data frames taken from the host.
    pub frames_in: u64,
    /// Frames put on the air.
    pub frames_sent: u64,
    /// Most frames held at once (queued or on the air).
    pub max_held: usize,
    /// Every transmission: when it started (since the fakes started) and its air time.
    pub air_log: Vec<(Duration, Duration)>,
    /// Commands received (first byte, value bytes), data frames excepted.
    pub commands: Vec<(u8, Vec<u8>)>,
    pub ready_queries: u64,
    pub refused: u64,
}

#[derive(Debug)]
struct Radio {
    frequency: u32,
    bandwidth: u32,
    txpower: u8,
    sf: u8,
    cr: u8,
    preamble: u16,
    on: bool,
    silent: bool,
    refuse: u32,
    held: usize,
    stats: FakeRnodeStats,
    to_host: mpsc::UnboundedSender<Vec<u8>>,
    air: mpsc::UnboundedSender<Vec<u8>>,
}

impl Radio {
    fn phy(&self) -> LoraPhy {
        LoraPhy {
            sf: self.sf.clamp(7, 12),
            bw_hz: self.bandwidth,
            cr: self.cr.clamp(5, 8),
            preamble: self.preamble,
            explicit_header: true,
            crc: true,
        }
    }

    fn say(&self, c: u8, data: &[u8]) {
        if self.silent {
            return;
        }
        let mut out = Vec::new();
        wire::command(c, data, &mut out);
        let _ = self.to_host.send(out);
    }
}

/// Fake RNodes sharing one channel (see the module docs).
#[derive(Debug, Clone)]
pub struct FakeRnodes {
    radios: Arc<Mutex<Vec<Radio>>>,
    paths: Vec<PathBuf>,
    ptys: Vec<Arc<Pty>>,
}

impl FakeRnodes {
    /// `n` radios with `preamble` symbols of preamble. Must be called within a tokio
    /// runtime; they run until it ends.
    pub fn start(n: usize, preamble: u16) -> std::io::Result<FakeRnodes> {
        let origin = Instant::now();
        let radios = Arc::new(Mutex::new(Vec::new()));
        let mut paths = Vec::new();
        let mut ptys = Vec::new();
        for i in 0..n {
            let pty = Arc::new(Pty::open()?);
            paths.push(pty.path.clone());
            let (to_host, mut host_rx) = mpsc::unbounded_channel::<Vec<u8>>();
            let (air, air_rx) = mpsc::unbounded_channel::<Vec<u8>>();
            radios
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Radio {
                    frequency: 0,
                    bandwidth: 125_000,
                    txpower: 0,
                    sf: 7,
                    cr: 5,
                    preamble,
                    on: false,
                    silent: false,
                    refuse: 0,
                    held: 0,
                    stats: FakeRnodeStats::default(),
                    to_host,
                    air,
                });
            let w = pty.clone();
            tokio::spawn(async move {
                while let Some(b) = host_rx.recv().await {
                    if w.write_all(&b).await.is_err() {
                        break;
                    }
                }
            });
            tokio::spawn(read_host(i, pty.clone(), radios.clone()));
            tokio::spawn(transmit(i, air_rx, radios.clone(), origin));
            ptys.push(pty);
        }
        Ok(FakeRnodes {
            radios,
            paths,
            ptys,
        })
    }

    /// The serial device of radio `i`, for an `rnode` link's `device`.
    pub fn path(&self, i: usize) -> String {
        self.paths[i].display().to_string()
    }

    pub fn stats(&self, i: usize) -> FakeRnodeStats {
        self.lock()[i].stats.clone()
    }

    /// Radio `i` refuses the next `n` data frames with `ERROR QUEUE_FULL`.
    pub fn refuse_next(&self, i: usize, n: u32) {
        self.lock()[i].refuse = n;
    }

    /// Radio `i` stops answering (reads and drops everything), or answers again.
    pub fn silent(&self, i: usize, yes: bool) {
        self.lock()[i].silent = yes;
    }

    /// Whether radio `i`'s radio is on (after `RADIO_STATE 1`).
    pub fn radio_on(&self, i: usize) -> bool {
        self.lock()[i].on
    }

    /// Puts raw bytes in front of radio `i`'s host.
    pub async fn inject(&self, i: usize, bytes: &[u8]) {
        let _ = self.ptys[i].write_all(bytes).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Radio>> {
        self.radios.lock().unwrap_or_else(|e| e.into_inner())
    }
}

async fn read_host(i: usize, pty: Arc<Pty>, radios: Arc<Mutex<Vec<Radio>>>) {
    let mut dec = crate::kiss::wire::Decoder::new();
    let mut buf = vec![0u8; 4096];
    loop {
        let n = match pty.read(&mut buf).await {
            Ok(n) if n > 0 => n,
            // (EIO while no host has the device open.)
            _ => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        for f in dec.push(&buf[..n]) {
            let c = f.port << 4 | f.command;
            let mut all = radios.lock().unwrap_or_else(|e| e.into_inner());
            let r = &mut all[i];
            if r.silent {
                continue;
            }
            if c != cmd::DATA {
                r.stats.commands.push((c, f.data.clone()));
            }
            let be = |d: &[u8]| d.iter().fold(0u32, |a, &b| (a << 8) | u32::from(b));
            match (c, f.data.len()) {
                (cmd::DATA, n) if n > 0 => {
                    r.stats.frames_in += 1;
                    if r.refuse > 0 {
                        r.refuse -= 1;
                        r.stats.refused += 1;
                        r.say(cmd::ERROR, &[wire::error::QUEUE_FULL]);
                        continue;
                    }
                    r.held += 1;
                    r.stats.max_held = r.stats.max_held.max(r.held);
                    let _ = r.air.send(f.data);
                }
                (cmd::FREQUENCY, 4) => {
                    r.frequency = be(&f.data);
                    r.say(c, &r.frequency.to_be_bytes());
                }
                (cmd::BANDWIDTH, 4) => {
                    r.bandwidth = be(&f.data);
                    r.say(c, &r.bandwidth.to_be_bytes());
                }
                (cmd::TXPOWER, 1) => {
                    r.txpower = f.data[0];
                    r.say(c, &[r.txpower]);
                }
                (cmd::SF, 1) => {
                    r.sf = f.data[0].clamp(5, 12);
                    r.say(c, &[r.sf]);
                }
                (cmd::CR, 1) => {
                    r.cr = f.data[0].clamp(5, 8);
                    r.say(c, &[r.cr]);
                }
                (cmd::RADIO_STATE, 1) => {
                    if f.data[0] != 0xFF {
                        r.on = f.data[0] == 1;
                    }
                    r.say(c, &[u8::from(r.on)]);
                }
                (cmd::READY, _) => {
                    r.stats.ready_queries += 1;
                    let ready = r.held == 0;
                    r.say(cmd::READY, &[u8::from(ready)]);
                }
                _ => {}
            }
        }
    }
}

async fn transmit(
    i: usize,
    mut air_rx: mpsc::UnboundedReceiver<Vec<u8>>,
    radios: Arc<Mutex<Vec<Radio>>>,
    origin: Instant,
) {
    while let Some(f) = air_rx.recv().await {
        let air = {
            let mut all = radios.lock().unwrap_or_else(|e| e.into_inner());
            let r = &mut all[i];
            let air = super::airtime(&r.phy(), f.len());
            r.stats.air_log.push((origin.elapsed(), air));
            air
        };
        tokio::time::sleep(air).await;
        let all = radios.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        wire::command(cmd::DATA, &f, &mut out);
        for (j, other) in all.iter().enumerate() {
            if j != i && other.on && !other.silent {
                let _ = other.to_host.send(out.clone());
            }
        }
        drop(all);
        let mut all = radios.lock().unwrap_or_else(|e| e.into_inner());
        let r = &mut all[i];
        r.held -= 1;
        r.stats.frames_sent += 1;
        // Our own air time over the last hour, in hundredths of a percent.
        let now = origin.elapsed();
        let hour = Duration::from_secs(3600);
        let used: Duration = r
            .stats
            .air_log
            .iter()
            .map(|&(s, a)| {
                (s + a)
                    .min(now)
                    .saturating_sub(s.max(now.saturating_sub(hour)))
            })
            .sum();
        let pct = (used.as_secs_f64() / 3600.0 * 10_000.0).round() as u16;
        let [a, b] = pct.to_be_bytes();
        r.say(cmd::STAT_CHTM, &[a, b, a, b, a, b, a, b, 57, 37, 0xFF]);
        r.say(cmd::READY, &[1]);
    }
}
