//! Peers that send garbage, lie or stay silent: every case is counted and dropped, memory
//! stays bounded, nothing panics, and transfers between honest peers still complete.

use crate::common;

use std::time::Duration;

use crate::common::{Net, frame, hello};
use skywave_proto::Event;
use skywave_proto::fuzzing::{self, held};
use skywave_proto::wire::{self, Message, ty};

const SEC: Duration = Duration::from_secs(1);

/// Two honest peers on a radio-like link, each holding a few bundles of its own.
fn honest_pair(profile: u8) -> Net {
    let mut net = Net::new(2, profile);
    net.connect(0, 1);
    for i in 0..4 {
        net.peers[0].insert(net.now, i, 1, 300 + 200 * i as usize);
        net.peers[1].insert(net.now, 100 + i, 1, 500);
    }
    net
}

fn synced(net: &Net) -> bool {
    held(&net.peers[0].store) == held(&net.peers[1].store)
        && net.peers[0].store.held.len() == 8
        && net.peers[0].store.partial.is_empty()
}

fn established(net: &Net) -> bool {
    net.peers.iter().all(|p| p.ep.peers().count() > 0)
}

#[test]
fn malformed_and_truncated_frames_are_counted_and_dropped() {
    let mut net = honest_pair(1);
    net.keep_log = true;
    assert!(net.run_until(10 * SEC, established));
    net.run_for(Duration::from_millis(300));
    // A real frame from peer 0, cut at every length and with bytes flipped.
    let (_, _, f) = net
        .log
        .iter()
        .rev()
        .find(|(from, _, f)| *from == 0 && f.len() > 40)
        .cloned()
        .expect("peer 0 sent data");
    let mut bad = Vec::new();
    for n in 0..f.len() {
        bad.push(f[..n].to_vec());
    }
    for i in 2..f.len() {
        let mut g = f.clone();
        g[i] ^= 0x80;
        bad.push(g);
    }
    // A message length running past the end, and a non-canonical varint length.
    bad.push(vec![wire::VERSION, 0, 7, ty::HAVE_ALL, 40, 1, 2, 3]);
    bad.push(vec![wire::VERSION, 0, 7, ty::HAVE_ALL, 0x89, 0x00]);
    let malformed: Vec<_> = bad
        .into_iter()
        .filter(|b| matches!(wire::parse(b), Err(e) if !matches!(e, wire::WireError::UnknownVersion(_))))
        .collect();
    assert!(malformed.len() > f.len() / 2, "too few malformed variants");
    let before = net.peers[1].ep.stats().clone();
    for b in &malformed {
        net.inject(1, 0, b);
    }
    let after = net.peers[1].ep.stats().clone();
    assert_eq!(
        after.dropped_malformed - before.dropped_malformed,
        malformed.len() as u64
    );
    assert_eq!(after.bundles_received, before.bundles_received);
    assert_eq!(after.piece_bytes_received, before.piece_bytes_received);
    // An unknown message type is skipped, not a reason to drop the frame.
    let unknown = frame(900, |w| {
        assert!(w.raw(0x3f, b"from the future"));
    });
    net.inject(1, 0, &unknown);
    assert_eq!(
        net.peers[1].ep.stats().dropped_malformed,
        after.dropped_malformed
    );
    assert!(
        net.run_until(60 * SEC, synced),
        "honest sync did not finish"
    );
}

#[test]
fn unknown_frame_versions_are_counted_and_dropped() {
    let mut net = honest_pair(1);
    assert!(net.run_until(10 * SEC, established));
    let good = frame(77, |w| {
        assert!(w.recon_done(1, 3));
    });
    for v in [0x00, 0x41, 0x51, 0x5f, 0xff] {
        let mut f = good.clone();
        f[0] = v;
        net.inject(1, 0, &f);
    }
    let s = net.peers[1].ep.stats();
    assert_eq!(s.dropped_unknown_version, 5);
    assert_eq!(s.dropped_malformed, 0);
    assert!(net.run_until(60 * SEC, synced));
}

