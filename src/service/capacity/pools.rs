//! Plain views for the capacity computation: which accelerator resource a node or pod
//! uses, the accelerator pools built from the nodes (or from a template node for a pool
//! with none), label selectors and taint tolerations as Kubernetes judges them.
//!
//! Invariant: pure, no I/O; a pool's shape (resource, type, accelerators per node,
//! labels, taints) comes from its nodes when it has any, else from its template, so what
//! is reported for a running pool is exactly what its nodes say.

use std::collections::BTreeMap;

use crate::cloud::kube::inventory::{GPU_RESOURCE, TPU_RESOURCE, Taint, Toleration};
use crate::cloud::kube::{NodeInfo, PodInfo};
use crate::domain::gpu_sharing::GpuSharing;

/// The node labels GKE puts the accelerator type in.
pub const GPU_TYPE_LABEL: &str = "cloud.google.com/gke-accelerator";
pub const TPU_TYPE_LABEL: &str = "cloud.google.com/gke-tpu-accelerator";

/// An accelerator resource of Kubernetes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    Gpu,
    Tpu,
}

impl Resource {
    pub fn name(self) -> &'static str {
        match self {
            Resource::Gpu => GPU_RESOURCE,
            Resource::Tpu => TPU_RESOURCE,
        }
    }

    /// The node label holding the accelerator type of this resource.
    pub fn type_label(self) -> &'static str {
        match self {
            Resource::Gpu => GPU_TYPE_LABEL,
            Resource::Tpu => TPU_TYPE_LABEL,
        }
    }

    /// The resource and count a node offers (`None` for a node without accelerators).
    pub fn of_node(n: &NodeInfo) -> Option<(Resource, u64)> {
        if n.gpus > 0 || n.labels.contains_key(GPU_TYPE_LABEL) {
            Some((Resource::Gpu, n.gpus))
        } else if n.tpus > 0 || n.labels.contains_key(TPU_TYPE_LABEL) {
            Some((Resource::Tpu, n.tpus))
        } else {
            None
        }
    }

    /// The resource and count a pod requests (`None` when it wants no accelerator).
    pub fn of_pod(p: &PodInfo) -> Option<(Resource, u64)> {
        if p.requests.gpus > 0 {
            Some((Resource::Gpu, p.requests.gpus))
        } else if p.requests.tpus > 0 {
            Some((Resource::Tpu, p.requests.tpus))
        } else {
            None
        }
    }
}

/// What the records, GKE and Compute say about one pool (the service reads them).
#[derive(Debug, Clone, Default)]
pub struct PoolFacts {
    pub pool_id: String,
    /// The autoscaler's ceiling, in nodes across all zones; `None` when unknown.
    pub max_nodes: Option<u32>,
    /// Accelerators the region's quota still allows; `None` when unknown.
    pub quota_headroom: Option<u64>,
    /// A node as the pool would create it: used when the pool has no node now.
    pub template: Option<NodeInfo>,
}

/// One accelerator pool: its nodes and shape.
#[derive(Debug)]
pub struct Pool<'a> {
    pub id: &'a str,
    pub resource: Resource,
    pub accelerator_type: String,
    pub spot: bool,
    pub per_node: u64,
    pub nodes: Vec<&'a NodeInfo>,
    /// The node whose labels and taints stand for the pool's (a node, else the template).
    pub shape: &'a NodeInfo,
    pub facts: Option<&'a PoolFacts>,
    /// Partitions or sharing of the pool's GPUs, from its nodes' GKE labels.
    pub gpu_sharing: Option<GpuSharing>,
}

impl Pool<'_> {
    /// Below its ceiling (or the ceiling is unknown).
    pub fn can_grow(&self) -> bool {
        let count = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        self.facts
            .and_then(|f| f.max_nodes)
            .is_none_or(|max| count < max)
    }

    /// The quota can pay for one more node (or the quota is unknown).
    pub fn quota_allows_a_node(&self) -> bool {
        self.facts
            .and_then(|f| f.quota_headroom)
            .is_none_or(|h| h >= self.per_node)
    }

    pub fn max_nodes(&self) -> Option<u32> {
        self.facts.and_then(|f| f.max_nodes)
    }
}

