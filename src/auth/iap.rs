//! Verification of the `x-goog-iap-jwt-assertion` header that Identity-Aware Proxy
//! attaches to every request it lets through.
//!
//! Order of checks (each failure maps to exactly one [`AuthError`]):
//! 1. header present and non-empty, three dot-separated segments;
//! 2. the JOSE header's `alg` is exactly `ES256` — checked on the raw JSON *before*
//!    any key is looked up, so `none`/`HS256`/... never reach a key (no HMAC key is
//!    ever built from the EC public key);
//! 3. `kid` names a key in the cached JWKS (see [`super::jwks`]); embedded `jwk`/`jku`
//!    header fields are ignored;
//! 4. signature, `exp`, `nbf` (if present), `iss`, `aud` via `jsonwebtoken`;
//! 5. `iat` not in the future beyond the leeway;
//! 6. `email` present and an [`Email`]: printable ASCII, lower-cased by ASCII rules only
//!    (a token whose email has invisible, right-to-left or other non-ASCII characters is
//!    refused with `TOKEN_BAD_EMAIL`, never folded: the Kelvin sign is not `k`).
//!
//! One header only: a request with two assertion headers is refused before any of this
//! (`TOKEN_DUPLICATED`, see [`AuthError::Duplicated`]; the check is in
//! [`super::Authenticator`], which reads the headers).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;

use super::error::AuthError;
use super::jwks::{JwksCache, JwksPolicy};
use crate::domain::Email;

/// HTTP header carrying the IAP-signed JWT.
pub const IAP_HEADER: &str = "x-goog-iap-jwt-assertion";
/// Google's published IAP signing keys.
pub const GOOGLE_IAP_JWKS_URL: &str = "https://www.gstatic.com/iap/verify/public_key-jwk";
/// The `iss` claim of every IAP assertion.
pub const IAP_ISSUER: &str = "https://cloud.google.com/iap";
/// Default clock-skew allowance for `exp`, `nbf` and `iat`.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// Tokens longer than this are rejected unparsed (IAP's are well under 2 KiB).
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Where keys come from and what a valid assertion must say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IapConfig {
    /// JWKS URL; Google's is [`GOOGLE_IAP_JWKS_URL`].
    pub jwks_url: String,
    /// Expected `aud`, e.g. `/projects/123/global/backendServices/456`.
    pub audience: String,
    /// Expected `iss`; normally [`IAP_ISSUER`].
    pub issuer: String,
    /// Clock-skew allowance (whole seconds are used); normally [`DEFAULT_LEEWAY`].
    pub leeway: Duration,
}

impl IapConfig {
    /// Production settings for `audience`: Google's JWKS URL, IAP issuer, 30 s leeway.
    pub fn new(audience: impl Into<String>) -> Self {
        Self {
            jwks_url: GOOGLE_IAP_JWKS_URL.to_owned(),
            audience: audience.into(),
            issuer: IAP_ISSUER.to_owned(),
            leeway: DEFAULT_LEEWAY,
        }
    }
}

/// Who the verified assertion says the caller is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The `email` claim as an [`Email`] (printable ASCII, lower-cased by ASCII rules).
    pub email: Email,
    /// The `sub` claim (e.g. `accounts.google.com:1234567890`), if present and non-empty.
    pub subject: Option<String>,
}

/// Verifies IAP assertions. Cheap to clone; clones share the key cache.
#[derive(Clone)]
pub struct IapVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    cfg: IapConfig,
    validation: Validation,
    jwks: JwksCache,
}

