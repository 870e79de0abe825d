//! Bad input on the FEC path (docs/protocol.md, "FEC"): corrupt symbols, absurd fields in
//! FEC and NEED messages, floods of symbols. Every case is counted and dropped, nothing
//! panics, no wrong payload is ever published, memory stays bounded, and the honest
//! transfer still completes.

use crate::common;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use crate::common::{Net, frame, has_type};
use bytes::Bytes;
use skywave_bundle::{BundleId, varint};
use skywave_proto::fec::{self, FecEncoder, Layout};
use skywave_proto::fuzzing;
use skywave_proto::wire::{self, BundleRef, FrameWriter, Header, Message, ty};
use skywave_proto::{Config, Endpoint, Event, FecMode, Stats};

const SEC: Duration = Duration::from_secs(1);
/// Profile 1: a point-to-point radio with 200-byte frames.
const PROFILE: u8 = 1;
const MTU: usize = 200;

/// `n` peers that send every bundle they can by FEC, on links of profile [`PROFILE`].
fn fec_net(n: usize) -> Net {
    let mut net = Net::new(n, PROFILE);
    for (i, p) in net.peers.iter_mut().enumerate() {
        let k = i as u64 + 1;
        let cfg = Config {
            fec: FecMode::Always,
            ..Config::default()
        };
        p.ep = Endpoint::new(cfg, fuzzing::node_key(k), 0xabc0 + k);
    }
    net
}

/// An FEC message of a frame: its fields and where its data lies in the frame.
struct Sym {
    symbol_size: u64,
    esi: u64,
    start: usize,
    len: usize,
}

fn fec_symbols(f: &[u8]) -> Vec<Sym> {
    let Ok((_, msgs)) = wire::parse(f) else {
        return Vec::new();
    };
    msgs.into_iter()
        .filter_map(|m| match m {
            Message::Fec {
                symbol_size,
                esi,
                data,
                ..
            } => Some(Sym {
                symbol_size,
                esi,
                // `data` borrows from `f`: its position there is the pointer difference.
                start: data.as_ptr() as usize - f.as_ptr() as usize,
                len: data.len(),
            }),
            _ => None,
        })
        .collect()
}

/// A frame with one FEC message whose symbol-size field says `size`, whatever the length
/// of `data` (the writer always writes the true length).
fn fec_raw(pn: u64, r: &BundleRef, size: u64, esi: u64, data: &[u8]) -> Vec<u8> {
    let mut body = r.prefix.to_vec();
    varint::put(&mut body, r.version);
    varint::put(&mut body, size);
    varint::put(&mut body, esi);
    body.extend_from_slice(data);
    let mut w = FrameWriter::new(Header::unaddressed(pn), body.len() + 64);
    assert!(w.raw(ty::FEC, &body));
    w.finish()
}

/// A frame with one FEC message, of any size.
fn fec_frame(pn: u64, r: &BundleRef, esi: u64, data: &[u8]) -> Vec<u8> {
    let mut w = FrameWriter::new(Header::unaddressed(pn), data.len() + 64);
    assert!(w.fec(r, esi, data));
    w.finish()
}

fn need_frame(pn: u64, r: &BundleRef, needed: u64, last_esi: u64) -> Vec<u8> {
    frame(pn, |w| {
        assert!(w.need(r, needed, last_esi));
    })
}

fn bref(n: u64, len: usize) -> (BundleId, BundleRef) {
    let id = fuzzing::bundle(n, 1, len).0.id();
    (id, BundleRef::new(&id, 1))
}

fn payload(n: u64, len: usize) -> Vec<u8> {
    fuzzing::bundle(n, 1, len).1
}

/// Whether `p` reported receiving `id` (a wrong payload must never be).
fn reported(net: &Net, peer: usize, id: &BundleId) -> bool {
    net.peers[peer]
        .events
        .iter()
        .any(|e| matches!(e, Event::Received { id: x, .. } if x == id))
}

/// Drops every frame from `from` that carries payload (an FEC symbol or a piece).
fn drop_data_from(from: usize) -> common::Hook {
    Box::new(move |f, _, bytes| {
        if f == from && (has_type(&bytes, ty::FEC) || has_type(&bytes, ty::PIECE)) {
            vec![]
        } else {
            vec![bytes]
        }
    })
}

