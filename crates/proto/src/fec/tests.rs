use std::time::Duration;

use bytes::Bytes;
use proptest::prelude::*;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use super::*;
use crate::wire::{self, FrameWriter, Header, Message};

fn payload(len: usize, seed: u64) -> Bytes {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut v = vec![0u8; len];
    rng.fill_bytes(&mut v);
    Bytes::from(v)
}

fn shuffle<T>(v: &mut [T], rng: &mut ChaCha8Rng) {
    for i in (1..v.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

fn chance(rng: &mut ChaCha8Rng, p: f64) -> bool {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
}

fn bref() -> BundleRef {
    BundleRef {
        prefix: [7; 8],
        version: 1_700_000_000_000,
    }
}

/// Feeds `esis` in order until complete; returns the payload.
fn decode(enc: &mut FecEncoder, esis: &[u64]) -> Option<Bytes> {
    let mut dec = FecDecoder::new(enc.layout().len());
    for &esi in esis {
        let s = enc.symbol(esi).unwrap();
        if dec.push(esi, &s).unwrap() == Progress::Complete {
            assert!(dec.is_complete());
            return dec.into_payload();
        }
    }
    dec.payload().cloned()
}

#[test]
fn layout_maps_every_esi_once() {
    for (len, t) in [
        (1u64, 8u16),
        (8, 8),
        (9, 8),
        (1000, 100),
        (8192 * 8, 8),
        (8193 * 8, 8),
        (3 * 8192 * 8 + 5, 8),
    ] {
        let l = Layout::new(len, t).unwrap();
        let kt = l.source_symbols();
        assert_eq!(kt, len.div_ceil(u64::from(t)));
        assert_eq!(l.blocks() as u64, kt.div_ceil(u64::from(BLOCK_TARGET)));
        let total: u64 = (0..l.blocks()).map(|b| u64::from(l.block_symbols(b))).sum();
        assert_eq!(total, kt);
        // Source ESIs are in payload order, block by block.
        let mut expect = (0u32, 0u32);
        for esi in 0..kt {
            assert_eq!(l.locate(esi).unwrap(), expect, "len {len} esi {esi}");
            assert_eq!(l.block_start(expect.0) + u64::from(expect.1), esi);
            expect.1 += 1;
            if expect.1 == l.block_symbols(expect.0) {
                expect = (expect.0 + 1, 0);
            }
        }
        // Repair ESIs go round robin.
        for j in 0..(3 * u64::from(l.blocks())) {
            let (b, i) = l.locate(l.repair_esi(j)).unwrap();
            assert_eq!(u64::from(b), j % u64::from(l.blocks()));
            assert_eq!(
                u64::from(i),
                u64::from(l.block_symbols(b)) + j / u64::from(l.blocks())
            );
        }
        let last = l.esi_limit() - 1;
        let (b, i) = l.locate(last).unwrap();
        assert_eq!(i, l.block_symbols(b) + l.repair_per_block() - 1);
        assert!(matches!(
            l.locate(l.esi_limit()),
            Err(FecError::EsiOutOfRange { .. })
        ));
    }
    let l = Layout::new(1000, 10).unwrap();
    assert_eq!(l.repair_count(0.0), 0);
    assert_eq!(l.repair_count(f64::NAN), 0);
    assert_eq!(l.repair_count(0.101), 11);
    assert_eq!(l.repair_count(f64::INFINITY), l.esi_limit() - 100);
    let empty = Layout::new(0, 100).unwrap();
    assert_eq!(empty.esi_limit(), 0);
    assert!(empty.locate(0).is_err());
    assert!(matches!(
        Layout::new(10, 7),
        Err(FecError::BadSymbolSize(7))
    ));
    assert!(matches!(
        Layout::new(10, MAX_SYMBOL_SIZE + 1),
        Err(FecError::BadSymbolSize(_))
    ));
    assert!(matches!(
        Layout::new(1 << 40, 8),
        Err(FecError::TooLarge { .. })
    ));
    // Past 255 blocks of the target size, blocks grow.
    let big = Layout::new(300 * 8192 * 8, 8).unwrap();
    assert_eq!(big.blocks(), 255);
    assert!(big.block_symbols(0) > BLOCK_TARGET);
}

#[test]
fn symbol_fits_the_frame() {
    let r = bref();
    for frame in [200usize, 223, 256, 512, 1200, 1400, 1472] {
        for len in [1u64, 50, 150, 180, 1000, 100_000, 1 << 20, 50 << 20] {
            let t = symbol_size_for_frame(frame, &r, len).unwrap();
            let l = Layout::new(len, t).unwrap();
            if len >= 1000 {
                // No more symbols than 40 bytes of header per frame would need.
                assert!(
                    l.source_symbols() <= len.div_ceil(frame as u64 - 40),
                    "frame {frame} len {len}: symbol {t} wastes the frame"
                );
            } else {
                assert!(u64::from(t) <= len.max(u64::from(MIN_SYMBOL_SIZE)));
            }
            // The worst header (addressed, packet number just under 2^42) and the
            // largest ESI still fit.
            let header = Header {
                addr: Some((1, wire::BROADCAST)),
                pn: (1 << 42) - 1,
                short_tags: false,
            };
            let esi = l.esi_limit() - 1;
            let data = vec![0xa5u8; usize::from(t)];
            let mut w = FrameWriter::new(header, frame);
            assert!(w.fec(&r, esi, &data), "frame {frame} len {len} t {t}");
            let bytes = w.finish();
            assert!(bytes.len() <= frame);
            let (_, msgs) = wire::parse(&bytes).unwrap();
            assert_eq!(
                msgs,
                vec![Message::Fec {
                    r,
                    symbol_size: u64::from(t),
                    esi,
                    data: &data[..]
                }]
            );
        }
    }
    // Small payloads get evened-out symbols: 171 bytes at a 170-byte limit is 2 x 86.
    let t170 = symbol_size_for_budget(170 + message_len(&r, 170, 0) - 170, &r, 100_000);
    assert!(t170.is_ok());
    let t = symbol_size_for_frame(200, &r, 171).unwrap();
    assert_eq!(Layout::new(171, t).unwrap().source_symbols(), 2);
    assert!(t <= 90);
    assert!(matches!(
        symbol_size_for_frame(30, &r, 1000),
        Err(FecError::FrameTooSmall { .. })
    ));
}

#[test]
fn round_trip_sizes() {
    let t = 100u16;
    for len in [0usize, 1, 7, 99, 100, 101, 1000, 4321, 50_000] {
        let data = payload(len, len as u64);
        let mut enc = FecEncoder::new(data.clone(), t).unwrap();
        let kt = enc.source_symbols();
        // Source symbols alone.
        let esis: Vec<u64> = (0..kt).collect();
        assert_eq!(decode(&mut enc, &esis).unwrap(), data, "len {len}");
        if len == 0 {
            assert_eq!(enc.esi_limit(), 0);
            assert!(enc.symbol(0).is_err());
            continue;
        }
        // Repair symbols alone.
        let repair: Vec<u64> = (kt..kt + kt + 2).collect();
        assert_eq!(decode(&mut enc, &repair).unwrap(), data, "len {len} repair");
        // Every symbol has the symbol size.
        for esi in [0, kt - 1, kt, kt + 5] {
            assert_eq!(enc.symbol(esi).unwrap().len(), usize::from(t));
        }
    }
}

#[test]
fn symbols_are_shared_not_recomputed() {
    let data = payload(10_000, 1);
    let mut enc = FecEncoder::new(data.clone(), 256).unwrap();
    let a = enc.symbol(3).unwrap();
    assert_eq!(
        a.as_ptr(),
        data[3 * 256..].as_ptr(),
        "source symbols are slices"
    );
    let kt = enc.source_symbols();
    let r1 = enc.symbol(kt + 2).unwrap();
    let r2 = enc.symbol(kt + 2).unwrap();
    assert_eq!(r1.as_ptr(), r2.as_ptr(), "repair symbols are cached");
    let tail1 = enc.symbol(kt - 1).unwrap();
    let tail2 = enc.symbol(kt - 1).unwrap();
    assert_eq!(tail1.as_ptr(), tail2.as_ptr());
    assert_eq!(&tail1[..10_000 - 39 * 256], &data[39 * 256..]);
    assert!(tail1[10_000 - 39 * 256..].iter().all(|&b| b == 0));
}

#[test]
fn any_k_plus_two_in_any_order_decode_and_match_the_manifest_hash() {
    for seed in 0..20u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let len = 1 + (rng.next_u64() % 20_000) as usize;
        let t = 16 + (rng.next_u64() % 300) as u16;
        let data = payload(len, seed);
        let manifest_hash = blake3::hash(&data);
        let mut enc = FecEncoder::new(data, t).unwrap();
        let kt = enc.source_symbols();
        let mut esis: Vec<u64> = (0..kt * 2 + 10).collect();
        shuffle(&mut esis, &mut rng);
        esis.truncate(kt as usize + 2);
        let got = decode(&mut enc, &esis).expect("K + 2 symbols decode");
        assert_eq!(got.len(), len);
        assert_eq!(blake3::hash(&got), manifest_hash, "seed {seed}");
    }
}

#[test]
fn loss_with_enough_repair_decodes() {
    // 15% loss, 30% repair: the receiver gets ~1.1 K symbols.
    let data = payload(40_000, 9);
    let mut enc = FecEncoder::new(data.clone(), 200).unwrap();
    let kt = enc.source_symbols();
    let repair = enc.layout().repair_count(0.30);
    assert_eq!(repair, 60);
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let esis: Vec<u64> = (0..kt + repair)
            .filter(|_| !chance(&mut rng, 0.15))
            .collect();
        assert_eq!(decode(&mut enc, &esis).unwrap(), data, "seed {seed}");
    }
    // Fewer symbols than K: not complete, and the decoder says how many are missing.
    let mut dec = FecDecoder::new(40_000);
    for esi in 10..kt + 5 {
        if esi % 2 == 0 {
            dec.push(esi, &enc.symbol(esi).unwrap()).unwrap();
        }
    }
    assert!(!dec.is_complete());
    assert_eq!(dec.needed(), kt - dec.received());
    // Topping up with any further symbols completes it.
    let mut esi = kt + 5;
    while !dec.is_complete() {
        dec.push(esi, &enc.symbol(esi).unwrap()).unwrap();
        esi += 1;
    }
    assert_eq!(dec.payload().unwrap(), &data);
}

