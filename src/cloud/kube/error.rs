//! One error type for everything the Kubernetes layer does, with a retry class.
//!
//! Invariant: every failure (API status, transport, token, manifest download, checksum,
//! wait deadline, cancellation) maps to exactly one [`KubeError`] whose
//! [`KubeError::retry`] says whether a workflow step may try again, with the same
//! [`RetryClass`] the Google clients use.

use std::time::Duration;

use crate::cloud::gcp::RetryClass;
use crate::domain::report::error_chain;

/// A failed Kubernetes-layer call.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// The cluster's endpoint or CA certificate cannot be used.
    #[error("invalid cluster access: {0}")]
    Config(String),
    /// The access token could not be obtained (transient: the metadata server or
    /// Google's token endpoint).
    #[error("access token unavailable: {0}")]
    Token(String),
    /// The API server answered with a failure `Status`.
    #[error("{action}: {message} ({reason}, HTTP {code})")]
    Api {
        /// What was attempted, e.g. `apply apps/v1 Deployment lws-system/lws-controller-manager`.
        action: String,
        code: u16,
        /// Kubernetes `Status.reason` (`NotFound`, `Invalid`, `Forbidden`, ...).
        reason: String,
        message: String,
    },
    /// The API server could not be reached or did not answer in time.
    #[error("{action}: {message}")]
    Transport { action: String, message: String },
    /// A manifest is not valid YAML or not a Kubernetes object.
    #[error("invalid manifest: {0}")]
    Manifest(String),
    /// The cluster does not serve this kind (no CRD, or a typo).
    #[error("{kind} ({api_version}) is not served by the cluster")]
    UnknownKind { api_version: String, kind: String },
    /// A downloaded manifest does not have the pinned digest.
    #[error("checksum mismatch for {url}: expected sha256 {expected}, got {actual}")]
    ChecksumMismatch {
        url: String,
        expected: String,
        actual: String,
    },
    /// A manifest download failed (`status` is the HTTP status, when there was one).
    #[error("download {url}: {message}")]
    Download {
        url: String,
        status: Option<u16>,
        message: String,
    },
    /// A wait condition was not met before its deadline.
    #[error("timed out after {waited:?} waiting for {what} (last seen: {last})")]
    Deadline {
        what: String,
        waited: Duration,
        last: String,
    },
    /// The caller cancelled a wait.
    #[error("cancelled while waiting for {what}")]
    Cancelled { what: String },
}

/// Whether an HTTP status from an API server or download site is worth retrying.
fn retry_for_http(code: u16) -> RetryClass {
    match code {
        // 401: the token expired; the next attempt uses a fresh one.
        401 | 408 | 429 | 500 | 502 | 503 | 504 => RetryClass::Retryable,
        _ => RetryClass::Terminal,
    }
}

impl KubeError {
    /// Whether retrying the failed call can help.
    pub fn retry(&self) -> RetryClass {
        match self {
            KubeError::Api { code, .. } => retry_for_http(*code),
            KubeError::Download { status, .. } => {
                status.map_or(RetryClass::Retryable, retry_for_http)
            }
            KubeError::Token(_) | KubeError::Transport { .. } | KubeError::Deadline { .. } => {
                RetryClass::Retryable
            }
            KubeError::Config(_)
            | KubeError::Manifest(_)
            | KubeError::UnknownKind { .. }
            | KubeError::ChecksumMismatch { .. }
            | KubeError::Cancelled { .. } => RetryClass::Terminal,
        }
    }

    /// The HTTP status the API server answered with, if it answered.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            KubeError::Api { code, .. } => Some(*code),
            KubeError::Download { status, .. } => *status,
            _ => None,
        }
    }

    /// True for a 404 from the API server.
    pub fn is_not_found(&self) -> bool {
        self.http_status() == Some(404) && matches!(self, KubeError::Api { .. })
    }

    /// Classify a kube crate error for `action` (a short description of the call).
    pub fn from_kube(action: impl Into<String>, e: kube::Error) -> KubeError {
        let action = action.into();
        match e {
            kube::Error::Api(status) => KubeError::Api {
                action,
                code: status.code,
                reason: if status.reason.is_empty() {
                    "Unknown".to_owned()
                } else {
                    status.reason.clone()
                },
                message: status.message.clone(),
            },
            kube::Error::HyperError(e) => KubeError::Transport {
                action,
                message: format!("{e:#}"),
            },
            kube::Error::Service(e) => KubeError::Transport {
                action,
                message: error_chain(e.as_ref()),
            },
            kube::Error::RustlsTls(e) => KubeError::Config(format!("{action}: TLS: {e}")),
            kube::Error::Auth(e) => KubeError::Token(format!("{action}: {e}")),
            other => KubeError::Api {
                action,
                code: 0,
                reason: "ClientError".to_owned(),
                message: other.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16) -> KubeError {
        KubeError::Api {
            action: "get".into(),
            code,
            reason: "X".into(),
            message: "m".into(),
        }
    }

    #[test]
    fn classes() {
        for c in [401, 429, 500, 503, 504] {
            assert_eq!(api(c).retry(), RetryClass::Retryable, "{c}");
        }
        for c in [400, 403, 404, 409, 422] {
            assert_eq!(api(c).retry(), RetryClass::Terminal, "{c}");
        }
        let m = KubeError::ChecksumMismatch {
            url: "u".into(),
            expected: "a".into(),
            actual: "b".into(),
        };
        assert_eq!(m.retry(), RetryClass::Terminal);
        assert!(m.to_string().contains("expected sha256 a, got b"));
        let d = KubeError::Download {
            url: "u".into(),
            status: None,
            message: "connection refused".into(),
        };
        assert_eq!(d.retry(), RetryClass::Retryable);
        assert!(api(404).is_not_found());
    }
}
