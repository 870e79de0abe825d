//! Authenticated, encrypted IP links: a Noise handshake keyed by node identity, then
//! every frame sealed with an AEAD under an explicit counter with a replay window (as
//! WireGuard does over UDP). Sans-IO: the caller passes datagrams in and out,
//! and the time; the only randomness is the handshake's ephemeral keys, drawn by `snow`.
//!
//! Why Noise (`snow`) and not TLS: the node's identity is already an Ed25519 key, which
//! maps to an X25519 key (`SecretKey::x25519_secret`), so Noise needs no certificates, and
//! its handshake is 144 B (IK) or 192 B (XX) where TLS 1.3 with raw public keys is ~1 KB.
//!
//! Set-up folds into the protocol's own: a known peer key (remembered from an earlier
//! session on the address, also across restarts, or heard in a beacon) makes the handshake
//! IK, one message each way, and the initiator's first frame (its HELLO) rides inside its
//! first message, so the peers' HELLOs cross in the same round trip as without
//! encryption. With no key known the handshake is XX, once per address: the initiator's
//! HELLO rides its last message, and the responder's waits for it, a round trip more.
//!
//! The AEAD is the initiator's choice ([`Cipher`]): AES-256-GCM where its CPU has AES
//! instructions (2-3x cheaper than ChaCha20-Poly1305 there, which matters at Gbit/s),
//! ChaCha20-Poly1305 elsewhere (fast in software, so a Raspberry Pi without AES
//! instructions is not slowed). The first message's kind names the cipher, and a
//! responder takes either, so two nodes always agree in the same round trip. A peer that
//! does not answer the preferred cipher (a build that predates AES-GCM) is tried with the
//! other from the fourth attempt on, every other attempt.
//!
//! Datagram kinds (first byte; plaintext frames start with the wire version 0x52 and
//! beacons with `S`): see `kind`. A data datagram is `kind::DATA`, an 8-byte big-endian
//! counter (the AEAD nonce), then the sealed frame and its 16-byte tag.

use std::collections::HashSet;
use std::time::Duration;

use snow::{HandshakeState, StatelessTransportState};

/// First byte of each datagram kind on an encrypted link.
pub mod kind {
    /// IK, first message: initiator's ephemeral and static keys, then its first frame;
    /// ChaCha20-Poly1305 (`IK1_AES`: the same with AES-256-GCM).
    pub const IK1: u8 = 0x71;
    /// IK, answer: responder's ephemeral key (no payload).
    pub const IK2: u8 = 0x72;
    /// XX, first message: initiator's ephemeral key; ChaCha20-Poly1305 (`XX1_AES`: the
    /// same with AES-256-GCM).
    pub const XX1: u8 = 0x73;
    /// XX, answer: responder's ephemeral and static keys.
    pub const XX2: u8 = 0x74;
    /// XX, last message: initiator's static key, then its first frame.
    pub const XX3: u8 = 0x75;
    pub const IK1_AES: u8 = 0x76;
    pub const XX1_AES: u8 = 0x77;
    /// A sealed frame.
    pub const DATA: u8 = 0x7a;

    /// The kind of a datagram that starts a handshake.
    pub fn is_first(k: u8) -> bool {
        matches!(k, IK1 | XX1 | IK1_AES | XX1_AES)
    }
}

/// The AEAD that seals a session's frames (chosen by its initiator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cipher {
    ChaChaPoly,
    AesGcm,
}

impl Cipher {
    /// AES-256-GCM where this CPU has AES and carry-less multiply instructions (as TLS
    /// stacks choose), else ChaCha20-Poly1305.
    pub fn for_this_cpu() -> Self {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("aes")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
        {
            return Self::AesGcm;
        }
        #[cfg(target_arch = "aarch64")]
        if std::arch::is_aarch64_feature_detected!("aes")
            && std::arch::is_aarch64_feature_detected!("pmull")
        {
            return Self::AesGcm;
        }
        Self::ChaChaPoly
    }

    fn other(self) -> Self {
        match self {
            Self::ChaChaPoly => Self::AesGcm,
            Self::AesGcm => Self::ChaChaPoly,
        }
    }

