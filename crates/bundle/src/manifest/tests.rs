use super::*;

fn key(n: u8) -> SecretKey {
    SecretKey::from_bytes(&[n; 32])
}

/// 2026-11-22T00:00:00Z
const DATE: u64 = 1_795_305_600;

fn small_manifest(k: &SecretKey) -> Manifest {
    let payload = [0x42u8; 100];
    let mut m = Manifest::new(k.bundle_id(), 1, 100, crate::hash_payload(&payload), DATE);
    m.service = Some("file".into());
    m.name = Some("hello-world-20-chars".into());
    m
}

#[test]
fn small_file_manifest_is_compact() {
    let k = key(7);
    let s = small_manifest(&k).sign(&k).unwrap();
    // flags + id + version + length + hash + date + service + name + signature
    assert_eq!(s.as_bytes().len(), 1 + 32 + 1 + 1 + 16 + 4 + 1 + 14 + 64);
    assert!(s.as_bytes().len() <= 140);
}

#[test]
fn fixed_bytes_of_small_manifest() {
    let k = key(7);
    let s = small_manifest(&k).sign(&k).unwrap();
    let b = s.as_bytes();
    assert_eq!(b[0], 0b0101_1000, "format v1, service and name present");
    assert_eq!(&b[1..33], k.public().as_slice());
    assert_eq!(b[33], 0x01, "version 1");
    assert_eq!(b[34], 100, "length 100");
    assert_eq!(&b[35..51], &crate::hash_payload(&[0x42; 100]).0);
    // 1795305600 - 1704067200 = 91238400 -> LEB128 80 e0 c0 2b
    assert_eq!(&b[51..55], &[0x80, 0xe0, 0xc0, 0x2b]);
    assert_eq!(b[55], 1, "service code 1 = file");
    assert_eq!(b[56], (20 << 1) | 1, "name: 20 characters, packed");
    // The whole encoding, signature included (Ed25519 signatures are deterministic).
    assert_eq!(hex::encode(b), FIXED_SMALL_HEX);
}

const FIXED_SMALL_HEX: &str = concat!(
    "58ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c0164a798e35bebd1ab",
    "922596845ee52997f980e0c02b012978c6248d0a717218a45cf09d001fab5fc0f5de72f3e7248e3b1076",
    "61c57e41ffb15b2fcd48b82db90fe194e0f4328d34315d8d41d591e69e348107e68487b8a53bd2933c49",
    "1d19a8a9ee88000d",
);

#[test]
fn round_trip_all_fields() {
    let k = key(9);
    let mut m = small_manifest(&k);
    m.sender = Some(Identity([1; 32]));
    m.recipient = Some(Identity([2; 32]));
    m.service = Some("weather.obs".into());
    m.fields.insert("station".into(), "VK5ABC".into());
    m.fields.insert("crc".into(), "ok".into());
    m.expires = Some(DATE + 7 * 86_400);
    m.priority = Some(Priority::High);
    m.unknown.push((8, vec![1, 2, 3]));
    let s = m.sign(&k).unwrap();
    let back = SignedManifest::decode(s.as_bytes()).unwrap();
    assert_eq!(back.manifest(), &m);
    assert_eq!(back.as_bytes(), s.as_bytes());
}

#[test]
fn journal_omits_length() {
    let k = key(3);
    let data = vec![5u8; 3000];
    let mut m = Manifest::new(k.bundle_id(), 3000, 3000, crate::hash_payload(&data), DATE);
    m.journal = true;
    let s = m.sign(&k).unwrap();
    let back = SignedManifest::decode(s.as_bytes()).unwrap();
    assert!(back.manifest().journal);
    assert_eq!(back.manifest().length, 3000);
    m.length = 10;
    assert!(matches!(
        m.sign(&k),
        Err(ManifestError::InvalidField {
            field: "version",
            ..
        })
    ));
}

#[test]
fn empty_payload_omits_hash() {
    let k = key(4);
    let m = Manifest::new(k.bundle_id(), 1, 0, PayloadHash::empty(), DATE);
    let s = m.sign(&k).unwrap();
    assert_eq!(s.as_bytes().len(), 1 + 32 + 1 + 1 + 4 + 64);
    assert_eq!(SignedManifest::decode(s.as_bytes()).unwrap().manifest(), &m);
}

