//! Partitioned and shared GPUs in `GET .../capacity` and `POST ...:checkWorkload`,
//! against the simulator through the production clients: a one-node A100 pool in seven
//! `1g.5gb` slices and a one-node L4 pool time-shared by four. A pod asking for one GPU
//! takes one slice (or one share): seven pods fit on the A100 node and the eighth waits;
//! four fit on the L4 node and the fifth waits. Every expected number is worked out by
//! hand here, not by the code under test.

use std::ops::Range;
use std::time::Duration;

use kineticd::cloud::gcp::types::container::{Cluster, GpuSharingConfig, NodePool};
use kineticd::cloud::kube::{ClusterAccess, KubeCluster};
use serde_json::{Value, json};

use crate::common::TestApp;
use crate::common::gke::{
    PARTITION, STRATEGY, autoscaled_pool, create_cluster_and_wait, default_pool,
};
use crate::support::{
    ALICE, C, CAPACITY, CHECK, P, Z, counts, create_pod, ok, pending_pods, pool, reasons,
};

const MIG: &str = "gpu-a100-mig1";
const SHARED: &str = "gpu-l4-ts01";

/// A pool of exactly one node (autoscaling 1..1).
fn one_node(mut pool: NodePool) -> NodePool {
    if let Some(a) = pool.autoscaling.as_mut() {
        a.max_node_count = Some(1);
    }
    pool
}

fn mig_pool() -> NodePool {
    let mut p = one_node(autoscaled_pool(
        MIG,
        "a2-highgpu-1g",
        "nvidia-tesla-a100",
        1,
        1,
    ));
    if let Some(a) = p.config.as_mut().and_then(|c| c.accelerators.first_mut()) {
        a.gpu_partition_size = Some("1g.5gb".into());
    }
    p
}

fn shared_pool() -> NodePool {
    let mut p = one_node(autoscaled_pool(SHARED, "g2-standard-4", "nvidia-l4", 1, 1));
    if let Some(a) = p.config.as_mut().and_then(|c| c.accelerators.first_mut()) {
        a.gpu_sharing_config = Some(GpuSharingConfig {
            gpu_sharing_strategy: "TIME_SHARING".into(),
            max_shared_clients_per_gpu: 4,
        });
    }
    p
}

/// The team, the two pools' records (as `pool add` writes them) and the GKE cluster.
async fn setup(app: &TestApp) -> KubeCluster {
    setup_with(app, two_pools(), vec![mig_pool(), shared_pool()]).await
}

fn two_pools() -> Vec<(&'static str, Value)> {
    vec![
        (
            MIG,
            json!({"accelerator": "gpu-a100", "kind": "GPU", "machineType": "a2-highgpu-1g",
                "gkeAcceleratorType": "nvidia-tesla-a100", "acceleratorCount": 1,
                "minNodes": 1, "maxNodes": 1, "spot": false, "zones": [Z],
                "driverVersion": "LATEST", "partitionSize": "1g.5gb"}),
        ),
        (
            SHARED,
            json!({"accelerator": "gpu-l4", "kind": "GPU", "machineType": "g2-standard-4",
                "gkeAcceleratorType": "nvidia-l4", "acceleratorCount": 1,
                "minNodes": 1, "maxNodes": 1, "spot": false, "zones": [Z],
                "driverVersion": "LATEST",
                "sharing": {"strategy": "TIME_SHARING", "maxClientsPerGpu": 4}}),
        ),
    ]
}

