//! Bodies of the node's fuzz targets (`fuzz/fuzz_targets/{stream,handshake,netkey}.rs`),
//! replayed on stable by `tests/fuzz_corpus.rs`. Not part of the API: hidden, no
//! stability.
//!
//! The stream framing (COBS + CRC-16, [`crate::framing`]) and the transmit side of a
//! stream modem ([`crate::modem_tx`]) are what a `serial` or `hf-modem` link runs on the
//! bytes of its device, whoever wrote them.

#![doc(hidden)]

use std::time::Duration;

use skywave_proto::fuzzing::Input;

use crate::framing::{self, Deframer, OverEnd};
use crate::modem_tx::ModemTx;
use crate::pacer::{HalfDuplex, Pacer};

/// The first two bytes choose chunk sizes and the modem; the rest is read three ways:
///
/// 1. as a received byte stream: deframed whole and in chunks, the frames and counters
///    are the same; every frame's CRC holds and it re-encodes to bytes that deframe to
///    it; bytes skipped never exceed bytes received;
/// 2. as frames (a length byte, then the bytes): framed with noise ending in a delimiter
///    between them, every non-empty frame comes back, in order, whatever the chunking;
/// 3. as operations on a half-duplex modem's transmit side fed hostile received
///    frames: what it writes deframes to the frames offered, in order and intact, with
///    well-formed announcements between them; and once the call goes quiet, everything
///    offered is written.
pub fn stream(data: &[u8]) {
    let mut input = Input(data);
    let chunk = usize::from(input.u8() % 64) + 1;
    let modem = input.u8();
    let rest = input.0;
    deframe(rest, chunk);
    round_trip(rest, chunk);
    transmit(modem, rest);
}

fn deframe(bytes: &[u8], chunk: usize) {
    let mut whole = Deframer::new();
    let frames = whole.push(bytes);
    let mut parts = Deframer::new();
    let chunked: Vec<Vec<u8>> = bytes.chunks(chunk).flat_map(|c| parts.push(c)).collect();
    assert_eq!(frames, chunked, "chunking changed the frames");
    assert_eq!(
        (whole.skipped, whole.bad_frames),
        (parts.skipped, parts.bad_frames)
    );
    assert!(whole.skipped <= bytes.len() as u64);
    for f in &frames {
        assert!(!f.is_empty() && f.len() <= framing::MAX_FRAME + 64);
        let mut again = Vec::new();
        framing::encode(f, &mut again);
        assert_eq!(Deframer::new().push(&again), vec![f.clone()]);
        if let Some(m) = OverEnd::parse(f) {
            let mut out = Vec::new();
            m.encode(&mut out);
            assert_eq!(out, again, "an announcement re-encodes to other bytes");
        }
    }
}

fn round_trip(bytes: &[u8], chunk: usize) {
    let mut input = Input(bytes);
    let mut sent = Vec::new();
    let mut stream = Vec::new();
    while !input.is_empty() {
        let noise = input.bytes(usize::from(input.0[0] % 4));
        stream.extend_from_slice(noise);
        if !noise.is_empty() {
            stream.push(0);
        }
        let n = usize::from(input.u8());
        let f = input.bytes(n);
        framing::encode(f, &mut stream);
        if !f.is_empty() {
            sent.push(f.to_vec());
        }
    }
    let mut d = Deframer::new();
    let got: Vec<Vec<u8>> = stream.chunks(chunk).flat_map(|c| d.push(c)).collect();
    // Noise may itself be a valid frame (a checksum collision): the sent frames are a
    // subsequence of what came out.
    let mut it = got.iter();
    for f in &sent {
        assert!(it.any(|g| g == f), "frame {f:02x?} lost");
    }
}

