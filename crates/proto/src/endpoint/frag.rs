//! Messages larger than a link's frames: sent in fragments, put back together.
//!
//! A manifest (about 140 B), a HELLO with its sketch, or a report on a much-fragmented
//! transfer can be larger than a LoRa frame (51-115 B at long range). Such a message is
//! encoded whole, cut into FRAG messages as frames have room, and handled by the
//! receiver once every byte of it is in, exactly as if it had come in one frame. A lost
//! fragment loses the message; whatever would repeat the message (a manifest's resend
//! timer, the HELLO timer, the next report) sends it again, under a new id.

use std::collections::VecDeque;
use std::time::Duration;

use skywave_bundle::RangeSet;

use super::LinkId;
use crate::wire::{FrameWriter, MAX_FRAGMENTED};

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

/// A message going out in fragments.
#[derive(Debug)]
pub(crate) struct FragOut {
    id: u64,
    msg: Vec<u8>,
    sent: usize,
    /// What the message is, when losing one of its frames must be repaired (see
    /// `Peer::notes`).
    pub about: FragAbout,
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
    /// Whether the message would fit an empty frame of `w`'s budget after all (then it
    /// is sent whole, not in fragments).
    pub fn fits_whole(&self, w: &FrameWriter) -> bool {
        self.msg.len() <= w.capacity()
    }

    /// Writes as much of the message as fits (at least `min` bytes unless that is all
    /// that is left); true when the whole message is out.
    pub fn write(&mut self, w: &mut FrameWriter, min: usize) -> (usize, bool) {
        let n = w.frag(self.id, self.sent, &self.msg, min);
        self.sent += n;
        (n, self.sent >= self.msg.len())
    }
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
}

/// Messages being put back together.
#[derive(Debug, Default)]
pub(crate) struct Reassembly {
    parts: VecDeque<Partial>,
    /// Fragments that did not fit the message they claimed to belong to.
    pub dropped: u64,
}

impl Reassembly {
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
                });
                self.parts.len() - 1
            }
        };
        let p = &mut self.parts[i];
        p.buf[offset..end].copy_from_slice(data);
        p.held.insert(offset as u64, end as u64);
        p.at = now;
        if p.held.is_complete(total as u64) {
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
}
