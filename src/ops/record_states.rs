//! Record changes that come with an operation's end, written in the same transaction as
//! the operation's final state (so a crash never leaves an operation finished with its
//! cluster still PROVISIONING, or the reverse). Every path that ends an operation comes
//! here: the worker's finish ([`finish`]) and the cancel of a queued operation
//! ([`settle`] with [`End::Withdrawn`]). What each kind of operation does to records is
//! its own declaration ([`Records`], required of every kind in `ops::kinds`); this
//! module only carries it out.
//!
//! A record's `state` is either settled (RUNNING, ERROR, DELETED) or the intent of an
//! unfinished operation (cluster: PROVISIONING or RECONCILING for an `up`, DELETING for
//! a `down`; pool: PROVISIONING for a pool add or a new cluster's `up`, STOPPING for a
//! pool remove); while an intent is shown, the last settled state waits in
//! `settled_state`.
//!
//! Invariant: after any end the records show the intent of an operation that is still
//! unfinished, or else the settled state the operations that ran left; never an intent
//! nobody holds. So DELETING means a `down` is really unfinished, and `up`, `down`,
//! pool add and pool remove all work from what is left: a failed or cancelled run
//! leaves ERROR, an operation that never ran leaves the records as they were before it
//! was asked for (a pool never created is forgotten; a cluster never created is ERROR,
//! which `up` completes and `down` removes). An operation whose stored input does not
//! say which cluster and pools it names cannot be settled: it ends with its records left
//! as they are and an error in the log (it failed already: its steps could not read that
//! input either).

use std::collections::BTreeSet;

use serde::Deserialize;
use uuid::Uuid;

use crate::domain::{ClusterState, OperationState, OperationType, PoolState, SettledState};
use crate::store::operations::{self, Finish, OperationRow};
use crate::store::{StoreError, clusters, node_pools};

use super::steps::any_started;

pub const RUNNING: SettledState = SettledState::Running;
pub const ERROR: SettledState = SettledState::Error;
pub const DELETED: SettledState = SettledState::Deleted;

/// What an operation kind does to its cluster's and pools' records, declared by every
/// kind (there is no default: a kind that does not say does not compile).
#[derive(Debug, Clone, Copy)]
pub enum Records {
    /// Nothing, in any phase: while it is queued or running the records show what the
    /// other operations on the cluster leave, and its end changes no record.
    Untouched,
    /// A provisioning kind: its intent while unfinished, and the settled states it leaves.
    Cluster(ClusterRecords),
}

/// What a provisioning kind shows while unfinished (`intent`) and leaves after each end.
#[derive(Debug, Clone, Copy)]
pub struct ClusterRecords {
    pub intent: Intent,
    /// The cluster's settled state after the operation ended so, given the one before.
    pub cluster: fn(End, Settled) -> Settled,
    /// A pool's settled state after the operation ended so; `named`: the operation names
    /// the pool (it adds or removes it).
    pub pool: fn(End, bool, Settled) -> Settled,
}

/// The intent an unfinished provisioning operation shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// The cluster PROVISIONING (never settled) or RECONCILING; its named pools
    /// PROVISIONING.
    Up,
    /// The cluster DELETING.
    Down,
    /// Its named pools PROVISIONING.
    AddPools,
    /// Its named pools STOPPING.
    RemovePools,
}

/// The records a kind's operation is about: the fields every provisioning input has.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Scope {
    cluster_id: Uuid,
    #[serde(default)]
    pools: Vec<String>,
}

impl Scope {
    fn of(op_type: &str, input: &serde_json::Value) -> Option<Scope> {
        match Scope::deserialize(input) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!(operation.type = op_type, error = %e, "an unfinished operation's stored input names no cluster; its records are left as they are");
                None
            }
        }
    }
}

/// How a kind's records are looked up by its type (the registry in `ops::kinds`).
pub type RecordsOf = fn(OperationType) -> Records;

/// How an operation ended, as far as its records are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Succeeded,
    /// Failed or cancelled after a step started: the cloud may be half changed.
    Stopped,
    /// Ended before any step started (cancelled while queued): nothing changed.
    Withdrawn,
}

impl End {
    pub fn of(state: OperationState, steps: &serde_json::Value) -> End {
        if state == OperationState::Succeeded {
            End::Succeeded
        } else if any_started(steps) {
            End::Stopped
        } else {
            End::Withdrawn
        }
    }
}

/// A record's last settled state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Made by an operation that has not settled it yet.
    Never,
    Is(SettledState),
    /// A pool that no longer exists (removed, or never created): its record goes.
    Gone,
}

impl Settled {
    /// From a record's shown state (when settled) and its `settled_state` column.
    pub fn read(shown: Option<SettledState>, settled: Option<SettledState>) -> Settled {
        match shown.or(settled) {
            Some(s) => Settled::Is(s),
            None => Settled::Never,
        }
    }

    fn column(self) -> Option<SettledState> {
        match self {
            Settled::Is(s) => Some(s),
            Settled::Never | Settled::Gone => None,
        }
    }
}

/// The intents of the operations still unfinished on a cluster.
#[derive(Debug, Default)]
pub struct Intents {
    pub down: bool,
    pub up: bool,
    /// Pools being created (pool add, a new cluster's first pool).
    pub adding: BTreeSet<String>,
    /// Pools being removed.
    pub removing: BTreeSet<String>,
}

