//! The durable operation queue's SQL.
//!
//! Invariants:
//! - A claim is one short transaction (`FOR UPDATE SKIP LOCKED`) that bumps `generation`;
//!   every later write by the claimant names that generation and changes nothing once a
//!   newer claim exists (the fence). No transaction here spans a cloud call.
//! - Only the oldest unfinished operation of a `serial_key` is claimable, so operations on
//!   one cluster run one at a time in creation order and never wait on other clusters.
//! - Every state change is announced with `pg_notify(EVENTS_CHANNEL, ...)`, in the same
//!   statement or, for the engine's own writes (steps saved, operation finished), by
//!   [`announce`] right after the change committed: listeners never see a notification
//!   before the change is visible. (A committing NOTIFY holds a database-wide lock
//!   through its WAL flush, so notifying inside every step's commit would serialise all
//!   the engine's commits on that flush; [`announce`] commits without waiting for one.)
//! - The end of an operation clears any kept rendering (`rendered`): one is kept only
//!   after the end, from the finished row ([`super::rendered`]).

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{AssertSqlSafe, PgConnection, PgExecutor};
use uuid::Uuid;

use super::keyset::{self, Teams};
use super::{StoreError, keyed};
use crate::domain::OperationState;

/// The LISTEN/NOTIFY channel for operation events.
pub const EVENTS_CHANNEL: &str = "kineticd_operations";

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OperationRow {
    pub id: Uuid,
    pub op_type: String,
    pub target: String,
    pub serial_key: String,
    pub team_id: Option<String>,
    pub cluster_id: Option<Uuid>,
    pub created_by: String,
    pub request_id: Option<String>,
    /// Decoded from its TEXT column; a value that names no state fails the read.
    #[sqlx(try_from = "String")]
    pub state: OperationState,
    pub cancel_requested: bool,
    pub attempt: i32,
    pub input: Value,
    pub plan: Option<Value>,
    pub steps: Value,
    pub response: Option<Value>,
    pub error: Option<Value>,
    pub lease_owner: Option<String>,
    pub lease_expire_time: Option<DateTime<Utc>>,
    pub generation: i64,
    pub deadline: Option<DateTime<Utc>>,
    pub create_time: DateTime<Utc>,
    pub start_time: Option<DateTime<Utc>>,
    pub update_time: DateTime<Utc>,
    pub end_time: Option<DateTime<Utc>>,
}

pub(super) const COLUMNS: &str = "id, op_type, target, serial_key, team_id, cluster_id, created_by, request_id, \
     state, cancel_requested, attempt, input, plan, steps, response, error, lease_owner, \
     lease_expire_time, generation, deadline, create_time, start_time, update_time, end_time";

/// A new operation (QUEUED, or PENDING_APPROVAL) with its steps PENDING (borrowed from
/// the request).
#[derive(Debug, Clone)]
pub struct NewOperation<'a> {
    pub id: Uuid,
    pub op_type: &'a str,
    pub target: &'a str,
    pub serial_key: &'a str,
    pub team_id: &'a str,
    pub cluster_id: Option<Uuid>,
    pub created_by: &'a str,
    pub request_id: Option<&'a str>,
    pub input: &'a Value,
    pub plan: Option<&'a Value>,
    pub steps: Value,
    /// QUEUED, or PENDING_APPROVAL for an operation that waits for a person.
    pub state: OperationState,
}

///
/// Creation order per serial key must equal commit order (the claim only runs the oldest
/// unfinished operation of a key): the insert first takes a transaction-scoped advisory
/// lock on the key and stamps `create_time` with the clock *after* taking it, so a
/// concurrent enqueue on the same key commits strictly before or after, never interleaved.
/// One statement: the row is built from the lock's result, so the lock is taken first.
pub async fn insert(
    tx: &mut PgConnection,
    op: &NewOperation<'_>,
) -> Result<OperationRow, StoreError> {
    let sql = format!(
        "WITH l AS (SELECT pg_advisory_xact_lock(hashtextextended($4, 7301))), \
         ins AS (INSERT INTO operations (id, op_type, target, serial_key, team_id, cluster_id, \
             created_by, request_id, state, input, plan, steps, create_time, queue_time, update_time) \
           SELECT $1, $2, $3, $4, $5, $6, $7, $8, $12, $9, $10, $11::json, clock_timestamp(), clock_timestamp(), clock_timestamp() \
           FROM l \
           RETURNING {COLUMNS}), \
         n AS (SELECT pg_notify('{EVENTS_CHANNEL}', 'new')) \
         SELECT ins.* FROM ins, n"
    );
    keyed::one(
        &mut *tx,
        AssertSqlSafe(sql),
        (
            op.id,
            op.op_type,
            op.target,
            op.serial_key,
            op.team_id,
            op.cluster_id,
            op.created_by,
            op.request_id,
            op.input,
            op.plan,
            op.steps.to_string(),
            op.state.as_str(),
        ),
    )
    .await
}

