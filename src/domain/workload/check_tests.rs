//! Each static workload-check reason: a minimal spec that produces it, and the same
//! spec with the fix the problem names, which does not. Also: parsing every kind.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;

/// A test quantity parser: integers, `m`, `Gi` (the real one lives in the cloud layer).
pub(super) fn milli(q: &str) -> Option<i128> {
    if let Some(m) = q.strip_suffix('m') {
        return m.parse().ok();
    }
    if let Some(g) = q.strip_suffix("Gi") {
        return g.parse::<i128>().ok().map(|g| g * 1000 * (1 << 30));
    }
    q.parse::<f64>().ok().map(|v| (v * 1000.0).round() as i128)
}

pub(super) fn amounts(pairs: &[(&str, i128)]) -> Amounts {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v * 1000))
        .collect()
}

/// A node of `pool` in us-central1-a with `gpus` free.
pub(super) fn node(name: &str, gpus: i128) -> NodeFacts {
    NodeFacts {
        name: name.into(),
        zone: "us-central1-a".into(),
        schedulable: true,
        free: amounts(&[(GPU, gpus), ("cpu", 3), ("memory", 12 << 30)]),
    }
}

/// An L4 pool (1 GPU per node) with `nodes` nodes, all free, at most `max`.
pub(super) fn l4(id: &str, nodes: usize, max: u32) -> PoolFacts {
    l4_record(id, nodes, max).with_gke_defaults()
}

/// [`l4`] before GKE's own labels and taints.
fn l4_record(id: &str, nodes: usize, max: u32) -> PoolFacts {
    PoolFacts {
        pool_id: id.into(),
        kind: PoolKind::Gpu,
        machine_type: "g2-standard-4".into(),
        accelerator_type: Some("nvidia-l4".into()),
        accelerators_per_node: 1,
        tpu_topology: None,
        zones: vec!["us-central1-a".into()],
        labels: BTreeMap::new(),
        taints: Vec::new(),
        min_nodes: 0,
        max_nodes: max,
        spot: false,
        failover_pair: None,
        driver_version: Some("LATEST".into()),
        node_allocatable: Some(amounts(&[(GPU, 1), ("cpu", 3), ("memory", 12 << 30)])),
        nodes: (0..nodes).map(|i| node(&format!("{id}-{i}"), 1)).collect(),
        quota_metric: Some("NVIDIA_L4_GPUS".into()),
        units_per_gpu: 1,
    }
}

/// A v5e 2x4 TPU pool: one host of 8 chips (`ct5lp-hightpu-8t`), no nodes yet.
pub(super) fn v5e(id: &str) -> PoolFacts {
    PoolFacts {
        pool_id: id.into(),
        kind: PoolKind::Tpu,
        machine_type: "ct5lp-hightpu-8t".into(),
        accelerator_type: Some("tpu-v5-lite-podslice".into()),
        accelerators_per_node: 8,
        tpu_topology: Some("2x4".into()),
        node_allocatable: Some(amounts(&[(TPU, 8)])),
        nodes: Vec::new(),
        quota_metric: None,
        ..l4_record(id, 0, 1)
    }
    .with_gke_defaults()
}

pub(super) fn cluster(pools: Vec<PoolFacts>) -> ClusterFacts {
    ClusterFacts {
        gke_version: Some("1.31.5-gke.1023000".into()),
        pools,
        quotas: BTreeMap::new(),
    }
}

