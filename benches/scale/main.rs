//! Scale benchmark (`cargo bench --bench scale`; not a test): issue 15, benchmark 2.
//!
//! On the PostgreSQL at `DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432`) it
//! makes two databases in one run: *small*, the baseline of `api_reads` (team `bench`,
//! 4 projects x 50 clusters x 3 pools, 1,000 queued operations, seeded through the
//! store), and *big*, a copy of it (`CREATE DATABASE .. TEMPLATE`) grown by set-based
//! SQL ([`seed`]) to `KSCALE_CLUSTERS` clusters (10,000), `KSCALE_POOLS` node pools
//! (100,000) and `KSCALE_OPS` operations (1,000,000, all but 1,020 finished), then
//! `VACUUM ANALYZE`d. Both are served by the production router in this process (as
//! `serve --dev`, a VIEWER caller) and then:
//!
//! 1. the three reads of `api_reads` (GET an operation, GET a cluster, a 50-cluster
//!    list page) are loaded with the in-repo generator on both databases, alternating
//!    small/big each repetition (`KSCALE_REPS` x `KSCALE_SECS` s, `KSCALE_CONNS`
//!    connections), and the medians and the big/small ratios are printed;
//! 2. every list endpoint's first page and a deep page (reached by walking
//!    `nextPageToken` with `pageSize=1000`) are timed sequentially ([`lists`]);
//! 3. the plan of every list statement on the first and the deep page, and of the
//!    worker's claim, is printed as `EXPLAIN (ANALYZE, BUFFERS)` output, captured by
//!    `auto_explain` from the statements the server really sends ([`plans`]).
//!
//! Invariant: both databases are dropped at the end, whatever happened (unless
//! `KSCALE_KEEP=1` asks to keep them for a look with psql); nothing here
//! writes outside them.

#[path = "../support/app.rs"]
#[allow(dead_code)]
mod app_support;
#[path = "../support/baseline.rs"]
mod baseline;
mod lists;
#[path = "../api_reads/load.rs"]
mod load;
mod plans;
#[path = "../support/records.rs"]
mod records;
mod seed;
#[path = "../support/mod.rs"]
mod support;

use std::time::Instant;

use anyhow::Result;
use sqlx::{Connection, Executor, PgConnection};
use support::{PgServer, env_or, median};

/// The p99 target: the big database's within this factor of the small one's.
const TARGET_P99_RATIO: f64 = 1.5;

struct Knobs {
    reps: usize,
    secs: u32,
    conns: usize,
    pool: u32,
    sizes: seed::Sizes,
    lists: lists::Knobs,
}

fn knobs() -> Result<Knobs> {
    Ok(Knobs {
        reps: env_or("KSCALE_REPS", 3usize)?.max(1),
        secs: env_or("KSCALE_SECS", 5u32)?.max(1),
        conns: env_or("KSCALE_CONNS", 64usize)?.max(1),
        pool: env_or("KSCALE_POOL", 20u32)?.max(2),
        sizes: seed::Sizes {
            teams: env_or("KSCALE_TEAMS", 500u32)?.max(2),
            clusters: env_or("KSCALE_CLUSTERS", 10_000u32)?.max(300),
            pools: env_or("KSCALE_POOLS", 100_000u32)?.max(2_000),
            ops: env_or("KSCALE_OPS", 1_000_000u32)?.max(2_000),
            wide_teams: env_or("KSCALE_WIDE_TEAMS", 50u32)?.max(1),
            bench_members: env_or("KSCALE_MEMBERS", 1_000u32)?,
            profiles: env_or("KSCALE_PROFILES", 300u32)?,
            wide_pools: env_or("KSCALE_WIDE_POOLS", 500u32)?.max(1),
        },
        lists: lists::Knobs {
            samples: env_or("KSCALE_PAGE_SAMPLES", 30usize)?.max(3),
            deep_ops: env_or("KSCALE_DEEP_OPS", 20_000usize)?,
        },
    })
}

fn main() -> Result<()> {
    if support::bench_args("scale").is_none() {
        return Ok(());
    }
    plans::init_tracing();
    let k = knobs()?;
    let pg = PgServer::from_env()?;
    let [small, big] = PgServer::scratch_names(["kscale_small", "kscale_big"]);
    support::runtime()?.block_on(async {
        let mut admin = PgConnection::connect(&pg.admin).await?;
        let r = run(&k, &mut admin, &pg, &small, &big).await;
        if env_or("KSCALE_KEEP", 0u8).unwrap_or(0) != 0 {
            println!(
                "KSCALE_KEEP: kept {} and {} (drop them when done)",
                pg.url(&small),
                pg.url(&big)
            );
        } else {
            support::drop_databases(&mut admin, &[&small, &big]).await;
        }
        r
    })
}

