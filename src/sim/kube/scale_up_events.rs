//! The cluster autoscaler's events on the pods it could not place: `TriggeredScaleUp`
//! naming the node groups growing for a pod, or `NotTriggerScaleUp` with each pool's
//! reason (what `kubectl describe pod` shows on GKE).
//!
//! Invariant: written after the autoscaler has planned, from its plan alone; recorded
//! through `events::record`'s once-per-message rule, so an idle cluster records
//! nothing new.

use std::collections::BTreeMap;

use super::PoolNodes;
use super::events::{EventType, on_pod};
use super::nodes;
use super::objects::{ApiStore, ObjKey};
use super::sched::{self, NodeView, Res};

const COMPONENT: &str = "cluster-autoscaler";

/// The managed instance group URL GKE's autoscaler names in its events.
fn node_group(pool: &PoolNodes, cluster_key: &str) -> String {
    let zone = pool.zones.first().map(String::as_str).unwrap_or("zone-a");
    let project = cluster_key.split('.').next().unwrap_or("project");
    format!(
        "https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}/instanceGroups/gke-{}-grp",
        pool.pool
    )
}

/// What the cluster autoscaler says about each pod still unschedulable after it has
/// planned: `TriggeredScaleUp` naming the pools growing for it (planned size above
/// the current one and a template node that fits the pod), else `NotTriggerScaleUp`
/// with each pool's reason, kube-scheduler style.
pub fn record(
    api: &mut ApiStore,
    cluster_key: &str,
    pools: &BTreeMap<String, PoolNodes>,
    planned: &BTreeMap<String, u32>,
    quota_caps: &BTreeMap<String, (u32, String)>,
    unschedulable: &[ObjKey],
) {
    if unschedulable.is_empty() {
        return;
    }
    let templates: Vec<(&String, &PoolNodes, NodeView)> = pools
        .iter()
        .map(|(name, p)| {
            (
                name,
                p,
                NodeView::from_json(&nodes::template(cluster_key, p)),
            )
        })
        .collect();
    for key in unschedulable {
        let Some(pod) = api.get(key).cloned() else {
            continue;
        };
        let req = sched::pod_requests(&pod);
        let mut growing = Vec::new();
        let mut reasons: Vec<Vec<String>> = Vec::new();
        for (name, p, tmpl) in &templates {
            let fits = sched::check(&pod["spec"], &req, tmpl, &Res::new());
            let target = planned.get(*name).copied().unwrap_or(p.count);
            match fits {
                Ok(()) if target > p.count => growing.push(format!(
                    "{{{} {}->{} (max: {})}}",
                    node_group(p, cluster_key),
                    p.count,
                    target,
                    p.max
                )),
                Ok(()) if target >= p.max => {
                    reasons.push(vec!["max node group size reached".into()]);
                }
                Ok(()) if quota_caps.get(*name).is_some_and(|(cap, _)| target >= *cap) => {
                    let metric = &quota_caps[*name].1;
                    reasons.push(vec![match metric.strip_prefix("reservation ") {
                        Some(r) => format!("no free VMs in reservation {r}"),
                        None => format!("Compute quota {metric} exceeded"),
                    }]);
                }
                Ok(()) => {}
                Err(r) => reasons.push(r),
            }
        }
        let (reason, message) = if !growing.is_empty() {
            let message = format!("pod triggered scale-up: [{}]", growing.join(" "));
            ("TriggeredScaleUp", message)
        } else if !reasons.is_empty() {
            let hist = sched::fit_message(1, &reasons);
            let detail = hist
                .split_once(": ")
                .map_or(hist.as_str(), |(_, d)| d)
                .trim_end_matches('.');
            let message = format!("pod didn't trigger scale-up: {detail}");
            ("NotTriggerScaleUp", message)
        } else {
            continue;
        };
        on_pod(api, key, EventType::Normal, reason, &message, COMPONENT);
    }
}
