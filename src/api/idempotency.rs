//! AIP-155 request ids on the API: `?requestId=` or the `Idempotency-Key` header (the
//! query wins); the rule and the binding to the request's fingerprint are the service's
//! ([`crate::service::request_id`]), shared with the console.

use serde::Serialize;

use crate::service::provision::Idempotency;
use crate::service::request_id;

use super::error::ApiError;

pub const HEADER: &str = "idempotency-key";

/// The caller's key with the request's fingerprint, if a key was given.
pub fn for_request(
    query: Option<&str>,
    headers: &axum::http::HeaderMap,
    method: &str,
    path: &str,
    body: &impl Serialize,
) -> Result<Option<Idempotency>, ApiError> {
    let key = match query {
        Some(q) => Some(q),
        None => match headers.get(HEADER) {
            Some(v) => Some(v.to_str().map_err(|_| request_id::invalid())?),
            None => None,
        },
    };
    Ok(request_id::bind(key, method, path, body)?)
}
