//! ES256 signing keys and IAP-style tokens minted by the tests, for the IAP verifier
//! (tests/iap.rs) and the app in IAP mode (tests/api/iap_http.rs), and a port where no
//! JWKS answers. Keys are fresh per call; nothing here is a real Google key.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::ecdsa::SigningKey;
use p256::elliptic_curve::Generate;
use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
use serde_json::{Value, json};

/// The audience the tests configure: a backend service of project 123.
pub const AUD: &str = "/projects/123/global/backendServices/456";

/// A P-256 key: its `kid`, the private key to sign with, its public JWK and PEM.
pub struct TestKey {
    pub kid: String,
    pub enc: EncodingKey,
    pub jwk: Value,
    pub public_pem: String,
}

/// A fresh key published as `kid`.
pub fn new_key(kid: &str) -> TestKey {
    let sk = SigningKey::generate_from_rng(&mut rand::rng());
    let pem = sk.to_pkcs8_pem(LineEnding::LF).expect("pkcs8 pem");
    let enc = EncodingKey::from_ec_pem(pem.as_bytes()).expect("encoding key");
    let vk = sk.verifying_key();
    let point = vk.to_sec1_point(false);
    let x = URL_SAFE_NO_PAD.encode(point.x().expect("x"));
    let y = URL_SAFE_NO_PAD.encode(point.y().expect("y"));
    let jwk = json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid, "x": x, "y": y});
    let public_pem = vk.to_public_key_pem(LineEnding::LF).expect("public pem");
    TestKey {
        kid: kid.to_owned(),
        enc,
        jwk,
        public_pem,
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// `claims` signed ES256 by `key`, with its `kid` in the header.
pub fn sign(key: &TestKey, claims: &Value) -> String {
    sign_as(key, &key.kid, claims)
}

/// `claims` signed ES256 by `key`, with `kid` (maybe not its own) in the header.
pub fn sign_as(key: &TestKey, kid: &str, claims: &Value) -> String {
    let mut h = Header::new(Algorithm::ES256);
    h.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&h, claims, &key.enc).expect("sign")
}

/// A local port nothing listens on (bound to find it, then released): a JWKS URL there is
/// unreachable.
pub fn unreachable_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("local addr").port()
}
