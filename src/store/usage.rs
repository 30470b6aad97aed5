//! Usage records: node intervals, the gaps where a cluster could not be read, each
//! pool's last busy time, and the sums a usage query asks for.
//!
//! Invariants:
//! - A sample is applied in one transaction under its cluster's `usage_clusters` row
//!   lock, and only when it is later than the cluster's last sample (the fence): two
//!   collectors, a retried sample or a restarted process never count a second twice.
//! - An interval is extended only by a sample contiguous with the one before (the
//!   cluster's previous good sample was the collector's previous round); otherwise the
//!   open intervals close where they were last seen and the time between is a gap
//!   (unknown, not zero).
//! - The collector's work per sample touches the cluster's open intervals only (a
//!   partial unique index), so its cost grows with nodes, not with history.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, PgExecutor, PgPool};
use uuid::Uuid;

use super::{StoreError, keyed};
use crate::domain::usage::{GroupBy, NodeSample, UsageQuery};

/// A RUNNING cluster the collector samples.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Sampled {
    pub id: Uuid,
    pub team_id: String,
    pub project_id: String,
    pub zone: String,
    pub name: String,
    pub created_by: String,
}

/// Every RUNNING cluster.
pub async fn running_clusters(ex: impl PgExecutor<'_>) -> Result<Vec<Sampled>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT id, team_id, project_id, zone, name, created_by FROM clusters \
         WHERE state = 'RUNNING' ORDER BY id",
    )
    .fetch_all(ex)
    .await?)
}

/// A live pool record's creator (pool id, creator), for booking nodes to members.
pub async fn pool_creators(
    ex: impl PgExecutor<'_>,
    cluster_id: Uuid,
) -> Result<Vec<(String, Option<String>)>, StoreError> {
    keyed::all(
        ex,
        "SELECT pool_id, created_by FROM node_pools WHERE cluster_id = $1 AND state <> 'DELETED'",
        (cluster_id,),
    )
    .await
}

/// What applying a sample did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Intervals extended (or opened) to the sample's time.
    Recorded { contiguous: bool },
    /// A sample at or after this one was already applied: nothing changed.
    Stale,
}

