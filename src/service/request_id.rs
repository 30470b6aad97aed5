//! AIP-155 request ids, one rule for every surface (the API's `?requestId=` /
//! `Idempotency-Key`, the console's hidden field): 1-128 characters of letters, digits,
//! `-` `_` `.` `:`, bound to a fingerprint of the request so a key reused with another
//! request is refused.
//!
//! Invariant: the API and the console bind the same key to the same fingerprint for the
//! same request (`method resource body`), so a console confirm and an API call with one
//! key are one operation.

use serde::Serialize;

use super::{Error, Result};
use crate::ops::queue::{Idempotency, fingerprint};

/// Whether `k` is a request id kineticd accepts.
pub fn is_valid(k: &str) -> bool {
    (1..=128).contains(&k.len())
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// The 400 for a request id that is not one.
pub fn invalid() -> Error {
    Error::invalid(
        "INVALID_REQUEST_ID",
        "requestId / Idempotency-Key must be 1-128 characters of letters, digits, - _ . : (a UUID is best)",
    )
}

/// `key` bound to the fingerprint of `method resource body`, if a key was given.
pub fn bind(
    key: Option<&str>,
    method: &str,
    resource: &str,
    body: &impl Serialize,
) -> Result<Option<Idempotency>> {
    let Some(key) = key else { return Ok(None) };
    if !is_valid(key) {
        return Err(invalid());
    }
    let body = serde_json::to_value(body).unwrap_or_default();
    Ok(Some(Idempotency {
        key: key.to_owned(),
        fingerprint: fingerprint(method, resource, &body),
    }))
}
