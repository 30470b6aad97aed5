//! The simulated cluster autoscaler with a failover pair's ComputeClass: the choices it
//! makes for a pod that selects the class (spot first, on-demand while spot is backed
//! off after a reclaim, back to spot by active migration once the backoff is over), and
//! that a class with `DoNotScaleUp` never grows a pool outside it.
//!
//! Invariant: these tests drive [`ClusterKube`] alone on an explicit clock, so every
//! scale-up they see is the autoscaler's decision.

use std::time::Duration;

use serde_json::{Value, json};

use crate::sim::clock::{Clock, ClockMode};
use crate::sim::kube::PoolNodes;
use crate::sim::kube::cluster::{ClusterKube, RECLAIM_BACKOFF, SCALE_UP_DELAY};
use crate::sim::kube::compute_class::CLASS_KEY;
use crate::sim::kube::objects::ObjKey;
use crate::sim::kube::sched::pending_status;

fn gpu_pool(name: &str, spot: bool, class: Option<&str>) -> PoolNodes {
    PoolNodes {
        spot,
        ..PoolNodes::gpu_for_tests(name, 4, class.map(|c| (CLASS_KEY, c)))
    }
}

/// A cluster with a pair (`spot`, `od`) tied to class `cc`, an untied on-demand pool
/// `cheap-od` that sorts first, and the class itself.
fn cluster(when: &str) -> ClusterKube {
    let mut c = ClusterKube::new("k");
    for p in [
        gpu_pool("spot", true, Some("cc")),
        gpu_pool("od", false, Some("cc")),
        gpu_pool("a-untied", false, None),
    ] {
        c.pools.insert(p.pool.clone(), p);
    }
    let class = json!({
        "apiVersion": "cloud.google.com/v1", "kind": "ComputeClass",
        "metadata": {"name": "cc"},
        "spec": {
            "priorities": [{"nodepools": ["spot"]}, {"nodepools": ["od"]}],
            "activeMigration": {"optimizeRulePriority": true},
            "nodePoolAutoCreation": {"enabled": false},
            "whenUnsatisfiable": when,
        },
    });
    let key = ObjKey::new("cloud.google.com", "computeclasses", "", "cc");
    c.api.create(key, &class, "test", "Apply", None);
    c.mark_dirty();
    c
}

fn add_pod(c: &mut ClusterKube, name: &str, tolerations: Value) {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "creationTimestamp": format!("2026-01-01T00:00:0{}Z", name.len() % 10)},
        "spec": {
            "nodeSelector": {CLASS_KEY: "cc"},
            "tolerations": tolerations,
            "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    });
    let key = ObjKey::new("", "pods", "default", name);
    c.api
        .create(key, &pod, "test", "Update", Some(pending_status(None)));
    c.mark_dirty();
}