fn transmit(modem: u8, bytes: &[u8]) {
    let mtu = 250;
    let h = HalfDuplex {
        latency: Duration::from_millis(500 + 500 * u64::from(modem & 7)),
        jitter: Duration::from_millis(100 * u64::from(modem >> 6)),
        turnaround: Duration::from_millis(200 + 200 * u64::from((modem >> 3) & 3)),
        buffer: 256 << (modem >> 6),
        chunk: 64,
        max_over: (modem & 0x20 != 0).then(|| Duration::from_secs(5)),
    };
    let mut now = Duration::ZERO;
    let mut tx = ModemTx::new(Pacer::half(now, 300.0, 508, h).with_seed(7), mtu);
    let mut offered: Vec<Vec<u8>> = Vec::new();
    let mut wire = Vec::new();
    let mut rx = Deframer::new();
    let mut input = Input(bytes);
    let mut serial = 0u32;
    while !input.is_empty() {
        match input.u8() % 8 {
            0 | 1 => {
                // Any frame up to the MTU: one larger than the modem takes at once goes
                // in parts.
                let n = usize::from(input.u8()) % mtu + 1;
                serial += 1;
                let mut f: Vec<u8> = (0..n).map(|i| (serial as usize * 31 + i) as u8).collect();
                // A protocol frame never starts like an announcement.
                f[0] = skywave_proto::wire::VERSION;
                // The driver takes a frame while the modem is not backlogged or has room
                // (it may go past the room; a few may join an over whose announcement
                // waits on the host).
                if !(tx.backlogged() && tx.frame_room() == 0) && tx.queued_frames() < 64 {
                    tx.offer(&f);
                    offered.push(f);
                }
            }
            2 => tx.idle(now),
            3 => now += Duration::from_millis(u64::from(input.u16()) * 4),
            4 => wire.extend(tx.take(now).unwrap_or_default()),
            5 => {
                // Bytes from the other side, as the driver hands them over.
                let n = usize::from(input.u8() % 32);
                tx.pacer.received(now);
                for f in rx.push(input.bytes(n)) {
                    let control = tx.control(now, &f);
                    assert_eq!(control, OverEnd::is_control(&f));
                }
            }
            6 => {
                // A well-formed announcement with any fields (no CRC to get past).
                let m = OverEnd {
                    after: input.u16(),
                    seq: input.u8().max(1),
                    heard: input.u8(),
                    rank: input.u16(),
                    idle: input.u8() & 1 == 1,
                };
                tx.pacer.received(now);
                let mut out = Vec::new();
                m.encode(&mut out);
                for f in Deframer::new().push(&out) {
                    assert!(tx.control(now, &f));
                }
            }
            _ => {
                // Frames the modem had not sent yet are lost with it; the tx keeps its
                // own queue. Whole frames written stay in `wire`; the start of one
                // written in part is lost (it goes again whole, after a delimiter).
                let cut = tx.partly_written();
                wire.truncate(wire.len() - cut);
                tx.reset(now);
            }
        }
        assert!(tx.frame_room() <= mtu + framing::overhead(mtu));
        check_written(&wire, &offered);
    }
    // The call goes quiet: the other side says nothing more. Within a few minutes every
    // frame offered is written.
    for _ in 0..2000 {
        if !tx.backlogged() {
            break;
        }
        tx.idle(now);
        wire.extend(tx.take(now).unwrap_or_default());
        now += Duration::from_millis(250);
    }
    let written = check_written(&wire, &offered);
    assert_eq!(
        written,
        offered.len(),
        "frames still held after the call went quiet"
    );
}

/// What the transmit side wrote: the offered frames in order and intact, and
/// well-formed announcements. Returns how many offered frames were written.
fn check_written(wire: &[u8], offered: &[Vec<u8>]) -> usize {
    let mut d = Deframer::new();
    let frames = d.push(wire);
    assert_eq!((d.skipped, d.bad_frames), (0, 0), "the writer framed badly");
    let mut n = 0;
    for f in frames {
        if OverEnd::is_control(&f) {
            let m = OverEnd::parse(&f).expect("our own announcement is well formed");
            assert_ne!(m.seq, 0);
            continue;
        }
        assert!(n < offered.len(), "a frame written that was never offered");
        assert_eq!(f, offered[n], "frame {n} written out of order or changed");
        n += 1;
    }
    n
}