#[test]
fn corrupt_repair_symbols_in_flight_fail_the_hash_then_the_honest_transfer_completes() {
    // Peer 0 sends a bundle to peer 1 by FEC; a quarter of the source symbols are lost
    // and every repair symbol arrives inverted, so the decoder rebuilds a wrong payload.
    let len = 3000;
    let mut net = fec_net(2);
    let id = net.peers[0].insert(net.now, 7, 1, len);
    net.connect(0, 1);
    let corrupting = Rc::new(Cell::new(true));
    let corrupted = Rc::new(Cell::new(0u64));
    let (on, count) = (corrupting.clone(), corrupted.clone());
    net.hook = Box::new(move |from, _, f| {
        if from != 0 || !on.get() {
            return vec![f];
        }
        let mut g = f.clone();
        for s in fec_symbols(&f) {
            let kt = (len as u64).div_ceil(s.symbol_size);
            if s.esi < kt {
                if s.esi % 4 == 1 {
                    return vec![];
                }
            } else {
                for b in &mut g[s.start..s.start + s.len] {
                    *b = !*b;
                }
                count.set(count.get() + 1);
            }
        }
        vec![g]
    });
    assert!(
        net.run_until(60 * SEC, |n| n.peers[1].ep.stats().failed_transfers > 0),
        "the corrupt decode never failed: {:?}",
        net.peers[1].ep.stats()
    );
    let s = net.peers[1].ep.stats();
    assert!(corrupted.get() > 0, "no repair symbol was corrupted");
    assert!(
        s.fec_decoded > 0,
        "the failure was not of a decoded payload"
    );
    assert!(!net.peers[1].holds(&id), "a wrong payload was stored");
    assert!(!reported(&net, 1, &id), "a wrong payload was published");
    corrupting.set(false);
    assert!(
        net.run_until(60 * SEC, |n| n.peers[1].holds(&id)),
        "the honest transfer did not complete: {:?}",
        net.peers[1].ep.stats()
    );
    let p = &net.peers[1];
    assert_eq!(p.store.held[&id].1, payload(7, len));
    assert_eq!(p.received.values().sum::<u32>(), 1);
}

#[test]
fn a_decoded_payload_that_fails_the_hash_is_not_published() {
    // Symbols made by hand: every source symbol but the first, and repair symbols with
    // their bytes inverted, from the peer the bundle is being received from.
    let len = 3000;
    let mut net = fec_net(2);
    let id = net.peers[0].insert(net.now, 8, 1, len);
    net.connect(0, 1);
    net.hook = drop_data_from(0);
    assert!(net.run_until(30 * SEC, |n| n.peers[1].store.partial.contains_key(&id)));
    let r = BundleRef::new(&id, 1);
    let mut enc = FecEncoder::new(Bytes::from(payload(8, len)), 64).expect("layout");
    let kt = enc.source_symbols();
    let before = net.peers[1].ep.stats().clone();
    for esi in 1..kt {
        let data = enc.symbol(esi).expect("source");
        net.inject(1, 0, &fec_frame(1000 + esi, &r, esi, &data));
    }
    assert_eq!(net.peers[1].ep.fec_decoders(), 1);
    let mut esi = kt;
    while net.peers[1].ep.stats().fec_decoded == before.fec_decoded {
        assert!(esi < kt + 10, "no decode from {} symbols", esi - 1);
        let bad: Vec<u8> = enc
            .symbol(esi)
            .expect("repair")
            .iter()
            .map(|b| !b)
            .collect();
        net.inject(1, 0, &fec_frame(1000 + esi, &r, esi, &bad));
        esi += 1;
    }
    let s = net.peers[1].ep.stats();
    assert_eq!(s.failed_transfers, before.failed_transfers + 1);
    assert_eq!(s.bundles_received, before.bundles_received);
    assert_eq!(
        net.peers[1].ep.fec_decoders(),
        0,
        "the spent decoder was kept"
    );
    assert!(!net.peers[1].holds(&id), "a wrong payload was stored");
    assert!(!reported(&net, 1, &id), "a wrong payload was published");
    // The honest sender's symbols (all of its source pass was lost above) complete it.
    net.hook = Box::new(|_, _, f| vec![f]);
    assert!(
        net.run_until(60 * SEC, |n| n.peers[1].holds(&id)),
        "the honest transfer did not complete: {:?}",
        net.peers[1].ep.stats()
    );
    assert_eq!(net.peers[1].store.held[&id].1, payload(8, len));
}

