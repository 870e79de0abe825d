//! Messages larger than a link's frames: sent in fragments, put back together.
//!
//! A manifest (about 140 B), a HELLO with its sketch, or a report on a much-fragmented
//! transfer can be larger than a LoRa frame (51-115 B at long range). Such a message is
//! encoded whole, cut into FRAG messages as frames have room, and handled by the
//! receiver once every byte of it is in, exactly as if it had come in one frame. A lost
//! fragment loses the message; whatever would repeat the message (a manifest's resend
//! timer, the HELLO timer, the next report) sends it again, under a new id.
//!
//! Where the link loses enough frames that this costs more than a frame per message, a
//! FRAG_PARITY follows the fragments: their XOR, each aligned at its start. A receiver
//! missing exactly one fragment rebuilds it at once, without a round trip (a 140 B
//! manifest in five 48 B frames arrives whole 59% of the time at 10% loss; with the
//! parity, 89%).

use std::collections::VecDeque;
use std::time::Duration;

use skywave_bundle::RangeSet;

use super::LinkId;
use crate::wire::{FrameWriter, MAX_FRAGMENTED};

/// Messages of ours whose parity went, remembered per peer (see `Peer::parity_sent`).
pub(super) const PARITIES_KEPT: usize = 16;

/// Message ids wrap within this range: two varint bytes at most.
const ID_SPACE: u64 = 1 << 14;

/// Messages being put back together, across all senders: a flood of fragments from
/// made-up senders costs at most this many buffers of at most [`MAX_FRAGMENTED`].
const MAX_PARTIAL: usize = 64;

/// Partial messages kept per sender: a sender fragments one message at a time per
/// session, so more than a few are leftovers of lost fragments.
const PER_SENDER: usize = 4;

/// The least of a message worth starting in a frame already holding other messages:
/// less, and it waits for the next frame (whose whole room it gets).
pub(super) const MIN_FIRST: usize = 16;

/// [`MIN_FIRST`] where the next fragment can go on as a `FRAG_NEXT`: then the frame's
/// last few bytes, which would go unused, also save the next frame the 5-6 bytes that
/// name the message.
const MIN_FIRST_GOING_ON: usize = 4;

/// A message going out in fragments.
#[derive(Debug)]
pub(crate) struct FragOut {
    id: u64,
    msg: Vec<u8>,
    sent: usize,
    /// What the message is, when losing one of its frames must be repaired (see
    /// `Peer::notes`).
    pub about: FragAbout,
    /// The parity of the fragments written so far, when one follows them.
    parity: Option<Parity>,
    /// The packet number of the frame a fragment of this message ended (see
    /// [`FragOut::write_at`]).
    ended_frame: Option<u64>,
}

/// The XOR of a message's fragments, each aligned at its start.
#[derive(Debug, Default)]
struct Parity {
    acc: Vec<u8>,
    count: u64,
    written: bool,
}

/// What a fragmented message carries, for the notes of the frames it goes in.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) enum FragAbout {
    #[default]
    Other,
    /// A bundle's manifest, whose send began at the time given.
    Manifest(crate::wire::BundleRef, Duration),
    /// A report on a bundle.
    Report(crate::wire::BundleRef),
}

impl FragOut {
    /// The least of the message worth starting in a frame already holding other
    /// messages, the frame numbered `pn` on a link whose frames arrive in order (`None`
    /// elsewhere; see [`FragOut::write_at`]).
    pub fn min_first(&self, pn: Option<u64>) -> usize {
        if pn.is_some() && self.parity.is_none() {
            MIN_FIRST_GOING_ON
        } else {
            MIN_FIRST
        }
    }

    /// Whether the message would fit an empty frame of `w`'s budget after all (then it
    /// is sent whole, not in fragments).
    pub fn fits_whole(&self, w: &FrameWriter) -> bool {
        self.msg.len() <= w.capacity()
    }

