//! `nodePools.setAutoscaling` of the simulated GKE (and the same change through
//! `clusters.update`'s `desiredNodePoolAutoscaling`, which gcloud's `node-pools update
//! --enable-autoscaling` sends): the request checked as GKE checks it
//! (strict body, `name` matching the path, `0 <= min <= max`, `max >= 1`, per-zone and
//! total bounds not mixed, whole TPU slices), an UPDATE_CLUSTER operation, and when it
//! is DONE the pool's new bounds applied the way the cluster autoscaler honours them:
//! a pool below its new minimum grows to it at once, and one above its new maximum
//! gives up its idle nodes (no pod but DaemonSet pods) from the top.
//!
//! Invariant: like every other GKE mutation here, a faulted or refused call changes
//! nothing, and the effect is applied once, when the operation is DONE. Growing to the
//! new minimum is checked against quota and stock when the call is made (as `setSize`
//! is); when it does not fit, the operation ends DONE with GKE's error and the pool
//! keeps its old autoscaling (a simulator simplification: GKE would accept the bounds
//! and let the autoscaler fail to scale up).

use axum::body::Bytes;
use serde_json::Value;

use crate::cloud::gcp::types::container::{
    NodePoolAutoscaling, Operation, SetNodePoolAutoscalingRequest,
};
use crate::sim::Sim;
use crate::sim::body::strict;
use crate::sim::error::SimError;
use crate::sim::faults::FaultKind;
use crate::sim::kube::{self, nodes};

use super::handlers::{F, begin, find_pool, invalid, key};
use super::model::{ClusterRec, Effect, Failure};
use super::{ops, validate};

/// `(project, location, cluster)` of a request.
type At<'a> = (&'a str, &'a str, &'a str);

/// POST `.../nodePools/{pool}:setAutoscaling`.
pub fn set(
    sim: &Sim,
    (project, location, cluster): At<'_>,
    pool: &str,
    body: &Bytes,
    forced: Option<FaultKind>,
) -> Result<Operation, SimError> {
    let req: SetNodePoolAutoscalingRequest = strict(F, body)?;
    let a = req
        .autoscaling
        .ok_or_else(|| invalid("autoscaling is required."))?;
    let path =
        format!("projects/{project}/locations/{location}/clusters/{cluster}/nodePools/{pool}");
    if let Some(name) = req.name.as_deref().filter(|n| !n.is_empty())
        && name != path
    {
        return Err(invalid(format!(
            "name \"{name}\" does not match the node pool of the URL \"{path}\"."
        )));
    }
    let mut w = sim.world();
    let k = key(project, location, cluster);
    let (c, p) = find_pool(&w, (project, location, cluster), pool)?;
    validate::autoscaling(&p.shape, &a)?;
    ops::ensure_idle(&w.container, &k, cluster)?;
    if !matches!(p.status.as_str(), "RUNNING" | "RUNNING_WITH_ERROR") {
        return Err(SimError::precondition(
            F,
            format!(
                "Node pool {pool} is {}; its autoscaling can only be changed while it is RUNNING.",
                p.status
            ),
        ));
    }
    let current = w.kube.pool_node_count(&c.kube_key, pool).unwrap_or(p.size);
    let mut after = p.clone();
    after.spec.autoscaling = Some(a.clone());
    let added = after.to_kube(current).min.saturating_sub(current);
    let failure = ops::decide(
        sim,
        &w,
        project,
        &c.region,
        &p.shape,
        &p.zones,
        added,
        added > 0,
        forced,
    );
    let link = format!("{}/nodePools/{pool}", c.self_link());
    Ok(begin(
        sim,
        &mut w,
        (project, location, &k),
        link,
        Effect::SetAutoscaling(pool.to_owned(), a),
        failure,
    ))
}

/// `clusters.update` as gcloud's `node-pools update --enable-autoscaling` sends it
/// (`{"update": {"desiredNodePoolId", "desiredNodePoolAutoscaling"}}`): the same change
/// as `setAutoscaling`. Other `ClusterUpdate` fields are real GKE fields the simulator
/// does not implement: 400 saying so, never a silent success.
pub fn update_cluster(
    sim: &Sim,
    at: At<'_>,
    body: &Bytes,
    forced: Option<FaultKind>,
) -> Result<Operation, SimError> {
    let (project, location, cluster) = at;
    let req: Value = serde_json::from_slice(if body.is_empty() { b"{}" } else { body })
        .map_err(|e| invalid(format!("Invalid JSON payload received. {e}")))?;
    let known = ["update", "name", "projectId", "zone", "clusterId"];
    if let Some(k) = req
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
        .find(|k| !known.contains(&k.as_str()))
    {
        return Err(invalid(format!(
            "Invalid JSON payload received. Unknown name \"{k}\": Cannot find field."
        )));
    }
    let update = req["update"].as_object().cloned().unwrap_or_default();
    if let Some(k) = update
        .keys()
        .find(|k| !["desiredNodePoolId", "desiredNodePoolAutoscaling"].contains(&k.as_str()))
    {
        return Err(invalid(format!(
            "The simulator implements only desiredNodePoolId with desiredNodePoolAutoscaling of clusters.update, not {k}."
        )));
    }
    let a = update.get("desiredNodePoolAutoscaling").ok_or_else(|| {
        invalid("update.desiredNodePoolAutoscaling is required (the only update simulated).")
    })?;
    let pool = match update.get("desiredNodePoolId").and_then(Value::as_str) {
        Some(p) => p.to_owned(),
        None => {
            let w = sim.world();
            let c = w.container.clusters.get(&key(project, location, cluster));
            match c.map(|c| c.pools.as_slice()) {
                Some([only]) => only.spec.name.clone(),
                _ => {
                    return Err(invalid(
                        "desiredNodePoolId is required when the cluster has more than one node pool.",
                    ));
                }
            }
        }
    };
    let body = serde_json::to_vec(&serde_json::json!({"autoscaling": a})).unwrap_or_default();
    set(sim, at, &pool, &Bytes::from(body), forced)
}

