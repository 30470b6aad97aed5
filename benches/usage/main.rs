//! Usage from the nodes that ran (issue 30): the collector's round and the usage query,
//! each against its limit (`cargo bench --profile dev --bench usage`; not a test).
//!
//! The real app (HTTP API) runs in this process on a private temporary PostgreSQL and the
//! cloud simulator at speed 0 (every GKE operation done at once; virtual time moves only
//! by `POST /sim/v1/clock:advance`).
//!
//! - `collector`: `KBENCH_CLUSTERS` (default 200) GKE clusters, each with one L4 pool of
//!   `KBENCH_NODES` (default 10) nodes (minNodes = maxNodes, so the simulator's
//!   Kubernetes API holds them), created through the simulator's GKE API, and the
//!   matching RUNNING cluster and pool records of a team with a monthly budget. A cold
//!   round (GKE asked for every endpoint, every interval opened), then `KBENCH_ROUNDS`
//!   (default 5) timed `Collector::round()`s, the clock advanced 60 s before each; every
//!   round must sample every node of every cluster, none unreachable. Then
//!   `KBENCH_HISTORY` (default 100) closed intervals per node are written before the
//!   first sample (months of history: 100 x 2,000 = 200,000 rows) and the rounds are
//!   timed again: the medians compare (cost grows with nodes, not history), and so do
//!   the round's budget statement's alone. Reported against the limit (one interval,
//!   60 s) and `SELECT 1` on the app's pool; a round over the limit fails the bench.
//! - `query`: another team with `KBENCH_INTERVALS` (default 10,000) node intervals over
//!   November 2026 (8 clusters x 4 pools x 16 nodes, four accelerators, four
//!   provisioning models, 13 members, busy 0..accelerators), written with SQL; then
//!   `GET /v1/teams/{team}/usage` over that month for each groupBy, `KBENCH_RUNS`
//!   (default 50) each through HTTP, the sums statement alone, and the sums statement
//!   on a connection with PostgreSQL's JIT off; medians against the 50 ms limit and
//!   `SELECT 1`. Every grouping must sum to the same totals. A grouping whose HTTP
//!   median is over the limit gets its sums statement's EXPLAIN ANALYZE (auto_explain,
//!   on stderr) and fails the bench.
//!
//! Sections: `cargo bench --profile dev --bench usage -- query` runs one.

#[allow(dead_code)] // shared with the other benches
#[path = "../support/app.rs"]
mod app_support;
#[allow(dead_code)] // shared with the other benches
#[path = "../support/records.rs"]
mod records;
#[path = "../support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use chrono::{DateTime, Utc};
use kineticd::devdb::PrivatePostgres;
use kineticd::domain::usage::{GroupBy, UsageQuery};
use kineticd::ops::usage::{Collector, Round};
use kineticd::store::usage;
use records::FIRST_POOL as POOL;
use reqwest::Method;
use serde_json::{Value, json};
use support::{OWNER, PROJECT, TEAM, ZONE, env_or, median, median_seconds};
use tokio::sync::Mutex;

/// The query's team (its intervals are written directly; the collector samples `TEAM`'s
/// clusters).
const QTEAM: &str = "usage-team";
const QPROJECT: &str = "usage-proj";
/// The collector's interval: a round must end within it.
const INTERVAL: Duration = Duration::from_secs(60);
/// The usage query's limit.
const QUERY_LIMIT_MS: f64 = 50.0;
const MONTH_START: &str = "2026-11-01T00:00:00Z";
const MONTH_END: &str = "2026-12-01T00:00:00Z";

struct Knobs {
    clusters: usize,
    nodes: usize,
    rounds: usize,
    history: usize,
    intervals: usize,
    runs: usize,
}

