//! Inventory of a cluster: nodes (pool, labels, taints, accelerators, readiness) and
//! pods (phase, node, requests, tolerations, selectors, why they are pending).
//!
//! Invariant: the summaries are pure functions of the API objects ([`NodeInfo::from_node`],
//! [`PodInfo::from_pod`]), so what `status` reports is exactly what the cluster said.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::ListParams;
use serde::Serialize;

use super::quantity;
use super::{KubeCluster, KubeError};

pub const NODEPOOL_LABEL: &str = "cloud.google.com/gke-nodepool";
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
pub const TPU_RESOURCE: &str = "google.com/tpu";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Taint {
    pub key: String,
    pub value: Option<String>,
    pub effect: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    pub name: String,
    /// The node object's uid: a node recreated under the same name (a reclaimed spot
    /// VM that its group brought back) has a new one.
    #[serde(skip)]
    pub uid: String,
    /// GKE node pool (`cloud.google.com/gke-nodepool`).
    pub pool: Option<String>,
    pub zone: Option<String>,
    pub instance_type: Option<String>,
    pub spot: bool,
    pub ready: bool,
    pub unschedulable: bool,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// Allocatable `nvidia.com/gpu` and `google.com/tpu`.
    pub gpus: u64,
    pub tpus: u64,
    pub cpu_millis: u64,
    pub memory_bytes: u64,
}

