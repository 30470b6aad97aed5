//! A cluster's accelerator capacity as clients see it (`GET .../clusters/{c}/capacity`):
//! per accelerator type, pool and node the accelerators allocatable, requested and free,
//! the free ones stranded on partly used nodes, the largest request placeable now, the
//! pending pods that want accelerators with the reason each waits, and idle cost.
//!
//! Invariant: `free = allocatable - requested` (never negative) at every level, each
//! level is the sum of the level below (cluster = pools = nodes), `stranded <= free`,
//! and every pending pod carries exactly one [`PendingReason`].

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use super::money::HourlyCost;

/// `GET .../clusters/{cluster}/capacity`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCapacity {
    /// `projects/{project}/zones/{zone}/clusters/{cluster}`.
    pub name: String,
    /// When the cluster was read (RFC 3339).
    #[schema(format = DateTime)]
    pub check_time: String,
    pub summary: CapacitySummary,
    /// One entry per accelerator type (`nvidia-l4`, `tpu-v5-lite-podslice`), in name order.
    pub accelerators: Vec<AcceleratorCapacity>,
    /// Accelerator node pools (pools without GPUs or TPUs are left out), in id order.
    pub node_pools: Vec<PoolCapacity>,
    /// Pods not yet bound to a node that request GPUs or TPUs, oldest first as listed.
    pub pending_pods: Vec<PendingPod>,
}

/// The cluster in one sentence and its numbers.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapacitySummary {
    /// A human sentence: usage, fragmentation, pending pods, idle cost.
    #[schema(
        example = "6 of 12 accelerators requested (50%); 6 free, 4 of them stranded on partly used nodes; 3 pods pending for accelerators; idle accelerators cost USD 4.26/hour"
    )]
    pub text: String,
    #[schema(format = Int32)]
    pub allocatable: u64,
    #[schema(format = Int32)]
    pub requested: u64,
    #[schema(format = Int32)]
    pub free: u64,
    /// Free accelerators on nodes where some are requested (fragmentation).
    #[schema(format = Int32)]
    pub stranded: u64,
    #[schema(format = Int32)]
    pub pending_pods: u64,
    /// Free accelerators times their hourly price (types without a price are left out).
    pub idle_cost: HourlyCost,
}

/// Counts shared by every level (cluster, accelerator type, pool, node).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Allocatable accelerators (node `status.allocatable`).
    #[schema(format = Int32)]
    pub allocatable: u64,
    /// Requested by pods bound to the nodes and not finished (limits count when a
    /// container has no request, as in Kubernetes).
    #[schema(format = Int32)]
    pub requested: u64,
    /// `allocatable - requested`.
    #[schema(format = Int32)]
    pub free: u64,
    /// Free accelerators on partly used nodes.
    #[schema(format = Int32)]
    pub stranded: u64,
    /// The largest single-pod request that fits one schedulable node now.
    #[schema(format = Int32)]
    pub largest_placeable_request: u64,
}

/// One accelerator type across pools.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcceleratorCapacity {
    /// `nvidia.com/gpu` | `google.com/tpu`.
    #[schema(example = "nvidia.com/gpu")]
    pub resource: String,
    /// GKE accelerator type from the node labels.
    #[schema(example = "nvidia-l4")]
    pub accelerator_type: String,
    #[serde(flatten)]
    pub counts: Counts,
}

/// One accelerator node pool.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PoolCapacity {
    #[schema(example = "gpu-l4x4-3f2a")]
    pub pool_id: String,
    #[schema(example = "nvidia.com/gpu")]
    pub resource: String,
    #[schema(example = "nvidia-l4")]
    pub accelerator_type: String,
    pub spot: bool,
    /// Accelerators per node.
    #[schema(format = Int32)]
    pub per_node: u64,
    pub node_count: u32,
    /// The autoscaler's ceiling (records, else GKE); `null` when unknown.
    #[schema(required = true)]
    pub max_nodes: Option<u32>,
    #[serde(flatten)]
    pub counts: Counts,
    /// Free accelerators of this pool times their price; `null` when the price is unknown.
    #[schema(required = true)]
    pub idle_cost: Option<HourlyCost>,
    pub nodes: Vec<NodeCapacity>,
    /// Set when the pool's GPUs are partitioned (MIG) or shared (time-sharing, MPS):
    /// then `perNode` and the counts are `nvidia.com/gpu` units, not physical GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub gpu_units: Option<GpuUnits>,
}

/// How a pool's GPUs are advertised as `nvidia.com/gpu` units.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuUnits {
    /// Units one physical GPU is advertised as (partitions per GPU x clients per GPU).
    #[schema(example = 7)]
    pub units_per_gpu: u32,
    /// Physical GPUs on the pool's nodes (`allocatable / unitsPerGpu`).
    #[schema(format = Int32)]
    pub physical_gpus: u64,
    /// MIG partition size (`cloud.google.com/gke-gpu-partition-size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = "1g.5gb", nullable = false)]
    pub partition_size: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::domain::gpu_sharing::Strategy>, nullable = false)]
    pub sharing_strategy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub max_clients_per_gpu: Option<u32>,
}

/// One node of an accelerator pool.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeCapacity {
    pub name: String,
    /// Ready and not cordoned: new pods may land here.
    pub schedulable: bool,
    /// Pods bound here that request accelerators.
    pub accelerator_pods: u32,
    #[serde(flatten)]
    pub counts: Counts,
}

/// Why a pod that wants accelerators is still pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PendingReason {
    /// No node pool offers the accelerator (resource or type) the pod asks for.
    NoMatchingPool,
    /// Pools offer the accelerator, but the pod's nodeSelector matches none of their nodes.
    NodeSelectorMatchesNothing,
    /// Every pool that could take it has a taint the pod does not tolerate.
    MissingToleration,
    /// The request is larger than any node of the pools that could take it.
    AcceleratorCountTooLarge,
    /// No node has enough free and every pool that could grow is at its maximum.
    PoolAtMax,
    /// A pool could grow, but the region's accelerator quota cannot cover one more node.
    QuotaExhausted,
    /// A pool can grow: the cluster autoscaler adds a node for it.
    ScaleUpPending,
    /// A node has the accelerators free now: kube-scheduler binds it shortly, or another
    /// resource (CPU, memory, pods) is short there (see `schedulerMessage`).
    FitsNow,
}

/// A pending pod that requests accelerators.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingPod {
    pub namespace: String,
    pub name: String,
    #[schema(example = "nvidia.com/gpu")]
    pub resource: String,
    /// Accelerators requested.
    #[schema(format = Int32)]
    pub requested: u64,
    pub reason: PendingReason,
    /// What is wrong and what would fix it.
    pub message: String,
    /// The pools the reason is about: those whose taint it lacks a toleration for, those
    /// too small, the node's pool (FITS_NOW), those at their maximum, those without quota,
    /// the pool that grows (SCALE_UP_PENDING); empty when no pool matches.
    pub pools: Vec<String>,
    /// kube-scheduler's explanation (PodScheduled condition), when it gave one.
    #[schema(required = true)]
    pub scheduler_message: Option<String>,
}