#[test]
fn multi_block_round_trip_with_loss() {
    // 8193 symbols of 8 bytes: two source blocks (4097 + 4096).
    let len = 8193 * 8 - 3;
    let data = payload(len, 77);
    let mut enc = FecEncoder::new(data.clone(), 8).unwrap();
    assert_eq!(enc.layout().blocks(), 2);
    let kt = enc.source_symbols();
    let repair = enc.layout().repair_count(0.12);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut esis: Vec<u64> = (0..kt + repair)
        .filter(|_| !chance(&mut rng, 0.05))
        .collect();
    shuffle(&mut esis, &mut rng);
    let mut dec = FecDecoder::with_symbol_size(len as u64, 8).unwrap();
    let cap = (u64::from(enc.layout().block_symbols(0)) + u64::from(MAX_EXTRA_SYMBOLS)) * 2 * 8;
    let mut done = false;
    for esi in esis {
        let p = dec.push(esi, &enc.symbol(esi).unwrap()).unwrap();
        assert!(dec.buffered_bytes() <= cap);
        if p == Progress::Complete {
            done = true;
            break;
        }
    }
    assert!(done);
    assert_eq!(dec.buffered_bytes(), 0);
    assert_eq!(dec.payload().unwrap(), &data);
}

#[test]
fn duplicates_are_ignored() {
    let data = payload(1000, 3);
    let mut enc = FecEncoder::new(data.clone(), 100).unwrap();
    let mut dec = FecDecoder::new(1000);
    let s0 = enc.symbol(0).unwrap();
    assert_eq!(dec.push(0, &s0).unwrap(), Progress::Buffered);
    for _ in 0..5 {
        assert_eq!(dec.push(0, &s0).unwrap(), Progress::Redundant);
    }
    assert_eq!(dec.received(), 1);
    assert_eq!(dec.redundant(), 5);
    assert_eq!(dec.buffered_bytes(), 100);
    let mut last = Progress::Buffered;
    for esi in 1..10 {
        last = dec.push(esi, &enc.symbol(esi).unwrap()).unwrap();
    }
    assert_eq!(last, Progress::Complete);
    // After completion every symbol is redundant.
    assert_eq!(
        dec.push(3, &enc.symbol(3).unwrap()).unwrap(),
        Progress::Redundant
    );
    assert_eq!(
        dec.push(15, &enc.symbol(15).unwrap()).unwrap(),
        Progress::Redundant
    );
    assert_eq!(dec.payload().unwrap(), &data);
}

