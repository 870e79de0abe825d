//! Behaviour of the store through its public API.

mod common;

use common::*;
use skywave_bundle::{BundleId, Identity, RangeSet, hash_payload};
use skywave_store::{
    FailAfter, HashedFile, NewBundle, PieceOutcome, Query, Store, StoreConfig, StoreError,
};

#[test]
fn insert_get_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let (small, big) = (data(100, 1), data(300_000, 2));
    let (k1, k2) = (key(1), key(2));
    let a = s.insert(&signed(&k1, 1, &small), &small[..]).unwrap();
    let b = s.insert(&signed(&k2, 7, &big), &big[..]).unwrap();
    assert!(b.token > a.token);
    assert_eq!(s.read_payload(&k1.bundle_id()).unwrap(), small);
    assert_eq!(s.read_payload(&k2.bundle_id()).unwrap(), big);
    assert_eq!(
        s.get(&k2.bundle_id()).unwrap().unwrap().manifest.version(),
        7
    );
    assert!(s.get(&key(3).bundle_id()).unwrap().is_none());
    // Reopen: still there.
    drop(s);
    let s = open(dir.path());
    assert_eq!(s.read_payload(&k2.bundle_id()).unwrap(), big);
    assert_eq!(s.stats().unwrap().bundles, 2);
}

#[test]
fn queries_by_service_recipient_and_token() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let me = Identity([9; 32]);
    for i in 0..10u64 {
        let k = key(100 + i);
        let p = data(50, i as u8);
        let mut m = skywave_bundle::Manifest::new(k.bundle_id(), 1, 50, hash_payload(&p), DATE);
        m.service = Some(if i % 2 == 0 { "telemetry" } else { "file" }.into());
        if i % 3 == 0 {
            m.recipient = Some(me);
        }
        s.insert(&m.sign(&k).unwrap(), &p[..]).unwrap();
    }
    let all = s.list(&Query::default()).unwrap();
    assert_eq!(all.len(), 10);
    assert!(all.windows(2).all(|w| w[0].token < w[1].token));
    let tele = s
        .list(&Query {
            service: Some("telemetry".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(tele.len(), 5);
    let mine = s
        .list(&Query {
            recipient: Some(me),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(mine.len(), 4);
    let since = s
        .list(&Query {
            since: Some(all[6].token),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(since.len(), 3);
    let page = s
        .list(&Query {
            limit: Some(2),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.len(), 2);
    // A replacement moves the bundle to the end of the token order.
    let k = key(100);
    let p = data(60, 1);
    s.insert(&signed(&k, 2, &p), &p[..]).unwrap();
    let last = s
        .list(&Query {
            since: Some(all[9].token),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(last.len(), 1);
    assert_eq!(last[0].manifest.id(), k.bundle_id());
}

#[test]
fn newer_replaces_older_is_stale() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let k = key(1);
    let (v1, v2) = (data(10_000, 1), data(20_000, 2));
    s.insert(&signed(&k, 5, &v1), &v1[..]).unwrap();
    s.insert(&signed(&k, 6, &v2), &v2[..]).unwrap();
    assert_eq!(s.read_payload(&k.bundle_id()).unwrap(), v2);
    for v in [6, 5, 1] {
        let err = s.insert(&signed(&k, v, &v1), &v1[..]).unwrap_err();
        assert!(matches!(err, StoreError::Stale { held: 6, .. }), "{err}");
    }
    assert_eq!(s.read_payload(&k.bundle_id()).unwrap(), v2);
    // The old content-addressed file went with the old version.
    let files: usize = walk(&dir.path().join("payloads"));
    assert_eq!(files, 1);
}

fn walk(p: &std::path::Path) -> usize {
    walk_paths(p).len()
}

/// Every file under `p`.
fn walk_paths(p: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(p)
        .unwrap()
        .flatten()
        .flat_map(|e| {
            if e.path().is_dir() {
                walk_paths(&e.path())
            } else {
                vec![e.path()]
            }
        })
        .collect()
}

#[test]
fn bad_payloads_and_manifests_are_rejected_without_damage() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let k = key(1);
    let good = data(9000, 1);
    let m = signed(&k, 1, &good);
    // Wrong length: short and long.
    let err = s.insert(&m, &good[..8999]).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::LengthMismatch {
                expected: 9000,
                got: 8999,
                ..
            }
        ),
        "{err}"
    );
    let mut long = good.clone();
    long.push(0);
    assert!(matches!(
        s.insert(&m, &long[..]),
        Err(StoreError::LengthMismatch { .. })
    ));
    // Wrong content, right length.
    let mut bad = good.clone();
    bad[4000] ^= 1;
    assert!(matches!(
        s.insert(&m, &bad[..]),
        Err(StoreError::HashMismatch { .. })
    ));
    let small = data(10, 1);
    let ms = signed(&key(2), 1, &small);
    assert!(matches!(
        s.insert(&ms, &data(10, 2)[..]),
        Err(StoreError::HashMismatch { .. })
    ));
    // Forged and truncated manifests.
    let mut forged = m.as_bytes().to_vec();
    forged[40] ^= 0x10;
    assert!(matches!(
        s.insert_encoded(&forged, &good[..]),
        Err(StoreError::Manifest(_))
    ));
    assert!(matches!(
        s.insert_encoded(&m.as_bytes()[..50], &good[..]),
        Err(StoreError::Manifest(_))
    ));
    // Nothing visible, nothing left behind.
    assert_eq!(s.stats().unwrap().bundles, 0);
    assert_eq!(walk(&dir.path().join("payloads")), 0);
    assert_eq!(walk(&dir.path().join("tmp")), 0);
    s.insert(&m, &good[..]).unwrap();
    assert!(s.fsck().unwrap().is_clean());
}

#[test]
fn second_open_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _s = open(dir.path());
    let err = Store::open(dir.path(), StoreConfig::default()).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
    assert!(err.to_string().contains("another skywave process"));
}

#[test]
fn unusable_directories_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let err = Store::open(&file, StoreConfig::default()).unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
    let garbage = dir.path().join("garbage");
    std::fs::create_dir(&garbage).unwrap();
    std::fs::write(garbage.join("store.db"), vec![0xa5u8; 8192]).unwrap();
    let err = Store::open(&garbage, StoreConfig::default()).unwrap_err();
    assert!(
        err.to_string().contains("not SQLite") || err.to_string().contains("store.db"),
        "{err}"
    );
}

#[test]
fn disk_full_is_a_clear_error_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(1);
    let first = data(50_000, 1);
    open(dir.path())
        .insert(&signed(&k, 1, &first), &first[..])
        .unwrap();
    let second = data(60_000, 2);
    let s = Store::open_with_hook(
        dir.path(),
        StoreConfig::default(),
        FailAfter::new(0, FailAfter::disk_full),
    );
    let mut s = s.unwrap();
    let err = s.insert(&signed(&k, 2, &second), &second[..]).unwrap_err();
    assert!(matches!(err, StoreError::DiskFull { .. }), "{err}");
    assert!(err.to_string().contains("disk"), "{err}");
    drop(s);
    let mut s = open(dir.path());
    assert_eq!(s.read_payload(&k.bundle_id()).unwrap(), first);
    assert!(s.fsck().unwrap().is_clean());
}

#[test]
fn quota_evicts_oldest_foreign_bundles_first() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        quota: Some(40_000),
        ..Default::default()
    };
    let mut s = Store::open(dir.path(), cfg).unwrap();
    // One authored here: never evicted.
    let own = s.create(&data(10_000, 9)[..], &opts()).unwrap();
    let ids: Vec<_> = (0..2)
        .map(|i| {
            let k = key(10 + i);
            let p = data(10_000, i as u8);
            s.insert(&signed(&k, 1, &p), &p[..]).unwrap();
            k.bundle_id()
        })
        .collect();
    let k = key(20);
    let p = data(15_000, 3);
    s.insert(&signed(&k, 1, &p), &p[..]).unwrap();
    assert!(
        s.get(&ids[0]).unwrap().is_none(),
        "oldest foreign bundle evicted"
    );
    assert!(s.get(&ids[1]).unwrap().is_some());
    assert!(s.get(&own.manifest.id()).unwrap().is_some());
    // Too big even after evicting everything evictable.
    let huge = data(39_000, 4);
    let err = s
        .insert(&signed(&key(21), 1, &huge), &huge[..])
        .unwrap_err();
    assert!(matches!(err, StoreError::QuotaExceeded { .. }), "{err}");
    assert!(
        s.get(&ids[1]).unwrap().is_some(),
        "a refused insert evicts nothing"
    );
    assert!(s.fsck().unwrap().is_clean());
}

