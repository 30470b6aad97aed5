//! `POST .../clusters/{c}:diagnose` end to end: a cluster made by `up` plus an L4 pool
//! through the workers, diagnosed healthy (every check OK, only reads in the simulator's
//! journal, no operation); then each fault injected in the simulator on its own (the
//! router's NAT removed, the LWS controller held unavailable, the driver installer held
//! unready, a node NotReady or under pressure, the L4 quota at its usage, a Service
//! Usage read that hangs, a pod no node can take)
//! makes exactly its check WARN or FAIL with a fix that names the remedy; refusals.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kineticd::cloud::kube::ClusterAccess;
use kineticd::model::diagnose::CHECK_IDS;
use kube::Api;
use kube::api::{ListParams, PostParams};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{Resp, sim_admin};
use crate::support::{Env, OWNER, PROJECT, ZONE, cluster_path, env};

const C: &str = "doc";
const VIEWER: &str = "viewer@example.com";
const STRANGER: &str = "stranger@example.com";

async fn diagnose_as(env: &Env, user: &str, cluster: &str, query: &str) -> Resp {
    // The `access` check is OK once the syncs of the roster are done.
    env.syncs_settled().await;
    let path = format!("{}:diagnose{query}", cluster_path(cluster));
    env.app.post(user, &path, json!({})).await
}

