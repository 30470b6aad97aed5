//! AIP-155 request ids: `?requestId=` or the `Idempotency-Key` header, bound to a
//! fingerprint of the request so a reused key with another body is refused.

use serde_json::Value;

use crate::service::provision::{Idempotency, fingerprint};

use super::error::ApiError;

pub const HEADER: &str = "idempotency-key";

/// The caller's key (query wins over header), validated.
pub fn key(
    query: Option<&str>,
    headers: &axum::http::HeaderMap,
) -> Result<Option<String>, ApiError> {
    let raw = match query {
        Some(q) => Some(q.to_owned()),
        None => match headers.get(HEADER) {
            Some(v) => Some(v.to_str().map_err(|_| invalid())?.to_owned()),
            None => None,
        },
    };
    match raw {
        None => Ok(None),
        Some(k) if is_valid(&k) => Ok(Some(k)),
        Some(_) => Err(invalid()),
    }
}

fn is_valid(k: &str) -> bool {
    (1..=128).contains(&k.len())
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

fn invalid() -> ApiError {
    ApiError::invalid(
        "INVALID_REQUEST_ID",
        "requestId / Idempotency-Key must be 1-128 characters of letters, digits, - _ . : (a UUID is best)",
    )
}

/// The key with the request's fingerprint, if a key was given.
pub fn for_request(
    query: Option<&str>,
    headers: &axum::http::HeaderMap,
    method: &str,
    path: &str,
    body: &Value,
) -> Result<Option<Idempotency>, ApiError> {
    Ok(key(query, headers)?.map(|key| Idempotency {
        key,
        fingerprint: fingerprint(method, path, body),
    }))
}
