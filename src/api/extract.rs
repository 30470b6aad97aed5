//! Extractors that turn axum's rejections into Google-shaped errors: malformed JSON
//! names the parse position, unknown fields are named, oversized bodies get 413, and a
//! body that is not a JSON object is refused (never mapped onto fields by position).

use axum::body::Bytes;
use axum::extract::rejection::{
    JsonRejection, MissingJsonContentType, PathRejection, QueryRejection,
};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use serde::de::{DeserializeOwned, IgnoredAny};

use super::error::ApiError;
use crate::domain::TeamId;
use crate::service::clusters::ClusterPath;

/// `axum::Json` with API errors.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        decode(&json_bytes(req, state).await?).map(ApiJson)
    }
}

/// The body of a request declared as JSON (415 otherwise).
async fn json_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    if !json_content_type(req.headers()) {
        return Err(json_rejection(MissingJsonContentType::default().into()));
    }
    Bytes::from_request(req, state)
        .await
        .map_err(|e| json_rejection(e.into()))
}

/// Decode a JSON object body into `T`, with errors that name the problem.
fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    require_utf8(bytes)?;
    require_object(bytes)?;
    match axum::Json::<T>::from_bytes(bytes) {
        Ok(axum::Json(v)) => Ok(v),
        // serde_json reports some type errors (a number or null where an enum is
        // expected) as syntax errors; if the body parses as JSON, it is a field error.
        Err(JsonRejection::JsonSyntaxError(e))
            if serde_json::from_slice::<IgnoredAny>(bytes).is_ok() =>
        {
            let mut err = data_error(&e);
            err.message
                .push_str(" (the body is valid JSON, but this value has the wrong type)");
            Err(err)
        }
        Err(r) => Err(json_rejection(r)),
    }
}

/// JSON is UTF-8 (RFC 8259): say where it stops being so, rather than letting the
/// decoder call a broken string a value "of the wrong type".
fn require_utf8(bytes: &[u8]) -> Result<(), ApiError> {
    std::str::from_utf8(bytes).map(|_| ()).map_err(|e| {
        ApiError::invalid(
            "MALFORMED_JSON",
            format!(
                "request body is not valid JSON: invalid UTF-8 at byte {}; send the body encoded as UTF-8",
                e.valid_up_to()
            ),
        )
        .with("byte", e.valid_up_to())
    })
}

/// A body must be a JSON object: serde would otherwise map an array onto a struct's
/// fields by position (`["t","T",["p"]]` as a team). Malformed JSON is left to the
/// decoder, which names the parse position.
fn require_object(bytes: &[u8]) -> Result<(), ApiError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        return Ok(());
    }
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(v) => Err(ApiError::invalid(
            "BODY_NOT_OBJECT",
            format!(
                "request body must be a JSON object ({{\"field\": value, ...}}), not {}",
                json_kind(&v)
            ),
        )),
        Err(_) => Ok(()),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// [`ApiJson`], except that a request with no body at all (no content type, zero bytes)
/// or a JSON `null` means `T::default()`: `curl -X PUT .../clusters/c` reconciles an
/// existing cluster.
pub struct ApiJsonOrEmpty<T>(pub T);

impl<S, T> FromRequest<S> for ApiJsonOrEmpty<T>
where
    T: DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if req.headers().get(CONTENT_TYPE).is_none() {
            let bytes = Bytes::from_request(req, state)
                .await
                .map_err(|e| json_rejection(e.into()))?;
            if bytes.is_empty() {
                return Ok(ApiJsonOrEmpty(T::default()));
            }
            return Err(json_rejection(MissingJsonContentType::default().into()));
        }
        let bytes = json_bytes(req, state).await?;
        if bytes.trim_ascii() == b"null" {
            return Ok(ApiJsonOrEmpty(T::default()));
        }
        decode(&bytes).map(ApiJsonOrEmpty)
    }
}

/// `application/json` or `application/*+json` (parameters allowed), as axum's `Json`.
pub(super) fn json_content_type(headers: &HeaderMap) -> bool {
    let Some(ct) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = ct.split(';').next().unwrap_or("").trim();
    match essence.split_once('/') {
        Some((ty, sub)) => {
            let sub = sub.to_ascii_lowercase();
            ty.eq_ignore_ascii_case("application") && (sub == "json" || sub.ends_with("+json"))
        }
        None => false,
    }
}

/// A body that is JSON but does not fit the request type: name the field.
fn data_error(e: &(dyn std::error::Error + 'static)) -> ApiError {
    // serde's message names the field and the position (line, column).
    let msg = e
        .source()
        .map(|s| s.to_string())
        .unwrap_or_else(|| e.to_string());
    let reason = if msg.contains("unknown field") {
        "UNKNOWN_FIELD"
    } else {
        "INVALID_FIELD"
    };
    ApiError::invalid(reason, format!("request body: {msg}"))
}

fn json_rejection(r: JsonRejection) -> ApiError {
    match r {
        JsonRejection::JsonDataError(e) => data_error(&e),
        JsonRejection::JsonSyntaxError(e) => {
            let msg = std::error::Error::source(&e)
                .map(|s| s.to_string())
                .unwrap_or_else(|| e.body_text());
            ApiError::invalid(
                "MALFORMED_JSON",
                format!("request body is not valid JSON: {msg}"),
            )
        }
        JsonRejection::MissingJsonContentType(_) => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UNSUPPORTED_MEDIA_TYPE",
            "send the body as JSON with Content-Type: application/json",
        ),
        JsonRejection::BytesRejection(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "BODY_TOO_LARGE",
                "request body is larger than the 1 MiB limit",
            )
        }
        other => ApiError::invalid("BAD_BODY", other.body_text()),
    }
}

