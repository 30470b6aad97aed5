//! Enqueueing: an operation row (QUEUED, steps PENDING) committed in the same transaction
//! as any record change, with AIP-155 idempotency per caller; and cancelling, which
//! ends a still QUEUED operation at once.
//!
//! Invariant: a mutation is acknowledged only after its operation row is committed; two
//! identical requests with the same key, even concurrent, yield one operation. A queued
//! operation cancelled ends together with the undoing of the record changes its
//! enqueue made (what its kind declared: [`super::kinds::withdrawn`]).

use serde_json::Value;
use uuid::Uuid;

use crate::store::operations::{self, OperationRow};
use crate::store::{Db, StoreError};

use super::kinds::{self, OperationKind};
use super::steps::{cancelled_status, skip_unstarted_json};

pub use super::enqueue::{
    Enqueue, EnqueueError, Enqueued, IDEMPOTENCY_TTL_HOURS, Idempotency, enqueue,
    enqueue_coalesced, enqueue_in, enqueue_pending,
};

/// The `input` an operation of kind `K` stores: its typed input, serialized (plain data:
/// it always serializes; a failure is an internal error, never an empty input).
pub fn input_of<K: OperationKind>(input: &K::Input) -> Result<Value, EnqueueError> {
    serde_json::to_value(input)
        .map_err(|e| EnqueueError::Store(StoreError::Db(sqlx::Error::Encode(Box::new(e)))))
}

/// A stable fingerprint of a request (FNV-1a over method, path and canonical body).
pub fn fingerprint(method: &str, path: &str, body: &Value) -> String {
    let text = format!("{method} {path} {body}");
    format!("{:016x}", crate::domain::hash::fnv1a(text.bytes()))
}

/// The operation an earlier request with the same key created, if any (checked before a
/// request changes records, so a repeat changes nothing). A key reused for a different
/// request is an error.
pub async fn replay(
    db: &Db,
    created_by: &str,
    idem: Option<&Idempotency>,
) -> Result<Option<OperationRow>, EnqueueError> {
    let Some(idem) = idem else { return Ok(None) };
    let Some((id, fingerprint)) =
        operations::find_idempotent(db, created_by, &idem.key, IDEMPOTENCY_TTL_HOURS).await?
    else {
        return Ok(None);
    };
    if fingerprint != idem.fingerprint {
        return Err(EnqueueError::KeyReused { operation_id: id });
    }
    Ok(operations::get(db, id).await?)
}

/// Cancel an operation. A QUEUED one ends CANCELLED at once, its steps SKIPPED and the
/// record changes its request made undone, in one transaction (a running one ends
/// through its worker, which does the same). Returns the row after the change, `None`
/// if absent.
pub async fn cancel(db: &Db, id: Uuid) -> Result<Option<OperationRow>, StoreError> {
    let err = cancelled_status();
    let mut tx = db.begin().await?;
    let Some(c) = operations::request_cancel(&mut tx, id, &err, |steps| {
        skip_unstarted_json(steps, "the operation was cancelled")
    })
    .await?
    else {
        return Ok(None);
    };
    if c.withdrawn {
        kinds::withdrawn(&mut tx, &c.row).await?;
    }
    tx.commit().await?;
    Ok(Some(c.row))
}
