//! The daemon's HTTP API and its handling of bad input, against real `skywave daemon`
//! processes on loopback. docs/api.md describes what is checked here.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

// ---- helpers --------------------------------------------------------------------------

/// A daemon process on a node directory; killed when dropped.
struct Daemon {
    child: Child,
    dir: PathBuf,
    log: PathBuf,
    http: String,
    udp: Vec<SocketAddr>,
    tcp: Vec<SocketAddr>,
    node: String,
    token: String,
    agent: ureq::Agent,
}

struct Resp {
    status: u16,
    headers: ureq::http::HeaderMap,
    body: Vec<u8>,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "HTTP {} body is not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The JSON error of a failed call: `{"error": message, "status": code}`.
    fn error(&self, status: u16) -> String {
        assert_eq!(
            self.status,
            status,
            "expected HTTP {status}, got {}: {}",
            self.status,
            String::from_utf8_lossy(&self.body)
        );
        assert!(
            self.header("content-type")
                .is_some_and(|c| c.starts_with("application/json")),
            "error without a JSON content type: {:?}",
            self.headers
        );
        let v = self.json();
        assert_eq!(v["status"], status, "{v}");
        let msg = v["error"].as_str().expect("an error message").to_string();
        assert!(
            msg.len() > 10,
            "an error message that says something: {msg}"
        );
        msg
    }
}

fn agent() -> ureq::Agent {
    let cfg = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build();
    ureq::Agent::new_with_config(cfg)
}

fn finish(r: Result<ureq::http::Response<ureq::Body>, ureq::Error>, what: &str) -> Resp {
    let mut r = r.unwrap_or_else(|e| panic!("{what}: {e}"));
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let body = r
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_vec()
        .unwrap_or_else(|e| panic!("{what}: reading the body: {e}"));
    Resp {
        status,
        headers,
        body,
    }
}

impl Daemon {
    fn start(dir: &Path, args: &[&str]) -> Daemon {
        std::fs::create_dir_all(dir).unwrap();
        // A killed daemon leaves its runtime file behind.
        let _ = std::fs::remove_file(dir.join("daemon.json"));
        let log = dir.with_extension("log");
        let child = Command::new(env!("CARGO_BIN_EXE_skywave"))
            .arg("--dir")
            .arg(dir)
            .args(["daemon", "--http", "127.0.0.1:0"])
            .args(args)
            .env_remove("SKYWAVE_HOME")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(dir.with_extension("err")).unwrap())
            .spawn()
            .unwrap();
        let mut d = Daemon {
            child,
            dir: dir.to_path_buf(),
            log,
            http: String::new(),
            udp: Vec::new(),
            tcp: Vec::new(),
            node: String::new(),
            token: String::new(),
            agent: agent(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(st) = d.child.try_wait().unwrap() {
                panic!("the daemon exited ({st}) at start:\n{}", d.logs());
            }
            let info = std::fs::read_to_string(dir.join("daemon.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok());
            if let Some(info) = info {
                let addrs = |k: &str| -> Vec<SocketAddr> {
                    info[k]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| a.as_str().unwrap().parse().unwrap())
                        .collect()
                };
                d.http = format!("http://{}", info["http"].as_str().unwrap());
                d.udp = addrs("udp");
                d.tcp = addrs("tcp");
                d.node = info["node"].as_str().unwrap().to_string();
                d.token = std::fs::read_to_string(dir.join("http-token"))
                    .unwrap()
                    .trim()
                    .to_string();
                return d;
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not start:\n{}",
                d.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn logs(&self) -> String {
        let out = std::fs::read_to_string(&self.log).unwrap_or_default();
        let err = std::fs::read_to_string(self.dir.with_extension("err")).unwrap_or_default();
        format!("{out}{err}")
    }

    /// Panics (with the daemon's log) if the process has exited.
    fn assert_alive(&mut self) {
        if let Some(st) = self.child.try_wait().unwrap() {
            panic!("the daemon exited ({st}):\n{}", self.logs());
        }
    }

    fn get(&self, path: &str) -> Resp {
        self.get_with(path, &[])
    }

    /// GET with `headers` and the token (unless `headers` has an `Authorization`).
    fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Resp {
        self.get_as(path, &self.with_token(headers))
    }

    /// GET with exactly `headers`.
    fn get_as<V: AsRef<str>>(&self, path: &str, headers: &[(&str, V)]) -> Resp {
        let mut req = self.agent.get(format!("{}{path}", self.http));
        for (k, v) in headers {
            req = req.header(*k, v.as_ref());
        }
        finish(req.call(), &format!("GET {path}"))
    }

    /// `headers` and the daemon's token, unless they carry one already.
    fn with_token<'a>(&self, headers: &[(&'a str, &str)]) -> Vec<(&'a str, String)> {
        let mut h: Vec<(&str, String)> = headers.iter().map(|(k, v)| (*k, v.to_string())).collect();
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            h.push(("Authorization", format!("Bearer {}", self.token)));
        }
        h
    }

    /// HEAD (or DELETE) with the token.
    fn head(&self, path: &str) -> Resp {
        let url = format!("{}{path}", self.http);
        let bearer = format!("Bearer {}", self.token);
        finish(
            self.agent.head(url).header("Authorization", &bearer).call(),
            &format!("HEAD {path}"),
        )
    }

    fn delete(&self, path: &str) -> Resp {
        let url = format!("{}{path}", self.http);
        let bearer = format!("Bearer {}", self.token);
        finish(
            self.agent
                .delete(url)
                .header("Authorization", &bearer)
                .call(),
            &format!("DELETE {path}"),
        )
    }

    fn get_json(&self, path: &str) -> Value {
        let r = self.get(path);
        assert_eq!(
            r.status,
            200,
            "GET {path}: {}",
            String::from_utf8_lossy(&r.body)
        );
        r.json()
    }

    /// POST with `headers` and the token (unless `headers` has an `Authorization`).
    fn post(&self, path: &str, body: &[u8], headers: &[(&str, &str)]) -> Resp {
        self.post_as(path, body, &self.with_token(headers))
    }

    /// POST with exactly `headers`.
    fn post_as<V: AsRef<str>>(&self, path: &str, body: &[u8], headers: &[(&str, V)]) -> Resp {
        let mut req = self.agent.post(format!("{}{path}", self.http));
        for (k, v) in headers {
            req = req.header(*k, v.as_ref());
        }
        finish(req.send(body), &format!("POST {path}"))
    }

    /// POSTs a bundle with query parameters `q`; the new bundle's JSON.
    fn add(&self, q: &str, body: &[u8]) -> Value {
        let r = self.post(&format!("/v1/bundles?{q}"), body, &[]);
        assert_eq!(
            r.status,
            201,
            "POST /v1/bundles?{q}: {}",
            String::from_utf8_lossy(&r.body)
        );
        r.json()
    }

    fn status(&self) -> Value {
        self.get_json("/v1/status")
    }

    fn ids(&self) -> Vec<String> {
        self.get_json("/v1/bundles")["bundles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["id"].as_str().unwrap().to_string())
            .collect()
    }

    fn payload(&self, id: &str) -> Vec<u8> {
        let r = self.get(&format!("/v1/bundles/{id}/payload"));
        assert_eq!(r.status, 200);
        r.body
    }

    /// Waits until this daemon holds bundle `id` with the given payload.
    fn wait_for_bundle(&mut self, id: &str, payload: &[u8], secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            self.assert_alive();
            if self.ids().iter().any(|i| i == id) {
                assert_eq!(self.payload(id), payload, "payload of {id}");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "bundle {id} did not arrive within {secs} s; status: {}\n{}",
                self.status(),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Total of `protocol.dropped` over every reason, and by reason.
    fn dropped(&self) -> (u64, Value) {
        let d = self.status()["protocol"]["dropped"].clone();
        let total = d
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        (total, d)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `f` until it returns true, for at most `secs` seconds.
fn wait_until(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Deterministic pseudo-random bytes.
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// One server-sent event as received.
#[derive(Debug)]
struct Sse {
    id: u64,
    kind: String,
    data: Value,
    at: Instant,
}

/// Follows `/v1/events{query}` on a thread; events arrive on the channel.
fn follow(d: &Daemon, query: &str, headers: &[(&str, &str)]) -> mpsc::Receiver<Sse> {
    let cfg = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build();
    let agent = ureq::Agent::new_with_config(cfg);
    let mut req = agent.get(format!("{}/v1/events{query}", d.http));
    for (k, v) in d.with_token(headers) {
        req = req.header(k, v);
    }
    let r = req.call().unwrap();
    assert_eq!(r.status(), 200);
    let ct = r.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with("text/event-stream"), "{ct}");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let rd = BufReader::new(r.into_body().into_reader());
        let (mut id, mut kind, mut data) = (None, None, None);
        for line in rd.lines() {
            let Ok(line) = line else { return };
            if line.is_empty() {
                // End of one event (keep-alive comments leave the fields empty).
                if let (Some(id), Some(kind), Some(data)) = (id.take(), kind.take(), data.take())
                    && tx
                        .send(Sse {
                            id,
                            kind,
                            data,
                            at: Instant::now(),
                        })
                        .is_err()
                {
                    return;
                }
            } else if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim().parse::<u64>().expect("numeric event id"));
            } else if let Some(v) = line.strip_prefix("event:") {
                kind = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("data:") {
                data = Some(serde_json::from_str::<Value>(v.trim()).expect("JSON event data"));
            }
        }
    });
    rx
}

/// The next event of `kind`, skipping others.
fn next_of(rx: &mpsc::Receiver<Sse>, kind: &str, secs: u64) -> Sse {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let e = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no '{kind}' event within {secs} s"));
        if e.kind == kind {
            return e;
        }
    }
}

/// Checks Prometheus text exposition: every sample well formed, typed by a preceding
/// `# TYPE`, and no series twice. Returns the samples as `(name{labels}, value)`.
fn parse_prometheus(text: &str) -> Vec<(String, f64)> {
    let mut typed = std::collections::HashSet::new();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let name = it.next().unwrap();
            let ty = it.next().unwrap();
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&ty),
                "{line}"
            );
            assert!(typed.insert(name.to_string()), "TYPE twice: {line}");
            continue;
        }
        if line.starts_with('#') {
            assert!(line.starts_with("# HELP "), "{line}");
            continue;
        }
        let name_end = line
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(line.len());
        let name = &line[..name_end];
        assert!(
            !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()),
            "{line}"
        );
        let mut rest = &line[name_end..];
        let mut series = name.to_string();
        if let Some(r) = rest.strip_prefix('{') {
            // label="value" pairs, values with \\ \" \n escapes.
            let mut chars = r.char_indices().peekable();
            let end = loop {
                let (i, c) = chars.next().unwrap_or_else(|| panic!("unclosed: {line}"));
                if c == '}' {
                    break i;
                }
                if c == ',' {
                    continue;
                }
                assert!(c.is_ascii_alphabetic() || c == '_', "label name: {line}");
                while chars
                    .peek()
                    .is_some_and(|(_, c)| c.is_ascii_alphanumeric() || *c == '_')
                {
                    chars.next();
                }
                assert_eq!(chars.next().map(|x| x.1), Some('='), "{line}");
                assert_eq!(chars.next().map(|x| x.1), Some('"'), "{line}");
                loop {
                    match chars.next().map(|x| x.1) {
                        Some('\\') => {
                            let e = chars.next().map(|x| x.1);
                            assert!(matches!(e, Some('\\' | '"' | 'n')), "escape: {line}");
                        }
                        Some('"') => break,
                        Some(_) => {}
                        None => panic!("unterminated label value: {line}"),
                    }
                }
            };
            series.push_str(&line[name_end..name_end + end + 2]);
            rest = &r[end + 1..];
        }
        let value = rest
            .strip_prefix(' ')
            .unwrap_or_else(|| panic!("no value: {line}"));
        let v: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value: {line}"));
        assert!(typed.contains(name), "sample before its TYPE: {line}");
        assert!(seen.insert(series.clone()), "series twice: {line}");
        out.push((series, v));
    }
    out
}

