//! Short tags on a shared channel: 2 bytes each where they name one node, long ones
//! where two nodes share a short tag (docs/protocol.md, "Frame").

use std::time::Duration;

use skywave_proto::{Config, Endpoint, MemStore, fuzzing, wire};

use crate::common::shared_radio;

/// Radios on one channel, each hearing every other, every frame delivered at once.
struct Channel {
    eps: Vec<Endpoint>,
    stores: Vec<MemStore>,
    now: Duration,
    /// Every frame sent: (sender, bytes).
    log: Vec<(usize, Vec<u8>)>,
}

impl Channel {
    fn new(keys: &[[u8; 32]]) -> Self {
        let mut c = Self {
            eps: Vec::new(),
            stores: Vec::new(),
            now: Duration::ZERO,
            log: Vec::new(),
        };
        for k in keys {
            c.join(*k);
        }
        c
    }

    fn join(&mut self, key: [u8; 32]) -> usize {
        let mut ep = Endpoint::new(Config::default(), key, 0x5000 + self.eps.len() as u64);
        ep.link_up(self.now, 0, shared_radio(64, 0.0));
        self.eps.push(ep);
        self.stores.push(MemStore::new());
        self.eps.len() - 1
    }

    fn insert(&mut self, node: usize, n: u64) -> skywave_bundle::BundleId {
        let (m, payload) = fuzzing::bundle(n, 1, 100);
        let id = m.id();
        self.stores[node].insert(m, payload);
        self.eps[node].bundle_stored(self.now, id, &mut self.stores[node]);
        id
    }

    fn holds_all(&self, ids: &[skywave_bundle::BundleId]) -> bool {
        self.stores
            .iter()
            .all(|s| ids.iter().all(|id| s.held.contains_key(id)))
    }

    /// Runs until `done` or `limit` more seconds pass; returns whether `done` held.
    fn run_until(&mut self, limit: u64, done: impl Fn(&Self) -> bool) -> bool {
        let end = self.now + Duration::from_secs(limit);
        while self.now < end {
            if done(self) {
                return true;
            }
            for i in 0..self.eps.len() {
                while let Some(bytes) =
                    self.eps[i].poll_transmit(self.now, 0, 64, &mut self.stores[i])
                {
                    for j in 0..self.eps.len() {
                        if j != i {
                            self.eps[j].handle_frame(self.now, 0, &bytes, &mut self.stores[j]);
                        }
                    }
                    self.log.push((i, bytes));
                }
            }
            let next = self
                .eps
                .iter()
                .filter_map(Endpoint::poll_timeout)
                .min()
                .unwrap_or(self.now + Duration::from_secs(1))
                .max(self.now + Duration::from_millis(1));
            self.now = next.min(end);
            for ep in &mut self.eps {
                ep.handle_timeout(self.now);
            }
        }
        done(self)
    }

    /// Frames in `log[from..]` sent by `sender` to the node tagged `to`: (short, long).
    fn tag_forms(&self, from: usize, sender: usize, to: u32) -> (usize, usize) {
        let mut forms = (0, 0);
        for (s, f) in &self.log[from..] {
            let (h, _) = wire::parse(f).expect("frames parse");
            if *s != sender || !h.is_to(to) || h.is_to(wire::BROADCAST) {
                continue;
            }
            if h.short_tags {
                forms.0 += 1;
            } else {
                forms.1 += 1;
            }
        }
        forms
    }
}

/// A key whose tag's short form is `like`'s, the rest of the tag different.
fn sharing_short_tag(like: &[u8; 32]) -> [u8; 32] {
    let mut k = fuzzing::node_key(77);
    k[..2].copy_from_slice(&like[..2]);
    k[2] = like[2] ^ 0x5a;
    k
}

#[test]
fn peers_that_know_one_node_per_short_tag_address_each_other_in_four_bytes() {
    let keys = [fuzzing::node_key(1), fuzzing::node_key(2)];
    let mut c = Channel::new(&keys);
    let ids: Vec<_> = (0..4)
        .map(|n| c.insert((n % 2) as usize, 100 + n))
        .collect();
    assert!(c.run_until(120, |c| c.holds_all(&ids)), "sync incomplete");
    let tags = [c.eps[0].tag(), c.eps[1].tag()];
    for (me, peer) in [(0, 1), (1, 0)] {
        let (short, _) = c.tag_forms(0, me, tags[peer]);
        assert!(short > 0, "node {me}: no frame to its peer with short tags");
        // Only frames built before the peer's HELLO said it takes them are long.
        let first = c
            .log
            .iter()
            .position(|(s, f)| *s == me && wire::parse(f).unwrap().0.short_tags)
            .expect("a short-tagged frame");
        let (_, long) = c.tag_forms(first, me, tags[peer]);
        assert_eq!(long, 0, "node {me}: long tags again after short ones");
    }
    // Each short-tagged frame is the 4 bytes shorter.
    let (_, f) = c
        .log
        .iter()
        .find(|(_, f)| wire::parse(f).unwrap().0.short_tags)
        .expect("a short-tagged frame");
    let (h, _) = wire::parse(f).unwrap();
    assert_eq!(h.encoded_len(), 2 + 4 + skywave_bundle::varint::len(h.pn));
}

