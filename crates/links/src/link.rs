//! The plumbing every driver shares: the channels behind a [`LinkHandle`], reopen
//! backoff, and the stream transmit queue with its pacer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use skywave_node::framing;
use tokio::sync::{mpsc, watch};

use crate::{LinkCounters, LinkEvent, LinkHandle};
use skywave_node::modem_tx::ModemTx;
use skywave_node::pacer::Pacer;

/// Sleeps until `t`, or for ever when there is nothing to wait for (a `select!` arm that
/// fires only when a deadline is due).
pub(crate) async fn sleep_until(t: Option<impl Into<tokio::time::Instant>>) {
    match t {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}

/// Reads from a TCP stream; cancel-safe: nothing is read unless it returns (a `select!`
/// arm that loses drops nothing).
pub(crate) async fn tcp_read(s: &tokio::net::TcpStream, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        s.readable().await?;
        match s.try_read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

/// Writes some of `data` to a TCP stream; cancel-safe: nothing is written unless it
/// returns.
pub(crate) async fn tcp_write_some(
    s: &tokio::net::TcpStream,
    data: &[u8],
) -> std::io::Result<usize> {
    loop {
        s.writable().await?;
        match s.try_write(data) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

/// A task that writes, in order, what is sent on the returned channel to `w` until a
/// write fails (the scripted fakes' clients).
pub(crate) fn writer(mut w: tokio::net::tcp::OwnedWriteHalf) -> mpsc::UnboundedSender<Vec<u8>> {
    use tokio::io::AsyncWriteExt;
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        while let Some(b) = rx.recv().await {
            if w.write_all(&b).await.is_err() {
                break;
            }
        }
    });
    tx
}

/// The measured rate last told to the protocol, and when: a new one is told when it
/// differs from the last by a fifth, at most once a minute after the first.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RateTold(Option<(f64, Instant)>);

impl RateTold {
    /// The rate to tell now (bytes/s), if any.
    pub(crate) fn update(&mut self, measured: Option<f64>, now: Instant) -> Option<f64> {
        let r = measured?;
        if let Some((told, at)) = self.0
            && ((r - told).abs() < told * 0.2 || now < at + Duration::from_secs(60))
        {
            return None;
        }
        self.0 = Some((r, now));
        Some(r)
    }

    /// The rate last told (bytes/s).
    pub(crate) fn rate(&self) -> Option<f64> {
        self.0.map(|(r, _)| r)
    }
}

/// Frames queued inside a driver beyond what the device can take (the daemon should
/// never need them; they absorb a frame sent on a stale `room`).
const MAX_QUEUED_FRAMES: usize = 32;

/// Frames narrower than this are not offered: a runt's header would cost more than it
/// carries. The protocol is asked again when the room has grown.
pub(crate) const MIN_ROOM: usize = 64;

/// The driver's side of a [`LinkHandle`].
#[derive(Debug)]
pub(crate) struct Shared {
    pub name: String,
    events: mpsc::Sender<LinkEvent>,
    room: watch::Sender<usize>,
    pub counters: Arc<LinkCounters>,
    /// [`LinkHandle::turn`].
    turn: Arc<AtomicBool>,
}

/// Why a driver task stops.
#[derive(Debug)]
pub(crate) struct Closed;

impl Shared {
    /// The channels of a new link: the driver keeps `Shared` and the frame receiver.
    pub(crate) fn new(name: String) -> (Shared, LinkHandle, mpsc::Receiver<Bytes>) {
        let (ev_tx, ev_rx) = mpsc::channel(256);
        // Small: frames sent past the room wait here, and the sender waits with them.
        let (fr_tx, fr_rx) = mpsc::channel(4);
        let (room_tx, room_rx) = watch::channel(0);
        let counters = Arc::new(LinkCounters::default());
        let turn = Arc::new(AtomicBool::new(false));
        let handle = LinkHandle {
            name: name.clone(),
            events: ev_rx,
            frames: fr_tx,
            room: room_rx,
            counters: counters.clone(),
            turn: turn.clone(),
        };
        (
            Shared {
                name,
                events: ev_tx,
                room: room_tx,
                counters,
                turn,
            },
            handle,
            fr_rx,
        )
    }

    /// Sends an event; `Err` when the daemon dropped the handle.
    pub(crate) async fn emit(&self, ev: LinkEvent) -> Result<(), Closed> {
        self.events.send(ev).await.map_err(|_| Closed)
    }

    pub(crate) async fn down(&self, reason: String) -> Result<(), Closed> {
        tracing::warn!(link = %self.name, %reason, "link down");
        LinkCounters::add(&self.counters.downs, 1);
        self.set_room(0);
        self.emit(LinkEvent::Down { reason }).await
    }

    /// Publishes the room after taking a frame: always notifies, so a sender waiting
    /// in [`LinkHandle::send_frame`] sees the room that frame left.
    pub(crate) fn took_frame(&self, room: usize) {
        self.room.send_modify(|r| *r = room);
    }

    /// Publishes the room, if it changed.
    pub(crate) fn set_room(&self, room: usize) {
        self.room.send_if_modified(|r| {
            let changed = *r != room;
            *r = room;
            changed
        });
    }

    /// Whether the daemon holds the channel for the frames it hands now
    /// ([`LinkHandle::turn`]).
    pub(crate) fn turn_held(&self) -> bool {
        self.turn.load(Ordering::Acquire)
    }

    /// Whether the daemon still holds the handle's event receiver.
    pub(crate) fn is_closed(&self) -> bool {
        self.events.is_closed()
    }
}

/// Waits `delay` while a device that queues nothing on the host (a radio, a TNC) is
/// away: frames sent meanwhile are dropped and counted (the room said 0); `Err` when the
/// daemon drops the handle.
pub(crate) async fn wait_away(
    shared: &Shared,
    frames: &mut mpsc::Receiver<Bytes>,
    delay: Duration,
) -> Result<(), Closed> {
    wait_away_until(shared, frames, tokio::time::sleep(delay)).await
}

/// [`wait_away`] until `back` completes (the device is back); its output.
pub(crate) async fn wait_away_until<T>(
    shared: &Shared,
    frames: &mut mpsc::Receiver<Bytes>,
    back: impl std::future::Future<Output = T>,
) -> Result<T, Closed> {
    tokio::pin!(back);
    loop {
        tokio::select! {
            t = &mut back => return Ok(t),
            f = frames.recv() => match f {
                // (Nothing to send: not a frame.)
                Some(f) if f.is_empty() => {}
                Some(_) => {
                    LinkCounters::add(&shared.counters.dropped_frames, 1);
                    shared.took_frame(0);
                }
                None => return Err(Closed),
            },
        }
    }
}

/// A frame the daemon offers a modem driver that holds one frame at a time: `None`
/// (counted) when it is larger than the MTU; one sent past the room is counted and kept.
/// An empty frame (the daemon's "nothing more to send") is `None`.
pub(crate) fn accept_frame(
    name: &str,
    f: Bytes,
    mtu: usize,
    room: usize,
    counters: &LinkCounters,
) -> Option<Bytes> {
    if f.is_empty() {
        return None;
    }
    if f.len() > mtu {
        tracing::warn!(
            link = name,
            len = f.len(),
            mtu,
            "frame refused: larger than the link MTU"
        );
        LinkCounters::add(&counters.dropped_frames, 1);
        return None;
    }
    if f.len() > room {
        LinkCounters::add(&counters.over_room, 1);
    }
    Some(f)
}

/// A seed for a driver's own jitter, different on every station (the clock and the
/// process id if the system has no randomness to give).
pub(crate) fn random_seed() -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id())
    })
}

