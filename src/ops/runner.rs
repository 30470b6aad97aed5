//! Runs one claimed operation: its steps as a DAG (every step whose dependencies are done
//! starts, up to a concurrency limit), each result persisted as it finishes, retries by
//! class, cancel, deadline, and resume from the first unfinished step.
//!
//! Invariants:
//! - Every write is fenced on the claim's generation; once the fence moves this runner
//!   stops without another write.
//! - A step's completion (and any effect it commits on our database) is one write, so a
//!   crash either keeps both or neither; a step interrupted mid-run is re-run (ensure).
//! - No transaction is open while a step runs.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::domain::OperationState;
use crate::store::operations::{self, Finish, OperationRow};
use crate::store::{Db, StoreError};

use super::events::Events;
use super::steps::{
    RetryPolicy, RpcCode, StepError, StepRecord, StepState, cancelled_status, skip_unstarted,
    status_json,
};
use super::workflows::{StepCtx, Workflow};

/// How long a step's RUNNING mark may stay unsaved: a step that finishes sooner is
/// saved once (done), a slower one shows as RUNNING after this delay.
const LAUNCH_FLUSH: Duration = Duration::from_millis(50);

/// What a runner needs from its worker.
#[derive(Clone)]
pub struct RunEnv {
    pub db: Db,
    pub events: Arc<Events>,
    pub policy: RetryPolicy,
    pub lease: Duration,
    pub step_concurrency: usize,
    /// Graceful shutdown: launch no new step; finish the running ones, then release.
    pub drain: CancellationToken,
    /// Grace is over: stop now and release the lease.
    pub hard_stop: CancellationToken,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Ended in this state (SUCCEEDED, FAILED, CANCELLED).
    Finished(OperationState),
    /// Another worker owns the operation now; nothing more was written.
    LeaseLost,
    /// Shutdown: the lease was handed back for another worker to resume.
    Released,
}

enum StepOutcome {
    Done(Value, Box<StepCtx>),
    /// A retryable failure: `run` records it and schedules the next attempt.
    Retry(StepError),
    Failed(StepError),
}

struct Run {
    env: RunEnv,
    wf: Arc<dyn Workflow>,
    op: Arc<OperationRow>,
    steps: Mutex<Vec<StepRecord>>,
}

impl Run {
    /// Persist the steps under the lock (writes stay in order). False: fence moved.
    async fn save(&self, steps: &[StepRecord]) -> bool {
        let json = serde_json::to_value(steps).unwrap_or(Value::Null);
        match operations::save_steps(&self.env.db, self.op.id, self.op.generation, &json).await {
            Ok(ok) => ok,
            Err(e) => {
                tracing::warn!(operation.id = %self.op.id, error = %format_args!("{e:#}"), "saving steps failed; giving up the claim");
                false
            }
        }
    }

    /// One attempt of step `i` (after `delay`). The step never touches the shared state
    /// across an await: it may not be polled while `run` waits (it lives in `run`'s
    /// `FuturesUnordered`), so only `run` writes, and a retry goes back through it.
    async fn step(
        self: Arc<Self>,
        i: usize,
        cancel: CancellationToken,
        delay: Duration,
    ) -> (usize, StepOutcome) {
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let (step, results) = {
            let g = self.steps.lock().await;
            let results: HashMap<String, Value> = g[i]
                .reads
                .iter()
                .filter_map(|r| {
                    g.iter()
                        .find(|s| &s.id == r)
                        .and_then(|s| s.result.clone().map(|v| (r.clone(), v)))
                })
                .collect();
            (g[i].clone(), results)
        };
        let ctx = StepCtx {
            op: self.op.clone(),
            attempt: step.attempts,
            step,
            results,
            cancel,
        };
        let started = std::time::Instant::now();
        let r = self.wf.run_step(&ctx).await;
        metrics::histogram!("kineticd_step_duration_seconds", "type" => self.op.op_type.clone(),
            "outcome" => if r.is_ok() { "OK" } else { "ERROR" })
        .record(started.elapsed().as_secs_f64());
        match r {
            Ok(v) => (i, StepOutcome::Done(v, Box::new(ctx))),
            Err(e) if e.is_retryable() => (i, StepOutcome::Retry(e)),
            Err(e) => (i, StepOutcome::Failed(e)),
        }
    }

