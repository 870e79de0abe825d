//! The design's scenarios by name: topology, link, workload, deadline and what "complete"
//! means.
//!
//! A scenario is plain data; the runner builds the simulation from it. Node names are
//! "A", "B", "C" in topology order; bundle keys are numbered so that keys never collide
//! between the groups of one scenario.

use std::time::Duration;

use skywave_sim::SimTime;

use crate::LabError;
use crate::agent::{BundleKey, BundleKind, BundleSpec};

/// The nominal encoded size of a small bundle's manifest (design: well under 200 B).
pub const MANIFEST_LEN: u64 = 134;

/// Formant cells: RTTs in ms and loss in percent of the `formant-RTT-LOSS` profiles.
pub const FORMANT_RTTS: [u64; 4] = [20, 90, 180, 360];
pub const FORMANT_LOSSES: [u64; 3] = [0, 1, 5];

/// Nodes and who is joined to whom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    pub nodes: Vec<String>,
    /// Pairs in range of each other. With a point-to-point link kind, each edge `(a, b)`
    /// is its own link with `a` on side A (sending on `up`); with `csma`, the edges are the
    /// adjacency of one shared medium.
    pub edges: Vec<(usize, usize)>,
}

impl Topology {
    fn named(n: usize, edges: Vec<(usize, usize)>) -> Self {
        Topology {
            nodes: (0..n).map(node_name).collect(),
            edges,
        }
    }

    pub fn pair() -> Self {
        Self::named(2, vec![(0, 1)])
    }

    /// A-B-C...: each node hears only its neighbours.
    pub fn chain(n: usize) -> Self {
        Self::named(n, (1..n).map(|i| (i - 1, i)).collect())
    }

    /// `n` nodes that all hear each other: an edge between every two of them (one shared
    /// medium with full adjacency on a `csma` link; a link per pair otherwise).
    pub fn clique(n: usize) -> Self {
        Self::named(
            n,
            (0..n)
                .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
                .collect(),
        )
    }
}

/// "A", "B", ..., "Z", "N26", ...
pub fn node_name(i: usize) -> String {
    if i < 26 {
        char::from(b'A' + i as u8).to_string()
    } else {
        format!("N{i}")
    }
}

/// Something that happens to a node during the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Insert(BundleSpec),
    Append { key: BundleKey, bytes: u64 },
}

/// An operation at a virtual time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action {
    pub at: SimTime,
    pub node: usize,
    pub op: Op,
}

/// What the nodes hold at the start and what is written later.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Workload {
    /// `(node, bundle)`: held at t = 0. A bundle listed for several nodes is shared; its
    /// first holder is taken as its origin in per-direction counts.
    pub initial: Vec<(usize, BundleSpec)>,
    /// Sorted by time.
    pub actions: Vec<Action>,
}

/// When a run is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// Every node holds every bundle at its final version.
    AllSynced,
    /// This node holds every bundle at its final version.
    NodeHolds(usize),
    /// Runs until the deadline; the measure is what was delivered by then.
    Deadline,
}

/// A named experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub summary: String,
    /// Profile name or link spec (see docs/sim.md); `--link` replaces it.
    pub link: String,
    pub topology: Topology,
    pub workload: Workload,
    /// Virtual time after which the run stops, complete or not.
    pub deadline: SimTime,
    pub completion: Completion,
}

/// A registry entry, for `lab list`.
#[derive(Clone, Copy, Debug)]
pub struct ScenarioInfo {
    pub name: &'static str,
    pub link: &'static str,
    pub summary: &'static str,
}