#[test]
fn partial_transfer_resumes_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(1);
    let p = data(100_000, 7);
    let m = signed(&k, 3, &p);
    {
        let mut s = open(dir.path());
        s.begin_partial(&m).unwrap();
        for (a, b) in [(50_000, 60_000), (0, 1000), (1000, 20_000)] {
            assert!(matches!(
                s.write_piece(&k.bundle_id(), 3, a, &p[a as usize..b as usize])
                    .unwrap(),
                PieceOutcome::Stored { .. }
            ));
        }
        s.checkpoint().unwrap();
        // Received but not checkpointed: may be lost by a crash, never claimed.
        s.write_piece(&k.bundle_id(), 3, 70_000, &p[70_000..71_000])
            .unwrap();
        // Nothing half-received is listed.
        assert_eq!(s.list(&Query::default()).unwrap().len(), 0);
        assert!(s.get(&k.bundle_id()).unwrap().is_none());
    }
    let mut s = open(dir.path());
    let info = s.partial(&k.bundle_id()).unwrap().unwrap();
    let mut want = RangeSet::new();
    want.insert(0, 20_000);
    want.insert(50_000, 60_000);
    assert_eq!(info.held, want);
    assert!(matches!(
        s.write_piece(&k.bundle_id(), 3, 100, &p[100..200]).unwrap(),
        PieceOutcome::Duplicate
    ));
    for (a, b) in info.held.missing(100_000) {
        let out = s
            .write_piece(&k.bundle_id(), 3, a, &p[a as usize..b as usize])
            .unwrap();
        if b == 100_000 {
            assert!(matches!(out, PieceOutcome::Complete(_)), "{out:?}");
        }
    }
    assert_eq!(s.read_payload(&k.bundle_id()).unwrap(), p);
    assert!(s.partial(&k.bundle_id()).unwrap().is_none());
    assert!(s.fsck().unwrap().is_clean());
}

/// A large payload is hashed as it arrives (read back a step at a time while its start
/// is held), so completing it reads little back: in any order of pieces it still
/// verifies, a bad byte anywhere still fails, and a piece overlapping what was already
/// hashed cannot change those bytes.
#[test]
fn a_large_payload_hashed_as_it_arrives_verifies_in_any_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let p = data(5 << 20, 9);
    let pieces = |from: usize, to: usize| {
        (from..to)
            .step_by(1400)
            .map(move |a| (a, (a + 1400).min(to)))
            .collect::<Vec<_>>()
    };
    let feed = |s: &mut skywave_store::Store,
                k: &skywave_bundle::SecretKey,
                payload: &[u8],
                order: &[(usize, usize)]| {
        let mut last = None;
        for &(a, b) in order {
            last = Some(s.write_piece(&k.bundle_id(), 1, a as u64, &payload[a..b]));
        }
        last.unwrap()
    };
    // In order; then the second half first; then every other piece and the gaps after.
    let orders: Vec<Vec<(usize, usize)>> = vec![
        pieces(0, p.len()),
        [pieces(p.len() / 2, p.len()), pieces(0, p.len() / 2)].concat(),
        {
            let all = pieces(0, p.len());
            let (even, odd): (Vec<_>, Vec<_>) =
                all.iter().enumerate().partition(|(i, _)| i % 2 == 0);
            even.into_iter().chain(odd).map(|(_, r)| *r).collect()
        },
    ];
    for (n, order) in orders.iter().enumerate() {
        let k = key(100 + n as u64);
        s.begin_partial(&signed(&k, 1, &p)).unwrap();
        let out = feed(&mut s, &k, &p, order).unwrap();
        assert!(
            matches!(out, PieceOutcome::Complete(_)),
            "order {n}: {out:?}"
        );
        assert_eq!(s.read_payload(&k.bundle_id()).unwrap(), p, "order {n}");
    }
    // A bad byte early on (in the part hashed as it arrived) fails at completion.
    let k = key(110);
    s.begin_partial(&signed(&k, 1, &p)).unwrap();
    let mut bad = p.clone();
    bad[1000] ^= 1;
    let err = feed(&mut s, &k, &bad, &pieces(0, p.len())).unwrap_err();
    assert!(matches!(err, StoreError::HashMismatch { .. }), "{err}");
    // A piece overlapping hashed bytes with other bytes: those are not written again.
    let k = key(111);
    s.begin_partial(&signed(&k, 1, &p)).unwrap();
    feed(&mut s, &k, &p, &pieces(0, 3 << 20)).unwrap();
    // One piece from the start (hashed by now, a step being 1 MiB) into new bytes, its
    // first bytes other than the payload's.
    let mut overlap = p[..(3 << 20) + 1000].to_vec();
    overlap[..1000].fill(0xaa);
    s.write_piece(&k.bundle_id(), 1, 0, &overlap).unwrap();
    let out = feed(&mut s, &k, &p, &pieces((3 << 20) + 1000, p.len())).unwrap();
    assert!(matches!(out, PieceOutcome::Complete(_)), "{out:?}");
    assert_eq!(s.read_payload(&k.bundle_id()).unwrap(), p);
    assert!(s.fsck().unwrap().is_clean());
}

