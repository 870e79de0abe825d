//! Encode once, send to many, through the endpoint: frames of one bundle to several
//! peers carry handles on the one payload buffer, and reassemble exactly.

use skywave_proto::fuzzing::FanOut;

#[test]
fn frames_to_every_peer_share_the_payload_buffer() {
    let mut f = FanOut::new(3, 1472);
    let m = f.offer(42, 200_000);
    let base = f.store.payload.as_ptr() as usize;
    let range = base..base + f.store.payload.len();
    let mut payload_bytes = 0usize;
    let mut frames = 0usize;
    for i in 0..3 {
        while let Some(t) = f.sender.poll_transmit_parts(f.now, i, f.mtu, &mut f.store) {
            frames += 1;
            assert!(t.len() <= f.mtu);
            if !t.tail.is_empty() {
                // The data of the frame's last piece is a slice of the stored buffer.
                let p = t.tail.as_ptr() as usize;
                assert!(range.contains(&p) && range.contains(&(p + t.tail.len() - 1)));
                payload_bytes += t.tail.len();
            }
            let (ep, st) = &mut f.receivers[i];
            ep.handle_frame(f.now, 0, &t.into_vec(), st);
        }
    }
    assert!(frames >= 3 * 136, "{frames} frames");
    // Nearly all payload rides as shared tails (only a piece followed by another
    // message in the same frame is copied).
    assert!(payload_bytes >= 3 * 190_000, "{payload_bytes} B shared");
    for (i, (_, st)) in f.receivers.iter().enumerate() {
        let (rm, data) = st
            .held
            .get(&m.id())
            .unwrap_or_else(|| panic!("receiver {i} lacks the bundle"));
        assert_eq!(rm.version(), 1);
        assert_eq!(&data[..], &f.store.payload[..], "receiver {i}");
    }
}

#[test]
fn without_a_shared_buffer_frames_are_whole() {
    // A store that cannot lend its payload: frames come out in one piece, same bytes.
    let mut f = FanOut::new(1, 400);
    let m = f.offer(7, 5_000);
    f.store.payload = bytes::Bytes::new();
    let mut n = 0;
    while let Some(t) = f.sender.poll_transmit_parts(f.now, 0, f.mtu, &mut f.store) {
        n += 1;
        let (ep, st) = &mut f.receivers[0];
        ep.handle_frame(f.now, 0, &t.into_vec(), st);
    }
    assert!(n >= 13, "{n} frames");
    assert!(f.receivers[0].1.held.contains_key(&m.id()));
}
