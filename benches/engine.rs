//! Operation-engine benchmark (`cargo bench --bench engine`; not a test).
//!
//! Against a real PostgreSQL (`DATABASE_URL`'s server, else a private temporary one), each
//! section on fresh databases:
//! - `throughput`: 1,000 queued NOOP operations of 10 sleep-free steps (distinct targets)
//!   drained by an in-process `WorkerPool` of 4 workers: operations/s and step commits/s.
//!   Run twice: with the production pool (`store::connect`) and, as a diagnostic, with a
//!   pool that skips sqlx's ping before every acquire.
//! - `latency`: one 10-step NOOP at a time on an idle pool: accepted-to-done, from the row
//!   (`end_time - create_time`) and by wall clock (enqueue return to the SUCCEEDED event).
//! - `pgbench`: TPC-B (`-c 4 -j 2 -T 15 -M prepared`, scale 4) on the same server; the
//!   ratio step commits/s / pgbench tps.
//! - `rss`: the real binary (`serve`, 8 workers) idle after /readyz + 3 s.
//! - `sql`: diagnostics: the per-step SQL of the runner replayed without the engine, to see
//!   what each round trip costs (current pattern vs. merged writes).
//!
//! `cargo bench --bench engine -- latency rss` runs only the named sections.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use futures::StreamExt;
use kineticd::devdb::PrivatePostgres;
use kineticd::ops::queue::{self, Enqueue};
use kineticd::ops::steps::StepState;
use kineticd::ops::workflows::noop::{self, NoopSpec};
use kineticd::ops::{self, Events, WorkerConfig, WorkerPool};
use kineticd::store::{self, Db, operations};
use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection};
use uuid::Uuid;

const TEAM: &str = "bench-team";
const OWNER: &str = "bench@example.com";
const OPS: usize = 1_000;
const STEPS: u32 = 10;
const WORKERS: usize = 4;
const LATENCY_RUNS: usize = 60;
const LATENCY_WARMUP: usize = 5;
const PGBENCH_SECONDS: u32 = 15;
/// Finished operations in the table for the history variant of the latency run.
const HISTORY: u32 = 50_000;

const TARGET_RATIO: f64 = 0.5;
const TARGET_MEDIAN_MS: f64 = 25.0;
const TARGET_RSS_MB: f64 = 60.0;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        // `cargo test --benches` runs this binary without `--bench`: nothing to check.
        println!("engine benchmark: run it with `cargo bench --bench engine`");
        return Ok(());
    }
    let only: Vec<String> = args.into_iter().filter(|a| !a.starts_with('-')).collect();
    let wants = |s: &str| only.is_empty() || only.iter().any(|o| o == s);
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let server = Server::start().await?;
        let r = run(&server, &wants).await;
        server.stop().await;
        r
    })
}

#[derive(Default)]
struct Report {
    lines: Vec<(String, String)>,
    checks: Vec<(String, bool)>,
}

impl Report {
    fn put(&mut self, key: &str, value: impl std::fmt::Display) {
        println!("  {key}={value}");
        self.lines.push((key.to_owned(), value.to_string()));
    }
}