    fn noise(self) -> &'static str {
        match self {
            Self::ChaChaPoly => "ChaChaPoly",
            Self::AesGcm => "AESGCM",
        }
    }

    /// The first message's kind for this cipher.
    fn first(self, ik: bool) -> u8 {
        match (self, ik) {
            (Self::ChaChaPoly, true) => kind::IK1,
            (Self::ChaChaPoly, false) => kind::XX1,
            (Self::AesGcm, true) => kind::IK1_AES,
            (Self::AesGcm, false) => kind::XX1_AES,
        }
    }

    /// The cipher and pattern a first message's kind names.
    fn of_first(k: u8) -> Option<(Self, bool)> {
        match k {
            kind::IK1 => Some((Self::ChaChaPoly, true)),
            kind::XX1 => Some((Self::ChaChaPoly, false)),
            kind::IK1_AES => Some((Self::AesGcm, true)),
            kind::XX1_AES => Some((Self::AesGcm, false)),
            _ => None,
        }
    }
}

/// Bytes a data datagram adds to a frame: kind, counter, tag.
pub const DATA_OVERHEAD: usize = 1 + 8 + TAG;
/// Bytes a handshake message adds to the frame it carries, at most (IK1).
pub const HANDSHAKE_OVERHEAD: usize = 1 + 32 + 32 + TAG + TAG;
const TAG: usize = 16;
/// Largest datagram handled (a frame is at most 64 KiB on TCP).
const MAX_MSG: usize = 65535;

/// Bound on the bytes sent to an address not yet proven to be there, in units of the
/// bytes received from it (QUIC's anti-amplification factor).
pub const AMPLIFICATION: u64 = 3;

const PROLOGUE: &[u8] = b"skywave/1";
/// IK's answer payload when the responder holds the first frame until the initiator uses
/// the new session (it had one with the peer: a replay must not replace it).
const IK2_HELD: u8 = 1;
const FIRST_RETRY: Duration = Duration::from_secs(1);
const MAX_RETRY: Duration = Duration::from_secs(30);
/// IK attempts with a key that may be stale (a beacon's, an old session's) before XX.
const IK_TRIES: u32 = 2;
/// Data datagrams no session opens, with none opening for `STUCK_QUIET`, before a
/// confirmed session is taken to be one the peer no longer uses (see `Channel::kick`).
const STUCK_AFTER: u32 = 3;
const STUCK_QUIET: Duration = Duration::from_secs(5);
/// Counters accepted behind the highest seen (reordering on the path).
const WINDOW: u64 = 2048;

/// Who this node is and whom it lets in, shared by every channel of a link.
#[derive(Clone)]
pub struct Policy {
    secret: [u8; 32],
    public: [u8; 32],
    /// A network key every member holds, so a node without it completes no handshake:
    /// the Noise prologue of every handshake, and IK's `psk` too (see `builder`).
    psk: Option<[u8; 32]>,
    /// `PROLOGUE`, then the network key if there is one.
    prologue: Vec<u8>,
    /// X25519 keys allowed to connect; `None` lets any key in.
    allow: Option<HashSet<[u8; 32]>>,
    /// The cipher this node starts sessions with.
    cipher: Cipher,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("public", &hex8(&self.public))
            .field("network_key", &self.psk.is_some())
            .field("allowed", &self.allow.as_ref().map(HashSet::len))
            .field("cipher", &self.cipher)
            .finish()
    }
}

impl Policy {
    /// `secret` and `public`: the node's X25519 key pair (from its identity key).
    pub fn new(secret: [u8; 32], public: [u8; 32]) -> Self {
        Self {
            secret,
            public,
            psk: None,
            prologue: PROLOGUE.to_vec(),
            allow: None,
            cipher: Cipher::for_this_cpu(),
        }
    }

    /// Start sessions with `c` rather than the CPU's choice.
    pub fn with_cipher(mut self, c: Cipher) -> Self {
        self.cipher = c;
        self
    }

    pub fn with_network_key(mut self, key: [u8; 32]) -> Self {
        self.psk = Some(key);
        self.prologue = [PROLOGUE, &key[..]].concat();
        self
    }