/// Diagnose `C` as the owner (200 asserted): check id -> the check.
async fn diagnose(env: &Env, query: &str) -> (BTreeMap<String, Value>, Value) {
    let r = diagnose_as(env, OWNER, C, query).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let checks: BTreeMap<String, Value> = r.body["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_owned(), c.clone()))
        .collect();
    let ids = crate::common::ids(&r.body, "checks", "id");
    assert_eq!(ids, CHECK_IDS, "every id once, in order");
    (checks, r.body)
}

/// Asserts every check but those in `except` is OK.
#[track_caller]
fn others_ok(checks: &BTreeMap<String, Value>, except: &[&str]) {
    for (id, c) in checks {
        if !except.contains(&id.as_str()) {
            assert_eq!(c["status"], "OK", "{id}: {c:#}");
        }
    }
}

#[track_caller]
fn has(c: &Value, status: &str, message: &[&str], fix: &[&str]) {
    assert_eq!(c["status"], status, "{c:#}");
    let (m, f) = (c["message"].as_str().unwrap(), c["fix"].as_str().unwrap());
    for t in message {
        assert!(m.contains(t), "message lacks {t:?}: {c:#}");
    }
    for t in fix {
        assert!(f.contains(t), "fix lacks {t:?}: {c:#}");
    }
}

/// `up` (CPU only) then an L4 pool of at least one node, both through the workers.
async fn healthy(env: &Env) -> String {
    env.up_ok(C, json!({"accelerator": "cpu"})).await;
    let op = env
        .add_pool(C, json!({"accelerator": "l4", "minNodes": 1}))
        .await;
    env.ok(&op).await;
    env.pools(C).await["nodePools"][0]["poolId"]
        .as_str()
        .expect("pool id")
        .to_owned()
}

/// The simulated cluster's Kubernetes key (the last segment of its endpoint).
async fn kube_key(env: &Env) -> (String, kineticd::cloud::kube::KubeCluster) {
    let gke = env.gke_cluster(C).await;
    let endpoint = gke.endpoint.clone().expect("endpoint");
    let key = endpoint.rsplit('/').next().unwrap().to_owned();
    let access = ClusterAccess::for_gke(&gke).expect("access");
    (key, env.app.state.cloud.kube.cluster(access))
}

async fn ail(env: &Env, key: &str, body: Value) {
    sim_admin(
        &env.sim,
        reqwest::Method::POST,
        &format!("/sim/v1/kube/{key}/ailments"),
        Some(body),
    )
    .await;
}

async fn heal(env: &Env, key: &str) {
    sim_admin(
        &env.sim,
        reqwest::Method::DELETE,
        &format!("/sim/v1/kube/{key}/ailments"),
        None,
    )
    .await;
}

async fn operation_count(env: &Env) -> usize {
    let r = env.app.get(OWNER, "/v1/operations?pageSize=100").await;
    r.body["operations"].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn healthy_cluster_is_all_ok_read_only_and_refused_to_strangers() {
    let env = env().await;
    healthy(&env).await;
    env.app.member(OWNER, "ml-team", VIEWER, "VIEWER").await;
    env.syncs_settled().await;
    let ops_before = operation_count(&env).await;
    sim_admin(&env.sim, reqwest::Method::DELETE, "/sim/v1/journal", None).await;

    let r = diagnose_as(&env, VIEWER, C, "").await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "a viewer may diagnose: {}",
        r.body
    );
    crate::common::assert_live_read_timings(&r);
    let body = r.body;
    for c in body["checks"].as_array().unwrap() {
        assert_eq!(c["status"], "OK", "{c:#}");
        assert!(!c["message"].as_str().unwrap().is_empty(), "{c:#}");
        assert_eq!(c["fix"], "", "{c:#}");
    }
    assert_eq!(body["summary"]["ok"], CHECK_IDS.len());
    assert_eq!(body["summary"]["verdict"], "HEALTHY");
    assert_eq!(
        body["name"],
        format!("projects/{PROJECT}/zones/{ZONE}/clusters/{C}")
    );
    let (checks, _) = diagnose(&env, "").await;
    // The figures are there: the L4 pool's node, the quota in use.
    has(
        &checks["node-pools"],
        "OK",
        &["1 of 1 wanted nodes Ready"],
        &[],
    );
    has(
        &checks["quota"],
        "OK",
        &["NVIDIA_L4_GPUS 1 of 32 used"],
        &[],
    );
    has(
        &checks["nvidia-driver"],
        "OK",
        &["1/1 ready", "1 GPU nodes"],
        &[],
    );
    has(&checks["apis"], "OK", &["all 7 APIs"], &[]);

    // Read-only: Google answered GETs and getIamPolicy only, Kubernetes GETs (and
    // LISTs) only, and no operation was created.
    let journal = env.journal("", "").await;
    assert!(!journal.is_empty());
    for e in &journal {
        let read = e["httpMethod"] == "GET"
            || e["method"]
                .as_str()
                .is_some_and(|m| m.ends_with("getIamPolicy"));
        assert!(read, "a write while diagnosing: {e}");
    }
    assert!(
        journal.iter().any(|e| e["service"] == "kube"),
        "Kubernetes was read"
    );
    assert_eq!(operation_count(&env).await, ops_before, "no operation");

    // Refusals: someone outside the team, an unknown cluster, a bad checkTimeout.
    let r = diagnose_as(&env, STRANGER, C, "").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let r = diagnose_as(&env, OWNER, "nope", "").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    assert_eq!(r.reason(), "CLUSTER_NOT_FOUND");
    for bad in [
        "?checkTimeout=0s",
        "?checkTimeout=31s",
        "?checkTimeout=soon",
    ] {
        let r = diagnose_as(&env, OWNER, C, bad).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}: {}", r.body);
        assert_eq!(r.reason(), "INVALID_TIMEOUT");
    }
    let r = env
        .app
        .call(
            OWNER,
            reqwest::Method::GET,
            &format!("{}:diagnose", cluster_path(C)),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{}", r.body);
}

#[tokio::test]
async fn each_fault_fails_its_check_and_names_the_fix() {
    let env = env().await;
    let pool = healthy(&env).await;
    let (key, k) = kube_key(&env).await;

    // The router's NAT removed behind kineticd's back.
    sim_admin(
        &env.sim,
        reqwest::Method::DELETE,
        &format!(
            "/sim/v1/compute/projects/{PROJECT}/regions/us-central1/routers/kn-{C}-router/nats"
        ),
        None,
    )
    .await;
    let (checks, body) = diagnose(&env, "").await;
    has(
        &checks["nat"],
        "FAIL",
        &[&format!(
            "kn-{C}-router has no Cloud NAT kn-{C}-nat (0 NATs)"
        )],
        &[
            "run up again (PUT /v1/",
            &format!("routers nats create kn-{C}-nat"),
        ],
    );
    others_ok(&checks, &["nat"]);
    assert_eq!(body["summary"]["verdict"], "UNHEALTHY");
    assert_eq!(body["summary"]["fail"], 1);
    // The fix works: up again brings the NAT back.
    env.up_ok(C, json!({})).await;
    let (checks, _) = diagnose(&env, "").await;
    others_ok(&checks, &[]);

    // The LWS controller's Deployment held unavailable, then the NVIDIA driver installer
    // held unready on the GPU node: (what is held, its check, what it says, the fix).
    let held: [(Value, &str, &[&str], &str); 2] = [
        (
            json!({"kind": "Deployment", "namespace": "lws-system", "name": "lws-controller-manager"}),
            "lws",
            &["lws-controller-manager 0/1 replicas available"],
            "kubectl -n lws-system describe deployment lws-controller-manager",
        ),
        (
            json!({"kind": "DaemonSet", "namespace": "kube-system", "name": "nvidia-driver-installer"}),
            "nvidia-driver",
            &["0/1 ready", "GPU pods cannot start"],
            "kubectl -n kube-system rollout status daemonset/nvidia-driver-installer",
        ),
    ];
    for (workload, check, says, fix) in held {
        ail(&env, &key, workload).await;
        let (checks, _) = diagnose(&env, "").await;
        has(&checks[check], "FAIL", says, &[fix]);
        others_ok(&checks, &[check]);
        heal(&env, &key).await;
    }

    // The GPU pool's node NotReady: the node check fails, the pool has 0 of 1 Ready.
    let nodes: Api<Node> = Api::all(k.client().await.expect("client"));
    let gpu_node = nodes
        .list(&ListParams::default().labels(&format!("cloud.google.com/gke-nodepool={pool}")))
        .await
        .expect("nodes")
        .items[0]
        .metadata
        .name
        .clone()
        .unwrap();
    ail(&env, &key, json!({"kind": "Node", "name": gpu_node})).await;
    let (checks, _) = diagnose(&env, "").await;
    has(
        &checks["nodes"],
        "FAIL",
        &["1 of 2 nodes NotReady", &gpu_node, "KubeletNotReady"],
        &[&format!("kubectl describe node {gpu_node}")],
    );
    has(
        &checks["node-pools"],
        "WARN",
        &["0 of 1 wanted nodes Ready"],
        &[&format!("gke-nodepool={pool}")],
    );
    others_ok(&checks, &["nodes", "node-pools"]);
    heal(&env, &key).await;
    // Pressure is a warning.
    ail(
        &env,
        &key,
        json!({"kind": "Node", "name": gpu_node, "condition": "DiskPressure"}),
    )
    .await;
    let (checks, _) = diagnose(&env, "").await;
    has(
        &checks["nodes"],
        "WARN",
        &["1 of 2 nodes under pressure", "DiskPressure"],
        &["kubectl describe node"],
    );
    others_ok(&checks, &["nodes"]);
    heal(&env, &key).await;

    // The region's L4 quota at its usage: the pool cannot grow to its maximum.
    sim_admin(
        &env.sim,
        reqwest::Method::POST,
        "/sim/v1/quotas",
        Some(json!({"region": "us-central1", "metric": "NVIDIA_L4_GPUS", "limit": 1.0})),
    )
    .await;
    let (checks, _) = diagnose(&env, "").await;
    has(
        &checks["quota"],
        "WARN",
        &[
            "NVIDIA_L4_GPUS 1 of 1 used (100%)",
            "0 free",
            "10 more to its maximum",
            "it cannot grow to its maximum",
        ],
        &["request more NVIDIA_L4_GPUS in region us-central1"],
    );
    others_ok(&checks, &["quota"]);
    sim_admin(&env.sim, reqwest::Method::DELETE, "/sim/v1/quotas", None).await;

    // A read that never answers: its check is WARN at the deadline, the rest still OK.
    env.arm("serviceusage", "services.get", "TIMEOUT", 100)
        .await;
    let started = Instant::now();
    let (checks, body) = diagnose(&env, "?checkTimeout=1500ms").await;
    let took = started.elapsed();
    has(&checks["apis"], "WARN", &["not checked within 1.5s"], &[]);
    assert!(!checks["apis"]["fix"].as_str().unwrap().is_empty());
    others_ok(&checks, &["apis"]);
    assert_eq!(body["summary"]["verdict"], "DEGRADED");
    assert!(took < Duration::from_secs(5), "bounded: took {took:?}");
    sim_admin(&env.sim, reqwest::Method::DELETE, "/sim/v1/faults", None).await;

    // A pod no node can take: Pending with the scheduler's reason, and its
    // FailedScheduling event is a recent warning.
    let pods: Api<Pod> = Api::namespaced(k.client().await.expect("client"), "default");
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "eight-gpus"},
        "spec": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "image": "busybox",
                            "resources": {"limits": {"nvidia.com/gpu": "8"}}}]
        }
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create pod");
    let (checks, _) = diagnose(&env, "").await;
    has(
        &checks["pending-pods"],
        "WARN",
        &[
            "1 of 2 pods Pending",
            "default/eight-gpus: ",
            "Insufficient nvidia.com/gpu",
        ],
        &[":checkWorkload", "/capacity"],
    );
    has(
        &checks["warning-events"],
        "WARN",
        &["FailedScheduling", "Pod/eight-gpus"],
        &["kubectl get events -A --field-selector type=Warning"],
    );
    others_ok(&checks, &["pending-pods", "warning-events"]);
}

