//! Unit tests of the capacity computation on hand-made node and pod views; every
//! expected number is worked out by hand in the comments.

use std::collections::BTreeMap;

use super::*;
use crate::cloud::kube::inventory::{Requests, Taint, Toleration};
use crate::model::capacity::PendingReason;

fn taint(key: &str, value: &str) -> Taint {
    Taint {
        key: key.into(),
        value: Some(value.into()),
        effect: "NoSchedule".into(),
    }
}

fn node(name: &str, pool: &str, gpus: u64, tpus: u64, spot: bool) -> NodeInfo {
    let mut labels = BTreeMap::from([
        ("cloud.google.com/gke-nodepool".to_owned(), pool.to_owned()),
        ("kubernetes.io/hostname".to_owned(), name.to_owned()),
    ]);
    let mut taints = Vec::new();
    if gpus > 0 {
        labels.insert(
            "cloud.google.com/gke-accelerator".into(),
            "nvidia-l4".into(),
        );
        taints.push(taint("nvidia.com/gpu", "present"));
    }
    if tpus > 0 {
        labels.insert(
            "cloud.google.com/gke-tpu-accelerator".into(),
            "tpu-v5-lite-podslice".into(),
        );
        taints.push(taint("google.com/tpu", "present"));
    }
    if spot {
        labels.insert("cloud.google.com/gke-spot".into(), "true".into());
        taints.push(taint("cloud.google.com/gke-spot", "true"));
    }
    NodeInfo {
        uid: String::new(),
        name: name.into(),
        pool: Some(pool.into()),
        zone: Some("us-central1-a".into()),
        instance_type: None,
        spot,
        ready: true,
        unschedulable: false,
        labels,
        taints,
        gpus,
        tpus,
        cpu_millis: 48_000,
        memory_bytes: 192 << 30,
    }
}

fn exists(key: &str) -> Toleration {
    Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        value: None,
        effect: None,
    }
}

fn pod(name: &str, node: Option<&str>, phase: &str, gpus: u64, tpus: u64) -> PodInfo {
    let mut tolerations = Vec::new();
    if gpus > 0 {
        tolerations.push(exists("nvidia.com/gpu"));
    }
    if tpus > 0 {
        tolerations.push(exists("google.com/tpu"));
    }
    PodInfo {
        namespace: "default".into(),
        name: name.into(),
        phase: phase.into(),
        node: node.map(str::to_owned),
        requests: Requests {
            cpu_millis: 100,
            memory_bytes: 1 << 30,
            gpus,
            tpus,
        },
        tolerations,
        node_selector: BTreeMap::new(),
        unschedulable: None,
    }
}

fn pending(name: &str, gpus: u64) -> PodInfo {
    pod(name, None, "Pending", gpus, 0)
}

/// A 4-GPU pool of three nodes using 1, 3 and 4 GPUs; a spot TPU pool of one idle
/// 4-chip node; a CPU node (left out).
fn cluster() -> (Vec<NodeInfo>, Vec<PodInfo>) {
    let nodes = vec![
        node("cpu-0", "default-pool", 0, 0, false),
        node("l4-0", "gpu-l4x4", 4, 0, false),
        node("l4-1", "gpu-l4x4", 4, 0, false),
        node("l4-2", "gpu-l4x4", 4, 0, false),
        node("v5e-0", "tpu-v5e", 0, 4, true),
    ];
    let pods = vec![
        pod("one", Some("l4-0"), "Running", 1, 0),
        pod("three", Some("l4-1"), "Running", 3, 0),
        pod("four-a", Some("l4-2"), "Running", 2, 0),
        // Bound but not yet running still holds its GPUs.
        pod("four-b", Some("l4-2"), "Pending", 2, 0),
        // Finished pods hold nothing.
        pod("done", Some("l4-0"), "Succeeded", 3, 0),
        pod("cpu", Some("cpu-0"), "Running", 0, 0),
    ];
    (nodes, pods)
}

fn facts(max: Option<u32>, headroom: Option<u64>) -> Vec<PoolFacts> {
    vec![PoolFacts {
        pool_id: "gpu-l4x4".into(),
        max_nodes: max,
        quota_headroom: headroom,
        template: None,
    }]
}

