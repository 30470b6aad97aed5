//! Capacity reasons and verdicts: free nodes now, scale-up within the pool's maximum and
//! the accelerator quota, spot-only placement, and multi-group workloads.

use serde_json::json;

use super::check_tests::{amounts, cluster, gpus, l4, node, pod, run};
use super::*;

fn deployment(replicas: u32, gpus_each: u32) -> serde_json::Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {
        "replicas": replicas, "template": {"spec": {"containers": [
            {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": gpus_each}}}]}}}})
}

#[test]
fn now_after_scale_up_and_pool_at_max() {
    // Two nodes, one of them full: one pod fits now.
    let mut p = l4("gpu", 2, 3);
    p.nodes[1].free = amounts(&[(GPU, 0)]);
    let c = cluster(vec![p.clone()]);
    let r = run(&deployment(1, 1), &c);
    assert_eq!((r.verdict, r.pools[0].fits), (Fit::Now, Fit::Now), "{r:#?}");
    // Two pods: the second needs a third node (max 3): after scale-up.
    let r = run(&deployment(2, 1), &c);
    assert_eq!(r.verdict, Fit::AfterScaleUp, "{r:#?}");
    assert!(r.problems.is_empty());
    // Three pods: two more nodes, but only one is allowed.
    produced_then_fixed_at(Reason::PoolAtMax, 3, c, |c| c.pools[0].max_nodes = 4);
}

/// `replicas` single-GPU pods on `c`: `reason`, and once `fix` is applied to `c`, not.
fn produced_then_fixed_at(
    reason: Reason,
    replicas: u32,
    mut c: ClusterFacts,
    fix: impl Fn(&mut ClusterFacts),
) {
    let r = run(&deployment(replicas, 1), &c);
    assert!(r.has(reason), "{reason:?}: {r:#?}");
    assert_eq!(r.verdict, Fit::Never);
    fix(&mut c);
    let r = run(&deployment(replicas, 1), &c);
    assert!(!r.has(reason), "{reason:?} after the fix: {r:#?}");
    assert_eq!(r.verdict, Fit::AfterScaleUp, "{r:#?}");
}

#[test]
fn quota_exhausted_when_scale_up_needs_more_accelerators_than_the_quota_has() {
    let mut c = cluster(vec![l4("gpu", 0, 10)]);
    c.quotas.insert(
        "NVIDIA_L4_GPUS".into(),
        QuotaFacts {
            limit: 8.0,
            usage: 7.0,
        },
    );
    let r = run(&deployment(1, 1), &c);
    assert_eq!(
        r.verdict,
        Fit::AfterScaleUp,
        "one GPU of quota left: {r:#?}"
    );
    produced_then_fixed_at(Reason::QuotaExhausted, 2, c, |c| {
        c.quotas.insert(
            "NVIDIA_L4_GPUS".into(),
            QuotaFacts {
                limit: 16.0,
                usage: 7.0,
            },
        );
    });
}

#[test]
fn spot_only_without_a_fallback() {
    let mut spot = l4("gpu-spot", 1, 3);
    spot.spot = true;
    let spot = spot.with_gke_defaults();
    let c = cluster(vec![spot.clone()]);
    let r = run(&pod(gpus(1), json!({})), &c);
    assert!(r.has(Reason::SpotOnlyNoFallback), "{r:#?}");
    assert!(r.schedulable, "a warning, not a refusal");
    // The fix: an on-demand pool the pods may also use.
    let c = cluster(vec![spot, l4("gpu-od", 0, 3)]);
    let r = run(&pod(gpus(1), json!({})), &c);
    assert!(!r.has(Reason::SpotOnlyNoFallback), "{r:#?}");
    // Pinning to spot brings it back.
    let pinned = json!({"nodeSelector": {"cloud.google.com/gke-spot": "true"}});
    assert!(run(&pod(gpus(1), pinned), &c).has(Reason::SpotOnlyNoFallback));
}

#[test]
fn a_never_verdict_reports_the_closest_pools_reason_only() {
    // A CPU pool (wrong kind) and a tainted spot GPU pool: the pod gets as far as the
    // taint on the GPU pool, so the taint is the problem, not "no matching pool".
    let mut cpu = l4("default-pool", 1, 1);
    cpu.kind = PoolKind::Cpu;
    cpu.accelerator_type = None;
    cpu.labels.clear();
    cpu.taints.clear();
    let mut spot = l4("gpu-spot", 1, 3);
    spot.taints.push(Taint {
        key: "gpu-pool-type".into(),
        value: "spot".into(),
        effect: "NoSchedule".into(),
    });
    let r = run(
        &pod(gpus(1), json!({})),
        &cluster(vec![cpu.with_gke_defaults(), spot]),
    );
    let reasons: Vec<Reason> = r.problems.iter().map(|p| p.reason).collect();
    assert_eq!(reasons, [Reason::MissingToleration], "{r:#?}");
    assert_eq!(r.pools[0].fits, Fit::Never);
    assert!(r.pools[0].reason.starts_with("NO_MATCHING_POOL"), "{r:#?}");
    // A CPU-only pod runs on the CPU pool, not the tainted GPU pool.
    let r = run(
        &pod(json!({"requests": {"cpu": "1"}}), json!({})),
        &cluster(vec![l4("gpu", 1, 1), {
            let mut d = l4("default-pool", 1, 1);
            d.kind = PoolKind::Cpu;
            d.accelerator_type = None;
            d.taints.clear();
            d.labels.clear();
            d.with_gke_defaults()
        }]),
    );
    assert_eq!(r.verdict, Fit::Now, "{r:#?}");
    assert_eq!(r.pools[0].fits, Fit::Never);
    assert_eq!(r.pools[1].fits, Fit::Now);
}

#[test]
fn a_leader_worker_set_needs_every_group_placed() {
    let lws = |size: u32| {
        json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
        "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": size, "workerTemplate": {"spec": {"containers": [
            {"name": "w", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}})
    };
    let c = cluster(vec![l4("gpu", 2, 2)]);
    assert_eq!(run(&lws(2), &c).verdict, Fit::Now);
    // Three pods on two nodes: the leader's pod takes one of them first.
    assert_eq!(run(&lws(3), &c).verdict, Fit::Never);
    assert_eq!(
        run(&lws(3), &cluster(vec![l4("gpu", 2, 3)])).verdict,
        Fit::AfterScaleUp
    );
    let r = run(&lws(4), &c);
    assert_eq!(
        r.verdict,
        Fit::Never,
        "four pods, two nodes at most: {r:#?}"
    );
    assert!(
        r.problems
            .iter()
            .any(|p| p.reason == Reason::PoolAtMax && p.message.starts_with("worker: ")),
        "{r:#?}"
    );
}

#[test]
fn cordoned_and_other_zone_nodes_do_not_count_now() {
    let mut p = l4("gpu", 1, 1);
    p.nodes[0].schedulable = false;
    let r = run(&pod(gpus(1), json!({})), &cluster(vec![p.clone()]));
    assert_eq!(r.verdict, Fit::Never, "cordoned, and at max: {r:#?}");
    p.nodes = vec![node("n", 1)];
    p.zones.push("us-central1-b".into());
    let zone = json!({"nodeSelector": {"topology.kubernetes.io/zone": "us-central1-b"}});
    let r = run(&pod(gpus(1), zone), &cluster(vec![p]));
    assert_eq!(
        r.verdict,
        Fit::AfterScaleUp,
        "the free node is in the other zone: {r:#?}"
    );
}
