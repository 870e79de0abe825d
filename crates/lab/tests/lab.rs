//! The lab end to end with the reference agent, in virtual time.

use skywave_lab::plot::scenario_panels_svg;
use skywave_lab::scenario::{Completion, SCENARIOS, Topology, Workload};
use skywave_lab::{
    BundleKey, BundleKind, BundleSpec, Report, RunOptions, Scenario, run, write_csv,
};
use skywave_sim::{LinkConfig, SimTime};

fn run_seed(sc: &Scenario, seed: u64) -> Report {
    let r = run(
        sc,
        RunOptions {
            seed,
            ..RunOptions::default()
        },
    )
    .unwrap();
    assert!(
        r.complete,
        "{} (seed {seed}) did not complete by {} s: {r:#?}",
        sc.name, r.deadline_seconds
    );
    r
}

#[test]
fn every_scenario_completes_within_its_deadline() {
    for info in SCENARIOS {
        // Full size: the whole set runs in seconds even in a debug build.
        let sc = Scenario::lookup(info.name).unwrap();
        let r = run_seed(&sc, 1);
        assert!(r.virtual_seconds <= r.deadline_seconds, "{}", info.name);
        assert!(r.useful_bytes > 0, "{}", info.name);
        assert_eq!(
            r.dropped_calls, 0,
            "{}: the reference agent never overruns a modem",
            info.name
        );
        match sc.completion {
            Completion::Deadline => assert_eq!(r.completion_seconds, Some(r.deadline_seconds)),
            _ => assert_eq!(r.completion_seconds, Some(r.virtual_seconds)),
        }
    }
}

#[test]
fn hf_lbard_table_reports_both_directions() {
    let r = run_seed(&Scenario::lookup("hf-lbard-table").unwrap(), 1);
    assert_eq!(r.virtual_seconds, 1000.0);
    assert_eq!(r.capacity_bps, 1475);
    assert!(
        r.bundles_delivered["A->B"] > 33 && r.bundles_delivered["B->A"] > 33,
        "{:?}",
        r.bundles_delivered
    );
    // Manifest-only bundles: 134 B each.
    assert_eq!(r.bytes_delivered["A->B"], 134 * r.bundles_delivered["A->B"]);
    assert_eq!(r.recon_messages, 2);
}

#[test]
fn uhf_chain_relays_through_b() {
    let r = run_seed(&Scenario::lookup("uhf-chain").unwrap(), 1);
    assert_eq!(r.bundles_delivered["A->C"], 20);
    assert_eq!(r.bundles_delivered["A->B"], 20);
    assert_eq!(r.links.len(), 1, "one shared medium");
    assert_eq!(r.links[0].ports.len(), 3);
}

#[test]
fn hf_live_measures_latency_of_the_late_insert() {
    let r = run_seed(&Scenario::lookup("hf-live").unwrap(), 1);
    let l = r.latency.unwrap();
    assert_eq!(l.samples, 1);
    // Inserted at 300 s; at least one 4 s hop plus ~1.2 KB at 1475 bit/s.
    assert!(l.p50_seconds > 4.0 + 1158.0 * 8.0 / 1475.0, "{l:?}");
    assert!((r.virtual_seconds - (300.0 + l.p50_seconds)).abs() < 1e-6);
}

#[test]
fn formant_stream_reports_lag_and_backlog() {
    let sc = Scenario::lookup_scaled("formant-stream-90-1", 0.1).unwrap();
    let records = sc.workload.actions.len() as u64;
    let r = run_seed(&sc, 2);
    let l = r.latency.unwrap();
    assert_eq!(l.samples, records);
    assert!(l.p50_seconds >= 0.045 && l.p50_seconds <= l.p99_seconds);
    assert!(r.backlog_max_bytes.unwrap() >= 1024);
    assert_eq!(r.link, "formant-90-1");
}

