//! Artifact Registry client against the simulator: repositories through long-running
//! operations, 404/409, validation, faults on the poll, cancellation.

use std::collections::BTreeMap;

use kineticd::cloud::gcp::RetryClass;
use kineticd::cloud::gcp::artifact_registry::docker_host;
use kineticd::cloud::gcp::types::artifact_registry::Repository;
use kineticd::sim::gcp::artifact_registry::OP_DELAY;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::start_sim;
use crate::storage::simctl::{
    Want, advance, arm, assert_first_grant, assert_not_found, assert_retried_once,
    assert_unknown_field, check_operation_wait, failed_with, journal, post_refused, quick_lro,
    service_account, start_explicit,
};

const PROJECT: &str = "demo-project";

fn docker(description: &str) -> Repository {
    Repository {
        format: "DOCKER".into(),
        description: description.into(),
        labels: BTreeMap::from([("kinetic".to_owned(), "true".to_owned())]),
        ..Default::default()
    }
}

#[tokio::test]
async fn create_get_delete() {
    let (sim, gcp) = start_sim().await;
    let ar = &gcp.artifact_registry;
    let cancel = CancellationToken::new();
    let op = ar
        .create_repository(PROJECT, "us", "kn-c1", &docker("Kinetic images for c1"))
        .await
        .unwrap();
    assert!(
        op.name
            .starts_with("projects/demo-project/locations/us/operations/")
    );
    assert!(op.done, "speed 0: done at once");
    let done = ar.wait_operation(op, quick_lro(), &cancel).await.unwrap();
    let response = done.response.unwrap();
    assert_eq!(
        response["@type"],
        "type.googleapis.com/google.devtools.artifactregistry.v1.Repository"
    );
    let sent = journal(&sim, "artifactregistry", "repositories.create").await;
    assert_eq!(
        sent[0]["path"],
        "/artifactregistry/v1/projects/demo-project/locations/us/repositories"
    );
    assert_eq!(sent[0]["query"], "repositoryId=kn-c1");
    assert_eq!(
        sent[0]["body"],
        json!({"format": "DOCKER", "description": "Kinetic images for c1", "labels": {"kinetic": "true"}})
    );

    let repo = ar.get_repository(PROJECT, "us", "kn-c1").await.unwrap();
    assert_eq!(
        repo.name,
        "projects/demo-project/locations/us/repositories/kn-c1"
    );
    assert_eq!(repo.format, "DOCKER");
    assert_eq!(repo.mode, "STANDARD_REPOSITORY");
    assert_eq!(repo.registry_uri, docker_host("us", PROJECT, "kn-c1"));
    assert_eq!(repo.registry_uri, "us-docker.pkg.dev/demo-project/kn-c1");

    let e = ar
        .create_repository(PROJECT, "us", "kn-c1", &docker(""))
        .await
        .unwrap_err();
    assert!(e.is_already_exists(), "{e}");
    assert_eq!(e.retry, RetryClass::Terminal);

    let op = ar.delete_repository(PROJECT, "us", "kn-c1").await.unwrap();
    ar.wait_operation(op, quick_lro(), &cancel).await.unwrap();
    let e = ar.get_repository(PROJECT, "us", "kn-c1").await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert_eq!(e.status, "NOT_FOUND");
    assert_not_found(ar.delete_repository(PROJECT, "us", "kn-c1").await);
    assert_not_found(
        ar.get_operation("projects/demo-project/locations/us/operations/nope")
            .await,
    );
}

#[tokio::test]
async fn validation_like_google() {
    let (sim, gcp) = start_sim().await;
    let ar = &gcp.artifact_registry;
    for (loc, id, format) in [
        ("us", "Kn_C1", "DOCKER"),
        ("us", "1repo", "DOCKER"),
        ("us", "repo-", "DOCKER"),
        ("mars", "kn-c1", "DOCKER"),
        ("us-central", "kn-c1", "DOCKER"),
        ("us", "kn-c1", "CONTAINER"),
        ("us", "kn-c1", ""),
    ] {
        let repo = Repository {
            format: format.into(),
            ..Default::default()
        };
        let e = failed_with(
            ar.create_repository(PROJECT, loc, id, &repo).await,
            400,
            Want::Status("INVALID_ARGUMENT"),
            &format!("{loc} {id} {format}"),
        );
        assert_eq!(e.retry, RetryClass::Terminal);
    }
    let bad_labels = Repository {
        labels: BTreeMap::from([("Kinetic".to_owned(), "x".to_owned())]),
        ..docker("")
    };
    let e = ar
        .create_repository(PROJECT, "europe-west4", "kn-c2", &bad_labels)
        .await
        .unwrap_err();
    assert_eq!(e.http_status, 400);
    assert_unknown_field(
        &sim,
        "/artifactregistry/v1/projects/demo-project/locations/us/repositories?repositoryId=kn-c3",
        json!({"format": "DOCKER", "dockerconfig": {}}),
        "dockerconfig",
    )
    .await;
    // Regions work as well as multi-regions.
    let op = ar
        .create_repository(PROJECT, "europe-west4", "kn-c2", &docker(""))
        .await
        .unwrap();
    assert!(op.done);
    ar.get_repository(PROJECT, "europe-west4", "kn-c2")
        .await
        .unwrap();
}

