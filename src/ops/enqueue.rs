//! Inserting an operation row (QUEUED, steps PENDING) inside the caller's transaction,
//! with AIP-155 idempotency per caller and the team's cap; and the coalescing enqueue of
//! kinds that read what they converge when they run. Apart from [`super::queue`] so the
//! kinds (which enqueue follow-ups) and the queue (which reads the kinds) do not import
//! each other.
//!
//! Invariant: a mutation is acknowledged only after its operation row is committed; two
//! identical requests with the same key, even concurrent, yield one operation.

use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::domain::{OperationState, OperationType};
use crate::store::operations::{self, NewOperation, OperationRow};
use crate::store::{Db, StoreError};

use super::steps::StepRecord;

/// Keys are remembered this long (AIP-155 suggests at least an hour; the API says 24 h).
pub const IDEMPOTENCY_TTL_HOURS: i64 = 24;

/// A caller's idempotency key and a fingerprint of the request it came with.
#[derive(Debug, Clone)]
pub struct Idempotency {
    pub key: String,
    pub fingerprint: String,
}

#[derive(Debug, Clone)]
pub struct Enqueue {
    pub op_type: OperationType,
    pub target: String,
    /// Operations with the same key run one at a time, in creation order.
    pub serial_key: String,
    pub team_id: String,
    pub cluster_id: Option<Uuid>,
    pub created_by: String,
    /// The kind's typed input, serialized ([`input_of`]).
    pub input: Value,
    pub plan: Option<Value>,
    pub steps: Vec<StepRecord>,
    pub idempotency: Option<Idempotency>,
}

#[derive(Debug, thiserror::Error)]
pub enum EnqueueError {
    #[error("the request id was already used for a different request")]
    KeyReused { operation_id: Uuid },
    #[error("the team has {} unfinished operations, its cap is {}", .0.unfinished, .0.cap)]
    TooMany(crate::store::team_queue::OverCap),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for EnqueueError {
    fn from(e: sqlx::Error) -> Self {
        EnqueueError::Store(StoreError::Db(e))
    }
}

/// The enqueue result: the operation, and whether this call created it.
pub struct Enqueued {
    pub op: OperationRow,
    pub created: bool,
}

/// Insert the operation inside the caller's transaction (commit to accept it). When the
/// key names an earlier operation, returns it with `created: false`: the caller must roll
/// back its own changes.
pub async fn enqueue_in(tx: &mut PgConnection, req: &Enqueue) -> Result<Enqueued, EnqueueError> {
    enqueue_as(tx, req, OperationState::Queued).await
}

/// [`enqueue_in`] as PENDING_APPROVAL: claimed by no worker and outside the team's cap
/// until it is approved. `req.serial_key` should be the operation's own (it joins its
/// cluster's queue when approved).
pub async fn enqueue_pending(
    tx: &mut PgConnection,
    req: &Enqueue,
) -> Result<Enqueued, EnqueueError> {
    enqueue_as(tx, req, OperationState::PendingApproval).await
}

async fn enqueue_as(
    tx: &mut PgConnection,
    req: &Enqueue,
    state: OperationState,
) -> Result<Enqueued, EnqueueError> {
    let id = Uuid::now_v7();
    if let Some(idem) = &req.idempotency {
        let fresh = operations::insert_idempotency_key(
            tx,
            &req.created_by,
            &idem.key,
            &idem.fingerprint,
            id,
            IDEMPOTENCY_TTL_HOURS,
        )
        .await?;
        if !fresh {
            let (existing, fingerprint) = operations::find_idempotent(
                &mut *tx,
                &req.created_by,
                &idem.key,
                IDEMPOTENCY_TTL_HOURS,
            )
            .await?
            .ok_or(StoreError::Db(sqlx::Error::RowNotFound))?;
            if fingerprint != idem.fingerprint {
                return Err(EnqueueError::KeyReused {
                    operation_id: existing,
                });
            }
            let op = operations::get(&mut *tx, existing)
                .await?
                .ok_or(StoreError::Db(sqlx::Error::RowNotFound))?;
            return Ok(Enqueued { op, created: false });
        }
    }
    if req.op_type.counts_toward_cap()
        && state == OperationState::Queued
        && let Some(over) = crate::store::team_queue::over_cap(tx, &req.team_id).await?
    {
        return Err(EnqueueError::TooMany(over));
    }
    let op = operations::insert(
        tx,
        &NewOperation {
            id,
            op_type: req.op_type.as_str(),
            target: &req.target,
            serial_key: &req.serial_key,
            team_id: &req.team_id,
            cluster_id: req.cluster_id,
            created_by: &req.created_by,
            request_id: req.idempotency.as_ref().map(|i| i.key.as_str()),
            input: &req.input,
            plan: req.plan.as_ref(),
            steps: serde_json::to_value(&req.steps).unwrap_or(Value::Null),
            state,
        },
    )
    .await?;
    Ok(Enqueued { op, created: true })
}

/// Enqueue `req` unless an operation of its type is still QUEUED under its serial key
/// (then that one, `created: false`): for kinds that read what they converge when they
/// run (SYNC_ACCESS), one queued operation covers every request made before it starts.
pub async fn enqueue_coalesced(
    tx: &mut PgConnection,
    req: &Enqueue,
) -> Result<Enqueued, EnqueueError> {
    let queued =
        crate::store::access::queued_with_key(&mut *tx, &req.serial_key, req.op_type.as_str())
            .await?;
    if let Some(id) = queued
        && let Some(op) = operations::get(&mut *tx, id).await?
    {
        return Ok(Enqueued { op, created: false });
    }
    enqueue_in(tx, req).await
}

/// Enqueue with no other record change.
pub async fn enqueue(db: &Db, req: &Enqueue) -> Result<Enqueued, EnqueueError> {
    let mut tx = db.begin().await?;
    let r = enqueue_in(&mut tx, req).await?;
    if r.created {
        tx.commit().await?;
    } else {
        tx.rollback().await?;
    }
    Ok(r)
}