    /// Writes as much of the message as fits (at least `min` bytes unless that is all
    /// that is left); true when the whole message is out.
    #[cfg(test)]
    pub fn write(&mut self, w: &mut FrameWriter, min: usize) -> (usize, bool) {
        self.write_at(w, min, None)
    }

    /// [`FragOut::write`] into the frame numbered `pn` on a link whose frames arrive in
    /// order or not at all (`None` elsewhere): where the frame just before ended with
    /// this message's fragment, this one goes on from it without naming the message
    /// again (`FRAG_NEXT`, 5-6 bytes less). Not with a parity: a lost frame would then
    /// take two fragments with it, one more than the parity rebuilds; without one, the
    /// message is lost with any fragment either way.
    pub fn write_at(&mut self, w: &mut FrameWriter, min: usize, pn: Option<u64>) -> (usize, bool) {
        let next = w.is_empty()
            && self.parity.is_none()
            && pn.is_some_and(|pn| {
                self.ended_frame
                    .is_some_and(|e| e.checked_add(1) == Some(pn))
            });
        let n = w.frag(self.id, self.sent, &self.msg, min, next);
        if n > 0
            && let Some(p) = self.parity.as_mut()
        {
            let part = &self.msg[self.sent..self.sent + n];
            if p.acc.len() < n {
                p.acc.resize(n, 0);
            }
            for (a, b) in p.acc.iter_mut().zip(part) {
                *a ^= b;
            }
            p.count += 1;
        }
        self.sent += n;
        let done = self.sent >= self.msg.len();
        // A fragment that leaves the message unfinished filled its frame: it is the
        // frame's last message, which the next frame may go on from.
        self.ended_frame = if n > 0 && !done { pn } else { None };
        (n, done)
    }

    /// The message's id if a parity follows its fragments.
    pub fn parity_id(&self) -> Option<u64> {
        self.parity.as_ref().map(|_| self.id)
    }

    /// Bytes of the whole message.
    pub fn len(&self) -> usize {
        self.msg.len()
    }

    /// The fragments are followed by their parity.
    pub fn with_parity(mut self) -> Self {
        self.parity = Some(Parity::default());
        self
    }

    /// Whether every fragment is out and only the parity is left to write.
    pub fn parity_left(&self) -> bool {
        self.sent >= self.msg.len() && self.parity.as_ref().is_some_and(|p| !p.written)
    }

    /// Writes the parity once every fragment is out, if it fits whole in what is left
    /// of `w`. True when nothing is left to write: the parity went, or never will (a
    /// single fragment needs none; a parity that no longer fits an empty frame, the
    /// budget having shrunk, is given up).
    pub fn write_parity(&mut self, w: &mut FrameWriter) -> bool {
        let total = self.msg.len() as u64;
        let Some(p) = self.parity.as_mut().filter(|p| !p.written) else {
            return true;
        };
        if p.count < 2 {
            p.written = true;
            return true;
        }
        if w.frag_parity(self.id, total, p.count, &p.acc) {
            p.written = true;
            return true;
        }
        if w.is_empty() {
            p.written = true;
        }
        p.written
    }
}

/// Remembers that the parity of message `id` went to `p` (see `Peer::parity_sent`).
pub(super) fn note_parity(p: &mut super::peer::Peer, id: Option<u64>) {
    if let Some(id) = id {
        if p.parity_sent.len() >= PARITIES_KEPT {
            p.parity_sent.pop_front();
        }
        p.parity_sent.push_back(id);
    }
}

