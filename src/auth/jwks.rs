//! Cached JSON Web Key Set (JWKS) holding the ES256 public keys IAP signs with.
//!
//! **Invariant: a token whose `kid` is in the cached set never waits for the key
//! server.** Only the first load and an unknown `kid` wait for a fetch; a set that is
//! merely old is served at once and refreshed in the background.
//!
//! Fetch policy (every fetch holds one async mutex, so concurrent callers that need a
//! fetch share a single request instead of stampeding the key server):
//!
//! * **First use**: the set is fetched when the first token arrives, and that token waits
//!   for it. If it fails, the error is remembered and callers get
//!   [`AuthError::KeysUnavailable`] without a new request until
//!   [`JwksPolicy::retry_backoff`] has passed.
//! * **Unknown `kid`**: one refetch, which the token waits for; then no further refetch
//!   for an unknown `kid` until [`JwksPolicy::refetch_interval`] (30 s) has passed; in
//!   between, unknown kids are rejected at once with [`AuthError::UnknownKey`]. This is
//!   what makes a key rotation visible quickly while a flood of made-up kids costs the
//!   key server one request.
//! * **Age (stale-while-revalidate)**: a set older than [`JwksPolicy::max_age`] is stale.
//!   A known `kid` in a stale set is returned at once, and one background refresh is
//!   started: never more than one in flight, and none within
//!   [`JwksPolicy::retry_backoff`] of a failed attempt. A hanging key server therefore
//!   costs one pending request at a time, never a waiting caller. Until a refresh
//!   succeeds the old keys stay trusted; the first successful refresh (or unknown-`kid`
//!   refetch) replaces the whole set, so a key the server withdrew stops verifying then.
//!
//! There is deliberately no hard upper bound on staleness: the keys came from the
//! configured URL and verified tokens before; refusing them after some age would turn an
//! outage of the key server (or of our egress to it) into an outage of kineticd, while it
//! would only protect against a withdrawn key that an attacker holds *and* a key server
//! we cannot reach at the same time. Each failed refresh is logged at `warn` with the
//! set's age (`age_secs`), which is what to alert on.
//!
//! Only keys that are `kty: EC`, `crv: P-256`, with `alg` absent or `ES256` and `use`
//! absent or `sig` are kept; anything else in the document is skipped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;
use tokio::sync::watch;

use super::error::AuthError;
use crate::domain::report::error_chain;

/// Largest JWKS document accepted (Google's is about 2 KiB).
const MAX_JWKS_BYTES: usize = 256 * 1024;

/// The time the key cache measures its intervals with: the monotonic system clock, or
/// (tests) a manual clock that moves only through [`JwksClock::advance`], so that
/// "within the interval" and "after it" never depend on how fast the machine runs.
#[derive(Debug, Clone, Default)]
pub struct JwksClock(Option<Arc<Mutex<Instant>>>);

impl JwksClock {
    /// A clock that stands still until advanced.
    pub fn manual() -> JwksClock {
        JwksClock(Some(Arc::new(Mutex::new(Instant::now()))))
    }

    /// Move a manual clock forward (no effect on the system clock).
    pub fn advance(&self, by: Duration) {
        if let Some(t) = &self.0 {
            *t.lock().unwrap_or_else(|e| e.into_inner()) += by;
        }
    }

    fn now(&self) -> Instant {
        match &self.0 {
            Some(t) => *t.lock().unwrap_or_else(|e| e.into_inner()),
            None => Instant::now(),
        }
    }
}

impl PartialEq for JwksClock {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}

impl Eq for JwksClock {}

/// Tunables for the key cache. [`Default`] gives the production values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwksPolicy {
    /// Minimum time between two refetches caused by unknown `kid`s. Default 30 s.
    pub refetch_interval: Duration,
    /// After a failed fetch, how long until the next attempt: while no keys are cached,
    /// callers are failed fast meanwhile; while stale keys are cached, they are served and
    /// no background refresh starts meanwhile. Default 2 s.
    pub retry_backoff: Duration,
    /// Age after which a cached set is stale: its keys are still served at once, and one
    /// background refresh is started. Default 1 h.
    pub max_age: Duration,
    /// Timeout for one JWKS HTTP request. Default 5 s.
    pub fetch_timeout: Duration,
    /// What the intervals above are measured with. Default: the system clock.
    pub clock: JwksClock,
}

