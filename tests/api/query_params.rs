//! Unknown query parameters fail closed (issue 26): a misspelt `validateOnly` is a 400
//! naming the parameter and the right spelling, and nothing runs; every documented route
//! refuses a parameter its document does not list.

use reqwest::Method;
use serde_json::json;

use crate::common::{Resp, TestApp};
use crate::support::{acme_app, expect_error, message, ok};

const ALICE: &str = "alice@example.com";
const UP: &str = "/v1/projects/acme-project/zones/us-central1-a/clusters/kc";

/// `PUT {UP}?{flag}=true` of a gpu-l4 cluster.
async fn up_with(app: &TestApp, flag: &str) -> Resp {
    let body = json!({"accelerator": "gpu-l4"});
    app.put(ALICE, &format!("{UP}?{flag}=true"), body).await
}

#[tokio::test]
async fn a_misspelt_validate_only_runs_nothing() {
    let app = acme_app(ALICE).await;
    for spelling in ["validate_only", "validateonly", "ValidateOnly"] {
        let r = up_with(&app, spelling).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "UNKNOWN_QUERY_PARAMETER");
        let info = &r.body["error"]["details"][0]["metadata"];
        assert_eq!(info["parameter"], spelling, "{:#}", r.body);
        assert_eq!(info["suggestion"], "validateOnly", "{:#}", r.body);
        assert!(
            message(&r).contains("did you mean \"validateOnly\""),
            "{}",
            message(&r)
        );
        assert!(message(&r).contains("requestId"), "{}", message(&r));
    }
    // Nothing was created or enqueued.
    expect_error(
        &app.get(ALICE, UP).await,
        404,
        "NOT_FOUND",
        "CLUSTER_NOT_FOUND",
    );
    let ops = ok(app.get(ALICE, "/v1/operations").await);
    assert_eq!(
        ops["operations"].as_array().map_or(0, Vec::len),
        0,
        "{ops:#}"
    );
    // The right spelling passes the check (this app has no cloud to preview against).
    let r = up_with(&app, "validateOnly").await;
    assert_ne!(r.reason(), "UNKNOWN_QUERY_PARAMETER", "{:#}", r.body);
}

#[tokio::test]
async fn a_parameter_of_another_method_is_refused() {
    let app = acme_app(ALICE).await;
    let r = app.get(ALICE, "/v1/teams/acme?pageSize=5").await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "UNKNOWN_QUERY_PARAMETER");
    assert!(
        message(&r).contains("takes no query parameters"),
        "{}",
        message(&r)
    );
    ok(app.get(ALICE, "/v1/teams?pageSize=5").await);
}

/// Every path of the published document, with each `{param}` filled in.
fn concrete(template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').expect("closing brace") + open;
        out.push('x');
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

#[tokio::test]
async fn every_documented_route_refuses_an_unknown_parameter() {
    let app = acme_app(ALICE).await;
    let doc = ok(app.get(ALICE, "/openapi.json").await);
    let mut checked = 0;
    for (template, item) in doc["paths"].as_object().unwrap() {
        for (method, _) in item.as_object().unwrap() {
            let method = match method.as_str() {
                "get" => Method::GET,
                "put" => Method::PUT,
                "post" => Method::POST,
                "patch" => Method::PATCH,
                "delete" => Method::DELETE,
                _ => continue,
            };
            let path = format!("{}?notAParameter=1", concrete(template));
            let r = app.call(ALICE, method.clone(), &path, None).await;
            assert_eq!(r.status.as_u16(), 400, "{method} {path}: {:#}", r.body);
            assert_eq!(
                r.body["error"]["details"][0]["reason"], "UNKNOWN_QUERY_PARAMETER",
                "{method} {path}: {:#}",
                r.body
            );
            checked += 1;
        }
    }
    assert!(checked > 30, "only {checked} routes in the document");
}