/// A frame's manifests verified together: each gets its own answer, in order, and a
/// forged one among good ones is found without refusing them.
#[test]
fn manifests_decoded_together_answer_each_as_alone() {
    let good: Vec<Vec<u8>> = (10..16)
        .map(|n| {
            let k = key(n);
            small_manifest(&k).sign(&k).unwrap().as_bytes().to_vec()
        })
        .collect();
    let mut forged = good[2].clone();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    let truncated = &good[4][..40];
    let cases: Vec<Vec<&[u8]>> = vec![
        good.iter().map(Vec::as_slice).collect(),
        vec![&good[0], &forged, &good[1], truncated, &good[3]],
        vec![&forged],
        vec![&forged, &forged],
        vec![truncated],
        vec![],
    ];
    for all in cases {
        let together = SignedManifest::decode_many(&all);
        assert_eq!(together.len(), all.len());
        for (b, r) in all.iter().zip(&together) {
            assert_eq!(r, &SignedManifest::decode(b), "{} B", b.len());
            if *b == forged.as_slice() {
                assert_eq!(r, &Err(ManifestError::BadSignature(key(12).bundle_id())));
            } else if b.len() > 40 {
                assert_eq!(r.as_ref().map(|m| m.as_bytes()), Ok(*b));
            }
        }
    }
}

#[test]
fn forged_signature_is_rejected() {
    let k = key(7);
    let s = small_manifest(&k).sign(&k).unwrap();
    let mut bytes = s.as_bytes().to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    assert_eq!(
        SignedManifest::decode(&bytes),
        Err(ManifestError::BadSignature(k.bundle_id()))
    );
    // A body change under the old signature.
    let mut bytes = s.as_bytes().to_vec();
    bytes[33] = 2;
    assert!(matches!(
        SignedManifest::decode(&bytes),
        Err(ManifestError::BadSignature(_))
    ));
    // Signed by another key.
    let other = key(8);
    assert_eq!(
        small_manifest(&k).sign(&other),
        Err(ManifestError::KeyMismatch(k.bundle_id()))
    );
}

#[test]
fn truncated_and_oversize_are_rejected() {
    let k = key(7);
    let s = small_manifest(&k).sign(&k).unwrap();
    for n in 0..s.as_bytes().len() {
        assert!(
            SignedManifest::decode(&s.as_bytes()[..n]).is_err(),
            "prefix of {n} bytes"
        );
    }
    let big = vec![0x40u8; MAX_MANIFEST_LEN + 1];
    assert_eq!(
        SignedManifest::decode(&big),
        Err(ManifestError::TooLarge {
            len: MAX_MANIFEST_LEN + 1,
            max: MAX_MANIFEST_LEN
        })
    );
    let mut m = small_manifest(&k);
    m.fields.insert("blob".into(), "x".repeat(1000));
    assert!(matches!(m.sign(&k), Err(ManifestError::TooLarge { .. })));
}

#[test]
fn extension_rule() {
    let k = key(7);
    // Even tags from a newer encoder are preserved and the signature still verifies.
    let mut m = small_manifest(&k);
    m.unknown.push((8, b"future".to_vec()));
    let s = m.sign(&k).unwrap();
    let back = SignedManifest::decode(s.as_bytes()).unwrap();
    assert_eq!(back.manifest().unknown, vec![(8, b"future".to_vec())]);
    assert_eq!(back.to_json().unknown_extensions, vec![8]);
    // Odd tags are critical: a reader that does not know them must refuse.
    let mut body = small_manifest(&k).encode_body();
    body[0] |= F_EXTENSIONS;
    body.extend_from_slice(&[7, 1, 0xaa]);
    let sig = k.signing().sign(&signing_message(&body));
    body.extend_from_slice(&sig.to_bytes());
    assert_eq!(
        SignedManifest::decode(&body),
        Err(ManifestError::CriticalExtension(7))
    );
    // An unknown format is refused with the format named.
    let mut bytes = s.as_bytes().to_vec();
    bytes[0] = (bytes[0] & !FORMAT_MASK) | (0b10 << 6);
    assert!(matches!(
        SignedManifest::decode(&bytes),
        Err(ManifestError::UnsupportedFormat(_))
    ));
}