    /// Only these X25519 keys may complete a handshake.
    pub fn with_allowed(mut self, keys: HashSet<[u8; 32]>) -> Self {
        self.allow = Some(keys);
        self
    }

    pub fn set_allowed(&mut self, keys: Option<HashSet<[u8; 32]>>) {
        self.allow = keys;
    }

    pub fn allows(&self, remote: &[u8; 32]) -> bool {
        self.allow.as_ref().is_none_or(|a| a.contains(remote))
    }

    pub fn public(&self) -> &[u8; 32] {
        &self.public
    }

    fn pattern(&self, ik: bool, c: Cipher) -> snow::params::NoiseParams {
        let hs = match (ik, self.psk.is_some()) {
            (true, false) => "IK",
            (true, true) => "IKpsk1",
            (false, _) => "XX",
        };
        format!("Noise_{hs}_25519_{}_BLAKE2s", c.noise())
            .parse()
            .expect("a valid Noise pattern name")
    }

    /// The network key is checked by the first AEAD tag that covers the handshake hash,
    /// which holds the prologue: IK's first message, XX's second (so an initiator sends
    /// its static key to no non-member) and third. A prologue authenticates, it
    /// does not key (Noise section 6), so where a `psk` is free, IK's first message
    /// already carries a tag, the key is mixed into the session keys as well. XX's is
    /// not: any `psk` modifier puts a 16-byte tag on XX's first message (its `e` then
    /// keys the cipher), which would take the handshake past 200 B.
    fn builder(&self, ik: bool, c: Cipher) -> snow::Builder<'_> {
        let b = snow::Builder::new(self.pattern(ik, c))
            .prologue(&self.prologue)
            .and_then(|b| b.local_private_key(&self.secret))
            .expect("fresh builder takes a prologue and key");
        match (&self.psk, ik) {
            (Some(k), true) => b.psk(1, k).expect("psk slot in range"),
            _ => b,
        }
    }
}

/// Why a datagram was dropped (each a counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Drop {
    /// Too short or of an unknown kind.
    Malformed,
    /// A handshake message that did not verify (wrong key, wrong network key, a stale
    /// attempt, tampering).
    Handshake,
    /// A data datagram that did not verify, or came with no session to open it.
    Decrypt,
    /// A counter seen before or too far behind.
    Replay,
    /// The peer's key is not on the trust list.
    Untrusted,
    /// A plaintext frame on a link that requires encryption.
    Plaintext,
    /// A handshake message that lost the tie-break of two crossing handshakes, or came
    /// in the wrong state.
    Unexpected,
}

impl Drop {
    pub fn name(self) -> &'static str {
        match self {
            Drop::Malformed => "secure_malformed",
            Drop::Handshake => "secure_handshake_failed",
            Drop::Decrypt => "secure_decrypt_failed",
            Drop::Replay => "secure_replay",
            Drop::Untrusted => "untrusted_peer",
            Drop::Plaintext => "plaintext_refused",
            Drop::Unexpected => "secure_unexpected",
        }
    }
}

/// What [`Channel::open`] produced besides a frame.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// A frame for the endpoint was written to `frame`.
    pub frame: bool,
    /// A datagram to send back was written to `reply`.
    pub reply: bool,
    /// A session with this X25519 key became usable.
    pub established: Option<[u8; 32]>,
}

/// What [`Channel::seal`] did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sealed {
    /// Sent as data.
    Data,
    /// Sent inside a handshake message that starts a session.
    Handshake,
    /// Not sent: a handshake is under way (the latest frame rides its last message).
    Held,
    /// Not sent: the address has not shown it is there, and sending would pass
    /// [`AMPLIFICATION`] times what it sent us.
    Limited,
}

struct Session {
    t: StatelessTransportState,
    remote: [u8; 32],
    next: u64,
    replay: Replay,
    /// The peer has shown it holds these keys (a datagram under them came in).
    confirmed: bool,
}

impl Session {
    fn new(t: StatelessTransportState, confirmed: bool) -> Option<Self> {
        let remote = t.get_remote_static()?.try_into().ok()?;
        Some(Self {
            t,
            remote,
            next: 0,
            replay: Replay::default(),
            confirmed,
        })
    }

