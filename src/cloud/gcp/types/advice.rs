//! Wire structs of Compute Engine's capacity advice (`advice.capacity`, compute v1
//! `CapacityAdviceRequest` / `CapacityAdviceResponse`): how likely Compute can create
//! `size` VMs of a shape in the zones named, now.
//!
//! Invariant: every field name and type is the discovery document's (`compute.v1.json`):
//! `size` and `instanceCount` are int32, `obtainability` a double in 0.0..=1.0,
//! `estimatedUptime` a google-duration string (`"3600s"`), `rank` int64 (a JSON string),
//! enums are strings; only the fields kineticd sends or reads are here, unset ones are
//! not sent, unknown ones are ignored.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::reservation::ReservedAccelerator;

/// `CapacityAdviceRequest`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CapacityAdviceRequest {
    /// The number of VM instances to request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distribution_policy: Option<DistributionPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_flexibility_policy: Option<InstanceFlexibilityPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_properties: Option<InstanceProperties>,
}

/// `CapacityAdviceRequestDistributionPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DistributionPolicy {
    /// ANY | ANY_SINGLE_ZONE | BALANCED | TARGET_SHAPE_UNSPECIFIED.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_shape: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<ZoneConfiguration>,
}

/// `CapacityAdviceRequestDistributionPolicyZoneConfiguration`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ZoneConfiguration {
    /// A zone URL, partial (`zones/us-central1-a`) or full.
    pub zone: String,
}

/// `CapacityAdviceRequestInstanceFlexibilityPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InstanceFlexibilityPolicy {
    /// Keyed by an RFC 1035 name of the caller's choosing.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub instance_selections: BTreeMap<String, InstanceSelection>,
}

/// `CapacityAdviceRequestInstanceFlexibilityPolicyInstanceSelection`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InstanceSelection {
    /// Full machine-type names (`a3-highgpu-8g`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub machine_types: Vec<String>,
    /// `AcceleratorConfig`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guest_accelerators: Vec<ReservedAccelerator>,
}

/// `CapacityAdviceRequestInstanceProperties`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InstanceProperties {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<Scheduling>,
}

/// `CapacityAdviceRequestInstancePropertiesScheduling`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Scheduling {
    /// FLEX_START | RESERVATION_BOUND | SPOT | STANDARD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_model: Option<String>,
}

/// `CapacityAdviceResponse`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CapacityAdviceResponse {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recommendations: Vec<Recommendation>,
}

/// `CapacityAdviceResponseRecommendation`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Recommendation {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<Scores>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<Shard>,
}

/// `CapacityAdviceResponseRecommendationScores`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Scores {
    /// Likelihood of obtaining the VMs, 0.0 through 1.0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub obtainability: Option<f64>,
    /// Spot VMs' estimated run time before preemption (`"7200s"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_uptime: Option<String>,
}

/// `CapacityAdviceResponseRecommendationShard`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Shard {
    /// The zone's name (output only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_count: Option<i32>,
    /// FLEX_START | RESERVATION_BOUND | SPOT | STANDARD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_model: Option<String>,
}

impl CapacityAdviceResponse {
    /// The first recommendation's obtainability (Compute gives one recommendation).
    pub fn obtainability(&self) -> Option<f64> {
        self.recommendations.first()?.scores.as_ref()?.obtainability
    }
}
