//! `skywave lab sweep` as a library: a tiny grid end to end with the skywave agent.

use std::sync::atomic::{AtomicUsize, Ordering};

use skywave_lab::sweep::{
    CSV_COLUMNS, CellStatus, Family, Grid, RunDone, RunStatus, SweepOptions, heatmaps,
    parse_families, sweep, table, write_csv,
};
use skywave_lab::{AgentKind, AgentOptions};

fn options<'a>(seeds: &'a [u64], on_run: &'a (dyn Fn(&RunDone<'_>) + Sync)) -> SweepOptions<'a> {
    SweepOptions {
        seeds,
        agent: AgentKind::Skywave,
        agent_opts: AgentOptions::default(),
        scratch_dir: std::path::Path::new("/dev/shm")
            .is_dir()
            .then_some(std::path::Path::new("/dev/shm")),
        threads: 2,
        on_run: Some(on_run),
    }
}

#[test]
fn a_tiny_grid_reports_every_cell_with_sane_fields() {
    let families = parse_families(Some("radio,ip")).unwrap();
    let axes: Vec<String> = [
        "radio.rate=128k",
        "radio.mtu=40,223",
        "radio.loss=0",
        "txqueue=queued",
        "ip.rate=1M",
        "rtt=60ms",
        "ip.loss=0,ge",
        "ip.buffer=1bdp",
        "ip.mtu=1500",
    ]
    .map(String::from)
    .to_vec();
    let grid = Grid::new(&families, &axes, false).unwrap();
    assert_eq!(grid.len(), 4);
    let seeds = [1, 2];
    let calls = AtomicUsize::new(0);
    let on_run = |d: &RunDone<'_>| {
        calls.fetch_add(1, Ordering::Relaxed);
        assert!(d.runs_done <= d.runs_total && d.cells_done <= d.cells_total);
    };
    let r = sweep(&grid, &options(&seeds, &on_run)).unwrap();
    // mtu=40 (under the protocol's 48 B floor) cannot be built: reported, not run.
    assert_eq!(calls.load(Ordering::Relaxed), 3 * 2);
    assert_eq!(r.cells.len(), 4, "every cell is reported");
    let bad = &r.cells[0];
    assert_eq!(bad.axes["mtu"], "40");
    assert_eq!(bad.status, CellStatus::Error);
    assert!(
        bad.error.as_deref().unwrap().contains("40 B")
            && bad.error.as_deref().unwrap().contains("48 B"),
        "{bad:?}"
    );
    assert!(bad.results.is_empty() && bad.floor.is_none());

    for c in &r.cells[1..] {
        let floor = c.floor.as_ref().expect("a built cell has a floor");
        assert!(floor.seconds > 0.0 && floor.useful_bytes > 0, "{c:?}");
        assert_eq!(c.results.len(), 2, "{c:?}");
        assert!(c.timeout_seconds.unwrap() >= 60.0);
        for s in &c.results {
            assert_ne!(s.status, RunStatus::Error, "{s:?}");
            if s.status == RunStatus::Complete {
                let t = s.time_seconds.unwrap();
                assert!(t >= floor.seconds, "time {t} below the floor {floor:?}");
                let ratio = s.time_over_floor.unwrap();
                assert!((ratio - t / floor.seconds).abs() < 1e-9);
                assert!(
                    s.useful_bytes > 0 && s.bytes_on_air >= s.useful_bytes,
                    "{s:?}"
                );
                let o = s.overhead.unwrap();
                assert!((o - s.bytes_on_air as f64 / s.useful_bytes as f64).abs() < 1e-9);
            }
        }
        if c.complete_runs > 0 {
            let t = c.stats.time_over_floor.unwrap();
            assert!(t.min >= 1.0 && t.min <= t.median && t.median <= t.max);
            assert_eq!(floor.basis, "measured");
        }
        let ip = c.family == Family::Ip;
        assert_eq!(
            c.results.iter().all(|s| s.dropped_at_bottleneck.is_some()),
            ip,
            "queue drops are reported for IP cells only: {c:?}"
        );
    }
    // The radio at 128 kbit/s and the clean 1 Mbit/s path complete.
    assert_eq!(r.cells[1].status, CellStatus::Complete, "{:?}", r.cells[1]);
    assert_eq!(r.cells[2].status, CellStatus::Complete, "{:?}", r.cells[2]);

    // JSON: one object, every cell.
    let v = serde_json::to_value(&r).unwrap();
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    assert_eq!(cells[2]["axes"]["rtt"], "60ms");
    assert_eq!(cells[2]["results"].as_array().unwrap().len(), 2);
    assert!(
        cells[2]["stats"]["time_over_floor"]["median"]
            .as_f64()
            .unwrap()
            >= 1.0
    );
    assert!(cells[0]["error"].as_str().unwrap().contains("48"));
    assert_eq!(v["families"].as_array().unwrap().len(), 2);

    // Table: a row per cell, the error spelled out once.
    let t = table(&r);
    assert!(
        t.contains("error (1)") && t.contains("(1) frame budget"),
        "{t}"
    );
    assert!(t.contains("queue drop"), "{t}");
    assert!(t.matches("complete").count() >= 2, "{t}");

    // CSV: header, one row per run, one for the cell that was not built.
    let mut csv = Vec::new();
    write_csv(&r, &mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], CSV_COLUMNS.join(","));
    assert_eq!(lines.len(), 1 + 1 + 3 * 2, "{csv}");

    // Heat maps: two per family, each a whole SVG with a legend.
    let maps = heatmaps(&r);
    let names: Vec<&str> = maps.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "radio-time-over-floor.svg",
            "radio-overhead.svg",
            "ip-time-over-floor.svg",
            "ip-overhead.svg"
        ]
    );
    for (n, svg) in &maps {
        assert!(
            svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"),
            "{n}"
        );
        assert!(svg.contains("timeout (no run complete)"), "{n}");
    }
    assert!(maps[0].1.contains(">error<"), "the mtu=48 cell is marked");
}

#[test]
fn bad_grids_are_refused_with_the_field_named() {
    let fams = parse_families(None).unwrap();
    assert_eq!(fams.len(), 4);
    let e = Grid::new(&fams, &["colour=red".into()], true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("'colour'") && e.contains("--axis") && e.contains("rate"),
        "{e}"
    );
    let e = Grid::new(&fams, &["rate=".into()], true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("empty"), "{e}");
    let e = Grid::new(&fams, &["mtu=big".into()], true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("'big'") && e.contains("mtu"), "{e}");
    let e = Grid::new(&[], &[], true).unwrap_err().to_string();
    assert!(e.contains("empty"), "{e}");
    let e = parse_families(Some("")).unwrap_err().to_string();
    assert!(e.contains("--family"), "{e}");

    let grid = Grid::new(&[Family::Radio], &["rate=128k".into()], true).unwrap();
    let on_run = |_: &RunDone<'_>| {};
    let e = sweep(&grid, &options(&[], &on_run))
        .unwrap_err()
        .to_string();
    assert!(e.contains("--seeds"), "{e}");
}