/// The accelerator pools, in id order: from the nodes (grouped by the node-pool label),
/// plus pools known only from `facts` whose template offers accelerators.
pub fn pools<'a>(nodes: &'a [NodeInfo], facts: &'a [PoolFacts]) -> Vec<Pool<'a>> {
    let mut by: BTreeMap<&'a str, Vec<&'a NodeInfo>> = BTreeMap::new();
    for n in nodes {
        if let Some(pool) = n.pool.as_deref()
            && Resource::of_node(n).is_some()
        {
            by.entry(pool).or_default().push(n);
        }
    }
    let facts_of = |id: &str| facts.iter().find(|f| f.pool_id == id);
    for f in facts {
        if let Some(t) = &f.template
            && Resource::of_node(t).is_some()
        {
            by.entry(f.pool_id.as_str()).or_default();
        }
    }
    by.into_iter()
        .filter_map(|(id, nodes)| {
            let facts = facts_of(id);
            let shape = nodes
                .first()
                .copied()
                .or_else(|| facts.and_then(|f| f.template.as_ref()))?;
            let (resource, _) = Resource::of_node(shape)?;
            let per_node = nodes
                .iter()
                .chain(std::iter::once(&shape))
                .filter_map(|n| Resource::of_node(n).map(|r| r.1))
                .max()
                .unwrap_or(0);
            let acc_type = accelerator_type(shape, resource);
            Some(Pool {
                id,
                resource,
                gpu_sharing: (resource == Resource::Gpu)
                    .then(|| GpuSharing::from_node_labels(&acc_type, &shape.labels))
                    .flatten(),
                accelerator_type: acc_type,
                spot: shape.spot,
                per_node,
                nodes,
                shape,
                facts,
            })
        })
        .collect()
}

/// The GKE accelerator type of a node (its label), else the resource name.
pub fn accelerator_type(n: &NodeInfo, r: Resource) -> String {
    n.labels
        .get(r.type_label())
        .cloned()
        .unwrap_or_else(|| r.name().to_owned())
}

/// Every `nodeSelector` entry is among `labels`.
pub fn selector_matches(selector: &BTreeMap<String, String>, n: &NodeInfo) -> bool {
    selector.iter().all(|(k, v)| n.labels.get(k) == Some(v))
}

/// Kubernetes' `ToleratesTaint`.
fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    let s = |o: &Option<String>| o.clone().unwrap_or_default();
    let (key, effect) = (s(&t.key), s(&t.effect));
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref() {
        Some("Exists") => true,
        _ => !key.is_empty() && s(&t.value) == s(&taint.value),
    }
}

/// The first NoSchedule/NoExecute taint of `n` none of `tolerations` tolerates.
pub fn untolerated<'a>(tolerations: &[Toleration], n: &'a NodeInfo) -> Option<&'a Taint> {
    n.taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
}

/// `key=value:Effect`, as kubectl shows a taint.
pub fn show_taint(t: &Taint) -> String {
    match &t.value {
        Some(v) if !v.is_empty() => format!("{}={v}:{}", t.key, t.effect),
        _ => format!("{}:{}", t.key, t.effect),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tol(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
        let o = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        Toleration {
            key: o(key),
            operator: o(op),
            value: o(value),
            effect: o(effect),
        }
    }

    #[test]
    fn tolerations_as_kubernetes_judges_them() {
        let gpu = Taint {
            key: "nvidia.com/gpu".into(),
            value: Some("present".into()),
            effect: "NoSchedule".into(),
        };
        assert!(tolerates(&tol("nvidia.com/gpu", "Exists", "", ""), &gpu));
        assert!(tolerates(
            &tol("nvidia.com/gpu", "Equal", "present", "NoSchedule"),
            &gpu
        ));
        assert!(tolerates(&tol("", "Exists", "", ""), &gpu), "tolerate all");
        assert!(!tolerates(
            &tol("nvidia.com/gpu", "Equal", "true", ""),
            &gpu
        ));
        assert!(!tolerates(
            &tol("nvidia.com/gpu", "Exists", "", "NoExecute"),
            &gpu
        ));
        assert!(!tolerates(&tol("other", "Exists", "", ""), &gpu));
        assert!(!tolerates(&tol("", "Equal", "", ""), &gpu));
        assert_eq!(show_taint(&gpu), "nvidia.com/gpu=present:NoSchedule");
    }
}