/// The design's scenarios. `formant-stream` is a family: `formant-stream-RTT-LOSS` runs
/// one cell; plain `formant-stream` is the 180 ms / 1% cell, and
/// [`Scenario::expand`] gives all cells.
pub const SCENARIOS: &[ScenarioInfo] = &[
    ScenarioInfo {
        name: "hf-lbard-table",
        link: "hf-modem",
        summary: "2 nodes, 500 unique manifest-only bundles each, 1000 s: bundles and bytes/s per direction (LBARD: 33 bundles, 80 B/s)",
    },
    ScenarioInfo {
        name: "hf-100x100",
        link: "hf-modem",
        summary: "2 nodes, 10,000 shared + 100 unique each, 100 B payloads: time to full sync, bytes on air (LBARD: 4-5 h)",
    },
    ScenarioInfo {
        name: "uhf-100x100",
        link: "uhf-csma",
        summary: "2 radios, 100 unique bundles each, 100 B payloads: time, bytes on air (LBARD: 345.9 s, 306,944 B)",
    },
    ScenarioInfo {
        name: "uhf-chain",
        link: "uhf-csma",
        summary: "radios A-B-C, A and C out of range; 20 bundles (100 B) at A: time until C holds all",
    },
    ScenarioInfo {
        name: "uhf-lossy-star",
        link: "uhf-csma-lossy",
        summary: "5 radios in range of each other, 10% loss; 20 bundles (2 KB) at one: time until all hold all, bytes on air",
    },
    ScenarioInfo {
        name: "hf-live",
        link: "hf-modem",
        summary: "synced pair (100 shared bundles); a 1 KiB bundle inserted at A at t=300 s: delivery latency",
    },
    ScenarioInfo {
        name: "lfn-50mb",
        link: "lfn",
        summary: "one 50 MB bundle A->B: goodput / capacity",
    },
    ScenarioInfo {
        name: "lfn-lossy-50mb",
        link: "lfn-lossy",
        summary: "one 50 MB bundle A->B, 1% loss: goodput / capacity",
    },
    ScenarioInfo {
        name: "cellular-20mb",
        link: "cellular",
        summary: "one 20 MB bundle A->B, 3% loss: goodput / capacity",
    },
    ScenarioInfo {
        name: "satellite-10mb",
        link: "satellite",
        summary: "one 10 MB bundle A->B over the 20 Mbit/s downlink (a download): goodput / capacity",
    },
    ScenarioInfo {
        name: "satellite-50x20k",
        link: "satellite",
        summary: "50 bundles (20 KB) A->B over the satellite downlink, 1% loss: time to sync",
    },
    ScenarioInfo {
        name: "lora-sf9-1pct",
        link: "profile=lora-sf9-125,duty=1%",
        summary: "2 LoRa radios (SF9/125 kHz, CR 4/5), 1% duty cycle per hour; 20 unique bundles (100 B) each: time against the duty-cycle floor, the most air time any node used in any hour (measured on the air)",
    },
    ScenarioInfo {
        name: "formant-stream",
        link: "formant-RTT-LOSS",
        summary: "journal appended with 1 KiB records at 2 Mbit/s for 60 s, A->B: lag p50/p99, backlog; cells formant-stream-RTT-LOSS (RTT 20,90,180,360 ms; LOSS 0,1,5 %), default 180-1",
    },
];

fn accepted_names() -> String {
    let mut names: Vec<String> = SCENARIOS.iter().map(|s| s.name.to_string()).collect();
    names.push("formant-stream-RTT-LOSS (e.g. formant-stream-20-5)".to_string());
    names.join(", ")
}

fn plain(key: u64, payload_len: u64) -> BundleSpec {
    BundleSpec {
        key: BundleKey(key),
        kind: BundleKind::Plain,
        payload_len,
        manifest_len: MANIFEST_LEN,
    }
}

/// `n` scaled by `scale`, at least 1.
fn scaled(n: u64, scale: f64) -> u64 {
    ((n as f64 * scale).round() as u64).max(1)
}

/// Key ranges: each group of a scenario gets its own block of keys.
const GROUP: u64 = 1 << 32;