/// A Pod with one container (`resources`) and `extra` merged into its spec.
pub(super) fn pod(resources: Value, extra: Value) -> Value {
    let mut spec =
        json!({"containers": [{"name": "c", "image": "busybox", "resources": resources}]});
    if let (Some(s), Value::Object(e)) = (spec.as_object_mut(), extra) {
        s.extend(e);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
}

pub(super) fn gpus(n: u32) -> Value {
    json!({"limits": {"nvidia.com/gpu": n}})
}

pub(super) fn run(w: &Value, c: &ClusterFacts) -> Report {
    check(&parse(w, milli).expect("parses"), c)
}

/// `w` produces `reason` and `fixed` does not (and the fixed one schedules).
fn produced_then_fixed(reason: Reason, w: Value, fixed: Value, c: &ClusterFacts) {
    let r = run(&w, c);
    assert!(r.has(reason), "{reason:?} expected: {r:#?}");
    let f = r.problem(reason).unwrap();
    assert!(!f.message.is_empty() && !f.fix.is_empty());
    let r = run(&fixed, c);
    assert!(
        !r.has(reason),
        "{reason:?} not expected after the fix: {r:#?}"
    );
    assert!(r.schedulable, "{r:#?}");
}

#[test]
fn a_gpu_request_gets_the_gpu_toleration_from_admission() {
    let c = cluster(vec![l4("gpu", 1, 3)]);
    let r = run(&pod(gpus(1), json!({})), &c);
    assert_eq!(r.verdict, Fit::Now, "{r:#?}");
    assert!(r.problems.is_empty());
    assert_eq!(r.pools[0].fits, Fit::Now);
}

#[test]
fn missing_toleration_for_the_spot_taint() {
    let mut spot = l4("gpu-spot", 1, 3);
    spot.spot = true;
    spot.taints.push(Taint {
        key: "gpu-pool-type".into(),
        value: "spot".into(),
        effect: "NoSchedule".into(),
    });
    let c = cluster(vec![spot]);
    let tol = json!({"tolerations": [{"key": "gpu-pool-type", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}]});
    produced_then_fixed(
        Reason::MissingToleration,
        pod(gpus(1), json!({})),
        pod(gpus(1), tol),
        &c,
    );
}

#[test]
fn missing_toleration_for_a_gpu_node_targeted_without_requesting_a_gpu() {
    let c = cluster(vec![l4("gpu", 1, 3)]);
    let sel = json!({"nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-l4"}});
    let r = run(&pod(json!({}), sel.clone()), &c);
    assert!(r.has(Reason::MissingToleration), "{r:#?}");
    assert!(
        r.problems[0]
            .message
            .contains("nvidia.com/gpu=present:NoSchedule")
    );
    // The fix it names: request the GPU (admission then adds the toleration).
    produced_then_fixed(
        Reason::MissingToleration,
        pod(json!({}), sel.clone()),
        pod(gpus(1), sel),
        &c,
    );
}

#[test]
fn a_compute_class_selector_gets_the_class_toleration() {
    let mut p = l4("gpu-cc", 1, 3);
    p.labels.insert(
        "cloud.google.com/compute-class".into(),
        "l4-fallback".into(),
    );
    p.taints.push(Taint {
        key: "cloud.google.com/compute-class".into(),
        value: "l4-fallback".into(),
        effect: "NoSchedule".into(),
    });
    let c = cluster(vec![p]);
    assert!(run(&pod(gpus(1), json!({})), &c).has(Reason::MissingToleration));
    let sel = json!({"nodeSelector": {"cloud.google.com/compute-class": "l4-fallback"}});
    let r = run(&pod(gpus(1), sel), &c);
    assert_eq!(r.verdict, Fit::Now, "{r:#?}");
}

#[test]
fn no_matching_pool_for_an_accelerator_the_cluster_lacks() {
    let c = cluster(vec![l4("gpu", 1, 3)]);
    let h100 = json!({"nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}});
    let l4sel = json!({"nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-l4"}});
    produced_then_fixed(
        Reason::NoMatchingPool,
        pod(gpus(1), h100),
        pod(gpus(1), l4sel),
        &c,
    );
    // A TPU request on a GPU-only cluster.
    let tpu = json!({"limits": {"google.com/tpu": 8}});
    let r = run(&pod(tpu, json!({})), &c);
    assert!(r.has(Reason::NoMatchingPool), "{r:#?}");
    assert_eq!(r.verdict, Fit::Never);
}

#[test]
fn node_selector_matches_nothing() {
    let c = cluster(vec![l4("gpu", 1, 3)]);
    let bad = json!({"nodeSelector": {"team": "vision"}});
    let good = json!({"nodeSelector": {"cloud.google.com/gke-nodepool": "gpu"}});
    // Through required node affinity too.
    let aff = |op: &str| {
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "team", "operator": op}]}]}}}})
    };
    for (w, fixed) in [(bad, good), (aff("Exists"), aff("DoesNotExist"))] {
        produced_then_fixed(
            Reason::NodeSelectorMatchesNothing,
            pod(gpus(1), w),
            pod(gpus(1), fixed),
            &c,
        );
    }
}

