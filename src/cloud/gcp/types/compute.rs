//! Compute Engine (compute v1) wire structs: the subset kineticd sends and reads.
//!
//! Invariant: every field name exists in Google's discovery document (`compute.v1.json`)
//! under the same schema; optional fields are skipped when unset so a request carries
//! only what the caller set. uint64 ids (`id`, `targetId`) are opaque strings (read
//! from a string or a number), quota values are doubles, enums are strings.

use serde::{Deserialize, Serialize};

use super::list::List;
use super::uint64_id::id_string;

/// `Network`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Network {
    #[serde(
        deserialize_with = "id_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// true = auto mode (one subnetwork per region).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_create_subnetworks: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing_config: Option<NetworkRoutingConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subnetworks: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
}

/// `NetworkRoutingConfig`: `routingMode` REGIONAL | GLOBAL.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NetworkRoutingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing_mode: Option<String>,
}

/// `Router` (Cloud Router, here only as the carrier of Cloud NAT).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Router {
    #[serde(
        deserialize_with = "id_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `projects/{p}/global/networks/{n}` or a full URL.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub network: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nats: Vec<RouterNat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
}

/// `RouterNat`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RouterNat {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// AUTO_ONLY | MANUAL_ONLY.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub nat_ip_allocate_option: String,
    /// ALL_SUBNETWORKS_ALL_IP_RANGES | ALL_SUBNETWORKS_ALL_PRIMARY_IP_RANGES |
    /// LIST_OF_SUBNETWORKS.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub source_subnetwork_ip_ranges_to_nat: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nat_ips: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_ports_per_vm: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_config: Option<RouterNatLogConfig>,
}

/// `RouterNatLogConfig`: `filter` ERRORS_ONLY | TRANSLATIONS_ONLY | ALL.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RouterNatLogConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
}

/// `Region` with its quotas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Region {
    #[serde(
        deserialize_with = "id_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// UP | DOWN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Zone URLs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quotas: Vec<Quota>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
}

impl Region {
    /// The quota for `metric`, if the region reports it.
    pub fn quota(&self, metric: &str) -> Option<&Quota> {
        self.quotas.iter().find(|q| q.metric == metric)
    }
}

/// `Quota` (doubles).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Quota {
    pub metric: String,
    pub limit: f64,
    pub usage: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// `AcceleratorType` (GPUs offered in one zone).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AcceleratorType {
    #[serde(
        deserialize_with = "id_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// e.g. `nvidia-l4`.
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum_cards_per_instance: Option<i32>,
    /// Zone URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
}

/// `AcceleratorTypeList` (one page).
pub type AcceleratorTypeList = List<AcceleratorType>;

/// A Compute `Operation` (global, regional or zonal). DONE + `error` = failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Operation {
    #[serde(
        deserialize_with = "id_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub name: String,
    /// insert, delete, ...
    #[serde(skip_serializing_if = "String::is_empty")]
    pub operation_type: String,
    /// PENDING | RUNNING | DONE.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_link: Option<String>,
    #[serde(
        deserialize_with = "id_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub target_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
    /// Region URL (regional operations only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Zone URL (zonal operations only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insert_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<OperationError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_error_status_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_error_message: Option<String>,
}

impl Operation {
    pub fn is_done(&self) -> bool {
        self.status == "DONE"
    }
}

/// `Operation.error`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OperationError {
    pub errors: Vec<OperationErrorItem>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OperationErrorItem {
    /// e.g. ZONE_RESOURCE_POOL_EXHAUSTED, QUOTA_EXCEEDED, RESOURCE_IN_USE_BY_ANOTHER_RESOURCE.
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// `Zone`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Zone {
    #[serde(
        deserialize_with = "id_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// e.g. `us-central1-a`.
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// UP | DOWN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Region URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub available_cpu_platforms: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
}

impl Zone {
    /// The region's short name (the last segment of `region`).
    pub fn region_name(&self) -> Option<&str> {
        self.region.as_deref()?.rsplit('/').next()
    }
}

/// `ZoneList` (one page).
pub type ZoneList = List<Zone>;

/// `MachineType` (here: whether a zone offers a GKE TPU machine type).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MachineType {
    #[serde(
        deserialize_with = "id_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// e.g. `ct5lp-hightpu-4t`.
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_cpus: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<i32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accelerators: Vec<MachineTypeAccelerator>,
    /// Zone short name (Compute sends the name, not a URL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
}

/// `MachineType.accelerators[]`: GPUs bundled with the machine type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MachineTypeAccelerator {
    pub guest_accelerator_type: String,
    pub guest_accelerator_count: i32,
}
