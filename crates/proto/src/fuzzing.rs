//! Bodies of the fuzz targets, and the small in-process harness they drive.
//!
//! `fuzz/` (cargo-fuzz, nightly) and the corpus replay test (stable, `tests/fuzz_corpus.rs`)
//! call the same functions, so a crash the fuzzer finds is a failing test once its input
//! is copied into `fuzz/corpus/<target>/`. Each target panics on a broken invariant and
//! returns quietly otherwise. Not part of the API: hidden from the docs, no stability.
//!
//! The session target reads its operations from raw bytes with [`Op::decode_all`] (any
//! bytes are a valid list, as with `arbitrary::Unstructured`), a format of its own, so
//! that corpus files replay identically here, on stable and without `arbitrary`.

#![doc(hidden)]

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use skywave_bundle::{BundleId, Manifest, SecretKey, SignedManifest, hash_payload};

use crate::endpoint::{Config, Endpoint, Event, LinkParams};
use crate::store::{BundleStore, MemStore};
use crate::wire::{self, FrameWriter, Message};

/// Manifest dates used by generated bundles (2026-11-22).
pub const DATE: u64 = 1_795_305_600;

// ---------------------------------------------------------------------------------------
// frame

/// Parses any bytes; a frame that parses is re-encoded with [`FrameWriter`] and must parse
/// back to the same header and messages (unknown messages and PINGs lose their bodies:
/// the parse keeps neither), and be the same bytes when it carried no such message
/// (reserved flag bits aside).
pub fn frame(data: &[u8]) {
    let Ok((header, msgs)) = wire::parse(data) else {
        return;
    };
    // Accounting walks a parsed frame to its end, message by message.
    let sizes = wire::message_sizes(data);
    assert_eq!(
        sizes.len(),
        msgs.len(),
        "message_sizes disagrees with parse"
    );
    let limit = data.len() + wire::MIN_FRAME;
    let mut w = FrameWriter::new(header, limit);
    let header_len = w.len();
    assert_eq!(
        sizes.iter().map(|s| s.1).sum::<usize>(),
        data.len() - header_len,
        "message sizes do not cover the frame"
    );
    let mut expect = Vec::with_capacity(msgs.len());
    // A message whose body the parse does not keep, re-encoded empty.
    let mut bodiless = false;
    for m in &msgs {
        let written = match m {
            Message::Hello {
                node_key,
                nonce,
                set_size,
                flags,
                sketch,
            } => {
                let sketch: Vec<u64> = sketch
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8-byte chunk")))
                    .collect();
                w.hello(node_key, *nonce, *set_size, *flags, &sketch)
            }
            Message::Symbols { epoch, first, data } => {
                let syms: Vec<_> = Message::symbols(data).collect();
                let n = w.symbols(*epoch, *first, syms.len(), |i| syms[(i - first) as usize]);
                n == syms.len()
            }
            Message::Ids {
                epoch,
                total,
                first,
                data,
            } => {
                let ids: Vec<u64> = Message::listed_ids(data).collect();
                let n = w.ids(*epoch, *total, *first, ids.len(), |i| {
                    ids[(i - first) as usize]
                });
                n == ids.len()
            }
            Message::ReconDone { epoch, used } => w.recon_done(*epoch, *used),
            Message::ReconMore { epoch, from, count } => w.recon_more(*epoch, *from, *count),
            Message::Want { len, prefixes } => {
                let p: Vec<u64> = Message::want_prefixes(*len, prefixes).collect();
                w.want(*len, &p) == p.len()
            }
            Message::Manifest { seq, bytes } => w.offer(*seq, bytes),
            Message::Piece { r, offset, data } => w.piece(r, *offset, data),
            Message::PieceNext { offset, data } => w.piece_next(*offset, data),
            Message::Have { r, ranges } => w.have(r, ranges),
            Message::HaveAll { r } => w.have_all(r),
            Message::Done { tag, seqs } => w.done(*tag, seqs),
            Message::Ack(ack) => w.ack(ack),
            Message::Fec { r, esi, data, .. } => w.fec(r, *esi, data),
            Message::Need {
                r,
                needed,
                last_esi,
            } => w.need(r, *needed, *last_esi),
            Message::Heard { pn } => w.heard(*pn),
            Message::Spacing { pn, bytes, gap_ns } => w.spacing(*pn, *bytes, *gap_ns),
            Message::Missed { ranges } => w.missed(ranges) == ranges.len(),
            Message::Nameless { r } => w.nameless(r),
            Message::Frag {
                id,
                offset,
                total,
                data,
            } => w.frag_part(*id, *offset, *total, data),
            Message::FragNext { data } => w.frag_next(data),
            Message::FragParity {
                id,
                total,
                count,
                data,
            } => w.frag_parity(*id, *total, *count, data),
            Message::Padding { data } => w.raw(wire::ty::PADDING, data),
            Message::Ping => {
                bodiless = true;
                w.ping()
            }
            Message::Unknown { ty } => {
                bodiless = true;
                w.raw(*ty, &[])
            }
        };
        assert!(written, "re-encoding {m:?} did not fit");
        expect.push(m.clone());
    }
    let out = w.finish();
    let (h2, m2) = wire::parse(&out).expect("a re-encoded frame parses");
    assert_eq!(h2, header);
    assert_eq!(m2, expect);
    assert!(out.len() <= data.len());
    if !bodiless {
        assert_eq!(out[0], data[0]);
        // ADDRESSED, and SHORT_TAGS with it.
        let kept = if data[1] & 1 != 0 { data[1] & 5 } else { 0 };
        assert_eq!(out[1], kept, "only the address flags are kept");
        assert_eq!(out[2..], data[2..], "re-encoding changed the bytes");
    }
}

// ---------------------------------------------------------------------------------------
// manifest

