//! Prints the trace of a short run: `cargo run -p skywave-sim --example trace [SEED] [LINK]`.
//! LINK is a profile name or spec (default `lfn`); the second half of the run is a
//! three-radio `uhf-csma` chain where the two ends are hidden from each other.

use skywave_sim::{Adjacency, LinkConfig, RefEndpoint, SimTime, Simulator, write_trace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seed: u64 = args.next().map_or(Ok(1), |s| s.parse())?;
    let link: LinkConfig = args.next().as_deref().unwrap_or("lfn").parse()?;
    let mut sim = Simulator::new(seed);
    sim.set_trace(true);
    let a = sim.add_node(RefEndpoint::saturating(1200).with_limit(3600));
    let b = sim.add_node(RefEndpoint::sink());
    sim.connect(a, b, &link)?;
    let radios = [
        sim.add_node(RefEndpoint::saturating(223).with_limit(223)),
        sim.add_node(RefEndpoint::sink()),
        sim.add_node(RefEndpoint::saturating(223).with_limit(223)),
    ];
    sim.add_medium(
        &radios,
        Adjacency::chain(3),
        &LinkConfig::profile("uhf-csma")?,
    )?;
    sim.run_until(SimTime::from_secs(10));
    let mut out = String::new();
    write_trace(sim.trace(), &mut out);
    print!("{out}");
    Ok(())
}
