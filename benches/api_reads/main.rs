//! API read benchmark beside PostgreSQL (`cargo bench --bench api_reads`; not a test):
//! issue 15 benchmark 1, and issue 26 item 6 (reads of real operations).
//!
//! On the PostgreSQL at `DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432`,
//! the machine's own server) it creates a fresh database, starts the production router
//! in this process (as `serve --dev`: dev identity header, per-request tracing span
//! with logs at `warn`) with the built-in simulator, runs real operations to SUCCEEDED
//! with the production workers ([`seed`]: `up` of a gpu-l4 cluster, a failover pool pair
//! added, a drill of the pair), seeds the baseline (one team, 4 projects x 50 clusters x
//! 3 node pools, 1,000 queued NOOP operations), and then, `KBENCH_REPS` times (default
//! 3), runs the in-repo load generator ([`load`]: `KBENCH_CONNS` = 64 keep-alive
//! connections for `KBENCH_SECS` = 8 s) against `GET /v1/operations/{id}` of each real
//! operation and of a queued NOOP, and `pgbench -S -c 64 -j 2 -T 8` on a pgbench database
//! of the same server. It prints medians as a Markdown table ([`report`]) with the ratio
//! API / pgbench, p99, the CPU microseconds per request of kineticd (this process less
//! the generator's threads) and of PostgreSQL (postmaster and backends, [`cpu`]), the SQL
//! statements each read sends ([`count`]), and the targets' verdicts.
//! `KBENCH_CLUSTERS=1` adds `GET` of a cluster and of a cluster page; `KBENCH_POOL`
//! (default 20, as `serve`) sets the database pool size.
//! `KBENCH_OUTSIDE=1` runs the server as its own `kineticd serve` process instead,
//! loaded by `wrk` when it is on PATH ([`outside`]), with `KBENCH_VARIANTS=all` for its
//! four variants (logs, pinning) and `KBENCH_STORE=1` for the store functions alone.
//! The default run takes about 3 minutes.
//!
//! Invariant: the caller is a VIEWER member (not an admin), so every read pays the same
//! authorisation as a real member's; both databases are dropped at the end.

#[path = "../support/app.rs"]
#[allow(dead_code)]
mod app_support;
#[path = "../support/baseline.rs"]
mod baseline;
mod count;
mod cpu;
mod load;
mod outside;
mod pgbench;
#[path = "../support/records.rs"]
mod records;
mod report;
mod seed;
#[path = "../support/serve.rs"]
mod serve;
mod store_only;
#[path = "../support/mod.rs"]
mod support;

use anyhow::Result;
use sqlx::{Connection, Executor, PgConnection};
use support::{PgServer, env_or};

use baseline::{READER, ZONE};
use report::{Figures, Row};

struct Knobs {
    outside: bool,
    reps: usize,
    secs: u32,
    conns: usize,
    pool: u32,
    clusters: bool,
    all_variants: bool,
    store: bool,
}

