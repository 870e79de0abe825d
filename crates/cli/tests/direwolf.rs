//! Two real Dire Wolf modems on a virtual audio cable, each under a real `skywave daemon`
//! on its KISS TCP port (a `kiss` link): 20+20 bundles of 100 B sync over the air.
//!
//! The cable (facts in ../shared/modems/README.md): each Dire Wolf plays into an ALSA
//! `file` PCM whose slave is `null`, writing raw S16_LE 48 kHz mono samples into a FIFO;
//! an `LD_PRELOAD` interposer caps its playback buffer at 4096 frames (else a whole
//! transmission is rendered at once); a mixer thread here reads each FIFO only as fast as
//! real time plays it (behind a 100 ms jitter buffer) and every 10 ms sends each modem
//! (`ADEVICE udp:PORT`) the sum of the others' audio at a quarter of its level (silence
//! to a modem while it transmits).
//! Everything runs in real time.
//!
//! Needs `direwolf` (Debian: `apt-get install direwolf`), `gcc` and the ALSA headers
//! (`libasound2-dev`); without them each test prints why and passes. The 1200 baud pair
//! runs by default (about a minute); the 9600 baud pair and the repeated runs that give
//! min/median/max are `--ignored`:
//! `cargo test --release -p skywave --test direwolf -- --ignored --nocapture`
//! (`scripts/direwolf-pair.sh` runs them and keeps the logs).

mod support;

use std::fs::File;
use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use support::*;

/// Caps an ALSA playback buffer (see the module docs).
const CAP_C: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <alsa/asoundlib.h>

int snd_pcm_hw_params(snd_pcm_t *pcm, snd_pcm_hw_params_t *params) {
    static int (*real)(snd_pcm_t *, snd_pcm_hw_params_t *);
    if (!real) real = (int (*)(snd_pcm_t *, snd_pcm_hw_params_t *))dlsym(RTLD_NEXT, "snd_pcm_hw_params");
    if (snd_pcm_stream(pcm) == SND_PCM_STREAM_PLAYBACK) {
        snd_pcm_uframes_t frames = 4096;
        snd_pcm_hw_params_set_buffer_size_near(pcm, params, &frames);
    }
    return real(pcm, params);
}
"#;

const RATE: usize = 48_000;
const TICK: Duration = Duration::from_millis(10);
const TICK_BYTES: usize = RATE / 100 * 2;
/// Audio held per modem at most (300 ms), and before a transmission starts playing
/// (100 ms): the machine's load may hold a modem up for a moment.
const JITTER_BYTES: usize = TICK_BYTES * 30;
const PREROLL_BYTES: usize = TICK_BYTES * 10;
/// Dire Wolf's transmit level is about four times what its receiver likes.
const GAIN: f32 = 0.25;

