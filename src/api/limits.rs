//! Per-caller limits at the HTTP edge: a token bucket per authenticated identity
//! (`governor`), a cap on a caller's open `:watch` streams, and a deadline on every
//! request but the long-polls.
//!
//! Invariant: a refused or timed-out request gets a Google-shaped error (429
//! RESOURCE_EXHAUSTED with `Retry-After`, or 504 DEADLINE_EXCEEDED); a watch permit is
//! released exactly when its stream is dropped; unauthenticated routes (health) are
//! never rate limited, because only the `Caller` extractor charges the bucket.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::error::ApiError;
use crate::domain::Email;

/// The metadata key carrying the seconds to wait; [`deadline`] copies it to `Retry-After`.
const RETRY_AFTER: &str = "retryAfterSeconds";

/// The limits every handler shares (one per process).
pub struct CallerLimits {
    rate: Option<DefaultKeyedRateLimiter<Email>>,
    max_watches: Option<u32>,
    watches: Arc<Mutex<HashMap<Email, u32>>>,
    timeout: Option<Duration>,
}

impl CallerLimits {
    /// `rate`: (tokens a second, burst) per caller; `None` turns each limit off.
    pub fn new(
        rate: Option<(f64, u32)>,
        max_watches: Option<u32>,
        timeout: Option<Duration>,
    ) -> CallerLimits {
        let rate = rate.and_then(|(per_second, burst)| {
            let period = Duration::from_secs_f64(1.0 / per_second);
            let quota = Quota::with_period(period)?.allow_burst(NonZeroU32::new(burst)?);
            Some(RateLimiter::keyed(quota))
        });
        CallerLimits {
            rate,
            max_watches,
            watches: Arc::default(),
            timeout,
        }
    }

    /// Charge one request to `who`'s bucket: 429 RATE_LIMITED when it is empty.
    pub fn charge(&self, who: &Email) -> Result<(), ApiError> {
        let Some(rl) = &self.rate else { return Ok(()) };
        if rl.len() > 10_000 {
            // Forget callers whose buckets are full again (bounded memory).
            rl.retain_recent();
        }
        rl.check_key(who).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "RATE_LIMITED",
                format!(
                    "too many requests from {who}; retry after {} s (the server allows \
                     KINETIC_RATE_LIMIT_PER_SECOND per caller)",
                    secs.max(1)
                ),
            )
            .with(RETRY_AFTER, secs.max(1))
        })
    }

    /// A permit for one more `:watch` stream of `who`: 429 TOO_MANY_WATCHES at the cap.
    pub fn watch_permit(&self, who: &Email) -> Result<WatchPermit, ApiError> {
        let mut open = self.watches.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(who.clone()).or_insert(0);
        if let Some(max) = self.max_watches
            && *n >= max
        {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "TOO_MANY_WATCHES",
                format!(
                    "{who} already has {max} :watch streams open, the most this server allows \
                     (KINETIC_MAX_WATCHES_PER_CALLER); close one, or use :wait"
                ),
            )
            .with("maxWatches", max)
            .with(RETRY_AFTER, 1));
        }
        *n += 1;
        Ok(WatchPermit {
            who: who.clone(),
            watches: self.watches.clone(),
        })
    }
}

/// One open `:watch` stream; dropping it frees the place.
pub struct WatchPermit {
    who: Email,
    watches: Arc<Mutex<HashMap<Email, u32>>>,
}

impl Drop for WatchPermit {
    fn drop(&mut self) {
        let mut open = self.watches.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.who) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.who);
            }
        }
    }
}

/// Whether `path` is a long-poll with its own bound (`:wait`, `:watch`).
fn is_long_poll(path: &str) -> bool {
    path.ends_with(":wait") || path.ends_with(":watch")
}

/// Middleware: the request deadline (504 DEADLINE_EXCEEDED past it, long-polls exempt),
/// and `Retry-After` on every error that names a wait.
pub async fn deadline(State(l): State<Arc<CallerLimits>>, req: Request, next: Next) -> Response {
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