impl NodeInfo {
    pub fn from_node(n: &Node) -> NodeInfo {
        let labels: BTreeMap<String, String> = n.metadata.labels.clone().unwrap_or_default();
        let spec = n.spec.clone().unwrap_or_default();
        let status = n.status.clone().unwrap_or_default();
        let alloc = status.allocatable.unwrap_or_default();
        let get = |k: &str| alloc.get(k).map(|q| q.0.clone()).unwrap_or_default();
        let ready = status
            .conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        NodeInfo {
            name: n.metadata.name.clone().unwrap_or_default(),
            uid: n.metadata.uid.clone().unwrap_or_default(),
            pool: labels.get(NODEPOOL_LABEL).cloned(),
            zone: labels.get("topology.kubernetes.io/zone").cloned(),
            instance_type: labels.get("node.kubernetes.io/instance-type").cloned(),
            spot: labels
                .get("cloud.google.com/gke-spot")
                .is_some_and(|v| v == "true"),
            ready,
            unschedulable: spec.unschedulable.unwrap_or(false),
            taints: spec
                .taints
                .unwrap_or_default()
                .into_iter()
                .map(|t| Taint {
                    key: t.key,
                    value: t.value,
                    effect: t.effect,
                })
                .collect(),
            labels,
            gpus: quantity::units(&get(GPU_RESOURCE)),
            tpus: quantity::units(&get(TPU_RESOURCE)),
            cpu_millis: quantity::millis(&get("cpu")),
            memory_bytes: quantity::units(&get("memory")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Toleration {
    pub key: Option<String>,
    pub operator: Option<String>,
    pub value: Option<String>,
    pub effect: Option<String>,
}

/// Total requests of a pod (containers summed; init containers by maximum).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Requests {
    pub cpu_millis: u64,
    pub memory_bytes: u64,
    pub gpus: u64,
    pub tpus: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodInfo {
    pub namespace: String,
    pub name: String,
    /// Pending, Running, Succeeded, Failed, Unknown.
    pub phase: String,
    pub node: Option<String>,
    pub requests: Requests,
    pub tolerations: Vec<Toleration>,
    pub node_selector: BTreeMap<String, String>,
    /// The scheduler's explanation when PodScheduled is False with reason Unschedulable.
    pub unschedulable: Option<String>,
}

impl PodInfo {
    pub fn from_pod(p: &Pod) -> PodInfo {
        let spec = p.spec.clone().unwrap_or_default();
        let status = p.status.clone().unwrap_or_default();
        let request_of = |c: &k8s_openapi::api::core::v1::Container| -> BTreeMap<String, String> {
            let r = c.resources.clone().unwrap_or_default();
            // A resource with only a limit is requested at its limit.
            let mut m: BTreeMap<String, String> = r
                .limits
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect();
            m.extend(
                r.requests
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0)),
            );
            m
        };
        let sum = |cs: &[k8s_openapi::api::core::v1::Container], max: bool| -> Requests {
            let mut t = Requests::default();
            for c in cs {
                let m = request_of(c);
                let g = |k: &str| m.get(k).map(String::as_str).unwrap_or("");
                let add = |acc: &mut u64, v: u64| *acc = if max { (*acc).max(v) } else { *acc + v };
                add(&mut t.cpu_millis, quantity::millis(g("cpu")));
                add(&mut t.memory_bytes, quantity::units(g("memory")));
                add(&mut t.gpus, quantity::units(g(GPU_RESOURCE)));
                add(&mut t.tpus, quantity::units(g(TPU_RESOURCE)));
            }
            t
        };
        let main = sum(&spec.containers, false);
        let init = sum(spec.init_containers.as_deref().unwrap_or_default(), true);
        let requests = Requests {
            cpu_millis: main.cpu_millis.max(init.cpu_millis),
            memory_bytes: main.memory_bytes.max(init.memory_bytes),
            gpus: main.gpus.max(init.gpus),
            tpus: main.tpus.max(init.tpus),
        };
        let unschedulable = status
            .conditions
            .unwrap_or_default()
            .into_iter()
            .find(|c| {
                c.type_ == "PodScheduled"
                    && c.status == "False"
                    && c.reason.as_deref() == Some("Unschedulable")
            })
            .map(|c| c.message.unwrap_or_default());
        PodInfo {
            namespace: p.metadata.namespace.clone().unwrap_or_default(),
            name: p.metadata.name.clone().unwrap_or_default(),
            phase: status.phase.unwrap_or_else(|| "Unknown".into()),
            node: spec.node_name,
            requests,
            tolerations: spec
                .tolerations
                .unwrap_or_default()
                .into_iter()
                .map(|t| Toleration {
                    key: t.key,
                    operator: t.operator,
                    value: t.value,
                    effect: t.effect,
                })
                .collect(),
            node_selector: spec.node_selector.unwrap_or_default(),
            unschedulable,
        }
    }

    pub fn is_pending(&self) -> bool {
        self.phase == "Pending"
    }
}

/// Nodes of one pool, summed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolSummary {
    pub pool: String,
    pub nodes: u32,
    pub ready: u32,
    pub gpus: u64,
    pub tpus: u64,
    pub spot: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Inventory {
    pub nodes: Vec<NodeInfo>,
    pub pods: Vec<PodInfo>,
}

impl Inventory {
    /// Pods not yet running anywhere.
    pub fn pending(&self) -> impl Iterator<Item = &PodInfo> {
        self.pods.iter().filter(|p| p.is_pending())
    }

    /// Per-pool totals, in pool-name order (nodes without a pool label are left out).
    pub fn pools(&self) -> Vec<PoolSummary> {
        let mut by: BTreeMap<&str, PoolSummary> = BTreeMap::new();
        for n in &self.nodes {
            let Some(pool) = n.pool.as_deref() else {
                continue;
            };
            let s = by.entry(pool).or_insert_with(|| PoolSummary {
                pool: pool.to_owned(),
                ..PoolSummary::default()
            });
            s.nodes += 1;
            s.ready += u32::from(n.ready);
            s.gpus += n.gpus;
            s.tpus += n.tpus;
            s.spot |= n.spot;
        }
        by.into_values().collect()
    }
}

impl KubeCluster {
    pub async fn nodes(&self) -> Result<Vec<NodeInfo>, KubeError> {
        let api: Api<Node> = Api::all(self.client().await?);
        let params = ListParams::default();
        let l = self
            .idempotent("nodes.list", "list nodes", || api.list(&params))
            .await?;
        Ok(l.items.iter().map(NodeInfo::from_node).collect())
    }

    /// Pods of `namespace`, or of every namespace.
    pub async fn pods(&self, namespace: Option<&str>) -> Result<Vec<PodInfo>, KubeError> {
        let client = self.client().await?;
        let api: Api<Pod> = match namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        };
        let params = ListParams::default();
        let l = self
            .idempotent("pods.list", "list pods", || api.list(&params))
            .await?;
        Ok(l.items.iter().map(PodInfo::from_pod).collect())
    }

    /// Pending pods of every namespace, with the scheduler's reason when it gave one.
    pub async fn pending_pods(&self) -> Result<Vec<PodInfo>, KubeError> {
        let client = self.client().await?;
        let api: Api<Pod> = Api::all(client);
        let params = ListParams::default().fields("status.phase=Pending");
        let l = self
            .idempotent("pods.list", "list pending pods", || api.list(&params))
            .await?;
        Ok(l.items.iter().map(PodInfo::from_pod).collect())
    }

    pub async fn inventory(&self) -> Result<Inventory, KubeError> {
        Ok(Inventory {
            nodes: self.nodes().await?,
            pods: self.pods(None).await?,
        })
    }
}
