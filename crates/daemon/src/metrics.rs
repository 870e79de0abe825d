//! Prometheus text exposition of a [`Status`].

use std::fmt::Write;

use crate::limits::{Limit, Limits};
use crate::status::Status;

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn head(o: &mut String, name: &str, ty: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}");
    let _ = writeln!(o, "# TYPE {name} {ty}");
}

/// Appends every metric to `o`.
pub fn render(st: &Status, o: &mut String) {
    head(o, "skywave_link_up", "gauge", "1 if the link is usable.");
    for l in &st.links {
        let _ = writeln!(
            o,
            "skywave_link_up{{link=\"{}\",kind=\"{}\",name=\"{}\"}} {}",
            l.id,
            l.kind,
            esc(&l.name),
            u8::from(l.up)
        );
    }
    head(
        o,
        "skywave_link_bytes_total",
        "counter",
        "Frame bytes on air per link and direction.",
    );
    for l in &st.links {
        for (dir, v) in [("out", l.bytes_out), ("in", l.bytes_in)] {
            let _ = writeln!(
                o,
                "skywave_link_bytes_total{{link=\"{}\",kind=\"{}\",direction=\"{dir}\"}} {v}",
                l.id, l.kind
            );
        }
    }
    head(
        o,
        "skywave_link_frames_total",
        "counter",
        "Frames per link and direction.",
    );
    for l in &st.links {
        for (dir, v) in [("out", l.frames_out), ("in", l.frames_in)] {
            let _ = writeln!(
                o,
                "skywave_link_frames_total{{link=\"{}\",kind=\"{}\",direction=\"{dir}\"}} {v}",
                l.id, l.kind
            );
        }
    }
    head(
        o,
        "skywave_link_utilisation",
        "gauge",
        "Recent bit rate in both directions over the link's nominal rate.",
    );
    for l in &st.links {
        if let Some(u) = l.utilisation {
            let _ = writeln!(o, "skywave_link_utilisation{{link=\"{}\"}} {u:.4}", l.id);
        }
    }
    head(
        o,
        "skywave_link_over_ends_total",
        "counter",
        "Half-duplex modems: over-end announcements (turns passed) sent and heard, and the \
         other side's overs taken as ended with no announcement heard (unannounced).",
    );
    for l in &st.links {
        for (dir, v) in [
            ("sent", l.over_ends_sent),
            ("heard", l.over_ends_heard),
            ("unannounced", l.over_ends_unannounced),
        ] {
            if let Some(v) = v {
                let _ = writeln!(
                    o,
                    "skywave_link_over_ends_total{{link=\"{}\",direction=\"{dir}\"}} {v}",
                    l.id
                );
            }
        }
    }
    head(
        o,
        "skywave_link_device",
        "gauge",
        "What a driver reports of its device, by name (an RNode's duty-cycle budget and channel load).",
    );
    for l in &st.links {
        for (name, v) in &l.device {
            // Names are the driver's own identifiers (letters, digits, underscores).
            let name: String = name
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let _ = writeln!(
                o,
                "skywave_link_device{{link=\"{}\",name=\"{name}\"}} {v}",
                l.id
            );
        }
    }
    let p = &st.protocol;
    head(
        o,
        "skywave_useful_bytes_received_total",
        "counter",
        "Manifest and payload bytes of bundles newly accepted (goodput is its rate).",
    );
    let _ = writeln!(
        o,
        "skywave_useful_bytes_received_total {}",
        p.useful_bytes_received
    );
    head(
        o,
        "skywave_recon_bytes_sent_total",
        "counter",
        "Bytes of reconciliation messages sent.",
    );
    let _ = writeln!(o, "skywave_recon_bytes_sent_total {}", p.recon_bytes_sent);
    head(
        o,
        "skywave_piece_bytes_total",
        "counter",
        "Payload piece bytes by kind.",
    );
    for (k, v) in [
        ("sent", p.piece_bytes_sent),
        ("resent", p.piece_bytes_resent),
        ("received", p.piece_bytes_received),
        ("duplicate", p.duplicate_bytes_received),
    ] {
        let _ = writeln!(o, "skywave_piece_bytes_total{{kind=\"{k}\"}} {v}");
    }
    head(
        o,
        "skywave_bundles_total",
        "counter",
        "Bundles received from and delivered to peers.",
    );
    let _ = writeln!(
        o,
        "skywave_bundles_total{{direction=\"received\"}} {}",
        p.bundles_received
    );
    let _ = writeln!(
        o,
        "skywave_bundles_total{{direction=\"delivered\"}} {}",
        p.bundles_delivered
    );
    head(
        o,
        "skywave_frames_dropped_total",
        "counter",
        "Frames dropped, by reason (protocol, sockets and drivers).",
    );
    for (k, v) in &p.dropped {
        let _ = writeln!(
            o,
            "skywave_frames_dropped_total{{reason=\"{}\"}} {v}",
            esc(k)
        );
    }
    for l in &st.links {
        for (k, v) in &l.dropped {
            let _ = writeln!(
                o,
                "skywave_frames_dropped_total{{reason=\"{}\",link=\"{}\"}} {v}",
                esc(k),
                l.id
            );
        }
    }
    head(o, "skywave_peers", "gauge", "Peers by session state.");
    for state in ["greeting", "reconciling", "synced", "down"] {
        let n = st.peers.iter().filter(|p| p.state == state).count();
        let _ = writeln!(o, "skywave_peers{{state=\"{state}\"}} {n}");
    }
    head(
        o,
        "skywave_transfers",
        "gauge",
        "Transfers under way by direction.",
    );
    for dir in ["send", "receive"] {
        let n = st.transfers.iter().filter(|t| t.direction == dir).count();
        let _ = writeln!(o, "skywave_transfers{{direction=\"{dir}\"}} {n}");
    }
    head(o, "skywave_store_bundles", "gauge", "Bundles held.");
    let _ = writeln!(o, "skywave_store_bundles {}", st.store.bundles);
    head(
        o,
        "skywave_store_bytes",
        "gauge",
        "Bytes held, payloads and manifests.",
    );
    let _ = writeln!(
        o,
        "skywave_store_bytes{{kind=\"payload\"}} {}",
        st.store.payload_bytes
    );
    let _ = writeln!(
        o,
        "skywave_store_bytes{{kind=\"manifest\"}} {}",
        st.store.manifest_bytes
    );
    head(
        o,
        "skywave_store_partials",
        "gauge",
        "Partial transfers kept for resumption.",
    );
    let _ = writeln!(o, "skywave_store_partials {}", st.store.partials);
    head(
        o,
        "skywave_uptime_seconds",
        "gauge",
        "Seconds since the daemon started.",
    );
    let _ = writeln!(o, "skywave_uptime_seconds {:.1}", st.uptime_seconds);
}

