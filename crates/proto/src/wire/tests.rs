use super::*;

fn r() -> BundleRef {
    BundleRef {
        prefix: [1, 2, 3, 4, 5, 6, 7, 8],
        version: 300,
    }
}

#[test]
fn fixed_bytes_of_a_piece_frame() {
    let mut w = FrameWriter::new(Header::unaddressed(5), 200);
    assert!(w.piece(&r(), 1000, b"abc"));
    let f = w.finish();
    assert_eq!(
        f,
        [
            0x52, 0x00, 0x05, // version, flags, pn 5
            0x06, 0x0f, // PIECE, 15 bytes
            1, 2, 3, 4, 5, 6, 7, 8, 0xac, 0x02, // ref: prefix, version 300
            0xe8, 0x07, // offset 1000
            b'a', b'b', b'c',
        ]
    );
    let (h, msgs) = parse(&f).unwrap();
    assert_eq!(h, Header::unaddressed(5));
    assert_eq!(
        msgs,
        vec![Message::Piece {
            r: r(),
            offset: 1000,
            data: b"abc"
        }]
    );
}

#[test]
fn addressed_frame_with_several_messages() {
    let mut w = FrameWriter::new(
        Header {
            addr: Some((0xaabbccdd, BROADCAST)),
            pn: 1,
            short_tags: false,
        },
        1472,
    );
    assert!(w.hello(&[9; 32], 77, 10_000, 1, &[5, 6]));
    assert!(w.have_all(&r()));
    let mut ranges = RangeSet::new();
    ranges.insert(0, 100);
    ranges.insert(200, 250);
    assert!(w.have(&r(), &ranges));
    assert_eq!(w.want(3, &[1, 2, 3]), 3);
    assert!(w.recon_done(2, 280));
    let ack = Ack {
        largest: 100,
        delay_us: 250,
        ranges: vec![(90, 100), (50, 80), (10, 10)],
    };
    assert!(w.ack(&ack));
    let f = w.finish();
    assert_eq!(
        &f[..10],
        &[0x52, 0x01, 0xdd, 0xcc, 0xbb, 0xaa, 0xff, 0xff, 0xff, 0xff]
    );
    let (h, msgs) = parse(&f).unwrap();
    assert_eq!(h.addr, Some((0xaabbccdd, BROADCAST)));
    assert_eq!(msgs.len(), 6);
    assert_eq!(
        msgs[0],
        Message::Hello {
            node_key: [9; 32],
            nonce: 77,
            set_size: 10_000,
            flags: 1,
            sketch: &[5, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0],
        }
    );
    assert_eq!(msgs[1], Message::HaveAll { r: r() });
    assert_eq!(msgs[2], Message::Have { r: r(), ranges });
    match &msgs[3] {
        Message::Want { len, prefixes } => {
            assert_eq!(*len, 3);
            assert_eq!(
                Message::want_prefixes(*len, prefixes).collect::<Vec<_>>(),
                vec![1, 2, 3]
            )
        }
        m => panic!("{m:?}"),
    }
    assert_eq!(
        msgs[4],
        Message::ReconDone {
            epoch: 2,
            used: 280
        }
    );
    assert_eq!(msgs[5], Message::Ack(ack));
}

#[test]
fn unknown_messages_are_skipped_and_bad_frames_dropped() {
    let mut w = FrameWriter::new(Header::unaddressed(0), 100);
    assert!(w.raw(0x7f, b"from the future"));
    assert!(w.have_all(&r()));
    let f = w.finish();
    let (_, msgs) = parse(&f).unwrap();
    assert_eq!(
        msgs,
        vec![Message::Unknown { ty: 0x7f }, Message::HaveAll { r: r() }]
    );
    // Length past the end.
    let mut bad = f.clone();
    bad[4] = 200;
    assert_eq!(parse(&bad), Err(WireError::Malformed("length")));
    assert_eq!(parse(&[0x51, 0]), Err(WireError::UnknownVersion(0x51)));
    assert_eq!(parse(&[0x53, 0]), Err(WireError::UnknownVersion(0x53)));
    assert_eq!(parse(&[]), Err(WireError::Truncated));
    assert_eq!(parse(&[0x52, 1, 0, 0]), Err(WireError::Truncated));
    // A symbols message whose size is not a multiple of 9.
    let mut w = FrameWriter::new(Header::unaddressed(0), 100);
    assert!(w.raw(ty::SYMBOLS, &[0, 0, 1, 2, 3]));
    assert_eq!(parse(&w.finish()), Err(WireError::Malformed("SYMBOLS")));
}