/// Apply one good sample of `cluster` taken at `now` in collector round `round`.
pub async fn record_sample(
    db: &PgPool,
    cluster: &Sampled,
    now: DateTime<Utc>,
    round: i64,
    nodes: &[NodeSample],
) -> Result<Applied, StoreError> {
    let mut tx = db.begin().await?;
    let prev: Option<(DateTime<Utc>, i64)> = keyed::optional(
        &mut *tx,
        "SELECT last_sample, last_round FROM usage_clusters WHERE cluster_id = $1 FOR UPDATE",
        (cluster.id,),
    )
    .await?;
    if prev.is_some_and(|(last, _)| last >= now) {
        return Ok(Applied::Stale);
    }
    let open_gap: Option<i64> = keyed::scalars(
        "SELECT id FROM usage_gaps WHERE cluster_id = $1 AND end_time IS NULL",
        (cluster.id,),
    )
    .fetch_optional(&mut *tx)
    .await?;
    let contiguous =
        open_gap.is_none() && prev.is_some_and(|(_, last_round)| last_round == round - 1);
    if let Some(id) = open_gap {
        keyed::execute(
            &mut *tx,
            "UPDATE usage_gaps SET end_time = $2 WHERE id = $1",
            (id, now),
        )
        .await?;
    } else if let (Some((last, _)), false) = (prev, contiguous) {
        insert_gap(
            &mut *tx,
            cluster,
            last,
            Some(now),
            "not sampled (kineticd not running)",
        )
        .await?;
    }
    let cols = Columns::of(nodes);
    if contiguous {
        // A node gone (or recreated under its name: another uid) ends where it was last
        // seen.
        let gone: Vec<(String, String, String, i32)> = keyed::all(
            &mut *tx,
            "UPDATE usage_intervals u SET open = false \
             WHERE u.cluster_id = $1 AND u.open AND NOT EXISTS ( \
                 SELECT 1 FROM unnest($2::text[], $3::text[]) AS s(node, uid) \
                 WHERE s.node = u.node AND s.uid = u.node_uid) \
             RETURNING pool, node, provisioning, busy",
            (cluster.id, &cols.node, &cols.uid),
        )
        .await?;
        spot_reclaims(&mut tx, cluster, &gone).await?;
        // A node still there whose facts changed (a pod started or ended, a new price):
        // its interval runs to this sample and ends; the next opens below.
        let q = sqlx::query(
            "UPDATE usage_intervals u SET end_time = $2, open = false \
             FROM unnest($3::text[], $4::text[], $5::text[], $6::int[], $7::text[], \
                         $8::text[], $9::float8[], $10::int[]) \
                 AS s(node, pool, accelerator, accelerators, provisioning, member, price, busy) \
             WHERE u.cluster_id = $1 AND u.open AND s.node = u.node \
               AND (s.pool <> u.pool OR s.accelerator IS DISTINCT FROM u.accelerator \
                    OR s.accelerators <> u.accelerators OR s.provisioning <> u.provisioning \
                    OR s.member IS DISTINCT FROM u.member OR s.price <> u.price_per_hour \
                    OR s.busy <> u.busy)",
        )
        .bind(cluster.id)
        .bind(now);
        cols.bind(q).execute(&mut *tx).await?;
        // The rest ran unchanged until now.
        keyed::execute(
            &mut *tx,
            "UPDATE usage_intervals SET end_time = $2 WHERE cluster_id = $1 AND open",
            (cluster.id, now),
        )
        .await?;
    } else {
        keyed::execute(
            &mut *tx,
            "UPDATE usage_intervals SET open = false WHERE cluster_id = $1 AND open",
            (cluster.id,),
        )
        .await?;
    }
    // Open an interval for every node without one.
    let q = sqlx::query(
        "INSERT INTO usage_intervals (team_id, cluster_id, cluster_name, pool, node, accelerator, \
             accelerators, provisioning, member, price_per_hour, start_time, end_time, busy, \
             node_uid) \
         SELECT $1, $2, $3, s.pool, s.node, s.accelerator, s.accelerators, s.provisioning, \
                s.member, s.price, $4, $4, s.busy, s.uid \
         FROM unnest($5::text[], $6::text[], $7::text[], $8::int[], $9::text[], $10::text[], \
                     $11::float8[], $12::int[], $13::text[]) \
             AS s(node, pool, accelerator, accelerators, provisioning, member, price, busy, uid) \
         WHERE NOT EXISTS (SELECT 1 FROM usage_intervals u \
                           WHERE u.cluster_id = $2 AND u.open AND u.node = s.node)",
    )
    .bind(&cluster.team_id)
    .bind(cluster.id)
    .bind(&cluster.name)
    .bind(now);
    cols.bind(q).bind(&cols.uid).execute(&mut *tx).await?;
    record_pools(&mut tx, cluster, now, contiguous, nodes).await?;
    let busy = nodes.iter().any(|n| n.busy > 0);
    keyed::execute(
        &mut *tx,
        "INSERT INTO usage_clusters AS u \
             (cluster_id, team_id, last_sample, last_round, seen_since, last_busy) \
         VALUES ($1, $2, $3, $4, $3, CASE WHEN $5 THEN $3 END) \
         ON CONFLICT (cluster_id) DO UPDATE SET \
             last_sample = EXCLUDED.last_sample, last_round = EXCLUDED.last_round, \
             seen_since = CASE WHEN $6 THEN u.seen_since ELSE EXCLUDED.seen_since END, \
             last_busy = COALESCE(EXCLUDED.last_busy, CASE WHEN $6 THEN u.last_busy END)",
        (cluster.id, &cluster.team_id, now, round, busy, contiguous),
    )
    .await?;
    tx.commit().await?;
    Ok(Applied::Recorded { contiguous })
}

