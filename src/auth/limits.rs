//! Per-caller limits shared by every HTTP surface (the JSON API and the web console): a
//! token bucket per authenticated identity (`governor`) and a cap on the event streams a
//! caller holds open (the API's `:watch` and the console's live-event streams).
//!
//! Invariants: the process has one [`CallerLimits`], handed to both surfaces, so a caller
//! has one bucket and one count of streams whichever surface it uses; a [`WatchPermit`]
//! frees its place exactly when it is dropped; a refusal is a typed [`Refused`] that says
//! how long to wait, and each surface renders it its own way (a Google-shaped error, an
//! error page), both with `Retry-After`.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::domain::Email;

/// Why a caller's request was refused (each a 429 RESOURCE_EXHAUSTED).
#[derive(Debug, Clone, thiserror::Error)]
pub enum Refused {
    #[error(
        "too many requests from {who}; retry after {retry_after} s (the server allows \
         KINETIC_RATE_LIMIT_PER_SECOND per caller, the API and the console together)"
    )]
    RateLimited { who: Email, retry_after: u64 },
    #[error(
        "{who} already has {max} event streams open (API :watch streams and console \
         operation pages together), the most this server allows \
         (KINETIC_MAX_WATCHES_PER_CALLER); close one, or use :wait"
    )]
    TooManyWatches { who: Email, max: u32 },
}

impl Refused {
    /// The stable machine reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Refused::RateLimited { .. } => "RATE_LIMITED",
            Refused::TooManyWatches { .. } => "TOO_MANY_WATCHES",
        }
    }

    /// Whole seconds to wait before trying again (at least 1).
    pub fn retry_after(&self) -> u64 {
        match self {
            Refused::RateLimited { retry_after, .. } => (*retry_after).max(1),
            Refused::TooManyWatches { .. } => 1,
        }
    }
}

/// The limits every request shares (one per process).
pub struct CallerLimits {
    rate: Option<DefaultKeyedRateLimiter<Email>>,
    max_watches: Option<u32>,
    watches: Arc<Mutex<HashMap<Email, u32>>>,
}

impl CallerLimits {
    /// `rate`: (tokens a second, burst) per caller; `None` turns each limit off.
    pub fn new(rate: Option<(f64, u32)>, max_watches: Option<u32>) -> CallerLimits {
        let rate = rate.and_then(|(per_second, burst)| {
            let period = Duration::from_secs_f64(1.0 / per_second);
            let quota = Quota::with_period(period)?.allow_burst(NonZeroU32::new(burst)?);
            Some(RateLimiter::keyed(quota))
        });
        CallerLimits {
            rate,
            max_watches,
            watches: Arc::default(),
        }
    }

    /// Charge one request to `who`'s bucket; refused when it is empty.
    pub fn charge(&self, who: &Email) -> Result<(), Refused> {
        let Some(rl) = &self.rate else { return Ok(()) };
        if rl.len() > 10_000 {
            // Forget callers whose buckets are full again (bounded memory).
            rl.retain_recent();
        }
        rl.check_key(who).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            Refused::RateLimited {
                who: who.clone(),
                retry_after: (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1),
            }
        })
    }

    /// A place for one more event stream of `who`; refused at the cap.
    pub fn watch_permit(&self, who: &Email) -> Result<WatchPermit, Refused> {
        let mut open = self.watches.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(who.clone()).or_insert(0);
        if let Some(max) = self.max_watches
            && *n >= max
        {
            return Err(Refused::TooManyWatches {
                who: who.clone(),
                max,
            });
        }
        *n += 1;
        Ok(WatchPermit {
            who: who.clone(),
            watches: self.watches.clone(),
        })
    }
}

/// One open event stream; dropping it frees the place.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn email(s: &str) -> Email {
        Email::parse(s).unwrap()
    }

    #[test]
    fn one_bucket_and_one_stream_count_per_caller() {
        let l = CallerLimits::new(Some((0.001, 2)), Some(1));
        let (a, b) = (email("a@x.io"), email("b@x.io"));
        assert!(l.charge(&a).is_ok() && l.charge(&a).is_ok());
        let e = l.charge(&a).unwrap_err();
        assert_eq!(e.reason(), "RATE_LIMITED");
        assert!(e.retry_after() >= 1);
        assert!(l.charge(&b).is_ok());

        let held = l.watch_permit(&a).unwrap();
        let e = l.watch_permit(&a).err().unwrap();
        assert_eq!((e.reason(), e.retry_after()), ("TOO_MANY_WATCHES", 1));
        assert!(l.watch_permit(&b).is_ok());
        drop(held);
        assert!(l.watch_permit(&a).is_ok());
    }

    #[test]
    fn no_limits_refuse_nothing() {
        let l = CallerLimits::new(None, None);
        let a = email("a@x.io");
        for _ in 0..1000 {
            assert!(l.charge(&a).is_ok());
        }
        let permits: Vec<_> = (0..100).map(|_| l.watch_permit(&a).unwrap()).collect();
        assert_eq!(permits.len(), 100);
    }
}
