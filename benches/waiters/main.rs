//! Waiters benchmark (`cargo bench --bench waiters`; not a test): issue 15, benchmark 3.
//!
//! On the PostgreSQL at `DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432`) it
//! creates a fresh database and starts the real `kineticd serve` as a separate process
//! (the API server under measurement: `KINETIC_DB_MAX_CONNECTIONS` = `KBENCH_POOL`
//! (10), no workers, production limits except the per-team cap on unfinished
//! operations). Through its API it creates a team with `KBENCH_CALLERS` (100) VIEWER
//! members and `KBENCH_OPS` (200) NOOP operations (`KBENCH_STEPS` = 3 steps of
//! `KBENCH_STEP_MS` = 50 ms, each on its own target), then parks `KBENCH_WAITS` (1,000)
//! `:wait?timeout=60s` long-polls and `KBENCH_WATCHES` (200) `:watch` streams on them,
//! spread evenly over the operations and the callers, each on its own connection,
//! 100 at a time. Once all are parked it starts a second `kineticd serve` with
//! `KBENCH_WORKERS` (8) workers, as another replica would be, which runs the operations;
//! their changes reach the API server through PostgreSQL's LISTEN/NOTIFY only.
//! It prints the wake delays (see [`clients`]), the errors, the API server's memory
//! (`VmRSS` before the waiters, with all of them parked, the largest sampled every
//! 50 ms, and `VmHWM` at the end) and its database connections while they wait.
//!
//! Invariant: the soft open-files limit is raised (setrlimit, up to the hard limit) to
//! hold the 1,200 connections on each side; the database is dropped at the end.

mod clients;
mod process;
#[path = "../support/serve.rs"]
mod serve;
#[path = "../support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use sqlx::{Connection, Executor, PgConnection};

use clients::Seen;
use serve::Serve;
use support::{PgServer, env_or};

const TEAM: &str = "waiters";
const OWNER: &str = "owner@example.com";
const TARGET_MS: f64 = 100.0;
const TARGET_RSS_MIB: f64 = 200.0;

struct Knobs {
    waits: usize,
    watches: usize,
    ops: usize,
    callers: usize,
    pool: u32,
    workers: u32,
    steps: u32,
    step_ms: u64,
}

fn main() -> Result<()> {
    if support::start("waiters").is_none() {
        return Ok(());
    }
    let k = Knobs {
        waits: env_or("KBENCH_WAITS", 1000usize)?,
        watches: env_or("KBENCH_WATCHES", 200usize)?,
        ops: env_or("KBENCH_OPS", 200usize)?.max(1),
        callers: env_or("KBENCH_CALLERS", 100usize)?.max(1),
        pool: env_or("KBENCH_POOL", 10u32)?.max(2),
        workers: env_or("KBENCH_WORKERS", 8u32)?.max(1),
        steps: env_or("KBENCH_STEPS", 3u32)?.clamp(1, 100),
        step_ms: env_or("KBENCH_STEP_MS", 50u64)?,
    };
    let want = 2 * (k.waits + k.watches) as u64 + 1024;
    let (before, after) = process::raise_nofile(want)?;
    if after < want {
        bail!("open-files limit {after} < {want} and the hard limit allows no more");
    }
    let pg = PgServer::from_env()?;
    let db_name = PgServer::scratch_name("kbench_waiters");
    let url = pg.url(&db_name);
    support::runtime()?.block_on(async {
        let mut admin = PgConnection::connect(&pg.admin).await?;
        admin
            .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db_name}")))
            .await?;
        println!(
            "waiters: open-files soft limit {before} -> {after}; load average {} at start",
            support::loadavg()
        );
        let r = run(&k, &url).await;
        support::drop_databases(&mut admin, &[&db_name]).await;
        r
    })
}

async fn post(http: &reqwest::Client, s: &Serve, path: &str, body: Value) -> Result<Value> {
    loop {
        let r = http
            .post(s.url(path))
            .header("x-kinetic-user", OWNER)
            .json(&body)
            .send()
            .await?;
        let status = r.status();
        let body: Value = r.json().await?;
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            // The owner's own rate limit while seeding: wait as told.
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        anyhow::ensure!(status.is_success(), "POST {path}: {status} {body}");
        return Ok(body);
    }
}