    fn seal(&mut self, frame: &[u8], out: &mut Vec<u8>) {
        let n = self.next;
        self.next += 1;
        let at = out.len();
        out.push(kind::DATA);
        out.extend_from_slice(&n.to_be_bytes());
        let body = out.len();
        out.resize(body + frame.len() + TAG, 0);
        match self.t.write_message(n, frame, &mut out[body..]) {
            Ok(w) => out.truncate(body + w),
            // Only a frame past Noise's 64 KiB limit fails, and none is built that large.
            Err(_) => out.truncate(at),
        }
    }

    fn open(&mut self, d: &[u8], frame: &mut Vec<u8>) -> Result<(), Drop> {
        let n = u64::from_be_bytes(d[1..9].try_into().expect("checked length"));
        if !self.replay.fresh(n) {
            return Err(Drop::Replay);
        }
        // Not cleared first: the caller keeps one buffer, so only growth is zeroed (the
        // datagram is copied over it before it is opened).
        frame.resize(d.len() - 9, 0);
        let w = self
            .t
            .read_message(n, &d[9..], frame)
            .map_err(|_| Drop::Decrypt)?;
        frame.truncate(w);
        self.replay.mark(n);
        self.confirmed = true;
        Ok(())
    }
}

enum Hs {
    None,
    /// We started a handshake; `e` is our ephemeral key (the tie-break of two
    /// handshakes that cross).
    Initiating {
        hs: Box<HandshakeState>,
        ik: bool,
        e: [u8; 32],
    },
    /// XX: we answered and wait for the initiator's last message.
    Answered {
        hs: Box<HandshakeState>,
    },
}

/// One encrypted conversation with one address (a UDP peer or a TCP connection).
pub struct Channel {
    hs: Hs,
    cur: Option<Session>,
    /// A session a new handshake made while `cur` exists: it replaces `cur` when
    /// the peer first uses it (so a replayed first message cannot break a session), and
    /// the frame that came with it is handed over then.
    next: Option<(Session, Vec<u8>)>,
    /// The session `cur` replaced: still opened, so that datagrams the peer sealed
    /// before it switched are not lost.
    prev: Option<Session>,
    /// Data datagrams no session opened since one last did, and when one last did: a
    /// peer whose data none of our sessions opens for a while holds one we do not.
    undecryptable: u32,
    last_open: Duration,
    /// The peer's X25519 key, when known (IK is used then).
    known: Option<[u8; 32]>,
    ik_failures: u32,
    /// Handshakes started since one last completed (picks the cipher, see `start`).
    attempts: u32,
    retry: Duration,
    retry_at: Duration,
    /// The frame to carry in XX's last message.
    pending: Vec<u8>,
    /// A received frame for the endpoint, after the one [`Self::open`] returned.
    held_in: Vec<u8>,
    /// Bytes in and out before the address was proven (anti-amplification).
    unproven_in: u64,
    unproven_out: u64,
    proven: bool,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hs = match &self.hs {
            Hs::None => "none",
            Hs::Initiating { ik: true, .. } => "initiating IK",
            Hs::Initiating { ik: false, .. } => "initiating XX",
            Hs::Answered { .. } => "answered XX",
        };
        f.debug_struct("Channel")
            .field("state", &self.state())
            .field("remote", &self.remote().map(|k| hex8(&k)))
            .field("confirmed", &self.cur.as_ref().map(|c| c.confirmed))
            .field("next", &self.next.is_some())
            .field("handshake", &hs)
            .field("retry_at", &self.retry_at)
            .finish()
    }
}

impl Channel {
    /// A channel to a peer whose X25519 key may be known (see the module docs).
    pub fn new(known: Option<[u8; 32]>) -> Self {
        Self {
            hs: Hs::None,
            cur: None,
            next: None,
            prev: None,
            undecryptable: 0,
            last_open: Duration::ZERO,
            known,
            ik_failures: 0,
            attempts: 0,
            retry: FIRST_RETRY,
            retry_at: Duration::ZERO,
            pending: Vec::new(),
            held_in: Vec::new(),
            unproven_in: 0,
            unproven_out: 0,
            proven: false,
        }
    }