/// A copy of `f` with the data of every PIECE inverted (the rest untouched).
fn corrupt_pieces(f: &[u8]) -> Vec<u8> {
    let (_, msgs) = wire::parse(f).expect("peers send well-formed frames");
    let mut g = f.to_vec();
    for m in msgs {
        if let Message::Piece { data, .. } = m {
            // `data` borrows from `f`: its position there is the pointer difference.
            let start = data.as_ptr() as usize - f.as_ptr() as usize;
            for b in &mut g[start..start + data.len()] {
                *b = !*b;
            }
        }
    }
    g
}

#[test]
fn corrupted_pieces_fail_verification_then_the_bundle_comes_from_an_honest_peer() {
    // Peer 0 receives; peer 1 corrupts every piece it sends; peer 2 is honest. Both hold
    // the bundle. The honest link comes up once the corrupt transfer has failed.
    let mut net = Net::new(3, 1);
    let id = net.peers[1].insert(net.now, 7, 1, 1500);
    net.peers[2].insert(net.now, 7, 1, 1500);
    let bad = net.connect(0, 1);
    net.hook = Box::new(|from, _, f| {
        if from == 1 && common::has_type(&f, ty::PIECE) {
            vec![corrupt_pieces(&f)]
        } else {
            vec![f]
        }
    });
    assert!(
        net.run_until(30 * SEC, |n| n.peers[0].ep.stats().failed_transfers > 0),
        "the corrupt transfer never completed"
    );
    assert!(!net.peers[0].holds(&id), "a corrupt bundle was accepted");
    assert!(net.peers[0].received.is_empty());
    net.set_up(bad, false);
    net.connect(0, 2);
    assert!(
        net.run_until(30 * SEC, |n| n.peers[0].holds(&id)),
        "not received from the honest peer"
    );
    let p = &net.peers[0];
    assert_eq!(p.store.held[&id].1, fuzzing::bundle(7, 1, 1500).1);
    assert_eq!(p.received.values().sum::<u32>(), 1);
    assert!(p.events.iter().any(|e| matches!(e,
        Event::Received { from, .. } if *from == fuzzing::node_key(3))));
}

/// Payload bytes (PIECE data) peer `from` sent in `net`'s log.
fn piece_bytes_from(net: &Net, from: usize) -> u64 {
    net.log
        .iter()
        .filter(|(f, _, _)| *f == from)
        .flat_map(|(_, _, fr)| wire::parse(fr).map(|(_, m)| m).unwrap_or_default())
        .map(|m| match m {
            Message::Piece { data, .. } => data.len() as u64,
            _ => 0,
        })
        .sum()
}

#[test]
fn a_bad_payload_is_not_fetched_again_from_its_only_source_without_backoff() {
    // Peer 1 is the only source of a 1,500 B bundle and corrupts every piece. Fetching it
    // again at once would move the same bad bytes for ever: over ten minutes the
    // receiver asks again only as the backoff allows (a handful of copies, not hundreds),
    // and says why in its counters.
    let mut net = Net::new(2, 1);
    net.keep_log = true;
    let id = net.peers[1].insert(net.now, 7, 1, 1500);
    net.connect(0, 1);
    net.hook = Box::new(|from, _, f| {
        if from == 1 && common::has_type(&f, ty::PIECE) {
            vec![corrupt_pieces(&f)]
        } else {
            vec![f]
        }
    });
    net.run_for(600 * SEC);
    let s = net.peers[0].ep.stats();
    assert!(!net.peers[0].holds(&id), "a corrupt bundle was accepted");
    assert!(s.bad_payloads >= 2, "never asked again: {s:?}");
    assert!(
        s.bad_payloads <= 8,
        "{} bad copies in 10 minutes: asked again without backoff",
        s.bad_payloads
    );
    let sent = piece_bytes_from(&net, 1);
    assert!(sent <= 1500 * 12, "{sent} B of pieces for 1,500 B");
    // Once the source is fixed (its store repaired), the bundle arrives at the next try.
    net.hook = Box::new(|_, _, f| vec![f]);
    assert!(
        net.run_until(3600 * SEC, |n| n.peers[0].holds(&id)),
        "not received once the source sent good bytes"
    );
}

