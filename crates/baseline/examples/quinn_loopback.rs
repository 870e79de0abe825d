//! QUIC over real UDP sockets on loopback: the baseline beside two skywave daemons.
//!
//! ```text
//! cargo run --release -p skywave-baseline --example quinn_loopback            # 1024 MiB
//! cargo run --release -p skywave-baseline --example quinn_loopback -- 256     # 256 MiB
//! cargo run --release -p skywave-baseline --example quinn_loopback -- 256 --no-gso
//! ```
//!
//! One process: a quinn server and a quinn client endpoint, each on its own UDP socket
//! bound to 127.0.0.1 port 0, on a multi-threaded tokio runtime. The client connects,
//! opens one unidirectional stream, writes N MiB and finishes it; the server reads it to
//! the end. Prints one JSON line:
//!
//! ```text
//! {"impl":"quinn","bytes":..,"seconds":..,"gbit_per_s":..,"cpu_seconds":..,"max_rss_kib":..}
//! ```
//!
//! - `seconds`: from the client opening the stream (the handshake is done by then) to the
//!   server reading the last byte; `gbit_per_s` = payload bytes x 8 / seconds / 1e9.
//! - `cpu_seconds`, `max_rss_kib`: user + system CPU time and peak RSS of the whole process
//!   (both endpoints, sender and receiver, and the set-up), from `getrusage(RUSAGE_SELF)`.
//!
//! `--no-gso` turns off UDP segmentation offload on the send side (one `sendmsg` per
//! datagram instead of up to 64 KiB of datagrams per call), for comparison with a sender
//! that writes datagrams one at a time; the JSON then says `"impl":"quinn-no-gso"`.
//!
//! `scripts/bench-daemon.sh` runs this beside the daemons for the same size.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nix::sys::resource::{UsageWho, getrusage};
use quinn::{ClientConfig, Endpoint, MtuDiscoveryConfig, ServerConfig, TransportConfig, VarInt};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

const MIB: u64 = 1 << 20;
/// Bytes handed to quinn per `write_chunk` (a cheap clone of one shared buffer).
const CHUNK: usize = 1 << 20;
/// Stream and connection receive windows, and the send window (see `transport`).
const WINDOW: u32 = 64 << 20;
/// skywave's UDP links default to 1,472-byte datagrams (a 1,500-byte Ethernet MTU less
/// the IP and UDP headers); quinn gets the same datagram size.
const DATAGRAM: u16 = 1472;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() -> std::process::ExitCode {
    let mut mib = 1024;
    let mut gso = true;
    for a in std::env::args().skip(1) {
        match (a.as_str(), a.parse::<u64>()) {
            ("--no-gso", _) => gso = false,
            (_, Ok(n)) if n > 0 => mib = n,
            _ => {
                eprintln!("usage: quinn_loopback [MIB] [--no-gso]   (MIB > 0; default 1024)");
                return std::process::ExitCode::from(2);
            }
        }
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("quinn_loopback: tokio runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(mib * MIB, gso)) {
        Ok(line) => {
            println!("{line}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("quinn_loopback: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The transport settings of both ends, tuned as a user would for a fast local path.
///
/// - Receive windows of 64 MiB per stream and per connection (quinn's defaults are about
///   1.25 MB per stream, sized for 100 Mbit/s at 100 ms): at several Gbit/s a small window
///   would make flow control, not the path, the limit.
/// - A send window of 64 MiB to match, so the sender never waits on its own buffer before
///   the receiver's window.
/// - 1,472-byte datagrams from the start (`initial_mtu`), with MTU discovery capped
///   there, as skywave's UDP link uses; quinn would otherwise start at 1,200 B and probe
///   up to 1,452 B.
/// - Everything else is quinn's default: Cubic congestion control, pacing, GSO/GRO where
///   the kernel has them (quinn-udp), ack frequency, loss detection.
fn transport(gso: bool) -> TransportConfig {
    let mut t = TransportConfig::default();
    t.stream_receive_window(VarInt::from_u32(WINDOW))
        .receive_window(VarInt::from_u32(WINDOW))
        .send_window(u64::from(WINDOW))
        .initial_mtu(DATAGRAM)
        .max_idle_timeout(Some(VarInt::from_u32(30_000).into()));
    let mut mtud = MtuDiscoveryConfig::default();
    mtud.upper_bound(DATAGRAM);
    t.mtu_discovery_config(Some(mtud));
    t.enable_segmentation_offload(gso);
    t
}

async fn run(bytes: u64, gso: bool) -> Result<String, Error> {
    // A self-signed certificate for "localhost", trusted by the client.
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])?;
    let cert: CertificateDer<'static> = ck.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let transport = Arc::new(transport(gso));

    let mut server_cfg = ServerConfig::with_single_cert(vec![cert.clone()], key)?;
    server_cfg.transport_config(transport.clone());
    let localhost = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let server = Endpoint::server(server_cfg, localhost)?;
    let server_addr = server.local_addr()?;

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert)?;
    let mut client_cfg = ClientConfig::with_root_certificates(Arc::new(roots))?;
    client_cfg.transport_config(transport);
    let mut client = Endpoint::client(localhost)?;
    client.set_default_client_config(client_cfg);

    // Receiver: accept the connection and the stream, read to the end without copying.
    let receiver = tokio::spawn(async move {
        let incoming = server.accept().await.ok_or("server endpoint closed")?;
        let conn = incoming.await?;
        let mut stream = conn.accept_uni().await?;
        let mut got = 0u64;
        while let Some(chunk) = stream.read_chunk(usize::MAX, true).await? {
            got += chunk.bytes.len() as u64;
        }
        let done = Instant::now();
        // Keep the connection until the sender has seen everything acknowledged.
        conn.closed().await;
        server.wait_idle().await;
        Ok::<_, Error>((got, done))
    });

    let conn = client.connect(server_addr, "localhost")?.await?;
    let payload = Bytes::from(vec![0x5a; CHUNK]);
    let start = Instant::now();
    let mut stream = conn.open_uni().await?;
    let mut left = bytes;
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        stream.write_chunk(payload.slice(..n)).await?;
        left -= n as u64;
    }
    stream.finish()?;
    stream.stopped().await?;
    conn.close(VarInt::from_u32(0), b"done");
    client.wait_idle().await;
    let (got, done) = tokio::time::timeout(Duration::from_secs(30), receiver).await???;
    if got != bytes {
        return Err(format!("server read {got} bytes of {bytes}").into());
    }

    let seconds = done.duration_since(start).as_secs_f64();
    let usage = getrusage(UsageWho::RUSAGE_SELF)?;
    let tv = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    let cpu = tv(usage.user_time()) + tv(usage.system_time());
    let name = if gso { "quinn" } else { "quinn-no-gso" };
    // Linux reports ru_maxrss in KiB. Keys in a fixed order, for people reading it.
    Ok(format!(
        "{{\"impl\":\"{name}\",\"bytes\":{bytes},\"seconds\":{seconds:.3},\"gbit_per_s\":{:.3},\"cpu_seconds\":{cpu:.3},\"max_rss_kib\":{}}}",
        bytes as f64 * 8.0 / seconds / 1e9,
        usage.max_rss(),
    ))
}
