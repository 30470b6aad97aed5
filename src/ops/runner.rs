//! Runs one claimed operation: its steps as a DAG (every step whose dependencies are done
//! starts, up to a concurrency limit), each result persisted as it finishes, retries by
//! class, cancel, deadline, and resume from the first unfinished step.
//!
//! Invariants:
//! - Every write is fenced on the claim's generation; once the fence moves this runner
//!   stops without another write.
//! - A step's completion (and any effect it commits on our database) is one write, so a
//!   crash either keeps both or neither; a step interrupted mid-run is re-run (ensure).
//!   The last step's completion and the operation's successful end are one transaction
//!   (one commit where there were two).
//! - No transaction is open while a step runs.
//! - Each step attempt runs inside one `step` span carrying `operation.id`,
//!   `operation.type`, `step.id` and `attempt`, so every line it logs (cloud calls
//!   included) names them; its duration is recorded by workflow, step kind and outcome.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use tokio::sync::Mutex;
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;
use tracing::Instrument;

use crate::domain::OperationState;
use crate::store::operations::{self, Finish, OperationRow};
use crate::store::{Db, StoreError};

use super::events::Events;
use super::leases::Leases;
use super::outage;
pub use super::outcome::Outcome;
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
    pub step_concurrency: usize,
    /// The process's leases, renewed together ([`super::leases`]).
    pub leases: Arc<Leases>,
    /// Graceful shutdown: launch no new step; finish the running ones, then release.
    pub drain: CancellationToken,
    /// Grace is over: stop now and release the lease.
    pub hard_stop: CancellationToken,
}

enum StepOutcome {
    Done(Value, Box<StepCtx>),
    /// A retryable failure: the driver records it and schedules the next attempt.
    Retry(StepError),
    Failed(StepError),
}

struct Run {
    env: RunEnv,
    wf: Arc<dyn Workflow>,
    op: Arc<OperationRow>,
    steps: Mutex<Vec<StepRecord>>,
    /// The heartbeat saw the fence move: another worker owns the operation.
    lost: CancellationToken,
}

impl Run {
    /// Persist the steps under the lock (writes stay in order). `Some`: stop with this
    /// outcome (the fence moved, or the write failed and the claim was handed back).
    async fn save(&self, steps: &[StepRecord]) -> Option<Outcome> {
        let json = serde_json::to_value(steps).unwrap_or(Value::Null);
        match operations::save_steps(&self.env.db, self.op.id, self.op.generation, &json).await {
            Ok(true) => {
                self.progressed().await;
                None
            }
            Ok(false) => Some(Outcome::LeaseLost),
            Err(e) => Some(self.hand_back(&e).await),
        }
    }

    /// Announce that the steps changed (committed): `:watch` streams re-read.
    async fn progressed(&self) {
        let state = if self.lost.is_cancelled() {
            return;
        } else if self.op.cancel_requested {
            OperationState::Cancelling
        } else {
            OperationState::Running
        };
        announce(
            &self.env.db,
            &[format!("{}:{}", self.op.id, state.as_str())],
        )
        .await;
    }

    /// A write failed: hand the operation back once the database answers (see
    /// [`super::outage`]).
    async fn hand_back(&self, failed: &StoreError) -> Outcome {
        let stop = [&self.lost, &self.env.hard_stop];
        outage::hand_back(&self.env.db, self.op.id, self.op.generation, failed, stop).await
    }

