//! The worker pool inside `kineticd serve`: N workers that claim operations, run them,
//! and go idle until woken (LISTEN/NOTIFY) or until the fallback poll.
//!
//! Invariants: a worker holds at most one operation; a claim is a short transaction; on
//! shutdown workers stop claiming, let running steps reach their end within the grace
//! period, then hand their leases back so another process resumes at once.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::store::{Db, operations};

use super::events::Events;
use super::runner::{self, Outcome, RunEnv};
use super::steps::RetryPolicy;
use super::workflows::Registry;

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub workers: usize,
    /// Identifies this process in `lease_owner` (host:pid:uuid).
    pub owner: String,
    pub lease: Duration,
    /// Fallback poll when no notification arrives (also finds expired leases).
    pub poll: Duration,
    pub step_concurrency: usize,
    pub policy: RetryPolicy,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            workers: 8,
            owner: default_owner(),
            lease: Duration::from_secs(30),
            poll: Duration::from_secs(2),
            step_concurrency: 8,
            policy: RetryPolicy::default(),
        }
    }
}

pub fn default_owner() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into());
    format!(
        "{host}:{}:{}",
        std::process::id(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

pub struct WorkerPool {
    tasks: JoinSet<()>,
    stop_claiming: CancellationToken,
    drain: CancellationToken,
    hard_stop: CancellationToken,
}

impl WorkerPool {
    pub fn start(db: Db, events: Arc<Events>, registry: Registry, cfg: WorkerConfig) -> WorkerPool {
        let stop_claiming = CancellationToken::new();
        let drain = CancellationToken::new();
        let hard_stop = CancellationToken::new();
        register_counters(&registry);
        let mut tasks = JoinSet::new();
        for n in 0..cfg.workers {
            let env = RunEnv {
                db: db.clone(),
                events: events.clone(),
                policy: cfg.policy,
                lease: cfg.lease,
                step_concurrency: cfg.step_concurrency,
                drain: drain.clone(),
                hard_stop: hard_stop.clone(),
            };
            let w = Worker {
                env,
                registry: registry.clone(),
                owner: format!("{}/{n}", cfg.owner),
                poll: cfg.poll,
                stop: stop_claiming.clone(),
            };
            tasks.spawn(w.run());
        }
        tracing::info!(workers = cfg.workers, owner = %cfg.owner, "worker pool started");
        WorkerPool {
            tasks,
            stop_claiming,
            drain,
            hard_stop,
        }
    }

    /// Stop claiming, let running steps finish for up to `grace`, then release leases.
    pub async fn shutdown(mut self, grace: Duration) {
        self.stop_claiming.cancel();
        self.drain.cancel();
        let all = async { while self.tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(grace, all).await.is_err() {
            tracing::warn!(
                ?grace,
                "grace period over; releasing leases of running operations"
            );
            self.hard_stop.cancel();
            while self.tasks.join_next().await.is_some() {}
        }
    }
}

/// Series that a healthy run may never touch, registered at 0 so `/metrics` shows them
/// from the start (a rate over a missing series is no rate at all).
fn register_counters(registry: &Registry) {
    metrics::counter!("kineticd_lease_rescues_total").increment(0);
    for (workflow, _) in registry.deadlines() {
        metrics::counter!("kineticd_step_retries_total", "workflow" => workflow.clone())
            .increment(0);
        // Until the first refresh from the database (ops::retention) says otherwise.
        for state in ["QUEUED", "RUNNING", "CANCELLING"] {
            metrics::gauge!("kineticd_operations_unfinished",
                "type" => workflow.clone(), "state" => state)
            .set(0.0);
        }
    }
}

struct Worker {
    env: RunEnv,
    registry: Registry,
    owner: String,
    poll: Duration,
    stop: CancellationToken,
}

impl Worker {
    async fn run(self) {
        let deadlines = self.registry.deadlines();
        let lease = self.env.lease.as_secs_f64();
        loop {
            if self.stop.is_cancelled() {
                return;
            }
            // Register for a wake-up before looking, so a notification in between counts.
            let notified = self.env.events.work().notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match operations::claim(&self.env.db, &self.owner, lease, &deadlines).await {
                Ok(Some(op)) => {
                    let id = op.id;
                    let Some(wf) = self.registry.get(&op.op_type) else {
                        tracing::error!(operation.id = %id, op_type = %op.op_type, "no workflow for this operation type");
                        self.fail_unknown(op).await;
                        continue;
                    };
                    tracing::debug!(operation.id = %id, worker = %self.owner, attempt = op.attempt, "claimed");
                    let span = tracing::info_span!("operation",
                        operation.id = %id, operation.type = %op.op_type);
                    match runner::run(self.env.clone(), wf, op).instrument(span).await {
                        Outcome::Finished(_) => {}
                        Outcome::LeaseLost => {
                            tracing::warn!(operation.id = %id, "stopped: lease lost")
                        }
                        Outcome::Released => {
                            tracing::info!(operation.id = %id, "lease released for another worker")
                        }
                    }
                }
                Ok(None) => {
                    tokio::select! {
                        _ = &mut notified => {}
                        _ = tokio::time::sleep(self.poll) => {}
                        _ = self.stop.cancelled() => return,
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %format_args!("{e:#}"), "claiming failed; backing off");
                    tokio::select! {
                        _ = tokio::time::sleep(self.poll) => {}
                        _ = self.stop.cancelled() => return,
                    }
                }
            }
        }
    }

    async fn fail_unknown(&self, op: operations::OperationRow) {
        let err = super::steps::status_json(
            super::steps::RpcCode::Internal,
            &format!("this server cannot run operations of type {}", op.op_type),
            "UNKNOWN_OPERATION_TYPE",
            &Default::default(),
        );
        let steps = super::steps::skip_unstarted_json(
            &op.steps,
            &format!("this server cannot run {} operations", op.op_type),
        );
        let f = operations::Finish {
            state: crate::domain::OperationState::Failed,
            steps: &steps,
            response: None,
            error: Some(&err),
        };
        if let Err(e) = operations::finish(&self.env.db, op.id, op.generation, f).await {
            tracing::warn!(operation.id = %op.id, error = %format_args!("{e:#}"), "could not fail the operation");
        }
    }
}
