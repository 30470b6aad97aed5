//! The one retry mechanism of every cloud call, Google's and the clusters' Kubernetes
//! APIs alike: an attempt that fails with a retryable error (429 and Google's rate-limit
//! reasons, 5xx, timeouts) is sent again after a capped exponential backoff with jitter
//! (`backon`), or after the server's `Retry-After` when that is longer, within the
//! [`CallBudget`] of the handle that made it. Every retry is counted in
//! `kineticd_cloud_call_retries_total{service,method,reason}` (see `docs/metrics.md`).
//!
//! Invariant: a call and its retries end by the budget's deadline: no retry is started
//! whose wait would end past it, and the clients cut each attempt's own timeout to what
//! is left ([`Retries::remaining`]). So a request path (preview, accept-time checks, live
//! status, diagnose, placement) never waits on the cloud past its own deadline, and a
//! step's call gives up within its attempt, leaving the step's retry policy above it to
//! decide (a bounded number of tries at each level, never an endless retry).

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};
use tokio::time::Instant;

/// Attempts of one call at most, the first included (under either budget).
pub const MAX_TRIES: u32 = 10;
/// How long a call made while answering a request may keep retrying, by default.
pub const DEFAULT_REQUEST_WINDOW: Duration = Duration::from_secs(10);
/// How long a call made by an operation's step may keep retrying, by default.
pub const DEFAULT_STEP_WINDOW: Duration = Duration::from_secs(60);

/// How long, and how many times, one call may be retried; carried by a client handle
/// ([`crate::cloud::Cloud::with_budget`]), so each caller's calls fit its own deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallBudget {
    /// How long one call and its retries may take, from the call's start.
    pub window: Duration,
    /// An absolute deadline (a request's), when the caller has one: the earlier wins.
    pub deadline: Option<Instant>,
    /// Attempts at most, the first one included.
    pub max_tries: u32,
    /// The first backoff (doubling, jittered up to twice its value, capped at
    /// `max_delay`).
    pub first_delay: Duration,
    pub max_delay: Duration,
}

impl CallBudget {
    /// A call made while answering a request: short, frequent retries, so that a burst
    /// of 429s is ridden out within `window` (and the request's deadline).
    pub const fn request(window: Duration) -> CallBudget {
        CallBudget {
            window,
            deadline: None,
            max_tries: MAX_TRIES,
            first_delay: Duration::from_millis(50),
            max_delay: Duration::from_millis(500),
        }
    }

    /// A call made by an operation's step: longer waits, within `window` of the call's
    /// start; past it the step's attempt fails and the step's own policy retries it.
    pub const fn step(window: Duration) -> CallBudget {
        CallBudget {
            window,
            deadline: None,
            max_tries: MAX_TRIES,
            first_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(5),
        }
    }

    /// One attempt, no retry.
    pub const fn once() -> CallBudget {
        CallBudget {
            window: Duration::from_secs(3600),
            deadline: None,
            max_tries: 1,
            first_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
        }
    }

    /// This budget, ending at `deadline` at the latest.
    pub fn until(self, deadline: Instant) -> CallBudget {
        CallBudget {
            deadline: Some(self.deadline.map_or(deadline, |d| d.min(deadline))),
            ..self
        }
    }
}

/// Why a retry was made: the `reason` label of the retries counter (a bounded set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryReason {
    /// 429, or Google's `rateLimitExceeded` and its kin.
    RateLimited,
    /// 5xx, UNAVAILABLE, INTERNAL.
    Unavailable,
    /// The attempt timed out (no answer within the call timeout).
    Timeout,
    /// No HTTP answer (connection refused or reset, unreadable response).
    Transport,
    /// Anything else the client classes as retryable (GKE busy, an etag conflict).
    Other,
}

impl RetryReason {
    pub fn label(self) -> &'static str {
        match self {
            RetryReason::RateLimited => "RATE_LIMITED",
            RetryReason::Unavailable => "UNAVAILABLE",
            RetryReason::Timeout => "TIMEOUT",
            RetryReason::Transport => "TRANSPORT",
            RetryReason::Other => "OTHER",
        }
    }

    /// The reason of an HTTP status (0: no answer).
    pub fn of_http(code: u16) -> RetryReason {
        match code {
            0 => RetryReason::Transport,
            429 => RetryReason::RateLimited,
            408 | 504 => RetryReason::Timeout,
            500..=599 => RetryReason::Unavailable,
            _ => RetryReason::Other,
        }
    }
}