/// What one injected frame changed in the counters that matter here.
#[derive(Debug, PartialEq, Eq)]
struct Delta {
    malformed: u64,
    received: u64,
    dropped: u64,
    duplicate: u64,
    piece_bytes: u64,
}

fn delta(a: &Stats, b: &Stats) -> Delta {
    Delta {
        malformed: b.dropped_malformed - a.dropped_malformed,
        received: b.fec_symbols_received - a.fec_symbols_received,
        dropped: b.fec_symbols_dropped - a.fec_symbols_dropped,
        duplicate: b.duplicate_bytes_received - a.duplicate_bytes_received,
        piece_bytes: b.piece_bytes_received - a.piece_bytes_received,
    }
}

fn inject_counted(net: &mut Net, f: &[u8]) -> Delta {
    let before = net.peers[1].ep.stats().clone();
    net.inject(1, 0, f);
    delta(&before, net.peers[1].ep.stats())
}

const PARSE_ERROR: Delta = Delta {
    malformed: 1,
    received: 0,
    dropped: 0,
    duplicate: 0,
    piece_bytes: 0,
};
const REFUSED: Delta = Delta {
    malformed: 1,
    received: 1,
    dropped: 0,
    duplicate: 0,
    piece_bytes: 0,
};

#[test]
fn fec_messages_with_absurd_fields_are_counted_and_dropped() {
    // Peer 1 is receiving bundle 5 from peer 0 (whose symbols are held back) and holds
    // bundle 6 itself.
    let len = 5000;
    let mut net = fec_net(2);
    let id = net.peers[0].insert(net.now, 5, 1, len);
    let held_id = net.peers[1].insert(net.now, 6, 1, 700);
    net.connect(0, 1);
    net.keep_log = true;
    net.hook = drop_data_from(0);
    assert!(net.run_until(30 * SEC, |n| n.peers[1].store.partial.contains_key(&id)));
    let r = BundleRef::new(&id, 1);
    let t = fec::symbol_size_for_frame(MTU, &r, len as u64).expect("fits");
    let layout = Layout::new(len as u64, t).expect("layout");
    let mut enc = FecEncoder::new(Bytes::from(payload(5, len)), t).expect("layout");
    let sym = |n: usize| vec![0x5a; n];

    // The raw encoding agrees with the writer's.
    let good = enc.symbol(3).expect("source");
    assert_eq!(
        fec_raw(9, &r, u64::from(t), 3, &good),
        fec_frame(9, &r, 3, &good)
    );
    // Rejected by the parser: no data (symbol size 0), and data whose length is not the
    // symbol size, either way.
    for f in [
        fec_frame(10, &r, 0, &[]),
        fec_raw(11, &r, 0, 0, &[]),
        fec_raw(12, &r, 0, 0, &sym(8)),
        fec_raw(13, &r, u64::from(t), 0, &sym(usize::from(t) - 1)),
        fec_raw(14, &r, u64::from(t), 0, &sym(usize::from(t) + 1)),
        fec_raw(15, &r, u64::MAX, 0, &sym(16)),
    ] {
        assert!(wire::parse(&f).is_err());
        assert_eq!(inject_counted(&mut net, &f), PARSE_ERROR);
    }
    // Parsed, but no code has such a symbol size, or such an ESI.
    for (i, (n, esi)) in [
        (1usize, 0u64),
        (7, 0),
        (usize::from(fec::MAX_SYMBOL_SIZE) + 1, 0),
        (65_535, 0),
        (70_000, 0),
        (usize::from(t), layout.esi_limit()),
        (usize::from(t), layout.esi_limit() + 1),
        (usize::from(t), 1 << 62),
        (usize::from(t), u64::MAX),
    ]
    .into_iter()
    .enumerate()
    {
        let f = fec_frame(20 + i as u64, &r, esi, &sym(n));
        assert!(wire::parse(&f).is_ok(), "size {n}, ESI {esi}");
        assert_eq!(inject_counted(&mut net, &f), REFUSED, "size {n}, ESI {esi}");
    }
    assert_eq!(net.peers[1].ep.fec_decoders(), 0);
    // The last ESI of the code is fine (a genuine repair symbol): it starts a decoder.
    let last = layout.esi_limit() - 1;
    let f = fec_frame(40, &r, last, &enc.symbol(last).expect("repair"));
    let d = inject_counted(&mut net, &f);
    assert_eq!((d.malformed, d.received, d.dropped), (0, 1, 0));
    assert_eq!(net.peers[1].ep.fec_decoders(), 1);
    // A genuine source symbol of another code (another symbol size) does not feed the
    // decoder, but its bytes are good as a piece.
    let mut other = FecEncoder::new(Bytes::from(payload(5, len)), 64).expect("layout");
    let f = fec_frame(41, &r, 2, &other.symbol(2).expect("source"));
    assert_eq!(
        inject_counted(&mut net, &f),
        Delta {
            malformed: 0,
            received: 1,
            dropped: 1,
            duplicate: 0,
            piece_bytes: 64
        }
    );
    // A bundle nobody offered.
    let (_, unknown) = bref(77, 900);
    let f = fec_frame(42, &unknown, 0, &sym(usize::from(t)));
    assert_eq!(
        inject_counted(&mut net, &f),
        Delta {
            malformed: 0,
            received: 1,
            dropped: 1,
            duplicate: 0,
            piece_bytes: 0
        }
    );
    // A bundle already held: not stored (the copy held stays), answered HAVE_ALL.
    let hr = BundleRef::new(&held_id, 1);
    let held_bytes = net.peers[1].store.held[&held_id].1.clone();
    let sent = net.log.len();
    let f = fec_frame(43, &hr, 0, &sym(64));
    assert_eq!(
        inject_counted(&mut net, &f),
        Delta {
            malformed: 0,
            received: 1,
            dropped: 0,
            duplicate: 64,
            piece_bytes: 0
        }
    );
    assert_eq!(net.peers[1].store.held[&held_id].1, held_bytes);
    assert!(!net.peers[1].store.partial.contains_key(&held_id));
    net.run_for(SEC);
    let have_all = net.log[sent..].iter().any(|(from, _, f)| {
        *from == 1
            && wire::parse(f).is_ok_and(|(_, m)| {
                m.iter()
                    .any(|m| matches!(m, Message::HaveAll { r } if *r == hr))
            })
    });
    assert!(
        have_all,
        "a symbol of a bundle held was not answered HAVE_ALL"
    );
    assert_eq!(net.peers[1].ep.fec_decoders(), 1);
    // None of it stops the honest transfer, nor lets a wrong byte in.
    net.hook = Box::new(|_, _, f| vec![f]);
    assert!(
        net.run_until(60 * SEC, |n| n.peers[1].holds(&id)),
        "the honest transfer did not complete: {:?}",
        net.peers[1].ep.stats()
    );
    assert_eq!(net.peers[1].store.held[&id].1, payload(5, len));
    assert_eq!(net.peers[1].store.held[&held_id].1, held_bytes);
    assert_eq!(net.peers[1].ep.stats().failed_transfers, 0);
}

