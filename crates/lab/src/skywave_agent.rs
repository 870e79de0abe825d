//! The `skywave` agent: the real protocol endpoint over a real store, in virtual time.
//!
//! Each node is a `skywave_node::SimNode` (the sans-IO `skywave_proto::Endpoint` plus the
//! simulator driver) whose `BundleStore` is a `skywave_store::Store` (SQLite and payload
//! files) in its own temporary directory, removed when the run ends.
//!
//! Everything is derived from the scenario's keys and the run seed, so the same seed
//! gives the same report:
//! - bundle `key` is signed by the author key `Ed25519(BLAKE3("skywave-lab-author" ||
//!   key_le))`; its bytes are the BLAKE3 XOF of the key (a journal's whole history is
//!   that stream, so any holder can append the next bytes); manifests carry service
//!   `file` (plain, version 1) or `telemetry` (journals, version = length), a short name
//!   and a fixed date;
//! - the node key is derived from the seed and the node index, the endpoint nonce is the
//!   first word of the node's own random stream.
//!
//! What the agent reports:
//! - `accepted`: the endpoint's `Received` events for workload bundles, with the encoded
//!   size of the manifest stored and the payload bytes newly held (a journal's new tail);
//! - `recon_bytes`: bytes of HELLO, SYMBOLS, RECON_DONE, RECON_MORE and WANT messages the
//!   node sent (`Stats::recon_bytes`);
//! - `recon_messages`: frames the node sent that carried any of those messages;
//! - `retransmitted_bytes`: piece bytes sent again plus manifests sent again (each
//!   counted at the mean encoded size of the manifests this node stored).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use rand_core::RngCore;
use skywave_bundle::{BundleId, Manifest, PayloadHasher, SecretKey, SignedManifest};
use skywave_node::{LinkRole, SimNode, StoreAdapter, adapter_for};
use skywave_proto::{Config, Event, FecMode};
use skywave_sim::{Endpoint, LinkConfig, LinkInfo, LinkKind, PortId, SimTime, TransmitError};
use skywave_store::{NewBundle, Query, Store, StoreConfig};

use crate::LabError;
use crate::agent::{
    Accepted, AgentFactory, AgentStats, BundleKey, BundleKind, BundleSpec, LabAgent, NodeContext,
};
use crate::scenario::MANIFEST_LEN;

/// The date every lab manifest carries (2026-11-22, Unix seconds).
const DATE: u64 = 1_795_305_600;

/// The author key of workload bundle `key`.
pub fn author_key(key: BundleKey) -> SecretKey {
    let mut h = blake3::Hasher::new();
    h.update(b"skywave-lab-author");
    h.update(&key.0.to_le_bytes());
    SecretKey::from_bytes(h.finalize().as_bytes())
}

/// `len` bytes of bundle `key`'s content from `offset`.
fn content(key: BundleKey, offset: u64, len: u64) -> impl Read {
    let mut h = blake3::Hasher::new_derive_key("skywave-lab payload v1");
    h.update(&key.0.to_le_bytes());
    let mut r = h.finalize_xof();
    r.set_position(offset);
    r.take(len)
}

/// A short manifest name for `key`.
fn name_of(key: BundleKey) -> String {
    format!("lab-{:x}", key.0)
}

fn dur(t: SimTime) -> Duration {
    Duration::from_nanos(t.as_nanos())
}

/// What the agents of one factory share: the map from bundle ids back to workload keys
/// (filled as bundles are inserted; every bundle is inserted somewhere before any node
/// can receive it) and the signed manifests of plain bundles, so a bundle shared by
/// several nodes is signed once.
#[derive(Debug, Default)]
struct Shared {
    ids: RefCell<HashMap<BundleId, BundleKey>>,
    manifests: RefCell<HashMap<BundleKey, SignedManifest>>,
    audits: RefCell<Vec<NodeAudit>>,
}

/// A node's store at the end of a run, recorded when the factory audits
/// ([`SkywaveFactory::auditing`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeAudit {
    /// The node's name ("A", "B", ...).
    pub node: String,
    /// The store's temporary directory (gone once the run has returned).
    pub dir: PathBuf,
    /// Workload bundles the store lists, with the version held, sorted by key.
    pub bundles: Vec<(BundleKey, u64)>,
    /// Bundles listed that are not workload bundles (should be 0).
    pub foreign: u64,
    /// Transfers still open in the store.
    pub partials: u64,
    /// `fsck` found nothing to quarantine or reset.
    pub fsck_clean: bool,
    /// The fsck report (or the error), for messages.
    pub fsck: String,
    /// Frames the links refused (should stay 0: the core obeys back-pressure).
    pub refused_frames: u64,
    /// The endpoint's counters (`Stats`, debug form).
    pub endpoint_stats: String,
    /// The endpoint's sessions as it describes them.
    pub sessions: Vec<String>,
}

