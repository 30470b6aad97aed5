//! Request conventions every endpoint shares: body decoding errors, limits, identity
//! header, unknown routes, custom verbs and methods.

use reqwest::Method;
use serde_json::json;

use crate::common::TestApp;
use crate::support::{
    acme_app, expect_error, expect_error_saying, expect_invalid, expect_json_only,
    expect_not_found, message, raw, raw_json, work_profile,
};

const ALICE: &str = "alice@example.com";

/// Every JSON-body endpoint, with a body that is valid except for the extra field.
fn body_endpoints() -> Vec<(Method, &'static str, serde_json::Value)> {
    vec![
        (
            Method::POST,
            "/v1/teams",
            json!({"teamId": "new-team", "projects": []}),
        ),
        (
            Method::PATCH,
            "/v1/teams/acme",
            json!({"displayName": "Acme"}),
        ),
        (
            Method::PUT,
            "/v1/teams/acme/members/bob@example.com",
            json!({"role": "VIEWER"}),
        ),
        (
            Method::PUT,
            "/v1/profiles/work",
            json!({"cluster": "projects/acme-project/zones/us-central1-a/clusters/kc"}),
        ),
    ]
}

#[tokio::test]
async fn unknown_body_fields_are_rejected_and_named() {
    let app = acme_app(ALICE).await;
    for (method, path, mut body) in body_endpoints() {
        body["colourScheme"] = json!("red");
        let r = app.call(ALICE, method.clone(), path, Some(body)).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "UNKNOWN_FIELD");
        assert!(
            message(&r).contains("colourScheme"),
            "{method} {path}: {}",
            message(&r)
        );
    }
    // Nothing was changed by the refused requests.
    let t = app.get(ALICE, "/v1/teams/acme").await;
    assert_eq!(t.body["displayName"], "");
    assert_eq!(app.get(ALICE, "/v1/teams/new-team").await.status, 404);
    assert_eq!(
        app.get(ALICE, "/v1/profiles").await.body["profiles"],
        json!([])
    );
}

#[tokio::test]
async fn malformed_json_gives_the_parse_position() {
    let app = acme_app(ALICE).await;
    for (method, path, _) in body_endpoints() {
        let r = raw_json(&app, ALICE, method.clone(), path, "{,}").await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "MALFORMED_JSON");
        assert!(
            message(&r).contains("line 1 column"),
            "{method} {path}: {}",
            message(&r)
        );
    }
    // The position is the real one, on a later line.
    let body = "{\n  \"teamId\": \"abc-team\",\n  oops\n}";
    let r = raw_json(&app, ALICE, Method::POST, "/v1/teams", body).await;
    expect_invalid(&r, "MALFORMED_JSON", "line 3 column 3");
    // An empty body is malformed too.
    let r = raw_json(&app, ALICE, Method::POST, "/v1/teams", "").await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "MALFORMED_JSON");
}

#[tokio::test]
async fn wrong_types_and_missing_fields_name_the_field() {
    let app = acme_app(ALICE).await;
    let cases = [
        (Method::POST, "/v1/teams", json!({"teamId": 42}), "teamId"),
        (
            Method::POST,
            "/v1/teams",
            json!({"teamId": "abc-team", "projects": "p"}),
            "projects",
        ),
        (Method::POST, "/v1/teams", json!({"projects": []}), "teamId"),
        (
            Method::PATCH,
            "/v1/teams/acme",
            json!({"displayName": true}),
            "displayName",
        ),
        (
            Method::PATCH,
            "/v1/teams/acme",
            json!({"projects": [1, 2]}),
            "projects",
        ),
        (
            Method::PUT,
            "/v1/teams/acme/members/bob@example.com",
            json!({"role": 3}),
            "role",
        ),
        (
            Method::PUT,
            "/v1/teams/acme/members/bob@example.com",
            json!({"role": null}),
            "role",
        ),
        (
            Method::PUT,
            "/v1/teams/acme/members/bob@example.com",
            json!({"role": ["OWNER"]}),
            "role",
        ),
        (
            Method::PUT,
            "/v1/teams/acme/members/bob@example.com",
            json!({}),
            "role",
        ),
        (
            Method::PUT,
            "/v1/profiles/work",
            json!({"cluster": ["x"]}),
            "cluster",
        ),
        (
            Method::PUT,
            "/v1/profiles/work",
            json!({"namespace": "default"}),
            "cluster",
        ),
    ];
    for (method, path, body, field) in cases {
        let r = app
            .call(ALICE, method.clone(), path, Some(body.clone()))
            .await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_FIELD");
        assert!(
            message(&r).contains(field),
            "{method} {path} {body}: {}",
            message(&r)
        );
        assert!(!message(&r).contains("not valid JSON"), "{}", message(&r));
    }
}