fn multipart(boundary: &str, parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut b = Vec::new();
    for (name, file, data) in parts {
        write!(
            b,
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\""
        )
        .unwrap();
        if let Some(f) = file {
            write!(
                b,
                "; filename=\"{f}\"\r\nContent-Type: application/octet-stream"
            )
            .unwrap();
        }
        b.extend_from_slice(b"\r\n\r\n");
        b.extend_from_slice(data);
        b.extend_from_slice(b"\r\n");
    }
    write!(b, "--{boundary}--\r\n").unwrap();
    b
}

/// What every GET below leaves unchanged.
fn snapshot(d: &Daemon) -> (Value, Value) {
    (d.get_json("/v1/bundles"), d.status()["store"].clone())
}

// ---- the API ----------------------------------------------------------------------------

#[test]
fn bundles_insert_list_show_payload_and_append() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Daemon::start(&tmp.path().join("a"), &["--listen", "udp://127.0.0.1:0"]);

    // Raw body with query parameters.
    let content: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    let b = d.add(
        "service=telemetry&name=obs.csv&field=site=north&field=unit=K",
        &content,
    );
    let id = b["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 64);
    assert_eq!(b["service"], "telemetry");
    assert_eq!(b["name"], "obs.csv");
    assert_eq!(b["fields"]["site"], "north");
    assert_eq!(b["fields"]["unit"], "K");
    assert_eq!(b["length"], 1000);
    assert_eq!(b["journal"], false);
    assert_eq!(b["own"], true);
    assert_eq!(b["version"], 1);

    // Multipart: the file part names the bundle unless `name` is given.
    let body = multipart(
        "sKyWaVe0",
        &[
            ("service", None, b"photos"),
            ("field", None, b"camera=north"),
            ("file", Some("cat.jpg"), b"\xff\xd8 not really a jpeg"),
        ],
    );
    let r = d.post(
        "/v1/bundles",
        &body,
        &[("Content-Type", "multipart/form-data; boundary=sKyWaVe0")],
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let mp = r.json();
    assert_eq!(mp["name"], "cat.jpg");
    assert_eq!(mp["service"], "photos");
    assert_eq!(mp["fields"]["camera"], "north");
    let mp_id = mp["id"].as_str().unwrap().to_string();
    assert_eq!(d.payload(&mp_id), b"\xff\xd8 not really a jpeg");
    // Query parameters and multipart fields combine; a field after the file counts.
    let body = multipart(
        "b2",
        &[
            ("file", Some("ignored.bin"), b"x"),
            ("name", None, b"named.bin"),
        ],
    );
    let r = d.post(
        "/v1/bundles?service=photos&journal=false",
        &body,
        &[("Content-Type", "multipart/form-data; boundary=b2")],
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["name"], "named.bin");
    assert_eq!(r.json()["service"], "photos");

    // A recipient (another node's identity) is kept and filtered on.
    let other = "11".repeat(32);
    let to = d.add(&format!("service=mail&recipient={other}"), b"for you");
    assert_eq!(to["recipient"], other.as_str(), "{to}");

    // Show by full id and by unique prefix.
    let full = d.get_json(&format!("/v1/bundles/{id}"));
    assert_eq!(full["id"], id.as_str());
    assert_eq!(full["fields"]["site"], "north");
    let short = d.get_json(&format!("/v1/bundles/{}", &id[..8]));
    assert_eq!(short, full);
    let upper = d.get_json(&format!("/v1/bundles/{}", id[..10].to_uppercase()));
    assert_eq!(upper["id"], id.as_str());

    // Payload: whole, and ranges.
    let r = d.get(&format!("/v1/bundles/{}/payload", &id[..6]));
    assert_eq!(r.status, 200);
    assert_eq!(r.body, content);
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
    assert_eq!(r.header("content-length"), Some("1000"));
    for (range, start, end) in [
        ("bytes=10-19", 10, 20),
        ("bytes=0-0", 0, 1),
        ("bytes=990-", 990, 1000),
        ("bytes=-5", 995, 1000),
        ("bytes=995-5000", 995, 1000),
        ("bytes=-5000", 0, 1000),
    ] {
        let r = d.get_with(&format!("/v1/bundles/{id}/payload"), &[("Range", range)]);
        assert_eq!(r.status, 206, "{range}");
        assert_eq!(r.body, &content[start..end], "{range}");
        let cr = format!("bytes {start}-{}/1000", end - 1);
        assert_eq!(r.header("content-range"), Some(cr.as_str()), "{range}");
        assert_eq!(
            r.header("content-length"),
            Some((end - start).to_string().as_str())
        );
    }
    for range in [
        "bytes=1000-",
        "bytes=5000-6000",
        "bytes=5-2",
        "bytes=0-1,5-6",
        "items=0-1",
        "bytes=-0",
    ] {
        let r = d.get_with(&format!("/v1/bundles/{id}/payload"), &[("Range", range)]);
        let msg = r.error(416);
        assert!(msg.contains("1000-byte"), "{range}: {msg}");
        assert_eq!(r.header("content-range"), Some("bytes */1000"), "{range}");
    }

    // Journals grow by append; the id stays, the version and length grow.
    let j = d.add("service=log&journal=true&name=log.txt", b"line 1\n");
    let jid = j["id"].as_str().unwrap().to_string();
    assert_eq!(j["journal"], true);
    let r = d.post(
        &format!("/v1/bundles/{}/append", &jid[..8]),
        b"line 2\n",
        &[],
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let j2 = r.json();
    assert_eq!(j2["id"], jid.as_str());
    // A journal's version grows with its length (it is the end offset).
    assert!(
        j2["version"].as_u64() > j["version"].as_u64(),
        "{j} then {j2}"
    );
    assert_eq!(j2["length"], 14);
    assert_eq!(d.payload(&jid), b"line 1\nline 2\n");
    let r = d.get_with(
        &format!("/v1/bundles/{jid}/payload"),
        &[("Range", "bytes=7-")],
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.body, b"line 2\n");

    // Filters and paging.
    for i in 0..5 {
        d.add("service=page", format!("page {i}").as_bytes());
    }
    let all = d.get_json("/v1/bundles");
    let all = all["bundles"].as_array().unwrap();
    assert_eq!(all.len(), 10);
    let tokens: Vec<u64> = all.iter().map(|b| b["token"].as_u64().unwrap()).collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
    let photos = d.get_json("/v1/bundles?service=photos");
    assert_eq!(photos["bundles"].as_array().unwrap().len(), 2);
    let mail = d.get_json(&format!("/v1/bundles?recipient={other}"));
    let mail = mail["bundles"].as_array().unwrap();
    assert_eq!(mail.len(), 1);
    assert_eq!(mail[0]["service"], "mail");
    let mut paged = Vec::new();
    let mut since = 0u64;
    let mut pages = 0;
    loop {
        let p = d.get_json(&format!("/v1/bundles?service=page&limit=2&since={since}"));
        let bs = p["bundles"].as_array().unwrap();
        pages += 1;
        if bs.is_empty() {
            assert!(p["next_since"].is_null(), "{p}");
            break;
        }
        assert!(bs.len() <= 2);
        assert_eq!(p["next_since"], bs.last().unwrap()["token"]);
        paged.extend(bs.iter().map(|b| b["id"].as_str().unwrap().to_string()));
        since = p["next_since"].as_u64().unwrap();
        assert!(pages < 10);
    }
    assert_eq!(pages, 4, "5 bundles, 2 a page, then an empty page");
    let pages_ids: Vec<String> = all
        .iter()
        .filter(|b| b["service"] == "page")
        .map(|b| b["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(paged, pages_ids);
    let p = d.get_json(&format!("/v1/bundles?since={}", tokens[8]));
    assert_eq!(p["bundles"].as_array().unwrap().len(), 1);
    assert_eq!(
        d.get_json("/v1/bundles?limit=0")["bundles"]
            .as_array()
            .unwrap()
            .len(),
        0
    );

    // Nothing changes on GET: every read endpoint, then the same list and store.
    let before = snapshot(&d);
    for path in [
        "/v1/bundles".to_string(),
        format!("/v1/bundles/{id}"),
        format!("/v1/bundles/{id}/payload"),
        format!("/v1/bundles/{jid}/payload"),
        "/v1/status".into(),
        "/v1/peers".into(),
        "/v1/links".into(),
        "/v1/transfers".into(),
        "/v1/openapi.yaml".into(),
        "/metrics".into(),
        format!("/v1/bundles/{jid}/append"),
    ] {
        let r = d.get(&path);
        assert!(
            r.status == 200 || r.status == 405,
            "GET {path}: {}",
            r.status
        );
        let r = d.head(&path);
        assert!(
            r.status == 200 || r.status == 405,
            "HEAD {path}: {}",
            r.status
        );
    }
    let after = snapshot(&d);
    assert_eq!(before, after);
    let r = d.get(&format!("/v1/bundles/{jid}/append"));
    assert!(r.error(405).contains("not allowed"));
    assert_eq!(d.payload(&jid), b"line 1\nline 2\n");
}

#[test]
fn status_peers_links_transfers_metrics_and_openapi() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Daemon::start(&tmp.path().join("a"), &["--listen", "udp://127.0.0.1:0"]);
    let big = noise(1, 300_000);
    let first = a.add("service=t&name=big.bin", &big);
    let b = Daemon::start(
        &tmp.path().join("b"),
        &[
            "--listen",
            "udp://127.0.0.1:0",
            "--peer",
            &format!("udp://{}", a.udp[0]),
        ],
    );
    let mut b = b;
    b.wait_for_bundle(first["id"].as_str().unwrap(), &big, 20);

    let st = b.status();
    assert_eq!(st["node"], b.node.as_str());
    assert_eq!(st["http"], b.http.trim_start_matches("http://"));
    assert!(st["uptime_seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(st["store"]["bundles"], 1);
    assert_eq!(st["store"]["payload_bytes"], 300_000);
    assert!(st["protocol"]["bundles_received"].as_u64().unwrap() >= 1);
    assert!(st["protocol"]["piece_bytes_received"].as_u64().unwrap() >= 300_000);

    let peers = b.get_json("/v1/peers")["peers"].clone();
    let peers = peers.as_array().unwrap();
    assert_eq!(peers.len(), 1, "{peers:?}");
    assert_eq!(peers[0]["node"], a.node.as_str());
    for k in ["link", "state", "recon_bytes", "in_flight", "sending"] {
        assert!(!peers[0][k].is_null(), "peer without {k}: {}", peers[0]);
    }
    wait_until(10, "the peers to report synced", || {
        b.get_json("/v1/peers")["peers"][0]["state"] == "synced"
    });

    let links = b.get_json("/v1/links")["links"].clone();
    let links = links.as_array().unwrap();
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(links[0]["kind"], "udp");
    // Only driver links (radios, modems) have a room to show.
    assert!(links[0].get("room").is_none(), "{}", links[0]);
    assert_eq!(links[0]["up"], true);
    assert_eq!(links[0]["name"], format!("udp:{}", a.udp[0]).as_str());
    assert!(links[0]["bytes_in"].as_u64().unwrap() > 300_000);
    assert!(links[0]["frames_out"].as_u64().unwrap() > 0);

    // Transfers: an idle pair has none; the shape is checked while one is under way
    // only if we catch one (loopback is fast), so just the envelope here.
    let t = b.get_json("/v1/transfers");
    assert!(t["transfers"].is_array(), "{t}");

    // Metrics parse as Prometheus text and agree with the status.
    let r = b.get("/metrics");
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    let text = String::from_utf8(r.body).unwrap();
    let samples = parse_prometheus(&text);
    let get = |series: &str| {
        samples
            .iter()
            .find(|(s, _)| s == series)
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
            .1
    };
    assert_eq!(get("skywave_store_bundles"), 1.0);
    assert_eq!(get("skywave_peers{state=\"synced\"}"), 1.0);
    assert_eq!(
        get(
            "skywave_link_up{link=\"0\",kind=\"udp\",name=\"udp:127.0.0.1:{}\"}"
                .replace("{}", &a.udp[0].port().to_string())
                .as_str()
        ),
        1.0
    );
    assert!(get("skywave_link_bytes_total{link=\"0\",kind=\"udp\",direction=\"in\"}") > 300_000.0);
    assert!(get("skywave_useful_bytes_received_total") >= 300_000.0);
    assert!(get("skywave_bundles_total{direction=\"received\"}") >= 1.0);
    for name in [
        "skywave_recon_bytes_sent_total",
        "skywave_frames_dropped_total{reason=\"malformed\"}",
        "skywave_transfers{direction=\"send\"}",
        "skywave_store_bytes{kind=\"payload\"}",
        "skywave_uptime_seconds",
    ] {
        get(name);
    }

    // The sender saw the delivery.
    let a_st = a.status();
    assert!(a_st["protocol"]["piece_bytes_sent"].as_u64().unwrap() >= 300_000);

    // The OpenAPI description is served and names every endpoint.
    let r = a.get("/v1/openapi.yaml");
    assert_eq!(r.status, 200);
    let y = String::from_utf8(r.body).unwrap();
    assert!(y.starts_with("openapi: 3"), "{}", &y[..y.len().min(200)]);
    for p in [
        "/v1/bundles:",
        "/v1/bundles/{id}:",
        "/v1/bundles/{id}/payload:",
        "/v1/bundles/{id}/append:",
        "/v1/peers:",
        "/v1/links:",
        "/v1/transfers:",
        "/v1/status:",
        "/v1/events:",
        "/metrics:",
    ] {
        assert!(y.contains(p), "openapi.yaml lacks {p}");
    }
}

#[test]
fn events_are_numbered_announced_at_once_and_resumable() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Daemon::start(&tmp.path().join("a"), &[]);
    let rx = follow(&d, "", &[]);
    // The stream is open; give the server a moment to subscribe before the first POST
    // (events before the subscription are not replayed without `since`).
    std::thread::sleep(Duration::from_millis(200));

    let mut latencies = Vec::new();
    let mut got = Vec::new();
    for i in 0..10u8 {
        let sent = Instant::now();
        let b = d.add("service=ev", &[i; 100]);
        let returned = Instant::now();
        let e = next_of(&rx, "bundle", 10);
        assert_eq!(e.data["kind"], "bundle");
        assert_eq!(e.data["id"], e.id, "the data repeats the SSE id");
        assert_eq!(e.data["data"]["id"], b["id"]);
        assert_eq!(e.data["data"]["source"], "local");
        assert_eq!(e.data["data"]["length"], 100);
        assert!(e.data["at_ms"].as_u64().unwrap() > 1_600_000_000_000);
        // The event is published before the POST answers, so it can arrive first.
        latencies.push((
            e.at.saturating_duration_since(returned),
            e.at.saturating_duration_since(sent),
        ));
        got.push(e);
    }
    let ids: Vec<u64> = got.iter().map(|e| e.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let worst_after_return = latencies.iter().map(|l| l.0).max().unwrap();
    let worst_since_send = latencies.iter().map(|l| l.1).max().unwrap();
    eprintln!(
        "event latency: worst {:?} after the POST returned, worst {:?} from the POST's start (10 POSTs)",
        worst_after_return, worst_since_send
    );
    // A generous bound: the 100 ms requirement is met with a wide margin on an idle
    // machine; this only catches an event that waits for a timer or a poll.
    assert!(worst_after_return < Duration::from_secs(1), "{latencies:?}");

    // Resume after the third: the rest replayed in order, then live ones.
    let resumed = follow(&d, &format!("?since={}", ids[2]), &[]);
    for want in &ids[3..] {
        let e = resumed.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(e.id, *want);
    }
    let b = d.add("service=ev", b"after resume");
    let e = next_of(&resumed, "bundle", 10);
    assert!(e.id > ids[9]);
    assert_eq!(e.data["data"]["id"], b["id"]);
    // A reconnecting EventSource sends Last-Event-ID; it wins over `since`.
    let again = follow(&d, "?since=0", &[("Last-Event-ID", &ids[8].to_string())]);
    let e = again.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(e.id, ids[9]);
    // The first stream saw the last one too, with the same id.
    assert_eq!(next_of(&rx, "bundle", 10).id, e.id + 1);

    // Ids keep growing across a restart.
    let last = e.id + 1;
    let dir = d.dir.clone();
    drop((d, rx, resumed, again));
    let d = Daemon::start(&dir, &[]);
    let rx = follow(&d, "", &[]);
    std::thread::sleep(Duration::from_millis(200));
    d.add("service=ev", b"after restart");
    let e = next_of(&rx, "bundle", 10);
    assert!(e.id > last, "{} after {last}", e.id);
}

// ---- bad input --------------------------------------------------------------------------

#[test]
fn malformed_requests_and_bad_ids_get_a_json_error_naming_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = Daemon::start(&tmp.path().join("a"), &[]);
    let b = d.add("service=t", b"kept");
    let id = b["id"].as_str().unwrap().to_string();

    let post = |q: &str, body: &[u8], ct: Option<&str>| {
        let h: Vec<(&str, &str)> = ct.map(|c| ("Content-Type", c)).into_iter().collect();
        d.post(q, body, &h)
    };
    let mp = "multipart/form-data; boundary=XyZ";
    let cases: Vec<(Resp, u16, &str)> = vec![
        (
            post("/v1/bundles?colour=red", b"x", None),
            400,
            "unknown parameter 'colour'",
        ),
        (
            post("/v1/bundles?field=novalue", b"x", None),
            400,
            "KEY=VALUE",
        ),
        (
            post("/v1/bundles?journal=perhaps", b"x", None),
            400,
            "journal",
        ),
        (
            post("/v1/bundles?recipient=beef", b"x", None),
            400,
            "recipient",
        ),
        // Multipart without a boundary, with a body that is not multipart, cut short,
        // without the file part, and with an unknown field.
        (
            post("/v1/bundles", b"junk", Some("multipart/form-data")),
            400,
            "multipart",
        ),
        (post("/v1/bundles", b"junk", Some(mp)), 400, "multipart"),
        (
            post(
                "/v1/bundles",
                b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc",
                Some(mp),
            ),
            400,
            "multipart",
        ),
        (
            post(
                "/v1/bundles",
                &multipart("XyZ", &[("service", None, b"t")]),
                Some(mp),
            ),
            400,
            "no 'file' part",
        ),
        (
            post(
                "/v1/bundles",
                &multipart("XyZ", &[("colour", None, b"red"), ("file", None, b"x")]),
                Some(mp),
            ),
            400,
            "unknown parameter 'colour'",
        ),
        (
            post(
                "/v1/bundles",
                &multipart(
                    "XyZ",
                    &[("service", None, b"\xff\xfe"), ("file", None, b"x")],
                ),
                Some(mp),
            ),
            400,
            "service",
        ),
        // Bad ids: not hex, too short, too long, unknown, unknown full id.
        (d.get("/v1/bundles/not-an-id"), 400, "invalid bundle id"),
        (d.get("/v1/bundles/ab"), 400, "at least 4"),
        (
            d.get(&format!("/v1/bundles/{id}00")),
            400,
            "invalid bundle id",
        ),
        (d.get("/v1/bundles/%FF%FE"), 400, "UTF-8"),
        (
            d.get("/v1/bundles/0000ffff"),
            404,
            "no bundle matches '0000ffff'",
        ),
        (
            d.get(&format!("/v1/bundles/{}", "0".repeat(64))),
            404,
            "0000000000",
        ),
        (d.get("/v1/bundles/zzzz/payload"), 400, "invalid bundle id"),
        (d.get("/v1/bundles/0000ffff/payload"), 404, "no bundle"),
        (
            post("/v1/bundles/zzzz/append", b"x", None),
            400,
            "invalid bundle id",
        ),
        (
            post("/v1/bundles/0000ffff/append", b"x", None),
            404,
            "no bundle",
        ),
        (
            post(&format!("/v1/bundles/{id}/append"), b"x", None),
            400,
            "not a journal",
        ),
        // Bad query strings on reads.
        // (What each parameter takes, not only the deserializer's complaint.)
        (
            d.get("/v1/bundles?since=yesterday"),
            400,
            "`since` takes a whole number: the `next_since` of a previous page",
        ),
        (
            d.get("/v1/bundles?limit=-1"),
            400,
            "`limit` takes a whole number of bundles",
        ),
        (
            d.get("/v1/bundles?colour=red"),
            400,
            "unknown field `colour`",
        ),
        (d.get("/v1/bundles?recipient=xyz"), 400, "recipient"),
        (
            d.get("/v1/events?since=x"),
            400,
            "or an event id for /v1/events",
        ),
        // Unknown endpoints and methods.
        (d.get("/v1/nothing"), 404, "no endpoint GET /v1/nothing"),
        (d.delete("/v1/status"), 405, "DELETE is not allowed"),
        // Only the author deletes.
        (
            d.delete(&format!("/v1/bundles/{}", "0".repeat(64))),
            403,
            "only its author",
        ),
        (post("/v1/status", b"", None), 405, "POST is not allowed"),
    ];
    for (i, (r, status, needle)) in cases.iter().enumerate() {
        let msg = r.error(*status);
        assert!(
            msg.contains(needle),
            "case {i}: '{msg}' does not mention '{needle}'"
        );
    }
    // A refused request whose body went unread closes its connection, and says so: a
    // client that pooled it would send its next request into a closed socket.
    for (i, (r, _, _)) in cases.iter().take(4).enumerate() {
        assert_eq!(
            r.headers.get("connection").and_then(|v| v.to_str().ok()),
            Some("close"),
            "case {i}: {:?}",
            r.headers
        );
    }
    // No bundle was made by any of it, no upload left behind, and the daemon is up.
    d.assert_alive();
    assert_eq!(d.ids(), vec![id.clone()]);
    assert_eq!(d.payload(&id), b"kept");
    let leftovers: Vec<_> = std::fs::read_dir(&d.dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".upload-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A client that promises a body and hangs up half way: no bundle, no crash.
    let addr = d.http.trim_start_matches("http://").to_string();
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /v1/bundles?service=t HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Length: 100000\r\n\r\n",
        d.token
    )
    .unwrap();
    s.write_all(&[7u8; 5000]).unwrap();
    drop(s);
    // And one that speaks no HTTP at all.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(&noise(3, 3000)).unwrap();
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut sink = Vec::new();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.read_to_end(&mut sink);
    std::thread::sleep(Duration::from_millis(200));
    d.assert_alive();
    assert_eq!(d.ids(), vec![id]);
}

#[test]
fn uploads_past_the_quota_are_refused_and_earlier_bundles_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = Daemon::start(&tmp.path().join("a"), &["--quota", "64KiB"]);
    let mut kept = Vec::new();
    let mut refused = None;
    for i in 0..10u64 {
        let body = noise(i, 20_000);
        let r = d.post("/v1/bundles?service=q", &body, &[]);
        match r.status {
            201 => kept.push((r.json()["id"].as_str().unwrap().to_string(), body)),
            _ => {
                refused = Some(r);
                break;
            }
        }
    }
    let r = refused.expect("the quota refused an upload");
    let msg = r.error(507);
    assert!(msg.contains("quota"), "{msg}");
    assert!(!kept.is_empty() && kept.len() <= 3, "{}", kept.len());
    // Multipart and append are held to the quota too.
    let body = multipart("q", &[("file", Some("f.bin"), &noise(99, 40_000))]);
    let r = d.post(
        "/v1/bundles",
        &body,
        &[("Content-Type", "multipart/form-data; boundary=q")],
    );
    assert!(r.error(507).contains("quota"));

    d.assert_alive();
    let st = d.status();
    assert_eq!(st["store"]["bundles"], kept.len());
    assert_eq!(st["store"]["quota"], 65_536);
    assert_eq!(d.ids().len(), kept.len());
    for (id, body) in &kept {
        assert_eq!(&d.payload(id), body);
    }
    let leftovers = std::fs::read_dir(&d.dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".upload-"))
        .count();
    assert_eq!(leftovers, 0);
    // Nothing of the refused uploads stays: a payload file and a key per bundle held.
    let count = |sub: &str| {
        fn walk(p: &std::path::Path) -> usize {
            std::fs::read_dir(p).map_or(0, |r| {
                r.flatten()
                    .map(|e| {
                        if e.path().is_dir() {
                            walk(&e.path())
                        } else {
                            1
                        }
                    })
                    .sum()
            })
        }
        walk(&d.dir.join(sub))
    };
    assert_eq!(
        count("payloads"),
        kept.len(),
        "refused payloads left behind"
    );
    assert_eq!(
        count("keyring"),
        kept.len(),
        "keys of refused bundles left behind"
    );
    assert_eq!(count("tmp"), 0);
    // Something small still fits.
    d.add("service=q", b"small");
}

// ---- access ---------------------------------------------------------------------------

/// Sends `head` (request line and headers, no blank line) on a new connection with
/// `Connection: close`; the answer's status and body.
fn raw(d: &Daemon, head: &str) -> (u16, String) {
    let addr = d.http.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "{head}\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out).to_string();
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer to {head:?}: {out:?}"));
    let body = out
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// Writes a configuration file beside the node directory.
fn config_file(tmp: &Path, text: &str) -> String {
    let p = tmp.join("skywave.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn writes_need_the_token_on_a_loopback_address_too() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Daemon::start(&tmp.path().join("a"), &[]);
    assert!(d.http.starts_with("http://127.0.0.1:"), "{}", d.http);
    assert!(d.token.len() >= 32);
    let wrong = format!("Bearer {}x", d.token);
    let short = format!("Bearer {}", &d.token[..d.token.len() - 1]);
    for h in [
        vec![],
        vec![("Authorization", "Bearer wrong")],
        vec![("Authorization", wrong.as_str())],
        vec![("Authorization", short.as_str())],
        vec![("Authorization", d.token.as_str())],
        vec![("Authorization", "Basic dXNlcjpwYXNz")],
    ] {
        let r = d.post_as("/v1/bundles?service=t", b"x", &h);
        let msg = r.error(401);
        assert!(
            msg.contains("http-token") && msg.contains("Bearer"),
            "{msg}"
        );
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    }
    // The token is checked before anything else: even a malformed upload is 401.
    let r = d.post_as::<&str>(
        "/v1/bundles?colour=red",
        b"junk",
        &[("Content-Type", "multipart/form-data")],
    );
    r.error(401);
    assert!(d.ids().is_empty());

    let j = d.add("service=t&journal=true", b"one\n");
    let id = j["id"].as_str().unwrap().to_string();
    let r = d.post_as::<&str>(&format!("/v1/bundles/{id}/append"), b"two\n", &[]);
    r.error(401);
    let r = d.post(&format!("/v1/bundles/{id}/append"), b"two\n", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(d.payload(&id), b"one\ntwo\n");
}

#[test]
fn the_scheme_of_the_token_is_matched_in_any_case() {
    let tmp = tempfile::tempdir().unwrap();
    // `--require-token` is obsolete (always on now) but still accepted.
    let d = Daemon::start(&tmp.path().join("a"), &["--require-token"]);
    for scheme in ["bearer", "BEARER", "Bearer", "bEaReR"] {
        let auth = format!("{scheme} {}", d.token);
        let r = d.post(
            &format!("/v1/bundles?service=t&name={scheme}"),
            b"x",
            &[("Authorization", &auth)],
        );
        assert_eq!(
            r.status,
            201,
            "{scheme}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let r = d.get_with("/v1/status", &[("Authorization", &auth)]);
        assert_eq!(r.status, 200, "{scheme}");
    }
    assert_eq!(d.ids().len(), 4);
    assert!(
        d.logs().contains("--require-token is obsolete"),
        "{}",
        d.logs()
    );
}

#[test]
fn reads_need_the_token_unless_opened_on_loopback() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Daemon::start(&tmp.path().join("a"), &[]);
    let b = d.add("service=t", b"secret");
    let id = b["id"].as_str().unwrap().to_string();
    let reads = [
        "/v1/bundles".to_string(),
        format!("/v1/bundles/{id}"),
        format!("/v1/bundles/{id}/payload"),
        "/v1/status".into(),
        "/v1/peers".into(),
        "/v1/links".into(),
        "/v1/transfers".into(),
        "/v1/events?since=0".into(),
        "/v1/openapi.yaml".into(),
        "/metrics".into(),
    ];
    for p in &reads {
        let r = d.get_as::<&str>(p, &[]);
        let msg = r.error(401);
        assert!(
            msg.contains("http-token") && msg.contains("open_reads"),
            "{p}: {msg}"
        );
        let r = d.get_as(p, &[("Authorization", "Bearer nope")]);
        r.error(401);
    }
    // With the token (Prometheus sends it as `authorization.credentials`).
    for p in &reads[..7] {
        assert_eq!(d.get(p).status, 200, "{p}");
    }
    let m = d.get("/metrics");
    assert_eq!(m.status, 200);
    assert!(String::from_utf8_lossy(&m.body).contains("skywave_uptime_seconds"));
    let rx = follow(&d, "?since=0", &[]);
    assert_eq!(next_of(&rx, "bundle", 10).data["data"]["id"], id.as_str());
    drop((d, rx));

    // `open_reads = true` (or --open-reads) on loopback: reads go without, writes do not.
    let cfg = config_file(tmp.path(), "open_reads = true\n");
    let d = Daemon::start(&tmp.path().join("a"), &["--config", &cfg]);
    for p in &reads {
        if p.starts_with("/v1/events") {
            // A stream: the status, not the body.
            let r = d.agent.get(format!("{}{p}", d.http)).call().unwrap();
            assert_eq!(r.status(), 200, "{p}");
            continue;
        }
        let r = d.get_as::<&str>(p, &[]);
        assert_eq!(r.status, 200, "{p}: {}", String::from_utf8_lossy(&r.body));
        let r = finish(
            d.agent.head(format!("{}{p}", d.http)).call(),
            &format!("HEAD {p}"),
        );
        assert_eq!(r.status, 200, "HEAD {p}");
    }
    let r = d.get_as::<&str>(&format!("/v1/bundles/{id}/payload"), &[]);
    assert_eq!(r.body, b"secret");
    let r = d.post_as::<&str>("/v1/bundles?service=t", b"x", &[]);
    r.error(401);
    drop(d);
    let d = Daemon::start(&tmp.path().join("a"), &["--open-reads"]);
    assert_eq!(d.get_as::<&str>("/v1/status", &[]).status, 200);
    d.post_as::<&str>("/v1/bundles?service=t", b"x", &[])
        .error(401);
}

#[test]
fn writes_from_another_origin_are_refused_even_with_the_token() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Daemon::start(&tmp.path().join("a"), &[]);
    let own = d.http.clone();
    let port = own.rsplit(':').next().unwrap().to_string();
    let own_localhost = format!("http://localhost:{port}");
    for h in [
        vec![("Origin", "http://evil.example")],
        vec![("Origin", "null")],
        vec![("Origin", "http://127.0.0.1:1")],
        vec![("Sec-Fetch-Site", "cross-site")],
        vec![("Sec-Fetch-Site", "same-site")],
        vec![("Origin", own.as_str()), ("Sec-Fetch-Site", "cross-site")],
    ] {
        let r = d.post("/v1/bundles?service=t", b"x", &h);
        let msg = r.error(403);
        assert!(msg.contains("another"), "{h:?}: {msg}");
        // Refused unread, the body ends the connection, and the answer says so (a
        // client reusing it for the next request saw that request reset).
        assert_eq!(
            r.headers.get("connection").and_then(|v| v.to_str().ok()),
            Some("close"),
            "{:?}",
            r.headers
        );
        assert!(
            !r.headers
                .keys()
                .any(|k| k.as_str().starts_with("access-control-")),
            "{:?}",
            r.headers
        );
        // Without the token too.
        let r = d.post_as("/v1/bundles?service=t", b"x", &h);
        r.error(403);
    }
    // A preflight is not answered with CORS headers either.
    let (status, _) = raw(
        &d,
        &format!(
            "OPTIONS /v1/bundles HTTP/1.1\r\nHost: {}\r\nOrigin: http://evil.example\r\nAccess-Control-Request-Method: POST",
            own.trim_start_matches("http://")
        ),
    );
    assert!(status >= 400, "{status}");
    assert!(d.ids().is_empty());
    // The daemon's own origin, and requests a user made (Sec-Fetch-Site: none).
    for h in [
        vec![("Origin", own.as_str())],
        vec![("Origin", own_localhost.as_str())],
        vec![("Origin", own.as_str()), ("Sec-Fetch-Site", "same-origin")],
        vec![("Sec-Fetch-Site", "none")],
    ] {
        let r = d.post("/v1/bundles?service=t", b"x", &h);
        assert_eq!(r.status, 201, "{h:?}: {}", String::from_utf8_lossy(&r.body));
    }
    // Reads with an Origin are up to the token, as any read.
    let r = d.get_with("/v1/status", &[("Origin", "http://evil.example")]);
    assert_eq!(r.status, 200);
    assert!(r.header("access-control-allow-origin").is_none());
}

#[test]
fn a_host_that_is_not_the_daemon_is_refused_and_a_configured_name_taken() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Daemon::start(&tmp.path().join("a"), &[]);
    let addr = d.http.trim_start_matches("http://").to_string();
    let port = addr.rsplit(':').next().unwrap().to_string();
    let auth = format!("Authorization: Bearer {}", d.token);
    let get = |host: Option<&str>, version: &str| {
        let host = host.map(|h| format!("\r\nHost: {h}")).unwrap_or_default();
        raw(
            &d,
            &format!("GET /v1/status HTTP/{version}{host}\r\n{auth}"),
        )
    };
    // A rebound name, a port of another server, a name not configured.
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_string(),
        format!("127.0.0.1:{}", port.parse::<u16>().unwrap() ^ 1),
        format!("node.example:{port}"),
        format!("[::1]:{port}"),
    ] {
        let (status, body) = get(Some(&host), "1.1");
        assert_eq!(status, 421, "{host}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("{body}"));
        let msg = v["error"].as_str().unwrap();
        assert!(msg.contains("http_hosts") && msg.contains(&host), "{msg}");
    }
    // Writes too, before the token or the body are looked at.
    let (status, _) = raw(
        &d,
        &format!(
            "POST /v1/bundles HTTP/1.1\r\nHost: evil.example:{port}\r\n{auth}\r\nContent-Length: 0"
        ),
    );
    assert_eq!(status, 421);
    assert!(d.ids().is_empty());
    // Its own address, localhost, and no Host at all (HTTP/1.0) on loopback.
    for host in [
        addr.clone(),
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
    ] {
        assert_eq!(get(Some(&host), "1.1").0, 200, "{host}");
    }
    assert_eq!(get(None, "1.0").0, 200);
    drop(d);

    // A configured name (file or flag) is taken, with any port or the one given.
    let cfg = config_file(
        tmp.path(),
        "http_hosts = [\"node.example\", \"proxy.example:8080\"]\n",
    );
    let d = Daemon::start(
        &tmp.path().join("a"),
        &["--config", &cfg, "--http-host", "other.example"],
    );
    let port = d.http.rsplit(':').next().unwrap().to_string();
    let auth = format!("Authorization: Bearer {}", d.token);
    for (host, want) in [
        (format!("node.example:{port}"), 200),
        ("Node.Example".to_string(), 200),
        ("proxy.example:8080".to_string(), 200),
        ("proxy.example:8081".to_string(), 421),
        (format!("other.example:{port}"), 200),
        (format!("evil.example:{port}"), 421),
    ] {
        let (status, body) = raw(
            &d,
            &format!("GET /v1/status HTTP/1.1\r\nHost: {host}\r\n{auth}"),
        );
        assert_eq!(status, want, "{host}: {body}");
    }
    let r = d.post(
        "/v1/bundles?service=t",
        b"x",
        &[("Origin", "http://node.example")],
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
}

#[test]
fn a_token_file_readable_by_others_is_made_owner_only_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    std::fs::create_dir_all(&dir).unwrap();
    let token = "5eed".repeat(12);
    let path = dir.join("http-token");
    std::fs::write(&path, &token).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let d = Daemon::start(&dir, &[]);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
    assert_eq!(d.token, token, "the token is kept");
    assert_eq!(d.get("/v1/status").status, 200);
    assert!(
        d.logs().contains("was mode 0644") && d.logs().contains("now 0600"),
        "{}",
        d.logs()
    );
    drop(d);
    // A new token file is owner-only from the start.
    std::fs::remove_file(&path).unwrap();
    let d = Daemon::start(&dir, &[]);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
    assert_ne!(d.token, token);
}

#[test]
fn garbage_and_oversize_datagrams_are_counted_and_an_honest_peer_still_syncs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Daemon::start(&tmp.path().join("a"), &["--listen", "udp://127.0.0.1:0"]);
    let before = a.add("service=t", b"held before the garbage");
    let target = a.udp[0];
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();

    // Each batch is counted before the next is sent (so the kernel's receive buffer
    // never overflows and every datagram is accounted for).
    let sent = std::cell::Cell::new(0u64);
    let send_batch = |batch: Vec<Vec<u8>>| {
        for d in &batch {
            s.send_to(d, target).unwrap();
        }
        sent.set(sent.get() + batch.len() as u64);
        let want = sent.get();
        wait_until(10, "the daemon to count the datagrams", || {
            a.dropped().0 >= want
        });
    };
    // Random bytes that do not start like a frame.
    for round in 0..5u64 {
        send_batch(
            (0..20)
                .map(|i| {
                    let mut d = noise(round * 100 + i, 1 + (i as usize * 37) % 1400);
                    d[0] = 0x00;
                    d
                })
                .collect(),
        );
    }
    // A beacon look-alike, an empty datagram, and the largest datagrams IPv4 carries.
    let mut beacon = b"SKYWAVE\x02".to_vec();
    beacon.extend_from_slice(&[9u8; 32]);
    send_batch(vec![beacon, Vec::new()]);
    for i in 0..4 {
        let mut big = noise(500 + i, 65_507);
        big[0] = 0xff;
        send_batch(vec![big]);
    }
    // The small ones are garbage; the huge ones garbage or oversize (past the
    // largest datagram the daemon reads).
    let (total, by_reason) = a.dropped();
    assert_eq!(total, sent.get(), "{by_reason}");
    assert_eq!(
        by_reason["garbage"].as_u64().unwrap() + by_reason["oversize"].as_u64().unwrap_or(0),
        106,
        "{by_reason}"
    );
    // Datagrams that start like a frame but are not one, small and huge: dropped by the
    // protocol (malformed, unknown version) or as oversize.
    for i in 0..4 {
        let mut d = noise(900 + i, if i % 2 == 0 { 65_507 } else { 300 });
        d[0] = skywave_proto::wire::VERSION;
        send_batch(vec![d]);
    }
    let (total, by_reason) = a.dropped();
    assert_eq!(total, sent.get(), "{by_reason}");

    // Metrics count them too.
    let text = String::from_utf8(a.get("/metrics").body).unwrap();
    let samples = parse_prometheus(&text);
    let counted: f64 = samples
        .iter()
        .filter(|(s, _)| s.starts_with("skywave_frames_dropped_total{reason="))
        .map(|x| x.1)
        .sum();
    assert_eq!(counted, sent.get() as f64, "{text}");
    a.assert_alive();

    // An honest peer still syncs, both ways, and nothing held was lost.
    let mut b = Daemon::start(
        &tmp.path().join("b"),
        &[
            "--listen",
            "udp://127.0.0.1:0",
            "--peer",
            &format!("udp://{target}"),
        ],
    );
    let from_b = b.add("service=t", b"from b");
    b.wait_for_bundle(
        before["id"].as_str().unwrap(),
        b"held before the garbage",
        20,
    );
    a.wait_for_bundle(from_b["id"].as_str().unwrap(), b"from b", 20);
    // More garbage while the session runs changes nothing.
    for i in 0..50 {
        s.send_to(&noise(7000 + i, 200), target).unwrap();
    }
    let payload = noise(42, 100_000);
    let late = a.add("service=t", &payload);
    b.wait_for_bundle(late["id"].as_str().unwrap(), &payload, 20);
    a.assert_alive();
    assert_eq!(a.ids().len(), 3);
}

#[test]
fn a_tcp_peer_that_stalls_mid_frame_does_not_hold_up_the_daemon_or_other_peers() {
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Daemon::start(&tmp.path().join("a"), &["--listen", "tcp://127.0.0.1:0"]);
    let target = a.tcp[0];

    // Half a frame: a length of 1000, ten bytes, then nothing.
    let mut half = TcpStream::connect(target).unwrap();
    half.write_all(&[0x03, 0xe8]).unwrap();
    half.write_all(&[0x51; 10]).unwrap();
    // Half a length prefix.
    let mut byte = TcpStream::connect(target).unwrap();
    byte.write_all(&[0x01]).unwrap();
    // A frame of noise with a valid length: dropped as malformed, connection kept.
    let mut noisy = TcpStream::connect(target).unwrap();
    let mut f = vec![0x00, 200];
    f.extend(noise(5, 200));
    f[2] = skywave_proto::wire::VERSION;
    noisy.write_all(&f).unwrap();
    wait_until(10, "the noise frame to be counted", || a.dropped().0 >= 1);
    // Impossible lengths (zero; longer than the MTU) end the connection at once.
    for len in [[0u8, 0], [0xff, 0xff]] {
        let mut bad = TcpStream::connect(target).unwrap();
        bad.write_all(&len).unwrap();
        bad.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = [0u8; 4096];
        let closed = loop {
            match bad.read(&mut buf) {
                Ok(0) => break true,
                Ok(_) => continue, // the daemon's greeting, before it read the length
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
                Err(_) => break false,
            }
        };
        assert!(
            closed,
            "a frame length of {len:?} did not end the connection"
        );
    }

    // The daemon answers, and an honest peer syncs both ways over TCP meanwhile.
    let t0 = Instant::now();
    a.status();
    let status_time = t0.elapsed();
    let mut b = Daemon::start(
        &tmp.path().join("b"),
        &["--peer", &format!("tcp://{target}")],
    );
    let payload = noise(8, 200_000);
    let from_b = b.add("service=t", &payload);
    a.wait_for_bundle(from_b["id"].as_str().unwrap(), &payload, 20);
    let from_a = a.add("service=t", b"from a");
    b.wait_for_bundle(from_a["id"].as_str().unwrap(), b"from a", 20);
    eprintln!("status with stalled peers answered in {status_time:?}");

    // The stalled connections are still there (cut only after 30 s mid-frame), as
    // links that are up; the daemon is alive.
    let links = a.get_json("/v1/links")["links"].clone();
    let tcp_in = links
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kind"] == "tcp" && l["up"] == true)
        .count();
    assert!(tcp_in >= 4, "{links}");
    a.assert_alive();
    drop((half, byte, noisy));
    // Closed connections are forgotten.
    wait_until(10, "closed connections to leave /v1/links", || {
        a.get_json("/v1/links")["links"].as_array().unwrap().len() == 1
    });
}

#[test]
fn serial_noise_and_a_device_that_disappears_and_comes_back() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let cable_dir = tmp.path().join("cable");
    std::fs::create_dir_all(&cable_dir).unwrap();
    let cable = {
        let _g = rt.enter();
        skywave_links::NullModem::open(&cable_dir).unwrap()
    };
    let link = |end: usize| format!("serial:device={}", cable.path(end).display());
    let mut a = Daemon::start(&tmp.path().join("a"), &["--link", &link(0)]);
    let mut b = Daemon::start(&tmp.path().join("b"), &["--link", &link(1)]);
    let link_up = |d: &Daemon| d.get_json("/v1/links")["links"][0]["up"] == true;
    wait_until(15, "both serial links up", || link_up(&a) && link_up(&b));

    let first = a.add("service=s", b"over the wire");
    b.wait_for_bundle(first["id"].as_str().unwrap(), b"over the wire", 20);

    // Line noise into both readers: random bytes (COBS codes that point past the
    // delimiter, bad CRCs), runs of delimiters, and over-long frames.
    for i in 0..5u64 {
        let mut junk = noise(i, 700);
        if i == 3 {
            junk = vec![0xff; 3000];
        }
        junk.push(0);
        rt.block_on(cable.inject(0, junk.clone()));
        rt.block_on(cable.inject(1, junk));
        rt.block_on(cable.inject(0, vec![0; 20]));
    }
    let payload = noise(77, 20_000);
    let second = b.add("service=s", &payload);
    a.wait_for_bundle(second["id"].as_str().unwrap(), &payload, 30);
    let garbage = a.get_json("/v1/links")["links"][0]["dropped"]["garbage_bytes"]
        .as_u64()
        .unwrap();
    assert!(garbage >= 1000, "garbage bytes counted: {garbage}");
    let text = String::from_utf8(a.get("/metrics").body).unwrap();
    parse_prometheus(&text);
    assert!(
        text.contains("reason=\"garbage_bytes\",link=\"0\""),
        "{text}"
    );

    // Unplug: both links go down, with a reason; the daemons stay up.
    rt.block_on(cable.unplug());
    let down = |d: &Daemon| {
        let l = d.get_json("/v1/links")["links"][0].clone();
        l["up"] == false && l["reason"].is_string()
    };
    wait_until(15, "both serial links down", || {
        let r = down(&a) && down(&b);
        if !r {
            eprintln!("{} {}", a.get_json("/v1/links"), b.get_json("/v1/links"));
        }
        r
    });
    // A bundle added while the device is gone goes out once it is back.
    let third = a.add("service=s", b"while unplugged");
    std::thread::sleep(Duration::from_millis(500));
    a.assert_alive();
    b.assert_alive();
    rt.block_on(cable.plug()).unwrap();
    wait_until(20, "both serial links up again", || {
        link_up(&a) && link_up(&b)
    });
    b.wait_for_bundle(third["id"].as_str().unwrap(), b"while unplugged", 30);
    let fourth = b.add("service=s", b"and back");
    a.wait_for_bundle(fourth["id"].as_str().unwrap(), b"and back", 30);
    assert_eq!(a.ids().len(), 4);
    assert_eq!(b.ids().len(), 4);
}

// ---- limits ---------------------------------------------------------------------------

/// A TCP connection to `to` from local address `from` (any 127/8 address is loopback),
/// with a receive buffer of `rcvbuf` bytes if given.
fn connect_from(from: &str, to: SocketAddr, rcvbuf: Option<usize>) -> TcpStream {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    if let Some(n) = rcvbuf {
        s.set_recv_buffer_size(n).unwrap();
    }
    let from: SocketAddr = format!("{from}:0").parse().unwrap();
    s.bind(&from.into()).unwrap();
    s.connect(&to.into()).unwrap();
    s.into()
}

/// Reads from `s` (discarding what the daemon sends, such as its greeting) until the
/// daemon closes it or `wait` passes; whether it was closed.
fn closed_within(s: &mut TcpStream, wait: Duration) -> bool {
    let end = Instant::now() + wait;
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

/// Whether each of `conns` is closed by the daemon within `wait` (checked together).
fn which_closed(conns: Vec<TcpStream>, wait: Duration) -> (Vec<bool>, Vec<TcpStream>) {
    let handles: Vec<_> = conns
        .into_iter()
        .map(|mut s| std::thread::spawn(move || (closed_within(&mut s, wait), s)))
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).unzip()
}

/// One request on its own connection (`Connection: close`), with the token; `None` if
/// the daemon closed the connection without an answer.
fn one_request(d: &Daemon, method: &str, path: &str, body: &[u8]) -> Option<(u16, String)> {
    let addr = d.http.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        d.token,
        body.len()
    )
    .ok()?;
    s.write_all(body).ok()?;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out).to_string();
    let status = out.split(' ').nth(1)?.parse().ok()?;
    let body = out
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Some((status, body))
}