    /// One attempt of step `i` (after `delay`), inside its `step` span, run as a task of
    /// its own ([`StepFuture`]). The step never writes the shared state: only the driver
    /// writes, and a retry goes back through it.
    async fn step(
        self: Arc<Self>,
        i: usize,
        cancel: CancellationToken,
        delay: Duration,
    ) -> (usize, StepOutcome) {
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let (step, results) = self.inputs(i).await;
        let ctx = StepCtx {
            op: self.op.clone(),
            attempt: step.attempts,
            step,
            results,
            cancel,
        };
        let span = tracing::info_span!("step",
            operation.id = %self.op.id,
            operation.type = %self.op.op_type,
            step.id = %ctx.step.id,
            attempt = ctx.attempt);
        let started = std::time::Instant::now();
        let r = self.wf.run_step(&ctx).instrument(span.clone()).await;
        let outcome = span.in_scope(|| observe(&self.op.op_type, &ctx.step, &r, started));
        match r {
            Ok(v) => (i, StepOutcome::Done(v, Box::new(ctx))),
            Err(e) if outcome == RETRYABLE => (i, StepOutcome::Retry(e)),
            Err(e) => (i, StepOutcome::Failed(e)),
        }
    }

    /// Step `i` as it stands, and the results of the earlier steps it reads.
    async fn inputs(&self, i: usize) -> (StepRecord, HashMap<String, Value>) {
        let g = self.steps.lock().await;
        let results = g[i]
            .reads
            .iter()
            .filter_map(|r| {
                g.iter()
                    .find(|s| &s.id == r)
                    .and_then(|s| s.result.clone().map(|v| (r.clone(), v)))
            })
            .collect();
        (g[i].clone(), results)
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
        match finish(&self.env, self.wf.as_ref(), &self.op, f).await {
            Ok(outcome) => outcome,
            Err(e) => self.hand_back(&e).await,
        }
    }

    /// Mark step `i` done and, when `launch_free > 0`, start the steps it unblocked, all
    /// in one write. When `last` (nothing else runs or will) and every step is done, the
    /// operation ends SUCCEEDED in the same transaction: one commit, not two.
    async fn complete(
        &self,
        i: usize,
        value: Value,
        ctx: &StepCtx,
        launch_free: usize,
        last: bool,
    ) -> Result<Completed, StoreError> {
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
        if last && launch.is_empty() && g.iter().all(|s| s.state.finished_ok()) {
            // A response that cannot be written fails the operation: the driver's
            // conclusion does that after the ordinary commit below.
            if let Ok(response) = self.wf.response(&self.op, &g) {
                return self.complete_and_succeed(&json, ctx, &response).await;
            }
        }
        let mut conn = self.env.db.acquire().await?;
        let ok = self.wf.commit_step(&mut conn, &json, ctx).await?;
        drop(conn);
        if !ok {
            return Ok(Completed::Lost);
        }
        drop(g);
        self.progressed().await;
        Ok(Completed::Launched(launch))
    }

    /// The last step's completion (with its effect) and the operation's successful end,
    /// in one transaction.
    async fn complete_and_succeed(
        &self,
        steps: &Value,
        ctx: &StepCtx,
        response: &Value,
    ) -> Result<Completed, StoreError> {
        let mut tx = self.env.db.begin().await?;
        if !self.wf.commit_step(&mut tx, steps, ctx).await? {
            return Ok(Completed::Lost);
        }
        let f = Finish {
            state: OperationState::Succeeded,
            steps,
            response: Some(response),
            error: None,
        };
        if !self.wf.finish(&mut tx, &self.op, f).await? {
            return Ok(Completed::Lost);
        }
        tx.commit().await?;
        finished(&self.env.db, &self.op, OperationState::Succeeded).await;
        Ok(Completed::Ended(Outcome::Finished(
            OperationState::Succeeded,
        )))
    }
}

/// What persisting a step's completion did.
enum Completed {
    /// Saved; these steps started.
    Launched(Vec<usize>),
    /// Saved, and the operation ended.
    Ended(Outcome),
    /// The fence moved: nothing was saved.
    Lost,
}

/// The `outcome` label of a step attempt that failed and may be retried.
const RETRYABLE: &str = "RETRYABLE_ERROR";