    async fn finish(
        &self,
        state: OperationState,
        steps: &[StepRecord],
        response: Option<Value>,
        error: Option<Value>,
    ) -> Outcome {
        let json = serde_json::to_value(steps).unwrap_or(Value::Null);
        let f = Finish {
            state,
            steps: &json,
            response: response.as_ref(),
            error: error.as_ref(),
        };
        match self.wf.finish(&self.env.db, &self.op, f).await {
            Ok(true) => {
                metrics::counter!("kineticd_operations_finished_total",
                    "type" => self.op.op_type.clone(), "state" => state.as_str())
                .increment(1);
                tracing::info!(operation.id = %self.op.id, operation.type = %self.op.op_type, state = state.as_str(), "operation finished");
                Outcome::Finished(state)
            }
            Ok(false) => Outcome::LeaseLost,
            Err(e) => {
                tracing::warn!(operation.id = %self.op.id, error = %format_args!("{e:#}"), "finishing failed; the lease will expire and another worker resumes");
                Outcome::LeaseLost
            }
        }
    }

    /// Mark step `i` done and, when `launch_free > 0`, start the steps it unblocked, all
    /// in one write. Returns the started steps, or `None` when the fence moved.
    async fn complete(
        &self,
        i: usize,
        value: Value,
        ctx: &StepCtx,
        launch_free: usize,
    ) -> Result<Option<Vec<usize>>, StoreError> {
        let mut g = self.steps.lock().await;
        let now = Utc::now();
        g[i].state = StepState::Done;
        g[i].end_time = Some(now);
        g[i].message = None;
        g[i].result = Some(value);
        let launch = ready(&g, launch_free);
        for &j in &launch {
            g[j].state = StepState::Running;
            g[j].start_time = Some(now);
            g[j].attempts += 1;
        }
        let json = serde_json::to_value(&*g).unwrap_or(Value::Null);
        let ok = self.wf.commit_step(&self.env.db, &json, ctx).await?;
        Ok(ok.then_some(launch))
    }
}

fn ready(steps: &[StepRecord], limit: usize) -> Vec<usize> {
    steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.state == StepState::Pending)
        .filter(|(_, s)| {
            s.depends_on
                .iter()
                .all(|d| steps.iter().any(|o| &o.id == d && o.state.finished_ok()))
        })
        .map(|(i, _)| i)
        .take(limit)
        .collect()
}

/// Mark step `i` failed; fail fast: the other running steps are abandoned.
fn fail_step(g: &mut [StepRecord], i: usize, e: &StepError) {
    g[i].state = StepState::Failed;
    g[i].end_time = Some(Utc::now());
    g[i].message = Some(format!("{}: {}", e.reason, e.message));
    let id = g[i].id.clone();
    stop_steps(
        g,
        StepState::Cancelled,
        &format!("abandoned: step {id} failed"),
    );
}

/// End the running steps in `state`; steps never started stay as they are.
fn stop_steps(steps: &mut [StepRecord], state: StepState, message: &str) {
    let now = Utc::now();
    for s in steps.iter_mut() {
        if s.state == StepState::Running {
            s.state = state;
            s.end_time = Some(now);
            s.message = Some(message.to_owned());
        }
    }
}

