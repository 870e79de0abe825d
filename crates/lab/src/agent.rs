//! The interface between the lab and a node implementation.
//!
//! A node is a [`skywave_sim::Endpoint`] (driven by the simulator through its links) that
//! also implements [`LabAgent`]: the runner hands it the scenario's workload through
//! `handle_insert` / `handle_append` and reads back what it accepted from peers through
//! `accepted`. An [`AgentFactory`] builds one agent per node.
//!
//! Bundles are described abstractly ([`BundleSpec`]: a key and sizes). An implementation
//! that needs real bundles derives them deterministically from the key, so that a bundle
//! "shared" by several nodes is the same bundle on each of them.

use std::path::Path;

use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use skywave_sim::{Endpoint, LinkConfig, PortId, SimTime};

use crate::LabError;

/// Identifies a workload bundle across the whole scenario (the same key on every node is
/// the same bundle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct BundleKey(pub u64);

/// Whether a bundle is written once or grows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BundleKind {
    /// Written once; version 1.
    Plain,
    /// Append-only journal; version = payload length.
    Journal,
    /// Written once, version 1: what a person waits for (a message), which an
    /// implementation with priorities sends ahead of bulk.
    Message,
}

/// A bundle of the workload, as sizes: no content is prescribed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BundleSpec {
    pub key: BundleKey,
    pub kind: BundleKind,
    /// Payload bytes at insertion (journals: the initial length, often 0).
    pub payload_len: u64,
    /// Nominal encoded manifest size; an implementation with real manifests reports its
    /// own size in [`Accepted::manifest_bytes`].
    pub manifest_len: u64,
}

impl BundleSpec {
    /// The version a holder of `payload_len` bytes of this bundle has.
    pub fn version_at(&self, payload_len: u64) -> u64 {
        match self.kind {
            BundleKind::Plain | BundleKind::Message => 1,
            BundleKind::Journal => payload_len,
        }
    }
}

/// One bundle version newly accepted from a peer (complete, verified, visible).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// When it was accepted.
    pub at: SimTime,
    pub key: BundleKey,
    /// Plain bundles: 1. Journals: the payload length now held.
    pub version: u64,
    /// Manifest bytes of the accepted version.
    pub manifest_bytes: u64,
    /// Payload bytes newly held (journals: only the new tail).
    pub payload_bytes: u64,
}

/// Counters an agent reports at the end of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AgentStats {
    /// Bytes spent until both sides of each session knew the difference (as the agent
    /// counts them; see docs/lab.md).
    pub recon_bytes: u64,
    /// One-way messages needed for that.
    pub recon_messages: u64,
    /// Bytes the agent sent again after a loss or timeout.
    pub retransmitted_bytes: u64,
}

/// What a node is told when it is built.
#[derive(Debug)]
pub struct NodeContext<'a> {
    /// Index in the scenario's topology (also the simulator's `NodeId`).
    pub index: usize,
    /// The node's name in the scenario ("A", "B", ...).
    pub name: &'a str,
    /// Number of nodes in the scenario.
    pub nodes: usize,
    pub seed: u64,
    /// The node's own random stream (`Simulator::node_rng`), independent of the links'.
    pub rng: ChaCha8Rng,
    /// Where an agent that keeps state on disk creates its temporary directories
    /// (`None`: the system's temporary directory).
    pub scratch_dir: Option<&'a Path>,
}

/// A node the lab can run: a sans-IO endpoint that takes a workload and reports what it
/// accepted.
///
/// Contract: once the topology is built the runner calls `attach_link` for each of the
/// node's ports; then `handle_insert` for the initial workload before the first event (at
/// `SimTime::ZERO`), and `handle_insert` / `handle_append` at their scheduled times later;
/// after each simulator event it reads the new entries of `accepted`; at the end of the
/// run it calls `finish`, then reads `stats` and `failure`.
pub trait LabAgent: Endpoint {
    /// The node is joined to a link (or shared medium) configured as `link` at `port`,
    /// as seen from this node (`link.up` is its sending direction). `dials`: this node
    /// starts the conversation (side A of a point-to-point link, every radio); the other
    /// end of an IP path only answers, as a server learns its client from its first
    /// packet. Called for every port before anything else happens.
    fn attach_link(&mut self, port: PortId, link: &LinkConfig, dials: bool) {
        let _ = (port, link, dials);
    }

    /// The node now holds `bundle`, as if written locally (its author, or a holder of a
    /// shared bundle at the start).
    fn handle_insert(&mut self, now: SimTime, bundle: &BundleSpec);

    /// The node appends `bytes` to journal `key` that it holds (new version = new length).
    fn handle_append(&mut self, now: SimTime, key: BundleKey, bytes: u64);

    /// Every bundle version accepted from peers so far, oldest first. Append-only: the
    /// runner remembers how many it has read.
    fn accepted(&self) -> &[Accepted];

    /// Counters for the report.
    fn stats(&self) -> AgentStats;

    /// The run is over (at `now`): a last chance to check or record state.
    fn finish(&mut self, now: SimTime) {
        let _ = now;
    }

    /// Why the agent could not do what it was asked (a store that failed, say), if it
    /// could not. The runner turns this into an error instead of a report.
    fn failure(&self) -> Option<String> {
        None
    }
}

/// Builds the agent of each node.
pub trait AgentFactory {
    type Agent: LabAgent;

    /// Shown in reports (`"reference"`, `"skywave"`).
    fn name(&self) -> &str;

    /// The forward error correction mode the agents are set to, if they have one (shown
    /// as `fec` in reports).
    fn fec(&self) -> Option<skywave_proto::FecMode> {
        None
    }

    fn create(&self, ctx: NodeContext<'_>) -> Result<Self::Agent, LabError>;
}
