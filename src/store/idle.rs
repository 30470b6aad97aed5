//! What the idle rules and TTLs read and mark: RUNNING clusters with an expiry, the teams
//! with idle rules, their pools' and clusters' activity from the usage collector, and
//! each rule's marks (warned, acted, snoozed) per target.
//!
//! Invariants: a rule's marks belong to one episode (the idle-since time, or the expiry);
//! a new episode starts them afresh, so a pool busy again and idle again is warned
//! again; a mark is written in the transaction of the event that announces it.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use super::{StoreError, keyed};

/// A rule's kind (`rule_marks.rule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    PoolIdle,
    ClusterIdle,
    Ttl,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::PoolIdle => "POOL_IDLE",
            Rule::ClusterIdle => "CLUSTER_IDLE",
            Rule::Ttl => "TTL",
        }
    }
}

/// A target's marks.
#[derive(Debug, Clone, Default, PartialEq, sqlx::FromRow)]
pub struct Mark {
    pub episode: Option<DateTime<Utc>>,
    pub warned: Option<bool>,
    pub operation_id: Option<Uuid>,
    pub snoozed_until: Option<DateTime<Utc>>,
}

/// A RUNNING cluster with a TTL.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Expiring {
    pub cluster_id: Uuid,
    pub team_id: String,
    pub project_id: String,
    pub zone: String,
    pub name: String,
    pub expire_time: DateTime<Utc>,
    pub idle: Option<Value>,
    #[sqlx(flatten)]
    pub mark: Mark,
}

/// Every RUNNING cluster with an expiry, with its team's idle rules and its TTL mark.
pub async fn expiring(ex: impl PgExecutor<'_>) -> Result<Vec<Expiring>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT c.id AS cluster_id, c.team_id, c.project_id, c.zone, c.name, c.expire_time, \
                p.policy->'idle' AS idle, m.episode, m.warned, m.operation_id, m.snoozed_until \
         FROM clusters c \
         LEFT JOIN team_policies p ON p.team_id = c.team_id \
         LEFT JOIN rule_marks m ON m.cluster_id = c.id AND m.pool = '' AND m.rule = 'TTL' \
         WHERE c.state = 'RUNNING' AND c.expire_time IS NOT NULL \
         ORDER BY c.expire_time",
    )
    .fetch_all(ex)
    .await?)
}

/// A team's idle rules (`policy.idle`) for every team that has some.
pub async fn idle_policies(ex: impl PgExecutor<'_>) -> Result<Vec<(String, Value)>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT team_id, policy->'idle' FROM team_policies WHERE policy ? 'idle' ORDER BY team_id",
    )
    .fetch_all(ex)
    .await?)
}

/// A sampled pool of a RUNNING cluster, as its idle rule sees it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct IdlePool {
    pub cluster_id: Uuid,
    pub project_id: String,
    pub zone: String,
    pub name: String,
    pub pool: String,
    /// The recorded pool's minNodes (`None`: kineticd keeps no record of the pool).
    pub min_nodes: Option<i64>,
    pub seen_since: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    pub last_busy: Option<DateTime<Utc>>,
    #[sqlx(flatten)]
    pub mark: Mark,
}

/// Team `team`'s sampled pools that kineticd records as RUNNING, in RUNNING clusters.
pub async fn idle_pools(ex: impl PgExecutor<'_>, team: &str) -> Result<Vec<IdlePool>, StoreError> {
    keyed::all(
        ex,
        "SELECT c.id AS cluster_id, c.project_id, c.zone, c.name, u.pool, \
                (n.spec->>'minNodes')::bigint AS min_nodes, \
                u.seen_since, u.last_seen, u.last_busy, \
                m.episode, m.warned, m.operation_id, m.snoozed_until \
         FROM usage_pools u \
         JOIN clusters c ON c.id = u.cluster_id AND c.state = 'RUNNING' \
         JOIN node_pools n ON n.cluster_id = u.cluster_id AND n.pool_id = u.pool \
                          AND n.state = 'RUNNING' \
         LEFT JOIN rule_marks m ON m.cluster_id = u.cluster_id AND m.pool = u.pool \
                               AND m.rule = 'POOL_IDLE' \
         WHERE u.team_id = $1 ORDER BY c.name, u.pool",
        (team,),
    )
    .await
}

