//! Team policies and what a team holds, as the policy counts it.
//!
//! Invariants:
//! - A policy check reads the policy and the team's usage in **one statement**
//!   ([`standing`]). With `lock`, the same statement bumps `teams.usage_seq`, taking the
//!   team's row lock for the rest of the caller's transaction; when another bump
//!   committed after the statement's snapshot was taken (it waited on the lock), the
//!   read is stale and is repeated once, now under the lock. So the check and the
//!   enqueue of concurrent requests of one team happen one at a time, and a request
//!   always counts every pool committed before it. A team without a policy has nothing
//!   to count, so its requests take no lock and run side by side; a policy set while
//!   they run judges the requests checked after it commits.
//! - A policy is replaced only at the version it was read at ([`put`]).

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, PgExecutor};

use super::{StoreError, keyed};

/// A team's stored policy.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PolicyRecord {
    pub policy: Value,
    pub version: i64,
    pub update_time: DateTime<Utc>,
}

/// One of the team's pools as stored, with its cluster.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TeamPool {
    pub project: String,
    pub cluster: String,
    pub zone: String,
    pub pool: String,
    pub spec: Value,
}

/// The team's pools of one accelerator (as recorded: `gpu-l4`, `gpu-a100x4:spot`), summed
/// at their maximum sizes.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolGroup {
    pub accelerator: String,
    pub pools: i64,
    /// Nodes with every pool at its maximum (per-zone maxima times zones).
    pub nodes_at_max: i64,
    /// USD an hour at those maxima, from each pool's recorded price per node.
    pub hourly_at_max: f64,
}

/// The policy and the usage it is checked against, read together.
#[derive(Debug, Clone)]
pub struct Standing {
    pub policy: Option<PolicyRecord>,
    /// Live (not DELETED) clusters of the team.
    pub clusters: i64,
    /// Pools (not DELETED) of those clusters, by accelerator.
    pub groups: Vec<PoolGroup>,
    /// The month so far, on the cloud's clock as the usage collector last read it.
    pub month: Month,
}

/// The month so far: measured spend and hours left.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Month {
    pub now: DateTime<Utc>,
    /// USD the team's nodes cost from the start of the month to `now` (measured).
    pub spent_usd: f64,
    /// Hours from `now` to the end of the month.
    pub hours_left: f64,
}

#[derive(sqlx::FromRow)]
struct StandingRow {
    policy: Option<Value>,
    version: Option<i64>,
    update_time: Option<DateTime<Utc>>,
    clusters: i64,
    groups: sqlx::types::Json<Vec<PoolGroup>>,
    seen: Option<i64>,
    bumped: Option<i64>,
    month_now: DateTime<Utc>,
    month_spent: f64,
}

/// The team's live pools (not DELETED, of live clusters) as `n`, their clusters as `c`
/// (the team is `$1`).
const TEAM_POOLS: &str = "FROM clusters c JOIN node_pools n ON n.cluster_id = c.id \
     WHERE c.team_id = $1 AND c.state <> 'DELETED' AND n.state <> 'DELETED'";

/// Nodes of a pool at its maximum: the per-zone maximum times its zones (at least 1).
const NODES_AT_MAX: &str = "(n.spec->>'maxNodes')::bigint \
     * greatest(jsonb_array_length(coalesce(n.spec->'zones', '[]'::jsonb)), 1)";

fn standing_sql() -> String {
    format!(
        "WITH bump AS (UPDATE teams SET usage_seq = usage_seq + 1 \
                       WHERE team_id = $1 AND $2 \
                         AND EXISTS (SELECT 1 FROM team_policies WHERE team_id = $1) \
                       RETURNING usage_seq) \
         SELECT p.policy, p.version, p.update_time, \
           (SELECT count(*) FROM clusters c WHERE c.team_id = $1 AND c.state <> 'DELETED') AS clusters, \
           (SELECT coalesce(json_agg(g), '[]') FROM \
              (SELECT n.spec->>'accelerator' AS accelerator, count(*) AS pools, \
                      sum({NODES_AT_MAX}) AS \"nodesAtMax\", \
                      sum(coalesce((n.spec#>>'{{estimatedHourlyCost,perNode}}')::float8, 0) * {NODES_AT_MAX}) \
                        AS \"hourlyAtMax\" \
               {TEAM_POOLS} GROUP BY 1) g) AS groups, \
           (SELECT usage_seq FROM teams WHERE team_id = $1) AS seen, \
           (SELECT usage_seq FROM bump) AS bumped, \
           mt.t AS month_now, \
           (SELECT coalesce(sum(date_part('epoch', least(u.end_time, mt.t) \
                                   - greatest(u.start_time, date_trunc('month', mt.t, 'UTC'))) \
                                / 3600.0 * u.price_per_hour), 0)::float8 \
              FROM usage_intervals u WHERE u.team_id = $1 \
                AND u.end_time > date_trunc('month', mt.t, 'UTC') AND u.start_time < mt.t) \
             AS month_spent \
         FROM (SELECT coalesce(max(last_sample), now()) AS t FROM usage_clusters) mt \
         LEFT JOIN team_policies p ON p.team_id = $1"
    )
}

