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
    /// The cause's own reason (e.g. Google's QUOTA_EXCEEDED, GCE_STOCKOUT).
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
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
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