/// A sample of the daemon's `/metrics`, fetched on its own connection.
fn metric(d: &Daemon, series: &str) -> f64 {
    let (status, text) = one_request(d, "GET", "/metrics", b"").expect("an answer");
    assert_eq!(status, 200, "{text}");
    parse_prometheus(&text)
        .into_iter()
        .find(|(s, _)| s == series)
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
        .1
}

fn hits(d: &Daemon, limit: &str) -> f64 {
    metric(d, &format!("skywave_limit_hits_total{{limit=\"{limit}\"}}"))
}

fn in_use(d: &Daemon, limit: &str) -> f64 {
    metric(d, &format!("skywave_limit_in_use{{limit=\"{limit}\"}}"))
}

#[test]
fn sync_connections_past_the_caps_are_closed_at_once_and_an_honest_peer_still_syncs() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(
        tmp.path(),
        "[limits]\ntcp_connections = 6\ntcp_connections_per_address = 4\n",
    );
    let mut a = Daemon::start(
        &tmp.path().join("a"),
        &["--config", &cfg, "--listen", "tcp://127.0.0.1:0"],
    );
    let target = a.tcp[0];

    // Ten silent connections from one address: four are held, six closed at once.
    let flood: Vec<TcpStream> = (0..10)
        .map(|_| connect_from("127.0.0.2", target, None))
        .collect();
    wait_until(10, "six refusals to be counted", || {
        hits(&a, "tcp_connections_per_address") == 6.0
    });
    let (closed, flood) = which_closed(flood, Duration::from_secs(2));
    assert_eq!(
        closed.iter().filter(|c| **c).count(),
        6,
        "closed: {closed:?}"
    );
    assert_eq!(in_use(&a, "tcp_connections"), 4.0);
    // The core never saw the extra ones: four links from that address.
    let links = a.get_json("/v1/links")["links"].clone();
    let from_flood = links
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["name"].as_str().unwrap().contains("127.0.0.2:"))
        .count();
    assert_eq!(from_flood, 4, "{links}");
    // Six refusals, one log line.
    let logs = a.logs();
    assert_eq!(
        logs.matches("refusing sync connections from 127.0.0.2")
            .count(),
        1,
        "{logs}"
    );

    // An honest peer from another address is served and syncs both ways.
    let mut b = Daemon::start(
        &tmp.path().join("b"),
        &["--peer", &format!("tcp://{target}")],
    );
    let payload = noise(21, 100_000);
    let from_b = b.add("service=t", &payload);
    a.wait_for_bundle(from_b["id"].as_str().unwrap(), &payload, 20);

    // The total cap: 4 + 1 held, so one of three more (a third address) is taken.
    let more: Vec<TcpStream> = (0..3)
        .map(|_| connect_from("127.0.0.3", target, None))
        .collect();
    wait_until(10, "two refusals by the total", || {
        hits(&a, "tcp_connections") == 2.0
    });
    let (closed, more) = which_closed(more, Duration::from_secs(2));
    assert_eq!(closed.iter().filter(|c| **c).count(), 2, "{closed:?}");
    assert_eq!(in_use(&a, "tcp_connections"), 6.0);
    // The peer's connection is unaffected.
    let from_a = a.add("service=t", b"while full");
    b.wait_for_bundle(from_a["id"].as_str().unwrap(), b"while full", 20);
    a.assert_alive();

    // Closed connections give their places back.
    drop((flood, more));
    wait_until(10, "only the peer's connection held", || {
        in_use(&a, "tcp_connections") == 1.0
    });
}

