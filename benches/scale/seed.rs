//! The scale benchmark's data: the baseline (the same shape as `api_reads`: one team,
//! 4 projects x 50 clusters x 3 pools, 1,000 queued NOOP operations) made through the
//! store and queue, and the bulk (`seed.sql`) grown around it with set-based SQL.
//!
//! Invariant: every row the bulk adds copies its JSON from a baseline row written by the
//! real code, so the service renders it as it would a real one; the baseline rows the
//! timed reads touch are identical in both databases.

use anyhow::Result;
use kineticd::store;
use sqlx::Executor;

pub use crate::baseline::{READER, Target};
/// A VIEWER of the first `wide_teams` teams.
pub const WIDE: &str = "wide@example.com";
/// A VIEWER of three small teams (team-0100, -0200, -0300), as most people are.
pub const SMALL: &str = "small@example.com";
/// A service admin on the admin server.
pub const ADMIN: &str = "admin@example.com";

/// What the big database holds in total (baseline included).
#[derive(Debug, Clone)]
pub struct Sizes {
    pub teams: u32,
    pub clusters: u32,
    pub pools: u32,
    pub ops: u32,
    pub wide_teams: u32,
    pub bench_members: u32,
    pub profiles: u32,
    pub wide_pools: u32,
}

/// The baseline, through the store; the database at `url` is migrated first and its
/// pool closed at the end (it becomes a template).
pub async fn baseline(url: &str) -> Result<Target> {
    let db = store::connect(url, 4).await?;
    store::migrate(&db).await?;
    let t = crate::baseline::fill(&db).await?;
    db.close().await;
    Ok(t)
}

/// `seed.sql` with the sizes filled in, in one transaction, then `VACUUM ANALYZE`.
pub async fn bulk(url: &str, s: &Sizes) -> Result<()> {
    let sql = include_str!("seed.sql")
        .replace("{TEAMS}", &s.teams.to_string())
        .replace("{CLUSTERS}", &s.clusters.to_string())
        .replace("{POOLS}", &s.pools.to_string())
        .replace("{OPS}", &s.ops.to_string())
        .replace("{WIDE_TEAMS}", &s.wide_teams.to_string())
        .replace("{BENCH_MEMBERS}", &s.bench_members.to_string())
        .replace("{PROFILES}", &s.profiles.to_string())
        .replace("{WIDE_POOLS}", &s.wide_pools.to_string());
    let db = store::connect(url, 2).await?;
    let mut tx = db.begin().await?;
    tx.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(sql))).await?;
    tx.commit().await?;
    db.close().await;
    vacuum(url).await
}

/// `VACUUM ANALYZE` every table (as autovacuum would have by the time a database is
/// this big), so plans see real statistics and index-only scans see the visibility map;
/// then a `CHECKPOINT`, so the seed's dirty pages are not written out during the timed
/// runs (skipped with a warning where the role may not).
pub async fn vacuum(url: &str) -> Result<()> {
    let db = store::connect(url, 1).await?;
    db.execute("VACUUM ANALYZE").await?;
    if let Err(e) = db.execute("CHECKPOINT").await {
        eprintln!("warning: CHECKPOINT: {e}");
    }
    db.close().await;
    Ok(())
}

/// Row counts of the tables the reads touch.
pub async fn census(url: &str) -> Result<String> {
    let db = store::connect(url, 1).await?;
    let row: (i64, i64, i64, i64, i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM teams), (SELECT count(*) FROM team_members), \
                (SELECT count(*) FROM clusters), \
                (SELECT count(*) FROM clusters WHERE state = 'DELETED'), \
                (SELECT count(*) FROM node_pools), (SELECT count(*) FROM operations), \
                (SELECT count(*) FROM operations WHERE end_time IS NULL), \
                (SELECT count(*) FROM profiles)",
    )
    .fetch_one(&db)
    .await?;
    let size: String =
        sqlx::query_scalar("SELECT pg_size_pretty(pg_database_size(current_database()))")
            .fetch_one(&db)
            .await?;
    db.close().await;
    Ok(format!(
        "{} teams, {} members, {} clusters ({} DELETED), {} node pools, {} operations \
         ({} unfinished), {} profiles; {size}",
        row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7
    ))
}
