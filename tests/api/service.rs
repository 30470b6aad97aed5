//! Service endpoints: health, readiness, metrics, the OpenAPI document and the docs page.

use reqwest::Method;
use serde_json::json;

use crate::common::TestApp;
use crate::common::checks::assert_content_type;
use crate::support::{anonymous_get, expect_error, ok};

const ALICE: &str = "alice@example.com";

#[tokio::test]
async fn health_and_readiness() {
    let app = TestApp::spawn().await;
    let r = anonymous_get(&app, "/healthz").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, json!({"status": "ok"}));
    let r = anonymous_get(&app, "/readyz").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, json!({"status": "ready"}));
}

#[tokio::test]
async fn readiness_fails_when_the_database_is_gone() {
    let app = TestApp::spawn().await;
    assert_eq!(anonymous_get(&app, "/readyz").await.status, 200);
    app.db.close().await;
    let r = anonymous_get(&app, "/readyz").await;
    expect_error(&r, 503, "UNAVAILABLE", "NOT_READY");
    // Liveness does not depend on the database.
    assert_eq!(anonymous_get(&app, "/healthz").await.status, 200);
}

#[tokio::test]
async fn metrics_count_requests_by_route_template() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "metrics-team", &[]).await;
    ok(app.get(ALICE, "/v1/teams/metrics-team").await);
    let r = app.get(ALICE, "/v1/unrouted-metrics-probe").await;
    assert_eq!(r.status, 404);
    let resp = app.http.get(app.url_of("/metrics")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_content_type(resp.headers(), "text/plain");
    let text = resp.text().await.unwrap();
    assert!(
        text.contains(
            r#"kineticd_http_requests_total{route="/v1/teams/{team}",method="GET",status="200"}"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"kineticd_http_request_duration_seconds_bucket{route="/v1/teams/{team}""#),
        "{text}"
    );
    assert!(
        text.contains(r#"route="/v1/teams",method="POST",status="201""#),
        "{text}"
    );
    // Raw paths never become labels (bounded cardinality).
    assert!(!text.contains("metrics-team"), "raw path in metrics");
    assert!(
        !text.contains("unrouted-metrics-probe"),
        "raw path in metrics"
    );
}

/// A concrete path for an OpenAPI path template.
fn concrete(template: &str) -> String {
    template
        .replace("{team}", "acme")
        .replace("{email}", "bob@example.com")
        .replace("{profile}", "work")
        .replace("{project}", "acme-project")
        .replace("{zone}", "us-central1-a")
        .replace("{cluster}", "kc")
        .replace("{pool}", "gpu-l4-ab12")
}

#[tokio::test]
async fn openapi_document_describes_the_routes() {
    let app = TestApp::spawn().await;
    let r = anonymous_get(&app, "/openapi.json").await;
    assert_eq!(r.status, 200);
    let doc = r.body;
    assert!(
        doc["openapi"].as_str().unwrap_or("").starts_with("3."),
        "{doc:#}"
    );
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    // What is served is what is committed (per-operation reasons included).
    let committed: serde_json::Value =
        serde_json::from_str(&kineticd::api::openapi::document_json()).unwrap();
    assert_eq!(
        doc, committed,
        "/openapi.json differs from openapi/kineticd.json"
    );
    let paths = doc["paths"].as_object().expect("paths");
    for &p in crate::common::api_paths::DOCUMENTED {
        assert!(paths.contains_key(p), "{p} missing from the document");
    }
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());

    // Every documented operation is really routed: no ROUTE_NOT_FOUND, no 405.
    app.team(ALICE, "acme", &["acme-project"]).await;
    for (template, item) in paths {
        for (method, _) in item.as_object().unwrap() {
            let Ok(m) = Method::from_bytes(method.to_uppercase().as_bytes()) else {
                continue;
            };
            if !["GET", "PUT", "POST", "PATCH", "DELETE"].contains(&m.as_str()) {
                continue;
            }
            let body = (m != Method::GET && m != Method::DELETE).then(|| json!({}));
            let r = app.call(ALICE, m.clone(), &concrete(template), body).await;
            assert_ne!(r.status, 405, "{m} {template}: {:#}", r.body);
            assert_ne!(r.reason(), "ROUTE_NOT_FOUND", "{m} {template}");
            assert_ne!(r.reason(), "METHOD_NOT_FOUND", "{m} {template}");
            // This app has no cloud: a route that must ask it first (`up` asks GKE
            // whether the cluster exists, to adopt it) may say so, and only so.
            let cloudless = r.status == 503 && r.reason() == "CLOUD_UNAVAILABLE";
            assert!(
                r.status.as_u16() < 500 || cloudless,
                "{m} {template}: {:#}",
                r.body
            );
        }
    }
}

/// The `src`/`href` values of `attr` in an HTML page.
fn attr_values(html: &str, attr: &str) -> Vec<String> {
    let needle = format!("{attr}=\"");
    html.match_indices(&needle)
        .filter_map(|(i, _)| {
            let rest = &html[i + needle.len()..];
            rest.find('"').map(|end| rest[..end].to_owned())
        })
        .collect()
}

#[tokio::test]
async fn docs_page_is_served_locally() {
    let app = TestApp::spawn().await;
    let resp = app.http.get(app.url_of("/docs/")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_content_type(resp.headers(), "text/html");
    let html = resp.text().await.unwrap();
    assert!(html.to_lowercase().contains("swagger"), "{html}");
    // Every script and stylesheet is served by us (works with no internet).
    let assets: Vec<String> = attr_values(&html, "src")
        .into_iter()
        .chain(attr_values(&html, "href"))
        .filter(|a| a.ends_with(".js") || a.ends_with(".css"))
        .collect();
    assert!(!assets.is_empty(), "{html}");
    let mut initializer = String::new();
    for a in assets {
        assert!(!a.starts_with("http"), "remote asset {a}");
        let url = app.url_of(&format!("/docs/{}", a.trim_start_matches("./")));
        let resp = app.http.get(&url).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{url}");
        let text = resp.text().await.unwrap();
        assert!(!text.is_empty(), "{url}");
        if a.contains("initializer") {
            initializer = text;
        }
    }
    assert!(initializer.contains("/openapi.json"), "{initializer}");
}

/// The docs page cannot be framed by another site (clickjacking its "Try it out"
/// buttons, which act with the viewer's IAP session).
#[tokio::test]
async fn docs_pages_refuse_to_be_framed() {
    let app = TestApp::spawn().await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for path in [
        "/docs",
        "/docs/",
        "/docs/index.html",
        "/docs/swagger-ui.css",
    ] {
        let resp = http.get(app.url_of(path)).send().await.unwrap();
        assert!(
            resp.status().is_success() || resp.status().is_redirection(),
            "{path}: {}",
            resp.status()
        );
        let h = resp.headers();
        assert_eq!(h["x-frame-options"], "DENY", "{path}: {h:?}");
        let csp = h["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}: {h:?}");
    }
}

#[tokio::test]
async fn service_endpoints_need_no_identity() {
    let app = TestApp::spawn().await;
    for path in ["/healthz", "/readyz", "/metrics", "/openapi.json", "/docs/"] {
        let resp = app
            .http
            .get(app.url_of(path))
            .header("x-kinetic-user", "not an email")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{path}");
    }
}
