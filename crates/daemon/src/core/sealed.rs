//! Encrypted IP links in the core: opening sealed datagrams (handshakes answered,
//! refusals counted and logged once per host), sealing frames, the bound on unverified
//! UDP peers, and trust lists reloaded while running.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use skywave_node::secure::{self, DATA_OVERHEAD, Sealed};
use skywave_proto::LinkId;

use super::{Batch, Core, Io, MAX_KNOWN_KEYS, MAX_UNPROVEN, PRE_SESSION_FRAME};

impl Core {
    /// Room for one more peer not yet proven on `sock`: at most [`MAX_UNPROVEN`] are
    /// kept, and the one heard from longest ago makes way (a flood of forged sources
    /// churns this small table and never reaches the proven peers).
    pub(super) fn admit_unproven(&mut self, sock: usize) -> bool {
        if self.udp[sock].trust.is_none() {
            return true;
        }
        let unproven: Vec<(LinkId, Instant, SocketAddr)> = self
            .links
            .iter()
            .filter_map(|(&id, e)| match (&e.io, &e.sec) {
                (Io::Udp { sock: s, addr }, Some(sec))
                    if *s == sock && e.learnt && !sec.chan.proven() =>
                {
                    Some((id, e.last_in, *addr))
                }
                _ => None,
            })
            .collect();
        if unproven.len() < MAX_UNPROVEN {
            return true;
        }
        let Some(&(id, _, addr)) = unproven.iter().min_by_key(|u| u.1) else {
            return true;
        };
        *self.drops.entry("unproven_evicted").or_default() += 1;
        self.forget_udp(sock, addr, id, "evicted: never proved its address");
        true
    }

    pub(super) fn forget_udp(&mut self, sock: usize, addr: SocketAddr, id: LinkId, why: &str) {
        if let Some(e) = self.links.get_mut(&id) {
            e.ephemeral = true;
        }
        self.set_down(id, why.into());
        self.links.remove(&id);
        self.udp[sock].peers.remove(&addr);
    }

    /// Opens a datagram of an encrypted link: handshake messages are answered, frames
    /// go to the endpoint, and every drop is counted by reason.
    pub(super) fn on_sealed(
        &mut self,
        link: LinkId,
        data: &[u8],
        now: Duration,
        arrived: Duration,
    ) {
        let Some(e) = self.links.get_mut(&link) else {
            return;
        };
        let Some(sec) = e.sec.as_mut() else {
            return;
        };
        let key_at = sec.key_at;
        let host = sec.host;
        let policy = &self.trusts[sec.trust].policy;
        let mut frame = std::mem::take(&mut self.opened);
        let mut reply = Vec::new();
        let r = sec.chan.open(policy, now, data, &mut frame, &mut reply);
        let r = match r {
            Err(secure::Drop::Decrypt) => {
                // Sealed data no session opens: we restarted and the peer did not, or
                // the session we answered is not the peer's (see `Channel::kick`).
                if sec.chan.kick(policy, now, &mut reply) {
                    self.send_raw(link, std::mem::take(&mut reply));
                }
                Err(secure::Drop::Decrypt)
            }
            r => r,
        };
        match r {
            Ok(o) => {
                if let Some(remote) = o.established {
                    self.ep.bind_link(link, Some(remote));
                    if let Some(a) = key_at
                        && (self.known_keys.len() < MAX_KNOWN_KEYS
                            || self.known_keys.contains_key(&a))
                        && self.known_keys.insert(a, remote) != Some(remote)
                    {
                        self.known_dirty = true;
                    }
                    tracing::debug!(link, remote = %hex::encode(&remote[..8]), "encrypted session");
                }
                if o.reply {
                    self.send_raw(link, reply);
                }
                if o.frame {
                    let shared = self.shared.clone();
                    let mut store = shared.store();
                    self.ep
                        .handle_frame_at(now, arrived, link, &frame, &mut *store);
                    let held = self
                        .links
                        .get_mut(&link)
                        .and_then(|e| e.sec.as_mut())
                        .is_some_and(|s| s.chan.take_held(&mut frame));
                    if held {
                        self.ep
                            .handle_frame_at(now, arrived, link, &frame, &mut *store);
                    }
                }
            }
            Err(d) => {
                *self.drops.entry(d.name()).or_default() += 1;
                if d == secure::Drop::Untrusted {
                    if let Some(e) = self.links.get_mut(&link) {
                        e.refused_at = Some(Instant::now());
                    }
                    let name = self.links.get(&link).map(|e| e.name.clone());
                    let first = host.is_none_or(|a| {
                        self.refused_logged.len() < MAX_KNOWN_KEYS && self.refused_logged.insert(a)
                    });
                    if first {
                        tracing::warn!(link, name = ?name, "refused a peer: its node key is not on this link's trust list (counted as untrusted_peer; logged once per host)");
                    }
                }
            }
        }
        // Kept at its length: the next datagram is opened over it (`Session::open`).
        self.opened = frame;
    }

