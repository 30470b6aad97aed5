//! A cluster's live status as clients see it: what Google Cloud and the cluster's
//! Kubernetes API say right now, next to what the records say, and the drift between them.
//!
//! Invariant: every field is read live at `checkTime`; `exists` is `null` (never `false`)
//! when a resource could not be checked, and its `error` then says why, so a client never
//! mistakes "unknown" for "missing".

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::{ClusterState, PoolState};

/// `GET .../clusters/{cluster}/status`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// `projects/{project}/zones/{zone}/clusters/{cluster}`.
    pub name: String,
    /// When the cloud was read (RFC 3339).
    #[schema(format = DateTime)]
    pub check_time: String,
    pub cluster: ClusterLive,
    pub buckets: BucketsStatus,
    pub repository: RepositoryStatus,
    pub network: ResourceStatus,
    pub router: RouterStatus,
    pub service_accounts: ServiceAccountsStatus,
    /// Accelerator pools: every recorded pool and every GKE pool except `default-pool`,
    /// in pool-id order.
    pub node_pools: Vec<PoolStatus>,
    /// GKE's `default-pool` (CPU, never recorded), when GKE has one.
    #[schema(required = true)]
    pub default_pool: Option<PoolStatus>,
    pub kubernetes: KubernetesStatus,
    /// Differences between the records and the cloud, and between the team's roster and
    /// the cluster's managed RBAC bindings (not while an `up` or a SYNC_ACCESS of the
    /// cluster is under way); empty when they agree.
    pub drift: Vec<Drift>,
}

/// The cluster record and the GKE cluster.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterLive {
    /// The record's name, `projects/{p}/zones/{z}/clusters/{c}`.
    pub name: String,
    /// The record's state.
    pub state: ClusterState,
    pub gke: GkeClusterStatus,
}

/// The GKE cluster as `clusters.get` describes it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GkeClusterStatus {
    /// `projects/{p}/locations/{zone}/clusters/{c}`.
    pub name: String,
    /// `null` when it could not be checked (see `error`).
    #[schema(required = true)]
    pub exists: Option<bool>,
    /// GKE's status, as GKE reports it.
    #[schema(value_type = Option<super::cloud_enums::GkeClusterState>, required = true)]
    pub status: Option<String>,
    #[schema(required = true)]
    pub endpoint: Option<String>,
    #[schema(required = true)]
    pub location: Option<String>,
    #[schema(required = true)]
    pub current_master_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<String>,
}

/// One cloud resource that either exists or not.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceStatus {
    /// Full resource name.
    pub name: String,
    /// `null` when it could not be checked (see `error`).
    #[schema(required = true)]
    pub exists: Option<bool>,
    /// Why it could not be checked (any Google error other than 404).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BucketStatus {
    /// `projects/_/buckets/{bucket}`.
    pub name: String,
    #[schema(required = true)]
    pub exists: Option<bool>,
    /// The bucket's location as Google reports it (`US`, `US-CENTRAL1`).
    #[schema(required = true)]
    pub location: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BucketsStatus {
    pub jobs: BucketStatus,
    pub builds: BucketStatus,
    /// The project's state bucket (shared by its clusters, kept by `down`).
    pub state: BucketStatus,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RepositoryStatus {
    /// `projects/{p}/locations/{l}/repositories/{id}`.
    pub name: String,
    #[schema(required = true)]
    pub exists: Option<bool>,
    /// `us`, `europe`, `asia` or a region.
    #[schema(required = true)]
    pub location: Option<String>,
    /// DOCKER for kineticd's repositories.
    #[schema(value_type = Option<super::cloud_enums::RepositoryFormat>, required = true)]
    pub format: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<String>,
}

/// The Cloud Router and its Cloud NAT.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouterStatus {
    /// `projects/{p}/regions/{r}/routers/{router}`.
    pub name: String,
    #[schema(required = true)]
    pub exists: Option<bool>,
    /// The NAT (`.../routers/{router}/nats/{nat}`); exists only on an existing router.
    pub nat: ResourceStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceAccountsStatus {
    pub node: ResourceStatus,
    pub build: ResourceStatus,
}

/// Ready and total nodes of a pool, as the Kubernetes API lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeCounts {
    pub ready: u32,
    pub total: u32,
}

/// One node pool: its record (if any), GKE's view (if any) and its nodes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PoolStatus {
    #[schema(example = "gpu-l4-3f2a")]
    pub pool_id: String,
    /// The records hold this pool.
    pub recorded: bool,
    /// The record's state, when recorded.
    #[schema(required = true)]
    pub record_state: Option<PoolState>,
    /// GKE's status; `null` when GKE has no such pool or could not be read.
    #[schema(value_type = Option<super::cloud_enums::GkeNodePoolState>, required = true)]
    pub gke_status: Option<String>,
    /// `null` when the Kubernetes API could not be read.
    #[schema(required = true)]
    pub nodes: Option<NodeCounts>,
    /// Allocatable `nvidia.com/gpu` plus `google.com/tpu` over the pool's nodes; `null`
    /// when the Kubernetes API could not be read.
    #[schema(required = true, format = Int32)]
    pub accelerators_allocatable: Option<u64>,
    /// Canonical accelerator (`gpu-l4`, `tpu-v5litepod-16`): the record's, or for an
    /// unrecorded pool the catalog entry matching GKE's configuration.
    #[schema(example = "gpu-l4", required = true)]
    pub accelerator: Option<String>,
}

/// Whether the cluster's Kubernetes API answered.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubernetesStatus {
    pub reachable: bool,
    /// Why it was not reachable.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub message: Option<String>,
}

/// What kind of difference a drift entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DriftProblem {
    /// Recorded (or required by the record) but absent in the cloud; `up` re-creates it
    /// (an access binding the roster justifies: `:syncAccess` makes it).
    Missing,
    /// In the cloud but not in the records (an access binding labelled
    /// `managed-by: kineticd` the roster no longer justifies: `:syncAccess` deletes it).
    Unrecorded,
    /// Both exist but their configuration differs.
    Different,
}

/// One difference between the records and the cloud.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    /// Full resource name.
    pub resource: String,
    /// Plan resource type: `storage.bucket`, `container.nodePool`, ...; for access,
    /// `rbac.clusterRoleBinding` or `rbac.roleBinding`.
    #[serde(rename = "type")]
    #[schema(example = "storage.bucket")]
    pub resource_type: String,
    pub problem: DriftProblem,
    pub message: String,
}
