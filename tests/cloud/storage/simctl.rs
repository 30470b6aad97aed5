//! Driving the simulator's admin API from the cloud tests: faults, journal, clock, and
//! raw requests (for what the production clients would never send); and the checks of
//! Google's answers that every cloud test makes.

use kineticd::cloud::gcp::lro::LroPolicy;
use kineticd::cloud::gcp::types::iam::ServiceAccount;
use kineticd::cloud::gcp::{GcpClients, GcpError};
use kineticd::sim::Sim;
use kineticd::sim::clock::ClockMode;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A simulator whose clock moves only when the test says so, and clients pointed at it.
pub async fn start_explicit() -> (Sim, GcpClients) {
    crate::common::start_sim_with(kineticd::sim::SimConfig {
        clock: ClockMode::Explicit,
        ..Default::default()
    })
    .await
}

fn http() -> reqwest::Client {
    reqwest::Client::new()
}

/// Arm `count` faults of `kind` for `service`/`method`.
pub async fn arm(sim: &Sim, service: &str, method: &str, kind: &str, count: u32) {
    let r = http()
        .post(format!("{}/sim/v1/faults", sim.url()))
        .json(&json!({"service": service, "method": method, "kind": kind, "count": count}))
        .send()
        .await
        .expect("arm fault");
    assert!(r.status().is_success(), "arming failed: {}", r.status());
}

/// Journal entries for `service` and `method`, oldest first.
pub async fn journal(sim: &Sim, service: &str, method: &str) -> Vec<Value> {
    let query = [("service", service), ("method", method)];
    crate::sim_journal::sim_journal(&http(), &sim.url(), &query).await
}

/// The first `method` (a setIamPolicy) sent to `service` wrote back the policy it read
/// (the simulator's first etag, `ACAB`) at version 3 with `role` granted to `member`.
pub async fn assert_first_grant(sim: &Sim, service: &str, method: &str, role: &str, member: &str) {
    let sets = journal(sim, service, method).await;
    assert_eq!(
        sets[0]["body"],
        json!({"policy": {"version": 3, "etag": "ACAB",
               "bindings": [{"role": role, "members": [member]}]}})
    );
}

/// The HTTP statuses the journal recorded for `service`/`method`, in order.
pub async fn statuses(sim: &Sim, service: &str, method: &str) -> Vec<u64> {
    journal(sim, service, method)
        .await
        .iter()
        .map(|e| e["status"].as_u64().unwrap_or(0))
        .collect()
}

/// Check the journal recorded exactly `want`, in order, as the HTTP statuses of
/// `service`/`method`.
pub async fn assert_statuses(sim: &Sim, service: &str, method: &str, want: &[u64]) {
    assert_eq!(
        statuses(sim, service, method).await,
        want,
        "{service} {method}"
    );
}

/// Check the journal holds exactly one faulted (503) call of `service`/`method` and the
/// retry that succeeded.
pub async fn assert_retried_once(sim: &Sim, service: &str, method: &str) {
    assert_statuses(sim, service, method, &[503, 200]).await;
}