fn main() -> Result<()> {
    let Some(sections) = support::start("usage") else {
        return Ok(());
    };
    kineticd::auth::install_tls_provider();
    let k = Knobs {
        clusters: env_or("KBENCH_CLUSTERS", 200)?,
        nodes: env_or("KBENCH_NODES", 10)?,
        rounds: env_or("KBENCH_ROUNDS", 5)?,
        history: env_or("KBENCH_HISTORY", 100)?,
        intervals: env_or("KBENCH_INTERVALS", 10_000)?,
        runs: env_or("KBENCH_RUNS", 50)?,
    };
    if k.clusters == 0 || k.nodes == 0 || k.rounds == 0 || k.runs == 0 || k.intervals == 0 {
        bail!(
            "KBENCH_CLUSTERS, KBENCH_NODES, KBENCH_ROUNDS, KBENCH_INTERVALS and KBENCH_RUNS must be at least 1"
        );
    }
    support::on_private_postgres(async |pg| run(pg, &k, &sections).await)
}

async fn run(pg: &PrivatePostgres, k: &Knobs, sections: &support::Sections) -> Result<()> {
    let app = app_support::start_for_l4_nodes(pg, "kbench_usage", k.clusters * k.nodes).await?;
    let trip = median_seconds(k.runs.max(50), || async {
        sqlx::query("SELECT 1").execute(&app.db).await?;
        Ok(())
    })
    .await?;
    println!(
        "baseline: SELECT 1 on the app's pool, median {:.3} ms",
        trip * 1e3
    );
    if sections.wants("collector") {
        collector(&app, k, trip).await?;
    }
    if sections.wants("query") {
        query(&app, k, trip).await?;
    }
    Ok(())
}

async fn call(app: &app_support::App, m: Method, path: &str, body: Value) -> Result<Value> {
    app_support::call_api(&app.http, &app.api, OWNER, m, path, body).await
}

/// Create team `team` owning `project`.
async fn create_team(app: &app_support::App, team: &str, project: &str) -> Result<Value> {
    let body = json!({"teamId": team, "projects": [project]});
    call(app, Method::POST, "/v1/teams", body).await
}

// ---- 1. the collector ----