async fn run(
    k: &Knobs,
    admin: &mut PgConnection,
    pg: &PgServer,
    small: &str,
    big: &str,
) -> Result<()> {
    let (small_url, big_url) = (pg.url(small), pg.url(big));
    let t = Instant::now();
    admin
        .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {small}")))
        .await?;
    let target = seed::baseline(&small_url).await?;
    admin
        .execute(sqlx::AssertSqlSafe(format!(
            "CREATE DATABASE {big} TEMPLATE {small}"
        )))
        .await?;
    println!(
        "scale: baseline seeded in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    seed::bulk(&big_url, &k.sizes).await?;
    println!(
        "scale: bulk seeded and VACUUM ANALYZEd in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    seed::vacuum(&small_url).await?;
    for (what, url) in [("small", &small_url), ("big", &big_url)] {
        println!("  {what}: {}", seed::census(url).await?);
    }

    let s = app_support::start_at(&small_url, k.pool, 0.0, |_| {}).await?;
    let b = app_support::start_at(&big_url, k.pool, 0.0, |_| {}).await?;
    reads(k, &s.api, &b.api, &target).await?;
    let admin_api = lists::admin_server(&b.state).await?;
    let walked = lists::run(&k.lists, &b.api, &admin_api, &target).await?;
    plans::run(&big_url, &b.state, &walked).await?;
    Ok(())
}

/// The three reads on both databases, alternating, and the table of medians.
async fn reads(k: &Knobs, small: &str, big: &str, t: &seed::Target) -> Result<()> {
    let paths = [
        (
            "GET /v1/operations/{id}",
            format!("/v1/operations/{}", t.operation),
        ),
        (
            "GET /v1/projects/{p}/zones/{z}/clusters/{c}",
            format!(
                "/v1/projects/{}/zones/{}/clusters/{}",
                t.project, t.zone, t.cluster
            ),
        ),
        (
            "GET /v1/clusters?pageSize=50",
            "/v1/clusters?pageSize=50".to_owned(),
        ),
    ];
    println!(
        "\nreads: {} reps x {} s, {} connections, DB pool {}, {} CPUs, small and big alternating",
        k.reps,
        k.secs,
        k.conns,
        k.pool,
        std::thread::available_parallelism()?.get()
    );
    // [read][small=0 / big=1] -> runs
    let mut runs: Vec<[Vec<load::Run>; 2]> = vec![[Vec::new(), Vec::new()]; paths.len()];
    for rep in 0..k.reps {
        for (db, api) in [small, big].into_iter().enumerate() {
            for (i, (what, path)) in paths.iter().enumerate() {
                let (url, conns, secs) = (format!("{api}{path}"), k.conns, f64::from(k.secs));
                let r = tokio::task::spawn_blocking(move || {
                    load::run(&url, seed::READER, conns, secs, 2)
                })
                .await??;
                println!(
                    "  rep {} {}: {what}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms",
                    rep + 1,
                    ["small", "big"][db],
                    r.rps,
                    r.p50_ms,
                    r.p99_ms
                );
                runs[i][db].push(r);
            }
        }
    }
    println!();
    println!(
        "| read | small req/s | small p50 ms | small p99 ms | big req/s | big p50 ms | big p99 ms | p99 big/small | req/s big/small |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut pass = true;
    for (i, (what, _)) in paths.iter().enumerate() {
        let m = |db: usize, f: fn(&load::Run) -> f64| median(runs[i][db].iter().map(f).collect());
        let (s_rps, s50, s99) = (m(0, |r| r.rps), m(0, |r| r.p50_ms), m(0, |r| r.p99_ms));
        let (b_rps, b50, b99) = (m(1, |r| r.rps), m(1, |r| r.p50_ms), m(1, |r| r.p99_ms));
        pass &= b99 <= TARGET_P99_RATIO * s99;
        println!(
            "| `{what}` | {s_rps:.0} | {s50:.2} | {s99:.2} | {b_rps:.0} | {b50:.2} | {b99:.2} | {:.2} | {:.2} |",
            b99 / s99,
            b_rps / s_rps
        );
    }
    println!(
        "\ntarget (big p99 <= {TARGET_P99_RATIO} x small p99 for every read): {}",
        if pass { "PASS" } else { "MISS" }
    );
    Ok(())
}