fn run(nodes: &[NodeInfo], pods: &[PodInfo], pools: &[PoolFacts]) -> ClusterCapacity {
    compute(&Facts {
        nodes,
        pods,
        pools,
        prices: &PriceTable::default(),
    })
}

fn counts(allocatable: u64, requested: u64, free: u64, stranded: u64, largest: u64) -> Counts {
    Counts {
        allocatable,
        requested,
        free,
        stranded,
        largest_placeable_request: largest,
    }
}

#[test]
fn fragmented_usage_per_node_pool_and_type() {
    let (nodes, pods) = cluster();
    let c = run(&nodes, &pods, &facts(Some(3), None));
    let ids: Vec<&str> = c.node_pools.iter().map(|p| p.pool_id.as_str()).collect();
    assert_eq!(ids, ["gpu-l4x4", "tpu-v5e"], "CPU pools are left out");
    let l4 = &c.node_pools[0];
    let per_node: Vec<(&str, Counts, u32)> = l4
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.counts, n.accelerator_pods))
        .collect();
    assert_eq!(
        per_node,
        [
            ("l4-0", counts(4, 1, 3, 3, 3), 1),
            ("l4-1", counts(4, 3, 1, 1, 1), 1),
            ("l4-2", counts(4, 4, 0, 0, 0), 2),
        ]
    );
    // 12 GPUs, 1 + 3 + 4 requested, 3 + 1 free and all of it stranded.
    assert_eq!(l4.counts, counts(12, 8, 4, 4, 3));
    assert_eq!((l4.per_node, l4.node_count, l4.max_nodes), (4, 3, Some(3)));
    // 4 free L4s at 0.71 on demand.
    assert_eq!(l4.idle_cost.as_ref().map(|i| i.amount), Some(2.84));
    let tpu = &c.node_pools[1];
    assert_eq!(tpu.counts, counts(4, 0, 4, 0, 4));
    assert!(tpu.spot);
    // 4 idle v5e chips at the spot price 0.48.
    assert_eq!(tpu.idle_cost.as_ref().map(|i| i.amount), Some(1.92));
    let types: Vec<(&str, &str, Counts)> = c
        .accelerators
        .iter()
        .map(|a| (a.accelerator_type.as_str(), a.resource.as_str(), a.counts))
        .collect();
    assert_eq!(
        types,
        [
            ("nvidia-l4", "nvidia.com/gpu", counts(12, 8, 4, 4, 3)),
            (
                "tpu-v5-lite-podslice",
                "google.com/tpu",
                counts(4, 0, 4, 0, 4)
            ),
        ]
    );
    let s = &c.summary;
    assert_eq!(
        (s.allocatable, s.requested, s.free, s.stranded),
        (16, 8, 8, 4)
    );
    assert_eq!(s.idle_cost.amount, 4.76);
    assert_eq!(
        s.text,
        "8 of 16 accelerators requested (50%); 8 free, 4 of them stranded on partly used \
         nodes; largest request placeable now: 4; idle accelerators cost USD 4.76/hour"
    );
    assert!(c.pending_pods.is_empty());
}

fn reasons(c: &ClusterCapacity) -> Vec<(&str, PendingReason)> {
    c.pending_pods
        .iter()
        .map(|p| (p.name.as_str(), p.reason))
        .collect()
}