impl Intents {
    /// The intents of `unfinished` operations (type, input), each kind's read from its
    /// declaration; an operation of an unknown type or whose input names no cluster is
    /// logged and shows nothing.
    fn of(unfinished: &[operations::Unfinished], records_of: RecordsOf) -> Intents {
        let mut i = Intents::default();
        for operations::Unfinished { op_type, input, .. } in unfinished {
            let Ok(t) = OperationType::parse(op_type) else {
                tracing::error!(operation.type = %op_type, "an unfinished operation has an unknown type; it shows no intent");
                continue;
            };
            let Records::Cluster(r) = records_of(t) else {
                continue;
            };
            let Some(scope) = Scope::of(op_type, input) else {
                continue;
            };
            match r.intent {
                Intent::Down => i.down = true,
                Intent::Up => {
                    i.up = true;
                    i.adding.extend(scope.pools);
                }
                Intent::AddPools => i.adding.extend(scope.pools),
                Intent::RemovePools => i.removing.extend(scope.pools),
            }
        }
        i
    }
}

/// What the cluster record shows: DELETED for good, else the intent of an unfinished
/// operation, else its settled state (a record never settled is ERROR: `up` completes it).
pub fn cluster_shown(settled: Settled, intents: &Intents) -> ClusterState {
    match settled {
        Settled::Is(DELETED) => ClusterState::Deleted,
        _ if intents.down => ClusterState::Deleting,
        Settled::Never if intents.up => ClusterState::Provisioning,
        _ if intents.up => ClusterState::Reconciling,
        Settled::Is(s) => s.cluster(),
        Settled::Never | Settled::Gone => ClusterState::Error,
    }
}

/// What a pool record shows (`None`: the record goes).
pub fn pool_shown(settled: Settled, intents: &Intents, pool: &str) -> Option<PoolState> {
    match settled {
        Settled::Is(DELETED) => Some(PoolState::Deleted),
        _ if intents.removing.contains(pool) => Some(PoolState::Stopping),
        _ if intents.adding.contains(pool) => Some(PoolState::Provisioning),
        Settled::Is(s) => Some(s.pool()),
        Settled::Gone => None,
        // Recorded but never settled, and no operation holds it: `up` creates it.
        Settled::Never => Some(PoolState::Error),
    }
}

/// End the operation (fenced) with the record changes its end implies, in one
/// transaction (a savepoint inside the caller's, when `conn` is in one): `records` is
/// what its kind declared.
pub async fn finish(
    conn: &mut sqlx::PgConnection,
    records: &ClusterRecords,
    records_of: RecordsOf,
    op: &OperationRow,
    f: Finish<'_>,
) -> Result<bool, StoreError> {
    let end = End::of(f.state, f.steps);
    let mut tx = sqlx::Connection::begin(conn).await?;
    if !operations::finish(&mut *tx, op.id, op.generation, f).await? {
        return Ok(false);
    }
    settle(&mut tx, records, records_of, op, end).await?;
    tx.commit().await?;
    Ok(true)
}

/// Re-derive the cluster's and its pools' records after `op` (of a kind that changes
/// them as `records` says) ended `end`, inside the caller's transaction.
pub async fn settle(
    tx: &mut sqlx::PgConnection,
    records: &ClusterRecords,
    records_of: RecordsOf,
    op: &OperationRow,
    end: End,
) -> Result<(), StoreError> {
    let Some(scope) = Scope::of(&op.op_type, &op.input) else {
        return Ok(());
    };
    let id = scope.cluster_id;
    // The cluster lock first: an enqueue on this cluster holds it until it commits, so
    // the unfinished operations read next include every accepted one.
    let Some((state, settled)) = clusters::lock_states(&mut *tx, id).await? else {
        return Ok(());
    };
    let unfinished = operations::unfinished_on_cluster(&mut *tx, id).await?;
    let intents = Intents::of(&unfinished, records_of);
    let c = (records.cluster)(end, Settled::read(state.settled(), settled));
    let shown = cluster_shown(c, &intents);
    let c = match c {
        Settled::Never if shown == ClusterState::Error => Settled::Is(ERROR),
        c => c,
    };
    clusters::show(&mut *tx, id, shown, c.column()).await?;
    let mut gone = Vec::new();
    for (pool, state, settled) in node_pools::lock_states(&mut *tx, id).await? {
        let named = scope.pools.contains(&pool);
        let p = (records.pool)(end, named, Settled::read(state.settled(), settled));
        match pool_shown(p, &intents, &pool) {
            Some(s) => node_pools::show(&mut *tx, id, &pool, s, p.column()).await?,
            None => gone.push(pool),
        }
    }
    if !gone.is_empty() {
        node_pools::delete(&mut *tx, id, &gone).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends() {
        let started = serde_json::json!([{"id": "a", "description": "", "state": "CANCELLED", "attempts": 1}]);
        let fresh =
            serde_json::json!([{"id": "a", "description": "", "state": "PENDING", "attempts": 0}]);
        use OperationState::{Cancelled, Failed, Succeeded};
        assert_eq!(End::of(Succeeded, &fresh), End::Succeeded);
        assert_eq!(End::of(Cancelled, &started), End::Stopped);
        assert_eq!(End::of(Failed, &started), End::Stopped);
        assert_eq!(End::of(Cancelled, &fresh), End::Withdrawn);
    }
}