/// Counts writes of payload bytes; fails the next `fail` of them.
#[derive(Debug, Default)]
struct Writes {
    count: std::sync::atomic::AtomicU64,
    fail: std::sync::atomic::AtomicU64,
}

impl skywave_store::IoHook for Writes {
    fn before(&self, step: skywave_store::IoStep) -> std::io::Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        if step != skywave_store::IoStep::Write {
            return Ok(());
        }
        self.count.fetch_add(1, SeqCst);
        if self.fail.load(SeqCst) > 0 {
            self.fail.fetch_sub(1, SeqCst);
            return Err(FailAfter::disk_full());
        }
        Ok(())
    }
}

/// Consecutive pieces of a large payload are written to its file together, not one
/// call per piece; pieces whose write failed are no longer held (asked for again), and
/// the transfer then completes with the right bytes.
#[test]
fn consecutive_pieces_are_written_together_and_a_failed_write_is_not_held() {
    use std::sync::atomic::Ordering::SeqCst;
    let dir = tempfile::tempdir().unwrap();
    let hook = std::sync::Arc::new(Writes::default());
    let mut s = Store::open_with_hook(dir.path(), StoreConfig::default(), hook.clone()).unwrap();
    let k = key(7);
    let id = k.bundle_id();
    let p = data(1 << 20, 3);
    s.begin_partial(&signed(&k, 1, &p)).unwrap();
    let pieces: Vec<(usize, usize)> = (0..p.len() / 2)
        .step_by(1400)
        .map(|a| (a, (a + 1400).min(p.len() / 2)))
        .collect();
    for &(a, b) in &pieces {
        s.write_piece(&id, 1, a as u64, &p[a..b]).unwrap();
    }
    s.checkpoint().unwrap();
    let writes = hook.count.load(SeqCst);
    assert!(
        writes <= 10,
        "{} pieces took {writes} writes (64 KiB at a time: at most 9)",
        pieces.len()
    );
    // The next write fails: what it held back is not held.
    hook.fail.store(1, SeqCst);
    let (a, b) = (p.len() / 2, p.len() / 2 + 1400);
    s.write_piece(&id, 1, a as u64, &p[a..b]).unwrap();
    let err = s.checkpoint().unwrap_err();
    assert!(err.to_string().contains("write piece"), "{err}");
    let info = s.partial(&id).unwrap().unwrap();
    let mut want = RangeSet::new();
    want.insert(0, (p.len() / 2) as u64);
    assert_eq!(info.held, want, "a piece whose write failed is still held");
    // Sent again, and the rest: the payload is whole and right.
    let mut last = None;
    for a in (p.len() / 2..p.len()).step_by(1400) {
        let b = (a + 1400).min(p.len());
        last = Some(s.write_piece(&id, 1, a as u64, &p[a..b]).unwrap());
    }
    assert!(matches!(last, Some(PieceOutcome::Complete(_))), "{last:?}");
    assert_eq!(s.read_payload(&id).unwrap(), p);
}

/// A payload small enough for its row is received in memory: no file in `partial/`
/// and no recorded transfer while it arrives, listed and counted all the same, and
/// after a crash it is simply asked for again. Larger ones still get a file.
#[test]
fn small_partial_is_received_in_memory_and_large_one_in_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let partial_files = || {
        std::fs::read_dir(dir.path().join("partial"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let (small_key, large_key) = (key(1), key(2));
    let small = data(3000, 1);
    let large = data(5000, 2);
    {
        let mut s = open(dir.path());
        s.begin_partial(&signed(&small_key, 1, &small)).unwrap();
        s.write_piece(&small_key.bundle_id(), 1, 0, &small[..1000])
            .unwrap();
        s.checkpoint().unwrap();
        assert_eq!(partial_files(), 0, "a small payload needs no file");
        assert_eq!(s.stats().unwrap().partials, 1);
        let listed = s.partials().unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].held.covered(), 1000);

        s.begin_partial(&signed(&large_key, 1, &large)).unwrap();
        s.write_piece(&large_key.bundle_id(), 1, 0, &large[..1000])
            .unwrap();
        s.checkpoint().unwrap();
        assert_eq!(partial_files(), 1, "a payload past inline_max has its file");
        assert_eq!(s.stats().unwrap().partials, 2);
    }
    // After a restart only the recorded transfer is left; the small one starts over.
    let mut s = open(dir.path());
    assert_eq!(s.stats().unwrap().partials, 1);
    assert!(s.partial(&small_key.bundle_id()).unwrap().is_none());
    assert_eq!(
        s.partial(&large_key.bundle_id())
            .unwrap()
            .unwrap()
            .held
            .covered(),
        1000
    );
    let id = small_key.bundle_id();
    assert!(matches!(
        s.write_piece(&id, 1, 0, &small),
        Err(StoreError::NoPartial { .. })
    ));
    s.begin_partial(&signed(&small_key, 1, &small)).unwrap();
    s.write_piece(&id, 1, 2000, &small[2000..]).unwrap();
    assert!(matches!(
        s.write_piece(&id, 1, 2500, &small[2500..2600]).unwrap(),
        PieceOutcome::Duplicate
    ));
    assert!(matches!(
        s.write_piece(&id, 1, 0, &small[..2000]).unwrap(),
        PieceOutcome::Complete(_)
    ));
    assert_eq!(s.read_payload(&id).unwrap(), small);
    assert!(s.partial(&id).unwrap().is_none());
    // A bad small payload is dropped, as a bad large one is.
    let other = key(3);
    let p = data(500, 3);
    s.begin_partial(&signed(&other, 1, &p)).unwrap();
    let err = s
        .write_piece(&other.bundle_id(), 1, 0, &[0u8; 500])
        .unwrap_err();
    assert!(matches!(err, StoreError::HashMismatch { .. }), "{err}");
    assert!(s.partial(&other.bundle_id()).unwrap().is_none());
    assert_eq!(partial_files(), 1);
    assert!(s.fsck().unwrap().is_clean());
}

/// Receives bundle `n` (`len` bytes) whole.
fn receive(s: &mut Store, n: u64, len: usize) -> BundleId {
    let k = key(n);
    let p = data(len, n as u8);
    s.begin_partial(&signed(&k, 1, &p)).unwrap();
    let out = s.write_piece(&k.bundle_id(), 1, 0, &p).unwrap();
    assert!(matches!(out, PieceOutcome::Complete(_)), "{out:?}");
    k.bundle_id()
}

