//! Manifests and their canonical compact encoding (`docs/bundle-format.md`).

use std::collections::BTreeMap;
use std::fmt;

use ed25519_dalek::{Signature, Signer};

use crate::keys::{BundleId, Identity, SecretKey, verifying_key};
use crate::{text, varint};

/// Largest accepted encoded manifest, signature included.
pub const MAX_MANIFEST_LEN: usize = 1024;
/// Dates are carried as seconds since this Unix time (2024-01-01T00:00:00Z).
pub const DATE_EPOCH: u64 = 1_704_067_200;

const FORMAT_V1: u8 = 0b01 << 6;
const FORMAT_MASK: u8 = 0b11 << 6;
const F_JOURNAL: u8 = 1 << 5;
const F_SERVICE: u8 = 1 << 4;
const F_NAME: u8 = 1 << 3;
const F_SENDER: u8 = 1 << 2;
const F_RECIPIENT: u8 = 1 << 1;
const F_EXTENSIONS: u8 = 1 << 0;

const SIGNATURE_LEN: usize = 64;
const HASH_LEN: usize = 16;
/// Prefixed to the signed bytes so a manifest signature can never be replayed as
/// a signature over anything else.
const SIGNING_CONTEXT: &[u8] = b"skywave manifest v1\0";

const MAX_NAME: usize = 255;
const MAX_SERVICE: usize = 64;
const MAX_KEY: usize = 64;
/// Extension record tag for a free `key=value` field.
const TAG_FIELD: u64 = 0;
/// Extension record tag marking a sealed payload; its value is the sealing scheme. Odd,
/// so critical: a reader that does not know it refuses the manifest rather than hand
/// out sealed bytes as if they were the content.
const TAG_SEALED: u64 = 1;
/// Extension record tag marking a tombstone: the author deleted the bundle. Empty value.
/// Even, so ignorable: an older reader takes the tombstone as an empty newer version,
/// which also frees the payload it replaces.
const TAG_DELETED: u64 = 2;
/// Extension record tag for the bundle's expiry; value = varint seconds after `date`.
/// Even: an older reader keeps and relays the bundle without enforcing the expiry.
const TAG_EXPIRES: u64 = 4;
/// Extension record tag for the bundle's priority; value = one byte ([`Priority`]).
/// Even: an older reader relays the bundle in its own order.
const TAG_PRIORITY: u64 = 6;
/// The highest tag this version understands; unknown records must be above it.
const TAG_KNOWN_MAX: u64 = TAG_PRIORITY;

/// How soon a bundle goes out relative to others waiting for the same link. Ordering
/// still ages: a bulk bundle waiting long enough goes before newer normal ones.
#[derive(
    Debug,
    Default,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Logs, backups, anything that may wait.
    Bulk = 0,
    /// Files: the default.
    #[default]
    Normal = 1,
    /// What a person is waiting for: messages, alerts.
    High = 2,
}

impl Priority {
    /// The priority of a bundle of `service` that names none: messages go first, logs
    /// last, the rest in between.
    pub fn default_for(service: Option<&str>) -> Priority {
        match service {
            Some("message") => Priority::High,
            Some("log") => Priority::Bulk,
            _ => Priority::Normal,
        }
    }

    fn from_byte(b: u8) -> Option<Priority> {
        match b {
            0 => Some(Priority::Bulk),
            1 => Some(Priority::Normal),
            2 => Some(Priority::High),
            _ => None,
        }
    }
}

impl std::str::FromStr for Priority {
    type Err = String;
    fn from_str(s: &str) -> Result<Priority, String> {
        match s {
            "bulk" | "low" => Ok(Priority::Bulk),
            "normal" => Ok(Priority::Normal),
            "high" => Ok(Priority::High),
            _ => Err(format!("unknown priority '{s}': use bulk, normal or high")),
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Priority::Bulk => "bulk",
            Priority::Normal => "normal",
            Priority::High => "high",
        })
    }
}

/// Services that encode as one byte; any other service is spelled out.
const WELL_KNOWN_SERVICES: [&str; 6] = ["file", "message", "telemetry", "log", "status", "map"];

