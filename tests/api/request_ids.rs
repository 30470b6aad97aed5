//! AIP-155 request ids on the mutations that answer at once (issue 26): teams, members,
//! profiles and cancel. A retry with the same id and request gets the first answer and
//! changes nothing; the same id with another request is 409 REQUEST_ID_REUSED; a
//! concurrent identical request gets the same answer; a failed request leaves no key.

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{Resp, TestApp};
use crate::support::{acme_app, expect_error, ok};

const ALICE: &str = "alice@example.com";

async fn send(app: &TestApp, method: Method, path: &str, key: &str, body: Option<Value>) -> Resp {
    let mut req = app
        .request_as(ALICE, method, path)
        .header("idempotency-key", key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    TestApp::read(req.send().await.expect("request")).await
}

/// The same request sent twice under one idempotency key: the first answer and the retry's.
async fn send_twice(
    app: &TestApp,
    method: Method,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (Resp, Resp) {
    let first = send(app, method.clone(), path, key, body.clone()).await;
    (first, send(app, method, path, key, body).await)
}

#[tokio::test]
async fn a_retried_team_create_gets_the_first_answer() {
    let app = TestApp::spawn().await;
    let body = json!({"teamId": "retry-team", "projects": []});
    let first = app
        .post(ALICE, "/v1/teams?requestId=create-1", body.clone())
        .await;
    assert_eq!(first.status.as_u16(), 201, "{:#}", first.body);
    let again = app
        .post(ALICE, "/v1/teams?requestId=create-1", body.clone())
        .await;
    assert_eq!(again.status.as_u16(), 201, "{:#}", again.body);
    assert_eq!(again.body, first.body);
    // The header spells the same key; another request under it is refused.
    let header = send(&app, Method::POST, "/v1/teams", "create-1", Some(body)).await;
    assert_eq!(header.body, first.body);
    let other = json!({"teamId": "other-team", "projects": []});
    let r = app.post(ALICE, "/v1/teams?requestId=create-1", other).await;
    expect_error(&r, 409, "FAILED_PRECONDITION", "REQUEST_ID_REUSED");
    expect_error(
        &app.get(ALICE, "/v1/teams/other-team").await,
        404,
        "NOT_FOUND",
        "TEAM_NOT_FOUND",
    );
    // Without a key a repeat is what it always was.
    let r = create_team(&app, "/v1/teams", "retry-team").await;
    expect_error(&r, 409, "ALREADY_EXISTS", "TEAM_EXISTS");
}

#[tokio::test]
async fn concurrent_identical_creates_get_one_answer() {
    let app = TestApp::spawn().await;
    let body = json!({"teamId": "race-team", "projects": []});
    let path = "/v1/teams?requestId=race-1";
    let (a, b) = tokio::join!(
        app.post(ALICE, path, body.clone()),
        app.post(ALICE, path, body)
    );
    assert_eq!(
        (a.status.as_u16(), b.status.as_u16()),
        (201, 201),
        "{:#} {:#}",
        a.body,
        b.body
    );
    assert_eq!(a.body, b.body);
}

#[tokio::test]
async fn a_failed_request_leaves_no_key() {
    let app = acme_app(ALICE).await;
    // Refused (the team exists): the key is not kept, so a corrected retry runs.
    let r = create_team(&app, "/v1/teams?requestId=k-1", "acme").await;
    expect_error(&r, 409, "ALREADY_EXISTS", "TEAM_EXISTS");
    let r = create_team(&app, "/v1/teams?requestId=k-1", "acme2").await;
    assert_eq!(r.status.as_u16(), 201, "{:#}", r.body);
}

#[tokio::test]
async fn member_team_and_profile_changes_replay() {
    let app = acme_app(ALICE).await;
    let member = "/v1/teams/acme/members/bob@example.com";
    let put = |key: &'static str| {
        let app = &app;
        async move {
            send(
                app,
                Method::PUT,
                member,
                key,
                Some(json!({"role": "VIEWER"})),
            )
            .await
        }
    };
    let (a, b) = (put("m-1").await, put("m-1").await);
    assert_eq!(a.body, ok(b));
    let del = |key: &'static str| {
        let app = &app;
        async move { send(app, Method::DELETE, member, key, None).await }
    };
    assert_eq!(del("d-1").await.status.as_u16(), 204);
    // The retry replays the 204; without the key the member is gone (404).
    assert_eq!(del("d-1").await.status.as_u16(), 204);
    expect_error(
        &app.delete(ALICE, member).await,
        404,
        "NOT_FOUND",
        "MEMBER_NOT_FOUND",
    );

    let patch = json!({"displayName": "Acme Corp"});
    let (a, b) = send_twice(&app, Method::PATCH, "/v1/teams/acme", "p-1", Some(patch)).await;
    assert_eq!(ok(a), ok(b));

    let profile = "/v1/profiles/work";
    let body = json!({"cluster": "projects/acme-project/zones/us-central1-a/clusters/kc"});
    let (a, b) = send_twice(&app, Method::PUT, profile, "pr-1", Some(body)).await;
    assert_eq!(ok(a), ok(b));
    let activate = "/v1/profiles/work:activate";
    let (a, b) = send_twice(&app, Method::POST, activate, "pa-1", None).await;
    assert_eq!(ok(a), ok(b));
    let (a, b) = send_twice(&app, Method::DELETE, profile, "pd-1", None).await;
    assert_eq!((a.status.as_u16(), b.status.as_u16()), (204, 204));
    expect_error(
        &app.delete(ALICE, profile).await,
        404,
        "NOT_FOUND",
        "PROFILE_NOT_FOUND",
    );
    // A key reused on another route is another request.
    let r = send(&app, Method::DELETE, "/v1/profiles/other", "pd-1", None).await;
    expect_error(&r, 409, "FAILED_PRECONDITION", "REQUEST_ID_REUSED");
}

#[tokio::test]
async fn a_retried_cancel_answers_as_the_first() {
    let app = acme_app(ALICE).await;
    let noop = json!({"team": "acme", "steps": 30, "stepMillis": 1000});
    let op = app.post(ALICE, "/v1/testing/noopOperations", noop).await;
    assert_eq!(op.status.as_u16(), 202, "{:#}", op.body);
    let name = op.body["name"].as_str().unwrap().to_owned();
    let path = format!("/v1/{name}:cancel?requestId=c-1");
    let first = ok(app.post(ALICE, &path, Value::Null).await);
    let again = ok(app.post(ALICE, &path, Value::Null).await);
    assert_eq!(first, again);
    assert_eq!(first["metadata"]["cancelRequested"], true, "{first:#}");
}

/// `POST path` creating team `id` (no projects), as Alice.
async fn create_team(app: &TestApp, path: &str, id: &str) -> Resp {
    app.post(ALICE, path, json!({"teamId": id, "projects": []}))
        .await
}