#[test]
fn corrupting_peer_alongside_an_honest_one() {
    // As above, but both links are up at once: the store's partial copy is shared, so
    // corrupt pieces land in it too and completions may fail the hash until an honest
    // copy of every piece arrives.
    let mut net = Net::new(3, 1);
    let id = net.peers[1].insert(net.now, 7, 1, 1500);
    net.peers[2].insert(net.now, 7, 1, 1500);
    net.connect(0, 1);
    net.connect(0, 2);
    net.hook = Box::new(|from, _, f| {
        if from == 1 && common::has_type(&f, ty::PIECE) {
            vec![corrupt_pieces(&f)]
        } else {
            vec![f]
        }
    });
    assert!(
        net.run_until(120 * SEC, |n| n.peers[0].holds(&id)),
        "not received: {} failed transfers",
        net.peers[0].ep.stats().failed_transfers
    );
    // Each failed copy blames both senders; then one source at a time fills the copy, so
    // the corrupt one is found within a few copies.
    let s = net.peers[0].ep.stats();
    assert!(s.bad_payloads <= 3, "{} bad copies", s.bad_payloads);
}

#[test]
fn forged_manifests_are_counted_and_dropped() {
    let mut net = honest_pair(1);
    assert!(net.run_until(10 * SEC, established));
    let (m, _) = fuzzing::bundle(55, 1, 400);
    let good = m.as_bytes().to_vec();
    let mut forged = Vec::new();
    // A signature that does not verify.
    let mut f = good.clone();
    *f.last_mut().expect("non-empty") ^= 1;
    forged.push(f);
    // A field changed under the author's signature (the length).
    let mut f = good.clone();
    f[34] ^= 0x01;
    forged.push(f);
    // Trailing garbage, a truncation, and an unknown format.
    let mut f = good.clone();
    f.push(0);
    forged.push(f);
    forged.push(good[..good.len() - 1].to_vec());
    let mut f = good.clone();
    f[0] = 0xc0;
    forged.push(f);
    for (i, bytes) in forged.iter().enumerate() {
        let fr = frame(1000 + i as u64, |w| {
            assert!(w.manifest(bytes));
        });
        net.inject(1, 0, &fr);
    }
    let p = &net.peers[1];
    assert_eq!(p.ep.stats().bad_manifests, forged.len() as u64);
    assert!(!p.holds(&m.id()));
    assert!(
        !p.store.partial.contains_key(&m.id()),
        "forged offer opened"
    );
    assert!(net.run_until(60 * SEC, synced));
}

#[test]

fn a_peer_claiming_a_billion_bundles_gets_a_bounded_stream() {
    // Peer 0 holds 10 bundles; a fake peer whose key is larger (so peer 0 streams) claims
    // 10^9 in its HELLO and then says nothing. The stream must stop after a bounded
    // number of symbols rather than run on towards 2 * 10^9.
    let mut net = Net::new(1, 1);
    for i in 0..10 {
        net.peers[0].insert(net.now, i, 1, 100);
    }
    let link = 0;
    net.peers[0]
        .ep
        .link_up(net.now, link, fuzzing::Profile::pick(1).params);
    let fake = [0xfe; 32];
    let t0 = std::time::Instant::now();
    net.inject(0, link, &hello(&fake, 9, 1_000_000_000));
    let mut symbols = 0u64;
    for _ in 0..20_000 {
        net.now += Duration::from_millis(25);
        let p = &mut net.peers[0];
        p.ep.handle_timeout(net.now);
        // The radio takes a frame per 25 ms (64 kbit/s).
        if let Some(f) = p.ep.poll_transmit(net.now, link, 200, &mut p.store)
            && let Ok((_, msgs)) = wire::parse(&f)
        {
            for m in msgs {
                if let Message::Symbols { data, .. } = m {
                    symbols += (data.len() / skywave_proto::recon::riblt::SYMBOL_LEN) as u64;
                }
            }
        }
    }
    assert!(t0.elapsed() < 2 * SEC, "too slow: {:?}", t0.elapsed());
    // An honest decoder needs ~1.7 d symbols; the claim alone must not buy more than a
    // bounded burst before the decoder asks for more.
    assert!(
        symbols <= 8192,
        "{symbols} symbols streamed to a peer that never answered"
    );
}

