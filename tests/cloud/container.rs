//! GKE client against the simulator: every call (happy path, 404, 409, retryable and
//! terminal faults), operation waiting (faults, cancellation, deadline), and the
//! simulator's state machines (clock, one operation per cluster, quotas, stockouts,
//! machine/accelerator validation, strict bodies), checked through the journal.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kineticd::cloud::gcp::types::container::{
    AcceleratorConfig, AddonsConfig, Cluster, GcsFuseCsiDriverConfig, NodeConfig, NodeManagement,
    NodePool, NodePoolAutoscaling, NodeTaint, Operation, PlacementPolicy, PrivateClusterConfig,
    ReleaseChannel, WorkloadIdentityConfig, WorkloadMetadataConfig,
};
use kineticd::cloud::gcp::{GcpClients, GcpError, RetryClass};
use kineticd::sim::clock::ClockMode;
use kineticd::sim::{Sim, SimConfig};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{start_sim, start_sim_with};

pub const P: &str = "proj-1";
pub const Z: &str = "us-central1-a";
const WAIT: Duration = Duration::from_secs(10);

// ---- simulator admin helpers (shared with compute.rs) ----

pub async fn admin(sim: &Sim, method: reqwest::Method, path: &str, body: Value) -> Value {
    let r = kineticd::app::http_client()
        .unwrap()
        .request(method, format!("{}{path}", sim.url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{path}: {}", r.status());
    r.json().await.unwrap_or(Value::Null)
}

pub async fn arm(sim: &Sim, service: &str, method: &str, kind: &str, count: u32) {
    let body = json!({"service": service, "method": method, "kind": kind, "count": count});
    admin(sim, reqwest::Method::POST, "/sim/v1/faults", body).await;
}

pub async fn journal(sim: &Sim, service: &str, method: &str) -> Vec<Value> {
    let path = format!("/sim/v1/journal?service={service}&method={method}");
    let v = admin(sim, reqwest::Method::GET, &path, Value::Null).await;
    v["entries"].as_array().cloned().unwrap_or_default()
}

pub async fn advance(sim: &Sim, seconds: f64) {
    admin(
        sim,
        reqwest::Method::POST,
        "/sim/v1/clock:advance",
        json!({"seconds": seconds}),
    )
    .await;
}

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
        node_pools: vec![NodePool {
            name: "default-pool".into(),
            initial_node_count: Some(1),
            config: Some(NodeConfig {
                machine_type: Some("e2-standard-4".into()),
                disk_size_gb: Some(50),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn gpu_pool(name: &str, machine: &str, accel: &str, count: i64, nodes: i32) -> NodePool {
    NodePool {
        name: name.into(),
        initial_node_count: Some(nodes),
        autoscaling: Some(NodePoolAutoscaling {
            enabled: Some(true),
            min_node_count: Some(nodes),
            max_node_count: Some(nodes + 10),
            ..Default::default()
        }),
        management: Some(NodeManagement {
            auto_repair: Some(true),
            auto_upgrade: Some(true),
        }),
        config: Some(NodeConfig {
            machine_type: Some(machine.into()),
            accelerators: if accel.is_empty() {
                vec![]
            } else {
                vec![AcceleratorConfig {
                    accelerator_count: count,
                    accelerator_type: accel.into(),
                    gpu_driver_installation_config: None,
                }]
            },
            labels: BTreeMap::from([("kinetic".into(), "true".into())]),
            oauth_scopes: vec!["https://www.googleapis.com/auth/cloud-platform".into()],
            max_run_duration: Some("86400s".into()),
            workload_metadata_config: Some(WorkloadMetadataConfig {
                mode: "GKE_METADATA".into(),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
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
    assert!(
        gcp.container
            .get_cluster(P, Z, "nope")
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        gcp.container
            .delete_cluster(P, Z, "nope")
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        gcp.container
            .get_operation(P, Z, "operation-0-x")
            .await
            .unwrap_err()
            .is_not_found()
    );

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
    let (status, body) = raw_post(
        &sim,
        &path,
        json!({"cluster": {"name": "delta", "nodeCont": 1}}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nodeCont"),
        "{body}"
    );
    let (status, _) = raw_post(&sim, &path, json!({"clusterr": {"name": "delta"}})).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn node_pool_calls() {
    let (sim, gcp) = start_sim().await;
    running_cluster(&gcp, "pools").await;
    let c = &gcp.container;
    // No autoscaling: the node count is exactly what setSize asks for.
    let mut want = l4_pool("gpu-l4-1a2b", 1);
    want.autoscaling = None;
    let op = c.create_node_pool(P, Z, "pools", &want).await.unwrap();
    assert_eq!(op.operation_type, "CREATE_NODE_POOL");
    wait(&gcp, &op).await.unwrap();
    let j = journal(&sim, "container", "nodePools.create").await;
    assert_eq!(
        j[0]["body"],
        json!({"nodePool": serde_json::to_value(&want).unwrap()})
    );
    assert_eq!(
        j[0]["body"]["nodePool"]["config"]["accelerators"][0]["acceleratorCount"],
        "1"
    );

    let p = c.get_node_pool(P, Z, "pools", "gpu-l4-1a2b").await.unwrap();
    assert_eq!(p.status.as_deref(), Some("RUNNING"));
    assert_eq!(p.locations, vec![Z.to_owned()]);
    assert_eq!(
        p.config.as_ref().unwrap().machine_type.as_deref(),
        Some("g2-standard-4")
    );
    assert_eq!(p.instance_group_urls.len(), 1);
    let names: Vec<_> = c
        .list_node_pools(P, Z, "pools")
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["default-pool", "gpu-l4-1a2b"]);

    let e = c.create_node_pool(P, Z, "pools", &want).await.unwrap_err();
    assert!(e.is_already_exists(), "{e}");
    assert!(
        c.get_node_pool(P, Z, "pools", "nope")
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        c.get_node_pool(P, Z, "nocluster", "x")
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        c.list_node_pools(P, Z, "nocluster")
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        c.delete_node_pool(P, Z, "pools", "nope")
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        c.set_node_pool_size(P, Z, "pools", "nope", 1)
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        c.create_node_pool(P, Z, "nocluster", &want)
            .await
            .unwrap_err()
            .is_not_found()
    );

    // setSize moves the Kubernetes side's node count.
    let key = format!("{P}.{Z}.pools");
    assert_eq!(
        sim.world().kube.pool_node_count(&key, "gpu-l4-1a2b"),
        Some(1)
    );
    let op = c
        .set_node_pool_size(P, Z, "pools", "gpu-l4-1a2b", 3)
        .await
        .unwrap();
    assert_eq!(op.operation_type, "SET_NODE_POOL_SIZE");
    wait(&gcp, &op).await.unwrap();
    assert_eq!(
        sim.world().kube.pool_node_count(&key, "gpu-l4-1a2b"),
        Some(3)
    );
    let j = journal(&sim, "container", "nodePools.setSize").await;
    assert_eq!(j.len(), 2, "the 404 for a missing pool, then this one");
    assert_eq!(j[0]["status"], 404);
    assert_eq!(j[1]["body"], json!({"nodeCount": 3}));
    assert!(
        j[1]["path"]
            .as_str()
            .unwrap()
            .ends_with("/nodePools/gpu-l4-1a2b:setSize")
    );
    assert_eq!(
        c.get_cluster(P, Z, "pools")
            .await
            .unwrap()
            .current_node_count,
        Some(4)
    );

    let op = c
        .delete_node_pool(P, Z, "pools", "gpu-l4-1a2b")
        .await
        .unwrap();
    wait(&gcp, &op).await.unwrap();
    assert!(
        c.get_node_pool(P, Z, "pools", "gpu-l4-1a2b")
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert_eq!(sim.world().kube.pool_node_count(&key, "gpu-l4-1a2b"), None);
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
            let r = match method {
                "clusters.get" => c.get_cluster(P, Z, "faults").await.map(|_| ()),
                "nodePools.create" => c.create_node_pool(P, Z, "faults", &pool).await.map(|_| ()),
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
            };
            if retry {
                assert_retryable(r, http);
            } else {
                let e = assert_terminal(r, http);
                assert_eq!(e.reason, "quotaExceeded", "{method}: {e}");
            }
        }
        let ok = match method {
            "clusters.get" => c.get_cluster(P, Z, "faults").await.map(|_| ()),
            "nodePools.create" => c.create_node_pool(P, Z, "faults", &pool).await.map(|_| ()),
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
        };
        ok.unwrap_or_else(|e| panic!("{method} after faults: {e}"));
    }
    // Each faulted call reached the simulator once and was journalled with its status.
    let j = journal(&sim, "container", "nodePools.get").await;
    let statuses: Vec<_> = j.iter().map(|e| e["status"].as_u64().unwrap()).collect();
    assert_eq!(statuses, [503, 429, 403, 200]);
    assert!(
        c.get_cluster(P, Z, "faults")
            .await
            .unwrap_err()
            .is_not_found()
    );
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
    let (_sim, gcp) = start_sim_with(explicit()).await;
    let op = gcp
        .container
        .create_cluster(P, Z, &cluster("slow"))
        .await
        .unwrap();
    assert_eq!(op.status, "PENDING");
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let e = gcp
        .container
        .wait_operation(&op, &cancel, Duration::from_secs(60))
        .await
        .unwrap_err();
    assert_eq!(e.status, "CANCELLED", "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    let started = Instant::now();
    let e = gcp
        .container
        .wait_operation(&op, &CancellationToken::new(), Duration::from_millis(300))
        .await
        .unwrap_err();
    assert_eq!(e.reason, "LRO_DEADLINE_EXCEEDED", "{e}");
    assert_eq!(e.retry, RetryClass::Retryable);
    assert!(started.elapsed() < Duration::from_secs(2));
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
    let e = c
        .create_node_pool(P, Z, "clock", &l4_pool("gpu-l4-aaaa", 0))
        .await
        .unwrap_err();
    assert_eq!(
        (e.http_status, e.status.as_str()),
        (400, "FAILED_PRECONDITION"),
        "{e}"
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

async fn region_quota(gcp: &GcpClients, metric: &str) -> (f64, f64) {
    let r = gcp.compute.get_region(P, "us-central1").await.unwrap();
    let q = r.quota(metric).unwrap_or_else(|| panic!("no {metric}"));
    (q.usage, q.limit)
}

#[tokio::test]
async fn quota_is_consumed_by_pools_and_released_on_delete() {
    let (_sim, gcp) = start_sim().await;
    running_cluster(&gcp, "quota").await;
    let c = &gcp.container;
    let cpus_before = region_quota(&gcp, "CPUS").await.0;
    assert_eq!(cpus_before, 4.0, "default pool: 1 x e2-standard-4");
    let op = c
        .create_node_pool(
            P,
            Z,
            "quota",
            &gpu_pool("gpu-l4x2-0001", "g2-standard-24", "nvidia-l4", 2, 3),
        )
        .await
        .unwrap();
    wait(&gcp, &op).await.unwrap();
    assert_eq!(region_quota(&gcp, "NVIDIA_L4_GPUS").await, (6.0, 32.0));
    assert_eq!(region_quota(&gcp, "CPUS").await.0, 4.0 + 3.0 * 24.0);

    let mut spot = l4_pool("gpu-l4-spot", 2);
    spot.config.as_mut().unwrap().spot = Some(true);
    let op = c.create_node_pool(P, Z, "quota", &spot).await.unwrap();
    wait(&gcp, &op).await.unwrap();
    assert_eq!(
        region_quota(&gcp, "PREEMPTIBLE_NVIDIA_L4_GPUS").await.0,
        2.0
    );
    assert_eq!(region_quota(&gcp, "NVIDIA_L4_GPUS").await.0, 6.0);

    let op = c
        .create_node_pool(
            P,
            Z,
            "quota",
            &tpu_pool("tpu-v5e-0001", "ct5lp-hightpu-4t", Some("4x4"), 4),
        )
        .await
        .unwrap();
    wait(&gcp, &op).await.unwrap();
    assert_eq!(region_quota(&gcp, "TPU_LITE_PODSLICE_V5").await.0, 16.0);

    let op = c
        .delete_node_pool(P, Z, "quota", "gpu-l4x2-0001")
        .await
        .unwrap();
    wait(&gcp, &op).await.unwrap();
    assert_eq!(region_quota(&gcp, "NVIDIA_L4_GPUS").await.0, 0.0);
    let op = c.delete_cluster(P, Z, "quota").await.unwrap();
    wait(&gcp, &op).await.unwrap();
    assert_eq!(region_quota(&gcp, "CPUS").await.0, 0.0);
    assert_eq!(region_quota(&gcp, "TPU_LITE_PODSLICE_V5").await.0, 0.0);
}

#[tokio::test]
async fn quota_exceeded_ends_the_operation_with_quota_exceeded() {
    let (sim, gcp) = start_sim().await;
    running_cluster(&gcp, "short").await;
    let c = &gcp.container;
    let body = json!({"region": "us-central1", "metric": "NVIDIA_L4_GPUS", "limit": 8});
    admin(&sim, reqwest::Method::POST, "/sim/v1/quotas", body).await;
    assert_eq!(region_quota(&gcp, "NVIDIA_L4_GPUS").await, (0.0, 8.0));

    let pool = gpu_pool("gpu-l4x2-0002", "g2-standard-24", "nvidia-l4", 2, 5);
    let op = c.create_node_pool(P, Z, "short", &pool).await.unwrap();
    let e = wait(&gcp, &op).await.unwrap_err();
    assert_eq!(e.reason, "QUOTA_EXCEEDED", "{e}");
    assert_eq!(e.status, "RESOURCE_EXHAUSTED");
    assert_eq!(
        e.message,
        "Quota 'NVIDIA_L4_GPUS' exceeded. Limit: 8.0 in region us-central1."
    );
    assert_eq!(e.retry, RetryClass::Terminal);
    assert_eq!(e.method, "nodePools.create");
    let p = c
        .get_node_pool(P, Z, "short", "gpu-l4x2-0002")
        .await
        .unwrap();
    assert_eq!(p.status.as_deref(), Some("ERROR"));
    assert_eq!(p.conditions[0].code.as_deref(), Some("GCE_QUOTA_EXCEEDED"));
    assert_eq!(
        region_quota(&gcp, "NVIDIA_L4_GPUS").await.0,
        0.0,
        "an ERROR pool holds nothing"
    );

    // Scaling up past the limit fails the same way and leaves the size alone.
    let op = c
        .create_node_pool(P, Z, "short", &l4_pool("gpu-l4-0003", 4))
        .await
        .unwrap();
    wait(&gcp, &op).await.unwrap();
    let op = c
        .set_node_pool_size(P, Z, "short", "gpu-l4-0003", 9)
        .await
        .unwrap();
    assert_eq!(wait(&gcp, &op).await.unwrap_err().reason, "QUOTA_EXCEEDED");
    assert_eq!(region_quota(&gcp, "NVIDIA_L4_GPUS").await.0, 4.0);

    // The QUOTA_EXCEEDED fault produces the same operation error.
    arm(&sim, "container", "nodePools.create", "QUOTA_EXCEEDED", 1).await;
    let op = c
        .create_node_pool(P, Z, "short", &l4_pool("gpu-l4-0004", 0))
        .await
        .unwrap();
    let e = wait(&gcp, &op).await.unwrap_err();
    assert_eq!(e.reason, "QUOTA_EXCEEDED", "{e}");
    assert!(
        e.message.starts_with("Quota 'NVIDIA_L4_GPUS' exceeded."),
        "{e}"
    );
}

#[tokio::test]
async fn stockout_ends_the_operation_with_gce_stockout() {
    let (sim, gcp) = start_sim().await;
    running_cluster(&gcp, "stock").await;
    let c = &gcp.container;
    let body = json!({"zone": Z, "acceleratorType": "nvidia-l4"});
    admin(&sim, reqwest::Method::POST, "/sim/v1/stockouts", body).await;
    let op = c
        .create_node_pool(P, Z, "stock", &l4_pool("gpu-l4-0005", 1))
        .await
        .unwrap();
    let e = wait(&gcp, &op).await.unwrap_err();
    assert_eq!(e.reason, "GCE_STOCKOUT", "{e}");
    assert!(
        e.message
            .contains("does not have enough resources available"),
        "{e}"
    );
    assert_eq!(e.retry, RetryClass::Terminal);
    let p = c.get_node_pool(P, Z, "stock", "gpu-l4-0005").await.unwrap();
    assert_eq!(p.status.as_deref(), Some("ERROR"));
    assert_eq!(p.conditions[0].code.as_deref(), Some("GCE_STOCKOUT"));
    // Another accelerator in the same zone is fine.
    let op = c
        .create_node_pool(
            P,
            Z,
            "stock",
            &gpu_pool("gpu-t4-0006", "n1-standard-4", "nvidia-tesla-t4", 1, 1),
        )
        .await
        .unwrap();
    wait(&gcp, &op).await.unwrap();
    admin(
        &sim,
        reqwest::Method::DELETE,
        "/sim/v1/stockouts",
        Value::Null,
    )
    .await;

    // The STOCKOUT fault on clusters.create leaves the cluster in ERROR.
    arm(&sim, "container", "clusters.create", "STOCKOUT", 1).await;
    let mut with_gpu = cluster("stock-two");
    with_gpu.node_pools.push(l4_pool("gpu-l4-0007", 1));
    let op = c.create_cluster(P, Z, &with_gpu).await.unwrap();
    let e = wait(&gcp, &op).await.unwrap_err();
    assert_eq!(
        (e.reason.as_str(), e.method),
        ("GCE_STOCKOUT", "clusters.create"),
        "{e}"
    );
    let got = c.get_cluster(P, Z, "stock-two").await.unwrap();
    assert_eq!(got.status.as_deref(), Some("ERROR"));
    let failed = got
        .node_pools
        .iter()
        .find(|p| p.name == "gpu-l4-0007")
        .unwrap();
    assert_eq!(failed.conditions[0].code.as_deref(), Some("GCE_STOCKOUT"));
    let op = c.delete_cluster(P, Z, "stock-two").await.unwrap();
    wait(&gcp, &op).await.unwrap();
}

#[tokio::test]
async fn machine_and_accelerator_combinations_are_checked() {
    let (sim, gcp) = start_sim().await;
    running_cluster(&gcp, "shapes").await;
    let c = &gcp.container;
    let mut multi_no_compact = tpu_pool("tpu-a", "ct5lp-hightpu-4t", Some("4x4"), 4);
    multi_no_compact.placement_policy.as_mut().unwrap().kind = None;
    let mut two_accels = l4_pool("gpu-b", 0);
    let extra = two_accels.config.as_ref().unwrap().accelerators[0].clone();
    two_accels.config.as_mut().unwrap().accelerators.push(extra);
    let mut bad_taint = l4_pool("gpu-c", 0);
    bad_taint.config.as_mut().unwrap().taints = vec![NodeTaint {
        key: "k".into(),
        value: "v".into(),
        effect: "NoSchedule".into(),
    }];
    let rejected = [
        (
            "l4 x2 on g2-standard-4",
            gpu_pool("gpu-d", "g2-standard-4", "nvidia-l4", 2, 0),
        ),
        (
            "l4 on n1",
            gpu_pool("gpu-e", "n1-standard-4", "nvidia-l4", 1, 0),
        ),
        (
            "t4 on e2",
            gpu_pool("gpu-f", "e2-standard-4", "nvidia-tesla-t4", 1, 0),
        ),
        (
            "t4 x3",
            gpu_pool("gpu-g", "n1-standard-8", "nvidia-tesla-t4", 3, 0),
        ),
        (
            "a100 x2 on a2-highgpu-1g",
            gpu_pool("gpu-h", "a2-highgpu-1g", "nvidia-tesla-a100", 2, 0),
        ),
        (
            "a100-80gb on a2-highgpu",
            gpu_pool("gpu-i", "a2-highgpu-1g", "nvidia-a100-80gb", 1, 0),
        ),
        (
            "h100 x4 on a3-highgpu-8g",
            gpu_pool("gpu-j", "a3-highgpu-8g", "nvidia-h100-80gb", 4, 0),
        ),
        (
            "unknown accelerator",
            gpu_pool("gpu-k", "n1-standard-4", "nvidia-tesla-k80", 1, 0),
        ),
        (
            "zero count",
            gpu_pool("gpu-l", "g2-standard-4", "nvidia-l4", 0, 0),
        ),
        (
            "unknown machine",
            gpu_pool("gpu-m", "zz-standard-4", "", 0, 0),
        ),
        (
            "TPU topology",
            tpu_pool("tpu-n", "ct5lp-hightpu-4t", Some("3x3"), 0),
        ),
        (
            "TPU 4x4 with 3 nodes",
            tpu_pool("tpu-o", "ct5lp-hightpu-4t", Some("4x4"), 3),
        ),
        (
            "TPU with accelerators",
            gpu_pool("tpu-p", "ct5lp-hightpu-4t", "nvidia-l4", 1, 0),
        ),
        (
            "3D topology on v5e",
            tpu_pool("tpu-q", "ct5lp-hightpu-4t", Some("2x2x2"), 0),
        ),
        ("multi-host without COMPACT", multi_no_compact),
        ("two accelerator entries", two_accels),
        ("taint effect spelling", bad_taint),
        ("pool name", l4_pool("GPU", 0)),
    ];
    for (what, pool) in rejected {
        let e = assert_terminal(c.create_node_pool(P, Z, "shapes", &pool).await, 400);
        assert_eq!(e.status, "INVALID_ARGUMENT", "{what}: {e}");
        assert!(!e.message.is_empty());
    }
    let e = c
        .create_node_pool(
            P,
            Z,
            "shapes",
            &gpu_pool("gpu-d", "g2-standard-4", "nvidia-l4", 2, 0),
        )
        .await
        .unwrap_err();
    assert!(
        e.message.contains("g2-standard-4") && e.message.contains("nvidia-l4"),
        "{e}"
    );

    let accepted = [
        gpu_pool("gpu-l4x2", "g2-standard-24", "nvidia-l4", 2, 0),
        gpu_pool("gpu-l4x8", "g2-standard-96", "nvidia-l4", 8, 0),
        gpu_pool("gpu-t4", "n1-standard-4", "nvidia-tesla-t4", 1, 0),
        gpu_pool("gpu-a100x4", "a2-highgpu-4g", "nvidia-tesla-a100", 4, 0),
        gpu_pool("gpu-a100-80gb", "a2-ultragpu-1g", "nvidia-a100-80gb", 1, 0),
        gpu_pool("gpu-h100x8", "a3-highgpu-8g", "nvidia-h100-80gb", 8, 0),
        tpu_pool("tpu-v5e-4", "ct5lp-hightpu-4t", None, 1),
        tpu_pool("tpu-v5e-16", "ct5lp-hightpu-4t", Some("4x4"), 4),
        tpu_pool("tpu-v5p-8", "ct5p-hightpu-4t", Some("2x2x2"), 0),
        tpu_pool("tpu-v6e-8", "ct6e-standard-4t", Some("2x4"), 0),
        tpu_pool("tpu-v4-4", "ct4p-hightpu-4t", None, 1),
    ];
    for pool in accepted {
        let name = pool.name.clone();
        let op = c
            .create_node_pool(P, Z, "shapes", &pool)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        wait(&gcp, &op)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // Multi-host TPU pools resize by whole slices.
    let e = c
        .set_node_pool_size(P, Z, "shapes", "tpu-v5e-16", 2)
        .await
        .unwrap_err();
    assert_eq!(e.http_status, 400, "{e}");
    let op = c
        .set_node_pool_size(P, Z, "shapes", "tpu-v5e-16", 0)
        .await
        .unwrap();
    wait(&gcp, &op).await.unwrap();
    // Unknown fields in a node pool are refused too.
    let path = format!("/container/v1/projects/{P}/locations/{Z}/clusters/shapes/nodePools");
    let sim_body =
        json!({"nodePool": {"name": "x", "config": {"machineType": "e2-medium", "gpus": 1}}});
    let (status, body) = raw_post(&sim, &path, sim_body).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("gpus"));
}
