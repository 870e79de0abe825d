//! Real `skywave` processes for end-to-end tests: daemons on temporary directories with
//! ports the kernel picks (read back from `DIR/daemon.json`), and the link emulator.
//!
//! Every wait polls with a generous deadline; nothing asserts on wall-clock speed. Each
//! child is killed when its handle drops, and a failing test prints the tail of every
//! daemon's log.

pub mod cable;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use skywave_daemon::client::Client;
use skywave_daemon::status::Status;
use skywave_daemon::{RUNTIME_FILE, RuntimeInfo};

pub const BIN: &str = env!("CARGO_BIN_EXE_skywave");

/// Deadline for things that take well under a second on an idle machine.
pub const SHORT: Duration = Duration::from_secs(20);
/// Deadline for transfers over slow or emulated links.
pub const LONG: Duration = Duration::from_secs(60);

/// Polls `f` every 50 ms until it returns `Some`, or panics naming `what` after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `n` incompressible bytes, the same for the same seed (xorshift64*).
pub fn payload(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(n);
    out
}

/// `n` fake KISS TNCs on channels of `rate` bytes per second
/// (`skywave_links::kiss::fake`), served by the returned runtime: they stop when it is
/// dropped.
pub fn fake_tncs(
    n: usize,
    rate: f64,
) -> (tokio::runtime::Runtime, skywave_links::kiss::fake::FakeTncs) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let tncs = rt
        .block_on(skywave_links::kiss::fake::FakeTncs::start(n, rate))
        .unwrap();
    (rt, tncs)
}

/// Daemons `d0`, `d1`, ... under `root`, each on its configuration text (written to
/// `root/d{i}.toml`).
pub fn start_configured(root: &Path, confs: &[String]) -> Vec<Daemon> {
    confs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let conf = root.join(format!("d{i}.toml"));
            std::fs::write(&conf, c).unwrap();
            Daemon::start(
                root,
                &format!("d{i}"),
                &["--config", &conf.display().to_string()],
            )
        })
        .collect()
}

/// Waits until every daemon's first link is up.
pub fn wait_links_up(daemons: &[Daemon], timeout: Duration) {
    wait_for("every daemon's link up", timeout, || {
        daemons
            .iter()
            .all(|d| d.status().links.first().is_some_and(|l| l.up))
            .then_some(())
    });
}

/// Inserts `each` bundles of `size` bytes at every daemon (named `n{k}-{i}`, distinct
/// payloads), interleaved.
pub fn insert_each(daemons: &[Daemon], each: usize, size: usize) {
    for i in 0..each {
        for (k, d) in daemons.iter().enumerate() {
            d.add(
                &payload(size, (k * 1000 + i) as u64 + 1),
                &format!("n{k}-{i}"),
            );
        }
    }
}

/// A `skywave daemon` child process on its own node directory.
pub struct Daemon {
    pub name: String,
    pub dir: PathBuf,
    args: Vec<String>,
    /// A command the daemon runs under (`unshare ... sh -c '... exec "$0" "$@"'`).
    wrap: Vec<String>,
    child: Option<Child>,
    pub info: RuntimeInfo,
    pub client: Client,
    log: PathBuf,
}

impl Daemon {
    /// Starts `skywave --dir DIR daemon --http 127.0.0.1:0 ARGS...` (DIR is `root/name`)
    /// and waits until it has written its runtime file.
    pub fn start(root: &Path, name: &str, args: &[&str]) -> Daemon {
        Daemon::start_wrapped(root, name, &[], args)
    }

    /// [`Daemon::start`] under the command `wrap` (which must end by running the
    /// program and arguments it is given, in the same process: its pid is waited for).
    pub fn start_wrapped(root: &Path, name: &str, wrap: &[&str], args: &[&str]) -> Daemon {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let log = root.join(format!("{name}.log"));
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let wrap: Vec<String> = wrap.iter().map(|s| s.to_string()).collect();
        let (child, info) = launch(&wrap, &dir, &log, &args);
        let client = Client::for_node(&dir, &info);
        Daemon {
            name: name.into(),
            dir,
            args,
            wrap,
            child: Some(child),
            info,
            client,
            log,
        }
    }

    /// The first UDP socket's bound address.
    pub fn udp(&self) -> SocketAddr {
        self.info.udp[0]
    }

    /// The first TCP listener's bound address.
    pub fn tcp(&self) -> SocketAddr {
        self.info.tcp[0]
    }

    pub fn pid(&self) -> u32 {
        self.info.pid
    }