/// Whether a pod counts against a node being idle: not finished, not a DaemonSet's.
fn holds_node(pod: &Value) -> bool {
    let finished = matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    );
    let daemon = pod["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|o| o.iter().any(|r| r["kind"] == "DaemonSet"));
    !finished && !daemon
}

/// Whether any of `names` runs a pod that holds it.
fn busy(k: &kube::ClusterKube, names: &[String]) -> bool {
    k.api.list("", "pods", None).any(|(_, pod)| {
        let node = pod["spec"]["nodeName"].as_str().unwrap_or("");
        holds_node(pod) && names.iter().any(|n| n == node)
    })
}

/// The operation is DONE: the new autoscaling and the node count it implies.
pub fn apply(
    c: &mut ClusterRec,
    kube: &mut kube::State,
    name: &str,
    a: &NodePoolAutoscaling,
    fail: Option<&Failure>,
) {
    let key = c.kube_key.clone();
    let Some(p) = c.pool_mut(name) else {
        return;
    };
    if let Some(f) = fail {
        p.status = "RUNNING_WITH_ERROR".into();
        p.status_message = Some(f.error.message.clone());
        p.conditions = vec![f.condition.clone()];
        return;
    }
    p.spec.autoscaling = Some(a.clone());
    p.status = "RUNNING".into();
    p.status_message = None;
    p.conditions.clear();
    let Some(current) = kube.pool_node_count(&key, name) else {
        return;
    };
    let mut nodes = p.to_kube(current);
    let mut count = current.max(nodes.min);
    if let Some(k) = kube.clusters.get(&key) {
        while count > nodes.max {
            nodes.count = count;
            if busy(k, &nodes::last_nodes(&key, &nodes)) {
                break;
            }
            count -= 1;
        }
    }
    nodes.count = count;
    p.size = count;
    kube.upsert_pool(&key, nodes);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cloud::gcp::types::container::{Cluster, NodePool};
    use crate::sim::gcp::container::model::{Accel, PoolRec, Shape};
    use crate::sim::kube::objects::ObjKey;

    const KEY: &str = "p.z.c";

    fn cluster(min: i32, max: i32, size: u32) -> ClusterRec {
        let bounds = NodePoolAutoscaling {
            enabled: Some(true),
            min_node_count: Some(min),
            max_node_count: Some(max),
            ..Default::default()
        };
        let pool = PoolRec {
            spec: NodePool {
                name: "np".into(),
                autoscaling: Some(bounds),
                ..Default::default()
            },
            shape: Shape {
                machine: "g2-standard-4".into(),
                vcpus: 4,
                spot: false,
                flex_start: false,
                accel: Accel::Gpu {
                    kind: "nvidia-l4".into(),
                    count: 1,
                },
                hosts: 1,
            },
            zones: vec!["us-central1-a".into()],
            size,
            status: "RUNNING".into(),
            status_message: None,
            conditions: Vec::new(),
        };
        ClusterRec {
            project: "p".into(),
            location: "us-central1-a".into(),
            region: "us-central1".into(),
            kube_key: KEY.into(),
            base_url: "http://sim".into(),
            spec: Cluster::default(),
            pools: vec![pool],
            id: "1".into(),
            create_time: String::new(),
            status: "RUNNING".into(),
            status_message: None,
            version: "1.33".into(),
        }
    }

    fn bounds(min: i32, max: i32) -> NodePoolAutoscaling {
        NodePoolAutoscaling {
            enabled: Some(true),
            min_node_count: Some(min),
            max_node_count: Some(max),
            ..Default::default()
        }
    }

    /// A running pod on node `index` of the pool (a DaemonSet's when `daemon`).
    fn pod_on(kube: &mut kube::State, name: &str, index: u32, daemon: bool) {
        let node = nodes::node_name(KEY, "np", "us-central1-a", index);
        let owners = if daemon {
            json!([{"kind": "DaemonSet", "name": "ds", "apiVersion": "apps/v1", "uid": "u"}])
        } else {
            json!([])
        };
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "ownerReferences": owners},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}});
        let c = kube.clusters.get_mut(KEY).expect("cluster");
        c.api.create(
            ObjKey::new("", "pods", "default", name),
            &pod,
            "test",
            "Update",
            Some(json!({"phase": "Running"})),
        );
    }

    #[test]
    fn new_bounds_grow_to_the_minimum_and_shrink_idle_nodes_from_the_top() {
        let mut kube = kube::State::default();
        kube.add_cluster(KEY);
        let mut c = cluster(0, 10, 0);
        kube.upsert_pool(KEY, c.pools[0].to_kube(0));
        apply(&mut c, &mut kube, "np", &bounds(3, 10), None);
        assert_eq!(
            kube.pool_node_count(KEY, "np"),
            Some(3),
            "grown to the minimum"
        );
        apply(&mut c, &mut kube, "np", &bounds(5, 10), None);
        assert_eq!(kube.pool_node_count(KEY, "np"), Some(5));
        // Node 3 runs a pod, node 4 only a DaemonSet's: shrinking to 2 stops above node 3.
        pod_on(&mut kube, "work", 3, false);
        pod_on(&mut kube, "agent", 4, true);
        apply(&mut c, &mut kube, "np", &bounds(0, 2), None);
        assert_eq!(kube.pool_node_count(KEY, "np"), Some(4), "node 3 is busy");
        assert_eq!(c.pools[0].size, 4);
        assert_eq!(c.pools[0].spec.autoscaling, Some(bounds(0, 2)));
    }
}