    /// A key heard for the peer (a beacon): used for the next handshake.
    pub fn hint(&mut self, key: [u8; 32]) {
        if self.known.is_none() {
            self.known = Some(key);
        }
    }

    /// The peer's authenticated X25519 key, once a session exists.
    pub fn remote(&self) -> Option<[u8; 32]> {
        self.cur.as_ref().map(|s| s.remote)
    }

    /// A frame given now would be sent (a session exists, or a handshake may start);
    /// otherwise one is in flight and frames would only be held.
    pub fn ready(&self, now: Duration) -> bool {
        self.cur.is_some() || matches!(self.hs, Hs::None) || now >= self.retry_at
    }

    /// The peer has shown it is at this address and holds the session's keys.
    pub fn proven(&self) -> bool {
        self.proven
    }

    /// For status: "handshaking", "established" or "idle".
    pub fn state(&self) -> &'static str {
        match (&self.cur, &self.hs) {
            (Some(_), _) => "established",
            (None, Hs::None) => "idle",
            (None, _) => "handshaking",
        }
    }

    fn budget_ok(&self, n: usize) -> bool {
        self.proven || self.unproven_out + n as u64 <= AMPLIFICATION * self.unproven_in
    }

    fn sent(&mut self, n: usize) {
        if !self.proven {
            self.unproven_out += n as u64;
        }
    }

    /// Seals `frame` for the peer into `out` (appended), starting a handshake if there
    /// is no session. `out` is left as it was unless something is to be sent.
    pub fn seal(&mut self, p: &Policy, now: Duration, frame: &[u8], out: &mut Vec<u8>) -> Sealed {
        if self.cur.is_some() {
            if !self.budget_ok(frame.len() + DATA_OVERHEAD) {
                return Sealed::Limited;
            }
            let at = out.len();
            self.cur.as_mut().expect("checked").seal(frame, out);
            let n = out.len() - at;
            self.sent(n);
            return Sealed::Data;
        }
        if !matches!(self.hs, Hs::None) && now < self.retry_at {
            self.pending.clear();
            self.pending.extend_from_slice(frame);
            return Sealed::Held;
        }
        if matches!(self.hs, Hs::Answered { .. }) {
            // Our answer was lost or the initiator gave up: it will start again.
            self.hs = Hs::None;
        }
        self.start(p, now, frame, out);
        Sealed::Handshake
    }

    /// Writes a first handshake message: IK carrying `frame` if the peer's key is
    /// known, else XX (and `frame` waits for the last message).
    fn start(&mut self, p: &Policy, now: Duration, frame: &[u8], out: &mut Vec<u8>) {
        if matches!(self.hs, Hs::Initiating { ik: true, .. }) {
            self.ik_failures += 1;
        }
        let ik = self.known.is_some() && self.ik_failures < IK_TRIES;
        // The preferred cipher for the first three attempts (enough for IK with a stale
        // key and then XX), then every other one the other: a peer that only speaks
        // ChaCha20-Poly1305 is reached after 1 + 2 + 4 s of retries.
        let c = if self.attempts >= 3 && self.attempts % 2 == 1 {
            p.cipher.other()
        } else {
            p.cipher
        };
        self.attempts = self.attempts.saturating_add(1);
        let mut b = p.builder(ik, c);
        if ik {
            b = b
                .remote_public_key(self.known.as_ref().expect("checked"))
                .expect("first remote key");
        }
        let Ok(mut hs) = b.build_initiator() else {
            return;
        };
        let mut msg = vec![0u8; MAX_MSG];
        let payload: &[u8] = if ik { frame } else { &[] };
        let Ok(n) = hs.write_message(payload, &mut msg) else {
            return;
        };
        self.pending.clear();
        if !ik {
            self.pending.extend_from_slice(frame);
        }
        let mut e = [0u8; 32];
        e.copy_from_slice(&msg[..32]);
        out.push(c.first(ik));
        out.extend_from_slice(&msg[..n]);
        self.sent(n + 1);
        self.hs = Hs::Initiating {
            hs: Box::new(hs),
            ik,
            e,
        };
        self.retry_at = now + self.retry;
        self.retry = (self.retry * 2).min(MAX_RETRY);
    }

    /// Opens datagram `d` from the peer. A frame for the endpoint goes to `frame`, a
    /// datagram to send back to `reply` (appended).
    pub fn open(
        &mut self,
        p: &Policy,
        now: Duration,
        d: &[u8],
        frame: &mut Vec<u8>,
        reply: &mut Vec<u8>,
    ) -> Result<Opened, Drop> {
        if !self.proven {
            self.unproven_in += d.len() as u64;
        }
        let Some(&k) = d.first() else {
            return Err(Drop::Malformed);
        };
        match k {
            kind::DATA if d.len() >= 9 + TAG => {
                let r = self.open_data(d, frame);
                if r.is_ok() {
                    self.undecryptable = 0;
                    self.last_open = now;
                } else if r == Err(Drop::Decrypt) {
                    self.undecryptable = self.undecryptable.saturating_add(1);
                }
                r
            }
            k if kind::is_first(k) && d.len() >= 33 => {
                self.on_first(p, now, k, &d[1..], frame, reply)
            }
            kind::IK2 | kind::XX2 => self.on_answer(p, k, &d[1..], reply),
            kind::XX3 => self.on_last(p, &d[1..], frame),
            skywave_proto::wire::VERSION => Err(Drop::Plaintext),
            _ => Err(Drop::Malformed),
        }
    }

    fn open_data(&mut self, d: &[u8], frame: &mut Vec<u8>) -> Result<Opened, Drop> {
        // The current session first: it opens nearly every datagram, and a failed open
        // costs a whole AEAD pass.
        let mut why = Drop::Decrypt;
        if let Some(s) = &mut self.cur {
            match s.open(d, frame) {
                Ok(()) => {
                    let first_proof = !self.proven;
                    self.proven = true;
                    return Ok(Opened {
                        // Empty: a session confirmed (see `on_answer`), nothing to hand on.
                        frame: !frame.is_empty(),
                        reply: false,
                        established: first_proof.then_some(s.remote),
                    });
                }
                Err(e) => why = e,
            }
        }
        if let Some((s, _)) = &mut self.next
            && s.open(d, frame).is_ok()
        {
            // The peer uses the new session: it replaces the old one. The frame that
            // came with the handshake goes first, this one after (`take_held`).
            let (s, first) = self.next.take().expect("checked");
            let remote = s.remote;
            self.replace_cur(s);
            self.proven = true;
            if frame.is_empty() {
                *frame = first;
            } else if !first.is_empty() {
                self.held_in = std::mem::replace(frame, first);
            }
            return Ok(Opened {
                frame: !frame.is_empty(),
                reply: false,
                established: Some(remote),
            });
        }
        if let Some(p) = &mut self.prev
            && p.open(d, frame).is_ok()
        {
            return Ok(Opened {
                frame: !frame.is_empty(),
                reply: false,
                established: None,
            });
        }
        Err(why)
    }

    /// Makes `s` the session frames are sealed with; the old one is kept for opening.
    fn replace_cur(&mut self, s: Session) {
        self.prev = self.cur.replace(s);
    }

    /// A frame held back by [`Self::open`] when a new session took over: the frame that
    /// came in with the datagram that proved it (hand it to the endpoint next).
    pub fn take_held(&mut self, frame: &mut Vec<u8>) -> bool {
        if self.held_in.is_empty() {
            return false;
        }
        *frame = std::mem::take(&mut self.held_in);
        true
    }

    fn on_first(
        &mut self,
        p: &Policy,
        now: Duration,
        k: u8,
        m: &[u8],
        frame: &mut Vec<u8>,
        reply: &mut Vec<u8>,
    ) -> Result<Opened, Drop> {
        // Both ends started at once (also both giving up on a session at once): the
        // larger ephemeral key stays initiator. Not once our attempt's retry time has
        // passed: ours is then a leftover nothing may retry (a kick beside a session that
        // since proved itself), and the peer (restarted) must be answered.
        let live = now < self.retry_at;
        if let Hs::Initiating { e, .. } = &self.hs
            && live
            && e.as_slice() > &m[..32]
        {
            return Err(Drop::Unexpected);
        }
        let (c, ik) = Cipher::of_first(k).ok_or(Drop::Malformed)?;
        let mut hs = p
            .builder(ik, c)
            .build_responder()
            .map_err(|_| Drop::Handshake)?;
        let mut payload = vec![0u8; m.len()];
        let n = hs
            .read_message(m, &mut payload)
            .map_err(|_| Drop::Handshake)?;
        payload.truncate(n);
        if ik {
            admitted(&hs, p)?;
        }
        let mut msg = vec![0u8; MAX_MSG];
        // IK beside a session: the frame is held until the peer uses the new session
        // (below), and the answer asks it to show it does at once, with no frame to wait
        // for (else its HELLO waited for the endpoint's retry, a second or more).
        let holds = ik && self.cur.is_some();
        let answer: &[u8] = if holds { &[IK2_HELD] } else { &[] };
        // One answer per first message, smaller than 3x it (XX: 97 B for 33 B).
        let w = hs
            .write_message(answer, &mut msg)
            .map_err(|_| Drop::Handshake)?;
        reply.push(if ik { kind::IK2 } else { kind::XX2 });
        reply.extend_from_slice(&msg[..w]);
        self.sent(w + 1);
        if !ik {
            self.hs = Hs::Answered { hs: Box::new(hs) };
            self.retry_at = now + self.retry;
            return Ok(Opened {
                frame: false,
                reply: true,
                established: None,
            });
        }
        self.hs = Hs::None;
        let t = hs
            .into_stateless_transport_mode()
            .map_err(|_| Drop::Handshake)?;
        let s = Session::new(t, false).ok_or(Drop::Handshake)?;
        let remote = s.remote;
        self.known = Some(remote);
        if holds {
            // Until the peer uses the new session, it may be a replay (or a duplicate
            // the path made): keep the old. Replacing even an unconfirmed one left the
            // ends on different sessions, each unable to open the other's data.
            self.next = Some((s, payload));
            return Ok(Opened {
                frame: false,
                reply: true,
                established: None,
            });
        }
        self.replace_cur(s);
        self.next = None;
        *frame = payload;
        Ok(Opened {
            frame: !frame.is_empty(),
            reply: true,
            established: Some(remote),
        })
    }

    fn on_answer(
        &mut self,
        p: &Policy,
        k: u8,
        m: &[u8],
        reply: &mut Vec<u8>,
    ) -> Result<Opened, Drop> {
        let Hs::Initiating { ik, .. } = &self.hs else {
            return Err(Drop::Unexpected);
        };
        if *ik != (k == kind::IK2) {
            return Err(Drop::Unexpected);
        }
        let ik = *ik;
        let Hs::Initiating { mut hs, e, .. } = std::mem::replace(&mut self.hs, Hs::None) else {
            unreachable!("matched above");
        };
        let mut payload = vec![0u8; m.len()];
        let Ok(n) = hs.read_message(m, &mut payload) else {
            // Keep waiting: the real answer may still come (snow restores its state
            // after a failed read).
            self.hs = Hs::Initiating { e, hs, ik };
            return Err(Drop::Handshake);
        };
        let held = ik && payload[..n] == [IK2_HELD];
        let remote = admitted(&hs, p)?;
        let mut out = false;
        if !ik {
            let mut msg = vec![0u8; MAX_MSG];
            let w = hs
                .write_message(&self.pending, &mut msg)
                .map_err(|_| Drop::Handshake)?;
            self.pending.clear();
            reply.push(kind::XX3);
            reply.extend_from_slice(&msg[..w]);
            out = true;
        }
        let t = hs
            .into_stateless_transport_mode()
            .map_err(|_| Drop::Handshake)?;
        // The answer proves the peer is at this address and holds its key. With IK it
        // also holds the session (it had it on reading our first message); with XX it
        // has it only once our last message arrives, which may be lost: the session is
        // confirmed when its first datagram opens, and until then data we cannot open
        // (the peer still on an older session) starts a handshake again (`kick`).
        let mut s = Session::new(t, ik).ok_or(Drop::Handshake)?;
        if held {
            // The responder holds our first frame until we use the session: an empty
            // datagram under it hands the frame over now.
            s.seal(&[], reply);
            out = true;
        }
        self.known = Some(remote);
        self.ik_failures = 0;
        self.attempts = 0;
        self.retry = FIRST_RETRY;
        self.replace_cur(s);
        self.next = None;
        self.proven = true;
        Ok(Opened {
            frame: false,
            reply: out,
            established: Some(remote),
        })
    }

    fn on_last(&mut self, p: &Policy, m: &[u8], frame: &mut Vec<u8>) -> Result<Opened, Drop> {
        let Hs::Answered { mut hs } = std::mem::replace(&mut self.hs, Hs::None) else {
            return Err(Drop::Unexpected);
        };
        let mut payload = vec![0u8; m.len()];
        let n = hs
            .read_message(m, &mut payload)
            .map_err(|_| Drop::Handshake)?;
        payload.truncate(n);
        let remote = admitted(&hs, p)?;
        let t = hs
            .into_stateless_transport_mode()
            .map_err(|_| Drop::Handshake)?;
        let s = Session::new(t, true).ok_or(Drop::Handshake)?;
        self.known = Some(remote);
        self.replace_cur(s);
        self.next = None;
        self.proven = true;
        *frame = payload;
        Ok(Opened {
            frame: !frame.is_empty(),
            reply: false,
            established: Some(remote),
        })
    }

    /// Forgets the session (the peer is gone); the next frame starts a handshake.
    pub fn reset(&mut self) {
        let known = self.known;
        *self = Self::new(known);
    }

    /// A data datagram came that no session opens: we restarted and the peer did not,
    /// or the session we answered was never the peer's (its handshake lost a crossing
    /// elsewhere, or was a replay). Unless a confirmed session runs, or a handshake was
    /// started within its retry time, start one with an empty first frame so the peer
    /// answers and both get keys. Returns whether `out` holds one to send.
    pub fn kick(&mut self, p: &Policy, now: Duration, out: &mut Vec<u8>) -> bool {
        // A confirmed session is given up on only when the peer's data has not opened
        // for a while and several datagrams failed: then it holds a session we lack
        // (our answer or its last message was lost, or a replay moved ours). Forged
        // datagrams while the peer talks never trigger it.
        let stuck = self.undecryptable >= STUCK_AFTER && now >= self.last_open + STUCK_QUIET;
        if self.cur.as_ref().is_some_and(|c| c.confirmed) && !stuck || now < self.retry_at {
            return false;
        }
        let at = out.len();
        self.start(p, now, &[], out);
        out.len() > at
    }
}

