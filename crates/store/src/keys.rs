//! The node's identity key and the keyring of bundle authors' keys.
//!
//! Keys are files of 64 hex digits (the 32-byte Ed25519 secret), created with mode 0600
//! so that only the node's user can read them.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use skywave_bundle::{BundleId, SecretKey};

use crate::error::{Result, StoreError, io_err};

/// 32 bytes of OS randomness.
fn os_seed(op: &'static str) -> Result<[u8; 32]> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| StoreError::Io {
        op,
        path: PathBuf::from("getrandom"),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(seed)
}

/// Fresh secret key material from the operating system.
pub fn random_key() -> Result<SecretKey> {
    Ok(SecretKey::from_bytes(&os_seed(
        "read OS randomness for a new key",
    )?))
}

/// A generator for the content key and ephemeral key of one sealed payload, seeded from
/// the operating system (the sealing code takes its randomness from its caller).
pub(crate) fn seal_rng() -> Result<rand_chacha::ChaCha20Rng> {
    use rand_core::SeedableRng;
    Ok(rand_chacha::ChaCha20Rng::from_seed(os_seed(
        "read OS randomness to seal a payload",
    )?))
}

/// The identity key of the node whose directory is `dir`, for a process that reads
/// sealed payloads while the daemon holds the store.
pub fn read_node_key(dir: &Path) -> Result<SecretKey> {
    read_key(&dir.join(NODE_KEY_FILE))
}

/// The node identity key's file in a node directory.
pub(crate) const NODE_KEY_FILE: &str = "node.key";

pub(crate) fn write_key(path: &Path, key: &SecretKey) -> Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| io_err("create key file", path, e))?;
    f.write_all(format!("{}\n", hex::encode(key.to_bytes())).as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| io_err("write key file", path, e))
}

pub(crate) fn read_key(path: &Path) -> Result<SecretKey> {
    let text = fs::read_to_string(path).map_err(|e| io_err("read key file", path, e))?;
    let mut seed = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut seed).map_err(|_| StoreError::NotAStore {
        path: path.to_owned(),
        reason: "key file does not hold 64 hex digits".into(),
    })?;
    Ok(SecretKey::from_bytes(&seed))
}

/// The secret keys of bundles this node authored, one file per bundle id.
///
/// Nothing is held in memory: `contains` asks the file system (a lookup in one
/// directory, on the path of every bundle committed). A set read at open cost a node
/// that authored a million bundles about 70 MB and a listing of the directory at every
/// start.
#[derive(Debug)]
pub struct Keyring {
    dir: PathBuf,
}

impl Keyring {
    pub(crate) fn open(dir: PathBuf) -> Result<Self> {
        fs::create_dir_all(&dir).map_err(|e| io_err("create keyring directory", &dir, e))?;
        Ok(Self { dir })
    }

    fn path(&self, id: &BundleId) -> PathBuf {
        self.dir.join(format!("{id}.key"))
    }

    /// A new author key, stored before it is returned.
    pub fn generate(&self) -> Result<SecretKey> {
        let key = random_key()?;
        self.insert(&key)?;
        Ok(key)
    }

    pub fn insert(&self, key: &SecretKey) -> Result<()> {
        let path = self.path(&key.bundle_id());
        if !path.exists() {
            write_key(&path, key)?;
        }
        Ok(())
    }

    /// Forgets the key of a bundle that was never stored (best effort: a key left
    /// behind is harmless, it signs nothing anyone holds).
    pub fn remove(&self, id: &BundleId) {
        let _ = fs::remove_file(self.path(id));
    }

    pub fn get(&self, id: &BundleId) -> Result<Option<SecretKey>> {
        let path = self.path(id);
        if !path.exists() {
            return Ok(None);
        }
        read_key(&path).map(Some)
    }

    pub fn contains(&self, id: &BundleId) -> bool {
        self.path(id).exists()
    }
}
