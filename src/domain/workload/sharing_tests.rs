//! Partitioned and shared GPU pools: a one-GPU pod takes one unit, selectors of sizes no
//! pool has, requests larger than a node's units, more than one shared GPU per
//! container, and quota counted in physical GPUs.

use serde_json::json;

use super::check_tests::{amounts, cluster, node, pod, run};
use super::*;
use crate::domain::gpu_sharing::{MAX_CLIENTS_LABEL, PARTITION_LABEL, STRATEGY_LABEL};

/// An A100 pool in `1g.5gb` slices: 1 GPU a node, 7 units, `nodes` nodes all free.
fn mig(nodes: usize, max: u32) -> PoolFacts {
    let mut p = super::check_tests::l4("gpu-a100-mig", nodes, max);
    p.machine_type = "a2-highgpu-1g".into();
    p.accelerator_type = Some("nvidia-tesla-a100".into());
    p.labels
        .insert(GPU_LABEL_KEY.into(), "nvidia-tesla-a100".into());
    p.labels.insert(PARTITION_LABEL.into(), "1g.5gb".into());
    p.units_per_gpu = 7;
    p.node_allocatable = Some(amounts(&[(GPU, 7), ("cpu", 11), ("memory", 80 << 30)]));
    p.nodes = (0..nodes)
        .map(|i| {
            let mut n = node(&format!("mig-{i}"), 7);
            n.free = amounts(&[(GPU, 7), ("cpu", 11), ("memory", 80 << 30)]);
            n
        })
        .collect();
    p.quota_metric = Some("NVIDIA_A100_GPUS".into());
    p
}

const GPU_LABEL_KEY: &str = "cloud.google.com/gke-accelerator";

/// `replicas` pods of one container asking `gpus` GPUs, selecting `selector`.
fn deployment(replicas: u32, gpus: u32, selector: serde_json::Value) -> serde_json::Value {
    let spec = pod(
        json!({"limits": {"nvidia.com/gpu": gpus}}),
        json!({"nodeSelector": selector}),
    )["spec"]
        .clone();
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": replicas, "template": {"spec": spec}}})
}

#[test]
fn one_gpu_pods_take_one_slice() {
    let sel = json!({PARTITION_LABEL: "1g.5gb"});
    let c = cluster(vec![mig(1, 1)]);
    let r = run(&deployment(7, 1, sel.clone()), &c);
    assert_eq!(r.verdict, Fit::Now, "{r:#?}");
    let r = run(&deployment(8, 1, sel.clone()), &c);
    assert!(r.has(Reason::PoolAtMax), "{r:#?}");
    // Without the selector they land there too (GKE Standard does not require it).
    let r = run(&deployment(7, 1, json!({})), &c);
    assert_eq!(r.verdict, Fit::Now, "{r:#?}");
    // A slice of a size no pool has.
    let r = run(&deployment(1, 1, json!({PARTITION_LABEL: "2g.10gb"})), &c);
    assert_eq!(r.verdict, Fit::Never, "{r:#?}");
    let p = r
        .problem(Reason::NodeSelectorMatchesNothing)
        .unwrap_or_else(|| panic!("{r:#?}"));
    assert!(p.fix.contains("\"partitionSize\": \"2g.10gb\""), "{p:#?}");
    assert!(p.message.contains("1g.5gb"), "{p:#?}");
    // Eight slices in one pod: a node has seven.
    let r = run(&deployment(1, 8, sel), &c);
    let p = r
        .problem(Reason::AcceleratorCountTooLarge)
        .unwrap_or_else(|| panic!("{r:#?}"));
    assert!(p.message.contains("7 nvidia.com/gpu units"), "{p:#?}");
}

#[test]
fn a_new_node_is_seven_slices_but_one_gpu_of_quota() {
    let mut c = cluster(vec![mig(0, 1)]);
    c.quotas.insert(
        "NVIDIA_A100_GPUS".into(),
        QuotaFacts {
            limit: 1.0,
            usage: 0.0,
        },
    );
    let r = run(&deployment(7, 1, json!({PARTITION_LABEL: "1g.5gb"})), &c);
    assert_eq!(r.verdict, Fit::AfterScaleUp, "{r:#?}");
    c.quotas.get_mut("NVIDIA_A100_GPUS").unwrap().usage = 1.0;
    let r = run(&deployment(7, 1, json!({PARTITION_LABEL: "1g.5gb"})), &c);
    assert!(r.has(Reason::QuotaExhausted), "{r:#?}");
}

#[test]
fn shared_gpus_take_one_unit_per_container_on_multi_gpu_nodes() {
    // Two L4s a node, each shared by 4: 8 units.
    let mut p = super::check_tests::l4("gpu-l4-ts", 1, 1);
    p.accelerators_per_node = 2;
    p.units_per_gpu = 4;
    p.labels
        .insert(STRATEGY_LABEL.into(), "time-sharing".into());
    p.labels.insert(MAX_CLIENTS_LABEL.into(), "4".into());
    p.nodes[0].free = amounts(&[(GPU, 8), ("cpu", 3), ("memory", 12 << 30)]);
    p.node_allocatable = Some(amounts(&[(GPU, 8), ("cpu", 3), ("memory", 12 << 30)]));
    let c = cluster(vec![p.clone()]);
    let sel = json!({STRATEGY_LABEL: "time-sharing"});
    let r = run(&deployment(8, 1, sel.clone()), &c);
    assert_eq!(r.verdict, Fit::Now, "{r:#?}");
    let r = run(&deployment(1, 2, sel.clone()), &c);
    let bad = r
        .problem(Reason::AcceleratorCountTooLarge)
        .unwrap_or_else(|| panic!("{r:#?}"));
    assert!(
        bad.fix.contains("nvidia.com/gpu: 1 per container"),
        "{bad:#?}"
    );
    // One shared GPU a node: the device plugin lets a container take several shares.
    p.accelerators_per_node = 1;
    let r = run(&deployment(1, 2, sel.clone()), &cluster(vec![p]));
    assert!(!r.has(Reason::AcceleratorCountTooLarge), "{r:#?}");
    // The strategy a pod selects must be the pool's.
    let r = run(&deployment(1, 1, json!({STRATEGY_LABEL: "mps"})), &c);
    assert!(r.has(Reason::NodeSelectorMatchesNothing), "{r:#?}");
}