async fn run(server: &Server, wants: &dyn Fn(&str) -> bool) -> Result<()> {
    let mut rep = Report::default();
    rep.put("engine.server", server.kind);
    rep.put("engine.cpus", std::thread::available_parallelism()?.get());

    let mut commits_per_sec = None;
    let mut latency_db = None;
    let mut whatif_commits_per_sec = None;
    let mut rss_mb = None;
    let mut tps = None;

    if wants("throughput") {
        println!("== throughput: {OPS} NOOP operations x {STEPS} steps, {WORKERS} workers");
        let t = throughput(server, PoolKind::Production, false).await?;
        rep.put("engine.ops_per_sec", format!("{:.1}", t.ops_per_sec()));
        rep.put(
            "engine.step_commits_per_sec",
            format!("{:.1}", t.steps_per_sec()),
        );
        rep.put("engine.throughput_wall_s", format!("{:.3}", t.wall_s));
        rep.put("engine.throughput_db_span_s", format!("{:.3}", t.db_span_s));
        let per_step = |cpu: f64| format!("{:.0}", cpu / (OPS as f64 * f64::from(STEPS)) * 1e6);
        rep.put("engine.cpu_us_per_step", per_step(t.engine_cpu_s));
        if let Some(c) = t.pg_cpu_s {
            rep.put("engine.pg_cpu_us_per_step", per_step(c));
        }
        commits_per_sec = Some(t.steps_per_sec());

        println!("== throughput (diagnostic): same, pool without the ping before each acquire");
        let t2 = throughput(server, PoolKind::NoPing, false).await?;
        rep.put(
            "engine.noping.step_commits_per_sec",
            format!("{:.1}", t2.steps_per_sec()),
        );

        println!("== throughput (what-if): claimable index on `end_time IS NULL`");
        let t3 = throughput(server, PoolKind::Production, true).await?;
        rep.put(
            "engine.claim_index.step_commits_per_sec",
            format!("{:.1}", t3.steps_per_sec()),
        );
        if let Some(c) = t3.pg_cpu_s {
            rep.put("engine.claim_index.pg_cpu_us_per_step", per_step(c));
        }

        println!("== throughput (what-if): claimable index and no ping");
        let t4 = throughput(server, PoolKind::NoPing, true).await?;
        rep.put(
            "engine.claim_index_noping.step_commits_per_sec",
            format!("{:.1}", t4.steps_per_sec()),
        );
        if let Some(c) = t4.pg_cpu_s {
            rep.put("engine.claim_index_noping.pg_cpu_us_per_step", per_step(c));
        }
        whatif_commits_per_sec = Some(t4.steps_per_sec());
    }

    if wants("latency") {
        println!("== latency: one {STEPS}-step NOOP at a time, idle pool of {WORKERS} workers");
        let l = latency(server, 0).await?;
        rep.put("engine.noop_latency_db_median_ms", format!("{:.2}", l.db.0));
        rep.put("engine.noop_latency_db_p90_ms", format!("{:.2}", l.db.1));
        rep.put(
            "engine.noop_latency_wall_median_ms",
            format!("{:.2}", l.wall.0),
        );
        rep.put(
            "engine.noop_latency_wall_p90_ms",
            format!("{:.2}", l.wall.1),
        );
        rep.put("engine.enqueue_median_ms", format!("{:.2}", l.enqueue.0));
        rep.put("engine.enqueue_p90_ms", format!("{:.2}", l.enqueue.1));
        rep.put(
            "engine.claim_delay_median_ms",
            format!("{:.2}", l.claim_delay.0),
        );
        latency_db = Some(l.db.0);

        println!("== latency (diagnostic): same, with {HISTORY} finished operations in the table");
        let h = latency(server, HISTORY).await?;
        rep.put(
            "engine.history.noop_latency_db_median_ms",
            format!("{:.2}", h.db.0),
        );
        rep.put(
            "engine.history.noop_latency_db_p90_ms",
            format!("{:.2}", h.db.1),
        );
        rep.put(
            "engine.history.claim_delay_median_ms",
            format!("{:.2}", h.claim_delay.0),
        );
    }

    if wants("pgbench") {
        println!("== pgbench: TPC-B scale 4, -c 4 -j 2 -T {PGBENCH_SECONDS} -M prepared");
        let b = pgbench(server).await?;
        rep.put("pgbench.tps", format!("{:.1}", b.tps));
        rep.put(
            "pgbench.client_cpu_us_per_tx",
            format!("{:.0}", b.client_us),
        );
        if let Some(c) = b.pg_us {
            rep.put("pgbench.pg_cpu_us_per_tx", format!("{c:.0}"));
        }
        tps = Some(b.tps);
    }

    if wants("rss") {
        println!("== rss: kineticd serve, 8 workers, idle");
        let (rss, anon) = idle_rss(server).await?;
        rep.put("engine.idle_rss_mb", format!("{rss:.1}"));
        rep.put("engine.idle_rss_anon_mb", format!("{anon:.1}"));
        rss_mb = Some(rss);
    }

    if wants("sql") {
        println!("== sql (diagnostic): per-step SQL replayed by {WORKERS} tasks, no engine");
        for p in Pattern::ALL {
            let (r, pg_us) = sql_pattern(server, p).await?;
            rep.put(
                &format!("sql.{}.steps_per_sec", p.name()),
                format!("{r:.1}"),
            );
            if let Some(c) = pg_us {
                rep.put(
                    &format!("sql.{}.pg_cpu_us_per_step", p.name()),
                    format!("{c:.0}"),
                );
            }
        }
        for (claimers, fix) in [(1, false), (WORKERS, false), (WORKERS, true)] {
            let (rate, pg_us) = claim_finish(server, claimers, fix).await?;
            let key = format!(
                "sql.claim_finish_{claimers}{}",
                if fix { "_claim_index" } else { "" }
            );
            rep.put(&format!("{key}.ops_per_sec"), format!("{rate:.1}"));
            if let Some(c) = pg_us {
                rep.put(&format!("{key}.pg_cpu_us_per_op"), format!("{c:.0}"));
            }
        }
    }

    let ratio = match (commits_per_sec, tps) {
        (Some(c), Some(t)) if t > 0.0 => {
            let r = c / t;
            rep.put(
                "engine.ratio_step_commits_to_pgbench_tps",
                format!("{r:.3}"),
            );
            Some(r)
        }
        _ => None,
    };
    if let (Some(c), Some(t)) = (whatif_commits_per_sec, tps)
        && t > 0.0
    {
        rep.put(
            "engine.claim_index_noping.ratio_to_pgbench_tps",
            format!("{:.3}", c / t),
        );
    }
    if let Some(r) = ratio {
        rep.checks
            .push((format!("ratio {r:.3} >= {TARGET_RATIO}"), r >= TARGET_RATIO));
    }
    if let Some(m) = latency_db {
        rep.checks.push((
            format!("single no-op median {m:.2} ms < {TARGET_MEDIAN_MS} ms"),
            m < TARGET_MEDIAN_MS,
        ));
    }
    if let Some(m) = rss_mb {
        rep.checks.push((
            format!("idle RSS {m:.1} MB < {TARGET_RSS_MB} MB"),
            m < TARGET_RSS_MB,
        ));
    }

    println!();
    println!("==================== kineticd engine benchmark ====================");
    for (k, v) in &rep.lines {
        println!("{k}={v}");
    }
    for (what, ok) in &rep.checks {
        println!("target {what}: {}", if *ok { "PASS" } else { "MISS" });
    }
    println!("====================================================================");
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The PostgreSQL server and scratch databases.

struct Server {
    /// Connection URL with `{db}` where the database name goes.
    template: String,
    private: Option<PrivatePostgres>,
    kind: &'static str,
}

impl Server {
    async fn start() -> Result<Server> {
        if let Ok(url) = std::env::var("DATABASE_URL")
            && !url.trim().is_empty()
        {
            let (base, query) = match url.split_once('?') {
                Some((b, q)) => (b.to_owned(), format!("?{q}")),
                None => (url.clone(), String::new()),
            };
            let cut = base
                .rfind('/')
                .context("DATABASE_URL has no database part")?;
            return Ok(Server {
                template: format!("{}/{{db}}{query}", &base[..cut]),
                private: None,
                kind: "DATABASE_URL",
            });
        }
        let (pg, kind) = if std::env::var_os("KBENCH_DURABLE").is_some() {
            // A durable private server (fsync and synchronous_commit on), like production.
            let dir = std::env::temp_dir().join(format!("kbench-pg-{}", std::process::id()));
            let pg = PrivatePostgres::start(&dir)
                .await
                .context("starting a durable private PostgreSQL")?;
            (pg, "private-durable (fsync=on, synchronous_commit=on)")
        } else {
            let pg = PrivatePostgres::start_temporary()
                .await
                .context("starting a private PostgreSQL (or set DATABASE_URL)")?;
            (pg, "private-temporary (fsync=off, synchronous_commit=off)")
        };
        Ok(Server {
            template: pg.url("kt_db_marker").replace("kt_db_marker", "{db}"),
            private: Some(pg),
            kind,
        })
    }

    fn url(&self, db: &str) -> String {
        self.template.replace("{db}", db)
    }

    async fn admin(&self) -> Result<PgConnection> {
        Ok(PgConnection::connect(&self.url("postgres")).await?)
    }

    /// A new empty database `kbench_<what>_<random>`.
    async fn create_db(&self, what: &str) -> Result<String> {
        let name = format!(
            "kbench_{what}_{}",
            &Uuid::new_v4().simple().to_string()[..12]
        );
        let mut admin = self.admin().await?;
        admin
            .execute(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .await?;
        admin.close().await?;
        Ok(name)
    }

    /// A new migrated database with the bench team.
    async fn create_kineticd_db(&self, what: &str) -> Result<String> {
        let name = self.create_db(what).await?;
        let db = store::connect(&self.url(&name), 2).await?;
        store::migrate(&db).await?;
        sqlx::query("INSERT INTO teams (team_id) VALUES ($1)")
            .bind(TEAM)
            .execute(&db)
            .await?;
        db.close().await;
        Ok(name)
    }

    async fn drop_db(&self, name: &str) {
        let r = async {
            let mut admin = self.admin().await?;
            admin
                .execute(AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                )))
                .await?;
            admin.close().await?;
            anyhow::Ok(())
        };
        if let Err(e) = r.await {
            eprintln!("warning: could not drop database {name}: {e:#}");
        }
    }

    /// Committed + rolled-back transactions of database `name` so far.
    async fn xacts(&self, name: &str) -> Result<i64> {
        let mut admin = self.admin().await?;
        let (commits, rollbacks): (i64, i64) = sqlx::query_as(
            "SELECT xact_commit::int8, xact_rollback::int8 FROM pg_stat_database WHERE datname = $1",
        )
        .bind(name)
        .fetch_one(&mut admin)
        .await?;
        admin.close().await?;
        if std::env::var_os("KBENCH_DEBUG").is_some() {
            println!("  [{name}: {commits} commits, {rollbacks} rollbacks]");
        }
        Ok(commits + rollbacks)
    }

    async fn stop(self) {
        if let Some(pg) = self.private {
            let durable = std::env::var_os("KBENCH_DURABLE").is_some();
            let dir = pg.data_dir().to_path_buf();
            if std::env::var_os("KBENCH_LOG_STATEMENTS").is_some() {
                let keep = std::env::temp_dir().join("kbench-server.log");
                if std::fs::copy(pg.log_path(), &keep).is_ok() {
                    println!("server log kept at {}", keep.display());
                }
            }
            if let Err(e) = pg.stop().await {
                eprintln!("warning: private PostgreSQL did not stop cleanly: {e}");
            } else if durable {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PoolKind {
    /// `store::connect`, as `kineticd serve` opens it (20 connections).
    Production,
    /// Same, with `test_before_acquire(false)`.
    NoPing,
}

async fn open_pool(url: &str, kind: PoolKind) -> Result<Db> {
    Ok(match kind {
        PoolKind::Production => store::connect(url, 20).await?,
        PoolKind::NoPing => {
            let opts: PgConnectOptions = url.parse()?;
            PgPoolOptions::new()
                .max_connections(20)
                .test_before_acquire(false)
                .connect_with(opts.application_name("kineticd"))
                .await?
        }
    })
}

fn noop_request(target: String) -> Enqueue {
    let spec = NoopSpec {
        steps: STEPS,
        ..NoopSpec::default()
    };
    Enqueue {
        op_type: noop::OP_TYPE.to_owned(),
        serial_key: target.clone(),
        target,
        team_id: TEAM.to_owned(),
        cluster_id: None,
        created_by: OWNER.to_owned(),
        input: serde_json::to_value(&spec).unwrap_or(Value::Null),
        plan: None,
        steps: spec.steps(),
        idempotency: None,
    }
}

fn worker_config() -> WorkerConfig {
    WorkerConfig {
        workers: WORKERS,
        ..WorkerConfig::default()
    }
}

// ---------------------------------------------------------------------------------------
// Throughput.

struct Throughput {
    wall_s: f64,
    db_span_s: f64,
    /// CPU seconds of this process (the engine) and of the PostgreSQL server during the run.
    engine_cpu_s: f64,
    pg_cpu_s: Option<f64>,
}

impl Throughput {
    fn ops_per_sec(&self) -> f64 {
        OPS as f64 / self.wall_s
    }
    fn steps_per_sec(&self) -> f64 {
        (OPS as f64 * f64::from(STEPS)) / self.wall_s
    }
}

/// The claim query filters on `end_time IS NULL`, but the `operations_claimable` index is
/// partial on `state IN (...)`, which the planner cannot match: this variant (a what-if,
/// not in the migrations) indexes exactly what the claim asks for.
const CLAIM_INDEX_FIX: &str = "DROP INDEX operations_claimable; \
     CREATE INDEX operations_claimable ON operations (create_time, id) WHERE end_time IS NULL";

async fn apply_claim_index_fix(url: &str) -> Result<()> {
    let mut c = PgConnection::connect(url).await?;
    c.execute(CLAIM_INDEX_FIX).await?;
    c.close().await?;
    Ok(())
}

async fn throughput(server: &Server, kind: PoolKind, claim_index: bool) -> Result<Throughput> {
    let name = server.create_kineticd_db("tp").await?;
    let url = server.url(&name);
    if claim_index {
        apply_claim_index_fix(&url).await?;
    }
    let r = throughput_on(server, &name, &url, kind).await;
    server.drop_db(&name).await;
    r
}

async fn throughput_on(
    server: &Server,
    name: &str,
    url: &str,
    kind: PoolKind,
) -> Result<Throughput> {
    // Enqueue on a pool of its own, closed before counting transactions.
    {
        let db = store::connect(url, 8).await?;
        let started = Instant::now();
        let results: Vec<_> = futures::stream::iter(0..OPS)
            .map(|i| {
                let db = db.clone();
                async move { queue::enqueue(&db, &noop_request(format!("bench/tp-{i}"))).await }
            })
            .buffer_unordered(8)
            .collect()
            .await;
        for r in results {
            r.map_err(|e| anyhow!("enqueue: {e}"))?;
        }
        println!(
            "  enqueued {OPS} operations in {:.2} s",
            started.elapsed().as_secs_f64()
        );
        db.close().await;
    }
    // Backends flush their statistics when they exit: let the enqueue pool's go first.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = server.xacts(name).await?;
    if std::env::var_os("KBENCH_LOG_STATEMENTS").is_some() {
        let mut admin = server.admin().await?;
        admin
            .execute(AssertSqlSafe(format!(
                "ALTER DATABASE {name} SET log_statement = 'all'"
            )))
            .await?;
        admin.close().await?;
        if let Some(pg) = &server.private {
            println!("  logging statements to {}", pg.log_path().display());
        }
    }

    let db = open_pool(url, kind).await?;
    let events = Events::start(url).await?;
    let mut mon = PgConnection::connect(url).await?;
    let mut mon_queries = 0i64;
    let started = Instant::now();
    let cpu0 = (self_cpu(), pg_cpu(server));
    let pool = WorkerPool::start(
        db.clone(),
        events.clone(),
        ops::registry(true),
        worker_config(),
    );
    let deadline = started + Duration::from_secs(600);
    loop {
        let left: i64 =
            sqlx::query_scalar("SELECT count(*) FROM operations WHERE end_time IS NULL")
                .fetch_one(&mut mon)
                .await?;
        mon_queries += 1;
        if left == 0 {
            break;
        }
        if Instant::now() > deadline {
            bail!("{left} operations still unfinished after 600 s");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let wall_s = started.elapsed().as_secs_f64();
    let engine_cpu_s = self_cpu() - cpu0.0;
    let pg_cpu_s = pg_cpu(server).zip(cpu0.1).map(|(a, b)| a - b);
    pool.shutdown(Duration::from_secs(10)).await;

    let (succeeded, span): (i64, f64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE state = 'SUCCEEDED'), \
                COALESCE(EXTRACT(EPOCH FROM max(end_time) - min(start_time))::float8, 0) \
         FROM operations",
    )
    .fetch_one(&mut mon)
    .await?;
    let effects: i64 = sqlx::query_scalar("SELECT count(*) FROM noop_effects")
        .fetch_one(&mut mon)
        .await?;
    mon_queries += 2;
    if succeeded != OPS as i64 || effects != OPS as i64 * i64::from(STEPS) {
        bail!(
            "expected {OPS} SUCCEEDED and {} effects, got {succeeded} and {effects}",
            OPS as u32 * STEPS
        );
    }
    mon.close().await?;
    db.close().await;
    drop(events);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = server.xacts(name).await?;
    let xacts = (after - before - mon_queries).max(0);
    {
        // Row-level activity on the queue table (HOT updates avoid index maintenance).
        let mut c = PgConnection::connect(url).await?;
        let (upd, hot, ins, vac, anl): (i64, i64, i64, i64, i64) = sqlx::query_as(
            "SELECT n_tup_upd, n_tup_hot_upd, n_tup_ins, autovacuum_count, autoanalyze_count \
             FROM pg_stat_user_tables WHERE relname = 'operations'",
        )
        .fetch_one(&mut c)
        .await?;
        c.close().await?;
        println!(
            "  operations table: {upd} updates ({hot} HOT, {:.0}%), {ins} inserts, \
             {vac} autovacuums, {anl} autoanalyzes",
            100.0 * hot as f64 / upd.max(1) as f64
        );
    }
    let t = Throughput {
        wall_s,
        db_span_s: span,
        engine_cpu_s,
        pg_cpu_s,
    };
    println!(
        "  CPU: engine process {:.2} s ({:.0} us/step), PostgreSQL {} over {:.2} s wall on {} CPUs",
        t.engine_cpu_s,
        t.engine_cpu_s / (OPS as f64 * f64::from(STEPS)) * 1e6,
        t.pg_cpu_s.map_or("n/a".into(), |c| format!(
            "{c:.2} s ({:.0} us/step)",
            c / (OPS as f64 * f64::from(STEPS)) * 1e6
        )),
        t.wall_s,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "  drained in {:.3} s (db span {:.3} s): {:.1} ops/s, {:.1} step commits/s, {} transactions \
         (incl. the LISTEN backend's notification reads)",
        t.wall_s,
        t.db_span_s,
        t.ops_per_sec(),
        t.steps_per_sec(),
        xacts
    );
    Ok(t)
}

// ---------------------------------------------------------------------------------------
// Latency of a single operation on an idle pool.

struct Latency {
    /// (median, p90) in milliseconds.
    db: (f64, f64),
    wall: (f64, f64),
    enqueue: (f64, f64),
    claim_delay: (f64, f64),
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn median_p90(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (percentile(&v, 0.5), percentile(&v, 0.9))
}

/// `history`: finished operations already in the table (production keeps 30 days).
async fn latency(server: &Server, history: u32) -> Result<Latency> {
    let name = server.create_kineticd_db("lat").await?;
    let url = server.url(&name);
    let r = async {
        if history > 0 {
            let mut c = PgConnection::connect(&url).await?;
            sqlx::query(
                "INSERT INTO operations (id, op_type, target, serial_key, team_id, created_by, \
                   state, steps, create_time, start_time, end_time) \
                 SELECT gen_random_uuid(), 'NOOP', 'old/' || i, 'old/' || i, $1, $2, 'SUCCEEDED', \
                   '[]', now() - interval '1 day' + i * interval '1 ms', now(), now() \
                 FROM generate_series(1, $3) AS i",
            )
            .bind(TEAM)
            .bind(OWNER)
            .bind(history as i32)
            .execute(&mut c)
            .await?;
            c.execute("ANALYZE operations").await?;
            c.close().await?;
        }
        latency_on(&url).await
    }
    .await;
    server.drop_db(&name).await;
    r
}

async fn latency_on(url: &str) -> Result<Latency> {
    let db = store::connect(url, 20).await?;
    let events = Events::start(url).await?;
    let pool = WorkerPool::start(
        db.clone(),
        events.clone(),
        ops::registry(true),
        worker_config(),
    );
    let mut listener = PgListener::connect(url).await?;
    listener.listen(operations::EVENTS_CHANNEL).await?;
    // Let the workers reach their idle wait.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut ids = Vec::new();
    let mut wall = Vec::new();
    let mut enq = Vec::new();
    for i in 0..LATENCY_WARMUP + LATENCY_RUNS {
        let t0 = Instant::now();
        let op = queue::enqueue(&db, &noop_request(format!("bench/lat-{i}")))
            .await
            .map_err(|e| anyhow!("enqueue: {e}"))?
            .op;
        let accepted = Instant::now();
        let done = format!("{}:SUCCEEDED", op.id);
        let failed = [format!("{}:FAILED", op.id), format!("{}:CANCELLED", op.id)];
        loop {
            let n = tokio::time::timeout(Duration::from_secs(30), listener.recv())
                .await
                .context("operation not done within 30 s")??;
            if n.payload() == done {
                break;
            }
            if failed.iter().any(|f| f == n.payload()) {
                bail!("operation {} ended {}", op.id, n.payload());
            }
        }
        let end = Instant::now();
        if i >= LATENCY_WARMUP {
            ids.push(op.id);
            wall.push((end - accepted).as_secs_f64() * 1e3);
            enq.push((accepted - t0).as_secs_f64() * 1e3);
        }
        // Idle again before the next one (workers back in their wait).
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    pool.shutdown(Duration::from_secs(10)).await;
    let rows: Vec<(f64, f64, String)> = sqlx::query_as(
        "SELECT EXTRACT(EPOCH FROM end_time - create_time)::float8 * 1000, \
                EXTRACT(EPOCH FROM start_time - create_time)::float8 * 1000, state \
         FROM operations WHERE id = ANY($1)",
    )
    .bind(&ids)
    .fetch_all(&db)
    .await?;
    if rows.len() != ids.len() || rows.iter().any(|r| r.2 != "SUCCEEDED") {
        bail!("not every latency operation SUCCEEDED");
    }
    // The stored steps are all DONE (a sanity check on what was measured).
    let steps: Vec<Value> = sqlx::query_scalar("SELECT steps FROM operations WHERE id = ANY($1)")
        .bind(&ids)
        .fetch_all(&db)
        .await?;
    for s in &steps {
        let s: Vec<kineticd::ops::steps::StepRecord> = serde_json::from_value(s.clone())?;
        if s.len() != STEPS as usize || s.iter().any(|s| s.state != StepState::Done) {
            bail!("a latency operation has unfinished steps");
        }
    }
    drop(listener);
    db.close().await;
    drop(events);
    let l = Latency {
        db: median_p90(rows.iter().map(|r| r.0).collect()),
        wall: median_p90(wall),
        enqueue: median_p90(enq),
        claim_delay: median_p90(rows.iter().map(|r| r.1).collect()),
    };
    println!(
        "  {LATENCY_RUNS} runs: accepted-to-done (db) median {:.2} ms p90 {:.2} ms; wall median {:.2} ms p90 {:.2} ms; \
         create-to-claim median {:.2} ms",
        l.db.0, l.db.1, l.wall.0, l.wall.1, l.claim_delay.0
    );
    Ok(l)
}

// ---------------------------------------------------------------------------------------
// pgbench on the same server.

fn pgbench_binary() -> Result<std::path::PathBuf> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join("pgbench");
            if dir.is_absolute() && p.is_file() {
                return Ok(p);
            }
        }
    }
    let root = std::path::Path::new(kineticd::devdb::DEFAULT_SEARCH_ROOT);
    let mut found: Vec<(Vec<u64>, std::path::PathBuf)> = std::fs::read_dir(root)
        .with_context(|| format!("pgbench not on PATH and {} unreadable", root.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let version = e
                .file_name()
                .to_str()?
                .split('.')
                .map(|p| {
                    p.chars()
                        .take_while(char::is_ascii_digit)
                        .collect::<String>()
                })
                .map(|d| d.parse().unwrap_or(0))
                .collect();
            let p = e.path().join("bin/pgbench");
            p.is_file().then_some((version, p))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p).ok_or_else(|| {
        anyhow!(
            "pgbench not found on PATH or under {}/*/bin",
            root.display()
        )
    })
}

struct PgBench {
    tps: f64,
    /// CPU microseconds per transaction: pgbench itself, and the server.
    client_us: f64,
    pg_us: Option<f64>,
}

async fn pgbench(server: &Server) -> Result<PgBench> {
    let bin = pgbench_binary()?;
    let name = server.create_db("pgbench").await?;
    let url = server.url(&name);
    let r = async {
        let init = tokio::process::Command::new(&bin)
            .args(["-i", "-s", "4", "-q", &url])
            .output()
            .await
            .with_context(|| format!("running {}", bin.display()))?;
        if !init.status.success() {
            bail!(
                "pgbench -i failed: {}",
                String::from_utf8_lossy(&init.stderr)
            );
        }
        let secs = PGBENCH_SECONDS.to_string();
        let cpu0 = (children_cpu(), pg_cpu(server));
        let out = tokio::process::Command::new(&bin)
            .args(["-c", "4", "-j", "2", "-T", &secs, "-M", "prepared", &url])
            .output()
            .await?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            bail!(
                "pgbench failed: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let tps = stdout
            .lines()
            .find_map(|l| {
                let rest = l.trim().strip_prefix("tps = ")?;
                rest.split_whitespace().next()?.parse::<f64>().ok()
            })
            .ok_or_else(|| anyhow!("no `tps = ` line in pgbench output:\n{stdout}"))?;
        let client_cpu = children_cpu() - cpu0.0;
        let pg = pg_cpu(server).zip(cpu0.1).map(|(a, b)| a - b);
        let txs = tps * f64::from(PGBENCH_SECONDS);
        println!(
            "  {}: {tps:.1} tps; CPU: pgbench {client_cpu:.2} s ({:.0} us/tx), PostgreSQL {}",
            bin.display(),
            client_cpu / txs * 1e6,
            pg.map_or("n/a".into(), |c| format!(
                "{c:.2} s ({:.0} us/tx)",
                c / txs * 1e6
            ))
        );
        Ok(PgBench {
            tps,
            client_us: client_cpu / txs * 1e6,
            pg_us: pg.map(|c| c / txs * 1e6),
        })
    }
    .await;
    server.drop_db(&name).await;
    r
}

// ---------------------------------------------------------------------------------------
// Idle RSS of the real binary.

struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            // SAFETY: kill(2) on our own child, not reaped yet (its pid cannot be reused).
            unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGKILL) };
        }
        let _ = self.0.wait();
    }
}

fn status_kb(pid: u32, field: &str) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .ok_or_else(|| anyhow!("{field} not in /proc/{pid}/status"))?;
    line.split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("bad {field} line: {line}"))
}

