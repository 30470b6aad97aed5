//! The serving process's limits: per-caller request rate, request deadline, database
//! acquire wait, unfinished operations per team, event streams per caller, and how long
//! a connection may take to send a request's head or sit idle between requests.
//!
//! Invariant: a zero in a flag turns that limit off (except the acquire wait, which is
//! always bounded); [`Limits::default`] is every limit off, the acquire wait 3 s (what
//! tests and embedders get unless they configure one).

use std::time::Duration;

use clap::Args;

/// Flags of `kineticd serve` for its limits (flattened into `ServeArgs`).
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
    /// Requests per second each caller (identity) may make, refilled continuously (token
    /// bucket); beyond it 429 RESOURCE_EXHAUSTED RATE_LIMITED with Retry-After. 0: off.
    /// Health endpoints are exempt.
    #[arg(long, env = "KINETIC_RATE_LIMIT_PER_SECOND", default_value_t = 50.0)]
    pub rate_limit_per_second: f64,
    /// Requests a caller may make at once after being idle (the bucket's size).
    #[arg(long, env = "KINETIC_RATE_LIMIT_BURST", default_value_t = 200)]
    pub rate_limit_burst: u32,
    /// Seconds a request may take before it is answered 504 DEADLINE_EXCEEDED
    /// (`:wait` and `:watch` have their own bounds). 0: no limit.
    #[arg(long, env = "KINETIC_REQUEST_TIMEOUT_SECONDS", default_value_t = 60.0)]
    pub request_timeout_seconds: f64,
    /// Seconds a request waits for a database connection (the database down, or every
    /// connection busy) before it is answered 503 UNAVAILABLE DATABASE_UNAVAILABLE.
    #[arg(
        long,
        env = "KINETIC_DB_ACQUIRE_TIMEOUT_SECONDS",
        default_value_t = 3.0
    )]
    pub db_acquire_timeout_seconds: f64,
    /// Unfinished operations a team may have; a mutation beyond it is refused 409
    /// FAILED_PRECONDITION TOO_MANY_OPERATIONS. 0: no cap.
    #[arg(long, env = "KINETIC_MAX_OPERATIONS_PER_TEAM", default_value_t = 100)]
    pub max_operations_per_team: u32,
    /// Event streams one caller may hold open at once (API `:watch` streams and console
    /// operation pages together); beyond it 429 RESOURCE_EXHAUSTED TOO_MANY_WATCHES.
    /// 0: no cap.
    #[arg(long, env = "KINETIC_MAX_WATCHES_PER_CALLER", default_value_t = 20)]
    pub max_watches_per_caller: u32,
    /// Seconds a connection may take to send a request's head (request line and
    /// headers), counted from its first byte (from accept for a new connection); then
    /// it is closed. A request being served is never cut (`:wait`, `:watch`). 0: no
    /// limit.
    #[arg(
        long,
        env = "KINETIC_HEADER_READ_TIMEOUT_SECONDS",
        default_value_t = 30.0
    )]
    pub header_read_timeout_seconds: f64,
    /// Seconds a keep-alive connection may wait for its next request before it is
    /// closed. Keep it above the load balancer's own keep-alive to its backends (600 s
    /// on Google Cloud's Application Load Balancers), or it may reuse a connection
    /// kineticd is closing and answer 502. 0: no limit.
    #[arg(long, env = "KINETIC_IDLE_TIMEOUT_SECONDS", default_value_t = 620.0)]
    pub idle_timeout_seconds: f64,
    /// Seconds a placement search (`placements:search`) gives its cloud reads, which run
    /// at once (0.1 to 60): what has not answered by then is a warning in the answer.
    #[arg(
        long,
        env = "KINETIC_PLACEMENT_DEADLINE_SECONDS",
        default_value_t = 2.0
    )]
    pub placement_deadline_seconds: f64,
}

/// A token bucket: `per_second` tokens a second, at most `burst` saved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub per_second: f64,
    pub burst: u32,
}

/// Validated limits (`None`: off).
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub rate: Option<Rate>,
    pub request_timeout: Option<Duration>,
    pub db_acquire_timeout: Duration,
    pub max_operations_per_team: Option<u32>,
    pub max_watches_per_caller: Option<u32>,
    /// The bound on a request's head, from its first byte.
    pub header_read_timeout: Option<Duration>,
    /// The bound on a connection's wait for its next request.
    pub idle_timeout: Option<Duration>,
    /// The bound on a placement search's cloud reads (all at once).
    pub placement_deadline: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            rate: None,
            request_timeout: None,
            db_acquire_timeout: Duration::from_secs(3),
            max_operations_per_team: None,
            max_watches_per_caller: None,
            header_read_timeout: None,
            idle_timeout: None,
            placement_deadline: Duration::from_secs(2),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    #[error(
        "KINETIC_RATE_LIMIT_PER_SECOND must be a number >= 0 (0 = off) and \
         KINETIC_RATE_LIMIT_BURST at least 1"
    )]
    BadRate,
    #[error("KINETIC_REQUEST_TIMEOUT_SECONDS must be a number >= 0 (0 = no limit)")]
    BadTimeout,
    #[error("KINETIC_DB_ACQUIRE_TIMEOUT_SECONDS must be between 0.1 and 600")]
    BadAcquire,
    #[error(
        "KINETIC_HEADER_READ_TIMEOUT_SECONDS and KINETIC_IDLE_TIMEOUT_SECONDS must be \
         numbers >= 0 (0 = no limit)"
    )]
    BadConnectionTimeout,
    #[error("KINETIC_PLACEMENT_DEADLINE_SECONDS must be between 0.1 and 60")]
    BadPlacementDeadline,
}

impl LimitArgs {
    pub fn validate(&self) -> Result<Limits, LimitError> {
        let r = self.rate_limit_per_second;
        if !r.is_finite() || r < 0.0 || self.rate_limit_burst == 0 {
            return Err(LimitError::BadRate);
        }
        let t = self.request_timeout_seconds;
        if !t.is_finite() || t < 0.0 {
            return Err(LimitError::BadTimeout);
        }
        let a = self.db_acquire_timeout_seconds;
        if !(0.1..=600.0).contains(&a) {
            return Err(LimitError::BadAcquire);
        }
        let seconds = |t: f64| {
            if !t.is_finite() || t < 0.0 {
                return Err(LimitError::BadConnectionTimeout);
            }
            Ok((t > 0.0).then(|| Duration::from_secs_f64(t)))
        };
        let header_read_timeout = seconds(self.header_read_timeout_seconds)?;
        let idle_timeout = seconds(self.idle_timeout_seconds)?;
        let nonzero = |n: u32| (n > 0).then_some(n);
        let d = self.placement_deadline_seconds;
        if !(0.1..=60.0).contains(&d) {
            return Err(LimitError::BadPlacementDeadline);
        }
        Ok(Limits {
            rate: (r > 0.0).then_some(Rate {
                per_second: r,
                burst: self.rate_limit_burst,
            }),
            request_timeout: (t > 0.0).then(|| Duration::from_secs_f64(t)),
            db_acquire_timeout: Duration::from_secs_f64(a),
            max_operations_per_team: nonzero(self.max_operations_per_team),
            max_watches_per_caller: nonzero(self.max_watches_per_caller),
            header_read_timeout,
            idle_timeout,
            placement_deadline: Duration::from_secs_f64(d),
        })
    }
}
