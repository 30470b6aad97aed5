//! Accelerator catalog entries as clients see them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::accelerators::Kind;

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcceleratorPrices {
    #[schema(value_type = super::money::Currency)]
    pub currency: String,
    /// Estimated price of one node for an hour, on demand.
    #[serde(serialize_with = "crate::domain::pricing::serialize_cents")]
    pub on_demand_per_node_hour: f64,
    /// Estimated price of one spot node for an hour.
    #[serde(serialize_with = "crate::domain::pricing::serialize_cents")]
    pub spot_per_node_hour: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Accelerator {
    /// Canonical name: `gpu-l4`, `gpu-a100x4`, `tpu-v5litepod-16`.
    #[schema(example = "gpu-l4")]
    pub name: String,
    pub kind: Kind,
    /// Model or TPU family (`l4`, `v5litepod`).
    pub family: String,
    pub gke_accelerator_type: String,
    pub machine_type: String,
    /// GPUs per node (GPU).
    #[schema(required = true)]
    pub count: Option<u32>,
    /// Chips in the slice (TPU).
    #[schema(required = true)]
    pub chips: Option<u32>,
    #[schema(required = true)]
    pub topology: Option<String>,
    #[schema(required = true)]
    pub hosts_per_slice: Option<u32>,
    /// Other accepted spellings.
    pub aliases: Vec<String>,
    /// Whether the resolved spelling asked for spot capacity.
    pub spot: bool,
    #[schema(required = true)]
    pub prices: Option<AcceleratorPrices>,
    /// With a cluster: whether the cluster has a pool of this accelerator.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub live: Option<bool>,
}
