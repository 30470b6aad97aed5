//! The body of `POST .../nodePools` (pool add) as received: what the pool add use case
//! ([`super::pools`]) and its checks of flex-start ([`super::flex`]) and GPU sharing
//! ([`super::sharing`]) read.
//!
//! Invariant: unknown fields are refused (`deny_unknown_fields`); every field is
//! optional here and validated by the use case.

use serde::{Deserialize, Serialize};

use crate::model;

/// The body of `POST .../nodePools`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddPoolRequest {
    /// `gpu-l4`, `a100x4`, `tpu-v5litepod-16`, `l4:spot`, ... (not `cpu`).
    pub accelerator: Option<String>,
    /// Nodes kept warm (default 0). Multi-host TPU: a multiple of the slice's hosts.
    pub min_nodes: Option<u32>,
    pub spot: Option<bool>,
    /// Consume this specific reservation (not with spot).
    pub reservation: Option<String>,
    /// Zones of the cluster's region to spread the pool over (default: the cluster's
    /// zone). `["auto"]` (spot pools only): the zones of the region the placement advice
    /// ranks (`placements:search`), with GKE's autoscaling `locationPolicy: ANY`, so the
    /// autoscaler creates nodes wherever there is capacity; the plan says which zones
    /// and why.
    pub zones: Option<Vec<String>>,
    /// GKE-managed driver: DEFAULT, LATEST or INSTALLATION_DISABLED (GPU pools only);
    /// unset: the NVIDIA driver installer DaemonSet is applied.
    #[schema(value_type = Option<crate::model::cloud_enums::GpuDriverVersion>)]
    pub driver_version: Option<String>,
    /// Add a spot pool plus an on-demand pool of the same machine at 0 nodes that
    /// pending pods fail over to.
    pub failover: Option<bool>,
    /// ON_DEMAND (default), SPOT (= `spot: true`), RESERVATION (with `reservation`),
    /// FLEX_START (flex-start VMs, Dynamic Workload Scheduler) or QUEUED (flex-start with
    /// queued provisioning: nodes only for a ProvisioningRequest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::domain::provisioning::Provisioning>, example = "FLEX_START")]
    pub provisioning: Option<String>,
    /// How long a node may run, e.g. `"86400s"` (flex-start: at most `"604800s"`, 7 days,
    /// the default there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_run_duration: Option<String>,
    /// Share each GPU (or partition) between containers: TIME_SHARING or MPS, with
    /// 2..48 clients per GPU (GPU pools only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<model::GpuSharing>,
    /// Split each GPU into multi-instance GPU partitions of this size (`1g.5gb`; A100,
    /// H100, H200 and B200 only: the 400 lists the sizes of the pool's GPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_size: Option<String>,
}
