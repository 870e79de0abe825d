//! IP links: UDP sockets (many peers per socket, learnt from traffic and beacons) and TCP
//! connections (one per peer, frames length-prefixed, reconnect with backoff).
//!
//! These tasks only move bytes. Which peer a datagram belongs to, and every protocol
//! decision, is the core's.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::core::Input;

/// Largest datagram read; anything longer is counted as oversize and dropped.
pub const MAX_DATAGRAM: usize = skywave_node::adapter::MAX_DATAGRAM;

/// Beacon: magic, wire version, then the node key.
pub const BEACON_MAGIC: &[u8; 8] = b"SKYWAVE\x01";

pub fn beacon(node: &[u8; 32]) -> Vec<u8> {
    let mut b = Vec::with_capacity(40);
    b.extend_from_slice(BEACON_MAGIC);
    b.extend_from_slice(node);
    b
}

/// The node key in a beacon, if `d` is one.
pub fn parse_beacon(d: &[u8]) -> Option<[u8; 32]> {
    if d.len() != 40 || &d[..8] != BEACON_MAGIC {
        return None;
    }
    d[8..].try_into().ok()
}

/// The writer's half of a TCP link, as the core holds it.
#[derive(Debug, Clone)]
pub struct TcpTx {
    pub frames: mpsc::Sender<Bytes>,
    /// Set by the core when it found the queue full; the writer then reports room.
    pub waiting: Arc<AtomicBool>,
}

/// Frames queued per TCP connection: enough to keep the socket busy between wakes.
const TCP_QUEUE: usize = 256;

/// Runs one TCP connection as link `link` until it breaks; then tells the core.
pub async fn tcp_connection(
    link: usize,
    stream: TcpStream,
    mtu: usize,
    idle: Duration,
    core: mpsc::Sender<Input>,
) {
    let _ = stream.set_nodelay(true);
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "?".into(), |a| a.to_string());
    let (mut rd, mut wr) = stream.into_split();
    let (ftx, mut frx) = mpsc::channel::<Bytes>(TCP_QUEUE);
    let waiting = Arc::new(AtomicBool::new(false));
    let tx = TcpTx {
        frames: ftx,
        waiting: waiting.clone(),
    };
    if core
        .send(Input::TcpUp {
            link,
            tx,
            peer: peer.clone(),
        })
        .await
        .is_err()
    {
        return;
    }
    let core_w = core.clone();
    let writer = async move {
        let mut buf = BytesMut::with_capacity(64 * 1024);
        while let Some(f) = frx.recv().await {
            buf.clear();
            put_frame(&mut buf, &f);
            // Coalesce whatever else is queued into one write.
            while buf.len() < 60 * 1024 {
                match frx.try_recv() {
                    Ok(f) => put_frame(&mut buf, &f),
                    Err(_) => break,
                }
            }
            if waiting.swap(false, Ordering::AcqRel)
                && core_w.send(Input::Room { link, room: mtu }).await.is_err()
            {
                return "the daemon stopped".to_string();
            }
            if let Err(e) = wr.write_all(&buf).await {
                return format!("write failed: {e}");
            }
        }
        "closed".to_string()
    };
    let core_r = core.clone();
    let reader = async move {
        let mut len = [0u8; 2];
        loop {
            // Silence between frames is fine (a synced session is quiet); a peer that
            // stops mid-frame is cut off after `idle`.
            if let Err(e) = rd.read_exact(&mut len[..1]).await {
                return format!("read failed: {e}");
            }
            match tokio::time::timeout(idle, rd.read_exact(&mut len[1..])).await {
                Err(_) => return "stalled mid-frame".to_string(),
                Ok(Err(e)) => return format!("read failed: {e}"),
                Ok(Ok(_)) => {}
            }
            let n = u16::from_be_bytes(len) as usize;
            if n == 0 || n > mtu.max(skywave_node::adapter::MIN_FRAME) {
                return format!("bad frame length {n} (largest accepted {mtu})");
            }
            let mut f = vec![0u8; n];
            match tokio::time::timeout(idle, rd.read_exact(&mut f)).await {
                Err(_) => return "stalled mid-frame".to_string(),
                Ok(Err(e)) => return format!("read failed: {e}"),
                Ok(Ok(_)) => {}
            }
            if core_r
                .send(Input::Frame {
                    link,
                    data: Bytes::from(f),
                })
                .await
                .is_err()
            {
                return "the daemon stopped".to_string();
            }
        }
    };
    let reason = tokio::select! {
        r = writer => r,
        r = reader => r,
    };
    tracing::info!(link, %peer, %reason, "tcp connection ended");
    let _ = core.send(Input::Down { link, reason }).await;
}

fn put_frame(buf: &mut BytesMut, f: &[u8]) {
    buf.extend_from_slice(&(f.len() as u16).to_be_bytes());
    buf.extend_from_slice(f);
}

/// Accepts connections; the core numbers each as a new link.
pub async fn tcp_listener(l: TcpListener, core: mpsc::Sender<Input>) {
    loop {
        match l.accept().await {
            Ok((s, from)) => {
                tracing::info!(%from, "tcp connection accepted");
                if core
                    .send(Input::TcpAccepted {
                        stream: s,
                        mtu: 0,
                        trust: None,
                    })
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "tcp accept");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Keeps a connection to `addr` up as link `link`: connect, run, back off, repeat.
pub async fn tcp_connector(
    link: usize,
    addr: SocketAddr,
    mtu: usize,
    max_backoff: Duration,
    core: mpsc::Sender<Input>,
) {
    let min = Duration::from_millis(250);
    let mut backoff = min;
    loop {
        match TcpStream::connect(addr).await {
            Ok(s) => {
                backoff = min;
                tcp_connection(link, s, mtu, IDLE, core.clone()).await;
                if core.is_closed() {
                    return;
                }
            }
            Err(e) => {
                tracing::debug!(%addr, error = %e, "tcp connect");
                let _ = core
                    .send(Input::Down {
                        link,
                        reason: format!("connecting to {addr}: {e}"),
                    })
                    .await;
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(max_backoff.max(min));
    }
}

/// A TCP peer that stops this long in the middle of a frame is disconnected.
pub const IDLE: Duration = Duration::from_secs(30);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beacons_round_trip_and_reject_lookalikes() {
        let k = [7u8; 32];
        assert_eq!(parse_beacon(&beacon(&k)), Some(k));
        let mut b = beacon(&k);
        b[0] = b'X';
        assert_eq!(parse_beacon(&b), None);
        assert_eq!(parse_beacon(&beacon(&k)[..39]), None);
        assert_eq!(parse_beacon(b""), None);
    }
}
