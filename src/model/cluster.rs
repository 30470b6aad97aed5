//! Clusters and node pools as clients see them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::accelerators::Kind;
use crate::domain::gpu_sharing::Strategy;
use crate::domain::pools::{FailoverRole, TaintEffect};
use crate::domain::provisioning::Provisioning;
use crate::domain::{ClusterState, PoolState};

/// Names of every cloud resource a cluster owns (null until created).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterResources {
    #[schema(required = true)]
    pub gke_cluster: Option<String>,
    #[schema(required = true)]
    pub network: Option<String>,
    #[schema(required = true)]
    pub router: Option<String>,
    #[schema(required = true)]
    pub nat: Option<String>,
    #[schema(required = true)]
    pub artifact_repository: Option<String>,
    #[schema(required = true)]
    pub jobs_bucket: Option<String>,
    #[schema(required = true)]
    pub builds_bucket: Option<String>,
    #[schema(required = true)]
    pub state_bucket: Option<String>,
    #[schema(required = true)]
    pub node_service_account: Option<String>,
    #[schema(required = true)]
    pub build_service_account: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cluster {
    /// `projects/{project}/zones/{zone}/clusters/{cluster}`.
    #[schema(example = "projects/my-gcp-project/zones/us-central1-a/clusters/kinetic-cluster")]
    pub name: String,
    pub project: String,
    pub zone: String,
    pub region: String,
    pub cluster_id: String,
    /// `teams/{teamId}` owning the project.
    pub team: String,
    pub state: ClusterState,
    pub force_destroy: bool,
    pub resources: ClusterResources,
    #[schema(required = true)]
    pub endpoint: Option<String>,
    pub node_pools: Vec<NodePool>,
    #[schema(format = DateTime)]
    pub create_time: String,
    #[schema(format = DateTime)]
    pub update_time: String,
    pub created_by: String,
    pub reconciling: bool,
    /// When the cluster's TTL runs out and it is brought down (`up`'s `ttl` or
    /// `expireTime`; `:snooze` postpones it). Absent: no TTL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = DateTime)]
    pub expire_time: Option<String>,
    pub etag: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: TaintEffect,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailoverRef {
    pub role: FailoverRole,
    pub paired_pool: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EstimatedCost {
    #[schema(value_type = super::money::Currency)]
    pub currency: String,
    #[serde(serialize_with = "crate::domain::pricing::serialize_cents")]
    pub per_node: f64,
    #[serde(serialize_with = "crate::domain::pricing::serialize_cents")]
    pub at_min: f64,
    #[serde(serialize_with = "crate::domain::pricing::serialize_cents")]
    pub at_max: f64,
}

/// How the GPUs of a pool's nodes are shared between containers (GKE's
/// `gpuSharingConfig`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GpuSharing {
    /// A request's strategy is read as text, so that a wrong one gets INVALID_SHARING.
    #[schema(value_type = Strategy)]
    pub strategy: String,
    /// Containers that may share one GPU (one partition with `partitionSize`): 2 to 48.
    #[schema(example = 4)]
    pub max_clients_per_gpu: u32,
}

/// A node pool. Its shape is fixed when the pool is added and preserved by every later
/// operation.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePool {
    /// `projects/{p}/zones/{z}/clusters/{c}/nodePools/{pool}`.
    pub name: String,
    #[schema(example = "gpu-l4-3f2a")]
    pub pool_id: String,
    #[schema(example = "gpu-l4")]
    pub accelerator: String,
    pub kind: Kind,
    pub machine_type: String,
    #[schema(required = true)]
    pub gke_accelerator_type: Option<String>,
    #[schema(required = true, format = Int32)]
    pub accelerator_count: Option<i64>,
    #[schema(required = true)]
    pub tpu_topology: Option<String>,
    #[schema(required = true, format = Int32)]
    pub hosts_per_slice: Option<i64>,
    #[schema(format = Int32)]
    pub min_nodes: i64,
    #[schema(format = Int32)]
    pub max_nodes: i64,
    pub spot: bool,
    #[schema(required = true)]
    pub reservation: Option<String>,
    pub zones: Vec<String>,
    pub taints: Vec<Taint>,
    pub labels: BTreeMap<String, String>,
    #[schema(required = true)]
    pub max_run_duration: Option<String>,
    #[schema(required = true)]
    pub driver_version: Option<String>,
    #[schema(required = true)]
    pub failover: Option<FailoverRef>,
    /// How nodes are obtained: ON_DEMAND | SPOT | RESERVATION | FLEX_START | QUEUED.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "ON_DEMAND", nullable = false)]
    pub provisioning: Option<Provisioning>,
    pub state: PoolState,
    #[schema(required = true)]
    pub estimated_hourly_cost: Option<EstimatedCost>,
    #[schema(format = DateTime)]
    pub create_time: String,
    /// AIP-154 etag of the pool record: send it as `If-Match` on remove, resize or drill
    /// (409 ABORTED ETAG_MISMATCH when the pool changed since it was read).
    pub etag: String,
    /// GPU time-sharing or MPS (GPU pools only; absent: whole GPUs).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub sharing: Option<GpuSharing>,
    /// Multi-instance GPU partition size (`1g.5gb`; A100, H100, H200, B200 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "1g.5gb", nullable = false)]
    pub partition_size: Option<String>,
    /// `nvidia.com/gpu` units one node advertises when its GPUs are shared or
    /// partitioned (GPUs x partitions per GPU x clients per GPU); absent: units are
    /// physical GPUs (`acceleratorCount`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = Int32)]
    pub gpu_units_per_node: Option<i64>,
}