/// Why the tests cannot run here, if they cannot.
fn missing() -> Option<String> {
    let have = |cmd: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {cmd}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !have("direwolf") {
        return Some("direwolf is not installed (Debian: apt-get install -y direwolf)".into());
    }
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

fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The mixer: see the module docs. Stops when dropped.
struct Cable {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Ticks in which two or more modems transmitted at once.
    collisions: Arc<AtomicU64>,
    /// Ticks in which each modem transmitted.
    on_air: Arc<Vec<AtomicU64>>,
}

impl Cable {
    fn start(fifos: &[PathBuf], ports: &[u16]) -> Cable {
        let mut inputs: Vec<File> = fifos
            .iter()
            .map(|f| {
                nix::unistd::mkfifo(f, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
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
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let ports = ports.to_vec();
        let stop = Arc::new(AtomicBool::new(false));
        let collisions = Arc::new(AtomicU64::new(0));
        let on_air: Arc<Vec<AtomicU64>> =
            Arc::new((0..ports.len()).map(|_| AtomicU64::new(0)).collect());
        let (s, c, o) = (stop.clone(), collisions.clone(), on_air.clone());
        let thread = std::thread::spawn(move || {
            let n = ports.len();
            let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); n];
            // Whether each modem's transmission is being played out.
            let mut playing = vec![false; n];
            let mut next = Instant::now();
            let mut chunk = vec![0u8; JITTER_BYTES];
            while !s.load(Ordering::Relaxed) {
                // What each modem played this tick (a tick's worth: real time). A
                // transmission starts playing once the jitter buffer holds its preroll
                // (or the modem wrote nothing more), so that a modem the machine's load
                // holds up for a moment does not cut its own frame short.
                let mut frames: Vec<Option<Vec<i16>>> = Vec::with_capacity(n);
                for (i, input) in inputs.iter_mut().enumerate() {
                    let mut arrived = false;
                    while bufs[i].len() < JITTER_BYTES {
                        let want = JITTER_BYTES - bufs[i].len();
                        match input.read(&mut chunk[..want]) {
                            Ok(0) => break,
                            Ok(k) => {
                                arrived = true;
                                bufs[i].extend_from_slice(&chunk[..k]);
                            }
                            Err(_) => break,
                        }
                    }
                    if !playing[i] && !bufs[i].is_empty() {
                        playing[i] = bufs[i].len() >= PREROLL_BYTES || !arrived;
                    }
                    if !playing[i] {
                        frames.push(None);
                        continue;
                    }
                    if bufs[i].is_empty() {
                        playing[i] = false;
                        frames.push(None);
                        continue;
                    }
                    let take = bufs[i].len().min(TICK_BYTES) & !1;
                    let mut samples = vec![0i16; TICK_BYTES / 2];
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
                for (j, &port) in ports.iter().enumerate() {
                    let mut mix = vec![0f32; TICK_BYTES / 2];
                    if frames[j].is_none() {
                        for (i, f) in frames.iter().enumerate() {
                            if let (true, Some(f)) = (i != j, f) {
                                for (m, &x) in mix.iter_mut().zip(f) {
                                    *m += f32::from(x) * GAIN;
                                }
                            }
                        }
                    }
                    let out: Vec<u8> = mix
                        .iter()
                        .flat_map(|&m| (m.clamp(-32768.0, 32767.0) as i16).to_le_bytes())
                        .collect();
                    let _ = sock.send_to(&out, ("127.0.0.1", port));
                }
                next += TICK;
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
        }
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

/// A Dire Wolf process, killed when dropped.
struct Direwolf {
    child: Child,
    log: PathBuf,
}

impl Direwolf {
    #[allow(clippy::too_many_arguments)]
    fn start(
        root: &Path,
        i: usize,
        cap: &Path,
        alsa: &Path,
        modem: u32,
        udp: u16,
        kiss: u16,
    ) -> Direwolf {
        let conf = root.join(format!("direwolf{i}.conf"));
        std::fs::write(
            &conf,
            format!(
                "ADEVICE udp:{udp} skyout{i}\nARATE 48000\nACHANNELS 1\nCHANNEL 0\nMYCALL N0CALL-{}\nMODEM {modem}\nTXDELAY 30\nTXTAIL 10\nPERSIST 63\nSLOTTIME 10\nKISSPORT {kiss}\nAGWPORT 0\n",
                i + 1
            ),
        )
        .unwrap();
        let log = root.join(format!("direwolf{i}.log"));
        let out = File::create(&log).unwrap();
        let child = Command::new("direwolf")
            .args(["-t", "0", "-q", "d", "-c"])
            .arg(&conf)
            .env(
                "ALSA_CONFIG_PATH",
                format!("/usr/share/alsa/alsa.conf:{}", alsa.display()),
            )
            .env("LD_PRELOAD", cap)
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("direwolf starts");
        let d = Direwolf { child, log };
        wait_for(&format!("Dire Wolf {i}'s KISS port {kiss}"), SHORT, || {
            std::net::TcpStream::connect(("127.0.0.1", kiss)).ok()
        });
        d
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Lines of its log that say it dropped or refused something.
    fn drops(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| {
                let l = l.to_ascii_lowercase();
                l.contains("discard") || l.contains("invalid kiss") || l.contains("too long")
            })
            .map(String::from)
            .collect()
    }
}

impl Drop for Direwolf {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            eprintln!(
                "---- {} (tail) ----\n{}",
                self.log.display(),
                lines[lines.len().saturating_sub(30)..].join("\n")
            );
        }
    }
}

/// What one exchange measured.
#[derive(Debug)]
struct Outcome {
    took: Duration,
    /// Payload and manifest bytes of the bundles each side received, together.
    useful: u64,
    /// Bytes the daemons handed their TNCs (skywave frames).
    sent: u64,
    /// Lines of the Dire Wolf logs reporting drops.
    tnc_drops: Vec<String>,
    /// The rates the links ended up with (measured from TXBUF), bit/s.
    rates: Vec<Option<u64>>,
    collisions: u64,
}

/// Two Dire Wolf modems at `modem` baud with a daemon each; `each` bundles of `size`
/// bytes inserted at each; `None` if they are not all through within `limit`.
fn exchange(modem: u32, each: usize, size: usize, limit: Duration) -> (Option<Outcome>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let c = root.join("cap.c");
    std::fs::write(&c, CAP_C).unwrap();
    let cap = root.join("cap.so");
    let st = Command::new("gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&cap)
        .arg(&c)
        .args(["-ldl", "-lasound"])
        .status()
        .unwrap();
    assert!(st.success(), "building the ALSA buffer cap failed");
    let fifos: Vec<PathBuf> = (0..2).map(|i| root.join(format!("out{i}.fifo"))).collect();
    let alsa = root.join("cable.conf");
    let mut conf = String::new();
    for (i, f) in fifos.iter().enumerate() {
        conf += &format!(
            "pcm.skyout{i} {{ type file; slave.pcm \"null\"; file \"{}\"; format \"raw\" }}\n",
            f.display()
        );
    }
    std::fs::write(&alsa, conf).unwrap();
    let udp: Vec<u16> = (0..2).map(|_| free_udp_port()).collect();
    let kiss: Vec<u16> = (0..2).map(|_| free_tcp_port()).collect();
    let cable = Cable::start(&fifos, &udp);
    let mut tncs = Vec::new();
    for i in 0..2 {
        tncs.push(Direwolf::start(
            root, i, &cap, &alsa, modem, udp[i], kiss[i],
        ));
        // Dire Wolf seeds its CSMA random numbers from the time in seconds.
        std::thread::sleep(Duration::from_millis(1100));
    }
    let daemons: Vec<Daemon> = (0..2)
        .map(|i| {
            let conf = root.join(format!("d{i}.toml"));
            std::fs::write(
                &conf,
                format!(
                    "[[link]]\ntype = \"kiss\"\ntnc = \"tcp://127.0.0.1:{}\"\ncallsign = \"N0CALL-{}\"\namateur = true\nair_rate = {modem}\n",
                    kiss[i],
                    i + 1
                ),
            )
            .unwrap();
            Daemon::start(root, &format!("d{i}"), &["--config", &conf.display().to_string()])
        })
        .collect();
    wait_links_up(&daemons, SHORT);
    let start = Instant::now();
    insert_each(&daemons, each, size);
    let all = 2 * each as u64;
    let mut done = false;
    // Every 5 s: bundles held, frames handed to the TNC and the room, per daemon.
    let mut timeline = Vec::new();
    let mut next_sample = Duration::ZERO;
    while start.elapsed() < limit {
        for d in &daemons {
            d.check_alive();
        }
        let st: Vec<_> = daemons.iter().map(|d| d.status()).collect();
        if start.elapsed() >= next_sample {
            next_sample += Duration::from_secs(5);
            timeline.push(format!(
                "{:5.1} s: {}",
                start.elapsed().as_secs_f64(),
                st.iter()
                    .map(|s| format!(
                        "{} bundles, {} frames out, room {:?}",
                        s.store.bundles, s.links[0].frames_out, s.links[0].room
                    ))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ));
        }
        if st.iter().all(|s| s.store.bundles == all) {
            done = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = start.elapsed();
    let st: Vec<_> = daemons.iter().map(|d| d.status()).collect();
    let outcome = Outcome {
        took,
        useful: st.iter().map(|s| s.protocol.useful_bytes_received).sum(),
        sent: st.iter().map(|s| s.links[0].bytes_out).sum(),
        tnc_drops: tncs.iter().flat_map(|t| t.drops()).collect(),
        rates: st.iter().map(|s| s.links[0].rate_bps).collect(),
        collisions: cable.collisions.load(Ordering::Relaxed),
    };
    let report = format!(
        "{modem} baud: {each}+{each} bundles of {size} B {} in {:.1} s; useful {} B, {} B handed to the TNCs in {} frames (recon {} B, pieces {} B, resent {} B); link rates {:?} bit/s; on air (10 ms ticks) {:?}, overlapping {}; stored {:?}; Dire Wolf drops {:?}",
        if done { "complete" } else { "NOT complete" },
        took.as_secs_f64(),
        outcome.useful,
        outcome.sent,
        st.iter().map(|s| s.protocol.frames_sent).sum::<u64>(),
        st.iter().map(|s| s.protocol.recon_bytes_sent).sum::<u64>(),
        st.iter().map(|s| s.protocol.piece_bytes_sent).sum::<u64>(),
        st.iter()
            .map(|s| s.protocol.piece_bytes_resent)
            .sum::<u64>(),
        outcome.rates,
        cable
            .on_air
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .collect::<Vec<_>>(),
        outcome.collisions,
        st.iter().map(|s| s.store.bundles).collect::<Vec<_>>(),
        outcome.tnc_drops,
    );
    eprintln!("{report}");
    if !done || std::env::var_os("SKYWAVE_DIREWOLF_TIMELINE").is_some() {
        eprintln!("{}", timeline.join("\n"));
    }
    if !done {
        for d in &daemons {
            eprintln!("---- {} ----\n{}", d.name, d.log_tail());
        }
        for t in &tncs {
            let log = t.log();
            let lines: Vec<&str> = log.lines().collect();
            eprintln!(
                "---- {} ----\n{}",
                t.log.display(),
                lines[lines.len().saturating_sub(30)..].join("\n")
            );
        }
    }
    if let Ok(keep) = std::env::var("SKYWAVE_DIREWOLF_KEEP") {
        let dest = Path::new(&keep).join(format!("{modem}-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dest);
        for f in ["direwolf0.log", "direwolf1.log", "d0.log", "d1.log"] {
            let _ = std::fs::copy(root.join(f), dest.join(f));
        }
    }
    drop(daemons);
    drop(tncs);
    drop(cable);
    (done.then_some(outcome), report)
}

/// The least time the channel allows: the useful bytes at `rate` payload bytes a second
/// (both directions share the channel), plus one round trip (`rtt`).
fn floor(useful: u64, rate: f64, rtt: f64) -> f64 {
    useful as f64 / rate + rtt
}

fn check(modem: u32, rate: f64, rtt: f64, limit: Duration) -> Option<f64> {
    if let Some(why) = missing() {
        eprintln!("skipped: {why}");
        return None;
    }
    let (o, report) = exchange(modem, 20, 100, limit);
    let o = o.unwrap_or_else(|| panic!("20+20 bundles did not sync within {limit:?}: {report}"));
    assert!(
        o.tnc_drops.is_empty(),
        "Dire Wolf dropped frames: {:?}",
        o.tnc_drops
    );
    let f = floor(o.useful, rate, rtt);
    let ratio = o.took.as_secs_f64() / f;
    eprintln!(
        "{modem} baud: {:.1} s for {} useful bytes; floor {f:.1} s at {rate} B/s: {ratio:.2} x the floor",
        o.took.as_secs_f64(),
        o.useful
    );
    Some(ratio)
}

/// 1200 baud AFSK: the issue's target is 2x the air floor at the measured 134 B/s.
#[test]
fn two_direwolf_modems_sync_20_and_20_bundles_at_1200_baud() {
    // KISS-to-KISS latency 1.06 s median: a round trip of about 2 s.
    if let Some(ratio) = check(1200, 134.0, 2.1, Duration::from_secs(240)) {
        assert!(ratio < 4.0, "{ratio:.2} x the floor");
    }
}

/// 9600 baud G3RUH at the measured ~1,050 B/s.
#[test]
#[ignore = "real time, about a minute more; run with --ignored"]
fn two_direwolf_modems_sync_20_and_20_bundles_at_9600_baud() {
    if let Some(ratio) = check(9600, 1050.0, 1.1, Duration::from_secs(120)) {
        assert!(ratio < 4.0, "{ratio:.2} x the floor");
    }
}

/// Three runs at each rate, for min/median/max (`--ignored --nocapture`).
#[test]
#[ignore = "real time, several minutes"]
fn direwolf_figures_over_three_runs() {
    if let Some(why) = missing() {
        eprintln!("skipped: {why}");
        return;
    }
    for (modem, rate, rtt) in [(1200u32, 134.0, 2.1), (9600, 1050.0, 1.1)] {
        let mut ratios = Vec::new();
        let mut times = Vec::new();
        for _ in 0..3 {
            let (o, report) = exchange(modem, 20, 100, Duration::from_secs(300));
            match o {
                Some(o) => {
                    times.push(o.took.as_secs_f64());
                    ratios.push(o.took.as_secs_f64() / floor(o.useful, rate, rtt));
                }
                None => eprintln!("run failed: {report}"),
            }
        }
        let mmm = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.first().map(|lo| (*lo, v[v.len() / 2], v[v.len() - 1]))
        };
        eprintln!(
            "FIGURES {modem} baud: time s (min, median, max) {:?}; x floor {:?}",
            mmm(&mut times),
            mmm(&mut ratios)
        );
    }
}
