//! The worker pool inside `kineticd serve`: one claim loop that runs each claimed
//! operation as its own task, up to `workers` operations at once, and goes idle until
//! woken (LISTEN/NOTIFY) or until the fallback poll.
//!
//! An operation spends nearly all its time waiting on Google, holding no database
//! connection, so concurrency is bounded by what operations hold rather than by a few
//! busy workers: `workers` running operations at most (each a task, its writes taking a
//! pooled connection only while they run), up to [`CLAIM_BATCH`] claimed in one
//! statement, every lease renewed by one statement ([`super::leases`]).
//!
//! Invariants: a claim is a short transaction; at most `workers` operations run at once
//! in this process; on shutdown the loop stops claiming, running steps get the grace
//! period to end, then leases are handed back so another process resumes at once.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::store::{Db, operations};

use super::deliveries::{self, DeliveryConfig};
use super::events::Events;
use super::leases::Leases;
use super::runner::{self, Outcome, RunEnv};
use super::steps::RetryPolicy;
use super::workflows::Registry;

/// Operations claimed by one statement at most.
pub const CLAIM_BATCH: usize = 32;

/// The default of `workers`: operations one process runs at once. An operation waiting
/// on Google costs a task and its state (tens of KiB), not a thread or a connection.
pub const DEFAULT_MAX_OPERATIONS: usize = 500;

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Operations this process runs at once (0: none, an API-only replica).
    pub workers: usize,
    /// Identifies this process in `lease_owner` (host:pid:uuid).
    pub owner: String,
    pub lease: Duration,
    /// Fallback poll when no notification arrives (also finds expired leases).
    pub poll: Duration,
    pub step_concurrency: usize,
    pub policy: RetryPolicy,
    /// The webhook delivery loop this pool runs beside its operations.
    pub deliveries: DeliveryConfig,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            workers: DEFAULT_MAX_OPERATIONS,
            owner: default_owner(),
            lease: Duration::from_secs(30),
            poll: Duration::from_secs(2),
            step_concurrency: 8,
            policy: RetryPolicy::default(),
            deliveries: DeliveryConfig::default(),
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
    claims: tokio::task::JoinHandle<()>,
    stop_claiming: CancellationToken,
    drain: CancellationToken,
    hard_stop: CancellationToken,
    stop_renewing: CancellationToken,
    renewals: tokio::task::JoinHandle<()>,
}

impl WorkerPool {
    pub fn start(db: Db, events: Arc<Events>, registry: Registry, cfg: WorkerConfig) -> WorkerPool {
        let stop_claiming = CancellationToken::new();
        let drain = CancellationToken::new();
        let hard_stop = CancellationToken::new();
        let stop_renewing = CancellationToken::new();
        register_counters(&registry);
        let leases = Arc::new(Leases::default());
        let renewals = tokio::spawn(leases.clone().run(
            db.clone(),
            cfg.lease,
            stop_renewing.clone(),
        ));
        tokio::spawn(expire_approvals(
            db.clone(),
            cfg.poll,
            stop_claiming.clone(),
        ));
        tokio::spawn(deliveries::run(
            db.clone(),
            events.clone(),
            cfg.owner.clone(),
            cfg.deliveries.clone(),
            stop_claiming.clone(),
        ));
        let env = RunEnv {
            db,
            events,
            policy: cfg.policy,
            step_concurrency: cfg.step_concurrency,
            leases,
            drain: drain.clone(),
            hard_stop: hard_stop.clone(),
        };
        let claimer = Claimer {
            env,
            registry,
            owner: cfg.owner.clone(),
            lease: cfg.lease,
            poll: cfg.poll,
            stop: stop_claiming.clone(),
            slots: Arc::new(Semaphore::new(cfg.workers)),
            running: JoinSet::new(),
        };
        let claims = tokio::spawn(claimer.run());
        tracing::info!(workers = cfg.workers, owner = %cfg.owner, "worker pool started");
        WorkerPool {
            claims,
            stop_claiming,
            drain,
            hard_stop,
            stop_renewing,
            renewals,
        }
    }

    /// Stop claiming, let running steps finish for up to `grace`, then release leases.
    pub async fn shutdown(mut self, grace: Duration) {
        self.stop_claiming.cancel();
        self.drain.cancel();
        if tokio::time::timeout(grace, &mut self.claims).await.is_err() {
            tracing::warn!(
                ?grace,
                "grace period over; releasing leases of running operations"
            );
            self.hard_stop.cancel();
            let _ = (&mut self.claims).await;
        }
        self.stop_renewing.cancel();
        let _ = (&mut self.renewals).await;
    }
}

/// End expired approvals every `every` until `stop` (each replica with workers sweeps;
/// they skip each other's rows).
async fn expire_approvals(db: Db, every: Duration, stop: CancellationToken) {
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => return,
        }
        if let Err(e) = super::approvals::expire_due(&db, 100).await {
            tracing::warn!(error = %format_args!("{e:#}"), "approval expiry failed");
        }
    }
}