fn unique_each(
    nodes: usize,
    per_node: u64,
    payload: u64,
    first_group: u64,
) -> Vec<(usize, BundleSpec)> {
    let mut v = Vec::new();
    for n in 0..nodes {
        let base = (first_group + n as u64) * GROUP;
        for i in 0..per_node {
            v.push((n, plain(base + i, payload)));
        }
    }
    v
}

fn shared(nodes: usize, count: u64, payload: u64, group: u64) -> Vec<(usize, BundleSpec)> {
    let mut v = Vec::new();
    for i in 0..count {
        for n in 0..nodes {
            v.push((n, plain(group * GROUP + i, payload)));
        }
    }
    v
}

impl Scenario {
    /// A scenario of the registry, full size.
    pub fn lookup(name: &str) -> Result<Scenario, LabError> {
        Self::lookup_scaled(name, 1.0)
    }

    /// A scenario with its bundle counts, sizes and stream duration multiplied by `scale`
    /// (at least one of each), for quick runs and tests. The deadline is kept.
    pub fn lookup_scaled(name: &str, scale: f64) -> Result<Scenario, LabError> {
        if !(scale > 0.0 && scale <= 1000.0) {
            return Err(LabError::invalid(
                "--scale",
                &scale.to_string(),
                "a number greater than 0 and at most 1000",
            ));
        }
        let unknown = || LabError::UnknownScenario {
            name: name.to_string(),
            accepted: accepted_names(),
        };
        if let Some(cell) = name.strip_prefix("formant-stream-") {
            let (rtt, loss) = cell.split_once('-').ok_or_else(unknown)?;
            let rtt: u64 = rtt.parse().map_err(|_| unknown())?;
            let loss: u64 = loss.parse().map_err(|_| unknown())?;
            if rtt == 0 || rtt > 10_000 || loss > 100 {
                return Err(unknown());
            }
            return Ok(formant(rtt, loss, scale));
        }
        let info = SCENARIOS
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(unknown)?;
        let s = |n: u64| scaled(n, scale);
        let mut sc = Scenario {
            name: info.name.to_string(),
            summary: info.summary.to_string(),
            link: info.link.to_string(),
            topology: Topology::pair(),
            workload: Workload::default(),
            deadline: SimTime::from_secs(600),
            completion: Completion::AllSynced,
        };
        match name {
            "hf-lbard-table" => {
                sc.workload.initial = unique_each(2, s(500), 0, 1);
                sc.deadline = SimTime::from_secs(1000);
                sc.completion = Completion::Deadline;
            }
            "hf-100x100" => {
                let mut initial = shared(2, s(10_000), 100, 0);
                initial.extend(unique_each(2, s(100), 100, 1));
                sc.workload.initial = initial;
                sc.deadline = SimTime::from_secs(8 * 3600);
            }
            "uhf-100x100" => {
                sc.workload.initial = unique_each(2, s(100), 100, 1);
            }
            "uhf-chain" => {
                sc.topology = Topology::chain(3);
                sc.workload.initial = unique_each(1, s(20), 100, 1);
                sc.completion = Completion::NodeHolds(2);
            }
            "uhf-lossy-star" => {
                sc.topology = Topology::clique(5);
                sc.workload.initial = unique_each(1, s(20), 2000, 1);
            }
            "hf-live" => {
                sc.workload.initial = shared(2, s(100), 100, 0);
                sc.workload.actions = vec![Action {
                    at: SimTime::from_secs(300),
                    node: 0,
                    op: Op::Insert(plain(GROUP, 1024)),
                }];
                sc.deadline = SimTime::from_secs(1200);
            }
            "lfn-50mb" | "lfn-lossy-50mb" => {
                sc.workload.initial = vec![(0, plain(GROUP, s(50_000_000)))];
            }
            "cellular-20mb" => {
                sc.workload.initial = vec![(0, plain(GROUP, s(20_000_000)))];
            }
            "satellite-10mb" => {
                // A sits on side B of the link so that A->B is the 20 Mbit/s downlink.
                sc.topology.edges = vec![(1, 0)];
                sc.workload.initial = vec![(0, plain(GROUP, s(10_000_000)))];
            }
            "satellite-50x20k" => {
                // As satellite-10mb: A on side B, so A->B is the 20 Mbit/s downlink.
                sc.topology.edges = vec![(1, 0)];
                sc.workload.initial = unique_each(1, s(50), 20_000, 1);
            }
            "lora-sf9-1pct" => {
                sc.workload.initial = unique_each(2, s(20), 100, 1);
                sc.deadline = SimTime::from_secs(12 * 3600);
            }
            "formant-stream" => return Ok(formant(180, 1, scale)),
            _ => return Err(unknown()),
        }
        Ok(sc)
    }