/// Spot nodes that vanished while their pods still requested accelerators were
/// reclaimed (the autoscaler never removes a node whose pods request accelerators): one
/// SPOT_RECLAIMED audit event per pool, in the sample's transaction.
async fn spot_reclaims(
    tx: &mut sqlx::PgConnection,
    cluster: &Sampled,
    gone: &[(String, String, String, i32)],
) -> Result<(), StoreError> {
    let mut by_pool: std::collections::BTreeMap<&str, (Vec<&str>, i64)> = Default::default();
    for (pool, node, provisioning, busy) in gone {
        if provisioning == "SPOT" && *busy > 0 {
            let e = by_pool.entry(pool.as_str()).or_default();
            e.0.push(node.as_str());
            e.1 += i64::from(*busy);
        }
    }
    for (pool, (nodes, busy)) in by_pool {
        let target = format!(
            "projects/{}/zones/{}/clusters/{}/nodePools/{pool}",
            cluster.project_id, cluster.zone, cluster.name
        );
        super::events::append(
            &mut *tx,
            &super::events::NewEvent {
                team_id: Some(&cluster.team_id),
                actor: "kineticd",
                event_type: crate::domain::states::EventType::SpotReclaimed,
                target: &target,
                request_id: None,
                details: serde_json::json!({"nodes": nodes, "busyAccelerators": busy}),
            },
        )
        .await?;
    }
    Ok(())
}

/// Per pool: seen now; busy now when any node's pods request its accelerators. A pool no
/// node of this sample belongs to is forgotten (it has no nodes to be idle on).
async fn record_pools(
    tx: &mut sqlx::PgConnection,
    cluster: &Sampled,
    now: DateTime<Utc>,
    contiguous: bool,
    nodes: &[NodeSample],
) -> Result<(), StoreError> {
    let mut pools: std::collections::BTreeMap<&str, bool> = Default::default();
    for n in nodes {
        *pools.entry(n.pool.as_str()).or_default() |= n.busy > 0;
    }
    let names: Vec<&str> = pools.keys().copied().collect();
    let busy: Vec<bool> = pools.values().copied().collect();
    keyed::execute(
        &mut *tx,
        "DELETE FROM usage_pools WHERE cluster_id = $1 AND NOT (pool = ANY($2))",
        (cluster.id, &names),
    )
    .await?;
    // After a break nothing is known about the time between: idleness counts afresh.
    let sql = "INSERT INTO usage_pools AS p (cluster_id, pool, team_id, seen_since, last_seen, last_busy) \
         SELECT $1, s.pool, $2, $3, $3, CASE WHEN s.busy THEN $3 END \
         FROM unnest($4::text[], $5::bool[]) AS s(pool, busy) \
         ON CONFLICT (cluster_id, pool) DO UPDATE SET \
             seen_since = CASE WHEN $6 THEN p.seen_since ELSE EXCLUDED.seen_since END, \
             last_seen = EXCLUDED.last_seen, \
             last_busy = COALESCE(EXCLUDED.last_busy, CASE WHEN $6 THEN p.last_busy END)";
    keyed::execute(
        &mut *tx,
        sql,
        (cluster.id, &cluster.team_id, now, &names, &busy, contiguous),
    )
    .await?;
    Ok(())
}

