//! Who may sync over an IP link: its encryption and trust settings, the trust file
//! (reloaded when it changes), and the [`Policy`] its channels check handshakes against.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Deserialize;
use skywave_bundle::{Identity, SecretKey, x25519_public_of};
use skywave_node::secure::Policy;

/// The trust file in the node directory that `skywave trust add` writes.
pub const TRUST_FILE: &str = "trusted";

/// `trust = ...` of an IP link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrustMode {
    /// Any node that completes a handshake (it is still authenticated and encrypted).
    #[default]
    Any,
    /// Only the node keys listed in `trust_keys` and the trust file.
    Keys,
    /// Any node holding the network key (`network_key_file`).
    Network,
}

impl TrustMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TrustMode::Any => "any",
            TrustMode::Keys => "keys",
            TrustMode::Network => "network",
        }
    }
}

/// The security settings of one UDP or TCP link.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LinkTrust {
    /// Noise handshake and sealed frames. Off only to talk to a node that predates them.
    pub plaintext: bool,
    pub mode: TrustMode,
    /// Node keys (hex) allowed besides those in `file`.
    pub keys: Vec<String>,
    /// One node key per line (`#` comments); default: the node directory's `trusted`.
    pub file: Option<PathBuf>,
    /// 32 bytes as 64 hex digits, shared by every member of the network.
    pub network_key_file: Option<PathBuf>,
}

impl LinkTrust {
    /// What is wrong with these settings, for `config check` and start-up.
    pub fn check(&self) -> Result<(), String> {
        if self.plaintext && self.mode != TrustMode::Any {
            return Err(format!(
                "trust = \"{}\" needs encryption: remove `plaintext = true`",
                self.mode.as_str()
            ));
        }
        for k in &self.keys {
            parse_key(k)?;
        }
        if self.mode == TrustMode::Network && self.network_key_file.is_none() {
            return Err("trust = \"network\" needs network_key_file = \"PATH\" (a file holding 64 hex digits; make one with `head -c32 /dev/urandom | xxd -p -c64`)".into());
        }
        if self.mode != TrustMode::Network && self.network_key_file.is_some() {
            return Err("network_key_file is used only with trust = \"network\"".into());
        }
        Ok(())
    }
}

/// A node key in hex, as an X25519 key (what a handshake proves).
fn parse_key(s: &str) -> Result<[u8; 32], String> {
    let id: Identity = s.parse().map_err(|e| format!("trust key: {e}"))?;
    x25519_public_of(id.as_bytes()).ok_or_else(|| format!("trust key {s}: not a valid node key"))
}

/// The keys of a trust file; a missing file holds none.
pub fn read_trust_file(path: &Path) -> Result<Vec<String>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("reading the trust file {}: {e}", path.display())),
    };
    let mut keys = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let k = line.split('#').next().unwrap_or("").trim();
        if k.is_empty() {
            continue;
        }
        // Each line: a key, optionally followed by a name.
        let k = k.split_whitespace().next().unwrap_or("");
        parse_key(k).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        keys.push(k.to_string());
    }
    Ok(keys)
}

/// A link's policy as it runs: the trust file is read again when it changes.
#[derive(Debug)]
pub struct Trust {
    pub cfg: LinkTrust,
    pub policy: Policy,
    file: Option<(PathBuf, Option<SystemTime>)>,
}

impl Trust {
    /// `dir`: the node directory (the default trust file is there).
    pub fn new(cfg: LinkTrust, node: &SecretKey, dir: &Path) -> anyhow::Result<Trust> {
        cfg.check().map_err(anyhow::Error::msg)?;
        let mut policy = Policy::new(node.x25519_secret(), node.x25519_public());
        if let Some(f) = &cfg.network_key_file {
            let text = std::fs::read_to_string(f).map_err(|e| {
                anyhow::anyhow!("reading the network key file {}: {e}", f.display())
            })?;
            let mut k = [0u8; 32];
            hex::decode_to_slice(text.trim(), &mut k).map_err(|_| {
                anyhow::anyhow!(
                    "the network key file {} must hold 64 hex digits (32 bytes)",
                    f.display()
                )
            })?;
            policy = policy.with_network_key(k);
        }
        let file = (cfg.mode == TrustMode::Keys).then(|| {
            (
                cfg.file.clone().unwrap_or_else(|| dir.join(TRUST_FILE)),
                None,
            )
        });
        let mut t = Trust { cfg, policy, file };
        t.reload().map_err(anyhow::Error::msg)?;
        Ok(t)
    }