    /// The runs this name stands for in a matrix: every cell for `formant-stream`, else
    /// the scenario itself.
    pub fn expand(name: &str, scale: f64) -> Result<Vec<Scenario>, LabError> {
        if name == "formant-stream" {
            let mut v = Vec::new();
            for rtt in FORMANT_RTTS {
                for loss in FORMANT_LOSSES {
                    v.push(Self::lookup_scaled(
                        &format!("formant-stream-{rtt}-{loss}"),
                        scale,
                    )?);
                }
            }
            Ok(v)
        } else {
            Ok(vec![Self::lookup_scaled(name, scale)?])
        }
    }

    /// For a scenario that moves one plain bundle one way between two nodes joined by one
    /// link (the QUIC baseline's case): the payload size, and whether the data flows on the
    /// link's `down` direction (B->A).
    pub fn single_transfer(&self) -> Option<(u64, bool)> {
        let [(origin, spec, len)] = self.bundles()[..] else {
            return None;
        };
        let [(a, _)] = self.topology.edges[..] else {
            return None;
        };
        let single = self.topology.nodes.len() == 2
            && spec.kind == BundleKind::Plain
            && self.workload.actions.is_empty()
            && self.workload.initial.len() == 1;
        single.then_some((len, origin != a))
    }

    /// Every bundle of the workload with the node that wrote it first, and its final
    /// payload length.
    pub fn bundles(&self) -> Vec<(usize, BundleSpec, u64)> {
        let mut out: Vec<(usize, BundleSpec, u64)> = Vec::new();
        let mut index = std::collections::BTreeMap::new();
        for &(node, spec) in &self.workload.initial {
            index.entry(spec.key).or_insert_with(|| {
                out.push((node, spec, spec.payload_len));
                out.len() - 1
            });
        }
        for a in &self.workload.actions {
            match a.op {
                Op::Insert(spec) => {
                    index.entry(spec.key).or_insert_with(|| {
                        out.push((a.node, spec, spec.payload_len));
                        out.len() - 1
                    });
                }
                Op::Append { key, bytes } => {
                    if let Some(&i) = index.get(&key) {
                        out[i].2 += bytes;
                    }
                }
            }
        }
        out
    }
}