/// Decodes any bytes as a signed manifest; one that decodes must be its own canonical
/// encoding and decode again to the same value. The same holds without the signature
/// check ([`SignedManifest::decode_stored`]), which lets the fuzzer reach the field rules.
pub fn manifest(data: &[u8]) {
    if let Ok(m) = SignedManifest::decode(data) {
        assert_eq!(m.as_bytes(), data, "decode kept other bytes");
        let again = SignedManifest::decode(m.as_bytes()).expect("its own bytes decode");
        assert_eq!(again, m);
    }
    if let Ok(m) = SignedManifest::decode_stored(data) {
        assert_eq!(m.as_bytes(), data);
        m.manifest()
            .validate()
            .expect("a decoded manifest is valid");
        let again = SignedManifest::decode_stored(m.as_bytes()).expect("its own bytes decode");
        assert_eq!(again.manifest(), m.manifest());
    }
}

// ---------------------------------------------------------------------------------------
// riblt

/// Reconciliation symbols. The first byte picks the mode; the rest are 6-byte ids and,
/// in the hostile mode, 9-byte symbols.
///
/// - Honest (even first byte): each id goes to the local set, the remote set or both
///   (by its bytes); the remote encoder's symbols must peel to exactly the symmetric
///   difference within a bounded number of symbols, whatever the ids. The local encoder
///   is built with insertions and removals after symbols were produced (odd second
///   byte) and must give the same symbols as one built from the final set.
/// - Hostile (odd first byte): the second byte counts the local ids, the remaining
///   bytes are the peer's symbols. Whatever they are, the decoder stays consistent:
///   what it calls local-only is in the local set, what it calls remote-only is not,
///   no id is reported twice, and every id is a non-zero 48-bit value.
pub fn riblt(data: &[u8]) {
    use crate::recon::riblt::{Decoder, Encoder, ID_MASK, SYMBOL_LEN, Symbol};

    let mut input = Input(data);
    let mode = input.u8();
    let id = |c: &[u8]| {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(b) & ID_MASK
    };
    if mode & 1 == 1 {
        let n = usize::from(input.u8());
        let local_ids: BTreeSet<u64> = input.bytes(6 * n).chunks(6).map(id).collect();
        let mut local = Encoder::new();
        for &i in &local_ids {
            local.insert(i);
        }
        let mut dec = Decoder::new();
        for (k, c) in input.0.chunks_exact(SYMBOL_LEN).enumerate() {
            let s = Symbol::decode(c.try_into().expect("chunks_exact"));
            dec.push(s, &mut local);
            assert_eq!(dec.received(), k + 1);
        }
        let d = dec.difference();
        let mut all = BTreeSet::new();
        for &i in &d.local_only {
            assert!(local_ids.contains(&i), "local-only id {i:#x} is not local");
            assert!(all.insert(i), "id {i:#x} reported twice");
        }
        for &i in &d.remote_only {
            assert!(!local_ids.contains(&i), "remote-only id {i:#x} is local");
            assert!(all.insert(i), "id {i:#x} reported twice");
        }
        assert!(all.iter().all(|&i| i != 0 && i <= ID_MASK));
        return;
    }

    // An id of 0 is invisible to the code (it XORs to nothing); a session's short ids
    // are hashes and 0 is as unlikely as any other value, so it is left out.
    let rebuild = input.u8() & 1 == 1;
    let mut local_ids = BTreeSet::new();
    let mut remote_ids = BTreeSet::new();
    for c in input.0.chunks(6) {
        let i = id(c);
        if i == 0 {
            continue;
        }
        match (c[0] ^ c[c.len() - 1]) % 3 {
            0 => local_ids.insert(i),
            1 => remote_ids.insert(i),
            _ => local_ids.insert(i) | remote_ids.insert(i),
        };
    }
    let mut remote = Encoder::new();
    for &i in &remote_ids {
        remote.insert(i);
    }
    let mut local = Encoder::new();
    if rebuild {
        // Produce symbols, then change the set under them: the remote ids come and go,
        // the local ones arrive in reverse order.
        for &i in &remote_ids {
            local.insert(i);
        }
        local.extend_to(local_ids.len() + 5);
        for &i in local_ids.iter().rev() {
            local.insert(i);
        }
        for &i in &remote_ids {
            if !local_ids.contains(&i) {
                local.remove(i);
            }
        }
        let mut fresh = Encoder::new();
        for &i in &local_ids {
            fresh.insert(i);
        }
        for k in 0..local.produced() + 3 {
            assert_eq!(local.symbol(k), fresh.symbol(k), "symbol {k} after changes");
        }
    } else {
        for &i in &local_ids {
            local.insert(i);
        }
    }
    assert_eq!(local.len(), local_ids.len());
    let want_remote: Vec<u64> = remote_ids.difference(&local_ids).copied().collect();
    let want_local: Vec<u64> = local_ids.difference(&remote_ids).copied().collect();
    let d = want_remote.len() + want_local.len();
    // Peeling needs ~1.35-1.7 d symbols on average, but the tail is long for a small d
    // (a set of 6 needing 100 was found): an id lands in symbol i with probability
    // ~2/i, so the chance of still being stuck after n symbols falls only as a power of
    // n. This bound is far out in that tail.
    let limit = 16 * d + 1024;
    let mut dec = Decoder::new();
    while !dec.is_decoded() && dec.received() < limit {
        let i = dec.received();
        dec.push(remote.symbol(i), &mut local);
    }
    let got = dec.difference();
    // A false peel (an impure symbol whose checksums collide, 2^-24 per check, and whose
    // sum maps to its index) reports an id outside the difference and stalls the round:
    // the documented failure, which a fuzzer running ~10^9 checks does meet. Anything
    // else must be the exact difference, decoded.
    let false_peel = got
        .remote_only
        .iter()
        .any(|i| want_remote.binary_search(i).is_err())
        || got
            .local_only
            .iter()
            .any(|i| want_local.binary_search(i).is_err());
    if false_peel {
        return;
    }
    assert!(
        dec.is_decoded(),
        "difference of {d} not decoded from {limit} symbols"
    );
    assert_eq!(got.remote_only, want_remote);
    assert_eq!(got.local_only, want_local);
}

// ---------------------------------------------------------------------------------------
// fec

