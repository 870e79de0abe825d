#![allow(dead_code)]

use skywave_bundle::{Manifest, SecretKey, SignedManifest, hash_payload};
use skywave_store::{NewBundle, Store, StoreConfig};

pub const DATE: u64 = 1_795_305_600;

pub fn key(n: u64) -> SecretKey {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&n.to_le_bytes());
    seed[31] = 0x5a;
    SecretKey::from_bytes(&seed)
}

/// Deterministic payload bytes.
pub fn data(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt) ^ (i >> 10) as u8)
        .collect()
}

pub fn signed(k: &SecretKey, version: u64, payload: &[u8]) -> SignedManifest {
    let mut m = Manifest::new(
        k.bundle_id(),
        version,
        payload.len() as u64,
        hash_payload(payload),
        DATE,
    );
    m.service = Some("file".into());
    m.sign(k).unwrap()
}

pub fn journal(k: &SecretKey, payload: &[u8]) -> SignedManifest {
    let len = payload.len() as u64;
    let mut m = Manifest::new(k.bundle_id(), len, len, hash_payload(payload), DATE);
    m.journal = true;
    m.sign(k).unwrap()
}

pub fn open(dir: &std::path::Path) -> Store {
    Store::open(dir, StoreConfig::default()).unwrap()
}

pub fn opts() -> NewBundle {
    NewBundle {
        date: DATE,
        service: Some("file".into()),
        ..Default::default()
    }
}
