//! The daemon's status as `/v1/status` and `skywave status` show it: links, peers,
//! transfers, protocol counters and the store.

use std::collections::BTreeMap;

use skywave_links::LinkCounters;
use skywave_proto::Direction;

use std::time::{Duration, Instant};

use serde_json::json;

use super::{Core, Io, LinkEntry};
use crate::status::{LinkView, PeerView, ProtocolView, Status, StoreView, TransferView};

impl Core {
    pub(super) fn status(&mut self) -> Status {
        let now = self.now();
        let stats = self.ep.stats().clone();
        let mut dropped: BTreeMap<String, u64> = BTreeMap::new();
        for (k, v) in [
            ("malformed", stats.dropped_malformed),
            ("unknown_version", stats.dropped_unknown_version),
            ("not_for_us", stats.dropped_not_for_us),
            ("unknown_peer", stats.dropped_unknown_peer),
            ("ambiguous_tag", stats.dropped_ambiguous_tag),
            ("wrong_identity", stats.dropped_wrong_identity),
            ("bad_manifest", stats.bad_manifests),
            ("bad_payload", stats.bad_payloads),
            ("suspect_offer", stats.suspect_offers_refused),
            ("no_room", stats.offers_refused_no_room),
            ("incoming_limit", stats.incoming_limit),
            ("paused_offer", stats.paused_offers),
            ("withheld_want", stats.withheld_wants_refused),
            ("withheld_offer", stats.withheld_offers_refused),
        ] {
            dropped.insert(k.into(), v);
        }
        for (k, v) in &self.drops {
            *dropped.entry((*k).into()).or_default() += v;
        }
        let links = self
            .links
            .iter()
            .map(|(&id, e)| {
                let mut d = BTreeMap::new();
                if let Io::Driver { counters, .. } = &e.io {
                    d.insert("driver".into(), LinkCounters::get(&counters.dropped_frames));
                    d.insert(
                        "garbage_bytes".into(),
                        LinkCounters::get(&counters.garbage_bytes),
                    );
                    // Frames for other stations on a shared channel (of `driver`).
                    d.insert(
                        "not_ours".into(),
                        LinkCounters::get(&counters.foreign_frames),
                    );
                }
                if e.tag.is_some() {
                    // Frames without a valid network-key tag.
                    d.insert("bad_tag".into(), e.bad_tags);
                }
                let rate = e.adapter.params().rate_bps.filter(|_| e.up);
                let (over_ends_sent, over_ends_heard, over_ends_unannounced) = match &e.io {
                    Io::Driver { counters, .. } => {
                        let sent = LinkCounters::get(&counters.over_ends_sent);
                        let heard = LinkCounters::get(&counters.over_ends_heard);
                        let unannounced = LinkCounters::get(&counters.over_ends_unannounced);
                        if sent + heard + unannounced > 0 {
                            (Some(sent), Some(heard), Some(unannounced))
                        } else {
                            (None, None, None)
                        }
                    }
                    _ => (None, None, None),
                };
                let (state, reason) = self.link_health(id, e, Instant::now());
                LinkView {
                    id,
                    kind: e.kind.clone(),
                    name: e.name.clone(),
                    up: e.up,
                    state: state.into(),
                    reason,
                    mtu: e.adapter.params().mtu,
                    rate_bps: rate,
                    bytes_out: e.bytes_out,
                    bytes_in: e.bytes_in,
                    frames_out: e.frames_out,
                    frames_in: e.frames_in,
                    out_bps: e.rate.out_bps,
                    in_bps: e.rate.in_bps,
                    utilisation: rate.map(|r| (e.rate.out_bps + e.rate.in_bps) / r as f64),
                    dropped: d,
                    rssi: e.radio.map(|r| r.rssi),
                    room: matches!(e.io, Io::Driver { .. })
                        .then_some(e.room as u64)
                        .filter(|_| e.up),
                    turn_in_ms: e
                        .mac
                        .as_ref()
                        .and_then(|m| m.waiting_until(now))
                        .map(|t| (t - now).as_secs_f64() * 1000.0),
                    over_ends_sent,
                    over_ends_heard,
                    over_ends_unannounced,
                    device: match &e.io {
                        Io::Driver { counters, .. } => counters
                            .device_state
                            .lock()
                            .map(|m| m.clone())
                            .unwrap_or_default(),
                        _ => Default::default(),
                    },
                    encryption: match (&e.io, &e.sec) {
                        (_, Some(sec)) => Some(sec.chan.state().into()),
                        (Io::Udp { .. } | Io::Tcp(_), None) => Some("plaintext".into()),
                        _ if e.kind == "tcp" => Some("plaintext".into()),
                        _ => None,
                    },
                    trust: e
                        .sec
                        .as_ref()
                        .map(|s| self.trusts[s.trust].cfg.mode.as_str().into()),
                }
            })
            .collect();
        let peers = self
            .ep
            .peer_infos()
            .into_iter()
            .map(|p| {
                let sec = self.links.get(&p.link).and_then(|e| e.sec.as_ref());
                let verified = sec.and_then(|s| s.chan.remote()).is_some()
                    && sec.and_then(|s| s.chan.remote())
                        == skywave_bundle::x25519_public_of(&p.key);
                (
                    p,
                    verified,
                    sec.map(|s| self.trusts[s.trust].cfg.mode.as_str().to_string()),
                )
            })
            .map(|(p, verified, trust)| PeerView {
                reason: peer_reason(
                    &p,
                    self.live.is_down(&p.key),
                    self.links.get(&p.link).map(|e| e.adapter.params().mtu),
                ),
                identity: if verified { "verified" } else { "claimed" }.into(),
                trust,
                node: hex::encode(p.key),
                link: p.link,
                // Never "synced" for a peer that does not answer.
                state: if self.live.is_down(&p.key) {
                    "down".into()
                } else {
                    p.recon.as_str().into()
                },
                recon_bytes: p.recon_bytes,
                recon_messages: p.recon_messages,
                rtt_ms: p.srtt.map(|d| d.as_secs_f64() * 1e3),
                pacing_bps: p.pacing_bps.map(|b| b * 8.0),
                in_flight: p.in_flight,
                path_mtu: p.path_mtu.map(|(size, _)| size),
                path_mtu_searching: p.path_mtu.map(|(_, settled)| !settled),
                silent_seconds: p.silent_for.as_secs_f64(),
                sending: p.sending,
                receiving: p.receiving,
            })
            .collect();
        let transfers = self
            .ep
            .transfers()
            .into_iter()
            .map(|t| {
                let k = (t.peer, t.id, t.version, t.direction == Direction::Send);
                let bps = self.progress.get(&k).map_or(0.0, |p| p.bps);
                let left = t.total.saturating_sub(t.held);
                TransferView {
                    id: t.id.to_string(),
                    version: t.version,
                    peer: hex::encode(t.peer),
                    direction: match t.direction {
                        Direction::Send => "send".into(),
                        Direction::Receive => "receive".into(),
                    },
                    state: t.state.as_str().into(),
                    reason: (t.state == skywave_proto::TransferState::Stalled).then(|| {
                        format!(
                            "stalled: no progress for {}; {}",
                            ago(t.idle_for),
                            match t.direction {
                                Direction::Send => "the peer has not reported what it holds",
                                Direction::Receive => "nothing arrives from the sender",
                            }
                        )
                    }),
                    held_bytes: t.held,
                    total_bytes: t.total,
                    in_flight_bytes: t.in_flight,
                    rate_bps: bps,
                    eta_seconds: (bps > 1.0).then(|| left as f64 / bps),
                    idle_seconds: t.idle_for.as_secs_f64(),
                }
            })
            .collect();
        let st = self.shared.store().store.stats().unwrap_or_default();
        Status {
            node: hex::encode(self.shared.node),
            version: env!("CARGO_PKG_VERSION").into(),
            uptime_seconds: self.shared.started.elapsed().as_secs_f64(),
            http: self.shared.http.clone(),
            links,
            peers,
            transfers,
            protocol: ProtocolView {
                frames_sent: stats.frames_sent,
                bytes_sent: stats.bytes_sent,
                frames_received: stats.frames_received,
                bytes_received: stats.bytes_received,
                recon_bytes_sent: stats.recon_bytes(),
                piece_bytes_sent: stats.piece_bytes_sent,
                piece_bytes_resent: stats.piece_bytes_resent,
                piece_bytes_received: stats.piece_bytes_received,
                duplicate_bytes_received: stats.duplicate_bytes_received,
                bundles_received: stats.bundles_received,
                bundles_delivered: stats.bundles_delivered,
                useful_bytes_received: self.useful_bytes,
                dropped,
            },
            store: StoreView {
                bundles: st.bundles,
                payload_bytes: st.payload_bytes,
                manifest_bytes: st.manifest_bytes,
                partials: st.partials,
                quota: st.quota,
                no_room_seconds: self
                    .ep
                    .no_room_since()
                    .map(|t| now.saturating_sub(t).as_secs_f64()),
            },
            age_seconds: None,
        }
    }
}