#[test]
fn malformed_input_is_an_error_not_a_panic() {
    let data = payload(1000, 4);
    let mut enc = FecEncoder::new(data.clone(), 100).unwrap();
    let limit = enc.esi_limit();
    let mut dec = FecDecoder::new(1000);
    // A first symbol with an impossible size fixes nothing.
    assert_eq!(dec.push(0, &[]), Err(FecError::BadSymbolSize(0)));
    assert_eq!(dec.push(0, &[1, 2, 3]), Err(FecError::BadSymbolSize(3)));
    assert!(matches!(
        dec.push(0, &vec![0; 70_000]),
        Err(FecError::BadSymbolSize(70_000))
    ));
    // Nor does one with an ESI out of range for its size.
    assert!(matches!(
        dec.push(u64::MAX, &enc.symbol(0).unwrap()),
        Err(FecError::EsiOutOfRange { .. })
    ));
    assert_eq!(dec.symbol_size(), None);
    assert_eq!(dec.push(0, &enc.symbol(0).unwrap()), Ok(Progress::Buffered));
    assert_eq!(dec.symbol_size(), Some(100));
    assert_eq!(
        dec.push(1, &[0u8; 99]),
        Err(FecError::SymbolSizeMismatch {
            expected: 100,
            got: 99
        })
    );
    assert_eq!(
        dec.push(limit, &[0u8; 100]),
        Err(FecError::EsiOutOfRange { esi: limit, limit })
    );
    assert!(dec.push(u64::MAX, &[0u8; 100]).is_err());
    assert_eq!(dec.received(), 1);
    // Garbage of the right size is accepted as symbols; the payload it yields fails the
    // manifest hash, which the caller checks.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut garbage = [0u8; 100];
    let mut esi = 1;
    while !dec.is_complete() {
        rng.fill_bytes(&mut garbage);
        match dec.push(esi, &garbage) {
            Ok(_) => {}
            Err(FecError::Undecodable { .. }) => break,
            Err(e) => panic!("{e}"),
        }
        esi += 1;
    }
    if let Some(p) = dec.payload() {
        assert_ne!(blake3::hash(p), blake3::hash(&data));
    }
    // Encoder: out-of-range ESIs are errors.
    assert!(matches!(
        enc.symbol(limit),
        Err(FecError::EsiOutOfRange { .. })
    ));
    assert!(enc.symbol(u64::MAX).is_err());
    assert!(FecEncoder::new(data, 3).is_err());
    // A decoder for an absurd length at a tiny symbol size is refused, not allocated.
    assert!(matches!(
        FecDecoder::with_symbol_size(1 << 40, 8),
        Err(FecError::TooLarge { .. })
    ));
    let mut huge = FecDecoder::new(u64::MAX);
    assert!(huge.push(0, &[0u8; 8]).is_err());
    // Empty payload: complete from the start.
    let mut empty = FecDecoder::new(0);
    assert!(empty.is_complete());
    assert_eq!(empty.push(0, &[0u8; 8]), Ok(Progress::Redundant));
    assert_eq!(empty.payload().map(|p| p.len()), Some(0));
}

