//! Retries of one call (src/cloud/retry.rs) and the adaptive rate per project and API
//! (src/cloud/rate.rs), through the production Google clients against the simulator: a
//! read is sent again after a retryable answer, a write only when Google refused to
//! serve it (429), each within the budget of the handle that made it; a 429 lowers the
//! rate of that project's API.

use std::time::{Duration, Instant};

use kineticd::cloud::gcp::GcpClients;
use kineticd::cloud::gcp::types::compute::Network;
use kineticd::cloud::retry::CallBudget;
use uuid::Uuid;

use super::container::{P, Z};
use crate::common::start_sim;
use crate::storage::simctl::{arm, assert_statuses, statuses};

const R: &str = "us-central1";

/// The simulator and clients that retry as a request's calls do.
async fn retrying() -> (kineticd::sim::Sim, GcpClients) {
    let (sim, gcp) = start_sim().await;
    (
        sim,
        gcp.with_budget(CallBudget::request(Duration::from_secs(10))),
    )
}

#[tokio::test]
async fn a_read_is_sent_again_after_retryable_answers() {
    let (sim, gcp) = retrying().await;
    arm(&sim, "compute", "regions.get", "HTTP_503", 1).await;
    arm(&sim, "compute", "regions.get", "HTTP_429", 1).await;
    let region = gcp.compute.get_region(P, R).await.expect("ridden out");
    assert_eq!(region.name, R);
    assert_statuses(&sim, "compute", "regions.get", &[503, 429, 200]).await;

    // GKE's 429 (RESOURCE_EXHAUSTED, ErrorInfo RATE_LIMIT_EXCEEDED) too.
    arm(&sim, "container", "clusters.get", "HTTP_429", 2).await;
    let e = gcp.container.get_cluster(P, Z, "none").await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert_statuses(&sim, "container", "clusters.get", &[429, 429, 404]).await;
}

#[tokio::test]
async fn a_write_is_sent_again_only_when_rate_limited() {
    let (sim, gcp) = retrying().await;
    let net = Network {
        name: "kn-retry".into(),
        auto_create_subnetworks: Some(true),
        ..Network::default()
    };
    // A 503 may have done the write: the step decides (it checks first).
    arm(&sim, "compute", "networks.insert", "HTTP_503", 1).await;
    let e = gcp
        .compute
        .insert_network(P, &net, Uuid::new_v4())
        .await
        .unwrap_err();
    assert_eq!(e.http_status, 503, "{e}");
    // A 429 was not served: sent again at once.
    arm(&sim, "compute", "networks.insert", "HTTP_429", 1).await;
    gcp.compute
        .insert_network(P, &net, Uuid::new_v4())
        .await
        .expect("ridden out");
    assert_statuses(&sim, "compute", "networks.insert", &[503, 429, 200]).await;
}

#[tokio::test]
async fn retries_end_by_the_budget_deadline() {
    let (sim, gcp) = retrying().await;
    arm(&sim, "compute", "zones.get", "HTTP_503", 1000).await;
    let started = Instant::now();
    let budget = CallBudget::request(Duration::from_secs(10))
        .until(tokio::time::Instant::now() + Duration::from_millis(400));
    let e = gcp
        .with_budget(budget)
        .compute
        .get_zone(P, Z)
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(e.http_status, 503, "{e}");
    assert!(took < Duration::from_millis(600), "took {took:?}");
    let tries = statuses(&sim, "compute", "zones.get").await.len();
    assert!(tries >= 2, "sent again within the budget: {tries}");

    // One attempt when the handle says so.
    gcp.with_budget(CallBudget::once())
        .compute
        .get_zone(P, Z)
        .await
        .unwrap_err();
    assert_eq!(
        statuses(&sim, "compute", "zones.get").await.len(),
        tries + 1
    );
}

#[tokio::test]
async fn a_429_lowers_the_rate_of_that_project_api_only() {
    let (sim, gcp) = retrying().await;
    gcp.compute.get_region(P, R).await.expect("region");
    let rates = gcp.http.rates();
    let ceiling = rates.of_project(P)[0].ceiling;
    assert_eq!(
        rates.of_project(P)[0].rate,
        ceiling,
        "{:?}",
        rates.of_project(P)
    );
    arm(&sim, "compute", "regions.get", "HTTP_429", 1).await;
    gcp.compute.get_region(P, R).await.expect("ridden out");
    gcp.container.get_cluster(P, Z, "none").await.unwrap_err();
    let now = rates.of_project(P);
    let compute = now.iter().find(|r| r.api == "compute").expect("compute");
    let container = now
        .iter()
        .find(|r| r.api == "container")
        .expect("container");
    assert!(compute.rate < ceiling, "{now:?}");
    assert_eq!(container.rate, ceiling, "{now:?}");
    assert!(rates.of_project("another").is_empty());
}