/// Dropped without [`WorkerPool::shutdown`]: every task stops at once (the running
/// operations with it; their leases expire and another worker resumes them).
impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.claims.abort();
        self.renewals.abort();
    }
}

/// Series that a healthy run may never touch, registered at 0 so `/metrics` shows them
/// from the start (a rate over a missing series is no rate at all).
fn register_counters(registry: &Registry) {
    metrics::counter!("kineticd_lease_rescues_total").increment(0);
    metrics::describe_gauge!(
        "kineticd_operations_running",
        "Operations this process runs now (at most KINETIC_WORKERS); registered at 0 at start"
    );
    metrics::gauge!("kineticd_operations_running").set(0.0);
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

/// The claim loop: claims while a slot is free, spawns each operation, and waits for a
/// wake-up when nothing is claimable.
struct Claimer {
    env: RunEnv,
    registry: Registry,
    owner: String,
    lease: Duration,
    poll: Duration,
    stop: CancellationToken,
    /// One permit per operation that may run now.
    slots: Arc<Semaphore>,
    running: JoinSet<()>,
}

impl Claimer {
    async fn run(mut self) {
        let deadlines = self.registry.deadlines();
        let lease = self.lease.as_secs_f64();
        let events = self.env.events.clone();
        while !self.stop.is_cancelled() {
            while self.running.try_join_next().is_some() {}
            // A free slot first: with every slot taken nothing is claimed.
            let first = tokio::select! {
                p = self.slots.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break,
                },
                _ = self.stop.cancelled() => break,
            };
            // Register for a wake-up before looking, so a notification in between counts.
            let notified = events.work().notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let want = (1 + self.slots.available_permits()).min(CLAIM_BATCH);
            let claimed =
                operations::claim_many(&self.env.db, &self.owner, lease, &deadlines, want as i64)
                    .await;
            match claimed {
                Ok(rows) => {
                    let full = rows.len() == want;
                    let mut permit = Some(first);
                    for op in rows {
                        let slot = match permit.take() {
                            Some(p) => p,
                            // Only this loop takes permits: the ones counted are still free.
                            None => match self.slots.clone().try_acquire_owned() {
                                Ok(p) => p,
                                Err(_) => break,
                            },
                        };
                        self.spawn(op, slot);
                    }
                    if full {
                        continue;
                    }
                    drop(permit);
                    tokio::select! {
                        _ = &mut notified => {}
                        _ = tokio::time::sleep(self.poll) => {}
                        _ = self.stop.cancelled() => break,
                    }
                }
                Err(e) => {
                    drop(first);
                    tracing::warn!(error = %format_args!("{e:#}"), "claiming failed; backing off");
                    tokio::select! {
                        _ = tokio::time::sleep(self.poll) => {}
                        _ = self.stop.cancelled() => break,
                    }
                }
            }
        }
        // Running operations drain (or are released) before the pool is done.
        while self.running.join_next().await.is_some() {}
    }

    /// Run `op` as its own task, holding `slot` until it ends.
    fn spawn(&mut self, op: operations::OperationRow, slot: OwnedSemaphorePermit) {
        let id = op.id;
        let Some(wf) = self.registry.get(&op.op_type) else {
            tracing::error!(operation.id = %id, op_type = %op.op_type, "no workflow for this operation type");
            let db = self.env.db.clone();
            self.running.spawn(async move {
                fail_unknown(&db, op).await;
                drop(slot);
            });
            return;
        };
        tracing::debug!(operation.id = %id, owner = %self.owner, attempt = op.attempt, "claimed");
        let span = tracing::info_span!("operation",
            operation.id = %id, operation.type = %op.op_type);
        let env = self.env.clone();
        let running = metrics::gauge!("kineticd_operations_running");
        running.increment(1.0);
        self.running.spawn(
            async move {
                let _count = Decrement(running);
                match runner::run(env, wf, op).await {
                    Outcome::Finished(_) => {}
                    Outcome::LeaseLost => {
                        tracing::warn!(operation.id = %id, "stopped: lease lost")
                    }
                    Outcome::Released => {
                        tracing::info!(operation.id = %id, "lease released for another worker")
                    }
                }
                drop(slot);
            }
            .instrument(span),
        );
    }
}

/// Counts a running operation out when its task ends (or is aborted).
struct Decrement(metrics::Gauge);

impl Drop for Decrement {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

async fn fail_unknown(db: &Db, op: operations::OperationRow) {
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
    match operations::finish(db, op.id, op.generation, f).await {
        Ok(true) => {
            let state = crate::domain::OperationState::Failed;
            runner::announce(db, &operations::finished_events(op.id, state)).await
        }
        Ok(false) => {}
        Err(e) => {
            tracing::warn!(operation.id = %op.id, error = %format_args!("{e:#}"), "could not fail the operation")
        }
    }
}