/// FEC symbols into a decoder. Input: flags, payload length, symbol size, then
/// operations (a tag byte and its fields), each pushing one symbol:
///
/// - honest: the encoder's symbol for an ESI in range;
/// - corrupted: an encoder's symbol with one byte changed;
/// - raw: any ESI and any bytes (wrong sizes, out of range).
///
/// Checks: no panic; every error is the one the symbol called for (wrong size, ESI out
/// of range, undecodable only after bad symbols); the counters add up; buffered bytes
/// stay within `K_b + MAX_EXTRA_SYMBOLS` symbols per block; `needed` is 0 exactly when
/// complete; and while only honest symbols came, the payload decodes to the original,
/// at the latest once every source symbol has been pushed. The layout maps every ESI to
/// a block and position in range, source symbols in payload order.
pub fn fec(data: &[u8]) {
    use crate::fec::{FecDecoder, FecEncoder, FecError, Layout, MAX_EXTRA_SYMBOLS, Progress};

    let mut input = Input(data);
    let flags = input.u8();
    // Large claims (flag 1) exercise the layout and the decoder's allocation on a
    // length no encoder is built for; others are small enough (at most 128 source
    // symbols) to encode and decode many times a second.
    let len = if flags & 1 == 1 {
        u64::from(input.u32()) << (input.u8() % 16)
    } else {
        u64::from(input.u16() % 1025)
    };
    let t = 8 + u16::from(input.u8()) * 4;
    let Ok(layout) = Layout::new(len, t) else {
        assert!(flags & 1 == 1, "a small payload always has a layout");
        return;
    };
    check_layout(&layout);
    let mut dec = if flags & 2 == 2 {
        FecDecoder::with_symbol_size(len, t).expect("the layout exists")
    } else {
        FecDecoder::new(len)
    };
    let payload: Vec<u8> = (0..len.min(1024))
        .map(|i| (i * 131 + i / 251) as u8 ^ flags)
        .collect();
    let mut enc = (flags & 1 == 0)
        .then(|| FecEncoder::new(bytes::Bytes::from(payload.clone()), t).expect("layout exists"));
    let limit = layout.esi_limit();
    let mut honest = true;
    let mut accepted = 0u64;
    while !input.is_empty() {
        let op = input.u8();
        let sel = u64::from(input.u16());
        let (esi, sym) = match (op % 3, enc.as_mut()) {
            (0, Some(e)) if limit > 0 => {
                let esi = sel % limit;
                (esi, e.symbol(esi).expect("in range").to_vec())
            }
            (1, Some(e)) if limit > 0 => {
                let esi = sel % limit;
                let mut s = e.symbol(esi).expect("in range").to_vec();
                let pos = usize::from(input.u16()) % s.len();
                let x = input.u8() | 1;
                s[pos] ^= x;
                (esi, s)
            }
            _ => {
                // Mostly the right size, so the decoder takes it in.
                let n = match input.u8() {
                    0 => usize::from(input.u16()),
                    _ => usize::from(t),
                };
                let mut s = input.bytes(n).to_vec();
                s.resize(n, 0);
                (sel, s)
            }
        };
        let fresh = op % 3 == 0 && enc.is_some() && limit > 0;
        let was_complete = dec.is_complete();
        let r = dec.push(esi, &sym);
        match r {
            Ok(_) => accepted += 1,
            Err(FecError::SymbolSizeMismatch { expected, got }) => {
                assert_eq!(got, sym.len());
                assert_ne!(usize::from(expected), got);
            }
            Err(FecError::BadSymbolSize(n)) => {
                assert!(dec.symbol_size().is_none());
                assert_ne!(n, usize::from(t));
            }
            Err(FecError::EsiOutOfRange { esi: e, limit: l }) => {
                // Before the first symbol, a symbol of another size proposes its own code.
                let code = match dec.symbol_size() {
                    Some(s) => Layout::new(len, s),
                    None => Layout::new(len, sym.len() as u16),
                };
                assert_eq!(code.map(|c| c.esi_limit()), Ok(l));
                assert!(e == esi && esi >= l);
            }
            Err(FecError::Undecodable { .. }) => {
                assert!(!honest, "honest symbols were undecodable");
                return;
            }
            Err(e @ FecError::TooLarge { .. }) => {
                // Only a first symbol, proposing a code with its own size, can be that.
                assert!(dec.symbol_size().is_none());
                assert_eq!(Layout::new(len, sym.len() as u16).err(), Some(e));
            }
            Err(e @ FecError::FrameTooSmall { .. }) => panic!("push cannot fail with {e}"),
        }
        if r.is_ok() && !was_complete && sym.len() == usize::from(t) {
            assert_eq!(dec.symbol_size(), Some(t));
        }
        if !fresh && r.is_ok() && !was_complete {
            honest = false;
        }
        if was_complete {
            assert_eq!(r, Ok(Progress::Redundant));
        }
        assert_eq!(dec.received() + dec.redundant(), accepted);
        assert_eq!(dec.needed() == 0, dec.is_complete());
        let most = (0..layout.blocks())
            .map(|b| u64::from(layout.block_symbols(b) + MAX_EXTRA_SYMBOLS) * u64::from(t))
            .sum::<u64>();
        assert!(dec.buffered_bytes() <= most);
        if dec.is_complete() && honest {
            assert_eq!(dec.payload().map(|p| &p[..]), Some(&payload[..]));
        }
    }
    if let (Some(e), true) = (enc.as_mut(), honest) {
        // Whatever came first, the source symbols complete an honest decoder.
        for esi in 0..layout.source_symbols() {
            let s = e.symbol(esi).expect("in range");
            dec.push(esi, &s).expect("an honest symbol is taken");
        }
        assert!(dec.is_complete(), "every source symbol did not complete");
        assert_eq!(dec.payload().map(|p| &p[..]), Some(&payload[..]));
    }
}