/// Run a claimed operation until it finishes, loses its lease, or is released.
pub async fn run(env: RunEnv, wf: Arc<dyn Workflow>, row: OperationRow) -> Outcome {
    let running = env.events.running(row.id);
    let cancel = running.token.clone();
    let lost = CancellationToken::new();
    let mut steps: Vec<StepRecord> = match serde_json::from_value(row.steps.clone()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(operation.id = %row.id, error = %e, "stored steps unreadable");
            Vec::new()
        }
    };
    // Resume: a step left RUNNING by a lost worker runs again (steps are ensures).
    for s in steps.iter_mut().filter(|s| s.state == StepState::Running) {
        s.state = StepState::Pending;
        s.message = Some("resumed after the previous worker stopped".into());
    }
    let deadline = row.deadline;
    let run = Arc::new(Run {
        env: env.clone(),
        wf,
        op: Arc::new(row),
        steps: Mutex::new(steps),
    });

    let heartbeat = tokio::spawn(heartbeat(
        env.db.clone(),
        run.op.id,
        run.op.generation,
        env.lease,
        cancel.clone(),
        lost.clone(),
    ));
    let _stop_heartbeat = AbortOnDrop(heartbeat);

    if run.op.cancel_requested {
        cancel.cancel();
    }
    let until_deadline = deadline
        .map(|d| (d - Utc::now()).to_std().unwrap_or(Duration::ZERO))
        .unwrap_or(Duration::from_secs(86_400 * 365));
    let deadline_sleep = tokio::time::sleep(until_deadline);
    tokio::pin!(deadline_sleep);

    let mut inflight = FuturesUnordered::new();
    let mut failed: Option<(String, String, StepError)> = None;
    // Retries of each step in this claim (the backoff restarts after a resume).
    let mut retries: HashMap<usize, usize> = HashMap::new();
    let mut draining = false;
    // When launched-but-unsaved steps must be persisted (see LAUNCH_FLUSH).
    let mut flush_at: Option<tokio::time::Instant> = None;
    loop {
        if failed.is_none() && !draining && !cancel.is_cancelled() {
            let mut g = run.steps.lock().await;
            let free = env.step_concurrency.saturating_sub(inflight.len());
            let launch = ready(&g, free);
            if !launch.is_empty() {
                let now = Utc::now();
                for &i in &launch {
                    g[i].state = StepState::Running;
                    g[i].start_time = Some(now);
                    g[i].attempts += 1;
                }
                // Persisted with the next write, or by the flush below if the steps
                // are still running then: a fast step costs one write, not two.
                flush_at.get_or_insert(tokio::time::Instant::now() + LAUNCH_FLUSH);
                for i in launch {
                    inflight.push(run.clone().step(i, cancel.clone(), Duration::ZERO));
                }
            }
        }
        if inflight.is_empty() {
            let mut g = run.steps.lock().await.clone();
            if let Some((id, desc, e)) = failed {
                skip_unstarted(&mut g, &format!("step {id} failed"));
                let mut meta = e.metadata.clone();
                meta.insert("step".into(), id.clone());
                let msg = format!("step {id} ({desc}) failed: {}", e.message);
                let err = status_json(e.code, &msg, &e.reason, &meta);
                return run
                    .finish(OperationState::Failed, &g, None, Some(err))
                    .await;
            }
            if cancel.is_cancelled() {
                return cancelled(&run).await;
            }
            if draining {
                return release(&run).await;
            }
            if g.iter().all(|s| s.state.finished_ok()) {
                let response = run.wf.response(&run.op, &g);
                return run
                    .finish(OperationState::Succeeded, &g, Some(response), None)
                    .await;
            }
            let err = status_json(
                RpcCode::Internal,
                "the operation's steps cannot make progress (a dependency is missing)",
                "STEP_GRAPH_STUCK",
                &Default::default(),
            );
            skip_unstarted(&mut g, "the steps it depends on cannot finish");
            return run
                .finish(OperationState::Failed, &g, None, Some(err))
                .await;
        }
        let flush = async {
            match flush_at {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = lost.cancelled() => return Outcome::LeaseLost,
            _ = env.hard_stop.cancelled() => {
                drop(inflight);
                return release(&run).await;
            }
            _ = cancel.cancelled() => {
                // Abandon running steps at once (a long cloud wait included).
                drop(inflight);
                return cancelled(&run).await;
            }
            _ = &mut deadline_sleep => {
                drop(inflight);
                let mut g = run.steps.lock().await.clone();
                stop_steps(&mut g, StepState::Failed, "operation deadline exceeded");
                skip_unstarted(&mut g, "the operation exceeded its deadline");
                let err = status_json(RpcCode::DeadlineExceeded,
                    &format!("operation {} exceeded its deadline", run.op.id),
                    "DEADLINE_EXCEEDED", &Default::default());
                return run.finish(OperationState::Failed, &g, None, Some(err)).await;
            }
            _ = env.drain.cancelled(), if !draining => { draining = true; }
            _ = flush => {
                flush_at = None;
                let g = run.steps.lock().await;
                if !run.save(&g).await {
                    return Outcome::LeaseLost;
                }
            }
            Some((i, outcome)) = inflight.next() => match outcome {
                StepOutcome::Done(v, ctx) => {
                    let free = if failed.is_none() && !draining && !cancel.is_cancelled() {
                        env.step_concurrency.saturating_sub(inflight.len())
                    } else {
                        0
                    };
                    // This write carries every unsaved launch as well.
                    flush_at = None;
                    match run.complete(i, v, &ctx, free).await {
                        Ok(Some(launched)) => {
                            for j in launched {
                                inflight.push(run.clone().step(j, cancel.clone(), Duration::ZERO));
                            }
                        }
                        Ok(None) => return Outcome::LeaseLost,
                        Err(e) => {
                            tracing::warn!(operation.id = %run.op.id, error = %format_args!("{e:#}"), "completing a step failed; handing the operation back");
                            // Best effort: let another worker resume now rather than
                            // after the lease runs out (the step re-runs: ensure).
                            let _ = operations::release(&run.env.db, run.op.id, run.op.generation).await;
                            return Outcome::LeaseLost;
                        }
                    }
                }
                StepOutcome::Retry(e) => {
                    let n = retries.entry(i).or_insert(0);
                    let mut g = run.steps.lock().await;
                    match env.policy.delays().nth(*n) {
                        Some(delay) => {
                            *n += 1;
                            g[i].message = Some(format!(
                                "attempt {} failed ({}: {}); retrying in {} ms",
                                g[i].attempts,
                                e.reason,
                                e.message,
                                delay.as_millis()
                            ));
                            g[i].attempts += 1;
                            // Carries unsaved launches too.
                            flush_at = None;
                            if !run.save(&g).await {
                                return Outcome::LeaseLost;
                            }
                            drop(g);
                            inflight.push(run.clone().step(i, cancel.clone(), delay));
                        }
                        None => {
                            let mut e = e;
                            e.message = format!("{} (gave up after {} attempts)", e.message, g[i].attempts);
                            fail_step(&mut g, i, &e);
                            failed = Some((g[i].id.clone(), g[i].description.clone(), e));
                            drop(g);
                            drop(std::mem::take(&mut inflight));
                        }
                    }
                }
                StepOutcome::Failed(e) => {
                    let mut g = run.steps.lock().await;
                    fail_step(&mut g, i, &e);
                    failed = Some((g[i].id.clone(), g[i].description.clone(), e));
                    drop(g);
                    drop(std::mem::take(&mut inflight));
                }
            },
        }
    }
}

