//! `--fec` and the scenarios that measure forward error correction (uhf-lossy-star,
//! satellite-50x20k). The FEC figures themselves are not asserted here: these tests check
//! the option's plumbing and that the scenarios run to completion.

use std::path::Path;

use skywave_lab::scenario::{Completion, SCENARIOS};
use skywave_lab::{
    AgentFactory, AgentKind, AgentOptions, FecMode, Report, RunOptions, Scenario, SkywaveFactory,
    fec_name, parse_fec, run_agent, run_agent_with,
};

fn scratch() -> Option<&'static Path> {
    let p = Path::new("/dev/shm");
    p.is_dir().then_some(p)
}

fn opts(seed: u64) -> RunOptions<'static> {
    RunOptions {
        seed,
        scratch_dir: scratch(),
        ..RunOptions::default()
    }
}

#[test]
fn fec_parses_its_three_modes_and_rejects_anything_else() {
    for (text, mode) in [
        ("off", FecMode::Off),
        ("auto", FecMode::Auto),
        ("always", FecMode::Always),
    ] {
        assert_eq!(parse_fec(text).unwrap(), mode);
        assert_eq!(fec_name(mode), text);
    }
    assert_eq!(AgentOptions::default().fec, FecMode::Auto, "default auto");
    for bad in ["moon", "", "Off", "on", "auto,off"] {
        let e = parse_fec(bad).unwrap_err().to_string();
        assert!(
            e.contains(&format!("'{bad}'"))
                && e.contains("--fec")
                && e.contains("off")
                && e.contains("auto")
                && e.contains("always"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn fec_reaches_every_nodes_config() {
    assert_eq!(SkywaveFactory::new().config().fec, FecMode::Auto);
    for mode in [FecMode::Off, FecMode::Auto, FecMode::Always] {
        let f = SkywaveFactory::new().with_fec(mode);
        assert_eq!(f.config().fec, mode);
        assert_eq!(f.fec(), Some(mode));
    }
    // The report names the mode a run used; the reference agent has none.
    let sc = Scenario::lookup_scaled("uhf-chain", 0.1).unwrap();
    let r = run_agent_with(
        &sc,
        AgentKind::Skywave,
        AgentOptions { fec: FecMode::Off },
        opts(1),
    )
    .unwrap();
    assert!(r.complete, "{r:#?}");
    assert_eq!(r.fec.as_deref(), Some("off"));
    let r = run_agent(&sc, AgentKind::Reference, opts(1)).unwrap();
    assert_eq!(r.fec, None);
}

fn complete(name: &str, scale: f64) -> Report {
    let sc = Scenario::lookup_scaled(name, scale).unwrap();
    assert_eq!(sc.completion, Completion::AllSynced, "{name}");
    let r = run_agent(&sc, AgentKind::Skywave, opts(1)).unwrap();
    eprintln!(
        "{name} x{scale}: {:.2} s virtual, {} B on air, {:.2} s wall",
        r.virtual_seconds, r.bytes_on_air, r.wall_seconds
    );
    assert!(
        r.complete && r.virtual_seconds <= r.deadline_seconds,
        "{name} did not complete by {} s: {r:#?}",
        r.deadline_seconds
    );
    assert_eq!(r.completion_seconds, Some(r.virtual_seconds));
    assert_eq!(r.fec.as_deref(), Some("auto"), "the default config");
    r
}

#[test]
fn the_fec_scenarios_are_listed() {
    for name in ["uhf-lossy-star", "satellite-50x20k"] {
        let info = SCENARIOS.iter().find(|s| s.name == name).unwrap();
        assert_eq!(Scenario::lookup(name).unwrap().link, info.link);
    }
}

#[test]
fn uhf_lossy_star_completes_at_quarter_scale() {
    let r = complete("uhf-lossy-star", 0.25);
    assert_eq!(r.deadline_seconds, 600.0);
    // 5 bundles at A, held by each of the four others (relayed copies count there too).
    for to in ["B", "C", "D", "E"] {
        assert_eq!(r.bundles_delivered[&format!("A->{to}")], 5, "{to}");
    }
    assert_eq!(r.bundles_delivered.len(), 4);
    assert_eq!(r.links.len(), 1, "one shared medium");
    assert_eq!(r.links[0].ports.len(), 5);
}

#[test]
fn satellite_50x20k_completes_at_quarter_scale() {
    let r = complete("satellite-50x20k", 0.25);
    assert_eq!(r.bundles_delivered["A->B"], 13);
    assert_eq!(r.bundles_delivered.len(), 1);
    assert!(r.bytes_delivered["A->B"] > 13 * 20_000);
    // A->B is the 20 Mbit/s downlink, as in satellite-10mb.
    assert_eq!(r.capacity_bps, 20_000_000);
}