/// The team, `records` and the GKE cluster with `default-pool` and `pools`.
async fn setup_with(
    app: &TestApp,
    records: Vec<(&'static str, Value)>,
    pools: Vec<NodePool>,
) -> KubeCluster {
    app.team(ALICE, "acme", &[P]).await;
    let rec = app.cluster("acme", P, Z, C).await;
    for (id, spec) in records {
        app.pool(rec.id, id, spec).await;
    }
    let cluster = Cluster {
        name: C.into(),
        node_pools: [vec![default_pool()], pools].concat(),
        ..Default::default()
    };
    let gcp = &app.state.cloud.gcp;
    let live = create_cluster_and_wait(gcp, P, Z, &cluster, Duration::from_secs(120)).await;
    app.state
        .cloud
        .kube
        .cluster(ClusterAccess::for_gke(&live).expect("endpoint"))
}

/// A pod asking for `gpus` GPUs on nodes labelled `selector`, tolerating the GPU taint.
fn pod(name: &str, gpus: u32, selector: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeSelector": selector,
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "c", "image": "busybox",
                "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}})
}

/// Pods `{prefix}-{i}` for each `i` of `range`, one GPU each, on nodes labelled `selector`.
async fn one_gpu_pods(kube: &KubeCluster, prefix: &str, range: Range<u32>, selector: Value) {
    for i in range {
        create_pod(kube, &pod(&format!("{prefix}-{i}"), 1, selector.clone())).await;
    }
}

/// (running, pending) among the pods whose name starts with `prefix`.
async fn phases(kube: &KubeCluster, prefix: &str) -> (usize, usize) {
    let pods = kube.pods(Some("default")).await.expect("pods");
    let mine: Vec<_> = pods.iter().filter(|p| p.name.starts_with(prefix)).collect();
    let running = mine.iter().filter(|p| p.phase == "Running").count();
    (running, mine.len() - running)
}

async fn check(app: &TestApp, body: Value) -> Value {
    ok(app.post(ALICE, CHECK, body).await)
}

#[tokio::test]
async fn one_gpu_pods_take_one_slice_or_one_share() {
    let (app, _sim) = TestApp::spawn_sim().await;
    let kube = setup(&app).await;

    // The node advertises its units and GKE's labels.
    let nodes = kube.nodes().await.expect("nodes");
    let mig = nodes
        .iter()
        .find(|n| n.pool.as_deref() == Some(MIG))
        .expect("node");
    assert_eq!((mig.gpus, mig.labels[PARTITION].as_str()), (7, "1g.5gb"));
    let ts = nodes
        .iter()
        .find(|n| n.pool.as_deref() == Some(SHARED))
        .expect("node");
    assert_eq!((ts.gpus, ts.labels[STRATEGY].as_str()), (4, "time-sharing"));

    // Before any pod: seven one-GPU pods selecting the slice size fit now; eight do not
    // (the pool is at its one node); a size no pool has, or more GPUs than a node's
    // seven slices, never fit.
    let deployment = |replicas: u32, gpus: u32, selector: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": replicas, "template": {"spec": pod("x", gpus, selector)["spec"]}}})
    };
    let v = check(&app, deployment(7, 1, json!({PARTITION: "1g.5gb"}))).await;
    assert_eq!(v["verdict"], "NOW", "{v:#}");
    let v = check(&app, deployment(8, 1, json!({PARTITION: "1g.5gb"}))).await;
    assert_ne!(v["verdict"], "NOW", "{v:#}");
    let v = check(&app, deployment(1, 1, json!({PARTITION: "2g.10gb"}))).await;
    assert_eq!(v["verdict"], "NEVER", "{v:#}");
    assert!(
        reasons(&v).contains(&"NODE_SELECTOR_MATCHES_NOTHING"),
        "{v:#}"
    );
    let text = v.to_string();
    assert!(
        text.contains("\\\"partitionSize\\\": \\\"2g.10gb\\\""),
        "{v:#}"
    );
    let v = check(&app, deployment(1, 8, json!({PARTITION: "1g.5gb"}))).await;
    assert_eq!(v["verdict"], "NEVER", "{v:#}");
    assert!(
        reasons(&v).contains(&"ACCELERATOR_COUNT_TOO_LARGE"),
        "{v:#}"
    );
    // Four shares of the L4 fit; five GPUs on one shared L4 never do.
    let v = check(&app, deployment(4, 1, json!({STRATEGY: "time-sharing"}))).await;
    assert_eq!(v["verdict"], "NOW", "{v:#}");
    let v = check(&app, deployment(1, 5, json!({STRATEGY: "time-sharing"}))).await;
    assert!(
        reasons(&v).contains(&"ACCELERATOR_COUNT_TOO_LARGE"),
        "{v:#}"
    );

    // Eight one-GPU pods on the 7-way A100: seven run, the eighth waits.
    one_gpu_pods(&kube, "mig", 0..8, json!({PARTITION: "1g.5gb"})).await;
    assert_eq!(phases(&kube, "mig-").await, (7, 1));
    // Three on the 4-way L4 first: one share left, priced at a quarter of an L4.
    one_gpu_pods(&kube, "ts", 0..3, json!({STRATEGY: "time-sharing"})).await;
    let c = ok(app.get(ALICE, CAPACITY).await);
    let l4 = pool(&c, SHARED);
    assert_eq!(counts(l4), [4, 3, 1, 1, 1], "{l4:#}");
    // USD 0.71 an L4 hour / 4 shares = 0.1775, in cents.
    assert_eq!(l4["idleCost"]["amount"], 0.18, "{l4:#}");
    one_gpu_pods(&kube, "ts", 3..5, json!({STRATEGY: "time-sharing"})).await;
    assert_eq!(phases(&kube, "ts-").await, (4, 1));

    let c = ok(app.get(ALICE, CAPACITY).await);
    let a100 = pool(&c, MIG);
    assert_eq!(counts(a100), [7, 7, 0, 0, 0], "{a100:#}");
    assert_eq!(a100["perNode"], 7);
    assert_eq!(
        a100["gpuUnits"],
        json!({"unitsPerGpu": 7, "physicalGpus": 1, "partitionSize": "1g.5gb"})
    );
    assert_eq!(a100["nodes"][0]["acceleratorPods"], 7);
    let l4 = pool(&c, SHARED);
    assert_eq!(counts(l4), [4, 4, 0, 0, 0], "{l4:#}");
    assert_eq!(
        l4["gpuUnits"],
        json!({"unitsPerGpu": 4, "physicalGpus": 1, "sharingStrategy": "TIME_SHARING",
               "maxClientsPerGpu": 4})
    );
    let summary = c["summary"]["text"].as_str().unwrap();
    assert!(summary.contains("units"), "{summary}");
    let pending: Vec<(&str, u64)> = pending_pods(&c)
        .into_iter()
        .map(|(name, _, requested)| (name, requested))
        .collect();
    assert_eq!(pending, [("mig-7", 1), ("ts-4", 1)], "{c:#}");
    for p in c["pendingPods"].as_array().unwrap() {
        assert_eq!(p["reason"], "POOL_AT_MAX", "{p:#}");
    }
}