/// The network-key frame tag ([`crate::netkey::FrameTag`]). The first byte chooses the
/// tag's length, the second the key, two 16-bit numbers a bit to flip and a cut; the
/// rest is a frame. Checked:
///
/// 1. the rest as a received frame: `verify` never panics, and accepts it exactly when
///    it is a non-empty body followed by that body's tag, returning the body;
/// 2. the rest tagged: it verifies and yields the rest (refused when the rest is empty:
///    a tag alone is no frame);
/// 3. a flipped bit (the chosen one, one in the body, one in the tag), a cut at the
///    front, another key (one bit apart) and another tag length: each refused; every
///    cut of the last 1 to tag length + 1 bytes and a chosen cut at the end: refused,
///    unless the cut removed the whole tag and left a tagged frame the input carried
///    (a frame of its own, seen in the seeds).
///
/// (A refused frame could verify by chance with probability 2^-(8 x tag length), at
/// least 2^-32 per check: no run meets it.)
pub fn netkey(data: &[u8]) {
    use crate::netkey::{FrameTag, MAX_TAG, MIN_TAG};
    let mut input = Input(data);
    let span = MAX_TAG - MIN_TAG + 1;
    let len = MIN_TAG + usize::from(input.u8()) % span;
    let key = [input.u8(); 32];
    let flip = usize::from(input.u16());
    let cut = usize::from(input.u16());
    let rest = input.0;
    let t = FrameTag::new(&key, len).expect("a length in range");

    // 1.
    let tagged = |body: &[u8]| {
        let mut f = body.to_vec();
        t.append(&mut f);
        f
    };
    match t.verify(rest) {
        Some(body) => {
            assert!(!body.is_empty(), "an empty body verified");
            assert_eq!(body, &rest[..rest.len() - len]);
            assert_eq!(tagged(body), rest, "verified, but not the body's tag");
        }
        None if rest.len() > len => {
            assert_ne!(
                tagged(&rest[..rest.len() - len]),
                rest,
                "a good tag refused"
            );
        }
        None => {}
    }

    // 2.
    let f = tagged(rest);
    assert_eq!(f.len(), rest.len() + len);
    if rest.is_empty() {
        assert_eq!(t.verify(&f), None, "a tag alone verified");
        return;
    }
    assert_eq!(t.verify(&f), Some(rest), "a tagged frame refused");

    // 3.
    let bits = [
        flip % (f.len() * 8),
        flip % (rest.len() * 8),
        rest.len() * 8 + flip % (len * 8),
    ];
    for bit in bits {
        let mut g = f.clone();
        g[bit / 8] ^= 1 << (bit % 8);
        assert_eq!(t.verify(&g), None, "bit {bit} flipped and still verified");
    }
    let n = f.len();
    for k in (1..=(len + 1).min(n)).chain([1 + cut % n]) {
        let c = &f[..n - k];
        if let Some(body) = t.verify(c) {
            // Cut past the tag, what is left may be a tagged frame the input carried:
            // a frame of its own, not this one cut short.
            assert!(k >= len, "cut by {k}, inside the tag, and verified");
            assert_eq!(tagged(body), c);
        }
    }
    let front = 1 + cut % n;
    assert_eq!(
        t.verify(&f[front..]),
        None,
        "cut by {front} at the front and verified"
    );
    let mut other = key;
    other[flip % 32] ^= 1 << (cut % 8);
    let wrong = FrameTag::new(&other, len).expect("a length in range");
    assert_eq!(wrong.verify(&f), None, "verified under another key");
    let len2 = MIN_TAG + (len - MIN_TAG + 1 + cut % (span - 1)) % span;
    assert_ne!(len2, len);
    let wrong = FrameTag::new(&key, len2).expect("a length in range");
    assert_eq!(
        wrong.verify(&f),
        None,
        "verified with a tag of {len2} bytes"
    );
}

