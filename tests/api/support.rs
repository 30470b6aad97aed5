//! Shared assertions for the API tests: the Google error shape and page walking.

use std::collections::HashSet;

use reqwest::StatusCode;
use serde_json::{Value, json};

use kineticd::store::clusters::ClusterRecord;

use crate::common::{Resp, TestApp};

/// Assert `r` is an error with HTTP `code`, canonical `status` and ErrorInfo `reason`,
/// in exactly the Google shape:
/// `{"error":{"code","status","message","details":[{"@type","reason","domain","metadata"}]}}`.
#[track_caller]
pub fn expect_error(r: &Resp, code: u16, status: &str, reason: &str) {
    let ctx = format!("{} {:#}", r.status, r.body);
    assert_eq!(r.status.as_u16(), code, "HTTP status: {ctx}");
    let top = r
        .body
        .as_object()
        .unwrap_or_else(|| panic!("error body is not an object: {ctx}"));
    assert_eq!(top.len(), 1, "only `error` at the top level: {ctx}");
    let e = r.body["error"]
        .as_object()
        .unwrap_or_else(|| panic!("no error object: {ctx}"));
    let mut keys: Vec<&str> = e.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "details", "message", "status"], "{ctx}");
    assert_eq!(e["code"], Value::from(code), "error.code: {ctx}");
    assert_eq!(e["status"], status, "error.status: {ctx}");
    let msg = e["message"]
        .as_str()
        .unwrap_or_else(|| panic!("message not a string: {ctx}"));
    assert!(!msg.trim().is_empty(), "empty message: {ctx}");
    let details = e["details"]
        .as_array()
        .unwrap_or_else(|| panic!("details not an array: {ctx}"));
    assert_eq!(details.len(), 1, "one ErrorInfo: {ctx}");
    let d = details[0]
        .as_object()
        .unwrap_or_else(|| panic!("detail not an object: {ctx}"));
    let mut dkeys: Vec<&str> = d.keys().map(String::as_str).collect();
    dkeys.sort_unstable();
    assert_eq!(dkeys, ["@type", "domain", "metadata", "reason"], "{ctx}");
    assert_eq!(
        d["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
        "{ctx}"
    );
    assert_eq!(d["domain"], "kineticd", "{ctx}");
    assert_eq!(d["reason"], reason, "reason: {ctx}");
    let md = d["metadata"]
        .as_object()
        .unwrap_or_else(|| panic!("metadata not an object: {ctx}"));
    assert!(
        md.values().all(Value::is_string),
        "metadata values are strings: {ctx}"
    );
    assert!(
        r.headers.get("x-request-id").is_some(),
        "x-request-id on errors too: {ctx}"
    );
    if code >= 500 {
        for leak in [
            "127.0.0.1",
            "sqlx",
            "postgres",
            "panicked",
            "error sending request",
        ] {
            assert!(
                !msg.contains(leak),
                "5xx message leaks internals ({leak}): {ctx}"
            );
        }
    }
}

/// [`expect_error`], and the message mentions `text`.
#[track_caller]
pub fn expect_error_saying(r: &Resp, code: u16, status: &str, reason: &str, text: &str) {
    expect_error(r, code, status, reason);
    assert!(message(r).contains(text), "{}", message(r));
}

/// A 400 `INVALID_ARGUMENT` error with `reason`, whose message mentions `text`.
#[track_caller]
pub fn expect_invalid(r: &Resp, reason: &str, text: &str) {
    expect_error_saying(r, 400, "INVALID_ARGUMENT", reason, text);
}

/// Assert `r` is a 404 `NOT_FOUND` error with ErrorInfo `reason` (see [`expect_error`]).
#[track_caller]
pub fn expect_not_found(r: &Resp, reason: &str) {
    expect_error(r, 404, "NOT_FOUND", reason);
}

/// A fresh app in which `owner` owns team `acme` (project `acme-project`).
pub async fn acme_app(owner: &str) -> TestApp {
    let app = TestApp::spawn().await;
    app.team(owner, "acme", &["acme-project"]).await;
    app
}

/// A fresh app whose callers each get `burst` requests, refilled at `per_second`.
pub async fn app_with_rate(per_second: f64, burst: u32) -> TestApp {
    TestApp::spawn_tweaked(|mut s| {
        s.limits.rate = Some(kineticd::config::limits::Rate { per_second, burst });
        s
    })
    .await
}

/// A fresh app where a caller holds one event stream at most; `owner` owns team `acme`,
/// `member` is a MEMBER; with the name of a queued operation of the team (no workers).
pub async fn one_watch_app(owner: &str, member: &str) -> (TestApp, String) {
    let app = TestApp::spawn_tweaked(|mut s| {
        s.limits.max_watches_per_caller = Some(1);
        s
    })
    .await;
    app.team(owner, "acme", &["acme-project"]).await;
    app.member(owner, "acme", member, "MEMBER").await;
    let name = queued_noop(&app, owner).await;
    (app, name)
}

