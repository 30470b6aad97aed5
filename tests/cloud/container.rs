//! GKE client against the simulator: every call (happy path, 404, 409, retryable and
//! terminal faults), operation waiting (faults, cancellation, deadline), and the
//! simulator's state machines (clock, one operation per cluster, quotas, stockouts,
//! machine/accelerator validation, strict bodies), checked through the journal.

use std::collections::BTreeMap;
use std::time::Duration;

use kineticd::cloud::gcp::types::container::{
    AddonsConfig, Cluster, GcsFuseCsiDriverConfig, NodeManagement, NodePool, Operation,
    PlacementPolicy, PrivateClusterConfig, ReleaseChannel, WorkloadIdentityConfig,
    WorkloadMetadataConfig,
};
use kineticd::cloud::gcp::{GcpClients, GcpError, RetryClass};
use kineticd::sim::clock::ClockMode;
use kineticd::sim::{Sim, SimConfig};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::gke::{autoscaled_pool, default_pool};
use crate::common::{start_sim, start_sim_with};
use crate::storage::simctl::{
    Want, advance, arm, assert_not_found, assert_unknown_field, cancel_after_first_poll,
    failed_with, journal,
};

mod pools;

pub const P: &str = "proj-1";
pub const Z: &str = "us-central1-a";
/// Deadline of waits that must succeed: generous, so load never decides a test.
const WAIT: Duration = Duration::from_secs(120);

// ---- simulator admin helpers (shared with compute.rs) ----

