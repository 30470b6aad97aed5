//! The one place a cloud call (Google or Kubernetes) is counted and timed:
//! `kineticd_cloud_calls_total{service,method,outcome}` and
//! `kineticd_cloud_call_duration_seconds{service,method}` (see `docs/metrics.md`); the
//! retries are counted by [`crate::cloud::retry`], the adaptive rates by
//! [`crate::cloud::rate`].
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
