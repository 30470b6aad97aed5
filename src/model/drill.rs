//! The failover drill's report (`response` of a FAILOVER_DRILL operation): when each
//! phase of a spot reclaim and its failover was first seen, and what it cost.
//!
//! Invariant: `timeline` lists each phase at most once, in the order the phases were
//! first observed (which is [`DrillPhase`] order: a later phase is only looked for once
//! the earlier ones were seen); durations are `google.protobuf.Duration` JSON (`"75s"`,
//! `"1.250s"`), times RFC 3339, money as elsewhere (a currency and an amount in cents).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use super::money::HourlyCost;

/// How the spot pool is taken away.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DrillMode {
    /// Delete the pool's VMs through its managed instance groups, as a preemption does.
    #[default]
    ReclaimNodes,
    /// Delete the spot pool and create it again from its record.
    DeletePool,
}

/// A phase of the drill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DrillPhase {
    /// The reclaim was sent (the VMs' deletion, or the pool's).
    ReclaimStarted,
    /// No node of the spot pool is left.
    SpotNodesGone,
    /// Every pod that ran on the reclaimed nodes is Pending (or replaced by one that is).
    PodsPending,
    /// The fallback (on-demand) pool has more Ready nodes than before the reclaim.
    FallbackScaledUp,
    /// As many of those pods run again, on nodes that were not reclaimed.
    PodsRunning,
    /// The spot pool has Ready nodes again (at least its minimum, and at least one).
    SpotCapacityBack,
}

/// When a phase was first observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DrillEvent {
    pub phase: DrillPhase,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub time: String,
}

/// The response of a FAILOVER_DRILL operation. When the drill ends at its deadline the
/// operation FAILS (DEADLINE_EXCEEDED, reason DRILL_DEADLINE_EXCEEDED) and this report,
/// as far as it got, is the error's second detail (`details[1]`, `@type` DrillReport) and,
/// as JSON text, the ErrorInfo's `metadata.report`, with `podsNeverRecovered` and
/// `timeline` also as their own metadata entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DrillReport {
    pub mode: DrillMode,
    /// The spot pool reclaimed.
    pub spot_pool: String,
    /// Its on-demand partner.
    pub fallback_pool: String,
    pub timeline: Vec<DrillEvent>,
    /// From RECLAIM_STARTED to PODS_RUNNING (absent until the pods run again).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub time_to_recovery: Option<String>,
    /// Pods running on the spot pool's nodes when they were reclaimed.
    pub pods_affected: u32,
    pub pods_recovered: u32,
    pub pods_never_recovered: u32,
    /// Most Ready fallback nodes seen beyond those there before the reclaim.
    pub fallback_nodes_added: u32,
    /// What those fallback nodes cost per hour (on-demand price of the fallback pool).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub hourly_cost_on_fallback: Option<HourlyCost>,
}

/// `google.protobuf.Duration` JSON of `d`: whole seconds as `"75s"`, else milliseconds
/// (`"1.250s"`).
pub fn duration_json(d: std::time::Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}.{:03}s", d.as_secs(), d.subsec_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_phase_order() {
        use std::time::Duration;
        assert_eq!(duration_json(Duration::from_secs(75)), "75s");
        assert_eq!(duration_json(Duration::from_millis(1250)), "1.250s");
        assert!(DrillPhase::ReclaimStarted < DrillPhase::SpotCapacityBack);
        assert_eq!(
            serde_json::to_value(DrillMode::DeletePool).unwrap(),
            "DELETE_POOL"
        );
    }
}