#[test]
fn a_sync_connection_that_never_sends_a_frame_is_closed_and_a_peer_that_greets_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(
        tmp.path(),
        "[limits]\ntcp_first_frame_timeout = \"500ms\"\n",
    );
    let mut a = Daemon::start(
        &tmp.path().join("a"),
        &["--config", &cfg, "--listen", "tcp://127.0.0.1:0"],
    );
    let target = a.tcp[0];
    let mut silent = TcpStream::connect(target).unwrap();
    assert!(
        closed_within(&mut silent, Duration::from_secs(20)),
        "a silent connection was kept"
    );
    wait_until(10, "the timeout to be counted", || {
        hits(&a, "tcp_first_frame_timeout") == 1.0
    });

    let b = Daemon::start(
        &tmp.path().join("b"),
        &["--peer", &format!("tcp://{target}")],
    );
    let first = b.add("service=t", b"one");
    a.wait_for_bundle(first["id"].as_str().unwrap(), b"one", 20);
    // Well past the timeout, the same connection still carries bundles.
    std::thread::sleep(Duration::from_millis(1500));
    let second = b.add("service=t", b"two");
    a.wait_for_bundle(second["id"].as_str().unwrap(), b"two", 20);
    assert_eq!(hits(&a, "tcp_first_frame_timeout"), 1.0);
    let tcp_in = a.get_json("/v1/links")["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kind"] == "tcp")
        .count();
    assert_eq!(tcp_in, 1, "the peer reconnected: its connection was cut");
}

