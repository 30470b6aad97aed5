//! Operation kinds as types: each kind of operation is one type implementing
//! [`OperationKind`] (its [`OperationType`], typed input, steps, deadline, how a step
//! runs, what its records show, its typed response), registered once in [`kinds!`]
//! below. That one registration feeds the worker's registry ([`registry`]), the records'
//! lookup by type ([`records_of`], which a cancel while queued uses through
//! [`withdrawn`]); the `type=` filter and the OpenAPI enum read [`OperationType`], whose
//! every variant the registration must name (an exhaustive match: a type without a kind,
//! or a kind of a type it is not registered under, does not compile).
//!
//! Invariant: a kind's stored input is decoded with its type before any of its steps
//! runs, and its steps with the kind's own reading of them; what does not decode fails
//! the operation (BAD_OPERATION_INPUT), never runs as a default. Stored JSON keeps its
//! form: operations queued by older code run to the end (tests/provision/compat.rs).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sqlx::PgConnection;

use crate::domain::{OperationState, OperationType};
use crate::store::StoreError;
use crate::store::operations::{self, Finish, OperationRow};

use super::record_states::{self, End, Records};
use super::steps::{RpcCode, StepError, StepRecord};
use super::workflows::cluster::{self, Env, access, drill, resize};
use super::workflows::{Registry, StepCtx, Workflow, noop};

/// One kind of operation.
pub trait OperationKind: Send + Sync + Sized + 'static {
    /// Its type, as stored and shown.
    const TYPE: OperationType;
    /// What its records show while it is unfinished and after each end.
    const RECORDS: Records;
    /// Only in development and test mode (NOOP).
    const TEST_ONLY: bool;
    /// What its operations store as `input`.
    type Input: Serialize + DeserializeOwned + Send + Sync + 'static;
    /// One of its steps, as it reads a stored step.
    type Step: Send + Sync;
    /// Its `response` once every step is done; its schema name is the `@type` the
    /// response is read with, and its schema one member of the document's union.
    type Response: Serialize + utoipa::ToSchema;
    /// What its steps are made from when it is enqueued (a provisioning plan; NOOP's
    /// spec).
    type Plan: Serialize;

    /// Its steps, as enqueued for `plan` (stored with the operation; the runner orders
    /// them by their dependencies).
    fn steps(plan: &Self::Plan) -> Vec<StepRecord>;

    /// The `plan` stored with the operation (what a preview showed); none by default.
    fn stored_plan(plan: &Self::Plan) -> Option<Value> {
        let _ = plan;
        None
    }

    /// The kind on this process's environment.
    fn build(env: &Arc<Env>) -> Self;

    /// Operation-level deadline, counted from the first start.
    fn deadline(&self) -> Duration;

    /// Read a stored step as one of this kind's (a step of another kind is an error).
    fn step(&self, stored: &StepRecord) -> Result<Self::Step, String>;

    fn run_step<'a>(
        &'a self,
        input: &'a Self::Input,
        step: &'a Self::Step,
        ctx: &'a StepCtx,
    ) -> BoxFuture<'a, Result<Value, StepError>>;

    /// Its response once every step is done (an error fails the operation).
    fn response(
        &self,
        input: &Self::Input,
        steps: &[StepRecord],
    ) -> Result<Self::Response, StepError>;

    /// An operation to enqueue, in the transaction that ends `op` SUCCEEDED (after `up`:
    /// its SYNC_ACCESS); none by default.
    fn follow_up(&self, op: &OperationRow) -> Option<super::enqueue::Enqueue> {
        let _ = op;
        None
    }

    /// Persist the steps after `completed` finished (fenced) on `conn` (alone, or in
    /// the caller's transaction), with any effect of the step on our own database,
    /// atomically; the default stores the steps alone.
    fn commit_step<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        steps: &'a Value,
        completed: &'a StepCtx,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let op = &completed.op;
        Box::pin(operations::save_steps(conn, op.id, op.generation, steps))
    }
}

/// A stored input or step this kind cannot read: the operation fails, never guesses.
fn bad_input(message: String) -> StepError {
    StepError::terminal(RpcCode::Internal, "BAD_OPERATION_INPUT", message)
}

/// The input of `op` as kind `K` stores it.
pub fn input_of<K: OperationKind>(op: &OperationRow) -> Result<K::Input, StepError> {
    serde_json::from_value(op.input.clone())
        .map_err(|e| bad_input(format!("{} operation input: {e}", K::TYPE)))
}

/// A kind as the engine runs it (the object-safe [`Workflow`]).
pub struct Typed<K>(K);

