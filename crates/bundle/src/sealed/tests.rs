use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use super::*;

/// The recipient node's identity key.
fn node() -> SecretKey {
    SecretKey::from_bytes(&[0x11; 32])
}

/// The bundle the payload belongs to (the worked example's author key).
fn bundle() -> BundleId {
    SecretKey::from_bytes(&[0x07; 32]).bundle_id()
}

fn rng() -> ChaCha20Rng {
    ChaCha20Rng::from_seed([0x42; 32])
}

const PLAIN: &[u8] = b"Water at the north camp is low; send two jerrycans.";

/// `seal(PLAIN)` to node() for bundle() with rng(). libsodium (crypto_box_seal_open,
/// then crypto_aead_chacha20poly1305_ietf_decrypt with the bundle id as associated data)
/// opens these bytes, and rebuilding them from libsodium's crypto_box and IETF
/// ChaCha20-Poly1305 with the same two random draws gives them byte for byte.
const FIXED_SEALED_HEX: &str = concat!(
    // key box: ephemeral X25519 public key, Poly1305 tag, sealed 32-byte content key
    "72a58f04d217d464496f2b9b6300e97b34e37b9eaf6a4b444a9ca5e32d13e27f",
    "ccb5e28fa5ebd02a9f7cfd198043963d",
    "cf1b48b9ab24335f1a1b5ab413936895c30e71bb4cda83e85c8e2381e5fd01fc",
    // chunk 0, final: 51 bytes of ciphertext, then its tag
    "dc79422d2f8ed32ca7958808b7e7f5157520e20f815eccd3ef8a6c7142d4e05d4bd7be077035f8b4039980",
    "d18daa8ac6182fac",
    "dadf944b3131daea1bf56ce8a505f209",
);

fn fixed() -> Vec<u8> {
    hex::decode(FIXED_SEALED_HEX).unwrap()
}

/// A plaintext of three chunks (two full, one of 1000 bytes).
fn three_chunks() -> Vec<u8> {
    (0..2 * CHUNK_LEN + 1000)
        .map(|i| (i * 7 + 3) as u8)
        .collect()
}

#[test]
fn fixed_bytes_of_a_sealed_payload() {
    let mut r = rng();
    let s = seal(PLAIN, &node().identity(), &bundle(), &mut r).unwrap();
    assert_eq!(hex::encode(&s), FIXED_SEALED_HEX);
    // Structure: key box, then one final chunk of the plaintext's length plus a tag.
    assert_eq!(s.len(), KEY_BOX_LEN + PLAIN.len() + TAG_LEN);
    assert_eq!(s.len() as u64, sealed_len(PLAIN.len() as u64));
    assert_eq!(plain_len(s.len() as u64), Some(PLAIN.len() as u64));
    // The key box starts with the ephemeral public key of the second 32 bytes drawn
    // (the first 32 are the content key).
    let mut draws = rng();
    let mut drawn = [0u8; 64];
    rand_core::RngCore::fill_bytes(&mut draws, &mut drawn);
    let eph: [u8; 32] = drawn[32..].try_into().unwrap();
    let eph_pub = crypto_box::SecretKey::from_bytes(eph).public_key();
    assert_eq!(&s[..32], eph_pub.as_bytes());
    // The content key comes out of the key box with the recipient's X25519 secret.
    let inner = crypto_box::SecretKey::from_bytes(node().x25519_secret())
        .unseal(&s[..KEY_BOX_LEN])
        .unwrap();
    assert_eq!(inner, &drawn[..32]);
    // The plaintext does not appear in the sealed bytes.
    assert!(!s.windows(8).any(|w| PLAIN.windows(8).any(|p| p == w)));
    assert_eq!(open(&s, &node(), &bundle()).unwrap(), PLAIN);
}

/// Made by libsodium itself: `crypto_box_seal(content key 0x40..0x5f, X25519 of node())`
/// (randomized, so run once and kept), then one final chunk sealed with
/// `crypto_aead_chacha20poly1305_ietf_encrypt(msg, ad = bundle id, nonce = 0^11 || 1)`.
const LIBSODIUM_SEALED_HEX: &str = concat!(
    "2284352ed222c6a8d6c073e1016a4448192e8b7730bbfd7f51621ed66ffa9735",
    "21118e9c7bbe4bef4041ece5d7ca490a",
    "112ccfcfa45e2a9c66af6c4daf17ff70410da186a3b0e6982e7edf7458a77717",
    "43d44bdc618bbbfe2b903dc04baaf0f84153c45643296a57ed7b19e34af1f2",
    "70feee08c18b1df7aee34f6b563d3bb8",
);