/// Two honest channels (A and B) and a path an attacker controls: the input is a
/// script of frames sealed, datagrams delivered, dropped, reordered, replayed, altered
/// and forged, time passing and restarts. The first byte chooses the set-up: a network
/// key on both sides, whether A knows B's key (IK), or a stale key for it.
///
/// Checked throughout: every frame a channel opens is one the other side sealed (never
/// forged, altered or reflected), and a data datagram opens at most once. At the end,
/// on a clean path with time passing, both directions carry a fresh frame within a
/// bounded number of retries: nothing the attacker did can wedge the pair.
pub fn handshake(data: &[u8]) {
    let mut input = Input(data);
    let mut h = Handshake::new(input.u8());
    let mut steps = 0;
    while !input.is_empty() && steps < 2000 {
        steps += 1;
        h.op(&mut input);
    }
    h.converges();
}

struct HsSide {
    pol: crate::secure::Policy,
    ch: crate::secure::Channel,
    /// Frames sealed by this side, by content.
    sealed: std::collections::HashSet<Vec<u8>>,
    /// Data datagrams opened by this side (each may open once).
    opened: std::collections::HashSet<Vec<u8>>,
    seq: u32,
    /// Probe frames from the other side received since the last clean round began.
    probes: usize,
}

struct Handshake {
    s: [HsSide; 2],
    /// `q[i]`: datagrams on their way to side `i`.
    q: [std::collections::VecDeque<Vec<u8>>; 2],
    /// Datagrams delivered so far (for replays), with their destination.
    seen: Vec<(usize, Vec<u8>)>,
    now: Duration,
    keys: [[u8; 32]; 2],
}

impl Handshake {
    fn new(cfg: u8) -> Self {
        use crate::secure::{Channel, Policy};
        let key = |n: u8| skywave_bundle::SecretKey::from_bytes(&[n; 32]);
        let (ka, kb) = (key(0xa1), key(0xb2));
        let pol = |k: &skywave_bundle::SecretKey| {
            let p = Policy::new(k.x25519_secret(), k.x25519_public());
            if cfg & 1 != 0 {
                p.with_network_key([0x5a; 32])
            } else {
                p
            }
        };
        // A knows nothing of B, knows B's key, or holds a stale one (another node's).
        let a_knows = match (cfg >> 1) % 3 {
            0 => None,
            1 => Some(kb.x25519_public()),
            _ => Some(key(0xc3).x25519_public()),
        };
        let side = |p: Policy, known| HsSide {
            pol: p,
            ch: Channel::new(known),
            sealed: Default::default(),
            opened: Default::default(),
            seq: 0,
            probes: 0,
        };
        Handshake {
            s: [side(pol(&ka), a_knows), side(pol(&kb), None)],
            q: Default::default(),
            seen: Vec::new(),
            now: Duration::ZERO,
            keys: [ka.x25519_public(), kb.x25519_public()],
        }
    }

    fn seal(&mut self, i: usize, probe: bool) {
        let s = &mut self.s[i];
        s.seq += 1;
        let mut frame = vec![i as u8, u8::from(probe)];
        frame.extend_from_slice(&s.seq.to_le_bytes());
        let mut out = Vec::new();
        let r = s.ch.seal(&s.pol, self.now, &frame, &mut out);
        tracing::trace!(now = ?self.now, side = i, ?r, kind = out.first().copied().unwrap_or(0), "seal");
        s.sealed.insert(frame);
        if !out.is_empty() {
            self.q[1 - i].push_back(out);
        }
    }