#[test]
fn writer_respects_the_budget() {
    let mut w = FrameWriter::new(
        Header {
            addr: Some((1, 2)),
            pn: 1,
            short_tags: false,
        },
        200,
    );
    let room = w.piece_room(&r(), 0);
    let data = vec![7u8; room];
    assert!(w.piece(&r(), 0, &data));
    assert_eq!(w.len(), 200, "a full piece fills the frame exactly");
    assert!(!w.have_all(&r()));
    let mut w = FrameWriter::new(Header::unaddressed(1), 200);
    let n = w.symbols(0, 0, 1000, |i| crate::recon::riblt::Symbol {
        sum: i,
        checksum: 1,
    });
    assert!(n >= 21 && w.len() <= 200, "{n} symbols, {} bytes", w.len());
}

#[test]
fn fixed_bytes_of_recon_messages() {
    let mut w = FrameWriter::new(Header::unaddressed(7), 200);
    let sym = |i: u64| crate::recon::riblt::Symbol {
        sum: 0x0605_0403_0200 + (i - 299),
        checksum: 0x0c_0b0a,
    };
    assert_eq!(w.symbols(1, 300, 2, sym), 2);
    assert_eq!(w.want(2, &[0xbeef, 0x0102]), 2);
    assert_eq!(w.want(6, &[0x0605_0403_0201]), 1);
    let f = w.finish();
    assert_eq!(
        f,
        [
            0x52, 0x00, 0x07, // version 2, flags, pn 7
            0x02, 0x15, 0x01, 0xac, 0x02, // SYMBOLS, 21 bytes: epoch 1, first 300
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0a, 0x0b, 0x0c, // symbol 300
            0x02, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0a, 0x0b, 0x0c, // symbol 301
            0x04, 0x05, 0x02, 0xef, 0xbe, 0x02, 0x01, // WANT, 5 bytes: 2-byte prefixes
            0x04, 0x07, 0x06, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, // WANT, whole id
        ]
    );
    let (_, msgs) = parse(&f).unwrap();
    match &msgs[0] {
        Message::Symbols { epoch, first, data } => {
            assert_eq!((*epoch, *first), (1, 300));
            assert_eq!(
                Message::symbols(data).collect::<Vec<_>>(),
                vec![sym(300), sym(301)]
            );
        }
        m => panic!("{m:?}"),
    }
    assert_eq!(
        msgs[1],
        Message::Want {
            len: 2,
            prefixes: &[0xef, 0xbe, 0x02, 0x01]
        }
    );
    // Bad WANTs: no length byte, length 0 or 7, no prefix, a partial prefix.
    for body in [
        &[][..],
        &[0, 1],
        &[7, 1, 2, 3, 4, 5, 6, 7],
        &[2],
        &[2, 1, 2, 3],
    ] {
        let mut w = FrameWriter::new(Header::unaddressed(0), 100);
        assert!(w.raw(ty::WANT, body));
        assert_eq!(
            parse(&w.finish()),
            Err(WireError::Malformed("WANT")),
            "{body:?}"
        );
    }
    let mut w = FrameWriter::new(Header::unaddressed(0), 100);
    assert_eq!(w.want(0, &[1]), 0);
    assert_eq!(w.want(7, &[1]), 0);
}