/// Bundles received between `begin_batch` and `end_batch` commit together: a crash
/// inside the batch loses them all (the caller has told nobody yet) and leaves a larger
/// one's transfer to resume; a local change first commits what is open.
#[test]
fn received_bundles_commit_together_at_the_end_of_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let big = data(10_000, 2);
    let big_id = key(2).bundle_id();
    {
        let mut s = open(dir.path());
        s.begin_partial(&signed(&key(2), 1, &big)).unwrap();
        s.write_piece(&big_id, 1, 0, &big[..4000]).unwrap();
        s.checkpoint().unwrap();
        s.begin_batch();
        let a = receive(&mut s, 1, 200);
        let out = s.write_piece(&big_id, 1, 4000, &big[4000..]).unwrap();
        assert!(matches!(out, PieceOutcome::Complete(_)));
        assert!(s.get(&a).unwrap().is_some() && s.get(&big_id).unwrap().is_some());
        // Dropped without end_batch: the process died.
    }
    {
        let mut s = open(dir.path());
        assert!(s.get(&key(1).bundle_id()).unwrap().is_none());
        assert!(s.get(&big_id).unwrap().is_none());
        // The larger transfer, begun before the batch, resumes from its checkpoint.
        let resumed = s.partial(&big_id).unwrap().expect("still recorded");
        assert_eq!(resumed.held.covered(), 4000);
        s.abandon_partial(&big_id).unwrap();
        s.begin_batch();
        receive(&mut s, 1, 200);
        receive(&mut s, 2, 10_000);
        assert!(s.end_batch().is_empty());
        s.begin_batch();
        receive(&mut s, 3, 300);
        s.insert(&signed(&key(4), 1, &data(100, 4)), &data(100, 4)[..])
            .unwrap();
        // Dies again inside the second batch, after the local insert.
    }
    let mut s = open(dir.path());
    for n in 1..=4 {
        assert!(s.get(&key(n).bundle_id()).unwrap().is_some(), "bundle {n}");
    }
    assert_eq!(s.stats().unwrap().partials, 0);
    assert!(s.fsck().unwrap().is_clean());
}

/// A batch whose commit fails (the disk filled) is rolled back, and `end_batch` names
/// its bundles so that the caller can forget them.
#[test]
fn a_batch_whose_commit_fails_is_rolled_back_and_named() {
    let run = |hook: std::sync::Arc<FailAfter>| {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open_with_hook(dir.path(), StoreConfig::default(), hook).unwrap();
        s.begin_batch();
        let ids = vec![receive(&mut s, 1, 200), receive(&mut s, 2, 300)];
        let lost = s.end_batch();
        (dir, s, ids, lost)
    };
    let counter = FailAfter::new(u64::MAX, FailAfter::disk_full);
    let (_dir, _s, _, lost) = run(counter.clone());
    assert!(lost.is_empty());
    let steps = u64::MAX - counter.remaining();
    // The last step is the batch's commit.
    let (dir, s, ids, lost) = run(FailAfter::new(steps - 1, FailAfter::disk_full));
    assert_eq!(lost, ids);
    for id in &ids {
        assert!(s.get(id).unwrap().is_none());
    }
    assert_eq!(s.stats().unwrap().bundles, 0);
    drop(s);
    let mut s = open(dir.path());
    assert_eq!(s.stats().unwrap().bundles, 0);
    assert!(s.fsck().unwrap().is_clean());
}

#[test]
fn partial_with_bad_bytes_fails_verification() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let k = key(1);
    let p = data(10_000, 7);
    let m = signed(&k, 1, &p);
    s.begin_partial(&m).unwrap();
    let err = s
        .write_piece(&k.bundle_id(), 1, 9000, &[0u8; 2000])
        .unwrap_err();
    assert!(matches!(err, StoreError::PieceOutOfRange { .. }), "{err}");
    assert!(matches!(
        s.write_piece(&k.bundle_id(), 2, 0, &p[..10]),
        Err(StoreError::NoPartial { .. })
    ));
    s.write_piece(&k.bundle_id(), 1, 0, &p[..5000]).unwrap();
    let mut bad = p[5000..].to_vec();
    bad[0] ^= 0xff;
    let err = s.write_piece(&k.bundle_id(), 1, 5000, &bad).unwrap_err();
    assert!(matches!(err, StoreError::HashMismatch { .. }), "{err}");
    assert!(s.get(&k.bundle_id()).unwrap().is_none());
    assert!(
        s.partial(&k.bundle_id()).unwrap().is_none(),
        "bad transfer is dropped"
    );
    // A fresh attempt with the right bytes succeeds.
    s.begin_partial(&m).unwrap();
    assert!(matches!(
        s.write_piece(&k.bundle_id(), 1, 0, &p).unwrap(),
        PieceOutcome::Complete(_)
    ));
}

#[test]
fn journal_append_and_tail_transfer() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = open(a_dir.path());
    let mut b = open(b_dir.path());
    let mut o = opts();
    o.journal = true;
    let first = data(5000, 1);
    let j = a.create(&first[..], &o).unwrap();
    let id = j.manifest.id();
    assert_eq!(j.manifest.version(), 5000);
    // B gets the first version whole.
    b.insert(&j.manifest, &first[..]).unwrap();
    // A appends twice.
    let more = data(3000, 2);
    a.append(&id, &more[..2000], DATE + 1).unwrap();
    let v = a.append(&id, &more[2000..], DATE + 2).unwrap();
    assert_eq!(v.manifest.version(), 8000);
    let full = [first.clone(), more.clone()].concat();
    assert_eq!(a.read_payload(&id).unwrap(), full);
    assert_eq!(v.manifest.manifest().hash, hash_payload(&full));
    // B fetches only the tail.
    let info = b.begin_partial(&v.manifest).unwrap();
    assert!(info.held.contains(0, 5000));
    assert_eq!(info.held.missing(8000), vec![(5000, 8000)]);
    let out = b.write_piece(&id, 8000, 5000, &full[5000..]).unwrap();
    assert!(matches!(out, PieceOutcome::Complete(_)));
    assert_eq!(b.read_payload(&id).unwrap(), full);
    // A forked tail is refused and the held prefix survives.
    let k = a.keyring().get(&id).unwrap().unwrap();
    let forked = [full.clone(), data(100, 5)].concat();
    let mut bogus = forked.clone();
    bogus[100] ^= 1;
    let err = b.insert(&journal(&k, &bogus), &bogus[..]).unwrap_err();
    assert!(matches!(err, StoreError::JournalFork { .. }), "{err}");
    assert_eq!(b.read_payload(&id).unwrap(), full);
    // Appending to someone else's bundle or a non-journal is refused.
    assert!(matches!(
        b.append(&id, &b"x"[..], DATE),
        Err(StoreError::NoKey(_))
    ));
    let plain = a.create(&b"plain"[..], &opts()).unwrap();
    assert!(matches!(
        a.append(&plain.manifest.id(), &b"x"[..], DATE),
        Err(StoreError::NotJournal(_))
    ));
    assert!(a.fsck().unwrap().is_clean());
    assert!(b.fsck().unwrap().is_clean());
}