async fn collector(app: &app_support::App, k: &Knobs, trip: f64) -> Result<()> {
    create_team(app, TEAM, PROJECT).await?;
    // A budget far out of reach: every round's budget check reads the team's month.
    call(
        app,
        Method::PATCH,
        &format!("/v1/teams/{TEAM}/policy"),
        json!({"monthlyBudgetUsd": 1e9}),
    )
    .await?;
    let t = Instant::now();
    let names = (0..k.clusters).map(cluster_name).collect();
    app_support::l4_clusters(app, PROJECT, ZONE, names, POOL, k.nodes).await?;
    let mut tx = app.db.begin().await?;
    let at = records::Place::new(PROJECT, ZONE, TEAM, OWNER);
    for c in 0..k.clusters {
        records::insert_cluster(&mut tx, &at, &cluster_name(c), 1, |_| false).await?;
    }
    tx.commit().await?;
    println!(
        "collector: {} clusters x {} L4 nodes created in the simulator and recorded RUNNING in {:.1} s",
        k.clusters,
        k.nodes,
        t.elapsed().as_secs_f64()
    );

    let c = Collector::new(
        app.db.clone(),
        app.state.cloud.clone(),
        Arc::clone(&app.state.prices),
        INTERVAL,
    );
    let want = k.clusters * k.nodes;
    let (cold, r) = timed_round(app, &c, k, false).await?;
    println!(
        "cold round (GKE asked for every endpoint, {want} intervals opened): {:.2} s, {} nodes",
        cold, r.nodes
    );
    let before = rounds(app, &c, k).await?;
    let rows_before = interval_rows(app).await?;
    let crossings_before = budget_check(app, k.runs).await?;

    let t = Instant::now();
    let written = write_history(app, k.history).await?;
    println!(
        "history: {written} closed intervals written before the first sample ({} per node) in {:.1} s",
        k.history,
        t.elapsed().as_secs_f64()
    );
    let after = rounds(app, &c, k).await?;
    let rows_after = interval_rows(app).await?;
    let crossings_after = budget_check(app, k.runs).await?;

    let limit = INTERVAL.as_secs_f64();
    let mb = median(before.clone());
    let ma = median(after.clone());
    let list = |v: &[f64]| {
        v.iter()
            .map(|s| format!("{s:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "rounds without history: {} s; median {mb:.2} s = {:.3} of the {limit:.0} s interval ({} nodes per round, {:.2} ms per node; {:.0} x SELECT 1 per node)",
        list(&before),
        mb / limit,
        want,
        mb * 1e3 / want as f64,
        mb / want as f64 / trip
    );
    println!(
        "rounds with history:    {} s; median {ma:.2} s = {:.3} of the interval; ratio to without {:.2}",
        list(&after),
        ma / limit,
        ma / mb
    );
    println!(
        "usage_intervals rows: {rows_before} before the history, {rows_after} after (the rounds open none while nothing changes)"
    );
    println!(
        "the round's budget statement alone (usage::budget_crossings): median {:.2} ms without history, {:.2} ms with it",
        crossings_before * 1e3,
        crossings_after * 1e3
    );
    ensure!(
        mb < limit && ma < limit,
        "a round took longer than the {limit} s interval"
    );
    Ok(())
}

fn cluster_name(c: usize) -> String {
    format!("u{c:04}")
}

/// `KBENCH_ROUNDS` timed rounds; each must sample every node.
async fn rounds(app: &app_support::App, c: &Collector, k: &Knobs) -> Result<Vec<f64>> {
    let mut v = Vec::with_capacity(k.rounds);
    for _ in 0..k.rounds {
        v.push(timed_round(app, c, k, true).await?.0);
    }
    Ok(v)
}

/// Advance the simulator's clock one interval, then one round: its seconds.
async fn timed_round(
    app: &app_support::App,
    c: &Collector,
    k: &Knobs,
    contiguous: bool,
) -> Result<(f64, Round)> {
    let r = app
        .http
        .post(format!("{}/sim/v1/clock:advance", app._sim.url()))
        .json(&json!({"seconds": INTERVAL.as_secs()}))
        .send()
        .await?;
    ensure!(r.status().is_success(), "clock:advance: {}", r.status());
    let t = Instant::now();
    let r = c.round().await?;
    let secs = t.elapsed().as_secs_f64();
    ensure!(
        r.round.is_some(),
        "the bench's collector holds the task: {r:?}"
    );
    ensure!(
        r.sampled == k.clusters && r.unreachable == 0 && r.stale == 0,
        "every cluster sampled, none unreachable or stale: {r:?}"
    );
    ensure!(
        r.nodes == k.clusters * k.nodes,
        "{} nodes sampled, want {}",
        r.nodes,
        k.clusters * k.nodes
    );
    if contiguous {
        let open: i64 =
            sqlx::query_scalar("SELECT count(*) FROM usage_intervals WHERE team_id = $1 AND open")
                .bind(TEAM)
                .fetch_one(&app.db)
                .await?;
        ensure!(
            open == (k.clusters * k.nodes) as i64,
            "{open} open intervals"
        );
    }
    Ok((secs, r))
}

async fn interval_rows(app: &app_support::App) -> Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT count(*) FROM usage_intervals WHERE team_id = $1")
            .bind(TEAM)
            .fetch_one(&app.db)
            .await?,
    )
}

/// The median seconds of the round's budget statement alone.
async fn budget_check(app: &app_support::App, runs: usize) -> Result<f64> {
    let now: DateTime<Utc> =
        sqlx::query_scalar("SELECT max(end_time) FROM usage_intervals WHERE team_id = $1")
            .bind(TEAM)
            .fetch_one(&app.db)
            .await?;
    median_seconds(runs, || async {
        usage::budget_crossings(&app.db, now).await?;
        Ok(())
    })
    .await
}

