//! The one place a cloud call (Google or Kubernetes) is counted and timed:
//! `kineticd_cloud_calls_total{service,method,outcome}` and
//! `kineticd_cloud_call_duration_seconds{service,method}` (see `docs/metrics.md`), and
//! where the cloud's other families are described: the retries
//! ([`crate::cloud::retry`]) and the adaptive rates ([`crate::cloud::rate`]).
//!
//! Invariant: every label is from a bounded set: `service` is a Google service short
//! name or `kubernetes`, `method` a method name without resource names
//! (`clusters.create`, `deployments.patch`), `outcome` `OK`, `TRANSPORT` or a canonical
//! google.rpc status name; `project` (of the rates) only a project bound to a team.

use std::time::Duration;

/// Count and time one finished call.
pub fn record(service: &'static str, method: &str, outcome: &str, elapsed: Duration) {
    metrics::counter!("kineticd_cloud_calls_total",
        "service" => service, "method" => method.to_owned(), "outcome" => outcome.to_owned())
    .increment(1);
    metrics::histogram!("kineticd_cloud_call_duration_seconds",
        "service" => service, "method" => method.to_owned())
    .record(elapsed.as_secs_f64());
}

/// The `# HELP` text of the cloud's own families (called by the API's recorder set-up,
/// once the recorder is installed).
pub fn describe() {
    metrics::describe_counter!(
        "kineticd_cloud_call_retries_total",
        "Cloud calls sent again after a retryable answer (within the caller's budget), by \
         service, method and reason (RATE_LIMITED, UNAVAILABLE, TIMEOUT, TRANSPORT, OTHER)"
    );
    metrics::describe_gauge!(
        "kineticd_cloud_rate_limit",
        "Requests per second kineticd sends at most to a project's Google API: the \
         ceiling, lowered after 429s and raised back as calls succeed"
    );
}