fn check_layout(l: &crate::fec::Layout) {
    let t = u64::from(l.symbol_size());
    assert_eq!(l.source_symbols(), l.len().div_ceil(t));
    let mut start = 0;
    for b in 0..l.blocks() {
        assert_eq!(l.block_start(b), start);
        start += u64::from(l.block_symbols(b));
    }
    assert_eq!(start, l.source_symbols());
    let limit = l.esi_limit();
    let probes = [
        0,
        1,
        l.source_symbols().saturating_sub(1),
        l.source_symbols(),
    ];
    for esi in probes.into_iter().chain([limit.saturating_sub(1), limit]) {
        match l.locate(esi) {
            Ok((b, i)) => {
                assert!(esi < limit);
                assert!(b < l.blocks());
                let k = l.block_symbols(b);
                assert!(i < k + l.repair_per_block());
                if esi < l.source_symbols() {
                    assert_eq!(l.block_start(b) + u64::from(i), esi);
                } else {
                    assert!(i >= k);
                }
            }
            Err(_) => assert!(esi >= limit),
        }
    }
}

// ---------------------------------------------------------------------------------------
// bundles and keys for harnesses

fn secret(n: u64, tweak: u8) -> SecretKey {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&n.to_le_bytes());
    seed[9] = tweak;
    SecretKey::from_bytes(&seed)
}

/// The secret key of generated bundle number `n`.
/// Sealed payloads (`skywave_bundle::sealed`), the input read two ways:
///
/// 1. as a sealed payload for a fixed node and bundle: opening never panics, and opening
///    it whole and as a stream (`OpenReader`) agree on the outcome and the bytes;
/// 2. as a plaintext (its first byte choosing a position): sealed, it opens to itself
///    whole and streamed; with the byte at that position altered, or for another node
///    or bundle, it does not open.
pub fn sealed(data: &[u8]) {
    use std::io::Read;

    use rand_core::SeedableRng;
    use skywave_bundle::sealed::{self, OpenReader};

    let node = bundle_key(1);
    let id = bundle_key(2).bundle_id();
    let streamed = |bytes: &[u8], key: &SecretKey, id: &BundleId| {
        OpenReader::new(bytes, key, id).and_then(|mut r| {
            let mut v = Vec::new();
            r.read_to_end(&mut v).map(|_| v)
        })
    };
    let whole = sealed::open(data, &node, &id);
    let stream = streamed(data, &node, &id);
    match (&whole, &stream) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "whole and streamed opened to other bytes"),
        (Err(_), Err(_)) => {}
        _ => panic!("whole and streamed disagree: {whole:?} / {stream:?}"),
    }

    let mut rng = rand_chacha::ChaCha20Rng::from_seed([data.len() as u8; 32]);
    let to = node.identity();
    let s = sealed::seal(data, &to, &id, &mut rng).expect("sealing never fails");
    assert_eq!(s.len() as u64, sealed::sealed_len(data.len() as u64));
    assert_eq!(sealed::open(&s, &node, &id).expect("opens"), data);
    assert_eq!(streamed(&s, &node, &id).expect("opens streamed"), data);
    let at = usize::from(data.first().copied().unwrap_or(0)) * 7919 % s.len();
    let mut bad = s.clone();
    bad[at] ^= 0x01;
    assert!(
        sealed::open(&bad, &node, &id).is_err(),
        "altered at {at}, still opened"
    );
    assert!(streamed(&bad, &node, &id).is_err());
    assert!(
        sealed::open(&s, &bundle_key(3), &id).is_err(),
        "another node opened it"
    );
    assert!(
        sealed::open(&s, &node, &bundle_key(4).bundle_id()).is_err(),
        "another bundle"
    );
}

pub fn bundle_key(n: u64) -> SecretKey {
    secret(n, 0x77)
}

/// A node key (public) numbered `n`.
pub fn node_key(n: u64) -> [u8; 32] {
    secret(n, 0x99).public()
}

/// Bundle number `n` at `version`, with `size` bytes of payload derived from both.
pub fn bundle(n: u64, version: u64, size: usize) -> (SignedManifest, Vec<u8>) {
    let k = bundle_key(n);
    let payload: Vec<u8> = (0..size)
        .map(|j| (n as usize * 7 + version as usize * 13 + j * 31 + (j >> 8)) as u8)
        .collect();
    let mut m = Manifest::new(
        k.bundle_id(),
        version,
        size as u64,
        hash_payload(&payload),
        DATE,
    );
    m.service = Some("file".into());
    m.name = Some(format!("b{n}"));
    let m = m.sign(&k).expect("generated manifests are valid");
    (m, payload)
}

/// Bundle number `n` at `version` with its `size`-byte payload sealed to node
/// `recipient` (see [`node_key`]): the manifest is marked sealed, as an author's is.
pub fn sealed_bundle(
    n: u64,
    version: u64,
    size: usize,
    recipient: u64,
) -> (SignedManifest, Vec<u8>) {
    use rand_core::SeedableRng;

    let k = bundle_key(n);
    let (_, plain) = bundle(n, version, size);
    let to = secret(recipient, 0x99).identity();
    let mut rng = rand_chacha::ChaCha20Rng::from_seed([n as u8; 32]);
    let payload = skywave_bundle::sealed::seal(&plain, &to, &k.bundle_id(), &mut rng)
        .expect("sealing never fails");
    let mut m = Manifest::new(
        k.bundle_id(),
        version,
        payload.len() as u64,
        hash_payload(&payload),
        DATE,
    );
    m.service = Some("file".into());
    m.name = Some(format!("sealed{n}"));
    m.recipient = Some(to);
    m.sealed = Some(skywave_bundle::sealed::SEALED_V1);
    let m = m.sign(&k).expect("generated manifests are valid");
    (m, payload)
}

/// `(id, version)` of every bundle a store holds.
pub fn held(store: &MemStore) -> BTreeSet<(BundleId, u64)> {
    store
        .held
        .values()
        .map(|(m, _)| (m.id(), m.version()))
        .collect()
}

// ---------------------------------------------------------------------------------------
// the session harness

/// A link profile for harnesses: parameters, one-way latency and rate.
#[derive(Debug, Clone, Copy)]
pub struct Profile {
    pub params: LinkParams,
    pub latency: Duration,
    pub rate_bps: u64,
}

