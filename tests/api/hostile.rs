//! Hostile input at the API edge (issue 10): values that once panicked a handler or
//! reached PostgreSQL unvalidated. Every answer is a Google-shaped 4xx, or the panic
//! layer's 500 with the request id; never an empty reply or a database error.

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{TestApp, start_sim};
use crate::support::{
    acme_app, acme_cluster, expect_error, expect_invalid, expect_not_found, message, meta, raw,
    raw_json, work_profile,
};

const ALICE: &str = "alice@example.com";

#[tokio::test]
async fn wait_timeouts_are_bounded_not_panics() {
    let app = acme_app(ALICE).await;
    let op = app.noop(ALICE, json!({"team": "acme", "steps": 1})).await;
    let name = op["name"].as_str().unwrap();
    for bad in ["1e20", "1e300s", "61s", "NaN", "inf", "-1s", "-0.5"] {
        let r = app
            .op_action(ALICE, name, &format!("wait?timeout={bad}"))
            .await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_TIMEOUT");
        assert!(message(&r).contains("60s"), "{bad}: {}", message(&r));
        assert_eq!(meta(&r, "limit"), "60s");
    }
    // The server is still serving.
    let r = app.op_action(ALICE, name, "wait?timeout=10ms").await;
    assert_eq!(r.status, 200, "{:#}", r.body);
}

#[tokio::test]
async fn a_handler_panic_is_a_google_500_with_the_request_id() {
    let app = TestApp::spawn().await;
    let resp = app
        .http
        .post(app.url_of("/v1/testing/panic"))
        .header("x-kinetic-user", ALICE)
        .header("x-request-id", "panic-probe-42")
        .send()
        .await
        .expect("a reply, not a dropped connection");
    let r = TestApp::read(resp).await;
    expect_error(&r, 500, "INTERNAL", "INTERNAL");
    assert_eq!(meta(&r, "requestId"), "panic-probe-42");
    assert!(message(&r).contains("panic-probe-42"), "{}", message(&r));
    assert_eq!(r.headers["x-request-id"], "panic-probe-42");
    // Without test workflows the route is not there.
    let (db, url) = crate::common::fresh_db().await;
    let prod = TestApp::spawn_with(db, url, |mut s| {
        s.test_workflows = false;
        s
    })
    .await;
    let r = prod.post(ALICE, "/v1/testing/panic", Value::Null).await;
    expect_not_found(&r, "ROUTE_NOT_FOUND");
}