#[test]
fn idle_and_half_sent_http_requests_are_cut_off_and_the_api_answers_meanwhile() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(tmp.path(), "[limits]\nhttp_header_timeout = \"500ms\"\n");
    let d = Daemon::start(&tmp.path().join("a"), &["--config", &cfg]);
    let addr = d.http.trim_start_matches("http://").to_string();

    let idle = TcpStream::connect(&addr).unwrap();
    let mut slow = TcpStream::connect(&addr).unwrap();
    write!(slow, "GET /v1/status HTTP/1.1\r\nHost: {addr}\r\n").unwrap();
    // Another client is answered while those two wait.
    let (status, body) = one_request(&d, "GET", "/v1/status", b"").expect("an answer");
    assert_eq!(status, 200, "{body}");
    let (closed, _) = which_closed(vec![idle, slow], Duration::from_secs(20));
    assert_eq!(closed, [true, true], "idle and half-sent connections kept");
    // A kept-alive connection is closed once idle as long, after its answer.
    let mut kept = TcpStream::connect(&addr).unwrap();
    write!(
        kept,
        "GET /v1/status HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\r\n",
        d.token
    )
    .unwrap();
    let mut head = [0u8; 12];
    kept.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    assert!(closed_within(&mut kept, Duration::from_secs(20)));
    assert!(hits(&d, "http_header_timeout") >= 3.0);
    // Only the connection asking is held (a closed one gives its place back at once).
    wait_until(10, "one HTTP connection held", || {
        in_use(&d, "http_connections") == 1.0
    });
}

