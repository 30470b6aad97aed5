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

use crate::domain::{NameError, RpcCode};
use crate::service;

pub use crate::service::error::ErrorChain;

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
    #[schema(value_type = crate::domain::RpcCode)]
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
    RpcCode::from_http(code.as_u16()).name()
}

/// The HTTP status kineticd answers a code with: Google's (AIP-193), except that a
/// refused precondition is 409 like kineticd's other conflicts (API.md).
pub fn http_status(code: RpcCode) -> StatusCode {
    match code {
        RpcCode::FailedPrecondition => StatusCode::CONFLICT,
        c => StatusCode::from_u16(c.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
    }
}

impl ApiError {
    /// An error answered with exactly `code` (some, like 415, have no google.rpc code
    /// of their own: the status name is the nearest one's).
    pub fn new(code: StatusCode, reason: impl Into<String>, message: impl Into<String>) -> Self {
        let rpc = RpcCode::from_http(code.as_u16());
        ApiError {
            code,
            ..service::Error::new(rpc, reason, message).into()
        }
    }

    pub fn with(mut self, key: &str, value: impl ToString) -> Self {
        self.metadata.insert(key.to_owned(), value.to_string());
        self
    }

    pub fn invalid(reason: &str, message: impl Into<String>) -> Self {
        service::Error::invalid(reason, message).into()
    }

    pub fn not_found(reason: &str, message: impl Into<String>) -> Self {
        service::Error::not_found(reason, message).into()
    }

    /// 409 ALREADY_EXISTS: the thing to create is there already.
    pub fn exists(reason: &str, message: impl Into<String>) -> Self {
        service::Error::exists(reason, message).into()
    }

    /// 409 FAILED_PRECONDITION: the system is not in a state that allows the request.
    pub fn precondition(reason: &str, message: impl Into<String>) -> Self {
        service::Error::precondition(reason, message).into()
    }

    /// 409 ABORTED: a concurrency conflict (stale etag); retrying may succeed.
    pub fn aborted(reason: &str, message: impl Into<String>) -> Self {
        service::Error::aborted(reason, message).into()
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        service::Error::forbidden(message).into()
    }

    pub fn unauthenticated(reason: &str, message: impl Into<String>) -> Self {
        service::Error::unauthenticated(reason, message).into()
    }

    /// A 500 whose cause is logged here and never sent to the caller.
    pub fn internal(cause: &(dyn std::error::Error + 'static)) -> Self {
        service::Error::internal(cause).into()
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: Status {
                code: self.code.as_u16(),
                status: self.status.to_owned(),
                message: self.message.clone(),
                details: vec![ErrorInfo {
                    type_url: crate::domain::rpc::ERROR_INFO_TYPE.to_owned(),
                    reason: self.reason.clone(),
                    domain: "kineticd".to_owned(),
                    metadata: self.metadata.clone(),
                }],
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.code, axum::Json(self.body())).into_response();
        resp.extensions_mut().insert(self);
        resp
    }
}

impl From<service::Error> for ApiError {
    fn from(e: service::Error) -> Self {
        ApiError {
            code: http_status(e.code),
            status: e.code.name(),
            reason: e.reason,
            message: e.message,
            metadata: e.metadata,
        }
    }
}

impl From<NameError> for ApiError {
    fn from(e: NameError) -> Self {
        service::Error::from(e).into()
    }
}