#[test]
fn accelerator_count_too_large() {
    let c = cluster(vec![l4("gpu", 1, 3)]);
    produced_then_fixed(
        Reason::AcceleratorCountTooLarge,
        pod(gpus(2), json!({})),
        pod(gpus(1), json!({})),
        &c,
    );
}

#[test]
fn tpu_topology_mismatch_by_chips_and_by_selector() {
    let c = cluster(vec![v5e("tpu")]);
    let chips = |n: u32| json!({"limits": {"google.com/tpu": n}});
    let topo = |t: &str| {
        json!({"nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
                                                 "cloud.google.com/gke-tpu-topology": t}})
    };
    let acc = |a: &str| json!({"nodeSelector": {"cloud.google.com/gke-tpu-accelerator": a}});
    for (w, fixed) in [
        (pod(chips(4), json!({})), pod(chips(8), json!({}))),
        (pod(chips(8), topo("4x4")), pod(chips(8), topo("2x4"))),
        (
            pod(chips(8), acc("tpu-v6e-slice")),
            pod(chips(8), acc("tpu-v5-lite-podslice")),
        ),
    ] {
        produced_then_fixed(Reason::TpuTopologyMismatch, w, fixed, &c);
    }
}

#[test]
fn zone_pinned_by_selector_and_by_affinity() {
    let c = cluster(vec![l4("gpu", 1, 3)]);
    let zone = |z: &str| json!({"nodeSelector": {"topology.kubernetes.io/zone": z}});
    let aff = |z: &str| {
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [z]}]}]}}}})
    };
    for (w, fixed) in [
        (zone("us-central1-b"), zone("us-central1-a")),
        (aff("us-east1-b"), aff("us-central1-a")),
    ] {
        produced_then_fixed(Reason::ZonePinned, pod(gpus(1), w), pod(gpus(1), fixed), &c);
    }
}

#[test]
fn cuda_driver_mismatch_against_the_driver_table() {
    let mut p = l4("gpu", 1, 3);
    p.driver_version = Some("DEFAULT".into()); // GKE 1.31 DEFAULT: R535, CUDA 12.2.
    let c = cluster(vec![p]);
    let image = |i: &str| {
        let mut w = pod(gpus(1), json!({}));
        w["spec"]["containers"][0]["image"] = json!(i);
        w
    };
    produced_then_fixed(
        Reason::CudaDriverMismatch,
        image("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"),
        image("pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime"),
        &c,
    );
    let r = run(&image("nvidia/cuda:12.8.0-runtime-ubuntu22.04"), &c);
    assert!(r.has(Reason::CudaDriverMismatch), "{r:#?}");
    // The other fix it names: a pool on the LATEST driver (R550 on 1.31: CUDA 12.4).
    let mut latest = l4("gpu", 1, 3);
    latest.driver_version = Some("LATEST".into());
    let r = run(
        &image("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"),
        &cluster(vec![latest]),
    );
    assert!(!r.has(Reason::CudaDriverMismatch), "{r:#?}");
}

#[test]
fn the_cuda_table() {
    use super::cuda::*;
    assert_eq!(
        image_cuda("nvidia/cuda:12.8.0-runtime-ubuntu22.04"),
        Some((12, 8))
    );
    assert_eq!(
        image_cuda("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"),
        Some((12, 4))
    );
    assert_eq!(image_cuda("vllm/vllm:0.6.0-cu121"), Some((12, 1)));
    assert_eq!(image_cuda("busybox"), None);
    assert_eq!(image_cuda("localhost:5000/app"), None);
    assert_eq!(driver_max_cuda("535.216.03"), Some((12, 2)));
    assert_eq!(driver_max_cuda("550"), Some((12, 4)));
    assert_eq!(driver_max_cuda("570.86.15"), Some((12, 8)));
    assert_eq!(driver_max_cuda("400"), None);
    assert_eq!(gke_driver("1.31.5-gke.1023000", "DEFAULT"), Some(535));
    assert_eq!(gke_driver("1.32.1-gke.1", "LATEST"), Some(570));
    assert_eq!(
        gke_driver("1.40.0-gke.1", "DEFAULT"),
        Some(570),
        "newer: nearest older row"
    );
    assert_eq!(gke_driver("1.20.0", "DEFAULT"), None);
    assert_eq!(
        pool_max_cuda(Some("INSTALLATION_DISABLED"), Some("1.31.0")),
        None
    );
    assert_eq!(
        pool_max_cuda(None, Some("1.31.0")).map(|p| p.1),
        Some((12, 2))
    );
}

