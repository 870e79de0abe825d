//! Sealed payloads: a payload encrypted to one node's identity key.
//!
//! Relays verify and carry a sealed payload like any other (the manifest's length and
//! hash are those of the sealed bytes) but cannot read it. Layout, byte by byte, in
//! `docs/bundle-format.md` ("Sealed payloads"):
//!
//! ```text
//! key box   80 B   libsodium crypto_box_seal of a random 32-byte content key,
//!                  to the X25519 form of the recipient's Ed25519 identity
//! chunk 0   up to 64 KiB + 16 B   ChaCha20-Poly1305 under the content key,
//! chunk 1   ...                   nonce = chunk index (11 B, big-endian) || final flag,
//! ...                             associated data = the bundle id
//! ```
//!
//! Chunking lets a payload of any size be sealed and opened in one pass with one chunk in
//! memory; the index and final flag in the nonce (the STREAM construction) make dropped,
//! reordered, truncated or extended chunks fail to open. Binding the bundle id stops a
//! sealed payload from being re-published under another bundle's manifest.
//!
//! This module does no I/O of its own: [`SealReader`], [`OpenReader`] and [`OpenWriter`]
//! wrap the caller's streams, and randomness comes from the caller.

use std::io::{self, Read, Write};

use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{ChaCha20Poly1305, KeyInit, Nonce, Tag};
use rand_core::CryptoRngCore;

use crate::keys::{BundleId, Identity, SecretKey, verifying_key};

/// The manifest's code for this sealing scheme (the value of its sealed record).
pub const SEALED_V1: u8 = 1;
/// Plaintext bytes per chunk; every chunk but the last holds exactly this many.
pub const CHUNK_LEN: usize = 64 * 1024;
/// Poly1305 tag after each chunk.
pub const TAG_LEN: usize = 16;
/// The sealed box holding the content key: ephemeral X25519 key, tag, key.
pub const KEY_BOX_LEN: usize = 32 + 16 + 32;

const SEALED_CHUNK: usize = CHUNK_LEN + TAG_LEN;

/// Why a payload could not be sealed or opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    #[error(
        "{0} is not a usable node key (not an Ed25519 point, or one of small order); a payload cannot be sealed to it"
    )]
    BadRecipient(Identity),
    #[error(
        "the sealed payload does not open with this node's key: it is sealed to another node, or its key box is damaged"
    )]
    NotForThisKey,
    #[error("the sealed payload is {len} bytes, shorter than its {KEY_BOX_LEN}-byte key box")]
    KeyBoxTruncated { len: usize },
    #[error("the sealed payload is truncated: it ends after {chunks} chunk(s) without a final one")]
    Truncated { chunks: u64 },
    #[error(
        "chunk {index} of the sealed payload does not authenticate: the payload is damaged, or was sealed for another bundle"
    )]
    Damaged { index: u64 },
    #[error("the sealed payload has bytes after its final chunk (chunk {index})")]
    TrailingData { index: u64 },
    #[error("a chunk to seal is {len} bytes; chunks are {CHUNK_LEN} bytes, the last one at most")]
    ChunkLength { len: usize },
    #[error(
        "the payload is sealed with scheme {0}, which this version of skywave cannot open; upgrade to read it"
    )]
    UnknownScheme(u8),
    #[error("sealed to node {recipient}; this node ({me}) carries it but cannot read it")]
    NotTheRecipient { recipient: Identity, me: Identity },
    #[error("the payload is sealed but names no recipient")]
    NoRecipient,
}

/// Whether a payload must be opened before it is handed out as the content: false for
/// one in clear, true for one sealed to `me`; an error naming the recipient for one this
/// node only carries, so sealed bytes are never given out as the content.
pub fn must_open(
    sealed: Option<u8>,
    recipient: Option<Identity>,
    me: &Identity,
) -> Result<bool, SealError> {
    let Some(scheme) = sealed else {
        return Ok(false);
    };
    if scheme != SEALED_V1 {
        return Err(SealError::UnknownScheme(scheme));
    }
    match recipient {
        Some(r) if r == *me => Ok(true),
        Some(recipient) => Err(SealError::NotTheRecipient { recipient, me: *me }),
        // Manifest validation refuses a sealed bundle without a recipient.
        None => Err(SealError::NoRecipient),
    }
}

/// A [`must_open`] refusal about bundle `id`, as a sentence.
pub fn refusal(id: &BundleId, e: &SealError) -> String {
    match e {
        SealError::NotTheRecipient { .. } => format!("bundle {id} is {e}"),
        _ => format!("bundle {id}: {e}"),
    }
}