/// The one-byte code of a well-known service (1-based), if it is one.
pub fn well_known_service(s: &str) -> Option<u8> {
    WELL_KNOWN_SERVICES
        .iter()
        .position(|w| *w == s)
        .map(|i| i as u8 + 1)
}

/// A truncated BLAKE3 payload hash (first 16 bytes of the 32-byte digest).
///
/// 128 bits keep second preimages out of reach, which is what protects a bundle from
/// anyone but its author; collisions only let an author equivocate about its own
/// bundle, which a signing key can do anyway by signing two payloads at one version.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PayloadHash(pub [u8; HASH_LEN]);

impl PayloadHash {
    pub fn from_blake3(h: &blake3::Hash) -> Self {
        let mut out = [0u8; HASH_LEN];
        out.copy_from_slice(&h.as_bytes()[..HASH_LEN]);
        Self(out)
    }

    /// The hash of the empty payload.
    pub fn empty() -> Self {
        Self::from_blake3(&blake3::hash(&[]))
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for PayloadHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for PayloadHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PayloadHash({})", self.to_hex())
    }
}

/// Why a manifest was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    #[error("manifest truncated while reading {0}")]
    Truncated(&'static str),
    #[error("manifest is {len} bytes; the limit is {max}")]
    TooLarge { len: usize, max: usize },
    #[error(
        "manifest format {0:#04x} is not understood by this version of skywave; upgrade to read it"
    )]
    UnsupportedFormat(u8),
    #[error(
        "manifest extension record {0} is marked critical and is not understood; upgrade to read it"
    )]
    CriticalExtension(u64),
    #[error("manifest is not in canonical form: {0}")]
    NonCanonical(&'static str),
    #[error("manifest field {field} is invalid: {reason}")]
    InvalidField { field: &'static str, reason: String },
    #[error("manifest signature does not verify against bundle id {0}")]
    BadSignature(BundleId),
    #[error("the signing key does not belong to bundle {0}")]
    KeyMismatch(BundleId),
}

fn invalid(field: &'static str, reason: impl Into<String>) -> ManifestError {
    ManifestError::InvalidField {
        field,
        reason: reason.into(),
    }
}

/// The fields of a bundle's manifest.
///
/// Build one, then [`Manifest::sign`] it to get the encoded, verifiable form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub id: BundleId,
    /// Newer versions replace older ones. For a journal, version == length.
    pub version: u64,
    /// Payload length in bytes.
    pub length: u64,
    pub hash: PayloadHash,
    /// Append-only: each version extends the previous payload.
    pub journal: bool,
    /// Unix seconds, at or after [`DATE_EPOCH`].
    pub date: u64,
    pub service: Option<String>,
    pub name: Option<String>,
    pub sender: Option<Identity>,
    pub recipient: Option<Identity>,
    /// The scheme the payload is sealed with to `recipient` ([`crate::sealed::SEALED_V1`]);
    /// `None`: the payload is in clear. Length and hash are those of the sealed bytes.
    pub sealed: Option<u8>,
    /// A tombstone: the author deleted the bundle. It carries no payload and replaces
    /// every older version, so the payload is freed wherever it arrives.
    pub deleted: bool,
    /// Unix seconds after which no node keeps, offers or accepts this version (at or
    /// after `date`).
    pub expires: Option<u64>,
    /// Set by the author; `None`: the service's default ([`Priority::default_for`]).
    pub priority: Option<Priority>,
    /// Free `key=value` fields.
    pub fields: BTreeMap<String, String>,
    /// Ignorable extension records from a newer encoding, kept so the signed bytes stay
    /// intact when this node forwards the manifest.
    pub unknown: Vec<(u64, Vec<u8>)>,
}