#[test]
fn a_symbol_of_another_size_first_does_not_block_the_honest_code() {
    // One stray symbol (another code: another symbol size) arrives before any of the
    // sender's and fixes the decoder's symbol size; the sender's source pass is lost, so
    // its repair symbols are all refused. Once its code is spent it must go on by pieces
    // (it used to stop there for good).
    let len = 3000;
    let mut net = fec_net(2);
    let id = net.peers[0].insert(net.now, 9, 1, len);
    net.connect(0, 1);
    net.hook = drop_data_from(0);
    assert!(net.run_until(30 * SEC, |n| n.peers[1].store.partial.contains_key(&id)));
    let r = BundleRef::new(&id, 1);
    let mut stray = FecEncoder::new(Bytes::from(payload(9, len)), 64).expect("layout");
    let esi = stray.source_symbols();
    net.inject(
        1,
        0,
        &fec_frame(500, &r, esi, &stray.symbol(esi).expect("repair")),
    );
    assert_eq!(net.peers[1].ep.fec_decoders(), 1);
    net.run_for(5 * SEC);
    net.hook = Box::new(|_, _, f| vec![f]);
    assert!(
        net.run_until(120 * SEC, |n| n.peers[1].holds(&id)),
        "the honest transfer did not complete: {:?}",
        net.peers[1].ep.stats()
    );
    assert_eq!(net.peers[1].store.held[&id].1, payload(9, len));
}

