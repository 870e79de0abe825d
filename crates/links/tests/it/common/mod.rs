//! Helpers shared by the driver tests.

use std::time::Duration;

use bytes::Bytes;
use skywave_links::{LinkEvent, LinkHandle, LinkParams, RadioStatus};

pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_test_writer()
        .try_init();
}

/// The next event that is not a radio or modem status, within `secs`.
pub async fn next_event(h: &mut LinkHandle, secs: f64) -> LinkEvent {
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(secs);
    loop {
        match tokio::time::timeout_at(deadline, h.events.recv()).await {
            Ok(Some(LinkEvent::Status(_) | LinkEvent::Modem(_) | LinkEvent::Heard { .. })) => {
                continue;
            }
            Ok(Some(ev)) => return ev,
            Ok(None) => panic!("{}: driver stopped", h.name),
            Err(_) => panic!("{}: no event within {secs} s", h.name),
        }
    }
}

pub async fn expect_up(h: &mut LinkHandle, secs: f64) -> LinkParams {
    match next_event(h, secs).await {
        LinkEvent::Up(p) => p,
        other => panic!("{}: expected Up, got {other:?}", h.name),
    }
}

pub async fn expect_down(h: &mut LinkHandle, secs: f64) -> String {
    loop {
        match next_event(h, secs).await {
            LinkEvent::Down { reason } => return reason,
            LinkEvent::Frame(_) => continue,
            other => panic!("{}: expected Down, got {other:?}", h.name),
        }
    }
}

/// Frames until one arrives, skipping `Up`s (a driver's rate updates).
pub async fn frame_from(h: &mut LinkHandle, secs: f64) -> Bytes {
    loop {
        match next_event(h, secs).await {
            LinkEvent::Frame(f) => return f,
            LinkEvent::Up(_) => continue,
            other => panic!("{}: expected a frame, got {other:?}", h.name),
        }
    }
}

/// Sends `frames` in order from a task, each once it fits (within `secs`); the task
/// hands the link back.
pub fn send_all(
    mut h: LinkHandle,
    frames: Vec<Bytes>,
    secs: f64,
) -> tokio::task::JoinHandle<LinkHandle> {
    tokio::spawn(async move {
        for f in frames {
            send(&mut h, f, secs).await;
        }
        h
    })
}

/// The next frame, skipping nothing else but statuses.
pub async fn expect_frame(h: &mut LinkHandle, secs: f64) -> Bytes {
    match next_event(h, secs).await {
        LinkEvent::Frame(f) => f,
        other => panic!("{}: expected a frame, got {other:?}", h.name),
    }
}

/// Sends `frame` once the link has room for it (as the daemon does).
pub async fn send(h: &mut LinkHandle, frame: Bytes, secs: f64) {
    let len = frame.len();
    let wait = h.room.wait_for(|&r| r >= len);
    tokio::time::timeout(Duration::from_secs_f64(secs), wait)
        .await
        .unwrap_or_else(|_| panic!("{}: no room for {len} bytes within {secs} s", h.name))
        .expect("driver stopped");
    h.send_frame(frame).await.expect("driver stopped");
}

/// Frame `i` of a test stream: its index and a length that varies, with bytes that
/// include zeros and the RFD900 escape character.
pub fn frame(i: u32, max: usize) -> Bytes {
    let len = 64 + (i as usize * 37) % (max - 63);
    let mut v: Vec<u8> = (0..len).map(|k| (k as u32 * 31 + i) as u8).collect();
    v[..4].copy_from_slice(&i.to_le_bytes());
    v[4] = b'!';
    v[5] = 0;
    Bytes::from(v)
}

pub fn status_seen(events: &[LinkEvent]) -> Option<RadioStatus> {
    events.iter().rev().find_map(|e| match e {
        LinkEvent::Status(s) => Some(*s),
        _ => None,
    })
}

/// A small deterministic generator for noise.
pub fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