/// The peer's static key as the handshake proved it, if `p` lets it in.
fn admitted(hs: &HandshakeState, p: &Policy) -> Result<[u8; 32], Drop> {
    let remote: [u8; 32] = hs
        .get_remote_static()
        .and_then(|r| r.try_into().ok())
        .ok_or(Drop::Handshake)?;
    if !p.allows(&remote) {
        return Err(Drop::Untrusted);
    }
    Ok(remote)
}

/// A sliding window of seen counters (RFC 6479's bitmap).
#[derive(Default)]
struct Replay {
    /// One past the highest counter seen.
    top: u64,
    bits: [u64; (WINDOW / 64) as usize],
}

impl Replay {
    fn fresh(&self, n: u64) -> bool {
        if n >= self.top {
            return true;
        }
        if self.top - n > WINDOW {
            return false;
        }
        let i = (n % WINDOW) as usize;
        self.bits[i / 64] & (1 << (i % 64)) == 0
    }

    fn mark(&mut self, n: u64) {
        if n >= self.top {
            // Clear the slots the window slides past.
            let gap = (n + 1 - self.top).min(WINDOW);
            for k in 0..gap {
                let i = ((self.top + k) % WINDOW) as usize;
                self.bits[i / 64] &= !(1 << (i % 64));
            }
            self.top = n + 1;
        }
        let i = (n % WINDOW) as usize;
        self.bits[i / 64] |= 1 << (i % 64);
    }
}

fn hex8(k: &[u8; 32]) -> String {
    k[..4].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
