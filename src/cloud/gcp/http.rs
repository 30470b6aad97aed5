//! The HTTP layer every Google client shares: base URLs, auth, per-call timeout, the
//! user agent, one refresh-and-retry on 401, retries of retryable answers within the
//! handle's [`CallBudget`] ([`crate::cloud::retry`]), the adaptive rate per project and
//! API ([`crate::cloud::rate`]), error parsing, and metrics per service/method/outcome
//! (see `docs/metrics.md`).
//!
//! Invariant: a call either returns the decoded body or a [`GcpError`] with a retry
//! class; no client sees reqwest errors or raw error bodies. Only reads, and requests
//! Google refused with a rate limit, are sent again here: nothing is done twice.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use url::Url;

use super::auth::TokenSource;
use super::config::{GcpConfig, Service};
use super::error::GcpError;
use crate::cloud::rate::{AdaptiveRates, project_of};
use crate::cloud::retry::{CallBudget, Failure, Retries, RetryReason, parse_retry_after};

/// A shared, cheap-to-clone handle for calling Google APIs.
#[derive(Debug, Clone)]
pub struct GcpHttp {
    /// Shared by every clone (each client holds one): cloning a client copies no URL.
    pub config: Arc<GcpConfig>,
    client: reqwest::Client,
    tokens: TokenSource,
    /// How long and how often a call made through this handle is retried.
    budget: CallBudget,
    /// The adaptive rate per project and API, shared by every clone.
    rates: AdaptiveRates,
}