#[test]
fn fsck_quarantines_damage_and_removes_orphans() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let k = key(1);
    let p = data(50_000, 1);
    s.insert(&signed(&k, 1, &p), &p[..]).unwrap();
    let k2 = key(2);
    let p2 = data(50_000, 2);
    s.insert(&signed(&k2, 1, &p2), &p2[..]).unwrap();
    // Flip a byte in one payload file; drop an orphan beside it.
    let h = hash_payload(&p).to_hex();
    let path = dir.path().join("payloads").join(&h[..2]).join(&h);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[10] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    std::fs::write(
        dir.path().join("payloads").join(&h[..2]).join("deadbeef"),
        b"orphan",
    )
    .unwrap();
    let r = s.fsck().unwrap();
    assert_eq!(r.bundles_checked, 2);
    assert_eq!(r.quarantined.len(), 1);
    assert_eq!(r.quarantined[0].0, k.bundle_id().to_hex());
    assert!(r.orphans_removed >= 2, "{r:?}");
    assert!(s.get(&k.bundle_id()).unwrap().is_none());
    assert_eq!(s.read_payload(&k2.bundle_id()).unwrap(), p2);
    assert!(
        dir.path()
            .join("quarantine")
            .join(format!("{}.manifest", k.bundle_id()))
            .exists()
    );
    assert!(s.fsck().unwrap().is_clean());
}

/// fsck checks signatures a batch at a time: one forged among many, in any batch, is the
/// only one quarantined.
#[test]
fn fsck_finds_one_forged_signature_among_many() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let ids: Vec<_> = (1..=150)
        .map(|n| {
            let p = data(20, n as u8);
            s.insert(&signed(&key(n), 1, &p), &p[..]).unwrap();
            key(n).bundle_id()
        })
        .collect();
    drop(s);
    let forged = ids[99];
    {
        let c = rusqlite::Connection::open(dir.path().join("store.db")).unwrap();
        let mut m: Vec<u8> = c
            .query_row(
                "SELECT manifest FROM bundles WHERE id = ?1",
                [forged.as_bytes().as_slice()],
                |r| r.get(0),
            )
            .unwrap();
        let last = m.len() - 1;
        m[last] ^= 1;
        c.execute(
            "UPDATE bundles SET manifest = ?1 WHERE id = ?2",
            (m, forged.as_bytes().as_slice()),
        )
        .unwrap();
    }
    let mut s = open(dir.path());
    let r = s.fsck().unwrap();
    assert_eq!(r.bundles_checked, 150);
    let quarantined: Vec<_> = r.quarantined.iter().map(|q| q.0.clone()).collect();
    assert_eq!(quarantined, vec![forged.to_hex()], "{r:?}");
    assert!(s.get(&forged).unwrap().is_none());
    assert!(s.get(&ids[98]).unwrap().is_some() && s.get(&ids[100]).unwrap().is_some());
    assert!(s.fsck().unwrap().is_clean());
}

#[test]
fn keys_are_private_files() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let b = s
        .create(
            &b"hello"[..],
            &NewBundle {
                sign_sender: true,
                ..opts()
            },
        )
        .unwrap();
    let node_id = s.node_key().identity();
    assert!(b.own);
    assert_eq!(b.manifest.manifest().sender, Some(node_id));
    let node = std::fs::metadata(dir.path().join("node.key")).unwrap();
    assert_eq!(node.permissions().mode() & 0o777, 0o600);
    let kf = dir
        .path()
        .join("keyring")
        .join(format!("{}.key", b.manifest.id()));
    assert_eq!(
        std::fs::metadata(kf).unwrap().permissions().mode() & 0o777,
        0o600
    );
    drop(s);
    let s = open(dir.path());
    assert_eq!(
        s.node_key().identity(),
        node_id,
        "identity is stable across restarts"
    );
    assert!(s.keyring().get(&b.manifest.id()).unwrap().is_some());
}

#[test]
fn tokens_are_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let p = data(10, 1);
    let a = s.insert(&signed(&key(1), 1, &p), &p[..]).unwrap();
    let b = s.insert(&signed(&key(2), 1, &p), &p[..]).unwrap();
    assert!(s.remove(&key(2).bundle_id()).unwrap());
    drop(s);
    let mut s = open(dir.path());
    let c = s.insert(&signed(&key(3), 1, &p), &p[..]).unwrap();
    assert!(
        a.token < b.token && b.token < c.token,
        "{} {} {}",
        a.token,
        b.token,
        c.token
    );
}

#[test]
fn journal_prefix_published_while_a_newer_version_transfers() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = open(a_dir.path());
    let mut b = open(b_dir.path());
    let mut o = opts();
    o.journal = true;
    let first = data(3000, 1);
    let j = a.create(&first[..], &o).unwrap();
    let id = j.manifest.id();
    b.insert(&j.manifest, &first[..]).unwrap();
    let more = data(4000, 2);
    let v5 = a.append(&id, &more[..2000], DATE + 1).unwrap().manifest;
    let v7 = a.append(&id, &more[2000..], DATE + 2).unwrap().manifest;
    let full = a.read_payload(&id).unwrap();
    // B receives version 7000; only version 5000's bytes are in so far.
    b.begin_partial(&v7).unwrap();
    b.write_piece(&id, 7000, 3000, &full[3000..4000]).unwrap();
    // Not yet: 4000..5000 is missing.
    assert!(matches!(
        b.commit_journal_prefix(&v5),
        Err(StoreError::NoPartial { .. })
    ));
    b.write_piece(&id, 7000, 4000, &full[4000..5000]).unwrap();
    b.write_piece(&id, 7000, 6000, &full[6000..7000]).unwrap();
    let s = b.commit_journal_prefix(&v5).unwrap();
    assert_eq!(s.manifest.version(), 5000);
    assert_eq!(b.read_payload(&id).unwrap(), full[..5000]);
    // Published once; the transfer of 7000 carries on and completes.
    assert!(matches!(
        b.commit_journal_prefix(&v5),
        Err(StoreError::Stale { .. })
    ));
    assert!(b.partial(&id).unwrap().unwrap().held.contains(0, 5000));
    let out = b.write_piece(&id, 7000, 5000, &full[5000..6000]).unwrap();
    assert!(matches!(out, PieceOutcome::Complete(_)));
    assert_eq!(b.read_payload(&id).unwrap(), full);
    assert!(b.fsck().unwrap().is_clean());
}

#[test]
fn journal_prefix_that_does_not_verify_is_refused() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = open(a_dir.path());
    let mut b = open(b_dir.path());
    let mut o = opts();
    o.journal = true;
    let j = a.create(&data(1000, 1)[..], &o).unwrap();
    let id = j.manifest.id();
    let v2 = a
        .append(&id, &data(1000, 2)[..], DATE + 1)
        .unwrap()
        .manifest;
    let v3 = a
        .append(&id, &data(1000, 3)[..], DATE + 2)
        .unwrap()
        .manifest;
    let mut full = a.read_payload(&id).unwrap();
    full[1500] ^= 1;
    b.begin_partial(&v3).unwrap();
    b.write_piece(&id, 3000, 0, &full[..2000]).unwrap();
    let err = b.commit_journal_prefix(&v2).unwrap_err();
    assert!(matches!(err, StoreError::HashMismatch { .. }), "{err}");
    assert!(b.get(&id).unwrap().is_none());
    assert!(b.partial(&id).unwrap().is_none(), "bad transfer is dropped");
    assert!(b.fsck().unwrap().is_clean());
}

