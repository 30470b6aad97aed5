//! Steps as stored in an operation's `steps` JSON, the error a step returns, and the
//! retry policy that decides what happens next.
//!
//! Invariant: a step is retried only for a retryable class (rate limit, 5xx, timeout,
//! busy, etag conflict) and never beyond its attempt budget or the operation deadline;
//! every attempt and its message are visible in the stored step.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The step states and google.rpc codes are the domain's; re-exported for the engine.
pub use crate::domain::{RpcCode, StepState};

/// One step of an operation, as persisted.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRecord {
    pub id: String,
    pub description: String,
    pub state: StepState,
    /// Steps that must be DONE (or SKIPPED) before this one starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// Earlier steps whose results this step reads (a subset of its ancestors).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<String>,
    /// Step-specific arguments fixed at enqueue time.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "millis")]
    pub start_time: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "millis")]
    pub end_time: Option<DateTime<Utc>>,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The step's result, persisted when it finishes; later steps read it after a resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

impl StepRecord {
    pub fn new(id: impl Into<String>, description: impl Into<String>) -> StepRecord {
        StepRecord {
            id: id.into(),
            description: description.into(),
            state: StepState::Pending,
            depends_on: vec![],
            reads: vec![],
            input: Value::Null,
            start_time: None,
            end_time: None,
            attempts: 0,
            message: None,
            result: None,
        }
    }

    pub fn after(mut self, deps: &[&str]) -> StepRecord {
        self.depends_on = deps.iter().map(|s| s.to_string()).collect();
        self
    }

    pub fn reading(mut self, reads: &[&str]) -> StepRecord {
        self.reads = reads.iter().map(|s| s.to_string()).collect();
        self
    }

    pub fn with_input(mut self, input: Value) -> StepRecord {
        self.input = input;
        self
    }
}

/// Mark every step that never started SKIPPED (the operation ended without them),
/// saying why; started steps keep their state.
pub fn skip_unstarted(steps: &mut [StepRecord], why: &str) {
    let now = Utc::now();
    for s in steps.iter_mut().filter(|s| s.state == StepState::Pending) {
        s.state = StepState::Skipped;
        s.end_time = Some(now);
        s.message = Some(format!("skipped: {why}"));
    }
}

/// [`skip_unstarted`] on stored steps (left as they are when unreadable).
pub fn skip_unstarted_json(steps: &Value, why: &str) -> Value {
    match serde_json::from_value::<Vec<StepRecord>>(steps.clone()) {
        Ok(mut v) => {
            skip_unstarted(&mut v, why);
            serde_json::to_value(v).unwrap_or_else(|_| steps.clone())
        }
        Err(_) => steps.clone(),
    }
}

/// True when any step was ever started (the operation ran, in this claim or an earlier one).
pub fn any_started(steps: &Value) -> bool {
    serde_json::from_value::<Vec<StepRecord>>(steps.clone())
        .map(|v| v.iter().any(|s| s.attempts > 0 || s.start_time.is_some()))
        .unwrap_or(true)
}

/// Step times as RFC 3339 with milliseconds (what the API shows; keeps the row small).
mod millis {
    use chrono::{DateTime, SecondsFormat, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Millis, true)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        Option::<DateTime<Utc>>::deserialize(d)
    }
}

/// Whether a failed attempt may be tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Rate limit, 5xx, timeout, "busy", etag conflict.
    Retryable,
    /// Invalid argument, permission, quota, stockout, not found when required.
    Terminal,
}

/// What a failed step attempt reports.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct StepError {
    pub class: ErrorClass,
    pub code: RpcCode,
    /// A reason of kineticd's catalogue; a cloud's own reason (Google's QUOTA_EXCEEDED,
    /// GCE_STOCKOUT, ...) is mapped by [`cloud_reason`] and kept in `cloudReason`.
    pub reason: String,
    pub message: String,
    pub metadata: BTreeMap<String, String>,
}

