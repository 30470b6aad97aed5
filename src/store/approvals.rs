//! Operations waiting for approval (`PENDING_APPROVAL`) and their decisions.
//!
//! Invariants:
//! - A pending operation is claimed by no worker (not QUEUED, no lease) and blocks no
//!   queue (its serial key is its own until approved).
//! - A decision is taken once: approving, rejecting and expiring each move the operation
//!   only from PENDING_APPROVAL (under its row lock), so of two concurrent decisions one
//!   wins and the other finds it decided.
//! - An approved operation joins its cluster's queue at its approval: the key's advisory
//!   lock is taken and `queue_time` stamped after it, as for a new operation
//!   ([`super::operations::insert`]), so it runs after everything queued before it.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{AssertSqlSafe, PgConnection, PgExecutor};
use uuid::Uuid;

use super::operations::{COLUMNS, EVENTS_CHANNEL, OperationRow};
use super::{StoreError, keyed};

/// A pending operation's approval record.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ApprovalRecord {
    pub operation_id: Uuid,
    pub team_id: String,
    pub requested_by: String,
    pub serial_key: String,
    pub request: Value,
    pub policy: Value,
    pub expire_time: DateTime<Utc>,
    pub decision: Option<String>,
    pub decided_by: Option<String>,
    pub comment: Option<String>,
    pub decide_time: Option<DateTime<Utc>>,
}

const APPROVAL_COLUMNS: &str = "operation_id, team_id, requested_by, serial_key, request, policy, \
     expire_time, decision, decided_by, comment, decide_time";

/// What a new pending operation waits with.
pub struct NewApproval<'a> {
    pub operation_id: Uuid,
    pub team_id: &'a str,
    pub requested_by: &'a str,
    pub serial_key: &'a str,
    pub request: &'a Value,
    pub policy: &'a Value,
    pub ttl_seconds: f64,
}

pub async fn insert(tx: &mut PgConnection, a: &NewApproval<'_>) -> Result<(), StoreError> {
    let sql = "INSERT INTO approvals (operation_id, team_id, requested_by, serial_key, request, policy, expire_time) \
         VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))";
    keyed::execute(
        &mut *tx,
        sql,
        (
            a.operation_id,
            a.team_id,
            a.requested_by,
            a.serial_key,
            a.request,
            a.policy,
            a.ttl_seconds,
        ),
    )
    .await?;
    Ok(())
}

/// The approval record of an operation, if it ever waited for one.
pub async fn get(ex: impl PgExecutor<'_>, id: Uuid) -> Result<Option<ApprovalRecord>, StoreError> {
    let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE operation_id = $1");
    keyed::optional(ex, AssertSqlSafe(sql), (id,)).await
}

/// The undecided approvals of `teams` (every team when `None`), oldest first.
pub async fn pending(
    ex: impl PgExecutor<'_>,
    teams: Option<&[String]>,
    limit: i64,
) -> Result<Vec<ApprovalRecord>, StoreError> {
    let sql = format!(
        "SELECT {APPROVAL_COLUMNS} FROM approvals a WHERE decision IS NULL \
           AND ($1::text[] IS NULL OR team_id = ANY($1)) \
           AND EXISTS (SELECT 1 FROM operations o WHERE o.id = a.operation_id AND o.state = 'PENDING_APPROVAL') \
         ORDER BY operation_id LIMIT $2"
    );
    keyed::all(ex, AssertSqlSafe(sql), (teams, limit)).await
}

/// The operation's new content when approved: it is planned again on approval.
pub struct Approved<'a> {
    pub id: Uuid,
    pub by: &'a str,
    pub comment: Option<&'a str>,
    pub serial_key: &'a str,
    /// The target as planned again (a new pool's id is fixed by the approving run).
    pub target: &'a str,
    pub cluster_id: Option<Uuid>,
    pub input: &'a Value,
    pub plan: Option<&'a Value>,
    pub steps: Value,
}

/// Move a pending operation to QUEUED on its cluster's queue with its new plan; `None`
/// when it is no longer pending (decided or cancelled meanwhile).
pub async fn approve(
    tx: &mut PgConnection,
    a: &Approved<'_>,
) -> Result<Option<OperationRow>, StoreError> {
    let sql = format!(
        "WITH l AS (SELECT pg_advisory_xact_lock(hashtextextended($2, 7301))), \
         d AS (UPDATE approvals SET decision = 'APPROVED', decided_by = $7, comment = $8, decide_time = now() \
               WHERE operation_id = $1 AND decision IS NULL RETURNING operation_id), \
         u AS (UPDATE operations o SET state = 'QUEUED', serial_key = $2, cluster_id = $3, input = $4, \
                 plan = $5, steps = $6::json, target = $9, queue_time = clock_timestamp(), update_time = clock_timestamp(), \
                 rendered = NULL, rendered_format = NULL \
               FROM l, d WHERE o.id = d.operation_id AND o.state = 'PENDING_APPROVAL' \
               RETURNING o.*), \
         n AS (SELECT pg_notify('{EVENTS_CHANNEL}', 'new')) \
         SELECT {COLUMNS} FROM u, n"
    );
    keyed::optional(
        &mut *tx,
        AssertSqlSafe(sql),
        (
            a.id,
            a.serial_key,
            a.cluster_id,
            a.input,
            a.plan,
            a.steps.to_string(),
            a.by,
            a.comment,
            a.target,
        ),
    )
    .await
}

/// End a pending operation CANCELLED with `error` (`decision`: REJECTED or EXPIRED);
/// `None` when it is no longer pending.
pub async fn end(
    tx: &mut PgConnection,
    id: Uuid,
    decision: &str,
    by: &str,
    comment: Option<&str>,
    error: &Value,
) -> Result<Option<OperationRow>, StoreError> {
    let sql = format!(
        "WITH d AS (UPDATE approvals SET decision = $2, decided_by = $3, comment = $4, decide_time = now() \
                    WHERE operation_id = $1 AND decision IS NULL RETURNING operation_id), \
         u AS (UPDATE operations o SET state = 'CANCELLED', error = $5, end_time = now(), update_time = now(), \
                 rendered = NULL, rendered_format = NULL \
               FROM d WHERE o.id = d.operation_id AND o.state = 'PENDING_APPROVAL' RETURNING o.*) \
         SELECT {COLUMNS} FROM u"
    );
    keyed::optional(
        &mut *tx,
        AssertSqlSafe(sql),
        (id, decision, by, comment, error),
    )
    .await
}

/// Pending operations whose approval expired, locked for ending (at most `limit`).
pub async fn expired(tx: &mut PgConnection, limit: i64) -> Result<Vec<Uuid>, StoreError> {
    Ok(keyed::scalars(
        "SELECT a.operation_id FROM approvals a JOIN operations o ON o.id = a.operation_id \
         WHERE a.decision IS NULL AND a.expire_time <= now() AND o.state = 'PENDING_APPROVAL' \
         ORDER BY a.expire_time LIMIT $1 FOR UPDATE OF a SKIP LOCKED",
        (limit,),
    )
    .fetch_all(&mut *tx)
    .await?)
}
