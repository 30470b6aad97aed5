//! `POST .../clusters/{c}:checkWorkload` through the real server against the simulator:
//! JSON and YAML bodies of every supported kind, bad bodies, access, reasons through
//! the API, and verdicts cross-checked by applying the same workload to the simulated
//! cluster (NOW runs at once, AFTER_SCALE_UP runs after the autoscaler adds a node,
//! NEVER stays Pending).

use std::time::Duration;

use kineticd::cloud::gcp::GcpClients;
use kineticd::cloud::gcp::types::container::Cluster;
use kineticd::cloud::kube::{ClusterAccess, KubeCluster};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::gke::{autoscaled_pool, default_pool, gke_done};
use crate::common::{Resp, TestApp, entry};
use crate::support::{
    ALICE, C, CHECK, EVE, NOPE, P, Z, create_pod, expect_error, expect_invalid, expect_not_found,
    ok, raw, reasons,
};

const POOL: &str = "gpu-l4-ab12";

/// A team, a cluster record with one L4 pool (1 node now, at most 2), and the same
/// cluster in the simulator's GKE with `default-pool`.
async fn setup() -> (TestApp, kineticd::sim::Sim, KubeCluster) {
    setup_with(&[]).await
}

/// [`setup`] with regional quota limits (metric, limit).
async fn setup_with(quotas: &[(&str, f64)]) -> (TestApp, kineticd::sim::Sim, KubeCluster) {
    // An explicit clock: the autoscaler adds nodes only when the test moves time on.
    let (app, sim) = TestApp::spawn_sim_with(kineticd::sim::SimConfig {
        clock: kineticd::sim::clock::ClockMode::Explicit,
        quotas: quotas.iter().map(|(m, l)| ((*m).to_owned(), *l)).collect(),
        ..Default::default()
    })
    .await;
    app.team(ALICE, "acme", &[P]).await;
    let rec = app.cluster("acme", P, Z, C).await;
    let spec = json!({"accelerator": "gpu-l4", "kind": "GPU", "machineType": "g2-standard-4",
        "gkeAcceleratorType": "nvidia-l4", "acceleratorCount": 1, "minNodes": 1, "maxNodes": 2,
        "spot": false, "zones": [Z], "driverVersion": "LATEST"});
    app.pool(rec.id, POOL, spec).await;
    let gcp = app.state.cloud.gcp.clone();
    let mut pool = autoscaled_pool(POOL, "g2-standard-4", "nvidia-l4", 1, 1);
    if let Some(a) = pool.autoscaling.as_mut() {
        a.max_node_count = Some(2);
    }
    let gke = create_cluster(
        &gcp,
        &sim,
        Cluster {
            name: C.into(),
            node_pools: vec![default_pool(), pool],
            ..Default::default()
        },
    )
    .await;
    let access = ClusterAccess::for_gke(&gke).expect("endpoint");
    let kube = app.state.cloud.kube.cluster(access);
    (app, sim, kube)
}

async fn create_cluster(gcp: &GcpClients, sim: &kineticd::sim::Sim, cluster: Cluster) -> Cluster {
    let op = gcp
        .container
        .create_cluster(P, Z, &cluster)
        .await
        .expect("cluster");
    sim.clock().advance(Duration::from_secs(3600));
    gke_done(gcp, &op, Duration::from_secs(120), "cluster done").await;
    gcp.container
        .get_cluster(P, Z, C)
        .await
        .expect("get cluster")
}

/// A pod spec asking for `gpus` L4 GPUs (limits, as numbers), tolerating the GPU taint.
fn gpu_spec(gpus: u32) -> Value {
    json!({"containers": [{"name": "c", "image": "nvidia/cuda:12.2.0-runtime-ubuntu22.04",
        "resources": {"limits": {"nvidia.com/gpu": gpus}}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]})
}

fn pod(name: &str, gpus: u32) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": gpu_spec(gpus)})
}

async fn check_json(app: &TestApp, body: Value) -> Value {
    ok(app.post(ALICE, CHECK, body).await)
}

