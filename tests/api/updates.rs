//! AIP-134 update masks and AIP-154 etags on updates and deletes (issue 10).

use reqwest::Method;
use serde_json::json;

use crate::common::TestApp;
use crate::support::{acme_app, acme_cluster, expect_error, ok};

const ALICE: &str = "alice@example.com";

/// Send with an `If-Match` header.
async fn if_match(
    app: &TestApp,
    method: Method,
    path: &str,
    etag: &str,
    body: Option<serde_json::Value>,
) -> crate::common::Resp {
    let mut req = app.request_as(ALICE, method, path).header("if-match", etag);
    if let Some(b) = body {
        req = req.json(&b);
    }
    TestApp::read(req.send().await.expect("request")).await
}

#[tokio::test]
async fn update_mask_limits_the_change_to_the_masked_fields() {
    let app = acme_app(ALICE).await;
    let body = json!({"displayName": "Acme", "projects": ["acme-project", "acme-two"]});
    let t = ok(app
        .patch(ALICE, "/v1/teams/acme?updateMask=displayName", body.clone())
        .await);
    assert_eq!(t["displayName"], "Acme");
    assert_eq!(
        t["projects"],
        json!(["acme-project"]),
        "projects are not masked"
    );
    let t = ok(app
        .patch(ALICE, "/v1/teams/acme?updateMask=projects", body)
        .await);
    assert_eq!(t["projects"], json!(["acme-project", "acme-two"]));
    assert_eq!(t["displayName"], "Acme");
    // A masked field absent from the body is cleared.
    let t = ok(app
        .patch(ALICE, "/v1/teams/acme?updateMask=displayName", json!({}))
        .await);
    assert_eq!(t["displayName"], "");
    // No mask: the fields present.
    let t = ok(app
        .patch(ALICE, "/v1/teams/acme", json!({"displayName": "Back"}))
        .await);
    assert_eq!(t["displayName"], "Back");
    assert_eq!(t["projects"], json!(["acme-project", "acme-two"]));
    // Unknown paths are refused and nothing changes.
    for mask in ["colour", "displayName,teamId", "etag"] {
        let path = format!("/v1/teams/acme?updateMask={mask}");
        let r = app.patch(ALICE, &path, json!({"displayName": "No"})).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_UPDATE_MASK");
    }
    assert_eq!(
        app.get(ALICE, "/v1/teams/acme").await.body["displayName"],
        "Back"
    );
}

#[tokio::test]
async fn team_etags_are_checked_on_update_and_delete() {
    let app = acme_app(ALICE).await;
    let etag = ok(app.get(ALICE, "/v1/teams/acme").await)["etag"]
        .as_str()
        .unwrap()
        .to_owned();
    // The etag in the body is accepted (not an unknown field) and current.
    let t = ok(app
        .patch(
            ALICE,
            "/v1/teams/acme",
            json!({"displayName": "One", "etag": etag}),
        )
        .await);
    let fresh = t["etag"].as_str().unwrap().to_owned();
    assert_ne!(fresh, etag);
    // The old one is stale, in the body or in If-Match.
    let r = app
        .patch(
            ALICE,
            "/v1/teams/acme",
            json!({"displayName": "Two", "etag": etag}),
        )
        .await;
    expect_error(&r, 409, "ABORTED", "ETAG_MISMATCH");
    let bob = "/v1/teams/acme/members/bob@example.com";
    let viewer = Some(json!({"role": "VIEWER"}));
    for (method, path, body) in [
        (
            Method::PATCH,
            "/v1/teams/acme",
            Some(json!({"displayName": "Two"})),
        ),
        (Method::DELETE, "/v1/teams/acme", None),
        // Membership changes move the team's etag and check it.
        (Method::PUT, bob, viewer.clone()),
    ] {
        let r = if_match(&app, method, path, &etag, body).await;
        expect_error(&r, 409, "ABORTED", "ETAG_MISMATCH");
    }
    let r = if_match(&app, Method::PUT, bob, &fresh, viewer).await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    let r = if_match(&app, Method::DELETE, bob, &fresh, None).await;
    expect_error(&r, 409, "ABORTED", "ETAG_MISMATCH");
    assert_eq!(
        app.get(ALICE, "/v1/teams/acme").await.body["displayName"],
        "One"
    );
    // The current etag deletes.
    let now = ok(app.get(ALICE, "/v1/teams/acme").await)["etag"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = if_match(&app, Method::DELETE, "/v1/teams/acme", &now, None).await;
    assert_eq!(r.status, 204, "{:#}", r.body);
}

#[tokio::test]
async fn cluster_etags_are_checked_on_put_and_delete() {
    let app = acme_app(ALICE).await;
    acme_cluster(&app).await;
    let path = "/v1/projects/acme-project/zones/us-central1-a/clusters/kc";
    let stale = "\"0-0\"";
    for method in [Method::PUT, Method::DELETE] {
        let r = if_match(&app, method.clone(), path, stale, None).await;
        expect_error(&r, 409, "ABORTED", "ETAG_MISMATCH");
    }
    // The current etag passes the check (validateOnly: plan only, nothing changes).
    let etag = ok(app.get(ALICE, path).await)["etag"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = if_match(
        &app,
        Method::DELETE,
        &format!("{path}?validateOnly=true"),
        &etag,
        None,
    )
    .await;
    assert_ne!(r.reason(), "ETAG_MISMATCH", "{:#}", r.body);
}