#[test]
fn non_canonical_is_rejected() {
    let k = key(7);
    // Service spelled out although it has a one-byte code.
    let mut body = small_manifest(&k).encode_body();
    let at = 55;
    assert_eq!(body[at], 1);
    let mut spelled = vec![0u8];
    text::put(&mut spelled, "file");
    body.splice(at..at + 1, spelled);
    let sig = k.signing().sign(&signing_message(&body));
    body.extend_from_slice(&sig.to_bytes());
    assert_eq!(
        SignedManifest::decode(&body),
        Err(ManifestError::NonCanonical(
            "fields not in canonical order or form"
        ))
    );
}

#[test]
fn invalid_fields_name_the_field() {
    let k = key(7);
    let mut m = small_manifest(&k);
    m.service = Some("Bad Service".into());
    let err = m.sign(&k).unwrap_err();
    assert!(err.to_string().contains("service"), "{err}");
    let mut m = small_manifest(&k);
    m.date = 1_000;
    assert!(m.sign(&k).unwrap_err().to_string().contains("date"));
}

#[test]
fn json_view() {
    let k = key(7);
    let s = small_manifest(&k).sign(&k).unwrap();
    let v = serde_json::to_value(s.to_json()).unwrap();
    assert_eq!(v["id"], k.bundle_id().to_hex());
    assert_eq!(v["date_utc"], "2026-11-22T00:00:00Z");
    assert_eq!(v["name"], "hello-world-20-chars");
    assert_eq!(v["service"], "file");
    assert_eq!(v["manifest_bytes"], 134);
}

proptest::proptest! {
    #[test]
    fn decode_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
        let _ = SignedManifest::decode(&bytes);
    }

    #[test]
    fn sign_decode_round_trip(
        version in 1u64..u64::MAX,
        length in 0u64..1 << 40,
        name in proptest::option::of("\\PC{0,30}"),
        date in DATE_EPOCH..DATE_EPOCH + (1 << 34),
        fields in proptest::collection::btree_map("[a-z]{1,8}", "\\PC{0,12}", 0..4),
    ) {
        let k = key(11);
        let hash = if length == 0 { PayloadHash::empty() } else { PayloadHash([9; 16]) };
        let mut m = Manifest::new(k.bundle_id(), version, length, hash, date);
        m.name = name;
        m.fields = fields;
        let s = m.sign(&k).unwrap();
        let back = SignedManifest::decode(s.as_bytes()).unwrap();
        proptest::prop_assert_eq!(back.manifest(), &m);
    }
}

#[test]
fn stored_decode_skips_only_the_signature() {
    let k = key(7);
    let s = small_manifest(&k).sign(&k).unwrap();
    assert_eq!(SignedManifest::decode_stored(s.as_bytes()).unwrap(), s);
    let mut bytes = s.as_bytes().to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    assert!(SignedManifest::decode(&bytes).is_err());
    assert!(SignedManifest::decode_stored(&bytes).is_ok());
    // Structure is still checked.
    assert!(SignedManifest::decode_stored(&s.as_bytes()[..60]).is_err());
}

/// The worked example's bundle with its 100-byte payload sealed to the node whose key
/// seed is 32 bytes of 0x11 (the sealed payload of `crate::sealed`'s tests' seeds).
fn sealed_manifest(k: &SecretKey) -> Manifest {
    use rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::from_seed([0x42; 32]);
    let to = key(0x11).identity();
    let payload = crate::sealed::seal(&[0x42; 100], &to, &k.bundle_id(), &mut rng).unwrap();
    let len = payload.len() as u64;
    let mut m = Manifest::new(k.bundle_id(), 1, len, crate::hash_payload(&payload), DATE);
    m.service = Some("file".into());
    m.name = Some("hello-world-20-chars".into());
    m.recipient = Some(to);
    m.sealed = Some(crate::sealed::SEALED_V1);
    m
}

#[test]
fn fixed_bytes_of_a_sealed_manifest() {
    let k = key(7);
    let m = sealed_manifest(&k);
    let s = m.sign(&k).unwrap();
    let b = s.as_bytes();
    assert_eq!(
        b[0], 0b0101_1011,
        "format v1, service, name, recipient, records"
    );
    assert_eq!(&b[34..36], &[0xc4, 0x01], "length 196 = 80 + 100 + 16");
    let sig = b.len() - 64;
    assert_eq!(
        &b[sig - 3..sig],
        &[0x01, 0x01, 0x01],
        "tag 1, length 1, scheme 1"
    );
    assert_eq!(&b[sig - 35..sig - 3], key(0x11).public().as_slice());
    // 134 bytes of the clear example, 1 more for the length, 32 recipient, 3 record.
    assert_eq!(b.len(), 134 + 1 + 32 + 3);
    assert_eq!(hex::encode(b), FIXED_SEALED_HEX);
    let back = SignedManifest::decode(b).unwrap();
    assert_eq!(back.manifest(), &m);
    let j = serde_json::to_value(back.to_json()).unwrap();
    assert_eq!(j["sealed"], 1);
    assert_eq!(j["plain_length"], 100);
    assert_eq!(j["length"], 196);
    // A clear manifest says nothing about sealing.
    let clear = serde_json::to_value(small_manifest(&k).sign(&k).unwrap().to_json()).unwrap();
    assert!(clear.get("sealed").is_none() && clear.get("plain_length").is_none());
}