fn input(loss: f64, rtt_ms: u64, rate: u64, len: u64, t: u16) -> PolicyInput {
    PolicyInput {
        loss,
        rtt: Duration::from_millis(rtt_ms),
        rate,
        half_duplex: false,
        turnaround: Duration::ZERO,
        receivers: 1,
        payload_len: len,
        symbol_size: t,
        queued: 0,
    }
}

#[test]
fn policy_matches_the_link_profiles() {
    let pol = FecPolicy::default();
    // lan: clean, short: retransmission.
    let lan = pol.plan(&input(0.0, 0, 125_000_000, 1 << 20, 1400));
    assert!(!lan.use_fec);
    assert_eq!(lan.repair_symbols, 0);
    // hf-modem: clean, long: retransmission (nothing to repair).
    let mut hf = input(0.0, 8000, 184, 10_000, 160);
    hf.half_duplex = true;
    hf.turnaround = Duration::from_secs(2);
    assert!(!pol.plan(&hf).use_fec);
    // The same modem with 2% loss: a report round costs 12 s, FEC wins.
    hf.loss = 0.02;
    let p = pol.plan(&hf);
    assert!(p.use_fec, "{p:?}");
    assert!(p.repair_ratio > 0.02);
    // ...but not for a 7-frame bundle: 3 repair frames cost more airtime than the
    // 13% chance of a 12 s round.
    hf.payload_len = 1000;
    assert!(!pol.plan(&hf).use_fec);
    // satellite 1%, 300 ms one way, 10 MB at 20 Mbit/s: FEC with a little repair.
    let sat = pol.plan(&input(0.01, 600, 2_500_000, 10 << 20, 1400));
    assert!(sat.use_fec, "{sat:?}");
    assert!(
        sat.repair_ratio > 0.01 && sat.repair_ratio < 0.03,
        "{sat:?}"
    );
    // lfn-lossy: the same.
    let lfn = pol.plan(&input(0.01, 230, 3_750_000, 50 << 20, 1400));
    assert!(lfn.use_fec && lfn.repair_ratio < 0.03, "{lfn:?}");
    // A lossy full-duplex link with plenty of other data queued: round trips are
    // hidden by the queue, so retransmission (it resends only what was lost).
    let mut busy = input(0.01, 230, 3_750_000, 1 << 20, 1400);
    busy.queued = 10 << 20;
    assert!(!pol.plan(&busy).use_fec);
    // uhf-csma-lossy broadcast to 4 neighbours: every symbol serves all of them, where
    // pieces go to each alone. Rounds are cheap there, so little goes up front.
    let mut uhf = input(0.10, 30, 16_000, 20_000, 160);
    uhf.receivers = 4;
    let b = pol.plan(&uhf);
    assert!(b.use_fec && b.fec_time * 2 < b.arq_time, "{b:?}");
    // The same with 1 s report rounds: repair up front.
    uhf.rtt = Duration::from_secs(1);
    let b = pol.plan(&uhf);
    assert!(b.use_fec && b.repair_ratio > 0.10, "{b:?}");
    // A tiny bundle on a short lossy unicast hop: one frame, just resend it.
    assert!(!pol.plan(&input(0.05, 20, 16_000, 100, 100)).use_fec);
    // Empty payloads and bad inputs never use FEC.
    assert!(!pol.plan(&input(0.5, 1000, 1000, 0, 100)).use_fec);
    assert!(!pol.plan(&input(f64::NAN, 1000, 1000, 1000, 100)).use_fec);
    // Loss past the cap is clamped: the plan stays finite.
    let worst = pol.plan(&input(1.0, 1000, 1000, 100_000, 100));
    assert!(worst.repair_ratio <= pol.max_repair_ratio + 0.01);
}