    /// SIGKILL, no chance to clean up (the runtime file stays behind).
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// Starts the daemon again on the same directory, with `args` instead of the
    /// original arguments when given.
    pub fn restart(&mut self, args: Option<&[&str]>) {
        self.kill9();
        if let Some(a) = args {
            self.args = a.iter().map(|s| s.to_string()).collect();
        }
        let (child, info) = launch(&self.wrap, &self.dir, &self.log, &self.args);
        self.client = Client::for_node(&self.dir, &info);
        self.info = info;
        self.child = Some(child);
    }

    pub fn status(&self) -> Status {
        self.client
            .status()
            .unwrap_or_else(|e| panic!("{}: /v1/status: {e:#}", self.name))
    }

    /// Inserts `data` over HTTP (`POST /v1/bundles`, raw body); the new bundle's id.
    pub fn add(&self, data: &[u8], name: &str) -> String {
        let v = self
            .client
            .post_reader(
                &format!("/v1/bundles?service=e2e&name={name}"),
                &mut &data[..],
            )
            .unwrap_or_else(|e| panic!("{}: POST /v1/bundles: {e:#}", self.name));
        assert_eq!(v["length"].as_u64(), Some(data.len() as u64), "{v}");
        v["id"].as_str().expect("an id").to_string()
    }

    /// The payload of bundle `id` (`GET /v1/bundles/{id}/payload`), if held.
    pub fn payload(&self, id: &str) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.client.payload(id, &mut out).ok().map(|_| out)
    }

    /// Whether bundle `id` is held (`GET /v1/bundles/{id}`).
    pub fn has(&self, id: &str) -> bool {
        self.client
            .get_json::<serde_json::Value>(&format!("/v1/bundles/{id}"))
            .is_ok()
    }

    /// Waits until bundle `id` is held and returns its payload.
    pub fn wait_bundle(&self, id: &str, timeout: Duration) -> Vec<u8> {
        wait_for(
            &format!("bundle {} at {}", &id[..12], self.name),
            timeout,
            || {
                self.check_alive();
                if self.has(id) { self.payload(id) } else { None }
            },
        )
    }

    /// Waits until this daemon has a peer in state `synced`.
    pub fn wait_synced(&self, peers: usize, timeout: Duration) {
        wait_for(
            &format!("{peers} synced peer(s) at {}", self.name),
            timeout,
            || {
                self.check_alive();
                let s = self.status();
                (s.peers.iter().filter(|p| p.state == "synced").count() >= peers).then_some(())
            },
        );
    }

    /// Panics (with the log) if the process has exited.
    pub fn check_alive(&self) {
        if let Some(c) = &self.child {
            let alive = nix_alive(c.id());
            assert!(alive, "daemon {} exited:\n{}", self.name, tail(&self.log));
        }
    }

    pub fn log_tail(&self) -> String {
        tail(&self.log)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            eprintln!("---- {} log (tail) ----\n{}", self.name, tail(&self.log));
        }
    }
}

/// Whether a child process is still running (not a zombie we have not reaped: the
/// runtime file's pid is only checked while we hold the `Child`).
fn nix_alive(pid: u32) -> bool {
    // /proc/PID/stat's third field is the state; Z is a zombie.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|st| st != "Z" && st != "X"),
        Err(_) => false,
    }
}

fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    // SKYWAVE_TEST_LOG (a log level for the daemons) is for chasing a failure: show more.
    let keep = if std::env::var_os("SKYWAVE_TEST_LOG").is_some() {
        600
    } else {
        40
    };
    lines[lines.len().saturating_sub(keep)..].join("\n")
}

fn launch(wrap: &[String], dir: &Path, log: &Path, args: &[String]) -> (Child, RuntimeInfo) {
    let logf = File::options().create(true).append(true).open(log).unwrap();
    let mut cmd = match wrap.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(BIN);
            c
        }
        None => Command::new(BIN),
    };
    let mut child = cmd
        .arg("--dir")
        .arg(dir)
        .arg("--log")
        .arg(std::env::var("SKYWAVE_TEST_LOG").unwrap_or_else(|_| "info".into()))
        .args(["daemon", "--http", "127.0.0.1:0"])
        .args(args)
        .env_remove("SKYWAVE_HOME")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(logf)
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = Instant::now();
    // A stale runtime file (after kill -9) names another pid: wait for ours.
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            panic!(
                "skywave daemon {args:?} exited with {st} before it was ready:\n{}",
                tail(log)
            );
        }
        if let Ok(text) = std::fs::read_to_string(dir.join(RUNTIME_FILE))
            && let Ok(info) = serde_json::from_str::<RuntimeInfo>(&text)
            && info.pid == pid
        {
            return (child, info);
        }
        if start.elapsed() > SHORT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "skywave daemon {args:?} wrote no {RUNTIME_FILE} within {SHORT:?}:\n{}",
                tail(log)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `skywave emulate` between two UDP programs: side A sends to `listen`, side B is at