/// Record one attempt's duration (by workflow, step kind and outcome) and log its end;
/// called inside the step's span. Returns the outcome label.
fn observe(
    workflow: &str,
    step: &StepRecord,
    r: &Result<Value, StepError>,
    started: std::time::Instant,
) -> &'static str {
    let elapsed = started.elapsed();
    let outcome = match r {
        Ok(_) => "OK",
        Err(e) if e.is_retryable() => RETRYABLE,
        Err(_) => "ERROR",
    };
    metrics::histogram!("kineticd_step_duration_seconds",
        "workflow" => workflow.to_owned(), "step" => step_kind(step), "outcome" => outcome)
    .record(elapsed.as_secs_f64());
    let ms = elapsed.as_millis() as u64;
    match r {
        Ok(_) => tracing::debug!(elapsed_ms = ms, "step attempt succeeded"),
        Err(e) => tracing::info!(elapsed_ms = ms, outcome, reason = %e.reason,
            error = %e.message, "step attempt failed"),
    }
    outcome
}

/// A step's kind, a bounded label: the resource type of the plan action it carries out
/// (`container.nodePool`), never its id (which names pools); `step` for workflows whose
/// steps carry no action.
fn step_kind(step: &StepRecord) -> String {
    step.input
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("step")
        .to_owned()
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
    let steps = match resumable_steps(&row) {
        Ok(steps) => steps,
        Err(e) => return unreadable_steps(&env, wf.as_ref(), &row, &e).await,
    };
    let running = env.events.running(row.id);
    let cancel = running.token.clone();
    let lost = CancellationToken::new();
    let deadline = sleep_until_deadline(row.deadline);
    let run = Arc::new(Run {
        env: env.clone(),
        wf,
        steps: Mutex::new(steps),
        op: Arc::new(row),
        lost: lost.clone(),
    });
    let _lease = env
        .leases
        .hold(run.op.id, run.op.generation, cancel.clone(), lost.clone());
    if run.op.cancel_requested {
        cancel.cancel();
    }
    Driver {
        run,
        cancel,
        lost,
        deadline,
        inflight: FuturesUnordered::new(),
        failed: None,
        retries: HashMap::new(),
        // A claim that lands as the drain begins launches nothing: it is handed back.
        draining: env.drain.is_cancelled(),
        flush_at: None,
    }
    .drive()
    .await
}

/// The stored steps, with any step a lost worker left RUNNING pending again (steps are
/// ensures: it runs again).
fn resumable_steps(row: &OperationRow) -> Result<Vec<StepRecord>, serde_json::Error> {
    let mut steps: Vec<StepRecord> = serde_json::from_value(row.steps.clone())?;
    for s in steps.iter_mut().filter(|s| s.state == StepState::Running) {
        s.state = StepState::Pending;
        s.message = Some("resumed after the previous worker stopped".into());
    }
    Ok(steps)
}

/// An operation whose stored steps do not decode runs nothing: it fails with
/// CORRUPT_RECORD, its steps kept exactly as stored (never read as "no steps", which
/// would succeed having done nothing).
async fn unreadable_steps(
    env: &RunEnv,
    wf: &dyn Workflow,
    row: &OperationRow,
    e: &serde_json::Error,
) -> Outcome {
    tracing::error!(operation.id = %row.id, table = "operations", column = "steps", error = %e, "stored record unreadable");
    let err = status_json(
        RpcCode::Internal,
        &format!(
            "operation {} has unreadable stored steps ({e}); nothing was run",
            row.id
        ),
        "CORRUPT_RECORD",
        &Default::default(),
    );
    let f = Finish {
        state: OperationState::Failed,
        steps: &row.steps,
        response: None,
        error: Some(&err),
    };
    match finish(env, wf, row, f).await {
        Ok(outcome) => outcome,
        Err(e) => {
            let stop = [&env.hard_stop, &env.hard_stop];
            outage::hand_back(&env.db, row.id, row.generation, &e, stop).await
        }
    }
}

