use super::*;

fn parse(family: Family, axis: &str, text: &str) -> Result<AxisValue, LabError> {
    let def = family.axes().iter().find(|a| a.name == axis).unwrap();
    def.parse(family, text)
}

#[test]
fn every_default_value_parses_and_labels_round_trip() {
    for f in Family::ALL {
        for def in f.axes() {
            for v in def.values.iter().chain(def.quick) {
                let p = def.parse(f, v).unwrap();
                assert_eq!(def.parse(f, &p.label).unwrap(), p, "{} {v}", def.name);
            }
        }
    }
}

#[test]
fn axis_values_parse_in_each_familys_units() {
    assert_eq!(parse(Family::Radio, "rate", "1.2k").unwrap().label, "1.2k");
    assert_eq!(parse(Family::Radio, "rate", "9.6").unwrap().number, 9600.0);
    assert_eq!(
        parse(Family::Radio, "rate", "9600bps").unwrap().label,
        "9.6k"
    );
    assert_eq!(parse(Family::Hf, "rate", "1475").unwrap().label, "1475");
    assert_eq!(
        parse(Family::Ip, "rate", "1G").unwrap().spec.unwrap(),
        "rate=1000000000bps"
    );
    assert_eq!(parse(Family::Ip, "rate", "30").unwrap().label, "30M");
    assert_eq!(
        parse(Family::Ip, "rtt", "230").unwrap().spec.unwrap(),
        "delay=115ms"
    );
    assert_eq!(parse(Family::Hf, "delay", "4").unwrap().label, "4s");
    assert_eq!(
        parse(Family::Ip, "rtt", "1ms").unwrap().spec.unwrap(),
        "delay=500us"
    );
    assert_eq!(parse(Family::Hf, "buffer", "1024").unwrap().label, "1KiB");
    assert_eq!(
        parse(Family::Ip, "buffer", "0.05").unwrap().label,
        "0.05bdp"
    );
    assert_eq!(
        parse(Family::Radio, "loss", "5%").unwrap().spec.unwrap(),
        "loss=5%"
    );
    let ge = parse(Family::Ip, "loss", "ge").unwrap();
    assert!((ge.number - 100.0 / 31.0).abs() < 1e-9);
    assert_eq!(
        parse(Family::Ip, "loss", "ge:0.5%:25%").unwrap().label,
        "ge:0.5%:25%"
    );
    assert_eq!(
        parse(Family::Radio, "txqueue", "queued").unwrap().spec,
        None
    );
    for (f, axis, bad) in [
        (Family::Radio, "rate", "fast"),
        (Family::Radio, "rate", "0"),
        (Family::Radio, "loss", "ge"),
        (Family::Radio, "loss", "120"),
        (Family::Radio, "txqueue", "maybe"),
        (Family::Ip, "rtt", "0"),
        (Family::Ip, "buffer", "-1"),
        (Family::Hf, "buffer", "0"),
    ] {
        let e = parse(f, axis, bad).unwrap_err().to_string();
        assert!(e.contains(&format!("'{bad}'")) && e.contains(axis), "{e}");
    }
}

#[test]
fn the_default_grid_has_the_briefs_cells() {
    let g = Grid::new(&Family::ALL, &[], false).unwrap();
    let per: Vec<usize> = g.families.iter().map(FamilyGrid::len).collect();
    assert_eq!(
        per,
        vec![7 * 5 * 3 * 2, 7 * 5 * 3 * 2, 27 * 4, 3 * 5 * 4 * 3 * 2]
    );
    let q = Grid::new(&Family::ALL, &[], true).unwrap();
    assert!(q.len() <= 60, "{}", q.len());
}

#[test]
fn overrides_apply_to_the_families_that_have_the_axis() {
    let fams = parse_families(Some("radio,hf")).unwrap();
    let g = Grid::new(&fams, &["rate=9.6k".into(), "hf.delay=1,8".into()], true).unwrap();
    assert_eq!(g.families[0].axes[0].1.len(), 1);
    assert_eq!(g.families[0].axes[0].1[0].label, "9.6k");
    // `rate=9.6k` is 9.6 kbit/s for the modem too.
    assert_eq!(g.families[1].axes[0].1[0].label, "9.6k");
    assert_eq!(g.families[1].axes[1].1.len(), 2);
    for (args, needle) in [
        (vec!["colour=red"], "'colour'"),
        (vec!["rtt=60ms"], "'rtt'"),
        (vec!["ip.rate=1M"], "'ip.rate'"),
        (vec!["rate="], "empty"),
        (vec!["rate"], "AXIS=V1,V2"),
        (vec!["moon.rate=1"], "'moon'"),
    ] {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let e = Grid::new(&fams, &a, true).unwrap_err().to_string();
        assert!(e.contains(needle), "{args:?}: {e}");
    }
    for bad in ["", ",", "moon"] {
        assert!(parse_families(Some(bad)).is_err(), "{bad}");
    }
}

