//! Authorised reads in one round trip: the record a `GET` returns together with the
//! caller's role in the team(s) that decide whether they may see it, in one statement.
//!
//! Invariant: these statements only gather facts (the record, the roles as stored); the
//! service decides visibility from them exactly as it does from the separate lookups,
//! and every row is read in one snapshot, so the record and the roles agree.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{AssertSqlSafe, PgExecutor};
use uuid::Uuid;

use super::clusters::{self, ClusterFilter, ClusterKey, ClusterRecord, ClusterRow};
use super::node_pools::{NodePoolRecord, PoolRow};
use super::operations::{self, OperationRow};
use super::persisted::Stored;
use super::{StoreError, keyed};

/// An operation and the reader's role in its team (`None`: no team, or not a member).
#[derive(sqlx::FromRow)]
struct OperationRead {
    #[sqlx(flatten)]
    op: OperationRow,
    reader_role: Option<String>,
}

/// The operation `id` and `email`'s stored role in its team, in one statement.
pub async fn operation(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    email: &str,
) -> Result<Option<(OperationRow, Option<String>)>, StoreError> {
    let sql = format!(
        "SELECT o.*, (SELECT m.role FROM team_members m \
                      WHERE m.team_id = o.team_id AND m.email = $2) AS reader_role \
         FROM (SELECT {} FROM operations WHERE id = $1) o",
        operations::COLUMNS
    );
    let row: Option<OperationRead> = keyed::optional(ex, AssertSqlSafe(sql), (id, email)).await?;
    Ok(row.map(|r| (r.op, r.reader_role)))
}

/// A node pool's columns LEFT JOINed to its cluster's row (all NULL for a cluster
/// without pools), selected as [`POOL_COLUMNS`].
#[derive(sqlx::FromRow)]
struct JoinedPool {
    pool_id: Option<String>,
    pool_state: Option<String>,
    pool_spec: Option<Value>,
    pool_create_time: Option<DateTime<Utc>>,
    pool_update_time: Option<DateTime<Utc>>,
}

/// The select list of a [`JoinedPool`] (`np` is `node_pools`).
const POOL_COLUMNS: &str = "np.pool_id, np.state AS pool_state, np.spec AS pool_spec, \
     np.create_time AS pool_create_time, np.update_time AS pool_update_time";

impl JoinedPool {
    /// The pool of cluster `cluster_id`, if the row has one.
    fn decode(self, cluster_id: Uuid) -> Result<Option<NodePoolRecord>, StoreError> {
        let (Some(pool_id), Some(state), Some(spec), Some(create_time), Some(update_time)) = (
            self.pool_id,
            self.pool_state,
            self.pool_spec,
            self.pool_create_time,
            self.pool_update_time,
        ) else {
            return Ok(None);
        };
        let row = PoolRow {
            cluster_id,
            pool_id,
            state,
            spec,
            create_time,
            update_time,
        };
        Ok(Some(row.decode()?))
    }
}

/// A cluster record read through its project, with the reader's roles and its pools.
#[derive(Debug, Clone)]
pub struct ClusterRead {
    /// The team that owns the project now.
    pub project_team: String,
    /// The reader's stored role in `project_team`.
    pub project_role: Option<String>,
    /// The reader's stored role in the record's team (which may differ if the project
    /// changed hands since the record was made).
    pub record_role: Option<String>,
    pub cluster: ClusterRecord,
    /// Its node pools in pool-id order.
    pub pools: Vec<NodePoolRecord>,
}

#[derive(sqlx::FromRow)]
struct ClusterJoinRow {
    #[sqlx(flatten)]
    cluster: ClusterRow,
    project_team: String,
    project_role: Option<String>,
    record_role: Option<String>,
    #[sqlx(flatten)]
    pool: JoinedPool,
}

/// The record [`clusters::get`] picks for (project, zone, name), if the project is owned
/// by a team, with `email`'s roles and the record's pools: one statement, one row per
/// pool (one row for a cluster without pools). `None` when the project has no team or
/// no record has the name (the caller finds out which the slow way).
pub async fn cluster(
    ex: impl PgExecutor<'_>,
    [project, zone, name]: [&str; 3],
    email: &str,
) -> Result<Option<ClusterRead>, StoreError> {
    let sql = format!(
        "SELECT c.*, tp.team_id AS project_team, \
           (SELECT m.role FROM team_members m WHERE m.team_id = tp.team_id AND m.email = $4) AS project_role, \
           (SELECT m.role FROM team_members m WHERE m.team_id = c.team_id AND m.email = $4) AS record_role, \
           {POOL_COLUMNS} \
         FROM team_projects tp \
         CROSS JOIN LATERAL (SELECT {} FROM clusters \
             WHERE project_id = $1 AND zone = $2 AND name = $3 \
             ORDER BY (state <> 'DELETED') DESC, create_time DESC LIMIT 1) c \
         LEFT JOIN node_pools np ON np.cluster_id = c.id \
         WHERE tp.project_id = $1 \
         ORDER BY np.pool_id",
        clusters::COLUMNS
    );
    let rows: Vec<ClusterJoinRow> =
        keyed::all(ex, AssertSqlSafe(sql), (project, zone, name, email)).await?;
    let mut pools = Vec::with_capacity(rows.len());
    let mut head = None;
    for r in rows {
        pools.extend(r.pool.decode(r.cluster.id)?);
        if head.is_none() {
            head = Some((r.cluster, r.project_team, r.project_role, r.record_role));
        }
    }
    let Some((cluster, project_team, project_role, record_role)) = head else {
        return Ok(None);
    };
    Ok(Some(ClusterRead {
        project_team,
        project_role,
        record_role,
        cluster: cluster.decode()?,
        pools,
    }))
}

#[derive(sqlx::FromRow)]
struct PageJoinRow {
    #[sqlx(flatten)]
    cluster: ClusterRow,
    #[sqlx(flatten)]
    pool: JoinedPool,
}

/// A page of [`clusters::list`] with each record's node pools (pool-id order), in one
/// statement: the page in a CTE, its pools joined to it, one row per pool.
pub async fn cluster_page(
    ex: impl PgExecutor<'_>,
    f: &ClusterFilter,
    after: Option<&ClusterKey>,
    limit: i64,
) -> Result<Vec<(ClusterRecord, Vec<NodePoolRecord>)>, StoreError> {
    let rows: Vec<PageJoinRow> = clusters::list_rows(ex, f, after, limit, |page| {
        format!(
            "WITH page AS ({page}) \
             SELECT page.*, {POOL_COLUMNS} \
             FROM page LEFT JOIN node_pools np ON np.cluster_id = page.id \
             ORDER BY page.project_id, page.zone, page.name, page.id, np.pool_id"
        )
    })
    .await?;
    let mut out: Vec<(ClusterRecord, Vec<NodePoolRecord>)> = Vec::new();
    for r in rows {
        let id = r.cluster.id;
        if out.last().is_none_or(|(c, _)| c.id != id) {
            out.push((r.cluster.decode()?, Vec::new()));
        }
        if let (Some(pool), Some((_, pools))) = (r.pool.decode(id)?, out.last_mut()) {
            pools.push(pool);
        }
    }
    Ok(out)
}
