//! One error type for every Google API error shape, with a retry class.
//!
//! Invariant: whatever the service (the AIP-193 `status` shape, the legacy `errors[]`
//! shape, Storage without `status`, a failed long-running operation), the result carries
//! the HTTP status, the canonical status name, the most specific reason Google gave, and
//! whether retrying can help.

use std::fmt;

use serde_json::Value;

use crate::domain::RpcCode;

/// Whether a failed call may be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryClass {
    /// Rate limit, 5xx, timeouts, "GKE busy", IAM etag conflict.
    Retryable,
    /// Invalid, permission, quota, not found, already exists, stockout.
    Terminal,
}

/// A failed Google API call.
#[derive(Debug, Clone, PartialEq)]
pub struct GcpError {
    /// Service short name: container, compute, storage, iam, cloudresourcemanager,
    /// serviceusage, artifactregistry.
    pub service: &'static str,
    /// Method, e.g. `clusters.create`.
    pub method: &'static str,
    /// HTTP status (0 for transport failures).
    pub http_status: u16,
    /// Canonical status (`ALREADY_EXISTS`, `RESOURCE_EXHAUSTED`, ...).
    pub status: String,
    /// Most specific reason: ErrorInfo reason, legacy `errors[].reason`, an operation
    /// error code such as `QUOTA_EXCEEDED` or `GCE_STOCKOUT`, or the status.
    pub reason: String,
    pub message: String,
    pub retry: RetryClass,
}

impl fmt::Display for GcpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}: {} ({}",
            self.service, self.method, self.message, self.reason
        )?;
        if self.http_status > 0 {
            write!(f, ", HTTP {}", self.http_status)?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for GcpError {}

/// Canonical status name for an HTTP code when the body has none.
pub fn status_for_http(code: u16) -> &'static str {
    RpcCode::from_http(code).name()
}

/// Reasons Google gives for a rate limit (the first three) or a transient failure
/// (`backendError`), whatever the HTTP status.
const RATE_LIMIT_REASONS: [&str; 4] = [
    "rateLimitExceeded",
    "userRateLimitExceeded",
    "RATE_LIMIT_EXCEEDED",
    "backendError",
];

/// The retry class of an error, per the reference table.
pub fn classify(http: u16, status: &str, reason: &str, message: &str) -> RetryClass {
    let lower = message.to_ascii_lowercase();
    let stockout = reason.contains("STOCKOUT")
        || reason.contains("RESOURCE_POOL_EXHAUSTED")
        || lower.contains("does not have enough resources");
    if stockout {
        return RetryClass::Terminal;
    }
    if RATE_LIMIT_REASONS.contains(&reason) {
        return RetryClass::Retryable;
    }
    if reason.eq_ignore_ascii_case("quotaExceeded") || reason == "QUOTA_EXCEEDED" {
        return RetryClass::Terminal;
    }
    match (http, status) {
        (0, _) => RetryClass::Retryable,
        (408 | 429 | 500 | 502 | 503 | 504, _) => RetryClass::Retryable,
        (_, "ABORTED" | "UNAVAILABLE" | "DEADLINE_EXCEEDED" | "INTERNAL") => RetryClass::Retryable,
        (_, "RESOURCE_EXHAUSTED") if !reason.contains("QUOTA") => RetryClass::Retryable,
        // GKE runs one operation per cluster: "... Please wait and try again".
        (400, "FAILED_PRECONDITION")
            if lower.contains("try again") || lower.contains("currently") =>
        {
            RetryClass::Retryable
        }
        _ => RetryClass::Terminal,
    }
}

impl GcpError {
    /// Parse an HTTP error response body of any Google shape.
    pub fn from_response(
        service: &'static str,
        method: &'static str,
        http: u16,
        body: &str,
    ) -> GcpError {
        let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let e = &v["error"];
        let message = e["message"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| v["error"].as_str().map(str::to_owned))
            .unwrap_or_else(|| {
                let t = body.trim();
                if t.is_empty() {
                    format!("HTTP {http}")
                } else {
                    t.chars().take(300).collect()
                }
            });
        let status = e["status"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| status_for_http(http).to_owned());
        let info_reason = e["details"].as_array().and_then(|d| {
            d.iter()
                .find(|x| {
                    x["@type"]
                        .as_str()
                        .is_some_and(|t| t.ends_with("google.rpc.ErrorInfo"))
                })
                .and_then(|x| x["reason"].as_str())
        });
        let legacy_reason = e["errors"]
            .as_array()
            .and_then(|a| a.first())
            .and_then(|x| x["reason"].as_str());
        let reason = info_reason
            .or(legacy_reason)
            .map(str::to_owned)
            .unwrap_or_else(|| status.clone());
        GcpError::classified(service, method, http, status, reason, message)
    }

