//! Throughput: [`OPS`] queued NOOP operations of [`STEPS`] sleep-free steps, each on its
//! own target, drained by an in-process `WorkerPool` of [`WORKERS`](crate::WORKERS)
//! workers on the production pool (`store::connect`, 20 connections, as `kineticd serve`
//! opens it).
//!
//! A step's completion, its NOOP effect and the start of the next step are one statement,
//! so a drained operation costs 13 write transactions: a claim, the save that starts its
//! first step, [`STEPS`] step commits and a finish.

use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use futures::StreamExt;
use kineticd::ops::{Events, queue};
use kineticd::store::{self, operations};
use sqlx::{Connection, PgConnection};

use crate::cpu::Sample;
use crate::server::Server;
use crate::{OPS, STEPS, noop_request, start_pool};

const DRAIN_TIMEOUT: Duration = Duration::from_secs(600);

pub struct Throughput {
    /// From the pool's start to the last operation seen finished (10 ms polls).
    pub wall_s: f64,
    /// Transactions of the bench database during the drain, monitoring excluded.
    pub xacts: i64,
    /// CPU seconds used during the drain: `own` is this process (the engine), `server`
    /// PostgreSQL.
    pub cpu: Sample,
}

impl Throughput {
    fn steps() -> f64 {
        OPS as f64 * f64::from(STEPS)
    }
    pub fn ops_per_sec(&self) -> f64 {
        OPS as f64 / self.wall_s
    }
    pub fn steps_per_sec(&self) -> f64 {
        Self::steps() / self.wall_s
    }
    pub fn xacts_per_step(&self) -> f64 {
        self.xacts as f64 / Self::steps()
    }
    /// CPU microseconds per step, from CPU seconds of the whole run.
    pub fn per_step_us(&self, cpu_s: f64) -> f64 {
        cpu_s / Self::steps() * 1e6
    }
    /// CPUs kept busy by other processes during the drain.
    pub fn others_cpus(&self) -> Option<f64> {
        self.cpu.others_cpus(self.wall_s)
    }
}

pub async fn run(server: &Server) -> Result<Throughput> {
    let name = server.create_kineticd_db("tp").await?;
    let url = server.url(&name);
    enqueue_all(&url).await?;
    // Backends report their statistics when they exit: let the enqueue pool's go first.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = server.xacts(&name).await?;

    let db = store::connect(&url, 20).await?;
    let events = Events::start(&url).await?;
    let mut mon = PgConnection::connect(&url).await?;
    let mut mon_xacts = 0i64;
    let started = Instant::now();
    let cpu0 = Sample::now(server);
    let pool = start_pool(&db, &events)?;
    loop {
        let left: i64 = operations::counts_by_state(&mut mon)
            .await?
            .iter()
            .map(|(_, n)| n)
            .sum();
        mon_xacts += 1;
        if left == 0 {
            break;
        }
        if started.elapsed() > DRAIN_TIMEOUT {
            bail!("{left} operations still unfinished after {DRAIN_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let wall_s = started.elapsed().as_secs_f64();
    let cpu = cpu0.until(&Sample::now(server));
    pool.shutdown(Duration::from_secs(10)).await;

    mon_xacts += verify(&mut mon).await?;
    mon.close().await?;
    db.close().await;
    drop(events);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let xacts = (server.xacts(&name).await? - before - mon_xacts).max(0);

    let t = Throughput { wall_s, xacts, cpu };
    println!(
        "  drained in {:.3} s: {:.1} ops/s, {:.1} step commits/s, {} transactions ({:.2} per step, \
         incl. claims, finishes and the LISTEN backend's notification reads)",
        t.wall_s,
        t.ops_per_sec(),
        t.steps_per_sec(),
        t.xacts,
        t.xacts_per_step(),
    );
    println!(
        "  CPU: engine process {:.2} s ({:.0} us/step), PostgreSQL {}",
        t.cpu.own,
        t.per_step_us(t.cpu.own),
        t.cpu.server.map_or("n/a".into(), |c| format!(
            "{c:.2} s ({:.0} us/step)",
            t.per_step_us(c)
        )),
    );
    Ok(t)
}

/// Enqueue [`OPS`] operations, 8 at a time, on a pool of their own (closed on return).
async fn enqueue_all(url: &str) -> Result<()> {
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
    db.close().await;
    for r in results {
        r.map_err(|e| anyhow!("enqueue: {e}"))?;
    }
    println!(
        "  enqueued {OPS} operations in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Every operation SUCCEEDED and every step's effect is recorded exactly once; returns
/// the number of transactions it took.
async fn verify(mon: &mut PgConnection) -> Result<i64> {
    let done = operations::OperationFilter {
        done: Some(true),
        ..Default::default()
    };
    let rows = operations::list(&mut *mon, &done, None, OPS as i64 + 1).await?;
    let succeeded = rows
        .iter()
        .filter(|r| r.state == kineticd::domain::OperationState::Succeeded)
        .count();
    let effects = operations::noop_effect_counts(&mut *mon).await?;
    let once = effects.iter().filter(|e| e.2 == 1).count();
    if succeeded != OPS || effects.len() != OPS * STEPS as usize || once != effects.len() {
        bail!(
            "expected {OPS} SUCCEEDED operations and {} effects recorded once; got {succeeded} \
             SUCCEEDED of {} finished, {} (operation, step) effects, {once} of them once",
            OPS * STEPS as usize,
            rows.len(),
            effects.len()
        );
    }
    Ok(2)
}
