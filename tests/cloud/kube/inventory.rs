//! Inventory of a simulated cluster with CPU, GPU, TPU and spot pools.

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use super::{add_pools, calls, gpu_pool, sim_cluster, spot_gpu_pool, tpu_pool};

pub fn pod(name: &str, spec: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .expect("pod")
}

#[tokio::test]
async fn nodes_pools_and_pods() {
    let (sim, cluster) = sim_cluster().await;
    add_pools(
        &sim,
        [
            gpu_pool("gpu-l4-1a2b", 2, 10),
            tpu_pool("tpu-v5litepod-3c4d", 1, 2),
            spot_gpu_pool("gpu-l4-spot", 1, 10),
        ],
    );
    let pods: Api<Pod> = Api::namespaced(cluster.client().await.expect("client"), "default");
    let cpu = pod(
        "cpu",
        json!({"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}),
    );
    pods.create(&PostParams::default(), &cpu)
        .await
        .expect("create cpu");
    // Two GPUs: more than any L4 node has (GKE's admission lets it tolerate the GPU
    // taint, not the spot one).
    let gpu = pod(
        "gpu-too-large",
        json!({
            "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-l4"},
            "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2"}}}],
        }),
    );
    pods.create(&PostParams::default(), &gpu)
        .await
        .expect("create gpu");

    let inv = cluster.inventory().await.expect("inventory");
    assert_eq!(inv.nodes.len(), 5);
    let summary: Vec<(String, u32, u64, u64, bool)> = inv
        .pools()
        .into_iter()
        .map(|p| (p.pool, p.ready, p.gpus, p.tpus, p.spot))
        .collect();
    assert_eq!(
        summary,
        [
            ("default-pool".into(), 1, 0, 0, false),
            ("gpu-l4-1a2b".into(), 2, 2, 0, false),
            ("gpu-l4-spot".into(), 1, 1, 0, true),
            ("tpu-v5litepod-3c4d".into(), 1, 0, 4, false),
        ]
    );
    let tpu = inv
        .nodes
        .iter()
        .find(|n| n.pool.as_deref() == Some("tpu-v5litepod-3c4d"))
        .expect("tpu node");
    assert!(tpu.ready);
    assert_eq!(tpu.zone.as_deref(), Some("us-central1-a"));
    assert_eq!(tpu.instance_type.as_deref(), Some("ct5lp-hightpu-4t"));
    assert_eq!(tpu.labels["kubernetes.io/hostname"], tpu.name);
    assert_eq!(tpu.labels["cloud.google.com/gke-tpu-topology"], "2x2");
    assert_eq!(tpu.taints[0].key, "google.com/tpu");
    assert!(tpu.cpu_millis > 100_000 && tpu.memory_bytes > 100 << 30);

    let cpu = inv.pods.iter().find(|p| p.name == "cpu").expect("cpu pod");
    assert_eq!(cpu.phase, "Running");
    assert!(
        cpu.node
            .as_deref()
            .is_some_and(|n| n.starts_with("gke-default-pool-"))
    );
    assert_eq!(cpu.requests.cpu_millis, 500);
    assert_eq!(cpu.requests.memory_bytes, 1 << 30);

    let pending: Vec<_> = inv.pending().collect();
    assert_eq!(pending.len(), 1);
    let p = pending[0];
    assert_eq!(p.name, "gpu-too-large");
    assert_eq!(p.requests.gpus, 2, "limits count as requests");
    assert_eq!(
        p.node_selector["cloud.google.com/gke-accelerator"],
        "nvidia-l4"
    );
    assert_eq!(
        p.unschedulable.as_deref(),
        Some(
            "0/5 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, \
             1 node(s) had untolerated taint {cloud.google.com/gke-spot: true}, \
             1 node(s) had untolerated taint {google.com/tpu: present}, \
             2 Insufficient nvidia.com/gpu."
        )
    );
    let only_pending = cluster.pending_pods().await.expect("pending");
    assert_eq!(only_pending.len(), 1);
    assert_eq!(only_pending[0].name, "gpu-too-large");
}

fn fail_lists(sim: &kineticd::sim::Sim, count: u32) {
    sim.faults().arm(kineticd::sim::faults::FaultSpec {
        service: "kube".into(),
        method: "kube.list".into(),
        kind: kineticd::sim::faults::FaultKind::Http503,
        count: Some(count),
        probability: None,
    });
}

/// A list is idempotent: fewer transient errors in a row than
/// [`kineticd::cloud::kube::CALL_TRIES`] are ridden out inside the call, so a step that
/// reads the inventory among other calls (a drill's reclaim) is not started over for
/// one of them (the long crash soak saw a reclaim give up after twelve attempts).
#[tokio::test]
async fn transient_list_errors_are_sent_again() {
    use kineticd::cloud::kube::CALL_TRIES;
    let (sim, cluster) = sim_cluster().await;
    add_pools(&sim, [gpu_pool("gpu-l4-1a2b", 2, 10)]);
    let before = calls(&sim, "kube.list");
    fail_lists(&sim, CALL_TRIES - 1);
    let inv = cluster.inventory().await.expect("ridden out");
    assert!(inv.nodes.iter().any(|n| n.gpus > 0), "{:?}", inv.nodes);
    assert_eq!(
        calls(&sim, "kube.list") - before,
        2 + (CALL_TRIES - 1) as usize,
        "nodes and pods, each faulted list sent again, nothing else"
    );
    // More in a row than one call rides out: the error reaches the step, retryable.
    fail_lists(&sim, CALL_TRIES);
    let e = cluster.nodes().await.expect_err("fault");
    assert_eq!(e.http_status(), Some(503), "{e}");
    assert_eq!(e.retry(), kineticd::cloud::gcp::RetryClass::Retryable);
    cluster.nodes().await.expect("the next call succeeds");
}
