//! A virtual audio cable between real modem programs (Dire Wolf, ardopcf), for the
//! tests against real modem software. No sound card is needed:
//!
//! - Each modem plays into an ALSA `file` PCM whose slave is `null`
//!   ([`alsa_config`]), writing raw S16_LE mono samples into a FIFO.
//! - An `LD_PRELOAD` interposer ([`build_buffer_cap`]) caps the playback buffer: left
//!   alone, ALSA picks the `null` plugin's huge maximum and a whole transmission is
//!   rendered at once, when the device closes.
//! - The mixer thread ([`Cable`]) reads each FIFO only as fast as real time plays it
//!   (the `null` slave does not pace), behind a playout delay (a transmission starts
//!   playing that long after its first audio arrived: the load of the machine or the
//!   modem's own buffering may hold part of it back), and every tick gives each modem the sum of
//!   the others' audio at a gain (silence to a modem while it transmits): as UDP
//!   datagrams (Dire Wolf's `ADEVICE udp:PORT`) or whole blocks into a capture FIFO
//!   (an ALSA `file` PCM's `infile`, ardopcf; nothing at all while that modem
//!   transmits, as it does not read its capture then).
//!
//! Everything runs in real time.

use std::fs::File;
use std::io::{Read, Write};
use std::net::UdpSocket;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Held by each test while its modems run (Dire Wolf's and ardopcf's alike): real-time
/// modems sharing two cores with another test's would time their transmissions late.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// What one cable is like.
#[derive(Debug, Clone, Copy)]
pub struct CableSpec {
    /// Samples a second.
    pub rate: usize,
    /// How often each modem is given audio.
    pub tick: Duration,
    /// Applied to every modem's audio as it is mixed.
    pub gain: f32,
    /// From a transmission's first audio to its playing.
    pub playout_delay: Duration,
    /// Most audio held per modem.
    pub jitter: Duration,
}

impl CableSpec {
    fn bytes(&self, d: Duration) -> usize {
        (self.rate as f64 * d.as_secs_f64()).round() as usize * 2
    }
}

/// Where a modem hears the cable.
#[derive(Debug, Clone)]
pub enum Hears {
    /// Datagrams of one tick's samples to 127.0.0.1:PORT.
    Udp(u16),
    /// A FIFO (created here) read by the modem's capture device, written in whole
    /// blocks of this many bytes (a modem that does not handle short reads).
    Fifo(PathBuf, usize),
}

/// Where the mixer sends one modem's audio.
enum Sink {
    Udp(u16),
    Fifo {
        file: File,
        block: usize,
        /// Audio short of a whole block.
        pending: Vec<u8>,
    },
}

/// Why the cable cannot be built here, if it cannot.
pub fn missing_tools() -> Option<String> {
    if !have("gcc") {
        return Some("gcc is not installed (needed for the ALSA buffer cap)".into());
    }
    if !Path::new("/usr/include/alsa/asoundlib.h").exists() {
        return Some(
            "the ALSA headers are missing (Debian: apt-get install -y libasound2-dev)".into(),
        );
    }
    None
}

