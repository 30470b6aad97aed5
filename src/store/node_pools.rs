//! Node pool records, keyed by (cluster record id, pool id). The pool's full desired
//! shape lives in `spec` so later operations preserve spot, reservation and placement.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::AssertSqlSafe;
use sqlx::PgExecutor;
use sqlx::types::Json;
use uuid::Uuid;

use super::clusters::settled_strings;
use super::persisted::{Corrupt, PoolSpecRecord, Row, Stored, all, maybe, one};
use super::{StoreError, keyed};
use crate::domain::{PoolState, SettledState};

#[derive(Debug, Clone)]
pub struct NodePoolRecord {
    pub cluster_id: Uuid,
    pub pool_id: String,
    pub state: PoolState,
    pub spec: PoolSpecRecord,
    pub create_time: DateTime<Utc>,
    pub update_time: DateTime<Utc>,
}

/// A row as stored; [`PoolRow::decode`] checks its state and spec.
#[derive(sqlx::FromRow)]
pub(super) struct PoolRow {
    pub(super) cluster_id: Uuid,
    pub(super) pool_id: String,
    pub(super) state: String,
    pub(super) spec: Value,
    pub(super) create_time: DateTime<Utc>,
    pub(super) update_time: DateTime<Utc>,
}

/// How a pool row is named in errors: `{cluster id}/{pool id}`.
fn key(cluster_id: Uuid, pool_id: &str) -> String {
    format!("{cluster_id}/{pool_id}")
}

impl Stored for PoolRow {
    type Record = NodePoolRecord;

    fn decode(self) -> Result<NodePoolRecord, Corrupt> {
        let id = key(self.cluster_id, &self.pool_id);
        let row = Row {
            table: "node_pools",
            id: &id,
        };
        let (state, spec) = row.state_and_spec(&self.state, self.spec)?;
        Ok(NodePoolRecord {
            state,
            spec,
            cluster_id: self.cluster_id,
            pool_id: self.pool_id,
            create_time: self.create_time,
            update_time: self.update_time,
        })
    }
}

const COLUMNS: &str = "cluster_id, pool_id, state, spec, create_time, update_time";

pub async fn insert(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
    pool_id: &str,
    state: PoolState,
    spec: &PoolSpecRecord,
    created_by: &str,
) -> Result<NodePoolRecord, StoreError> {
    let sql = format!(
        "INSERT INTO node_pools (cluster_id, pool_id, state, spec, created_by) \
         VALUES ($1, $2, $3, $4, $5) RETURNING {COLUMNS}"
    );
    one::<PoolRow>(
        keyed::one(
            ex,
            AssertSqlSafe(sql),
            (cluster_id, pool_id, state.as_str(), Json(spec), created_by),
        )
        .await?,
    )
}

pub async fn get(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
    pool_id: &str,
) -> Result<Option<NodePoolRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM node_pools WHERE cluster_id = $1 AND pool_id = $2");
    let row: Option<PoolRow> =
        keyed::optional(ex, AssertSqlSafe(sql), (cluster_id, pool_id)).await?;
    maybe(row)
}

/// Pools of a cluster in pool-id order, after `after`.
pub async fn list(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<NodePoolRecord>, StoreError> {
    let rows: Vec<PoolRow> = OF_CLUSTER.page(ex, cluster_id, after, limit).await?;
    all(rows)
}

const OF_CLUSTER: keyed::Children = keyed::Children {
    table: "node_pools",
    columns: COLUMNS,
    parent: "cluster_id",
    key: "pool_id",
};

/// Pools of many clusters at once (for embedding in cluster lists), ordered by pool id.
pub async fn list_for_clusters(
    ex: impl PgExecutor<'_>,
    cluster_ids: &[Uuid],
) -> Result<Vec<NodePoolRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM node_pools WHERE cluster_id = ANY($1) ORDER BY cluster_id, pool_id"
    );
    all::<PoolRow>(keyed::all(ex, AssertSqlSafe(sql), (cluster_ids,)).await?)
}

/// Set the state of some pools of a cluster (all of them when `pool_ids` is `None`);
/// pools in `except` states keep theirs. The state a pool leaves, when settled, is kept
/// in `settled_state` (see [`super::clusters::set_state`]).
pub async fn set_state(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
    pool_ids: Option<&[String]>,
    state: PoolState,
    except: &[PoolState],
) -> Result<u64, StoreError> {
    let except: Vec<&str> = except.iter().map(|s| s.as_str()).collect();
    keyed::execute(
        ex,
        "UPDATE node_pools SET state = $3, update_time = now(), \
         settled_state = CASE WHEN state = ANY($5) THEN state ELSE settled_state END \
         WHERE cluster_id = $1 \
         AND ($2::text[] IS NULL OR pool_id = ANY($2)) AND state <> ALL($4) AND state <> $3",
        (
            cluster_id,
            pool_ids,
            state.as_str(),
            &except,
            settled_strings(),
        ),
    )
    .await
}

/// Every pool of a cluster as (pool id, shown state, last settled state), locked for the
/// rest of the transaction.
pub async fn lock_states(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
) -> Result<Vec<(String, PoolState, Option<SettledState>)>, StoreError> {
    let rows: Vec<(String, String, Option<String>)> = keyed::all(
        ex,
        "SELECT pool_id, state, settled_state FROM node_pools WHERE cluster_id = $1 \
         ORDER BY pool_id FOR UPDATE",
        (cluster_id,),
    )
    .await?;
    let decode = |(pool, state, settled): (String, String, Option<String>)| {
        let id = key(cluster_id, &pool);
        let row = Row {
            table: "node_pools",
            id: &id,
        };
        let (state, settled) = row.states(&state, settled.as_deref())?;
        Ok::<_, StoreError>((pool, state, settled))
    };
    rows.into_iter().map(decode).collect()
}

/// Show `state` for a pool with `settled` as its last settled state.
pub async fn show(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
    pool_id: &str,
    state: PoolState,
    settled: Option<SettledState>,
) -> Result<(), StoreError> {
    keyed::execute(
        ex,
        "UPDATE node_pools SET state = $3, settled_state = $4, update_time = now() \
         WHERE cluster_id = $1 AND pool_id = $2 \
         AND (state, settled_state) IS DISTINCT FROM ($3, $4)",
        (
            cluster_id,
            pool_id,
            state.as_str(),
            settled.map(SettledState::as_str),
        ),
    )
    .await?;
    Ok(())
}

/// Forget removed pools.
pub async fn delete(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
    pool_ids: &[String],
) -> Result<u64, StoreError> {
    keyed::execute(
        ex,
        "DELETE FROM node_pools WHERE cluster_id = $1 AND pool_id = ANY($2)",
        (cluster_id, pool_ids),
    )
    .await
}

/// Record a pool's new autoscaling bounds (and the price estimate at them, when there is
/// one) in its spec, leaving every other field of the spec as it is. False: no such pool.
pub async fn set_bounds(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
    pool_id: &str,
    min_nodes: i64,
    max_nodes: i64,
    cost: Option<&super::persisted::CostRecord>,
) -> Result<bool, StoreError> {
    let mut patch = serde_json::json!({"minNodes": min_nodes, "maxNodes": max_nodes});
    if let Some(c) = cost {
        patch["estimatedHourlyCost"] = serde_json::to_value(c).unwrap_or(Value::Null);
    }
    Ok(keyed::execute(
        ex,
        "UPDATE node_pools SET spec = spec || $3, update_time = now() \
         WHERE cluster_id = $1 AND pool_id = $2",
        (cluster_id, pool_id, Json(patch)),
    )
    .await?
        > 0)
}
