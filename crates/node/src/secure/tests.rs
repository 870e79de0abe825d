use std::collections::HashSet;
use std::time::Duration;

use skywave_bundle::SecretKey;

use super::*;

fn policy(seed: u8) -> Policy {
    let k = SecretKey::from_bytes(&[seed; 32]);
    Policy::new(k.x25519_secret(), k.x25519_public())
}

fn t(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Frames for the endpoint, and the datagram to send back if any.
type Delivered = (Vec<Vec<u8>>, Option<Vec<u8>>);

/// Delivers `d` to `ch`.
fn deliver(ch: &mut Channel, p: &Policy, now: Duration, d: &[u8]) -> Result<Delivered, Drop> {
    let (mut f, mut r) = (Vec::new(), Vec::new());
    let o = ch.open(p, now, d, &mut f, &mut r)?;
    let mut frames = Vec::new();
    if o.frame {
        frames.push(f.clone());
        if ch.take_held(&mut f) {
            frames.push(f);
        }
    }
    Ok((frames, o.reply.then_some(r)))
}

fn seal(ch: &mut Channel, p: &Policy, now: Duration, f: &[u8]) -> (Sealed, Vec<u8>) {
    let mut out = Vec::new();
    let s = ch.seal(p, now, f, &mut out);
    (s, out)
}

/// A and B with sessions; returns their channels.
fn pair(pa: &Policy, pb: &Policy, a_knows_b: bool) -> (Channel, Channel) {
    let mut a = Channel::new(a_knows_b.then(|| *pb.public()));
    let mut b = Channel::new(None);
    let (s, d) = seal(&mut a, pa, t(0.0), b"hello from a");
    assert_eq!(s, Sealed::Handshake);
    let (got, reply) = deliver(&mut b, pb, t(0.0), &d).unwrap();
    let reply = reply.expect("an answer");
    let (_, last) = deliver(&mut a, pa, t(0.1), &reply).unwrap();
    if let Some(last) = last {
        let (got, none) = deliver(&mut b, pb, t(0.2), &last).unwrap();
        assert_eq!(got, vec![b"hello from a".to_vec()]);
        assert!(none.is_none());
    } else {
        assert_eq!(got, vec![b"hello from a".to_vec()]);
    }
    assert_eq!(a.state(), "established");
    assert_eq!(b.state(), "established");
    (a, b)
}

fn exchange(a: &mut Channel, pa: &Policy, b: &mut Channel, pb: &Policy, now: Duration) {
    let (s, d) = seal(a, pa, now, b"a to b");
    assert_eq!(s, Sealed::Data);
    assert_eq!(deliver(b, pb, now, &d).unwrap().0, vec![b"a to b".to_vec()]);
    let (s, d) = seal(b, pb, now, b"b to a");
    assert_eq!(s, Sealed::Data);
    assert_eq!(deliver(a, pa, now, &d).unwrap().0, vec![b"b to a".to_vec()]);
}

#[test]
fn ik_carries_the_first_frame_in_one_round_trip_and_costs_at_most_200_bytes() {
    let (pa, pb) = (policy(1), policy(2));
    let mut a = Channel::new(Some(*pb.public()));
    let mut b = Channel::new(None);
    let frame = vec![7u8; 300];
    let (s, first) = seal(&mut a, &pa, t(0.0), &frame);
    assert_eq!((s, first[0]), (Sealed::Handshake, pa.cipher.first(true)));
    let (mut f, mut r) = (Vec::new(), Vec::new());
    let o = b.open(&pb, t(0.0), &first, &mut f, &mut r).unwrap();
    assert_eq!(o.established, Some(*pa.public()));
    assert!(o.frame && o.reply);
    assert_eq!(f, frame);
    assert_eq!(r[0], kind::IK2);
    let (_, none) = deliver(&mut a, &pa, t(0.1), &r).unwrap();
    assert!(none.is_none(), "IK needs no third message");
    let overhead = first.len() - frame.len() + r.len();
    assert!(overhead <= 200, "handshake {overhead} B");
    assert_eq!(overhead, 1 + 96 + 1 + 48);
    assert_eq!(a.remote(), Some(*pb.public()));
    assert_eq!(b.remote(), Some(*pa.public()));
    exchange(&mut a, &pa, &mut b, &pb, t(0.2));
}

#[test]
fn xx_learns_the_key_and_carries_the_first_frame_in_its_last_message() {
    let (pa, pb) = (policy(1), policy(2));
    let mut a = Channel::new(None);
    let mut b = Channel::new(None);
    let (_, m1) = seal(&mut a, &pa, t(0.0), b"first");
    assert_eq!((m1[0], m1.len()), (pa.cipher.first(false), 33));
    let (got, m2) = deliver(&mut b, &pb, t(0.0), &m1).unwrap();
    assert!(got.is_empty());
    let m2 = m2.unwrap();
    // Frames the endpoint gives meanwhile wait; the latest rides the last message.
    assert_eq!(seal(&mut a, &pa, t(0.05), b"latest").0, Sealed::Held);
    let (_, m3) = deliver(&mut a, &pa, t(0.1), &m2).unwrap();
    let m3 = m3.unwrap();
    assert_eq!(m3[0], kind::XX3);
    let (got, _) = deliver(&mut b, &pb, t(0.1), &m3).unwrap();
    assert_eq!(got, vec![b"latest".to_vec()]);
    let overhead = m1.len() + m2.len() + m3.len() - b"latest".len();
    assert!(overhead <= 200, "handshake {overhead} B");
    exchange(&mut a, &pa, &mut b, &pb, t(0.2));
    // The key is remembered: after a reset the next handshake is IK.
    a.reset();
    let (_, m) = seal(&mut a, &pa, t(1.0), b"again");
    assert_eq!(m[0], pa.cipher.first(true));
}

#[test]
fn a_data_datagram_is_kind_counter_ciphertext_and_tag() {
    let (pa, pb) = (policy(1), policy(2));
    let (mut a, mut b) = pair(&pa, &pb, true);
    for n in 0..3u64 {
        let (_, d) = seal(&mut a, &pa, t(1.0), b"0123456789");
        assert_eq!(d.len(), 10 + DATA_OVERHEAD);
        assert_eq!(d[0], kind::DATA);
        assert_eq!(d[1..9], n.to_be_bytes());
        assert!(!d.windows(10).any(|w| w == b"0123456789"), "no plaintext");
        deliver(&mut b, &pb, t(1.0), &d).unwrap();
    }
}

#[test]
fn replays_tampering_and_plaintext_are_dropped_and_reordering_within_the_window_is_not() {
    let (pa, pb) = (policy(1), policy(2));
    let (mut a, mut b) = pair(&pa, &pb, true);
    let ds: Vec<Vec<u8>> = (0..3000)
        .map(|i| seal(&mut a, &pa, t(1.0), format!("f{i}").as_bytes()).1)
        .collect();
    // Out of order within the window: accepted once each.
    for i in [5, 2, 9, 0] {
        assert_eq!(deliver(&mut b, &pb, t(1.0), &ds[i]).unwrap().0.len(), 1);
    }
    assert_eq!(deliver(&mut b, &pb, t(1.0), &ds[2]), Err(Drop::Replay));
    assert!(deliver(&mut b, &pb, t(1.0), &ds[2999]).is_ok());
    // Further behind than the window: refused even though never seen.
    assert_eq!(deliver(&mut b, &pb, t(1.0), &ds[100]), Err(Drop::Replay));
    assert!(deliver(&mut b, &pb, t(1.0), &ds[2000]).is_ok());
    let mut bad = ds[2500].clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert_eq!(deliver(&mut b, &pb, t(1.0), &bad), Err(Drop::Decrypt));
    // The tampered copy did not burn the counter: the real one still opens.
    assert!(deliver(&mut b, &pb, t(1.0), &ds[2500]).is_ok());
    let plain = [skywave_proto::wire::VERSION, 0, 0];
    assert_eq!(deliver(&mut b, &pb, t(1.0), &plain), Err(Drop::Plaintext));
    assert_eq!(
        deliver(&mut b, &pb, t(1.0), &[kind::DATA, 1]),
        Err(Drop::Malformed)
    );
    assert_eq!(deliver(&mut b, &pb, t(1.0), &[]), Err(Drop::Malformed));
}

#[test]
fn a_key_not_on_the_trust_list_completes_no_handshake_in_either_pattern() {
    let (pa, pc) = (policy(1), policy(3));
    let only_c: HashSet<[u8; 32]> = [*pc.public()].into();
    let pb = policy(2).with_allowed(only_c);
    // IK: refused on the first message, nothing sent back.
    let mut a = Channel::new(Some(*pb.public()));
    let mut b = Channel::new(None);
    let (_, m1) = seal(&mut a, &pa, t(0.0), b"let me in");
    let (mut f, mut r) = (Vec::new(), Vec::new());
    assert_eq!(
        b.open(&pb, t(0.0), &m1, &mut f, &mut r),
        Err(Drop::Untrusted)
    );
    assert!(r.is_empty() && f.is_empty());
    // XX: refused when the key shows, and the frame is never handed over.
    let mut a = Channel::new(None);
    let mut b = Channel::new(None);
    let (_, m1) = seal(&mut a, &pa, t(0.0), b"let me in");
    let (_, m2) = deliver(&mut b, &pb, t(0.0), &m1).unwrap();
    let (_, m3) = deliver(&mut a, &pa, t(0.1), &m2.unwrap()).unwrap();
    assert_eq!(
        deliver(&mut b, &pb, t(0.1), &m3.unwrap()),
        Err(Drop::Untrusted)
    );
    assert_eq!(b.state(), "idle");
    // The initiator checks too: B refuses to talk to A's unlisted key.
    let mut b2 = Channel::new(None);
    let mut a2 = Channel::new(None);
    let (_, m1) = seal(&mut b2, &pb, t(0.0), b"x");
    let (_, m2) = deliver(&mut a2, &pa, t(0.0), &m1).unwrap();
    assert_eq!(
        deliver(&mut b2, &pb, t(0.1), &m2.unwrap()),
        Err(Drop::Untrusted)
    );
    // C, listed, gets in.
    pair(&pc, &pb, true);
}

#[test]
fn a_network_key_must_match_on_both_sides() {
    let pa = policy(1).with_network_key([9; 32]);
    let pb = policy(2).with_network_key([9; 32]);
    pair(&pa, &pb, true);
    pair(&pa, &pb, false);
    // First contact (XX) with a network key stays within 200 B.
    let (mut a, mut b) = (Channel::new(None), Channel::new(None));
    let (_, m1) = seal(&mut a, &pa, t(0.0), b"first");
    let (_, m2) = deliver(&mut b, &pb, t(0.0), &m1).unwrap();
    let m2 = m2.unwrap();
    let (_, m3) = deliver(&mut a, &pa, t(0.1), &m2).unwrap();
    let m3 = m3.unwrap();
    assert_eq!(
        deliver(&mut b, &pb, t(0.1), &m3).unwrap().0,
        vec![b"first".to_vec()]
    );
    let overhead = m1.len() + m2.len() + m3.len() - b"first".len();
    assert!(overhead <= 200, "handshake {overhead} B");
    for (pa, pb) in [
        (policy(1).with_network_key([8; 32]), pb.clone()),
        (policy(1), pb.clone()),
    ] {
        let mut a = Channel::new(Some(*pb.public()));
        let mut b = Channel::new(None);
        let (_, m1) = seal(&mut a, &pa, t(0.0), b"x");
        assert_eq!(deliver(&mut b, &pb, t(0.0), &m1), Err(Drop::Handshake));
        // XX, either side initiating: the initiator refuses the answer (the first message
        // whose tag covers the key), so it never sends its static key, and no session
        // forms on either side.
        for (pi, pr) in [(&pa, &pb), (&pb, &pa)] {
            let mut i = Channel::new(None);
            let mut r = Channel::new(None);
            let (_, m1) = seal(&mut i, pi, t(0.0), b"x");
            let (_, m2) = deliver(&mut r, pr, t(0.0), &m1).unwrap();
            assert_eq!(
                deliver(&mut i, pi, t(0.1), &m2.unwrap()),
                Err(Drop::Handshake)
            );
            assert_eq!(r.remote(), None);
        }
    }
}

#[test]
fn crossing_handshakes_make_one_session() {
    for (ka, kb) in [(true, true), (false, false), (true, false)] {
        let (pa, pb) = (policy(1), policy(2));
        let mut a = Channel::new(ka.then(|| *pb.public()));
        let mut b = Channel::new(kb.then(|| *pa.public()));
        let (_, ma) = seal(&mut a, &pa, t(0.0), b"hello a");
        let (_, mb) = seal(&mut b, &pb, t(0.0), b"hello b");
        let ra = deliver(&mut a, &pa, t(0.1), &mb);
        let rb = deliver(&mut b, &pb, t(0.1), &ma);
        // Exactly one side yields and answers.
        assert!(ra.is_ok() != rb.is_ok(), "{ra:?} {rb:?}");
        let (mut x, px, mut y, py, answer) = match (ra, rb) {
            (Ok((_, r)), _) => (b, &pb, a, &pa, r.unwrap()),
            (_, Ok((_, r))) => (a, &pa, b, &pb, r.unwrap()),
            _ => unreachable!(),
        };
        // x (the initiator that stayed) reads the answer.
        if let (_, Some(last)) = deliver(&mut x, px, t(0.2), &answer).unwrap() {
            deliver(&mut y, py, t(0.3), &last).unwrap();
        }
        exchange(&mut x, px, &mut y, py, t(0.4));
    }
}

#[test]
fn a_replayed_first_message_does_not_break_a_session() {
    let (pa, pb) = (policy(1), policy(2));
    let mut a = Channel::new(Some(*pb.public()));
    let mut b = Channel::new(None);
    let (_, m1) = seal(&mut a, &pa, t(0.0), b"hello");
    let (_, m2) = deliver(&mut b, &pb, t(0.0), &m1).unwrap();
    deliver(&mut a, &pa, t(0.1), &m2.unwrap()).unwrap();
    exchange(&mut a, &pa, &mut b, &pb, t(0.2));
    // The replay is answered (it may be a restart) but the session stays.
    let (got, answer) = deliver(&mut b, &pb, t(5.0), &m1).unwrap();
    assert!(got.is_empty(), "the replayed HELLO is not handed over");
    assert!(answer.is_some());
    exchange(&mut a, &pa, &mut b, &pb, t(5.1));
}

#[test]
fn a_restarted_side_gets_a_new_session_from_either_direction() {
    let (pa, pb) = (policy(1), policy(2));
    // B restarts and has something to say: its first message replaces the session
    // once B uses it, and the HELLO that came with it is handed over then. The answer
    // says A holds it, and B uses the session at once with an empty datagram (its HELLO
    // would otherwise wait for the endpoint's next frame, a retry a second later).
    let (mut a, _) = pair(&pa, &pb, true);
    let mut b = Channel::new(Some(*pa.public()));
    let (_, m1) = seal(&mut b, &pb, t(1.0), b"b again");
    let (got, m2) = deliver(&mut a, &pa, t(1.0), &m1).unwrap();
    assert!(got.is_empty());
    let (got, confirm) = deliver(&mut b, &pb, t(1.1), &m2.unwrap()).unwrap();
    assert!(got.is_empty());
    let confirm = confirm.expect("an answer that holds the frame is confirmed");
    assert_eq!((confirm[0], confirm.len()), (kind::DATA, DATA_OVERHEAD));
    let (got, none) = deliver(&mut a, &pa, t(1.1), &confirm).unwrap();
    assert_eq!(got, vec![b"b again".to_vec()]);
    assert!(none.is_none());
    let (_, d) = seal(&mut b, &pb, t(1.2), b"next");
    let (got, _) = deliver(&mut a, &pa, t(1.2), &d).unwrap();
    assert_eq!(got, vec![b"next".to_vec()]);
    exchange(&mut a, &pa, &mut b, &pb, t(1.3));
    // The confirmation lost: B's next frame hands over both, in order.
    let mut b = Channel::new(Some(*pa.public()));
    let (_, m1) = seal(&mut b, &pb, t(1.5), b"b once more");
    let (_, m2) = deliver(&mut a, &pa, t(1.5), &m1).unwrap();
    let (_, lost) = deliver(&mut b, &pb, t(1.6), &m2.unwrap()).unwrap();
    assert!(lost.is_some());
    let (_, d) = seal(&mut b, &pb, t(1.7), b"then");
    let (got, _) = deliver(&mut a, &pa, t(1.7), &d).unwrap();
    assert_eq!(got, vec![b"b once more".to_vec(), b"then".to_vec()]);
    exchange(&mut a, &pa, &mut b, &pb, t(1.8));
    // B restarts and only listens: A's data cannot be opened, so B starts a handshake.
    let mut b = Channel::new(None);
    let (_, d) = seal(&mut a, &pa, t(2.0), b"lost");
    let (mut f, mut r) = (Vec::new(), Vec::new());
    assert_eq!(b.open(&pb, t(2.0), &d, &mut f, &mut r), Err(Drop::Decrypt));
    let mut kick = Vec::new();
    assert!(b.kick(&pb, t(2.0), &mut kick));
    assert!(!b.kick(&pb, t(2.1), &mut Vec::new()), "kicks back off");
    let (_, m2) = deliver(&mut a, &pa, t(2.0), &kick).unwrap();
    if let (_, Some(m3)) = deliver(&mut b, &pb, t(2.1), &m2.unwrap()).unwrap() {
        deliver(&mut a, &pa, t(2.2), &m3).unwrap();
    }
    exchange(&mut b, &pb, &mut a, &pa, t(2.3));
}

#[test]
fn a_stale_key_falls_back_to_xx() {
    let (pa, pb) = (policy(1), policy(2));
    let stale = *policy(4).public();
    let mut a = Channel::new(Some(stale));
    let mut b = Channel::new(None);
    let mut now = 0.0;
    let mut kinds = Vec::new();
    loop {
        let (s, m) = seal(&mut a, &pa, t(now), b"hi");
        now += 0.5;
        if s != Sealed::Handshake {
            continue;
        }
        kinds.push(m[0]);
        if m[0] == pa.cipher.first(false) {
            let (_, m2) = deliver(&mut b, &pb, t(now), &m).unwrap();
            let (_, m3) = deliver(&mut a, &pa, t(now), &m2.unwrap()).unwrap();
            deliver(&mut b, &pb, t(now), &m3.unwrap()).unwrap();
            break;
        }
        assert_eq!(deliver(&mut b, &pb, t(now), &m), Err(Drop::Handshake));
        assert!(now < 60.0);
    }
    let (ik, xx) = (pa.cipher.first(true), pa.cipher.first(false));
    assert_eq!(kinds, vec![ik, ik, xx]);
    assert_eq!(a.remote(), Some(*pb.public()));
    exchange(&mut a, &pa, &mut b, &pb, t(now));
}

#[test]
fn an_unproven_address_gets_at_most_three_times_what_it_sent() {
    // A spoofed first message (its sender never answers): the answer and what the
    // endpoint would send after it stay within the bound.
    let (pa, pb) = (policy(1), policy(2));
    let mut a = Channel::new(Some(*pb.public()));
    let mut b = Channel::new(None);
    let (_, m1) = seal(&mut a, &pa, t(0.0), b"spoofed hello");
    let (_, m2) = deliver(&mut b, &pb, t(0.0), &m1).unwrap();
    let m2 = m2.unwrap();
    let mut sent = m2.len();
    loop {
        let (s, d) = seal(&mut b, &pb, t(0.1), &[0u8; 100]);
        if s == Sealed::Limited {
            break;
        }
        sent += d.len();
    }
    assert!(sent <= 3 * m1.len(), "{sent} B for {} B", m1.len());
    assert!(sent > m1.len(), "the answer and a HELLO still go");
    assert!(!b.proven());
    // Had the peer been real, its first datagram under the session lifts the bound.
    deliver(&mut a, &pa, t(0.2), &m2).unwrap();
    let (_, d) = seal(&mut a, &pa, t(0.2), b"real");
    deliver(&mut b, &pb, t(0.2), &d).unwrap();
    assert!(b.proven());
    for _ in 0..100 {
        assert_eq!(seal(&mut b, &pb, t(0.3), &[0u8; 1000]).0, Sealed::Data);
    }
}

#[test]
fn a_first_message_duplicated_before_any_data_does_not_split_the_sessions() {
    // The path delivers A's IK1 twice before A's first data: B must not move to a second
    // session A never learns of (each end would then drop all the other's data).
    let (pa, pb) = (policy(1), policy(2));
    let mut a = Channel::new(Some(*pb.public()));
    let mut b = Channel::new(None);
    let (_, first) = seal(&mut a, &pa, t(0.0), b"hello");
    let (got, reply) = deliver(&mut b, &pb, t(0.0), &first).unwrap();
    assert_eq!(got, vec![b"hello".to_vec()]);
    let (again, reply2) = deliver(&mut b, &pb, t(0.1), &first).unwrap();
    assert!(
        again.is_empty(),
        "the duplicate's frame is not handed over twice"
    );
    assert!(reply2.is_some(), "answered (it may be a restarted peer)");
    deliver(&mut a, &pa, t(0.2), &reply.unwrap()).unwrap();
    // The second answer finds no handshake under way at A.
    assert!(deliver(&mut a, &pa, t(0.3), &reply2.unwrap()).is_err());
    exchange(&mut a, &pa, &mut b, &pb, t(0.4));
    exchange(&mut a, &pa, &mut b, &pb, t(0.5));
}

#[test]
fn either_cipher_meets_either_preference_and_the_initiator_chooses() {
    for (ca, cb) in [
        (Cipher::AesGcm, Cipher::AesGcm),
        (Cipher::AesGcm, Cipher::ChaChaPoly),
        (Cipher::ChaChaPoly, Cipher::AesGcm),
        (Cipher::ChaChaPoly, Cipher::ChaChaPoly),
    ] {
        let pa = policy(1).with_cipher(ca);
        let pb = policy(2).with_cipher(cb);
        for known in [true, false] {
            let mut a = Channel::new(known.then(|| *pb.public()));
            let (_, first) = seal(&mut a, &pa, t(0.0), b"x");
            assert_eq!(first[0], ca.first(known), "{ca:?} initiating, IK {known}");
            let (mut a, mut b) = pair(&pa, &pb, known);
            exchange(&mut a, &pa, &mut b, &pb, t(1.0));
        }
    }
}

#[test]
fn a_first_message_relabelled_with_the_other_cipher_is_refused() {
    let (pa, pb) = (policy(1).with_cipher(Cipher::AesGcm), policy(2));
    for known in [true, false] {
        let mut a = Channel::new(known.then(|| *pb.public()));
        let mut b = Channel::new(None);
        let (_, mut first) = seal(&mut a, &pa, t(0.0), b"x");
        first[0] = Cipher::ChaChaPoly.first(known);
        if known {
            // IK's first message is encrypted under the cipher its kind names.
            assert_eq!(deliver(&mut b, &pb, t(0.0), &first), Err(Drop::Handshake));
        } else {
            // XX's first message is only an ephemeral key: the answer is made, but the
            // initiator cannot read it under the cipher it chose.
            let (_, m2) = deliver(&mut b, &pb, t(0.0), &first).unwrap();
            assert_eq!(
                deliver(&mut a, &pa, t(0.1), &m2.unwrap()),
                Err(Drop::Handshake)
            );
        }
    }
}

#[test]
fn a_peer_that_only_speaks_chacha_is_reached_after_three_attempts() {
    // B stands for a build before AES-GCM: it counts AES first messages as malformed.
    let pa = policy(1).with_cipher(Cipher::AesGcm);
    let pb = policy(2).with_cipher(Cipher::ChaChaPoly);
    for known in [true, false] {
        let mut a = Channel::new(known.then(|| *pb.public()));
        let mut b = Channel::new(None);
        let mut now = 0.0;
        let mut kinds = Vec::new();
        loop {
            let (s, m) = seal(&mut a, &pa, t(now), b"hello");
            if s == Sealed::Handshake {
                kinds.push(m[0]);
                if !matches!(m[0], kind::IK1_AES | kind::XX1_AES) {
                    let (got, r) = deliver(&mut b, &pb, t(now), &m).unwrap();
                    let (_, last) = deliver(&mut a, &pa, t(now), &r.unwrap()).unwrap();
                    if let Some(last) = last {
                        let (got, _) = deliver(&mut b, &pb, t(now), &last).unwrap();
                        assert_eq!(got, vec![b"hello".to_vec()]);
                    } else {
                        assert_eq!(got, vec![b"hello".to_vec()]);
                    }
                    break;
                }
            }
            now += 0.25;
            assert!(now < 10.0, "no session after {kinds:?}");
        }
        // 1 + 2 + 4 s of retries with the preferred cipher, then the other.
        assert!(
            (7.0..7.5).contains(&now),
            "reached at {now} s after {kinds:?}"
        );
        let c = kind::IK1_AES;
        let x = kind::XX1_AES;
        let want = if known {
            vec![c, c, x, kind::XX1]
        } else {
            vec![x, x, x, kind::XX1]
        };
        assert_eq!(kinds, want);
        exchange(&mut a, &pa, &mut b, &pb, t(now + 1.0));
        // The next session (after a restart) starts with the preferred cipher again.
        a.reset();
        let (_, m) = seal(&mut a, &pa, t(now + 2.0), b"again");
        assert_eq!(m[0], kind::IK1_AES);
    }
}