#[test]
fn http_connections_past_the_cap_get_a_503_until_one_closes() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(tmp.path(), "[limits]\nhttp_connections = 3\n");
    let d = Daemon::start(&tmp.path().join("a"), &["--config", &cfg]);
    let addr = d.http.trim_start_matches("http://").to_string();
    let mut held: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    // The daemon accepts in order: the fourth finds the three held.
    let mut fourth = TcpStream::connect(&addr).unwrap();
    fourth
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = String::new();
    fourth.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1"), "{answer}");
    assert!(answer.contains("limits.http_connections"), "{answer}");
    // One closes: the API answers again (its answer counted the refusal).
    held.pop();
    let mut text = String::new();
    wait_until(10, "the API to answer", || {
        match one_request(&d, "GET", "/metrics", b"") {
            Some((200, t)) => {
                text = t;
                true
            }
            _ => false,
        }
    });
    let refused = parse_prometheus(&text)
        .into_iter()
        .find(|(s, _)| s == "skywave_limit_hits_total{limit=\"http_connections\"}")
        .map(|(_, v)| v);
    assert!(refused >= Some(1.0), "{text}");
    drop(held);
}

#[test]
fn a_stalled_request_body_gets_a_408_and_a_client_that_stops_reading_is_cut_off() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(
        tmp.path(),
        "[limits]\nhttp_body_timeout = \"300ms\"\nhttp_send_timeout = \"300ms\"\n",
    );
    let d = Daemon::start(&tmp.path().join("a"), &["--config", &cfg]);
    let addr = d.http.trim_start_matches("http://").to_string();

    // Ten bytes of a promised thousand, then nothing.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "POST /v1/bundles?service=t HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Length: 1000\r\n\r\n0123456789",
        d.token
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("limits.http_body_timeout"), "{answer}");
    assert!(d.ids().is_empty());
    assert_eq!(hits(&d, "http_body_timeout"), 1.0);
    // A body sent without pauses is stored, however long it is.
    let big = noise(3, 16 << 20);
    let id = d.add("service=t", &big)["id"].as_str().unwrap().to_string();

    // A download the client stops reading: the daemon gives up on it.
    let mut reader = connect_from("127.0.0.1", d.http[7..].parse().unwrap(), Some(4096));
    write!(
        reader,
        "GET /v1/bundles/{id}/payload HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\r\n",
        d.token
    )
    .unwrap();
    wait_until(20, "the stalled download to be cut off", || {
        hits(&d, "http_send_timeout") == 1.0
    });
    reader
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut got = Vec::new();
    let _ = reader.read_to_end(&mut got);
    assert!(
        got.len() < big.len(),
        "the whole payload came: {}",
        got.len()
    );
    // Others are served in full.
    assert_eq!(d.payload(&id), big);
}