impl Profile {
    /// 0: IP path (paced, 1472 B); 1: point-to-point radio with back-pressure (200 B);
    /// 2: shared radio, addressed frames (255 B); 3: half-duplex modem (250 B, 9600 bit/s).
    /// With bit 2 set, the radios' and the modem's frames are the protocol's smallest
    /// (48 B; 100 B on the modem) and the link is expected to lose a tenth of them:
    /// manifests and HELLOs go in fragments, with their parity.
    pub fn pick(i: u8) -> Self {
        let (mut mtu, shared, paced, half, rate, latency_ms) = match i % 4 {
            0 => (1472, false, true, false, 20_000_000, 10),
            1 => (200, false, false, false, 64_000, 20),
            2 => (255, true, false, false, 128_000, 5),
            _ => (250, false, false, true, 9_600, 200),
        };
        let small = i & 4 != 0 && !paced;
        if small {
            mtu = if half { 100 } else { crate::wire::MIN_FRAME };
        }
        let latency = Duration::from_millis(latency_ms);
        Self {
            params: LinkParams {
                mtu,
                shared,
                paced,
                half_duplex: half,
                rate_bps: Some(rate),
                rtt_hint: latency * 2 + Duration::from_secs_f64(16.0 * mtu as f64 / rate as f64),
                loss_hint: if small { 0.1 } else { 0.0 },
                discover_mtu: false,
                frame_overhead: 0,
                handoff: Duration::ZERO,
                duty: None,
                reliable: false,
                turns: None,
            },
            latency,
            rate_bps: rate,
        }
    }
}

/// One endpoint, its store, and what it reported.
#[derive(Debug)]
pub struct Node {
    pub ep: Endpoint,
    pub store: MemStore,
    /// `Event::Received` per bundle version.
    pub received: BTreeMap<(BundleId, u64), u32>,
    /// The link is down on this side.
    pub down: bool,
    /// Serialisation: the link is busy sending until then.
    busy_until: Duration,
}

impl Node {
    pub fn new(n: u64, nonce: u64) -> Self {
        Self {
            ep: Endpoint::new(Config::default(), node_key(n), nonce),
            store: MemStore::new(),
            received: BTreeMap::new(),
            down: false,
            busy_until: Duration::ZERO,
        }
    }

    /// Inserts a bundle as the application would (store, then tell the endpoint).
    pub fn insert(&mut self, now: Duration, m: SignedManifest, payload: Vec<u8>) {
        let id = m.id();
        self.store.insert(m, payload);
        self.ep.bundle_stored(now, id, &mut self.store);
    }

    /// Drains the endpoint's events; panics if a bundle version is received twice.
    pub fn collect_events(&mut self) {
        while let Some(e) = self.ep.poll_event() {
            if let Event::Received { id, version, .. } = e {
                let n = self.received.entry((id, version)).or_default();
                *n += 1;
                assert_eq!(*n, 1, "bundle {id} v{version} received {n} times");
            }
        }
    }

    /// Per-session queue lengths from [`Endpoint::describe_sessions`], by name.
    pub fn queue_lengths(&self) -> Vec<BTreeMap<String, u64>> {
        self.ep
            .describe_sessions()
            .iter()
            .map(|line| {
                let words: Vec<&str> = line.split_whitespace().collect();
                words
                    .windows(2)
                    .filter_map(|w| Some((w[0].to_string(), w[1].parse().ok()?)))
                    .collect()
            })
            .collect()
    }
}

/// A frame on its way.
#[derive(Debug, Clone)]
struct InFlight {
    at: Duration,
    bytes: Vec<u8>,
}

/// Frames kept in flight per direction; beyond that the pipe drops the oldest.
const PIPE_CAP: usize = 64;
/// Frames remembered per direction for replays.
const HISTORY: usize = 32;

/// Two endpoints joined by one lossy, reordering, duplicating link, in virtual time.
#[derive(Debug)]
pub struct Pair {
    pub nodes: [Node; 2],
    pub profile: Profile,
    pub now: Duration,
    /// Frames towards node 0 and node 1.
    queues: [VecDeque<InFlight>; 2],
    /// Frames delivered to node 0 and node 1, newest last.
    history: [VecDeque<Vec<u8>>; 2],
    /// A frame was altered into another well-formed frame (not only piece data): an
    /// undetected corruption may legitimately stop convergence.
    pub tainted: bool,
    /// Bundle versions inserted anywhere: the union both stores should end with.
    pub inserted: BTreeMap<BundleId, u64>,
    /// Payload size of each `(bundle, version)` made so far: one version, one payload.
    sizes: BTreeMap<(u64, u64), usize>,
}

impl Pair {
    pub fn new(profile: Profile) -> Self {
        let mut p = Self {
            nodes: [Node::new(1, 0x1111), Node::new(2, 0x2222)],
            profile,
            now: Duration::ZERO,
            queues: Default::default(),
            history: Default::default(),
            tainted: false,
            inserted: BTreeMap::new(),
            sizes: BTreeMap::new(),
        };
        for n in &mut p.nodes {
            n.ep.link_up(Duration::ZERO, 0, profile.params);
        }
        p
    }

    /// Inserts bundle `n` at `version` on node `side` (ignored if it holds that or newer).
    /// The first insertion of a version fixes its size.
    pub fn insert(&mut self, side: usize, n: u64, version: u64, size: usize) {
        let size = *self.sizes.entry((n, version)).or_insert(size);
        let (m, payload) = bundle(n, version, size);
        let id = m.id();
        if self.nodes[side]
            .store
            .held
            .get(&id)
            .is_some_and(|(h, _)| h.version() >= version)
        {
            return;
        }
        let v = self.inserted.entry(id).or_default();
        *v = (*v).max(version);
        self.nodes[side].insert(self.now, m, payload);
    }

    /// Polls node `side` for one frame of at most `max_len` bytes and puts it on the
    /// wire; returns its length.
    pub fn send(&mut self, side: usize, max_len: usize) -> Option<usize> {
        let now = self.now;
        let n = &mut self.nodes[side];
        if n.down {
            return None;
        }
        let f = n.ep.poll_transmit(now, 0, max_len, &mut n.store)?;
        assert!(
            f.len() <= max_len.min(self.profile.params.mtu),
            "frame of {} bytes for a budget of {max_len}",
            f.len()
        );
        assert!(wire::parse(&f).is_ok(), "the endpoint built a bad frame");
        let ser = Duration::from_secs_f64(f.len() as f64 * 8.0 / self.profile.rate_bps as f64);
        n.busy_until = now.max(n.busy_until) + ser;
        let len = f.len();
        let q = &mut self.queues[1 - side];
        if q.len() >= PIPE_CAP {
            q.pop_front();
        }
        q.push_back(InFlight {
            at: n.busy_until + self.profile.latency,
            bytes: f,
        });
        Some(len)
    }

