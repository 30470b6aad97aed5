//! Why a request's identity was not accepted: one [`AuthError`] per failed check of an
//! IAP assertion or of the keys that verify it (`iap` checks, `jwks` fetches keys).
//!
//! Invariant: every variant has one stable `reason()`; only a key outage
//! ([`AuthError::KeysUnavailable`]) is ours (503), everything else is the caller's (401).
//! Attacker-controlled values are quoted and cut, never echoed whole.

/// Why an assertion was rejected. Messages are safe to show a user: they say what is
/// wrong and never echo the token (only short, escaped `alg`/`kid` values).
///
/// All variants are the caller's fault (HTTP 401) except [`AuthError::KeysUnavailable`],
/// which means we could not obtain the signing keys and should be reported as HTTP 503
/// (see [`AuthError::is_unavailable`]).
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error(
        "missing IAP assertion: the request has no `x-goog-iap-jwt-assertion` header (is the service reached through Identity-Aware Proxy?)"
    )]
    Missing,
    #[error("malformed IAP assertion: {0}")]
    Malformed(String),
    #[error("IAP assertion uses signing algorithm {}; only ES256 is accepted", short(.0))]
    BadAlgorithm(String),
    #[error("IAP assertion is signed with unknown key id {}", short(.0))]
    UnknownKey(String),
    #[error("IAP assertion signature is invalid")]
    BadSignature,
    #[error("IAP assertion has expired")]
    Expired,
    #[error(
        "IAP assertion is not valid yet (issued or valid-from in the future; check clock skew)"
    )]
    NotYetValid,
    #[error("IAP assertion was issued for a different audience than this service")]
    BadAudience,
    #[error("IAP assertion was not issued by the expected issuer (Identity-Aware Proxy)")]
    BadIssuer,
    #[error("IAP assertion carries no email claim")]
    MissingEmail,
    /// The `email` claim is not an address [`crate::domain::Email`] accepts; the rule it broke is given,
    /// the claim itself is not echoed.
    #[error("IAP assertion's email claim is not an address kineticd accepts: it {0}")]
    BadEmail(&'static str),
    #[error(
        "the request carries more than one `x-goog-iap-jwt-assertion` header; exactly one is \
         accepted (does something between Identity-Aware Proxy and kineticd add its own?)"
    )]
    Duplicated,
    #[error("cannot verify IAP assertion: signing keys are unavailable ({0})")]
    KeysUnavailable(String),
}

/// Debug-quote an attacker-controlled value, cut to a sane length.
fn short(s: &str) -> String {
    const MAX: usize = 64;
    if s.chars().count() <= MAX {
        format!("{s:?}")
    } else {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut:?}…")
    }
}

impl AuthError {
    /// Stable machine-readable code for logs, metrics and API error bodies.
    pub fn reason(&self) -> &'static str {
        match self {
            AuthError::Missing => "TOKEN_MISSING",
            AuthError::Malformed(_) => "TOKEN_MALFORMED",
            AuthError::BadAlgorithm(_) => "TOKEN_BAD_ALGORITHM",
            AuthError::UnknownKey(_) => "TOKEN_UNKNOWN_KEY",
            AuthError::BadSignature => "TOKEN_BAD_SIGNATURE",
            AuthError::Expired => "TOKEN_EXPIRED",
            AuthError::NotYetValid => "TOKEN_NOT_YET_VALID",
            AuthError::BadAudience => "TOKEN_BAD_AUDIENCE",
            AuthError::BadIssuer => "TOKEN_BAD_ISSUER",
            AuthError::MissingEmail => "TOKEN_MISSING_EMAIL",
            AuthError::BadEmail(_) => "TOKEN_BAD_EMAIL",
            AuthError::Duplicated => "TOKEN_DUPLICATED",
            AuthError::KeysUnavailable(_) => "KEYS_UNAVAILABLE",
        }
    }

    /// True when the failure is ours, not the caller's (map to 503, not 401).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, AuthError::KeysUnavailable(_))
    }
}
