//! Service Usage client against the simulator: batchEnable operations, service state,
//! waiting (faults on the poll, cancellation, the noop operation), chunking, validation.

use kineticd::cloud::gcp::RetryClass;
use kineticd::cloud::gcp::service_usage::{ServiceUsage, wait_done};
use kineticd::cloud::gcp::types::service_usage::{NOOP_OPERATION, Operation, Status};
use kineticd::sim::gcp::service_usage::{CATALOGUE, ENABLE_DELAY};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::start_sim;
use crate::storage::simctl::{
    arm, assert_not_found, assert_unknown_field, check_operation_wait, journal, post_refused,
    quick_lro, start_explicit,
};

const PROJECT: &str = "demo-project";

/// Whether `api` is enabled in PROJECT.
async fn enabled(su: &ServiceUsage, api: &str) -> bool {
    su.get_service(PROJECT, api)
        .await
        .expect("get service")
        .is_enabled()
}
/// The APIs `up` enables.
use kineticd::domain::resource_names::APIS as UP_APIS;

#[tokio::test]
async fn enable_then_noop() {
    let (sim, gcp) = start_sim().await;
    let su = &gcp.service_usage;
    let before = su
        .get_service(PROJECT, "container.googleapis.com")
        .await
        .unwrap();
    assert_eq!(before.state, "DISABLED");
    assert!(before.name.ends_with("/services/container.googleapis.com"));

    let ops = su.batch_enable(PROJECT, &UP_APIS).await.unwrap();
    assert_eq!(ops.len(), 1);
    // Speed 0: done at once, with the enabled services in the response.
    assert!(ops[0].done, "{:?}", ops[0]);
    assert!(ops[0].name.starts_with("operations/acf."));
    assert_eq!(
        ops[0].response.as_ref().unwrap()["services"]
            .as_array()
            .unwrap()
            .len(),
        7
    );
    let sent = journal(&sim, "serviceusage", "services.batchEnable").await;
    assert_eq!(
        sent[0]["path"],
        "/serviceusage/v1/projects/demo-project/services:batchEnable"
    );
    assert_eq!(sent[0]["body"], json!({ "serviceIds": UP_APIS }));
    su.wait_operation(ops[0].clone(), quick_lro(), &CancellationToken::new())
        .await
        .unwrap();
    for api in UP_APIS {
        assert!(enabled(su, api).await, "{api}");
    }

    // Everything already enabled: the noop operation, done, no polling needed.
    let ops = su.batch_enable(PROJECT, &UP_APIS[..3]).await.unwrap();
    assert_eq!(
        ops[0],
        Operation {
            name: NOOP_OPERATION.into(),
            done: true,
            ..Default::default()
        }
    );
    su.enable_services(PROJECT, &UP_APIS, quick_lro(), &CancellationToken::new())
        .await
        .unwrap();
    assert!(
        journal(&sim, "serviceusage", "operations.get")
            .await
            .is_empty()
    );
    // Polling it anyway answers done.
    assert!(su.get_operation(NOOP_OPERATION).await.unwrap().done);
}