impl Manifest {
    /// A manifest for a plain (non-journal) bundle with the given payload.
    pub fn new(id: BundleId, version: u64, length: u64, hash: PayloadHash, date: u64) -> Self {
        Self {
            id,
            version,
            length,
            hash,
            journal: false,
            date,
            service: None,
            name: None,
            sender: None,
            recipient: None,
            sealed: None,
            deleted: false,
            expires: None,
            priority: None,
            fields: BTreeMap::new(),
            unknown: Vec::new(),
        }
    }

    /// The priority to send it with: its own, else its service's default.
    pub fn effective_priority(&self) -> Priority {
        self.priority
            .unwrap_or_else(|| Priority::default_for(self.service.as_deref()))
    }

    /// Whether this version has expired at `now` (Unix seconds).
    pub fn expired_at(&self, now: u64) -> bool {
        self.expires.is_some_and(|e| e <= now)
    }

    /// Checks the field rules that the encoding relies on.
    pub fn validate(&self) -> Result<(), ManifestError> {
        if self.journal && self.version != self.length {
            return Err(invalid(
                "version",
                format!(
                    "a journal's version must equal its length ({} != {})",
                    self.version, self.length
                ),
            ));
        }
        if self.date < DATE_EPOCH {
            return Err(invalid("date", "dates before 2024-01-01 cannot be encoded"));
        }
        if self.length == 0 && self.hash != PayloadHash::empty() {
            return Err(invalid(
                "hash",
                "an empty payload must carry the empty hash",
            ));
        }
        if let Some(s) = &self.service {
            let ok = !s.is_empty()
                && s.len() <= MAX_SERVICE
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
            if !ok {
                return Err(invalid(
                    "service",
                    format!("{s:?}: use 1-{MAX_SERVICE} characters of a-z, 0-9, '.', '_', '-'"),
                ));
            }
        }
        if let Some(n) = self.name.as_ref().filter(|n| n.len() > MAX_NAME) {
            return Err(invalid(
                "name",
                format!("{} bytes; the limit is {MAX_NAME}", n.len()),
            ));
        }
        for (k, v) in &self.fields {
            if k.is_empty() || k.len() > MAX_KEY || k.contains('=') {
                return Err(invalid(
                    "fields",
                    format!("key {k:?}: use 1-{MAX_KEY} bytes without '='"),
                ));
            }
            if v.len() > MAX_MANIFEST_LEN {
                return Err(invalid("fields", format!("value of {k:?} is too long")));
            }
        }
        if let Some(scheme) = self.sealed {
            if scheme == 0 {
                return Err(invalid("sealed", "scheme 0 is reserved"));
            }
            if self.recipient.is_none() {
                return Err(invalid(
                    "sealed",
                    "a sealed payload needs a recipient to be sealed to",
                ));
            }
            if self.journal {
                return Err(invalid("sealed", "a journal cannot be sealed"));
            }
            if scheme == crate::sealed::SEALED_V1 && crate::sealed::plain_len(self.length).is_none()
            {
                return Err(invalid(
                    "sealed",
                    format!("no sealed payload is {} bytes long", self.length),
                ));
            }
        }
        if self.deleted && (self.length != 0 || self.journal || self.sealed.is_some()) {
            return Err(invalid(
                "deleted",
                "a tombstone carries no payload and is neither a journal nor sealed",
            ));
        }
        if self.expires.is_some_and(|e| e < self.date) {
            return Err(invalid("expires", "a bundle cannot expire before its date"));
        }
        let mut last = None;
        for (tag, _) in &self.unknown {
            if *tag <= TAG_KNOWN_MAX || tag % 2 == 1 || last.is_some_and(|l| *tag < l) {
                return Err(invalid(
                    "unknown",
                    "unknown extension records must be even, above 6 and ordered",
                ));
            }
            last = Some(*tag);
        }
        Ok(())
    }

    fn flags(&self) -> u8 {
        let mut f = FORMAT_V1;
        if self.journal {
            f |= F_JOURNAL;
        }
        if self.service.is_some() {
            f |= F_SERVICE;
        }
        if self.name.is_some() {
            f |= F_NAME;
        }
        if self.sender.is_some() {
            f |= F_SENDER;
        }
        if self.recipient.is_some() {
            f |= F_RECIPIENT;
        }
        if !self.fields.is_empty()
            || self.sealed.is_some()
            || self.deleted
            || self.expires.is_some()
            || self.priority.is_some()
            || !self.unknown.is_empty()
        {
            f |= F_EXTENSIONS;
        }
        f
    }