/// One API call, built by a client and executed by [`GcpHttp::call`].
#[derive(Clone)]
pub struct Call<'a> {
    pub service: Service,
    /// Method name for errors, metrics and logs, e.g. `clusters.create`.
    pub method: &'static str,
    pub http: Method,
    /// Path relative to the service's base URL (`projects/p/locations/z/clusters`), or an
    /// absolute URL (a `selfLink`).
    pub path: String,
    pub query: Vec<(&'a str, String)>,
    pub body: Option<Value>,
    /// Upload bytes instead of JSON (Storage media upload).
    pub upload: Option<(Vec<u8>, &'a str)>,
}

impl<'a> Call<'a> {
    pub fn new(
        service: Service,
        method: &'static str,
        http: Method,
        path: impl Into<String>,
    ) -> Call<'a> {
        Call {
            service,
            method,
            http,
            path: path.into(),
            query: Vec::new(),
            body: None,
            upload: None,
        }
    }

    pub fn get(service: Service, method: &'static str, path: impl Into<String>) -> Call<'a> {
        Call::new(service, method, Method::GET, path)
    }

    pub fn post(service: Service, method: &'static str, path: impl Into<String>) -> Call<'a> {
        Call::new(service, method, Method::POST, path)
    }

    pub fn delete(service: Service, method: &'static str, path: impl Into<String>) -> Call<'a> {
        Call::new(service, method, Method::DELETE, path)
    }

    pub fn query(mut self, k: &'a str, v: impl ToString) -> Call<'a> {
        self.query.push((k, v.to_string()));
        self
    }

    pub fn json(mut self, body: &impl Serialize) -> Call<'a> {
        self.body = Some(serde_json::to_value(body).unwrap_or(Value::Null));
        self
    }
}

impl GcpHttp {
    pub fn new(config: GcpConfig, client: reqwest::Client) -> GcpHttp {
        let tokens = TokenSource::new(config.auth);
        GcpHttp {
            budget: CallBudget::request(config.request_retry),
            rates: AdaptiveRates::new(config.rate_ceiling),
            config: Arc::new(config),
            client,
            tokens,
        }
    }

    /// This handle with calls retried within `budget` (the rest is shared).
    pub fn with_budget(&self, budget: CallBudget) -> GcpHttp {
        GcpHttp {
            budget,
            ..self.clone()
        }
    }

    /// The budget of calls made through this handle.
    pub fn budget(&self) -> &CallBudget {
        &self.budget
    }

    /// The adaptive rate per project and API (shared by every clone).
    pub fn rates(&self) -> &AdaptiveRates {
        &self.rates
    }

    /// The token source these calls use (shared with the Kubernetes clients, which
    /// authenticate to GKE clusters with the same Google identity).
    pub fn tokens(&self) -> &TokenSource {
        &self.tokens
    }

    fn url(&self, c: &Call<'_>) -> Result<Url, GcpError> {
        let base = if c.upload.is_some() {
            &self.config.storage_upload
        } else {
            self.config.url(c.service)
        };
        let joined = if c.path.starts_with("http://") || c.path.starts_with("https://") {
            Url::parse(&c.path)
        } else {
            base.join(c.path.trim_start_matches('/'))
        };
        joined.map_err(|e| {
            GcpError::transport(
                c.service.name(),
                c.method,
                format!("bad URL {}: {e}", c.path),
            )
        })
    }

    /// Execute and decode the JSON body (an empty body decodes as `null`).
    pub async fn call<T: DeserializeOwned>(&self, c: Call<'_>) -> Result<T, GcpError> {
        let text = self.call_text(&c).await?;
        let value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).map_err(|e| {
                GcpError::transport(
                    c.service.name(),
                    c.method,
                    format!("unreadable response: {e}"),
                )
            })?
        };
        serde_json::from_value(value).map_err(|e| {
            GcpError::transport(
                c.service.name(),
                c.method,
                format!("unexpected response shape: {e}"),
            )
        })
    }

    /// GET `path` and decode the resource (or page) it answers.
    pub async fn get<T: DeserializeOwned>(
        &self,
        service: Service,
        method: &'static str,
        path: impl Into<String>,
    ) -> Result<T, GcpError> {
        self.call(Call::get(service, method, path)).await
    }

    /// Execute, discarding the body.
    pub async fn call_unit(&self, c: Call<'_>) -> Result<(), GcpError> {
        self.call_text(&c).await.map(|_| ())
    }

    async fn call_text(&self, c: &Call<'_>) -> Result<String, GcpError> {
        let svc = c.service.name();
        let project = project_of(&c.path);
        let mut retries = Retries::start(&self.budget, svc, c.method);
        let mut last: Option<GcpError> = None;
        loop {
            if let Some(p) = project
                && let Err(wait) = self.rates.acquire(p, svc, retries.deadline()).await
            {
                return Err(last.unwrap_or_else(|| self.slowed(c, p, wait)));
            }
            let started = Instant::now();
            let r = self.attempt_refreshing(c, retries.remaining()).await;
            record_call(
                svc,
                c.method,
                r.as_ref().map(|_| ()).map_err(|f| &f.error),
                started,
            );
            let f = match r {
                Ok(text) => {
                    if let Some(p) = project {
                        self.rates.answered(p, svc, false);
                    }
                    return Ok(text);
                }
                Err(f) => f,
            };
            let throttled = f.error.is_rate_limited();
            if let Some(p) = project
                && f.error.http_status != 0
            {
                self.rates.answered(p, svc, throttled);
            }
            let failure = Failure {
                // Sent again only when that cannot do anything twice: a read, or a
                // request Google refused to serve (rate limited). A write that failed
                // otherwise is left to its step, which checks what happened first.
                retryable: f.error.is_retryable() && (c.http == Method::GET || throttled),
                reason: retry_reason(&f.error, throttled),
                retry_after: f.retry_after,
            };
            match retries.after(failure) {
                Some(wait) => {
                    tokio::time::sleep(wait).await;
                    last = Some(f.error);
                }
                None => return Err(f.error),
            }
        }
    }

    /// The error of a call this process's own adaptive rate held back past the call's
    /// deadline (nothing was sent).
    fn slowed(&self, c: &Call<'_>, project: &str, wait: Duration) -> GcpError {
        let rate = self
            .rates
            .of_project(project)
            .into_iter()
            .find(|r| r.api == c.service.name())
            .map_or(0.0, |r| r.rate);
        GcpError::classified(
            c.service.name(),
            c.method,
            429,
            "RESOURCE_EXHAUSTED".into(),
            "CLIENT_RATE_LIMITED".into(),
            format!(
                "not sent: Google answered 429 to project {project}'s {} API, so kineticd \
                 sends it at most {rate:.1} requests/s for now, and the next slot (in {} ms) \
                 is past this call's deadline",
                c.service.name(),
                wait.as_millis()
            ),
        )
    }

    /// One attempt, and once more with a fresh token after a 401.
    async fn attempt_refreshing(&self, c: &Call<'_>, left: Duration) -> Result<String, Failed> {
        match self.attempt(c, false, left).await {
            Err(f) if f.error.http_status == 401 => {
                self.tokens.invalidate().await;
                self.attempt(c, true, left).await
            }
            other => other,
        }
    }

    async fn attempt(&self, c: &Call<'_>, retried: bool, left: Duration) -> Result<String, Failed> {
        let svc = c.service.name();
        let url = self.url(c)?;
        // Never past the budget's deadline (a request's own), nor the call timeout.
        let timeout = self.config.call_timeout.min(left.max(MIN_ATTEMPT));
        let mut req = self.client.request(c.http.clone(), url).timeout(timeout);
        if !c.query.is_empty() {
            req = req.query(&c.query);
        }
        if let Some((bytes, content_type)) = &c.upload {
            req = req
                .header(reqwest::header::CONTENT_TYPE, *content_type)
                .body(bytes.clone());
        } else if let Some(b) = &c.body {
            req = req.json(b);
        }
        if let Some(t) = self
            .tokens
            .token()
            .await
            .map_err(|e| GcpError::transport(svc, c.method, e.to_string()))?
        {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.map_err(|e| {
            let what = if e.is_timeout() {
                TIMED_OUT
            } else {
                "connection failed"
            };
            GcpError::transport(svc, c.method, format!("{what}: {e}"))
        })?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let text = resp
            .text()
            .await
            .map_err(|e| GcpError::transport(svc, c.method, format!("reading response: {e}")))?;
        if status.is_success() {
            return Ok(text);
        }
        let mut error = GcpError::from_response(svc, c.method, status.as_u16(), &text);
        if status == StatusCode::UNAUTHORIZED && retried {
            error.message = format!("{} (after refreshing the access token)", error.message);
        }
        Err(Failed {
            error,
            retry_after: retry_after.or_else(|| retry_info(&text)),
        })
    }
}

/// The shortest attempt timeout, even with the budget spent (the first attempt is always
/// made).
const MIN_ATTEMPT: Duration = Duration::from_millis(50);
const TIMED_OUT: &str = "timed out";

/// A failed attempt: the error, and how long the server asked to wait.
struct Failed {
    error: GcpError,
    retry_after: Option<Duration>,
}

impl From<GcpError> for Failed {
    fn from(error: GcpError) -> Failed {
        Failed {
            error,
            retry_after: None,
        }
    }
}

/// The retries counter's reason for a retryable error.
fn retry_reason(e: &GcpError, throttled: bool) -> RetryReason {
    if throttled {
        RetryReason::RateLimited
    } else if e.http_status == 0 && e.message.starts_with(TIMED_OUT) {
        RetryReason::Timeout
    } else {
        RetryReason::of_http(e.http_status)
    }
}

/// google.rpc.RetryInfo's `retryDelay` (`"1.5s"`) in an AIP-193 error body.
fn retry_info(body: &str) -> Option<Duration> {
    let v: Value = serde_json::from_str(body).ok()?;
    let delay = v["error"]["details"].as_array()?.iter().find_map(|d| {
        d["@type"]
            .as_str()
            .filter(|t| t.ends_with("google.rpc.RetryInfo"))
            .and(d["retryDelay"].as_str())
    })?;
    parse_retry_after(delay.strip_suffix('s')?)
}

/// Count and time one call, and log it (at debug; inside the step's span when a step
/// made it). The outcome is `OK`, `TRANSPORT` (no HTTP answer), or the canonical
/// google.rpc status name (`NOT_FOUND`, `RESOURCE_EXHAUSTED`): a bounded label.
fn record_call(
    service: &'static str,
    method: &'static str,
    r: Result<(), &GcpError>,
    started: Instant,
) {
    let outcome = match r {
        Ok(_) => "OK".to_owned(),
        Err(e) if e.http_status == 0 => "TRANSPORT".to_owned(),
        Err(e) => upper_snake(&e.status),
    };
    let elapsed = started.elapsed();
    crate::cloud::call_metrics::record(service, method, &outcome, elapsed);
    match r {
        Ok(_) => tracing::debug!(
            service,
            method,
            outcome,
            elapsed_ms = elapsed.as_millis() as u64,
            "cloud call"
        ),
        Err(e) => {
            tracing::debug!(service, method, outcome, elapsed_ms = elapsed.as_millis() as u64,
            reason = %e.reason, error = %e, "cloud call failed")
        }
    }
}

/// `notFound`, `rateLimitExceeded`, `QUOTA_EXCEEDED`, `already exists` ->
/// `NOT_FOUND`, `RATE_LIMIT_EXCEEDED`, `QUOTA_EXCEEDED`, `ALREADY_EXISTS`: Google's
/// reasons in the one style of kineticd's metric labels.
fn upper_snake(reason: &str) -> String {
    let mut out = String::with_capacity(reason.len() + 4);
    let mut prev_lower = false;
    for c in reason.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && prev_lower {
                out.push('_');
            }
            out.push(c.to_ascii_uppercase());
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        } else {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = false;
        }
    }
    let trimmed = out.trim_end_matches('_');
    if trimmed.is_empty() {
        "UNKNOWN".to_owned()
    } else {
        trimmed.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{GcpConfig, GcpHttp, upper_snake};

    /// Every request clones the service's handles, and with them each Google client: a
    /// clone shares the configuration (8 endpoint URLs) instead of copying it. Copying
    /// it cost about a third of the API server's CPU per read (BENCHMARKS.md, reads).
    #[test]
    fn clones_share_the_configuration() {
        // The TLS provider the binary installs at start (reqwest needs one to build).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let a = GcpHttp::new(GcpConfig::google(), reqwest::Client::new());
        let b = a.clone();
        assert!(Arc::ptr_eq(&a.config, &b.config));
    }

    #[test]
    fn reasons_become_upper_snake_labels() {
        for (reason, label) in [
            ("notFound", "NOT_FOUND"),
            ("rateLimitExceeded", "RATE_LIMIT_EXCEEDED"),
            ("QUOTA_EXCEEDED", "QUOTA_EXCEEDED"),
            ("NOT_FOUND", "NOT_FOUND"),
            ("already exists", "ALREADY_EXISTS"),
            ("conditionNotMet", "CONDITION_NOT_MET"),
            ("", "UNKNOWN"),
        ] {
            assert_eq!(upper_snake(reason), label, "{reason}");
        }
    }
}
