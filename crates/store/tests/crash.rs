//! Crash consistency: interrupt the store at every durable step, and kill a writer
//! process at arbitrary instants; after reopening, nothing committed is lost, nothing
//! corrupt is visible, and ranges recorded as held are still held.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use skywave_bundle::BundleId;
use skywave_store::{FailAfter, PieceOutcome, Store, StoreConfig};

type Op = Box<dyn FnMut(&mut Store) -> bool>;

/// The scripted workload: returns how many of its operations completed.
fn workload(s: &mut Store) -> usize {
    let mut done = 0;
    let mut ops: Vec<Op> = vec![
        Box::new(|s| {
            s.insert(&signed(&key(1), 1, &data(40_000, 1)), &data(40_000, 1)[..])
                .is_ok()
        }),
        Box::new(|s| {
            s.insert(&signed(&key(2), 1, &data(300, 2)), &data(300, 2)[..])
                .is_ok()
        }),
        Box::new(|s| {
            s.insert(&signed(&key(1), 2, &data(50_000, 3)), &data(50_000, 3)[..])
                .is_ok()
        }),
        Box::new(|s| {
            let p = data(30_000, 4);
            let id = key(3).bundle_id();
            s.begin_partial(&signed(&key(3), 1, &p)).is_ok()
                && s.write_piece(&id, 1, 0, &p[..10_000]).is_ok()
                && s.write_piece(&id, 1, 20_000, &p[20_000..25_000]).is_ok()
                && s.checkpoint().is_ok()
        }),
        Box::new(|s| {
            s.insert(&journal(&key(4), &data(3000, 5)), &data(3000, 5)[..])
                .is_ok()
        }),
        Box::new(|s| {
            s.insert(&journal(&key(4), &data(7000, 5)), &data(7000, 5)[..])
                .is_ok()
        }),
        Box::new(|s| {
            let p = data(30_000, 4);
            let id = key(3).bundle_id();
            s.write_piece(&id, 1, 10_000, &p[10_000..20_000]).is_ok()
                && s.write_piece(&id, 1, 25_000, &p[25_000..]).is_ok()
        }),
        Box::new(|s| s.remove(&key(2).bundle_id()).is_ok()),
    ];
    for op in ops.iter_mut() {
        if !op(s) {
            break;
        }
        done += 1;
    }
    done
}

/// What must hold after reopening, given that `done` operations completed and the next
/// one may or may not have taken effect.
fn check(dir: &std::path::Path, done: usize, label: &str) {
    let mut s = Store::open(dir, StoreConfig::default()).unwrap();
    let report = s.fsck().unwrap();
    assert!(
        report.quarantined.is_empty(),
        "{label}: corrupt data visible: {report:?}"
    );
    let version = |s: &Store, id: BundleId| s.get(&id).unwrap().map(|b| b.manifest.version());
    let k1 = version(&s, key(1).bundle_id());
    let expect_k1: &[Option<u64>] = match done {
        0 => &[None, Some(1)],
        1 => &[Some(1)],
        2 => &[Some(1), Some(2)],
        _ => &[Some(2)],
    };
    assert!(expect_k1.contains(&k1), "{label}: bundle 1 at {k1:?}");
    match k1 {
        Some(1) => assert_eq!(
            s.read_payload(&key(1).bundle_id()).unwrap(),
            data(40_000, 1)
        ),
        Some(2) => assert_eq!(
            s.read_payload(&key(1).bundle_id()).unwrap(),
            data(50_000, 3)
        ),
        _ => {}
    }
    let k2 = version(&s, key(2).bundle_id());
    if (2..7).contains(&done) {
        assert_eq!(k2, Some(1), "{label}");
    }
    if done >= 8 {
        assert_eq!(k2, None, "{label}");
    }
    let k4 = version(&s, key(4).bundle_id());
    if done >= 5 {
        assert!(k4 >= Some(3000), "{label}: journal at {k4:?}");
    }
    if done >= 6 {
        assert_eq!(k4, Some(7000), "{label}");
    }
    if let Some(len) = k4 {
        assert_eq!(
            s.read_payload(&key(4).bundle_id()).unwrap(),
            data(len as usize, 5)
        );
    }
    // Bundle 3: complete, or a transfer whose recorded ranges hold the right bytes.
    let id3 = key(3).bundle_id();
    let p = data(30_000, 4);
    if done >= 7 {
        assert_eq!(s.read_payload(&id3).unwrap(), p, "{label}");
    } else if s.get(&id3).unwrap().is_none() {
        if let Some(info) = s.partial(&id3).unwrap() {
            if done >= 4 {
                assert!(info.held.contains(0, 10_000) && info.held.contains(20_000, 25_000));
            }
            // Supply only what is missing: completion proves the held bytes are right.
            let mut complete = false;
            for (a, b) in info.held.missing(30_000) {
                let out = s
                    .write_piece(&id3, 1, a, &p[a as usize..b as usize])
                    .unwrap();
                complete = matches!(out, PieceOutcome::Complete(_));
            }
            assert!(complete || info.held.is_complete(30_000), "{label}");
            assert_eq!(s.read_payload(&id3).unwrap(), p);
        } else {
            assert!(done < 4, "{label}: recorded transfer lost");
        }
    }
}