/// Whether a message of `len` bytes, cut into fragments for frames of `capacity` bytes
/// and followed by `after` bytes that are lost with it, should carry a parity
/// (above) on a link losing `loss` of its frames: where the resends it saves
/// (the message and what follows it, when exactly one fragment is lost) come to more
/// than the parity's own frame. Two fragments never pay: the parity is as long as one.
pub(super) fn parity_pays(loss: f64, len: usize, capacity: usize, after: usize) -> bool {
    // A fragment's own header: type, length, id, offset and total.
    let per = capacity.saturating_sub(8).max(1);
    let n = len.div_ceil(per);
    if n < 3 || loss.is_nan() || loss <= 0.0 {
        return false;
    }
    let q = loss.min(0.99);
    let one_lost = n as f64 * q * (1.0 - q).powi(n as i32 - 1);
    let frames = n as f64 + after as f64 / per as f64;
    one_lost * frames >= 1.0
}

/// Hands out message ids.
#[derive(Debug, Default)]
pub(crate) struct FragIds {
    next: u64,
}

impl FragIds {
    /// Ids start at a random point so that a restarted node's first ids do not meet
    /// the leftovers of its previous run at its peers.
    pub fn new(seed: u64) -> Self {
        Self {
            next: seed % ID_SPACE,
        }
    }

    /// A message to send in fragments: `encode` writes it into an unbounded writer.
    /// `None` if it is empty or larger than any fragmented message may be.
    pub fn start(&mut self, encode: impl FnOnce(&mut FrameWriter) -> bool) -> Option<FragOut> {
        let mut w = FrameWriter::unbounded();
        if !encode(&mut w) {
            return None;
        }
        let msg = w.message_bytes();
        if msg.is_empty() || msg.len() > MAX_FRAGMENTED {
            return None;
        }
        let id = self.next;
        self.next = (self.next + 1) % ID_SPACE;
        Some(FragOut {
            id,
            msg,
            sent: 0,
            about: FragAbout::Other,
            parity: None,
            ended_frame: None,
        })
    }
}

#[derive(Debug)]
struct Partial {
    from: (LinkId, u32),
    id: u64,
    buf: Vec<u8>,
    held: RangeSet,
    at: Duration,
    /// Fragments received, as `(offset, len)`.
    cuts: Vec<(usize, usize)>,
    /// The sender's parity of the fragments: `(count, data)`.
    parity: Option<(u64, Vec<u8>)>,
}

impl Partial {
    /// Rebuilds the one missing fragment from the parity, if exactly one is missing.
    fn recover(&mut self) -> bool {
        let Some((count, parity)) = &self.parity else {
            return false;
        };
        let total = self.buf.len() as u64;
        let missing = self.held.missing(total);
        let [(a, b)] = missing[..] else {
            return false;
        };
        let (a, b) = (a as usize, b as usize);
        if self.cuts.len() as u64 + 1 != *count || b - a > parity.len() {
            return false;
        }
        let mut x = parity.clone();
        for &(o, l) in &self.cuts {
            for (x, b) in x.iter_mut().zip(&self.buf[o..o + l]) {
                *x ^= b;
            }
        }
        self.buf[a..b].copy_from_slice(&x[..b - a]);
        self.held.insert(a as u64, b as u64);
        true
    }
}

/// A sender's frame that ended with a fragment leaving its message unfinished: where a
/// `FRAG_NEXT` in the frame after it goes on.
#[derive(Debug, Clone, Copy)]
struct Ended {
    from: (LinkId, u32),
    pn: u64,
    id: u64,
    end: u64,
    total: u64,
}

/// Messages being put back together.
#[derive(Debug, Default)]
pub(crate) struct Reassembly {
    parts: VecDeque<Partial>,
    /// Per sender, the last frame that ended mid-message (at most [`MAX_PARTIAL`]).
    ended: VecDeque<Ended>,
    /// Fragments that did not fit the message they claimed to belong to.
    pub dropped: u64,
    /// Messages a parity completed (one fragment rebuilt).
    pub rebuilt: u64,
}