#[test]
fn fixed_bytes_of_a_listed_set() {
    let mut w = FrameWriter::new(Header::unaddressed(7), 200);
    let id = |i: u64| 0x0605_0403_0200 + i;
    assert_eq!(w.ids(1, 300, 298, 2, id), 2);
    let f = w.finish();
    assert_eq!(
        f,
        [
            0x52, 0x00, 0x07, // version 2, flags, pn 7
            0x19, 0x11, 0x01, 0xac, 0x02, 0xaa,
            0x02, // IDS, 17 bytes: epoch 1, total 300, first 298
            0x2a, 0x03, 0x03, 0x04, 0x05, 0x06, // entry 298
            0x2b, 0x03, 0x03, 0x04, 0x05, 0x06, // entry 299
        ]
    );
    let (_, msgs) = parse(&f).unwrap();
    match &msgs[0] {
        Message::Ids {
            epoch,
            total,
            first,
            data,
        } => {
            assert_eq!((*epoch, *total, *first), (1, 300, 298));
            assert_eq!(
                Message::listed_ids(data).collect::<Vec<_>>(),
                vec![id(298), id(299)]
            );
        }
        m => panic!("{m:?}"),
    }
    // As many as fit, never past the budget.
    let mut w = FrameWriter::new(Header::unaddressed(1), 100);
    let n = w.ids(0, 1000, 0, 1000, id);
    assert!(n >= 14 && w.len() <= 100, "{n} entries, {} bytes", w.len());
    // Bad lists: no entry, a partial entry, entries past the total, a total past the
    // most a list may hold.
    for body in [
        &[1, 2, 0][..],
        &[1, 2, 0, 1, 2, 3],
        &[1, 1, 0, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6],
        &[1, 2, 2, 1, 2, 3, 4, 5, 6],
        &[1, 0x81, 0x80, 0x04, 0, 1, 2, 3, 4, 5, 6],
    ] {
        let mut w = FrameWriter::new(Header::unaddressed(0), 100);
        assert!(w.raw(ty::IDS, body));
        assert_eq!(
            parse(&w.finish()),
            Err(WireError::Malformed("IDS")),
            "{body:?}"
        );
    }
}

proptest::proptest! {
    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
        let _ = parse(&bytes);
    }

    #[test]
    fn ack_round_trip(largest in 40u64..1_000_000, gaps in proptest::collection::vec((0u64..5, 0u64..5), 0..6)) {
        let mut ranges = vec![(largest - 3, largest)];
        let mut low = largest - 3;
        for (g, l) in gaps {
            let Some(high) = low.checked_sub(g + 2) else { break };
            let Some(lo) = high.checked_sub(l) else { break };
            ranges.push((lo, high));
            low = lo;
        }
        let ack = Ack { largest, delay_us: 5, ranges };
        let mut w = FrameWriter::new(Header::unaddressed(0), 1400);
        proptest::prop_assert!(w.ack(&ack));
        let f = w.finish();
        let (_, msgs) = parse(&f).unwrap();
        proptest::prop_assert_eq!(&msgs[0], &Message::Ack(ack));
    }
}

#[test]
fn fixed_bytes_of_fec_and_need() {
    let mut w = FrameWriter::new(Header::unaddressed(3), 200);
    assert!(w.fec(&r(), 300, &[7, 8, 9, 10]));
    assert!(w.need(&r(), 130, 7));
    let f = w.finish();
    let mut want = vec![0x52, 0x00, 0x03];
    // FEC: ref (8 + 2), symbol_size 4, esi 300 (2 bytes), data.
    want.extend([0x0a, 17]);
    want.extend(r().prefix);
    want.extend([0xac, 0x02, 4, 0xac, 0x02, 7, 8, 9, 10]);
    // NEED: ref, varint 130, last ESI 7.
    want.extend([0x0c, 13]);
    want.extend(r().prefix);
    want.extend([0xac, 0x02, 0x82, 0x01, 7]);
    assert_eq!(f, want);
    let (_, msgs) = parse(&f).unwrap();
    assert_eq!(
        msgs[1],
        Message::Need {
            r: r(),
            needed: 130,
            last_esi: 7
        }
    );
    // A NEED with bytes after its count is malformed.
    let mut w = FrameWriter::new(Header::unaddressed(0), 100);
    let mut body = r().prefix.to_vec();
    body.extend([0xac, 0x02, 1, 0, 0]);
    assert!(w.raw(ty::NEED, &body));
    assert_eq!(parse(&w.finish()), Err(WireError::Malformed("NEED")));
}

#[test]
fn heard_is_a_varint_packet_number() {
    let mut w = FrameWriter::new(Header::unaddressed(0), 100);
    assert!(w.heard(300));
    let f = w.finish();
    assert_eq!(f, vec![0x52, 0x00, 0x00, 0x0d, 2, 0xac, 0x02]);
    let (_, msgs) = parse(&f).unwrap();
    assert_eq!(msgs, vec![Message::Heard { pn: 300 }]);
    // Trailing bytes, or none at all, are malformed.
    for body in [&[0xac, 0x02, 0][..], &[][..]] {
        let mut w = FrameWriter::new(Header::unaddressed(0), 100);
        assert!(w.raw(ty::HEARD, body));
        assert!(parse(&w.finish()).is_err(), "{body:?}");
    }
}