#[test]
fn planned_repair_suffices_for_every_receiver() {
    // Simulate the plan: each receiver loses each symbol independently.
    let pol = FecPolicy::default();
    let data = payload(60_000, 11);
    let mut enc = FecEncoder::new(data.clone(), 200).unwrap();
    let kt = enc.source_symbols();
    // A lossy radio whose report rounds are dear (2 s): the plan sends enough up front
    // for every receiver to finish in one pass.
    let mut uhf = input(0.10, 2000, 16_000, 60_000, 200);
    uhf.receivers = 3;
    let plan = pol.plan(&uhf);
    assert!(plan.use_fec);
    // Where a round costs little (30 ms) next to the airtime, less goes up front and
    // the top-ups after reports do the rest.
    let mut cheap = uhf;
    cheap.rtt = Duration::from_millis(30);
    let c = pol.plan(&cheap);
    assert!(
        c.use_fec && c.repair_symbols < plan.repair_symbols,
        "{c:?} vs {plan:?}"
    );
    let mut failures = 0;
    for seed in 0..30 {
        let mut rng = ChaCha8Rng::seed_from_u64(100 + seed);
        for _ in 0..uhf.receivers {
            let esis: Vec<u64> = (0..kt + plan.repair_symbols)
                .filter(|_| !chance(&mut rng, uhf.loss))
                .collect();
            if decode(&mut enc, &esis).as_ref() != Some(&data) {
                failures += 1;
            }
        }
    }
    assert!(failures <= 2, "{failures} of 90 receivers short");
}

