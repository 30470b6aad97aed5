//! GKE (container.googleapis.com v1) wire structs: the subset kineticd sends and reads.
//!
//! Invariant: every field name exists in Google's discovery document (`container.v1.json`)
//! under the same schema; optional fields are skipped when unset so a request carries
//! only what the caller set; int64 fields go through [`super::int64`]. Enums are strings.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::int64;

fn is_false(b: &bool) -> bool {
    !*b
}

/// `Cluster`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Cluster {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_cluster_version: Option<String>,
    /// Legacy default-pool size (used when `nodePools` is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_node_count: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release_channel: Option<ReleaseChannel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnetwork: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_cluster_config: Option<PrivateClusterConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_config: Option<NetworkConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_allocation_policy: Option<IpAllocationPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload_identity_config: Option<WorkloadIdentityConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub node_pools: Vec<NodePool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<ClusterAutoscaling>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addons_config: Option<AddonsConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<String>,

    // Output only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Google: a bare IP (`https://{endpoint}`); the simulator: a full `http://` URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master_auth: Option<MasterAuth>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Output only, deprecated: the location again (gcloud's tables still read it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_master_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_node_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_node_count: Option<i32>,
}

/// `ReleaseChannel`: `channel` RAPID | REGULAR | STABLE | EXTENDED.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReleaseChannel {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub channel: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PrivateClusterConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_private_nodes: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_private_endpoint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master_ipv4_cidr_block: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NetworkConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_enable_private_nodes: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnetwork: Option<String>,
}

/// `IPAllocationPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct IpAllocationPolicy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub use_ip_aliases: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_subnetwork: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_ipv4_cidr_block: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub services_ipv4_cidr_block: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkloadIdentityConfig {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub workload_pool: String,
}

/// Cluster-level node auto-provisioning.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterAutoscaling {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_node_autoprovisioning: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_limits: Vec<ResourceLimit>,
    /// BALANCED | OPTIMIZE_UTILIZATION.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autoscaling_profile: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceLimit {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_type: String,
    #[serde(with = "int64::option", skip_serializing_if = "Option::is_none")]
    pub minimum: Option<i64>,
    #[serde(with = "int64::option", skip_serializing_if = "Option::is_none")]
    pub maximum: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AddonsConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gcs_fuse_csi_driver_config: Option<GcsFuseCsiDriverConfig>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GcsFuseCsiDriverConfig {
    #[serde(skip_serializing_if = "is_false")]
    pub enabled: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MasterAuth {
    /// Base64 of the cluster CA's PEM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_ca_certificate: Option<String>,
}

/// `NodePool`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodePool {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Per zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_node_count: Option<i32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<NodeConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<NodePoolAutoscaling>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub management: Option<NodeManagement>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement_policy: Option<PlacementPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued_provisioning: Option<QueuedProvisioning>,

    // Output only.
    /// PROVISIONING | RUNNING | RUNNING_WITH_ERROR | RECONCILING | STOPPING | ERROR.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<StatusCondition>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instance_group_urls: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// `NodeConfig`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_size_gb: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_type: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accelerators: Vec<AcceleratorConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spot: Option<bool>,
    /// Flex-start VMs (Dynamic Workload Scheduler).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flex_start: Option<bool>,
    /// Kubernetes labels on every node.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// GCE labels on the VMs.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<NodeTaint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub oauth_scopes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservation_affinity: Option<ReservationAffinity>,
    /// Duration string, e.g. `"86400s"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_run_duration: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload_metadata_config: Option<WorkloadMetadataConfig>,
}

/// `AcceleratorConfig`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AcceleratorConfig {
    #[serde(with = "int64")]
    pub accelerator_count: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub accelerator_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_driver_installation_config: Option<GpuDriverInstallationConfig>,
    /// Multi-instance GPU partition size, e.g. `1g.5gb`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_partition_size: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_sharing_config: Option<GpuSharingConfig>,
}

/// `GPUSharingConfig`: `gpuSharingStrategy` TIME_SHARING | MPS, `maxSharedClientsPerGpu`
/// an int64 (a JSON string).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GpuSharingConfig {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub gpu_sharing_strategy: String,
    #[serde(with = "int64")]
    pub max_shared_clients_per_gpu: i64,
}

/// `GPUDriverInstallationConfig`: `gpuDriverVersion` INSTALLATION_DISABLED | DEFAULT | LATEST.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GpuDriverInstallationConfig {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub gpu_driver_version: String,
}

/// `NodeTaint`: effect NO_SCHEDULE | PREFER_NO_SCHEDULE | NO_EXECUTE.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeTaint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReservationAffinity {
    /// NO_RESERVATION | ANY_RESERVATION | SPECIFIC_RESERVATION.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub consume_reservation_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// `WorkloadMetadataConfig`: `mode` GKE_METADATA | GCE_METADATA.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkloadMetadataConfig {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mode: String,
}

/// `NodePoolAutoscaling` (min/max per zone; total* across zones).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodePoolAutoscaling {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_node_count: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_node_count: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_min_node_count: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_max_node_count: Option<i32>,
    /// BALANCED | ANY.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location_policy: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeManagement {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_repair: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_upgrade: Option<bool>,
}

/// `PlacementPolicy`: `type` COMPACT; `tpuTopology` such as `4x4` or `2x2x2`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PlacementPolicy {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpu_topology: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueuedProvisioning {
    #[serde(skip_serializing_if = "is_false")]
    pub enabled: bool,
}

/// `StatusCondition`: `code` such as GCE_STOCKOUT or GCE_QUOTA_EXCEEDED.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StatusCondition {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canonical_code: Option<String>,
}

/// `CreateClusterRequest` (only the body field kineticd uses).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CreateClusterRequest {
    pub cluster: Option<Cluster>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CreateNodePoolRequest {
    pub node_pool: Option<NodePool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SetNodePoolSizeRequest {
    pub node_count: Option<i32>,
}

/// `SetNodePoolAutoscalingRequest` (`nodePools.setAutoscaling`): the pool's whole
/// autoscaling configuration (`name` is the pool's resource name; the deprecated
/// `projectId` / `zone` / `clusterId` / `nodePoolId` are never sent).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SetNodePoolAutoscalingRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<NodePoolAutoscaling>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `ListClustersResponse`: every cluster of the location(s) asked (`locations/-`: all),
/// and the zones GKE could not read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListClustersResponse {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<Cluster>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_zones: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListNodePoolsResponse {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub node_pools: Vec<NodePool>,
}

/// A GKE long-running `Operation`. A DONE operation may carry `error`: always check it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Operation {
    /// Bare `operation-...`.
    pub name: String,
    /// CREATE_CLUSTER, DELETE_CLUSTER, CREATE_NODE_POOL, DELETE_NODE_POOL,
    /// SET_NODE_POOL_SIZE, ...
    #[serde(skip_serializing_if = "String::is_empty")]
    pub operation_type: String,
    /// PENDING | RUNNING | DONE | ABORTING.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_link: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Deprecated: the location again (gcloud's tables still read it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<OperationProgress>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcStatus>,
}

impl Operation {
    pub fn is_done(&self) -> bool {
        self.status == "DONE"
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OperationProgress {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<Metric>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<OperationProgress>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Metric {
    pub name: String,
    #[serde(with = "int64::option", skip_serializing_if = "Option::is_none")]
    pub int_value: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub double_value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub string_value: Option<String>,
}

/// `google.rpc.Status` as GKE puts it in `Operation.error`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RpcStatus {
    pub code: i32,
    pub message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Value>,
}
