//! `skywave emulate` as a real process, measured with a test sender on loopback.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn spawn(
    args: &[&str],
) -> (
    Child,
    BufReader<std::process::ChildStdout>,
    serde_json::Value,
) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_skywave"))
        .args(["--json", "emulate"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let ready: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("no ready line ({e}): {line:?}"));
    (child, out, ready["ready"].clone())
}

/// Stops the emulator as Ctrl-C would and returns its JSON summary.
fn interrupt(mut child: Child, mut out: BufReader<std::process::ChildStdout>) -> serde_json::Value {
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "emulator failed: {err}");
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let v: serde_json::Value = serde_json::from_str(rest.trim()).unwrap();
    v["summary"].clone()
}

/// `recv`, retried when a signal (a sibling test's child exiting) interrupts it.
fn recv(s: &UdpSocket, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match s.recv(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

#[test]
fn udp_process_rate_delay_and_mtu() {
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let fwd = b.local_addr().unwrap().to_string();
    let (child, out, ready) = spawn(&[
        "--link",
        "rate=2Mbps,delay=50ms",
        "--listen",
        "127.0.0.1:0",
        "--forward",
        &fwd,
        "--seed",
        "3",
        "--stats-interval",
        "0",
    ]);
    assert_eq!(ready["mode"], "udp");
    let emu: SocketAddr = ready["listen"].as_str().unwrap().parse().unwrap();
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut buf = vec![0u8; 65536];

    // Delay: small probes on an idle link; 100 B take 0.4 ms on the air, then 50 ms.
    b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut d = Vec::new();
    for i in 0..15u8 {
        let t0 = Instant::now();
        a.send_to(&[i; 100], emu).unwrap();
        assert_eq!(recv(&b, &mut buf).unwrap(), 100);
        d.push(t0.elapsed().as_secs_f64());
        std::thread::sleep(Duration::from_millis(20));
    }
    d.sort_by(f64::total_cmp);
    let want = 0.050 + 100.0 * 8.0 / 2e6;
    let err = (d[7] - want) / want;
    eprintln!(
        "process delay: median {:.3} ms ({:+.2}%)",
        d[7] * 1e3,
        err * 100.0
    );
    assert!(d[7] >= want - 1e-4 && err <= 0.05, "delay {} s", d[7]);

    // Oversize: refused and counted, never truncated.
    a.send_to(&[0; 1501], emu).unwrap();

    // Rate: 750 KB offered at 3 Mbit/s keeps the 2 Mbit/s link saturated.
    let sender = std::thread::spawn(move || {
        let per = Duration::from_secs_f64(1250.0 * 8.0 / 3e6);
        let start = Instant::now();
        for i in 0..600u32 {
            if let Some(w) = (start + per * i).checked_duration_since(Instant::now()) {
                std::thread::sleep(w);
            }
            a.send_to(&[0xa5; 1250], emu).unwrap();
        }
    });
    b.set_read_timeout(Some(Duration::from_millis(600)))
        .unwrap();
    let (mut first, mut last, mut bytes, mut first_len) = (None, None, 0u64, 0u64);
    while let Ok(n) = recv(&b, &mut buf) {
        let now = Instant::now();
        assert_eq!(n, 1250, "only the saturating sender's datagrams may arrive");
        if first.is_none() {
            first = Some(now);
            first_len = n as u64;
        }
        last = Some(now);
        bytes += n as u64;
    }
    sender.join().unwrap();
    let rate = (bytes - first_len) as f64 * 8.0 / (last.unwrap() - first.unwrap()).as_secs_f64();
    let err = (rate - 2e6) / 2e6;
    eprintln!("process rate: {rate:.0} bit/s ({:+.3}%)", err * 100.0);
    assert!(err.abs() <= 0.05, "rate {rate} bit/s");

    let s = interrupt(child, out);
    let ab = &s["a_to_b"];
    assert_eq!(ab["refused_mtu"], 1);
    assert!(ab["dropped_queue"].as_u64().unwrap() > 0);
    assert_eq!(ab["read_frames"], 15 + 1 + 600);
    assert_eq!(ab["written_bytes"].as_u64().unwrap(), 1500 + bytes);
    assert_eq!(s["seed"], 3);
}

#[test]
fn emulate_bad_input_names_the_problem() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_skywave"))
            .arg("emulate")
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} should fail");
        String::from_utf8(out.stderr).unwrap()
    };
    let l = ["--listen", "127.0.0.1:0", "--forward", "127.0.0.1:9"];
    let e = run(&[&["--profile", "moon"][..], &l].concat());
    assert!(
        e.contains("unknown link profile 'moon'") && e.contains("hf-modem"),
        "{e}"
    );
    let e = run(&[&["--profile", "hf-modem"][..], &l].concat());
    assert!(e.contains("--stream tcp"), "{e}");
    let e = run(&["--profile", "lfn", "--listen", "127.0.0.1:0"]);
    assert!(e.contains("--forward ADDR is required"), "{e}");
    let e = run(&["--link", "rate=fast", "--listen", "127.0.0.1:0"]);
    assert!(e.contains("'rate'"), "{e}");
    let e = run(&["--profile", "lfn", "--stream", "pty"]);
    assert!(e.contains("needs a stream link"), "{e}");
    // A profile file (--links) with a bad field: the error names it and what it accepts.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("links.toml");
    std::fs::write(&file, "[links.mine]\nrate = \"fast\"\n").unwrap();
    let f = file.to_str().unwrap();
    let e = run(&[&["--links", f, "--profile", "mine"][..], &l].concat());
    assert!(
        e.contains("'links.mine.rate'") && e.contains("'fast'") && e.contains("kbps"),
        "{e}"
    );
    std::fs::write(&file, "[links.mine]\nrate = \"1Mbps\"\nspeed = 3\n").unwrap();
    let e = run(&[&["--links", f, "--profile", "mine"][..], &l].concat());
    assert!(
        e.contains("'links.mine.speed'") && e.contains("accepted fields"),
        "{e}"
    );
}
