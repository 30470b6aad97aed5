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
/// `n` verifications of `token` at once, each in a task of its own; their results.
async fn verify_concurrently(
    v: &IapVerifier,
    token: &str,
    n: usize,
) -> Vec<Result<Identity, AuthError>> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (v, t) = (v.clone(), token.to_owned());
            tokio::spawn(async move { v.verify(Some(&t)).await })
        })
        .collect();
    let mut results = Vec::with_capacity(n);
    for t in tasks {
        results.push(t.await.expect("verification task"));
    }
    results
}

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
    for identity in verify_concurrently(&v, &token, 20).await {
        assert_eq!(identity.unwrap(), alice());
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

/// A stale set is served while its refresh runs in the background; a failed refresh
/// keeps the old keys trusted and backs off; a successful one replaces the set whole (a
/// withdrawn key stops verifying). [`IapVerifier::key_refresh_settled`] lets the test see
/// each refresh's outcome without timing it.
#[tokio::test]
async fn stale_keys_survive_a_failed_refresh() {
    let k1 = new_key("k1");
    let k2 = new_key("k2");
    let (srv, url) = JwksServer::start(&[&k1, &k2]).await;
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
    v.key_refresh_settled().await;
    assert_eq!(srv.hits(), 1, "fresh until max_age");
    clock.advance(Duration::from_secs(1));
    srv.set_failing(true);
    assert_eq!(
        v.verify(Some(&t)).await.unwrap(),
        alice(),
        "stale key still trusted"
    );
    v.key_refresh_settled().await;
    assert_eq!(srv.hits(), 2, "the stale set triggered one refresh");
    v.verify(Some(&t)).await.unwrap();
    v.key_refresh_settled().await;
    assert_eq!(srv.hits(), 2, "no new attempt within the back-off");
    clock.advance(Duration::from_millis(1999));
    v.verify(Some(&t)).await.unwrap();
    v.key_refresh_settled().await;
    assert_eq!(srv.hits(), 2, "still within the back-off");
    clock.advance(Duration::from_millis(1));
    v.verify(Some(&t)).await.unwrap();
    v.key_refresh_settled().await;
    assert_eq!(
        srv.hits(),
        3,
        "a failed refresh is tried again after the back-off"
    );

    // The key server recovers, without k1 (withdrawn).
    srv.set_failing(false);
    srv.keys.lock().unwrap().retain(|k| k["kid"] != "k1");
    clock.advance(Duration::from_secs(2));
    v.verify(Some(&t)).await.unwrap();
    v.key_refresh_settled().await;
    assert_eq!(srv.hits(), 4);
    let t2 = sign(&k2, &claims());
    v.verify(Some(&t2)).await.unwrap();
    v.key_refresh_settled().await;
    assert_eq!(srv.hits(), 4, "fresh again after a successful refresh");
    // k1 is gone from the refreshed set: unknown now (its refetch doesn't bring it back).
    rejects(&v, &k1, &claims(), "TOKEN_UNKNOWN_KEY").await;
    assert_eq!(srv.hits(), 5);
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

/// Counts of what a [`HoldingJwks`] server has seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Seen {
    /// Requests read.
    requests: usize,
    /// Requests read and not answered yet (held).
    held: usize,
    /// Held requests whose client hung up before the server answered (a timed-out fetch).
    abandoned: usize,
}

/// A key server on a bare socket. It answers with its keys at once until told to hold;
/// then it reads each request and answers nothing until released, like a key server that
/// accepts connections and hangs. It counts requests, held ones, and abandoned ones.
#[derive(Clone)]
struct HoldingJwks {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    holding: Arc<tokio::sync::watch::Sender<bool>>,
    seen: Arc<tokio::sync::watch::Sender<Seen>>,
}

impl HoldingJwks {
    async fn start(keys: &[&TestKey]) -> HoldingJwks {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let srv = HoldingJwks {
            url: format!("http://{}/jwks", listener.local_addr().unwrap()),
            keys: Arc::new(Mutex::new(keys.iter().map(|k| k.jwk.clone()).collect())),
            holding: Arc::new(tokio::sync::watch::channel(false).0),
            seen: Arc::new(tokio::sync::watch::channel(Seen::default()).0),
        };
        let s = srv.clone();
        tokio::spawn(async move {
            loop {
                let (conn, _) = listener.accept().await.unwrap();
                tokio::spawn(s.clone().answer(conn));
            }
        });
        srv
    }

    async fn answer(self, mut conn: tokio::net::TcpStream) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut req = Vec::new();
        let mut buf = [0u8; 1024];
        while !req.windows(4).any(|w| w == b"\r\n\r\n") {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => req.extend_from_slice(&buf[..n]),
            }
        }
        let mut holding = self.holding.subscribe();
        let held = *holding.borrow_and_update();
        self.seen.send_modify(|s| {
            s.requests += 1;
            s.held += usize::from(held);
        });
        if held {
            tokio::select! {
                _ = holding.wait_for(|h| !*h) => self.seen.send_modify(|s| s.held -= 1),
                _ = conn.read(&mut buf) => {
                    // The client hung up (or sent more): it gave up waiting.
                    self.seen.send_modify(|s| {
                        s.held -= 1;
                        s.abandoned += 1;
                    });
                    return;
                }
            }
        }
        let body = json!({"keys": *self.keys.lock().unwrap()}).to_string();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let _ = conn.write_all(head.as_bytes()).await;
        let _ = conn.write_all(body.as_bytes()).await;
        let _ = conn.shutdown().await;
    }

    fn add(&self, key: &TestKey) {
        self.keys.lock().unwrap().push(key.jwk.clone());
    }

    /// Hold requests from now on (`true`), or answer held and new ones (`false`).
    fn hold(&self, on: bool) {
        self.holding.send_replace(on);
    }

    fn seen(&self) -> Seen {
        *self.seen.borrow()
    }

    /// Wait until what the server has seen satisfies `cond` (a condition, not a time).
    async fn until(&self, cond: impl Fn(&Seen) -> bool) -> Seen {
        *self.seen.subscribe().wait_for(|s| cond(s)).await.unwrap()
    }
}

