//! The resource of a plan action: its type (`storage.bucket`, `container.nodePool`, ...)
//! and the typed details a preview shows, as one serde-tagged enum whose JSON is what
//! plans have always carried (`"type": ..., "details": ...`).
//!
//! Invariant: every type string appears once ([`Resource`]'s variants), and each details
//! struct serializes its fields in the order (sorted, as `json!` wrote them before) and
//! with the nulls the plans stored before these types existed, so stored operations and
//! previews read the same.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Details of a resource that has none (`"details": null`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct NoDetails;

macro_rules! resources {
    // `tt`, not `literal`: utoipa reads the rename only from a bare literal token.
    ($($ty:tt => $variant:ident($details:ty),)*) => {
        /// A plan action's resource: its type and details.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
        #[serde(tag = "type", content = "details")]
        pub enum Resource {
            $(#[serde(rename = $ty)] $variant($details),)*
        }

        impl Resource {
            /// The type string (`storage.bucket`, ...).
            pub fn type_name(&self) -> &'static str {
                match self {
                    $(Resource::$variant(_) => $ty,)*
                }
            }
        }
    };
}

resources! {
    "serviceusage.service" => Services(ServicesDetails),
    "storage.bucket" => Bucket(BucketDetails),
    "compute.network" => Network(NoDetails),
    "compute.router" => Router(RouterDetails),
    "iam.serviceAccount" => ServiceAccount(NoDetails),
    "iam.binding" => Binding(BindingDetails),
    "artifactregistry.repository" => Repository(Option<RepositoryDetails>),
    "container.cluster" => Cluster(Option<ClusterDetails>),
    "container.nodePool" => NodePool(Option<Box<PoolDetails>>),
    // The Kubernetes objects the workflow applies: `ksa`, `lws`, `nvidia-driver`,
    // `compute-class`.
    "kubernetes.object" => KubernetesObject(Option<KubeObjectDetails>),
    "kineticd.profile" => Profile(NoDetails),
    // A failover drill: the spot pool's VMs, and the watch of the failover.
    "compute.instance" => Instances(NoDetails),
    "kineticd.drill" => Drill(DrillDetails),
}

/// What a failover drill watches, and for how long.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DrillDetails {
    #[schema(value_type = crate::model::drill::DrillMode)]
    pub mode: String,
    pub spot_pool: String,
    pub fallback_pool: String,
    /// How long the drill may take (`google.protobuf.Duration`, e.g. `900s`).
    pub deadline: String,
}

/// The APIs enabled in the project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ServicesDetails {
    pub services: Vec<String>,
}

/// A bucket to ensure (its shape) or to delete (whether it is emptied first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum BucketDetails {
    Ensure(BucketSpec),
    Delete(BucketDelete),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BucketSpec {
    /// Objects are deleted after this many days (the jobs and builds buckets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub lifecycle_delete_age_days: Option<u32>,
    pub location: String,
    pub uniform_bucket_level_access: bool,
    /// Object versioning (the state bucket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub versioning: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BucketDelete {
    /// Emptied first; without it a bucket holding objects is not deleted.
    pub force_destroy: bool,
}

/// The router's Cloud NAT (the allocation settings when it is created).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouterDetails {
    pub nat: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub nat_ip_allocate_option: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub source_subnetwork_ip_ranges_to_nat: Option<String>,
}

/// IAM bindings, in the shape of the policy they change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum BindingDetails {
    /// Project roles of one member.
    MemberRoles(MemberRoles),
    /// Roles of several members (on a bucket).
    MembersRoles(MembersRoles),
    /// One role per member (on the repository).
    Bindings(Bindings),
    /// One role of one member (on a service account).
    MemberRole(MemberRole),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberRoles {
    pub member: String,
    pub roles: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MembersRoles {
    pub members: Vec<String>,
    pub roles: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Bindings {
    pub bindings: Vec<MemberRole>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberRole {
    pub member: String,
    pub role: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RepositoryDetails {
    pub docker_host: String,
    #[schema(value_type = crate::model::cloud_enums::RepositoryFormat)]
    pub format: String,
}

/// The GKE cluster as `up` creates it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDetails {
    pub default_pool: DefaultPool,
    pub force_destroy: bool,
    pub master_ipv4_cidr_block: String,
    pub private_nodes: bool,
    pub release_channel: String,
    pub workload_pool: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefaultPool {
    #[schema(format = Int32)]
    pub disk_size_gb: i64,
    pub machine_type: String,
    #[schema(format = Int32)]
    pub node_count: i64,
}

/// A node pool's shape (`zones`, `labels` and `taints` from `pool add`; a resize adds
/// `resizedFrom` and the pool's `estimatedHourlyCost` at its new bounds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PoolDetails {
    pub accelerator: String,
    #[schema(value_type = Option<crate::model::cloud_enums::GpuDriverVersion>, required = true)]
    pub driver_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub estimated_hourly_cost: Option<crate::model::EstimatedCost>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub labels: Option<BTreeMap<String, String>>,
    pub machine_type: String,
    #[schema(format = Int32)]
    pub max_nodes: i64,
    #[schema(required = true)]
    pub max_run_duration: Option<String>,
    #[schema(format = Int32)]
    pub min_nodes: i64,
    /// MIG partition size (absent: whole GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub partition_size: Option<String>,
    #[schema(required = true)]
    pub placement_topology: Option<String>,
    /// FLEX_START | QUEUED (absent for on-demand, spot and reservation pools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::domain::provisioning::Provisioning>, nullable = false)]
    pub provisioning: Option<String>,
    #[schema(required = true)]
    pub reservation: Option<String>,
    /// GPU time-sharing or MPS (absent: not shared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub sharing: Option<crate::model::GpuSharing>,
    /// A resize: the bounds the pool had before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub resized_from: Option<NodeBounds>,
    pub spot: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub taints: Option<Vec<PoolTaint>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub zones: Option<Vec<String>>,
}

/// A pool's autoscaling bounds (per zone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeBounds {
    #[schema(format = Int32)]
    pub max_nodes: i64,
    #[schema(format = Int32)]
    pub min_nodes: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PoolTaint {
    #[schema(value_type = crate::domain::pools::TaintEffect)]
    pub effect: String,
    pub key: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KubeObjectDetails {
    pub annotations: BTreeMap<String, String>,
    /// The ComputeClass of a failover pair (the object applied or deleted).
    #[serde(
        rename = "computeClass",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false)]
    pub compute_class: Option<super::class_object::ComputeClass>,
}

impl Resource {
    /// Whether a deleted bucket is emptied first (true unless the plan says otherwise).
    pub fn force_destroy(&self) -> bool {
        match self {
            Resource::Bucket(BucketDetails::Delete(d)) => d.force_destroy,
            _ => true,
        }
    }
}