    /// The signed part of the encoding (everything but the signature).
    fn encode_body(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        out.push(self.flags());
        out.extend_from_slice(self.id.as_bytes());
        varint::put(&mut out, self.version);
        if !self.journal {
            varint::put(&mut out, self.length);
        }
        if self.length > 0 {
            out.extend_from_slice(&self.hash.0);
        }
        varint::put(&mut out, self.date - DATE_EPOCH);
        if let Some(s) = &self.service {
            match well_known_service(s) {
                Some(code) => out.push(code),
                None => {
                    out.push(0);
                    text::put(&mut out, s);
                }
            }
        }
        if let Some(n) = &self.name {
            text::put(&mut out, n);
        }
        if let Some(s) = &self.sender {
            out.extend_from_slice(s.as_bytes());
        }
        if let Some(r) = &self.recipient {
            out.extend_from_slice(r.as_bytes());
        }
        let mut record = Vec::new();
        for (k, v) in &self.fields {
            record.clear();
            text::put(&mut record, k);
            record.extend_from_slice(v.as_bytes());
            varint::put(&mut out, TAG_FIELD);
            varint::put(&mut out, record.len() as u64);
            out.extend_from_slice(&record);
        }
        if let Some(scheme) = self.sealed {
            varint::put(&mut out, TAG_SEALED);
            varint::put(&mut out, 1);
            out.push(scheme);
        }
        if self.deleted {
            varint::put(&mut out, TAG_DELETED);
            varint::put(&mut out, 0);
        }
        if let Some(e) = self.expires {
            let mut v = Vec::new();
            varint::put(&mut v, e - self.date);
            varint::put(&mut out, TAG_EXPIRES);
            varint::put(&mut out, v.len() as u64);
            out.extend_from_slice(&v);
        }
        if let Some(p) = self.priority {
            varint::put(&mut out, TAG_PRIORITY);
            varint::put(&mut out, 1);
            out.push(p as u8);
        }
        for (tag, value) in &self.unknown {
            varint::put(&mut out, *tag);
            varint::put(&mut out, value.len() as u64);
            out.extend_from_slice(value);
        }
        out
    }

    /// Signs the manifest with the bundle's secret key.
    pub fn sign(&self, key: &SecretKey) -> Result<SignedManifest, ManifestError> {
        if key.bundle_id() != self.id {
            return Err(ManifestError::KeyMismatch(self.id));
        }
        self.validate()?;
        let mut bytes = self.encode_body();
        let sig = key.signing().sign(&signing_message(&bytes));
        bytes.extend_from_slice(&sig.to_bytes());
        if bytes.len() > MAX_MANIFEST_LEN {
            return Err(ManifestError::TooLarge {
                len: bytes.len(),
                max: MAX_MANIFEST_LEN,
            });
        }
        Ok(SignedManifest {
            manifest: self.clone(),
            bytes,
        })
    }
}

fn signing_message(body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(SIGNING_CONTEXT.len() + body.len());
    m.extend_from_slice(SIGNING_CONTEXT);
    m.extend_from_slice(body);
    m
}

/// A manifest together with its canonical signed encoding.
///
/// Values of this type have always been verified: they come from [`Manifest::sign`] or
/// from [`SignedManifest::decode`], which checks the signature and canonical form.
#[derive(Clone, PartialEq, Eq)]
pub struct SignedManifest {
    manifest: Manifest,
    bytes: Vec<u8>,
}