    /// Reads the trust file again if it changed; returns whether the list changed.
    /// A file that turned unreadable or malformed keeps the last good list.
    pub fn reload(&mut self) -> Result<bool, String> {
        let Some((path, seen)) = &mut self.file else {
            return Ok(false);
        };
        let mtime = std::fs::metadata(&*path).and_then(|m| m.modified()).ok();
        if seen.is_some() && mtime == *seen {
            return Ok(false);
        }
        // Seen even when broken: the error is reported once per change of the file.
        *seen = Some(mtime.unwrap_or(SystemTime::UNIX_EPOCH));
        let from_file = read_trust_file(path)?;
        let keys: HashSet<[u8; 32]> = self
            .cfg
            .keys
            .iter()
            .chain(&from_file)
            .filter_map(|k| parse_key(k).ok())
            .collect();
        self.policy.set_allowed(Some(keys));
        Ok(true)
    }

    pub fn trust_path(&self) -> Option<&Path> {
        self.file.as_ref().map(|(p, _)| p.as_path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> SecretKey {
        SecretKey::from_bytes(&[n; 32])
    }

    #[test]
    fn the_trust_file_is_read_again_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = LinkTrust {
            mode: TrustMode::Keys,
            keys: vec![key(2).identity().to_hex()],
            ..LinkTrust::default()
        };
        let mut t = Trust::new(cfg, &key(1), dir.path()).unwrap();
        assert!(t.policy.allows(&key(2).x25519_public()));
        assert!(!t.policy.allows(&key(3).x25519_public()));
        let path = dir.path().join(TRUST_FILE);
        assert_eq!(t.trust_path(), Some(path.as_path()));
        std::fs::write(
            &path,
            format!("# field team\n{} base camp\n\n", key(3).identity()),
        )
        .unwrap();
        assert_eq!(t.reload(), Ok(true));
        assert!(t.policy.allows(&key(3).x25519_public()));
        assert!(t.policy.allows(&key(2).x25519_public()), "config keys stay");
        assert_eq!(t.reload(), Ok(false), "unchanged");
        // A broken edit keeps the last good list and says where.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, "not-a-key\n").unwrap();
        let e = t.reload().unwrap_err();
        assert!(e.contains(":1:"), "{e}");
        assert!(t.policy.allows(&key(3).x25519_public()));
    }

    #[test]
    fn settings_that_cannot_work_are_refused_with_the_fix() {
        let bad = [
            LinkTrust {
                plaintext: true,
                mode: TrustMode::Keys,
                ..LinkTrust::default()
            },
            LinkTrust {
                mode: TrustMode::Network,
                ..LinkTrust::default()
            },
            LinkTrust {
                keys: vec!["12".into()],
                ..LinkTrust::default()
            },
        ];
        for b in bad {
            assert!(b.check().is_err(), "{b:?}");
        }
        assert!(LinkTrust::default().check().is_ok());
    }

    #[test]
    fn a_network_key_file_must_hold_32_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("netkey");
        std::fs::write(&f, "abcd\n").unwrap();
        let cfg = LinkTrust {
            mode: TrustMode::Network,
            network_key_file: Some(f.clone()),
            ..LinkTrust::default()
        };
        let e = Trust::new(cfg.clone(), &key(1), dir.path()).unwrap_err();
        assert!(e.to_string().contains("64 hex digits"), "{e}");
        std::fs::write(&f, format!("{}\n", "ab".repeat(32))).unwrap();
        Trust::new(cfg, &key(1), dir.path()).unwrap();
    }
}
