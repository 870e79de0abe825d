//! Runs one scenario with the `skywave` agent and prints, per node, the store audit and
//! the endpoint's counters and sessions at the end: a look inside a run.
//!
//! `cargo run --release -p skywave-lab --example skywave_audit -- SCENARIO [SEED] [SCALE] [STORE_DIR]`

use std::path::PathBuf;

use skywave_lab::{RunOptions, Scenario, SkywaveFactory, run_with};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map_or("uhf-chain", String::as_str);
    let seed = args.get(1).map_or(Ok(1), |s| s.parse())?;
    let scale = args.get(2).map_or(Ok(1.0), |s| s.parse())?;
    let dir = args.get(3).map(PathBuf::from);
    let sc = Scenario::lookup_scaled(name, scale)?;
    let factory = SkywaveFactory::new().auditing();
    let r = run_with(
        &sc,
        &factory,
        RunOptions {
            seed,
            scratch_dir: dir.as_deref(),
            ..RunOptions::default()
        },
    )?;
    println!(
        "{} seed {seed}: complete {} at {:.3} s; delivered {:?}; on air {} B; recon {} B / {} msgs; resent {} B; dropped calls {}",
        r.scenario,
        r.complete,
        r.virtual_seconds,
        r.bundles_delivered,
        r.bytes_on_air,
        r.recon_bytes,
        r.recon_messages,
        r.retransmitted_bytes,
        r.dropped_calls
    );
    for l in &r.links {
        for p in &l.ports {
            println!(
                "link {} {}: sent {} frames {} B, air {:.1} s, dropped {:?}, turnarounds {}, call drops {}",
                l.id,
                p.node,
                p.sent_frames,
                p.sent_bytes,
                p.air_seconds,
                p.dropped,
                p.turnarounds,
                p.call_drops
            );
        }
    }
    for a in factory.audits() {
        println!(
            "node {}: {} workload bundles, {} partials, fsck clean {}, refused frames {}",
            a.node,
            a.bundles.len(),
            a.partials,
            a.fsck_clean,
            a.refused_frames
        );
        println!("  stats {}", a.endpoint_stats);
        for s in &a.sessions {
            println!("  session {s}");
        }
    }
    Ok(())
}
