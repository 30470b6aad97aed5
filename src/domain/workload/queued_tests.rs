//! Workload checks on a QUEUED pool: growth only through a ProvisioningRequest.

use serde_json::json;

use super::check_tests::{cluster, gpus, l4, pod, run};
use super::report::{Fit, Reason};
use super::{PoolFacts, Taint};
use crate::domain::provisioning::{Provisioning, QUEUED_KEY};

/// An L4 pool of flex-start with queued provisioning, no nodes, at most `max`: GKE's
/// labels and taint of the mode.
fn queued(id: &str, max: u32) -> PoolFacts {
    let mut p = l4(id, 0, max);
    for (k, v) in Provisioning::Queued.node_labels() {
        p.labels.insert(k.into(), v.into());
    }
    for (key, value, effect) in Provisioning::Queued.node_taints() {
        p.taints.push(Taint {
            key: key.into(),
            value: value.into(),
            effect: effect.into(),
        });
    }
    p
}

fn tolerating() -> serde_json::Value {
    json!({"tolerations": [{"key": QUEUED_KEY, "operator": "Exists", "effect": "NoSchedule"}]})
}

#[test]
fn a_tolerating_pod_on_a_queued_pool_needs_a_provisioning_request() {
    let c = cluster(vec![queued("gpu-q", 4)]);
    assert!(c.pools[0].is_queued());
    let r = run(&pod(gpus(1), tolerating()), &c);
    assert_eq!(
        r.verdict,
        Fit::AfterScaleUp,
        "the API's verdict values: {r:#?}"
    );
    assert!(r.schedulable);
    let row = &r.pools[0];
    assert_eq!(row.fits, Fit::AfterScaleUp);
    assert!(row.reason.contains("ProvisioningRequest"), "{}", row.reason);
    assert!(row.reason.contains("ADD_NODE_POOL"), "{}", row.reason);
    let p: Vec<_> = r
        .problems
        .iter()
        .filter(|p| p.reason == Reason::ProvisioningRequestNeeded)
        .collect();
    assert_eq!(p.len(), 1, "{r:#?}");
    assert_eq!(p[0].reason.as_str(), "PROVISIONING_REQUEST_NEEDED");
    assert!(p[0].message.contains("gpu-q"), "{}", p[0].message);
    assert!(p[0].fix.contains("provisioningRequest"), "{}", p[0].fix);
    assert!(p[0].fix.contains("podAnnotations"), "{}", p[0].fix);
}

#[test]
fn a_pod_that_does_not_tolerate_the_queued_taint_is_told_so_not_about_requests() {
    let c = cluster(vec![queued("gpu-q", 4)]);
    let r = run(&pod(gpus(1), json!({})), &c);
    assert_eq!(r.verdict, Fit::Never, "{r:#?}");
    assert!(r.has(Reason::MissingToleration), "{r:#?}");
    assert!(!r.has(Reason::ProvisioningRequestNeeded), "{r:#?}");
}

#[test]
fn no_request_is_needed_when_nodes_elsewhere_hold_the_pods_now() {
    // An ordinary pool with a free node holds the pod now; the queued pool is not needed.
    let c = cluster(vec![l4("gpu", 1, 3), queued("gpu-q", 4)]);
    let r = run(&pod(gpus(1), tolerating()), &c);
    assert_eq!(r.verdict, Fit::Now, "{r:#?}");
    assert!(!r.has(Reason::ProvisioningRequestNeeded), "{r:#?}");
    // An ordinary pool that must scale up too is AFTER_SCALE_UP without the request text.
    let c = cluster(vec![l4("gpu", 0, 3)]);
    let r = run(&pod(gpus(1), json!({})), &c);
    assert_eq!(r.verdict, Fit::AfterScaleUp, "{r:#?}");
    assert!(!r.pools[0].reason.contains("ProvisioningRequest"));
    assert!(r.problems.is_empty(), "{r:#?}");
}