impl fmt::Debug for SignedManifest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignedManifest")
            .field("id", &self.manifest.id)
            .field("version", &self.manifest.version)
            .field("length", &self.manifest.length)
            .field("encoded_len", &self.bytes.len())
            .finish()
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], ManifestError> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or(ManifestError::Truncated(what))?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or(ManifestError::Truncated(what))?;
        self.pos = end;
        Ok(s)
    }

    fn array32(&mut self, what: &'static str) -> Result<[u8; 32], ManifestError> {
        let mut a = [0u8; 32];
        a.copy_from_slice(self.take(32, what)?);
        Ok(a)
    }

    fn varint(&mut self, what: &'static str) -> Result<u64, ManifestError> {
        let (v, n) = varint::get(&self.buf[self.pos..]).map_err(|e| match e {
            varint::VarintError::Truncated => ManifestError::Truncated(what),
            varint::VarintError::NonCanonical => ManifestError::NonCanonical(what),
        })?;
        self.pos += n;
        Ok(v)
    }

    fn text(&mut self, what: &'static str, max: usize) -> Result<String, ManifestError> {
        let (s, n) = text::get(&self.buf[self.pos..], max).map_err(|e| match e {
            text::TextError::Truncated => ManifestError::Truncated(what),
            text::TextError::TooLong => invalid(what, format!("longer than {max} bytes")),
            text::TextError::InvalidUtf8 => invalid(what, "not UTF-8"),
            text::TextError::NonCanonical => ManifestError::NonCanonical(what),
        })?;
        self.pos += n;
        Ok(s)
    }

    fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
}

impl SignedManifest {
    /// Parses and verifies an encoded manifest.
    ///
    /// Rejects, with a specific error: truncated or oversize input, an unknown format,
    /// critical (odd-tagged) extension records, non-canonical encodings, invalid field
    /// values, and signatures that do not verify. Ignorable (even-tagged) extension
    /// records from newer encoders are kept and re-emitted byte for byte.
    pub fn decode(bytes: &[u8]) -> Result<Self, ManifestError> {
        Self::decode_many(&[bytes])
            .pop()
            .expect("one result per manifest")
    }

    /// [`SignedManifest::decode`] for several manifests at once (a frame's worth), one
    /// result for each, in order. Their signatures are checked together, which costs
    /// about half as much per signature as one at a time; only when that check fails is
    /// each checked alone, to tell which.
    ///
    /// Every signature is checked by the batch's equation (the cofactored one RFC 8032
    /// states), a lone one too: a signature is then accepted or refused the same whether
    /// it arrives alone, among others, or is checked again by `fsck`.
    pub fn decode_many(all: &[&[u8]]) -> Vec<Result<Self, ManifestError>> {
        let mut out: Vec<_> = all.iter().map(|b| Self::decode_inner(b)).collect();
        // Where in `out` each signature checked belongs, and its bundle.
        let mut at = Vec::new();
        let mut keys = Vec::new();
        let mut sigs = Vec::new();
        let mut msgs = Vec::new();
        for (i, r) in out.iter_mut().enumerate() {
            let Ok(m) = r else { continue };
            let id = m.id();
            let (body, sig) = m.bytes.split_at(m.bytes.len() - SIGNATURE_LEN);
            match (verifying_key(id.as_bytes()), Signature::from_slice(sig)) {
                (Some(k), Ok(s)) => {
                    at.push((i, id));
                    keys.push(k);
                    sigs.push(s);
                    msgs.push(signing_message(body));
                }
                _ => *r = Err(ManifestError::BadSignature(id)),
            }
        }
        let msgs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
        let all_good = at.is_empty() || ed25519_dalek::verify_batch(&msgs, &sigs, &keys).is_ok();
        if !all_good {
            for (j, &(i, id)) in at.iter().enumerate() {
                let one = j..j + 1;
                if at.len() == 1
                    || ed25519_dalek::verify_batch(
                        &msgs[one.clone()],
                        &sigs[one.clone()],
                        &keys[one],
                    )
                    .is_err()
                {
                    out[i] = Err(ManifestError::BadSignature(id));
                }
            }
        }
        out
    }

    /// Parses bytes that were verified by [`SignedManifest::decode`] before they were
    /// stored (a store reading its own rows). Everything but the signature is checked;
    /// `fsck` re-verifies signatures. Never use this on bytes from a peer.
    pub fn decode_stored(bytes: &[u8]) -> Result<Self, ManifestError> {
        Self::decode_inner(bytes)
    }