/// What a failed attempt tells the retry loop.
#[derive(Debug, Clone, Copy)]
pub struct Failure {
    /// Whether sending the same request again can help (and is safe).
    pub retryable: bool,
    pub reason: RetryReason,
    /// The server's `Retry-After` (or google.rpc.RetryInfo, or Kubernetes'
    /// `retryAfterSeconds`), when it gave one.
    pub retry_after: Option<Duration>,
}

/// One call's retries in progress.
#[derive(Debug)]
pub struct Retries {
    service: &'static str,
    method: &'static str,
    deadline: Instant,
    tries: u32,
    max_tries: u32,
    backoff: ExponentialBackoff,
}

impl Retries {
    /// Start a call of `service`'s `method` under `budget`.
    pub fn start(budget: &CallBudget, service: &'static str, method: &'static str) -> Retries {
        let window_end = Instant::now() + budget.window;
        let deadline = budget.deadline.map_or(window_end, |d| d.min(window_end));
        let backoff = ExponentialBuilder::default()
            .with_min_delay(budget.first_delay)
            .with_max_delay(budget.max_delay)
            .with_factor(2.0)
            .with_jitter()
            .without_max_times()
            .build();
        Retries {
            service,
            method,
            deadline,
            tries: 1,
            max_tries: budget.max_tries.max(1),
            backoff,
        }
    }

    /// When the call and all its retries must be over.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// What is left of the budget (zero once past the deadline).
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Attempts made so far (the current one included).
    pub fn tries(&self) -> u32 {
        self.tries
    }

    /// After a failed attempt: how long to wait before the next one (counted as a retry),
    /// or `None` to give up: not retryable, out of tries, or the wait (the backoff, or the
    /// server's `Retry-After` when longer) would end past the deadline.
    pub fn after(&mut self, f: Failure) -> Option<Duration> {
        if !f.retryable || self.tries >= self.max_tries {
            return None;
        }
        let backoff = self.backoff.next()?;
        let wait = f.retry_after.map_or(backoff, |ra| ra.max(backoff));
        if Instant::now() + wait >= self.deadline {
            return None;
        }
        self.tries += 1;
        metrics::counter!("kineticd_cloud_call_retries_total",
            "service" => self.service, "method" => self.method, "reason" => f.reason.label())
        .increment(1);
        tracing::debug!(
            service = self.service,
            method = self.method,
            reason = f.reason.label(),
            tries = self.tries,
            wait_ms = wait.as_millis() as u64,
            "cloud call failed; sending it again"
        );
        Some(wait)
    }
}

/// `Retry-After` as seconds (the HTTP-date form is not used by Google or Kubernetes).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3600.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(retryable: bool, retry_after: Option<Duration>) -> Failure {
        Failure {
            retryable,
            reason: RetryReason::RateLimited,
            retry_after,
        }
    }

    #[tokio::test]
    async fn retries_within_tries_and_deadline() {
        let mut r = Retries::start(
            &CallBudget::request(Duration::from_secs(10)),
            "compute",
            "zones.get",
        );
        assert!(
            r.after(failure(false, None)).is_none(),
            "terminal errors are not retried"
        );
        let first = r.after(failure(true, None)).expect("a retry");
        assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
        assert_eq!(r.tries(), 2);
        // A Retry-After longer than the backoff wins; one past the deadline gives up.
        let long = r
            .after(failure(true, Some(Duration::from_secs(2))))
            .unwrap();
        assert_eq!(long, Duration::from_secs(2));
        assert!(
            r.after(failure(true, Some(Duration::from_secs(11))))
                .is_none()
        );

        let mut once = Retries::start(&CallBudget::once(), "compute", "zones.get");
        assert!(once.after(failure(true, None)).is_none());

        let soon = Instant::now() + Duration::from_millis(30);
        let budget = CallBudget::step(Duration::from_secs(60)).until(soon);
        let mut r = Retries::start(&budget, "container", "clusters.get");
        assert!(r.deadline() <= soon);
        assert!(
            r.after(failure(true, None)).is_none(),
            "no time for a 200 ms backoff"
        );
    }

    #[test]
    fn reasons_and_retry_after() {
        assert_eq!(RetryReason::of_http(429).label(), "RATE_LIMITED");
        assert_eq!(RetryReason::of_http(503).label(), "UNAVAILABLE");
        assert_eq!(RetryReason::of_http(0).label(), "TRANSPORT");
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }
}