const FIXED_SEALED_HEX: &str = concat!(
    "5b",                                                               // flags v1 S N R X
    "ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c", // id
    "01",                                                               // version 1
    "c401",                                                             // length 196
    "3732dbe873d06f9f60befeeee2edc814",                                 // hash
    "80e0c02b",                                                         // date
    "01",                                                               // service file
    "2978c6248d0a717218a45cf09d00",                                     // name, packed
    "d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737", // recipient
    "010101", // sealed record: tag 1, length 1, scheme 1
    "0acbb6a4add649bc50977e8b2d271aa319490af4dc72337f0f4b303ff9a7dc28",
    "3542006dd7274cd87a764e7c50f6f00fb33dd5002367e10ebca47b65f135cb0f", // signature
);

/// The sealed record's tag is odd: a reader from before it refuses the manifest as it
/// refuses any critical record it does not know, rather than hand out sealed bytes as
/// the content. The same bytes with another odd tag show that path.
#[test]
fn the_sealed_record_is_critical() {
    let k = key(7);
    assert_eq!(TAG_SEALED % 2, 1);
    let mut body = sealed_manifest(&k).encode_body();
    let at = body.len() - 3;
    assert_eq!(body[at], TAG_SEALED as u8);
    body[at] = 3;
    let sig = k.signing().sign(&signing_message(&body));
    body.extend_from_slice(&sig.to_bytes());
    assert_eq!(
        SignedManifest::decode(&body),
        Err(ManifestError::CriticalExtension(3))
    );
}

#[test]
fn sealed_rules() {
    let k = key(7);
    let field = |m: &Manifest| match m.sign(&k) {
        Err(ManifestError::InvalidField { field, reason }) => format!("{field}: {reason}"),
        other => panic!("expected an invalid field, got {other:?}"),
    };
    let mut m = sealed_manifest(&k);
    m.recipient = None;
    assert!(field(&m).contains("needs a recipient"));
    let mut m = sealed_manifest(&k);
    m.journal = true;
    m.version = m.length;
    assert!(field(&m).contains("journal cannot be sealed"));
    let mut m = sealed_manifest(&k);
    m.length = 90;
    assert!(field(&m).contains("no sealed payload is 90 bytes"));
    let mut m = sealed_manifest(&k);
    m.sealed = Some(0);
    assert!(field(&m).contains("reserved"));
    // A scheme this version does not know is still carried (its length is not checked).
    let mut m = sealed_manifest(&k);
    m.sealed = Some(2);
    m.length = 90;
    let back = SignedManifest::decode(m.sign(&k).unwrap().as_bytes()).unwrap();
    assert_eq!(back.manifest().sealed, Some(2));
    assert_eq!(back.to_json().plain_length, None);
}

#[test]
fn malformed_sealed_records_are_refused() {
    let k = key(7);
    let resign = |body: &mut Vec<u8>| {
        let sig = k.signing().sign(&signing_message(body));
        body.extend_from_slice(&sig.to_bytes());
    };
    // Two bytes of scheme.
    let mut body = sealed_manifest(&k).encode_body();
    let at = body.len() - 3;
    body.splice(at.., [1, 2, 1, 0]);
    resign(&mut body);
    assert!(matches!(
        SignedManifest::decode(&body),
        Err(ManifestError::InvalidField {
            field: "sealed",
            ..
        })
    ));
    // The record twice.
    let mut body = sealed_manifest(&k).encode_body();
    body.extend_from_slice(&[1, 1, 1]);
    resign(&mut body);
    assert_eq!(
        SignedManifest::decode(&body),
        Err(ManifestError::NonCanonical("duplicate sealed record"))
    );
}