/// On a node of two shared T4s a container gets at most one share: GKE's device plugin
/// fails a pod asking for two (UnexpectedAdmissionError), and the workload check says so
/// before it is applied.
#[tokio::test]
async fn two_shares_in_one_container_on_a_two_gpu_shared_node_never_run() {
    let (app, _sim) = TestApp::spawn_sim().await;
    const MPS: &str = "gpu-t4-mps1";
    let mut p = one_node(autoscaled_pool(
        MPS,
        "n1-standard-8",
        "nvidia-tesla-t4",
        2,
        1,
    ));
    if let Some(a) = p.config.as_mut().and_then(|c| c.accelerators.first_mut()) {
        a.gpu_sharing_config = Some(GpuSharingConfig {
            gpu_sharing_strategy: "MPS".into(),
            max_shared_clients_per_gpu: 2,
        });
    }
    let record = json!({"accelerator": "gpu-t4x2", "kind": "GPU", "machineType": "n1-standard-8",
        "gkeAcceleratorType": "nvidia-tesla-t4", "acceleratorCount": 2,
        "minNodes": 1, "maxNodes": 1, "spot": false, "zones": [Z], "driverVersion": "LATEST",
        "sharing": {"strategy": "MPS", "maxClientsPerGpu": 2}});
    let kube = setup_with(&app, vec![(MPS, record)], vec![p]).await;
    let two = pod("two", 2, json!({STRATEGY: "mps"}));
    let v = check(&app, two.clone()).await;
    assert_eq!(v["verdict"], "NEVER", "{v:#}");
    assert!(
        reasons(&v).contains(&"ACCELERATOR_COUNT_TOO_LARGE"),
        "{v:#}"
    );
    create_pod(&kube, &two).await;
    let pods = kube.pods(Some("default")).await.expect("pods");
    let p = pods.iter().find(|p| p.name == "two").expect("pod");
    assert_eq!(p.phase, "Failed", "{p:#?}");
    // One share per container runs: 4 units on the node.
    let v = check(&app, pod("one", 1, json!({STRATEGY: "mps"}))).await;
    assert_eq!(v["verdict"], "NOW", "{v:#}");
    create_pod(&kube, &pod("one", 1, json!({STRATEGY: "mps"}))).await;
    assert_eq!(phases(&kube, "one").await, (1, 0));
    let c = ok(app.get(ALICE, CAPACITY).await);
    let t4 = pool(&c, MPS);
    assert_eq!(
        counts(t4),
        [4, 1, 3, 3, 3],
        "the failed pod holds nothing: {t4:#}"
    );
}
