//! What a GKE operation does to the world when it turns DONE: the cluster RUNNING with
//! its Kubernetes API (or ERROR), pools given their nodes, resized or removed, and new
//! autoscaling bounds applied the way the cluster autoscaler honours them: a pool below
//! its new minimum grows to it at once, and one above its new maximum gives up its idle
//! nodes (no pod but DaemonSet pods) from the top.
//!
//! Invariant: a failed operation changes no node, only statuses: the pool (or cluster)
//! it failed on shows the failure's message and condition; a successful one leaves the
//! pools it touched RUNNING with no message or condition.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::cloud::gcp::types::container::NodePoolAutoscaling;
use crate::sim::kube::{self, nodes};

use super::model::{ClusterRec, Effect, Failure, PoolRec};

/// Pool `p` ends in `status` (ERROR, RUNNING_WITH_ERROR) with the failure's message and
/// condition.
fn fail_pool(p: &mut PoolRec, status: &str, f: &Failure) {
    p.status = status.into();
    p.status_message = Some(f.error.message.clone());
    p.conditions = vec![f.condition.clone()];
}

/// Pool `p` is RUNNING, with no message or condition left from an earlier failure.
fn run_pool(p: &mut PoolRec) {
    p.status = "RUNNING".into();
    p.status_message = None;
    p.conditions.clear();
}

/// Apply `effect` of the DONE operation on cluster `cluster` (a store key); `fail` is
/// how it failed, if it did.
pub fn apply(
    clusters: &mut BTreeMap<String, ClusterRec>,
    kube: &mut kube::State,
    cluster: &str,
    effect: &Effect,
    fail: Option<&Failure>,
) {
    if let Effect::DeleteCluster = effect {
        if let Some(c) = clusters.remove(cluster) {
            kube.remove_cluster(&c.kube_key);
        }
        return;
    }
    let Some(c) = clusters.get_mut(cluster) else {
        return;
    };
    match effect {
        Effect::CreateCluster => create_cluster(c, kube, fail),
        // Removed above.
        Effect::DeleteCluster => {}
        Effect::CreatePool(name) => {
            let key = c.kube_key.clone();
            if let Some(p) = c.pool_mut(name) {
                if let Some(f) = fail {
                    fail_pool(p, "ERROR", f);
                } else {
                    p.status = "RUNNING".into();
                    kube.upsert_pool(&key, p.to_kube(p.size));
                }
            }
        }
        Effect::DeletePool(name) => {
            c.pools.retain(|p| &p.spec.name != name);
            kube.remove_pool(&c.kube_key, name);
        }
        Effect::SetSize(name, n) => {
            let key = c.kube_key.clone();
            if let Some(p) = c.pool_mut(name) {
                if let Some(f) = fail {
                    fail_pool(p, "RUNNING_WITH_ERROR", f);
                } else {
                    p.size = *n;
                    run_pool(p);
                    if kube.pool_node_count(&key, name).is_some() {
                        kube.set_pool_size(&key, name, *n);
                    } else {
                        kube.upsert_pool(&key, p.to_kube(*n));
                    }
                }
            }
        }
        Effect::SetAutoscaling(name, a) => set_autoscaling(c, kube, name, a, fail),
    }
}

/// The cluster is created: RUNNING with its Kubernetes API and every pool's nodes, or
/// ERROR with each pool, the failure shown on the pool it names (every pool if none).
fn create_cluster(c: &mut ClusterRec, kube: &mut kube::State, fail: Option<&Failure>) {
    if let Some(f) = fail {
        c.status = "ERROR".into();
        c.status_message = Some(f.error.message.clone());
        for p in &mut c.pools {
            if f.pool.as_deref().is_none_or(|n| n == p.spec.name) {
                fail_pool(p, "ERROR", f);
            } else {
                p.status = "ERROR".into();
            }
        }
    } else {
        c.status = "RUNNING".into();
        kube.add_cluster(&c.kube_key);
        for p in &mut c.pools {
            p.status = "RUNNING".into();
            kube.upsert_pool(&c.kube_key, p.to_kube(p.size));
        }
    }
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

/// `setAutoscaling` is DONE: the new autoscaling and the node count it implies.
fn set_autoscaling(
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
        fail_pool(p, "RUNNING_WITH_ERROR", f);
        return;
    }
    p.spec.autoscaling = Some(a.clone());
    run_pool(p);
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
        set_autoscaling(&mut c, &mut kube, "np", &bounds(3, 10), None);
        assert_eq!(
            kube.pool_node_count(KEY, "np"),
            Some(3),
            "grown to the minimum"
        );
        set_autoscaling(&mut c, &mut kube, "np", &bounds(5, 10), None);
        assert_eq!(kube.pool_node_count(KEY, "np"), Some(5));
        // Node 3 runs a pod, node 4 only a DaemonSet's: shrinking to 2 stops above node 3.
        pod_on(&mut kube, "work", 3, false);
        pod_on(&mut kube, "agent", 4, true);
        set_autoscaling(&mut c, &mut kube, "np", &bounds(0, 2), None);
        assert_eq!(kube.pool_node_count(KEY, "np"), Some(4), "node 3 is busy");
        assert_eq!(c.pools[0].size, 4);
        assert_eq!(c.pools[0].spec.autoscaling, Some(bounds(0, 2)));
    }
}
