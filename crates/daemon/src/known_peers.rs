//! Peers' keys remembered by address across restarts (`known_peers` in the node
//! directory): the first handshake to a peer met before is then IK, which carries the
//! HELLO in its first message, rather than XX, which costs a round trip more (see
//! `skywave_node::secure`). A key that has gone stale costs two IK tries, then XX.
//!
//! One peer per line: the address (a UDP peer's, or a TCP peer's as dialled), a space,
//! and its X25519 key in hex. Lines that do not parse are skipped.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;

pub const FILE: &str = "known_peers";

/// The keys in `path`; none if it does not exist or cannot be read (a warning says why).
pub fn load(path: &Path) -> HashMap<SocketAddr, [u8; 32]> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return HashMap::new(),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "known peers not read: first handshakes will take a round trip more");
            return HashMap::new();
        }
    };
    let mut keys = HashMap::new();
    let mut bad = 0;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse(line) {
            Some((a, k)) => {
                keys.insert(a, k);
            }
            None => bad += 1,
        }
    }
    if bad > 0 {
        tracing::warn!(path = %path.display(), lines = bad, "known peers: lines skipped (not an address and a 64-digit hex key)");
    }
    keys
}

fn parse(line: &str) -> Option<(SocketAddr, [u8; 32])> {
    let (a, k) = line.split_once(' ')?;
    let mut key = [0u8; 32];
    hex::decode_to_slice(k.trim(), &mut key).ok()?;
    Some((a.parse().ok()?, key))
}

/// The file's text for `keys`, in address order (so a rewrite changes only what did).
pub fn render(keys: &HashMap<SocketAddr, [u8; 32]>) -> String {
    let mut v: Vec<_> = keys.iter().collect();
    v.sort();
    let mut s = String::from("# peers' keys by address, kept by the daemon (safe to delete)\n");
    for (a, k) in v {
        s.push_str(&format!("{a} {}\n", hex::encode(k)));
    }
    s
}

/// Writes `text` to `path` whole (see `trust::replace`).
pub fn save(path: &Path, text: &str) -> Result<(), String> {
    crate::trust::replace(path, text, "the known peers file")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_written_are_read_back_and_bad_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        assert!(load(&path).is_empty(), "no file, no keys");
        let keys: HashMap<SocketAddr, [u8; 32]> = [
            ("127.0.0.1:7400".parse().unwrap(), [1; 32]),
            ("[::1]:9".parse().unwrap(), [2; 32]),
        ]
        .into();
        save(&path, &render(&keys)).unwrap();
        assert_eq!(load(&path), keys);
        let mut text = render(&keys);
        text.push_str("10.0.0.1:1 abcd\nnot an address 00\n10.0.0.2:2\n");
        std::fs::write(&path, text).unwrap();
        assert_eq!(load(&path), keys);
    }
}
