//! Node tags on shared links, long and short.
//!
//! An addressed frame names its sender and receiver by node tag: 4 bytes each, or, with
//! `SHORT_TAGS`, 2 bytes each (`wire::short_tag`). On a 48-64 B radio frame the 4 bytes
//! saved are a tenth of the frame. Short tags are used only where they name one node:
//!
//! - a receiver takes short tags from a peer only while it knows no other node on the
//!   link with that peer's short tag, and says so in each HELLO to it that says it heard
//!   it (`HELLO_SHORT_TAGS`; never in a beacon); learning of a second such node, it
//!   greets the peers concerned again without the flag, and drops (counted)
//!   short-tagged frames to it that it cannot attribute until they switch;
//! - a sender uses them only to a peer whose last HELLO took them, and only while it
//!   knows no other node on the link sharing its own short tag or the peer's (a third
//!   node with the peer's short tag would take the frame for its own).
//!
//! What a node knows is every node whose HELLO it heard on the link, and a sender uses
//! short tags only to a peer whose HELLO heard it, so it knows every node that heard it
//! and shares that peer's short tag. A node under the peer's short tag that hears the
//! sender while the sender never heard it is not covered (docs/protocol.md, "Short
//! tags").

use std::time::Duration;

use crate::wire::{BROADCAST, Header, short_tag};

use super::{Endpoint, HELLO_SHORT_TAGS, LinkId};

/// The short form of [`BROADCAST`]: never a node's short tag.
const SHORT_BROADCAST: u16 = 0xffff;

impl Endpoint {
    /// Records that `tag` names `key` on `link` (its HELLO was heard there). A second
    /// node under a short tag already known: the peers under it are greeted again, so
    /// they learn to send us long tags.
    pub(super) fn learn_tag(&mut self, now: Duration, link: LinkId, tag: u32, key: [u8; 32]) {
        if self.by_tag.insert((link, tag), key).is_some() {
            return;
        }
        let tags = self.by_short.entry((link, short_tag(tag))).or_default();
        tags.push(tag);
        if tags.len() > 1 {
            let tags = tags.clone();
            tracing::debug!(
                link,
                short = short_tag(tag),
                "two nodes share a short tag: long tags from them"
            );
            self.greet_again(now, link, &tags, false);
        }
    }

    /// Asks for a HELLO to each established peer among `tags` on `link` that is not
    /// about to get one (its flags tell it whether to use short tags); `paced`: not to
    /// one greeted within its last round trip.
    fn greet_again(&mut self, now: Duration, link: LinkId, tags: &[u32], paced: bool) {
        for t in tags {
            let Some(key) = self.by_tag.get(&(link, *t)).copied() else {
                continue;
            };
            if let Some(p) = self.peers.get_mut(&key)
                && p.established
                && p.link == link
                && !p.hello_due
                && (!paced || now >= p.hello_at + p.cc.rtt_bound())
            {
                p.hello_due = true;
                p.hello_after = now;
            }
        }
    }

    /// The nodes known on `link` under `tag`'s short form.
    fn under_short(&self, link: LinkId, tag: u32) -> &[u32] {
        self.by_short
            .get(&(link, short_tag(tag)))
            .map_or(&[], Vec::as_slice)
    }

    /// Whether we take short tags from the node tagged `tag` on `link`: the flag of a
    /// HELLO to it (one that says we heard it: a beacon, to whoever hears it, never
    /// carries the flag, and a node honours it only from a HELLO that heard it).
    pub(super) fn short_tags_flag(&self, link: LinkId, tag: u32) -> u8 {
        let takes = short_tag(tag) != SHORT_BROADCAST && self.under_short(link, tag).len() <= 1;
        if takes { HELLO_SHORT_TAGS } else { 0 }
    }

    /// Whether a frame from us to the node tagged `to` on `link`, which takes short tags
    /// from us, may carry them: no other node we know there shares our short tag or its.
    pub(super) fn may_use_short_tags(&self, link: LinkId, to: u32) -> bool {
        let (mine, theirs) = (short_tag(self.tag), short_tag(to));
        mine != SHORT_BROADCAST
            && theirs != SHORT_BROADCAST
            && mine != theirs
            && self.under_short(link, self.tag).is_empty()
            && self.under_short(link, to).len() == 1
    }

    /// `header` with its tags in long form, as the rest of the endpoint reads them; `None`
    /// when it is addressed to us (or everyone) and its short sender tag names two nodes
    /// we know (the senders under it are greeted again). A sender we know nothing of
    /// keeps its short tag: no known tag equals it, so it is answered as any unknown
    /// sender.
    pub(super) fn long_tags(
        &mut self,
        now: Duration,
        link: LinkId,
        header: Header,
    ) -> Option<Header> {
        let (true, Some((src, dst))) = (header.short_tags, header.addr) else {
            return Some(header);
        };
        let mine = short_tag(self.tag);
        let to_us = mine != SHORT_BROADCAST && dst == u32::from(mine);
        let to_all = dst == u32::from(SHORT_BROADCAST);
        // Someone else's: any tag but ours and every neighbour's.
        let other = if self.tag ^ 1 == BROADCAST {
            self.tag ^ 2
        } else {
            self.tag ^ 1
        };
        let long = |src, dst| {
            Some(Header {
                addr: Some((src, dst)),
                short_tags: false,
                ..header
            })
        };
        let senders = self.under_short(link, src);
        if !to_us && !to_all {
            // Not ours: the sender only where it is plain (its FEC symbols serve us
            // too); an ambiguous one is no business of ours.
            let src = match senders {
                [tag] => *tag,
                _ => BROADCAST,
            };
            return long(src, other);
        }
        let src = match senders {
            [] => src,
            [tag] => *tag,
            tags => {
                // Each such frame may ask again, at most once a round trip: the HELLO
                // that says so may have been lost.
                let tags = tags.to_vec();
                self.greet_again(now, link, &tags, true);
                return None;
            }
        };
        long(src, if to_us { self.tag } else { BROADCAST })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_broadcast_tag_is_the_broadcast_tags_short_form() {
        assert_eq!(short_tag(BROADCAST), SHORT_BROADCAST);
    }
}