async fn check_yaml(app: &TestApp, yaml: &str) -> Resp {
    raw(
        app,
        ALICE,
        Method::POST,
        CHECK,
        Some("application/yaml"),
        yaml.to_owned(),
    )
    .await
}

/// Asserts the check `v` says `verdict` for `problems` (their reasons, in order).
#[track_caller]
fn assert_verdict(v: &Value, want: &str, problems: &[&str]) {
    assert_eq!((verdict(v), reasons(v)), (want, problems.to_vec()), "{v:#}");
}

fn verdict(v: &Value) -> &str {
    v["verdict"]
        .as_str()
        .unwrap_or_else(|| panic!("no verdict: {v:#}"))
}

fn pool_fit<'a>(v: &'a Value, id: &str) -> &'a str {
    entry(v, "pools", "poolId", id)["fits"]
        .as_str()
        .unwrap_or_else(|| panic!("pool {id} fits no string in {v:#}"))
}

/// The reason `GET .../capacity` gives for the pending pod `name`.
async fn waits_for(app: &TestApp, name: &str) -> String {
    let path = format!("/v1/projects/{P}/zones/{Z}/clusters/{C}/capacity");
    let r = app.get(ALICE, &path).await;
    assert_eq!(r.status, 200, "{}", r.body);
    entry(&r.body, "pendingPods", "name", name)["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("{name} is pending for no reason in {:#}", r.body))
        .to_owned()
}

async fn phase(kube: &KubeCluster, name: &str) -> String {
    let pods = kube.pods(Some("default")).await.expect("pods");
    pods.into_iter()
        .find(|p| p.name == name)
        .map(|p| p.phase)
        .expect("pod exists")
}

#[tokio::test]
async fn verdicts_agree_with_the_simulated_cluster() {
    let (app, sim, kube) = setup().await;
    // NOW: the L4 node is free; the pod runs at once.
    let v = check_json(&app, pod("now", 1)).await;
    assert_eq!(
        (verdict(&v), v["schedulable"].as_bool()),
        ("NOW", Some(true)),
        "{v:#}"
    );
    assert_eq!(pool_fit(&v, POOL), "NOW");
    assert_eq!(pool_fit(&v, "default-pool"), "NEVER", "a CPU pool: {v:#}");
    create_pod(&kube, &pod("now", 1)).await;
    assert_eq!(phase(&kube, "now").await, "Running");

    // AFTER_SCALE_UP: the node is taken; the pool may grow to 2.
    let v = check_json(&app, pod("later", 1)).await;
    assert_eq!(verdict(&v), "AFTER_SCALE_UP", "{v:#}");
    assert_eq!(reasons(&v), Vec::<&str>::new());
    create_pod(&kube, &pod("later", 1)).await;
    assert_eq!(phase(&kube, "later").await, "Pending");
    sim.clock().advance(Duration::from_secs(61));
    assert_eq!(phase(&kube, "later").await, "Running");

    // NEVER: two GPUs on one-GPU nodes; the autoscaler cannot help.
    let v = check_json(&app, pod("never", 2)).await;
    assert_eq!(
        (verdict(&v), v["schedulable"].as_bool()),
        ("NEVER", Some(false)),
        "{v:#}"
    );
    assert_eq!(reasons(&v), ["ACCELERATOR_COUNT_TOO_LARGE"], "{v:#}");
    create_pod(&kube, &pod("never", 2)).await;
    sim.clock().advance(Duration::from_secs(120));
    assert_eq!(phase(&kube, "never").await, "Pending");

    // And now the pool is at its maximum with both nodes busy.
    let v = check_json(&app, pod("full", 1)).await;
    assert_verdict(&v, "NEVER", &["POOL_AT_MAX"]);
}

#[tokio::test]
async fn every_kind_as_json_and_as_yaml() {
    let (app, _sim, _kube) = setup().await;
    let tpl = json!({"spec": gpu_spec(1)});
    let kinds = [
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"replicas": 1, "template": tpl}}),
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
               "spec": {"replicas": 2, "template": tpl}}),
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
               "spec": {"parallelism": 1, "template": tpl}}),
        json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
               "spec": {"replicatedJobs": [{"name": "w", "replicas": 1,
                        "template": {"spec": {"parallelism": 2, "template": tpl}}}]}}),
        json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "l"},
               "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 3, "workerTemplate": tpl}}}),
    ];
    // One free node now, at most two nodes: 1 pod NOW, 2 pods AFTER_SCALE_UP, 3 NEVER.
    for (body, want) in
        kinds
            .iter()
            .zip(["NOW", "AFTER_SCALE_UP", "NOW", "AFTER_SCALE_UP", "NEVER"])
    {
        let v = check_json(&app, body.clone()).await;
        assert_eq!(verdict(&v), want, "{} as JSON: {v:#}", body["kind"]);
        // The same manifest as YAML (JSON is YAML; the block style is checked below).
        let r = check_yaml(&app, &serde_json::to_string(body).unwrap()).await;
        assert_eq!(r.status, StatusCode::OK, "{:#}", r.body);
        assert_eq!(verdict(&r.body), want, "{} as YAML", body["kind"]);
    }
    let yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: y\nspec:\n  containers:\n  - name: c\n    image: busybox\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n  nodeSelector:\n    cloud.google.com/gke-accelerator: nvidia-h100-80gb\n";
    let r = check_yaml(&app, yaml).await;
    assert_eq!(r.status, StatusCode::OK, "{:#}", r.body);
    assert_eq!(
        (verdict(&r.body), reasons(&r.body)),
        ("NEVER", vec!["NO_MATCHING_POOL"]),
        "{:#}",
        r.body
    );
}