/// Builds [`SkywaveAgent`]s. Agents of one factory share a bundle catalogue, so use one
/// factory per run (or per thread): it is not `Send`.
#[derive(Debug, Default)]
pub struct SkywaveFactory {
    shared: Rc<Shared>,
    audit: bool,
    fec: FecMode,
}

impl SkywaveFactory {
    pub fn new() -> Self {
        Self::default()
    }

    /// At the end of each run, every node checks its store (`fsck`, listing) and records
    /// a [`NodeAudit`] (read them with [`SkywaveFactory::audits`]).
    pub fn auditing(mut self) -> Self {
        self.audit = true;
        self
    }

    /// Every node's protocol `Config` gets `fec` (default [`FecMode::Auto`], as
    /// `Config::default()`).
    pub fn with_fec(mut self, fec: FecMode) -> Self {
        self.fec = fec;
        self
    }

    /// The protocol configuration of every node this factory builds.
    pub fn config(&self) -> Config {
        Config {
            fec: self.fec,
            ..Config::default()
        }
    }

    /// The audits recorded so far, in the order nodes finished.
    pub fn audits(&self) -> Vec<NodeAudit> {
        self.shared.audits.borrow().clone()
    }
}

impl AgentFactory for SkywaveFactory {
    type Agent = SkywaveAgent;

    fn name(&self) -> &str {
        "skywave"
    }

    fn fec(&self) -> Option<FecMode> {
        Some(self.fec)
    }

    fn create(&self, ctx: NodeContext<'_>) -> Result<SkywaveAgent, LabError> {
        let fail = |what: &str, e: &dyn fmt::Display| LabError::Agent {
            node: ctx.name.to_string(),
            message: format!("{what}: {e}"),
        };
        let prefix = format!("skywave-lab-{}-", ctx.name);
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix);
        let dir = match ctx.scratch_dir {
            Some(root) => builder.tempdir_in(root),
            None => builder.tempdir(),
        }
        .map_err(|e| fail("creating the store's temporary directory", &e))?;
        let store = Store::open(dir.path(), StoreConfig::default())
            .map_err(|e| fail("opening the store", &e))?;
        let mut h = blake3::Hasher::new_derive_key("skywave-lab node key v1");
        h.update(&ctx.seed.to_le_bytes());
        h.update(&(ctx.index as u64).to_le_bytes());
        let node_key = SecretKey::from_bytes(h.finalize().as_bytes()).public();
        let mut rng = ctx.rng;
        let nonce = rng.next_u64();
        Ok(SkywaveAgent {
            node: SimNode::new(self.config(), node_key, nonce, StoreAdapter::new(store)),
            name: ctx.name.to_string(),
            shared: Rc::clone(&self.shared),
            audit: self.audit,
            accepted: Vec::new(),
            held: HashMap::new(),
            recon_frames: 0,
            manifest_bytes: (0, 0),
            failure: None,
            dir,
        })
    }
}

/// One node: protocol endpoint, real store, and the lab's bookkeeping.
pub struct SkywaveAgent {
    /// Declared before `dir`: the store closes before its directory is removed.
    node: SimNode<StoreAdapter>,
    name: String,
    shared: Rc<Shared>,
    audit: bool,
    accepted: Vec<Accepted>,
    /// Version held of each workload bundle.
    held: HashMap<BundleId, u64>,
    /// Frames sent that carried reconciliation messages.
    recon_frames: u64,
    /// Encoded manifest bytes stored and how many manifests (for the mean size).
    manifest_bytes: (u64, u64),
    failure: Option<String>,
    dir: tempfile::TempDir,
}

impl fmt::Debug for SkywaveAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkywaveAgent")
            .field("name", &self.name)
            .field("dir", &self.dir.path())
            .field("accepted", &self.accepted.len())
            .field("stats", self.node.ep.stats())
            .field("failure", &self.failure)
            .finish()
    }
}

impl SkywaveAgent {
    /// The node's store.
    pub fn store(&self) -> &Store {
        &self.node.store.store
    }

    /// The simulator node: protocol endpoint (`ep`: stats, sessions) and store adapter.
    pub fn sim_node(&self) -> &SimNode<StoreAdapter> {
        &self.node
    }