impl fmt::Debug for IapVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IapVerifier")
            .field("jwks_url", &self.inner.jwks.url())
            .field("audience", &self.inner.cfg.audience)
            .field("issuer", &self.inner.cfg.issuer)
            .field("leeway", &self.inner.cfg.leeway)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct RawHeader {
    #[serde(default)]
    alg: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct IapClaims {
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    iat: Option<f64>,
}

impl IapVerifier {
    /// Verifier with the production key-cache policy ([`JwksPolicy::default`]).
    ///
    /// `http` must have been built after a rustls crypto provider was installed
    /// (see [`super::install_tls_provider`]).
    pub fn new(cfg: IapConfig, http: reqwest::Client) -> Self {
        Self::with_policy(cfg, http, JwksPolicy::default())
    }

    /// Verifier with a custom key-cache policy (tests use a manual clock).
    pub fn with_policy(cfg: IapConfig, http: reqwest::Client, policy: JwksPolicy) -> Self {
        super::install_crypto_provider();
        let mut validation = Validation::new(Algorithm::ES256);
        validation.leeway = cfg.leeway.as_secs();
        validation.set_audience(&[cfg.audience.as_str()]);
        validation.set_issuer(&[cfg.issuer.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.validate_aud = true;
        let jwks = JwksCache::new(cfg.jwks_url.clone(), http, policy);
        Self {
            inner: Arc::new(Inner {
                cfg,
                validation,
                jwks,
            }),
        }
    }

    /// The configuration this verifier enforces.
    pub fn config(&self) -> &IapConfig {
        &self.inner.cfg
    }

    /// Resolves once no background refresh of the signing keys is in flight (at once
    /// when none is). Requests never wait for a refresh; this lets a test observe a
    /// refresh's outcome without guessing how long it takes.
    pub async fn key_refresh_settled(&self) {
        self.inner.jwks.refresh_settled().await
    }

    /// Verify the value of the [`IAP_HEADER`] header (`None` if the header is absent).
    pub async fn verify(&self, token: Option<&str>) -> Result<Identity, AuthError> {
        let token = token
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(AuthError::Missing)?;
        if token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::Malformed(format!(
                "token is longer than {MAX_TOKEN_BYTES} bytes"
            )));
        }
        let segments: Vec<&str> = token.split('.').collect();
        let [header_b64, _, _] = segments.as_slice() else {
            return Err(AuthError::Malformed(
                "expected a JWT of three dot-separated segments".into(),
            ));
        };

        // Algorithm gate on the raw header, before any key is chosen.
        let header_json = URL_SAFE_NO_PAD
            .decode(header_b64)
            .map_err(|_| AuthError::Malformed("token header is not base64url".into()))?;
        let raw: RawHeader = serde_json::from_slice(&header_json)
            .map_err(|_| AuthError::Malformed("token header is not a JSON object".into()))?;
        match raw.alg {
            Some(serde_json::Value::String(alg)) if alg == "ES256" => {}
            Some(serde_json::Value::String(alg)) => return Err(AuthError::BadAlgorithm(alg)),
            Some(other) => return Err(AuthError::BadAlgorithm(other.to_string())),
            None => return Err(AuthError::Malformed("token header has no alg".into())),
        }

        let header = jsonwebtoken::decode_header(token).map_err(|e| {
            AuthError::Malformed(format!("token header is invalid ({})", kind_text(e.kind())))
        })?;
        if header.alg != Algorithm::ES256 {
            return Err(AuthError::BadAlgorithm(format!("{:?}", header.alg)));
        }
        let kid = header
            .kid
            .filter(|k| !k.is_empty())
            .ok_or_else(|| AuthError::Malformed("token header has no key id (kid)".into()))?;

        let key = self.inner.jwks.key_for(&kid).await?;

        let data = jsonwebtoken::decode::<IapClaims>(token, &key, &self.inner.validation)
            .map_err(|e| map_jwt_error(e.into_kind()))?;
        let claims = data.claims;

        let iat = claims
            .iat
            .ok_or_else(|| AuthError::Malformed("token has no iat (issued-at) claim".into()))?;
        if !iat.is_finite() || iat < 0.0 {
            return Err(AuthError::Malformed(
                "token iat claim is not a valid timestamp".into(),
            ));
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        if iat > now + self.inner.cfg.leeway.as_secs() as f64 {
            return Err(AuthError::NotYetValid);
        }

        let email = claims
            .email
            .as_deref()
            .map(|e| e.trim_matches(|c: char| c.is_ascii_whitespace()))
            .filter(|e| !e.is_empty())
            .ok_or(AuthError::MissingEmail)?;
        let email = Email::parse(email).map_err(|e| AuthError::BadEmail(e.rule))?;
        let subject = claims.sub.filter(|s| !s.is_empty());
        Ok(Identity { email, subject })
    }
}

/// Short description of a jsonwebtoken error without echoing token contents.
fn kind_text(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Base64(_) => "not base64url",
        ErrorKind::Json(_) => "not valid JSON",
        ErrorKind::Utf8(_) => "not UTF-8",
        ErrorKind::InvalidToken => "not a JWT",
        _ => "unsupported",
    }
}

fn map_jwt_error(kind: ErrorKind) -> AuthError {
    match kind {
        ErrorKind::InvalidSignature => AuthError::BadSignature,
        ErrorKind::ExpiredSignature => AuthError::Expired,
        ErrorKind::ImmatureSignature => AuthError::NotYetValid,
        ErrorKind::InvalidAudience => AuthError::BadAudience,
        ErrorKind::InvalidIssuer => AuthError::BadIssuer,
        ErrorKind::InvalidAlgorithm | ErrorKind::UnsupportedAlgorithm => {
            AuthError::BadAlgorithm("(not ES256)".into())
        }
        ErrorKind::MissingRequiredClaim(c) => match c.as_str() {
            "aud" => AuthError::BadAudience,
            "iss" => AuthError::BadIssuer,
            other => AuthError::Malformed(format!("token has no {other} claim")),
        },
        ErrorKind::InvalidClaimFormat(c) => {
            AuthError::Malformed(format!("token {c} claim has an invalid format"))
        }
        ErrorKind::InvalidEcdsaKey | ErrorKind::InvalidKeyFormat => {
            AuthError::KeysUnavailable("the published signing key is not a usable P-256 key".into())
        }
        ErrorKind::Base64(_) => AuthError::Malformed("token segment is not base64url".into()),
        ErrorKind::Json(_) => {
            AuthError::Malformed("token claims are not a valid JSON object".into())
        }
        ErrorKind::Utf8(_) => AuthError::Malformed("token claims are not UTF-8".into()),
        ErrorKind::InvalidToken => AuthError::Malformed("token is not a well-formed JWS".into()),
        _ => AuthError::Malformed("token could not be decoded".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_and_messages() {
        let e = AuthError::BadAlgorithm("x".repeat(500));
        assert_eq!(e.reason(), "TOKEN_BAD_ALGORITHM");
        assert!(e.to_string().len() < 200, "{e}");
        assert!(AuthError::KeysUnavailable("down".into()).is_unavailable());
        assert!(!AuthError::Expired.is_unavailable());
        assert_eq!(
            map_jwt_error(ErrorKind::MissingRequiredClaim("aud".into())).reason(),
            "TOKEN_BAD_AUDIENCE"
        );
        assert_eq!(
            map_jwt_error(ErrorKind::InvalidSignature).reason(),
            "TOKEN_BAD_SIGNATURE"
        );
        assert_eq!(AuthError::Duplicated.reason(), "TOKEN_DUPLICATED");
        assert!(
            AuthError::Duplicated
                .to_string()
                .contains(crate::auth::IAP_HEADER)
        );
        let rule = Email::parse("\u{212A}evin@example.com").unwrap_err().rule;
        let e = AuthError::BadEmail(rule);
        assert_eq!(e.reason(), "TOKEN_BAD_EMAIL");
        assert!(e.to_string().contains("ASCII"), "{e}");
        assert!(!e.is_unavailable() && !AuthError::Duplicated.is_unavailable());
    }
}