/// `per_node` closed intervals for every node, one after another over the 90 days
/// before its first sample (busy varying, as when pods come and go); the rows written.
async fn write_history(app: &app_support::App, per_node: usize) -> Result<u64> {
    if per_node == 0 {
        return Ok(0);
    }
    let step = 90.0 * 86_400.0 / per_node as f64;
    let insert = sqlx::query(
        "WITH first AS (SELECT min(start_time) AS t0 FROM usage_intervals WHERE team_id = $1) \
         INSERT INTO usage_intervals (team_id, cluster_id, cluster_name, pool, node, accelerator, \
             accelerators, provisioning, member, price_per_hour, start_time, end_time, busy, open) \
         SELECT u.team_id, u.cluster_id, u.cluster_name, u.pool, u.node, u.accelerator, \
                u.accelerators, u.provisioning, u.member, u.price_per_hour, \
                f.t0 - make_interval(secs => h * $3), \
                f.t0 - make_interval(secs => (h - 1) * $3 + 1), \
                h % (u.accelerators + 1), false \
         FROM usage_intervals u CROSS JOIN first f CROSS JOIN generate_series(1, $2) AS h \
         WHERE u.team_id = $1 AND u.open",
    )
    .bind(TEAM)
    .bind(i32::try_from(per_node)?)
    .bind(step);
    analyzed(app, insert).await
}

/// Runs `insert` (a statement writing usage intervals), then refreshes the planner's
/// statistics of the table, as after the collector's writes; the rows written.
async fn analyzed(
    app: &app_support::App,
    insert: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
) -> Result<u64> {
    let done = insert.execute(&app.db).await?;
    sqlx::query("ANALYZE usage_intervals")
        .execute(&app.db)
        .await?;
    Ok(done.rows_affected())
}

// ---- 2. the query ----