/// `cluster` could not be read at `now`: its open intervals stop where they were last
/// seen, and a gap opens there (or now, for a cluster never sampled) until a good sample.
pub async fn record_unreachable(
    db: &PgPool,
    cluster: &Sampled,
    now: DateTime<Utc>,
    reason: &str,
) -> Result<(), StoreError> {
    let mut tx = db.begin().await?;
    let last: Option<DateTime<Utc>> = keyed::scalars(
        "SELECT last_sample FROM usage_clusters WHERE cluster_id = $1 FOR UPDATE",
        (cluster.id,),
    )
    .fetch_optional(&mut *tx)
    .await?;
    let open: Option<i64> = keyed::scalars(
        "SELECT id FROM usage_gaps WHERE cluster_id = $1 AND end_time IS NULL",
        (cluster.id,),
    )
    .fetch_optional(&mut *tx)
    .await?;
    if open.is_none() {
        keyed::execute(
            &mut *tx,
            "UPDATE usage_intervals SET open = false WHERE cluster_id = $1 AND open",
            (cluster.id,),
        )
        .await?;
        insert_gap(
            &mut *tx,
            cluster,
            last.unwrap_or(now).min(now),
            None,
            reason,
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

async fn insert_gap(
    ex: impl PgExecutor<'_>,
    cluster: &Sampled,
    start: DateTime<Utc>,
    end: Option<DateTime<Utc>>,
    reason: &str,
) -> Result<(), StoreError> {
    let mut reason = reason.to_owned();
    if reason.len() > 500 {
        let mut cut = 500;
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        reason.truncate(cut);
    }
    keyed::execute(
        ex,
        "INSERT INTO usage_gaps (team_id, cluster_id, cluster_name, start_time, end_time, reason) \
         VALUES ($1, $2, $3, $4, $5, $6)",
        (
            &cluster.team_id,
            cluster.id,
            &cluster.name,
            start,
            end,
            reason,
        ),
    )
    .await?;
    Ok(())
}

/// A sample's nodes as parallel arrays (one `unnest` per statement).
struct Columns {
    node: Vec<String>,
    uid: Vec<String>,
    pool: Vec<String>,
    accelerator: Vec<Option<String>>,
    accelerators: Vec<i32>,
    provisioning: Vec<String>,
    member: Vec<Option<String>>,
    price: Vec<f64>,
    busy: Vec<i32>,
}

impl Columns {
    /// Bind the facts in the order the statements unnest them: node, pool, accelerator,
    /// accelerators, provisioning, member, price, busy.
    fn bind<'q>(
        &'q self,
        q: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
        q.bind(&self.node)
            .bind(&self.pool)
            .bind(&self.accelerator)
            .bind(&self.accelerators)
            .bind(&self.provisioning)
            .bind(&self.member)
            .bind(&self.price)
            .bind(&self.busy)
    }

    fn of(nodes: &[NodeSample]) -> Columns {
        let int = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
        Columns {
            node: nodes.iter().map(|n| n.node.clone()).collect(),
            uid: nodes.iter().map(|n| n.uid.clone()).collect(),
            pool: nodes.iter().map(|n| n.pool.clone()).collect(),
            accelerator: nodes.iter().map(|n| n.accelerator.clone()).collect(),
            accelerators: nodes.iter().map(|n| int(n.accelerators)).collect(),
            provisioning: nodes.iter().map(|n| n.provisioning.clone()).collect(),
            member: nodes.iter().map(|n| n.member.clone()).collect(),
            price: nodes.iter().map(|n| n.price_per_hour).collect(),
            busy: nodes.iter().map(|n| int(n.busy)).collect(),
        }
    }
}

/// One group's sums over the query's range.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct UsageSum {
    pub cluster: Option<String>,
    pub pool: Option<String>,
    pub accelerator: Option<String>,
    pub provisioning: Option<String>,
    pub member: Option<String>,
    pub day: Option<chrono::NaiveDate>,
    pub node_hours: f64,
    pub accelerator_hours: f64,
    pub busy_accelerator_hours: f64,
    pub cost_usd: f64,
}

/// The group's key columns (static SQL per grouping; the rest are NULL).
fn keys(g: GroupBy) -> &'static str {
    match g {
        GroupBy::Cluster => {
            "cluster_name AS cluster, NULL::text AS pool, NULL::text AS accelerator, \
             NULL::text AS provisioning, NULL::text AS member, NULL::date AS day"
        }
        GroupBy::Pool => {
            "cluster_name AS cluster, pool, NULL::text AS accelerator, \
             NULL::text AS provisioning, NULL::text AS member, NULL::date AS day"
        }
        GroupBy::Accelerator => {
            "NULL::text AS cluster, NULL::text AS pool, COALESCE(accelerator, 'none') AS accelerator, \
             NULL::text AS provisioning, NULL::text AS member, NULL::date AS day"
        }
        GroupBy::Provisioning => {
            "NULL::text AS cluster, NULL::text AS pool, NULL::text AS accelerator, \
             provisioning, NULL::text AS member, NULL::date AS day"
        }
        GroupBy::Member => {
            "NULL::text AS cluster, NULL::text AS pool, NULL::text AS accelerator, \
             NULL::text AS provisioning, COALESCE(member, 'unknown') AS member, NULL::date AS day"
        }
        GroupBy::Day => {
            "NULL::text AS cluster, NULL::text AS pool, NULL::text AS accelerator, \
             NULL::text AS provisioning, NULL::text AS member, (piece_start AT TIME ZONE 'UTC')::date AS day"
        }
    }
}