impl<K: OperationKind> Workflow for Typed<K> {
    fn op_type(&self) -> &'static str {
        K::TYPE.as_str()
    }

    fn deadline(&self) -> Duration {
        self.0.deadline()
    }

    fn run_step<'a>(&'a self, ctx: &'a StepCtx) -> BoxFuture<'a, Result<Value, StepError>> {
        Box::pin(async move {
            let input = input_of::<K>(&ctx.op)?;
            let step = self
                .0
                .step(&ctx.step)
                .map_err(|e| bad_input(format!("step {} of {}: {e}", ctx.step.id, K::TYPE)))?;
            self.0.run_step(&input, &step, ctx).await
        })
    }

    fn commit_step<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        steps: &'a Value,
        completed: &'a StepCtx,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.0.commit_step(conn, steps, completed)
    }

    fn finish<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        op: &'a OperationRow,
        f: Finish<'a>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let next = match f.state {
            OperationState::Succeeded => self.0.follow_up(op),
            _ => None,
        };
        Box::pin(async move {
            let Some(next) = next else {
                return finish_records::<K>(conn, op, f).await;
            };
            let mut tx = sqlx::Connection::begin(conn).await?;
            if !finish_records::<K>(&mut tx, op, f).await? {
                return Ok(false);
            }
            super::enqueue::enqueue_coalesced(&mut tx, &next)
                .await
                .map_err(|e| match e {
                    super::enqueue::EnqueueError::Store(e) => e,
                    other => StoreError::Db(sqlx::Error::Protocol(other.to_string())),
                })?;
            tx.commit().await?;
            Ok(true)
        })
    }

    fn response(&self, op: &OperationRow, steps: &[StepRecord]) -> Result<Value, StepError> {
        let input = input_of::<K>(op)?;
        serde_json::to_value(self.0.response(&input, steps)?).map_err(|e| {
            StepError::terminal(
                RpcCode::Internal,
                "RESPONSE_NOT_WRITTEN",
                format!("the {} response could not be written: {e}", K::TYPE),
            )
        })
    }
}

/// End `op` with what the records of kind `K` show after it.
async fn finish_records<K: OperationKind>(
    conn: &mut PgConnection,
    op: &OperationRow,
    f: Finish<'_>,
) -> Result<bool, StoreError> {
    match K::RECORDS {
        Records::Untouched => operations::finish(conn, op.id, op.generation, f).await,
        Records::Cluster(r) => record_states::finish(conn, &r, records_of, op, f).await,
    }
}

/// One operation type's `response` schema, for the API document.
pub struct ResponseSchema {
    pub op_type: OperationType,
    pub name: String,
    pub schema: utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    /// The schemas it refers to, by name.
    pub uses: Vec<(
        String,
        utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    )>,
}

impl ResponseSchema {
    fn of<R: utoipa::ToSchema>(op_type: OperationType) -> Self {
        let mut uses = Vec::new();
        R::schemas(&mut uses);
        ResponseSchema {
            op_type,
            name: R::name().into_owned(),
            schema: R::schema(),
            uses,
        }
    }
}

/// The registration: every operation type and the kind that runs it.
macro_rules! kinds {
    ($($variant:ident => $kind:ty),+ $(,)?) => {
        /// What the records of an operation of type `t` show, as its kind declares.
        pub fn records_of(t: OperationType) -> Records {
            match t {
                $(OperationType::$variant => <$kind as OperationKind>::RECORDS,)+
            }
        }

        /// The kinds this process runs (NOOP only with `test_workflows`).
        pub fn registry(env: Arc<Env>, test_workflows: bool) -> Registry {
            let mut r = Registry::new();
            $(
                if test_workflows || !<$kind as OperationKind>::TEST_ONLY {
                    r = r.with(Typed(<$kind as OperationKind>::build(&env)));
                }
            )+
            r
        }

        /// The `@type` of the `response` of an operation of type `t`: the name of its
        /// kind's response schema.
        pub fn response_type(t: OperationType) -> std::borrow::Cow<'static, str> {
            match t {
                $(OperationType::$variant => {
                    <<$kind as OperationKind>::Response as utoipa::ToSchema>::name()
                })+
            }
        }

        /// The response schemas of the kinds a production process runs: per type, the
        /// schema's name, the schema, and the schemas it uses.
        pub fn response_schemas() -> Vec<ResponseSchema> {
            let mut out = Vec::new();
            $(
                if !<$kind as OperationKind>::TEST_ONLY {
                    out.push(ResponseSchema::of::<<$kind as OperationKind>::Response>(
                        OperationType::$variant,
                    ));
                }
            )+
            out
        }

        // Each kind is registered under its own type.
        const _: () = {
            $(assert!(matches!(<$kind as OperationKind>::TYPE, OperationType::$variant));)+
        };
    };
}

kinds! {
    UpCluster => cluster::Provisioning<cluster::Up>,
    DownCluster => cluster::Provisioning<cluster::Down>,
    AddNodePool => cluster::Provisioning<cluster::AddPool>,
    RemoveNodePool => cluster::Provisioning<cluster::RemovePool>,
    UpdateNodePool => resize::Resize,
    FailoverDrill => drill::Drill,
    SyncAccess => access::SyncAccess,
    Noop => noop::Noop,
}

/// The record changes of an operation that ended before it ran (cancelled while
/// queued), inside the caller's transaction. An unknown type is a corrupt row.
pub async fn withdrawn(tx: &mut sqlx::PgConnection, op: &OperationRow) -> Result<(), StoreError> {
    let row = crate::store::Row {
        table: "operations",
        id: &op.id,
    };
    let t: OperationType = row.state("op_type", &op.op_type)?;
    match records_of(t) {
        Records::Cluster(r) => record_states::settle(tx, &r, records_of, op, End::Withdrawn).await,
        Records::Untouched => Ok(()),
    }
}