async fn query(app: &app_support::App, k: &Knobs, trip: f64) -> Result<()> {
    create_team(app, QTEAM, QPROJECT).await?;
    let start: DateTime<Utc> = MONTH_START.parse()?;
    let end: DateTime<Utc> = MONTH_END.parse()?;
    let written = write_intervals(app, k.intervals, start, end).await?;
    let other: i64 = sqlx::query_scalar("SELECT count(*) FROM usage_intervals")
        .fetch_one(&app.db)
        .await?;
    println!(
        "query: team {QTEAM} with {written} node intervals over {MONTH_START}..{MONTH_END} ({other} rows in usage_intervals in all)"
    );
    println!(
        "| groupBy | rows | HTTP median ms | sums statement median ms | sums, JIT off, ms | limit ms | HTTP / limit | HTTP / SELECT 1 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut totals: Option<f64> = None;
    let mut over = Vec::new();
    for g in GroupBy::ALL {
        let path = format!(
            "/v1/teams/{QTEAM}/usage?startTime={MONTH_START}&endTime={MONTH_END}&groupBy={}",
            g.as_str()
        );
        let first = call(app, Method::GET, &path, Value::Null).await?;
        let rows = first["rows"].as_array().map_or(0, Vec::len);
        let acc = first["total"]["acceleratorHours"]
            .as_f64()
            .context("total.acceleratorHours")?;
        ensure!(
            acc > 0.0,
            "groupBy={}: no accelerator hours: {first}",
            g.as_str()
        );
        match totals {
            None => totals = Some(acc),
            Some(t) => ensure!(
                (t - acc).abs() < 1e-6 * t,
                "groupBy={} sums {acc} accelerator hours, groupBy=cluster {t}",
                g.as_str()
            ),
        }
        for _ in 0..5 {
            call(app, Method::GET, &path, Value::Null).await?;
        }
        let http = median_seconds(k.runs, || async {
            call(app, Method::GET, &path, Value::Null).await?;
            Ok(())
        })
        .await?;
        let q = UsageQuery::new(start, end, g)?;
        let sums = median_seconds(k.runs, || async {
            usage::sums(&app.db, QTEAM, &q).await?;
            Ok(())
        })
        .await?;
        // The same statement on a connection with PostgreSQL's JIT off (a candidate fix:
        // the day split's generate_series is estimated at 333 rows per interval, which
        // lifts the plan's cost over jit_above_cost).
        let mut plain = app.db.acquire().await?.detach();
        sqlx::query("SET jit = off").execute(&mut plain).await?;
        let plain = Mutex::new(plain);
        let no_jit = median_seconds(k.runs, || async {
            usage::sums(&mut *plain.lock().await, QTEAM, &q).await?;
            Ok(())
        })
        .await?;
        println!(
            "| {} | {rows} | {:.2} | {:.2} | {:.2} | {QUERY_LIMIT_MS:.0} | {:.3} | {:.1} |",
            g.as_str(),
            http * 1e3,
            sums * 1e3,
            no_jit * 1e3,
            http * 1e3 / QUERY_LIMIT_MS,
            http / trip
        );
        if http * 1e3 > QUERY_LIMIT_MS {
            over.push(g);
        }
    }
    for &g in &over {
        explain(app, &UsageQuery::new(start, end, g)?).await?;
    }
    if !over.is_empty() {
        let names: Vec<&str> = over.iter().map(|g| g.as_str()).collect();
        bail!("over the {QUERY_LIMIT_MS} ms limit: groupBy {names:?} (plans on stderr)");
    }
    Ok(())
}

/// The sums statement of `q` once more under auto_explain (ANALYZE, BUFFERS): its plan
/// comes back as a WARNING notice, which sqlx logs to stderr.
async fn explain(app: &app_support::App, q: &UsageQuery) -> Result<()> {
    // Off the pool: the settings die with the connection.
    let mut conn = app.db.acquire().await?.detach();
    for set in [
        "LOAD 'auto_explain'",
        "SET auto_explain.log_min_duration = 0",
        "SET auto_explain.log_analyze = on",
        "SET auto_explain.log_buffers = on",
        "SET auto_explain.log_level = warning",
    ] {
        sqlx::query(set).execute(&mut conn).await?;
    }
    eprintln!(
        "EXPLAIN ANALYZE of the sums statement, groupBy={}:",
        q.group_by.as_str()
    );
    usage::sums(&mut conn, QTEAM, q).await?;
    Ok(())
}

/// `n` closed node intervals of team `QTEAM` spread over `[start, end)` (a few reaching
/// across either end), shaped as the collector writes them: 8 clusters x 4 pools x 16
/// nodes, the accelerator fixed per pool, four provisioning models, 13 members, busy
/// 0..accelerators; the rows written.
async fn write_intervals(
    app: &app_support::App,
    n: usize,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<u64> {
    let step = (end - start).as_seconds_f64() / n as f64;
    let insert = sqlx::query(
        "WITH s AS ( \
             SELECT i, i % 8 AS c, (i / 8) % 4 AS p, (i / 32) % 16 AS node, \
                    ((i % 8) + (i / 8) % 4) % 4 AS a \
             FROM generate_series(0, $2 - 1) AS i) \
         INSERT INTO usage_intervals (team_id, cluster_id, cluster_name, pool, node, accelerator, \
             accelerators, provisioning, member, price_per_hour, start_time, end_time, busy, open) \
         SELECT $1, ('00000000-0000-4000-8000-' || lpad(c::text, 12, '0'))::uuid, \
                'cluster-' || c, \
                (ARRAY['gpu-l4', 'gpu-a100', 'gpu-h100', 'tpu-v5litepod'])[a + 1] || '-' || p, \
                'node-' || c || '-' || p || '-' || node, \
                (ARRAY['gpu-l4', 'gpu-a100', 'gpu-h100', 'tpu-v5litepod'])[a + 1], \
                (ARRAY[1, 8, 8, 4])[a + 1], \
                (ARRAY['ON_DEMAND', 'SPOT', 'RESERVATION', 'FLEX_START'])[(i / 64) % 4 + 1], \
                'member-' || (i % 13) || '@example.com', \
                (ARRAY[0.85, 29.39, 88.49, 4.80])[a + 1], \
                $3 - interval '3 hours' + make_interval(secs => i * $4), \
                $3 - interval '3 hours' + make_interval(secs => i * $4 + 600 + (i * 7919) % 21000), \
                (i * 31) % ((ARRAY[1, 8, 8, 4])[a + 1] + 1), false \
         FROM s",
    )
    .bind(QTEAM)
    .bind(i32::try_from(n)?)
    .bind(start)
    .bind(step);
    analyzed(app, insert).await
}