    fn fail(&mut self, what: &str, e: &dyn fmt::Display) {
        let msg = format!("{what}: {e}");
        tracing::error!(node = %self.name, "{msg}");
        self.failure.get_or_insert(msg);
    }

    fn note_manifest(&mut self, m: &SignedManifest) {
        self.manifest_bytes.0 += m.as_bytes().len() as u64;
        self.manifest_bytes.1 += 1;
    }

    /// The signed manifest of plain bundle `spec` (signed once per factory).
    fn plain_manifest(&self, spec: &BundleSpec) -> Result<SignedManifest, String> {
        if let Some(m) = self.shared.manifests.borrow().get(&spec.key) {
            return Ok(m.clone());
        }
        let sk = author_key(spec.key);
        let mut hasher = PayloadHasher::new();
        let mut r = content(spec.key, 0, spec.payload_len);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = r.read(&mut buf).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        let mut m = Manifest::new(sk.bundle_id(), 1, spec.payload_len, hasher.finalize(), DATE);
        m.service = Some(
            if spec.kind == BundleKind::Message {
                "message"
            } else {
                "file"
            }
            .into(),
        );
        m.name = Some(name_of(spec.key));
        let signed = m.sign(&sk).map_err(|e| e.to_string())?;
        self.shared
            .manifests
            .borrow_mut()
            .insert(spec.key, signed.clone());
        Ok(signed)
    }

    /// Stores bundle `spec`; returns its id and version.
    fn insert(&mut self, spec: &BundleSpec) -> Result<(BundleId, u64), String> {
        let stored = match spec.kind {
            BundleKind::Plain | BundleKind::Message => {
                let m = self.plain_manifest(spec)?;
                self.node
                    .store
                    .store
                    .insert(&m, content(spec.key, 0, spec.payload_len))
                    .map_err(|e| e.to_string())?
            }
            BundleKind::Journal => {
                let store = &mut self.node.store.store;
                let sk = author_key(spec.key);
                // The author keeps the key: appends are signed with it.
                store.keyring().insert(&sk).map_err(|e| e.to_string())?;
                let opts = NewBundle {
                    service: Some("telemetry".into()),
                    name: Some(name_of(spec.key)),
                    journal: true,
                    date: DATE,
                    ..NewBundle::default()
                };
                store
                    .create_with_key(
                        &sk,
                        spec.payload_len,
                        content(spec.key, 0, spec.payload_len),
                        &opts,
                    )
                    .map_err(|e| e.to_string())?
            }
        };
        let (id, version) = (stored.manifest.id(), stored.manifest.version());
        self.note_manifest(&stored.manifest);
        self.shared.ids.borrow_mut().insert(id, spec.key);
        Ok((id, version))
    }

    /// Tells the endpoint that `id` is stored, so it offers it to peers at once.
    fn announce(&mut self, now: SimTime, id: BundleId, version: u64) {
        self.held.insert(id, version);
        self.node
            .ep
            .bundle_stored(dur(now), id, &mut self.node.store);
        self.drain();
    }

    /// Turns the endpoint's new `Received` events into `Accepted` entries.
    fn drain(&mut self) {
        if self.node.events.is_empty() {
            return;
        }
        let events = std::mem::take(&mut self.node.events);
        for (at, ev) in events {
            let Event::Received { id, version, .. } = ev else {
                continue;
            };
            let Some(key) = self.shared.ids.borrow().get(&id).copied() else {
                continue;
            };
            let stored = match self.node.store.store.get(&id) {
                Ok(Some(b)) => b.manifest,
                Ok(None) => {
                    self.fail("a received bundle is not in the store", &id);
                    continue;
                }
                Err(e) => {
                    self.fail("reading a received bundle", &e);
                    continue;
                }
            };
            let prev = self.held.get(&id).copied();
            if prev.is_some_and(|p| p >= version) {
                continue;
            }
            let m = stored.manifest();
            let payload_bytes = if m.journal {
                version - prev.unwrap_or(0)
            } else {
                m.length
            };
            self.held.insert(id, version);
            self.note_manifest(&stored);
            self.accepted.push(Accepted {
                at,
                key,
                version,
                manifest_bytes: stored.as_bytes().len() as u64,
                payload_bytes,
            });
        }
    }