pub async fn get(ex: impl PgExecutor<'_>, id: Uuid) -> Result<Option<OperationRow>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM operations WHERE id = $1");
    keyed::optional(ex, AssertSqlSafe(sql), (id,)).await
}

/// Filters of `GET /v1/operations`; `None` means any.
#[derive(Debug, Default, Clone)]
pub struct OperationFilter {
    /// Restrict to these teams (`None`: every team, for service admins).
    pub teams: Option<Vec<String>>,
    /// Restrict to the teams this email is a member of, looked up in the same statement
    /// (`None`: no such restriction).
    pub member: Option<String>,
    pub done: Option<bool>,
    pub state: Option<OperationState>,
    pub op_type: Option<String>,
    pub target: Option<String>,
    pub team: Option<String>,
    pub created_by: Option<String>,
}

/// Newest first; `after` is the (create_time, id) of the previous page's last row.
/// Keyset, one index range per visible team (see [`keyset`]): `operations_by_team`,
/// `operations_unfinished_by_team` for `done=false`, `operations_by_target` for a
/// target, `operations_by_time` / `operations_claimable` for admins.
pub async fn list(
    ex: impl PgExecutor<'_>,
    f: &OperationFilter,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> Result<Vec<OperationRow>, StoreError> {
    let mut conds = keyset::set_conditions([
        (f.done == Some(true), "end_time IS NOT NULL"),
        (f.done == Some(false), "end_time IS NULL"),
        (f.state.is_some(), "state = $3"),
        (f.op_type.is_some(), "op_type = $4"),
        (f.target.is_some(), "target = $5"),
        (f.created_by.is_some(), "created_by = $7"),
        (after.is_some(), "(create_time, id) < ($8, $9)"),
    ]);
    let mut teams = Teams {
        member: f.member.as_ref().map(|_| "$11"),
        team: f.team.as_ref().map(|_| "$6"),
        any_of: f.teams.as_ref().map(|_| "$1"),
    };
    // One target's history is a few rows of `operations_by_target`, whoever owns it:
    // read them there and check the teams as a filter.
    if f.target.is_some() {
        conds.extend(teams.condition());
        teams = Teams::default();
    }
    let sql = keyset::page(
        COLUMNS,
        "operations",
        &conds,
        "create_time DESC, id DESC",
        "$10",
        teams,
    );
    keyed::all(
        ex,
        AssertSqlSafe(sql),
        (
            f.teams.as_deref(),
            f.done,
            f.state.map(OperationState::as_str),
            f.op_type.as_deref(),
            f.target.as_deref(),
            f.team.as_deref(),
            f.created_by.as_deref(),
            after.map(|a| a.0),
            after.map(|a| a.1),
            limit,
            f.member.as_deref(),
        ),
    )
    .await
}

/// Claim the oldest claimable operation: QUEUED, or RUNNING/CANCELLING with an expired
/// lease, and the oldest unfinished one of its serial key. Sets owner, lease and a new
/// generation; the first claim also sets `start_time` and the deadline.
pub async fn claim(
    ex: impl PgExecutor<'_>,
    owner: &str,
    lease_seconds: f64,
    deadline_seconds_by_type: &[(String, f64)],
) -> Result<Option<OperationRow>, StoreError> {
    let rows = claim_many(ex, owner, lease_seconds, deadline_seconds_by_type, 1).await?;
    Ok(rows.into_iter().next())
}

/// [`claim`] of up to `limit` operations in one statement (one commit), oldest first.
/// Two operations of one serial key are never claimed together: only the oldest
/// unfinished one of a key passes the claim's condition.
pub async fn claim_many(
    ex: impl PgExecutor<'_>,
    owner: &str,
    lease_seconds: f64,
    deadline_seconds_by_type: &[(String, f64)],
    limit: i64,
) -> Result<Vec<OperationRow>, StoreError> {
    let types: Vec<&str> = deadline_seconds_by_type
        .iter()
        .map(|(t, _)| t.as_str())
        .collect();
    let secs: Vec<f64> = deadline_seconds_by_type.iter().map(|(_, s)| *s).collect();
    let sql = format!(
        "WITH c AS ( \
           SELECT o.id, (o.state <> 'QUEUED' AND o.lease_owner IS NOT NULL) AS rescued \
           FROM operations o \
           WHERE o.end_time IS NULL \
             AND (o.state = 'QUEUED' OR o.lease_expire_time < now()) \
             AND NOT EXISTS (SELECT 1 FROM operations p \
                             WHERE p.serial_key = o.serial_key AND p.end_time IS NULL \
                               AND (p.queue_time, p.id) < (o.queue_time, o.id)) \
           ORDER BY o.queue_time, o.id \
           FOR UPDATE OF o SKIP LOCKED LIMIT $5), \
         d AS (SELECT t, s FROM unnest($3::text[], $4::float8[]) AS u(t, s)) \
         UPDATE operations SET \
           state = CASE WHEN operations.cancel_requested THEN 'CANCELLING' ELSE 'RUNNING' END, \
           lease_owner = $1, \
           lease_expire_time = now() + make_interval(secs => $2), \
           generation = operations.generation + 1, \
           attempt = operations.attempt + 1, \
           start_time = COALESCE(operations.start_time, now()), \
           deadline = COALESCE(operations.deadline, now() + make_interval(secs => \
               COALESCE((SELECT s FROM d WHERE d.t = operations.op_type), 3600))), \
           update_time = now() \
         FROM c WHERE operations.id = c.id \
         RETURNING {}, c.rescued",
        COLUMNS
            .split(", ")
            .map(|c| format!("operations.{}", c.trim()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let claimed: Vec<Claimed> = keyed::all(
        ex,
        AssertSqlSafe(sql),
        (owner, lease_seconds, types, secs, limit.max(1)),
    )
    .await?;
    let mut rows: Vec<OperationRow> = claimed
        .into_iter()
        .map(|c| {
            if c.rescued {
                // Its owner stopped renewing the lease without handing it back.
                metrics::counter!("kineticd_lease_rescues_total").increment(1);
                tracing::warn!(operation.id = %c.row.id, operation.type = %c.row.op_type,
                    "claimed an operation whose lease had expired");
            }
            c.row
        })
        .collect();
    // RETURNING keeps no order: oldest first, as claimed.
    rows.sort_by_key(|a| (a.create_time, a.id));
    Ok(rows)
}

/// A claimed row, and whether it was taken over from an owner whose lease expired
/// (rather than queued, or released at shutdown).
#[derive(sqlx::FromRow)]
struct Claimed {
    #[sqlx(flatten)]
    row: OperationRow,
    rescued: bool,
}

/// Extend the lease; `None` when the fence has moved (another worker owns it now),
/// otherwise whether cancellation was requested.
pub async fn heartbeat(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    generation: i64,
    lease_seconds: f64,
) -> Result<Option<bool>, StoreError> {
    Ok(keyed::scalars(
        "UPDATE operations SET lease_expire_time = now() + make_interval(secs => $3) \
         WHERE id = $1 AND generation = $2 AND end_time IS NULL RETURNING cancel_requested",
        (id, generation, lease_seconds),
    )
    .fetch_optional(ex)
    .await?)
}

/// [`heartbeat`] of many leases in one statement: `(id, generation)` pairs. Returns, for
/// each lease still held (fence unmoved, operation unfinished), its id and whether
/// cancellation was requested; an absent id lost its lease (or its operation ended).
pub async fn heartbeat_many(
    ex: impl PgExecutor<'_>,
    leases: &[(Uuid, i64)],
    lease_seconds: f64,
) -> Result<Vec<(Uuid, bool)>, StoreError> {
    let ids: Vec<Uuid> = leases.iter().map(|l| l.0).collect();
    let generations: Vec<i64> = leases.iter().map(|l| l.1).collect();
    keyed::all(
        ex,
        "UPDATE operations o SET lease_expire_time = now() + make_interval(secs => $3) \
         FROM unnest($1::uuid[], $2::int8[]) AS h(id, generation) \
         WHERE o.id = h.id AND o.generation = h.generation AND o.end_time IS NULL \
         RETURNING o.id, o.cancel_requested",
        (ids, generations, lease_seconds),
    )
    .await
}

/// Persist the steps array (fenced); the caller announces the change once it committed
/// ([`announce`]). False: fence moved.
pub async fn save_steps(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    generation: i64,
    steps: &Value,
) -> Result<bool, StoreError> {
    write_steps(ex, (id, generation), steps, None).await
}

/// The NOOP workflow's step completion: the steps (fenced) and the step's effect row in
/// one statement (so one round trip and all-or-nothing).
pub async fn save_steps_with_noop_effect(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    generation: i64,
    steps: &Value,
    step: &str,
) -> Result<bool, StoreError> {
    write_steps(ex, (id, generation), steps, Some(step)).await
}

/// [`save_steps`] in one statement that also records the NOOP workflow's effect row for
/// `effect` (a step id), when given. False: fence moved (and no effect is recorded).
async fn write_steps(
    ex: impl PgExecutor<'_>,
    (id, generation): (Uuid, i64),
    steps: &Value,
    effect: Option<&str>,
) -> Result<bool, StoreError> {
    let effect_row = match effect {
        Some(_) => {
            ", e AS (INSERT INTO noop_effects (operation_id, step_id, generation) \
                     SELECT u.id, $4, $2 FROM u RETURNING 1)"
        }
        None => "",
    };
    let sql = format!(
        "WITH u AS (UPDATE operations SET steps = $3::json, update_time = now() \
                    WHERE id = $1 AND generation = $2 AND end_time IS NULL RETURNING id){effect_row} \
         SELECT u.id FROM u"
    );
    let mut q = sqlx::query(AssertSqlSafe(sql))
        .bind(id)
        .bind(generation)
        .bind(steps.to_string());
    if let Some(step) = effect {
        q = q.bind(step);
    }
    Ok(q.execute(ex).await?.rows_affected() > 0)
}

/// The end of an operation (fenced): final state, steps, response or error.
pub struct Finish<'a> {
    pub state: OperationState,
    pub steps: &'a Value,
    pub response: Option<&'a Value>,
    pub error: Option<&'a Value>,
}

/// Finish the operation (fenced); the caller announces it once committed ([`announce`]
/// with [`finished_events`]). False: fence moved.
pub async fn finish(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    generation: i64,
    f: Finish<'_>,
) -> Result<bool, StoreError> {
    let n = keyed::execute(
        ex,
        "UPDATE operations SET state = $3, steps = $4::json, response = $5, error = $6, \
           end_time = now(), update_time = now(), lease_owner = NULL, lease_expire_time = NULL, \
           rendered = NULL, rendered_format = NULL \
         WHERE id = $1 AND generation = $2 AND end_time IS NULL",
        (
            id,
            generation,
            f.state.as_str(),
            f.steps.to_string(),
            f.response,
            f.error,
        ),
    )
    .await?;
    Ok(n > 0)
}

/// What announces an operation's end: its new state, and new claimable work (the next
/// operation of its serial key).
pub fn finished_events(id: Uuid, state: OperationState) -> [String; 2] {
    [format!("{id}:{}", state.as_str()), "new".to_owned()]
}

/// Announce committed changes (`payloads` on [`EVENTS_CHANNEL`]) in a transaction of
/// their own that does not wait for its WAL flush: the changes themselves are durable
/// already; a notification lost in a crash is what listeners recover from anyway (they
/// resync on reconnect, and every waiter has a fallback).
pub async fn announce(ex: impl PgExecutor<'_>, payloads: &[String]) -> Result<(), StoreError> {
    keyed::execute(
        ex,
        "SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, p) \
         FROM unnest($2::text[]) AS p",
        (EVENTS_CHANNEL, payloads),
    )
    .await?;
    Ok(())
}

/// Give the lease back (graceful shutdown): another worker may claim it at once.
pub async fn release(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    generation: i64,
) -> Result<bool, StoreError> {
    let sql = format!(
        "WITH u AS (UPDATE operations SET lease_owner = NULL, lease_expire_time = now() - interval '1 second', \
                      update_time = now() \
                    WHERE id = $1 AND generation = $2 AND end_time IS NULL RETURNING id) \
         SELECT pg_notify('{EVENTS_CHANNEL}', 'new') FROM u"
    );
    let n = keyed::execute(ex, AssertSqlSafe(sql), (id, generation)).await?;
    Ok(n > 0)
}

/// What [`request_cancel`] did.
pub struct CancelRequested {
    /// The row after the change.
    pub row: OperationRow,
    /// The operation was QUEUED or PENDING_APPROVAL and ended CANCELLED now (it never
    /// ran).
    pub ended: bool,
    /// It was QUEUED: its records were changed for it and must be settled (a pending
    /// operation changed none).
    pub withdrawn: bool,
}

/// Ask for cancellation. A QUEUED (or PENDING_APPROVAL) operation ends CANCELLED at once, with `cancelled` as
/// its error and `withdrawn(steps)` as its steps; a running one is flagged and its worker
/// told. `None` if absent.
pub async fn request_cancel(
    tx: &mut PgConnection,
    id: Uuid,
    cancelled_error: &Value,
    withdrawn: impl FnOnce(&Value) -> Value,
) -> Result<Option<CancelRequested>, StoreError> {
    let Some(row) = lock(tx, id).await? else {
        return Ok(None);
    };
    if row.end_time.is_some() {
        return Ok(Some(CancelRequested {
            row,
            ended: false,
            withdrawn: false,
        }));
    }
    let pending = row.state == OperationState::PendingApproval;
    if (row.state == OperationState::Queued || pending) && row.lease_owner.is_none() {
        let steps = withdrawn(&row.steps);
        let sql = format!(
            "UPDATE operations SET state = 'CANCELLED', cancel_requested = true, steps = $2::json, error = $3, \
               end_time = now(), update_time = now(), rendered = NULL, rendered_format = NULL \
             WHERE id = $1 RETURNING {COLUMNS}"
        );
        let row: OperationRow = keyed::one(
            &mut *tx,
            AssertSqlSafe(sql),
            (id, steps.to_string(), cancelled_error),
        )
        .await?;
        notify(&mut *tx, &format!("{id}:CANCELLED")).await?;
        notify(&mut *tx, "new").await?;
        return Ok(Some(CancelRequested {
            row,
            ended: true,
            withdrawn: !pending,
        }));
    }
    let sql = format!(
        "UPDATE operations SET cancel_requested = true, \
           state = CASE WHEN state = 'RUNNING' THEN 'CANCELLING' ELSE state END, update_time = now() \
         WHERE id = $1 RETURNING {COLUMNS}"
    );
    let row: OperationRow = keyed::one(&mut *tx, AssertSqlSafe(sql), (id,)).await?;
    notify(&mut *tx, &format!("{id}:cancel")).await?;
    notify(&mut *tx, &format!("{id}:{}", row.state)).await?;
    Ok(Some(CancelRequested {
        row,
        ended: false,
        withdrawn: false,
    }))
}

/// (type, input) of every unfinished operation on a cluster record (those waiting for
/// approval aside: they hold no record).
pub async fn unfinished_on_cluster(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
) -> Result<Vec<Unfinished>, StoreError> {
    keyed::all(
        ex,
        "SELECT id, op_type, input FROM operations WHERE cluster_id = $1 AND end_time IS NULL \
           AND state <> 'PENDING_APPROVAL' ORDER BY queue_time, id",
        (cluster_id,),
    )
    .await
}

/// An unfinished operation on a cluster: its id, type and input as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Unfinished {
    pub id: Uuid,
    pub op_type: String,
    pub input: Value,
}

impl Unfinished {
    /// The input decoded as `T` (a corrupt row when it does not decode).
    pub fn input_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, StoreError> {
        let row = super::Row {
            table: "operations",
            id: &self.id,
        };
        Ok(row.json("input", self.input.clone())?)
    }
}

async fn lock(tx: &mut PgConnection, id: Uuid) -> Result<Option<OperationRow>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM operations WHERE id = $1 FOR UPDATE");
    keyed::optional(&mut *tx, AssertSqlSafe(sql), (id,)).await
}

pub async fn notify(ex: impl PgExecutor<'_>, payload: &str) -> Result<(), StoreError> {
    keyed::execute(ex, "SELECT pg_notify($1, $2)", (EVENTS_CHANNEL, payload)).await?;
    Ok(())
}

/// Idempotency: the operation a caller's key already names (within `ttl_hours`), with
/// the fingerprint of the request that created it.
pub async fn find_idempotent(
    ex: impl PgExecutor<'_>,
    caller: &str,
    key: &str,
    ttl_hours: i64,
) -> Result<Option<(Uuid, String)>, StoreError> {
    let columns = "operation_id, fingerprint";
    super::replies::unexpired(ex, "idempotency_keys", columns, caller, key, ttl_hours).await
}

/// Record a key for a new operation in the enqueue transaction. Returns false when the
/// key is already taken (a concurrent identical request won): the caller rolls back.
/// An expired key is replaced.
pub async fn insert_idempotency_key(
    tx: &mut PgConnection,
    caller: &str,
    key: &str,
    fingerprint: &str,
    operation_id: Uuid,
    ttl_hours: i64,
) -> Result<bool, StoreError> {
    let sql = "INSERT INTO idempotency_keys (caller, key, fingerprint, operation_id) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (caller, key) DO UPDATE \
           SET fingerprint = EXCLUDED.fingerprint, operation_id = EXCLUDED.operation_id, create_time = now() \
           WHERE idempotency_keys.create_time <= now() - make_interval(hours => $5::int)";
    let n = keyed::execute(
        &mut *tx,
        sql,
        (caller, key, fingerprint, operation_id, ttl_hours),
    )
    .await?;
    Ok(n > 0)
}

/// Number of effects recorded per (operation, step).
pub async fn noop_effect_counts(
    ex: impl PgExecutor<'_>,
) -> Result<Vec<(Uuid, String, i64)>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT operation_id, step_id, count(*) FROM noop_effects GROUP BY 1, 2 ORDER BY 1, 2",
    )
    .fetch_all(ex)
    .await?)
}