    /// An error with its retry class derived from the other fields.
    pub fn classified(
        service: &'static str,
        method: &'static str,
        http: u16,
        status: String,
        reason: String,
        message: String,
    ) -> GcpError {
        let retry = classify(http, &status, &reason, &message);
        GcpError {
            service,
            method,
            http_status: http,
            status,
            reason,
            message,
            retry,
        }
    }

    /// A failed long-running operation's `error` (google.rpc.Status, or Compute's
    /// `{errors:[{code,message}]}`).
    pub fn from_operation(
        service: &'static str,
        method: &'static str,
        err: &Value,
        http_hint: Option<u16>,
    ) -> GcpError {
        if let Some(errors) = err["errors"].as_array() {
            let first = errors.first().cloned().unwrap_or(Value::Null);
            let reason = first["code"].as_str().unwrap_or("UNKNOWN").to_owned();
            let message = errors
                .iter()
                .filter_map(|x| x["message"].as_str())
                .collect::<Vec<_>>()
                .join("; ");
            let http = http_hint.unwrap_or(400);
            let status = status_for_http(http).to_owned();
            return GcpError::classified(service, method, http, status, reason, message);
        }
        let code = err["code"].as_i64().unwrap_or(2);
        let status = rpc_code_name(code).to_owned();
        let message = err["message"]
            .as_str()
            .unwrap_or("operation failed")
            .to_owned();
        let info_reason = err["details"].as_array().and_then(|d| {
            d.iter()
                .find_map(|x| x["reason"].as_str().map(str::to_owned))
        });
        let reason = info_reason.unwrap_or_else(|| {
            if message.contains("GCE_STOCKOUT")
                || message.contains("does not have enough resources")
            {
                "GCE_STOCKOUT".to_owned()
            } else if message.contains("GCE_QUOTA_EXCEEDED")
                || message.starts_with("Quota '")
                || message.contains("QUOTA_EXCEEDED")
                || message.contains("Insufficient regional quota")
                || message.contains("Insufficient quota")
            {
                "QUOTA_EXCEEDED".to_owned()
            } else {
                status.clone()
            }
        });
        let http = http_for_status(&status);
        GcpError::classified(service, method, http, status, reason, message)
    }

    /// A transport failure (connection refused, timeout, bad body): retryable.
    pub fn transport(
        service: &'static str,
        method: &'static str,
        message: impl Into<String>,
    ) -> GcpError {
        GcpError {
            service,
            method,
            http_status: 0,
            status: "UNAVAILABLE".into(),
            reason: "TRANSPORT".into(),
            message: message.into(),
            retry: RetryClass::Retryable,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.http_status == 404
    }

    /// 409 ALREADY_EXISTS only: not ABORTED (etag conflict), nor a 409 a client mapped
    /// to another status (Storage's "bucket not empty").
    pub fn is_already_exists(&self) -> bool {
        self.http_status == 409 && self.status == "ALREADY_EXISTS"
    }

    /// 403: the API is not enabled in the project (it answers nothing until `up`
    /// enables it).
    pub fn is_service_disabled(&self) -> bool {
        self.http_status == 403
            && matches!(
                self.reason.as_str(),
                "SERVICE_DISABLED" | "accessNotConfigured"
            )
    }

    pub fn is_retryable(&self) -> bool {
        self.retry == RetryClass::Retryable
    }

    /// Google refused to serve the request for its rate (429, or 403
    /// `rateLimitExceeded` and its kin), not for quota: it was not processed, and the
    /// project's API is asked to be sent less.
    pub fn is_rate_limited(&self) -> bool {
        self.is_retryable()
            && (self.http_status == 429 || RATE_LIMIT_REASONS[..3].contains(&self.reason.as_str()))
    }
}

/// google.rpc.Code number -> name (UNKNOWN for a number outside the table).
pub fn rpc_code_name(code: i64) -> &'static str {
    RpcCode::from_number(code)
        .unwrap_or(RpcCode::Unknown)
        .name()
}

/// Canonical status name -> HTTP code (AIP-193 mapping; 500 for an unknown name).
pub fn http_for_status(status: &str) -> u16 {
    RpcCode::from_status(status).http_status()
}