impl Reassembly {
    /// Where a `FRAG_NEXT` first in `from`'s frame numbered `pn` goes: `(id, offset,
    /// total)` of its message, if the frame just before ended with a fragment of it.
    pub fn next_of(&self, from: (LinkId, u32), pn: u64) -> Option<(u64, u64, u64)> {
        self.ended
            .iter()
            .find(|e| e.from == from && e.pn.checked_add(1) == Some(pn))
            .map(|e| (e.id, e.end, e.total))
    }

    /// Forgets where `from`'s last frame ended (its sender started a new session, and
    /// its packet numbers start again).
    pub fn forget_ended(&mut self, from: (LinkId, u32)) {
        self.ended.retain(|e| e.from != from);
    }

    /// `from`'s frame numbered `pn` ended with a fragment of message `id` that left it
    /// unfinished at `end` of `total` bytes (`last`), or with anything else (`None`).
    pub fn frame_ended(&mut self, from: (LinkId, u32), pn: u64, last: Option<(u64, u64, u64)>) {
        self.forget_ended(from);
        if let Some((id, end, total)) = last {
            if self.ended.len() >= MAX_PARTIAL {
                self.ended.pop_front();
            }
            self.ended.push_back(Ended {
                from,
                pn,
                id,
                end,
                total,
            });
        }
    }

    /// Adds a fragment from `from` (link and sender tag); returns the message when it is
    /// whole.
    pub fn add(
        &mut self,
        now: Duration,
        from: (LinkId, u32),
        id: u64,
        offset: u64,
        total: u64,
        data: &[u8],
    ) -> Option<Vec<u8>> {
        let (offset, total) = (offset as usize, total as usize);
        let end = offset + data.len();
        if end > total || total > MAX_FRAGMENTED {
            self.dropped += 1;
            return None;
        }
        let at = self.parts.iter().position(|p| p.from == from && p.id == id);
        // A first fragment starts the message afresh (the id may be a leftover of a
        // message whose other fragments were lost, or of the sender's previous run).
        let at = match at {
            Some(i) if offset == 0 || self.parts[i].buf.len() != total => {
                self.parts.remove(i);
                None
            }
            other => other,
        };
        let i = match at {
            Some(i) => i,
            None => {
                while self.parts.iter().filter(|p| p.from == from).count() >= PER_SENDER {
                    let oldest = self.parts.iter().position(|p| p.from == from)?;
                    self.parts.remove(oldest);
                }
                if self.parts.len() >= MAX_PARTIAL {
                    self.parts.pop_front();
                }
                self.parts.push_back(Partial {
                    from,
                    id,
                    buf: vec![0; total],
                    held: RangeSet::new(),
                    at: now,
                    cuts: Vec::new(),
                    parity: None,
                });
                self.parts.len() - 1
            }
        };
        let p = &mut self.parts[i];
        p.buf[offset..end].copy_from_slice(data);
        p.held.insert(offset as u64, end as u64);
        p.at = now;
        if !p.cuts.iter().any(|c| c.0 == offset) {
            p.cuts.push((offset, data.len()));
        }
        if p.held.is_complete(total as u64) {
            return self.parts.remove(i).map(|p| p.buf);
        }
        if p.recover() {
            self.rebuilt += 1;
            return self.parts.remove(i).map(|p| p.buf);
        }
        None
    }