/// Team `team`'s usage over the query's range, grouped. An interval partly inside the
/// range (or, by day, spanning midnight) counts the part inside (its facts, busy
/// included, held over the whole interval).
pub async fn sums(
    ex: impl PgExecutor<'_>,
    team: &str,
    q: &UsageQuery,
) -> Result<Vec<UsageSum>, StoreError> {
    // Pieces: each interval cut to the range and, grouping by day, at every midnight.
    let pieces = if q.group_by == GroupBy::Day {
        // Only an interval that crosses midnight is cut (generate_series on every row
        // makes the planner expect hundreds of pieces per interval).
        "CROSS JOIN LATERAL (SELECT date_trunc('day', c.s, 'UTC') AS d0) f \
         CROSS JOIN LATERAL ( \
             SELECT c.s AS piece_start, c.e AS piece_end WHERE c.e <= f.d0 + interval '1 day' \
             UNION ALL \
             SELECT greatest(c.s, d), least(c.e, d + interval '1 day') \
             FROM generate_series(f.d0, c.e, interval '1 day') AS d \
             WHERE c.e > f.d0 + interval '1 day') p"
    } else {
        "CROSS JOIN LATERAL (SELECT c.s AS piece_start, c.e AS piece_end) p"
    };
    let sql = format!(
        "WITH c AS ( \
             SELECT u.*, greatest(u.start_time, $2) AS s, least(u.end_time, $3) AS e \
             FROM usage_intervals u \
             WHERE u.team_id = $1 AND u.start_time < $3 AND u.end_time > $2 \
               AND u.end_time > u.start_time), \
         pieces AS ( \
             SELECT c.*, p.piece_start, p.piece_end, \
                    date_part('epoch', p.piece_end - p.piece_start) / 3600.0 AS hours \
             FROM c {pieces} WHERE p.piece_end > p.piece_start), \
         keyed AS (SELECT {keys}, hours, accelerators, busy, price_per_hour FROM pieces) \
         SELECT cluster, pool, accelerator, provisioning, member, day, \
                sum(hours)::float8 AS node_hours, \
                sum(hours * accelerators)::float8 AS accelerator_hours, \
                sum(hours * busy)::float8 AS busy_accelerator_hours, \
                sum(hours * price_per_hour)::float8 AS cost_usd \
         FROM keyed GROUP BY cluster, pool, accelerator, provisioning, member, day \
         ORDER BY day, cluster, pool, accelerator, provisioning, member",
        keys = keys(q.group_by),
    );
    keyed::all(ex, AssertSqlSafe(sql), (team, q.start, q.end)).await
}