#[test]
fn every_pending_reason() {
    let (nodes, mut pods) = cluster();
    let mut h100 = pending("h100", 1);
    h100.node_selector.insert(
        "cloud.google.com/gke-accelerator".into(),
        "nvidia-h100-80gb".into(),
    );
    let mut pinned = pending("pinned", 1);
    pinned
        .node_selector
        .insert("kubernetes.io/hostname".into(), "gone".into());
    let mut untolerated = pending("untolerated", 1);
    untolerated.tolerations.clear();
    let mut spot = pod("spot", None, "Pending", 0, 1);
    spot.node_selector
        .insert("cloud.google.com/gke-spot".into(), "true".into());
    pods.extend([
        h100,
        pinned,
        untolerated,
        spot,
        pending("eight", 8),
        pending("four", 4),
        pending("three", 3),
    ]);
    let c = run(&nodes, &pods, &facts(Some(3), None));
    assert_eq!(
        reasons(&c),
        [
            ("h100", PendingReason::NoMatchingPool),
            ("pinned", PendingReason::NodeSelectorMatchesNothing),
            ("untolerated", PendingReason::MissingToleration),
            ("spot", PendingReason::MissingToleration),
            ("eight", PendingReason::AcceleratorCountTooLarge),
            ("four", PendingReason::PoolAtMax),
            ("three", PendingReason::FitsNow),
        ]
    );
    let by = |n: &str| c.pending_pods.iter().find(|p| p.name == n).unwrap();
    assert!(
        by("untolerated")
            .message
            .contains("gpu-l4x4 has nvidia.com/gpu=present:NoSchedule"),
        "{}",
        by("untolerated").message
    );
    assert!(
        by("spot")
            .message
            .contains("cloud.google.com/gke-spot=true")
    );
    assert!(
        by("eight").message.contains("has 4"),
        "{}",
        by("eight").message
    );
    assert!(by("four").message.contains("gpu-l4x4 (3/3 nodes)"));
    assert!(by("three").message.contains("node l4-0"));
    assert_eq!(by("four").pools, ["gpu-l4x4"]);
    assert!(c.summary.text.contains(
        "7 pods pending for accelerators (1 ACCELERATOR_COUNT_TOO_LARGE, 1 FITS_NOW, \
         2 MISSING_TOLERATION, 1 NODE_SELECTOR_MATCHES_NOTHING, 1 NO_MATCHING_POOL, \
         1 POOL_AT_MAX)"
    ));

    // Below the ceiling: the autoscaler can add a node, unless the quota cannot pay for 4.
    let (nodes, mut four) = cluster();
    four.push(pending("four", 4));
    let grow = run(&nodes, &four, &facts(Some(5), None));
    assert_eq!(reasons(&grow), [("four", PendingReason::ScaleUpPending)]);
    let quota = run(&nodes, &four, &facts(Some(5), Some(3)));
    assert_eq!(reasons(&quota), [("four", PendingReason::QuotaExhausted)]);
    let enough = run(&nodes, &four, &facts(Some(5), Some(4)));
    assert_eq!(reasons(&enough), [("four", PendingReason::ScaleUpPending)]);
}

#[test]
fn no_accelerator_pool_and_empty_pools_from_templates() {
    let cpu = [node("cpu-0", "default-pool", 0, 0, false)];
    let want = [pending("gpu", 1)];
    let c = run(&cpu, &want, &[]);
    assert_eq!(reasons(&c), [("gpu", PendingReason::NoMatchingPool)]);
    assert!(c.node_pools.is_empty());
    assert!(
        c.summary
            .text
            .starts_with("no accelerators allocatable; 1 pods pending")
    );

    // A pool scaled to zero is known from its template and may grow.
    let template = PoolFacts {
        pool_id: "gpu-l4x4".into(),
        max_nodes: Some(2),
        quota_headroom: None,
        template: Some(node("template", "gpu-l4x4", 4, 0, false)),
    };
    let c = run(&cpu, &want, std::slice::from_ref(&template));
    assert_eq!(reasons(&c), [("gpu", PendingReason::ScaleUpPending)]);
    let p = &c.node_pools[0];
    assert_eq!(
        (p.node_count, p.per_node, p.counts),
        (0, 4, Counts::default())
    );
}

#[test]
fn cordoned_and_unready_nodes_place_nothing() {
    let (mut nodes, pods) = cluster();
    nodes[1].unschedulable = true; // l4-0: 3 free
    nodes[2].ready = false; // l4-1: 1 free
    let c = run(&nodes, &pods, &facts(Some(3), None));
    let l4 = &c.node_pools[0];
    // Still free and stranded, but nowhere to place even one GPU now.
    assert_eq!(l4.counts, counts(12, 8, 4, 4, 0));
    assert!(!l4.nodes[0].schedulable && !l4.nodes[1].schedulable);
}