impl Default for JwksPolicy {
    fn default() -> Self {
        Self {
            refetch_interval: Duration::from_secs(30),
            retry_backoff: Duration::from_secs(2),
            max_age: Duration::from_secs(3600),
            fetch_timeout: Duration::from_secs(5),
            clock: JwksClock::default(),
        }
    }
}

/// A fetched key set, or the (user-facing) reason the fetch failed.
type Fetched = Result<HashMap<String, Arc<DecodingKey>>, String>;

#[derive(Default)]
struct State {
    keys: HashMap<String, Arc<DecodingKey>>,
    /// When the cached set was last fetched successfully (`None`: never).
    loaded_at: Option<Instant>,
    /// Last attempt of any kind, and its error if it failed.
    last_attempt: Option<Instant>,
    last_error: Option<String>,
    /// Last refetch triggered by an unknown `kid`.
    last_unknown_kid_refetch: Option<Instant>,
}

impl State {
    /// Record the outcome of a fetch that ended at `at`: a fetched set replaces the cached
    /// one whole; a failure leaves the cached keys as they are.
    fn record(&mut self, at: Instant, fetched: Fetched) -> Result<(), String> {
        self.last_attempt = Some(at);
        match fetched {
            Ok(keys) => {
                self.keys = keys;
                self.loaded_at = Some(at);
                self.last_error = None;
                Ok(())
            }
            Err(msg) => {
                self.last_error = Some(msg.clone());
                Err(msg)
            }
        }
    }
}

/// The key cache. Cheap to clone; clones share the cache (a background refresh holds a
/// clone of the shared part while it runs).
#[derive(Clone)]
pub(crate) struct JwksCache {
    shared: Arc<Shared>,
}

struct Shared {
    url: String,
    http: reqwest::Client,
    policy: JwksPolicy,
    state: RwLock<State>,
    /// Held for the whole of every fetch: one fetch at a time.
    fetch_lock: tokio::sync::Mutex<()>,
    /// `true` while a background refresh is in flight (at most one).
    refreshing: watch::Sender<bool>,
}

/// Marks a background refresh in flight; clears the mark when dropped, whether the
/// refresh finished or its task was dropped unfinished (runtime shutdown).
struct Refreshing(Arc<Shared>);

impl Drop for Refreshing {
    fn drop(&mut self) {
        self.0.refreshing.send_replace(false);
    }
}

fn within(at: Option<Instant>, window: Duration, now: Instant) -> bool {
    at.is_some_and(|t| now.saturating_duration_since(t) < window)
}

impl JwksCache {
    pub(crate) fn new(url: String, http: reqwest::Client, policy: JwksPolicy) -> Self {
        Self {
            shared: Arc::new(Shared {
                url,
                http,
                policy,
                state: RwLock::new(State::default()),
                fetch_lock: Default::default(),
                refreshing: watch::Sender::new(false),
            }),
        }
    }

    pub(crate) fn url(&self) -> &str {
        &self.shared.url
    }

    /// Resolves once no background refresh is in flight (at once when none is).
    pub(crate) async fn refresh_settled(&self) {
        let mut rx = self.shared.refreshing.subscribe();
        // The sender lives in `shared`, which `self` keeps alive: this cannot fail.
        let _ = rx.wait_for(|refreshing| !*refreshing).await;
    }

    /// The cached key for `kid`, fresh or stale, without waiting; a stale set gets a
    /// background refresh (see [`JwksCache::refresh_in_background`]).
    fn cached(&self, kid: &str, now: Instant) -> Option<Arc<DecodingKey>> {
        let (key, stale) = {
            let st = self.shared.read();
            let key = st.keys.get(kid).cloned()?;
            (key, !within(st.loaded_at, self.shared.policy.max_age, now))
        };
        if stale {
            self.refresh_in_background(now);
        }
        Some(key)
    }

    /// Start one background refresh unless one is in flight or the last attempt failed
    /// less than [`JwksPolicy::retry_backoff`] ago. Never waits.
    fn refresh_in_background(&self, now: Instant) {
        {
            let st = self.shared.read();
            if st.last_error.is_some()
                && within(st.last_attempt, self.shared.policy.retry_backoff, now)
            {
                return;
            }
        }
        let started = self
            .shared
            .refreshing
            .send_if_modified(|refreshing| !std::mem::replace(refreshing, true));
        if !started {
            return;
        }
        let mark = Refreshing(Arc::clone(&self.shared));
        tokio::spawn(async move {
            let mark = mark;
            mark.0.refresh().await;
        });
    }

