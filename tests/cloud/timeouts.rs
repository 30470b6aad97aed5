//! A call that never answers is given up after the configured call timeout
//! (`KINETIC_CLOUD_CALL_TIMEOUT_SECONDS`) as a retryable error, by the Google clients
//! and the clusters' Kubernetes clients alike, built as production builds them
//! ([`Cloud::new`] from [`GcpConfig::from_lookup`]). Found by the crash soak
//! (tests/soak.rs): with the timeout fixed at 60 s, every hung call stalled its step for
//! a minute, and the Kubernetes clients ignored the setting altogether.

use std::time::Duration;

use kineticd::cloud::Cloud;
use kineticd::cloud::gcp::GcpConfig;
use kineticd::cloud::gcp::config::CALL_TIMEOUT_VAR;
use kineticd::cloud::kube::manifests::ManifestConfig;
use kineticd::cloud::retry::CallBudget;

use crate::storage::simctl::arm;

/// Far below the 60 s default, far above the 0.5 s configured: finishing within it means
/// the call was given up at the configured timeout, not the default.
const BOUND: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_hung_call_is_given_up_at_the_configured_timeout_as_retryable() {
    let (sim, _) = crate::common::start_sim().await;
    let root = sim.url();
    let config = GcpConfig::from_lookup(|k| match k {
        "KINETIC_GCP_URL" => Some(root.clone()),
        k if k == CALL_TIMEOUT_VAR => Some("0.5".to_owned()),
        _ => None,
    })
    .expect("configuration");
    assert_eq!(config.call_timeout, Duration::from_millis(500));
    let cloud = Cloud::new(
        config,
        ManifestConfig::default(),
        kineticd::app::http_client().expect("http client"),
    );
    // One attempt per call: the timeout itself is under test (retries after it are
    // `retries.rs`'s).
    let cloud = cloud.with_budget(CallBudget::once());

    // Google: a bucket read that hangs.
    cloud
        .gcp
        .storage
        .insert_bucket(
            "sim-project-1",
            &serde_json::from_value(serde_json::json!({"name": "hung-bucket", "location": "US"}))
                .unwrap(),
        )
        .await
        .expect("bucket");
    arm(&sim, "storage", "buckets.get", "TIMEOUT", 1).await;
    let e = tokio::time::timeout(BOUND, cloud.gcp.storage.get_bucket("hung-bucket"))
        .await
        .expect("the hung call was given up")
        .unwrap_err();
    assert_eq!(e.http_status, 0, "{e}");
    assert!(e.message.contains("timed out"), "{e}");
    assert!(e.is_retryable(), "{e}");
    // The fault was spent: the next read answers.
    let b = cloud
        .gcp
        .storage
        .get_bucket("hung-bucket")
        .await
        .expect("answered");
    assert_eq!(b.name, "hung-bucket");

    // Kubernetes: a cluster's API server that hangs.
    sim.world().kube.add_cluster("k1");
    let k = cloud.kube.cluster(crate::kube::access(&sim, "k1"));
    k.version().await.expect("the API server answers");
    arm(&sim, "kube", "*", "TIMEOUT", 1).await;
    let e = tokio::time::timeout(BOUND, k.version())
        .await
        .expect("the hung call was given up")
        .unwrap_err();
    assert_eq!(
        e.retry(),
        kineticd::cloud::gcp::RetryClass::Retryable,
        "{e}"
    );
    k.version().await.expect("answered again");
}