#[test]
fn a_payload_sealed_by_libsodium_opens() {
    let s = hex::decode(LIBSODIUM_SEALED_HEX).unwrap();
    let key = crypto_box::SecretKey::from_bytes(node().x25519_secret())
        .unseal(&s[..KEY_BOX_LEN])
        .unwrap();
    assert_eq!(key, (0x40..0x60).collect::<Vec<u8>>());
    assert_eq!(
        open(&s, &node(), &bundle()).unwrap(),
        b"sealed by libsodium for skywave"
    );
}

/// Chunk nonces past the first and the final flag, against the same payload rebuilt
/// from libsodium's primitives (BLAKE3 of the 132,200 bytes it gave).
#[test]
fn three_chunks_match_libsodium() {
    let plain = three_chunks();
    let s = seal(&plain, &node().identity(), &bundle(), &mut rng()).unwrap();
    assert_eq!(s.len(), 132_200);
    assert_eq!(s.len(), KEY_BOX_LEN + plain.len() + 3 * TAG_LEN);
    assert_eq!(
        blake3::hash(&s).to_hex().as_str(),
        "c997284d27a3b22a01dfaf03436eb08e9dac0a59dd682a66fdb0e35adbb31e37"
    );
    assert_eq!(open(&s, &node(), &bundle()).unwrap(), plain);
}

#[test]
fn another_key_cannot_open() {
    let other = SecretKey::from_bytes(&[0x22; 32]);
    assert_eq!(
        open(&fixed(), &other, &bundle()),
        Err(SealError::NotForThisKey)
    );
    // The author of the bundle cannot read what it sealed to someone else either.
    let author = SecretKey::from_bytes(&[0x07; 32]);
    assert_eq!(
        open(&fixed(), &author, &bundle()),
        Err(SealError::NotForThisKey)
    );
    assert!(
        SealError::NotForThisKey
            .to_string()
            .contains("sealed to another node")
    );
}

#[test]
fn a_payload_moved_to_another_bundle_does_not_open() {
    let other = SecretKey::from_bytes(&[0x08; 32]).bundle_id();
    assert_eq!(
        open(&fixed(), &node(), &other),
        Err(SealError::Damaged { index: 0 })
    );
}

#[test]
fn any_flipped_byte_fails() {
    let good = fixed();
    for i in 0..good.len() {
        let mut s = good.clone();
        s[i] ^= 0x01;
        let want = if i < KEY_BOX_LEN {
            SealError::NotForThisKey
        } else {
            SealError::Damaged { index: 0 }
        };
        assert_eq!(open(&s, &node(), &bundle()), Err(want), "byte {i}");
    }
    // In a later chunk, the error names it.
    let mut s = seal(&three_chunks(), &node().identity(), &bundle(), &mut rng()).unwrap();
    s[KEY_BOX_LEN + CHUNK_LEN + TAG_LEN + 5] ^= 0x80;
    assert_eq!(
        open(&s, &node(), &bundle()),
        Err(SealError::Damaged { index: 1 })
    );
}

#[test]
fn truncation_fails() {
    let good = fixed();
    for len in [0, 1, KEY_BOX_LEN - 1] {
        assert_eq!(
            open(&good[..len], &node(), &bundle()),
            Err(SealError::KeyBoxTruncated { len })
        );
    }
    for len in [KEY_BOX_LEN, KEY_BOX_LEN + TAG_LEN - 1] {
        assert_eq!(
            open(&good[..len], &node(), &bundle()),
            Err(SealError::Truncated { chunks: 0 })
        );
    }
    for len in [KEY_BOX_LEN + TAG_LEN, good.len() - 1] {
        assert_eq!(
            open(&good[..len], &node(), &bundle()),
            Err(SealError::Damaged { index: 0 })
        );
    }
    // Cut at a chunk boundary: every chunk present opens, but none is final.
    let s = seal(&three_chunks(), &node().identity(), &bundle(), &mut rng()).unwrap();
    for chunks in [1, 2] {
        let cut = KEY_BOX_LEN + chunks * (CHUNK_LEN + TAG_LEN);
        assert_eq!(
            open(&s[..cut], &node(), &bundle()),
            Err(SealError::Truncated {
                chunks: chunks as u64
            })
        );
        let err = OpenReader::new(&s[..cut], &node(), &bundle())
            .and_then(|mut r| r.read_to_end(&mut Vec::new()))
            .unwrap_err();
        assert_eq!(
            SealError::from_io(&err),
            Some(&SealError::Truncated {
                chunks: chunks as u64
            })
        );
    }
}