/// Doubling delays between attempts, reset after a success.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub(crate) fn new(min: Duration, max: Duration) -> Backoff {
        Backoff {
            min,
            max: max.max(min),
            next: min,
        }
    }

    pub(crate) fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        d
    }

    pub(crate) fn reset(&mut self) {
        self.next = self.min;
    }
}

/// Outgoing frames of a byte-stream link: framed (COBS + CRC-16), paced, and written
/// only as fast as the device drains; on a half-duplex modem, the ends of overs are
/// announced ([`ModemTx`], the same code the lab's modem ports run).
#[derive(Debug)]
pub(crate) struct StreamTx {
    pub modem: ModemTx<Instant>,
    mtu: usize,
    /// Framed bytes handed to the device but not yet taken by it.
    pub out: Vec<u8>,
}

impl StreamTx {
    /// A stream link whose driver announces the ends of its overs on a half-duplex
    /// modem (see [`ModemTx`]).
    pub(crate) fn new(pacer: Pacer<Instant>, mtu: usize) -> StreamTx {
        // Each side of a link draws its own announcement ranks.
        let seed = random_seed();
        StreamTx {
            modem: ModemTx::new(pacer.with_seed(seed), mtu),
            mtu,
            out: Vec::new(),
        }
    }

    /// Takes a frame from the daemon; an empty one says the daemon has nothing more to
    /// send now ([`crate::IDLE`]).
    pub(crate) fn offer(&mut self, name: &str, frame: Bytes, counters: &LinkCounters) {
        if frame.is_empty() {
            self.modem.idle(Instant::now());
            return;
        }
        if frame.len() > self.mtu.min(framing::MAX_FRAME) {
            tracing::warn!(
                link = name,
                len = frame.len(),
                mtu = self.mtu,
                "frame refused: larger than the link MTU"
            );
            LinkCounters::add(&counters.dropped_frames, 1);
            return;
        }
        if frame.len() > self.room() {
            LinkCounters::add(&counters.over_room, 1);
        }
        if self.modem.queued_frames() >= MAX_QUEUED_FRAMES {
            tracing::warn!(
                link = name,
                "frame dropped: the driver queue is full (frames sent past the room)"
            );
            LinkCounters::add(&counters.dropped_frames, 1);
            return;
        }
        self.modem.offer(&frame);
        LinkCounters::add(&counters.frames_out, 1);
        LinkCounters::add(&counters.bytes_out, frame.len() as u64);
    }