/// Write the operation's final state (fenced by its lease) and count it. An error is
/// the caller's to handle (see [`super::outage`]).
async fn finish(
    env: &RunEnv,
    wf: &dyn Workflow,
    op: &OperationRow,
    f: Finish<'_>,
) -> Result<Outcome, StoreError> {
    let state = f.state;
    let mut conn = env.db.acquire().await?;
    if !wf.finish(&mut conn, op, f).await? {
        return Ok(Outcome::LeaseLost);
    }
    drop(conn);
    finished(&env.db, op, state).await;
    Ok(Outcome::Finished(state))
}

/// Announce committed changes; a failure is logged, never the operation's (the change is
/// committed; listeners fall back to re-reading).
pub(super) async fn announce(db: &Db, payloads: &[String]) {
    if let Err(e) = operations::announce(db, payloads).await {
        tracing::warn!(error = %format_args!("{e:#}"), "could not announce an operation change");
    }
}

/// Announce, count and log the end of `op`, once its final state is committed.
pub(super) async fn finished(db: &Db, op: &OperationRow, state: OperationState) {
    announce(db, &operations::finished_events(op.id, state)).await;
    metrics::counter!("kineticd_operations_finished_total",
        "type" => op.op_type.clone(), "state" => state.as_str())
    .increment(1);
    tracing::info!(operation.id = %op.id, operation.type = %op.op_type, state = state.as_str(), "operation finished");
}

/// Fires at the operation's deadline (a year away when it has none).
fn sleep_until_deadline(deadline: Option<chrono::DateTime<Utc>>) -> Pin<Box<Sleep>> {
    let until = deadline
        .map(|d| (d - Utc::now()).to_std().unwrap_or(Duration::ZERO))
        .unwrap_or(Duration::from_secs(86_400 * 365));
    Box::pin(tokio::time::sleep(until))
}

/// A step attempt running as its own task: it progresses (and gives back any database
/// connection it holds) while the driver waits on something else, such as a connection
/// for its own write. Polled inside the driver's `FuturesUnordered` instead, a step that
/// had checked out a connection stood still while its driver waited for one, and enough
/// such operations at once held every connection of the pool and none could move
/// (issue 27's wedge of 100 concurrent `up`s). Dropping the handle aborts the attempt.
type StepFuture = AbortOnDropHandle<(usize, StepOutcome)>;

/// What woke the driver.
enum Event {
    LeaseLost,
    HardStop,
    Cancelled,
    Deadline,
    Drain,
    Flush,
    Step(usize, StepOutcome),
}

/// The claim's loop state: launches ready steps, reacts to one [`Event`] at a time, and
/// concludes once nothing is in flight.
struct Driver {
    run: Arc<Run>,
    cancel: CancellationToken,
    lost: CancellationToken,
    deadline: Pin<Box<Sleep>>,
    inflight: FuturesUnordered<StepFuture>,
    /// The failed step (id, description) and its error: launch nothing more.
    failed: Option<(String, String, StepError)>,
    /// Retries of each step in this claim (the backoff restarts after a resume).
    retries: HashMap<usize, usize>,
    draining: bool,
    /// When launched-but-unsaved steps must be persisted (see LAUNCH_FLUSH).
    flush_at: Option<tokio::time::Instant>,
}

impl Driver {
    async fn drive(mut self) -> Outcome {
        loop {
            self.launch_ready().await;
            if self.inflight.is_empty() {
                return self.conclude().await;
            }
            let done = match self.next_event().await {
                Event::LeaseLost => Some(Outcome::LeaseLost),
                Event::HardStop => {
                    self.inflight.clear();
                    Some(release(&self.run).await)
                }
                Event::Cancelled => {
                    // Abandon running steps at once (a long cloud wait included).
                    self.inflight.clear();
                    Some(cancelled(&self.run).await)
                }
                Event::Deadline => Some(self.deadline_exceeded().await),
                Event::Drain => {
                    self.draining = true;
                    None
                }
                Event::Flush => self.flush().await,
                Event::Step(i, StepOutcome::Done(v, ctx)) => self.on_done(i, v, &ctx).await,
                Event::Step(i, StepOutcome::Retry(e)) => self.on_retry(i, e).await,
                Event::Step(i, StepOutcome::Failed(e)) => {
                    self.on_failed(i, e).await;
                    None
                }
            };
            if let Some(outcome) = done {
                return outcome;
            }
        }
    }

