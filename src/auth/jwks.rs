//! Cached JSON Web Key Set (JWKS) holding the ES256 public keys IAP signs with.
//!
//! Fetch policy (all fetches go through one async mutex, so concurrent callers that
//! need a fetch share a single request instead of stampeding the key server):
//!
//! * **First use**: the set is fetched when the first token arrives. If that fails, the
//!   error is remembered and callers get [`AuthError::KeysUnavailable`] without a new
//!   request until [`JwksPolicy::retry_backoff`] has passed.
//! * **Unknown `kid`**: one refetch, then no further refetch for an unknown `kid` until
//!   [`JwksPolicy::refetch_interval`] (30 s) has passed; in between, unknown kids are
//!   rejected at once with [`AuthError::UnknownKey`]. This is what makes a key rotation
//!   visible quickly while a flood of made-up kids costs the key server one request.
//! * **Age**: a set older than [`JwksPolicy::max_age`] is refreshed on the next lookup;
//!   if that refresh fails, the old (still trusted) keys keep being used.
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

use super::iap::AuthError;
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
    /// After a failed fetch while no keys are cached, how long callers are failed fast
    /// before the next attempt. Default 2 s.
    pub retry_backoff: Duration,
    /// Age after which a cached set is refreshed on the next lookup. Default 1 h.
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

pub(crate) struct JwksCache {
    url: String,
    http: reqwest::Client,
    policy: JwksPolicy,
    state: RwLock<State>,
    fetch_lock: tokio::sync::Mutex<()>,
}

fn within(at: Option<Instant>, window: Duration, now: Instant) -> bool {
    at.is_some_and(|t| now.saturating_duration_since(t) < window)
}

impl JwksCache {
    pub(crate) fn new(url: String, http: reqwest::Client, policy: JwksPolicy) -> Self {
        Self {
            url,
            http,
            policy,
            state: RwLock::new(State::default()),
            fetch_lock: Default::default(),
        }
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Cached key for `kid` if present and the set is fresh.
    fn fresh_key(&self, kid: &str, now: Instant) -> Option<Arc<DecodingKey>> {
        let st = self.read();
        if within(st.loaded_at, self.policy.max_age, now) {
            st.keys.get(kid).cloned()
        } else {
            None
        }
    }

    /// The verification key for `kid`, fetching the set if the policy allows.
    pub(crate) async fn key_for(&self, kid: &str) -> Result<Arc<DecodingKey>, AuthError> {
        if let Some(k) = self.fresh_key(kid, self.policy.clock.now()) {
            return Ok(k);
        }
        // Slow path: one fetch at a time; whoever waited re-checks what the last fetch left.
        let _guard = self.fetch_lock.lock().await;
        let now = self.policy.clock.now();
        if let Some(k) = self.fresh_key(kid, now) {
            return Ok(k);
        }
        enum Why {
            FirstLoad,
            Stale(Arc<DecodingKey>),
            UnknownKid,
        }
        let why = {
            let mut st = self.write();
            if st.loaded_at.is_none() {
                if within(st.last_attempt, self.policy.retry_backoff, now) {
                    let err = st
                        .last_error
                        .clone()
                        .unwrap_or_else(|| "key fetch failed".into());
                    return Err(AuthError::KeysUnavailable(err));
                }
                Why::FirstLoad
            } else if let Some(k) = st.keys.get(kid).cloned() {
                // Known kid, but the set is past max_age.
                if within(st.last_attempt, self.policy.retry_backoff, now) {
                    return Ok(k);
                }
                Why::Stale(k)
            } else {
                if within(
                    st.last_unknown_kid_refetch,
                    self.policy.refetch_interval,
                    now,
                ) {
                    return Err(AuthError::UnknownKey(kid.to_owned()));
                }
                st.last_unknown_kid_refetch = Some(now);
                Why::UnknownKid
            }
        };

        let fetched = self.fetch().await;
        let mut st = self.write();
        st.last_attempt = Some(self.policy.clock.now());
        match fetched {
            Ok(keys) => {
                tracing::info!(url = %self.url, keys = keys.len(), "fetched IAP signing keys");
                st.keys = keys;
                st.loaded_at = st.last_attempt;
                st.last_error = None;
                let found = st.keys.get(kid).cloned();
                if found.is_none() {
                    // A fresh set without this kid counts as its refetch: don't ask again
                    // right away just because this was the first load.
                    st.last_unknown_kid_refetch = Some(now);
                }
                found.ok_or_else(|| AuthError::UnknownKey(kid.to_owned()))
            }
            Err(msg) => {
                tracing::warn!(url = %self.url, error = %msg, "fetching IAP signing keys failed");
                st.last_error = Some(msg.clone());
                match why {
                    // Keep trusting the keys we already verified against before.
                    Why::Stale(k) => Ok(k),
                    Why::FirstLoad | Why::UnknownKid => Err(AuthError::KeysUnavailable(msg)),
                }
            }
        }
    }

    /// One HTTP fetch + parse. The error string is user-facing (no secrets in it).
    async fn fetch(&self) -> Result<HashMap<String, Arc<DecodingKey>>, String> {
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