    /// Frames waiting towards `side`.
    pub fn queued(&self, side: usize) -> usize {
        self.queues[side].len()
    }

    fn take(&mut self, to: usize, index: usize) -> Option<Vec<u8>> {
        let q = &mut self.queues[to];
        if q.is_empty() {
            return None;
        }
        let i = index % q.len();
        q.remove(i).map(|f| f.bytes)
    }

    /// Hands raw bytes to node `to` as if they arrived on the link.
    pub fn deliver_bytes(&mut self, to: usize, bytes: &[u8]) {
        let n = &mut self.nodes[to];
        n.ep.handle_frame(self.now, 0, bytes, &mut n.store);
        n.collect_events();
    }

    fn deliver_frame(&mut self, to: usize, bytes: Vec<u8>) {
        self.deliver_bytes(to, &bytes);
        let h = &mut self.history[to];
        if h.len() >= HISTORY {
            h.pop_front();
        }
        h.push_back(bytes);
    }

    /// Advances virtual time and runs the timers that are due.
    pub fn advance(&mut self, d: Duration) {
        self.now += d;
        for n in &mut self.nodes {
            n.ep.handle_timeout(self.now);
            n.collect_events();
        }
    }

    /// Applies one operation.
    pub fn apply(&mut self, op: &Op) {
        match *op {
            Op::Send { from, max_len } => {
                let budget = wire::MIN_FRAME + usize::from(max_len) % 1500;
                self.send(from.index(), budget);
            }
            Op::Deliver { to, index } => {
                if let Some(f) = self.take(to.index(), index.into()) {
                    self.deliver_frame(to.index(), f);
                }
            }
            Op::Drop { to, index } => {
                self.take(to.index(), index.into());
            }
            Op::Duplicate { to, index } => {
                let q = &mut self.queues[to.index()];
                if !q.is_empty() && q.len() < PIPE_CAP {
                    let f = q[usize::from(index) % q.len()].clone();
                    q.push_back(f);
                }
            }
            Op::Corrupt {
                to,
                index,
                pos,
                xor,
            } => {
                let Some(orig) = self.take(to.index(), index.into()) else {
                    return;
                };
                let mut f = orig.clone();
                let i = usize::from(pos) % f.len();
                f[i] ^= xor.max(1);
                if !only_piece_data_differs(&orig, &f) {
                    self.tainted = true;
                }
                self.deliver_bytes(to.index(), &f);
            }
            Op::Replay { to, index } => {
                let h = &self.history[to.index()];
                if !h.is_empty() {
                    let f = h[usize::from(index) % h.len()].clone();
                    self.deliver_bytes(to.index(), &f);
                }
            }
            Op::Advance { ms } => self.advance(Duration::from_millis(u64::from(ms))),
            Op::Insert {
                side,
                bundle,
                version,
                size,
            } => self.insert(
                side.index(),
                u64::from(bundle % 24),
                1 + u64::from(version % 3),
                usize::from(size) % 4000,
            ),
            Op::LinkDown { side } => {
                let n = &mut self.nodes[side.index()];
                n.down = true;
                n.ep.link_down(self.now, 0);
            }
            Op::LinkUp { side } => {
                let n = &mut self.nodes[side.index()];
                n.down = false;
                n.ep.link_up(self.now, 0, self.profile.params);
            }
        }
    }

    /// Checks the invariants that hold after any operation: queues inside each endpoint
    /// stay bounded by what exists to be sent.
    pub fn check_bounded(&self) {
        // Each bundle version can be in a queue once, and there are at most this many.
        let versions = self.inserted.len() as u64 * 3 + 8;
        for n in &self.nodes {
            assert!(n.ep.pending_transfers() as u64 <= versions);
            for q in n.queue_lengths() {
                for name in ["out", "incoming", "wants", "asked", "have_all", "have"] {
                    let v = q.get(name).copied().unwrap_or(0);
                    assert!(v <= versions, "{name} holds {v} entries: {q:?}");
                }
            }
        }
    }

    /// Whether both stores hold every inserted bundle at its newest version.
    pub fn synced(&self) -> bool {
        if self
            .nodes
            .iter()
            .any(|n| n.store.held.len() != self.inserted.len())
        {
            return false;
        }
        let want: BTreeSet<(BundleId, u64)> = self.inserted.iter().map(|(k, v)| (*k, *v)).collect();
        self.nodes.iter().all(|n| held(&n.store) == want)
    }

    /// Runs a clean link (in-order delivery at the profile's rate and latency, no loss)
    /// until both stores are synced or `limit` of virtual time passes; returns whether
    /// they synced.
    pub fn run_clean(&mut self, limit: Duration) -> bool {
        let end = self.now + limit;
        for q in &mut self.queues {
            // In-order from here on: what is queued arrives in send order.
            let mut v: Vec<_> = q.drain(..).collect();
            v.sort_by_key(|f| f.at);
            q.extend(v);
        }
        let mut steps = 0u32;
        while self.now < end && steps < 100_000 {
            steps += 1;
            if self.synced() {
                return true;
            }
            // Deliver whatever has arrived.
            for to in 0..2 {
                while self.queues[to].front().is_some_and(|f| f.at <= self.now) {
                    let f = self.queues[to].pop_front().expect("checked").bytes;
                    self.deliver_frame(to, f);
                }
            }
            // Send while the link is free (back-pressure: one frame at a time).
            for side in 0..2 {
                while self.nodes[side].busy_until <= self.now
                    && self.send(side, self.profile.params.mtu).is_some()
                {}
            }
            // A stall is a bug: with nothing on the way to either side and no timer on
            // either, whatever waits unsent would wait for ever (a driver sleeps until a
            // frame or a timer; this loop's 1 ms steps would hide it).
            let quiet = self.queues.iter().all(|q| q.is_empty())
                && self
                    .nodes
                    .iter()
                    .all(|n| n.down || n.busy_until <= self.now && n.ep.poll_timeout().is_none());
            for (side, n) in self.nodes.iter().enumerate() {
                assert!(
                    !quiet || n.down || !n.ep.has_unsent(),
                    "side {side} at {:?}: something waits unsent with no frame and no timer \
                     on either side: {} (link: mtu {}, shared {}, paced {}, half duplex {})",
                    self.now,
                    n.ep.unsent_report(),
                    self.profile.params.mtu,
                    self.profile.params.shared,
                    self.profile.params.paced,
                    self.profile.params.half_duplex,
                );
            }
            let mut next = end;
            for to in 0..2 {
                if let Some(f) = self.queues[to].front() {
                    next = next.min(f.at);
                }
            }
            for n in &self.nodes {
                if n.busy_until > self.now {
                    next = next.min(n.busy_until);
                }
                if let Some(t) = n.ep.poll_timeout() {
                    next = next.min(t);
                }
            }
            // Deadlines already passed wait for the next poll: step at least 1 ms.
            let next = next.max(self.now + Duration::from_millis(1));
            self.advance(next - self.now);
        }
        self.synced()
    }
}