#[tokio::test]
async fn large_sets_are_split_into_batches_of_20() {
    let (sim, gcp) = start_sim().await;
    let all: Vec<&str> = CATALOGUE.iter().map(|(id, _)| *id).collect();
    assert!(all.len() > 20);
    gcp.service_usage
        .enable_services(PROJECT, &all, quick_lro(), &CancellationToken::new())
        .await
        .unwrap();
    let sent = journal(&sim, "serviceusage", "services.batchEnable").await;
    let sizes: Vec<usize> = sent
        .iter()
        .map(|e| e["body"]["serviceIds"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, vec![20, all.len() - 20]);
    for id in all {
        assert!(enabled(&gcp.service_usage, id).await);
    }
}

#[tokio::test]
async fn validation_like_google() {
    let (sim, gcp) = start_sim().await;
    let su = &gcp.service_usage;
    // More than 20 in one call (the client never does this).
    let ids: Vec<String> = (0..21).map(|i| format!("svc{i}.googleapis.com")).collect();
    let path = "/serviceusage/v1/projects/demo-project/services:batchEnable";
    let body = post_refused(&sim, path, json!({ "serviceIds": ids })).await;
    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
    // Unknown services: 403, like Google.
    let e = su
        .batch_enable(PROJECT, &["nosuch.googleapis.com"])
        .await
        .unwrap_err();
    assert_eq!(
        (e.http_status, e.status.as_str()),
        (403, "PERMISSION_DENIED")
    );
    assert_eq!(e.reason, "SERVICE_CONFIG_NOT_FOUND_OR_PERMISSION_DENIED");
    assert_eq!(e.retry, RetryClass::Terminal);
    let e = su
        .get_service(PROJECT, "nosuch.googleapis.com")
        .await
        .unwrap_err();
    assert_eq!(e.http_status, 403);
    // Malformed IDs and empty batches: 400.
    let e = su.batch_enable(PROJECT, &["Compute"]).await.unwrap_err();
    assert_eq!(
        (e.http_status, e.status.as_str()),
        (400, "INVALID_ARGUMENT")
    );
    post_refused(&sim, path, json!({ "serviceIds": [] })).await;
    // Unknown JSON field.
    assert_unknown_field(
        &sim,
        path,
        json!({ "serviceIDs": ["compute.googleapis.com"] }),
        "serviceIDs",
    )
    .await;
    // Nothing was enabled by any of it.
    assert!(!enabled(su, "compute.googleapis.com").await);
    assert_not_found(su.get_operation("operations/acf.p2-nope").await);
}

#[tokio::test]
async fn retryable_and_terminal_faults() {
    let (sim, gcp) = start_sim().await;
    let su = &gcp.service_usage;
    arm(&sim, "serviceusage", "services.get", "HTTP_503", 1).await;
    let e = su
        .get_service(PROJECT, "compute.googleapis.com")
        .await
        .unwrap_err();
    assert_eq!(e.http_status, 503);
    assert!(e.is_retryable());
    su.get_service(PROJECT, "compute.googleapis.com")
        .await
        .unwrap();

    arm(
        &sim,
        "serviceusage",
        "services.batchEnable",
        "QUOTA_EXCEEDED",
        1,
    )
    .await;
    let e = su.batch_enable(PROJECT, &UP_APIS).await.unwrap_err();
    assert_eq!((e.http_status, e.reason.as_str()), (403, "quotaExceeded"));
    assert_eq!(e.retry, RetryClass::Terminal);
    assert!(!enabled(su, "compute.googleapis.com").await);
}

#[tokio::test]
async fn waiting_rides_out_poll_faults_and_stops_on_cancel() {
    let (sim, gcp) = start_explicit().await;
    let su = gcp.service_usage.clone();
    let ops = su
        .batch_enable(PROJECT, &["container.googleapis.com"])
        .await
        .unwrap();
    let op = ops[0].clone();
    assert!(!op.done, "explicit clock: still running");
    assert!(!enabled(&su, "container.googleapis.com").await);

    // A sleeping wait is cancelled promptly; faults on the poll are ridden out while the
    // operation runs; the clock moves; the wait ends done.
    let wait = |policy, cancel: CancellationToken| {
        let (client, o) = (su.clone(), op.clone());
        async move { client.wait_operation(o, policy, &cancel).await }
    };
    let faults = [("HTTP_503", 503, 2)];
    let (done, polls) =
        check_operation_wait(&sim, "serviceusage", &faults, ENABLE_DELAY, wait).await;
    assert!(done.done);
    assert!(
        polls.iter().filter(|s| **s == 503).count() == 2,
        "{polls:?}"
    );
    assert_eq!(polls.last(), Some(&200));
    assert!(enabled(&su, "container.googleapis.com").await);
}

#[tokio::test]
async fn a_failed_operation_is_an_error() {
    let op = Operation {
        name: "operations/acf.p2-1-x".into(),
        done: true,
        error: Some(Status {
            code: 9,
            message: "The billing account for the owning project is disabled in state absent"
                .into(),
            details: vec![json!({
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "UREQ_PROJECT_BILLING_NOT_FOUND",
                "domain": "serviceusage.googleapis.com",
            })],
        }),
        ..Default::default()
    };
    let e = wait_done(
        "serviceusage",
        op,
        quick_lro(),
        &CancellationToken::new(),
        |_| async { unreachable!("a done operation is not polled") },
    )
    .await
    .unwrap_err();
    assert_eq!(
        (e.status.as_str(), e.reason.as_str()),
        ("FAILED_PRECONDITION", "UREQ_PROJECT_BILLING_NOT_FOUND")
    );
    assert_eq!(e.retry, RetryClass::Terminal);
}
