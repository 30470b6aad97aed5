//! API read benchmark beside PostgreSQL (`cargo bench --bench api_reads`; not a test):
//! issue 15, benchmark 1.
//!
//! On the PostgreSQL at `DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432`,
//! the machine's own server) it creates a fresh database, starts the production router
//! in this process (as `serve --dev`: dev identity header, per-request tracing span
//! with logs at `warn`), seeds one team (4 projects x 50 clusters x 3 node pools, 1,000
//! queued operations) through the store, and then, `KBENCH_REPS` times (default 3), runs
//! the in-repo load generator ([`load`]: `KBENCH_CONNS` = 64 keep-alive connections for
//! `KBENCH_SECS` = 10 s) against `GET /v1/operations/{id}`, `GET /v1/projects/{p}/zones/
//! {z}/clusters/{c}` and `GET /v1/clusters?pageSize=50`, and `pgbench -S -c 64 -j 2 -T 10`
//! on a pgbench database of the same server. It prints the medians as a Markdown table
//! with the ratio API ÷ pgbench, and the SQL statements each read sends ([`count`]).
//! `KBENCH_POOL` (default 20, as `serve`) sets the database pool size.
//! `KBENCH_OUTSIDE=1` runs the server as its own `kineticd serve` process instead, in
//! four variants (default logs or `RUST_LOG=warn`, unpinned or pinned away from the load
//! generator), loaded by `wrk` when it is on PATH, with CPU time per request of each
//! party ([`outside`]).
//!
//! Invariant: the caller is a VIEWER member (not an admin), so every read pays the same
//! authorisation as a real member's; both databases are dropped at the end.

#[path = "../support/app.rs"]
#[allow(dead_code)]
mod app_support;
#[path = "../support/baseline.rs"]
mod baseline;
mod count;
mod load;
mod outside;
mod pgbench;
#[path = "../support/records.rs"]
mod records;
#[path = "../support/serve.rs"]
mod serve;
mod store_only;
#[path = "../support/mod.rs"]
mod support;

use anyhow::Result;
use sqlx::{Connection, Executor, PgConnection};
use support::{PgServer, env_or, median};

use baseline::{CLUSTERS_PER_PROJECT, OPERATIONS, POOLS_PER_CLUSTER, PROJECTS, READER, ZONE};

const TARGET_RATIO: f64 = 1.0 / 3.0;
const TARGET_P99_MS: f64 = 10.0;

struct Knobs {
    outside: bool,
    reps: usize,
    secs: u32,
    conns: usize,
    pool: u32,
}

fn main() -> Result<()> {
    if support::bench_args("api_reads").is_none() {
        return Ok(());
    }
    count::init();
    let knobs = Knobs {
        outside: env_or("KBENCH_OUTSIDE", 0u8)? != 0,
        reps: env_or("KBENCH_REPS", 3usize)?.max(1),
        secs: env_or("KBENCH_SECS", 10u32)?.max(1),
        conns: env_or("KBENCH_CONNS", 64usize)?.max(1),
        pool: env_or("KBENCH_POOL", 20u32)?.max(2),
    };
    let pg = PgServer::from_env()?;
    let [api_db, pg_db] = PgServer::scratch_names(["kbench_api", "kbench_pgbench"]);
    support::runtime()?.block_on(async {
        let mut admin = PgConnection::connect(&pg.admin).await?;
        for d in [&api_db, &pg_db] {
            admin
                .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {d}")))
                .await?;
        }
        let (api_url, pg_url) = (pg.url(&api_db), pg.url(&pg_db));
        let r = if knobs.outside {
            outside::bench(&knobs, &api_url, &pg_url).await
        } else {
            run(&knobs, &api_url, &pg_url).await
        };
        support::drop_databases(&mut admin, &[&api_db, &pg_db]).await;
        r
    })
}

