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

/// One line of a trust file that names a key: the key (hex) and an optional name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TrustEntry {
    pub key: String,
    pub name: String,
}

/// The entries of a trust file; a missing file holds none.
pub fn trust_file_entries(path: &Path) -> Result<Vec<TrustEntry>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("reading the trust file {}: {e}", path.display())),
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(e) =
            parse_line(line).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?
        {
            out.push(e);
        }
    }
    Ok(out)
}

/// A line's entry: a key, optionally followed by a name; `#` starts a comment.
fn parse_line(line: &str) -> Result<Option<TrustEntry>, String> {
    let body = line.split('#').next().unwrap_or("").trim();
    let mut words = body.splitn(2, char::is_whitespace);
    let Some(k) = words.next().filter(|k| !k.is_empty()) else {
        return Ok(None);
    };
    parse_key(k)?;
    Ok(Some(TrustEntry {
        key: k.to_ascii_lowercase(),
        name: words.next().unwrap_or("").trim().to_string(),
    }))
}

/// The keys of a trust file; a missing file holds none.
pub fn read_trust_file(path: &Path) -> Result<Vec<String>, String> {
    Ok(trust_file_entries(path)?
        .into_iter()
        .map(|e| e.key)
        .collect())
}

/// Adds `key` (with an optional `name`) to the trust file; false if it was there already.
/// Other lines and comments are kept; the file is replaced whole, so a daemon reading it
/// never sees half an edit.
pub fn trust_file_add(path: &Path, key: &str, name: &str) -> Result<bool, String> {
    let id: Identity = key.parse().map_err(|e| format!("trust key: {e}"))?;
    parse_key(key)?;
    let printable = matches!(
        skywave_bundle::text::printable(name),
        std::borrow::Cow::Borrowed(_)
    );
    if !printable || name.contains('#') {
        return Err("a trust name is one line of text without `#`".into());
    }
    let key = id.to_hex();
    if trust_file_entries(path)?.iter().any(|e| e.key == key) {
        return Ok(false);
    }
    let mut text = read_or_empty(path)?;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if text.is_empty() {
        text.push_str("# Node keys allowed on links with trust = \"keys\": a key, then a name.\n");
    }
    text.push_str(&key);
    if !name.is_empty() {
        text.push(' ');
        text.push_str(name.trim());
    }
    text.push('\n');
    replace(path, &text, "the trust file")?;
    Ok(true)
}

/// Removes the entries whose key starts with `prefix` (at least 8 hex digits, naming
/// one key); returns the removed entries. Other lines are kept.
pub fn trust_file_remove(path: &Path, prefix: &str) -> Result<Vec<TrustEntry>, String> {
    let prefix = prefix.to_ascii_lowercase();
    if prefix.len() < 8 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "`{prefix}`: give the node key, or at least its first 8 hex digits"
        ));
    }
    let matching: HashSet<String> = trust_file_entries(path)?
        .into_iter()
        .filter(|e| e.key.starts_with(&prefix))
        .map(|e| e.key)
        .collect();
    if matching.len() > 1 {
        return Err(format!(
            "`{prefix}` names {} keys in {}: give more digits",
            matching.len(),
            path.display()
        ));
    }
    let text = read_or_empty(path)?;
    let mut kept = String::with_capacity(text.len());
    let mut removed = Vec::new();
    for line in text.lines() {
        match parse_line(line) {
            Ok(Some(e)) if matching.contains(&e.key) => removed.push(e),
            _ => {
                kept.push_str(line);
                kept.push('\n');
            }
        }
    }
    if !removed.is_empty() {
        replace(path, &kept, "the trust file")?;
    }
    Ok(removed)
}

fn read_or_empty(path: &Path) -> Result<String, String> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(format!("reading the trust file {}: {e}", path.display())),
    }
}

/// Writes `text` beside `path` and renames it over: the file is never seen half written.
/// `what` names the file in the error.
pub(crate) fn replace(path: &Path, text: &str, what: &str) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("writing {what} {}: {e}", path.display());
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

/// What tells one version of a file from the next: timestamps alone can be coarser
/// than two quick edits, and `skywave trust` replaces the file (a new inode).
type Stamp = (Option<SystemTime>, u64, u64);

fn stamp(path: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(m) => (m.modified().ok(), m.len(), m.ino()),
        Err(_) => (None, 0, 0),
    }
}

/// Reads a network key file: 64 hex digits (32 bytes), shared by every member of the
/// network (IP links' `trust = "network"`, radio links' `network_key_file`).
pub fn read_network_key(f: &Path) -> anyhow::Result<[u8; 32]> {
    let text = std::fs::read_to_string(f)
        .map_err(|e| anyhow::anyhow!("reading the network key file {}: {e}", f.display()))?;
    let mut k = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut k).map_err(|_| {
        anyhow::anyhow!(
            "the network key file {} must hold 64 hex digits (32 bytes)",
            f.display()
        )
    })?;
    Ok(k)
}

/// A link's policy as it runs: the trust file is read again when it changes.
#[derive(Debug)]
pub struct Trust {
    pub cfg: LinkTrust,
    pub policy: Policy,
    file: Option<(PathBuf, Option<Stamp>)>,
}

impl Trust {
    /// `dir`: the node directory (the default trust file is there).
    pub fn new(cfg: LinkTrust, node: &SecretKey, dir: &Path) -> anyhow::Result<Trust> {
        cfg.check().map_err(anyhow::Error::msg)?;
        let mut policy = Policy::new(node.x25519_secret(), node.x25519_public());
        if let Some(f) = &cfg.network_key_file {
            policy = policy.with_network_key(read_network_key(f)?);
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
        let now = stamp(path);
        if seen.is_some() && *seen == Some(now) {
            return Ok(false);
        }
        // Seen even when broken: the error is reported once per change of the file.
        *seen = Some(now);
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
    fn trust_add_and_rm_edit_the_file_and_the_running_policy_follows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRUST_FILE);
        std::fs::write(&path, "# team\n").unwrap();
        let cfg = LinkTrust {
            mode: TrustMode::Keys,
            ..LinkTrust::default()
        };
        let mut t = Trust::new(cfg, &key(1), dir.path()).unwrap();
        let (k2, k3) = (key(2).identity().to_hex(), key(3).identity().to_hex());
        assert!(trust_file_add(&path, &k2, "base camp").unwrap());
        assert!(
            !trust_file_add(&path, &k2.to_uppercase(), "").unwrap(),
            "already there"
        );
        assert!(trust_file_add(&path, &k3, "").unwrap());
        // Two edits in quick succession are both seen.
        assert_eq!(t.reload(), Ok(true));
        assert!(t.policy.allows(&key(2).x25519_public()));
        assert!(t.policy.allows(&key(3).x25519_public()));
        let entries = trust_file_entries(&path).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].name, "base camp");
        assert!(trust_file_add(&path, &k3, "a\nforged line").is_err());
        assert!(trust_file_add(&path, "12ab", "").is_err());
        // Removal by a prefix; too short a prefix or one naming no key removes nothing.
        assert!(trust_file_remove(&path, &k2[..4]).is_err());
        assert!(trust_file_remove(&path, "00000000").unwrap().is_empty());
        let gone = trust_file_remove(&path, &k2[..10]).unwrap();
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].key, k2);
        assert_eq!(t.reload(), Ok(true));
        assert!(!t.policy.allows(&key(2).x25519_public()));
        assert!(t.policy.allows(&key(3).x25519_public()));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# team\n"), "comments kept: {text}");
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
