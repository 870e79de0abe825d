//! LAN discovery: a daemon that knows no peers learns one from its beacon, and the two
//! sync. The beacon goes to a unicast address here (loopback has no broadcast); the
//! code path is the one a broadcast or multicast beacon takes.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use skywave_daemon::client::Client;
use skywave_daemon::config::UdpConfig;
use skywave_daemon::{DaemonConfig, LinkConfig, RuntimeInfo};

fn free_udp() -> SocketAddr {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

async fn runtime_info(dir: &Path) -> RuntimeInfo {
    for _ in 0..200 {
        if let Ok(t) = std::fs::read_to_string(dir.join(skywave_daemon::RUNTIME_FILE))
            && let Ok(i) = serde_json::from_str(&t)
        {
            return i;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("daemon in {} did not start", dir.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_beacon_makes_a_peer_and_the_two_sync() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (ua, ub) = (free_udp(), free_udp());
    let mut a = UdpConfig::bind(ua);
    a.discovery = Some(ub);
    a.beacon_interval = Duration::from_millis(200);
    let b = UdpConfig::bind(ub);
    let cfg = |u: UdpConfig| DaemonConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        links: vec![LinkConfig::Udp(u)],
        ..DaemonConfig::default()
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stop = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let ta = tokio::spawn(skywave_daemon::run(
        da.path().into(),
        cfg(a),
        stop(stop_rx.clone()),
    ));
    let tb = tokio::spawn(skywave_daemon::run(
        db.path().into(),
        cfg(b),
        stop(stop_rx.clone()),
    ));
    let ia = runtime_info(da.path()).await;
    let ib = runtime_info(db.path()).await;
    let (ca, cb) = (
        Client::for_node(da.path(), &ia),
        Client::for_node(db.path(), &ib),
    );
    let added = tokio::task::spawn_blocking(move || {
        ca.post_reader(
            "/v1/bundles?service=file&name=hello",
            &mut &b"found you"[..],
        )
        .unwrap()
    })
    .await
    .unwrap();
    let id = added["id"].as_str().unwrap().to_string();
    let mut held = false;
    for _ in 0..200 {
        let cb = cb.clone();
        let path = format!("/v1/bundles/{id}");
        if tokio::task::spawn_blocking(move || cb.get_json::<serde_json::Value>(&path).is_ok())
            .await
            .unwrap()
        {
            held = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(held, "B never received A's bundle: discovery failed");
    let st = tokio::task::spawn_blocking(move || cb.status().unwrap())
        .await
        .unwrap();
    assert_eq!(st.peers.len(), 1, "{:?}", st.peers);
    assert_eq!(st.peers[0].node, ia.node);
    assert_eq!(st.links[0].name, format!("udp:{ua}"));
    stop_tx.send(true).unwrap();
    ta.await.unwrap().unwrap();
    tb.await.unwrap().unwrap();
    // A clean stop removes the runtime file.
    assert!(!da.path().join(skywave_daemon::RUNTIME_FILE).exists());
}