#[test]
fn reordered_chunks_fail() {
    let s = seal(&three_chunks(), &node().identity(), &bundle(), &mut rng()).unwrap();
    let c = CHUNK_LEN + TAG_LEN;
    let mut swapped = s[..KEY_BOX_LEN].to_vec();
    swapped.extend_from_slice(&s[KEY_BOX_LEN + c..KEY_BOX_LEN + 2 * c]);
    swapped.extend_from_slice(&s[KEY_BOX_LEN..KEY_BOX_LEN + c]);
    swapped.extend_from_slice(&s[KEY_BOX_LEN + 2 * c..]);
    assert_eq!(
        open(&swapped, &node(), &bundle()),
        Err(SealError::Damaged { index: 0 })
    );
}

#[test]
fn bytes_after_the_final_chunk_fail() {
    // A payload of exactly one chunk: its only chunk is full and final.
    let plain = vec![9u8; CHUNK_LEN];
    let mut s = seal(&plain, &node().identity(), &bundle(), &mut rng()).unwrap();
    assert_eq!(open(&s, &node(), &bundle()).unwrap(), plain);
    s.extend_from_slice(&[0; 20]);
    assert_eq!(
        open(&s, &node(), &bundle()),
        Err(SealError::TrailingData { index: 0 })
    );
}

#[test]
fn unusable_recipients_are_refused() {
    // y = 2 is not on the curve; the neutral point (y = 1) has order 1.
    let mut off_curve = [0u8; 32];
    off_curve[0] = 2;
    let mut neutral = [0u8; 32];
    neutral[0] = 1;
    for bad in [Identity(off_curve), Identity(neutral)] {
        assert_eq!(
            seal(PLAIN, &bad, &bundle(), &mut rng()),
            Err(SealError::BadRecipient(bad))
        );
    }
}

#[test]
fn lengths() {
    assert_eq!(sealed_len(0), 96);
    assert_eq!(sealed_len(CHUNK_LEN as u64), 80 + 65_536 + 16);
    assert_eq!(sealed_len(CHUNK_LEN as u64 + 1), 80 + 65_537 + 32);
    for n in [
        0,
        1,
        100,
        CHUNK_LEN - 1,
        CHUNK_LEN,
        CHUNK_LEN + 1,
        5 * CHUNK_LEN,
    ] {
        assert_eq!(plain_len(sealed_len(n as u64)), Some(n as u64), "{n}");
    }
    // No sealed payload is shorter than a key box and one tag, nor ends in a chunk too
    // short for its tag.
    for bad in [0, 79, 95] {
        assert_eq!(plain_len(bad), None, "{bad}");
    }
    let two = (KEY_BOX_LEN + CHUNK_LEN + TAG_LEN) as u64;
    for extra in 1..TAG_LEN as u64 {
        assert_eq!(plain_len(two + extra), None);
    }
    assert_eq!(plain_len(two + TAG_LEN as u64), Some(CHUNK_LEN as u64));
}

/// Reads `r` to the end `step` bytes at a time.
fn read_in_steps(mut r: impl Read, step: usize) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; step];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// Writes `data` to `w` `step` bytes at a time, honouring short writes.
fn write_in_steps(w: &mut impl Write, data: &[u8], step: usize) -> io::Result<()> {
    let mut rest = data;
    while !rest.is_empty() {
        let n = w.write(&rest[..step.min(rest.len())])?;
        rest = &rest[n..];
    }
    Ok(())
}

#[test]
fn streams_give_the_same_bytes_at_chunk_edges() {
    for len in [
        0,
        1,
        CHUNK_LEN - 1,
        CHUNK_LEN,
        CHUNK_LEN + 1,
        2 * CHUNK_LEN,
        2 * CHUNK_LEN + 1000,
    ] {
        let plain: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let whole = seal(&plain, &node().identity(), &bundle(), &mut rng()).unwrap();
        assert_eq!(whole.len() as u64, sealed_len(len as u64), "{len}");
        for step in [7, 4096, 1 << 20] {
            let r = SealReader::new(&plain[..], &node().identity(), &bundle(), &mut rng()).unwrap();
            assert_eq!(read_in_steps(r, step).unwrap(), whole, "{len}/{step}");
            let r = OpenReader::new(&whole[..], &node(), &bundle()).unwrap();
            assert_eq!(read_in_steps(r, step).unwrap(), plain, "{len}/{step}");
            let mut w = OpenWriter::new(Vec::new(), &node(), &bundle());
            write_in_steps(&mut w, &whole, step).unwrap();
            assert_eq!(w.finish().unwrap(), plain, "{len}/{step}");
        }
    }
}