/// A sampled RUNNING cluster, as the cluster idle rule sees it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct IdleCluster {
    pub cluster_id: Uuid,
    pub project_id: String,
    pub zone: String,
    pub name: String,
    pub seen_since: DateTime<Utc>,
    pub last_sample: DateTime<Utc>,
    pub last_busy: Option<DateTime<Utc>>,
    #[sqlx(flatten)]
    pub mark: Mark,
}

/// Team `team`'s sampled RUNNING clusters.
pub async fn idle_clusters(
    ex: impl PgExecutor<'_>,
    team: &str,
) -> Result<Vec<IdleCluster>, StoreError> {
    keyed::all(
        ex,
        "SELECT c.id AS cluster_id, c.project_id, c.zone, c.name, \
                u.seen_since, u.last_sample, u.last_busy, \
                m.episode, m.warned, m.operation_id, m.snoozed_until \
         FROM usage_clusters u \
         JOIN clusters c ON c.id = u.cluster_id AND c.state = 'RUNNING' \
         LEFT JOIN rule_marks m ON m.cluster_id = u.cluster_id AND m.pool = '' \
                               AND m.rule = 'CLUSTER_IDLE' \
         WHERE u.team_id = $1 ORDER BY c.name",
        (team,),
    )
    .await
}

/// Record the marks of `rule` on (`cluster`, `pool`) for `episode` (pool `""`: the
/// cluster itself); a snooze stays.
pub async fn mark(
    tx: &mut PgConnection,
    cluster: Uuid,
    pool: &str,
    rule: Rule,
    episode: DateTime<Utc>,
    warned: bool,
    operation: Option<Uuid>,
) -> Result<(), StoreError> {
    keyed::execute(
        &mut *tx,
        "INSERT INTO rule_marks (cluster_id, pool, rule, episode, warned, operation_id) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (cluster_id, pool, rule) DO UPDATE SET \
             episode = EXCLUDED.episode, warned = EXCLUDED.warned, \
             operation_id = EXCLUDED.operation_id",
        (cluster, pool, rule.as_str(), episode, warned, operation),
    )
    .await?;
    Ok(())
}

/// Postpone `rule` on (`cluster`, `pool`) to `until` (never earlier than a snooze
/// already in force); returns the snooze in force after.
pub async fn snooze(
    tx: &mut PgConnection,
    cluster: Uuid,
    pool: &str,
    rule: Rule,
    until: DateTime<Utc>,
) -> Result<DateTime<Utc>, StoreError> {
    Ok(keyed::scalars(
        "INSERT INTO rule_marks (cluster_id, pool, rule, snoozed_until) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (cluster_id, pool, rule) DO UPDATE SET \
             snoozed_until = greatest(rule_marks.snoozed_until, EXCLUDED.snoozed_until) \
         RETURNING snoozed_until",
        (cluster, pool, rule.as_str(), until),
    )
    .fetch_one(&mut *tx)
    .await?)
}

/// Postpone cluster `cluster`'s expiry to `until` when it has one that is earlier;
/// returns the expiry after.
pub async fn extend_expiry(
    tx: &mut PgConnection,
    cluster: Uuid,
    until: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    Ok(keyed::scalars(
        "UPDATE clusters SET expire_time = greatest(expire_time, $2), \
             update_time = CASE WHEN expire_time < $2 THEN now() ELSE update_time END, \
             version = CASE WHEN expire_time < $2 THEN version + 1 ELSE version END \
         WHERE id = $1 AND expire_time IS NOT NULL RETURNING expire_time",
        (cluster, until),
    )
    .fetch_optional(&mut *tx)
    .await?)
}