async fn idle_rss(server: &Server) -> Result<(f64, f64)> {
    let name = server.create_kineticd_db("rss").await?;
    let r = idle_rss_on(&server.url(&name)).await;
    server.drop_db(&name).await;
    r
}

async fn idle_rss_on(url: &str) -> Result<(f64, f64)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut p = Process(
        Command::new(env!("CARGO_BIN_EXE_kineticd"))
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .env("DATABASE_URL", url)
            .env("KINETIC_AUTH", "dev")
            .env("KINETIC_TEST_WORKFLOWS", "true")
            .env("KINETIC_WORKERS", "8")
            .env("KINETIC_LOG_FORMAT", "json")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting kineticd")?,
    );
    let http = kineticd::app::http_client()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = p.0.try_wait()? {
            bail!("kineticd exited before ready: {status}");
        }
        if let Ok(r) = http
            .get(format!("http://127.0.0.1:{port}/readyz"))
            .send()
            .await
            && r.status().is_success()
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("kineticd not ready within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pid = p.0.id();
    let rss = status_kb(pid, "VmRSS:")? / 1024.0;
    let anon = status_kb(pid, "RssAnon:")? / 1024.0;
    let threads = status_kb(pid, "Threads:")?;
    println!(
        "  pid {pid}: VmRSS {rss:.1} MB (anonymous {anon:.1} MB), {threads} threads, binary {}",
        env!("CARGO_BIN_EXE_kineticd")
    );
    // SAFETY: our own live child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    let stop = Instant::now() + Duration::from_secs(10);
    while p.0.try_wait()?.is_none() && Instant::now() < stop {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(p);
    Ok((rss, anon))
}

// ---------------------------------------------------------------------------------------
// CPU accounting (Linux /proc): where the time goes, client vs. server.

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// (ppid, own CPU seconds, reaped children's CPU seconds) of a process.
fn proc_cpu(pid: u32) -> Option<(u32, f64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command (which may contain spaces) start at field 3 (state).
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
    let ppid = f.get(1)?.parse().ok()?;
    let ticks = clock_ticks();
    // utime, stime, cutime, cstime are fields 14-17, i.e. indexes 11-14 here.
    Some((
        ppid,
        (num(11)? + num(12)?) / ticks,
        (num(13)? + num(14)?) / ticks,
    ))
}

/// CPU seconds used so far by this process (all threads).
fn self_cpu() -> f64 {
    proc_cpu(std::process::id()).map_or(0.0, |c| c.1)
}

/// CPU seconds used so far by the private server: the postmaster, its exited backends
/// (reaped, so counted in its children's time) and its live backends.
fn pg_cpu(server: &Server) -> Option<f64> {
    let pm = server.private.as_ref()?.pid();
    let (_, own, reaped) = proc_cpu(pm)?;
    let mut total = own + reaped;
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some((ppid, cpu, _)) = proc_cpu(pid)
            && ppid == pm
        {
            total += cpu;
        }
    }
    Some(total)
}