    /// Delivers `d` to side `to` as the daemon would: frames to the endpoint, replies
    /// sent, and data no session opens answered with a handshake.
    fn deliver(&mut self, to: usize, d: &[u8]) {
        use crate::secure::Drop;
        let (mut f, mut r) = (Vec::new(), Vec::new());
        let s = &mut self.s[to];
        let res = s.ch.open(&s.pol, self.now, d, &mut f, &mut r);
        tracing::trace!(now = ?self.now, to, kind = d.first().copied().unwrap_or(0), len = d.len(), res = ?res.as_ref().map(|o| (o.frame, o.reply, o.established.is_some())), chan = ?s.ch, "deliver");
        match res {
            Ok(o) => {
                if let Some(k) = o.established {
                    assert_eq!(k, self.keys[1 - to], "a session with a key nobody used");
                }
                if o.frame {
                    if d.first() == Some(&crate::secure::kind::DATA) {
                        assert!(s.opened.insert(d.to_vec()), "a data datagram opened twice");
                    }
                    let mut frames = vec![f.clone()];
                    if s.ch.take_held(&mut f) {
                        frames.push(f);
                    }
                    for f in frames {
                        assert!(
                            self.s[1 - to].sealed.contains(&f),
                            "side {to} opened a frame the other side never sealed: {f:?}"
                        );
                        if f.get(1) == Some(&1) {
                            self.s[to].probes += 1;
                        }
                    }
                }
                if o.reply {
                    self.q[1 - to].push_back(r);
                }
            }
            Err(Drop::Decrypt) => {
                r.clear();
                if s.ch.kick(&s.pol, self.now, &mut r) {
                    self.q[1 - to].push_back(r);
                }
            }
            Err(_) => {}
        }
        if self.seen.len() < 256 {
            self.seen.push((to, d.to_vec()));
        }
    }

    fn op(&mut self, input: &mut Input<'_>) {
        let op = input.u8();
        let side = usize::from(op >> 7);
        match op % 11 {
            0 => self.seal(side, false),
            1 | 2 => {
                if let Some(d) = self.q[side].pop_front() {
                    self.deliver(side, &d);
                }
            }
            3 => {
                self.q[side].pop_front();
            }
            4 => {
                // Reordered: the head goes to the back.
                if let Some(d) = self.q[side].pop_front() {
                    self.q[side].push_back(d);
                }
            }
            5 => {
                // A replay of something seen, to its destination or reflected back.
                if !self.seen.is_empty() {
                    let (to, d) = self.seen[usize::from(input.u8()) % self.seen.len()].clone();
                    let to = if input.u8() & 1 == 0 { to } else { 1 - to };
                    self.deliver(to, &d);
                }
            }
            6 => {
                // Forged bytes, optionally under a real datagram kind.
                let n = usize::from(input.u8() % 160);
                let mut d = input.bytes(n).to_vec();
                if let Some(k) = d.first_mut() {
                    *k = 0x71 + (*k % 10);
                }
                self.deliver(side, &d);
            }
            7 => {
                // A queued datagram altered in flight.
                if let Some(mut d) = self.q[side].pop_front()
                    && !d.is_empty()
                {
                    let at = usize::from(input.u16()) % d.len();
                    d[at] ^= input.u8() | 1;
                    self.deliver(side, &d);
                }
            }
            8 => self.now += Duration::from_millis(50 * u64::from(input.u8())),
            9 => {
                // A restart: the session and any handshake are gone, the key known stays.
                tracing::trace!(side, "restart");
                let known = self.s[side].ch.remote();
                self.s[side].ch = crate::secure::Channel::new(known);
            }
            _ => {
                // A datagram duplicated on the path.
                if let Some(d) = self.q[side].front().cloned() {
                    self.q[side].push_back(d);
                }
            }
        }
    }

    /// A clean path from here on: each round both sides seal a probe and everything is
    /// delivered; within a few retry periods both must hear the other's probe.
    fn converges(&mut self) {
        // Retries back off to 30 s: rounds past that cover a handshake's every retry.
        for _ in 0..12 {
            self.now += Duration::from_secs(31);
            self.s[0].probes = 0;
            self.s[1].probes = 0;
            self.seal(0, true);
            self.seal(1, true);
            for _ in 0..64 {
                let Some((to, d)) = (0..2).find_map(|i| self.q[i].pop_front().map(|d| (i, d)))
                else {
                    break;
                };
                self.deliver(to, &d);
            }
            if self.s[0].probes > 0 && self.s[1].probes > 0 {
                return;
            }
        }
        panic!(
            "no frame crossed a clean path in 12 rounds: A {:?}, B {:?}",
            self.s[0].ch, self.s[1].ch
        );
    }
}