/// Issue 24: once the cached keys were past `max_age`, every request waited for the
/// refresh, so a hanging key server stalled requests for the whole fetch timeout. A
/// stale key must be served at once while one refresh runs in the background.
///
/// No timing is measured: the key server holds the refresh request, and the
/// verifications must all return while it is still held (the fetch timeout is a minute,
/// so before the fix they could only return once the fetch had given up, which the
/// server sees as an abandoned request).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_keys_are_served_at_once_while_the_key_server_hangs() {
    let k1 = new_key("k1");
    let k2 = new_key("k2");
    let srv = HoldingJwks::start(&[&k1]).await;
    let policy = JwksPolicy {
        max_age: Duration::from_secs(3600),
        fetch_timeout: Duration::from_secs(60),
        ..JwksPolicy::default()
    };
    let (v, clock) = manual_verifier(&srv.url, policy);
    let t1 = sign(&k1, &claims());
    // The first load waits for its fetch, as before.
    assert_eq!(v.verify(Some(&t1)).await.unwrap(), alice());
    assert_eq!(srv.seen().requests, 1);

    // The key server hangs from now on, and the cached set goes stale.
    srv.hold(true);
    clock.advance(Duration::from_secs(3600));
    let verifications = tokio::spawn({
        let (v, t1) = (v.clone(), t1.clone());
        async move {
            for _ in 0..20 {
                assert_eq!(v.verify(Some(&t1)).await?, alice());
            }
            for identity in verify_concurrently(&v, &t1, 20).await {
                assert_eq!(identity?, alice());
            }
            Ok::<_, AuthError>(())
        }
    });
    // The refresh has reached the key server, which holds it.
    srv.until(|s| s.held == 1).await;
    tokio::select! {
        biased;
        _ = srv.until(|s| s.abandoned > 0) => {
            panic!("a verification waited for the hanging key server until the fetch gave up")
        }
        done = verifications => done.unwrap().expect("stale keys still verify"),
    }
    // All 40 verifications returned while the refresh was still held; it is the only
    // request made since the first load (one refresh in flight, not one per request).
    assert_eq!(
        srv.seen(),
        Seen {
            requests: 2,
            held: 1,
            abandoned: 0
        }
    );

    // The key server comes back with a rotated set and answers the held refresh.
    srv.add(&k2);
    srv.hold(false);
    // k2 is not in the cached set, so its lookup waits for the fetch in flight (fetches
    // are one at a time) and finds k2 in what it brought: no fetch of its own.
    assert_eq!(
        v.verify(Some(&sign(&k2, &claims()))).await.unwrap(),
        alice()
    );
    v.verify(Some(&t1)).await.unwrap();
    assert_eq!(
        srv.seen(),
        Seen {
            requests: 2,
            held: 0,
            abandoned: 0
        },
        "the background refresh brought the new set; it is fresh again"
    );
}