/// Writes `head` and then `body` in pieces on a thread, while this thread reads the
/// answer; the answer, and how many body bytes the daemon took before it.
fn upload_racing_the_answer(
    d: &Daemon,
    head: &str,
    body: impl Iterator<Item = Vec<u8>> + Send + 'static,
) -> (String, u64) {
    let addr = d.http.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let mut sent = 0u64;
        for piece in body {
            if w.write_all(&piece).is_err() {
                break;
            }
            sent += piece.len() as u64;
        }
        sent
    });
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    // The answer is read as it comes, before the connection is reset.
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
        if answer.windows(4).any(|w| w == b"\r\n\r\n")
            && String::from_utf8_lossy(&answer).contains("\"status\"")
        {
            break;
        }
    }
    drop(s);
    let sent = writer.join().unwrap();
    (String::from_utf8_lossy(&answer).to_string(), sent)
}

#[test]
fn multipart_text_parts_past_the_limit_are_refused_with_413_before_the_body_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(tmp.path(), "[limits]\nmultipart_text_max = \"4KiB\"\n");
    let mut d = Daemon::start(&tmp.path().join("a"), &["--config", &cfg]);
    let addr = d.http.trim_start_matches("http://").to_string();
    let total: u64 = 256 << 20;
    let head = format!(
        "POST /v1/bundles HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: {total}\r\n\r\n",
        d.token
    );

    // A 256 MiB text part: refused after the first few KiB.
    let pieces = |first: &'static [u8]| {
        std::iter::once(first.to_vec()).chain(std::iter::repeat_n(vec![b'a'; 64 * 1024], 4096))
    };
    let (answer, sent) = upload_racing_the_answer(
        &d,
        &head,
        pieces(b"--B\r\nContent-Disposition: form-data; name=\"service\"\r\n\r\n"),
    );
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.contains("'service'") && answer.contains("limits.multipart_text_max"),
        "{answer}"
    );
    assert!(sent < total / 2, "the daemon read {sent} bytes of it");

    // A part whose headers never end is cut off too (it would be buffered whole).
    let (answer, sent) = upload_racing_the_answer(
        &d,
        &head,
        pieces(b"--B\r\nContent-Disposition: form-data; name=\"service\"\r\nX-Pad: "),
    );
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("outside its file part"), "{answer}");
    assert!(sent < total / 2, "the daemon read {sent} bytes of it");

    // Small parts count together.
    let value = format!("k={}", "v".repeat(1000));
    let parts: Vec<(&str, Option<&str>, &[u8])> = (0..8)
        .map(|_| ("field", None, value.as_bytes()))
        .chain([("file", Some("f.bin"), &b"payload"[..])])
        .collect();
    let ct = [("Content-Type", "multipart/form-data; boundary=B")];
    let r = d.post("/v1/bundles", &multipart("B", &parts), &ct);
    let msg = r.error(413);
    assert!(msg.contains("'field'") && msg.contains("4096"), "{msg}");
    assert_eq!(hits(&d, "multipart_text_max"), 3.0);
    assert!(d.ids().is_empty());

    // Under the limit, with a file of any size, the upload is stored.
    let file = noise(4, 3 << 20);
    let parts: Vec<(&str, Option<&str>, &[u8])> = vec![
        ("service", None, b"photos"),
        ("field", None, b"camera=north"),
        ("file", Some("f.bin"), &file),
    ];
    let r = d.post("/v1/bundles", &multipart("B", &parts), &ct);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let id = r.json()["id"].as_str().unwrap().to_string();
    assert_eq!(d.payload(&id), file);
    d.assert_alive();
    let leftovers = std::fs::read_dir(&d.dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".upload-"))
        .count();
    assert_eq!(leftovers, 0);
}