fn main() -> Result<()> {
    if support::bench_args("api_reads").is_none() {
        return Ok(());
    }
    count::init();
    let knobs = Knobs {
        outside: env_or("KBENCH_OUTSIDE", 0u8)? != 0,
        reps: env_or("KBENCH_REPS", 3usize)?.max(1),
        secs: env_or("KBENCH_SECS", 8u32)?.max(1),
        conns: env_or("KBENCH_CONNS", 64usize)?.max(1),
        pool: env_or("KBENCH_POOL", 20u32)?.max(2),
        clusters: env_or("KBENCH_CLUSTERS", 0u8)? != 0,
        all_variants: std::env::var("KBENCH_VARIANTS").is_ok_and(|v| v.trim() == "all"),
        store: env_or("KBENCH_STORE", 0u8)? != 0,
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

/// One read the bench loads.
pub struct Read {
    pub label: String,
    /// The path after the API's address.
    pub path: String,
    pub about: String,
    /// Its store function, for the store-only rows.
    pub store: store_only::Read,
    /// Whether the targets apply (the operation reads).
    pub targeted: bool,
}

/// The operation reads of `s`, and with `clusters` the cluster reads.
pub fn reads(s: &seed::Seeded, clusters: bool) -> Result<Vec<Read>> {
    let mut out = Vec::new();
    for op in &s.ops {
        out.push(Read {
            label: format!("GET /v1/operations/{{id}}: {}", op.label),
            path: format!("/v1/operations/{}", op.id),
            about: op.about.clone(),
            store: store_only::Read::Operation(op.id.parse()?),
            targeted: true,
        });
    }
    if clusters {
        let (project, cluster) = (&s.project, &s.cluster);
        out.push(Read {
            label: "GET /v1/projects/{p}/zones/{z}/clusters/{c}".into(),
            path: format!("/v1/projects/{project}/zones/{ZONE}/clusters/{cluster}"),
            about: "a cluster with 3 pools".into(),
            store: store_only::Read::Cluster,
            targeted: false,
        });
        out.push(Read {
            label: "GET /v1/clusters?pageSize=50".into(),
            path: "/v1/clusters?pageSize=50".into(),
            about: "50 clusters, 150 pools".into(),
            store: store_only::Read::ClusterPage,
            targeted: false,
        });
    }
    Ok(out)
}

async fn run(k: &Knobs, api_url: &str, pg_url: &str) -> Result<()> {
    let app = app_support::start_at(api_url, k.pool, 0.0, |_| {}).await?;
    let seeded = seed::fill(&app).await?;
    pgbench::init(pg_url).await?;
    let watch = cpu::Watch {
        postmaster: cpu::postmaster_pid(&app.db).await?,
        server: None,
    };
    let reads = reads(&seeded, k.clusters)?;
    let cpus = std::thread::available_parallelism()?.get();
    println!(
        "api_reads (server in this process): {} reps x {} s, {} connections, DB pool {}, \
         {cpus} CPUs; load average {}",
        k.reps,
        k.secs,
        k.conns,
        k.pool,
        support::loadavg()
    );

    // SQL statements per read, sequentially, 20 requests each.
    let mut per_read = Vec::new();
    for r in &reads {
        let url = format!("{}{}", app.api, r.path);
        let http = reqwest::Client::new();
        let (res, n) = count::counting(async {
            for _ in 0..20 {
                let r = http
                    .get(&url)
                    .header("x-kinetic-user", READER)
                    .send()
                    .await?;
                anyhow::ensure!(r.status().is_success(), "GET {url}: {}", r.status());
                r.bytes().await?;
            }
            Ok(())
        })
        .await;
        res?;
        per_read.push(n as f64 / 20.0);
    }

    let mut api: Vec<Vec<Figures>> = vec![Vec::new(); reads.len()];
    let mut pg = Vec::new();
    for rep in 1..=k.reps {
        for (i, r) in reads.iter().enumerate() {
            let (url, conns, secs) = (format!("{}{}", app.api, r.path), k.conns, f64::from(k.secs));
            let (run, before, after) = tokio::task::spawn_blocking(move || {
                load::run_sampled(&url, READER, conns, secs, 2, || cpu::Sample::take(watch))
            })
            .await??;
            let f = Figures::in_process(&run, after.since(before));
            report::progress(rep, &r.label, &f);
            api[i].push(f);
        }
        let f = report::pgbench(pg_url, k.conns, k.secs, watch.postmaster).await?;
        report::progress_pgbench(rep, &f);
        pg.push(f);
    }
    let rows: Vec<Row<'_>> = reads
        .iter()
        .enumerate()
        .map(|(i, r)| Row {
            label: &r.label,
            about: &r.about,
            statements: Some(per_read[i]),
            runs: &api[i],
            targeted: r.targeted,
        })
        .collect();
    report::table(&rows, &pg, k.conns, k.secs);
    Ok(())
}
