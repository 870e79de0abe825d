//! The QUIC baseline on the design's single-transfer scenarios.
//!
//! ```text
//! cargo run --release -p skywave-baseline --example quic                 # every scenario below
//! cargo run --release -p skywave-baseline --example quic -- lfn-50mb     # one scenario
//! cargo run --release -p skywave-baseline --example quic -- LINK MB [SEED [CC]] [--json]
//! ```
//!
//! Scenarios: `lfn-50mb`, `lfn-lossy-50mb` (BBR and Cubic), `cellular-20mb`,
//! `satellite-10mb`. LINK is a profile name or a link spec; CC is bbr, cubic or newreno.
//! Prints goodput, time, efficiency, overhead and losses; `--json` prints the reports.

use std::process::ExitCode;
use std::time::Instant;

use skywave_baseline::quic::{self, BaselineReport, Congestion};
use skywave_sim::config::LinkConfig;
use skywave_sim::time::SimTime;

const MB: u64 = 1_000_000;

/// (name, link, MB, controllers)
const SCENARIOS: &[(&str, &str, u64, &[Congestion])] = &[
    ("lfn-50mb", "lfn", 50, &[Congestion::Bbr, Congestion::Cubic]),
    (
        "lfn-lossy-50mb",
        "lfn-lossy",
        50,
        &[Congestion::Bbr, Congestion::Cubic],
    ),
    (
        "cellular-20mb",
        "cellular",
        20,
        &[Congestion::Bbr, Congestion::Cubic],
    ),
    (
        "satellite-10mb",
        "satellite",
        10,
        &[Congestion::Bbr, Congestion::Cubic],
    ),
];

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> Result<(), String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    args.retain(|a| a != "--json");

    let mut jobs: Vec<(String, LinkConfig, u64, u64, Congestion)> = Vec::new();
    match args.as_slice() {
        [] => {
            for &(name, link, mb, ccs) in SCENARIOS {
                for &cc in ccs {
                    jobs.push((name.into(), profile(link)?, mb * MB, 1, cc));
                }
            }
        }
        [name] => {
            let &(name, link, mb, ccs) =
                SCENARIOS.iter().find(|s| s.0 == name).ok_or_else(|| {
                    let names: Vec<_> = SCENARIOS.iter().map(|s| s.0).collect();
                    format!(
                        "unknown scenario '{name}'; accepted: {} (or LINK MB [SEED [CC]])",
                        names.join(", ")
                    )
                })?;
            for &cc in ccs {
                jobs.push((name.into(), profile(link)?, mb * MB, 1, cc));
            }
        }
        [link, mb, rest @ ..] if rest.len() <= 2 => {
            let cfg: LinkConfig = link.parse().map_err(|e| format!("{e}"))?;
            let mb: f64 = mb
                .parse()
                .map_err(|_| format!("invalid MB '{mb}': expected a number"))?;
            let seed = match rest.first() {
                Some(s) => s
                    .parse()
                    .map_err(|_| format!("invalid SEED '{s}': expected an integer"))?,
                None => 1,
            };
            let cc = match rest.get(1) {
                Some(c) => c.parse()?,
                None => Congestion::Bbr,
            };
            let name = format!("{link}-{mb}mb");
            jobs.push((name, cfg, (mb * MB as f64) as u64, seed, cc));
        }
        _ => return Err("usage: quic [SCENARIO | LINK MB [SEED [CC]]] [--json]".into()),
    }

    for (name, cfg, bytes, seed, cc) in jobs {
        // Generous: a transfer that has not finished by 100x its ideal time has failed.
        let ideal = bytes as f64 * 8.0 / cfg.up.rate_bps as f64;
        let deadline = SimTime::from_secs((ideal * 100.0).ceil() as u64 + 60);
        // Wall time is only reported, never fed into the simulation.
        #[allow(clippy::disallowed_methods)]
        let t0 = Instant::now();
        let r = quic::run_with(&cfg, bytes, seed, deadline, cc)?;
        let wall = t0.elapsed().as_secs_f64();
        if json {
            println!("{}", serde_json::to_string(&r).map_err(|e| e.to_string())?);
        } else {
            print_line(&name, &r, wall);
        }
    }
    Ok(())
}

fn profile(name: &str) -> Result<LinkConfig, String> {
    LinkConfig::profile(name).map_err(|e| e.to_string())
}

fn print_line(name: &str, r: &BaselineReport, wall: f64) {
    println!(
        "{name:<16} {cc:<7} seed {seed}: {goodput:>7.2} Mbit/s of {rate:.0} ({eff:>5.1}%), \
         {secs:.2} s virtual, handshake {hs}, on air {air} B (overhead {ovh:.3}), \
         lost {lost} pkts / {resent} B, {done}, wall {wall:.2} s",
        cc = r.congestion,
        seed = r.seed,
        goodput = r.goodput_bps / 1e6,
        rate = r.path_rate_bps as f64 / 1e6,
        eff = 100.0 * r.goodput_bps / r.path_rate_bps as f64,
        secs = r.virtual_seconds,
        hs = r
            .handshake_seconds
            .map_or("-".to_string(), |h| format!("{:.3} s", h)),
        air = r.bytes_on_air,
        ovh = r.bytes_on_air as f64 / r.delivered_bytes.max(1) as f64,
        lost = r.lost_packets,
        resent = r.resent_bytes,
        done = if r.complete {
            "complete".to_string()
        } else {
            format!(
                "INCOMPLETE {}",
                r.failure.as_deref().unwrap_or("(deadline)")
            )
        },
    );
}