impl StepError {
    pub fn retryable(code: RpcCode, reason: &str, message: impl Into<String>) -> StepError {
        StepError {
            class: ErrorClass::Retryable,
            code,
            reason: reason.to_owned(),
            message: message.into(),
            metadata: BTreeMap::new(),
        }
    }

    pub fn terminal(code: RpcCode, reason: &str, message: impl Into<String>) -> StepError {
        StepError {
            class: ErrorClass::Terminal,
            ..StepError::retryable(code, reason, message)
        }
    }

    pub fn with(mut self, key: &str, value: impl ToString) -> StepError {
        self.metadata.insert(key.to_owned(), value.to_string());
        self
    }

    pub fn is_retryable(&self) -> bool {
        self.class == ErrorClass::Retryable
    }

    /// Marks an error whose reason was `old` before a rename: `deprecatedReason` keeps
    /// the old spelling in the metadata for one release, for tools that match on it.
    pub fn was(self, old: &str) -> StepError {
        self.with(DEPRECATED_REASON, old)
    }

    /// An error a cloud API (Google's, or a cluster's Kubernetes API) answered with
    /// `cloud_reason` (its HTTP status `http`, canonical status `status`) and
    /// `cloud_message`, as a kineticd reason ([`cloud_reason`]) with the cloud's own
    /// reason and message in `cloudReason` / `cloudMessage`.
    pub fn from_cloud(
        class: ErrorClass,
        http: u16,
        status: &str,
        cloud_reason: &str,
        cloud_message: &str,
        message: impl Into<String>,
    ) -> StepError {
        let (code, reason) = self::cloud_reason(http, status, cloud_reason, cloud_message);
        let mut e = StepError {
            class,
            code,
            reason: reason.to_owned(),
            message: message.into(),
            metadata: BTreeMap::new(),
        }
        .with("cloudReason", cloud_reason)
        .with("cloudMessage", cloud_message);
        if cloud_reason != reason {
            e = e.was(cloud_reason);
        }
        e
    }
}

/// The ErrorInfo metadata key naming the reason an answer carried before a rename.
pub const DEPRECATED_REASON: &str = "deprecatedReason";

/// The kineticd reason (and its google.rpc code) of an error a cloud API answered:
/// stockouts and quota first (whatever status the API chose for them), then by status.
/// Every reason returned is in the catalogue (src/api/reasons.rs).
pub fn cloud_reason(
    http: u16,
    status: &str,
    reason: &str,
    message: &str,
) -> (RpcCode, &'static str) {
    let lower = message.to_ascii_lowercase();
    if reason.contains("STOCKOUT")
        || reason.contains("RESOURCE_POOL_EXHAUSTED")
        || lower.contains("does not have enough resources")
    {
        return (RpcCode::ResourceExhausted, "ZONE_RESOURCE_EXHAUSTED");
    }
    if reason.eq_ignore_ascii_case("quotaExceeded") || reason.contains("QUOTA_EXCEEDED") {
        return (RpcCode::ResourceExhausted, "QUOTA_INSUFFICIENT");
    }
    if http == 0 {
        return (RpcCode::Unavailable, "CLOUD_UNAVAILABLE");
    }
    let code = match RpcCode::from_status(status) {
        RpcCode::Unknown if http >= 400 => RpcCode::from_http(http),
        c => c,
    };
    match code {
        // A wait kineticd abandoned because the operation was cancelled: the runner ends
        // the operation CANCELLED on this code.
        RpcCode::Cancelled => (RpcCode::Cancelled, "CANCELLED"),
        RpcCode::InvalidArgument | RpcCode::OutOfRange => {
            (RpcCode::InvalidArgument, "CLOUD_INVALID_ARGUMENT")
        }
        RpcCode::NotFound => (RpcCode::NotFound, "CLOUD_NOT_FOUND"),
        RpcCode::AlreadyExists => (RpcCode::AlreadyExists, "CLOUD_ALREADY_EXISTS"),
        RpcCode::PermissionDenied | RpcCode::Unauthenticated => {
            (RpcCode::PermissionDenied, "CLOUD_PERMISSION_DENIED")
        }
        RpcCode::FailedPrecondition => (RpcCode::FailedPrecondition, "CLOUD_FAILED_PRECONDITION"),
        RpcCode::Aborted => (RpcCode::Aborted, "CLOUD_ABORTED"),
        RpcCode::ResourceExhausted => (RpcCode::ResourceExhausted, "CLOUD_RATE_LIMITED"),
        RpcCode::Unavailable | RpcCode::Internal | RpcCode::DeadlineExceeded => {
            (RpcCode::Unavailable, "CLOUD_UNAVAILABLE")
        }
        _ => (RpcCode::Unknown, "CLOUD_ERROR"),
    }
}