#[test]
fn top_up_covers_the_need_at_the_loss_rate() {
    let pol = FecPolicy::default();
    // No loss: exactly what is needed plus the safety symbol.
    assert_eq!(pol.top_up(10, 0.0), 11);
    // 10% loss, 40 needed: each of 2,000 trials (binomial losses) gets >= 41 with the
    // policy's 99% target.
    let n = pol.top_up(40, 0.10);
    assert!((46..=60).contains(&n), "{n}");
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let short = (0..2000)
        .filter(|_| (0..n).filter(|_| !chance(&mut rng, 0.10)).count() < 41)
        .count();
    assert!(short <= 40, "{short} of 2000 short");
    // Loss is clamped: a claimed 100% does not ask for infinity.
    assert!(pol.top_up(5, 1.0) < 1000);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prop_round_trip_any_subset(
        len in 0usize..3000,
        t in 8u16..200,
        seed in any::<u64>(),
        extra in 2u64..6,
    ) {
        let data = payload(len, seed);
        let mut enc = FecEncoder::new(data.clone(), t).unwrap();
        let kt = enc.source_symbols();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut esis: Vec<u64> = (0..(kt * 3 + 8).min(enc.esi_limit())).collect();
        shuffle(&mut esis, &mut rng);
        esis.truncate((kt + extra) as usize);
        // Duplicates sprinkled in change nothing.
        let dups: Vec<u64> = esis.iter().step_by(3).copied().collect();
        esis.extend(dups);
        shuffle(&mut esis, &mut rng);
        let got = decode(&mut enc, &esis);
        prop_assert_eq!(got, Some(data));
    }

    #[test]
    fn prop_garbage_never_panics(
        len in 0u64..100_000,
        pushes in proptest::collection::vec((any::<u64>(), 0usize..300), 1..40),
    ) {
        let mut dec = FecDecoder::new(len);
        for (esi, size) in pushes {
            let data = vec![(esi as u8) ^ 0x5a; size];
            let esi = if esi % 2 == 0 { esi % 2000 } else { esi };
            let _ = dec.push(esi, &data);
            prop_assert!(dec.buffered_bytes() <= len + 2 * 300 * u64::from(MAX_EXTRA_SYMBOLS));
        }
    }

    #[test]
    fn prop_symbol_size_fits(frame in 64usize..2000, len in 0u64..(1 << 32), version in any::<u64>()) {
        let r = BundleRef { prefix: [1; 8], version };
        if let Ok(t) = symbol_size_for_frame(frame, &r, len) {
            let l = Layout::new(len, t).unwrap();
            let need = message_len(&r, t, l.esi_limit().saturating_sub(1));
            prop_assert!(need + FRAME_HEADER_RESERVE <= frame);
        }
    }
}

/// Encode throughput for a 1 MiB bundle in 1472-byte frames: build the encoder, then
/// produce every source symbol and 10% repair. Run with
/// `cargo test --release -p skywave-proto fec::tests::encode_throughput -- --ignored --nocapture`.
#[test]
#[ignore]
#[allow(clippy::disallowed_methods)] // wall-clock timing of a benchmark, not protocol code
fn encode_throughput_1mib() {
    let data = payload(1 << 20, 1);
    let r = bref();
    let rounds = 20;
    let start = std::time::Instant::now();
    let mut bytes = 0usize;
    let mut symbols = 0u64;
    for _ in 0..rounds {
        let mut enc = FecEncoder::for_frame(&r, data.clone(), 1472).unwrap();
        let n = enc.source_symbols() + enc.layout().repair_count(0.10);
        for esi in 0..n {
            bytes += enc.symbol(esi).unwrap().len();
        }
        symbols = n;
    }
    let secs = start.elapsed().as_secs_f64();
    let mib = (rounds * (1 << 20)) as f64 / (1 << 20) as f64;
    println!(
        "1 MiB, {symbols} symbols/round (10% repair): {:.1} MiB/s of payload, {:.1} MiB/s of symbols",
        mib / secs,
        bytes as f64 / (1 << 20) as f64 / secs
    );
    // The block encoding alone (RaptorQ's intermediate symbols).
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        let mut enc = FecEncoder::for_frame(&r, data.clone(), 1472).unwrap();
        enc.prepare();
    }
    let secs = start.elapsed().as_secs_f64();
    println!("block encoding alone: {:.1} MiB/s", mib / secs);
    // Serving the same symbols to more peers afterwards costs no encoding.
    let mut enc = FecEncoder::for_frame(&r, data, 1472).unwrap();
    enc.prepare();
    let n = enc.source_symbols() + enc.layout().repair_count(0.10);
    for esi in 0..n {
        enc.symbol(esi).unwrap();
    }
    let start = std::time::Instant::now();
    let peers = 1000;
    let mut served = 0usize;
    for _ in 0..peers {
        for esi in 0..n {
            served += enc.symbol(esi).unwrap().len();
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "re-serving to {peers} peers: {:.0} MiB/s of symbols",
        served as f64 / (1 << 20) as f64 / secs
    );
}
