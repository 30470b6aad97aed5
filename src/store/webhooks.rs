//! Webhooks and their deliveries' SQL (`webhooks`, `webhook_deliveries`,
//! `webhook_attempts`, migration 0012).
//!
//! Invariants:
//! - Deliveries are written only by the trigger on `events` (in the event's
//!   transaction); here they are claimed, tried and listed.
//! - A claim is one short statement (`FOR UPDATE SKIP LOCKED`) that leases the rows to
//!   one owner until the lease ends; an attempt is recorded only by the owner of a
//!   live lease on a still PENDING delivery ([`record_attempt`]), so two replicas never
//!   send one delivery at once and a late worker never overwrites a later outcome.
//! - A team's webhook count is checked under a lock on the team's row, so concurrent
//!   creates never pass the cap together.
//! - The secret leaves this module only in [`Claimed`] (to sign) and the insert's row.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{AssertSqlSafe, PgConnection, PgExecutor};
use uuid::Uuid;

use super::{StoreError, keyed};

/// A stored webhook.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WebhookRow {
    pub team_id: String,
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    pub format: String,
    pub secret: String,
    pub created_by: String,
    pub create_time: DateTime<Utc>,
}

const COLUMNS: &str = "team_id, id, url, events, format, secret, created_by, create_time";

/// A webhook to insert.
#[derive(Debug, Clone)]
pub struct NewWebhook<'a> {
    pub team_id: &'a str,
    pub id: &'a str,
    pub url: &'a str,
    pub events: &'a [String],
    pub format: &'a str,
    pub secret: &'a str,
    pub created_by: &'a str,
}

/// How many webhooks the team has, with the team's row locked until the transaction
/// ends (`None`: no such team).
pub async fn lock_count(tx: &mut PgConnection, team: &str) -> Result<Option<i64>, StoreError> {
    let lock = "SELECT team_id FROM teams WHERE team_id = $1 FOR UPDATE";
    let locked: Option<String> = keyed::scalars(lock, &[team])
        .fetch_optional(&mut *tx)
        .await?;
    if locked.is_none() {
        return Ok(None);
    }
    let count = "SELECT count(*) FROM webhooks WHERE team_id = $1";
    Ok(Some(
        keyed::scalars(count, &[team]).fetch_one(&mut *tx).await?,
    ))
}

pub async fn insert(ex: impl PgExecutor<'_>, w: &NewWebhook<'_>) -> Result<WebhookRow, StoreError> {
    let sql = format!(
        "INSERT INTO webhooks (team_id, id, url, events, format, secret, created_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {COLUMNS}"
    );
    let params = (
        w.team_id,
        w.id,
        w.url,
        w.events,
        w.format,
        w.secret,
        w.created_by,
    );
    keyed::one(ex, AssertSqlSafe(sql), params).await
}

/// The team's webhooks, oldest first.
pub async fn list(ex: impl PgExecutor<'_>, team: &str) -> Result<Vec<WebhookRow>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM webhooks WHERE team_id = $1 ORDER BY create_time, id");
    keyed::all(ex, AssertSqlSafe(sql), &[team]).await
}

pub async fn get(
    ex: impl PgExecutor<'_>,
    team: &str,
    id: &str,
) -> Result<Option<WebhookRow>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM webhooks WHERE team_id = $1 AND id = $2");
    keyed::optional(ex, AssertSqlSafe(sql), &[team, id]).await
}

/// Delete a webhook and (by cascade) its deliveries, pending ones included; the
/// deleted row, if there was one.
pub async fn delete(
    ex: impl PgExecutor<'_>,
    team: &str,
    id: &str,
) -> Result<Option<WebhookRow>, StoreError> {
    let sql = format!("DELETE FROM webhooks WHERE team_id = $1 AND id = $2 RETURNING {COLUMNS}");
    keyed::optional(ex, AssertSqlSafe(sql), &[team, id]).await
}

/// A delivery as its log shows it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryRow {
    pub id: Uuid,
    pub event: String,
    pub state: String,
    pub attempts: i32,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub create_time: DateTime<Utc>,
    pub next_attempt_time: DateTime<Utc>,
    pub deliver_time: Option<DateTime<Utc>>,
}

