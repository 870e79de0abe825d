//! Store benchmarks. Not timed tests: they print figures.
//!
//! ```sh
//! cargo bench -p skywave-store --bench store -- insert     # 10,000 x 100 B bundles
//! cargo bench -p skywave-store --bench store -- million    # 1,000,000 small bundles
//! cargo bench -p skywave-store --bench store -- gib        # add and get of 1 GiB
//! ```
//! Set `SKYWAVE_BENCH_DIR` to put the store on a particular disk (default: a temp dir).

use std::io::Read;
use std::time::Instant;

use skywave_bundle::{Manifest, SecretKey, hash_payload};
use skywave_store::{NewBundle, Store, StoreConfig};

const DATE: u64 = 1_795_305_600;

fn key(n: u64) -> SecretKey {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&n.to_le_bytes());
    seed[8] = 0xbe;
    SecretKey::from_bytes(&seed)
}

/// Encoded manifests and payloads of `n` distinct 100-byte bundles, built on all cores.
fn bundles(start: u64, n: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let threads = std::thread::available_parallelism().map_or(2, |p| p.get()) as u64;
    let per = n.div_ceil(threads);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::spawn(move || {
                let lo = start + t * per;
                let hi = (lo + per).min(start + n);
                (lo..hi)
                    .map(|i| {
                        let k = key(i);
                        let payload: Vec<u8> = (0..100).map(|j| (i as u8) ^ j).collect();
                        let mut m =
                            Manifest::new(k.bundle_id(), 1, 100, hash_payload(&payload), DATE);
                        m.service = Some("file".into());
                        m.name = Some(format!("obs-{i:08}.txt"));
                        (m.sign(&k).unwrap().as_bytes().to_vec(), payload)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect()
}

fn dir() -> tempfile::TempDir {
    match std::env::var_os("SKYWAVE_BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d).unwrap(),
        None => tempfile::tempdir().unwrap(),
    }
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn insert(store: &mut Store, batch: &[(Vec<u8>, Vec<u8>)]) -> f64 {
    let t = Instant::now();
    for (m, p) in batch {
        store.insert_encoded(m, &p[..]).unwrap();
    }
    batch.len() as f64 / t.elapsed().as_secs_f64()
}

fn bench_insert() {
    let d = dir();
    let mut s = Store::open(d.path(), StoreConfig::default()).unwrap();
    let b = bundles(0, 10_000);
    let t = Instant::now();
    let decoded: Vec<_> = b
        .iter()
        .map(|(m, _)| skywave_bundle::SignedManifest::decode(m).unwrap())
        .collect();
    let verify = b.len() as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    for (m, (_, p)) in decoded.iter().zip(&b) {
        s.insert(m, &p[..]).unwrap();
    }
    let commit = b.len() as f64 / t.elapsed().as_secs_f64();
    let d1 = dir();
    let mut s1 = Store::open(d1.path(), StoreConfig::default()).unwrap();
    let rate = insert(&mut s1, &b);
    println!("insert 10,000 x 100 B (decode + verify + commit each): {rate:.0} bundles/s");
    println!(
        "  decode + verify alone: {verify:.0}/s; commit of verified bundles alone: {commit:.0}/s"
    );
    let d2 = dir();
    let cfg = StoreConfig {
        sync_every_commit: true,
        ..Default::default()
    };
    let mut s2 = Store::open(d2.path(), cfg).unwrap();
    let rate = insert(&mut s2, &b[..2000]);
    println!("  with fsync on every commit (sync_every_commit): {rate:.0} bundles/s");
}

fn bench_million() {
    let d = dir();
    let mut s = Store::open(d.path(), StoreConfig::default()).unwrap();
    let step = 100_000u64;
    let mut first = None;
    let mut ids = Vec::new();
    for round in 0..10 {
        let b = bundles(round * step, step);
        ids.push(
            skywave_bundle::SignedManifest::decode(&b[b.len() / 2].0)
                .unwrap()
                .id(),
        );
        let rate = insert(&mut s, &b);
        first.get_or_insert(rate);
        println!(
            "  {:>9} bundles held: inserting at {rate:.0}/s ({:.0}% of the empty-store rate)",
            (round + 1) * step,
            100.0 * rate / first.unwrap()
        );
    }
    let t = Instant::now();
    let n = 10_000;
    for i in 0..n {
        let id = &ids[i % ids.len()];
        assert!(s.get(id).unwrap().is_some());
    }
    let lookup = t.elapsed().as_secs_f64() / n as f64;
    let t = Instant::now();
    let mut payload = Vec::new();
    for i in 0..n {
        payload.clear();
        s.open_payload(&ids[i % ids.len()])
            .unwrap()
            .read_to_end(&mut payload)
            .unwrap();
    }
    let read = t.elapsed().as_secs_f64() / n as f64;
    println!(
        "1,000,000 bundles: lookup by id {:.1} us, lookup + payload read {:.1} us",
        lookup * 1e6,
        read * 1e6
    );
}

fn bench_gib() {
    let d = dir();
    let src = d.path().join("input.bin");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&src).unwrap());
        let mut block = vec![0u8; 1 << 20];
        for i in 0..1024u32 {
            for (j, b) in block.iter_mut().enumerate() {
                *b = (j as u32 ^ i.wrapping_mul(2_654_435_761)) as u8;
            }
            f.write_all(&block).unwrap();
        }
        f.into_inner().unwrap().sync_all().unwrap();
    }
    let rss0 = peak_rss_mib();
    let mut s = Store::open(d.path().join("node"), StoreConfig::default()).unwrap();
    let opts = NewBundle {
        date: DATE,
        ..Default::default()
    };
    let t = Instant::now();
    let b = s.create(std::fs::File::open(&src).unwrap(), &opts).unwrap();
    let add = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut r = s.open_payload(&b.manifest.id()).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut h = skywave_bundle::PayloadHasher::new();
    loop {
        let n = r.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    let get = t.elapsed().as_secs_f64();
    assert_eq!(h.finalize(), b.manifest.manifest().hash);
    let gib = 1024.0 * 1024.0 * 1024.0;
    println!(
        "1 GiB: add {:.0} MB/s (hash + write + fsync + commit), get {:.0} MB/s (read + verify), peak RSS {:.1} MiB (before: {rss0:.1})",
        gib / add / 1e6,
        gib / get / 1e6,
        peak_rss_mib()
    );
}

fn main() {
    let which: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let all = which.is_empty();
    let want = |w: &str| all || which.iter().any(|a| a == w);
    if want("insert") {
        bench_insert();
    }
    if want("gib") {
        bench_gib();
    }
    if want("million") {
        bench_million();
    }
}