    fn audit_store(&mut self) -> NodeAudit {
        let ids = self.shared.ids.borrow();
        let store = &mut self.node.store.store;
        let (mut fsck_clean, mut fsck) = match store.fsck() {
            Ok(r) => (r.is_clean(), format!("{r:?}")),
            Err(e) => (false, e.to_string()),
        };
        let mut bundles = Vec::new();
        let mut foreign = 0;
        match store.list(&Query::default()) {
            Ok(list) => {
                for b in list {
                    match ids.get(&b.manifest.id()) {
                        Some(k) => bundles.push((*k, b.manifest.version())),
                        None => foreign += 1,
                    }
                }
            }
            Err(e) => {
                fsck_clean = false;
                fsck = format!("{fsck}; listing failed: {e}");
            }
        }
        bundles.sort();
        let partials = store.stats().map(|s| s.partials).unwrap_or(u64::MAX);
        NodeAudit {
            node: self.name.clone(),
            dir: self.dir.path().to_path_buf(),
            bundles,
            foreign,
            partials,
            fsck_clean,
            fsck,
            refused_frames: self.node.refused,
            endpoint_stats: format!("{:?}", self.node.ep.stats()),
            sessions: self.node.ep.describe_sessions(),
        }
    }
}

impl Endpoint for SkywaveAgent {
    fn handle_frame(&mut self, now: SimTime, port: PortId, frame: Bytes) {
        self.node.handle_frame(now, port, frame);
        self.drain();
    }

    fn handle_link_state(&mut self, now: SimTime, port: PortId, up: bool) {
        self.node.handle_link_state(now, port, up);
        self.drain();
    }

    fn handle_transmit_error(&mut self, now: SimTime, port: PortId, error: &TransmitError) {
        self.node.handle_transmit_error(now, port, error);
    }

    fn handle_timeout(&mut self, now: SimTime) {
        self.node.handle_timeout(now);
        self.drain();
    }

    fn poll_transmit(&mut self, now: SimTime, port: PortId, link: &LinkInfo) -> Option<Bytes> {
        let before = self.node.ep.stats().recon_bytes();
        let frame = self.node.poll_transmit(now, port, link);
        if self.node.ep.stats().recon_bytes() > before {
            self.recon_frames += 1;
        }
        frame
    }

    fn poll_timeout(&mut self) -> Option<SimTime> {
        self.node.poll_timeout()
    }
}

impl LabAgent for SkywaveAgent {
    fn attach_link(&mut self, port: PortId, link: &LinkConfig, dials: bool) {
        // Radios and modems listen and talk from the start; on an IP path only the
        // dialing end knows its peer, the other learns it from the first frame.
        let role = if dials || link.kind != LinkKind::Frame {
            LinkRole::Dial
        } else {
            LinkRole::Listen
        };
        self.node.attach_as(port, adapter_for(link), role);
    }

    fn handle_insert(&mut self, now: SimTime, bundle: &BundleSpec) {
        match self.insert(bundle) {
            Ok((id, version)) => self.announce(now, id, version),
            Err(e) => self.fail(&format!("inserting bundle {}", bundle.key.0), &e),
        }
    }

    fn handle_append(&mut self, now: SimTime, key: BundleKey, bytes: u64) {
        let id = author_key(key).bundle_id();
        let store = &mut self.node.store.store;
        let held = match store.get(&id) {
            Ok(Some(b)) => b.manifest.manifest().length,
            Ok(None) => {
                self.fail(&format!("appending to journal {}", key.0), &"not held");
                return;
            }
            Err(e) => {
                self.fail(&format!("appending to journal {}", key.0), &e);
                return;
            }
        };
        match store.append(&id, content(key, held, bytes), DATE) {
            Ok(b) => {
                let version = b.manifest.version();
                self.note_manifest(&b.manifest);
                self.announce(now, id, version);
            }
            Err(e) => self.fail(&format!("appending to journal {}", key.0), &e),
        }
    }

    fn accepted(&self) -> &[Accepted] {
        &self.accepted
    }

    fn stats(&self) -> AgentStats {
        let s = self.node.ep.stats();
        let mean_manifest = match self.manifest_bytes {
            (_, 0) => MANIFEST_LEN,
            (bytes, n) => bytes / n,
        };
        AgentStats {
            recon_bytes: s.recon_bytes(),
            recon_messages: self.recon_frames,
            retransmitted_bytes: s.piece_bytes_resent + s.manifests_resent * mean_manifest,
        }
    }

    fn finish(&mut self, _now: SimTime) {
        let s = self.node.ep.stats();
        tracing::debug!(by_type = ?s.sent_by_type, dup = s.duplicate_bytes_received, manifests = s.manifests_sent, manifests_resent = s.manifests_resent, timeouts = s.resend_timeouts, "agent: what the endpoint sent");
        if self.audit {
            let a = self.audit_store();
            self.shared.audits.borrow_mut().push(a);
        }
    }

    fn failure(&self) -> Option<String> {
        self.failure.clone()
    }
}
