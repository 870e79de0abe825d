//! The network-key tag on a radio link: three real daemons on one channel (`kiss`
//! links on fake TNCs sharing it). Two hold the network key and sync; the third has
//! another key: nothing of it gets in, nothing gets to it, and its frames are dropped
//! and counted on both sides. The links are amateur, so a sealed bundle stays off them.

use std::time::Duration;

use crate::support::*;

/// Bytes per second on the fake channel: fast, so the test takes seconds.
const RATE: f64 = 4_000.0;

fn bad_tags(d: &Daemon) -> (u64, u64) {
    let v: serde_json::Value = d.client.get_json("/v1/status").unwrap();
    let link = v["links"][0]["dropped"]["bad_tag"].as_u64().unwrap_or(0);
    let total = v["protocol"]["dropped"]["bad_tag"].as_u64().unwrap_or(0);
    (link, total)
}

#[test]
fn only_holders_of_the_network_key_sync_over_the_radio() {
    let (rt, tncs) = fake_tncs(3, RATE);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let keys = [
        "11".repeat(32),
        "11".repeat(32),
        // The third node's key differs in its last byte.
        format!("{}12", "11".repeat(31)),
    ];
    let daemons: Vec<Daemon> = (0..3)
        .map(|i| {
            let key = root.join(format!("net{i}.key"));
            std::fs::write(&key, format!("{}\n", keys[i])).unwrap();
            let conf = root.join(format!("d{i}.toml"));
            std::fs::write(
                &conf,
                format!(
                    "[[link]]\ntype = \"kiss\"\ntnc = \"{}\"\ncallsign = \"N0CALL-{}\"\namateur = true\nair_rate = 9600\nnetwork_key_file = \"{}\"\nnetwork_tag_bytes = 8\n",
                    tncs.url(i),
                    i + 1,
                    key.display()
                ),
            )
            .unwrap();
            Daemon::start(root, &format!("d{i}"), &["--config", &conf.display().to_string()])
        })
        .collect();
    let ids: Vec<Vec<String>> = daemons
        .iter()
        .enumerate()
        .map(|(i, d)| {
            (0..3)
                .map(|j| d.add(&payload(300, (10 * i + j) as u64), &format!("b{i}{j}")))
                .collect()
        })
        .collect();
    // The links are amateur: a bundle sealed to node 1 stays off them (docs/daemon.md,
    // "Licensed bands"), authentication or not.
    let node1 = daemons[1].status().node;
    let file = root.join("orders.txt");
    std::fs::write(&file, payload(500, 99)).unwrap();
    let sealed = cli(
        &daemons[0].dir,
        &["add", "--to", &node1, file.to_str().unwrap()],
    )
    .trim()
    .to_string();
    // The two holders of the key sync.
    for id in &ids[0] {
        daemons[1].wait_bundle(id, LONG);
    }
    for id in &ids[1] {
        daemons[0].wait_bundle(id, LONG);
    }
    daemons[0].wait_synced(1, LONG);
    // Time for the third to have been heard, and to have heard everything.
    std::thread::sleep(Duration::from_secs(3));
    for id in ids[0].iter().chain(&ids[1]) {
        assert!(
            !daemons[2].has(id),
            "a bundle reached the node without the key"
        );
    }
    assert!(
        !daemons[1].has(&sealed),
        "a sealed bundle crossed an amateur link"
    );
    for id in &ids[2] {
        assert!(
            !daemons[0].has(id) && !daemons[1].has(id),
            "the keyless node's bundle got in"
        );
    }
    assert!(
        daemons[2].status().peers.is_empty(),
        "the node without the key formed a session"
    );
    for d in &daemons {
        let (link, total) = bad_tags(d);
        assert!(link > 0, "{}: no frame dropped for its tag", d.name);
        assert_eq!(link, total);
    }
    // Every frame the channel carried was tagged: the TNCs saw frames from all three.
    for i in 0..3 {
        assert!(tncs.stats(i).frames_sent > 0);
    }
    drop(rt);
}

/// `skywave config check` reads a radio link's network key as the daemon will: a file
/// that is not 64 hex digits is refused, naming the link and the file; a good one is
/// shown with the tag's length.
#[test]
fn config_check_reads_the_network_key() {
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("radiokey");
    let conf = tmp.path().join("d.toml");
    std::fs::write(
        &conf,
        format!(
            "[[link]]\ntype = \"serial\"\ndevice = \"/dev/null\"\nnetwork_key_file = \"{}\"\nnetwork_tag_bytes = 12\n",
            key.display()
        ),
    )
    .unwrap();
    std::fs::write(&key, "not hex\n").unwrap();
    let out = run(tmp.path(), &["config", "check", conf.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("link #1") && err.contains("64 hex digits") && err.contains("radiokey"),
        "{err}"
    );
    std::fs::write(&key, "ab".repeat(32)).unwrap();
    let shown = cli(tmp.path(), &["config", "check", conf.to_str().unwrap()]);
    assert!(shown.contains("network_tag 12 B, key "), "{shown}");
}
