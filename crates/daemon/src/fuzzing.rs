//! Bodies of the daemon's fuzz targets (`fuzz/fuzz_targets/{config,beacon,tcp_frames,
//! http}.rs`), replayed on stable by `tests/fuzz_corpus.rs`. Not part of the API:
//! hidden, no stability.

#![doc(hidden)]

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, StatusCode};
use bytes::BytesMut;
use skywave_node::StoreAdapter;
use skywave_proto::fuzzing::Input;
use skywave_store::{Store, StoreConfig};
use tower::ServiceExt;

use crate::config::{self, DaemonConfig};
use crate::core::Shared;
use crate::ip::{self, TcpDeframer};

/// A configuration file's text (any bytes, read as UTF-8 with replacements), its first
/// line also as a `--link` flag and a `--peer`/`--listen` URL, and the text as a size,
/// rate and duration. Checks: no panic; parsing is deterministic; what validates has
/// every IP link's MTU at the protocol's floor or above and no zero limit; a flag adds exactly one link,
/// a URL at most one; sizes and rates read back from their own decimal figure.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(c) = DaemonConfig::from_toml(&text, "fuzz.toml") {
        let again = DaemonConfig::from_toml(&text, "fuzz.toml").expect("parsed once");
        assert_eq!(format!("{c:?}"), format!("{again:?}"));
        check_valid(&c);
    }
    let line = text.lines().next().unwrap_or("");
    let mut c = DaemonConfig::default();
    if c.add_link_flag(line).is_ok() {
        assert_eq!(c.links.len(), 1);
        check_valid(&c);
    }
    for listen in [false, true] {
        let before = c.links.len();
        if c.add_url(line, listen).is_ok() {
            assert!(c.links.len() <= before + 1);
            check_valid(&c);
        }
    }
    if let Ok(n) = config::parse_size(line) {
        assert_eq!(config::parse_size(&n.to_string()), Ok(n));
    }
    if let Ok(r) = config::parse_rate(line) {
        assert!((1..=1_000_000_000_000).contains(&r));
        assert_eq!(config::parse_rate(&r.to_string()), Ok(r));
    }
    if let Ok(d) = config::skywave_sim_duration(line) {
        assert!(d.as_secs() <= 1_000_000_000);
    }
}

fn check_valid(c: &DaemonConfig) {
    if c.validate().is_ok() {
        // Every cap lets something through and every timeout waits.
        let l = &c.limits;
        assert!(l.tcp_connections.min(l.tcp_connections_per_address) >= 1);
        assert!(l.http_connections.min(l.uploads) >= 1);
        for t in [
            l.tcp_first_frame_timeout,
            l.http_header_timeout,
            l.http_body_timeout,
            l.http_send_timeout,
        ] {
            assert!(t >= std::time::Duration::from_millis(1));
        }
        for l in &c.links {
            let mtu = match l {
                config::LinkConfig::Udp(u) => u.mtu.unwrap_or(usize::MAX),
                config::LinkConfig::Tcp(t) => t.mtu,
                config::LinkConfig::Driver(_) => continue,
            };
            assert!(mtu >= skywave_proto::wire::MIN_FRAME);
        }
    }
}

/// A datagram as a beacon: one parses exactly when it is the beacon of the key it names.
pub fn beacon(data: &[u8]) {
    match ip::parse_beacon(data) {
        Some(k) => assert_eq!(ip::beacon(&k), data),
        None => {
            if data.len() >= 40 {
                let k: [u8; 32] = data[8..40].try_into().expect("32 bytes");
                assert_ne!(ip::beacon(&k), data);
            }
        }
    }
}

/// A TCP link's byte stream. The first byte picks the largest frame and the chunk size.
/// The bytes as received, whole and in chunks: the same frames or the same error, every
/// frame within bounds, nothing held past one frame. Then the bytes cut into frames and
/// sent with [`ip::put_frame`]: they come back intact, in order, in any chunking.
pub fn tcp_frames(data: &[u8]) {
    let mut input = Input(data);
    let sel = input.u8();
    let max = [1, 2, 40, 300, 1400, 65_535][usize::from(sel % 6)];
    let chunk = usize::from(sel / 6) + 1;
    let rest = input.0;
    let mut whole = TcpDeframer::new(max);
    let a = whole.push(rest);
    let mut parts = TcpDeframer::new(max);
    let mut b = Ok(Vec::new());
    for c in rest.chunks(chunk) {
        match parts.push(c) {
            Ok(f) => b.as_mut().expect("ok so far").extend(f),
            Err(e) => {
                b = Err(e);
                break;
            }
        }
    }
    assert_eq!(a, b, "chunking changed the result");
    if let Ok(frames) = &a {
        let used: usize = frames.iter().map(|f| f.len() + 2).sum();
        assert!(used <= rest.len());
        assert_eq!(whole.mid_frame(), used < rest.len());
        assert!(rest.len() - used < 2 + max, "more than a frame held");
        for f in frames {
            assert!(!f.is_empty() && f.len() <= max);
        }
    }
    let mut sent = Vec::new();
    let mut stream = BytesMut::new();
    let mut r = Input(rest);
    while !r.is_empty() {
        let n = usize::from(r.u16()) % max + 1;
        let f = r.bytes(n);
        if f.is_empty() {
            break;
        }
        ip::put_frame(&mut stream, f);
        sent.push(f.to_vec());
    }
    let mut d = TcpDeframer::new(max);
    let mut got = Vec::new();
    for c in stream.chunks(chunk) {
        got.extend(
            d.push(c)
                .expect("frames of a valid length")
                .into_iter()
                .map(|f| f.to_vec()),
        );
    }
    assert_eq!(got, sent);
    assert!(!d.mid_frame());
}