/// A journal appended with 1 KiB records at 2 Mbit/s for 60 s (scaled), one cell.
fn formant(rtt_ms: u64, loss_pct: u64, scale: f64) -> Scenario {
    const RECORD: u64 = 1024;
    // 1 KiB at 2 Mbit/s: one record every 4.096 ms.
    let interval = Duration::from_nanos(RECORD * 8 * 1_000_000_000 / 2_000_000);
    let duration = Duration::from_secs_f64(60.0 * scale);
    let records = (duration.as_nanos() / interval.as_nanos()).max(1) as u64;
    let key = BundleKey(GROUP);
    let journal = BundleSpec {
        key,
        kind: BundleKind::Journal,
        payload_len: 0,
        manifest_len: MANIFEST_LEN,
    };
    let actions = (1..=records)
        .map(|i| Action {
            at: SimTime::ZERO + interval * i as u32,
            node: 0,
            op: Op::Append { key, bytes: RECORD },
        })
        .collect();
    Scenario {
        name: format!("formant-stream-{rtt_ms}-{loss_pct}"),
        summary: format!(
            "journal appended with 1 KiB records at 2 Mbit/s for {:.0} s over formant-{rtt_ms}-{loss_pct}: lag p50/p99, backlog",
            duration.as_secs_f64()
        ),
        link: format!("formant-{rtt_ms}-{loss_pct}"),
        topology: Topology::pair(),
        workload: Workload {
            initial: vec![(0, journal)],
            actions,
        },
        deadline: SimTime::from_secs(600),
        completion: Completion::AllSynced,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_scenario_builds() {
        for info in SCENARIOS {
            let s = Scenario::lookup(info.name).unwrap();
            assert!(!s.bundles().is_empty(), "{}", info.name);
            skywave_sim::LinkConfig::lookup(
                &s.link.replace("RTT-LOSS", "180-1"),
                &Default::default(),
            )
            .unwrap();
        }
        assert_eq!(Scenario::expand("formant-stream", 1.0).unwrap().len(), 12);
    }

    #[test]
    fn workload_sizes_match_the_design() {
        let s = Scenario::lookup("hf-100x100").unwrap();
        assert_eq!(s.bundles().len(), 10_200);
        assert_eq!(s.workload.initial.len(), 20_200);
        let f = Scenario::lookup("formant-stream").unwrap();
        // 60 s at 2 Mbit/s in 1 KiB records.
        assert_eq!(f.workload.actions.len(), 14_648);
        assert_eq!(f.bundles()[0].2, 14_648 * 1024);
        assert_eq!(f.link, "formant-180-1");

        let star = Scenario::lookup("uhf-lossy-star").unwrap();
        assert_eq!(star.topology, Topology::clique(5));
        assert_eq!(star.topology.edges.len(), 10, "every two of five radios");
        assert_eq!(star.link, "uhf-csma-lossy");
        assert_eq!(star.completion, Completion::AllSynced);
        assert_eq!(star.deadline, SimTime::from_secs(600));
        let b = star.bundles();
        assert_eq!(b.len(), 20);
        assert!(
            b.iter()
                .all(|(origin, spec, _)| *origin == 0 && spec.payload_len == 2000)
        );

        let sat = Scenario::lookup("satellite-50x20k").unwrap();
        let ten = Scenario::lookup("satellite-10mb").unwrap();
        assert_eq!(
            sat.topology, ten.topology,
            "A->B on the downlink, as satellite-10mb"
        );
        assert_eq!(sat.completion, Completion::AllSynced);
        let b = sat.bundles();
        assert_eq!(b.len(), 50);
        assert!(
            b.iter()
                .all(|(origin, spec, _)| *origin == 0 && spec.payload_len == 20_000)
        );
        assert_eq!(sat.single_transfer(), None);
        assert_eq!(
            Scenario::lookup_scaled("satellite-50x20k", 0.25)
                .unwrap()
                .bundles()
                .len(),
            13
        );
    }

    #[test]
    fn clique_joins_every_two_nodes() {
        assert_eq!(Topology::clique(1).edges, vec![]);
        assert_eq!(Topology::clique(2), Topology::pair());
        assert_eq!(Topology::clique(3).edges, vec![(0, 1), (0, 2), (1, 2)]);
        assert_eq!(Topology::clique(5).nodes, ["A", "B", "C", "D", "E"]);
    }

    #[test]
    fn unknown_names_list_the_accepted_ones() {
        for bad in ["moon", "formant-stream-x-1", "formant-stream-20"] {
            let e = Scenario::lookup(bad).unwrap_err().to_string();
            assert!(
                e.contains(&format!("'{bad}'")) && e.contains("uhf-chain"),
                "{e}"
            );
        }
        let e = Scenario::lookup_scaled("uhf-chain", 0.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--scale"), "{e}");
    }
}
