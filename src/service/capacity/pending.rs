//! Why a pod that wants accelerators is pending, judged from its spec against the pools
//! and their nodes as kube-scheduler and the cluster autoscaler would: the accelerator
//! exists, the selector matches, the taints are tolerated, the request fits one node, a
//! node has it free, a pool may grow, the quota pays for it.
//!
//! Invariant: pure; the checks run in that order and the first one that rules out every
//! pool is the reason, so each pod gets exactly one reason and the message names the
//! pools and numbers it was judged on.

use std::collections::HashMap;

use crate::cloud::kube::PodInfo;
use crate::model::capacity::{PendingPod, PendingReason};

use super::pools::{Pool, Resource, selector_matches, show_taint, untolerated};

/// Accelerators free per node name (schedulable nodes only).
pub type FreeByNode<'a> = HashMap<&'a str, u64>;

/// The pending entry for `pod`, which requests `amount` of `resource`.
pub fn judge(
    pod: &PodInfo,
    resource: Resource,
    amount: u64,
    pools: &[Pool<'_>],
    free: &FreeByNode<'_>,
) -> PendingPod {
    let (reason, message, candidates) = reason(pod, resource, amount, pools, free);
    PendingPod {
        namespace: pod.namespace.clone(),
        name: pod.name.clone(),
        resource: resource.name().to_owned(),
        requested: amount,
        reason,
        message,
        pools: candidates,
        scheduler_message: pod.unschedulable.clone(),
    }
}

fn ids(pools: &[&Pool<'_>]) -> Vec<String> {
    pools.iter().map(|p| p.id.to_owned()).collect()
}

fn reason(
    pod: &PodInfo,
    resource: Resource,
    amount: u64,
    pools: &[Pool<'_>],
    free: &FreeByNode<'_>,
) -> (PendingReason, String, Vec<String>) {
    let res = resource.name();
    let offering: Vec<&Pool> = pools.iter().filter(|p| p.resource == resource).collect();
    if offering.is_empty() {
        let m = format!("no node pool offers {res}; add a pool with that accelerator");
        return (PendingReason::NoMatchingPool, m, Vec::new());
    }
    let selected: Vec<&Pool> = offering
        .iter()
        .copied()
        .filter(|p| {
            let sel = &pod.node_selector;
            p.nodes.iter().any(|n| selector_matches(sel, n)) || selector_matches(sel, p.shape)
        })
        .collect();
    if selected.is_empty() {
        return no_selected(pod, resource, &offering);
    }
    let tolerated: Vec<&Pool> = selected
        .iter()
        .copied()
        .filter(|p| untolerated(&pod.tolerations, p.shape).is_none())
        .collect();
    if tolerated.is_empty() {
        let taints: Vec<String> = selected
            .iter()
            .filter_map(|p| {
                let t = untolerated(&pod.tolerations, p.shape)?;
                Some(format!("{} has {}", p.id, show_taint(t)))
            })
            .collect();
        let m = format!(
            "the pod does not tolerate the taint of any pool that offers {res}: {}; add a \
             matching toleration",
            taints.join(", ")
        );
        return (PendingReason::MissingToleration, m, ids(&selected));
    }
    let fitting: Vec<&Pool> = tolerated
        .iter()
        .copied()
        .filter(|p| p.per_node >= amount)
        .collect();
    if fitting.is_empty() {
        let largest = tolerated.iter().map(|p| p.per_node).max().unwrap_or(0);
        let m = format!(
            "requests {amount} {res} but the largest node of the pools it may use ({}) has \
             {largest}; request at most {largest} per pod, or add a pool with larger nodes",
            ids(&tolerated).join(", ")
        );
        return (PendingReason::AcceleratorCountTooLarge, m, ids(&tolerated));
    }
    let fits_now = fitting.iter().find_map(|p| {
        let n = p.nodes.iter().find(|n| {
            selector_matches(&pod.node_selector, n)
                && free.get(n.name.as_str()).is_some_and(|f| *f >= amount)
        })?;
        Some((*p, n))
    });
    if let Some((p, n)) = fits_now {
        let m = format!(
            "node {} has {amount} {res} free: kube-scheduler binds the pod unless another \
             resource (CPU, memory, pods) is short there",
            n.name
        );
        return (PendingReason::FitsNow, m, ids(&[p]));
    }
    let growable: Vec<&Pool> = fitting.iter().copied().filter(|p| p.can_grow()).collect();
    if growable.is_empty() {
        let at: Vec<String> = fitting
            .iter()
            .map(|p| {
                let max = p.max_nodes().map_or("?".into(), |m| m.to_string());
                format!("{} ({}/{max} nodes)", p.id, p.nodes.len())
            })
            .collect();
        let m = format!(
            "no node has {amount} {res} free and every pool that could take the pod is at its \
             maximum: {}; raise maxNodes or free accelerators",
            at.join(", ")
        );
        return (PendingReason::PoolAtMax, m, ids(&fitting));
    }
    if let Some(p) = growable.iter().find(|p| p.quota_allows_a_node()) {
        let m = format!(
            "no node has {amount} {res} free; the cluster autoscaler can add a node to {}",
            p.id
        );
        return (PendingReason::ScaleUpPending, m, ids(&[*p]));
    }
    let m = format!(
        "pools {} could grow, but the region's quota for their accelerators cannot cover \
         another node; request more quota or free accelerators",
        ids(&growable).join(", ")
    );
    (PendingReason::QuotaExhausted, m, ids(&growable))
}

/// No pool offering the resource matches the selector: an accelerator type no pool has
/// is NO_MATCHING_POOL, any other label NODE_SELECTOR_MATCHES_NOTHING.
fn no_selected(
    pod: &PodInfo,
    resource: Resource,
    offering: &[&Pool<'_>],
) -> (PendingReason, String, Vec<String>) {
    let label = resource.type_label();
    if let Some(wanted) = pod.node_selector.get(label) {
        let have: Vec<String> = offering
            .iter()
            .map(|p| format!("{} ({})", p.id, p.accelerator_type))
            .collect();
        let m = format!(
            "no node pool has {label}={wanted}; pools offering {}: {}",
            resource.name(),
            have.join(", ")
        );
        return (PendingReason::NoMatchingPool, m, Vec::new());
    }
    let selector: Vec<String> = pod
        .node_selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let m = format!(
        "nodeSelector {} matches no node of the pools offering {} ({})",
        selector.join(","),
        resource.name(),
        ids(offering).join(", ")
    );
    (PendingReason::NodeSelectorMatchesNothing, m, Vec::new())
}
