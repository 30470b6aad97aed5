//! Workload check: would this Pod, Deployment, StatefulSet, Job, JobSet or
//! LeaderWorkerSet schedule on this cluster now, after the autoscaler adds nodes, or
//! never, and why. [`parse`] turns the manifest into pod groups, [`admission`] adds what
//! GKE's admission adds, [`judge`] rules per pool and [`report`] says what to fix.
//!
//! Invariant: [`check`] is a pure function of the parsed workload and the cluster's
//! facts (pool records plus live nodes and quota, read by the service); every problem
//! it reports names a fix that, once applied to the workload or cluster, removes it.

use std::collections::BTreeMap;

pub mod admission;
pub mod capacity;
pub mod cuda;
pub mod gke;
pub mod judge;
pub mod parse;
pub mod queued;
pub mod reasons;
pub mod report;
pub mod selectors;
pub mod sharing;

#[cfg(test)]
mod capacity_tests;
#[cfg(test)]
mod check_tests;
#[cfg(test)]
mod queued_tests;
#[cfg(test)]
mod sharing_tests;

pub use parse::{ParseError, SUPPORTED_KINDS, parse};
pub use report::{Fit, PoolFit, Problem, Reason, Report, check};

/// The extended resources of GKE accelerators.
pub const GPU: &str = "nvidia.com/gpu";
pub const TPU: &str = "google.com/tpu";

/// A pod's resource amounts in thousandths of a unit (`cpu` millicores, `memory` bytes
/// times 1000, devices times 1000), keyed by resource name.
pub type Amounts = BTreeMap<String, i128>;

/// One container as the scheduler sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Container {
    pub name: String,
    pub image: String,
    pub requests: Amounts,
    pub limits: Amounts,
}

/// A taint toleration (`operator` Equal when absent, as Kubernetes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Toleration {
    pub key: Option<String>,
    pub operator: Option<String>,
    pub value: Option<String>,
    pub effect: Option<String>,
}

/// One `matchExpressions` entry of a required node affinity term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    /// In, NotIn, Exists, DoesNotExist, Gt, Lt.
    pub operator: String,
    pub values: Vec<String>,
}

/// A pod template's scheduling facts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodFacts {
    pub node_selector: BTreeMap<String, String>,
    /// Required node affinity: any term may match; all requirements of a term must.
    pub affinity: Vec<Vec<Requirement>>,
    pub tolerations: Vec<Toleration>,
    pub containers: Vec<Container>,
    pub init_containers: Vec<Container>,
}

impl PodFacts {
    /// What the pod asks the scheduler for (limits stand in for absent requests; init
    /// containers by maximum), in thousandths.
    pub fn requests(&self) -> Amounts {
        let effective = |c: &Container| {
            let mut m = c.limits.clone();
            m.extend(c.requests.iter().map(|(k, v)| (k.clone(), *v)));
            m
        };
        let mut total = Amounts::new();
        for c in &self.containers {
            for (k, v) in effective(c) {
                *total.entry(k).or_default() += v;
            }
        }
        for c in &self.init_containers {
            for (k, v) in effective(c) {
                let e = total.entry(k).or_default();
                *e = (*e).max(v);
            }
        }
        total
    }

    /// Whole units of `resource` the pod asks for.
    pub fn units(&self, resource: &str) -> u64 {
        let m = self.requests().get(resource).copied().unwrap_or(0);
        u64::try_from((m + 999) / 1000).unwrap_or(0)
    }

    fn all_containers(&self) -> impl Iterator<Item = &Container> {
        self.containers.iter().chain(&self.init_containers)
    }
}

/// Pods made from one template: `replicas` of them.
#[derive(Debug, Clone, PartialEq)]
pub struct PodGroup {
    /// `pod`, `leader`, `worker`, or a JobSet's replicated job name.
    pub role: String,
    pub replicas: u32,
    pub pod: PodFacts,
}

/// A parsed workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub kind: String,
    pub name: String,
    pub groups: Vec<PodGroup>,
}

/// A node taint (`effect` as Kubernetes spells it: NoSchedule, PreferNoSchedule,
/// NoExecute).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

/// One live node of a pool: what is left on it now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeFacts {
    pub name: String,
    pub zone: String,
    /// Ready and not cordoned.
    pub schedulable: bool,
    /// Allocatable minus the requests of the pods bound to it, in thousandths.
    pub free: Amounts,
}

/// GPU, TPU, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolKind {
    Gpu,
    Tpu,
    Cpu,
}

/// A pool: its record and what the cluster says about it.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolFacts {
    pub pool_id: String,
    pub kind: PoolKind,
    pub machine_type: String,
    /// `nvidia-l4`, `tpu-v5-lite-podslice`, ...
    pub accelerator_type: Option<String>,
    /// GPUs or TPU chips per node.
    pub accelerators_per_node: u32,
    pub tpu_topology: Option<String>,
    pub zones: Vec<String>,
    /// Node labels and taints (as recorded, with what GKE adds itself).
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// Autoscaling bounds per zone (GKE's `maxNodeCount` is per zone).
    pub min_nodes: u32,
    pub max_nodes: u32,
    pub spot: bool,
    /// The on-demand pool paired with this spot pool, or the spot pool of this one.
    pub failover_pair: Option<String>,
    /// DEFAULT, LATEST, INSTALLATION_DISABLED, an explicit `550.90.07`, or none
    /// (Kinetic's installer DaemonSet, which installs the default).
    pub driver_version: Option<String>,
    /// Allocatable of one node, when a node of the pool was seen (thousandths).
    pub node_allocatable: Option<Amounts>,
    pub nodes: Vec<NodeFacts>,
    /// The Compute Engine quota metric a node's accelerators are charged to.
    pub quota_metric: Option<String>,
    /// `nvidia.com/gpu` units one GPU is advertised as (MIG partitions times clients
    /// per GPU; 1 for whole GPUs).
    pub units_per_gpu: u32,
}

impl PoolFacts {
    /// `nvidia.com/gpu` units (GPU pools) or TPU chips one node offers.
    pub fn units_per_node(&self) -> u32 {
        match self.kind {
            PoolKind::Gpu => self.accelerators_per_node * self.units_per_gpu.max(1),
            _ => self.accelerators_per_node,
        }
    }

    /// The most nodes the autoscaler may run in the pool.
    pub fn max_total(&self) -> u32 {
        self.max_nodes
            .saturating_mul(u32::try_from(self.zones.len().max(1)).unwrap_or(1))
    }
}

/// A regional quota: limit and usage now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuotaFacts {
    pub limit: f64,
    pub usage: f64,
}

/// Everything the judgement needs about one cluster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterFacts {
    /// GKE control plane version (`1.31.5-gke.1023000`), when known.
    pub gke_version: Option<String>,
    pub pools: Vec<PoolFacts>,
    /// By metric; a metric not listed was not read and is not judged.
    pub quotas: BTreeMap<String, QuotaFacts>,
}
