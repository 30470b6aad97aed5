//! The simulated scheduler, cluster autoscaler and spot reclaims.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kineticd::cloud::kube::{KubeCluster, PodInfo};
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};

use super::inventory::pod;
use super::{add_pools, explicit_sim_cluster, gpu_pool, sim_cluster, spot_gpu_pool};
use crate::storage::simctl::raw;

fn gpu_pod(name: &str, gpus: u32, tolerations: Value) -> Pod {
    pod(
        name,
        json!({
            "tolerations": tolerations,
            "containers": [{"name": "c", "image": "x",
                            "resources": {"limits": {"nvidia.com/gpu": gpus.to_string()}}}],
        }),
    )
}

fn tolerate(keys: &[&str]) -> Value {
    Value::Array(
        keys.iter()
            .map(|k| json!({"key": k, "operator": "Exists", "effect": "NoSchedule"}))
            .collect(),
    )
}

async fn create(cluster: &KubeCluster, p: &Pod) {
    let api: Api<Pod> = Api::namespaced(cluster.client().await.expect("client"), "default");
    api.create(&PostParams::default(), p)
        .await
        .expect("create pod");
}

async fn pod_info(cluster: &KubeCluster, name: &str) -> PodInfo {
    cluster
        .pods(Some("default"))
        .await
        .expect("pods")
        .into_iter()
        .find(|p| p.name == name)
        .expect("pod exists")
}

#[tokio::test]
async fn pods_that_fit_and_pods_that_need_a_toleration() {
    let (sim, cluster) = sim_cluster().await;
    add_pools(&sim, [gpu_pool("gpu", 2, 2)]);
    // Selecting the GPU nodes without requesting a GPU: nothing tolerates their taint.
    let selector = pod(
        "no-tol",
        json!({"nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-l4"},
               "containers": [{"name": "c", "image": "x"}]}),
    );
    create(&cluster, &selector).await;
    let p = pod_info(&cluster, "no-tol").await;
    assert_eq!(p.phase, "Pending");
    assert_eq!(
        p.unschedulable.as_deref(),
        Some(
            "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, \
             2 node(s) had untolerated taint {nvidia.com/gpu: present}."
        )
    );
    // Requesting a GPU: GKE's ExtendedResourceToleration admission adds the toleration.
    create(&cluster, &gpu_pod("admitted", 1, json!([]))).await;
    create(&cluster, &gpu_pod("tol", 1, tolerate(&["nvidia.com/gpu"]))).await;
    for name in ["admitted", "tol"] {
        let p = pod_info(&cluster, name).await;
        assert_eq!(p.phase, "Running", "{p:?}");
        assert!(p.node.as_deref().is_some_and(|n| n.starts_with("gke-gpu-")));
        assert_eq!(p.unschedulable, None);
    }
}

#[tokio::test]
async fn pending_pods_scale_a_pool_up_from_zero() {
    let (sim, cluster) = explicit_sim_cluster().await;
    sim.world().kube.upsert_pool("k1", gpu_pool("gpu", 0, 3));
    for name in ["a", "b"] {
        create(&cluster, &gpu_pod(name, 1, tolerate(&["nvidia.com/gpu"]))).await;
    }
    let p = pod_info(&cluster, "a").await;
    assert_eq!(
        p.unschedulable.as_deref(),
        Some("no nodes available to schedule pods")
    );
    // The autoscaler planned exactly two nodes (one GPU each), however often it runs.
    for _ in 0..3 {
        let w = sim.world();
        let rt = &w.kube.clusters["k1"].runtime["gpu"];
        assert_eq!(rt.scale_to.map(|(_, n)| n), Some(2));
        assert_eq!(w.kube.pool_node_count("k1", "gpu"), Some(0));
    }
    sim.clock().advance(Duration::from_secs(61));
    assert_eq!(sim.world().kube.pool_node_count("k1", "gpu"), Some(2));
    for name in ["a", "b"] {
        let p = pod_info(&cluster, name).await;
        assert_eq!(p.phase, "Running", "{p:?}");
    }
    assert_eq!(cluster.nodes().await.expect("nodes").len(), 2);
}

#[tokio::test]
async fn a_pod_that_fits_nowhere_stays_pending_with_the_reason() {
    let (sim, cluster) = explicit_sim_cluster().await;
    sim.world().kube.upsert_pool("k1", gpu_pool("gpu", 1, 3));
    create(
        &cluster,
        &gpu_pod("huge", 16, tolerate(&["nvidia.com/gpu"])),
    )
    .await;
    let p = pod_info(&cluster, "huge").await;
    assert_eq!(
        p.unschedulable.as_deref(),
        Some("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    );
    sim.clock().advance(Duration::from_secs(120));
    let w = sim.world();
    assert_eq!(
        w.kube.pool_node_count("k1", "gpu"),
        Some(1),
        "no useless scale-up"
    );
    assert!(w.kube.clusters["k1"].runtime["gpu"].scale_to.is_none());
}

#[tokio::test]
async fn a_spot_reclaim_sends_pods_back_to_pending_then_to_the_failover_pool() {
    let (sim, cluster) = explicit_sim_cluster().await;
    {
        let mut w = sim.world();
        w.kube.upsert_pool("k1", spot_gpu_pool("gpu-spot", 1, 2));
        w.kube.upsert_pool("k1", gpu_pool("gpu-ondemand", 0, 2));
    }
    let tol = tolerate(&["nvidia.com/gpu", "cloud.google.com/gke-spot"]);
    create(&cluster, &gpu_pod("train", 1, tol)).await;
    let p = pod_info(&cluster, "train").await;
    assert!(
        p.node
            .as_deref()
            .is_some_and(|n| n.starts_with("gke-gpu-spot-")),
        "{p:?}"
    );

    let resp = kineticd::app::http_client()
        .expect("http")
        .post(format!(
            "{}/sim/v1/kube/k1/pools/gpu-spot:reclaim",
            sim.url()
        ))
        .send()
        .await
        .expect("reclaim");
    assert_eq!(resp.status(), 200);
    let report: Value = resp.json().await.expect("json");
    assert_eq!(report["pods"], json!(["default/train"]));
    assert_eq!(report["nodes"].as_array().map(Vec::len), Some(1));

    let p = pod_info(&cluster, "train").await;
    assert_eq!((p.phase.as_str(), p.node.as_deref()), ("Pending", None));
    assert_eq!(sim.world().kube.pool_node_count("k1", "gpu-spot"), Some(0));

    // The spot pool is out of capacity: the autoscaler grows the on-demand pool instead.
    sim.clock().advance(Duration::from_secs(61));
    let p = pod_info(&cluster, "train").await;
    assert_eq!(p.phase, "Running");
    assert!(
        p.node
            .as_deref()
            .is_some_and(|n| n.starts_with("gke-gpu-ondemand-")),
        "{p:?}"
    );
    let w = sim.world();
    assert_eq!(w.kube.pool_node_count("k1", "gpu-ondemand"), Some(1));
    assert_eq!(w.kube.pool_node_count("k1", "gpu-spot"), Some(0));
}

#[tokio::test]
async fn reclaiming_an_on_demand_pool_is_refused() {
    let (sim, _cluster) = sim_cluster().await;
    sim.world().kube.upsert_pool("k1", gpu_pool("gpu", 1, 1));
    for (pool, status) in [("gpu", 400), ("nope", 404)] {
        let path = format!("/sim/v1/kube/k1/pools/{pool}:reclaim");
        let (got, body) = raw(&sim, reqwest::Method::POST, &path, None).await;
        assert_eq!(got, status, "{pool}: {body}");
    }
}
