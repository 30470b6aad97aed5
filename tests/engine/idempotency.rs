//! AIP-155: a repeated request id returns the original operation, concurrently too.

use reqwest::StatusCode;
use serde_json::json;

use crate::common::TestApp;
use crate::{USER, app_with_team, noop};

async fn count_ops(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM operations")
        .fetch_one(&app.db)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_identical_requests_yield_one_operation() {
    let app = app_with_team().await;
    let body = noop(2, json!({"target": "t1"}));
    let calls = (0..20).map(|_| {
        let app = &app;
        let body = body.clone();
        async move {
            app.post(
                USER,
                "/v1/testing/noopOperations?requestId=8e1f6a52-0c5e-4f6b-9d7a-1b2c3d4e5f60",
                body,
            )
            .await
        }
    });
    let results = futures::future::join_all(calls).await;
    let names: std::collections::HashSet<_> = results
        .iter()
        .map(|r| {
            assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
            r.body["name"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    assert_eq!(count_ops(&app).await, 1);
}

#[tokio::test]
async fn header_key_reuse_and_scope() {
    let app = app_with_team().await;
    app.member(USER, crate::TEAM, "other@example.com", "MEMBER")
        .await;
    let send = |user: &'static str, key: &'static str, steps: u32| {
        let app = &app;
        async move {
            let r = app
                .http
                .post(app.url_of("/v1/testing/noopOperations"))
                .header("x-kinetic-user", user)
                .header("idempotency-key", key)
                .json(&noop(steps, json!({"target": "t"})))
                .send()
                .await
                .unwrap();
            TestApp::read(r).await
        }
    };
    let a = send(USER, "key-1", 2).await;
    let b = send(USER, "key-1", 2).await;
    assert_eq!(a.body["name"], b.body["name"]);
    assert_eq!(a.body["metadata"]["requestId"], "key-1");
    // Same key, different request: refused, nothing created.
    let c = send(USER, "key-1", 3).await;
    assert_eq!(c.status, StatusCode::CONFLICT);
    assert_eq!(c.reason(), "REQUEST_ID_REUSED");
    // Keys are per caller.
    let d = send("other@example.com", "key-1", 2).await;
    assert_eq!(d.status, StatusCode::ACCEPTED);
    assert_ne!(d.body["name"], a.body["name"]);
    assert_eq!(count_ops(&app).await, 2);
    // Malformed keys are rejected.
    let e = send(USER, "bad key with spaces", 2).await;
    assert_eq!(e.status, StatusCode::BAD_REQUEST);
    assert_eq!(e.reason(), "INVALID_REQUEST_ID");
}

#[tokio::test]
async fn the_test_workflow_is_unreachable_outside_dev_and_test_mode() {
    let (db, url) = crate::common::fresh_db().await;
    let app = TestApp::spawn_with(db, url, |mut s| {
        s.test_workflows = false;
        s
    })
    .await;
    app.team(USER, crate::TEAM, &["engine-project"]).await;
    let r = app
        .post(USER, "/v1/testing/noopOperations", noop(1, json!({})))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(count_ops(&app).await, 0);
}
