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

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
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

    /// The X25519 secret of this key (RFC 8032's expanded scalar, as libsodium's
    /// `crypto_sign_ed25519_sk_to_curve25519`): a node's identity key also keys its
    /// encrypted links and opens bundles sealed to it, so one key names a node everywhere.
    /// Clamped as RFC 7748 says, so the bytes equal libsodium's.
    pub fn x25519_secret(&self) -> [u8; 32] {
        let mut s = self.0.to_scalar_bytes();
        s[0] &= 248;
        s[31] &= 127;
        s[31] |= 64;
        s
    }

    /// The X25519 public key matching [`Self::x25519_secret`].
    pub fn x25519_public(&self) -> [u8; 32] {
        self.0.verifying_key().to_montgomery().to_bytes()
    }
}

/// The X25519 public key of an Ed25519 public key (the birational map to Montgomery
/// form), or None when the bytes are not a valid Ed25519 point.
pub fn x25519_public_of(ed25519: &[u8; 32]) -> Option<[u8; 32]> {
    verifying_key(ed25519).map(|v| v.to_montgomery().to_bytes())
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey(public {})", hex::encode(&self.public()[..6]))
    }
}

pub(crate) fn verifying_key(bytes: &[u8; 32]) -> Option<VerifyingKey> {
    VerifyingKey::from_bytes(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> [u8; 32] {
        hex::decode(s).unwrap().try_into().unwrap()
    }

    /// libsodium's `crypto_sign_ed25519_{pk,sk}_to_curve25519` on its own test seed.
    #[test]
    fn x25519_keys_match_libsodium() {
        let k = SecretKey::from_bytes(&unhex(
            "421151a459faeade3d247115f94aedae42318124095afabe4d1451a559faedee",
        ));
        assert_eq!(
            hex::encode(k.public()),
            "b5076a8474a832daee4dd5b4040983b6623b5f344aca57d4d6ee4baf3f259e6e"
        );
        let pk = "f1814f0e8ff1043d8a44d25babff3cedcae6c22c3edaa48f857ae70de2baae50";
        assert_eq!(hex::encode(k.x25519_public()), pk);
        assert_eq!(hex::encode(x25519_public_of(&k.public()).unwrap()), pk);
        assert_eq!(
            hex::encode(k.x25519_secret()),
            "8052030376d47112be7f73ed7a019293dd12ad910b654455798b4667d73de166"
        );
    }

    #[test]
    fn a_point_off_the_curve_has_no_x25519_key() {
        // y = 2 is not on edwards25519 (no x satisfies the curve equation).
        let mut b = [0u8; 32];
        b[0] = 2;
        assert_eq!(x25519_public_of(&b), None);
    }
}
