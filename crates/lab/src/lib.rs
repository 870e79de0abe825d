//! `skywave lab`: the design's scenarios, run in virtual time on the simulator's link models.
//!
//! - [`scenario`]: the registry of named scenarios (topology, link profile, workload,
//!   deadline, what "complete" means).
//! - [`agent`]: the interface a node implementation plugs into ([`LabAgent`],
//!   [`AgentFactory`]); the protocol engine implements it through a small adapter.
//! - [`skywave_agent`]: the `skywave` agent: the protocol endpoint (`skywave-proto`,
//!   driven by `skywave-node`'s simulator node) over a real store per node in a
//!   temporary directory.
//! - [`reference`]: the `reference` agent, a plain windowed sender with full-inventory
//!   exchange, so the machinery runs end to end before the protocol lands. It is a
//!   yardstick, not the protocol.
//! - [`runner`]: [`run`] / [`run_with`] drive one scenario and measure a [`Report`] using
//!   the design's metric definitions.
//! - [`matrix`] and [`plot`]: scenarios x seeds, a CSV and hand-written SVG figures.
//! - [`sweep`]: a grid over the link space (rate, frame budget, loss, delay, buffer,
//!   transmit queue, topology), each cell against its physical floor.
//!
//! The lab measures wall time for its reports; everything else is a pure function of the
//! scenario, the seed and the agent.

pub mod agent;
pub mod matrix;
pub mod plot;
pub mod reference;
pub mod runner;
pub mod scenario;
pub mod skywave_agent;
pub mod sweep;

pub use agent::{
    Accepted, AgentFactory, AgentStats, BundleKey, BundleKind, BundleSpec, LabAgent, NodeContext,
};
pub use matrix::{matrix, parse_seeds, write_csv};
pub use reference::{ReferenceAgent, ReferenceFactory};
pub use runner::{
    AgentKind, AgentOptions, FEC_MODES, LatencyStats, LinkReport, PortReport, Progress, Report,
    RunOptions, fec_name, parse_fec, run, run_agent, run_agent_with, run_with,
};
pub use scenario::{Completion, Scenario, ScenarioInfo, Topology, Workload};
pub use skywave_agent::{NodeAudit, SkywaveAgent, SkywaveFactory};
/// The protocol's forward error correction switch (`--fec`), re-exported for the CLI.
pub use skywave_proto::FecMode;

/// Why a lab command could not run. Every variant names the field and what it accepts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LabError {
    #[error("unknown scenario '{name}'; accepted scenarios: {accepted}")]
    UnknownScenario { name: String, accepted: String },
    #[error("invalid value '{value}' for field '{field}': expected {expected}")]
    InvalidValue {
        field: String,
        value: String,
        expected: String,
    },
    #[error("invalid link for field '--link': {0}")]
    Link(#[from] skywave_sim::ConfigError),
    #[error("agent of node {node} failed: {message}")]
    Agent { node: String, message: String },
    #[error("writing lab output: {0}")]
    Io(#[from] std::io::Error),
}

impl LabError {
    pub(crate) fn invalid(field: &str, value: &str, expected: impl Into<String>) -> Self {
        LabError::InvalidValue {
            field: field.to_string(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }
}