/// A manifest claiming `length` bytes (whose payload nobody holds).
fn claiming(k: &skywave_bundle::SecretKey, length: u64) -> skywave_bundle::SignedManifest {
    skywave_bundle::Manifest::new(k.bundle_id(), 1, length, hash_payload(b"x"), DATE)
        .sign(k)
        .unwrap()
}

#[test]
fn a_transfer_that_can_never_fit_is_refused_before_any_byte() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        quota: Some(50_000_000),
        ..Default::default()
    };
    let mut s = Store::open(dir.path(), cfg).unwrap();
    // Three bundles claiming a terabyte each, under a 50 MB quota.
    for i in 0..3 {
        let err = s
            .begin_partial(&claiming(&key(30 + i), 1 << 40))
            .unwrap_err();
        assert!(matches!(err, StoreError::NoRoom { .. }), "{err}");
        assert!(err.to_string().contains("quota of 50000000"), "{err}");
    }
    let files = std::fs::read_dir(dir.path().join("partial"))
        .unwrap()
        .count();
    assert_eq!(files, 0, "a refused transfer left a file");
    assert!(s.partial(&key(30).bundle_id()).unwrap().is_none());
    // Without a quota, a claim past the disk's free space is refused likewise.
    drop(s);
    let mut s = open(dir.path());
    let err = s
        .begin_partial(&claiming(&key(40), u64::MAX / 4))
        .unwrap_err();
    assert!(err.to_string().contains("free on the disk"), "{err}");
    // One that fits is taken.
    let p = data(10_000, 1);
    s.begin_partial(&signed(&key(41), 1, &p)).unwrap();
    assert!(s.fsck().unwrap().is_clean());
}

#[test]
fn a_received_bundle_that_cannot_be_stored_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        quota: Some(40_000),
        inline_max: 1000,
        ..Default::default()
    };
    let mut s = Store::open(dir.path(), cfg).unwrap();
    // Authored here, so never evicted: 30 KB of the 40 KB quota.
    s.create(&data(30_000, 9)[..], &opts()).unwrap();
    let files = |d: &str| {
        let p = dir.path().join(d);
        if p.exists() { walk(&p) } else { 0 }
    };
    let before = files("payloads");
    // 15 KB fits the quota on its own, so the transfer begins; at commit it cannot fit.
    let k = key(50);
    let p = data(15_000, 5);
    s.begin_partial(&signed(&k, 1, &p)).unwrap();
    s.write_piece(&k.bundle_id(), 1, 0, &p[..8000]).unwrap();
    let err = s
        .write_piece(&k.bundle_id(), 1, 8000, &p[8000..])
        .unwrap_err();
    assert!(matches!(err, StoreError::QuotaExceeded { .. }), "{err}");
    // Freed: no transfer, no partial file, no second name for the payload.
    assert!(s.partial(&k.bundle_id()).unwrap().is_none());
    assert_eq!(files("partial"), 0, "partial bytes left behind");
    assert_eq!(files("payloads"), before, "a payload link left behind");
    assert!(s.get(&k.bundle_id()).unwrap().is_none());
    assert!(s.fsck().unwrap().is_clean());
    drop(s);
    let mut s = open(dir.path());
    assert!(
        s.partial(&k.bundle_id()).unwrap().is_none(),
        "back after restart"
    );
}

/// A bundle authored here but refused (over the quota) leaves no payload, no temporary
/// file and no key; an upload handed over as a file is moved into place, not copied.
#[test]
fn a_refused_upload_leaves_nothing_and_an_accepted_one_is_moved_not_copied() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        quota: Some(100_000),
        inline_max: 1000,
        ..Default::default()
    };
    let mut s = Store::open(dir.path(), cfg).unwrap();
    let files = |d: &str| {
        let p = dir.path().join(d);
        if p.exists() { walk(&p) } else { 0 }
    };
    s.create(&data(60_000, 1)[..], &opts()).unwrap();
    let (payloads, keys) = (files("payloads"), files("keyring"));
    assert_eq!((payloads, keys), (1, 1));
    // Fits the quota alone, not beside what is held (authored here, so not evictable).
    let err = s.create(&data(50_000, 2)[..], &opts()).unwrap_err();
    assert!(matches!(err, StoreError::QuotaExceeded { .. }), "{err}");
    assert_eq!(files("payloads"), payloads, "the refused payload stayed");
    assert_eq!(files("keyring"), keys, "the refused bundle's key stayed");
    assert_eq!(files("tmp"), 0);

    // The same through a file handed over: refused, and the file is gone too.
    let upload = dir.path().join(".upload-1");
    std::fs::write(&upload, data(50_000, 3)).unwrap();
    let err = s
        .create_from_file(HashedFile::hash(&upload).unwrap(), &opts())
        .unwrap_err();
    assert!(matches!(err, StoreError::QuotaExceeded { .. }), "{err}");
    assert!(!upload.exists());
    assert_eq!(files("payloads"), payloads);
    assert_eq!(files("keyring"), keys);
    // Larger than the quota itself: refused before it is read.
    std::fs::write(&upload, data(150_000, 4)).unwrap();
    let err = s
        .create_from_file(HashedFile::hash(&upload).unwrap(), &opts())
        .unwrap_err();
    assert!(matches!(err, StoreError::QuotaExceeded { .. }), "{err}");
    assert!(!upload.exists());

    // Accepted: the very file (same inode) becomes the stored payload.
    let p = data(30_000, 5);
    std::fs::write(&upload, &p).unwrap();
    let ino = std::fs::metadata(&upload).unwrap().ino();
    let b = s
        .create_from_file(HashedFile::hash(&upload).unwrap(), &opts())
        .unwrap();
    assert!(!upload.exists());
    let id = b.manifest.manifest().id;
    assert_eq!(s.read_payload(&id).unwrap(), p);
    let stored = walk_paths(&dir.path().join("payloads"));
    assert!(
        stored
            .iter()
            .any(|f| std::fs::metadata(f).unwrap().ino() == ino),
        "the upload was copied, not moved"
    );
    assert!(s.keyring().contains(&id));
    assert_eq!(files("keyring"), keys + 1);
    // Small ones live in the database: the file is read and removed.
    std::fs::write(&upload, data(500, 6)).unwrap();
    let small = s
        .create_from_file(HashedFile::hash(&upload).unwrap(), &opts())
        .unwrap();
    assert!(!upload.exists());
    assert_eq!(
        s.read_payload(&small.manifest.manifest().id).unwrap(),
        data(500, 6)
    );
    assert!(s.fsck().unwrap().is_clean());
}

