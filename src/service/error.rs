//! The service layer's error: a google.rpc code, a machine reason, a message for the
//! caller and metadata. The API renders it (code -> HTTP status); the service never
//! sees HTTP types.
//!
//! Invariant: an INTERNAL error never carries its cause to the caller; the cause (with
//! its whole source chain) is logged where the error is made.

use std::collections::BTreeMap;

use crate::domain::{NameError, RpcCode};
use crate::store::StoreError;

/// The ErrorInfo metadata key naming the reason an answer carried before a rename.
pub const DEPRECATED_REASON: &str = "deprecatedReason";

/// A failed service call, Google-shaped (AIP-193) with a reason.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct Error {
    pub code: RpcCode,
    /// Machine-readable cause, e.g. `CLUSTER_NOT_FOUND`.
    pub reason: String,
    pub message: String,
    pub metadata: BTreeMap<String, String>,
}

impl Error {
    pub fn new(code: RpcCode, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Error {
            code,
            reason: reason.into(),
            message: message.into(),
            metadata: BTreeMap::new(),
        }
    }

    pub fn with(mut self, key: &str, value: impl ToString) -> Self {
        self.metadata.insert(key.to_owned(), value.to_string());
        self
    }

    /// Marks an answer whose reason was `old` before a rename: `deprecatedReason` keeps
    /// the old spelling in the metadata for one release, for tools that match on it.
    pub fn was(self, old: &str) -> Self {
        self.with(DEPRECATED_REASON, old)
    }

    /// UNAVAILABLE that says when to try again (`retryAfterSeconds`, which the API
    /// copies into `Retry-After`): a transient condition, not a refusal.
    pub fn unavailable(reason: &str, message: impl Into<String>, retry_after_seconds: u32) -> Self {
        Self::new(RpcCode::Unavailable, reason, message)
            .with("retryAfterSeconds", retry_after_seconds)
    }

    /// INVALID_ARGUMENT: the request itself is wrong.
    pub fn invalid(reason: &str, message: impl Into<String>) -> Self {
        Self::new(RpcCode::InvalidArgument, reason, message)
    }

    pub fn not_found(reason: &str, message: impl Into<String>) -> Self {
        Self::new(RpcCode::NotFound, reason, message)
    }

    /// ALREADY_EXISTS: the thing to create is there already.
    pub fn exists(reason: &str, message: impl Into<String>) -> Self {
        Self::new(RpcCode::AlreadyExists, reason, message)
    }

    /// FAILED_PRECONDITION: the system is not in a state that allows the request.
    pub fn precondition(reason: &str, message: impl Into<String>) -> Self {
        Self::new(RpcCode::FailedPrecondition, reason, message)
    }

    /// ABORTED: a concurrency conflict (stale etag); retrying may succeed.
    pub fn aborted(reason: &str, message: impl Into<String>) -> Self {
        Self::new(RpcCode::Aborted, reason, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(RpcCode::PermissionDenied, "PERMISSION_DENIED", message)
    }

    pub fn unauthenticated(reason: &str, message: impl Into<String>) -> Self {
        Self::new(RpcCode::Unauthenticated, reason, message)
    }

    /// An INTERNAL error whose cause is logged here and never sent to the caller.
    pub fn internal(cause: &(dyn std::error::Error + 'static)) -> Self {
        tracing::error!(error = %ErrorChain(cause), "internal error");
        Self::hidden("INTERNAL")
    }

    /// INTERNAL with `reason`, pointing the caller at the server log.
    fn hidden(reason: &str) -> Self {
        Self::new(
            RpcCode::Internal,
            reason,
            "internal error; the server log has the cause (search for the x-request-id)",
        )
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

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::TeamExists => {
                Error::exists("TEAM_EXISTS", "the team already exists; choose another teamId")
            }
            StoreError::ProjectClaimed(p) => Error::exists(
                "PROJECT_CLAIMED",
                format!(
                    "project {p} already belongs to another team; a GCP project can belong to one team only"
                ),
            )
            .with("project", p),
            StoreError::Corrupt(c) => {
                tracing::error!(
                    table = c.table,
                    id = %c.id,
                    column = c.column,
                    error = %c.why,
                    "stored record unreadable"
                );
                Error::hidden("CORRUPT_RECORD")
            }
            StoreError::Db(d) if crate::store::db::is_unavailable(&d) => {
                tracing::warn!(error = %ErrorChain(&d), "database unavailable");
                Error::new(
                    RpcCode::Unavailable,
                    "DATABASE_UNAVAILABLE",
                    "the database is unavailable right now (down, restarting, or every \
                     connection busy); retry shortly",
                )
                // The API copies it into `Retry-After`.
                .with("retryAfterSeconds", 1)
            }
            e @ StoreError::Db(_) => Error::internal(&e),
        }
    }
}

impl From<NameError> for Error {
    fn from(e: NameError) -> Self {
        Error::invalid("INVALID_NAME", e.to_string()).with("field", e.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_become_service_errors() {
        let e = Error::from(StoreError::TeamExists);
        assert_eq!(
            (e.code, e.reason.as_str()),
            (RpcCode::AlreadyExists, "TEAM_EXISTS")
        );
        let corrupt = crate::store::Corrupt {
            table: "clusters",
            id: "c1".into(),
            column: "spec",
            value: "{}".into(),
            why: "bad".into(),
        };
        let e = Error::from(StoreError::from(corrupt));
        assert_eq!(
            (e.code, e.reason.as_str()),
            (RpcCode::Internal, "CORRUPT_RECORD")
        );
        assert!(!e.message.contains("clusters"), "{e}");
        let e = Error::from(StoreError::from(sqlx::Error::PoolTimedOut));
        assert_eq!(
            (e.code, e.reason.as_str()),
            (RpcCode::Unavailable, "DATABASE_UNAVAILABLE")
        );
        let e = Error::from(StoreError::from(sqlx::Error::RowNotFound));
        assert_eq!(
            e.to_string(),
            "INTERNAL INTERNAL: internal error; the server log has the cause (search for the x-request-id)"
        );
    }
}
