//! The one error type every handler returns, rendered as a Google error (AIP-193):
//! `{"error":{"code","status","message","details":[ErrorInfo]}}`.
//!
//! Invariant: every non-2xx response of the API has this shape, carries a machine
//! reason, and a 5xx never carries internal detail (that goes to the log instead).

use std::collections::BTreeMap;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::NameError;
use crate::store::StoreError;

/// Google's `ErrorInfo` detail.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorInfo {
    #[serde(rename = "@type")]
    #[schema(example = "type.googleapis.com/google.rpc.ErrorInfo")]
    pub type_url: String,
    /// Machine-readable cause, e.g. `CLUSTER_NOT_FOUND`.
    pub reason: String,
    pub domain: String,
    pub metadata: BTreeMap<String, String>,
}

/// A `google.rpc.Status`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Status {
    /// The HTTP status code.
    pub code: u16,
    /// The canonical status name, e.g. `NOT_FOUND`.
    pub status: String,
    pub message: String,
    pub details: Vec<ErrorInfo>,
}

/// The body of every error response.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: Status,
}

#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: StatusCode,
    /// The canonical status name (`NOT_FOUND`, `ALREADY_EXISTS`, ...).
    pub status: &'static str,
    pub reason: String,
    pub message: String,
    pub metadata: BTreeMap<String, String>,
}

/// The canonical status name for an HTTP code (google.rpc.Code).
pub fn status_name(code: StatusCode) -> &'static str {
    match code.as_u16() {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        405 => "UNIMPLEMENTED",
        409 => "ALREADY_EXISTS",
        412 => "FAILED_PRECONDITION",
        413 => "INVALID_ARGUMENT",
        415 => "INVALID_ARGUMENT",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    }
}

impl ApiError {
    pub fn new(code: StatusCode, reason: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError {
            code,
            status: status_name(code),
            reason: reason.into(),
            message: message.into(),
            metadata: BTreeMap::new(),
        }
    }

    pub fn with(mut self, key: &str, value: impl ToString) -> Self {
        self.metadata.insert(key.to_owned(), value.to_string());
        self
    }

    pub fn invalid(reason: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, reason, message)
    }

    pub fn not_found(reason: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, reason, message)
    }

    /// 409 ALREADY_EXISTS: the thing to create is there already.
    pub fn exists(reason: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, reason, message)
    }

    /// 409 FAILED_PRECONDITION: the system is not in a state that allows the request.
    pub fn precondition(reason: &str, message: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::CONFLICT, reason, message);
        e.status = "FAILED_PRECONDITION";
        e
    }

    /// 409 ABORTED: a concurrency conflict (stale etag); retrying may succeed.
    pub fn aborted(reason: &str, message: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::CONFLICT, reason, message);
        e.status = "ABORTED";
        e
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "PERMISSION_DENIED", message)
    }

    pub fn unauthenticated(reason: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, reason, message)
    }

    /// A 500 whose cause is logged here and never sent to the caller.
    pub fn internal(cause: &(dyn std::error::Error + 'static)) -> Self {
        tracing::error!(error = %ErrorChain(cause), "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            "internal error; the server log has the cause (search for the x-request-id)",
        )
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: Status {
                code: self.code.as_u16(),
                status: self.status.to_owned(),
                message: self.message.clone(),
                details: vec![ErrorInfo {
                    type_url: "type.googleapis.com/google.rpc.ErrorInfo".to_owned(),
                    reason: self.reason.clone(),
                    domain: "kineticd".to_owned(),
                    metadata: self.metadata.clone(),
                }],
            },
        }
    }
}

/// Displays an error with its whole source chain (`a: b: c`).
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut src = self.0.source();
        while let Some(s) = src {
            write!(f, ": {s}")?;
            src = s.source();
        }
        Ok(())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.code, axum::Json(self.body())).into_response();
        resp.extensions_mut().insert(self);
        resp
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::TeamExists => ApiError::exists("TEAM_EXISTS", "the team already exists; choose another teamId"),
            StoreError::ProjectClaimed(p) => ApiError::exists(
                "PROJECT_CLAIMED",
                format!("project {p} already belongs to another team; a GCP project can belong to one team only"),
            )
            .with("project", p),
            StoreError::Db(e) => ApiError::internal(&e),
        }
    }
}

impl From<NameError> for ApiError {
    fn from(e: NameError) -> Self {
        ApiError::invalid("INVALID_NAME", e.to_string()).with("field", e.kind)
    }
}
