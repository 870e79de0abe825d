//! Benchmark: one 1 MiB bundle to 1000 peers, encoded once (issue 4's fan-out target:
//! at least 2.5 GiB/s of frames produced, memory at most payload + 1 KiB per peer).
//!
//! `cargo run --release -p skywave-proto --example fanout [PEERS] [MIB]`
//!
//! Every peer gets every piece in its own frame (its own tags and packet numbers). Two
//! figures: frames produced as vectored parts (a per-peer header and two shared
//! `Bytes` handles, what a driver hands to `sendmsg`), and the same frames also copied
//! into one contiguous buffer each (for a link that needs one). Memory is counted by a
//! counting allocator: the peak of bytes allocated from just before the payload exists
//! to the end. A sample of frames is parsed back and the payload reassembled.

// The counting allocator is the only unsafe code: a `GlobalAlloc` forwarding to the
// system allocator. It exists to measure memory, in this example only.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bytes::Bytes;
use skywave_bundle::BundleId;
use skywave_proto::fanout::EncodedBundle;
use skywave_proto::wire::{self, Header, Message};

#[derive(Debug)]
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded to the system allocator with the caller's layout.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        CURRENT.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: `p` came from `alloc` above with this layout.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// What a session keeps per peer for this transfer: its tag, next packet number and
/// next piece.
#[derive(Debug)]
struct PeerCursor {
    tag: u32,
    pn: u64,
    next: usize,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let peers: usize = args.next().map_or(1000, |a| a.parse().expect("PEERS"));
    let mib: usize = args.next().map_or(1, |a| a.parse().expect("MIB"));
    let len = mib << 20;
    let mtu = 1472;
    let id = BundleId([0x5a; 32]);

    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let payload = Bytes::from(
        (0..len)
            .map(|i| (i * 31 + i / 4093) as u8)
            .collect::<Vec<u8>>(),
    );

    let t = Instant::now();
    let enc = EncodedBundle::new(&id, 1, payload.clone(), mtu).expect("mtu has room");
    let encode_s = t.elapsed().as_secs_f64();
    let mut cursors: Vec<PeerCursor> = (0..peers)
        .map(|i| PeerCursor {
            tag: 0x1000 + i as u32,
            pn: 17,
            next: 0,
        })
        .collect();

    // 1. Vectored frames: per-peer header, shared head and payload slice. Peers take
    // turns, a frame each, as a driver serving many sessions would.
    let t = Instant::now();
    let (mut frames, mut bytes, mut check) = (0u64, 0u64, 0u64);
    for _ in 0..enc.len() {
        for c in cursors.iter_mut() {
            let f = enc
                .frame(
                    c.next,
                    Header {
                        addr: Some((7, c.tag)),
                        pn: c.pn,
                        short_tags: false,
                    },
                )
                .expect("piece index in range");
            c.pn += 1;
            c.next += 1;
            frames += 1;
            bytes += f.len() as u64;
            // Touch the parts as a writev would (their addresses and lengths).
            for p in f.parts() {
                check = check.wrapping_add(p.as_ptr() as u64 ^ p.len() as u64);
            }
        }
    }
    let vec_s = t.elapsed().as_secs_f64();
    let peak_vectored = PEAK.load(Ordering::Relaxed) - base;

    // 2. The same frames copied into one buffer each (reused, as a driver's send
    // buffer would be).
    for c in cursors.iter_mut() {
        c.next = 0;
    }
    let mut buf = Vec::with_capacity(mtu);
    let t = Instant::now();
    let mut copied = 0u64;
    for _ in 0..enc.len() {
        for c in cursors.iter_mut() {
            let f = enc
                .frame(
                    c.next,
                    Header {
                        addr: Some((7, c.tag)),
                        pn: c.pn,
                        short_tags: false,
                    },
                )
                .expect("piece index in range");
            c.pn += 1;
            c.next += 1;
            f.copy_to(&mut buf);
            copied += buf.len() as u64;
            check = check.wrapping_add(u64::from(buf[buf.len() - 1]));
        }
    }
    let copy_s = t.elapsed().as_secs_f64();
    let peak = PEAK.load(Ordering::Relaxed) - base;

    // 3. Check: the last peer's frames parse and reassemble the payload.
    let mut got = vec![0u8; len];
    for i in 0..enc.len() {
        let f = enc
            .frame(
                i,
                Header {
                    addr: Some((7, 99)),
                    pn: i as u64,
                    short_tags: false,
                },
            )
            .expect("in range")
            .to_vec();
        let (_, msgs) = wire::parse(&f).expect("frame parses");
        let Some(Message::Piece { offset, data, .. }) = msgs.first() else {
            panic!("not a piece");
        };
        got[*offset as usize..*offset as usize + data.len()].copy_from_slice(data);
    }
    assert!(got == payload[..], "payload reassembles");
    drop(got);