    /// Steps may start: nothing failed, no drain, no cancel.
    fn launching(&self) -> bool {
        self.failed.is_none() && !self.draining && !self.cancel.is_cancelled()
    }

    fn free_slots(&self) -> usize {
        self.run
            .env
            .step_concurrency
            .saturating_sub(self.inflight.len())
    }

    fn push(&mut self, i: usize, delay: Duration) {
        let step = self.run.clone().step(i, self.cancel.clone(), delay);
        let task = tokio::spawn(step.in_current_span());
        self.inflight.push(AbortOnDropHandle::new(task));
    }

    /// Start every ready step (up to the concurrency limit), marked RUNNING in memory.
    async fn launch_ready(&mut self) {
        if !self.launching() {
            return;
        }
        let launch = {
            let mut g = self.run.steps.lock().await;
            let launch = ready(&g, self.free_slots());
            let now = Utc::now();
            for &i in &launch {
                g[i].state = StepState::Running;
                g[i].start_time = Some(now);
                g[i].attempts += 1;
            }
            launch
        };
        if launch.is_empty() {
            return;
        }
        // Persisted with the next write, or by the flush if the steps are still running
        // then: a fast step costs one write, not two.
        self.flush_at
            .get_or_insert(tokio::time::Instant::now() + LAUNCH_FLUSH);
        for i in launch {
            self.push(i, Duration::ZERO);
        }
    }