async fn cancelled(run: &Run) -> Outcome {
    let mut g = run.steps.lock().await.clone();
    stop_steps(&mut g, StepState::Cancelled, "cancelled by request");
    skip_unstarted(&mut g, "the operation was cancelled");
    let err = cancelled_status();
    run.finish(OperationState::Cancelled, &g, None, Some(err))
        .await
}

async fn release(run: &Run) -> Outcome {
    let mut g = run.steps.lock().await.clone();
    for s in g.iter_mut().filter(|s| s.state == StepState::Running) {
        s.state = StepState::Pending;
        s.message = Some("interrupted by a server shutdown; will resume".into());
    }
    if !run.save(&g).await {
        return Outcome::LeaseLost;
    }
    match operations::release(&run.env.db, run.op.id, run.op.generation).await {
        Ok(true) => Outcome::Released,
        _ => Outcome::LeaseLost,
    }
}

async fn heartbeat(
    db: Db,
    id: uuid::Uuid,
    generation: i64,
    lease: Duration,
    cancel: CancellationToken,
    lost: CancellationToken,
) {
    let every = lease / 3;
    loop {
        tokio::time::sleep(every).await;
        match operations::heartbeat(&db, id, generation, lease.as_secs_f64()).await {
            Ok(Some(true)) => cancel.cancel(),
            Ok(Some(false)) => {}
            Ok(None) => {
                tracing::warn!(operation.id = %id, "lease lost to another worker");
                lost.cancel();
                return;
            }
            Err(e) => {
                tracing::warn!(operation.id = %id, error = %format_args!("{e:#}"), "heartbeat failed; retrying")
            }
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