#[test]
fn a_peer_claiming_a_billion_bundles_costs_no_allocation() {
    // Same claim, on a half-duplex link (bursts capped) and with peer 0 as the decoder:
    // the HELLO is handled at once and what is sent stays small.
    for (fake, profile) in [([0xfe; 32], 3u8), ([0x01; 32], 1)] {
        let mut net = Net::new(1, profile);
        for i in 0..10 {
            net.peers[0].insert(net.now, i, 1, 100);
        }
        net.peers[0]
            .ep
            .link_up(net.now, 0, fuzzing::Profile::pick(profile).params);
        let t0 = std::time::Instant::now();
        net.inject(0, 0, &hello(&fake, 9, 1_000_000_000));
        net.inject(0, 0, &hello(&fake, 9, u64::MAX));
        let mut sent = 0usize;
        for _ in 0..2_000 {
            net.now += Duration::from_millis(50);
            let p = &mut net.peers[0];
            p.ep.handle_timeout(net.now);
            if let Some(f) = p.ep.poll_transmit(net.now, 0, 250, &mut p.store) {
                sent += f.len();
            }
        }
        assert!(t0.elapsed() < 2 * SEC, "too slow: {:?}", t0.elapsed());
        // At most one capped burst (4096 symbols) plus HELLOs and requests.
        assert!(sent < 4096 * 13 * 2, "profile {profile}: {sent} bytes sent");
    }
}

#[test]
fn a_peer_that_never_acks_or_reports_costs_bounded_memory() {
    // Peer 0 serves peer 1 (honest) and a fake peer that only ever said HELLO.
    let mut net = Net::new(2, 1);
    net.connect(0, 1);
    let silent_link = 1;
    net.peers[0]
        .ep
        .link_up(net.now, silent_link, net.profile.params);
    let silent = [0xfe; 32];
    net.inject(0, silent_link, &hello(&silent, 5, 0));
    assert!(net.run_until(10 * SEC, established));
    let mut ids = Vec::new();
    for i in 0..10 {
        ids.push(net.peers[0].insert(net.now, i, 1, 1200));
    }
    // Drain what peer 0 offers the silent peer: it goes nowhere.
    let mut to_silent = 0usize;
    let mut drained = |net: &mut Net| {
        let p = &mut net.peers[0];
        if let Some(f) = p.ep.poll_transmit(net.now, silent_link, 200, &mut p.store) {
            to_silent += f.len();
        }
    };
    let done = |n: &Net| ids.iter().all(|id| n.peers[1].holds(id));
    let end = net.now + 120 * SEC;
    while net.now < end && !done(&net) {
        drained(&mut net);
        let t = net.now + Duration::from_millis(50);
        net.run_until(Duration::from_millis(50), |n| n.now >= t);
    }
    assert!(done(&net), "the honest peer was not served");
    // Keep the silent session going for ten virtual minutes.
    for _ in 0..600 {
        drained(&mut net);
        net.run_for(SEC);
    }
    let pending = net.peers[0].ep.pending_transfers();
    assert!(pending <= ids.len(), "{pending} transfers pending");
    let payload = 10 * 1200;
    // Resends back off: ten minutes of a silent peer cost a bounded multiple of the data.
    assert!(
        to_silent < payload * 40,
        "{to_silent} bytes sent to a silent peer for {payload} bytes of bundles"
    );
}

