//! Cancel: while queued (at once), while running (at the next step), while a step is
//! waiting on a long call (abandoned at once). Ends CANCELLED with error code 1.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{TestApp, test_worker_config};
use crate::{USER, app_with_team, app_with_worker, noop};

async fn cancel(app: &TestApp, name: &str) -> Value {
    let r = app.op_action(USER, name, "cancel").await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["metadata"]["cancelRequested"], true);
    r.body
}

fn assert_cancelled(op: &Value) {
    assert_eq!(op["done"], true, "{op}");
    assert_eq!(op["metadata"]["state"], "CANCELLED");
    assert_eq!(op["error"]["code"], 1);
    assert_eq!(op["error"]["status"], "CANCELLED");
}

#[tokio::test]
async fn cancel_while_queued_is_immediate() {
    let app = app_with_team().await; // no workers: it stays queued
    let op = app.noop(USER, noop(3, json!({}))).await;
    let after = cancel(&app, op["name"].as_str().unwrap()).await;
    assert_cancelled(&after);
    let steps = after["metadata"]["progress"]["steps"].as_array().unwrap();
    // None of them ever started: SKIPPED, saying why.
    for s in steps {
        assert_eq!(s["state"], "SKIPPED", "{s}");
        assert_eq!(s["message"], "skipped: the operation was cancelled", "{s}");
    }
    // A worker started later never runs it.
    let pool = app.workers(test_worker_config(1));
    let other = app.noop(USER, noop(1, json!({}))).await;
    app.wait_done(USER, other["name"].as_str().unwrap()).await;
    let again = app
        .get(USER, &format!("/v1/{}", op["name"].as_str().unwrap()))
        .await;
    assert_cancelled(&again.body);
    assert_eq!(again.body["metadata"]["attempt"], 0);
    pool.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn cancel_while_running_stops_at_a_step_boundary() {
    let (app, pool) = app_with_worker().await;
    // 50 steps of 400 ms: far more time than a cancel needs to land, even on a loaded
    // machine, so some steps are always left to cancel.
    let op = app.noop(USER, noop(50, json!({"stepMillis": 400}))).await;
    let name = op["name"].as_str().unwrap();
    // Wait for progress, then cancel.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let r = app.get(USER, &format!("/v1/{name}")).await;
        if r.body["metadata"]["progress"]["stepsDone"]
            .as_u64()
            .unwrap()
            >= 2
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cancel(&app, name).await;
    let done = app.wait_done(USER, name).await;
    assert_cancelled(&done);
    let steps = done["metadata"]["progress"]["steps"].as_array().unwrap();
    let done_steps = steps.iter().filter(|s| s["state"] == "DONE").count();
    assert!((2..50).contains(&done_steps), "{done_steps}");
    assert!(
        steps
            .iter()
            .all(|s| ["DONE", "CANCELLED", "SKIPPED"].contains(&s["state"].as_str().unwrap()))
    );
    // Effects match the DONE steps exactly: nothing half-applied.
    let effects = kineticd::store::operations::noop_effect_counts(&app.db)
        .await
        .unwrap();
    assert_eq!(effects.len(), done_steps);
    pool.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn cancel_abandons_a_long_wait_at_once_via_notify() {
    let app = app_with_team().await;
    // A 60 s lease means the heartbeat fallback would take 20 s: only the pushed
    // notification can end this within the wait below (15 s: ample under load, still
    // short of the fallback).
    let mut cfg = test_worker_config(1);
    cfg.lease = Duration::from_secs(60);
    let pool = app.workers(cfg);
    let op = app.noop(USER, noop(3, json!({"hangAt": 1}))).await;
    let name = op["name"].as_str().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let r = app.get(USER, &format!("/v1/{name}")).await;
        if r.body["metadata"]["progress"]["currentStep"] == "step-1" {
            break;
        }
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cancel(&app, name).await;
    let r = app.op_action(USER, name, "wait?timeout=15s").await;
    assert_cancelled(&r.body);
    let steps = &r.body["metadata"]["progress"]["steps"];
    assert_eq!(steps[0]["state"], "DONE");
    assert_eq!(steps[1]["state"], "CANCELLED");
    assert_eq!(steps[2]["state"], "SKIPPED", "never started");
    pool.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn viewers_cannot_cancel_and_strangers_cannot_see() {
    let app = app_with_team().await;
    app.member(USER, crate::TEAM, "viewer@example.com", "VIEWER")
        .await;
    let op = app.noop(USER, noop(1, json!({}))).await;
    let name = op["name"].as_str().unwrap();
    // A viewer sees the operation but cannot cancel it; a stranger cannot even see it.
    let cases = [
        (
            "viewer@example.com",
            StatusCode::FORBIDDEN,
            None,
            StatusCode::OK,
        ),
        (
            "stranger@example.com",
            StatusCode::NOT_FOUND,
            Some("OPERATION_NOT_FOUND"),
            StatusCode::NOT_FOUND,
        ),
    ];
    for (user, cancel, reason, get) in cases {
        let r = app.op_action(user, name, "cancel").await;
        assert_eq!(r.status, cancel, "{user}");
        if let Some(reason) = reason {
            assert_eq!(r.reason(), reason);
        }
        let r = app.get(user, &format!("/v1/{name}")).await;
        assert_eq!(r.status, get, "{user}");
    }
    let r = app
        .post(
            "viewer@example.com",
            "/v1/testing/noopOperations",
            noop(1, json!({})),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::FORBIDDEN,
        "a VIEWER cannot start operations"
    );
}