/// A webhook's deliveries, newest first; `after` is the previous page's last
/// `(create_time, id)`.
pub async fn list_deliveries(
    ex: impl PgExecutor<'_>,
    team: &str,
    webhook: &str,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> Result<Vec<DeliveryRow>, StoreError> {
    let bound = if after.is_some() {
        "AND (create_time, id) < ($3, $4)"
    } else {
        ""
    };
    let sql = format!(
        "SELECT id, event, state, attempts, last_status, last_error, create_time, \
                next_attempt_time, deliver_time \
         FROM webhook_deliveries WHERE team_id = $1 AND webhook_id = $2 {bound} \
         ORDER BY create_time DESC, id DESC LIMIT $5"
    );
    let params = (team, webhook, after.map(|a| a.0), after.map(|a| a.1), limit);
    keyed::all(ex, AssertSqlSafe(sql), params).await
}

/// A delivery claimed for one try, with what sending it needs.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Claimed {
    pub id: Uuid,
    pub team_id: String,
    pub webhook_id: String,
    pub event: String,
    pub payload: Value,
    pub attempts: i32,
    pub create_time: DateTime<Utc>,
    pub url: String,
    pub format: String,
    pub secret: String,
}

/// Lease up to `limit` due deliveries to `owner` for `lease_seconds`.
pub async fn claim(
    ex: impl PgExecutor<'_>,
    owner: &str,
    lease_seconds: f64,
    limit: i64,
) -> Result<Vec<Claimed>, StoreError> {
    let sql = "WITH due AS ( \
             SELECT id FROM webhook_deliveries \
             WHERE state = 'PENDING' AND next_attempt_time <= now() \
               AND (lease_expire IS NULL OR lease_expire < now()) \
             ORDER BY next_attempt_time LIMIT $3 FOR UPDATE SKIP LOCKED) \
         UPDATE webhook_deliveries d \
            SET lease_owner = $1, lease_expire = now() + make_interval(secs => $2) \
           FROM due, webhooks w \
          WHERE d.id = due.id AND w.team_id = d.team_id AND w.id = d.webhook_id \
         RETURNING d.id, d.team_id, d.webhook_id, d.event, d.payload, d.attempts, \
                   d.create_time, w.url, w.format, w.secret";
    keyed::all(ex, sql, (owner, lease_seconds, limit)).await
}

/// One try of a delivery and what follows it.
#[derive(Debug, Clone)]
pub struct Attempt<'a> {
    pub time: DateTime<Utc>,
    pub duration_ms: i32,
    pub status: Option<i32>,
    pub error: Option<&'a str>,
    /// The state after it: DELIVERED, FAILED, or PENDING again at `next`.
    pub state: &'a str,
    pub next: DateTime<Utc>,
}

/// Record a try by `owner` (whose lease must still hold the PENDING delivery); whether
/// it was recorded.
pub async fn record_attempt(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    owner: &str,
    a: &Attempt<'_>,
) -> Result<bool, StoreError> {
    let sql = "WITH d AS ( \
             UPDATE webhook_deliveries SET attempts = attempts + 1, state = $3, \
                    last_status = $4, last_error = $5, next_attempt_time = $6, \
                    deliver_time = CASE WHEN $3 = 'DELIVERED' THEN $7 END, \
                    lease_owner = NULL, lease_expire = NULL \
              WHERE id = $1 AND lease_owner = $2 AND state = 'PENDING' \
             RETURNING id, attempts) \
         INSERT INTO webhook_attempts (delivery_id, attempt, time, duration_ms, status, error) \
         SELECT id, attempts, $7, $8, $4, $5 FROM d";
    let params = (
        id,
        owner,
        a.state,
        a.status,
        a.error,
        a.next,
        a.time,
        a.duration_ms,
    );
    let n = keyed::execute(ex, sql, params).await?;
    Ok(n == 1)
}

/// A delivery's tries, first first (time, duration, status or error).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AttemptRow {
    pub attempt: i32,
    pub time: DateTime<Utc>,
    pub duration_ms: i32,
    pub status: Option<i32>,
    pub error: Option<String>,
}

pub async fn attempts(ex: impl PgExecutor<'_>, id: Uuid) -> Result<Vec<AttemptRow>, StoreError> {
    let sql = "SELECT attempt, time, duration_ms, status, error FROM webhook_attempts \
               WHERE delivery_id = $1 ORDER BY attempt";
    keyed::all(ex, sql, (id,)).await
}

/// Delete DELIVERED and FAILED deliveries (with their tries) written before `cutoff`
/// (retention); PENDING ones stay. Returns how many.
pub async fn purge_settled_before(
    ex: impl PgExecutor<'_>,
    cutoff: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let sql = "DELETE FROM webhook_deliveries WHERE state <> 'PENDING' AND create_time < $1";
    keyed::execute(ex, sql, (cutoff,)).await
}