#[test]
fn spacing_is_three_varints_none_zero_but_the_number() {
    let mut w = FrameWriter::new(Header::unaddressed(0), 100);
    assert!(w.spacing(300, 1200, 400_000));
    let f = w.finish();
    // 300 = ac 02; 1200 = b0 09; 400000 = 80 b5 18.
    assert_eq!(
        f,
        vec![
            0x52, 0x00, 0x00, 0x16, 7, 0xac, 0x02, 0xb0, 0x09, 0x80, 0xb5, 0x18
        ]
    );
    let (_, msgs) = parse(&f).unwrap();
    assert_eq!(
        msgs,
        vec![Message::Spacing {
            pn: 300,
            bytes: 1200,
            gap_ns: 400_000
        }]
    );
    // A zero size or gap is not written, and is malformed when read.
    let mut w = FrameWriter::new(Header::unaddressed(0), 100);
    assert!(!w.spacing(1, 0, 5));
    assert!(!w.spacing(1, 5, 0));
    for body in [
        &[1, 0, 5][..],
        &[1, 5, 0][..],
        &[1, 5, 5, 0][..],
        &[1, 5][..],
    ] {
        let mut w = FrameWriter::new(Header::unaddressed(0), 100);
        assert!(w.raw(ty::SPACING, body));
        assert_eq!(
            parse(&w.finish()),
            Err(WireError::Malformed("SPACING")),
            "{body:?}"
        );
    }
}

#[test]
fn missed_names_ranges_of_packet_numbers() {
    let mut w = FrameWriter::new(Header::unaddressed(0), 100);
    assert_eq!(w.missed(&[(7, 7), (300, 302)]), 2);
    let f = w.finish();
    // First 7, count - 1 = 0; then 292 frames between, less one (0xa3 0x02), count - 1 = 2.
    assert_eq!(f, vec![0x52, 0x00, 0x00, 0x11, 5, 7, 0, 0xa3, 0x02, 2]);
    let (_, msgs) = parse(&f).unwrap();
    assert_eq!(
        msgs,
        vec![Message::Missed {
            ranges: vec![(7, 7), (300, 302)]
        }]
    );
    // As many as fit go (about 2 bytes each), at most MAX_MISSED_RANGES.
    let many: Vec<(u64, u64)> = (0..100)
        .map(|i| (1000 + i * 10, 1000 + i * 10 + 1))
        .collect();
    // Writes `many` into a frame of `budget` bytes; checks the frame parses back to
    // the ranges written, and returns how many.
    let round_trip = |budget: usize| {
        let mut w = FrameWriter::new(Header::unaddressed(0), budget);
        let n = w.missed(&many);
        let f = w.finish();
        let (_, msgs) = parse(&f).unwrap();
        assert_eq!(
            msgs,
            vec![Message::Missed {
                ranges: many[..n].to_vec()
            }]
        );
        n
    };
    assert_eq!(round_trip(1000), MAX_MISSED_RANGES);
    let n = round_trip(48);
    assert!(n > 10 && n < MAX_MISSED_RANGES, "{n}");
    // Inverted, touching or falling ranges, or none, are not written.
    let mut w = FrameWriter::new(Header::unaddressed(0), 100);
    assert_eq!(w.missed(&[(5, 4)]), 0);
    assert_eq!(w.missed(&[(5, 6), (7, 8)]), 0);
    assert_eq!(w.missed(&[(9, 9), (5, 6)]), 0);
    assert_eq!(w.missed(&[]), 0);
    // Empty, truncated, overflowing or too many ranges are malformed.
    let too_many: Vec<u8> = (0..=MAX_MISSED_RANGES).flat_map(|_| [0u8, 0]).collect();
    let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
    let overflow: Vec<u8> = max.iter().copied().chain([0, 0, 0]).collect();
    for body in [&[][..], &[7][..], &overflow[..], &too_many[..]] {
        let mut w = FrameWriter::new(Header::unaddressed(0), 1000);
        assert!(w.raw(ty::MISSED, body));
        assert!(parse(&w.finish()).is_err(), "{body:?}");
    }
}