/// Wait (a bounded poll with a generous deadline) until the journal holds `n` calls of
/// `service`/`method` with HTTP status `status` (any status: `None`); returns them all.
pub async fn until_journal(
    sim: &Sim,
    service: &str,
    method: &str,
    status: Option<u64>,
    n: usize,
) -> Vec<u64> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let all = statuses(sim, service, method).await;
        if all
            .iter()
            .filter(|s| status.is_none_or(|want| **s == want))
            .count()
            >= n
        {
            return all;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{service} {method}: {n} calls (status {status:?}) not seen in 120 s: {all:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The error of a cancelled wait, which must end promptly: within a bound (60 s, loose
/// enough for any load) far below the wait's own deadline and poll intervals.
pub async fn cancelled_promptly<T: std::fmt::Debug>(
    wait: tokio::task::JoinHandle<Result<T, kineticd::cloud::gcp::GcpError>>,
) -> kineticd::cloud::gcp::GcpError {
    tokio::time::timeout(std::time::Duration::from_secs(60), wait)
        .await
        .expect("the cancelled wait ended promptly")
        .expect("join")
        .expect_err("cancelled")
}

/// Start `wait` (an operation wait, given its cancellation token) in a task; once it has
/// polled `service`/`poll_method` once and sleeps, cancel it: it must end promptly with
/// `CANCELLED`.
pub async fn cancel_after_first_poll<T, F>(
    sim: &Sim,
    service: &str,
    poll_method: &str,
    wait: impl FnOnce(CancellationToken) -> F,
) where
    T: std::fmt::Debug + Send + 'static,
    F: std::future::Future<Output = Result<T, GcpError>> + Send + 'static,
{
    let cancel = CancellationToken::new();
    let waiting = tokio::spawn(wait(cancel.clone()));
    until_journal(sim, service, poll_method, None, 1).await;
    cancel.cancel();
    let e = cancelled_promptly(waiting).await;
    assert_eq!(e.status, "CANCELLED", "{e}");
}

/// The wait contract of the LRO clients (`wait(policy, cancel)` starts one wait on an
/// operation the explicit clock holds running): cancelled once it has polled and sleeps,
/// the wait ends promptly; then `faults` (kind, HTTP status, count) armed on `service`'s
/// `operations.get` all hit a quickly polling wait, which rides them out and ends when
/// the clock moves by `delay`. Returns what that wait returned and every poll's status.
pub async fn check_operation_wait<T, F>(
    sim: &Sim,
    service: &str,
    faults: &[(&str, u64, usize)],
    delay: std::time::Duration,
    wait: impl Fn(LroPolicy, CancellationToken) -> F,
) -> (T, Vec<u64>)
where
    T: std::fmt::Debug + Send + 'static,
    F: std::future::Future<Output = Result<T, GcpError>> + Send + 'static,
{
    cancel_after_first_poll(sim, service, "operations.get", |c| wait(slow_lro(), c)).await;
    for (kind, _, count) in faults {
        arm(sim, service, "operations.get", kind, *count as u32).await;
    }
    let waiting = tokio::spawn(wait(quick_lro(), CancellationToken::new()));
    for (_, status, count) in faults {
        until_journal(sim, service, "operations.get", Some(*status), *count).await;
    }
    advance(sim, delay.as_secs_f64()).await;
    let done = waiting
        .await
        .expect("join")
        .expect("the wait rode out the faults");
    (done, statuses(sim, service, "operations.get").await)
}

/// Move the simulator's virtual clock forward.
pub async fn advance(sim: &Sim, seconds: f64) {
    let r = http()
        .post(format!("{}/sim/v1/clock:advance", sim.url()))
        .json(&json!({ "seconds": seconds }))
        .send()
        .await
        .expect("advance clock");
    assert!(r.status().is_success());
}

/// Send a raw request to the simulator; returns (status, JSON body or Null).
pub async fn raw(
    sim: &Sim,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = http().request(method, format!("{}{path}", sim.url()));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.expect("raw request");
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// POST `body` raw to `path`, which the simulator must refuse with 400; returns the
/// error body.
pub async fn post_refused(sim: &Sim, path: &str, body: Value) -> Value {
    let (status, body) = raw(sim, reqwest::Method::POST, path, Some(body)).await;
    assert_eq!(status, 400, "{path}: {body}");
    body
}

/// POST `body` raw to `path` and check the simulator refuses it as Google does: 400,
/// naming the unknown field `field`. Returns the error body.
pub async fn assert_unknown_field(sim: &Sim, path: &str, body: Value, field: &str) -> Value {
    let body = post_refused(sim, path, body).await;
    let msg = body["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains(&format!("Unknown name \"{field}\"")), "{msg}");
    body
}

/// Create service account `id` in `project`; returns it and its IAM member string
/// (`serviceAccount:EMAIL`).
pub async fn service_account(
    gcp: &GcpClients,
    project: &str,
    id: &str,
) -> (ServiceAccount, String) {
    let sa = gcp
        .iam
        .create_service_account(project, id, "", "")
        .await
        .expect("create service account");
    let member = format!("serviceAccount:{}", sa.email);
    (sa, member)
}

/// Assert a call failed with Google's 404.
#[track_caller]
pub fn assert_not_found<T: std::fmt::Debug>(r: Result<T, GcpError>) {
    let e = r.expect_err("expected a 404");
    assert!(e.is_not_found(), "{e}");
}

/// What the error of a failed call must carry besides its HTTP status.
pub enum Want<'a> {
    /// The canonical status (`INVALID_ARGUMENT`, ...).
    Status(&'a str),
    /// The reason (`invalid`, `quotaExceeded`, ...).
    Reason(&'a str),
}

/// The error of a call that must fail with HTTP `http` and `want`; `ctx` names the case
/// in a failure message.
#[track_caller]
pub fn failed_with<T: std::fmt::Debug>(
    r: Result<T, GcpError>,
    http: u16,
    want: Want,
    ctx: &str,
) -> GcpError {
    let e = r.expect_err(ctx);
    let (got, want) = match want {
        Want::Status(s) => (e.status.as_str(), s),
        Want::Reason(r) => (e.reason.as_str(), r),
    };
    assert_eq!((e.http_status, got), (http, want), "{ctx}: {e}");
    e
}

/// A slow LRO policy: next poll in 0.5 s, deadline in 10 min (for waits a test cancels).
pub fn slow_lro() -> LroPolicy {
    LroPolicy::standard(std::time::Duration::from_secs(600))
}

/// A fast LRO policy for tests: frequent polls, a deadline no loaded machine reaches.
pub fn quick_lro() -> LroPolicy {
    kineticd::cloud::gcp::lro::LroPolicy {
        first_delay: std::time::Duration::from_millis(5),
        max_delay: std::time::Duration::from_millis(20),
        deadline: std::time::Duration::from_secs(120),
    }
}

/// A fast read-modify-write policy for tests.
pub fn quick_rmw(max_attempts: u32) -> kineticd::cloud::gcp::resource_manager::RmwPolicy {
    kineticd::cloud::gcp::resource_manager::RmwPolicy {
        max_attempts,
        first_delay: std::time::Duration::from_millis(5),
        max_delay: std::time::Duration::from_millis(20),
    }
}