#[test]
fn floors_follow_the_formula() {
    let g = Grid::new(
        &Family::ALL,
        &[
            "radio.rate=9.6k".into(),
            "mtu=223".into(),
            "radio.loss=0".into(),
            "txqueue=queued".into(),
            "chain.rate=128k".into(),
            "chain.loss=0".into(),
            "hf.rate=1475".into(),
            "hf.delay=4s".into(),
            "hf.buffer=1KiB".into(),
            "hf.loss=0".into(),
            "ip.rate=30M".into(),
            "rtt=230ms".into(),
            "ip.loss=0".into(),
            "ip.buffer=1".into(),
            "ip.mtu=1500".into(),
        ],
        false,
    )
    .unwrap();
    let cells = g.cells(AgentKind::Skywave);
    assert_eq!(cells.len(), 4);
    let f: Vec<&Floor> = cells
        .iter()
        .map(|c| &c.setup.as_ref().unwrap().floor)
        .collect();
    // Radio: 200 bundles of 100 + 134 B on one 9.6 kbit/s channel, no delay.
    assert_eq!(f[0].useful_bytes, 200 * 234);
    assert!((f[0].seconds - 46_800.0 * 8.0 / 9600.0).abs() < 1e-9);
    // Chain: 20 bundles reach B, then C: each on the air twice.
    assert_eq!(f[1].useful_bytes, 2 * 20 * 234);
    // HF: 200 bundles over the half-duplex modem, 8 s round trip, one turnaround pair.
    assert_eq!(f[2].turnarounds, 2);
    assert!((f[2].seconds - (46_800.0 * 8.0 / 1475.0 + 8.0 + 4.0)).abs() < 1e-6);
    // IP: 30 Mbit/s x 10 s of payload plus a manifest, and the 230 ms round trip.
    assert_eq!(f[3].useful_bytes, 37_500_000 + 134);
    assert!((f[3].seconds - (10.0 + 134.0 * 8.0 / 30e6 + 0.23)).abs() < 1e-6);
    assert_eq!(f[3].turnarounds, 0);
    for c in &cells {
        let s = c.setup.as_ref().unwrap();
        assert_eq!(s.timeout, timeout_for(s.floor.seconds));
        assert!(s.timeout >= TIMEOUT_MIN && s.timeout <= TIMEOUT_MAX);
    }
    // The measured useful bytes replace the nominal ones.
    let s = cells[0].setup.as_ref().unwrap();
    let m = floor(&s.scenario, &s.link, Some(46_000));
    assert_eq!((m.useful_bytes, m.basis.as_str()), (46_000, "measured"));
}

#[test]
fn cells_that_cannot_be_built_say_why() {
    let g = Grid::new(
        &[Family::Radio],
        &[
            "rate=9.6k".into(),
            "loss=0".into(),
            "txqueue=queued".into(),
            "mtu=40,48".into(),
        ],
        false,
    )
    .unwrap();
    let cells = g.cells(AgentKind::Skywave);
    let e = cells[0].setup.as_ref().unwrap_err();
    assert!(e.contains("40 B") && e.contains("48 B"), "{e}");
    assert!(cells[1].setup.is_ok());
    // The reference agent takes any frame budget.
    assert!(g.cells(AgentKind::Reference)[0].setup.is_ok());
}

#[test]
fn spreads() {
    let s = Spread::of([3.0, 1.0, 2.0]).unwrap();
    assert_eq!((s.min, s.median, s.max, s.n), (1.0, 2.0, 3.0, 3));
    assert_eq!(Spread::of([4.0, 1.0]).unwrap().median, 2.5);
    assert_eq!(Spread::of(Vec::<f64>::new()), None);
}