/// One HTTP request through the API's router, against a daemon state on a temporary
/// store (kept between runs, under a quota) with no core behind it. Input: method,
/// flags (send the token, a `Host`, an `Origin`), a route and a path suffix, header
/// lines, an empty line, the body.
///
/// Checks: no panic; no 500 (a request's fault is a 4xx, the store's a 507); and without
/// the token nothing succeeds but the web UI's static files (every other 2xx needs it:
/// reads are open only on request).
pub fn http(data: &[u8]) {
    let h = harness();
    let mut input = Input(data);
    const METHODS: [Method; 7] = [
        Method::GET,
        Method::POST,
        Method::HEAD,
        Method::PUT,
        Method::DELETE,
        Method::OPTIONS,
        Method::PATCH,
    ];
    const ROUTES: [&str; 12] = [
        "/v1/bundles",
        "/v1/bundles/",
        "/v1/status",
        "/v1/peers",
        "/v1/links",
        "/v1/transfers",
        "/v1/events",
        "/v1/openapi.yaml",
        "/metrics",
        "/v1/bundles/{id}/payload",
        "/v1/bundles/{id}/append",
        "/",
    ];
    let method = METHODS[usize::from(input.u8()) % METHODS.len()].clone();
    let flags = input.u8();
    let route = ROUTES[usize::from(input.u8()) % ROUTES.len()];
    let mut lines = input.0.splitn(2, |&b| b == b'\n');
    let suffix = String::from_utf8_lossy(lines.next().unwrap_or_default());
    let mut rest = lines.next().unwrap_or_default();
    let id = h.id.clone();
    let uri = format!("{}{}", route.replace("{id}", &id), suffix.trim_end());
    let mut req = Request::builder().method(method.clone()).uri(uri.as_str());
    let with_token = flags & 1 == 1;
    if with_token {
        req = req.header("authorization", format!("Bearer {}", h.token));
    }
    if flags & 2 == 2 {
        req = req.header("host", "127.0.0.1:7473");
    }
    if flags & 4 == 4 {
        req = req.header("origin", "http://evil.example");
    }
    // Header lines until an empty one; what is no valid header is left out.
    loop {
        let mut split = rest.splitn(2, |&b| b == b'\n');
        let line = split.next().unwrap_or_default();
        rest = split.next().unwrap_or_default();
        if line.is_empty() {
            break;
        }
        let mut kv = line.splitn(2, |&b| b == b':');
        let (Some(k), Some(v)) = (kv.next(), kv.next()) else {
            continue;
        };
        if let (Ok(k), Ok(v)) = (
            HeaderName::from_bytes(k),
            HeaderValue::from_bytes(v.trim_ascii()),
        ) {
            req = req.header(k, v);
        }
    }
    let Ok(req) = req.body(Body::from(rest.to_vec())) else {
        return; // not a request axum could receive (bad URI)
    };
    let (status, stream) = h.rt.block_on(async {
        let resp = h.router.clone().oneshot(req).await.expect("infallible");
        let status = resp.status();
        let stream = resp
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        if !stream {
            // Reading the body runs what the handler left to the stream (payloads).
            let _ = axum::body::to_bytes(resp.into_body(), 64 << 20).await;
        }
        (status, stream)
    });
    assert_ne!(
        status,
        StatusCode::INTERNAL_SERVER_ERROR,
        "{method} {uri}: internal error"
    );
    // The web UI's static files hold no node data and are served to anyone who may
    // reach the port (access.rs); everything else needs the token.
    let page = matches!(method, Method::GET | Method::HEAD)
        && uri
            .parse::<axum::http::Uri>()
            .is_ok_and(|u| crate::webui::PAGE_PATHS.contains(&u.path()));
    if !with_token && !page {
        assert!(
            !status.is_success(),
            "{method} {uri} succeeded without the token ({status}, event stream: {stream})"
        );
    }
}

struct Harness {
    rt: tokio::runtime::Runtime,
    router: axum::Router,
    token: String,
    /// A bundle the store holds, for routes that name one.
    id: String,
    _dir: tempfile::TempDir,
    _stop: tokio::sync::watch::Sender<bool>,
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = Store::open(
            dir.path(),
            StoreConfig {
                quota: Some(16 << 20),
                ..StoreConfig::default()
            },
        )
        .expect("a store");
        let node = store.node_key().public();
        // A journal authored here, so that appends to it can succeed.
        let opts = skywave_store::NewBundle {
            name: Some("log".into()),
            journal: true,
            date: skywave_proto::fuzzing::DATE,
            ..Default::default()
        };
        let mut store = store;
        let b = store.create(&[7u8; 5000][..], &opts).expect("a bundle");
        let id = b.manifest.id().to_string();
        let store = StoreAdapter::new(store);
        let token = "f".repeat(48);
        let bound = "127.0.0.1:7473".parse().expect("an address");
        // No core: its command channel is closed, so what needs it answers 503.
        let (cmds, _) = tokio::sync::mpsc::unbounded_channel();
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let shared = Arc::new(Shared::new(
            store,
            crate::events::EventLog::new(None),
            cmds,
            node,
            crate::access::Access::new(token.clone(), bound, false, &[]),
            stopping,
            crate::limits::Limits::new(Default::default()),
        ));
        Harness {
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime"),
            router: crate::http::router(shared),
            token,
            id,
            _dir: dir,
            _stop: stop,
        }
    })
}