#[test]
fn every_failure_point_leaves_old_or_new_state() {
    // Count the durable steps of a full run.
    let dir = tempfile::tempdir().unwrap();
    let counter = FailAfter::new(u64::MAX, FailAfter::disk_full);
    let mut s = Store::open_with_hook(dir.path(), StoreConfig::default(), counter.clone()).unwrap();
    assert_eq!(workload(&mut s), 8);
    drop(s);
    check(dir.path(), 8, "uninterrupted");
    let steps = u64::MAX - counter.remaining();
    assert!(steps > 20, "only {steps} durable steps?");
    for n in 0..steps {
        let dir = tempfile::tempdir().unwrap();
        let hook = FailAfter::new(n, || std::io::Error::other("injected crash"));
        let mut s = Store::open_with_hook(dir.path(), StoreConfig::default(), hook).unwrap();
        let done = workload(&mut s);
        drop(s);
        check(
            dir.path(),
            done,
            &format!("failure at step {n} (after {done} operations)"),
        );
    }
}

const CHILD_ENV: &str = "SKYWAVE_CRASH_CHILD_DIR";
const BIG: usize = 2_000_000;

/// Not a test on its own: the writer process that `kill_9_mid_write` kills.
#[test]
#[ignore = "run as a child process by kill_9_mid_write"]
fn crash_child_writer() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut s = Store::open(&dir, StoreConfig::default()).unwrap();
    let big = data(BIG, 9);
    let bid = key(999).bundle_id();
    s.begin_partial(&signed(&key(999), 1, &big)).unwrap();
    let mut at = 0usize;
    for i in 0u64.. {
        let p = data(if i % 5 == 0 { 200_000 } else { 500 }, i as u8);
        s.insert(&signed(&key(1000 + i), 1, &p), &p[..]).unwrap();
        println!("committed {i}");
        if at < BIG {
            let end = (at + 64 * 1024).min(BIG);
            s.write_piece(&bid, 1, at as u64, &big[at..end]).unwrap();
            at = end;
            s.checkpoint().unwrap();
            println!("checkpoint {at}");
        }
    }
}

#[test]
fn kill_9_mid_write() {
    let exe = std::env::current_exe().unwrap();
    for (round, delay_ms) in [30u64, 80, 150, 250, 400].into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash_child_writer",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<String>>()
        });
        // Let it get going (the first commit), then kill it at a varying instant.
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap();
        child.wait().unwrap();
        let lines = reader.join().unwrap();
        let committed: Vec<u64> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("committed ")?.parse().ok())
            .collect();
        let checkpoint: u64 = lines
            .iter()
            .filter_map(|l| l.strip_prefix("checkpoint ")?.parse().ok())
            .max()
            .unwrap_or(0);
        let label = format!("round {round}: killed after {} commits", committed.len());
        let mut s = Store::open(dir.path(), StoreConfig::default()).unwrap();
        for &i in &committed {
            let p = data(if i % 5 == 0 { 200_000 } else { 500 }, i as u8);
            assert_eq!(
                s.read_payload(&key(1000 + i).bundle_id()).unwrap(),
                p,
                "{label}: {i}"
            );
        }
        let report = s.fsck().unwrap();
        assert!(report.quarantined.is_empty(), "{label}: {report:?}");
        let bid = key(999).bundle_id();
        if s.get(&bid).unwrap().is_some() {
            assert_eq!(s.read_payload(&bid).unwrap(), data(BIG, 9), "{label}");
        } else if let Some(info) = s.partial(&bid).unwrap() {
            assert!(
                info.held.contains(0, checkpoint),
                "{label}: checkpointed ranges lost"
            );
            let big = data(BIG, 9);
            for (a, b) in info.held.missing(BIG as u64) {
                s.write_piece(&bid, 1, a, &big[a as usize..b as usize])
                    .unwrap();
            }
            assert_eq!(s.read_payload(&bid).unwrap(), big, "{label}");
        } else {
            assert_eq!(checkpoint, 0, "{label}: transfer lost");
        }
    }
}