    /// Adds the parity of message `id` from `from`; returns the message when it
    /// rebuilds the one fragment missing. A parity for a message not being put together
    /// (whole already, or every fragment lost) is dropped: alone it rebuilds nothing.
    pub fn add_parity(
        &mut self,
        now: Duration,
        from: (LinkId, u32),
        id: u64,
        total: u64,
        count: u64,
        data: &[u8],
    ) -> Option<Vec<u8>> {
        let i = self
            .parts
            .iter()
            .position(|p| p.from == from && p.id == id && p.buf.len() as u64 == total)?;
        let p = &mut self.parts[i];
        p.parity = Some((count, data.to_vec()));
        p.at = now;
        if p.recover() {
            self.rebuilt += 1;
            return self.parts.remove(i).map(|p| p.buf);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{self, Header, Message};

    fn cut(msg_len: usize, budget: usize) -> Vec<Vec<u8>> {
        let mut ids = FragIds::new(7);
        let body = vec![0xabu8; msg_len];
        let mut f = ids.start(|w| w.manifest(&body)).expect("fits");
        let mut frames = Vec::new();
        loop {
            let mut w = FrameWriter::new(
                Header {
                    addr: Some((1, 2)),
                    pn: 300,
                    short_tags: false,
                },
                budget,
            );
            let (n, done) = f.write(&mut w, 0);
            assert!(n > 0, "no progress at budget {budget}");
            frames.push(w.finish());
            if done {
                return frames;
            }
        }
    }

    #[test]
    fn a_manifest_crosses_48_byte_frames_and_comes_back_whole() {
        for budget in [48, 64, 100] {
            let frames = cut(140, budget);
            assert!(frames.iter().all(|f| f.len() <= budget));
            let mut r = Reassembly::default();
            let mut whole = None;
            for f in &frames {
                let (_, msgs) = wire::parse(f).expect("valid frame");
                for m in msgs {
                    let Message::Frag {
                        id,
                        offset,
                        total,
                        data,
                    } = m
                    else {
                        panic!("not a fragment: {m:?}");
                    };
                    assert!(whole.is_none(), "whole before the last fragment");
                    whole = r.add(Duration::ZERO, (0, 1), id, offset, total, data);
                }
            }
            let whole = whole.expect("reassembled");
            let msgs = wire::parse_messages(&whole).expect("parses");
            assert_eq!(
                msgs,
                vec![Message::Manifest {
                    seq: None,
                    bytes: &[0xab; 140]
                }]
            );
        }
    }

    #[test]
    fn a_lost_fragment_loses_only_that_message_and_bounds_hold() {
        let frames = cut(140, 48);
        let mut r = Reassembly::default();
        let add = |r: &mut Reassembly, f: &[u8], from: u32| {
            let (_, msgs) = wire::parse(f).expect("valid");
            let mut out = None;
            for m in msgs {
                if let Message::Frag {
                    id,
                    offset,
                    total,
                    data,
                } = m
                {
                    out = r.add(Duration::ZERO, (0, from), id, offset, total, data);
                }
            }
            out
        };
        // The middle fragment lost: nothing comes out.
        for (i, f) in frames.iter().enumerate() {
            if i != 2 {
                assert!(add(&mut r, f, 1).is_none());
            }
        }
        // Sent again (same id here, as a worst case): the first fragment restarts it.
        let mut got = None;
        for f in &frames {
            got = add(&mut r, f, 1);
        }
        assert!(got.is_some());
        // Many senders: memory stays bounded.
        for from in 0..1000 {
            add(&mut r, &frames[0], from);
        }
        assert!(r.parts.len() <= MAX_PARTIAL);
        // A fragment claiming more than the message holds is dropped and counted.
        assert!(r.add(Duration::ZERO, (0, 9), 1, 10, 12, b"abc").is_none());
        assert_eq!(r.dropped, 1);
    }

    /// A 140 B manifest cut for `budget` B frames with its parity: each frame's
    /// messages, and the message as sent.
    fn cut_with_parity(budget: usize, min_first: usize) -> (Vec<Vec<u8>>, Vec<u8>) {
        let mut ids = FragIds::new(9);
        let body: Vec<u8> = (0..140u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut f = ids
            .start(|w| w.manifest(&body))
            .expect("fits")
            .with_parity();
        let whole = f.msg.clone();
        let mut frames = Vec::new();
        let mut first = true;
        loop {
            let mut w = FrameWriter::new(Header::unaddressed(1), budget);
            if first {
                // Something ahead of the first fragment: fragments of unequal length.
                assert!(w.heard(77));
            }
            let done = if f.parity_left() {
                assert!(f.write_parity(&mut w), "an empty frame takes the parity");
                true
            } else {
                let min = if first { min_first } else { 0 };
                let (n, done) = f.write(&mut w, min);
                assert!(n > 0);
                done && f.write_parity(&mut w)
            };
            first = false;
            frames.push(w.finish());
            if done {
                return (frames, whole);
            }
        }
    }

    fn feed(r: &mut Reassembly, frame: &[u8]) -> Option<Vec<u8>> {
        let (_, msgs) = wire::parse(frame).expect("valid frame");
        let mut out = None;
        for m in msgs {
            let got = match m {
                Message::Frag {
                    id,
                    offset,
                    total,
                    data,
                } => r.add(Duration::ZERO, (0, 1), id, offset, total, data),
                Message::FragParity {
                    id,
                    total,
                    count,
                    data,
                } => r.add_parity(Duration::ZERO, (0, 1), id, total, count, data),
                _ => None,
            };
            out = out.or(got);
        }
        out
    }

    #[test]
    fn a_parity_goes_where_the_resends_it_saves_outweigh_its_frame() {
        // A 140 B manifest: five fragments in 48 B frames (40 B of room), three in 64 B,
        // two in 100 B; 100 B of payload after it.
        let pays = |loss, capacity| parity_pays(loss, 140, capacity, 100);
        // A clean link, or a link that loses little: never.
        for capacity in [40, 56, 92] {
            assert!(!pays(0.0, capacity));
            assert!(!pays(0.01, capacity));
        }
        // Two fragments: never (the parity is as long as one of them).
        for loss in [0.05, 0.1, 0.3, 0.5] {
            assert!(!pays(loss, 92), "{loss}");
        }
        // Five fragments: from a few percent.
        assert!(!pays(0.02, 40));
        assert!(pays(0.05, 40));
        assert!(pays(0.1, 40));
        // Three: from about a tenth.
        assert!(!pays(0.05, 56));
        assert!(pays(0.1, 56));
        // So much loss that two fragments of five are lost as often as one: not any more.
        assert!(!pays(0.6, 40));
    }

    #[test]
    fn a_parity_rebuilds_any_one_lost_fragment_and_no_more() {
        for budget in [48, 64, 100] {
            let (frames, whole) = cut_with_parity(budget, MIN_FIRST);
            let with_fragments: Vec<usize> = (0..frames.len())
                .filter(|&i| {
                    let (_, msgs) = wire::parse(&frames[i]).expect("valid");
                    msgs.iter().any(|m| matches!(m, Message::Frag { .. }))
                })
                .collect();
            assert!(with_fragments.len() >= 2, "{budget} B: cut in several");
            // Any one frame lost, the message comes out whole, once.
            for &lost in &with_fragments {
                let mut r = Reassembly::default();
                let out: Vec<Vec<u8>> = (0..frames.len())
                    .filter(|&i| i != lost)
                    .filter_map(|i| feed(&mut r, &frames[i]))
                    .collect();
                assert_eq!(out, vec![whole.clone()], "{budget} B, frame {lost} lost");
                assert!(r.parts.is_empty(), "nothing left behind");
            }
            // Two lost: nothing comes out, and nothing false.
            if with_fragments.len() >= 3 {
                let mut r = Reassembly::default();
                let lost = [with_fragments[0], with_fragments[2]];
                let out: Vec<Vec<u8>> = (0..frames.len())
                    .filter(|i| !lost.contains(i))
                    .filter_map(|i| feed(&mut r, &frames[i]))
                    .collect();
                assert!(out.is_empty(), "{budget} B: two fragments lost, {out:?}");
            }
            // The parity alone (every fragment lost), or after the message is whole,
            // starts nothing.
            if let Some(only) = (0..frames.len()).find(|i| !with_fragments.contains(i)) {
                let mut r = Reassembly::default();
                assert!(feed(&mut r, &frames[only]).is_none());
                assert!(
                    r.parts.is_empty(),
                    "{budget} B: a parity alone left a partial"
                );
            }
            let mut r = Reassembly::default();
            let out: Vec<Vec<u8>> = frames.iter().filter_map(|f| feed(&mut r, f)).collect();
            assert_eq!(
                out,
                vec![whole.clone()],
                "{budget} B: all frames, one message"
            );
            assert!(
                r.parts.is_empty(),
                "{budget} B: a late parity left a partial"
            );
        }
    }

    #[test]
    fn a_parity_that_does_not_fit_an_empty_frame_is_given_up() {
        let mut ids = FragIds::new(3);
        let mut f = ids
            .start(|w| w.manifest(&[5u8; 140]))
            .expect("fits")
            .with_parity();
        while !f.parity_left() {
            let mut w = FrameWriter::new(Header::unaddressed(1), 64);
            assert!(f.write(&mut w, 0).0 > 0);
        }
        // The budget shrank below the parity's length: an empty frame cannot take it.
        let mut w = FrameWriter::new(Header::unaddressed(1), 40);
        assert!(f.write_parity(&mut w), "given up, not waited for");
        assert!(!f.parity_left());
        assert!(w.is_empty());
    }

    proptest::proptest! {
        /// Whatever frames are lost, repeated or reordered, the receiver hands out the
        /// message as sent or nothing: a parity never rebuilds a wrong one.
        #[test]
        fn what_comes_out_is_the_message_sent(
            len in 60usize..400,
            budget in 48usize..120,
            seed in proptest::prelude::any::<u64>(),
            drop_mask in proptest::prelude::any::<u32>(),
            dup_mask in proptest::prelude::any::<u32>(),
            reorder in proptest::prelude::any::<bool>(),
        ) {
            let mut ids = FragIds::new(seed);
            let body: Vec<u8> = (0..len).map(|i| (i as u64 ^ seed) as u8).collect();
            let mut f = ids.start(|w| w.manifest(&body)).expect("fits").with_parity();
            let whole = f.msg.clone();
            let mut frames = Vec::new();
            loop {
                let mut w = FrameWriter::new(Header::unaddressed(1), budget);
                let done = if f.parity_left() {
                    f.write_parity(&mut w)
                } else {
                    let (_, done) = f.write(&mut w, 0);
                    done && f.write_parity(&mut w)
                };
                frames.push(w.finish());
                if done {
                    break;
                }
            }
            let mut arriving: Vec<Vec<u8>> = Vec::new();
            for (i, fr) in frames.iter().enumerate() {
                if drop_mask & (1 << (i % 32)) != 0 {
                    continue;
                }
                arriving.push(fr.clone());
                if dup_mask & (1 << (i % 32)) != 0 {
                    arriving.push(fr.clone());
                }
            }
            if reorder {
                arriving.reverse();
            }
            let mut r = Reassembly::default();
            // Fragments and parities lost.
            let (mut frags_lost, mut parity_lost) = (0, false);
            for (i, fr) in frames.iter().enumerate() {
                if drop_mask & (1 << (i % 32)) == 0 {
                    continue;
                }
                let (_, msgs) = wire::parse(fr).expect("valid");
                for m in msgs {
                    match m {
                        Message::Frag { .. } => frags_lost += 1,
                        Message::FragParity { .. } => parity_lost = true,
                        _ => {}
                    }
                }
            }
            let mut out = 0;
            for fr in &arriving {
                if let Some(m) = feed(&mut r, fr) {
                    proptest::prop_assert_eq!(&m, &whole);
                    out += 1;
                }
            }
            // In order, no fragment lost, or one and not the parity: the message comes out.
            if !reorder && (frags_lost == 0 || (frags_lost == 1 && !parity_lost && frames.len() > 1)) {
                proptest::prop_assert!(out >= 1, "{} frames, {frags_lost} fragments lost: nothing", frames.len());
            }
        }
    }
}