/// Appends the `[limits]` metrics: how often each fired, and what is held against the
/// caps now.
pub fn render_limits(l: &Limits, o: &mut String) {
    head(
        o,
        "skywave_limit_hits_total",
        "counter",
        "Connections and requests refused or cut off, by the [limits] setting that did it.",
    );
    for k in Limit::ALL {
        let _ = writeln!(
            o,
            "skywave_limit_hits_total{{limit=\"{}\"}} {}",
            k.name(),
            l.hits(k)
        );
    }
    head(
        o,
        "skywave_limit_in_use",
        "gauge",
        "What is held now against a [limits] cap.",
    );
    for (k, n) in l.in_use() {
        let _ = writeln!(o, "skywave_limit_in_use{{limit=\"{}\"}} {n}", k.name());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{LinkView, PeerView};

    #[test]
    fn every_sample_line_is_well_formed() {
        let mut st = Status::default();
        st.links.push(LinkView {
            id: 0,
            kind: "udp".into(),
            name: "udp:\"odd\"\nname".into(),
            up: true,
            bytes_out: 7,
            utilisation: Some(0.5),
            over_ends_sent: Some(4),
            over_ends_heard: Some(3),
            over_ends_unannounced: Some(2),
            device: [("duty_cycle_used_s".to_string(), 12.5)].into(),
            ..Default::default()
        });
        st.peers.push(PeerView {
            state: "synced".into(),
            ..Default::default()
        });
        st.protocol.dropped.insert("malformed".into(), 3);
        let mut o = String::new();
        render(&st, &mut o);
        for line in o.lines().filter(|l| !l.starts_with('#')) {
            let (name, value) = line.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{line}");
            assert!(name.starts_with("skywave_"), "{line}");
            assert_eq!(
                name.matches('{').count(),
                name.matches('}').count(),
                "{line}"
            );
        }
        assert!(
            o.contains("skywave_link_bytes_total{link=\"0\",kind=\"udp\",direction=\"out\"} 7")
        );
        assert!(o.contains("skywave_frames_dropped_total{reason=\"malformed\"} 3"));
        assert!(o.contains("skywave_link_over_ends_total{link=\"0\",direction=\"heard\"} 3"));
        assert!(o.contains("skywave_link_over_ends_total{link=\"0\",direction=\"unannounced\"} 2"));
        assert!(o.contains("skywave_peers{state=\"synced\"} 1"));
        assert!(o.contains("name=\"udp:\\\"odd\\\"\\nname\""));
    }

    #[test]
    fn every_limit_has_a_counter_and_the_caps_a_gauge() {
        let l = Limits::new(Default::default());
        l.hit(Limit::HttpBodyTimeout);
        l.hit(Limit::HttpBodyTimeout);
        let _upload = l.admit_upload().unwrap();
        let mut o = String::new();
        render_limits(&l, &mut o);
        for k in Limit::ALL {
            let v = if k == Limit::HttpBodyTimeout { 2 } else { 0 };
            let line = format!("skywave_limit_hits_total{{limit=\"{}\"}} {v}", k.name());
            assert!(o.contains(&line), "{line} in\n{o}");
        }
        assert!(
            o.contains("skywave_limit_in_use{limit=\"uploads\"} 1"),
            "{o}"
        );
        assert!(
            o.contains("skywave_limit_in_use{limit=\"tcp_connections\"} 0"),
            "{o}"
        );
    }
}
