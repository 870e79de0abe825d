//! The daemon's status as `/v1/status` and `skywave status` show it: links, peers,
//! transfers, protocol counters and the store.

use std::collections::BTreeMap;

use skywave_links::LinkCounters;
use skywave_proto::Direction;

use super::{Core, Io};
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
            ("wrong_identity", stats.dropped_wrong_identity),
            ("bad_manifest", stats.bad_manifests),
            ("bad_payload", stats.bad_payloads),
            ("suspect_offer", stats.suspect_offers_refused),
            ("no_room", stats.offers_refused_no_room),
            ("incoming_limit", stats.incoming_limit),
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
                let rate = e.adapter.params().rate_bps.filter(|_| e.up);
                let (over_ends_sent, over_ends_heard) = match &e.io {
                    Io::Driver { counters, .. } => {
                        let sent = LinkCounters::get(&counters.over_ends_sent);
                        let heard = LinkCounters::get(&counters.over_ends_heard);
                        if sent + heard > 0 {
                            (Some(sent), Some(heard))
                        } else {
                            (None, None)
                        }
                    }
                    _ => (None, None),
                };
                LinkView {
                    id,
                    kind: e.kind.clone(),
                    name: e.name.clone(),
                    up: e.up,
                    reason: e.reason.clone(),
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
        }
    }
}