/// `axum::extract::Query` with API errors.
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|r: QueryRejection| {
                ApiError::invalid("INVALID_QUERY", format!("query string: {}", r.body_text()))
            })
    }
}

/// `axum::extract::Path` with API errors.
pub struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|r: PathRejection| ApiError::invalid("INVALID_PATH", r.body_text()))
    }
}

/// Split a custom-method segment `id:verb` (AIP-136).
pub fn split_verb(segment: &str) -> Option<(&str, &str)> {
    segment.rsplit_once(':')
}

pub fn unknown_verb(path: &str) -> ApiError {
    ApiError::not_found(
        "METHOD_NOT_FOUND",
        format!("no such method {path}; see /docs for the API reference"),
    )
}

/// The `If-Match` header (AIP-154), if sent.
pub struct IfMatch(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for IfMatch {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        match parts.headers.get(axum::http::header::IF_MATCH) {
            None => Ok(IfMatch(None)),
            Some(v) => v
                .to_str()
                .ok()
                .filter(|v| !v.trim().is_empty() && v.len() <= 200)
                .map(|v| IfMatch(Some(v.to_owned())))
                .ok_or_else(|| {
                    ApiError::invalid(
                        "INVALID_ETAG",
                        "If-Match must be an etag as returned in the resource's etag field",
                    )
                }),
        }
    }
}

/// The cluster a `.../projects/{project}/zones/{zone}/clusters/{cluster}...` route names,
/// parsed and validated (400 for a malformed name) before the handler runs.
pub struct ClusterAt(pub ClusterPath);

impl<S: Send + Sync> FromRequestParts<S> for ClusterAt {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let ApiPath((project, zone, cluster)) =
            ApiPath::<(String, String, String)>::from_request_parts(parts, state).await?;
        Ok(ClusterAt(ClusterPath::parse(&project, &zone, &cluster)?))
    }
}

/// The team a `/v1/teams/{team}...` route names, parsed and validated (400 for a malformed
/// id) before the handler runs.
pub struct TeamAt(pub TeamId);

impl<S: Send + Sync> FromRequestParts<S> for TeamAt {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let ApiPath(team) = ApiPath::<String>::from_request_parts(parts, state).await?;
        Ok(TeamAt(TeamId::parse(&team)?))
    }
}

/// The team and the id of what a `/v1/teams/{team}/{kind}/{id}` route names below it
/// (a webhook, a member), the id as sent: the handler or the service reads it.
pub struct TeamItemAt(pub TeamId, pub String);

impl<S: Send + Sync> FromRequestParts<S> for TeamItemAt {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let ApiPath((team, item)) =
            ApiPath::<(String, String)>::from_request_parts(parts, state).await?;
        Ok(TeamItemAt(TeamId::parse(&team)?, item))
    }
}

/// The cluster and the node pool id a `.../clusters/{cluster}/nodePools/{pool}` route
/// names (the id as sent: the service looks it up).
pub struct PoolAt(pub ClusterPath, pub String);

impl<S: Send + Sync> FromRequestParts<S> for PoolAt {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let ApiPath((project, zone, cluster, pool)) =
            ApiPath::<(String, String, String, String)>::from_request_parts(parts, state).await?;
        Ok(PoolAt(ClusterPath::parse(&project, &zone, &cluster)?, pool))
    }
}

/// The cluster a mutation names (up, down, pool add) and its `If-Match`: [`ClusterAt`],
/// then [`IfMatch`] (a malformed path is refused before a malformed etag).
pub struct ClusterTarget(pub ClusterPath, pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for ClusterTarget {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let ClusterAt(path) = ClusterAt::from_request_parts(parts, state).await?;
        let IfMatch(if_match) = IfMatch::from_request_parts(parts, state).await?;
        Ok(ClusterTarget(path, if_match))
    }
}

/// The node pool a mutation names (remove, resize, drill) and its `If-Match`: [`PoolAt`],
/// then [`IfMatch`].
pub struct PoolTarget(pub ClusterPath, pub String, pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for PoolTarget {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let PoolAt(path, pool) = PoolAt::from_request_parts(parts, state).await?;
        let IfMatch(if_match) = IfMatch::from_request_parts(parts, state).await?;
        Ok(PoolTarget(path, pool, if_match))
    }
}

/// The media types `Accept` lists, in its order, lowercased, without parameters (quality
/// values are not weighed).
pub fn accepted(headers: &axum::http::HeaderMap) -> Vec<String> {
    headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|r| {
            r.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .collect()
}