    /// The verification key for `kid`: at once when the cached set has it (fresh or
    /// stale); otherwise after a fetch, if the policy allows one.
    pub(crate) async fn key_for(&self, kid: &str) -> Result<Arc<DecodingKey>, AuthError> {
        let policy = &self.shared.policy;
        if let Some(k) = self.cached(kid, policy.clock.now()) {
            return Ok(k);
        }
        // Slow path (first load or unknown kid): one fetch at a time; whoever waited
        // re-checks what the last fetch left.
        let _guard = self.shared.fetch_lock.lock().await;
        let now = policy.clock.now();
        if let Some(k) = self.cached(kid, now) {
            return Ok(k);
        }
        {
            let mut st = self.shared.write();
            if st.loaded_at.is_none() {
                if within(st.last_attempt, policy.retry_backoff, now) {
                    let err = st
                        .last_error
                        .clone()
                        .unwrap_or_else(|| "key fetch failed".into());
                    return Err(AuthError::KeysUnavailable(err));
                }
            } else {
                if within(st.last_unknown_kid_refetch, policy.refetch_interval, now) {
                    return Err(AuthError::UnknownKey(kid.to_owned()));
                }
                st.last_unknown_kid_refetch = Some(now);
            }
        }

        let fetched = self.shared.fetch().await;
        let mut st = self.shared.write();
        if let Err(msg) = st.record(policy.clock.now(), fetched) {
            tracing::warn!(url = %self.shared.url, error = %msg, "fetching IAP signing keys failed");
            return Err(AuthError::KeysUnavailable(msg));
        }
        tracing::info!(url = %self.shared.url, keys = st.keys.len(), "fetched IAP signing keys");
        let found = st.keys.get(kid).cloned();
        if found.is_none() {
            // A fresh set without this kid counts as its refetch: don't ask again right
            // away just because this was the first load.
            st.last_unknown_kid_refetch = Some(now);
        }
        found.ok_or_else(|| AuthError::UnknownKey(kid.to_owned()))
    }
}