#[tokio::test]
async fn reasons_through_the_api_and_their_fixes() {
    let (app, _sim, _kube) = setup().await;
    let mut zoned = pod("z", 1);
    zoned["spec"]["nodeSelector"] = json!({"topology.kubernetes.io/zone": "us-central1-b"});
    assert_eq!(
        reasons(&check_json(&app, zoned.clone()).await),
        ["ZONE_PINNED"]
    );
    zoned["spec"]["nodeSelector"] = json!({"topology.kubernetes.io/zone": Z});
    assert_eq!(verdict(&check_json(&app, zoned).await), "NOW");

    let mut req_only = pod("r", 1);
    req_only["spec"]["containers"][0]["resources"] = json!({"requests": {"nvidia.com/gpu": "1"}});
    let v = check_json(&app, req_only.clone()).await;
    assert_verdict(&v, "NEVER", &["GPU_LIMIT_MISSING"]);
    req_only["spec"]["containers"][0]["resources"]["limits"] = json!({"nvidia.com/gpu": "1"});
    assert_eq!(verdict(&check_json(&app, req_only).await), "NOW");

    // Targets the GPU nodes without requesting a GPU: GKE adds no toleration.
    let cpu_on_gpu = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c"}, "spec": {
        "containers": [{"name": "c", "image": "busybox"}],
        "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-l4"}}});
    assert_eq!(
        reasons(&check_json(&app, cpu_on_gpu).await),
        ["MISSING_TOLERATION"]
    );
}

