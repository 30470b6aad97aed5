//! Workflows: for each operation type, how to run one named step. The list of steps (a
//! DAG) is fixed at enqueue time and stored with the operation; a workflow only knows
//! how to carry out a step given its input and the results it declared it reads.
//!
//! Invariant: running a step twice has the effect of running it once (ensure
//! semantics), or its effect is committed with the step's completion in one fenced
//! statement ([`Workflow::commit_step`]).

pub mod cluster;
pub mod noop;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::store::operations::{self, OperationRow};
use sqlx::PgConnection;

use crate::store::StoreError;

use super::steps::{StepError, StepRecord};

/// What a step sees while it runs.
pub struct StepCtx {
    pub op: Arc<OperationRow>,
    pub step: StepRecord,
    /// Results of the steps named in `step.reads`.
    pub results: HashMap<String, Value>,
    /// Fires when the operation is cancelled: abandon long waits at once.
    pub cancel: CancellationToken,
    /// 1 for the first attempt in this claim.
    pub attempt: u32,
}

pub trait Workflow: Send + Sync + 'static {
    fn op_type(&self) -> &'static str;

    /// Operation-level deadline, counted from the first start.
    fn deadline(&self) -> Duration;

    fn run_step<'a>(&'a self, ctx: &'a StepCtx) -> BoxFuture<'a, Result<Value, StepError>>;

    /// Persist the steps after `completed` finished (fenced on the claim's generation) on
    /// `conn` (alone, or in the caller's transaction, which may also end the operation),
    /// together with any effect the step commits on our own database, atomically.
    /// False: the fence moved. The default stores the steps alone.
    fn commit_step<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        steps: &'a serde_json::Value,
        completed: &'a StepCtx,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let op = &completed.op;
        Box::pin(operations::save_steps(conn, op.id, op.generation, steps))
    }

    /// End the operation (fenced on the claim's generation) on `conn` (alone, or in the
    /// caller's transaction), together with the record changes its outcome implies,
    /// atomically. False: the fence moved. The default ends the operation alone.
    fn finish<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        op: &'a OperationRow,
        f: operations::Finish<'a>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(operations::finish(conn, op.id, op.generation, f))
    }

    /// The operation's `response` once every step is done (an error fails the
    /// operation: its input could not be read).
    fn response(&self, op: &OperationRow, steps: &[StepRecord]) -> Result<Value, StepError>;
}

/// Workflows by operation type.
#[derive(Clone, Default)]
pub struct Registry {
    by_type: HashMap<&'static str, Arc<dyn Workflow>>,
}

impl Registry {
    pub fn new() -> Registry {
        Registry::default()
    }

    pub fn with(mut self, w: impl Workflow) -> Registry {
        self.by_type.insert(w.op_type(), Arc::new(w));
        self
    }

    pub fn get(&self, op_type: &str) -> Option<Arc<dyn Workflow>> {
        self.by_type.get(op_type).cloned()
    }

    /// (type, deadline seconds) for the claim query.
    pub fn deadlines(&self) -> Vec<(String, f64)> {
        self.by_type
            .values()
            .map(|w| (w.op_type().to_owned(), w.deadline().as_secs_f64()))
            .collect()
    }
}
