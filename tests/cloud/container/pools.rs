//! GKE node pools against the simulator: every pool call, the Kubernetes side's node
//! counts, quota consumed and released, quota exceeded and stockouts reported through
//! operations, and GKE's machine type / accelerator / TPU topology rules.

use kineticd::cloud::gcp::types::container::NodeTaint;
use serde_json::json;

use super::*;
use crate::common::{sim_admin, start_sim};
use crate::storage::simctl::assert_not_found;

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
    assert_not_found(c.get_node_pool(P, Z, "pools", "nope").await);
    assert_not_found(c.get_node_pool(P, Z, "nocluster", "x").await);
    assert_not_found(c.list_node_pools(P, Z, "nocluster").await);
    assert_not_found(c.delete_node_pool(P, Z, "pools", "nope").await);
    assert_not_found(c.set_node_pool_size(P, Z, "pools", "nope", 1).await);
    assert_not_found(c.create_node_pool(P, Z, "nocluster", &want).await);

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
    assert_not_found(c.get_node_pool(P, Z, "pools", "gpu-l4-1a2b").await);
    assert_eq!(sim.world().kube.pool_node_count(&key, "gpu-l4-1a2b"), None);
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
    add_node_pool(
        &gcp,
        "quota",
        &gpu_pool("gpu-l4x2-0001", "g2-standard-24", "nvidia-l4", 2, 3),
    )
    .await;
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

    add_node_pool(
        &gcp,
        "quota",
        &tpu_pool("tpu-v5e-0001", "ct5lp-hightpu-4t", Some("4x4"), 4),
    )
    .await;
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
    sim_admin(&sim, reqwest::Method::POST, "/sim/v1/quotas", Some(body)).await;
    assert_eq!(region_quota(&gcp, "NVIDIA_L4_GPUS").await, (0.0, 8.0));

    let pool = gpu_pool("gpu-l4x2-0002", "g2-standard-24", "nvidia-l4", 2, 5);
    let e = failed_node_pool(&gcp, "short", &pool).await;
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
    add_node_pool(&gcp, "short", &l4_pool("gpu-l4-0003", 4)).await;
    let op = c
        .set_node_pool_size(P, Z, "short", "gpu-l4-0003", 9)
        .await
        .unwrap();
    assert_eq!(wait(&gcp, &op).await.unwrap_err().reason, "QUOTA_EXCEEDED");
    assert_eq!(region_quota(&gcp, "NVIDIA_L4_GPUS").await.0, 4.0);

    // The QUOTA_EXCEEDED fault produces the same operation error.
    arm(&sim, "container", "nodePools.create", "QUOTA_EXCEEDED", 1).await;
    let e = failed_node_pool(&gcp, "short", &l4_pool("gpu-l4-0004", 0)).await;
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
    sim_admin(&sim, reqwest::Method::POST, "/sim/v1/stockouts", Some(body)).await;
    let e = failed_node_pool(&gcp, "stock", &l4_pool("gpu-l4-0005", 1)).await;
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
    add_node_pool(
        &gcp,
        "stock",
        &gpu_pool("gpu-t4-0006", "n1-standard-4", "nvidia-tesla-t4", 1, 1),
    )
    .await;
    sim_admin(&sim, reqwest::Method::DELETE, "/sim/v1/stockouts", None).await;

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
    // (what, pool, machine type, accelerator, accelerators per node), no nodes.
    #[rustfmt::skip]
    let bad_gpus = [
        ("l4 x2 on g2-standard-4", "gpu-d", "g2-standard-4", "nvidia-l4", 2),
        ("l4 on n1", "gpu-e", "n1-standard-4", "nvidia-l4", 1),
        ("t4 on e2", "gpu-f", "e2-standard-4", "nvidia-tesla-t4", 1),
        ("t4 x3", "gpu-g", "n1-standard-8", "nvidia-tesla-t4", 3),
        ("a100 x2 on a2-highgpu-1g", "gpu-h", "a2-highgpu-1g", "nvidia-tesla-a100", 2),
        ("a100-80gb on a2-highgpu", "gpu-i", "a2-highgpu-1g", "nvidia-a100-80gb", 1),
        ("h100 x4 on a3-highgpu-8g", "gpu-j", "a3-highgpu-8g", "nvidia-h100-80gb", 4),
        ("unknown accelerator", "gpu-k", "n1-standard-4", "nvidia-tesla-k80", 1),
        ("zero count", "gpu-l", "g2-standard-4", "nvidia-l4", 0),
        ("unknown machine", "gpu-m", "zz-standard-4", "", 0),
        ("TPU with accelerators", "tpu-p", "ct5lp-hightpu-4t", "nvidia-l4", 1),
    ];
    // (what, pool, topology, nodes) of ct5lp-hightpu-4t (TPU v5e) pools.
    let bad_tpus = [
        ("TPU topology", "tpu-n", "3x3", 0),
        ("TPU 4x4 with 3 nodes", "tpu-o", "4x4", 3),
        ("3D topology on v5e", "tpu-q", "2x2x2", 0),
    ];
    let gpus = bad_gpus.map(|(what, name, machine, accel, count)| {
        (what, gpu_pool(name, machine, accel, count, 0))
    });
    let tpus = bad_tpus.map(|(what, name, topology, nodes)| {
        (
            what,
            tpu_pool(name, "ct5lp-hightpu-4t", Some(topology), nodes),
        )
    });
    let others = [
        ("multi-host without COMPACT", multi_no_compact),
        ("two accelerator entries", two_accels),
        ("taint effect spelling", bad_taint),
        ("pool name", l4_pool("GPU", 0)),
    ];
    let rejected = gpus.into_iter().chain(tpus).chain(others);
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
    assert_unknown_field(&sim, &path, sim_body, "gpus").await;
}