async fn run(k: &Knobs, api_url: &str, pg_url: &str) -> Result<()> {
    let app = app_support::start_at(api_url, k.pool, 0.0, |_| {}).await?;
    let t = baseline::fill(&app.db).await?;
    let (op, project, cluster) = (t.operation, t.project, t.cluster);
    pgbench::init(pg_url).await?;
    let reads = [
        (
            "GET /v1/operations/{id}",
            format!("{}/v1/operations/{op}", app.api),
        ),
        (
            "GET /v1/projects/{p}/zones/{z}/clusters/{c}",
            format!(
                "{}/v1/projects/{project}/zones/{ZONE}/clusters/{cluster}",
                app.api
            ),
        ),
        (
            "GET /v1/clusters?pageSize=50",
            format!("{}/v1/clusters?pageSize=50", app.api),
        ),
    ];
    let cpus = std::thread::available_parallelism()?.get();
    println!(
        "api_reads: {} reps x {} s, {} connections, DB pool {}, {cpus} CPUs; \
         seeded {} clusters, {} pools, {OPERATIONS} operations",
        k.reps,
        k.secs,
        k.conns,
        k.pool,
        PROJECTS * CLUSTERS_PER_PROJECT,
        PROJECTS * CLUSTERS_PER_PROJECT * POOLS_PER_CLUSTER
    );

    // SQL statements per read, sequentially, 20 requests each.
    let mut per_read = Vec::new();
    for (_, url) in &reads {
        let http = reqwest::Client::new();
        let (r, n) = count::counting(async {
            for _ in 0..20 {
                let r = http
                    .get(url)
                    .header("x-kinetic-user", READER)
                    .send()
                    .await?;
                anyhow::ensure!(r.status().is_success(), "GET {url}: {}", r.status());
                r.bytes().await?;
            }
            Ok(())
        })
        .await;
        r?;
        per_read.push(n as f64 / 20.0);
    }

    let mut api: Vec<Vec<load::Run>> = vec![Vec::new(); reads.len()];
    let mut tps = Vec::new();
    for rep in 0..k.reps {
        for (i, (what, url)) in reads.iter().enumerate() {
            let (url, conns, secs) = (url.clone(), k.conns, f64::from(k.secs));
            let r = tokio::task::spawn_blocking(move || load::run(&url, READER, conns, secs, 2))
                .await??;
            println!(
                "  rep {}: {what}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms",
                rep + 1,
                r.rps,
                r.p50_ms,
                r.p99_ms
            );
            api[i].push(r);
        }
        let t = pgbench::select_only(pg_url, k.conns, k.secs).await?;
        println!(
            "  rep {}: pgbench -S -c {} -j 2 -T {}: {t:.0} tps",
            rep + 1,
            k.conns,
            k.secs
        );
        tps.push(t);
    }

    let pg = median(tps);
    println!();
    println!("| read | SQL statements | req/s | p50 ms | p99 ms | ratio to pgbench -S |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut pass = true;
    for (i, (what, _)) in reads.iter().enumerate() {
        let rps = median(api[i].iter().map(|r| r.rps).collect());
        let p50 = median(api[i].iter().map(|r| r.p50_ms).collect());
        let p99 = median(api[i].iter().map(|r| r.p99_ms).collect());
        let ratio = rps / pg;
        pass &= ratio >= TARGET_RATIO && p99 < TARGET_P99_MS;
        println!(
            "| `{what}` | {} | {rps:.0} | {p50:.2} | {p99:.2} | {ratio:.3} |",
            per_read[i]
        );
    }
    println!(
        "| `pgbench -S -c {} -j 2 -T {}` | 1 | {pg:.0} tps | | | 1 |",
        k.conns, k.secs
    );
    println!();
    println!(
        "target (every read >= 1/3 of pgbench -S, p99 < {TARGET_P99_MS} ms): {}",
        if pass { "PASS" } else { "MISS" }
    );
    Ok(())
}