/// How long a link may stay silent after coming up before it is "no answer": a few
/// handshake and greeting retries on any IP path.
const NO_ANSWER_AFTER: Duration = Duration::from_secs(10);
/// How long a radio may take no bytes before status says the driver is waiting for it.
const NO_ROOM_AFTER: Duration = Duration::from_secs(30);
/// How long a refusal on a link is shown.
const REFUSAL_SHOWN: Duration = Duration::from_secs(120);

/// `45 s`, `3 min`, `2 h`: a duration as people read it.
pub(crate) fn ago(d: Duration) -> String {
    let s = d.as_secs();
    if s < 120 {
        format!("{s} s")
    } else if s < 2 * 3600 {
        format!("{} min", s / 60)
    } else {
        format!("{} h", s / 3600)
    }
}

/// Why a peer is not simply in sync, in words.
fn peer_reason(p: &skywave_proto::PeerInfo, down: bool, link_mtu: Option<usize>) -> Option<String> {
    if down {
        return Some(format!(
            "no answer for {}: greeted again with backoff",
            ago(p.silent_for)
        ));
    }
    match (p.path_mtu, link_mtu) {
        (Some((size, false)), _) => Some(format!("probing the path MTU ({size} B cross so far)")),
        (Some((size, true)), Some(mtu)) if (size as usize) < mtu => Some(format!(
            "path MTU {size} B: larger frames are lost on the way, so frames are kept to it"
        )),
        _ => None,
    }
}