#[test]
fn a_peer_opening_transfers_without_end_is_held_to_a_bounded_number() {
    // A fake peer pushes 3,000 manifests nobody asked for: the store opens at most
    // MAX_INCOMING_PER_PEER (1,024) transfers for it, the rest are dropped and counted,
    // and an honest peer is still served.
    let mut net = Net::new(2, 1);
    net.connect(0, 1);
    let flood_link = 1;
    net.peers[0]
        .ep
        .link_up(net.now, flood_link, net.profile.params);
    net.inject(0, flood_link, &hello(&[0xfd; 32], 5, 0));
    assert!(net.run_until(10 * SEC, established));
    for i in 0..3000u64 {
        let (m, _) = skywave_proto::fuzzing::bundle(10_000 + i, 1, 2000);
        net.inject(
            0,
            flood_link,
            &frame(1 + i, |w| {
                assert!(w.manifest(m.as_bytes()));
            }),
        );
    }
    let open = net.peers[0].store.partial.len();
    assert!(open <= 1024, "{open} transfers opened for one peer");
    assert!(
        open >= 1000,
        "{open}: the cap is far above an honest sender's needs"
    );
    let s = net.peers[0].ep.stats().clone();
    assert_eq!(s.incoming_limit, 3000 - open as u64, "{s:?}");
    let id = net.peers[1].insert(net.now, 7, 1, 3000);
    assert!(
        net.run_until(120 * SEC, |n| n.peers[0].holds(&id)),
        "the honest peer was not served"
    );
}

#[test]
fn replayed_frames_change_nothing() {
    let mut net = honest_pair(0);
    net.keep_log = true;
    assert!(net.run_until(30 * SEC, synced));
    let before: Vec<_> = net.peers.iter().map(|p| held(&p.store)).collect();
    let received: Vec<_> = net.peers.iter().map(|p| p.received.clone()).collect();
    let log = std::mem::take(&mut net.log);
    // Everything again, in order and then backwards.
    for (_, to, f) in log.iter().chain(log.iter().rev()) {
        net.inject(*to, 0, f);
    }
    net.run_for(5 * SEC);
    for (i, p) in net.peers.iter().enumerate() {
        assert_eq!(held(&p.store), before[i]);
        assert_eq!(p.received, received[i], "a replay was accepted as new");
        assert!(p.received.values().all(|&n| n == 1));
        assert!(p.store.partial.is_empty());
    }
    // The session still works: a new bundle goes through.
    let id = net.peers[0].insert(net.now, 999, 1, 2000);
    assert!(net.run_until(30 * SEC, |n| n.peers[1].holds(&id)));
}

#[test]
fn frames_addressed_to_another_node_are_dropped() {
    // A shared radio channel: frames carry (src, dst) tags.
    let mut net = Net::new(2, 2);
    net.connect(0, 1);
    net.keep_log = true;
    net.peers[0].insert(net.now, 1, 1, 800);
    assert!(net.run_until(10 * SEC, established));
    let theirs: Vec<Vec<u8>> = net
        .log
        .iter()
        .filter(|(from, _, f)| *from == 0 && f[1] & 1 == 1)
        .map(|(_, _, f)| {
            // Long tags (4 B each) or short ones (flag bit 2: 2 B each).
            let mut g = f.clone();
            if g[1] & 4 == 0 {
                g[6..10].copy_from_slice(&0x0bad_cafe_u32.to_le_bytes());
            } else {
                g[4..6].copy_from_slice(&0xcafe_u16.to_le_bytes());
            }
            g
        })
        .collect();
    assert!(!theirs.is_empty());
    let received = net.peers[1].ep.stats().bundles_received;
    for f in &theirs {
        net.inject(1, 0, f);
    }
    let s = net.peers[1].ep.stats();
    assert_eq!(s.dropped_not_for_us, theirs.len() as u64);
    assert_eq!(s.bundles_received, received);
    let id = fuzzing::bundle(1, 1, 800).0.id();
    assert!(net.run_until(30 * SEC, |n| n.peers[1].holds(&id)));
}

#[test]

fn a_piece_at_an_absurd_offset_is_refused() {
    let mut net = Net::new(2, 1);
    net.connect(0, 1);
    let id = net.peers[0].insert(net.now, 3, 1, 5000);
    net.keep_log = true;
    assert!(net.run_until(10 * SEC, |n| n.peers[1].store.partial.contains_key(&id)));
    let r = wire::BundleRef::new(&id, 1);
    for offset in [u64::MAX, u64::MAX - 2, 1 << 62, 4999, 5000] {
        let f = frame(5000, |w| {
            assert!(w.piece(&r, offset, b"xyz"));
        });
        net.inject(1, 0, &f);
    }
    assert!(net.run_until(30 * SEC, |n| n.peers[1].holds(&id)));
}