#[test]
fn a_second_node_under_a_short_tag_brings_long_tags_back() {
    let a = fuzzing::node_key(1);
    let b = fuzzing::node_key(2);
    let mut c = Channel::new(&[a, b]);
    let mut ids: Vec<_> = (0..4)
        .map(|n| c.insert((n % 2) as usize, 200 + n))
        .collect();
    assert!(
        c.run_until(120, |c| c.holds_all(&ids)),
        "first sync incomplete"
    );
    let tag_b = c.eps[1].tag();
    assert!(
        c.tag_forms(0, 0, tag_b).0 > 0,
        "short tags before the newcomer"
    );

    // C shares B's short tag: A and B hear its HELLO.
    let cc = c.join(sharing_short_tag(&b));
    let tag_c = c.eps[cc].tag();
    assert_ne!(tag_b, tag_c);
    assert_eq!(wire::short_tag(tag_b), wire::short_tag(tag_c));
    ids.extend((0..3).map(|n| c.insert(n as usize, 300 + n)));
    let from = c.log.len();
    assert!(
        c.run_until(300, |c| c.holds_all(&ids)),
        "sync with the newcomer incomplete"
    );
    // Once everyone has heard everyone (the first few seconds), every frame to B or C,
    // from anyone, names them in full; A's and B's frames to each other too.
    let settled = from
        + c.log[from..]
            .iter()
            .position(|(s, f)| *s == cc && !wire::parse(f).unwrap().0.is_to(wire::BROADCAST))
            .expect("C addressed someone");
    let tags: Vec<u32> = c.eps.iter().map(Endpoint::tag).collect();
    for sender in 0..3 {
        for (to, &tag) in tags.iter().enumerate() {
            if to == sender {
                continue;
            }
            let (short, _) = c.tag_forms(settled + 20, sender, tag);
            assert_eq!(
                short, 0,
                "node {sender} to node {to}: short tags though two nodes share one"
            );
        }
    }
    // A frame from B's short tag can no longer be told from C's: A drops it, counted.
    let dropped = c.eps[0].stats().dropped_ambiguous_tag;
    let mut w = wire::FrameWriter::new(
        wire::Header {
            addr: Some((tag_b, tags[0])),
            pn: 9999,
            short_tags: true,
        },
        64,
    );
    assert!(w.heard(1));
    let f = w.finish();
    c.eps[0].handle_frame(c.now, 0, &f, &mut c.stores[0]);
    assert_eq!(c.eps[0].stats().dropped_ambiguous_tag, dropped + 1);
    // The same sender's frame to some other node is merely not ours: not counted as
    // ambiguous, and no HELLO for it (a bystander would greet them forever).
    let not_ours = c.eps[0].stats().dropped_not_for_us;
    let other = !tags[0] & 0xffff_0000 | u32::from(wire::short_tag(tags[0]) ^ 0x0101);
    let mut w = wire::FrameWriter::new(
        wire::Header {
            addr: Some((tag_b, other)),
            pn: 10_000,
            short_tags: true,
        },
        64,
    );
    assert!(w.heard(1));
    let f = w.finish();
    for _ in 0..5 {
        c.eps[0].handle_frame(c.now, 0, &f, &mut c.stores[0]);
    }
    assert_eq!(c.eps[0].stats().dropped_ambiguous_tag, dropped + 1);
    // (The greeting happens only where a frame is counted ambiguous.)
    assert_eq!(c.eps[0].stats().dropped_not_for_us, not_ours + 5);
}

#[test]
fn a_beacon_never_offers_short_tags() {
    // A beacon is for whoever hears it: the flag it would carry says nothing of a
    // receiver the sender does not know yet.
    let mut c = Channel::new(&[fuzzing::node_key(1), fuzzing::node_key(2)]);
    let ids: Vec<_> = (0..2).map(|n| c.insert(n as usize, 400 + n)).collect();
    assert!(c.run_until(120, |c| c.holds_all(&ids)));
    let mut beacons = 0;
    for (_, f) in &c.log {
        let (h, msgs) = wire::parse(f).unwrap();
        for m in msgs {
            if let wire::Message::Hello { flags, .. } = m {
                if h.is_to(wire::BROADCAST) {
                    beacons += 1;
                    assert_eq!(flags & 8, 0, "a beacon offered short tags");
                } else {
                    assert_ne!(flags & 1, 0, "a HELLO to a peer that did not hear it");
                }
            }
        }
    }
    assert!(beacons > 0);
}