#[test]
fn nameless_names_a_bundle() {
    let mut w = FrameWriter::new(Header::unaddressed(0), 100);
    assert!(w.nameless(&r()));
    let f = w.finish();
    let (_, msgs) = parse(&f).unwrap();
    assert_eq!(msgs, vec![Message::Nameless { r: r() }]);
    // A trailing byte is malformed.
    let mut body = Vec::new();
    r().put(&mut body);
    body.push(0);
    let mut w = FrameWriter::new(Header::unaddressed(0), 100);
    assert!(w.raw(ty::NAMELESS, &body));
    assert!(parse(&w.finish()).is_err());
}

#[test]
fn a_fragments_parity_names_its_message_and_count() {
    let mut w = FrameWriter::new(Header::unaddressed(0), 48);
    assert!(w.frag_parity(300, 140, 5, &[9; 30]));
    let f = w.finish();
    let (_, msgs) = parse(&f).unwrap();
    assert_eq!(
        msgs,
        vec![Message::FragParity {
            id: 300,
            total: 140,
            count: 5,
            data: &[9; 30]
        }]
    );
    // The frame's header (3), then type, length, id (2), total (2), count and the data.
    assert_eq!(f.len(), 3 + 1 + 1 + 2 + 2 + 1 + 30);
    // Longer than a frame: not written.
    let mut w = FrameWriter::new(Header::unaddressed(0), 48);
    assert!(!w.frag_parity(300, 140, 5, &[9; 40]));
    // Malformed: fewer than two fragments, more than the message, nothing, a count
    // larger than the bytes.
    for (total, count, len) in [(140u64, 1u64, 30usize), (20, 2, 30), (140, 2, 0), (3, 4, 2)] {
        let mut body = Vec::new();
        skywave_bundle::varint::put(&mut body, 300);
        skywave_bundle::varint::put(&mut body, total);
        skywave_bundle::varint::put(&mut body, count);
        body.extend(std::iter::repeat_n(9u8, len));
        let mut w = FrameWriter::new(Header::unaddressed(0), 100);
        assert!(w.raw(ty::FRAG_PARITY, &body));
        assert!(
            parse(&w.finish()).is_err(),
            "total {total} count {count} len {len}"
        );
    }
}

#[test]
fn a_shared_tail_gives_the_same_bytes() {
    let data = bytes::Bytes::from_static(b"payload bytes held once");
    let header = Header {
        addr: Some((1, 2)),
        pn: 9,
        short_tags: false,
    };
    let mut plain = FrameWriter::new(header, 200);
    assert!(plain.piece(&r(), 64, &data));
    let plain = plain.finish();
    // As the last message: kept apart as the tail.
    let mut w = FrameWriter::new(header, 200);
    assert!(w.piece_shared(&r(), 64, data.slice(..)));
    assert_eq!(w.len(), plain.len());
    let (head, tail) = w.finish_parts();
    assert_eq!(tail.as_ptr(), data.as_ptr(), "not copied");
    assert_eq!([head, tail.to_vec()].concat(), plain);
    // Followed by another message: copied in, and the frame still parses.
    let mut w = FrameWriter::new(header, 200);
    assert!(w.piece_shared(&r(), 64, data.slice(..)));
    assert!(w.have_all(&r()));
    let (head, tail) = w.finish_parts();
    assert!(tail.is_empty());
    let (_, msgs) = parse(&head).unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(
        msgs[0],
        Message::Piece {
            r: r(),
            offset: 64,
            data: &data
        }
    );
    // The budget counts the tail.
    let mut w = FrameWriter::new(header, 40);
    assert!(!w.fec_shared(&r(), 3, data.slice(..)));
}