fn class_tolerations() -> Value {
    json!([
        {"key": CLASS_KEY, "operator": "Equal", "value": "cc", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ])
}

/// The pool the pod runs in, if it is bound.
fn pool_of(c: &ClusterKube, pod: &str) -> Option<String> {
    let p = c.api.get(&ObjKey::new("", "pods", "default", pod))?;
    let node = p["spec"]["nodeName"].as_str()?;
    ["spot", "od", "a-untied"]
        .into_iter()
        .find(|pool| node.starts_with(&format!("gke-{pool}-")))
        .map(str::to_owned)
}

fn step(c: &mut ClusterKube, clock: &Clock, by: Duration) {
    clock.advance(by);
    c.tick(clock);
}

#[test]
fn spot_first_on_demand_after_a_reclaim_and_back_to_spot_after_the_backoff() {
    let clock = Clock::new(ClockMode::Explicit);
    let mut c = cluster("DoNotScaleUp");
    add_pod(&mut c, "train", class_tolerations());
    c.reconcile(&clock);
    assert_eq!(pool_of(&c, "train"), None);
    assert_eq!(
        c.runtime["spot"].scale_to.map(|(_, n)| n),
        Some(1),
        "spot is tried first"
    );
    assert!(c.runtime.get("od").is_none_or(|r| r.scale_to.is_none()));
    step(&mut c, &clock, SCALE_UP_DELAY);
    assert_eq!(pool_of(&c, "train").as_deref(), Some("spot"));

    c.reclaim("spot", clock.now()).unwrap();
    c.reconcile(&clock);
    assert_eq!(pool_of(&c, "train"), None, "pending after the reclaim");
    assert_eq!(
        c.runtime["od"].scale_to.map(|(_, n)| n),
        Some(1),
        "spot is backed off"
    );
    step(&mut c, &clock, SCALE_UP_DELAY);
    assert_eq!(pool_of(&c, "train").as_deref(), Some("od"));
    assert_eq!(c.pools["spot"].count, 0);

    // Still backed off: nothing moves.
    step(
        &mut c,
        &clock,
        RECLAIM_BACKOFF - SCALE_UP_DELAY - Duration::from_secs(1),
    );
    assert_eq!(pool_of(&c, "train").as_deref(), Some("od"));
    assert!(c.runtime["spot"].scale_to.is_none());
    // The backoff ends: spot grows first, and on-demand is drained once spot has room.
    step(&mut c, &clock, Duration::from_secs(2));
    assert_eq!(c.runtime["spot"].scale_to.map(|(_, n)| n), Some(1));
    assert_eq!(
        pool_of(&c, "train").as_deref(),
        Some("od"),
        "not moved before spot has a node"
    );
    step(&mut c, &clock, SCALE_UP_DELAY);
    assert_eq!(pool_of(&c, "train").as_deref(), Some("spot"));
    assert_eq!((c.pools["spot"].count, c.pools["od"].count), (1, 0));
    assert_eq!(
        c.pools["a-untied"].count, 0,
        "never a pool outside the class"
    );
}

#[test]
fn do_not_scale_up_leaves_pods_pending_when_the_class_pools_cannot_take_them() {
    let clock = Clock::new(ClockMode::Explicit);
    let mut c = cluster("DoNotScaleUp");
    for p in ["spot", "od"] {
        c.pools.get_mut(p).unwrap().max = 0;
    }
    add_pod(&mut c, "train", class_tolerations());
    c.reconcile(&clock);
    step(&mut c, &clock, SCALE_UP_DELAY);
    assert_eq!(pool_of(&c, "train"), None);
    assert!(
        c.runtime.values().all(|r| r.scale_to.is_none()),
        "{:?}",
        c.runtime
    );
    assert_eq!(c.pools["a-untied"].count, 0);
}

#[test]
fn a_pod_that_does_not_tolerate_the_spot_side_falls_to_the_next_rule() {
    let clock = Clock::new(ClockMode::Explicit);
    let mut c = cluster("DoNotScaleUp");
    c.pools.get_mut("spot").unwrap().taints.push((
        "gpu-pool-type".into(),
        "spot".into(),
        "NoSchedule".into(),
    ));
    add_pod(&mut c, "train", class_tolerations());
    c.reconcile(&clock);
    step(&mut c, &clock, SCALE_UP_DELAY);
    assert_eq!(
        pool_of(&c, "train").as_deref(),
        Some("od"),
        "why pairs no longer carry seed 003's spot taint"
    );
}

/// The quota caps are computed again only when a node count they read changed: a
/// reconcile flags exactly the scale-ups it applies, once.
#[test]
fn a_reconcile_flags_the_node_counts_it_changes_once() {
    let clock = Clock::new(ClockMode::Explicit);
    let mut c = cluster("DoNotScaleUp");
    c.reconcile(&clock);
    assert!(
        !c.take_counts_changed(),
        "nothing to scale: no count changed"
    );
    add_pod(&mut c, "train", class_tolerations());
    c.reconcile(&clock);
    assert!(
        !c.take_counts_changed(),
        "a planned scale-up is not a node count yet"
    );
    step(&mut c, &clock, SCALE_UP_DELAY);
    assert_eq!(c.pools["spot"].count, 1);
    assert!(c.take_counts_changed(), "the scale-up landed");
    assert!(!c.take_counts_changed(), "told once");
    c.mark_dirty();
    c.reconcile(&clock);
    assert!(
        !c.take_counts_changed(),
        "a reconcile that changes no count"
    );
}