/// A bundle sealed to another node: only sealed bytes are stored (inline and in a
/// payload file), a relay takes them like any bundle, and only the recipient opens them.
#[test]
fn sealed_bundles_are_stored_and_carried_sealed() {
    use skywave_bundle::sealed::{self, SEALED_V1};
    let (da, dr, db) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let mut a = open(da.path());
    let mut relay = open(dr.path());
    let b_key = open(db.path()).node_key().clone();
    // Both sides of the inline limit (4096 bytes).
    for len in [100, 200_000] {
        let plain = data(len, 3);
        let to = NewBundle {
            recipient: Some(b_key.identity()),
            seal: true,
            ..opts()
        };
        let made = a.create(&plain[..], &to).unwrap();
        let m = made.manifest.manifest();
        assert_eq!(m.sealed, Some(SEALED_V1));
        assert_eq!(m.recipient, Some(b_key.identity()));
        assert_eq!(m.length, sealed::sealed_len(len as u64));
        let held = a.read_payload(&m.id).unwrap();
        assert_eq!(held.len() as u64, m.length);
        let sample = &plain[len / 2..len / 2 + 32];
        assert!(
            !held.windows(32).any(|w| w == sample),
            "no plaintext stored"
        );
        // The author's own node cannot read it back.
        assert_eq!(
            sealed::open(&held, a.node_key(), &m.id),
            Err(skywave_bundle::SealError::NotForThisKey)
        );
        // A relay verifies and keeps it like any bundle.
        let got = relay
            .insert_encoded(made.manifest.as_bytes(), &held[..])
            .unwrap();
        assert_eq!(got.manifest.manifest().sealed, Some(SEALED_V1));
        let carried = relay.read_payload(&m.id).unwrap();
        assert_eq!(carried, held);
        assert_eq!(
            sealed::open(&carried, relay.node_key(), &m.id),
            Err(skywave_bundle::SealError::NotForThisKey)
        );
        // The recipient's key, read from its directory, opens it.
        let key = skywave_store::read_node_key(db.path()).unwrap();
        assert_eq!(sealed::open(&carried, &key, &m.id).unwrap(), plain);
    }
}

#[test]
fn sealing_needs_a_recipient_and_no_journal() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let to = s.node_key().identity();
    let cases = [
        (
            NewBundle {
                seal: true,
                ..opts()
            },
            "needs a recipient",
        ),
        (
            NewBundle {
                seal: true,
                recipient: Some(to),
                journal: true,
                ..opts()
            },
            "journal cannot be sealed",
        ),
        (
            NewBundle {
                seal: true,
                recipient: Some(skywave_bundle::Identity([0; 32])),
                ..opts()
            },
            "not a usable node key",
        ),
    ];
    for (o, why) in cases {
        let err = s.create(&b"secret"[..], &o).unwrap_err().to_string();
        assert!(err.contains(why), "{err}");
    }
    assert_eq!(s.list(&Default::default()).unwrap().len(), 0);
    assert_eq!(walk(&dir.path().join("tmp")), 0, "nothing left behind");
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn payload_files(dir: &std::path::Path) -> usize {
    let p = dir.join("payloads");
    if p.exists() { walk(&p) } else { 0 }
}

#[test]
fn a_deleted_bundle_leaves_a_tombstone_that_frees_its_payload_wherever_it_arrives() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut a, mut b) = (open(da.path()), open(db.path()));
    let big = data(300_000, 7);
    let mut o = opts();
    o.name = Some("report.pdf".into());
    let made = a.create(&big[..], &o).unwrap();
    let id = made.manifest.id();
    b.insert(&made.manifest, &big[..]).unwrap();
    assert_eq!((payload_files(da.path()), payload_files(db.path())), (1, 1));

    // Only the author can delete; the relay is told so.
    assert!(matches!(b.delete(&id, DATE + 5), Err(StoreError::NoKey(_))));
    let tomb = a.delete(&id, DATE + 5).unwrap();
    let t = tomb.manifest.manifest();
    assert!(t.deleted);
    assert_eq!((t.version, t.length), (2, 0));
    assert_eq!(
        t.name.as_deref(),
        Some("report.pdf"),
        "says what was deleted"
    );
    assert_eq!(payload_files(da.path()), 0, "the author's payload is freed");
    // Deleting again changes nothing.
    assert_eq!(a.delete(&id, DATE + 6).unwrap().manifest.version(), 2);

    // The tombstone replaces the bundle on a node it reaches, freeing the payload there.
    b.insert(&tomb.manifest, &[][..]).unwrap();
    assert_eq!(payload_files(db.path()), 0);
    assert!(
        b.list(&Query::default()).unwrap().is_empty(),
        "hidden from listings"
    );
    let all = b
        .list(&Query {
            include_deleted: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(all.len(), 1);
    // The deleted version cannot come back.
    assert!(matches!(
        b.insert(&made.manifest, &big[..]),
        Err(StoreError::Stale { .. })
    ));
    // And a tombstone is never evicted: it is what keeps the old version away.
    assert_eq!(b.stats().unwrap().payload_bytes, 0);
}

#[test]
fn a_deleted_journal_loses_its_file_and_replace_publishes_a_newer_version() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let mut o = opts();
    o.journal = true;
    let j = s.create(&data(5000, 1)[..], &o).unwrap().manifest.id();
    assert!(dir.path().join("journals").read_dir().unwrap().count() == 1);
    s.delete(&j, DATE).unwrap();
    assert_eq!(dir.path().join("journals").read_dir().unwrap().count(), 0);

    let first = s.create(&data(100, 2)[..], &opts()).unwrap();
    let id = first.manifest.id();
    let second = s.replace(&id, &data(200, 3)[..], &opts()).unwrap();
    assert_eq!(second.manifest.version(), first.manifest.version() + 1);
    assert_eq!(s.read_payload(&id).unwrap(), data(200, 3));
    // A relay holding the first version takes the second in its place.
    let other = tempfile::tempdir().unwrap();
    let mut r = open(other.path());
    r.insert(&first.manifest, &data(100, 2)[..]).unwrap();
    r.insert(&second.manifest, &data(200, 3)[..]).unwrap();
    assert_eq!(r.read_payload(&id).unwrap(), data(200, 3));
    assert!(matches!(
        r.replace(&id, &data(1, 1)[..], &opts()),
        Err(StoreError::NoKey(_))
    ));
}

