//! Operation-engine benchmark (`cargo bench --bench engine`; not a test).
//!
//! Runs against a private PostgreSQL started for the run (temporary and fast: `fsync=off`,
//! `synchronous_commit=off`; set `KBENCH_DURABLE=1` for a durable one), each section on a
//! fresh database:
//! - `throughput` ([`throughput`]): 1,000 queued NOOP operations of 10 sleep-free steps
//!   (distinct targets) drained by an in-process `WorkerPool` of 4 workers: operations/s,
//!   step commits/s, transactions per step, and CPU per step (this process vs. the server).
//! - `latency` ([`latency`]): one 10-step NOOP at a time on an idle pool, accepted to done
//!   (median, p90), from the row (`end_time - create_time`) and by wall clock (enqueue
//!   return to the SUCCEEDED notification); again with 50,000 finished operations in the
//!   table (the claim must not scan history).
//! - `pgbench` ([`pgbench`]): TPC-B (`-c 4 -j 2 -T 15 -M prepared`, scale 4) on the same
//!   server; the ratio step commits/s ÷ pgbench tps, and CPU per transaction.
//! - `rss` ([`rss`]): the real binary (`serve`, 8 workers) idle after /readyz + 3 s.
//!
//! The CPU figures ([`cpu`]) explain the ratio: an engine step and a TPC-B transaction
//! are each one commit, but cost the server and the client different amounts of CPU.
//! Sections also report the CPUs other processes kept busy meanwhile (`others_cpus`):
//! figures taken while it is well above 0 are not comparable.
//!
//! `cargo bench --bench engine -- latency rss` runs only the named sections. Without
//! `--bench` (as `cargo test --benches` runs it) the binary does nothing.

#[path = "../support/mod.rs"]
mod support;

mod cpu;
mod latency;
mod pgbench;
mod rss;
mod server;
mod throughput;

use std::fmt::Display;
use std::sync::Arc;

use anyhow::Result;
use kineticd::cli::dev::simulated_cloud;
use kineticd::ops::queue::{self, Enqueue};
use kineticd::ops::workflows::noop::{self, NoopSpec};
use kineticd::ops::{self, Events, WorkerConfig, WorkerPool};
use kineticd::store::Db;

use server::Server;
use support::{OWNER, TEAM};

/// Operations in the throughput run, and steps per NOOP operation.
const OPS: usize = 1_000;
const STEPS: u32 = 10;
const WORKERS: usize = 4;

const TARGET_RATIO: f64 = 0.5;
const TARGET_MEDIAN_MS: f64 = 25.0;
const TARGET_RSS_MB: f64 = 60.0;

fn main() -> Result<()> {
    let Some(sections) = support::start("engine") else {
        return Ok(());
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let server = Server::start().await?;
        let r = run(&server, &sections).await;
        server.stop().await;
        r
    })
}

/// The figures, printed as they come and again together at the end.
#[derive(Default)]
struct Report {
    lines: Vec<(String, String)>,
    checks: Vec<(String, bool)>,
}

impl Report {
    fn put(&mut self, key: &str, value: impl Display) {
        println!("  {key}={value}");
        self.lines.push((key.to_owned(), value.to_string()));
    }

    /// A figure with `decimals` digits after the point.
    fn put_num(&mut self, key: &str, value: f64, decimals: usize) {
        self.put(key, format!("{value:.decimals$}"));
    }

    fn check(&mut self, what: String, ok: bool) {
        self.checks.push((what, ok));
    }

    fn print(&self) {
        println!();
        println!("==================== kineticd engine benchmark ====================");
        for (k, v) in &self.lines {
            println!("{k}={v}");
        }
        for (what, ok) in &self.checks {
            println!("target {what}: {}", if *ok { "PASS" } else { "MISS" });
        }
        println!("====================================================================");
    }
}