impl Shared {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The background refresh of a stale set: waits its turn for the fetch lock (no
    /// caller waits for it), then fetches unless another fetch refreshed the set
    /// meanwhile. On failure the cached keys stay as they are, still trusted.
    async fn refresh(&self) {
        let _guard = self.fetch_lock.lock().await;
        if within(
            self.read().loaded_at,
            self.policy.max_age,
            self.policy.clock.now(),
        ) {
            return;
        }
        let fetched = self.fetch().await;
        let mut st = self.write();
        let now = self.policy.clock.now();
        let age_secs = st
            .loaded_at
            .map(|t| now.saturating_duration_since(t).as_secs());
        match st.record(now, fetched) {
            Ok(()) => {
                tracing::info!(url = %self.url, keys = st.keys.len(), "refreshed IAP signing keys");
            }
            Err(msg) => tracing::warn!(
                url = %self.url,
                error = %msg,
                age_secs,
                "refreshing IAP signing keys failed; the cached keys stay trusted until a refresh succeeds"
            ),
        }
    }

    /// One HTTP fetch + parse. The error string is user-facing (no secrets in it).
    async fn fetch(&self) -> Fetched {
        let what = format!("fetching signing keys from {}", self.url);
        let mut resp = self
            .http
            .get(&self.url)
            .timeout(self.policy.fetch_timeout)
            .send()
            .await
            .map_err(|e| format!("{what}: {}", error_chain(&e)))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("{what}: server answered HTTP {status}"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| format!("{what}: {}", error_chain(&e)))?
        {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!(
                    "{what}: key set is larger than {MAX_JWKS_BYTES} bytes"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        let keys = parse_jwks(&body).map_err(|e| format!("{what}: {e}"))?;
        if keys.is_empty() {
            return Err(format!(
                "{what}: key set contains no usable ES256 (P-256) keys"
            ));
        }
        Ok(keys)
    }
}

#[derive(Deserialize)]
struct JwksDoc {
    keys: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct EcJwk {
    kty: String,
    #[serde(default)]
    crv: Option<String>,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    alg: Option<String>,
    #[serde(default, rename = "use")]
    use_: Option<String>,
    #[serde(default)]
    x: Option<String>,
    #[serde(default)]
    y: Option<String>,
}

/// Parse a JWKS document into `kid -> key`, keeping only usable ES256 keys.
pub(crate) fn parse_jwks(body: &[u8]) -> Result<HashMap<String, Arc<DecodingKey>>, String> {
    let doc: JwksDoc = serde_json::from_slice(body)
        .map_err(|e| format!("response is not a JWKS document ({e})"))?;
    let mut keys = HashMap::new();
    for raw in doc.keys {
        let jwk: EcJwk = match serde_json::from_value(raw) {
            Ok(j) => j,
            Err(e) => {
                tracing::debug!(error = %e, "skipping unparsable JWK");
                continue;
            }
        };
        match ec_key(&jwk) {
            Ok((kid, key)) => {
                keys.insert(kid, Arc::new(key));
            }
            Err(why) => tracing::debug!(kid = ?jwk.kid, why, "skipping JWK"),
        }
    }
    Ok(keys)
}

fn ec_key(jwk: &EcJwk) -> Result<(String, DecodingKey), &'static str> {
    if jwk.kty != "EC" || jwk.crv.as_deref() != Some("P-256") {
        return Err("not a P-256 EC key");
    }
    if jwk.alg.as_deref().is_some_and(|a| a != "ES256") {
        return Err("alg is not ES256");
    }
    if jwk.use_.as_deref().is_some_and(|u| u != "sig") {
        return Err("use is not sig");
    }
    let kid = jwk.kid.clone().filter(|k| !k.is_empty()).ok_or("no kid")?;
    let (x, y) = (
        jwk.x.as_deref().ok_or("no x")?,
        jwk.y.as_deref().ok_or("no y")?,
    );
    for c in [x, y] {
        match URL_SAFE_NO_PAD.decode(c) {
            Ok(b) if b.len() == 32 => {}
            _ => return Err("coordinate is not 32 bytes of base64url"),
        }
    }
    let key = DecodingKey::from_ec_components(x, y).map_err(|_| "bad coordinates")?;
    // Make sure the point is actually on the curve now rather than at first use:
    // verifying a dummy signature errors only if the key itself cannot be built.
    let dummy_sig = URL_SAFE_NO_PAD.encode([1u8; 64]);
    jsonwebtoken::crypto::verify(&dummy_sig, b"probe", &key, Algorithm::ES256)
        .map_err(|_| "point is not on the P-256 curve")?;
    Ok((kid, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_foreign_keys_and_invalid_points() {
        let doc = serde_json::json!({"keys": [
            {"kty": "RSA", "kid": "r", "n": "AQAB", "e": "AQAB"},
            {"kty": "EC", "crv": "P-384", "kid": "p384", "x": "AA", "y": "AA"},
            {"kty": "EC", "crv": "P-256", "kid": "offcurve",
             "x": URL_SAFE_NO_PAD.encode([1u8; 32]), "y": URL_SAFE_NO_PAD.encode([1u8; 32])},
            {"kty": "oct", "kid": "h", "k": "c2VjcmV0"},
            "garbage"
        ]});
        let keys = parse_jwks(doc.to_string().as_bytes()).expect("parses");
        assert!(keys.is_empty(), "{:?}", keys.keys().collect::<Vec<_>>());
        assert!(parse_jwks(b"{}").is_err());

        // The P-256 base point is a valid public key.
        let hex = |h: &str| -> Vec<u8> {
            (0..h.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
                .collect()
        };
        let gx = hex("6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296");
        let gy = hex("4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5");
        let doc = serde_json::json!({"keys": [
            {"kty": "EC", "crv": "P-256", "kid": "g", "alg": "ES256", "use": "sig",
             "x": URL_SAFE_NO_PAD.encode(&gx), "y": URL_SAFE_NO_PAD.encode(&gy)},
            {"kty": "EC", "crv": "P-256", "kid": "enc-only", "use": "enc",
             "x": URL_SAFE_NO_PAD.encode(&gx), "y": URL_SAFE_NO_PAD.encode(&gy)},
            {"kty": "EC", "crv": "P-256", "kid": "es384", "alg": "ES384",
             "x": URL_SAFE_NO_PAD.encode(&gx), "y": URL_SAFE_NO_PAD.encode(&gy)},
        ]});
        let keys = parse_jwks(doc.to_string().as_bytes()).expect("parses");
        assert_eq!(keys.keys().collect::<Vec<_>>(), vec!["g"]);
        assert!(parse_jwks(b"not json").is_err());
    }
}