/// Symbols peer 0 sends in `window` after the NEED reports `lies` (`(for the bundle it
/// sends or another, needed, last_esi)`) from "peer 1", while none of its data arrives (so
/// no honest report corrects them); then the data gets through and the bundle must
/// arrive intact. Returns (symbols sent in the window, in all, the code's ESI limit, `Kt`).
fn symbols_after_needs(lies: &[(bool, u64, u64)], window: Duration) -> (u64, u64, u64, u64) {
    let len = 5000;
    let mut net = fec_net(2);
    let id = net.peers[0].insert(net.now, 11, 1, len);
    net.connect(0, 1);
    net.hook = drop_data_from(0);
    assert!(net.run_until(30 * SEC, |n| n.peers[0].ep.stats().fec_transfers > 0));
    let r = BundleRef::new(&id, 1);
    let t = fec::symbol_size_for_frame(MTU, &r, len as u64).expect("fits");
    let layout = Layout::new(len as u64, t).expect("layout");
    let kt = layout.source_symbols();
    // The source pass is out.
    assert!(net.run_until(30 * SEC, |n| n.peers[0].ep.stats().fec_symbols_sent >= kt));
    net.run_for(2 * SEC);
    let before = net.peers[0].ep.stats().clone();
    for (i, &(ours, needed, last_esi)) in lies.iter().enumerate() {
        let lr = if ours { r } else { bref(99, 4000).1 };
        net.inject(0, 0, &need_frame(7000 + i as u64, &lr, needed, last_esi));
    }
    let after = net.peers[0].ep.stats().clone();
    assert_eq!(after.fec_symbols_sent, before.fec_symbols_sent);
    assert_eq!(after.dropped_malformed, before.dropped_malformed);
    net.run_for(window);
    let s = net.peers[0].ep.stats().clone();
    assert_eq!(s.fec_transfers, 1);
    // The real receiver still gets the bundle, once its data gets through.
    net.hook = Box::new(|_, _, f| vec![f]);
    assert!(
        net.run_until(60 * SEC, |n| n.peers[1].holds(&id)),
        "the honest transfer did not complete: {:?}",
        net.peers[0].ep.stats()
    );
    assert_eq!(net.peers[1].store.held[&id].1, payload(11, len));
    (
        s.fec_symbols_sent - before.fec_symbols_sent,
        s.fec_symbols_sent,
        layout.esi_limit(),
        kt,
    )
}

#[test]
fn need_reports_that_lie_cost_a_bounded_number_of_symbols() {
    let window = 10 * SEC;
    let t0 = std::time::Instant::now();
    let (quiet, _, limit, kt) = symbols_after_needs(&[], window);
    // NEED for a bundle never sent changes nothing.
    let (unknown, _, _, _) =
        symbols_after_needs(&[(false, 5, 3), (false, u64::MAX, u64::MAX)], window);
    assert!(
        unknown <= quiet + 2,
        "{unknown} symbols after NEEDs for an unknown bundle, {quiet} without"
    );
    // A decoder never needs more than `Kt` symbols: claiming 2^64 - 1 buys no more than
    // the honest worst case, a receiver that holds nothing.
    for last_esi in [0, kt, u64::MAX] {
        let (honest, _, _, _) = symbols_after_needs(&[(true, kt, last_esi)], window);
        let (lied, total, _, _) = symbols_after_needs(&[(true, u64::MAX, last_esi)], window);
        assert!(
            lied <= honest + 2,
            "last ESI {last_esi}: {lied} symbols after NEED u64::MAX, {honest} after NEED Kt \
             ({quiet} without, Kt {kt}, ESI limit {limit})"
        );
        assert!(total <= limit, "{total} symbols sent, the code has {limit}");
    }
    // However often it is said, the code's ESIs bound what is sent.
    let lies: Vec<_> = (0..200).map(|i| (true, u64::MAX, i * 1000)).collect();
    let (_, total, _, _) = symbols_after_needs(&lies, 60 * SEC);
    assert!(total <= limit, "{total} symbols sent, the code has {limit}");
    assert!(t0.elapsed() < 10 * SEC, "too slow: {:?}", t0.elapsed());
}