#[test]

fn a_hello_claiming_u64_max_bundles_does_not_panic() {
    for profile in [0u8, 1, 3] {
        let mut net = Net::new(1, profile);
        net.peers[0].insert(net.now, 1, 1, 100);
        net.peers[0]
            .ep
            .link_up(net.now, 0, fuzzing::Profile::pick(profile).params);
        net.inject(0, 0, &hello(&[0xfe; 32], 10, u64::MAX));
        net.inject(0, 0, &hello(&[0x01; 32], 11, u64::MAX / 2));
    }
}

#[test]
fn a_path_silent_for_an_hour_resumes_soon_after_coming_back() {
    // Mid-transfer every frame is lost for an hour (out of range, a dead path) while
    // both ends keep their sessions; the resend timeout backs off meanwhile. When frames
    // pass again the transfer must go on within a couple of minutes (the resend timeout
    // backs off to at most a minute, or two unbacked timeouts on a slow link), not at a
    // timer grown to an hour.
    for profile in 0..4u8 {
        let mut pair = fuzzing::Pair::new(fuzzing::Profile::pick(profile));
        // About two seconds of the link's time each way.
        let size = (pair.profile.rate_bps / 4) as usize;
        pair.insert(0, 1, 1, size);
        pair.insert(1, 2, 1, size);
        // Until the sessions are up and data moves.
        pair.run_clean(Duration::from_millis(200) + pair.profile.latency * 6);
        let end = pair.now + 3600 * SEC;
        while pair.now < end {
            for side in 0..2 {
                while pair.send(side, pair.profile.params.mtu).is_some() {}
            }
            for to in 0..2 {
                while pair.queued(to) > 0 {
                    pair.apply(&fuzzing::Op::Drop {
                        to: if to == 0 {
                            fuzzing::Side::A
                        } else {
                            fuzzing::Side::B
                        },
                        index: 0,
                    });
                }
            }
            let next = pair
                .nodes
                .iter()
                .filter_map(|n| n.ep.poll_timeout())
                .min()
                .unwrap_or(end)
                .clamp(pair.now + Duration::from_millis(1), end);
            pair.advance(next - pair.now);
        }
        let back = pair.now;
        assert!(
            pair.run_clean(600 * SEC),
            "profile {profile}: not synced 10 minutes after the path came back"
        );
        let took = pair.now - back;
        assert!(
            took <= 150 * SEC,
            "profile {profile}: {took:?} to finish after the path came back"
        );
    }
}

#[test]
fn a_bundle_the_store_cannot_keep_is_fetched_again_only_after_a_backoff() {
    // The receiver's store has no room for the bundle: every completed copy fails to
    // commit. Starting again at once moved the same 5,000 B for ever; now the sender is
    // told to stop and the bundle is asked for again as the backoff allows, and arrives
    // once there is room.
    let mut net = Net::new(2, 1);
    net.keep_log = true;
    let id = net.peers[1].insert(net.now, 7, 1, 5000);
    net.peers[0].store.quota = Some(1000);
    net.connect(0, 1);
    net.run_for(600 * SEC);
    let s = net.peers[0].ep.stats().clone();
    assert!(!net.peers[0].holds(&id));
    assert!(s.failed_transfers >= 2, "never asked again: {s:?}");
    assert!(
        s.failed_transfers <= 8,
        "{} failed copies in 10 minutes",
        s.failed_transfers
    );
    assert_eq!(s.bad_payloads, 0, "no peer is to blame");
    let sent = piece_bytes_from(&net, 1);
    assert!(sent <= 5000 * 12, "{sent} B of pieces for 5,000 B");
    assert!(
        net.peers[0].ep.no_room_since().is_some(),
        "the state is shown"
    );
    net.peers[0].store.quota = None;
    assert!(
        net.run_until(3600 * SEC, |n| n.peers[0].holds(&id)),
        "not received once there was room"
    );
    assert!(net.peers[0].ep.no_room_since().is_none());
}

