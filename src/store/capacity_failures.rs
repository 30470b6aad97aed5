//! kineticd's own record of where the cloud ran out of capacity: operations that ended
//! FAILED because a zone had no resources (reason ZONE_RESOURCE_EXHAUSTED, or the
//! cloud's GCE_STOCKOUT / ZONE_RESOURCE_POOL_EXHAUSTED), counted per zone. Placement
//! advice reads it to rank zones that failed recently lower.
//!
//! Invariant: read-only, over finished operations only (`operations_finished`, by
//! `end_time`); a failure's zone is the one its error names (`metadata.zone`, else the
//! `zones/{zone}` in the cloud's message), else its cluster's zone; failures of every
//! team count, since capacity is a fact of the zone, not of the team (only counts per
//! zone leave this module).

use std::collections::BTreeMap;

use sqlx::PgExecutor;

use super::{StoreError, keyed};

/// Capacity failures per zone among `zones` in the last `days` days (zones without any
/// are absent).
pub async fn per_zone(
    ex: impl PgExecutor<'_>,
    zones: &[String],
    days: i32,
) -> Result<BTreeMap<String, i64>, StoreError> {
    if zones.is_empty() {
        return Ok(BTreeMap::new());
    }
    let rows: Vec<(String, i64)> = keyed::all(
        ex,
        "SELECT f.zone, count(*)::bigint FROM ( \
           SELECT COALESCE(NULLIF(o.error->'details'->0->'metadata'->>'zone', ''), \
                           substring(o.error->'details'->0->'metadata'->>'cloudMessage' \
                                     FROM 'zones/([a-z0-9-]+)'), \
                           c.zone) AS zone \
             FROM operations o LEFT JOIN clusters c ON c.id = o.cluster_id \
            WHERE o.end_time IS NOT NULL \
              AND o.end_time >= now() - make_interval(days => $2) \
              AND o.state = 'FAILED' \
              AND (o.error->'details'->0->>'reason' = 'ZONE_RESOURCE_EXHAUSTED' \
                   OR o.error->'details'->0->'metadata'->>'cloudReason' \
                      IN ('GCE_STOCKOUT', 'ZONE_RESOURCE_POOL_EXHAUSTED')) \
         ) f WHERE f.zone = ANY($1) GROUP BY f.zone",
        (zones, days),
    )
    .await?;
    Ok(rows.into_iter().collect())
}
