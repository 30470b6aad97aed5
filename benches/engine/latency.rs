//! Latency of a single NOOP operation ([`STEPS`] sleep-free steps) on an idle pool of
//! [`WORKERS`](crate::WORKERS) workers, accepted to done: from the row
//! (`end_time - create_time`, the server's clock) and by wall clock (enqueue returned to
//! the SUCCEEDED notification).
//! Operations run one at a time, each after the workers are back in their idle wait.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use kineticd::ops::steps::{StepRecord, StepState};
use kineticd::ops::{Events, queue};
use kineticd::store::{self, operations};
use sqlx::postgres::PgListener;
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use crate::cpu::Sample;
use crate::server::Server;
use crate::{OWNER, STEPS, TEAM, noop_request, start_pool};

const RUNS: usize = 60;
const WARMUP: usize = 5;
/// Finished operations in the table for the history variant (production keeps 30 days):
/// the claim's index covers unfinished operations only, so history must not slow it.
pub const HISTORY: u32 = 50_000;

/// (median, p90) in milliseconds.
pub struct Latency {
    pub db: (f64, f64),
    pub wall: (f64, f64),
    /// Enqueue call to its return (the accepting transaction).
    pub enqueue: (f64, f64),
    /// `start_time - create_time`: how long the operation waited for a worker.
    pub claim_delay: (f64, f64),
    /// CPUs kept busy by other processes during the runs.
    pub others_cpus: Option<f64>,
}

/// `history`: finished operations put in the table first.
pub async fn run(server: &Server, history: u32) -> Result<Latency> {
    let name = server.create_kineticd_db("lat").await?;
    let url = server.url(&name);
    if history > 0 {
        add_history(&url, history).await?;
    }
    measure(server, &url).await
}

/// Bulk-insert `n` finished operations (no library function does this in one statement;
/// enqueuing, claiming and finishing 50,000 would take longer than the measurement).
async fn add_history(url: &str, n: u32) -> Result<()> {
    let started = Instant::now();
    let mut c = PgConnection::connect(url).await?;
    sqlx::query(
        "INSERT INTO operations (id, op_type, target, serial_key, team_id, created_by, state, \
           create_time, start_time, end_time) \
         SELECT gen_random_uuid(), 'NOOP', 'old/' || i, 'old/' || i, $1, $2, 'SUCCEEDED', \
           now() - interval '1 day' + i * interval '1 ms', now(), now() \
         FROM generate_series(1, $3) AS i",
    )
    .bind(TEAM)
    .bind(OWNER)
    .bind(i32::try_from(n)?)
    .execute(&mut c)
    .await?;
    sqlx::query("ANALYZE operations").execute(&mut c).await?;
    c.close().await?;
    println!(
        "  {n} finished operations added in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

async fn measure(server: &Server, url: &str) -> Result<Latency> {
    let db = store::connect(url, 20).await?;
    let events = Events::start(url).await?;
    let pool = start_pool(&db, &events)?;
    // Listening before enqueuing: the SUCCEEDED notification cannot be missed.
    let mut listener = PgListener::connect(url).await?;
    listener.listen(operations::EVENTS_CHANNEL).await?;
    // Let the workers reach their idle wait.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut ids = Vec::new();
    let mut wall = Vec::new();
    let mut enqueue = Vec::new();
    let started = Instant::now();
    let cpu0 = Sample::now(server);
    for i in 0..WARMUP + RUNS {
        let t0 = Instant::now();
        let op = queue::enqueue(&db, &noop_request(format!("bench/lat-{i}")))
            .await
            .map_err(|e| anyhow!("enqueue: {e}"))?
            .op;
        let accepted = Instant::now();
        wait_done(&mut listener, op.id).await?;
        let end = Instant::now();
        if i >= WARMUP {
            ids.push(op.id);
            wall.push((end - accepted).as_secs_f64() * 1e3);
            enqueue.push((accepted - t0).as_secs_f64() * 1e3);
        }
        // Idle again before the next one (workers back in their wait).
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let others_cpus = cpu0
        .until(&Sample::now(server))
        .others_cpus(started.elapsed().as_secs_f64());
    pool.shutdown(Duration::from_secs(10)).await;
    drop(listener);

    let mut from_row = Vec::new();
    let mut claim_delay = Vec::new();
    for id in ids {
        let row = operations::get(&db, id)
            .await?
            .with_context(|| format!("operation {id} vanished"))?;
        let steps: Vec<StepRecord> = serde_json::from_value(row.steps)?;
        if row.state != kineticd::domain::OperationState::Succeeded
            || steps.len() != STEPS as usize
            || steps.iter().any(|s| s.state != StepState::Done)
        {
            bail!("operation {id} ended {} with unfinished steps", row.state);
        }
        let ms = |d: chrono::TimeDelta| d.num_microseconds().unwrap_or(i64::MAX) as f64 / 1e3;
        let (end, start) = row
            .end_time
            .zip(row.start_time)
            .context("no end/start time")?;
        from_row.push(ms(end - row.create_time));
        claim_delay.push(ms(start - row.create_time));
    }
    db.close().await;
    drop(events);

    let l = Latency {
        db: median_p90(from_row),
        wall: median_p90(wall),
        enqueue: median_p90(enqueue),
        claim_delay: median_p90(claim_delay),
        others_cpus,
    };
    println!(
        "  {RUNS} runs: accepted-to-done (row) median {:.2} ms p90 {:.2} ms; wall median {:.2} ms \
         p90 {:.2} ms; enqueue median {:.2} ms; create-to-claim median {:.2} ms",
        l.db.0, l.db.1, l.wall.0, l.wall.1, l.enqueue.0, l.claim_delay.0
    );
    Ok(l)
}

/// Wait for operation `id`'s SUCCEEDED notification (an error if it ends otherwise).
async fn wait_done(listener: &mut PgListener, id: Uuid) -> Result<()> {
    let done = format!("{id}:SUCCEEDED");
    let failed = [format!("{id}:FAILED"), format!("{id}:CANCELLED")];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(30), listener.recv())
            .await
            .context("operation not done within 30 s")??;
        if n.payload() == done {
            return Ok(());
        }
        if failed.iter().any(|f| f == n.payload()) {
            bail!("operation {id} ended {}", n.payload());
        }
    }
}

/// Nearest-rank (median, p90).
fn median_p90(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1));
        v.get(rank - 1).copied().unwrap_or(f64::NAN)
    };
    (at(0.5), at(0.9))
}