#[tokio::test]
async fn retryable_and_terminal_faults() {
    let (sim, gcp) = start_sim().await;
    let ar = &gcp.artifact_registry;
    ar.create_repository(PROJECT, "us", "kn-f1", &docker(""))
        .await
        .unwrap();
    arm(&sim, "artifactregistry", "repositories.get", "HTTP_503", 1).await;
    let e = ar.get_repository(PROJECT, "us", "kn-f1").await.unwrap_err();
    assert_eq!(e.http_status, 503);
    assert!(e.is_retryable());
    ar.get_repository(PROJECT, "us", "kn-f1").await.unwrap();
    assert_retried_once(&sim, "artifactregistry", "repositories.get").await;

    arm(
        &sim,
        "artifactregistry",
        "repositories.create",
        "QUOTA_EXCEEDED",
        1,
    )
    .await;
    let e = ar
        .create_repository(PROJECT, "us", "kn-f2", &docker(""))
        .await
        .unwrap_err();
    assert_eq!((e.http_status, e.reason.as_str()), (403, "quotaExceeded"));
    assert_eq!(e.retry, RetryClass::Terminal);
    assert_not_found(ar.get_repository(PROJECT, "us", "kn-f2").await);
}

#[tokio::test]
async fn operations_on_the_clock() {
    let (sim, gcp) = start_explicit().await;
    let ar = gcp.artifact_registry.clone();
    let op = ar
        .create_repository(PROJECT, "us", "kn-slow", &docker(""))
        .await
        .unwrap();
    assert!(!op.done);
    // Not visible until the create is done; a second create is still a conflict.
    assert_not_found(ar.get_repository(PROJECT, "us", "kn-slow").await);
    assert!(
        ar.create_repository(PROJECT, "us", "kn-slow", &docker(""))
            .await
            .unwrap_err()
            .is_already_exists()
    );

    // A sleeping wait is cancelled promptly; faults on the poll are ridden out until the
    // clock finishes the operation.
    let wait = |policy, cancel: CancellationToken| {
        let (client, o) = (ar.clone(), op.clone());
        async move { client.wait_operation(o, policy, &cancel).await }
    };
    let faults = [("HTTP_503", 503, 1), ("HTTP_429", 429, 1)];
    let (_, polls) = check_operation_wait(&sim, "artifactregistry", &faults, OP_DELAY, wait).await;
    assert!(polls.contains(&503) && polls.contains(&429), "{polls:?}");
    assert_eq!(polls.last(), Some(&200));
    ar.get_repository(PROJECT, "us", "kn-slow").await.unwrap();

    // Delete: still visible while the delete runs, gone once it is done.
    let op = ar
        .delete_repository(PROJECT, "us", "kn-slow")
        .await
        .unwrap();
    assert!(!op.done);
    ar.get_repository(PROJECT, "us", "kn-slow").await.unwrap();
    advance(&sim, OP_DELAY.as_secs_f64()).await;
    let done = ar
        .wait_operation(op, quick_lro(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        done.response.unwrap()["@type"],
        "type.googleapis.com/google.protobuf.Empty"
    );
    assert_not_found(ar.get_repository(PROJECT, "us", "kn-slow").await);
}

#[tokio::test]
async fn repository_policy_read_modify_write() {
    let (sim, gcp) = start_sim().await;
    let ar = gcp
        .artifact_registry
        .clone()
        .with_rmw_policy(crate::storage::simctl::quick_rmw(3));
    let cancel = CancellationToken::new();
    ar.create_repository(PROJECT, "us", "kn-c1", &docker(""))
        .await
        .unwrap();
    let p = ar
        .get_repository_iam_policy(PROJECT, "us", "kn-c1")
        .await
        .unwrap();
    assert_eq!(p.etag, "ACAB");
    let got = journal(&sim, "artifactregistry", "repositories.getIamPolicy").await;
    assert_eq!(got[0]["httpMethod"], "GET");
    assert_eq!(got[0]["query"], "options.requestedPolicyVersion=3");

    let (_, member) = service_account(&gcp, PROJECT, "kn-c1-nodes").await;
    let done = ar
        .add_repository_bindings(
            PROJECT,
            "us",
            "kn-c1",
            &[("roles/artifactregistry.reader", member.as_str())],
            &cancel,
        )
        .await
        .unwrap();
    assert!(done.has_binding("roles/artifactregistry.reader", &member));
    let (svc, set) = ("artifactregistry", "repositories.setIamPolicy");
    assert_first_grant(&sim, svc, set, "roles/artifactregistry.reader", &member).await;
    // A stale etag is an etag conflict.
    let e = ar
        .set_repository_iam_policy(PROJECT, "us", "kn-c1", &p)
        .await
        .unwrap_err();
    assert_eq!((e.http_status, e.status.as_str()), (409, "ABORTED"));
    assert!(e.is_retryable());
    // Artifact Registry's SetIamPolicyRequest has no updateMask.
    post_refused(
        &sim,
        "/artifactregistry/v1/projects/demo-project/locations/us/repositories/kn-c1:setIamPolicy",
        json!({"policy": {"bindings": []}, "updateMask": "bindings"}),
    )
    .await;
    assert_not_found(ar.get_repository_iam_policy(PROJECT, "us", "nope").await);
}