/// The team, its VIEWER callers and the operations (names `operations/{id}`).
async fn seed(
    k: &Knobs,
    http: &reqwest::Client,
    api: &Serve,
    db: &kineticd::store::Db,
) -> Result<(Vec<String>, Vec<String>)> {
    post(
        http,
        api,
        "/v1/teams",
        json!({"teamId": TEAM, "projects": []}),
    )
    .await?;
    let callers: Vec<String> = (0..k.callers)
        .map(|i| format!("caller-{i}@example.com"))
        .collect();
    let mut tx = db.begin().await?;
    for c in &callers {
        kineticd::store::teams::upsert_member(&mut tx, TEAM, c, "VIEWER").await?;
    }
    tx.commit().await?;
    let mut ops = Vec::with_capacity(k.ops);
    for i in 0..k.ops {
        let op = post(
            http,
            api,
            "/v1/testing/noopOperations",
            json!({"team": TEAM, "target": format!("bench/target-{i}"),
                   "steps": k.steps, "stepMillis": k.step_ms}),
        )
        .await?;
        ops.push(op["name"].as_str().context("operation name")?.to_owned());
    }
    Ok((callers, ops))
}

/// Database sessions other than this one, and how many of them run a statement.
async fn sessions(db: &kineticd::store::Db) -> Result<(i64, i64)> {
    Ok(sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE state = 'active') FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_one(db)
    .await?)
}

