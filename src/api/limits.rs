//! The API's side of the per-caller limits: the shared [`CallerLimits`] (one bucket and
//! one count of event streams per caller, charged by the console too) with its refusals
//! rendered as API errors, and a deadline on every request but the long-polls.
//!
//! Invariant: a refused or timed-out request gets a Google-shaped error (429
//! RESOURCE_EXHAUSTED with `Retry-After`, or 504 DEADLINE_EXCEEDED); unauthenticated
//! routes (health) are never rate limited, because only the `Caller` extractor charges
//! the bucket.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use crate::auth::limits::{CallerLimits, Refused, WatchPermit};
use crate::domain::Email;

/// The metadata key carrying the seconds to wait; [`deadline`] copies it to `Retry-After`.
const RETRY_AFTER: &str = "retryAfterSeconds";

/// What the API enforces: the per-caller limits it shares with the console, and its own
/// request deadline.
pub struct ApiLimits {
    pub caller: Arc<CallerLimits>,
    timeout: Option<Duration>,
}

impl ApiLimits {
    pub fn new(caller: Arc<CallerLimits>, timeout: Option<Duration>) -> ApiLimits {
        ApiLimits { caller, timeout }
    }

    /// Charge one request to `who`'s bucket: 429 RATE_LIMITED when it is empty.
    pub fn charge(&self, who: &Email) -> Result<(), ApiError> {
        Ok(self.caller.charge(who)?)
    }

    /// A place for one more `:watch` stream of `who`: 429 TOO_MANY_WATCHES at the cap.
    pub fn watch_permit(&self, who: &Email) -> Result<WatchPermit, ApiError> {
        Ok(self.caller.watch_permit(who)?)
    }
}

impl From<Refused> for ApiError {
    fn from(r: Refused) -> ApiError {
        let e = ApiError::new(StatusCode::TOO_MANY_REQUESTS, r.reason(), r.to_string());
        let e = match &r {
            Refused::TooManyWatches { max, .. } => e.with("maxWatches", max),
            Refused::RateLimited { .. } => e,
        };
        e.with(RETRY_AFTER, r.retry_after())
    }
}

/// Whether `path` is a long-poll with its own bound (`:wait`, `:watch`).
fn is_long_poll(path: &str) -> bool {
    path.ends_with(":wait") || path.ends_with(":watch")
}

/// Middleware: the request deadline (504 DEADLINE_EXCEEDED past it, long-polls exempt),
/// and `Retry-After` on every error that names a wait.
pub async fn deadline(State(l): State<Arc<ApiLimits>>, req: Request, next: Next) -> Response {
    let limit = l.timeout.filter(|_| !is_long_poll(req.uri().path()));
    let mut resp = match limit {
        None => next.run(req).await,
        Some(t) => match tokio::time::timeout(t, next.run(req)).await {
            Ok(r) => r,
            Err(_) => ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "REQUEST_TIMEOUT",
                format!(
                    "the request took longer than {} s and was abandoned (nothing it had not \
                     committed was kept); retry, or raise KINETIC_REQUEST_TIMEOUT_SECONDS",
                    t.as_secs_f64()
                ),
            )
            .with("timeoutSeconds", t.as_secs_f64())
            .into_response(),
        },
    };
    let wait = resp
        .extensions()
        .get::<ApiError>()
        .and_then(|e| e.metadata.get(RETRY_AFTER))
        .and_then(|s| HeaderValue::from_str(s).ok());
    if let Some(v) = wait {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}