/// The name of a one-step NOOP operation of team `acme` started by `user` (it stays
/// queued where no workers run).
pub async fn queued_noop(app: &TestApp, user: &str) -> String {
    let op = app.noop(user, json!({"team": "acme", "steps": 1})).await;
    op["name"].as_str().unwrap().to_owned()
}

/// A `:wait` of 1.5 s on the queued operation `name` is answered by its own timeout:
/// 200, not done, after 1.4 s at least.
pub async fn wait_runs_its_timeout(app: &TestApp, user: &str, name: &str) {
    let started = std::time::Instant::now();
    let r = app.op_action(user, name, "wait?timeout=1500ms").await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    assert_ne!(r.body["done"], true, "{:#}", r.body);
    assert!(started.elapsed() >= std::time::Duration::from_millis(1400));
}

/// `method path` as IAP mode sees it: the dev identity header of `dev_user` (which IAP
/// mode must ignore), the IAP assertion `token` when given, a JSON `body` when given.
pub fn iap_request(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    dev_user: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> reqwest::RequestBuilder {
    let mut req = app.request_as(dev_user, method, path);
    if let Some(t) = token {
        req = req.header(kineticd::auth::IAP_HEADER, t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    req
}

/// Create the pod `body` (a Pod manifest) in the `default` namespace of `cluster`.
pub async fn create_pod(cluster: &kineticd::cloud::kube::KubeCluster, body: &Value) {
    use k8s_openapi::api::core::v1::Pod;
    let pod: Pod = serde_json::from_value(body.clone()).expect("pod");
    let api: kube::Api<Pod> =
        kube::Api::namespaced(cluster.client().await.expect("client"), "default");
    api.create(&kube::api::PostParams::default(), &pod)
        .await
        .expect("create pod");
}

/// The callers of the cluster tests: alice owns `acme`, bob is a member, eve is not.
pub const ALICE: &str = "alice@example.com";
pub use crate::common::BOB;
pub const EVE: &str = "eve@example.com";
/// [`acme_cluster`]'s project, zone and name.
pub const P: &str = "acme-project";
pub const Z: &str = "us-central1-a";
pub const C: &str = "kc";
/// Its capacity view and workload check.
pub const CAPACITY: &str = "/v1/projects/acme-project/zones/us-central1-a/clusters/kc/capacity";
pub const CHECK: &str = "/v1/projects/acme-project/zones/us-central1-a/clusters/kc:checkWorkload";
/// A cluster of its project and zone that does not exist.
pub const NOPE: &str = "/v1/projects/acme-project/zones/us-central1-a/clusters/nope";

/// (name, reason, GPUs requested) of each pending pod of capacity view `c`.
#[track_caller]
pub fn pending_pods(c: &Value) -> Vec<(&str, &str, u64)> {
    let pods = c["pendingPods"].as_array();
    let pods = pods.unwrap_or_else(|| panic!("no pendingPods: {c:#}"));
    pods.iter()
        .map(|p| {
            let name = p["name"].as_str().expect("a pending pod's name");
            let requested = p["requested"].as_u64().expect("GPUs requested");
            (name, p["reason"].as_str().unwrap_or_default(), requested)
        })
        .collect()
}

/// The counts of a capacity entry (a pool's, a node's), in the order of the reference.
#[track_caller]
pub fn counts(v: &Value) -> [u64; 5] {
    [
        "allocatable",
        "requested",
        "free",
        "stranded",
        "largestPlaceableRequest",
    ]
    .map(|k| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v:#}")))
}

/// The reasons of a workload check's problems, in order.
pub fn reasons(v: &Value) -> Vec<&str> {
    v["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter_map(|p| p["reason"].as_str())
        .collect()
}

/// The resource name of [`acme_cluster`].
pub const ACME_KC: &str = "projects/acme-project/zones/us-central1-a/clusters/kc";

/// `PUT /v1/profiles/work` pointing at [`ACME_KC`], as `user`.
pub async fn work_profile(app: &TestApp, user: &str) -> Resp {
    app.put(user, "/v1/profiles/work", json!({ "cluster": ACME_KC }))
        .await
}

/// Assert `r` is the 415 of a route that takes a JSON body, saying so.
#[track_caller]
pub fn expect_json_only(r: &Resp) {
    expect_error_saying(
        r,
        415,
        "INVALID_ARGUMENT",
        "UNSUPPORTED_MEDIA_TYPE",
        "application/json",
    );
}

/// `PUT` member `email` of team `acme` with `role`, as `by`.
pub async fn put_role(app: &TestApp, by: &str, email: &str, role: impl Into<Value>) -> Resp {
    let path = format!("/v1/teams/acme/members/{email}");
    app.put(by, &path, json!({ "role": role.into() })).await
}

/// The cluster most tests work on: `kc` of team `acme` in `acme-project`, `us-central1-a`.
pub async fn acme_cluster(app: &TestApp) -> ClusterRecord {
    app.cluster("acme", "acme-project", "us-central1-a", "kc")
        .await
}

/// The error message (after [`expect_error`]).
pub fn message(r: &Resp) -> &str {
    r.body["error"]["message"].as_str().unwrap_or("")
}

/// The ErrorInfo metadata value `key` (after [`expect_error`]).
pub fn meta<'a>(r: &'a Resp, key: &str) -> &'a str {
    r.body["error"]["details"][0]["metadata"][key]
        .as_str()
        .unwrap_or("")
}

/// The entry of `body["nodePools"]` whose `poolId` is `id` (status, capacity).
#[track_caller]
pub fn pool<'a>(body: &'a Value, id: &str) -> &'a Value {
    crate::common::entry(body, "nodePools", "poolId", id)
}

/// Assert a 200 and return the body.
#[track_caller]
pub fn ok(r: Resp) -> Value {
    assert_eq!(r.status, StatusCode::OK, "{:#}", r.body);
    r.body
}

/// `path` with `key=value` appended to its query.
pub fn with_query(path: &str, key: &str, value: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}{key}={value}")
}