    /// Sends a datagram the channel built (a handshake message) as it is.
    pub(super) fn send_raw(&mut self, link: LinkId, d: Vec<u8>) {
        let Some(e) = self.links.get_mut(&link) else {
            return;
        };
        match &e.io {
            Io::Udp { sock, addr } => {
                let b = Batch {
                    link,
                    addr: *addr,
                    seg: d.len(),
                    count: 1,
                    buf: d,
                };
                let sock = *sock;
                self.send_batch(sock, b);
            }
            Io::Tcp(tx) => {
                let n = d.len() as u64;
                if tx.frames.try_send(Bytes::from(d)).is_ok() {
                    e.bytes_out += n;
                    e.frames_out += 1;
                } else {
                    *self.drops.entry("send_failed").or_default() += 1;
                }
            }
            _ => {}
        }
    }

    /// Seals `plain` for link `id` into `self.sealed`; false (and counted) if nothing
    /// is to be sent.
    pub(super) fn seal(&mut self, id: LinkId, now: Duration) -> bool {
        let mut out = std::mem::take(&mut self.sealed);
        out.clear();
        let ok = self.seal_into(id, now, &mut out);
        self.sealed = out;
        ok
    }

    /// Seals `plain` for link `id`, appended to `out` (a datagram batch: with a session
    /// the sealed length is `plain`'s plus [`DATA_OVERHEAD`], so the batch is planned
    /// before and no copy is made after); false (and counted) if nothing is to be sent.
    pub(super) fn seal_into(&mut self, id: LinkId, now: Duration, out: &mut Vec<u8>) -> bool {
        let Some(sec) = self.links.get_mut(&id).and_then(|e| e.sec.as_mut()) else {
            return false;
        };
        match sec
            .chan
            .seal(&self.trusts[sec.trust].policy, now, &self.plain, out)
        {
            Sealed::Data | Sealed::Handshake => true,
            Sealed::Held => false,
            Sealed::Limited => {
                *self.drops.entry("unproven_limit").or_default() += 1;
                false
            }
        }
    }

    /// An encrypted link with no session yet: what was sealed last was a handshake.
    pub(super) fn handshaking(&self, id: LinkId) -> bool {
        self.links
            .get(&id)
            .and_then(|e| e.sec.as_ref())
            .is_some_and(|s| s.chan.remote().is_none())
    }

    /// An encrypted link's frame budget: none while a handshake is in flight (frames
    /// built then would be lost), and a first frame small enough to ride a handshake.
    pub(super) fn sealed_budget(&self, id: LinkId, max: usize, now: Duration) -> Option<usize> {
        let Some(e) = self.links.get(&id) else {
            return Some(max);
        };
        let Some(sec) = &e.sec else {
            return Some(max);
        };
        if sec.chan.remote().is_some() {
            return Some(max);
        }
        if !sec.chan.ready(now) {
            return None;
        }
        let wire = e.adapter.params().mtu + DATA_OVERHEAD;
        Some(
            max.min(wire.saturating_sub(secure::HANDSHAKE_OVERHEAD))
                .min(PRE_SESSION_FRAME),
        )
    }

    /// Reads changed trust files; sessions with keys no longer listed end at once.
    pub(super) fn reload_trust(&mut self) {
        for i in 0..self.trusts.len() {
            match self.trusts[i].reload() {
                Ok(false) => continue,
                Ok(true) => {}
                Err(e) => {
                    tracing::warn!("{e} (the previous trust list stays in force)");
                    continue;
                }
            }
            tracing::info!(
                file = ?self.trusts[i].trust_path(),
                "trust list reloaded"
            );
            // A host refused under the old list is worth a line again under the new.
            self.refused_logged.clear();
            let policy = &self.trusts[i].policy;
            let mut revoked = Vec::new();
            for (&id, e) in self.links.iter_mut() {
                if let Some(sec) = e.sec.as_mut().filter(|s| s.trust == i)
                    && let Some(r) = sec.chan.remote()
                    && !policy.allows(&r)
                {
                    sec.chan.reset();
                    revoked.push((id, e.name.clone()));
                }
            }
            for (id, name) in revoked {
                tracing::warn!(link = id, %name, "session ended: the peer's key is no longer on the trust list");
                self.ep.bind_link(id, None);
            }
        }
    }
}
