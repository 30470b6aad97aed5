//! Prometheus metrics: one process-wide recorder, an HTTP middleware that counts
//! requests and times them by matched route and status, and the `/metrics` endpoint.
//!
//! Invariant: the `route` label is the route template (`/v1/teams/{team}`), never the
//! raw path, so label cardinality stays bounded; every metric kineticd records is
//! described here (a `# HELP` line on `/metrics`); label values that name a code, state,
//! type or outcome are UPPER_SNAKE, as the API spells them (`SUCCEEDED`, `NOT_FOUND`);
//! `docs/metrics.md` lists every family (a test compares it with a scrape).

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use super::state::AppState;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process-wide recorder (installed on first use; later calls share it).
pub fn handle() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Suffix("_seconds".into()),
                    &[
                        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                        10.0, 30.0, 60.0,
                    ],
                )
                .map(|b| b.build_recorder());
            match recorder {
                Ok(r) => {
                    let h = r.handle();
                    // Fails only if another recorder was installed first; then ours
                    // still renders (empty) and the other keeps working.
                    let _ = metrics::set_global_recorder(r);
                    describe();
                    h
                }
                Err(e) => {
                    tracing::error!(error = %e, "metrics recorder not built");
                    PrometheusBuilder::new().build_recorder().handle()
                }
            }
        })
        .clone()
}

/// The `# HELP` text of every metric kineticd records (here, in `ops`, `store` and
/// `cloud`); `docs/metrics.md` lists the same families with their labels.
fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        "kineticd_http_requests_total",
        "API requests served, by route template, HTTP method and status code"
    );
    describe_histogram!(
        "kineticd_http_request_duration_seconds",
        Unit::Seconds,
        "Time to answer an API request, by route template, HTTP method and status code"
    );
    describe_counter!(
        "kineticd_cloud_calls_total",
        "Google Cloud and Kubernetes API calls, by service, method and outcome \
         (OK, TRANSPORT or the google.rpc status name)"
    );
    describe_histogram!(
        "kineticd_cloud_call_duration_seconds",
        Unit::Seconds,
        "Time of one Google Cloud or Kubernetes API call (a Google call with its one \
         retry after a 401), by service and method"
    );
    describe_histogram!(
        "kineticd_step_duration_seconds",
        Unit::Seconds,
        "Time of one attempt of an operation step, by workflow (operation type), step \
         kind (resource type) and outcome (OK, RETRYABLE_ERROR or ERROR)"
    );
    describe_counter!(
        "kineticd_step_retries_total",
        "Step attempts scheduled again after a retryable failure, by workflow"
    );
    describe_counter!(
        "kineticd_webhook_attempts_total",
        "Webhook delivery tries by this process, by outcome (DELIVERED: a 2xx answer; \
         NOT_DELIVERED: another status, a refused address, a timeout); registered at 0"
    );
    describe_counter!(
        "kineticd_lease_rescues_total",
        "Operations claimed from a worker whose lease expired without being handed back"
    );
    describe_counter!(
        "kineticd_operations_finished_total",
        "Operations finished by this process, by operation type and final state"
    );
    describe_gauge!(
        "kineticd_operations_unfinished",
        "Operations not yet finished (all processes), by operation type and state; \
         refreshed every few seconds"
    );
    describe_counter!(
        "kineticd_project_claims_total",
        "Checks that a caller may bind a GCP project to a team, by outcome (ALLOWED, \
         REFUSED, UNAVAILABLE); registered at 0 at start"
    );
    for outcome in ["ALLOWED", "REFUSED", "UNAVAILABLE"] {
        metrics::counter!("kineticd_project_claims_total", "outcome" => outcome).increment(0);
    }
    describe_counter!(
        "kineticd_cloud_call_retries_total",
        "Cloud calls sent again after a retryable answer (within the caller's budget), by \
         service, method and reason (RATE_LIMITED, UNAVAILABLE, TIMEOUT, TRANSPORT, OTHER)"
    );
    describe_gauge!(
        "kineticd_cloud_rate_limit",
        "Requests per second kineticd sends at most to a project's Google API: the \
         ceiling, lowered after 429s and raised back as calls succeed"
    );
    describe_gauge!(
        "kineticd_queue_depth",
        "Operations QUEUED for a worker (all processes); refreshed every few seconds"
    );
    describe_gauge!(
        "kineticd_queue_oldest_age_seconds",
        Unit::Seconds,
        "Age of the oldest QUEUED operation (0 when none is); refreshed every few seconds"
    );
}

/// The request counter and duration histogram of one label set.
#[derive(Clone)]
struct Series {
    requests: metrics::Counter,
    duration: metrics::Histogram,
}

impl Series {
    fn register(route: &str, method: &Method, status: u16) -> Series {
        let labels = [
            ("route", route.to_owned()),
            ("method", method.to_string()),
            ("status", status.to_string()),
        ];
        Series {
            requests: metrics::counter!("kineticd_http_requests_total", &labels),
            duration: metrics::histogram!("kineticd_http_request_duration_seconds", &labels),
        }
    }
}

/// The series registered so far, by route template, then method and status: a request
/// whose labels were seen before records through its cached handles, with no label
/// strings built and no key hashed by the recorder. Bounded like the labels themselves.
type SeriesCache = RwLock<HashMap<String, Vec<(Method, u16, Series)>>>;

static SERIES: OnceLock<SeriesCache> = OnceLock::new();

/// The handles of `(route, method, status)`, registered on first use. Before the
/// process-wide recorder is installed nothing is cached (handles taken then would stay
/// no-ops).
fn series(route: &str, method: &Method, status: u16) -> Series {
    if HANDLE.get().is_none() {
        return Series::register(route, method, status);
    }
    let cache = SERIES.get_or_init(Default::default);
    let found = |v: &Vec<(Method, u16, Series)>| {
        v.iter()
            .find(|(m, s, _)| m == method && *s == status)
            .map(|(_, _, series)| series.clone())
    };
    if let Some(s) = cache
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(route)
        .and_then(found)
    {
        return s;
    }
    let mut map = cache.write().unwrap_or_else(|e| e.into_inner());
    let entry = map.entry(route.to_owned()).or_default();
    if let Some(s) = found(entry) {
        return s;
    }
    let s = Series::register(route, method, status);
    entry.push((method.clone(), status, s.clone()));
    s
}

pub async fn track(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let method = req.method().clone();
    let resp = next.run(req).await;
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    let s = series(route, &method, resp.status().as_u16());
    s.requests.increment(1);
    s.duration.record(start.elapsed().as_secs_f64());
    resp
}

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", operation_id = "getMetrics", tag = "service", security(),
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics_text(State(s): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        s.metrics.render(),
    )
}