    let gib = (1u64 << 30) as f64;
    let budget = len + 1024 * peers;
    println!(
        "fan-out of {mib} MiB to {peers} peers, MTU {mtu}: {} pieces, encoded once in {:.2} ms ({} B of heads and index)",
        enc.len(),
        encode_s * 1e3,
        enc.overhead_bytes()
    );
    println!(
        "  vectored frames: {frames} frames, {bytes} B in {:.3} s = {:.2} GiB/s",
        vec_s,
        bytes as f64 / vec_s / gib
    );
    println!(
        "  copied frames:   {frames} frames, {copied} B in {:.3} s = {:.2} GiB/s",
        copy_s,
        copied as f64 / copy_s / gib
    );
    println!(
        "  memory peak: {peak_vectored} B while producing vectored frames, {peak} B with the copy buffer; budget payload + 1 KiB/peer = {budget} B ({:.1} B per peer beyond the payload)",
        (peak as f64 - len as f64) / peers as f64
    );
    println!(
        "  target >= 2.5 GiB/s: vectored {}, copied {}; memory {}  (check {check:x})",
        ok(bytes as f64 / vec_s / gib >= 2.5),
        ok(copied as f64 / copy_s / gib >= 2.5),
        ok(peak <= budget)
    );
    drop(enc);
    drop(payload);
    through_the_endpoint(peers, len, mtu);
}

/// Part 4, the same through the protocol endpoint: sessions with `peers` receivers, the
/// bundle stored once, and `Endpoint::poll_transmit_parts` polled on every link in
/// turn, 16 frames at a time, until every peer has been sent the whole payload once
/// (receivers do not answer). Frames are head + a shared tail; the driver copy is one `write_to` into a
/// reused buffer.
fn through_the_endpoint(peers: usize, len: usize, mtu: usize) {
    const BURST: usize = 16;
    let t = Instant::now();
    let mut f = skywave_proto::fuzzing::FanOut::new(peers, mtu);
    let setup_s = t.elapsed().as_secs_f64();
    let before = CURRENT.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    f.offer(1, len);
    let offered = CURRENT.load(Ordering::Relaxed);
    let t = Instant::now();
    let (mut frames, mut bytes, mut shared) = (0u64, 0u64, 0u64);
    let mut buf = Vec::with_capacity(mtu);
    let mut live = vec![true; peers];
    while live.iter().any(|&l| l) {
        for (i, l) in live.iter_mut().enumerate().filter(|(_, l)| **l) {
            // A burst per link, as the daemon builds a segmented UDP batch.
            for _ in 0..BURST {
                match f.sender.poll_transmit_parts(f.now, i, mtu, &mut f.store) {
                    Some(tx) => {
                        frames += 1;
                        bytes += tx.len() as u64;
                        shared += tx.tail.len() as u64;
                        buf.clear();
                        tx.write_to(&mut buf);
                    }
                    None => {
                        *l = false;
                        break;
                    }
                }
            }
        }
    }
    let s = t.elapsed().as_secs_f64();
    let peak = PEAK.load(Ordering::Relaxed) - before;
    let after = CURRENT.load(Ordering::Relaxed);
    let gib = (1u64 << 30) as f64;
    println!(
        "through the endpoint ({peers} sessions set up in {setup_s:.2} s, {BURST} frames per link in turn): {frames} frames, {bytes} B in {s:.3} s = {:.2} GiB/s; {:.1}% of bytes as shared payload tails",
        bytes as f64 / s / gib,
        100.0 * shared as f64 / bytes as f64
    );
    // The bench's store holds the payload twice (a Vec for plain reads, and the shared
    // buffer frames point into); a real store's cache holds it once.
    let per_peer = |b: usize| (b as f64 - 2.0 * len as f64) / peers as f64;
    println!(
        "  memory from the offer on: {} B after the offer ({:.0} B per peer beyond the payload copies), peak {} B while producing ({:.0} B per peer), {} B held after; budget payload + 1 KiB per peer: {}",
        offered - before,
        per_peer(offered - before),
        peak,
        per_peer(peak),
        after - before,
        ok(per_peer(peak) <= 1024.0)
    );
    println!(
        "  target >= 2.5 GiB/s through the endpoint: {}",
        ok(bytes as f64 / s / gib >= 2.5)
    );
}

fn ok(b: bool) -> &'static str {
    if b { "met" } else { "MISSED" }
}