#[test]
fn gpu_limit_missing() {
    let c = cluster(vec![l4("gpu", 1, 3)]);
    let req = json!({"requests": {"nvidia.com/gpu": "1"}});
    let both = json!({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}});
    let r = run(&pod(req.clone(), json!({})), &c);
    assert_eq!(r.verdict, Fit::Never);
    assert!(r.pools.iter().all(|p| p.fits == Fit::Never));
    produced_then_fixed(
        Reason::GpuLimitMissing,
        pod(req, json!({})),
        pod(both, json!({})),
        &c,
    );
}

#[test]
fn every_kind_parses_into_its_pod_groups() {
    let tpl = json!({"spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}});
    let parsed = |v: Value| parse(&v, milli).expect("parses");
    let d = parsed(
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 3, "template": tpl}}),
    );
    assert_eq!(
        (
            d.groups.len(),
            d.groups[0].replicas,
            d.groups[0].pod.units(GPU)
        ),
        (1, 3, 1)
    );
    let s =
        parsed(json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"template": tpl}}));
    assert_eq!(s.groups[0].replicas, 1, "replicas default to 1");
    let j = parsed(
        json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 4, "completions": 2, "template": tpl}}),
    );
    assert_eq!(j.groups[0].replicas, 2);
    let js = parsed(
        json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "spec": {"replicatedJobs": [
        {"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 4, "template": tpl}}}]}}),
    );
    assert_eq!(
        (js.groups[0].role.as_str(), js.groups[0].replicas),
        ("workers", 8)
    );
    let lws = parsed(
        json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "spec": {
        "replicas": 2, "leaderWorkerTemplate": {"size": 4, "workerTemplate": tpl,
        "leaderTemplate": {"spec": {"containers": [{"name": "l", "image": "i"}]}}}}}),
    );
    let g: Vec<(&str, u32, u64)> = lws
        .groups
        .iter()
        .map(|g| (g.role.as_str(), g.replicas, g.pod.units(GPU)))
        .collect();
    assert_eq!(g, [("leader", 2, 0), ("worker", 6, 1)]);
}

#[test]
fn quantities_and_bad_manifests() {
    let as_number = pod(
        json!({"limits": {"nvidia.com/gpu": 1, "cpu": 0.5}}),
        json!({}),
    );
    let as_string = pod(
        json!({"limits": {"nvidia.com/gpu": "1", "cpu": "500m"}}),
        json!({}),
    );
    assert_eq!(
        parse(&as_number, milli),
        parse(&as_string, milli),
        "numbers are quantities"
    );
    let e = parse(&json!({"kind": "CronJob", "spec": {}}), milli).unwrap_err();
    assert!(matches!(&e, ParseError::UnknownKind(k) if k == "CronJob"));
    assert!(e.to_string().contains("LeaderWorkerSet"), "{e}");
    assert_eq!(parse(&json!([1]), milli), Err(ParseError::NotObject));
    let bad = pod(json!({"limits": {"nvidia.com/gpu": "lots"}}), json!({}));
    let e = parse(&bad, milli).unwrap_err().to_string();
    assert!(
        e.contains("spec.containers[0].resources.limits.nvidia.com/gpu"),
        "{e}"
    );
    let e = parse(
        &json!({"apiVersion": "v1", "kind": "Deployment", "spec": {}}),
        milli,
    )
    .unwrap_err();
    assert!(e.to_string().contains("apps/v1"), "{e}");
}