    /// Brings the link's counters of over-end announcements up to date (one `StreamTx`
    /// serves a driver for its whole life, as its counters do).
    pub(crate) fn account(&self, counters: &LinkCounters) {
        LinkCounters::set(&counters.over_ends_sent, self.modem.announced);
        LinkCounters::set(&counters.over_ends_heard, self.modem.heard);
        LinkCounters::set(
            &counters.over_ends_unannounced,
            self.modem.pacer.unannounced_ends,
        );
    }

    /// Writes what the device has room for.
    pub(crate) fn pump(&mut self, now: Instant) {
        if let Some(b) = self.modem.take(now) {
            self.out.extend_from_slice(&b);
        }
    }

    /// Frame bytes the link takes now (0 while frames wait, or below a runt's worth).
    pub(crate) fn room(&self) -> usize {
        self.modem.frame_room()
    }

    /// The device lost what it held: forget the estimate and unsent bytes (queued frames
    /// go out when the link is back).
    pub(crate) fn reset(&mut self, now: Instant) {
        self.modem.reset(now);
        self.out.clear();
    }

    /// Whether frames wait for the device (the driver takes no more until they are out).
    pub(crate) fn backlogged(&self) -> bool {
        self.modem.backlogged() && self.room() == 0
    }

    /// Whether time alone will change the room or the queue.
    pub(crate) fn busy(&self) -> bool {
        self.modem.busy()
    }

    /// Received frames for the daemon, and what the peer's driver said of its own
    /// (over-end announcements, taken here), as an event for the daemon.
    pub(crate) fn incoming(&mut self, frames: Vec<Bytes>) -> (Vec<Bytes>, Option<LinkEvent>) {
        let now = Instant::now();
        let mut heard = false;
        let frames = frames
            .into_iter()
            .filter(|f| {
                let control = self.modem.control(now, f);
                heard |= control;
                !control
            })
            .collect();
        let answered = self.modem.pacer.take_answered();
        (frames, heard.then_some(LinkEvent::Heard { answered }))
    }
}

/// Incoming bytes of a byte-stream link: reassembled, checked frames.
#[derive(Debug, Default)]
pub(crate) struct StreamRx {
    deframer: framing::Deframer,
    skipped: u64,
    bad: u64,
}

impl StreamRx {
    /// Adds received bytes; returns the whole, checked frames and updates the counters.
    pub(crate) fn push(&mut self, data: &[u8], counters: &LinkCounters) -> Vec<Bytes> {
        let frames = self.deframer.push(data);
        self.account(counters);
        for f in &frames {
            LinkCounters::add(&counters.frames_in, 1);
            LinkCounters::add(&counters.bytes_in, f.len() as u64);
        }
        frames.into_iter().map(Bytes::from).collect()
    }

    /// Forgets a partial frame (the stream broke).
    pub(crate) fn reset(&mut self, counters: &LinkCounters) {
        self.deframer.reset();
        self.account(counters);
    }

    fn account(&mut self, counters: &LinkCounters) {
        let d = &self.deframer;
        LinkCounters::add(&counters.garbage_bytes, d.skipped - self.skipped);
        LinkCounters::add(&counters.dropped_frames, d.bad_frames - self.bad);
        self.skipped = d.skipped;
        self.bad = d.bad_frames;
    }
}