async fn run(server: &Server, sections: &support::Sections) -> Result<()> {
    let mut rep = Report::default();
    rep.put("engine.server", server.kind());
    rep.put("engine.cpus", std::thread::available_parallelism()?.get());

    let mut commits_per_sec = None;
    let mut tps = None;

    if sections.wants("throughput") {
        println!("== throughput: {OPS} NOOP operations x {STEPS} steps, {WORKERS} workers");
        let t = throughput::run(server).await?;
        rep.put_num("engine.ops_per_sec", t.ops_per_sec(), 1);
        rep.put_num("engine.step_commits_per_sec", t.steps_per_sec(), 1);
        rep.put_num("engine.throughput_wall_s", t.wall_s, 3);
        rep.put_num("engine.xacts_per_step", t.xacts_per_step(), 2);
        rep.put_num("engine.client_cpu_us_per_step", t.per_step_us(t.cpu.own), 0);
        if let Some(c) = t.cpu.server {
            rep.put_num("engine.pg_cpu_us_per_step", t.per_step_us(c), 0);
        }
        put_others(
            &mut rep,
            "engine.others_cpus_during_throughput",
            t.others_cpus(),
        );
        commits_per_sec = Some(t.steps_per_sec());
    }

    if sections.wants("latency") {
        println!("== latency: one {STEPS}-step NOOP at a time, idle pool of {WORKERS} workers");
        let l = latency::run(server, 0).await?;
        rep.put_num("engine.noop_latency_db_median_ms", l.db.0, 2);
        rep.put_num("engine.noop_latency_db_p90_ms", l.db.1, 2);
        rep.put_num("engine.noop_latency_wall_median_ms", l.wall.0, 2);
        rep.put_num("engine.noop_latency_wall_p90_ms", l.wall.1, 2);
        rep.put_num("engine.enqueue_median_ms", l.enqueue.0, 2);
        rep.put_num("engine.claim_delay_median_ms", l.claim_delay.0, 2);
        put_others(&mut rep, "engine.others_cpus_during_latency", l.others_cpus);
        rep.check(
            format!(
                "single no-op median {:.2} ms < {TARGET_MEDIAN_MS} ms",
                l.db.0
            ),
            l.db.0 < TARGET_MEDIAN_MS,
        );

        let history = latency::HISTORY;
        println!("== latency: same, with {history} finished operations in the table");
        let h = latency::run(server, history).await?;
        rep.put_num("engine.history.noop_latency_db_median_ms", h.db.0, 2);
        rep.put_num("engine.history.noop_latency_db_p90_ms", h.db.1, 2);
        rep.put_num("engine.history.claim_delay_median_ms", h.claim_delay.0, 2);
    }

    if sections.wants("pgbench") {
        println!(
            "== pgbench: TPC-B scale 4, -c 4 -j 2 -T {} -M prepared",
            pgbench::SECONDS
        );
        let b = pgbench::run(server).await?;
        rep.put_num("pgbench.tps", b.tps, 1);
        rep.put_num("pgbench.client_cpu_us_per_tx", b.client_us, 0);
        if let Some(c) = b.pg_us {
            rep.put_num("pgbench.pg_cpu_us_per_tx", c, 0);
        }
        put_others(&mut rep, "pgbench.others_cpus", b.others_cpus);
        tps = Some(b.tps);
    }

    if let (Some(c), Some(t)) = (commits_per_sec, tps)
        && t > 0.0
    {
        let r = c / t;
        rep.put_num("engine.ratio_step_commits_to_pgbench_tps", r, 3);
        rep.check(format!("ratio {r:.3} >= {TARGET_RATIO}"), r >= TARGET_RATIO);
    }

    if sections.wants("rss") {
        println!("== rss: kineticd serve, 8 workers, idle");
        let r = rss::run(server).await?;
        rep.put_num("engine.idle_rss_mb", r.rss_mb, 1);
        rep.put_num("engine.idle_rss_anon_mb", r.anon_mb, 1);
        rep.check(
            format!("idle RSS {:.1} MB < {TARGET_RSS_MB} MB", r.rss_mb),
            r.rss_mb < TARGET_RSS_MB,
        );
    }

    rep.print();
    Ok(())
}

/// CPUs kept busy by other processes during a section (0 on a quiet machine).
fn put_others(rep: &mut Report, key: &str, cpus: Option<f64>) {
    if let Some(c) = cpus {
        rep.put_num(key, c, 2);
    }
}

/// A NOOP operation of [`STEPS`] sleep-free steps on `target`.
fn noop_request(target: String) -> Enqueue {
    let spec = NoopSpec {
        steps: STEPS,
        ..NoopSpec::default()
    };
    Enqueue {
        op_type: kineticd::domain::OperationType::Noop,
        serial_key: target.clone(),
        target,
        team_id: TEAM.to_owned(),
        cluster_id: None,
        created_by: OWNER.to_owned(),
        input: queue::input_of::<noop::Noop>(&spec).expect("a NOOP input serializes"),
        plan: None,
        steps: spec.steps(),
        idempotency: None,
    }
}

/// An in-process pool of [`WORKERS`] workers on `db`, its cloud a simulator address that
/// nothing listens on (NOOP steps never call it).
fn start_pool(db: &Db, events: &Arc<Events>) -> Result<WorkerPool> {
    let cloud = simulated_cloud("http://127.0.0.1:9", kineticd::app::http_client()?)?;
    let cfg = WorkerConfig {
        workers: WORKERS,
        ..WorkerConfig::default()
    };
    Ok(WorkerPool::start(
        db.clone(),
        events.clone(),
        ops::registry(db, &cloud, true),
        cfg,
    ))
}