/// Capped exponential backoff with jitter, and an attempt budget per step.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub min_delay: Duration,
    pub max_delay: Duration,
    pub max_attempts: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            min_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_attempts: 12,
        }
    }
}

impl RetryPolicy {
    /// Delays between attempts (jittered, capped), `max_attempts - 1` of them.
    pub fn delays(&self) -> impl Iterator<Item = Duration> + Send + use<> {
        use backon::BackoffBuilder;
        backon::ExponentialBuilder::default()
            .with_min_delay(self.min_delay)
            .with_max_delay(self.max_delay)
            .with_factor(2.0)
            .with_jitter()
            .with_max_times(self.max_attempts.saturating_sub(1) as usize)
            .build()
    }
}

/// The `error` of an operation cancelled by request.
pub fn cancelled_status() -> Value {
    status_json(
        RpcCode::Cancelled,
        "operation cancelled by request",
        "CANCELLED",
        &BTreeMap::new(),
    )
}

/// google.rpc.Status JSON for an operation's `error`, naming the failed step.
pub fn status_json(
    code: RpcCode,
    message: &str,
    reason: &str,
    metadata: &BTreeMap<String, String>,
) -> Value {
    serde_json::json!({
        "code": code.number(),
        "status": code.name(),
        "message": message,
        "details": [{
            "@type": crate::domain::rpc::ERROR_INFO_TYPE,
            "reason": reason,
            "domain": "kineticd",
            "metadata": metadata,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_are_capped_and_bounded() {
        let p = RetryPolicy {
            min_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(400),
            max_attempts: 6,
        };
        let d: Vec<_> = p.delays().collect();
        assert_eq!(d.len(), 5);
        // Jitter adds up to one more min_delay-scaled share; the cap bounds the base.
        assert!(d.iter().all(|d| *d <= Duration::from_millis(800)), "{d:?}");
        assert!(d[0] >= Duration::from_millis(100));
    }

    #[test]
    fn unstarted_steps_are_skipped_and_started_ones_kept() {
        let mut done = StepRecord::new("a", "do a");
        done.state = StepState::Done;
        done.attempts = 1;
        let mut failed = StepRecord::new("b", "do b");
        failed.state = StepState::Failed;
        failed.attempts = 1;
        let steps = vec![done, failed, StepRecord::new("c", "do c").after(&["b"])];
        let json = serde_json::to_value(&steps).unwrap();
        assert!(any_started(&json));
        let out = skip_unstarted_json(&json, "step b failed");
        let states: Vec<&str> = out
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["state"].as_str().unwrap())
            .collect();
        assert_eq!(states, ["DONE", "FAILED", "SKIPPED"]);
        assert_eq!(out[2]["message"], "skipped: step b failed");
        let fresh = serde_json::to_value(vec![StepRecord::new("x", "do x")]).unwrap();
        assert!(!any_started(&fresh));
    }

    #[test]
    fn steps_round_trip() {
        let s = StepRecord::new("a", "do a").after(&["x"]).reading(&["x"]);
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["state"], "PENDING");
        assert_eq!(v["dependsOn"], serde_json::json!(["x"]));
        let back: StepRecord = serde_json::from_value(v).unwrap();
        assert_eq!(back.reads, vec!["x".to_string()]);
    }
}
