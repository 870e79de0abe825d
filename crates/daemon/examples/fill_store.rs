//! Fills a node directory's store with many small bundles, fast (one process, no daemon).
//!
//! ```text
//! cargo run --release -p skywave-daemon --example fill_store -- DIR COUNT [BYTES]
//! ```
//!
//! Creates COUNT bundles authored by the node in DIR (which `skywave init` made, or is made
//! here), each with a distinct payload of BYTES bytes (default 100), service `bench`.
//! The daemon must not be running on DIR (the store is locked by whoever has it open).
//! Prints one JSON line: `{"dir":..,"created":..,"bytes_each":..,"seconds":..,"bundles":..}`
//! where `bundles` is the store's count afterwards. Used by `scripts/bench-daemon.sh`.

use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use skywave_store::{NewBundle, Store, StoreConfig};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || {
        eprintln!("usage: fill_store DIR COUNT [BYTES]");
        ExitCode::from(2)
    };
    let (Some(dir), Some(count)) = (args.first(), args.get(1)) else {
        return usage();
    };
    let Ok(count) = count.parse::<u64>() else {
        return usage();
    };
    let bytes = match args.get(2).map(|b| b.parse::<usize>()) {
        None => 100,
        Some(Ok(b)) => b,
        Some(Err(_)) => return usage(),
    };
    match fill(dir, count, bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fill_store: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn fill(dir: &str, count: u64, bytes: usize) -> anyhow::Result<()> {
    let mut store = Store::open(dir, StoreConfig::default())?;
    let date = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let opts = NewBundle {
        service: Some("bench".into()),
        date,
        ..NewBundle::default()
    };
    let start = Instant::now();
    let mut payload = vec![0u8; bytes];
    for i in 0..count {
        // Distinct payloads: the index, then a pattern.
        let tag = format!("bench {i} ");
        for (j, b) in payload.iter_mut().enumerate() {
            *b = tag.as_bytes().get(j).copied().unwrap_or(b'.');
        }
        store.create(&payload[..], &opts)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let stats = store.stats()?;
    println!(
        "{}",
        serde_json::json!({
            "dir": dir,
            "created": count,
            "bytes_each": bytes,
            "seconds": (seconds * 1000.0).round() / 1000.0,
            "bundles": stats.bundles,
        })
    );
    Ok(())
}
