//! Placement advice as clients see it (`POST /v1/teams/{team}/placements:search`):
//! where `count` accelerators of a type can be had now, ranked.
//!
//! Invariant: `placements` is sorted by `score`, highest first, and the kinds are
//! banded so that every EXISTING_CAPACITY scores above every RESERVATION, and every
//! RESERVATION above every NEW_POOL (scores 200..300, 100..200 and 0..100); what could
//! not be read is in `warnings`, never a failure.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The body of `placements:search`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlacementQuery {
    /// The accelerator and its per-node shape, as for a pool: `h100x8`, `gpu-l4`,
    /// `tpu-v5litepod-16` (GET /v1/accelerators lists them).
    #[schema(example = "h100x8")]
    pub accelerator: Option<String>,
    /// Accelerators wanted in all (GPUs or TPU chips), 1 to 10000.
    #[schema(format = Int32, minimum = 1, maximum = 10000, example = 8)]
    pub count: Option<i64>,
    /// ON_DEMAND (default; SPOT when the accelerator says `:spot`), SPOT, RESERVATION,
    /// FLEX_START or QUEUED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::domain::provisioning::Provisioning>, nullable = false)]
    pub provisioning: Option<String>,
    /// Only these zones (each in reach of the team's projects); default: the zones of
    /// the regions of the team's clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub zones: Option<Vec<String>>,
}

/// What a placement offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PlacementKind {
    /// Accelerators free now on nodes already running in one of the team's pools.
    ExistingCapacity,
    /// VMs free in a reservation of the team's project that holds the shape.
    Reservation,
    /// A new pool (in the team's cluster of the zone's region, when it has one).
    NewPool,
}

/// One place the accelerators could come from.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    pub kind: PlacementKind,
    #[schema(example = "us-central1-a")]
    pub zone: String,
    /// `projects/{p}/zones/{z}/clusters/{c}`: the cluster that runs the pool, or that a
    /// new pool would be added to; absent for a new pool in a region where the team has
    /// no cluster (`up` one there first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub cluster: Option<String>,
    /// EXISTING_CAPACITY: the pool with the free accelerators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub pool: Option<String>,
    /// EXISTING_CAPACITY and RESERVATION: accelerators free there now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = Int32, nullable = false)]
    pub free_accelerators: Option<u64>,
    /// RESERVATION: `projects/{p}/zones/{z}/reservations/{r}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reservation: Option<String>,
    /// Accelerators the region's quota metric for this type and provisioning still
    /// allows; `null` when it could not be read or the type has no metric.
    #[schema(format = Int32, required = true)]
    pub quota_headroom: Option<u64>,
    /// What using this placement adds to the hourly bill, in USD: 0 for accelerators
    /// already running or reserved (paid for already), else the price of the
    /// accelerators a new pool would start (0 when the type has no price).
    pub hourly_cost_usd: f64,
    /// NEW_POOL: Compute's capacity advice for the zone (0.0..1.0, higher is better),
    /// when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub obtainability: Option<f64>,
    /// Operations that failed for lack of capacity in this zone in the last 7 days.
    pub recent_stockouts: u32,
    /// The rank: higher is better (EXISTING_CAPACITY 200..300, RESERVATION 100..200,
    /// NEW_POOL 0..100).
    pub score: f64,
    /// Why it ranks where it does, one fact a line.
    pub reasons: Vec<String>,
}

/// `placements:search`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementSearch {
    /// Best first.
    pub placements: Vec<Placement>,
    /// What could not be read (a cluster, a region's quota, capacity advice), and so
    /// was left out or not judged.
    pub warnings: Vec<String>,
}
