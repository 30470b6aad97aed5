//! Conventions every endpoint shares: error shape, request ids, limits, unknown routes.

use reqwest::StatusCode;
use serde_json::json;

use crate::common::TestApp;

#[tokio::test]
async fn create_team_and_read_back() {
    let app = TestApp::spawn().await;
    let t = app
        .team("alice@example.com", "ml-research", &["my-gcp-project"])
        .await;
    assert_eq!(t["name"], "teams/ml-research");
    assert_eq!(t["projects"], json!(["my-gcp-project"]));
    let me = app.get("alice@example.com", "/v1/me").await;
    assert_eq!(me.status, StatusCode::OK);
    assert_eq!(
        me.body["teams"],
        json!([{"team": "teams/ml-research", "role": "OWNER"}])
    );
    let r = app.get("bob@example.com", "/v1/teams/ml-research").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.reason(), "TEAM_NOT_FOUND");
    assert_eq!(r.body["error"]["status"], "NOT_FOUND");
}

#[tokio::test]
async fn request_ids_are_set_and_echoed() {
    let app = TestApp::spawn().await;
    let r = app.get("a@example.com", "/v1/me").await;
    assert!(r.headers.get("x-request-id").is_some());
    let resp = app
        .http
        .get(app.url_of("/healthz"))
        .header("x-request-id", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-request-id"], "abc-123");
}
