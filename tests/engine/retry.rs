//! Retry by class: retryable failures are retried (visible attempts) until success;
//! a terminal failure fails the operation at once, naming the step and the reason.

use serde_json::json;

use crate::{USER, app_with_worker, noop};

#[tokio::test]
async fn retryable_failures_then_success() {
    let (app, pool) = app_with_worker().await;
    let op = app
        .noop(USER, noop(3, json!({"failRetryable": {"1": 2}})))
        .await;
    let done = app.wait_done(USER, op["name"].as_str().unwrap()).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    let steps = &done["metadata"]["progress"]["steps"];
    assert_eq!(steps[0]["attempts"], 1);
    assert_eq!(
        steps[1]["attempts"], 3,
        "two failures then success: {steps}"
    );
    assert_eq!(steps[2]["attempts"], 1);
    assert_eq!(done["metadata"]["progress"]["percent"], 100);
    // The step's effect was still applied once.
    let effects = kineticd::store::operations::noop_effect_counts(&app.db)
        .await
        .unwrap();
    assert!(effects.iter().all(|(_, _, n)| *n == 1));
    assert_eq!(effects.len(), 3);
    pool.shutdown(std::time::Duration::from_secs(5)).await;
}

#[tokio::test]
async fn terminal_failure_fails_at_once_naming_the_step() {
    let (app, pool) = app_with_worker().await;
    let op = app.noop(USER, noop(4, json!({"failTerminalAt": 1}))).await;
    let done = app.wait_done(USER, op["name"].as_str().unwrap()).await;
    assert_eq!(done["metadata"]["state"], "FAILED", "{done}");
    let err = &done["error"];
    assert_eq!(err["code"], 8, "RESOURCE_EXHAUSTED: {err}");
    assert_eq!(err["details"][0]["reason"], "QUOTA_INSUFFICIENT");
    // The old spelling, kept one release for tools that match on it.
    assert_eq!(
        err["details"][0]["metadata"]["deprecatedReason"],
        "QUOTA_EXCEEDED"
    );
    assert_eq!(err["details"][0]["metadata"]["step"], "step-1");
    assert!(err["message"].as_str().unwrap().contains("step-1"));
    let steps = &done["metadata"]["progress"]["steps"];
    assert_eq!(steps[0]["state"], "DONE");
    assert_eq!(steps[1]["state"], "FAILED");
    assert_eq!(steps[1]["attempts"], 1, "terminal errors are not retried");
    // Steps after the failed one never run: SKIPPED, saying why, and not counted done.
    for s in [&steps[2], &steps[3]] {
        assert_eq!(s["state"], "SKIPPED", "{s}");
        assert_eq!(s["attempts"], 0);
        assert_eq!(s["message"], "skipped: step step-1 failed", "{s}");
    }
    assert_eq!(done["metadata"]["progress"]["stepsDone"], 1);
    pool.shutdown(std::time::Duration::from_secs(5)).await;
}

#[tokio::test]
async fn retries_stop_at_the_attempt_budget() {
    let (app, pool) = app_with_worker().await; // max_attempts = 5
    let op = app
        .noop(USER, noop(1, json!({"failRetryable": {"0": 50}})))
        .await;
    let done = app.wait_done(USER, op["name"].as_str().unwrap()).await;
    assert_eq!(done["metadata"]["state"], "FAILED");
    assert_eq!(done["error"]["code"], 14, "UNAVAILABLE");
    assert_eq!(done["metadata"]["progress"]["steps"][0]["attempts"], 5);
    assert!(
        done["error"]["message"]
            .as_str()
            .unwrap()
            .contains("gave up after 5 attempts")
    );
    pool.shutdown(std::time::Duration::from_secs(5)).await;
}