/// `forward`.
pub struct Emulator {
    child: Child,
    pub listen: SocketAddr,
    log: PathBuf,
}

impl Emulator {
    pub fn udp(root: &Path, spec: &str, forward: SocketAddr) -> Emulator {
        let log = root.join("emulate.log");
        let mut child = Command::new(BIN)
            .args(["--json", "--log", "info", "emulate", "--link", spec])
            .args(["--listen", "127.0.0.1:0", "--forward"])
            .arg(forward.to_string())
            .args(["--stats-interval", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("emulator start-up line '{line}': {e}\n{}", tail(&log)));
        let listen = v["ready"]["listen"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no listen address in '{line}'"));
        Emulator { child, listen, log }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("---- emulator log (tail) ----\n{}", tail(&self.log));
        }
    }
}

/// Runs `skywave --dir DIR ARGS...` to completion, whatever its outcome.
pub fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("--dir")
        .arg(dir)
        .args(args)
        .env_remove("SKYWAVE_HOME")
        .output()
        .unwrap()
}

/// Runs `skywave --dir DIR ARGS...` to completion; its standard output, or a panic with
/// its standard error.
pub fn cli(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args);
    assert!(
        out.status.success(),
        "skywave {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A long-running `skywave` child whose standard output is read line by line on a thread.
pub struct Follower {
    child: Child,
    pub lines: std::sync::mpsc::Receiver<String>,
}

impl Follower {
    pub fn start(dir: &Path, args: &[&str]) -> Follower {
        let mut child = Command::new(BIN)
            .arg("--dir")
            .arg(dir)
            .args(args)
            .env_remove("SKYWAVE_HOME")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out: ChildStdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Follower { child, lines: rx }
    }

    /// The next line that satisfies `f`, within `timeout`.
    pub fn expect(&self, what: &str, timeout: Duration, mut f: impl FnMut(&str) -> bool) -> String {
        let end = Instant::now() + timeout;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if f(&l) => return l,
                Ok(_) => {}
                Err(e) => panic!("no line with {what} within {timeout:?}: {e}"),
            }
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads a whole file (for `skywave get -o`).
pub fn read(path: &Path) -> Vec<u8> {
    let mut v = Vec::new();
    File::open(path).unwrap().read_to_end(&mut v).unwrap();
    v
}

/// No C0 or C1 control (but the line ends), DEL, or bidi control in `text`.
pub fn assert_clean(text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n')
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)
        })
        .collect();
    assert!(bad.is_empty(), "{bad:?} in {text:?}");
}

/// What [`until_all_hold`] saw.
pub struct Held {
    /// Every daemon held all the bundles.
    pub done: bool,
    /// From `start` to done (or to giving up).
    pub took: Duration,
    /// One line per `every`: what `line` said of each daemon's status.
    pub timeline: Vec<String>,
    /// The last status of each daemon.
    pub last: Vec<Status>,
}

/// Polls `daemons` until each holds `all` bundles or `limit` has passed since `start`;
/// `look` sees every round of statuses, and every `every` a timeline line is made of
/// `line` for each daemon.
pub fn until_all_hold(
    daemons: &[Daemon],
    all: u64,
    start: Instant,
    limit: Duration,
    every: Duration,
    line: impl Fn(&Status) -> String,
    mut look: impl FnMut(&[Status]),
) -> Held {
    let mut timeline = Vec::new();
    let mut next_sample = Duration::ZERO;
    let mut done = false;
    while start.elapsed() < limit {
        for d in daemons {
            d.check_alive();
        }
        let st: Vec<Status> = daemons.iter().map(|d| d.status()).collect();
        look(&st);
        if start.elapsed() >= next_sample {
            next_sample += every;
            timeline.push(format!(
                "{:5.1} s: {}",
                start.elapsed().as_secs_f64(),
                st.iter().map(&line).collect::<Vec<_>>().join(" | ")
            ));
        }
        if st.iter().all(|s| s.store.bundles == all) {
            done = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = start.elapsed();
    let last: Vec<Status> = daemons.iter().map(|d| d.status()).collect();
    look(&last);
    Held {
        done,
        took,
        timeline,
        last,
    }
}