/// CPU seconds of this process's exited, waited-for children (e.g. pgbench).
fn children_cpu() -> f64 {
    // SAFETY: getrusage writes into the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

// ---------------------------------------------------------------------------------------
// Diagnostics: the runner's per-step SQL without the engine around it.

#[derive(Clone, Copy, Debug)]
enum Pattern {
    /// What `runner.rs` does per step today: `save_steps` (step RUNNING) on the pool, then
    /// BEGIN; `save_steps_in` (DONE); effect insert; COMMIT. Pool pings before each acquire.
    Current,
    /// The same statements on a pool with `test_before_acquire(false)`.
    CurrentNoPing,
    /// One write per step: the DONE transaction also marks the next step RUNNING (no
    /// separate RUNNING save), no ping.
    Merged,
    /// One statement per step (steps update + effect insert + notify in one CTE), no ping.
    OneStatement,
    /// [`Pattern::OneStatement`] sending one step (`jsonb_set`) instead of the whole array.
    OneStatementJsonbSet,
    /// [`Pattern::OneStatement`] without `pg_notify` (what NOTIFY costs per commit).
    OneStatementNoNotify,
    /// [`Pattern::OneStatement`] writing a tiny `steps` value (what the 3 KB JSON costs).
    OneStatementSmallJson,
    /// `SELECT 1` in autocommit: the round-trip floor of this machine.
    Select1,
}

impl Pattern {
    const ALL: [Pattern; 8] = [
        Pattern::Current,
        Pattern::CurrentNoPing,
        Pattern::Merged,
        Pattern::OneStatement,
        Pattern::OneStatementJsonbSet,
        Pattern::OneStatementNoNotify,
        Pattern::OneStatementSmallJson,
        Pattern::Select1,
    ];

    fn name(self) -> &'static str {
        match self {
            Pattern::Current => "current",
            Pattern::CurrentNoPing => "current_noping",
            Pattern::Merged => "merged",
            Pattern::OneStatement => "one_statement",
            Pattern::OneStatementJsonbSet => "one_statement_jsonb_set",
            Pattern::OneStatementNoNotify => "one_statement_no_notify",
            Pattern::OneStatementSmallJson => "one_statement_small_json",
            Pattern::Select1 => "select_1",
        }
    }
}

