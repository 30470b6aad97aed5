//! Concurrency and round-trip benchmark (`cargo bench --bench concurrency`; not a test).
//!
//! Everything runs as real processes against one durable private PostgreSQL (fsync on,
//! `max_connections=300`, started in a temporary folder for the run and removed after),
//! each section on a fresh database:
//! - `roundtrip` ([`roundtrip`]): a one-step NOOP, `POST /v1/testing/noopOperations`
//!   then `:wait`, one at a time against `kineticd serve --dev` (`KBENCH_RUNS`, default
//!   200): median and p90 of the client's wall time; beside it pgbench's latency of a
//!   one-commit transaction on the same server, before and after.
//! - `up` ([`ups`]): `kineticd serve --dev` with its defaults (the built-in simulator at
//!   its default speed, 100), one `up` alone, then waves of `up`s sent at once
//!   (`KBENCH_WAVES`, default `25,50,100,200`): the wave's wall time (first `createTime`
//!   to last `endTime`) divided by the single `up`'s, with RSS and database sessions.
//! - `replicas`: `KBENCH_REPLICAS` (4) `kineticd serve` replicas with their defaults on
//!   the one database and one standalone `kineticd sim`, one `up` alone, then
//!   `KBENCH_REPLICA_UPS` (1,000) at once, spread over the replicas; the simulator runs
//!   at `KBENCH_SIM_SPEED` (default 100).
//!
//! `cargo bench --bench concurrency -- roundtrip up` runs only the named sections.
//! Without `--bench` (as `cargo test --benches` runs it) the binary does nothing.

#[allow(dead_code)]
#[path = "../support/app.rs"]
mod app_support;
#[path = "../support/serve.rs"]
mod serve;
#[path = "../support/mod.rs"]
mod support;

mod procs;
mod roundtrip;
mod ups;

use anyhow::{Context, Result};
use kineticd::devdb::PrivatePostgres;
use serde_json::Value;
use support::{OWNER, ZONE, env_or};

const SIM_SPEED: f64 = 100.0;

fn main() -> Result<()> {
    let Some(sections) = support::start("concurrency") else {
        return Ok(());
    };
    kineticd::auth::install_tls_provider();
    let dir = std::env::temp_dir().join(format!("kbench-concurrency-{}", std::process::id()));
    let r = support::runtime()?.block_on(async {
        let pg = PrivatePostgres::start(&dir)
            .await
            .map_err(|e| anyhow::anyhow!("starting a durable private PostgreSQL: {e}"))?;
        let r = run(&pg, &sections).await;
        let _ = pg.stop().await;
        r
    });
    let _ = std::fs::remove_dir_all(&dir);
    r
}