#[test]
fn a_piece_right_after_its_manifest_does_not_name_the_bundle_again() {
    let other = BundleRef {
        prefix: [9; 8],
        version: 1,
    };
    let mut w = FrameWriter::new(Header::unaddressed(1), 200);
    assert!(w.manifest(b"MANIFEST-OF-R"));
    let full = w.piece_room(&r(), 0);
    w.named(r());
    // 10 bytes of reference saved: the prefix and the version's two-byte varint.
    assert_eq!(w.piece_room(&r(), 0), full + 10);
    // Only for the bundle named: another's piece still names its bundle (its version
    // takes one byte, not two).
    assert_eq!(w.piece_room(&other, 0), full + 1);
    assert!(w.piece(&r(), 0, b"abc"));
    // A further piece of it in the same frame continues it too.
    assert!(w.piece(&r(), 3, b"de"));
    // Another bundle's piece names it, and the frame's "last named" moves there.
    assert!(w.piece(&other, 0, b"xy"));
    assert!(w.piece(&r(), 5, b"f"));
    let f = w.finish();
    let (_, msgs) = parse(&f).unwrap();
    assert_eq!(
        msgs,
        vec![
            Message::Manifest {
                seq: None,
                bytes: b"MANIFEST-OF-R"
            },
            Message::PieceNext {
                offset: 0,
                data: b"abc"
            },
            Message::PieceNext {
                offset: 3,
                data: b"de"
            },
            Message::Piece {
                r: other,
                offset: 0,
                data: b"xy"
            },
            Message::Piece {
                r: r(),
                offset: 5,
                data: b"f"
            },
        ]
    );
    // Fixed bytes: type 0x10, length, offset, data.
    let mut w = FrameWriter::new(Header::unaddressed(0), 200);
    w.named(r());
    assert!(w.piece(&r(), 1000, b"abc"));
    assert_eq!(
        w.finish(),
        [0x52, 0x00, 0x00, 0x10, 0x05, 0xe8, 0x07, b'a', b'b', b'c']
    );
    // An empty PIECE_NEXT is malformed.
    let mut w = FrameWriter::new(Header::unaddressed(0), 200);
    assert!(w.raw(ty::PIECE_NEXT, &[0]));
    assert!(parse(&w.finish()).is_err());
}

#[test]
fn a_frame_ending_its_senders_over_names_who_takes_the_channel() {
    let frame = |addr, end| {
        let mut w = FrameWriter::new(
            Header {
                addr,
                pn: 300,
                short_tags: false,
            },
            223,
        );
        assert!(w.have_all(&r()));
        if end {
            w.end_over();
        }
        w.finish()
    };
    let to_peer = Some((0xaabbccdd, 0x11223344));
    let f = frame(to_peer, true);
    assert_eq!(f[1], 0x03, "ADDRESSED | OVER_END");
    assert_eq!(over_end_to(&f, 0x11223344), Some(true));
    assert_eq!(over_end_to(&f, 0xaabbccdd), Some(false));
    // The flag changes nothing else: the frame parses as it would without it.
    let plain = frame(to_peer, false);
    assert_eq!(over_end_to(&plain, 0x11223344), None);
    assert_eq!(parse(&f).unwrap(), parse(&plain).unwrap());
    // Unaddressed (point to point): it names nobody.
    assert_eq!(over_end_to(&frame(None, true), 0x11223344), Some(false));
    // Not a skywave frame, or cut short in the header: nothing.
    assert_eq!(over_end_to(&[], 0x11223344), None);
    assert_eq!(
        over_end_to(&[0x51, 0x03, 0, 0, 0, 0, 1, 2, 3, 4], 0x04030201),
        None
    );
    assert_eq!(over_end_to(&f[..7], 0x11223344), None);
}

#[test]
fn offers_are_numbered_and_done_names_them_by_ranges() {
    let mut w = FrameWriter::new(Header::unaddressed(3), 100);
    assert!(w.offer(Some(300), b"M"));
    assert!(w.offer(None, b"N"));
    let mut seqs = RangeSet::new();
    seqs.insert(0, 5);
    seqs.insert(7, 8);
    assert!(w.done(0xa5, &seqs));
    let f = w.finish();
    // OFFER: type, length 3, varint 300 (0xac 0x02), the manifest; MANIFEST as before;
    // DONE: type, length 6, tag, 2 ranges: (0, 5) and (gap 2, 1).
    assert_eq!(
        &f[3..],
        &[
            0x13, 3, 0xac, 0x02, b'M', 0x05, 1, b'N', 0x14, 6, 0xa5, 2, 0, 5, 2, 1
        ]
    );
    let (_, msgs) = parse(&f).unwrap();
    assert_eq!(
        msgs,
        vec![
            Message::Manifest {
                seq: Some(300),
                bytes: b"M"
            },
            Message::Manifest {
                seq: None,
                bytes: b"N"
            },
            Message::Done { tag: 0xa5, seqs },
        ]
    );
    // An offer with no manifest, a DONE with no range or one past its end: dropped.
    for bad in [
        vec![0x52, 0, 0, 0x13, 1, 0x05],
        vec![0x52, 0, 0, 0x14, 2, 0xa5, 0],
        vec![0x52, 0, 0, 0x14, 5, 0xa5, 1, 0, 1, 9],
    ] {
        assert!(parse(&bad).is_err(), "{bad:?}");
    }
    // More ranges than a DONE may name: not written, and not taken.
    let mut many = RangeSet::new();
    for i in 0..=MAX_DONE_RANGES as u64 {
        many.insert(2 * i, 2 * i + 1);
    }
    let mut w = FrameWriter::new(Header::unaddressed(0), 1000);
    assert!(!w.done(0, &many));
    let mut body = vec![0u8];
    body.extend_from_slice(&many.encode());
    assert!(w.raw(ty::DONE, &body));
    assert!(parse(&w.finish()).is_err());
}