#[test]
fn an_offer_refused_for_lack_of_room_is_asked_for_again_when_room_returns() {
    // The disk cannot hold the bundle: its offer is turned down before a byte is stored,
    // the sender stops, and the bundle is asked for again after a backoff (not at once,
    // not never) within the same session, arriving once there is room.
    let mut net = Net::new(2, 1);
    let id = net.peers[1].insert(net.now, 7, 1, 5000);
    net.peers[0].store.room = Some(1000);
    net.connect(0, 1);
    net.run_for(600 * SEC);
    let s = net.peers[0].ep.stats().clone();
    assert!(!net.peers[0].holds(&id));
    assert!(s.offers_refused_no_room >= 2, "never asked again: {s:?}");
    assert!(
        s.offers_refused_no_room <= 8,
        "{} refusals in 10 minutes",
        s.offers_refused_no_room
    );
    assert_eq!(s.failed_transfers, 0, "nothing was received to fail");
    assert!(net.peers[0].ep.no_room_since().is_some());
    let sent = piece_bytes_from(&net, 1);
    assert!(
        sent <= 5000 * 2,
        "{sent} B of pieces sent into a full store"
    );
    net.peers[0].store.room = None;
    assert!(
        net.run_until(3600 * SEC, |n| n.peers[0].holds(&id)),
        "not received once there was room"
    );
    assert!(net.peers[0].ep.no_room_since().is_none());
}

#[test]
fn a_hello_naming_another_key_than_the_link_proved_is_dropped() {
    // Link 0 is encrypted and its handshake proved key A: a HELLO there naming B (an
    // honest peer's public key) starts no session, while A's own HELLO does.
    let a = skywave_bundle::SecretKey::from_bytes(&[1; 32]);
    let b = skywave_bundle::SecretKey::from_bytes(&[2; 32]);
    let mut net = Net::new(1, 1);
    net.peers[0]
        .ep
        .link_up(net.now, 0, fuzzing::Profile::pick(1).params);
    net.peers[0].ep.bind_link(0, Some(a.x25519_public()));
    net.inject(0, 0, &hello(&b.public(), 7, 0));
    assert_eq!(net.peers[0].ep.stats().dropped_wrong_identity, 1);
    assert_eq!(net.peers[0].ep.peers().count(), 0);
    net.inject(0, 0, &hello(&a.public(), 7, 0));
    assert_eq!(
        net.peers[0].ep.peers().copied().collect::<Vec<_>>(),
        vec![a.public()]
    );
    // Unbound (a plaintext link), any key is taken as claimed.
    net.peers[0].ep.bind_link(0, None);
    net.inject(0, 0, &hello(&b.public(), 8, 0));
    assert_eq!(net.peers[0].ep.stats().dropped_wrong_identity, 1);
    assert_eq!(net.peers[0].ep.peers().count(), 2);
}

#[test]
fn a_piece_next_naming_nothing_readable_is_counted_and_dropped() {
    let mut net = Net::new(2, 0);
    let now = net.now;
    let id = net.peers[0].insert(now, 1, 1, 300);
    net.connect(0, 1);
    net.run_for(Duration::from_secs(2));
    let before = net.peers[1].ep.stats().dropped_malformed;
    // Nothing named before it in the frame.
    let f = frame(1 << 20, |w| {
        assert!(w.raw(wire::ty::PIECE_NEXT, &[0, 1, 2, 3]));
    });
    net.inject(1, 0, &f);
    // After a manifest that does not verify.
    let f = frame((1 << 20) + 1, |w| {
        assert!(w.manifest(&[0xff; 40]));
        assert!(w.raw(wire::ty::PIECE_NEXT, &[0, 1, 2, 3]));
    });
    net.inject(1, 0, &f);
    assert_eq!(net.peers[1].ep.stats().dropped_malformed, before + 2);
    // The session goes on.
    assert!(net.run_until(Duration::from_secs(60), |n| n.peers[1].holds(&id)));
}