#[tokio::test]
async fn oversized_bodies_get_413() {
    let app = acme_app(ALICE).await;
    let big = "x".repeat(1024 * 1024);
    for (method, path, _) in body_endpoints() {
        let body = json!({"displayName": big}).to_string();
        let r = raw_json(&app, ALICE, method.clone(), path, body).await;
        expect_error(&r, 413, "INVALID_ARGUMENT", "BODY_TOO_LARGE");
        assert!(
            message(&r).contains("1 MiB"),
            "{method} {path}: {}",
            message(&r)
        );
    }
    // Just under the limit is decoded (and then refused for its content, not its size).
    let fits = json!({"displayName": "x".repeat(1024 * 1024 - 100)}).to_string();
    assert!(fits.len() < 1024 * 1024);
    let r = raw_json(&app, ALICE, Method::PATCH, "/v1/teams/acme", fits).await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_DISPLAY_NAME");
}

#[tokio::test]
async fn bodies_must_be_declared_json() {
    let app = TestApp::spawn().await;
    let body = json!({"teamId": "abc-team"}).to_string();
    for ct in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let r = raw(&app, ALICE, Method::POST, "/v1/teams", ct, body.clone()).await;
        expect_json_only(&r);
    }
    // A JSON content type with parameters is fine.
    let r = raw(
        &app,
        ALICE,
        Method::POST,
        "/v1/teams",
        Some("application/json; charset=utf-8"),
        body,
    )
    .await;
    assert_eq!(r.status, 201, "{:#}", r.body);
}

#[tokio::test]
async fn unknown_routes_verbs_and_methods() {
    let app = TestApp::spawn().await;
    for path in ["/v1/nothing-here", "/v2/teams", "/v1/teams/acme/widgets"] {
        let r = app.get(ALICE, path).await;
        expect_not_found(&r, "ROUTE_NOT_FOUND");
        assert!(message(&r).contains(path), "{}", message(&r));
    }
    // Unknown custom methods on a resource that has custom methods.
    work_profile(&app, ALICE).await;
    for path in [
        "/v1/profiles/work:explode",
        "/v1/profiles/work:ACTIVATE",
        "/v1/profiles/work",
    ] {
        let r = app.post(ALICE, path, json!({})).await;
        expect_not_found(&r, "METHOD_NOT_FOUND");
    }
    // Known paths, wrong method.
    let cases = [
        (Method::DELETE, "/v1/teams"),
        (Method::PUT, "/v1/me"),
        (Method::POST, "/v1/teams/acme"),
        (Method::PATCH, "/v1/profiles/work"),
        (Method::POST, "/v1/clusters"),
        (Method::DELETE, "/healthz"),
    ];
    for (method, path) in cases {
        let r = app.call(ALICE, method.clone(), path, None).await;
        expect_error_saying(
            &r,
            405,
            "UNIMPLEMENTED",
            "METHOD_NOT_ALLOWED",
            method.as_str(),
        );
        // RFC 9110: a 405 lists what is allowed.
        let allow = r
            .headers
            .get("allow")
            .expect("Allow header")
            .to_str()
            .unwrap();
        assert!(
            allow.split(',').any(|m| m.trim() == "GET"),
            "{path}: {allow}"
        );
        assert!(
            !allow.split(',').any(|m| m.trim() == method.as_str()),
            "{path}: {allow}"
        );
    }
}

#[tokio::test]
async fn development_identity_header() {
    let app = TestApp::spawn().await;
    // Emails are normalised to lower case.
    let me = app.get("Alice@Example.COM", "/v1/me").await;
    assert_eq!(me.status, 200);
    assert_eq!(me.body["email"], ALICE);
    // No header: the default development user.
    let r = crate::support::anonymous_get(&app, "/v1/me").await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    assert_eq!(r.body["email"], "dev@localhost");
    // Not an email: 401 with a reason, never a silent default.
    for bad in ["not-an-email", "a b@example.com", "@example.com"] {
        let r = app.get(bad, "/v1/me").await;
        expect_error(&r, 401, "UNAUTHENTICATED", "BAD_DEV_USER");
    }
}
