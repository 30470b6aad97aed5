//! Kubernetes `Status` failures as the simulated API servers answer them: a code, a
//! machine reason and a message, rendered as the `Status` object `kubectl` and the kube
//! crate read.
//!
//! Invariant: every failure a simulated API server returns is a [`KStatus`]; its HTTP
//! code and the `code` in its body are the same number.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A Kubernetes `Status` failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KStatus {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    /// `details` (`{name, group, kind}`), when the failure names a resource.
    pub details: Option<Value>,
}

impl KStatus {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> KStatus {
        KStatus {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }
    pub fn no_resource() -> KStatus {
        KStatus::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }
    pub fn bad_request(message: impl Into<String>) -> KStatus {
        KStatus::new(400, "BadRequest", message)
    }
    pub fn method_not_allowed(what: &str) -> KStatus {
        KStatus::new(
            405,
            "MethodNotAllowed",
            format!("{what} is not supported by the simulator"),
        )
    }
}

impl IntoResponse for KStatus {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = self.details {
            body["details"] = details;
        }
        (code, Json(body)).into_response()
    }
}