/// Delete operations finished before `cutoff`, expired idempotency keys and expired
/// answers kept under request ids.
pub async fn purge_finished(
    ex: impl PgExecutor<'_> + Copy,
    cutoff: DateTime<Utc>,
    key_ttl_hours: i64,
) -> Result<u64, StoreError> {
    let n = keyed::execute(
        ex,
        "DELETE FROM operations WHERE end_time IS NOT NULL AND end_time < $1",
        (cutoff,),
    )
    .await?;
    sqlx::query(
        "DELETE FROM noop_effects e WHERE NOT EXISTS (SELECT 1 FROM operations o WHERE o.id = e.operation_id)",
    )
    .execute(ex)
    .await?;
    for table in ["idempotency_keys", "request_replies"] {
        let sql = format!(
            "DELETE FROM {table} WHERE create_time < now() - make_interval(hours => $1::int)"
        );
        keyed::execute(ex, sqlx::AssertSqlSafe(sql), (key_ttl_hours,)).await?;
    }
    Ok(n)
}

/// Unfinished operations by state (for the queue-depth gauge).
/// The queue as the metrics show it (all processes).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueStats {
    /// Unfinished operations: (type, state, count).
    pub unfinished: Vec<(String, String, i64)>,
    /// Seconds since the oldest QUEUED operation was created (0 when none is).
    pub oldest_queued_seconds: f64,
}

