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

/// `?requestId=` (AIP-155) on a mutation that answers at once, for the document (the
/// value is read by [`RequestKey`]).
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct RequestIdQuery {
    /// AIP-155 request id (or send the Idempotency-Key header): a retry with the same id
    /// and the same request gets the first answer and changes nothing; the same id with
    /// another request is 409 REQUEST_ID_REUSED. Kept 24 hours.
    pub request_id: Option<String>,
}

/// The request's AIP-155 key (`?requestId=` or `Idempotency-Key`), its method and path:
/// bound to the body by [`RequestKey::bind`].
pub struct RequestKey {
    query: Option<String>,
    headers: axum::http::HeaderMap,
    method: String,
    path: String,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for RequestKey {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, ApiError> {
        let query = parts.uri.query().and_then(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "requestId")
                .map(|(_, v)| v.into_owned())
        });
        Ok(RequestKey {
            query,
            headers: parts.headers.clone(),
            method: parts.method.to_string(),
            path: parts.uri.path().to_owned(),
        })
    }
}

impl RequestKey {
    /// The key bound to this request with `body`, if a key was given.
    pub fn bind(&self, body: &impl Serialize) -> Result<Option<Idempotency>, ApiError> {
        for_request(
            self.query.as_deref(),
            &self.headers,
            &self.method,
            &self.path,
            body,
        )
    }
}