async fn run(pg: &PrivatePostgres, sections: &support::Sections) -> Result<()> {
    let mut lines: Vec<String> = vec![format!("load average at start: {}", support::loadavg())];
    if sections.wants("roundtrip") {
        let runs: usize = env_or("KBENCH_RUNS", 200)?;
        pg.ensure_database("kbench_rt").await?;
        pg.ensure_database("kbench_pgb").await?;
        println!("== roundtrip: {runs} one-step NOOPs, POST then :wait, one at a time");
        let r = roundtrip::run(&pg.url("kbench_rt"), &pg.url("kbench_pgb"), runs).await?;
        let commit = r.commit_ms.map_or("?".to_owned(), |c| format!("{c:.2} ms"));
        let line = format!(
            "roundtrip: median {:.2} ms, p90 {:.2} ms (the POST alone: median {:.2} ms; in the \
             row: created to claimed {:.2} ms, claimed to ended {:.2} ms); one durable commit \
             (pgbench -c 1, one-row UPDATE): {commit}",
            r.median_ms, r.p90_ms, r.post_median_ms, r.claim_median_ms, r.run_median_ms
        );
        println!("  {line}");
        lines.push(line);
    }
    if sections.wants("up") {
        let waves = env_list("KBENCH_WAVES", &[25, 50, 100, 200])?;
        pg.ensure_database("kbench_up").await?;
        let http = reqwest::Client::new();
        let url = pg.url("kbench_up");
        let mut env = vec![
            ("KINETIC_SIM_LISTEN", "127.0.0.1:0".to_owned()),
            ("RUST_LOG", "warn".to_owned()),
        ];
        // Operations at once per replica, when not the default (KINETIC_WORKERS).
        if let Ok(w) = std::env::var("KBENCH_WORKERS") {
            env.push(("KINETIC_WORKERS", w));
        }
        let serve = serve::Serve::start_with("up", &["--dev"], &url, &env, None, &http).await?;
        let fleet = ups::Fleet {
            apis: vec![serve.url("")],
            pids: vec![serve.pid()],
            sim_pid: None,
        };
        lines.extend(waves_on(&fleet, &http, &url, "one", &waves).await?);
    }
    if sections.wants("replicas") {
        let replicas: usize = env_or("KBENCH_REPLICAS", 4)?;
        let n: usize = env_or("KBENCH_REPLICA_UPS", 1_000)?;
        pg.ensure_database("kbench_replicas").await?;
        let url = pg.url("kbench_replicas");
        // The first replica migrates; the others find the schema in place.
        // The standalone simulator's speed (`KBENCH_SIM_SPEED`, default 100 as in
        // `serve --dev`): at 10, an `up` takes 10x longer, nearer Google's own minutes.
        let speed: f64 = env_or("KBENCH_SIM_SPEED", SIM_SPEED)?;
        let sim = procs::SimProcess::start(speed)?;
        let mut env: Vec<(&str, String)> = sim
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        env.push(("RUST_LOG", "warn".to_owned()));
        let http = reqwest::Client::new();
        let mut servers = Vec::new();
        for i in 0..replicas {
            let name = format!("replica-{i}");
            servers.push(serve::Serve::start(&name, &url, &env, None, &http).await?);
        }
        let fleet = ups::Fleet {
            apis: servers.iter().map(|s| s.url("")).collect(),
            pids: servers.iter().map(|s| s.pid()).collect(),
            sim_pid: Some(sim.pid()),
        };
        println!("== replicas: {replicas} x kineticd serve, one kineticd sim at speed {speed}");
        lines.push(format!("rep: {replicas} replicas, simulator speed {speed}"));
        lines.extend(waves_on(&fleet, &http, &url, "rep", &[n]).await?);
    }
    println!();
    println!("==================== kineticd concurrency benchmark ====================");
    for l in &lines {
        println!("{l}");
    }
    println!("=========================================================================");
    Ok(())
}

/// One `up` alone, then each wave of `waves`; a line per wave.
async fn waves_on(
    fleet: &ups::Fleet,
    http: &reqwest::Client,
    url: &str,
    tag: &str,
    waves: &[usize],
) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    let single = ups::wave(fleet, http, url, 1, &format!("{tag}1")).await?;
    let line = format!(
        "{tag}: 1 up alone: {:.2} s (accept {:.0} ms); replicas' RSS {:.1} MiB",
        single.wall_s, single.accept_median_ms, single.peak_rss_total_mib
    );
    println!("  {line}");
    lines.push(line);
    for &n in waves {
        let w = ups::wave(fleet, http, url, n, &format!("{tag}{n}")).await?;
        let line = format!(
            "{tag}: {n} ups at once on {} replica(s): wall {:.2} s = {:.2}x one up; each: median \
             {:.2} s, max {:.2} s; accept median {:.0} ms, max {:.0} ms; RSS {:.1} -> peak {:.1} \
             MiB all replicas (largest one {:.1}); peak DB sessions {} (busy {}); CPU s: \
             replicas {:.1}, separate sim {:.1}; :wait answered 503 {} times",
            fleet.apis.len(),
            w.wall_s,
            w.wall_s / single.wall_s,
            w.op_median_s,
            w.op_max_s,
            w.accept_median_ms,
            w.accept_max_ms,
            w.idle_rss_total_mib,
            w.peak_rss_total_mib,
            w.peak_rss_mib,
            w.peak_db_sessions,
            w.peak_db_busy,
            w.replicas_cpu_s,
            w.sim_cpu_s,
            w.unavailable,
        );
        println!("  {line}");
        lines.push(line);
        debug_assert_eq!(w.n, n);
    }
    Ok(lines)
}

/// A comma-separated list of numbers from `key`, or `default`.
fn env_list(key: &str, default: &[usize]) -> Result<Vec<usize>> {
    match std::env::var(key) {
        Ok(v) if !v.trim().is_empty() => v
            .split(',')
            .map(|s| s.trim().parse().with_context(|| format!("{key}={v:?}")))
            .collect(),
        _ => Ok(default.to_vec()),
    }
}

/// `POST path` with `body` (none when null) as `user`: the JSON answer.
async fn call(
    http: &reqwest::Client,
    api: &str,
    user: &str,
    path: &str,
    body: Value,
) -> Result<Value> {
    app_support::call_api(http, api, user, reqwest::Method::POST, path, body).await
}
