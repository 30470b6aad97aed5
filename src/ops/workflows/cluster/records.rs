//! Record changes that come with a provisioning operation's end, written in the same
//! transaction as the operation's final state (so a crash never leaves an operation
//! finished with its cluster still PROVISIONING, or the reverse).
//!
//! Invariant: after any end (success, failure, cancel) the records say what a later
//! `up` or `down` needs: a failed `up` leaves the cluster ERROR (both `up` again and
//! `down` work on it), a finished `down` leaves it DELETED.

use crate::store::operations::{self, Finish, OperationRow};
use crate::store::{Db, StoreError, clusters, node_pools};

use super::{ClusterOpInput, OpKind};

/// A `down` is queued or done: an earlier operation's end does not change that.
const AWAITING_DOWN: &[&str] = &["DELETING", "DELETED"];

pub async fn finish(
    db: &Db,
    kind: OpKind,
    op: &OperationRow,
    f: Finish<'_>,
) -> Result<bool, StoreError> {
    let state = f.state;
    let mut tx = db.begin().await?;
    if !operations::finish(&mut *tx, op.id, op.generation, f).await? {
        return Ok(false);
    }
    if let Ok(input) = serde_json::from_value::<ClusterOpInput>(op.input.clone()) {
        apply(&mut tx, kind, &input, state == "SUCCEEDED").await?;
    }
    tx.commit().await?;
    Ok(true)
}

async fn apply(
    tx: &mut sqlx::PgConnection,
    kind: OpKind,
    input: &ClusterOpInput,
    ok: bool,
) -> Result<(), StoreError> {
    let id = input.cluster_id;
    let pools = Some(input.pools.as_slice());
    match (kind, ok) {
        (OpKind::Up, true) => {
            clusters::set_state_unless(&mut *tx, id, "RUNNING", false, AWAITING_DOWN).await?;
            // Every pool `up` ensured exists now (its own and any it repaired).
            node_pools::set_state(&mut *tx, id, None, "RUNNING", &["STOPPING"]).await?;
        }
        (OpKind::Up, false) => {
            clusters::set_state_unless(&mut *tx, id, "ERROR", false, AWAITING_DOWN).await?;
            node_pools::set_state(&mut *tx, id, pools, "ERROR", &["RUNNING"]).await?;
        }
        (OpKind::Down, true) => {
            clusters::set_state(&mut *tx, id, "DELETED", false).await?;
            node_pools::set_state(&mut *tx, id, None, "DELETED", &[]).await?;
        }
        (OpKind::Down, false) => {
            clusters::set_state(&mut *tx, id, "ERROR", false).await?;
        }
        (OpKind::AddPool, true) => {
            node_pools::set_state(&mut *tx, id, pools, "RUNNING", &[]).await?;
        }
        (OpKind::AddPool | OpKind::RemovePool, false) => {
            node_pools::set_state(&mut *tx, id, pools, "ERROR", &[]).await?;
        }
        (OpKind::RemovePool, true) => {
            node_pools::delete(&mut *tx, id, &input.pools).await?;
        }
    }
    Ok(())
}