#[tokio::test]
async fn simulator_clock_advance_is_bounded() {
    let (sim, _) = start_sim().await;
    let http = reqwest::Client::new();
    let url = format!("{}/sim/v1/clock:advance", sim.url());
    for body in [r#"{"seconds": 1e300}"#, r#"{"seconds": -1}"#] {
        let r = http
            .post(&url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("a reply, not a dropped connection");
        assert_eq!(r.status(), 400, "{body}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["status"], "INVALID_ARGUMENT", "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("seconds"),
            "{v}"
        );
    }
    let r = http
        .post(&url)
        .json(&json!({"seconds": 60}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn bodies_must_be_json_objects() {
    let app = TestApp::spawn().await;
    for body in [
        r#"["arr-team","T",["acme-project"]]"#,
        "null",
        "7",
        r#""x""#,
    ] {
        let r = raw_json(&app, ALICE, Method::POST, "/v1/teams", body).await;
        expect_invalid(&r, "BODY_NOT_OBJECT", "JSON object");
    }
    assert_eq!(app.get(ALICE, "/v1/teams/arr-team").await.status, 404);
    // Other body-taking routes refuse arrays too.
    app.team(ALICE, "acme", &["acme-project"]).await;
    for (method, path) in [
        (Method::PATCH, "/v1/teams/acme"),
        (Method::PUT, "/v1/teams/acme/members/bob@example.com"),
        (Method::PUT, "/v1/profiles/work"),
    ] {
        let r = raw(&app, ALICE, method, path, Some("application/json"), "[]").await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "BODY_NOT_OBJECT");
    }
}

/// Values that name nothing: NUL, invalid UTF-8, over-long, wrong shape, slashes.
const BAD_VALUES: [&str; 7] = [
    "a%00b",
    "%FF%FE",
    "%00",
    "x!y",
    "a%2Fb",
    "with%20space",
    "LONG",
];

fn bad_value(v: &str) -> String {
    if v == "LONG" {
        "a".repeat(3000)
    } else {
        v.to_owned()
    }
}

/// A valid value for each path parameter (the app is set up so these exist).
fn good_path_value(name: &str, operation: &str) -> String {
    match name {
        "team" => "acme".into(),
        "email" => "bob@example.com".into(),
        "profile" => "work".into(),
        "project" => "acme-project".into(),
        "zone" => "us-central1-a".into(),
        "cluster" => "kc".into(),
        "pool" => "pool-1".into(),
        "operation" => operation.into(),
        "spec" => "a100x4".into(),
        "webhook" => "wh-00000000".into(),
        other => panic!("no good value for path parameter {other}: add one"),
    }
}

/// A valid body for the routes that need one, so the value under test is what is judged.
fn good_body(method: &str, template: &str) -> Option<Value> {
    match (method, template) {
        ("post", "/v1/teams") => Some(json!({"teamId": "new-team"})),
        ("patch", "/v1/teams/{team}") => Some(json!({"displayName": "Acme"})),
        ("patch", "/v1/teams/{team}/policy") => Some(json!({"maxClusters": 2})),
        ("put", "/v1/teams/{team}/members/{email}") => Some(json!({"role": "VIEWER"})),
        ("put", "/v1/profiles/{profile}") => {
            Some(json!({"cluster": "projects/acme-project/zones/us-central1-a/clusters/kc"}))
        }
        ("post", t) if t.ends_with("/nodePools") || t.ends_with("/nodePools:previewCreate") => {
            Some(json!({"accelerator": "l4"}))
        }
        ("post", "/v1/teams/{team}/placements:search") => {
            Some(json!({"accelerator": "l4", "count": 1}))
        }
        ("post", "/v1/testing/noopOperations") => Some(json!({"team": "acme", "steps": 1})),
        ("post", t) if t.ends_with(":snooze") => Some(json!({"duration": "3600s"})),
        ("post", "/v1/teams/{team}/webhooks") => {
            Some(json!({"url": "https://hooks.example.com/k", "events": ["OPERATION_FINISHED"]}))
        }
        _ => None,
    }
}

/// (name, in) of every parameter of one operation of the OpenAPI document.
fn parameters(path_item: &Value, op: &Value) -> Vec<(String, String)> {
    [&path_item["parameters"], &op["parameters"]]
        .into_iter()
        .filter_map(Value::as_array)
        .flatten()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_owned(),
                p["in"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn every_path_and_query_parameter_refuses_hostile_values() {
    let app = acme_app(ALICE).await;
    app.member(ALICE, "acme", "bob@example.com", "VIEWER").await;
    acme_cluster(&app).await;
    let r = work_profile(&app, ALICE).await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    let op = app.noop(ALICE, json!({"team": "acme", "steps": 1})).await;
    let operation = op["name"]
        .as_str()
        .unwrap()
        .trim_start_matches("operations/");
    let doc: Value = serde_json::to_value(kineticd::api::openapi::document()).unwrap();
    let mut tried = 0;
    for (template, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if !["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                continue;
            }
            let params = parameters(item, op);
            for (name, place) in &params {
                let mut values: Vec<String> = BAD_VALUES.iter().map(|v| bad_value(v)).collect();
                if name == "filter" {
                    for key in ["team", "target", "createdBy", "type"] {
                        values.push(format!("{key}%3Da%00b"));
                    }
                }
                for bad in values {
                    let mut path = template.clone();
                    for (n, p) in &params {
                        if p == "path" {
                            let v = if n == name {
                                bad.clone()
                            } else {
                                good_path_value(n, operation)
                            };
                            path = path.replace(&format!("{{{n}}}"), &v);
                        }
                    }
                    if place == "query" {
                        path = format!("{path}?{name}={bad}");
                    } else if place != "path" {
                        continue;
                    }
                    let m = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                    let r = app.call(ALICE, m, &path, good_body(method, template)).await;
                    let ctx = format!("{method} {template} with {name}={bad:.60}");
                    assert!(
                        r.status == 400 || r.status == 404,
                        "{ctx}: {} {:#}",
                        r.status,
                        r.body
                    );
                    let status = if r.status == 400 {
                        "INVALID_ARGUMENT"
                    } else {
                        "NOT_FOUND"
                    };
                    expect_error(&r, r.status.as_u16(), status, r.reason());
                    tried += 1;
                }
            }
        }
    }
    assert!(tried > 200, "the sweep covered only {tried} requests");
}

/// An unsigned token in the old format (base64url of `{"q": fingerprint, "k": key}`).
fn forged_token(scope: &str, key: Value) -> String {
    use base64::Engine;
    let q = kineticd::domain::hash::fnv1a(scope.bytes());
    let payload = json!({"q": q, "k": key}).to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload)
}

#[tokio::test]
async fn forged_page_tokens_are_400_and_real_ones_survive_a_restart() {
    let app = acme_app(ALICE).await;
    for _ in 0..3 {
        app.noop(ALICE, json!({"team": "acme", "steps": 1})).await;
    }
    let forged = [
        (
            "/v1/operations",
            forged_token(
                "operations?",
                json!([
                    "-4714-11-24T00:00:00Z",
                    "00000000-0000-0000-0000-000000000000"
                ]),
            ),
        ),
        ("/v1/teams", forged_token("teams", json!("a\u{0}b"))),
        ("/v1/profiles", forged_token("profiles", json!("a\u{0}b"))),
        (
            "/v1/teams/acme/members",
            forged_token("members/acme", json!("a\u{0}b")),
        ),
    ];
    for (path, token) in &forged {
        let r = app.get(ALICE, &format!("{path}?pageToken={token}")).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_PAGE_TOKEN");
    }
    // A real token, tampered with, is refused; untouched, it works on a new app
    // instance over the same database (the key lives in the database).
    let first = app.get(ALICE, "/v1/operations?pageSize=1").await;
    let token = first.body["nextPageToken"].as_str().unwrap().to_owned();
    let mut tampered = token.clone().into_bytes();
    let last = tampered.len() - 2;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let r = app
        .get(
            ALICE,
            &format!("/v1/operations?pageSize=1&pageToken={tampered}"),
        )
        .await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_PAGE_TOKEN");
    let again = TestApp::spawn_with(app.db.clone(), app.url.clone(), |s| s).await;
    let r = again
        .get(
            ALICE,
            &format!("/v1/operations?pageSize=1&pageToken={token}"),
        )
        .await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    assert_eq!(r.body["operations"].as_array().unwrap().len(), 1);
    assert_ne!(
        r.body["operations"][0]["name"],
        first.body["operations"][0]["name"]
    );
}

#[tokio::test]
async fn names_with_nul_bytes_never_reach_the_database() {
    let app = acme_app(ALICE).await;
    for (method, path) in [
        (Method::GET, "/v1/teams/a%00b"),
        (Method::DELETE, "/v1/teams/a%00b"),
        (Method::GET, "/v1/teams/a%00b/members"),
        (Method::DELETE, "/v1/teams/a%00b/members/bob@example.com"),
        (Method::DELETE, "/v1/teams/acme/members/b%00b@example.com"),
        (Method::GET, "/v1/clusters?team=a%00b"),
        (Method::GET, "/v1/clusters?team=teams/a%00b"),
        (Method::GET, "/v1/profiles/a%00b"),
        (
            Method::GET,
            "/v1/projects/acme-project/zones/us-central1-a/clusters/kc/nodePools/a%00b",
        ),
    ] {
        let r = app.call(ALICE, method.clone(), path, None).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_NAME");
        assert!(
            !meta(&r, "field").is_empty(),
            "{method} {path}: {:#}",
            r.body
        );
    }
    let r = app
        .patch(ALICE, "/v1/teams/a%00b", json!({"displayName": "x"}))
        .await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_NAME");
    for key in ["team", "target", "createdBy", "type"] {
        let r = app
            .get(ALICE, &format!("/v1/operations?filter={key}%3Da%00b"))
            .await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_FILTER");
        assert!(message(&r).contains(key), "{key}: {}", message(&r));
    }
    let r = app.get(ALICE, "/v1/operations?filter=type%3DBOGUS").await;
    expect_invalid(&r, "INVALID_FILTER", "UP_CLUSTER");
    let r = app
        .get(
            ALICE,
            "/v1/operations?filter=team%3Dacme%20OR%20team%3Dother",
        )
        .await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_FILTER");
    assert!(
        message(&r).contains("terms are joined by AND; OR is not supported"),
        "{}",
        message(&r)
    );
    // Valid filters still work.
    let r = app
        .get(ALICE, "/v1/operations?filter=team%3Dacme%20AND%20type%3DNOOP%20AND%20createdBy%3D%22Alice%40Example.com%22")
        .await;
    assert_eq!(r.status, 200, "{:#}", r.body);
}

#[tokio::test]
async fn invalid_utf8_bodies_name_the_byte() {
    let app = TestApp::spawn().await;
    let mut body = br#"{"teamId": "ab"#.to_vec();
    body.extend([0xff, 0xfe]);
    body.extend(br#"c"}"#);
    let r = raw_json(&app, ALICE, Method::POST, "/v1/teams", body).await;
    expect_invalid(&r, "MALFORMED_JSON", "invalid UTF-8 at byte 14");
    assert!(!message(&r).contains("wrong type"), "{}", message(&r));
}

#[tokio::test]
async fn a_wrong_method_on_a_custom_method_is_405_with_allow() {
    let app = acme_app(ALICE).await;
    let op = app.noop(ALICE, json!({"team": "acme", "steps": 1})).await;
    let name = op["name"].as_str().unwrap();
    let cases = [
        (Method::GET, format!("/v1/{name}:cancel"), "POST"),
        (Method::DELETE, format!("/v1/{name}:wait"), "POST"),
        (Method::POST, format!("/v1/{name}:watch"), "GET"),
        (Method::PUT, format!("/v1/{name}:watch"), "GET"),
        (Method::GET, "/v1/profiles/work:activate".to_owned(), "POST"),
        (
            Method::DELETE,
            "/v1/profiles/work:activate".to_owned(),
            "POST",
        ),
    ];
    for (method, path, allow) in cases {
        let r = app.call(ALICE, method.clone(), &path, None).await;
        expect_error(&r, 405, "UNIMPLEMENTED", "METHOD_NOT_ALLOWED");
        assert_eq!(r.headers["allow"], allow, "{method} {path}");
    }
    // Every documented custom method is covered.
    let doc: Value = serde_json::to_value(kineticd::api::openapi::document()).unwrap();
    for (template, item) in doc["paths"].as_object().unwrap() {
        if !template.contains("}:") {
            continue;
        }
        let path = template
            .replace("{operation}", name.trim_start_matches("operations/"))
            .replace("{profile}", "work");
        let documented: Vec<String> = item
            .as_object()
            .unwrap()
            .keys()
            .map(|m| m.to_uppercase())
            .collect();
        let wrong = ["GET", "POST", "PUT", "PATCH", "DELETE"]
            .into_iter()
            .find(|m| !documented.iter().any(|d| d == m))
            .unwrap();
        let r = app
            .call(
                ALICE,
                Method::from_bytes(wrong.as_bytes()).unwrap(),
                &path,
                None,
            )
            .await;
        assert_eq!(r.status, 405, "{wrong} {path}: {:#}", r.body);
    }
}

#[tokio::test]
async fn the_openapi_document_tells_optional_bodies_and_415() {
    let doc: Value = serde_json::to_value(kineticd::api::openapi::document()).unwrap();
    let up = &doc["paths"]["/v1/projects/{project}/zones/{zone}/clusters/{cluster}"]["put"];
    assert_ne!(
        up["requestBody"]["required"], true,
        "{:#}",
        up["requestBody"]
    );
    let mut body_routes = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if op.get("requestBody").is_some() {
                body_routes += 1;
                assert!(
                    op["responses"].get("415").is_some(),
                    "{method} {path} does not document 415"
                );
            }
        }
    }
    assert!(body_routes >= 6, "{body_routes}");
    // A JSON null is "no body" too, as the document says; an array is not.
    let app = acme_app(ALICE).await;
    let path = "/v1/projects/acme-project/zones/us-central1-a/clusters/kc";
    let r = raw_json(&app, ALICE, Method::PUT, path, "null").await;
    assert_ne!(r.reason(), "BODY_NOT_OBJECT", "{:#}", r.body);
    let r = raw_json(&app, ALICE, Method::PUT, path, "[]").await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "BODY_NOT_OBJECT");
}