pub async fn queue_stats(db: &super::Db) -> Result<QueueStats, StoreError> {
    let unfinished = sqlx::query_as(
        "SELECT op_type, state, count(*) FROM operations WHERE end_time IS NULL \
         GROUP BY op_type, state",
    )
    .fetch_all(db)
    .await?;
    let oldest: Option<f64> = sqlx::query_scalar(
        "SELECT EXTRACT(EPOCH FROM now() - min(create_time))::float8 FROM operations \
         WHERE end_time IS NULL AND state = 'QUEUED'",
    )
    .fetch_one(db)
    .await?;
    Ok(QueueStats {
        unfinished,
        oldest_queued_seconds: oldest.unwrap_or(0.0).max(0.0),
    })
}

pub async fn counts_by_state(
    ex: impl PgExecutor<'_>,
) -> Result<Vec<(OperationState, i64)>, StoreError> {
    #[derive(sqlx::FromRow)]
    struct Count {
        #[sqlx(try_from = "String")]
        state: OperationState,
        n: i64,
    }
    let rows: Vec<Count> = sqlx::query_as(
        "SELECT state, count(*) AS n FROM operations WHERE end_time IS NULL GROUP BY state",
    )
    .fetch_all(ex)
    .await?;
    Ok(rows.into_iter().map(|c| (c.state, c.n)).collect())
}