    async fn next_event(&mut self) -> Event {
        let flush_at = self.flush_at;
        let flush = async move {
            match flush_at {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        let hard_stop = self.run.env.hard_stop.clone();
        let drain = self.run.env.drain.clone();
        tokio::select! {
            biased;
            _ = self.lost.cancelled() => Event::LeaseLost,
            _ = hard_stop.cancelled() => Event::HardStop,
            _ = self.cancel.cancelled() => Event::Cancelled,
            _ = &mut self.deadline => Event::Deadline,
            _ = drain.cancelled(), if !self.draining => Event::Drain,
            _ = flush => Event::Flush,
            Some(joined) = self.inflight.next() => match joined {
                Ok((i, outcome)) => Event::Step(i, outcome),
                // A step that panicked brings its operation down as it did when the
                // driver polled it.
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            },
        }
    }

    /// Nothing in flight: the operation ends (or is handed back) now.
    async fn conclude(&mut self) -> Outcome {
        let run = &self.run;
        let mut g = run.steps.lock().await.clone();
        if let Some((id, desc, e)) = self.failed.take() {
            skip_unstarted(&mut g, &format!("step {id} failed"));
            let mut meta = e.metadata.clone();
            meta.insert("step".into(), id.clone());
            let msg = format!("step {id} ({desc}) failed: {}", e.message);
            let err = status_json(e.code, &msg, &e.reason, &meta);
            return run
                .finish(OperationState::Failed, &g, None, Some(err))
                .await;
        }
        if self.cancel.is_cancelled() {
            return cancelled(run).await;
        }
        if self.draining {
            return release(run).await;
        }
        if g.iter().all(|s| s.state.finished_ok()) {
            return match run.wf.response(&run.op, &g) {
                Ok(response) => {
                    run.finish(OperationState::Succeeded, &g, Some(response), None)
                        .await
                }
                Err(e) => {
                    let err = status_json(e.code, &e.message, &e.reason, &e.metadata);
                    run.finish(OperationState::Failed, &g, None, Some(err))
                        .await
                }
            };
        }
        let err = status_json(
            RpcCode::Internal,
            "the operation's steps cannot make progress (a dependency is missing)",
            "STEP_GRAPH_STUCK",
            &Default::default(),
        );
        skip_unstarted(&mut g, "the steps it depends on cannot finish");
        run.finish(OperationState::Failed, &g, None, Some(err))
            .await
    }

    async fn deadline_exceeded(&mut self) -> Outcome {
        self.inflight.clear();
        let mut g = self.run.steps.lock().await.clone();
        stop_steps(&mut g, StepState::Failed, "operation deadline exceeded");
        skip_unstarted(&mut g, "the operation exceeded its deadline");
        let err = status_json(
            RpcCode::DeadlineExceeded,
            &format!("operation {} exceeded its deadline", self.run.op.id),
            "DEADLINE_EXCEEDED",
            &Default::default(),
        );
        self.run
            .finish(OperationState::Failed, &g, None, Some(err))
            .await
    }

    /// Persist launched steps still running after LAUNCH_FLUSH.
    async fn flush(&mut self) -> Option<Outcome> {
        self.flush_at = None;
        let g = self.run.steps.lock().await;
        self.run.save(&g).await
    }

    /// Step `i` is done: persist it with the steps it unblocked, and start those.
    async fn on_done(&mut self, i: usize, v: Value, ctx: &StepCtx) -> Option<Outcome> {
        let free = if self.launching() {
            self.free_slots()
        } else {
            0
        };
        // This write carries every unsaved launch as well.
        self.flush_at = None;
        // Nothing else runs, and nothing stops the operation from ending here.
        let last = self.inflight.is_empty() && self.launching();
        match self.run.complete(i, v, ctx, free, last).await {
            Ok(Completed::Launched(launched)) => {
                for j in launched {
                    self.push(j, Duration::ZERO);
                }
                None
            }
            Ok(Completed::Ended(outcome)) => Some(outcome),
            Ok(Completed::Lost) => Some(Outcome::LeaseLost),
            // Whether it committed or not, the next claim resumes from what is stored
            // (a step whose completion was lost re-runs: ensure).
            Err(e) => Some(self.run.hand_back(&e).await),
        }
    }

    /// A retryable failure: schedule the next attempt after the policy's delay, or fail
    /// the step once the policy gives up.
    async fn on_retry(&mut self, i: usize, mut e: StepError) -> Option<Outcome> {
        let n = self.retries.entry(i).or_insert(0);
        let Some(delay) = self.run.env.policy.delays().nth(*n) else {
            let run = self.run.clone();
            let mut g = run.steps.lock().await;
            e.message = format!("{} (gave up after {} attempts)", e.message, g[i].attempts);
            self.fail(&mut g, i, e);
            return None;
        };
        *n += 1;
        metrics::counter!("kineticd_step_retries_total", "workflow" => self.run.op.op_type.clone())
            .increment(1);
        {
            let mut g = self.run.steps.lock().await;
            g[i].message = Some(format!(
                "attempt {} failed ({}: {}); retrying in {} ms",
                g[i].attempts,
                e.reason,
                e.message,
                delay.as_millis()
            ));
            g[i].attempts += 1;
            // Carries unsaved launches too.
            self.flush_at = None;
            if let Some(stop) = self.run.save(&g).await {
                return Some(stop);
            }
        }
        self.push(i, delay);
        None
    }

    async fn on_failed(&mut self, i: usize, e: StepError) {
        let run = self.run.clone();
        let mut g = run.steps.lock().await;
        self.fail(&mut g, i, e);
    }

    /// Record the failure (fail fast: the other running steps are abandoned).
    fn fail(&mut self, g: &mut [StepRecord], i: usize, e: StepError) {
        fail_step(g, i, &e);
        self.failed = Some((g[i].id.clone(), g[i].description.clone(), e));
        self.inflight.clear();
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
    if let Some(stop) = run.save(&g).await {
        return stop;
    }
    match operations::release(&run.env.db, run.op.id, run.op.generation).await {
        Ok(true) => Outcome::Released,
        Ok(false) => Outcome::LeaseLost,
        Err(e) => run.hand_back(&e).await,
    }
}
