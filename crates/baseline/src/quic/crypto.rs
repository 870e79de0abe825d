//! Keys, certificate, TLS and connection-id configuration for the QUIC baseline, derived
//! from the run's seed wherever the libraries let us.
//!
//! Seeded: quinn's endpoint RNG (packet-number skips, connection RNG), connection ids,
//! the stateless-reset key, the handshake-token key and the server's Ed25519 key (hence its
//! self-signed certificate). Not seeded: TLS ephemeral key shares and TLS randoms, which
//! rustls' ring provider draws from the OS. Their lengths are fixed, so they change the
//! bytes on the wire but not a single frame size or timing (see docs/baseline.md).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::{ConnectionId, ConnectionIdGenerator, TimeSource};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use rustls::time_provider::TimeProvider;

/// The server name the client asks for and the certificate names.
pub(crate) const SERVER_NAME: &str = "skywave-baseline.invalid";

/// The wall-clock date TLS and quinn's token code see: 2025-01-01T00:00:00Z. Certificate
/// validity (1975..4096) contains it; nothing else depends on it.
const FIXED_UNIX_SECS: u64 = 1_735_689_600;

/// A clock frozen at [`FIXED_UNIX_SECS`], so that neither rustls (certificate validity)
/// nor quinn (token timestamps) reads the system clock.
#[derive(Debug)]
pub(crate) struct FixedTime;

impl TimeProvider for FixedTime {
    fn current_time(&self) -> Option<UnixTime> {
        Some(UnixTime::since_unix_epoch(Duration::from_secs(
            FIXED_UNIX_SECS,
        )))
    }
}

impl TimeSource for FixedTime {
    fn now(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(FIXED_UNIX_SECS)
    }
}

/// Random 8-byte connection ids from a seeded stream (quinn's own generators use the
/// thread RNG).
pub(crate) struct SeededCids {
    rng: ChaCha8Rng,
}

impl SeededCids {
    pub(crate) fn new(seed: [u8; 32]) -> Self {
        SeededCids {
            rng: ChaCha8Rng::from_seed(seed),
        }
    }
}

impl ConnectionIdGenerator for SeededCids {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut b = [0u8; 8];
        self.rng.fill_bytes(&mut b);
        ConnectionId::new(&b)
    }
    fn cid_len(&self) -> usize {
        8
    }
    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// 32 bytes from `rng`.
pub(crate) fn seed32(rng: &mut ChaCha8Rng) -> [u8; 32] {
    let mut b = [0u8; 32];
    rng.fill_bytes(&mut b);
    b
}

/// The server identity: a self-signed Ed25519 certificate for [`SERVER_NAME`]. Ed25519
/// signatures are deterministic and fixed-size, so the handshake has the same length every
/// run (an ECDSA signature's DER length varies by a byte or two).
pub(crate) struct Identity {
    pub cert: CertificateDer<'static>,
    pub key: PrivatePkcs8KeyDer<'static>,
}

pub(crate) fn identity(secret: [u8; 32]) -> Result<Identity, String> {
    // PKCS#8 v1 wrapping of an Ed25519 seed (RFC 8410 section 7): a fixed 16-byte prefix,
    // then the 32 secret bytes.
    const PREFIX: [u8; 16] = [
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    let mut der = PREFIX.to_vec();
    der.extend_from_slice(&secret);
    let key = PrivatePkcs8KeyDer::from(der);
    let pair = rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&key, &rcgen::PKCS_ED25519)
        .map_err(|e| format!("server key: {e}"))?;
    let params = rcgen::CertificateParams::new(vec![SERVER_NAME.to_string()])
        .map_err(|e| format!("certificate parameters: {e}"))?;
    let cert = params
        .self_signed(&pair)
        .map_err(|e| format!("self-signed certificate: {e}"))?;
    Ok(Identity {
        cert: cert.der().clone(),
        key,
    })
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// TLS 1.3 client that trusts exactly the server's certificate (standard WebPKI checks).
pub(crate) fn client_crypto(id: &Identity) -> Result<QuicClientConfig, String> {
    let provider = provider();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(id.cert.clone())
        .map_err(|e| format!("trust anchor: {e}"))?;
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| format!("certificate verifier: {e}"))?;
    let tls = rustls::ClientConfig::builder_with_details(provider, Arc::new(FixedTime))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("TLS client: {e}"))?
        .with_webpki_verifier(verifier)
        .with_no_client_auth();
    QuicClientConfig::try_from(tls).map_err(|e| format!("QUIC client crypto: {e}"))
}

pub(crate) fn server_crypto(id: &Identity) -> Result<QuicServerConfig, String> {
    let tls = rustls::ServerConfig::builder_with_details(provider(), Arc::new(FixedTime))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("TLS server: {e}"))?
        .with_no_client_auth()
        .with_single_cert(
            vec![id.cert.clone()],
            PrivateKeyDer::Pkcs8(id.key.clone_key()),
        )
        .map_err(|e| format!("TLS server identity: {e}"))?;
    QuicServerConfig::try_from(tls).map_err(|e| format!("QUIC server crypto: {e}"))
}