const SQL_STEPS_PER_TASK: usize = 2_500;

/// Steps per second and the server's CPU microseconds per step.
async fn sql_pattern(server: &Server, p: Pattern) -> Result<(f64, Option<f64>)> {
    let name = server.create_kineticd_db("sql").await?;
    let url = server.url(&name);
    let r = sql_pattern_on(server, &url, p).await;
    server.drop_db(&name).await;
    r
}

async fn sql_pattern_on(server: &Server, url: &str, p: Pattern) -> Result<(f64, Option<f64>)> {
    let kind = match p {
        Pattern::Current => PoolKind::Production,
        _ => PoolKind::NoPing,
    };
    let db = Arc::new(open_pool(url, kind).await?);
    // One RUNNING operation per task (generation 1), as after a claim.
    let mut ids = Vec::new();
    for i in 0..WORKERS {
        let op = queue::enqueue(&db, &noop_request(format!("bench/sql-{i}")))
            .await
            .map_err(|e| anyhow!("enqueue: {e}"))?
            .op;
        sqlx::query("UPDATE operations SET state = 'RUNNING', generation = 1 WHERE id = $1")
            .bind(op.id)
            .execute(&*db)
            .await?;
        ids.push(op.id);
    }
    let steps_json: Value = {
        let mut s = NoopSpec {
            steps: STEPS,
            ..NoopSpec::default()
        }
        .steps();
        for (i, st) in s.iter_mut().enumerate() {
            st.state = StepState::Done;
            st.attempts = 1;
            st.start_time = Some(chrono::Utc::now());
            st.end_time = Some(chrono::Utc::now());
            st.result = Some(serde_json::json!({ "chain": i + 1 }));
        }
        serde_json::to_value(&s)?
    };
    let one_statement = format!(
        "WITH u AS (UPDATE operations SET steps = $3, update_time = now() \
                    WHERE id = $1 AND generation = $2 AND end_time IS NULL RETURNING id, state), \
              e AS (INSERT INTO noop_effects (operation_id, step_id, generation) \
                    SELECT id, $4, $2 FROM u) \
         SELECT pg_notify('{}', u.id::text || ':' || u.state) FROM u",
        operations::EVENTS_CHANNEL
    );
    let one_statement_no_notify =
        "WITH u AS (UPDATE operations SET steps = $3, update_time = now() \
                    WHERE id = $1 AND generation = $2 AND end_time IS NULL RETURNING id, state) \
         INSERT INTO noop_effects (operation_id, step_id, generation) SELECT id, $4, $2 FROM u"
            .to_owned();
    let one_statement_jsonb_set = format!(
        "WITH u AS (UPDATE operations SET steps = jsonb_set(steps, ARRAY[$5::text], $3), \
                      update_time = now() \
                    WHERE id = $1 AND generation = $2 AND end_time IS NULL RETURNING id, state), \
              e AS (INSERT INTO noop_effects (operation_id, step_id, generation) \
                    SELECT id, $4, $2 FROM u) \
         SELECT pg_notify('{}', u.id::text || ':' || u.state) FROM u",
        operations::EVENTS_CHANNEL
    );
    for id in &ids {
        sqlx::query("UPDATE operations SET steps = $2 WHERE id = $1")
            .bind(id)
            .bind(&steps_json)
            .execute(&*db)
            .await?;
    }
    println!(
        "  steps JSON: {} bytes as text",
        serde_json::to_string(&steps_json)?.len()
    );
    // A kineticd process always LISTENs; its backend reads every notification.
    let mut listener = PgListener::connect(url).await?;
    listener.listen(operations::EVENTS_CHANNEL).await?;
    let drain = tokio::spawn(async move { while listener.recv().await.is_ok() {} });
    let started = Instant::now();
    let pg0 = pg_cpu(server);
    let mut tasks = tokio::task::JoinSet::new();
    for id in ids {
        let db = db.clone();
        let steps = steps_json.clone();
        let one = match p {
            Pattern::OneStatementNoNotify => one_statement_no_notify.clone(),
            Pattern::OneStatementJsonbSet => one_statement_jsonb_set.clone(),
            _ => one_statement.clone(),
        };
        tasks.spawn(async move {
            for n in 0..SQL_STEPS_PER_TASK {
                let step = format!("step-{}", n % STEPS as usize);
                match p {
                    Pattern::Current | Pattern::CurrentNoPing => {
                        operations::save_steps(&*db, id, 1, &steps).await?;
                        let mut tx = db.begin().await?;
                        operations::save_steps_in(&mut tx, id, 1, &steps).await?;
                        operations::record_noop_effect(&mut tx, id, &step, 1).await?;
                        tx.commit().await?;
                    }
                    Pattern::Merged => {
                        let mut tx = db.begin().await?;
                        operations::save_steps_in(&mut tx, id, 1, &steps).await?;
                        operations::record_noop_effect(&mut tx, id, &step, 1).await?;
                        tx.commit().await?;
                    }
                    Pattern::OneStatement | Pattern::OneStatementNoNotify => {
                        sqlx::query(AssertSqlSafe(one.clone()))
                            .bind(id)
                            .bind(1i64)
                            .bind(&steps)
                            .bind(&step)
                            .execute(&*db)
                            .await?;
                    }
                    Pattern::OneStatementSmallJson => {
                        sqlx::query(AssertSqlSafe(one.clone()))
                            .bind(id)
                            .bind(1i64)
                            .bind(serde_json::json!([{ "state": "DONE", "n": n }]))
                            .bind(&step)
                            .execute(&*db)
                            .await?;
                    }
                    Pattern::OneStatementJsonbSet => {
                        let i = n % STEPS as usize;
                        sqlx::query(AssertSqlSafe(one.clone()))
                            .bind(id)
                            .bind(1i64)
                            .bind(&steps[i])
                            .bind(&step)
                            .bind(i.to_string())
                            .execute(&*db)
                            .await?;
                    }
                    Pattern::Select1 => {
                        sqlx::query("SELECT 1").execute(&*db).await?;
                    }
                }
            }
            anyhow::Ok(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    let secs = started.elapsed().as_secs_f64();
    let steps = (WORKERS * SQL_STEPS_PER_TASK) as f64;
    let pg_us = pg_cpu(server).zip(pg0).map(|(a, b)| (a - b) / steps * 1e6);
    drain.abort();
    let rate = steps / secs;
    println!(
        "  {:?}: {rate:.1} steps/s ({secs:.2} s), PostgreSQL CPU {} us/step",
        p,
        pg_us.map_or("n/a".into(), |c| format!("{c:.0}"))
    );
    db.close().await;
    Ok((rate, pg_us))
}

/// Per-operation overhead: claim then finish, by `claimers` tasks, for 1,000 queued
/// operations.
async fn claim_finish(
    server: &Server,
    claimers: usize,
    claim_index: bool,
) -> Result<(f64, Option<f64>)> {
    let name = server.create_kineticd_db("claim").await?;
    let url = server.url(&name);
    let r = async {
        if claim_index {
            apply_claim_index_fix(&url).await?;
        }
        let db = open_pool(&url, PoolKind::Production).await?;
        futures::stream::iter(0..OPS)
            .map(|i| {
                let db = db.clone();
                async move { queue::enqueue(&db, &noop_request(format!("bench/cl-{i}"))).await }
            })
            .buffer_unordered(8)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow!("enqueue: {e}"))?;
        let deadlines = ops::registry(true).deadlines();
        let started = Instant::now();
        let pg0 = pg_cpu(server);
        let mut tasks = tokio::task::JoinSet::new();
        for w in 0..claimers {
            let db = db.clone();
            let deadlines = deadlines.clone();
            tasks.spawn(async move {
                let mut n = 0usize;
                while let Some(op) =
                    operations::claim(&db, &format!("bench/{w}"), 30.0, &deadlines).await?
                {
                    let f = operations::Finish {
                        state: "SUCCEEDED",
                        steps: &op.steps,
                        response: None,
                        error: None,
                    };
                    operations::finish(&db, op.id, op.generation, f).await?;
                    n += 1;
                }
                anyhow::Ok(n)
            });
        }
        let mut done = 0;
        while let Some(r) = tasks.join_next().await {
            done += r??;
        }
        let secs = started.elapsed().as_secs_f64();
        let pg_us = pg_cpu(server)
            .zip(pg0)
            .map(|(a, b)| (a - b) / done as f64 * 1e6);
        db.close().await;
        let rate = done as f64 / secs;
        println!(
            "  claim+finish by {claimers} (claim index fix: {claim_index}): {done} operations, \
             {rate:.1}/s, PostgreSQL CPU {} us/operation",
            pg_us.map_or("n/a".into(), |c| format!("{c:.0}"))
        );
        anyhow::Ok((rate, pg_us))
    }
    .await;
    server.drop_db(&name).await;
    r
}