/// Walk every page of `path` (a list whose items are under `items`) with `pageSize=size`,
/// asserting that every page but the last carries a token and the last has none.
/// Returns the pages.
pub async fn pages(
    app: &TestApp,
    user: &str,
    path: &str,
    items: &str,
    size: i64,
) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut p = with_query(path, "pageSize", &size.to_string());
        if let Some(t) = &token {
            p = with_query(&p, "pageToken", t);
        }
        let body = ok(app.get(user, &p).await);
        let page = body[items]
            .as_array()
            .unwrap_or_else(|| panic!("no {items} in {body:#}"))
            .clone();
        assert!(
            page.len() as i64 <= size,
            "page larger than pageSize: {}",
            page.len()
        );
        out.push(page);
        match body.get("nextPageToken") {
            None | Some(Value::Null) => break,
            Some(Value::String(t)) if t.is_empty() => break,
            Some(Value::String(t)) => {
                assert!(
                    out.last().is_some_and(|p| p.len() as i64 == size),
                    "a non-full page has a token"
                );
                token = Some(t.clone());
            }
            Some(other) => panic!("nextPageToken is not a string: {other}"),
        }
        assert!(out.len() < 10_000, "pagination does not end");
    }
    out
}

/// Page sizes of [`pages`], and the flattened `key` fields with duplicates asserted away.
pub async fn page_walk(
    app: &TestApp,
    user: &str,
    path: &str,
    items: &str,
    size: i64,
    key: &str,
) -> (Vec<usize>, Vec<String>) {
    let pages = pages(app, user, path, items, size).await;
    let sizes = pages.iter().map(Vec::len).collect();
    let keys: Vec<String> = pages
        .iter()
        .flatten()
        .map(|v| {
            v[key]
                .as_str()
                .unwrap_or_else(|| panic!("no {key} in {v}"))
                .to_owned()
        })
        .collect();
    let unique: HashSet<&String> = keys.iter().collect();
    assert_eq!(
        unique.len(),
        keys.len(),
        "duplicates across pages: {keys:?}"
    );
    (sizes, keys)
}

/// Names (`key` field) of the items of a list body.
pub fn names(body: &Value, items: &str, key: &str) -> Vec<String> {
    body[items]
        .as_array()
        .unwrap_or_else(|| panic!("no {items} in {body:#}"))
        .iter()
        .map(|v| v[key].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Send a raw body as `application/json`, whatever it holds (for malformed-JSON tests).
pub async fn raw_json(
    app: &TestApp,
    user: &str,
    method: reqwest::Method,
    path: &str,
    body: impl Into<reqwest::Body>,
) -> Resp {
    raw(app, user, method, path, Some("application/json"), body).await
}

/// Send a raw body with an optional content type (for malformed-request tests).
pub async fn raw(
    app: &TestApp,
    user: &str,
    method: reqwest::Method,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> Resp {
    let mut req = app.request_as(user, method, path);
    if let Some(ct) = content_type {
        req = req.header(reqwest::header::CONTENT_TYPE, ct);
    }
    TestApp::read(req.body(body).send().await.expect("request")).await
}

/// GET without any identity header.
pub async fn anonymous_get(app: &TestApp, path: &str) -> Resp {
    TestApp::read(
        app.http
            .get(app.url_of(path))
            .send()
            .await
            .expect("request"),
    )
    .await
}

/// Cancel operation `name` as `user`: `stream`, an event stream of it, sends `done` and
/// closes, which frees its place: `open_again` is served (200) within 10 s.
pub async fn cancel_frees_the_stream<F, Fut>(
    app: &TestApp,
    user: &str,
    name: &str,
    stream: reqwest::Response,
    open_again: F,
) where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = reqwest::Result<reqwest::Response>>,
{
    use std::time::{Duration, Instant};
    let r = app.op_action(user, name, "cancel").await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    let text = tokio::time::timeout(Duration::from_secs(20), stream.text())
        .await
        .expect("the stream ends with its operation")
        .unwrap();
    assert!(text.contains("event: done"), "{text}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let again = open_again().await.unwrap();
        if again.status() == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the place was never released");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