#[tokio::test]
async fn bad_bodies_get_clear_errors() {
    let (app, _sim, _kube) = setup().await;
    let r = app.post(ALICE, CHECK, json!([1, 2])).await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "BODY_NOT_OBJECT");
    let r = check_yaml(&app, "- a\n- b\n").await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "BODY_NOT_OBJECT");
    let r = app
        .post(
            ALICE,
            CHECK,
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "spec": {}}),
        )
        .await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "UNSUPPORTED_KIND");
    let msg = r.body["error"]["message"].as_str().unwrap();
    for kind in [
        "Pod",
        "Deployment",
        "StatefulSet",
        "Job",
        "JobSet",
        "LeaderWorkerSet",
    ] {
        assert!(msg.contains(kind), "{msg}");
    }
    let r = check_yaml(&app, "kind: Pod\nspec: [unclosed\n").await;
    expect_invalid(&r, "MALFORMED_YAML", "line");
    let r = app
        .post(
            ALICE,
            CHECK,
            json!({"kind": "Pod", "spec": {"containers": [{"name": "c",
        "resources": {"limits": {"nvidia.com/gpu": "many"}}}]}}),
        )
        .await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_WORKLOAD");
    let big = format!("{{\"kind\": \"Pod\", \"x\": \"{}\"}}", "a".repeat(10 << 20));
    for (ct, body, code, reason) in [
        ("application/json", big.as_str(), 413, "BODY_TOO_LARGE"),
        ("application/yaml", big.as_str(), 413, "BODY_TOO_LARGE"),
        ("text/plain", "kind: Pod", 415, "UNSUPPORTED_MEDIA_TYPE"),
    ] {
        let r = raw(&app, ALICE, Method::POST, CHECK, Some(ct), body.to_owned()).await;
        expect_error(&r, code, "INVALID_ARGUMENT", reason);
    }
    let r = app.get(ALICE, CHECK).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{:#}", r.body);
    let r = app
        .post(
            ALICE,
            "/v1/projects/acme-project/zones/us-central1-a/clusters/kc:nope",
            json!({}),
        )
        .await;
    expect_not_found(&r, "METHOD_NOT_FOUND");
}

#[tokio::test]
async fn viewers_may_check_and_strangers_see_nothing() {
    let (app, _sim, _kube) = setup().await;
    app.member(ALICE, "acme", "bob@example.com", "VIEWER").await;
    let r = app.post("bob@example.com", CHECK, pod("p", 1)).await;
    assert_eq!(r.status, StatusCode::OK, "{:#}", r.body);
    let r = app.post(EVE, CHECK, pod("p", 1)).await;
    expect_not_found(&r, "PROJECT_NOT_FOUND");
    let r = app
        .post(ALICE, &format!("{NOPE}:checkWorkload"), pod("p", 1))
        .await;
    expect_not_found(&r, "CLUSTER_NOT_FOUND");
}

#[tokio::test]
async fn quota_read_from_the_region_decides_scale_up() {
    // One L4 node runs (1 GPU of quota used); the limit leaves no room for a second.
    let (app, sim, kube) = setup_with(&[("NVIDIA_L4_GPUS", 1.0)]).await;
    create_pod(&kube, &pod("first", 1)).await;
    assert_eq!(phase(&kube, "first").await, "Running");
    let v = check_json(&app, pod("second", 1)).await;
    assert_verdict(&v, "NEVER", &["QUOTA_EXHAUSTED"]);
    let fix = v["problems"][0]["fix"].as_str().unwrap();
    assert!(fix.contains("NVIDIA_L4_GPUS"), "{fix}");
    // The simulated cluster agrees: the autoscaler cannot add the node the pod needs.
    create_pod(&kube, &pod("second", 1)).await;
    sim.clock().advance(Duration::from_secs(120));
    assert_eq!(phase(&kube, "second").await, "Pending");
    // And the capacity view says why it waits.
    assert_eq!(waits_for(&app, "second").await, "QUOTA_EXHAUSTED");
    // The fix it names: more quota.
    let r = app
        .http
        .post(format!("{}/sim/v1/quotas", sim.url()))
        .json(&json!({"region": "us-central1", "metric": "NVIDIA_L4_GPUS", "limit": 2.0}))
        .send()
        .await
        .expect("set quota");
    assert!(r.status().is_success());
    let v = check_json(&app, pod("third", 1)).await;
    assert_verdict(&v, "AFTER_SCALE_UP", &[]);
    // And the waiting pod gets its node once the quota allows it.
    assert_eq!(waits_for(&app, "second").await, "SCALE_UP_PENDING");
    sim.clock().advance(Duration::from_secs(61));
    assert_eq!(phase(&kube, "second").await, "Running");
}