#[test]
fn uploads_past_the_cap_get_a_503_with_retry_after_and_those_under_it_are_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(tmp.path(), "[limits]\nuploads = 2\n");
    let d = Daemon::start(&tmp.path().join("a"), &["--config", &cfg]);
    let addr = d.http.trim_start_matches("http://").to_string();
    // Two uploads under way: ten bytes of a hundred each.
    let mut held: Vec<TcpStream> = (0..2)
        .map(|i| {
            let mut s = TcpStream::connect(&addr).unwrap();
            write!(
                s,
                "POST /v1/bundles?service=held&name={i} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{}",
                d.token,
                "x".repeat(10)
            )
            .unwrap();
            s
        })
        .collect();
    wait_until(10, "two uploads under way", || in_use(&d, "uploads") == 2.0);

    let r = d.post("/v1/bundles?service=t", b"third", &[]);
    let msg = r.error(503);
    assert!(msg.contains("limits.uploads"), "{msg}");
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(hits(&d, "uploads"), 1.0);
    // Reads are not uploads.
    assert!(d.ids().is_empty());

    // The two finish and are stored; then there is room again.
    for s in &mut held {
        s.write_all(&[b'x'; 90]).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    }
    assert_eq!(d.ids().len(), 2);
    d.add("service=t", b"third, later");
    assert_eq!(in_use(&d, "uploads"), 0.0);
}

// ---- the web UI -----------------------------------------------------------------------

/// The page, its script, style sheet and icon: served without the token, each with its
/// content type and the headers that keep it from being framed, sniffed or made to run
/// script from elsewhere; every data route still needs the token, and the page's own
/// same-origin writes are taken (docs/webui.md, "Security").
#[test]
fn the_web_ui_is_served_without_the_token_with_its_security_headers_and_data_still_needs_it() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Daemon::start(&tmp.path().join("a"), &[]);
    let none: &[(&str, &str)] = &[];
    for (path, ctype, marker) in [
        (
            "/",
            "text/html; charset=utf-8",
            "<script src=\"/ui/app.js\" defer>",
        ),
        ("/ui/app.js", "text/javascript; charset=utf-8", "/v1/events"),
        ("/ui/app.css", "text/css; charset=utf-8", "@media"),
        ("/ui/icon.svg", "image/svg+xml", "<svg"),
    ] {
        let r = d.get_as(path, none);
        assert_eq!(r.status, 200, "GET {path} without the token");
        assert_eq!(r.header("content-type"), Some(ctype), "{path}");
        let csp = r.header("content-security-policy").unwrap_or("");
        for want in [
            "default-src 'none'",
            "script-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(want), "{path}: CSP {csp:?} lacks {want}");
        }
        assert!(!csp.contains("unsafe"), "{path}: {csp}");
        assert_eq!(
            r.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(r.header("referrer-policy"), Some("no-referrer"), "{path}");
        assert_eq!(r.header("x-frame-options"), Some("DENY"), "{path}");
        let body = String::from_utf8(r.body).unwrap();
        assert!(body.contains(marker), "{path} lacks {marker:?}");
        assert!(!body.contains(&d.token), "{path} holds the token");
        let r = d.head(path);
        assert_eq!(r.status, 200, "HEAD {path}");
    }
    // The script sends the token in a header, never in a URL.
    let js = String::from_utf8(d.get_as("/ui/app.js", none).body).unwrap();
    assert!(js.contains("'Authorization', `Bearer ${state.token}`"));
    assert!(!js.contains("token="), "a token in a query string");

    // Everything else still needs the token, also when a browser sends the request.
    let addr = d.http.trim_start_matches("http://").to_string();
    let page_like = [
        ("Sec-Fetch-Site", "same-origin"),
        ("Origin", d.http.as_str()),
    ];
    for path in [
        "/v1/status",
        "/v1/bundles",
        "/v1/events",
        "/metrics",
        "/v1/openapi.yaml",
        "/ui/other.js",
        "/index.html",
    ] {
        d.get_as(path, none).error(401);
        d.get_as(path, &page_like).error(401);
    }
    d.post_as("/", b"x", none).error(401);
    assert!(d.get("/ui/other.js").error(404).contains("no endpoint"));
    let y = String::from_utf8(d.get("/v1/openapi.yaml").body).unwrap();
    for p in ["  /:", "  /ui/app.js:", "  /ui/app.css:", "  /ui/icon.svg:"] {
        assert!(y.contains(p), "openapi.yaml lacks {p}");
    }
    // Another name for this address (DNS rebinding) gets no page either.
    let (status, _) = raw(&d, "GET / HTTP/1.1\r\nHost: evil.example");
    assert_eq!(status, 421);
    let (status, body) = raw(&d, &format!("GET / HTTP/1.1\r\nHost: {addr}"));
    assert_eq!(status, 200);
    assert!(body.contains("<title>skywave</title>"), "{body}");

    // The page's own calls: same-origin fetches with the token, as Chromium sends them.
    let port = addr.rsplit(':').next().unwrap();
    let localhost = format!("http://localhost:{port}");
    let mut ids = Vec::new();
    for origin in [d.http.as_str(), localhost.as_str()] {
        let h = [("Origin", origin), ("Sec-Fetch-Site", "same-origin")];
        let r = d.post(
            &format!("/v1/bundles?service=t&name={}", ids.len()),
            b"x",
            &h,
        );
        assert_eq!(
            r.status,
            201,
            "{origin}: {}",
            String::from_utf8_lossy(&r.body)
        );
        ids.push(r.json()["id"].as_str().unwrap().to_string());
    }
    let r = d.get_with("/v1/status", &page_like);
    assert_eq!(r.status, 200);
    let url = format!("{}/v1/bundles/{}", d.http, ids[0]);
    let r = finish(
        d.agent
            .delete(url)
            .header("Authorization", &format!("Bearer {}", d.token))
            .header("Origin", d.http.as_str())
            .header("Sec-Fetch-Site", "same-origin")
            .call(),
        "DELETE from the page",
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["deleted"], true);
    assert_eq!(d.ids(), vec![ids[1].clone()]);
}