fn pct(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

fn row(what: &str, mut v: Vec<f64>, errors: usize) -> String {
    v.sort_by(f64::total_cmp);
    let over = v.iter().filter(|d| **d > TARGET_MS).count();
    format!(
        "| {what} | {} | {errors} | {:.1} | {:.1} | {:.1} | {over} |",
        v.len(),
        pct(&v, 0.5),
        pct(&v, 0.99),
        v.last().copied().unwrap_or(f64::NAN)
    )
}

async fn run(k: &Knobs, url: &str) -> Result<()> {
    kineticd::auth::install_tls_provider();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .tcp_nodelay(true)
        .build()?;
    let api_env = vec![
        ("KINETIC_WORKERS", "0".to_owned()),
        ("KINETIC_DB_MAX_CONNECTIONS", k.pool.to_string()),
        ("KINETIC_TEST_WORKFLOWS", "true".to_owned()),
        ("KINETIC_MAX_OPERATIONS_PER_TEAM", "0".to_owned()),
        ("RUST_LOG", "warn".to_owned()),
    ];
    let api = Serve::start("waiters-api", url, &api_env, None, &http).await?;
    let db = kineticd::store::connect(url, 1).await?;
    let (callers, ops) = seed(k, &http, &api, &db).await?;
    let (rss_before, _) = api.memory_mib()?;
    let fds_before = api.open_fds();

    // Memory sampler.
    let peak_kib = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (peak, pid) = (peak_kib.clone(), api.pid());
        tokio::spawn(async move {
            loop {
                if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status"))
                    && let Some(kib) = s
                        .lines()
                        .find_map(|l| l.strip_prefix("VmRSS:"))
                        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
                {
                    peak.fetch_max(kib, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };

    // Park the waiters, 100 at a time.
    let started = Instant::now();
    let (opened_tx, mut opened_rx) = tokio::sync::mpsc::channel(k.watches.max(1));
    let mut tasks = tokio::task::JoinSet::new();
    let total = k.waits + k.watches;
    for i in 0..total {
        let user = callers[i % callers.len()].clone();
        if i < k.waits {
            let op = &ops[i % ops.len()];
            let url = api.url(&format!("/v1/{op}:wait?timeout=60s"));
            tasks.spawn(clients::wait(http.clone(), url, user));
        } else {
            let op = &ops[(i - k.waits) % ops.len()];
            let url = api.url(&format!("/v1/{op}:watch"));
            tasks.spawn(clients::watch(http.clone(), url, user, opened_tx.clone()));
        }
        if (i + 1) % 100 == 0 || i + 1 == total {
            let deadline = Instant::now() + Duration::from_secs(60);
            while api.open_fds() < fds_before + i + 1 {
                if Instant::now() > deadline {
                    bail!(
                        "only {} of {} connections accepted",
                        api.open_fds() - fds_before,
                        i + 1
                    );
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    drop(opened_tx);
    for _ in 0..k.watches {
        opened_rx.recv().await;
    }
    // Every `:wait` is parked once the API server runs no statement for 300 ms.
    let mut quiet = 0;
    while quiet < 6 {
        quiet = if sessions(&db).await?.1 == 0 {
            quiet + 1
        } else {
            0
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let parked_in = started.elapsed();
    let (rss_parked, _) = api.memory_mib()?;
    let (db_sessions, _) = sessions(&db).await?;
    let fds_parked = api.open_fds();
    if std::env::var_os("KBENCH_DEBUG_MEMORY").is_some() {
        let pid = api.pid();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        for l in status
            .lines()
            .filter(|l| l.starts_with("Threads") || l.starts_with("Rss"))
        {
            println!("  {l}");
        }
        let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps"))?;
        let mut maps: Vec<(u64, String)> = Vec::new();
        let mut head = String::new();
        for l in smaps.lines() {
            if let Some(v) = l.strip_prefix("Rss:") {
                let kib = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                maps.push((kib, head.clone()));
            } else if l.contains('-') && !l.contains(':')
                || l.split_whitespace().count() >= 5
                    && l.contains('-')
                    && l.chars().next().is_some_and(|c| c.is_ascii_hexdigit())
            {
                head = l.to_owned();
            }
        }
        maps.sort();
        println!("  mappings: {}; largest by RSS:", maps.len());
        for (kib, h) in maps.iter().rev().take(8) {
            println!("    {kib} kB {h}");
        }
    }
    println!(
        "parked {} :wait and {} :watch in {:.1} s: API server RSS {rss_parked:.1} MiB \
         (before {rss_before:.1}), {fds_parked} open files, {db_sessions} database sessions",
        k.waits,
        k.watches,
        parked_in.as_secs_f64()
    );

    // Another replica runs the operations.
    let worker_env = vec![
        ("KINETIC_WORKERS", k.workers.to_string()),
        ("KINETIC_DB_MAX_CONNECTIONS", "10".to_owned()),
        ("KINETIC_TEST_WORKFLOWS", "true".to_owned()),
        ("RUST_LOG", "warn".to_owned()),
    ];
    let run_started = Instant::now();
    let _workers = Serve::start("waiters-workers", url, &worker_env, None, &http).await?;
    let (mut waits, mut watches) = (Seen::default(), Seen::default());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
    while let Some(r) = tokio::time::timeout_at(deadline, tasks.join_next())
        .await
        .context("waiters not all answered within 300 s")?
    {
        let s = r?;
        let into = if s.watch { &mut watches } else { &mut waits };
        into.done_ms.extend(s.done_ms);
        into.progress_ms.extend(s.progress_ms);
        into.already_done += s.already_done;
        into.errors.extend(s.errors);
    }
    let ran_in = run_started.elapsed();
    sampler.abort();
    let (rss_end, hwm) = api.memory_mib()?;
    let peak = peak_kib.load(Ordering::Relaxed) as f64 / 1024.0;
    let load = support::loadavg();

    println!();
    println!(
        "{} operations ({} steps x {} ms) run by {} workers in another process in {:.1} s; \
         load average {load}",
        ops.len(),
        k.steps,
        k.step_ms,
        k.workers,
        ran_in.as_secs_f64()
    );
    println!();
    println!("| wake | count | errors | p50 ms | p99 ms | max ms | over {TARGET_MS:.0} ms |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let over = |v: &[f64]| v.iter().filter(|d| **d > TARGET_MS).count();
    let late = over(&waits.done_ms) + over(&watches.done_ms) + over(&watches.progress_ms);
    let woken = waits.done_ms.len() + watches.done_ms.len();
    let errors = waits.errors.len() + watches.errors.len();
    let already = waits.already_done + watches.already_done;
    println!(
        "{}",
        row("`:wait` answer (done)", waits.done_ms, waits.errors.len())
    );
    println!(
        "{}",
        row(
            "`:watch` `done` event",
            watches.done_ms,
            watches.errors.len()
        )
    );
    println!(
        "{}",
        row("`:watch` `progress` event", watches.progress_ms, 0)
    );
    println!();
    println!(
        "API server memory: VmRSS {rss_before:.1} MiB before the waiters, {rss_parked:.1} MiB \
         with all parked, largest sampled {peak:.1} MiB, {rss_end:.1} MiB at the end; \
         VmHWM {hwm:.1} MiB"
    );
    if already > 0 {
        println!("note: {already} answers were for operations already final when asked");
    }
    for e in waits.errors.iter().chain(&watches.errors).take(10) {
        println!("error: {e}");
    }
    let expected = k.waits + k.watches;
    let pass = errors == 0 && late == 0 && woken == expected && hwm < TARGET_RSS_MIB;
    println!(
        "target (no errors, all {expected} woken, every wake within {TARGET_MS:.0} ms, \
         RSS under {TARGET_RSS_MIB:.0} MiB): {}",
        if pass { "PASS" } else { "MISS" }
    );
    Ok(())
}
