//! The simulator's own machinery seen through the production clients: the 401
//! refresh-and-retry, fault counts and probabilities, journal filters, state dump.

use kineticd::cloud::gcp::storage::Storage;
use serde_json::json;

use crate::common::{sim_admin, start_sim};
use crate::storage::simctl::{arm, assert_statuses};

fn bucket(name: &str) -> kineticd::cloud::gcp::types::storage::Bucket {
    serde_json::from_value(json!({"name": name, "location": "US"})).unwrap()
}

#[tokio::test]
async fn an_expired_token_is_refreshed_once_and_the_call_retried() {
    let (sim, gcp) = start_sim().await;
    let storage: &Storage = &gcp.storage;
    storage
        .insert_bucket("sim-project-1", &bucket("sim-bucket-401"))
        .await
        .unwrap();
    arm(&sim, "storage", "buckets.get", "HTTP_401", 1).await;
    let b = storage
        .get_bucket("sim-bucket-401")
        .await
        .expect("retried after refresh");
    assert_eq!(b.name, "sim-bucket-401");
    assert_statuses(&sim, "storage", "buckets.get", &[401, 200]).await;
    // Two 401s in a row: refreshed once, then the error is reported (not retried forever).
    arm(&sim, "storage", "buckets.get", "HTTP_401", 2).await;
    let e = storage.get_bucket("sim-bucket-401").await.unwrap_err();
    assert_eq!(e.http_status, 401);
    assert!(!e.is_retryable());
    assert!(e.message.contains("after refreshing"), "{e}");
    assert_statuses(&sim, "storage", "buckets.get", &[401, 200, 401, 401]).await;
}

#[tokio::test]
async fn faults_fire_by_count_and_can_be_disarmed() {
    let (sim, gcp) = start_sim().await;
    let armed = sim_admin(
        &sim,
        reqwest::Method::POST,
        "/sim/v1/faults",
        Some(json!({"service": "storage", "method": "buckets.*", "kind": "HTTP_500", "count": 2})),
    )
    .await;
    assert!(
        armed["spec"].is_null() && armed["id"].is_u64(),
        "flattened: {armed}"
    );
    for _ in 0..2 {
        let e = gcp
            .storage
            .insert_bucket("sim-project-1", &bucket("sim-bucket-cnt"))
            .await
            .unwrap_err();
        assert_eq!(e.http_status, 500);
        assert!(e.is_retryable());
    }
    gcp.storage
        .insert_bucket("sim-project-1", &bucket("sim-bucket-cnt"))
        .await
        .unwrap();
    // Always-on (no count) until disarmed.
    sim_admin(
        &sim,
        reqwest::Method::POST,
        "/sim/v1/faults",
        Some(json!({"service": "*", "kind": "HTTP_429"})),
    )
    .await;
    for _ in 0..3 {
        assert_eq!(
            gcp.storage
                .get_bucket("sim-bucket-cnt")
                .await
                .unwrap_err()
                .http_status,
            429
        );
    }
    let listed = sim_admin(&sim, reqwest::Method::GET, "/sim/v1/faults", None).await;
    assert_eq!(listed["faults"].as_array().unwrap().len(), 1);
    assert_eq!(listed["faults"][0]["fired"], 3);
    sim_admin(&sim, reqwest::Method::DELETE, "/sim/v1/faults", None).await;
    gcp.storage.get_bucket("sim-bucket-cnt").await.unwrap();
    // Probability 0 never fires.
    sim_admin(
        &sim,
        reqwest::Method::POST,
        "/sim/v1/faults",
        Some(json!({"service": "storage", "kind": "HTTP_503", "probability": 0.0})),
    )
    .await;
    for _ in 0..5 {
        gcp.storage.get_bucket("sim-bucket-cnt").await.unwrap();
    }
}

#[tokio::test]
async fn journal_filters_and_state_dump() {
    let (sim, gcp) = start_sim().await;
    gcp.storage
        .insert_bucket("sim-project-1", &bucket("sim-bucket-j"))
        .await
        .unwrap();
    gcp.storage.get_bucket("sim-bucket-j").await.unwrap();
    let all = sim_admin(&sim, reqwest::Method::GET, "/sim/v1/journal", None).await;
    let entries = all["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    let e = &entries[0];
    for key in [
        "time", "service", "method", "path", "query", "body", "status",
    ] {
        assert!(e.get(key).is_some(), "journal entry lacks {key}: {e}");
    }
    assert_eq!(e["service"], "storage");
    assert_eq!(e["method"], "buckets.insert");
    assert_eq!(e["query"], "project=sim-project-1");
    assert_eq!(e["body"]["name"], "sim-bucket-j");
    let by_path = sim_admin(
        &sim,
        reqwest::Method::GET,
        "/sim/v1/journal?path=sim-bucket-j",
        None,
    )
    .await;
    assert_eq!(by_path["entries"].as_array().unwrap().len(), 1);
    let state = sim_admin(&sim, reqwest::Method::GET, "/sim/v1/state", None).await;
    assert!(
        state["storage"].to_string().contains("sim-bucket-j"),
        "{state}"
    );
    sim_admin(&sim, reqwest::Method::DELETE, "/sim/v1/journal", None).await;
    let none = sim_admin(&sim, reqwest::Method::GET, "/sim/v1/journal", None).await;
    assert_eq!(none["entries"], json!([]));
}