#[test]
fn short_tags_take_two_bytes_each_and_read_back_as_their_short_forms() {
    let long = Header {
        addr: Some((0xaabb_ccdd, 0x1122_3344)),
        pn: 300,
        short_tags: false,
    };
    let short = Header {
        short_tags: true,
        ..long
    };
    let frame = |h: Header, end: bool| {
        let mut w = FrameWriter::new(h, 64);
        assert!(w.heard(7));
        if end {
            w.end_over();
        }
        w.finish()
    };
    let (fl, fs) = (frame(long, false), frame(short, false));
    assert_eq!(fl.len() - fs.len(), 4);
    assert_eq!(short.encoded_len(), long.encoded_len() - 4);
    assert_eq!(fs[1], 0x05, "ADDRESSED | SHORT_TAGS");
    assert_eq!(&fs[2..6], &[0xdd, 0xcc, 0x44, 0x33]);
    let (h, msgs) = parse(&fs).unwrap();
    assert_eq!(h.addr, Some((0xccdd, 0x3344)));
    assert!(h.short_tags && h.is_to(0x1122_3344) && h.is_from(0xaabb_ccdd));
    assert!(
        h.is_to(0x9999_3344),
        "a short tag names every tag of its short form"
    );
    assert!(!h.is_to(0x1122_3345));
    assert_eq!(msgs, parse(&fl).unwrap().1);
    // A short broadcast is every neighbour's.
    let all = Header {
        addr: Some((0xaabb_ccdd, BROADCAST)),
        ..short
    };
    assert!(parse(&frame(all, false)).unwrap().0.is_to(BROADCAST));
    // Over's end, by the short form.
    let ended = frame(short, true);
    assert_eq!(over_end_to(&ended, 0x1122_3344), Some(true));
    assert_eq!(over_end_to(&ended, 0x1122_3345), Some(false));
    assert_eq!(over_end_to(&ended[..5], 0x1122_3344), None);
    // Cut within the tags: truncated, whichever form.
    for n in 2..6 {
        assert_eq!(parse(&fs[..n]).unwrap_err(), WireError::Truncated);
    }
    // SHORT_TAGS alone, with no tags, means nothing.
    let mut plain = frame(
        Header {
            addr: None,
            ..short
        },
        false,
    );
    plain[1] |= 0x04;
    let (h, _) = parse(&plain).unwrap();
    assert!(h.addr.is_none() && !h.short_tags);
}

#[test]
fn frag_next_carries_only_its_bytes() {
    let mut w = FrameWriter::new(Header::unaddressed(7), 64);
    let msg: Vec<u8> = (0..200u8).collect();
    // As a continuation the fragment takes the frame's whole room less its type and length.
    let n = w.frag(3, 50, &msg, 0, true);
    assert_eq!(n, 64 - 3 - 2);
    let f = w.finish();
    let (_, msgs) = parse(&f).unwrap();
    assert_eq!(
        msgs,
        vec![Message::FragNext {
            data: &msg[50..50 + n]
        }]
    );
    // Named in full (id 1 byte, offset 1, total 2), 4 bytes fewer of the message fit.
    let mut w = FrameWriter::new(Header::unaddressed(7), 64);
    assert_eq!(w.frag(3, 50, &msg, 0, false), n - 4);
    // Empty: malformed.
    let mut w = FrameWriter::new(Header::unaddressed(7), 64);
    assert!(w.raw(ty::FRAG_NEXT, &[]));
    assert!(parse(&w.finish()).is_err());
}