#[tokio::test]
async fn iam_drift_fails_its_checks_and_up_repairs_it() {
    let env = env().await;
    env.up_ok(C, json!({"accelerator": "cpu"})).await;
    let (checks, _) = diagnose(&env, "").await;
    others_ok(&checks, &[]);
    has(&checks["nvidia-driver"], "OK", &["no GPU node pools"], &[]);
    has(
        &checks["quota"],
        "OK",
        &["no accelerator pool recorded"],
        &[],
    );

    // Someone revokes a project role of the node account and the KSA's Workload
    // Identity binding, through the same Google APIs.
    let gcp = env.gcp();
    let node = format!("kn-{C}-nodes@{PROJECT}.iam.gserviceaccount.com");
    let member = format!("serviceAccount:{node}");
    let cancel = tokio_util::sync::CancellationToken::new();
    gcp.resource_manager
        .remove_bindings(
            PROJECT,
            &[("roles/monitoring.metricWriter", &member)],
            &cancel,
        )
        .await
        .expect("revoke");
    let mut policy = gcp
        .iam
        .get_service_account_iam_policy(PROJECT, &node)
        .await
        .expect("policy");
    policy
        .bindings
        .retain(|b| b.role != "roles/iam.workloadIdentityUser");
    gcp.iam
        .set_service_account_iam_policy(PROJECT, &node, &policy)
        .await
        .expect("set policy");

    let (checks, body) = diagnose(&env, "").await;
    has(
        &checks["service-accounts"],
        "FAIL",
        &[
            "1 of 5 project roles are not granted",
            &format!("{member} lacks roles/monitoring.metricWriter"),
        ],
        &[&format!(
            "gcloud projects add-iam-policy-binding {PROJECT} --member={member} --role=roles/monitoring.metricWriter"
        )],
    );
    has(
        &checks["workload-identity"],
        "FAIL",
        &[&format!(
            "serviceAccount:{PROJECT}.svc.id.goog[default/kinetic] lacks roles/iam.workloadIdentityUser on {node}"
        )],
        &[&format!(
            "gcloud iam service-accounts add-iam-policy-binding {node} --role=roles/iam.workloadIdentityUser"
        )],
    );
    others_ok(&checks, &["service-accounts", "workload-identity"]);
    assert_eq!(body["summary"]["fail"], 2);
    assert_eq!(
        body["summary"]["text"],
        "15 OK, 0 WARN, 2 FAIL; FAIL: service-accounts, workload-identity"
    );

    // Both fixes name `up` too, and it repairs both.
    env.up_ok(C, json!({})).await;
    let (checks, _) = diagnose(&env, "").await;
    others_ok(&checks, &[]);

    // A GPU pool whose driver GKE installs needs no installer DaemonSet.
    let op = env
        .add_pool(C, json!({"accelerator": "l4", "driverVersion": "LATEST"}))
        .await;
    env.ok(&op).await;
    let (checks, _) = diagnose(&env, "").await;
    has(
        &checks["nvidia-driver"],
        "OK",
        &["GKE installs the NVIDIA driver on every GPU pool"],
        &[],
    );
    others_ok(&checks, &[]);
}