#[test]
fn writer_reports_damage_and_truncation() {
    let s = seal(&three_chunks(), &node().identity(), &bundle(), &mut rng()).unwrap();
    // Truncated inside the key box.
    let mut w = OpenWriter::new(Vec::new(), &node(), &bundle());
    w.write_all(&s[..40]).unwrap();
    let err = w.finish().unwrap_err();
    assert_eq!(
        SealError::from_io(&err),
        Some(&SealError::KeyBoxTruncated { len: 40 })
    );
    // Another node's key: refused as soon as the key box is in.
    let mut w = OpenWriter::new(Vec::new(), &SecretKey::from_bytes(&[0x22; 32]), &bundle());
    let err = w.write_all(&s).unwrap_err();
    assert_eq!(SealError::from_io(&err), Some(&SealError::NotForThisKey));
    assert!(
        w.write(&s[..10]).is_err() && w.finish().is_err(),
        "stays failed"
    );
    // A flipped byte in the last chunk shows only at the end.
    let mut bad = s.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let mut w = OpenWriter::new(Vec::new(), &node(), &bundle());
    w.write_all(&bad).unwrap();
    let err = w.finish().unwrap_err();
    assert_eq!(
        SealError::from_io(&err),
        Some(&SealError::Damaged { index: 2 })
    );
}

#[test]
fn a_reader_stops_at_the_first_bad_chunk() {
    let plain = three_chunks();
    let mut s = seal(&plain, &node().identity(), &bundle(), &mut rng()).unwrap();
    s[KEY_BOX_LEN + CHUNK_LEN + TAG_LEN] ^= 1;
    let mut r = OpenReader::new(&s[..], &node(), &bundle()).unwrap();
    let mut out = Vec::new();
    let err = r.read_to_end(&mut out).unwrap_err();
    assert_eq!(
        SealError::from_io(&err),
        Some(&SealError::Damaged { index: 1 })
    );
    // Only the authenticated first chunk came out, and nothing after the error, not
    // even an end that would look clean.
    assert_eq!(out, &plain[..CHUNK_LEN]);
    assert!(r.read(&mut [0u8; 16]).is_err());
}

/// A source that fails once after `ok` bytes, then would go on.
struct FailOnce {
    data: Vec<u8>,
    at: usize,
    ok: usize,
    failed: bool,
}

impl Read for FailOnce {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at >= self.ok && !self.failed {
            self.failed = true;
            return Err(io::Error::other("disk went away"));
        }
        let n = buf.len().min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// After the source fails mid-chunk, the plaintext already read is never handed out,
/// even to a caller that reads on.
#[test]
fn a_failed_source_never_leaks_plaintext() {
    let plain = vec![0x61u8; 3000];
    let src = FailOnce {
        data: plain.clone(),
        at: 0,
        ok: 1000,
        failed: false,
    };
    let mut r = SealReader::new(src, &node().identity(), &bundle(), &mut rng()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 512];
    let mut errors = 0;
    for _ in 0..20 {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => errors += 1,
        }
    }
    assert_eq!(
        errors,
        20 - got.len().div_ceil(512),
        "every read after it fails"
    );
    assert_eq!(got.len(), KEY_BOX_LEN, "only the key box came out");
    assert!(!got.windows(16).any(|w| w == &plain[..16]));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Arbitrary bytes never panic the opener; they fail with a sealing error.
    #[test]
    fn garbage_never_opens(data in proptest::collection::vec(any::<u8>(), 0..400)) {
        prop_assert!(open(&data, &node(), &bundle()).is_err());
        let r = OpenReader::new(&data[..], &node(), &bundle())
            .and_then(|r| read_in_steps(r, 13));
        prop_assert!(r.is_err());
    }

    /// Any payload round-trips through the streams, read in any step.
    #[test]
    fn round_trip(len in 0usize..3 * CHUNK_LEN, step in 1usize..70_000, seed in any::<u8>()) {
        let plain: Vec<u8> = (0..len).map(|i| (i as u8) ^ seed).collect();
        let mut r = ChaCha20Rng::from_seed([seed; 32]);
        let sealer = SealReader::new(&plain[..], &node().identity(), &bundle(), &mut r).unwrap();
        let sealed = read_in_steps(sealer, step).unwrap();
        prop_assert_eq!(sealed.len() as u64, sealed_len(len as u64));
        let opened = read_in_steps(OpenReader::new(&sealed[..], &node(), &bundle()).unwrap(), step);
        prop_assert_eq!(opened.unwrap(), plain);
    }
}