impl SealError {
    /// The sealing error inside an I/O error from one of this module's readers or
    /// writers, if that is what it carries.
    pub fn from_io(e: &io::Error) -> Option<&SealError> {
        e.get_ref()?.downcast_ref()
    }
}

impl From<SealError> for io::Error {
    fn from(e: SealError) -> Self {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

/// Length of the sealed form of a payload of `plain` bytes.
pub fn sealed_len(plain: u64) -> u64 {
    let chunks = plain.div_ceil(CHUNK_LEN as u64).max(1);
    KEY_BOX_LEN as u64 + plain + chunks * TAG_LEN as u64
}

/// Length of the payload inside a sealed payload of `sealed` bytes, or None when no
/// sealed payload has that length.
pub fn plain_len(sealed: u64) -> Option<u64> {
    let body = sealed.checked_sub(KEY_BOX_LEN as u64)?;
    let chunks = body.div_ceil(SEALED_CHUNK as u64).max(1);
    let last = body - (chunks - 1) * SEALED_CHUNK as u64;
    (last >= TAG_LEN as u64).then(|| body - chunks * TAG_LEN as u64)
}

/// The nonce of chunk `index`: the index as 11 big-endian bytes, then 1 for the final
/// chunk or 0.
fn nonce(index: u64, last: bool) -> Nonce {
    let mut n = [0u8; 12];
    n[3..11].copy_from_slice(&index.to_be_bytes());
    n[11] = u8::from(last);
    n.into()
}

/// The X25519 key a payload for `recipient` is sealed to. Small-order points are
/// refused: anyone could open a box sealed to one.
fn recipient_key(recipient: &Identity) -> Result<crypto_box::PublicKey, SealError> {
    let vk = verifying_key(recipient.as_bytes())
        .filter(|k| !k.is_weak())
        .ok_or(SealError::BadRecipient(*recipient))?;
    Ok(crypto_box::PublicKey::from_bytes(
        vk.to_montgomery().to_bytes(),
    ))
}

/// Seals a payload chunk by chunk. Each chunk is sealed by [`Sealer::seal_next`], the
/// last by [`Sealer::seal_last`], which consumes the sealer so nothing can follow it.
pub struct Sealer {
    cipher: ChaCha20Poly1305,
    bundle: BundleId,
    index: u64,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer")
            .field("bundle", &self.bundle)
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl Sealer {
    /// A sealer for a payload of bundle `bundle` addressed to `recipient`, and the key
    /// box that starts the sealed payload. Draws 64 bytes from `rng`: the content key,
    /// then the key box's ephemeral secret.
    pub fn new(
        recipient: &Identity,
        bundle: &BundleId,
        rng: &mut impl CryptoRngCore,
    ) -> Result<(Self, [u8; KEY_BOX_LEN]), SealError> {
        let pk = recipient_key(recipient)?;
        let mut key = [0u8; 32];
        rng.fill_bytes(&mut key);
        // Sealing 32 bytes cannot fail, and always gives 80; should it ever, the key is
        // unusable for the recipient, which is what the error says.
        let boxed = pk
            .seal(rng, &key)
            .map_err(|_| SealError::BadRecipient(*recipient))?;
        let key_box: [u8; KEY_BOX_LEN] = boxed
            .try_into()
            .map_err(|_| SealError::BadRecipient(*recipient))?;
        let sealer = Self {
            cipher: ChaCha20Poly1305::new(&key.into()),
            bundle: *bundle,
            index: 0,
        };
        Ok((sealer, key_box))
    }

    /// Seals a chunk of exactly [`CHUNK_LEN`] bytes in place and appends its tag.
    pub fn seal_next(&mut self, chunk: &mut Vec<u8>) -> Result<(), SealError> {
        if chunk.len() != CHUNK_LEN {
            return Err(SealError::ChunkLength { len: chunk.len() });
        }
        self.seal(chunk, false);
        self.index += 1;
        Ok(())
    }

    /// Seals the final chunk (at most [`CHUNK_LEN`] bytes, empty only for an empty
    /// payload) in place and appends its tag.
    pub fn seal_last(mut self, chunk: &mut Vec<u8>) -> Result<(), SealError> {
        if chunk.len() > CHUNK_LEN {
            return Err(SealError::ChunkLength { len: chunk.len() });
        }
        self.seal(chunk, true);
        Ok(())
    }

    /// `chunk` is at most [`CHUNK_LEN`] bytes (checked by the callers above), far below
    /// the 256 GiB at which ChaCha20-Poly1305 refuses, so it cannot fail.
    fn seal(&mut self, chunk: &mut Vec<u8>, last: bool) {
        let tag = self.cipher.encrypt_in_place_detached(
            &nonce(self.index, last),
            self.bundle.as_bytes(),
            chunk,
        );
        match tag {
            Ok(tag) => chunk.extend_from_slice(&tag),
            // Unreachable (see above); never leave plaintext where ciphertext belongs.
            Err(_) => chunk.clear(),
        }
    }
}

/// Opens a sealed payload chunk by chunk, the mirror of [`Sealer`].
pub struct Opener {
    cipher: ChaCha20Poly1305,
    bundle: BundleId,
    index: u64,
}

impl std::fmt::Debug for Opener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opener")
            .field("bundle", &self.bundle)
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl Opener {
    /// Opens the key box with `node` (the recipient's identity key).
    pub fn new(key_box: &[u8], node: &SecretKey, bundle: &BundleId) -> Result<Self, SealError> {
        if key_box.len() != KEY_BOX_LEN {
            return Err(SealError::KeyBoxTruncated { len: key_box.len() });
        }
        let sk = crypto_box::SecretKey::from_bytes(node.x25519_secret());
        let key: [u8; 32] = sk
            .unseal(key_box)
            .ok()
            .and_then(|k| k.try_into().ok())
            .ok_or(SealError::NotForThisKey)?;
        Ok(Self {
            cipher: ChaCha20Poly1305::new(&key.into()),
            bundle: *bundle,
            index: 0,
        })
    }

    /// Opens a non-final chunk ([`CHUNK_LEN`] bytes and its tag) in place, leaving the
    /// plaintext.
    pub fn open_next(&mut self, chunk: &mut Vec<u8>) -> Result<(), SealError> {
        if let Err(e) = self.open(chunk, false) {
            // Tell a final chunk followed by stray bytes from a damaged one.
            return Err(match self.open(chunk, true) {
                Ok(()) => SealError::TrailingData { index: self.index },
                Err(_) => e,
            });
        }
        self.index += 1;
        Ok(())
    }

    /// Opens the final chunk in place, leaving the plaintext.
    pub fn open_last(mut self, chunk: &mut Vec<u8>) -> Result<(), SealError> {
        if chunk.len() < TAG_LEN {
            return Err(SealError::Truncated { chunks: self.index });
        }
        if let Err(e) = self.open(chunk, true) {
            // A whole chunk that opens as non-final: the chunks after it are missing.
            return Err(match self.open(chunk, false) {
                Ok(()) => SealError::Truncated {
                    chunks: self.index + 1,
                },
                Err(_) => e,
            });
        }
        Ok(())
    }

    /// Leaves `chunk` as it was on failure (the tag is checked before decrypting).
    fn open(&mut self, chunk: &mut Vec<u8>, last: bool) -> Result<(), SealError> {
        let damaged = SealError::Damaged { index: self.index };
        if chunk.len() < TAG_LEN || chunk.len() > SEALED_CHUNK {
            return Err(damaged);
        }
        let at = chunk.len() - TAG_LEN;
        let tag = Tag::clone_from_slice(&chunk[at..]);
        self.cipher
            .decrypt_in_place_detached(
                &nonce(self.index, last),
                self.bundle.as_bytes(),
                &mut chunk[..at],
                &tag,
            )
            .map_err(|_| damaged)?;
        chunk.truncate(at);
        Ok(())
    }
}

/// Seals a payload held in memory (see [`SealReader`] for streams).
pub fn seal(
    plain: &[u8],
    recipient: &Identity,
    bundle: &BundleId,
    rng: &mut impl CryptoRngCore,
) -> Result<Vec<u8>, SealError> {
    let (mut sealer, key_box) = Sealer::new(recipient, bundle, rng)?;
    let mut out = Vec::with_capacity(sealed_len(plain.len() as u64) as usize);
    out.extend_from_slice(&key_box);
    let mut rest = plain;
    let mut chunk = Vec::with_capacity(SEALED_CHUNK);
    while rest.len() > CHUNK_LEN {
        chunk.clear();
        chunk.extend_from_slice(&rest[..CHUNK_LEN]);
        sealer.seal_next(&mut chunk)?;
        out.extend_from_slice(&chunk);
        rest = &rest[CHUNK_LEN..];
    }
    chunk.clear();
    chunk.extend_from_slice(rest);
    sealer.seal_last(&mut chunk)?;
    out.extend_from_slice(&chunk);
    Ok(out)
}

/// Opens a sealed payload held in memory (see [`OpenReader`] for streams).
pub fn open(sealed: &[u8], node: &SecretKey, bundle: &BundleId) -> Result<Vec<u8>, SealError> {
    let key_box = sealed
        .get(..KEY_BOX_LEN)
        .ok_or(SealError::KeyBoxTruncated { len: sealed.len() })?;
    let mut opener = Opener::new(key_box, node, bundle)?;
    let mut rest = &sealed[KEY_BOX_LEN..];
    let mut out = Vec::with_capacity(plain_len(sealed.len() as u64).unwrap_or(0) as usize);
    let mut chunk = Vec::with_capacity(SEALED_CHUNK);
    while rest.len() > SEALED_CHUNK {
        chunk.clear();
        chunk.extend_from_slice(&rest[..SEALED_CHUNK]);
        opener.open_next(&mut chunk)?;
        out.extend_from_slice(&chunk);
        rest = &rest[SEALED_CHUNK..];
    }
    chunk.clear();
    chunk.extend_from_slice(rest);
    opener.open_last(&mut chunk)?;
    out.extend_from_slice(&chunk);
    Ok(out)
}

/// Reads up to `n` more bytes of `r` onto the end of `buf` (fewer only at the end).
fn read_up_to(r: &mut impl Read, buf: &mut Vec<u8>, n: usize) -> io::Result<()> {
    r.take(n as u64).read_to_end(buf).map(|_| ())
}

/// The error of every read after a failed one.
fn stopped() -> io::Error {
    io::Error::other("the sealed stream stopped at an earlier error")
}

/// One direction of the chunked cipher, as [`ChunkReader`] drives it: sealing
/// (plaintext chunks in, sealed out) or opening (sealed chunks in, plaintext out).
pub trait ChunkCipher {
    /// Input bytes of every chunk but the last.
    const CHUNK_IN: usize;
    /// Turns a whole chunk that is not the last, in place.
    fn next_chunk(&mut self, chunk: &mut Vec<u8>) -> Result<(), SealError>;
    /// Turns the last chunk (at most `CHUNK_IN` bytes), in place.
    fn last_chunk(self, chunk: &mut Vec<u8>) -> Result<(), SealError>;
}

impl ChunkCipher for Sealer {
    const CHUNK_IN: usize = CHUNK_LEN;

    fn next_chunk(&mut self, chunk: &mut Vec<u8>) -> Result<(), SealError> {
        self.seal_next(chunk)
    }

    fn last_chunk(self, chunk: &mut Vec<u8>) -> Result<(), SealError> {
        self.seal_last(chunk)
    }
}

impl ChunkCipher for Opener {
    const CHUNK_IN: usize = SEALED_CHUNK;

    fn next_chunk(&mut self, chunk: &mut Vec<u8>) -> Result<(), SealError> {
        self.open_next(chunk)
    }

    fn last_chunk(self, chunk: &mut Vec<u8>) -> Result<(), SealError> {
        self.open_last(chunk)
    }
}

/// Reads `inner` a chunk at a time and yields it sealed or opened by `C`, one chunk in
/// memory. An error (reading `inner`, or a chunk that does not open) ends the stream:
/// what the buffer held is dropped, never handed out, and every later read fails.
#[derive(Debug)]
pub struct ChunkReader<R, C> {
    inner: R,
    cipher: Option<C>,
    /// Output not yet handed out, from `pos`.
    out: Vec<u8>,
    pos: usize,
    /// A byte read past the current chunk to learn that it was not the last.
    carry: Option<u8>,
    /// A read failed: every later read fails too.
    failed: bool,
}

/// Reads a payload from `inner` and yields its sealed form (the key box first).
pub type SealReader<R> = ChunkReader<R, Sealer>;

/// Reads a sealed payload from `inner` and yields the plaintext.
///
/// Each chunk is authenticated before any of its bytes are handed out, so what is read
/// is always genuine; a damaged or truncated payload ends in an error of kind
/// `InvalidData` carrying a [`SealError`] (see [`SealError::from_io`]) after the chunks
/// before the damage.
pub type OpenReader<R> = ChunkReader<R, Opener>;

impl<R: Read> ChunkReader<R, Sealer> {
    /// See [`Sealer::new`] for what is drawn from `rng`.
    pub fn new(
        inner: R,
        recipient: &Identity,
        bundle: &BundleId,
        rng: &mut impl CryptoRngCore,
    ) -> Result<Self, SealError> {
        let (sealer, key_box) = Sealer::new(recipient, bundle, rng)?;
        let mut r = Self::with(inner, sealer);
        r.out.extend_from_slice(&key_box);
        Ok(r)
    }
}

impl<R: Read> ChunkReader<R, Opener> {
    /// Reads and opens the key box with `node`, the recipient's identity key.
    pub fn new(mut inner: R, node: &SecretKey, bundle: &BundleId) -> io::Result<Self> {
        let mut key_box = Vec::with_capacity(KEY_BOX_LEN);
        read_up_to(&mut inner, &mut key_box, KEY_BOX_LEN)?;
        let opener = Opener::new(&key_box, node, bundle)?;
        Ok(Self::with(inner, opener))
    }
}

impl<R: Read, C: ChunkCipher> ChunkReader<R, C> {
    fn with(inner: R, cipher: C) -> Self {
        Self {
            inner,
            cipher: Some(cipher),
            out: Vec::with_capacity(SEALED_CHUNK + 1),
            pos: 0,
            carry: None,
            failed: false,
        }
    }

    fn fail(&mut self) {
        self.failed = true;
        self.cipher = None;
        self.out.clear();
        self.pos = 0;
    }

    fn fill(&mut self) -> io::Result<()> {
        let Some(cipher) = self.cipher.as_mut() else {
            return Ok(());
        };
        self.out.clear();
        self.pos = 0;
        self.out.extend(self.carry.take());
        let want = C::CHUNK_IN + 1 - self.out.len();
        read_up_to(&mut self.inner, &mut self.out, want)?;
        if self.out.len() > C::CHUNK_IN {
            self.carry = self.out.pop();
            cipher.next_chunk(&mut self.out)?;
        } else if let Some(cipher) = self.cipher.take() {
            cipher.last_chunk(&mut self.out)?;
        }
        Ok(())
    }
}

impl<R: Read, C: ChunkCipher> Read for ChunkReader<R, C> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.failed {
            return Err(stopped());
        }
        // An empty opened chunk (only an empty payload has one) yields nothing: read on.
        while self.pos == self.out.len() && self.cipher.is_some() {
            if let Err(e) = self.fill() {
                // The buffer may hold input read before the error (plaintext, or bytes
                // not authenticated): it is never handed out, and nothing more comes,
                // not even an end that would look like a clean one.
                self.fail();
                return Err(e);
            }
        }
        let n = buf.len().min(self.out.len() - self.pos);
        buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Takes a sealed payload written to it and writes the plaintext to `inner`, for
/// sources that push bytes rather than being read. Call [`OpenWriter::finish`] at the
/// end: the final chunk is opened only then.
#[derive(Debug)]
pub struct OpenWriter<W> {
    inner: W,
    node: SecretKey,
    bundle: BundleId,
    /// Opened once the key box has arrived.
    opener: Option<Opener>,
    /// Sealed bytes not yet opened: the key box, then at most one chunk and a byte.
    buf: Vec<u8>,
    /// A write failed: every later write, and `finish`, fail too.
    failed: bool,
}

impl<W: Write> OpenWriter<W> {
    pub fn new(inner: W, node: &SecretKey, bundle: &BundleId) -> Self {
        Self {
            inner,
            node: node.clone(),
            bundle: *bundle,
            opener: None,
            buf: Vec::with_capacity(SEALED_CHUNK + 1),
            failed: false,
        }
    }

    /// Opens the final chunk, writes it and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        if self.failed {
            return Err(stopped());
        }
        let opener = match self.opener.take() {
            Some(o) => o,
            None => {
                return Err(SealError::KeyBoxTruncated {
                    len: self.buf.len(),
                }
                .into());
            }
        };
        opener.open_last(&mut self.buf)?;
        self.inner.write_all(&self.buf)?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for OpenWriter<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.failed {
            return Err(stopped());
        }
        let res = self.write_sealed(data);
        if res.is_err() {
            self.failed = true;
            self.opener = None;
            self.buf.clear();
        }
        res
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> OpenWriter<W> {
    fn write_sealed(&mut self, data: &[u8]) -> io::Result<usize> {
        let Some(opener) = self.opener.as_mut() else {
            let n = data.len().min(KEY_BOX_LEN - self.buf.len());
            self.buf.extend_from_slice(&data[..n]);
            if self.buf.len() == KEY_BOX_LEN {
                self.opener = Some(Opener::new(&self.buf, &self.node, &self.bundle)?);
                self.buf.clear();
            }
            return Ok(n);
        };
        // Keep the last chunk back until `finish`: only then is it known to be final.
        let n = data.len().min(SEALED_CHUNK + 1 - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() > SEALED_CHUNK {
            let carry = self.buf.pop();
            opener.open_next(&mut self.buf)?;
            self.inner.write_all(&self.buf)?;
            self.buf.clear();
            self.buf.extend(carry);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
