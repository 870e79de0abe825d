//! Key and identifier types. Bundle ids and identities are Ed25519 public keys.

use std::fmt;
use std::str::FromStr;

use ed25519_dalek::{SigningKey, VerifyingKey};

/// Why a textual key or id was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} must be 64 hex digits (32 bytes), got {got:?}")]
pub struct KeyParseError {
    pub what: &'static str,
    pub got: String,
}

fn parse_hex32(s: &str, what: &'static str) -> Result<[u8; 32], KeyParseError> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(s.trim(), &mut out).map_err(|_| KeyParseError {
        what,
        got: s.chars().take(80).collect(),
    })?;
    Ok(out)
}

macro_rules! key_type {
    ($(#[$m:meta])* $name:ident, $what:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub [u8; 32]);

        impl $name {
            pub fn as_bytes(&self) -> &[u8; 32] {
                &self.0
            }
            pub fn to_hex(&self) -> String {
                hex::encode(self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.to_hex())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({}..)", stringify!($name), &self.to_hex()[..12])
            }
        }

        impl FromStr for $name {
            type Err = KeyParseError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                parse_hex32(s, $what).map(Self)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_hex())
            }
        }
    };
}

key_type!(
    /// A bundle's id: the Ed25519 public key that signs its manifests.
    BundleId,
    "a bundle id"
);
key_type!(
    /// A node's or person's identity: an Ed25519 public key (sender, recipient, node id).
    Identity,
    "an identity"
);

/// An Ed25519 secret key: a bundle author's key or a node's identity key.
#[derive(Clone)]
pub struct SecretKey(SigningKey);

impl SecretKey {
    /// A key from 32 secret bytes (the caller brings the randomness: no global RNG here).
    pub fn from_bytes(seed: &[u8; 32]) -> Self {
        Self(SigningKey::from_bytes(seed))
    }

    pub fn to_bytes(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    pub fn public(&self) -> [u8; 32] {
        self.0.verifying_key().to_bytes()
    }

    pub fn bundle_id(&self) -> BundleId {
        BundleId(self.public())
    }

    pub fn identity(&self) -> Identity {
        Identity(self.public())
    }

    pub(crate) fn signing(&self) -> &SigningKey {
        &self.0
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey(public {})", hex::encode(&self.public()[..6]))
    }
}

pub(crate) fn verifying_key(bytes: &[u8; 32]) -> Option<VerifyingKey> {
    VerifyingKey::from_bytes(bytes).ok()
}