#[test]
fn expired_bundles_are_refused_swept_and_evicted_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let now = unix_now();
    // Expired on arrival: refused before anything is written.
    let k = key(40);
    let mut m = skywave_bundle::Manifest::new(k.bundle_id(), 1, 3, hash_payload(b"old"), DATE);
    m.expires = Some(DATE + 60);
    let m = m.sign(&k).unwrap();
    assert!(matches!(
        s.insert(&m, &b"old"[..]),
        Err(StoreError::Expired { .. })
    ));
    assert!(matches!(
        s.begin_partial(&m),
        Err(StoreError::Expired { .. })
    ));
    // Authoring with an expiry: kept until then, swept at it, payload file and all.
    let mut o = opts();
    o.date = now;
    o.expires = Some(now + 3600);
    let big = s.create(&data(200_000, 4)[..], &o).unwrap().manifest.id();
    let keep = s.create(&data(10, 5)[..], &opts()).unwrap().manifest.id();
    assert_eq!(s.next_expiry().unwrap(), Some(now + 3600));
    assert!(s.expire(now + 3599).unwrap().is_empty());
    assert_eq!(s.expire(now + 3600).unwrap(), vec![big]);
    assert!(s.get(&big).unwrap().is_none());
    assert!(s.get(&keep).unwrap().is_some());
    assert_eq!(payload_files(dir.path()), 0);
    assert_eq!(s.next_expiry().unwrap(), None);
}

#[test]
fn the_same_file_under_the_same_name_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let mut o = opts();
    o.name = Some("a.txt".into());
    let made = s.create(&b"hello"[..], &o).unwrap();
    let h = hash_payload(b"hello");
    let found = s.find_own(Some("a.txt"), 5, || Ok(h)).unwrap().unwrap();
    assert_eq!(found.manifest.id(), made.manifest.id());
    // Same name and length, other content.
    let other = hash_payload(b"world");
    assert!(
        s.find_own(Some("a.txt"), 5, || Ok(other))
            .unwrap()
            .is_none()
    );
    // No candidate: the content is never hashed.
    let never = || -> skywave_store::Result<_> { panic!("hashed without a candidate") };
    assert!(s.find_own(Some("a.txt"), 6, never).unwrap().is_none());
    assert!(s.find_own(Some("b.txt"), 5, never).unwrap().is_none());
    assert!(s.find_own(None, 5, never).unwrap().is_none());
    s.delete(&made.manifest.id(), DATE).unwrap();
    assert!(s.find_own(Some("a.txt"), 5, never).unwrap().is_none());
}

#[test]
fn a_version_1_store_is_upgraded_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let mut s = open(dir.path());
        s.create(&data(50, 1)[..], &opts()).unwrap().manifest.id()
    };
    // Make it look like a store written before tombstones and expiry.
    {
        let c = rusqlite::Connection::open(dir.path().join("store.db")).unwrap();
        c.execute_batch(
            "DROP TRIGGER totals_insert;
             DROP TRIGGER totals_delete;
             DROP TRIGGER totals_update;
             DROP TABLE totals;
             DROP INDEX bundles_expires;
             ALTER TABLE bundles DROP COLUMN expires;
             ALTER TABLE bundles DROP COLUMN deleted;
             UPDATE meta SET value = 1 WHERE key = 'schema_version';",
        )
        .unwrap();
    }
    let mut s = open(dir.path());
    assert_eq!(s.read_payload(&id).unwrap(), data(50, 1));
    assert_eq!(s.list(&Query::default()).unwrap().len(), 1);
    assert_eq!(s.stats().unwrap().bundles, 1, "totals seeded from the rows");
    assert_eq!(s.stats().unwrap().payload_bytes, 50);
    s.delete(&id, DATE).unwrap();
    assert!(s.list(&Query::default()).unwrap().is_empty());
}

/// The totals kept by triggers, against a sum over every row.
fn check_totals(s: &Store) {
    let all = s
        .list(&Query {
            include_deleted: true,
            ..Default::default()
        })
        .unwrap();
    let st = s.stats().unwrap();
    let live = all
        .iter()
        .filter(|b| !b.manifest.manifest().deleted)
        .count() as u64;
    let payload: u64 = all.iter().map(|b| b.manifest.manifest().length).sum();
    let manifests: u64 = all.iter().map(|b| b.manifest.as_bytes().len() as u64).sum();
    assert_eq!(
        (st.bundles, st.payload_bytes, st.manifest_bytes),
        (live, payload, manifests)
    );
}

#[test]
fn totals_follow_every_kind_of_write_without_summing_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(
        dir.path(),
        StoreConfig {
            quota: Some(40_000),
            ..Default::default()
        },
    )
    .unwrap();
    check_totals(&s);
    let own = s.create(&data(5000, 1)[..], &opts()).unwrap().manifest.id();
    check_totals(&s);
    // Foreign bundles, one replaced by a newer version, then eviction for the quota.
    for i in 0..6u64 {
        let d = data(6000, i as u8);
        s.insert(&signed(&key(200 + i), 1, &d), &d[..]).unwrap();
        check_totals(&s);
    }
    let d = data(7000, 9);
    s.insert(&signed(&key(200), 2, &d), &d[..]).ok();
    check_totals(&s);
    let mut o = opts();
    o.journal = true;
    let j = s.create(&data(300, 3)[..], &o).unwrap().manifest.id();
    s.append(&j, &data(200, 4)[..], DATE).unwrap();
    check_totals(&s);
    s.replace(&own, &data(100, 5)[..], &opts()).unwrap();
    check_totals(&s);
    s.delete(&own, DATE).unwrap();
    check_totals(&s);
    s.delete(&j, DATE).unwrap();
    check_totals(&s);
    assert!(s.remove(&key(203).bundle_id()).unwrap());
    check_totals(&s);
    drop(s);
    check_totals(&open(dir.path()));
}

/// The inventory the protocol reconciles from is the listing with tombstones, read from
/// the columns: the same ids, versions and lengths, in the same order, and only the sealed
/// ones in `sealed_versions`.
#[test]
fn inventory_and_sealed_versions_agree_with_the_full_listing() {
    let d = tempfile::tempdir().unwrap();
    let mut s = open(d.path());
    let mut made = Vec::new();
    for i in 0..20u8 {
        made.push(
            s.create(&data(100 + usize::from(i) * 37, i)[..], &opts())
                .unwrap(),
        );
    }
    // A tombstone (version 2, length 0) and a sealed bundle among them.
    s.delete(&made[3].manifest.id(), DATE + 5).unwrap();
    let db = tempfile::tempdir().unwrap();
    let to = NewBundle {
        recipient: Some(open(db.path()).node_key().identity()),
        seal: true,
        ..opts()
    };
    let sealed = s.create(&data(500, 99)[..], &to).unwrap();

    let want: Vec<(skywave_bundle::BundleId, u64, u64)> = s
        .list(&Query {
            include_deleted: true,
            ..Default::default()
        })
        .unwrap()
        .iter()
        .map(|b| {
            let m = b.manifest.manifest();
            (b.manifest.id(), m.version, m.length)
        })
        .collect();
    assert_eq!(want.len(), 21);
    assert_eq!(s.inventory().unwrap(), want);
    assert!(
        want.contains(&(made[3].manifest.id(), 2, 0)),
        "the tombstone is listed"
    );
    assert_eq!(
        s.sealed_versions().unwrap(),
        vec![(sealed.manifest.id(), sealed.manifest.version())]
    );
}
