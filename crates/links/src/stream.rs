//! A byte-stream session on an open device: frames in both directions, paced writes.

use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::LinkEvent;
use crate::device::Device;
use crate::link::{Closed, Shared, StreamRx, StreamTx};

/// How often the pacer is looked at while its estimate is changing.
pub(crate) const TICK: Duration = skywave_node::adapter::MODEM_TICK;

/// What a session's hook makes of a received chunk.
#[derive(Debug, Default)]
pub(crate) struct Hook {
    /// Leading bytes that are not data.
    pub skip: usize,
    /// Where a message that ends the session starts, and the reason.
    pub stop: Option<(usize, String)>,
}

impl Hook {
    /// The data in a received chunk of `n` bytes: after the skipped bytes, before the
    /// message that ends the session.
    pub(crate) fn data(&self, n: usize) -> std::ops::Range<usize> {
        let end = self.stop.as_ref().map_or(n, |s| s.0.min(n));
        self.skip.min(end)..end
    }
}

/// What ends a session that the daemon did not end.
#[derive(Debug)]
pub(crate) enum Ended {
    /// The device failed or closed (reason for the Down event).
    Device(String),
    /// The received bytes said so (an HF modem's NO CARRIER).
    Hook(String),
}

/// Carries frames until the device fails, `on_rx` asks to stop, or the daemon drops the
/// handle (`Err(Closed)`). `on_rx` sees every received chunk before it is deframed.
pub(crate) async fn run(
    shared: &Shared,
    dev: &Device,
    frames: &mut mpsc::Receiver<Bytes>,
    tx: &mut StreamTx,
    rx: &mut StreamRx,
    mut on_rx: impl FnMut(&[u8]) -> Hook,
) -> Result<Ended, Closed> {
    let mut buf = vec![0u8; 4096];
    loop {
        let now = Instant::now();
        tx.pump(now);
        tx.account(&shared.counters);
        shared.set_room(tx.room());
        let busy = tx.busy();
        tokio::select! {
            r = dev.read(&mut buf) => match r {
                Ok(0) => return Ok(Ended::Device("end of file on the device".into())),
                Ok(n) => {
                    tx.modem.pacer.received(Instant::now());
                    let hook = on_rx(&buf[..n]);
                    // What came before the modem's message still belongs to the stream.
                    let data = &buf[hook.data(n)];
                    let (arrived, heard) = tx.incoming(rx.push(data, &shared.counters));
                    for f in arrived {
                        shared.emit(LinkEvent::Frame(f)).await?;
                    }
                    if let Some(ev) = heard {
                        shared.emit(ev).await?;
                    }
                    if let Some((_, reason)) = hook.stop {
                        return Ok(Ended::Hook(reason));
                    }
                }
                Err(e) => return Ok(Ended::Device(format!("read failed: {e}"))),
            },
            r = dev.write_some(&tx.out), if !tx.out.is_empty() => match r {
                Ok(n) => {
                    tx.out.drain(..n);
                }
                Err(e) => return Ok(Ended::Device(format!("write failed: {e}"))),
            },
            f = frames.recv(), if !tx.backlogged() => match f {
                Some(f) => {
                    let idle = f.is_empty();
                    tx.offer(&shared.name, f, &shared.counters);
                    tx.pump(Instant::now());
                    if idle {
                        // (Only a changed room is news: the daemon asks again on it.)
                        shared.set_room(tx.room());
                    } else {
                        shared.took_frame(tx.room());
                    }
                }
                None => return Err(Closed),
            },
            _ = tokio::time::sleep(TICK), if busy => {}
        }
    }
}

/// Waits `delay` while the link is down, still taking (and queueing) frames; `Err` when
/// the daemon drops the handle.
pub(crate) async fn wait_down(
    shared: &Shared,
    frames: &mut mpsc::Receiver<Bytes>,
    tx: &mut StreamTx,
    delay: Duration,
) -> Result<(), Closed> {
    let until = tokio::time::Instant::now() + delay;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(until) => return Ok(()),
            f = frames.recv(), if !tx.backlogged() => match f {
                Some(f) if f.is_empty() => {}
                Some(f) => {
                    tx.offer(&shared.name, f, &shared.counters);
                    shared.took_frame(0);
                }
                None => return Err(Closed),
            },
        }
        if shared.is_closed() {
            return Err(Closed);
        }
    }
}