/// Whether `cmd` is on the PATH.
pub fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Builds the `LD_PRELOAD` interposer that caps every ALSA playback buffer at about
/// `frames` frames; returns the library's path.
pub fn build_buffer_cap(root: &Path, frames: usize) -> PathBuf {
    let c = root.join("cap.c");
    std::fs::write(
        &c,
        format!(
            r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <alsa/asoundlib.h>

int snd_pcm_hw_params(snd_pcm_t *pcm, snd_pcm_hw_params_t *params) {{
    static int (*real)(snd_pcm_t *, snd_pcm_hw_params_t *);
    if (!real) real = (int (*)(snd_pcm_t *, snd_pcm_hw_params_t *))dlsym(RTLD_NEXT, "snd_pcm_hw_params");
    if (snd_pcm_stream(pcm) == SND_PCM_STREAM_PLAYBACK) {{
        snd_pcm_uframes_t frames = {frames};
        snd_pcm_hw_params_set_buffer_size_near(pcm, params, &frames);
    }}
    return real(pcm, params);
}}
"#
        ),
    )
    .unwrap();
    let cap = root.join("cap.so");
    let st = Command::new("gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&cap)
        .arg(&c)
        .args(["-ldl", "-lasound"])
        .status()
        .unwrap();
    assert!(st.success(), "building the ALSA buffer cap failed");
    cap
}

/// An ALSA configuration with, for each modem `i`, a playback PCM `skyout{i}` writing
/// into `outs[i]` and, where `ins[i]` is given, a capture PCM `skyin{i}` reading from it.
pub fn alsa_config(root: &Path, outs: &[PathBuf], ins: &[Option<PathBuf>]) -> PathBuf {
    let alsa = root.join("cable.conf");
    let mut conf = String::new();
    for (i, f) in outs.iter().enumerate() {
        conf += &format!(
            "pcm.skyout{i} {{ type file; slave.pcm \"null\"; file \"{}\"; format \"raw\" }}\n",
            f.display()
        );
    }
    for (i, f) in ins.iter().enumerate() {
        if let Some(f) = f {
            conf += &format!(
                "pcm.skyin{i} {{ type file; slave.pcm \"null\"; file \"/dev/null\"; infile \"{}\"; format \"raw\" }}\n",
                f.display()
            );
        }
    }
    std::fs::write(&alsa, conf).unwrap();
    alsa
}

/// `ALSA_CONFIG_PATH` for a modem on the cable.
pub fn alsa_path(alsa: &Path) -> String {
    format!("/usr/share/alsa/alsa.conf:{}", alsa.display())
}

fn fifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

/// Creates the capture FIFOs of `hears` (before the modems open them).
pub fn make_capture_fifos(hears: &[Hears]) {
    for h in hears {
        if let Hears::Fifo(p, _) = h {
            fifo(p);
        }
    }
}

/// The mixer: see the module docs. Stops when dropped.
pub struct Cable {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Ticks in which two or more modems transmitted at once.
    pub collisions: Arc<AtomicU64>,
    /// Ticks in which each modem transmitted.
    pub on_air: Arc<Vec<AtomicU64>>,
    /// Capture blocks that a modem's FIFO had no room for (it read too slowly).
    pub overruns: Arc<AtomicU64>,
}

impl Cable {
    /// Starts the mixer reading the modems' playback FIFOs `outs` (created here) and
    /// feeding each modem as `hears` says (capture FIFOs made by
    /// [`make_capture_fifos`] first).
    pub fn start(spec: CableSpec, outs: &[PathBuf], hears: Vec<Hears>) -> Cable {
        let mut inputs: Vec<File> = outs
            .iter()
            .map(|f| {
                fifo(f);
                // Non-blocking: opening does not wait for a writer, reading never blocks.
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
                    .open(f)
                    .unwrap();
                // A small pipe keeps the writer close to real time.
                let _ = nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETPIPE_SZ(16384));
                file
            })
            .collect();
        // Capture FIFOs are opened read-write: opening never waits for the modem, and a
        // modem that has not opened its end yet does not make writes fail.
        let mut sinks: Vec<Sink> = hears
            .iter()
            .map(|h| match h {
                Hears::Udp(p) => Sink::Udp(*p),
                Hears::Fifo(p, block) => {
                    let f = std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
                        .open(p)
                        .unwrap();
                    // Little backlog for a modem that starts late.
                    let _ = nix::fcntl::fcntl(&f, nix::fcntl::FcntlArg::F_SETPIPE_SZ(4096));
                    Sink::Fifo {
                        file: f,
                        block: *block,
                        pending: Vec::new(),
                    }
                }
            })
            .collect();
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let collisions = Arc::new(AtomicU64::new(0));
        let overruns = Arc::new(AtomicU64::new(0));
        let n = outs.len();
        let on_air: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
        let (s, c, o, ov) = (
            stop.clone(),
            collisions.clone(),
            on_air.clone(),
            overruns.clone(),
        );
        let tick_bytes = spec.bytes(spec.tick);
        let jitter_bytes = spec.bytes(spec.jitter).max(tick_bytes);
        let thread = std::thread::spawn(move || {
            let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); n];
            // Whether each modem's transmission is being played out.
            let mut playing = vec![false; n];
            // When a transmission's first audio arrived (not yet playing).
            let mut first: Vec<Option<Instant>> = vec![None; n];
            let mut next = Instant::now();
            let mut chunk = vec![0u8; jitter_bytes];
            while !s.load(Ordering::Relaxed) {
                // What each modem played this tick (a tick's worth: real time), once
                // its transmission is the playout delay old.
                let mut frames: Vec<Option<Vec<i16>>> = Vec::with_capacity(n);
                let now = Instant::now();
                for (i, input) in inputs.iter_mut().enumerate() {
                    while bufs[i].len() < jitter_bytes {
                        let want = jitter_bytes - bufs[i].len();
                        match input.read(&mut chunk[..want]) {
                            Ok(0) => break,
                            Ok(k) => bufs[i].extend_from_slice(&chunk[..k]),
                            Err(_) => break,
                        }
                    }
                    if !playing[i] && !bufs[i].is_empty() {
                        let since = *first[i].get_or_insert(now);
                        // By time, not by bytes held: a modem may write most of a
                        // frame at once and its end only as it closes the device.
                        playing[i] = now.duration_since(since) >= spec.playout_delay;
                        if playing[i] {
                            first[i] = None;
                        }
                    }
                    if !playing[i] || bufs[i].is_empty() {
                        playing[i] = playing[i] && !bufs[i].is_empty();
                        frames.push(None);
                        continue;
                    }
                    let take = bufs[i].len().min(tick_bytes) & !1;
                    let mut samples = vec![0i16; tick_bytes / 2];
                    for (k, pair) in bufs[i][..take].chunks_exact(2).enumerate() {
                        samples[k] = i16::from_le_bytes([pair[0], pair[1]]);
                    }
                    bufs[i].drain(..take);
                    o[i].fetch_add(1, Ordering::Relaxed);
                    frames.push(Some(samples));
                }
                if frames.iter().filter(|f| f.is_some()).count() > 1 {
                    c.fetch_add(1, Ordering::Relaxed);
                }
                for (j, sink) in sinks.iter_mut().enumerate() {
                    let mut mix = vec![0f32; tick_bytes / 2];
                    if frames.get(j).is_none_or(|f| f.is_none()) {
                        for (i, f) in frames.iter().enumerate() {
                            if let (true, Some(f)) = (i != j, f) {
                                for (m, &x) in mix.iter_mut().zip(f) {
                                    *m += f32::from(x) * spec.gain;
                                }
                            }
                        }
                    }
                    let out: Vec<u8> = mix
                        .iter()
                        .flat_map(|&m| (m.clamp(-32768.0, 32767.0) as i16).to_le_bytes())
                        .collect();
                    match sink {
                        // Nothing into the capture of a modem that transmits: it does
                        // not read it meanwhile, and a backlog would delay what it hears
                        // next (a blocked read waits for the cable instead).
                        Sink::Fifo { .. } if frames.get(j).is_some_and(|f| f.is_some()) => {}
                        Sink::Fifo {
                            file,
                            block,
                            pending,
                        } => {
                            // Whole blocks only: a write under the pipe's atomic size
                            // lands whole or not at all.
                            pending.extend_from_slice(&out);
                            while pending.len() >= *block {
                                if file.write(&pending[..*block]).is_err() {
                                    ov.fetch_add(1, Ordering::Relaxed);
                                }
                                pending.drain(..*block);
                            }
                        }
                        Sink::Udp(port) => {
                            let _ = sock.send_to(&out, ("127.0.0.1", *port));
                        }
                    }
                }
                next += spec.tick;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else if now - next > Duration::from_millis(200) {
                    // Far behind (a stalled machine): start again from now.
                    next = now;
                }
            }
            drop(inputs);
        });
        Cable {
            stop,
            thread: Some(thread),
            collisions,
            on_air,
            overruns,
        }
    }

    pub fn on_air(&self) -> Vec<u64> {
        self.on_air
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .collect()
    }
}

impl Drop for Cable {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A free TCP port on the loopback interface.
pub fn free_tcp_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A free UDP port on the loopback interface.
pub fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The last `n` lines of a log file.
pub fn tail(path: &Path, n: usize) -> String {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// min, median and max of `v`, if any.
pub fn min_median_max(v: &mut [f64]) -> Option<(f64, f64, f64)> {
    v.sort_by(f64::total_cmp);
    v.first().map(|lo| (*lo, v[v.len() / 2], v[v.len() - 1]))
}