/// Whether `b` differs from `a` only inside PIECE data (a corruption the payload hash
/// catches) or does not parse at all (a corruption the parser catches).
fn only_piece_data_differs(a: &[u8], b: &[u8]) -> bool {
    let (Ok((ha, ma)), Ok((hb, mb))) = (wire::parse(a), wire::parse(b)) else {
        return true;
    };
    ha == hb
        && ma.len() == mb.len()
        && ma.iter().zip(&mb).all(|(x, y)| match (x, y) {
            (
                Message::Piece {
                    r: r1,
                    offset: o1,
                    data: d1,
                },
                Message::Piece {
                    r: r2,
                    offset: o2,
                    data: d2,
                },
            ) => r1 == r2 && o1 == o2 && d1.len() == d2.len(),
            _ => x == y,
        })
}

/// One of the two endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

impl Side {
    fn index(self) -> usize {
        match self {
            Side::A => 0,
            Side::B => 1,
        }
    }
}

/// One step of a session fuzz run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `from` is asked for a frame of at most `64 + max_len % 1500` bytes.
    Send {
        from: Side,
        max_len: u16,
    },
    /// The frame at `index` (modulo the queue) towards `to` arrives: any order.
    Deliver {
        to: Side,
        index: u8,
    },
    Drop {
        to: Side,
        index: u8,
    },
    Duplicate {
        to: Side,
        index: u8,
    },
    /// The frame arrives with byte `pos` XORed with `xor`.
    Corrupt {
        to: Side,
        index: u8,
        pos: u16,
        xor: u8,
    },
    /// A frame delivered to `to` before arrives again.
    Replay {
        to: Side,
        index: u8,
    },
    Advance {
        ms: u16,
    },
    /// Bundle `bundle % 24` at version `1 + version % 3`, `size % 4000` bytes.
    Insert {
        side: Side,
        bundle: u8,
        version: u8,
        size: u16,
    },
    LinkDown {
        side: Side,
    },
    LinkUp {
        side: Side,
    },
}

/// Reads bytes front to back; past the end everything reads as zero. The fuzz targets of
/// other crates read their inputs with it too.
#[derive(Debug, Clone)]
pub struct Input<'a>(pub &'a [u8]);

impl<'a> Input<'a> {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// The next `n` bytes, or fewer at the end.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        head
    }

    fn side(&mut self) -> Side {
        if self.u8() & 1 == 0 { Side::A } else { Side::B }
    }
}

impl Op {
    /// Decodes a list of operations: a tag byte, then the fields (bytes, u16 little
    /// endian). Any bytes decode.
    pub fn decode_all(data: &[u8]) -> Vec<Op> {
        let mut b = Input(data);
        let mut ops = Vec::new();
        while !b.0.is_empty() {
            let op = match b.u8() % 10 {
                0 => Op::Send {
                    from: b.side(),
                    max_len: b.u16(),
                },
                1 => Op::Deliver {
                    to: b.side(),
                    index: b.u8(),
                },
                2 => Op::Drop {
                    to: b.side(),
                    index: b.u8(),
                },
                3 => Op::Duplicate {
                    to: b.side(),
                    index: b.u8(),
                },
                4 => Op::Corrupt {
                    to: b.side(),
                    index: b.u8(),
                    pos: b.u16(),
                    xor: b.u8(),
                },
                5 => Op::Replay {
                    to: b.side(),
                    index: b.u8(),
                },
                6 => Op::Advance { ms: b.u16() },
                7 => Op::Insert {
                    side: b.side(),
                    bundle: b.u8(),
                    version: b.u8(),
                    size: b.u16(),
                },
                8 => Op::LinkDown { side: b.side() },
                _ => Op::LinkUp { side: b.side() },
            };
            ops.push(op);
        }
        ops
    }

    /// The inverse of [`Op::decode_all`] for one operation (to write corpus files).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let side = |s: Side| s.index() as u8;
        match *self {
            Op::Send { from, max_len } => {
                out.extend([0, side(from)]);
                out.extend(max_len.to_le_bytes());
            }
            Op::Deliver { to, index } => out.extend([1, side(to), index]),
            Op::Drop { to, index } => out.extend([2, side(to), index]),
            Op::Duplicate { to, index } => out.extend([3, side(to), index]),
            Op::Corrupt {
                to,
                index,
                pos,
                xor,
            } => {
                out.extend([4, side(to), index]);
                out.extend(pos.to_le_bytes());
                out.push(xor);
            }
            Op::Replay { to, index } => out.extend([5, side(to), index]),
            Op::Advance { ms } => {
                out.push(6);
                out.extend(ms.to_le_bytes());
            }
            Op::Insert {
                side: s,
                bundle,
                version,
                size,
            } => {
                out.extend([7, side(s), bundle, version]);
                out.extend(size.to_le_bytes());
            }
            Op::LinkDown { side: s } => out.extend([8, side(s)]),
            Op::LinkUp { side: s } => out.extend([9, side(s)]),
        }
    }
}

