//! Injected faults: `POST /sim/v1/faults` arms an error for a service and method (exact,
//! `prefix*` or `*`), by count or probability; `DELETE` disarms.
//!
//! Invariant: an armed fault with a count fires exactly that many times; matching is
//! checked by the handler of each Google method before it touches state, so a faulted
//! call changes nothing (except `timeout`, which hangs until the client gives up).

use std::sync::Mutex;
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::error::{Flavor, SimError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FaultKind {
    /// 429 RESOURCE_EXHAUSTED (rate limit).
    #[serde(rename = "HTTP_429")]
    Http429,
    /// 401 UNAUTHENTICATED (an expired token): the client refreshes once and retries.
    #[serde(rename = "HTTP_401")]
    Http401,
    /// 403 PERMISSION_DENIED: the caller (kineticd's service account) lacks a permission.
    #[serde(rename = "HTTP_403")]
    Http403,
    #[serde(rename = "HTTP_500")]
    Http500,
    #[serde(rename = "HTTP_503")]
    Http503,
    /// Hang (up to an hour) until the client gives up.
    Timeout,
    /// GKE: 400 FAILED_PRECONDITION "another operation is running, please wait and try again".
    GkeBusy,
    /// Quota exceeded (as the method reports it: HTTP 403 or an operation error).
    QuotaExceeded,
    /// GPU/TPU stockout (GCE_STOCKOUT / ZONE_RESOURCE_POOL_EXHAUSTED).
    Stockout,
}

/// A fault to arm.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultSpec {
    /// container, compute, storage, iam, cloudresourcemanager, serviceusage,
    /// artifactregistry, kube (or `*`).
    pub service: String,
    /// Method name such as `nodePools.create`; `prefix*` or `*` match several.
    #[serde(default = "star")]
    pub method: String,
    pub kind: FaultKind,
    /// Fire this many times (default: every time until disarmed).
    pub count: Option<u32>,
    /// Fire with this probability (0-1) instead of always.
    pub probability: Option<f64>,
}

fn star() -> String {
    "*".into()
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArmedFault {
    pub id: u64,
    #[serde(flatten)]
    pub spec: FaultSpec,
    pub fired: u32,
}

#[derive(Debug, Default)]
pub struct Faults {
    inner: Mutex<(u64, Vec<ArmedFault>)>,
}

fn matches(pattern: &str, value: &str) -> bool {
    pattern == "*"
        || pattern == value
        || pattern
            .strip_suffix('*')
            .is_some_and(|p| value.starts_with(p))
}

impl Faults {
    pub fn arm(&self, spec: FaultSpec) -> ArmedFault {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.0 += 1;
        let f = ArmedFault {
            id: g.0,
            spec,
            fired: 0,
        };
        g.1.push(f.clone());
        f
    }

    pub fn disarm(&self, id: Option<u64>) -> usize {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let before = g.1.len();
        match id {
            Some(id) => g.1.retain(|f| f.id != id),
            None => g.1.clear(),
        }
        before - g.1.len()
    }

    pub fn list(&self) -> Vec<ArmedFault> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .clone()
    }

    /// The fault to apply to this call, if one fires (consuming a count).
    pub fn take(&self, service: &str, method: &str) -> Option<FaultKind> {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let mut fired = None;
        for f in g.1.iter_mut() {
            if !(matches(&f.spec.service, service) && matches(&f.spec.method, method)) {
                continue;
            }
            if let Some(p) = f.spec.probability
                && rand::random::<f64>() >= p
            {
                continue;
            }
            f.fired += 1;
            fired = Some((
                f.id,
                f.spec.kind,
                f.spec.count.is_some_and(|c| f.fired >= c),
            ));
            break;
        }
        let (id, kind, exhausted) = fired?;
        if exhausted {
            g.1.retain(|f| f.id != id);
        }
        Some(kind)
    }
}

/// The default rendering of a fault as an HTTP error in the service's flavour. Methods
/// that report quota or stockout through an operation handle those kinds themselves.
pub async fn respond(kind: FaultKind, flavor: Flavor) -> Response {
    // (HTTP status, Google status, error reason, message)
    let (http, status, reason, message) = match kind {
        FaultKind::Http429 => (
            429,
            "RESOURCE_EXHAUSTED",
            flavor.reason("RATE_LIMIT_EXCEEDED", "rateLimitExceeded"),
            "Quota exceeded for quota metric 'Requests' (simulated rate limit)",
        ),
        FaultKind::Http401 => (
            401,
            "UNAUTHENTICATED",
            flavor.reason("ACCESS_TOKEN_EXPIRED", "authError"),
            "Request had invalid authentication credentials. Expected OAuth 2 access token.",
        ),
        FaultKind::Http403 => (
            403,
            "PERMISSION_DENIED",
            flavor.reason("IAM_PERMISSION_DENIED", "forbidden"),
            "The caller does not have permission",
        ),
        FaultKind::Http500 => (
            500,
            "INTERNAL",
            "backendError",
            "Internal error encountered.",
        ),
        FaultKind::Http503 => (
            503,
            "UNAVAILABLE",
            "backendError",
            "The service is currently unavailable.",
        ),
        FaultKind::Timeout => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            (
                504,
                "DEADLINE_EXCEEDED",
                "deadlineExceeded",
                "Deadline exceeded",
            )
        }
        FaultKind::GkeBusy => {
            return SimError::precondition(
                flavor,
                "Operation operation-sim is currently creating cluster. Please wait and try again once it is done.",
            )
            .into_response();
        }
        FaultKind::QuotaExceeded => (
            403,
            "PERMISSION_DENIED",
            "quotaExceeded",
            "Quota exceeded (simulated)",
        ),
        FaultKind::Stockout => (
            503,
            "UNAVAILABLE",
            "ZONE_RESOURCE_POOL_EXHAUSTED",
            "The zone does not have enough resources available to fulfill the request.",
        ),
    };
    SimError::new(flavor, http, status, reason, message).into_response()
}
