//! Waiting for long-running operations, whatever the style (GKE, Compute, Artifact
//! Registry, Service Usage): poll with capped backoff until done, a deadline, or
//! cancellation.
//!
//! Invariant: a wait ends promptly on cancellation (the poll sleep is abandoned), never
//! outlives its deadline, and rides out retryable polling errors (5xx, 429).

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::error::{GcpError, RetryClass};

/// How to poll.
#[derive(Debug, Clone, Copy)]
pub struct LroPolicy {
    pub first_delay: Duration,
    pub max_delay: Duration,
    pub deadline: Duration,
}

/// How often long-running operations are polled: the first delay, doubling up to a cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PollSchedule {
    pub first: Duration,
    pub max: Duration,
}

impl Default for PollSchedule {
    /// gcloud polls GKE every 5 s; start faster for short operations.
    fn default() -> Self {
        PollSchedule {
            first: Duration::from_millis(500),
            max: Duration::from_secs(5),
        }
    }
}

impl PollSchedule {
    /// The schedule for a simulator whose virtual time runs `speed` times faster than
    /// real time: the same number of polls per virtual second as against Google (so the
    /// polling overhead stays the small fraction it is in production), never more often
    /// than every 5 ms. Speed 0 (everything instant) keeps the default.
    pub fn for_speed(speed: f64) -> PollSchedule {
        let d = PollSchedule::default();
        if speed.is_finite() && speed > 1.0 {
            let floor = Duration::from_millis(5);
            PollSchedule {
                first: d.first.div_f64(speed).max(floor),
                max: d.max.div_f64(speed).max(floor),
            }
        } else {
            d
        }
    }
}

impl LroPolicy {
    /// The default schedule ([`PollSchedule::default`]) with `deadline`.
    pub fn standard(deadline: Duration) -> LroPolicy {
        LroPolicy::with(PollSchedule::default(), deadline)
    }

    pub fn with(schedule: PollSchedule, deadline: Duration) -> LroPolicy {
        LroPolicy {
            first_delay: schedule.first,
            max_delay: schedule.max,
            deadline,
        }
    }
}

/// One look at an operation.
pub enum Poll<T> {
    Done(T),
    Pending,
}

pub fn cancelled(service: &'static str, method: &'static str) -> GcpError {
    GcpError {
        service,
        method,
        http_status: 499,
        status: "CANCELLED".into(),
        reason: "CANCELLED".into(),
        message: "wait abandoned: the operation was cancelled".into(),
        retry: RetryClass::Terminal,
    }
}

pub fn deadline_exceeded(service: &'static str, method: &'static str, after: Duration) -> GcpError {
    GcpError {
        service,
        method,
        http_status: 504,
        status: "DEADLINE_EXCEEDED".into(),
        reason: "LRO_DEADLINE_EXCEEDED".into(),
        message: format!(
            "the cloud operation did not finish within {} s",
            after.as_secs()
        ),
        retry: RetryClass::Retryable,
    }
}

/// Call `look` until it reports done, sleeping between looks with doubling delays.
/// Retryable errors from `look` are retried until the deadline; terminal ones end it.
pub async fn wait<T, F, Fut>(
    service: &'static str,
    method: &'static str,
    policy: LroPolicy,
    cancel: &CancellationToken,
    mut look: F,
) -> Result<T, GcpError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Poll<T>, GcpError>>,
{
    let until = tokio::time::Instant::now() + policy.deadline;
    let mut delay = policy.first_delay;
    loop {
        if cancel.is_cancelled() {
            return Err(cancelled(service, method));
        }
        match look().await {
            Ok(Poll::Done(v)) => return Ok(v),
            Ok(Poll::Pending) => {}
            Err(e) if e.is_retryable() => {
                tracing::debug!(service, method, error = %e, "polling failed; retrying");
            }
            Err(e) => return Err(e),
        }
        let now = tokio::time::Instant::now();
        if now >= until {
            return Err(deadline_exceeded(service, method, policy.deadline));
        }
        let sleep = delay.min(until - now);
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = cancel.cancelled() => return Err(cancelled(service, method)),
        }
        delay = (delay * 2).min(policy.max_delay);
    }
}

/// [`wait`] on a resource fetched by `get` until `is_done` says it is finished; returns
/// that last fetch.
pub async fn wait_until<T, F, Fut, D>(
    service: &'static str,
    method: &'static str,
    policy: LroPolicy,
    cancel: &CancellationToken,
    mut get: F,
    is_done: D,
) -> Result<T, GcpError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, GcpError>>,
    D: Fn(&T) -> bool,
{
    let is_done = &is_done;
    wait(service, method, policy, cancel, || {
        let look = get();
        async move {
            let v = look.await?;
            Ok(if is_done(&v) {
                Poll::Done(v)
            } else {
                Poll::Pending
            })
        }
    })
    .await
}

/// The whole wait for one operation: [`wait_until`] `is_done`, then the [`outcome`] of
/// the last fetch (`Err` when `failure` finds it failed).
pub async fn finish<T, F, Fut, D>(
    service: &'static str,
    method: &'static str,
    policy: LroPolicy,
    cancel: &CancellationToken,
    get: F,
    is_done: D,
    failure: impl FnOnce(&T) -> Option<Failure>,
) -> Result<T, GcpError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, GcpError>>,
    D: Fn(&T) -> bool,
{
    let done = wait_until(service, method, policy, cancel, get, is_done).await?;
    outcome(service, done, failure)
}

/// How a finished operation failed: its `error` (as Google sent it), the method to
/// report, and the HTTP status Google gave the failure (Compute's
/// `httpErrorStatusCode`), if any.
pub struct Failure {
    pub error: serde_json::Value,
    pub method: &'static str,
    pub http_hint: Option<u16>,
}

impl Failure {
    /// The failure of an operation whose `error` is `error`, reported as `method`.
    pub fn of(error: &impl serde::Serialize, method: &'static str) -> Failure {
        Failure {
            error: serde_json::to_value(error).unwrap_or_default(),
            method,
            http_hint: None,
        }
    }
}

/// A finished operation as a result: `Err` (classified by
/// [`GcpError::from_operation`]) when `failure` finds it failed, else the operation.
pub fn outcome<T>(
    service: &'static str,
    done: T,
    failure: impl FnOnce(&T) -> Option<Failure>,
) -> Result<T, GcpError> {
    match failure(&done) {
        Some(f) => Err(GcpError::from_operation(
            service,
            f.method,
            &f.error,
            f.http_hint,
        )),
        None => Ok(done),
    }
}

/// An operation that cannot be polled: its `selfLink` does not say where it lives.
pub fn unlocatable(service: &'static str, method: &'static str, name: &str) -> GcpError {
    GcpError::transport(
        service,
        method,
        format!("operation {name:?} has no usable selfLink"),
    )
}