/// Most operations taken from one input (longer inputs are cut, to keep runs short).
pub const MAX_OPS: usize = 2_000;

/// Drives two endpoints through `ops` over the link `profile` (see [`Profile::pick`]),
/// checking after each that nothing panicked and every queue is bounded; then runs a
/// clean link and checks that both stores hold the union of what was inserted (unless
/// a corruption produced another well-formed frame) and that no bundle version was
/// received twice.
pub fn session(profile: u8, ops: &[Op]) {
    let mut p = Pair::new(Profile::pick(profile));
    for op in ops.iter().take(MAX_OPS) {
        p.apply(op);
        p.check_bounded();
    }
    for side in [Side::A, Side::B] {
        p.apply(&Op::LinkUp { side });
    }
    // After an undetected corruption only the bounds are checked: a short run will do.
    let limit = if p.tainted { 60 } else { 900 };
    let synced = p.run_clean(Duration::from_secs(limit));
    p.check_bounded();
    if !p.tainted {
        assert!(
            synced,
            "not synced after 15 clean minutes: inserted {:?}\nA {:?}\nB {:?}\nA {:?}\nB {:?}",
            p.inserted,
            held(&p.nodes[0].store),
            held(&p.nodes[1].store),
            p.nodes[0].ep.describe_sessions(),
            p.nodes[1].ep.describe_sessions(),
        );
    }
}

/// [`session`] over raw bytes: the first byte picks the link profile, the rest are
/// operations ([`Op::decode_all`]).
pub fn session_bytes(data: &[u8]) {
    let Some((&profile, rest)) = data.split_first() else {
        return;
    };
    session(profile, &Op::decode_all(rest));
}

/// A store holding one bundle whose payload is a shared buffer: what a real store's
/// in-memory cache offers ([`BundleStore::read_shared`]).
#[derive(Debug)]
pub struct SharedStore {
    pub inner: MemStore,
    pub payload: bytes::Bytes,
}

impl BundleStore for SharedStore {
    fn inventory(&mut self) -> Vec<(BundleId, u64, u64)> {
        self.inner.inventory()
    }
    fn manifest(&mut self, id: &BundleId) -> Option<SignedManifest> {
        self.inner.manifest(id)
    }
    fn read(&mut self, id: &BundleId, version: u64, offset: u64, buf: &mut [u8]) -> usize {
        self.inner.read(id, version, offset, buf)
    }
    fn read_shared(
        &mut self,
        id: &BundleId,
        version: u64,
        offset: u64,
        len: usize,
    ) -> Option<bytes::Bytes> {
        self.inner
            .held
            .get(id)
            .filter(|(m, _)| m.version() == version)?;
        let start = (offset as usize).min(self.payload.len());
        let end = start.saturating_add(len).min(self.payload.len());
        Some(self.payload.slice(start..end))
    }
    fn offer(&mut self, m: &SignedManifest) -> crate::Offer {
        self.inner.offer(m)
    }
    fn write(&mut self, id: &BundleId, version: u64, offset: u64, data: &[u8]) -> crate::Written {
        self.inner.write(id, version, offset, data)
    }
}

/// One sender with sessions to `n` empty receivers over point-to-point links (link `i`
/// of the sender leads to receiver `i`, lossless and instant), for fan-out tests and
/// benchmarks. Call [`FanOut::offer`] to store a bundle at the sender, then poll it.
#[derive(Debug)]
pub struct FanOut {
    pub sender: Endpoint,
    pub store: SharedStore,
    pub receivers: Vec<(Endpoint, MemStore)>,
    pub now: Duration,
    pub mtu: usize,
}

impl FanOut {
    pub fn params(mtu: usize) -> LinkParams {
        LinkParams {
            mtu,
            shared: false,
            paced: false,
            half_duplex: false,
            rate_bps: None,
            rtt_hint: Duration::from_millis(10),
            loss_hint: 0.0,
            discover_mtu: false,
            frame_overhead: 0,
            handoff: Duration::ZERO,
            duty: None,
            reliable: false,
            turns: None,
        }
    }

    /// Sessions established and reconciled with every receiver.
    pub fn new(n: usize, mtu: usize) -> Self {
        let mut sender = Endpoint::new(Config::default(), node_key(0), 7);
        let mut store = SharedStore {
            inner: MemStore::new(),
            payload: bytes::Bytes::new(),
        };
        let now = Duration::from_millis(1);
        // One small bundle both sides come to hold: each session's sets are not empty
        // when the bundle under test is offered (the usual case), so what the offer
        // adds per peer is the transfer, not a first allocation of a set's map.
        let (m, payload) = bundle(u64::MAX / 2, 1, 16);
        store.inner.insert(m, payload);
        let mut receivers: Vec<(Endpoint, MemStore)> = (0..n)
            .map(|i| {
                let mut ep =
                    Endpoint::new(Config::default(), node_key(i as u64 + 1), 100 + i as u64);
                ep.link_up(now, 0, Self::params(mtu));
                (ep, MemStore::new())
            })
            .collect();
        for i in 0..n {
            sender.link_up(now, i, Self::params(mtu));
        }
        for _ in 0..8 {
            for (i, (ep, st)) in receivers.iter_mut().enumerate() {
                while let Some(f) = sender.poll_transmit(now, i, mtu, &mut store) {
                    ep.handle_frame(now, 0, &f, st);
                }
                while let Some(f) = ep.poll_transmit(now, 0, mtu, st) {
                    sender.handle_frame(now, i, &f, &mut store);
                }
            }
        }
        Self {
            sender,
            store,
            receivers,
            now,
            mtu,
        }
    }

    /// Stores bundle `n` of `len` bytes at the sender: it is offered to every receiver.
    pub fn offer(&mut self, n: u64, len: usize) -> SignedManifest {
        let (m, payload) = bundle(n, 1, len);
        self.store.payload = bytes::Bytes::from(payload.clone());
        self.store.inner.insert(m.clone(), payload);
        self.sender.bundle_stored(self.now, m.id(), &mut self.store);
        m
    }
}
