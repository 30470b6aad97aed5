//! Google-shaped error responses, in the flavour each service uses: the AIP-193 shape
//! (`status` + `details[ErrorInfo]`, GKE, IAM, Resource Manager, Service Usage, Artifact
//! Registry) or the legacy shape (`errors[{domain, reason, message}]`, Compute and
//! Storage, Storage without `status`).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `{"error":{"code","message","status","details":[ErrorInfo]}}`
    Aip193,
    /// Compute: `{"error":{"code","message","errors":[{"domain","reason","message"}]}}`
    Compute,
    /// Storage: legacy shape, no `status`.
    Storage,
}

impl Flavor {
    /// The error reason of this flavour: AIP-193's `aip` (`NOT_FOUND`) or the legacy
    /// services' `legacy` (`notFound`).
    pub fn reason(self, aip: &'static str, legacy: &'static str) -> &'static str {
        if self == Flavor::Aip193 { aip } else { legacy }
    }
}

#[derive(Debug, Clone)]
pub struct SimError {
    pub http: u16,
    pub status: &'static str,
    pub reason: String,
    pub message: String,
    pub flavor: Flavor,
}

impl SimError {
    pub fn new(
        flavor: Flavor,
        http: u16,
        status: &'static str,
        reason: &str,
        message: impl Into<String>,
    ) -> SimError {
        SimError {
            http,
            status,
            reason: reason.to_owned(),
            message: message.into(),
            flavor,
        }
    }

    pub fn not_found(flavor: Flavor, what: &str) -> SimError {
        let reason = flavor.reason("NOT_FOUND", "notFound");
        SimError::new(
            flavor,
            404,
            "NOT_FOUND",
            reason,
            format!("The resource '{what}' was not found"),
        )
    }

    pub fn already_exists(flavor: Flavor, what: &str) -> SimError {
        let (reason, msg) = match flavor {
            Flavor::Aip193 => ("ALREADY_EXISTS", format!("Already exists: {what}")),
            Flavor::Compute => (
                "alreadyExists",
                format!("The resource '{what}' already exists"),
            ),
            Flavor::Storage => (
                "conflict",
                format!(
                    "Your previous request to create the named bucket succeeded and you already own it. ({what})"
                ),
            ),
        };
        SimError::new(flavor, 409, "ALREADY_EXISTS", reason, msg)
    }

    pub fn invalid(flavor: Flavor, message: impl Into<String>) -> SimError {
        let reason = flavor.reason("INVALID_ARGUMENT", "invalid");
        SimError::new(flavor, 400, "INVALID_ARGUMENT", reason, message)
    }

    pub fn precondition(flavor: Flavor, message: impl Into<String>) -> SimError {
        let reason = flavor.reason("FAILED_PRECONDITION", "failedPrecondition");
        SimError::new(flavor, 400, "FAILED_PRECONDITION", reason, message)
    }

    /// A custom verb (`{resource}:{verb}`) the API does not have.
    pub fn no_method(flavor: Flavor, segment: &str) -> SimError {
        SimError::new(
            flavor,
            404,
            "NOT_FOUND",
            "NOT_FOUND",
            format!("Method not found: {segment}"),
        )
    }

    /// 409 ALREADY_EXISTS in the service's own words (`message`), for the AIP-193
    /// services whose wording is not [`SimError::already_exists`]'s.
    pub fn already_exists_as(message: impl Into<String>) -> SimError {
        let aip = Flavor::Aip193;
        SimError::new(aip, 409, "ALREADY_EXISTS", "ALREADY_EXISTS", message)
    }

    pub fn aborted(flavor: Flavor, message: impl Into<String>) -> SimError {
        SimError::new(flavor, 409, "ABORTED", "ABORTED", message)
    }
}

/// A `google.rpc.ErrorInfo` detail: why (`reason`), from which service (`domain`), with
/// what `metadata`.
pub fn error_info(reason: &str, domain: &str, metadata: Value) -> Value {
    json!({
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": reason,
        "domain": domain,
        "metadata": metadata,
    })
}

impl IntoResponse for SimError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.http).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = match self.flavor {
            Flavor::Aip193 => json!({"error": {
                "code": self.http,
                "message": self.message,
                "status": self.status,
                "details": [error_info(&self.reason, "googleapis.com", json!({}))],
            }}),
            Flavor::Compute | Flavor::Storage => json!({"error": {
                "code": self.http,
                "message": self.message,
                "errors": [{"domain": "global", "reason": self.reason, "message": self.message}],
            }}),
        };
        (code, Json(body)).into_response()
    }
}