/// POST raw JSON to the simulator (bodies the typed clients cannot produce).
pub async fn raw_post(sim: &Sim, path: &str, body: Value) -> (u16, Value) {
    let r = kineticd::app::http_client()
        .unwrap()
        .post(format!("{}{path}", sim.url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

fn explicit() -> SimConfig {
    SimConfig {
        clock: ClockMode::Explicit,
        ..SimConfig::default()
    }
}

// ---- request builders (Kinetic's shapes) ----

fn cluster(name: &str) -> Cluster {
    Cluster {
        name: name.into(),
        release_channel: Some(ReleaseChannel {
            channel: "STABLE".into(),
        }),
        private_cluster_config: Some(PrivateClusterConfig {
            enable_private_nodes: Some(true),
            master_ipv4_cidr_block: Some("172.16.0.0/28".into()),
            ..Default::default()
        }),
        workload_identity_config: Some(WorkloadIdentityConfig {
            workload_pool: format!("{P}.svc.id.goog"),
        }),
        addons_config: Some(AddonsConfig {
            gcs_fuse_csi_driver_config: Some(GcsFuseCsiDriverConfig { enabled: true }),
        }),
        resource_labels: BTreeMap::from([("kinetic".into(), "true".into())]),
        node_pools: vec![default_pool()],
        ..Default::default()
    }
}

fn gpu_pool(name: &str, machine: &str, accel: &str, count: i64, nodes: i32) -> NodePool {
    let mut pool = autoscaled_pool(name, machine, accel, count, nodes);
    pool.management = Some(NodeManagement {
        auto_repair: Some(true),
        auto_upgrade: Some(true),
    });
    if let Some(config) = pool.config.as_mut() {
        config.labels = BTreeMap::from([("kinetic".into(), "true".into())]);
        config.oauth_scopes = vec!["https://www.googleapis.com/auth/cloud-platform".into()];
        config.max_run_duration = Some("86400s".into());
        config.workload_metadata_config = Some(WorkloadMetadataConfig {
            mode: "GKE_METADATA".into(),
        });
    }
    pool
}

fn l4_pool(name: &str, nodes: i32) -> NodePool {
    gpu_pool(name, "g2-standard-4", "nvidia-l4", 1, nodes)
}

fn tpu_pool(name: &str, machine: &str, topology: Option<&str>, nodes: i32) -> NodePool {
    let mut p = gpu_pool(name, machine, "", 0, nodes);
    p.autoscaling = None;
    p.placement_policy = topology.map(|t| PlacementPolicy {
        kind: Some("COMPACT".into()),
        tpu_topology: Some(t.into()),
    });
    p
}

async fn wait(gcp: &GcpClients, op: &Operation) -> Result<Operation, GcpError> {
    gcp.container
        .wait_operation(op, &CancellationToken::new(), WAIT)
        .await
}

/// Create `pool` in cluster `cluster` and wait for it to succeed.
async fn add_node_pool(gcp: &GcpClients, cluster: &str, pool: &NodePool) {
    let op = gcp
        .container
        .create_node_pool(P, Z, cluster, pool)
        .await
        .unwrap();
    wait(gcp, &op).await.unwrap();
}

/// Create `pool` in cluster `cluster`: its operation fails; the error.
async fn failed_node_pool(gcp: &GcpClients, cluster: &str, pool: &NodePool) -> GcpError {
    let op = gcp
        .container
        .create_node_pool(P, Z, cluster, pool)
        .await
        .unwrap();
    wait(gcp, &op).await.unwrap_err()
}

/// A RUNNING cluster `name` (speed 0).
async fn running_cluster(gcp: &GcpClients, name: &str) {
    let op = gcp
        .container
        .create_cluster(P, Z, &cluster(name))
        .await
        .unwrap();
    wait(gcp, &op).await.unwrap();
}

fn assert_retryable(r: Result<impl std::fmt::Debug, GcpError>, http: u16) {
    let e = r.expect_err("expected a retryable error");
    assert_eq!(e.http_status, http, "{e}");
    assert_eq!(e.retry, RetryClass::Retryable, "{e}");
}

fn assert_terminal(r: Result<impl std::fmt::Debug, GcpError>, http: u16) -> GcpError {
    let e = r.expect_err("expected a terminal error");
    assert_eq!(e.http_status, http, "{e}");
    assert_eq!(e.retry, RetryClass::Terminal, "{e}");
    e
}

#[tokio::test]
async fn cluster_lifecycle_and_journal() {
    let (sim, gcp) = start_sim().await;
    let want = cluster("alpha");
    let op = gcp.container.create_cluster(P, Z, &want).await.unwrap();
    assert_eq!(op.operation_type, "CREATE_CLUSTER");
    let done = wait(&gcp, &op).await.unwrap();
    assert!(done.is_done() && done.error.is_none() && done.end_time.is_some());

    let c = gcp.container.get_cluster(P, Z, "alpha").await.unwrap();
    assert_eq!(c.status.as_deref(), Some("RUNNING"));
    assert_eq!(c.location.as_deref(), Some(Z));
    let endpoint = c.endpoint.clone().unwrap();
    assert_eq!(endpoint, format!("{}/kube/{P}.{Z}.alpha", sim.url()));
    let ca = c.master_auth.unwrap().cluster_ca_certificate.unwrap();
    use base64::Engine;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(ca)
        .unwrap();
    assert_eq!(pem, kineticd::sim::kube::CA_PEM.as_bytes());
    assert_eq!(c.node_pools.len(), 1);
    assert_eq!(c.node_pools[0].status.as_deref(), Some("RUNNING"));
    assert_eq!(c.current_node_count, Some(1));
    assert_eq!(c.resource_labels, want.resource_labels);

    // The journal holds exactly the body the client sent.
    let j = journal(&sim, "container", "clusters.create").await;
    assert_eq!(j.len(), 1);
    assert_eq!(
        j[0]["body"],
        json!({"cluster": serde_json::to_value(&want).unwrap()})
    );
    assert_eq!(
        j[0]["path"],
        format!("/container/v1/projects/{P}/locations/{Z}/clusters")
    );
    assert_eq!(
        j[0]["body"]["cluster"]["nodePools"][0]["config"]["diskSizeGb"],
        50
    );

    let op = gcp.container.delete_cluster(P, Z, "alpha").await.unwrap();
    wait(&gcp, &op).await.unwrap();
    let e = gcp.container.get_cluster(P, Z, "alpha").await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert_eq!(
        sim.world()
            .kube
            .pool_node_count(&format!("{P}.{Z}.alpha"), "default-pool"),
        None
    );
}

#[tokio::test]
async fn cluster_not_found_conflict_and_invalid() {
    let (sim, gcp) = start_sim().await;
    running_cluster(&gcp, "beta").await;
    let e = gcp
        .container
        .create_cluster(P, Z, &cluster("beta"))
        .await
        .unwrap_err();
    assert!(e.is_already_exists(), "{e}");
    assert_eq!(e.retry, RetryClass::Terminal);
    assert_not_found(gcp.container.get_cluster(P, Z, "nope").await);
    assert_not_found(gcp.container.delete_cluster(P, Z, "nope").await);
    assert_not_found(gcp.container.get_operation(P, Z, "operation-0-x").await);

    for bad in ["Upper", "1abc", "ends-", &"a".repeat(41)] {
        let e = assert_terminal(gcp.container.create_cluster(P, Z, &cluster(bad)).await, 400);
        assert_eq!(e.status, "INVALID_ARGUMENT", "{bad}: {e}");
    }
    let mut wi = cluster("gamma");
    wi.workload_identity_config = Some(WorkloadIdentityConfig {
        workload_pool: "other.svc.id.goog".into(),
    });
    assert_terminal(gcp.container.create_cluster(P, Z, &wi).await, 400);
    let mut net = cluster("gamma");
    net.network = Some("kn-missing".into());
    let e = assert_terminal(gcp.container.create_cluster(P, Z, &net).await, 400);
    assert!(e.message.contains("kn-missing"), "{e}");

    // Unknown JSON fields are refused like Google does.
    let path = format!("/container/v1/projects/{P}/locations/{Z}/clusters");
    let body = json!({"cluster": {"name": "delta", "nodeCont": 1}});
    assert_unknown_field(&sim, &path, body, "nodeCont").await;
    let (status, _) = raw_post(&sim, &path, json!({"clusterr": {"name": "delta"}})).await;
    assert_eq!(status, 400);
}

/// One call on cluster `faults` (and its pool `gpu-l4-0001`) by method name.
async fn call(gcp: &GcpClients, method: &str, pool: &NodePool) -> Result<(), GcpError> {
    let c = &gcp.container;
    match method {
        "clusters.get" => c.get_cluster(P, Z, "faults").await.map(|_| ()),
        "nodePools.create" => c.create_node_pool(P, Z, "faults", pool).await.map(|_| ()),
        "nodePools.get" => c
            .get_node_pool(P, Z, "faults", "gpu-l4-0001")
            .await
            .map(|_| ()),
        "nodePools.list" => c.list_node_pools(P, Z, "faults").await.map(|_| ()),
        "nodePools.setSize" => c
            .set_node_pool_size(P, Z, "faults", "gpu-l4-0001", 1)
            .await
            .map(|_| ()),
        "nodePools.delete" => c
            .delete_node_pool(P, Z, "faults", "gpu-l4-0001")
            .await
            .map(|_| ()),
        _ => c.delete_cluster(P, Z, "faults").await.map(|_| ()),
    }
}

#[tokio::test]
async fn every_call_survives_one_503_and_reports_terminal_faults() {
    let (sim, gcp) = start_sim().await;
    let c = &gcp.container;
    // clusters.create: the faulted call changes nothing; the retry creates the cluster.
    arm(&sim, "container", "clusters.create", "HTTP_503", 1).await;
    assert_retryable(c.create_cluster(P, Z, &cluster("faults")).await, 503);
    let op = c.create_cluster(P, Z, &cluster("faults")).await.unwrap();
    arm(&sim, "container", "operations.get", "HTTP_503", 1).await;
    assert_retryable(c.get_operation(P, Z, &op.name).await, 503);
    assert!(c.get_operation(P, Z, &op.name).await.unwrap().is_done());

    let pool = l4_pool("gpu-l4-0001", 0);
    let calls = [
        "clusters.get",
        "nodePools.create",
        "nodePools.get",
        "nodePools.list",
        "nodePools.setSize",
        "nodePools.delete",
        "clusters.delete",
    ];
    for method in calls {
        for (kind, http, retry) in [
            ("HTTP_503", 503, true),
            ("HTTP_429", 429, true),
            ("QUOTA_EXCEEDED", 403, false),
        ] {
            // Creation and setSize report QUOTA_EXCEEDED through their operation.
            if kind == "QUOTA_EXCEEDED"
                && matches!(method, "nodePools.create" | "nodePools.setSize")
            {
                continue;
            }
            arm(&sim, "container", method, kind, 1).await;
            let r = call(&gcp, method, &pool).await;
            if retry {
                assert_retryable(r, http);
            } else {
                let e = assert_terminal(r, http);
                assert_eq!(e.reason, "quotaExceeded", "{method}: {e}");
            }
        }
        let ok = call(&gcp, method, &pool).await;
        ok.unwrap_or_else(|e| panic!("{method} after faults: {e}"));
    }
    // Each faulted call reached the simulator once and was journalled with its status.
    let j = journal(&sim, "container", "nodePools.get").await;
    let statuses: Vec<_> = j.iter().map(|e| e["status"].as_u64().unwrap()).collect();
    assert_eq!(statuses, [503, 429, 403, 200]);
    assert_not_found(c.get_cluster(P, Z, "faults").await);
}

#[tokio::test]
async fn wait_rides_out_polling_faults() {
    let (sim, gcp) = start_sim().await;
    let op = gcp
        .container
        .create_cluster(P, Z, &cluster("poll"))
        .await
        .unwrap();
    arm(&sim, "container", "operations.get", "HTTP_503", 1).await;
    let done = wait(&gcp, &op).await.unwrap();
    assert!(done.is_done());
    let polls = journal(&sim, "container", "operations.get").await;
    assert_eq!(polls.len(), 2, "one faulted poll, then DONE");
    assert_eq!(polls[0]["status"], 503);
    // A terminal polling error ends the wait.
    arm(&sim, "container", "operations.get", "QUOTA_EXCEEDED", 1).await;
    let e = wait(&gcp, &op).await.unwrap_err();
    assert_eq!(e.http_status, 403);
}

#[tokio::test]
async fn wait_is_cancelled_promptly_and_has_a_deadline() {
    let (sim, gcp) = start_sim_with(explicit()).await;
    let op = gcp
        .container
        .create_cluster(P, Z, &cluster("slow"))
        .await
        .unwrap();
    assert_eq!(op.status, "PENDING");
    // Cancelled once it has polled and sleeps (next poll in 0.5 s, deadline in 10 min).
    let (g, o) = (gcp.clone(), op.clone());
    cancel_after_first_poll(&sim, "container", "operations.get", |cancel| async move {
        g.container
            .wait_operation(&o, &cancel, Duration::from_secs(600))
            .await
    })
    .await;

    // The clock does not move: the deadline passes (after at least one poll, whatever
    // the load) and ends the wait, which would otherwise never end.
    let e = tokio::time::timeout(
        Duration::from_secs(60),
        gcp.container
            .wait_operation(&op, &CancellationToken::new(), Duration::from_millis(300)),
    )
    .await
    .expect("the deadline ended the wait")
    .unwrap_err();
    assert_eq!(e.reason, "LRO_DEADLINE_EXCEEDED", "{e}");
    assert_eq!(e.retry, RetryClass::Retryable);
}

#[tokio::test]
async fn operations_follow_the_clock_and_gke_is_busy_meanwhile() {
    let (sim, gcp) = start_sim_with(explicit()).await;
    let c = &gcp.container;
    let op = c.create_cluster(P, Z, &cluster("clock")).await.unwrap();
    assert_eq!(op.status, "PENDING");
    let got = c.get_cluster(P, Z, "clock").await.unwrap();
    assert_eq!(got.status.as_deref(), Some("PROVISIONING"));
    assert!(got.endpoint.is_none());

    // One operation per cluster: a second mutation is a retryable FAILED_PRECONDITION.
    let busy = c
        .create_node_pool(P, Z, "clock", &l4_pool("gpu-l4-aaaa", 0))
        .await;
    let e = failed_with(
        busy,
        400,
        Want::Status("FAILED_PRECONDITION"),
        "second mutation",
    );
    assert!(
        e.message.contains(&op.name) && e.message.contains("Please wait and try again"),
        "{e}"
    );
    assert_eq!(e.retry, RetryClass::Retryable);
    assert!(
        c.delete_cluster(P, Z, "clock")
            .await
            .unwrap_err()
            .is_retryable()
    );

    advance(&sim, 5.0).await;
    assert_eq!(
        c.get_operation(P, Z, &op.name).await.unwrap().status,
        "RUNNING"
    );
    advance(&sim, 294.0).await;
    assert_eq!(
        c.get_operation(P, Z, &op.name).await.unwrap().status,
        "RUNNING"
    );
    advance(&sim, 1.0).await;
    let done = c.get_operation(P, Z, &op.name).await.unwrap();
    assert_eq!(done.status, "DONE");
    assert_eq!(
        c.get_cluster(P, Z, "clock")
            .await
            .unwrap()
            .status
            .as_deref(),
        Some("RUNNING")
    );

    // Node pool creation takes 90 s; the pool is PROVISIONING until then.
    let op = c
        .create_node_pool(P, Z, "clock", &l4_pool("gpu-l4-aaaa", 1))
        .await
        .unwrap();
    let p = c.get_node_pool(P, Z, "clock", "gpu-l4-aaaa").await.unwrap();
    assert_eq!(p.status.as_deref(), Some("PROVISIONING"));
    let e = c
        .set_node_pool_size(P, Z, "clock", "gpu-l4-aaaa", 2)
        .await
        .unwrap_err();
    assert!(e.is_retryable(), "{e}");
    advance(&sim, 90.0).await;
    assert!(c.get_operation(P, Z, &op.name).await.unwrap().is_done());
    assert_eq!(
        c.get_node_pool(P, Z, "clock", "gpu-l4-aaaa")
            .await
            .unwrap()
            .status
            .as_deref(),
        Some("RUNNING")
    );

    // The GKE_BUSY fault looks the same to the client.
    arm(&sim, "container", "nodePools.delete", "GKE_BUSY", 1).await;
    let e = c
        .delete_node_pool(P, Z, "clock", "gpu-l4-aaaa")
        .await
        .unwrap_err();
    assert_eq!(e.status, "FAILED_PRECONDITION");
    assert!(e.is_retryable(), "{e}");
}