    /// Parses and checks everything but the signature.
    fn decode_inner(bytes: &[u8]) -> Result<Self, ManifestError> {
        if bytes.len() > MAX_MANIFEST_LEN {
            return Err(ManifestError::TooLarge {
                len: bytes.len(),
                max: MAX_MANIFEST_LEN,
            });
        }
        let body_len = bytes
            .len()
            .checked_sub(SIGNATURE_LEN + 1 + 32)
            .ok_or(ManifestError::Truncated("header"))?
            + 1
            + 32;
        let body = &bytes[..body_len];
        let mut r = Reader { buf: body, pos: 0 };
        let flags = r.take(1, "flags")?[0];
        if flags & FORMAT_MASK != FORMAT_V1 {
            return Err(ManifestError::UnsupportedFormat(flags));
        }
        let id = BundleId(r.array32("id")?);
        let version = r.varint("version")?;
        let journal = flags & F_JOURNAL != 0;
        let length = if journal {
            version
        } else {
            r.varint("length")?
        };
        let hash = if length > 0 {
            let mut h = [0u8; HASH_LEN];
            h.copy_from_slice(r.take(HASH_LEN, "hash")?);
            PayloadHash(h)
        } else {
            PayloadHash::empty()
        };
        let date = r
            .varint("date")?
            .checked_add(DATE_EPOCH)
            .ok_or_else(|| invalid("date", "out of range"))?;
        let service = if flags & F_SERVICE != 0 {
            let code = r.take(1, "service")?[0];
            Some(match code {
                0 => r.text("service", MAX_SERVICE)?,
                c => WELL_KNOWN_SERVICES
                    .get(c as usize - 1)
                    .ok_or_else(|| invalid("service", format!("unknown service code {c}")))?
                    .to_string(),
            })
        } else {
            None
        };
        let name = if flags & F_NAME != 0 {
            Some(r.text("name", MAX_NAME)?)
        } else {
            None
        };
        let sender = if flags & F_SENDER != 0 {
            Some(Identity(r.array32("sender")?))
        } else {
            None
        };
        let recipient = if flags & F_RECIPIENT != 0 {
            Some(Identity(r.array32("recipient")?))
        } else {
            None
        };
        let mut fields = BTreeMap::new();
        let mut sealed = None;
        let mut deleted = false;
        let mut expires_after = None;
        let mut priority = None;
        let mut unknown = Vec::new();
        if flags & F_EXTENSIONS != 0 {
            if r.is_empty() {
                return Err(ManifestError::NonCanonical(
                    "extension flag without records",
                ));
            }
            while !r.is_empty() {
                let tag = r.varint("extension tag")?;
                let len = r.varint("extension length")?;
                let len =
                    usize::try_from(len).map_err(|_| ManifestError::Truncated("extension"))?;
                let value = r.take(len, "extension value")?;
                if tag == TAG_FIELD {
                    let mut fr = Reader { buf: value, pos: 0 };
                    let key = fr.text("field key", MAX_KEY)?;
                    let val = std::str::from_utf8(&value[fr.pos..])
                        .map_err(|_| invalid("fields", format!("value of {key:?} is not UTF-8")))?;
                    if fields.insert(key, val.to_owned()).is_some() {
                        return Err(ManifestError::NonCanonical("duplicate field key"));
                    }
                } else if tag == TAG_SEALED {
                    let [scheme] = value else {
                        return Err(invalid("sealed", "the record holds one byte, the scheme"));
                    };
                    if sealed.replace(*scheme).is_some() {
                        return Err(ManifestError::NonCanonical("duplicate sealed record"));
                    }
                } else if tag == TAG_DELETED {
                    if !value.is_empty() {
                        return Err(invalid("deleted", "the record carries no value"));
                    }
                    if std::mem::replace(&mut deleted, true) {
                        return Err(ManifestError::NonCanonical("duplicate deleted record"));
                    }
                } else if tag == TAG_EXPIRES {
                    let mut er = Reader { buf: value, pos: 0 };
                    let after = er.varint("expires")?;
                    if !er.is_empty() {
                        return Err(ManifestError::NonCanonical("trailing bytes in expires"));
                    }
                    if expires_after.replace(after).is_some() {
                        return Err(ManifestError::NonCanonical("duplicate expires record"));
                    }
                } else if tag == TAG_PRIORITY {
                    let p = match value {
                        [b] => Priority::from_byte(*b),
                        _ => None,
                    }
                    .ok_or_else(|| invalid("priority", "one byte: 0 bulk, 1 normal, 2 high"))?;
                    if priority.replace(p).is_some() {
                        return Err(ManifestError::NonCanonical("duplicate priority record"));
                    }
                } else if tag % 2 == 1 {
                    return Err(ManifestError::CriticalExtension(tag));
                } else {
                    unknown.push((tag, value.to_vec()));
                }
            }
        }
        if !r.is_empty() {
            return Err(ManifestError::NonCanonical("trailing bytes"));
        }
        let expires = match expires_after {
            Some(after) => Some(
                date.checked_add(after)
                    .ok_or_else(|| invalid("expires", "past the end of time"))?,
            ),
            None => None,
        };
        let manifest = Manifest {
            id,
            version,
            length,
            hash,
            journal,
            date,
            service,
            name,
            sender,
            recipient,
            sealed,
            deleted,
            expires,
            priority,
            fields,
            unknown,
        };
        manifest.validate()?;
        // One encoding per manifest: anything the encoder would write differently (field
        // order, packing choice, service spelled out although it has a code) is refused.
        if manifest.encode_body() != body {
            return Err(ManifestError::NonCanonical(
                "fields not in canonical order or form",
            ));
        }
        Ok(Self {
            manifest,
            bytes: bytes.to_vec(),
        })
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The canonical encoding, signature included.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn id(&self) -> BundleId {
        self.manifest.id
    }

    pub fn version(&self) -> u64 {
        self.manifest.version
    }

    /// The JSON view for people and the HTTP API.
    pub fn to_json(&self) -> ManifestJson {
        let m = &self.manifest;
        ManifestJson {
            id: m.id,
            version: m.version,
            length: m.length,
            hash: m.hash.to_hex(),
            journal: m.journal,
            date: m.date,
            date_utc: format_utc(m.date),
            service: m.service.clone(),
            name: m.name.clone(),
            sender: m.sender,
            recipient: m.recipient,
            sealed: m.sealed,
            plain_length: m
                .sealed
                .filter(|s| *s == crate::sealed::SEALED_V1)
                .and_then(|_| crate::sealed::plain_len(m.length)),
            deleted: m.deleted,
            expires: m.expires,
            expires_utc: m.expires.map(format_utc),
            priority: m.effective_priority(),
            fields: m.fields.clone(),
            unknown_extensions: m.unknown.iter().map(|(t, _)| *t).collect(),
            manifest_bytes: self.bytes.len(),
        }
    }
}

/// The JSON view of a manifest (read back by clients of the HTTP API).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ManifestJson {
    pub id: BundleId,
    pub version: u64,
    pub length: u64,
    pub hash: String,
    pub journal: bool,
    pub date: u64,
    pub date_utc: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<Identity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipient: Option<Identity>,
    /// The sealing scheme, when the payload is sealed to the recipient.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sealed: Option<u8>,
    /// The length of the payload inside the sealed one, when the scheme is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plain_length: Option<u64>,
    /// A tombstone: the author deleted the bundle.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// Unix seconds after which the bundle is dropped everywhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_utc: Option<String>,
    /// The priority it is sent with (its own, else its service's default).
    #[serde(default)]
    pub priority: Priority,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_extensions: Vec<u64>,
    pub manifest_bytes: usize,
}

/// `YYYY-MM-DDTHH:MM:SSZ` for Unix seconds (civil-from-days, proleptic Gregorian).
pub(crate) fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests;