#[test]
fn a_flood_of_fec_symbols_keeps_decoders_bounded() {
    // Peer 1 is receiving 40 bundles from peer 0 (whose symbols are held back); a flood
    // of symbols for them and for bundles nobody offered arrives.
    let (n, len) = (40u64, 1000usize);
    let mut net = fec_net(2);
    let ids: Vec<BundleId> = (0..n)
        .map(|i| net.peers[0].insert(net.now, 200 + i, 1, len))
        .collect();
    net.connect(0, 1);
    net.hook = drop_data_from(0);
    assert!(
        net.run_until(60 * SEC, |n| {
            ids.iter()
                .filter(|id| n.peers[1].store.partial.contains_key(id))
                .count()
                > 20
        }),
        "fewer than 21 transfers opened"
    );
    let open: Vec<BundleId> = ids
        .iter()
        .copied()
        .filter(|id| net.peers[1].store.partial.contains_key(id))
        .collect();
    let t0 = std::time::Instant::now();
    let before = net.peers[1].ep.stats().clone();
    let mut pn = 10_000;
    let mut injected = 0u64;
    // Garbage of the honest code's size for every open transfer, repair ESIs only (a
    // source symbol would be stored as a piece), again and again.
    for round in 0..20u64 {
        for (i, id) in open.iter().enumerate() {
            let r = BundleRef::new(id, 1);
            let t = fec::symbol_size_for_frame(MTU, &r, len as u64).expect("fits");
            let kt = Layout::new(len as u64, t).expect("layout").source_symbols();
            pn += 1;
            net.now += Duration::from_millis(1);
            net.inject(
                1,
                0,
                &fec_frame(pn, &r, kt + round, &[i as u8; 256][..usize::from(t)]),
            );
            injected += 1;
            assert!(net.peers[1].ep.fec_decoders() <= 16);
        }
    }
    assert_eq!(net.peers[1].ep.fec_decoders(), 16);
    // Symbols for 10,000 bundles nobody offered: nothing is kept.
    for i in 0..10_000u64 {
        let mut r = BundleRef::new(&ids[0], 1);
        r.prefix = (i ^ 0x5eed_0000_0000).to_le_bytes();
        pn += 1;
        net.inject(1, 0, &fec_frame(pn, &r, i % 50, &[7; 64]));
    }
    assert_eq!(net.peers[1].ep.fec_decoders(), 16);
    let s = net.peers[1].ep.stats();
    assert_eq!(
        s.fec_symbols_received - before.fec_symbols_received,
        injected + 10_000
    );
    assert_eq!(s.fec_symbols_dropped - before.fec_symbols_dropped, 10_000);
    assert_eq!(s.dropped_malformed, before.dropped_malformed);
    assert_eq!(s.piece_bytes_received, before.piece_bytes_received);
    assert!(t0.elapsed() < 5 * SEC, "too slow: {:?}", t0.elapsed());
    // The garbage may make decodes fail, but every bundle comes in with its own bytes.
    net.hook = Box::new(|_, _, f| vec![f]);
    assert!(
        net.run_until(300 * SEC, |n| ids.iter().all(|id| n.peers[1].holds(id))),
        "the honest transfers did not complete: {:?}",
        net.peers[1].ep.stats()
    );
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(net.peers[1].store.held[id].1, payload(200 + i as u64, len));
    }
    assert!(net.peers[1].ep.fec_decoders() <= 16);
    assert_eq!(net.peers[1].received.values().sum::<u32>(), n as u32);
}