/// One 1 MB bundle over an ideal 8 Mbit/s, 50 ms link: every metric by hand.
#[test]
fn metrics_follow_the_definitions() {
    let sc = Scenario {
        name: "by-hand".into(),
        summary: String::new(),
        link: "rate=8Mbps,delay=50ms".into(),
        topology: Topology::pair(),
        workload: Workload {
            initial: vec![(
                0,
                BundleSpec {
                    key: BundleKey(1),
                    kind: BundleKind::Plain,
                    payload_len: 1_000_000,
                    manifest_len: 134,
                },
            )],
            actions: vec![],
        },
        deadline: SimTime::from_secs(60),
        completion: Completion::AllSynced,
    };
    let r = run_seed(&sc, 1);
    assert_eq!(r.useful_bytes, 1_000_134);
    assert_eq!(r.bundles_delivered.len(), 1);
    assert_eq!(r.bundles_delivered["A->B"], 1);
    assert_eq!(r.capacity_bps, 8_000_000);
    let goodput = 1_000_134.0 * 8.0 / r.virtual_seconds;
    assert!((r.goodput_bps - goodput).abs() < 1e-6);
    assert!((r.efficiency - goodput / 8e6).abs() < 1e-12);
    // It cannot beat serialization plus one delay.
    assert!(r.virtual_seconds > 1_000_134.0 * 8.0 / 8e6 + 0.05);
    let on_air: u64 = r
        .links
        .iter()
        .flat_map(|l| &l.ports)
        .map(|p| p.sent_bytes)
        .sum();
    assert_eq!(r.bytes_on_air, on_air);
    assert!((r.overhead.unwrap() - on_air as f64 / 1_000_134.0).abs() < 1e-12);
    assert_eq!(r.goodput_bps_by_direction["A->B"], r.goodput_bps);
    // No loss: nothing resent and close to the line rate.
    assert_eq!(r.retransmitted_bytes, 0);
    assert!(r.efficiency > 0.8, "{}", r.efficiency);
}

fn json_without_wall(r: &Report) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap();
    v.as_object_mut().unwrap().remove("wall_seconds");
    v
}

#[test]
fn same_seed_same_report() {
    for name in ["uhf-100x100", "cellular-20mb"] {
        let sc = Scenario::lookup_scaled(name, 0.05).unwrap();
        let a = json_without_wall(&run_seed(&sc, 7));
        let b = json_without_wall(&run_seed(&sc, 7));
        assert_eq!(a, b, "{name}");
        let c = json_without_wall(&run_seed(&sc, 8));
        assert_ne!(a, c, "{name}: another seed gives another run");
    }
}

#[test]
fn link_override_replaces_the_profile() {
    let sc = Scenario::lookup("uhf-chain").unwrap();
    // A point-to-point link per edge instead of the radio medium.
    let link: LinkConfig = "rate=64kbps,delay=20ms".parse().unwrap();
    let r = run(
        &sc,
        RunOptions {
            seed: 1,
            link_override: Some(link),
            ..RunOptions::default()
        },
    )
    .unwrap();
    assert!(r.complete);
    assert_eq!(r.links.len(), 2);
    assert_eq!(r.capacity_bps, 64_000);
    // The HF modem with lossy, bounded overs still completes.
    let sc = Scenario::lookup_scaled("hf-100x100", 0.01).unwrap();
    let link = LinkConfig::parse_spec("profile=hf-modem,loss=2%,over=20s").unwrap();
    let r = run(
        &sc,
        RunOptions {
            seed: 3,
            link_override: Some(link),
            ..RunOptions::default()
        },
    )
    .unwrap();
    assert!(r.complete, "{r:#?}");
    assert!(r.retransmitted_bytes > 0);
}