/// A span where a cluster's usage is unknown.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Gap {
    pub cluster_name: String,
    pub start_time: DateTime<Utc>,
    /// `None`: still unreadable.
    pub end_time: Option<DateTime<Utc>>,
    pub reason: String,
}

/// Team `team`'s gaps overlapping the range.
pub async fn gaps(
    ex: impl PgExecutor<'_>,
    team: &str,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<Vec<Gap>, StoreError> {
    keyed::all(
        ex,
        "SELECT cluster_name, start_time, end_time, reason FROM usage_gaps \
         WHERE team_id = $1 AND start_time < $3 AND (end_time IS NULL OR end_time > $2) \
         ORDER BY start_time, cluster_name LIMIT 1000",
        (team, start, end),
    )
    .await
}

/// Team `team`'s measured spend from `start` to `end` (USD).
pub async fn spend(
    ex: impl PgExecutor<'_>,
    team: &str,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<f64, StoreError> {
    let v: Option<f64> = keyed::scalars(
        "SELECT sum(date_part('epoch', least(end_time, $3) - greatest(start_time, $2)) / 3600.0 \
                    * price_per_hour)::float8 \
         FROM usage_intervals \
         WHERE team_id = $1 AND start_time < $3 AND end_time > $2",
        (team, start, end),
    )
    .fetch_one(ex)
    .await?;
    Ok(v.unwrap_or(0.0))
}

/// Append a BUDGET_THRESHOLD audit event for every team whose measured spend this month
/// (to `now`) crossed 50, 80 or 100% of its policy's `monthlyBudgetUsd` and was not told
/// yet; one statement, so a crossing is marked exactly when its event is written. Returns
/// the teams told.
pub async fn budget_crossings(
    ex: impl PgExecutor<'_>,
    now: DateTime<Utc>,
) -> Result<Vec<(String, i32)>, StoreError> {
    keyed::all(
        ex,
        "WITH m AS (SELECT date_trunc('month', $1::timestamptz, 'UTC') AS start), \
         spend AS ( \
             SELECT p.team_id, (p.policy->>'monthlyBudgetUsd')::float8 AS budget, \
                    coalesce((SELECT sum(date_part('epoch', least(u.end_time, $1) \
                                                 - greatest(u.start_time, m.start)) \
                                         / 3600.0 * u.price_per_hour) \
                              FROM usage_intervals u \
                              WHERE u.team_id = p.team_id AND u.end_time > m.start \
                                AND u.start_time < $1), 0)::float8 AS spent \
             FROM team_policies p, m WHERE p.policy ? 'monthlyBudgetUsd'), \
         crossed AS ( \
             SELECT s.team_id, s.budget, s.spent, t.threshold \
             FROM spend s CROSS JOIN (VALUES (50), (80), (100)) AS t(threshold) \
             WHERE s.budget > 0 AND s.spent >= s.budget * t.threshold / 100.0), \
         fresh AS ( \
             INSERT INTO budget_alerts (team_id, month, threshold, spent, budget) \
             SELECT c.team_id, m.start::date, c.threshold, c.spent, c.budget FROM crossed c, m \
             ON CONFLICT DO NOTHING RETURNING team_id, threshold, spent, budget), \
         told AS ( \
             INSERT INTO events (team_id, actor, type, target, details) \
             SELECT f.team_id, 'kineticd', 'BUDGET_THRESHOLD', 'teams/' || f.team_id || '/policy', \
                    jsonb_build_object('thresholdPercent', f.threshold, \
                                       'spentUsd', round(f.spent::numeric, 2), \
                                       'budgetUsd', f.budget, \
                                       'month', to_char($1 AT TIME ZONE 'UTC', 'YYYY-MM')) \
             FROM fresh f RETURNING team_id) \
         SELECT team_id, threshold FROM fresh ORDER BY team_id, threshold",
        (now,),
    )
    .await
}