#[test]
fn tombstone_and_expiry_round_trip_compactly() {
    let k = key(11);
    let mut m = small_manifest(&k);
    let plain = m.sign(&k).unwrap().as_bytes().len();
    // Seven days costs 2 bytes of record header and 3 of varint.
    m.expires = Some(DATE + 7 * 86_400);
    let s = m.sign(&k).unwrap();
    assert_eq!(s.as_bytes().len(), plain + 5);
    let back = SignedManifest::decode(s.as_bytes()).unwrap();
    assert_eq!(back.manifest().expires, Some(DATE + 7 * 86_400));
    assert!(!back.manifest().expired_at(DATE + 7 * 86_400 - 1));
    assert!(back.manifest().expired_at(DATE + 7 * 86_400));
    assert_eq!(
        back.to_json().expires_utc.as_deref(),
        Some("2026-11-29T00:00:00Z")
    );

    let mut t = Manifest::new(k.bundle_id(), 2, 0, PayloadHash::empty(), DATE);
    t.name = m.name.clone();
    t.deleted = true;
    let ts = t.sign(&k).unwrap();
    let back = SignedManifest::decode(ts.as_bytes()).unwrap();
    assert!(back.manifest().deleted);
    assert!(back.to_json().deleted);
}

#[test]
fn a_tombstone_carries_no_payload_and_nothing_expires_before_its_date() {
    let k = key(12);
    let mut t = small_manifest(&k);
    t.deleted = true;
    assert!(matches!(
        t.sign(&k),
        Err(ManifestError::InvalidField {
            field: "deleted",
            ..
        })
    ));
    let mut m = small_manifest(&k);
    m.expires = Some(DATE - 1);
    assert!(matches!(
        m.sign(&k),
        Err(ManifestError::InvalidField {
            field: "expires",
            ..
        })
    ));
    // Known tags cannot pose as unknown ones (two encodings of one manifest).
    let mut m = small_manifest(&k);
    m.unknown.push((4, vec![1]));
    assert!(m.sign(&k).is_err());
}

#[test]
fn an_older_reader_sees_a_tombstone_as_an_empty_newer_version() {
    // What a reader that knows neither record makes of the encoding: both are even
    // (ignorable) tags, so it keeps them as unknown records and accepts the manifest.
    let k = key(13);
    let mut t = Manifest::new(k.bundle_id(), 9, 0, PayloadHash::empty(), DATE);
    t.deleted = true;
    t.expires = Some(DATE + 60);
    let body = t.encode_body();
    let tail = &body[body.len() - 5..];
    assert_eq!(
        tail,
        &[2, 0, 4, 1, 60],
        "deleted, then expires (60 s after date)"
    );
    // A duplicated or valued deleted record is refused as non-canonical or invalid.
    let mut bad = body.clone();
    bad.extend_from_slice(&[2, 1, 0]);
    let sig = k.signing().sign(&signing_message(&bad));
    bad.extend_from_slice(&sig.to_bytes());
    assert!(SignedManifest::decode(&bad).is_err());
}

#[test]
fn priority_is_one_byte_and_defaults_by_service() {
    let k = key(14);
    let mut m = small_manifest(&k);
    m.service = Some("message".into());
    assert_eq!(m.effective_priority(), Priority::High);
    m.service = Some("log".into());
    assert_eq!(m.effective_priority(), Priority::Bulk);
    m.service = None;
    assert_eq!(m.effective_priority(), Priority::Normal);
    let plain = m.sign(&k).unwrap().as_bytes().len();
    m.priority = Some(Priority::Bulk);
    let s = m.sign(&k).unwrap();
    assert_eq!(s.as_bytes().len(), plain + 3);
    let back = SignedManifest::decode(s.as_bytes()).unwrap();
    assert_eq!(back.manifest().priority, Some(Priority::Bulk));
    assert_eq!(back.to_json().priority, Priority::Bulk);
    assert_eq!("high".parse::<Priority>(), Ok(Priority::High));
    assert!("urgent".parse::<Priority>().is_err());
    // A value this version does not know is refused, not guessed.
    let mut body = small_manifest(&k).encode_body();
    body[0] |= F_EXTENSIONS;
    body.extend_from_slice(&[6, 1, 9]);
    let sig = k.signing().sign(&signing_message(&body));
    body.extend_from_slice(&sig.to_bytes());
    assert!(matches!(
        SignedManifest::decode(&body),
        Err(ManifestError::InvalidField {
            field: "priority",
            ..
        })
    ));
}