#[test]
fn progress_is_reported() {
    let sc = Scenario::lookup_scaled("lfn-50mb", 0.3).unwrap();
    let mut seen = Vec::new();
    let mut cb = |p: &skywave_lab::Progress| seen.push(*p);
    let r = run(
        &sc,
        RunOptions {
            seed: 1,
            progress: Some(&mut cb),
            ..RunOptions::default()
        },
    )
    .unwrap();
    assert!(seen.len() >= 2);
    let last = seen.last().unwrap();
    assert!(last.complete);
    assert_eq!(last.useful_bytes, r.useful_bytes);
    assert!(
        seen.windows(2)
            .all(|w| w[0].virtual_seconds <= w[1].virtual_seconds)
    );
}

/// A minimal XML well-formedness check: every tag closes in order, attributes are quoted.
fn check_xml(svg: &str) {
    assert!(svg.starts_with("<?xml"));
    let mut stack: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find('<') {
        let text = &rest[..i];
        assert!(!text.contains('>'), "stray '>' in text {text:?}");
        rest = &rest[i..];
        let end = rest.find('>').expect("unclosed tag");
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if tag.starts_with('?') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched </{name}>"
            );
        } else {
            assert_eq!(
                tag.matches('"').count() % 2,
                0,
                "unbalanced quotes in <{tag}>"
            );
            assert!(
                !tag.contains('&')
                    || tag.contains("&amp;")
                    || tag.contains("&lt;")
                    || tag.contains("&quot;")
            );
            let name = tag
                .split_whitespace()
                .next()
                .unwrap()
                .trim_end_matches('/')
                .to_string();
            if !tag.ends_with('/') {
                stack.push(name);
            }
        }
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
}

#[test]
fn matrix_csv_and_svg_are_well_formed() {
    let scenarios: Vec<Scenario> = ["uhf-chain", "uhf-100x100", "cellular-20mb"]
        .iter()
        .map(|n| Scenario::lookup_scaled(n, 0.05).unwrap())
        .collect();
    let reports =
        skywave_lab::matrix(&scenarios, &[1, 2], skywave_lab::AgentKind::Reference).unwrap();
    assert_eq!(reports.len(), 6);
    assert_eq!(
        (reports[0].scenario.as_str(), reports[0].seed),
        ("uhf-chain", 1)
    );
    assert_eq!(
        (reports[5].scenario.as_str(), reports[5].seed),
        ("cellular-20mb", 2)
    );
    assert_eq!(
        json_without_wall(&reports[1]),
        json_without_wall(&run_seed(&scenarios[0], 2))
    );

    let mut csv = Vec::new();
    write_csv(&reports, &mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 7);
    let cols = skywave_lab::matrix::CSV_COLUMNS.len();
    for l in &lines {
        // No quoted commas in these rows: a plain split counts the fields.
        assert_eq!(l.split(',').count(), cols, "{l}");
    }
    assert!(lines[1].starts_with("uhf-chain,reference,1,uhf-csma,true,"));

    let svg = scenario_panels_svg(&reports);
    check_xml(&svg);
    // One panel per scenario, never averaged together, each with its own metric.
    assert_eq!(svg.matches(r#"<g class="panel""#).count(), 3, "{svg}");
    for sc in ["uhf-chain", "uhf-100x100", "cellular-20mb"] {
        assert!(svg.contains(&format!(r#"data-scenario="{sc}""#)), "{sc}");
    }
    assert!(svg.contains("time to complete (lower is better)"));
    // One colour per agent (one agent here), colour-blind safe.
    assert!(svg.contains("#0072B2") && !svg.contains("#E69F00"));
}

#[test]
fn bad_input_names_the_field() {
    let e = Scenario::lookup("uhf-moon").unwrap_err().to_string();
    assert!(
        e.contains("'uhf-moon'") && e.contains("hf-lbard-table") && e.contains("formant-stream"),
        "{e}"
    );
    let e = skywave_lab::parse_seeds("9-1").unwrap_err().to_string();
    assert!(e.contains("--seeds") && e.contains("1-5"), "{e}");
    let e =
        skywave_lab::LabError::from(LinkConfig::parse_spec("rate=fast").unwrap_err()).to_string();
    assert!(
        e.contains("--link") && e.contains("'rate'") && e.contains("bps"),
        "{e}"
    );
}
