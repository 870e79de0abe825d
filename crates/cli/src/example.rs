//! `skywave example`: a short scripted tour on sample data, needing no setup.
//!
//! Two nodes are created; bundles authored on the first are carried to the second
//! piece by piece, out of order, with the receiving node "restarting" mid-transfer,
//! the way the sync protocol moves them over a link.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use skywave_bundle::text::printable;
use skywave_store::{NewBundle, Query, Store, StoreConfig};

use crate::util::{bytes, now_secs};

#[derive(Debug, Args)]
pub struct ExampleArgs {
    /// Where to create the two nodes (default: a temporary directory, removed after).
    #[arg(long)]
    pub workdir: Option<PathBuf>,
}

/// Piece size used to carry payloads: what fits one 200-byte radio frame after headers.
const PIECE: usize = 160;

pub fn run(args: ExampleArgs) -> anyhow::Result<ExitCode> {
    let tmp = tempfile::Builder::new()
        .prefix("skywave-example-")
        .tempdir()?;
    let root = args
        .workdir
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let (dir_a, dir_b) = (root.join("node-a"), root.join("node-b"));
    let mut a = Store::open(&dir_a, StoreConfig::default()).context("creating node A")?;
    let mut b = Store::open(&dir_b, StoreConfig::default()).context("creating node B")?;
    println!("node A {} in {}", a.node_key().identity(), dir_a.display());
    println!("node B {} in {}", b.node_key().identity(), dir_b.display());

    // 1. Author some bundles on A.
    let date = now_secs();
    let opts = |service: &str, name: &str| NewBundle {
        service: Some(service.into()),
        name: Some(name.into()),
        date,
        ..Default::default()
    };
    let report: Vec<u8> = (0..20_000u32)
        .flat_map(|i| format!("line {i}\n").into_bytes())
        .collect();
    a.create(&report[..], &opts("file", "field-report-01.txt"))?;
    a.create(
        &b"Water at the north camp is low; send two jerrycans."[..],
        &opts("message", "to-base"),
    )?;
    let mut jopts = opts("telemetry", "rover-7.log");
    jopts.journal = true;
    let log = a.create(&b"t=0 battery=98%\n"[..], &jopts)?;
    println!("\nA authored 3 bundles:");
    list(&a)?;

    // 2. Carry every bundle A has to B, in pieces, scrambled; B restarts midway.
    let mut sent = carry(&mut a, &mut b, Some(150))?;
    b.checkpoint()?;
    drop(b);
    println!(
        "\nB stopped after {} and restarted; its transfer resumes",
        bytes(sent)
    );
    let mut b = Store::open(&dir_b, StoreConfig::default())?;
    sent += carry(&mut a, &mut b, None)?;
    println!("B holds, after {} of pieces ({PIECE} B each):", bytes(sent));
    list(&b)?;

    // 3. The journal grows on A; only the new tail travels.
    a.append(
        &log.manifest.id(),
        &b"t=60 battery=97%\nt=120 battery=97%\n"[..],
        date,
    )?;
    let tail = carry(&mut a, &mut b, None)?;
    let j = b.get(&log.manifest.id())?.context("journal missing on B")?;
    println!(
        "\nA appended to its journal; B fetched only the {tail} new bytes (journal now {} bytes)",
        j.manifest.manifest().length
    );

    // 4. Both stores verify.
    for (name, s) in [("A", &mut a), ("B", &mut b)] {
        let r = s.fsck()?;
        println!(
            "fsck {name}: {} bundles checked, clean: {}",
            r.bundles_checked,
            r.is_clean()
        );
    }
    if args.workdir.is_some() {
        println!(
            "\nnodes kept in {}; try `skywave ls --dir {}`",
            root.display(),
            dir_b.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn list(s: &Store) -> anyhow::Result<()> {
    for b in s.list(&Query::default())? {
        let m = b.manifest.manifest();
        println!(
            "  {}  v{:<6} {:>10}  {:<9}  {}  (manifest {} B)",
            &m.id.to_hex()[..16],
            m.version,
            bytes(m.length),
            printable(m.service.as_deref().unwrap_or("-")),
            printable(m.name.as_deref().unwrap_or("")),
            b.manifest.as_bytes().len()
        );
    }
    Ok(())
}

/// Moves what `from` holds and `to` lacks, piece by piece in a scrambled (repeatable)
/// order, stopping after `limit` pieces if given. Returns the payload bytes sent.
fn carry(from: &mut Store, to: &mut Store, limit: Option<usize>) -> anyhow::Result<u64> {
    let mut sent = 0u64;
    let mut budget = limit.unwrap_or(usize::MAX);
    for bundle in from.list(&Query {
        include_deleted: true,
        ..Default::default()
    })? {
        let m = bundle.manifest.manifest().clone();
        if to
            .get(&m.id)?
            .is_some_and(|h| h.manifest.version() >= m.version)
        {
            continue;
        }
        if m.length == 0 {
            to.insert(&bundle.manifest, &[][..])?;
            continue;
        }
        let payload = from.read_payload(&m.id)?;
        let held = to.begin_partial(&bundle.manifest)?.held;
        let mut pieces: Vec<(u64, u64)> = held
            .missing(m.length)
            .into_iter()
            .flat_map(|(s, e)| {
                (s..e)
                    .step_by(PIECE)
                    .map(move |p| (p, (p + PIECE as u64).min(e)))
            })
            .collect();
        let n = pieces.len();
        for i in 0..n {
            pieces.swap(i, (i * 7919 + 13) % n);
        }
        for (s, e) in pieces {
            if budget == 0 {
                return Ok(sent);
            }
            budget -= 1;
            sent += e - s;
            to.write_piece(&m.id, m.version, s, &payload[s as usize..e as usize])?;
        }
    }
    Ok(sent)
}
