//! IAP assertion verification against real ES256 tokens and a real (local) JWKS server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use kineticd::auth::{
    AuthError, IAP_HEADER, IAP_ISSUER, IapConfig, IapVerifier, Identity, JwksClock, JwksPolicy,
    install_tls_provider,
};
use kineticd::domain::Email;
use serde_json::{Value, json};

#[path = "common/iap_keys.rs"]
mod iap_keys;

use iap_keys::{AUD, TestKey, new_key, now, sign, sign_as, unreachable_port};

/// A local JWKS endpoint that counts how often it is fetched.
#[derive(Clone, Default)]
struct JwksServer {
    keys: Arc<Mutex<Vec<Value>>>,
    hits: Arc<AtomicUsize>,
    fail: Arc<Mutex<bool>>,
}

impl JwksServer {
    async fn start(keys: &[&TestKey]) -> (Self, String) {
        let srv = JwksServer::default();
        srv.keys
            .lock()
            .unwrap()
            .extend(keys.iter().map(|k| k.jwk.clone()));
        // Google also publishes keys we must skip; make sure they don't break parsing.
        srv.keys
            .lock()
            .unwrap()
            .push(json!({"kty": "RSA", "kid": "rsa-1", "n": "AQAB", "e": "AQAB"}));
        let app = Router::new()
            .route("/jwks", get(serve_jwks))
            .with_state(srv.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (srv, format!("http://{addr}/jwks"))
    }

    fn add(&self, key: &TestKey) {
        self.keys.lock().unwrap().push(key.jwk.clone());
    }

    /// Answer 500 from now on (`true`), or serve the keys again.
    fn set_failing(&self, fail: bool) {
        *self.fail.lock().unwrap() = fail;
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

async fn serve_jwks(State(srv): State<JwksServer>) -> Response {
    srv.hits.fetch_add(1, Ordering::SeqCst);
    if *srv.fail.lock().unwrap() {
        return (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response();
    }
    let keys = srv.keys.lock().unwrap().clone();
    axum::Json(json!({ "keys": keys })).into_response()
}

fn client() -> reqwest::Client {
    install_tls_provider();
    reqwest::Client::new()
}

fn config(url: &str) -> IapConfig {
    IapConfig {
        jwks_url: url.to_owned(),
        ..IapConfig::new(AUD)
    }
}

fn verifier(url: &str) -> IapVerifier {
    IapVerifier::new(config(url), client())
}

/// Key `k1`, a JWKS server publishing it, and a verifier of that server.
async fn one_key_verifier() -> (TestKey, JwksServer, IapVerifier) {
    let k1 = new_key("k1");
    let (srv, url) = JwksServer::start(&[&k1]).await;
    (k1, srv, verifier(&url))
}

/// A verifier of `url` with `policy` on a manual clock ("within the interval" then holds
/// however slowly the machine runs), and that clock.
fn manual_verifier(url: &str, policy: JwksPolicy) -> (IapVerifier, JwksClock) {
    let clock = JwksClock::manual();
    let policy = JwksPolicy {
        clock: clock.clone(),
        ..policy
    };
    (
        IapVerifier::with_policy(config(url), client(), policy),
        clock,
    )
}

fn claims() -> Value {
    let now = now();
    json!({
        "iss": IAP_ISSUER,
        "aud": AUD,
        "email": "Alice@Example.COM",
        "sub": "accounts.google.com:1234567890",
        "hd": "example.com",
        "iat": now,
        "exp": now + 600,
    })
}

fn with(mut c: Value, key: &str, v: Value) -> Value {
    c[key] = v;
    c
}

fn without(mut c: Value, key: &str) -> Value {
    c.as_object_mut().unwrap().remove(key);
    c
}

fn b64json(v: &Value) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
}

/// `claims` signed by `key` are refused with `reason` (see [`expect_reason`]).
async fn rejects(v: &IapVerifier, key: &TestKey, claims: &Value, reason: &str) -> AuthError {
    expect_reason(v, Some(&sign(key, claims)), reason).await
}

/// Asserts the exact reason, and that the user-facing message does not leak the token.
async fn expect_reason(v: &IapVerifier, token: Option<&str>, reason: &str) -> AuthError {
    let err = v
        .verify(token)
        .await
        .expect_err(&format!("expected {reason}"));
    assert_eq!(err.reason(), reason, "got {err:?}");
    let msg = err.to_string();
    assert!(!msg.is_empty());
    if let Some(t) = token.filter(|t| t.len() > 8) {
        assert!(!msg.contains(t), "message leaks token: {msg}");
        for seg in t.split('.').filter(|s| s.len() > 8) {
            assert!(!msg.contains(seg), "message leaks a token segment: {msg}");
        }
    }
    err
}

fn alice() -> Identity {
    Identity {
        email: Email::parse("alice@example.com").unwrap(),
        subject: Some("accounts.google.com:1234567890".into()),
    }
}

#[tokio::test]
async fn valid_token_accepted_and_keys_cached() {
    assert_eq!(IAP_HEADER, "x-goog-iap-jwt-assertion");
    let (k1, srv, v) = one_key_verifier().await;
    assert_eq!(srv.hits(), 0, "keys are fetched lazily");
    let token = sign(&k1, &claims());
    for _ in 0..5 {
        assert_eq!(v.verify(Some(&token)).await.unwrap(), alice());
    }
    // A clone shares the cache.
    assert_eq!(v.clone().verify(Some(&token)).await.unwrap(), alice());
    assert_eq!(srv.hits(), 1, "6 verifications, one JWKS fetch");

    // No sub claim: still fine, subject is None.
    let t = sign(&k1, &without(claims(), "sub"));
    assert_eq!(v.verify(Some(&t)).await.unwrap().subject, None);
    assert_eq!(srv.hits(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_use_is_one_fetch() {
    let (k1, srv, v) = one_key_verifier().await;
    let token = sign(&k1, &claims());
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (v, t) = (v.clone(), token.clone());
            tokio::spawn(async move { v.verify(Some(&t)).await })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap(), alice());
    }
    assert_eq!(srv.hits(), 1);
}

#[tokio::test]
async fn time_claims() {
    let (k1, _srv, v) = one_key_verifier().await;
    let n = now();

    let expired = claims();
    let expired = with(with(expired, "iat", json!(n - 700)), "exp", json!(n - 100));
    rejects(&v, &k1, &expired, "TOKEN_EXPIRED").await;

    // iat in the future beyond the 30 s leeway.
    let future_iat = with(claims(), "iat", json!(n + 120));
    rejects(&v, &k1, &future_iat, "TOKEN_NOT_YET_VALID").await;
    // nbf in the future beyond the leeway (iat fine).
    let future_nbf = with(claims(), "nbf", json!(n + 120));
    rejects(&v, &k1, &future_nbf, "TOKEN_NOT_YET_VALID").await;

    // Within 30 s of skew in every direction: accepted.
    let skew = with(
        with(with(claims(), "iat", json!(n + 20)), "nbf", json!(n + 20)),
        "exp",
        json!(n - 20),
    );
    assert_eq!(v.verify(Some(&sign(&k1, &skew))).await.unwrap(), alice());

    // exp and iat are required.
    rejects(&v, &k1, &without(claims(), "exp"), "TOKEN_MALFORMED").await;
    rejects(&v, &k1, &without(claims(), "iat"), "TOKEN_MALFORMED").await;
}

#[tokio::test]
async fn audience_issuer_email() {
    let (k1, _srv, v) = one_key_verifier().await;

    let wrong_aud = with(
        claims(),
        "aud",
        json!("/projects/123/global/backendServices/999"),
    );
    rejects(&v, &k1, &wrong_aud, "TOKEN_BAD_AUDIENCE").await;
    rejects(&v, &k1, &without(claims(), "aud"), "TOKEN_BAD_AUDIENCE").await;

    let wrong_iss = with(claims(), "iss", json!("https://accounts.google.com"));
    rejects(&v, &k1, &wrong_iss, "TOKEN_BAD_ISSUER").await;
    rejects(&v, &k1, &without(claims(), "iss"), "TOKEN_BAD_ISSUER").await;

    rejects(&v, &k1, &without(claims(), "email"), "TOKEN_MISSING_EMAIL").await;
    rejects(
        &v,
        &k1,
        &with(claims(), "email", json!("")),
        "TOKEN_MISSING_EMAIL",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unknown_kid_refetches_once() {
    let k1 = new_key("k1");
    let stranger = new_key("stranger");
    let (srv, url) = JwksServer::start(&[&k1]).await;
    let v = verifier(&url);
    v.verify(Some(&sign(&k1, &claims()))).await.unwrap();
    assert_eq!(srv.hits(), 1);

    let err = rejects(&v, &stranger, &claims(), "TOKEN_UNKNOWN_KEY").await;
    assert!(err.to_string().contains("stranger"), "{err}");
    assert_eq!(srv.hits(), 2, "unknown kid triggers exactly one refetch");

    // A storm of unknown kids (sequential and concurrent) within 30 s: no more fetches.
    rejects(&v, &stranger, &claims(), "TOKEN_UNKNOWN_KEY").await;
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let v = v.clone();
            let t = sign_as(&stranger, &format!("made-up-{i}"), &claims());
            tokio::spawn(async move { v.verify(Some(&t)).await.unwrap_err().reason() })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), "TOKEN_UNKNOWN_KEY");
    }
    assert_eq!(srv.hits(), 2);
    // Known keys keep working from the cache meanwhile.
    v.verify(Some(&sign(&k1, &claims()))).await.unwrap();
    assert_eq!(srv.hits(), 2);
}

#[tokio::test]
async fn unknown_kid_refetch_allowed_again_after_interval() {
    let k1 = new_key("k1");
    let k2 = new_key("k2");
    let (srv, url) = JwksServer::start(&[&k1]).await;
    // A manual clock: "within the interval" holds however slowly the machine runs.
    let policy = JwksPolicy {
        refetch_interval: Duration::from_secs(30),
        ..JwksPolicy::default()
    };
    let (v, clock) = manual_verifier(&url, policy);
    let t2 = sign(&k2, &claims());
    // First load: the fresh set lacks k2, which counts as the refetch for this kid.
    expect_reason(&v, Some(&t2), "TOKEN_UNKNOWN_KEY").await;
    expect_reason(&v, Some(&t2), "TOKEN_UNKNOWN_KEY").await; // rate-limited
    assert_eq!(srv.hits(), 1);
    srv.add(&k2);
    expect_reason(&v, Some(&t2), "TOKEN_UNKNOWN_KEY").await; // still rate-limited
    assert_eq!(srv.hits(), 1);
    clock.advance(Duration::from_secs(29));
    expect_reason(&v, Some(&t2), "TOKEN_UNKNOWN_KEY").await; // 1 s left
    assert_eq!(srv.hits(), 1);
    clock.advance(Duration::from_secs(1));
    assert_eq!(v.verify(Some(&t2)).await.unwrap(), alice());
    assert_eq!(srv.hits(), 2);
}

#[tokio::test]
async fn rotated_key_is_picked_up() {
    let (k1, srv, v) = one_key_verifier().await;
    let k2 = new_key("k2");
    v.verify(Some(&sign(&k1, &claims()))).await.unwrap();
    assert_eq!(srv.hits(), 1);
    srv.add(&k2);
    assert_eq!(
        v.verify(Some(&sign(&k2, &claims()))).await.unwrap(),
        alice()
    );
    assert_eq!(srv.hits(), 2);
    v.verify(Some(&sign(&k2, &claims()))).await.unwrap();
    v.verify(Some(&sign(&k1, &claims()))).await.unwrap();
    assert_eq!(srv.hits(), 2);
}

#[tokio::test]
async fn algorithm_attacks_rejected_before_key_lookup() {
    let (k1, srv, v) = one_key_verifier().await;

    // alg: none, hand-built "header.payload." (empty signature).
    let none_header = json!({"alg": "none", "typ": "JWT", "kid": "k1"});
    let none_token = format!("{}.{}.", b64json(&none_header), b64json(&claims()));
    let err = expect_reason(&v, Some(&none_token), "TOKEN_BAD_ALGORITHM").await;
    assert!(err.to_string().contains("none"), "{err}");
    // ... and "None"/"NONE" spellings, and a missing alg.
    let none_caps = format!(
        "{}.{}.",
        b64json(&json!({"alg": "NONE", "kid": "k1"})),
        b64json(&claims())
    );
    expect_reason(&v, Some(&none_caps), "TOKEN_BAD_ALGORITHM").await;
    let no_alg = format!("{}.{}.", b64json(&json!({"kid": "k1"})), b64json(&claims()));
    expect_reason(&v, Some(&no_alg), "TOKEN_MALFORMED").await;

    // HS256 keyed with the public key PEM (the classic RS/ES -> HS confusion attack).
    let mut h = Header::new(Algorithm::HS256);
    h.kid = Some("k1".into());
    let secret = EncodingKey::from_secret(k1.public_pem.as_bytes()).unwrap();
    let hs = jsonwebtoken::encode(&h, &claims(), &secret).unwrap();
    let err = expect_reason(&v, Some(&hs), "TOKEN_BAD_ALGORITHM").await;
    assert!(err.to_string().contains("HS256"), "{err}");
    // Same with the raw JWK x coordinate as secret.
    let x = k1.jwk["x"].as_str().unwrap();
    let hs_x = jsonwebtoken::encode(
        &h,
        &claims(),
        &EncodingKey::from_secret(x.as_bytes()).unwrap(),
    )
    .unwrap();
    expect_reason(&v, Some(&hs_x), "TOKEN_BAD_ALGORITHM").await;

    // Other asymmetric algorithms are also refused (ES384 header on an ES256 signature).
    let t = sign(&k1, &claims());
    let mut parts: Vec<String> = t.split('.').map(str::to_owned).collect();
    parts[0] = b64json(&json!({"alg": "ES384", "typ": "JWT", "kid": "k1"}));
    expect_reason(&v, Some(&parts.join(".")), "TOKEN_BAD_ALGORITHM").await;

    assert_eq!(srv.hits(), 0, "no key was looked up for any of these");
}

#[tokio::test]
async fn tampering_and_garbage() {
    let k1 = new_key("k1");
    let k2 = new_key("k2");
    let (_srv, url) = JwksServer::start(&[&k1, &k2]).await;
    let v = verifier(&url);

    // Change the email in the payload, keep header and signature.
    let token = sign(&k1, &claims());
    let parts: Vec<&str> = token.split('.').collect();
    let evil = b64json(&with(claims(), "email", json!("mallory@example.com")));
    let tampered = format!("{}.{}.{}", parts[0], evil, parts[2]);
    expect_reason(&v, Some(&tampered), "TOKEN_BAD_SIGNATURE").await;

    let refused = [
        // Signed with k2 but claiming to be k1.
        (sign_as(&k2, "k1", &claims()), "TOKEN_BAD_SIGNATURE"),
        // Truncated / empty signature on an ES256 header.
        (format!("{}.{}.", parts[0], parts[1]), "TOKEN_BAD_SIGNATURE"),
        (
            format!("{}.{}.{}", parts[0], parts[1], &parts[2][..20]),
            "TOKEN_BAD_SIGNATURE",
        ),
        (String::new(), "TOKEN_MISSING"),
        ("   ".to_owned(), "TOKEN_MISSING"),
        ("this is not a jwt".to_owned(), "TOKEN_MALFORMED"),
        ("a.b.c".to_owned(), "TOKEN_MALFORMED"),
        ("a.b.c.d.e".to_owned(), "TOKEN_MALFORMED"),
        (format!("{}.{}", parts[0], parts[1]), "TOKEN_MALFORMED"),
        (format!("{}.{}.!!!", parts[0], parts[1]), "TOKEN_MALFORMED"),
        // The payload is not even parsed before the signature checks out.
        (
            format!("{}.!!!.{}", parts[0], parts[2]),
            "TOKEN_BAD_SIGNATURE",
        ),
        ("x".repeat(20_000), "TOKEN_MALFORMED"),
    ];
    for (token, reason) in &refused {
        expect_reason(&v, Some(token), reason).await;
    }
    expect_reason(&v, None, "TOKEN_MISSING").await;
    // ES256 header without a kid.
    let mut h = Header::new(Algorithm::ES256);
    h.kid = None;
    let no_kid = jsonwebtoken::encode(&h, &claims(), &k1.enc).unwrap();
    expect_reason(&v, Some(&no_kid), "TOKEN_MALFORMED").await;

    // The untouched token still works (the failures above didn't poison anything).
    assert_eq!(v.verify(Some(&token)).await.unwrap(), alice());
}

#[tokio::test]
async fn jwks_unavailable() {
    let k1 = new_key("k1");
    let port = unreachable_port();
    let v = verifier(&format!("http://127.0.0.1:{port}/jwks"));
    let err = rejects(&v, &k1, &claims(), "KEYS_UNAVAILABLE").await;
    assert!(err.is_unavailable());
    assert!(
        err.to_string().contains("signing keys are unavailable"),
        "{err}"
    );
    // Fails fast during the back-off, still as KEYS_UNAVAILABLE.
    rejects(&v, &k1, &claims(), "KEYS_UNAVAILABLE").await;

    // A server that answers 500 is just as unavailable; it recovers after the back-off.
    let (srv, url) = JwksServer::start(&[&k1]).await;
    srv.set_failing(true);
    let policy = JwksPolicy {
        retry_backoff: Duration::from_secs(2),
        ..JwksPolicy::default()
    };
    let (v, clock) = manual_verifier(&url, policy);
    let err = rejects(&v, &k1, &claims(), "KEYS_UNAVAILABLE").await;
    assert!(err.to_string().contains("500"), "{err}");
    rejects(&v, &k1, &claims(), "KEYS_UNAVAILABLE").await;
    assert_eq!(
        srv.hits(),
        1,
        "failed fetch is not retried within the back-off"
    );
    srv.set_failing(false);
    clock.advance(Duration::from_millis(1999));
    rejects(&v, &k1, &claims(), "KEYS_UNAVAILABLE").await;
    assert_eq!(srv.hits(), 1, "still within the back-off");
    clock.advance(Duration::from_millis(1));
    assert_eq!(
        v.verify(Some(&sign(&k1, &claims()))).await.unwrap(),
        alice()
    );
    assert_eq!(srv.hits(), 2);
}

#[tokio::test]
async fn stale_keys_survive_a_failed_refresh() {
    let k1 = new_key("k1");
    let (srv, url) = JwksServer::start(&[&k1]).await;
    let policy = JwksPolicy {
        max_age: Duration::from_secs(3600),
        retry_backoff: Duration::from_secs(2),
        ..JwksPolicy::default()
    };
    let (v, clock) = manual_verifier(&url, policy);
    let t = sign(&k1, &claims());
    v.verify(Some(&t)).await.unwrap();
    assert_eq!(srv.hits(), 1);
    clock.advance(Duration::from_secs(3599));
    v.verify(Some(&t)).await.unwrap();
    assert_eq!(srv.hits(), 1, "fresh until max_age");
    clock.advance(Duration::from_secs(1));
    srv.set_failing(true);
    assert_eq!(
        v.verify(Some(&t)).await.unwrap(),
        alice(),
        "stale key still trusted"
    );
    assert_eq!(srv.hits(), 2, "the stale set triggered one refresh");
    v.verify(Some(&t)).await.unwrap();
    assert_eq!(srv.hits(), 2, "no new attempt within the back-off");
    srv.set_failing(false);
    clock.advance(Duration::from_secs(2));
    v.verify(Some(&t)).await.unwrap();
    assert_eq!(srv.hits(), 3);
    v.verify(Some(&t)).await.unwrap();
    assert_eq!(srv.hits(), 3, "fresh again after a successful refresh");
}

/// Issue 24: the `email` claim follows the one address rule ([`kineticd::domain::Email`]):
/// printable ASCII, lower-cased by ASCII rules. Unicode case folding made the Kelvin sign
/// (U+212A) act as `k` (`kevin@`), and invisible or right-to-left characters made an
/// address that reads like someone else's.
#[tokio::test]
async fn email_claims_must_be_printable_ascii() {
    let (k1, _srv, v) = one_key_verifier().await;
    for email in [
        "\u{212A}evin@example.com",
        "ali\u{200B}ce@example.com",
        "alice@\u{202E}moc.elpmaxe",
        "\u{2067}alice@example.com",
        "\u{0430}lice@example.com",
        "\u{FEFF}alice@example.com",
        "alice\u{FF20}example.com",
        "not-an-address",
    ] {
        let err = rejects(
            &v,
            &k1,
            &with(claims(), "email", json!(email)),
            "TOKEN_BAD_EMAIL",
        )
        .await;
        let msg = err.to_string();
        assert!(msg.contains("ASCII"), "{email:?}: {msg}");
        assert!(!msg.contains(email), "the raw claim is not echoed: {msg:?}");
    }
    // Upper case ASCII is still folded, and only ASCII is.
    let t = sign(&k1, &with(claims(), "email", json!("KEVIN@Example.com")));
    assert_eq!(
        v.verify(Some(&t)).await.unwrap().email.to_string(),
        "kevin@example.com"
    );
}
