//! What the daemon reports about itself: the JSON of `/v1/status`, `/v1/links`,
//! `/v1/peers` and `/v1/transfers`, shared by the server and the CLI that renders it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Status {
    /// This node's identity (hex).
    pub node: String,
    pub version: String,
    pub uptime_seconds: f64,
    pub http: String,
    pub links: Vec<LinkView>,
    pub peers: Vec<PeerView>,
    pub transfers: Vec<TransferView>,
    pub protocol: ProtocolView,
    pub store: StoreView,
    /// Set when the core was too busy to answer at once (taking in a large sync): this
    /// is the last status it gave, this many seconds old.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_seconds: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LinkView {
    pub id: usize,
    /// `udp`, `tcp`, `serial`, `rfd900`, `hf-modem`, `emulated`.
    pub kind: String,
    pub name: String,
    pub up: bool,
    /// `up`, `down`, `no answer`, `refusing` or `waiting`; `reason` says why in words.
    #[serde(default)]
    pub state: String,
    /// Why the link is not simply up, in words (down, no answer, refusing, waiting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub mtu: usize,
    /// Nominal rate in bit/s, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(rename = "rate_bits_per_s", alias = "rate_bps")]
    pub rate_bps: Option<u64>,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub frames_out: u64,
    pub frames_in: u64,
    /// Recent rates (bit/s), averaged over a few seconds.
    #[serde(rename = "out_bits_per_s", alias = "out_bps")]
    pub out_bps: f64,
    #[serde(rename = "in_bits_per_s", alias = "in_bps")]
    pub in_bps: f64,
    /// `out_bits_per_s + in_bits_per_s` over the nominal rate (half-duplex and radio links share it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilisation: Option<f64>,
    /// Frames dropped at this link, by reason.
    pub dropped: std::collections::BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rssi: Option<u8>,
    /// Driver links (radios, modems): bytes the driver takes now. 0 while the device
    /// holds what it may (a frame on the air, a full buffer, a radio's report of no free
    /// space): nothing is sent on the link until it opens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<u64>,
    /// Shared radios the daemon takes turns on: milliseconds until this station's turn
    /// to start, while it waits for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_in_ms: Option<f64>,
    /// Half-duplex modems: over-end announcements sent and heard, i.e. turns passed each
    /// way (absent until the first). Sent but never heard: the other side does not
    /// announce, and the driver paces by its estimate alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_ends_sent: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_ends_heard: Option<u64>,
    /// The other side's overs that ended with no announcement heard (lost with the
    /// over's last chunk), taken as announced after a silence: many say the link loses
    /// the ends of overs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_ends_unannounced: Option<u64>,
    /// What the driver reports of its device, by name (an RNode: `duty_cycle_used_s`,
    /// `duty_cycle_remaining_s`, `duty_cycle_limit_pct`, `airtime_short_pct`,
    /// `channel_load_long_pct`, `rssi_dbm`, `noise_floor_dbm`, ...); absent when empty.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub device: std::collections::BTreeMap<String, f64>,
    /// IP links: `plaintext`, or the encrypted channel's state (`idle`,
    /// `handshaking`, `established`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<String>,
    /// IP links: who may sync (`any`, `keys`, `network`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PeerView {
    pub node: String,
    pub link: usize,
    /// `greeting`, `reconciling`, `synced`, or `down`: silent past its keep-alive
    /// interval, and not answering the greetings sent since (the daemon's `liveness`).
    pub state: String,
    /// Why it is down, or what limits it (path MTU), in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub recon_bytes: u64,
    pub recon_messages: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(rename = "pacing_bits_per_s", alias = "pacing_bps")]
    pub pacing_bps: Option<f64>,
    pub in_flight: u64,
    /// Largest frame known to cross the path to this peer (bytes of UDP payload), on
    /// links that discover it (UDP); absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_mtu: Option<u64>,
    /// Whether path MTU discovery is still probing for a larger size (false once the
    /// search has settled). Present with `path_mtu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_mtu_searching: Option<bool>,
    pub silent_seconds: f64,
    pub sending: usize,
    pub receiving: usize,
    /// `verified`: the link's handshake proved the peer holds this node key;
    /// `claimed`: the link is not encrypted (a radio), the key is as the peer says.
    #[serde(default)]
    pub identity: String,
    /// Who may sync on the peer's link (`any`, `keys`, `network`); absent on radios.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TransferView {
    pub id: String,
    pub version: u64,
    pub peer: String,
    /// `send` or `receive`.
    pub direction: String,
    /// Reason code: `offering`, `sending`, `awaiting_report`, `speculative`, `queued`,
    /// `receiving`, `stalled`.
    pub state: String,
    /// For a stalled transfer, what it waits for, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub held_bytes: u64,
    pub total_bytes: u64,
    pub in_flight_bytes: u64,
    /// Recent progress in bytes per second.
    #[serde(rename = "rate_bytes_per_s", alias = "rate_bps")]
    pub rate_bps: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eta_seconds: Option<f64>,
    pub idle_seconds: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProtocolView {
    pub frames_sent: u64,
    pub bytes_sent: u64,
    pub frames_received: u64,
    pub bytes_received: u64,
    pub recon_bytes_sent: u64,
    pub piece_bytes_sent: u64,
    pub piece_bytes_resent: u64,
    pub piece_bytes_received: u64,
    pub duplicate_bytes_received: u64,
    pub bundles_received: u64,
    pub bundles_delivered: u64,
    /// Useful bytes (manifest + payload) of bundles received, for goodput.
    pub useful_bytes_received: u64,
    /// Frames the protocol dropped, by reason.
    pub dropped: std::collections::BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StoreView {
    pub bundles: u64,
    pub payload_bytes: u64,
    pub manifest_bytes: u64,
    pub partials: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota: Option<u64>,
    /// Seconds since received bundles stopped finding room (quota or disk full): their
    /// offers are turned down and asked for again later. Absent while there is room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_room_seconds: Option<f64>,
}