impl Core {
    /// A link's state and, when it is not simply up, why, in words a person can act on.
    pub(super) fn link_health(
        &self,
        id: skywave_proto::LinkId,
        e: &LinkEntry,
        now: Instant,
    ) -> (&'static str, Option<String>) {
        if !e.up {
            return ("down", e.reason.clone());
        }
        if let Some(t) = e
            .refused_at
            .filter(|t| now.duration_since(*t) < REFUSAL_SHOWN)
        {
            return (
                "refusing",
                Some(format!(
                    "refusing a peer {} ago: its node key is not on this link's trust list (`skywave trust add KEY` admits it)",
                    ago(now.duration_since(t))
                )),
            );
        }
        if let Some(t) = e
            .no_room_since
            .filter(|t| now.duration_since(*t) >= NO_ROOM_AFTER)
        {
            return (
                "waiting",
                Some(format!(
                    "waiting for the radio: 0 B buffer space for {}{}",
                    ago(now.duration_since(t)),
                    e.modem
                        .as_ref()
                        .map(|m| format!(" ({m})"))
                        .unwrap_or_default()
                )),
            );
        }
        let silent = now.duration_since(e.last_in.max(e.up_since));
        let ip = matches!(e.io, Io::Udp { .. } | Io::Tcp(_));
        // No peer here answers: none ever did (an address we dial), or every session on
        // the link is down (a peer that went away, dialled or learnt from its traffic).
        let answered = self
            .ep
            .peers()
            .any(|k| self.ep.peer_link(k) == Some(id) && !self.live.is_down(k));
        let dialled = !e.learnt && !e.ephemeral;
        if ip && !answered && (dialled || self.ep.peers_on(id) > 0) && silent >= NO_ANSWER_AFTER {
            let to = e.name.split_once(':').map_or(e.name.as_str(), |(_, a)| a);
            let trust = if e.sec.is_some() {
                format!(
                    ", and that it trusts this node ({})",
                    &hex::encode(self.shared.node)[..16]
                )
            } else {
                String::new()
            };
            return (
                "no answer",
                Some(format!(
                    "no answer from {to} for {}: check that skywave runs there and is reachable{trust}",
                    ago(silent)
                )),
            );
        }
        ("up", e.modem.clone())
    }

    /// Logs and publishes each link's change of state once.
    pub(super) fn announce_health(&mut self, now: Instant) {
        let changes: Vec<(skywave_proto::LinkId, &'static str, Option<String>)> = self
            .links
            .iter()
            .filter(|(_, e)| e.up)
            .filter_map(|(&id, e)| {
                let (state, reason) = self.link_health(id, e, now);
                (state != e.health).then_some((id, state, reason))
            })
            .collect();
        for (id, state, reason) in changes {
            let Some(e) = self.links.get_mut(&id) else {
                continue;
            };
            let was = std::mem::replace(&mut e.health, state);
            if state == "up" && was == "down" {
                continue; // `set_up` announced it
            }
            match &reason {
                // (A modem's account of itself while up is no warning.)
                Some(r) if state != "up" => tracing::warn!(link = id, name = %e.name, state, "{r}"),
                _ => tracing::info!(link = id, name = %e.name, "link {state} again"),
            }
            self.shared.events.publish(
                "link",
                json!({"link": id, "name": e.name, "kind": e.kind, "up": e.up,
                       "state": state, "reason": reason}),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(silent: u64, path_mtu: Option<(u64, bool)>) -> skywave_proto::PeerInfo {
        skywave_proto::PeerInfo {
            key: [1; 32],
            link: 0,
            established: true,
            recon: skywave_proto::ReconState::Synced,
            recon_bytes: 0,
            recon_messages: 0,
            srtt: None,
            pacing_bps: None,
            in_flight: 0,
            path_mtu,
            silent_for: Duration::from_secs(silent),
            sending: 0,
            receiving: 0,
        }
    }

    #[test]
    fn peers_say_why_in_words() {
        assert_eq!(ago(Duration::from_secs(45)), "45 s");
        assert_eq!(ago(Duration::from_secs(600)), "10 min");
        assert_eq!(ago(Duration::from_secs(3 * 3600)), "3 h");
        assert!(
            peer_reason(&peer(45, None), true, Some(1472))
                .unwrap()
                .starts_with("no answer for 45 s")
        );
        assert!(
            peer_reason(&peer(0, Some((1251, true))), false, Some(1472))
                .unwrap()
                .contains("path MTU 1251 B")
        );
        assert!(
            peer_reason(&peer(0, Some((1200, false))), false, Some(1472))
                .unwrap()
                .contains("probing")
        );
        assert_eq!(
            peer_reason(&peer(0, Some((1472, true))), false, Some(1472)),
            None
        );
    }
}