/// Every live pool of the team with its cluster (for reports).
pub async fn team_pools(ex: impl PgExecutor<'_>, team: &str) -> Result<Vec<TeamPool>, StoreError> {
    let sql = format!(
        "SELECT c.project_id AS project, c.name AS cluster, c.zone, n.pool_id AS pool, n.spec \
         {TEAM_POOLS} ORDER BY c.name, n.pool_id"
    );
    keyed::all(ex, sqlx::AssertSqlSafe(sql), (team,)).await
}

async fn read(
    ex: impl PgExecutor<'_>,
    team: &str,
    lock: bool,
) -> Result<(Standing, bool), StoreError> {
    let r: StandingRow = keyed::one(ex, sqlx::AssertSqlSafe(standing_sql()), (team, lock)).await?;
    // Without a policy nothing is counted, so nothing is locked: a team without one
    // accepts concurrent requests side by side.
    let unlocked = r.policy.is_none() && r.bumped.is_none();
    let fresh = !lock || unlocked || matches!((r.seen, r.bumped), (Some(s), Some(b)) if b == s + 1);
    let policy = match (r.policy, r.version, r.update_time) {
        (Some(policy), Some(version), Some(update_time)) => Some(PolicyRecord {
            policy,
            version,
            update_time,
        }),
        _ => None,
    };
    Ok((
        Standing {
            policy,
            clusters: r.clusters,
            groups: r.groups.0,
            month: Month {
                now: r.month_now,
                spent_usd: r.month_spent,
                hours_left: (crate::domain::usage::next_month_start(r.month_now) - r.month_now)
                    .num_seconds() as f64
                    / 3600.0,
            },
        },
        fresh,
    ))
}

/// The team's policy and usage now (no lock: previews and reports).
pub async fn standing(ex: impl PgExecutor<'_>, team: &str) -> Result<Standing, StoreError> {
    Ok(read(ex, team, false).await?.0)
}

/// The team's policy and usage, holding the team's lock until `tx` ends.
pub async fn standing_locked(tx: &mut PgConnection, team: &str) -> Result<Standing, StoreError> {
    let (s, fresh) = read(&mut *tx, team, true).await?;
    if fresh {
        return Ok(s);
    }
    Ok(read(&mut *tx, team, true).await?.0)
}

/// The team's stored policy, if it has one.
pub async fn get(ex: impl PgExecutor<'_>, team: &str) -> Result<Option<PolicyRecord>, StoreError> {
    keyed::optional(
        ex,
        "SELECT policy, version, update_time FROM team_policies WHERE team_id = $1",
        (team,),
    )
    .await
}

/// The team's policy locked for a change in `tx`.
pub async fn lock(tx: &mut PgConnection, team: &str) -> Result<Option<PolicyRecord>, StoreError> {
    keyed::optional(
        &mut *tx,
        "SELECT policy, version, update_time FROM team_policies WHERE team_id = $1 FOR UPDATE",
        (team,),
    )
    .await
}

/// Store `policy` as the team's (a new version), returning the stored record.
pub async fn put(
    tx: &mut PgConnection,
    team: &str,
    policy: &Value,
    by: &str,
) -> Result<PolicyRecord, StoreError> {
    let sql = "INSERT INTO team_policies (team_id, policy, updated_by) VALUES ($1, $2, $3) \
         ON CONFLICT (team_id) DO UPDATE SET policy = EXCLUDED.policy, \
           updated_by = EXCLUDED.updated_by, version = team_policies.version + 1, update_time = now() \
         RETURNING policy, version, update_time";
    keyed::one(&mut *tx, sql, (team, policy, by)).await
}
