//! Node pool records, keyed by (cluster record id, pool id). The pool's full desired
//! shape lives in `spec` so later operations preserve spot, reservation and placement.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::AssertSqlSafe;
use sqlx::PgExecutor;
use uuid::Uuid;

use super::StoreError;
use super::clusters::SETTLED;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct NodePoolRecord {
    pub cluster_id: Uuid,
    pub pool_id: String,
    pub state: String,
    pub spec: Value,
    pub create_time: DateTime<Utc>,
    pub update_time: DateTime<Utc>,
}

const COLUMNS: &str = "cluster_id, pool_id, state, spec, create_time, update_time";

pub async fn insert(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
    pool_id: &str,
    state: &str,
    spec: Value,
) -> Result<NodePoolRecord, StoreError> {
    let sql = format!(
        "INSERT INTO node_pools (cluster_id, pool_id, state, spec) VALUES ($1, $2, $3, $4) \
         RETURNING {COLUMNS}"
    );
    Ok(sqlx::query_as(AssertSqlSafe(sql))
        .bind(cluster_id)
        .bind(pool_id)
        .bind(state)
        .bind(spec)
        .fetch_one(ex)
        .await?)
}

pub async fn get(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
    pool_id: &str,
) -> Result<Option<NodePoolRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM node_pools WHERE cluster_id = $1 AND pool_id = $2");
    Ok(sqlx::query_as(AssertSqlSafe(sql))
        .bind(cluster_id)
        .bind(pool_id)
        .fetch_optional(ex)
        .await?)
}

/// Pools of a cluster in pool-id order, after `after`.
pub async fn list(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<NodePoolRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM node_pools WHERE cluster_id = $1 \
         AND ($2::text IS NULL OR pool_id > $2) ORDER BY pool_id LIMIT $3"
    );
    Ok(sqlx::query_as(AssertSqlSafe(sql))
        .bind(cluster_id)
        .bind(after)
        .bind(limit)
        .fetch_all(ex)
        .await?)
}

/// Pools of many clusters at once (for embedding in cluster lists), ordered by pool id.
pub async fn list_for_clusters(
    ex: impl PgExecutor<'_>,
    cluster_ids: &[Uuid],
) -> Result<Vec<NodePoolRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM node_pools WHERE cluster_id = ANY($1) ORDER BY cluster_id, pool_id"
    );
    Ok(sqlx::query_as(AssertSqlSafe(sql))
        .bind(cluster_ids)
        .fetch_all(ex)
        .await?)
}

/// Set the state of some pools of a cluster (all of them when `pool_ids` is `None`);
/// pools in `except` states keep theirs. The state a pool leaves, when settled, is kept
/// in `settled_state` (see [`super::clusters::set_state`]).
pub async fn set_state(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
    pool_ids: Option<&[String]>,
    state: &str,
    except: &[&str],
) -> Result<u64, StoreError> {
    let except: Vec<String> = except.iter().map(|s| s.to_string()).collect();
    Ok(sqlx::query(
        "UPDATE node_pools SET state = $3, update_time = now(), \
         settled_state = CASE WHEN state = ANY($5) THEN state ELSE settled_state END \
         WHERE cluster_id = $1 \
         AND ($2::text[] IS NULL OR pool_id = ANY($2)) AND state <> ALL($4) AND state <> $3",
    )
    .bind(cluster_id)
    .bind(pool_ids)
    .bind(state)
    .bind(&except)
    .bind(&SETTLED[..])
    .execute(ex)
    .await?
    .rows_affected())
}

/// Every pool of a cluster as (pool id, shown state, last settled state), locked for the
/// rest of the transaction.
pub async fn lock_states(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
) -> Result<Vec<(String, String, Option<String>)>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT pool_id, state, settled_state FROM node_pools WHERE cluster_id = $1 \
         ORDER BY pool_id FOR UPDATE",
    )
    .bind(cluster_id)
    .fetch_all(ex)
    .await?)
}

/// Show `state` for a pool with `settled` as its last settled state.
pub async fn show(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
    pool_id: &str,
    state: &str,
    settled: Option<&str>,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE node_pools SET state = $3, settled_state = $4, update_time = now() \
         WHERE cluster_id = $1 AND pool_id = $2 \
         AND (state, settled_state) IS DISTINCT FROM ($3, $4)",
    )
    .bind(cluster_id)
    .bind(pool_id)
    .bind(state)
    .bind(settled)
    .execute(ex)
    .await?;
    Ok(())
}

/// Forget removed pools.
pub async fn delete(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
    pool_ids: &[String],
) -> Result<u64, StoreError> {
    Ok(
        sqlx::query("DELETE FROM node_pools WHERE cluster_id = $1 AND pool_id = ANY($2)")
            .bind(cluster_id)
            .bind(pool_ids)
            .execute(ex)
            .await?
            .rows_affected(),
    )
}
