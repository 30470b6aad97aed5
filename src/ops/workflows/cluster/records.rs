//! Record changes that come with a provisioning operation's end, written in the same
//! transaction as the operation's final state (so a crash never leaves an operation
//! finished with its cluster still PROVISIONING, or the reverse). Every path that ends
//! an operation comes here: the worker's finish ([`finish`]) and the cancel of a queued
//! operation ([`withdrawn`]).
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
//! which `up` completes and `down` removes).

use std::collections::BTreeSet;

use crate::domain::{ClusterState, OperationState, PoolState, SettledState};
use crate::ops::steps::any_started;
use crate::store::operations::{self, Finish, OperationRow};
use crate::store::{Db, StoreError, clusters, node_pools};

use super::{ClusterOpInput, OpKind};

const RUNNING: SettledState = SettledState::Running;
const ERROR: SettledState = SettledState::Error;
const DELETED: SettledState = SettledState::Deleted;

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
    fn read(shown: Option<SettledState>, settled: Option<SettledState>) -> Settled {
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
    fn of(unfinished: &[(String, serde_json::Value)]) -> Intents {
        let mut i = Intents::default();
        for (op_type, input) in unfinished {
            let Some(kind) = OpKind::of_type(op_type) else {
                continue;
            };
            let input: Option<ClusterOpInput> = serde_json::from_value(input.clone()).ok();
            let pools = input.as_ref().map(|i| i.pools.clone()).unwrap_or_default();
            match kind {
                OpKind::Down => i.down = true,
                OpKind::Up => {
                    i.up = true;
                    i.adding.extend(pools);
                }
                OpKind::AddPool => i.adding.extend(pools),
                OpKind::RemovePool => i.removing.extend(pools),
            }
        }
        i
    }
}

/// The cluster's settled state after operation `kind` ended `end`.
pub fn cluster_settled(kind: OpKind, end: End, before: Settled) -> Settled {
    match (kind, end) {
        (OpKind::Up, End::Succeeded) => Settled::Is(RUNNING),
        (OpKind::Down, End::Succeeded) => Settled::Is(DELETED),
        (OpKind::Up | OpKind::Down, End::Stopped) => Settled::Is(ERROR),
        _ => before,
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

/// A pool's settled state after operation `kind` (naming the pool when `named`) ended.
pub fn pool_settled(kind: OpKind, end: End, named: bool, before: Settled) -> Settled {
    match (kind, end, named) {
        (OpKind::Down, End::Succeeded, _) => Settled::Is(DELETED),
        (OpKind::AddPool, End::Succeeded, true) => Settled::Is(RUNNING),
        (OpKind::RemovePool, End::Succeeded, true) => Settled::Gone,
        // `up` ensures every pool recorded before it ran, and its own.
        (OpKind::Up, End::Succeeded, _) if named || before != Settled::Never => {
            Settled::Is(RUNNING)
        }
        (OpKind::Up | OpKind::AddPool | OpKind::RemovePool, End::Stopped, true) => {
            Settled::Is(ERROR)
        }
        // A pool add that never ran created nothing.
        (OpKind::AddPool, End::Withdrawn, true) if before == Settled::Never => Settled::Gone,
        _ => before,
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

/// End the operation (fenced) with the record changes its end implies, in one transaction.
pub async fn finish(
    db: &Db,
    kind: OpKind,
    op: &OperationRow,
    f: Finish<'_>,
) -> Result<bool, StoreError> {
    let end = End::of(f.state, f.steps);
    let mut tx = db.begin().await?;
    if !operations::finish(&mut *tx, op.id, op.generation, f).await? {
        return Ok(false);
    }
    settle(&mut tx, kind, op, end).await?;
    tx.commit().await?;
    Ok(true)
}

/// The record changes of an operation that ended before it ran (cancelled while
/// queued), inside the caller's transaction; other operation types change nothing.
pub async fn withdrawn(tx: &mut sqlx::PgConnection, op: &OperationRow) -> Result<(), StoreError> {
    match OpKind::of_type(&op.op_type) {
        Some(kind) => settle(tx, kind, op, End::Withdrawn).await,
        None => Ok(()),
    }
}

/// Re-derive the cluster's and its pools' records after `op` ended.
async fn settle(
    tx: &mut sqlx::PgConnection,
    kind: OpKind,
    op: &OperationRow,
    end: End,
) -> Result<(), StoreError> {
    let Ok(input) = serde_json::from_value::<ClusterOpInput>(op.input.clone()) else {
        return Ok(());
    };
    let id = input.cluster_id;
    // The cluster lock first: an enqueue on this cluster holds it until it commits, so
    // the unfinished operations read next include every accepted one.
    let Some((state, settled)) = clusters::lock_states(&mut *tx, id).await? else {
        return Ok(());
    };
    let intents = Intents::of(&operations::unfinished_on_cluster(&mut *tx, id).await?);
    let c = cluster_settled(kind, end, Settled::read(state.settled(), settled));
    let shown = cluster_shown(c, &intents);
    let c = match c {
        Settled::Never if shown == ClusterState::Error => Settled::Is(ERROR),
        c => c,
    };
    clusters::show(&mut *tx, id, shown, c.column()).await?;
    let mut gone = Vec::new();
    for (pool, state, settled) in node_pools::lock_states(&mut *tx, id).await? {
        let named = input.pools.contains(&pool);
        let p = pool_settled(kind, end, named, Settled::read(state.settled(), settled));
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

    fn intents(down: bool, up: bool, adding: &[&str], removing: &[&str]) -> Intents {
        Intents {
            down,
            up,
            adding: adding.iter().map(|s| s.to_string()).collect(),
            removing: removing.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_down_that_never_ran_shows_the_cluster_as_it_was() {
        let none = intents(false, false, &[], &[]);
        let before = Settled::read(ClusterState::Deleting.settled(), Some(RUNNING));
        let after = cluster_settled(OpKind::Down, End::Withdrawn, before);
        assert_eq!(cluster_shown(after, &none), ClusterState::Running);
        // An `up` still unfinished keeps its own intent.
        let up = intents(false, true, &[], &[]);
        assert_eq!(cluster_shown(after, &up), ClusterState::Reconciling);
        assert_eq!(
            cluster_shown(Settled::Never, &up),
            ClusterState::Provisioning
        );
        // Another `down` still unfinished keeps DELETING.
        let down = intents(true, false, &[], &[]);
        assert_eq!(cluster_shown(after, &down), ClusterState::Deleting);
    }

    #[test]
    fn an_up_ending_under_a_queued_down_settles_behind_it() {
        let down = intents(true, false, &[], &[]);
        let before = Settled::read(ClusterState::Deleting.settled(), Some(ERROR));
        let after = cluster_settled(OpKind::Up, End::Succeeded, before);
        assert_eq!(after, Settled::Is(RUNNING));
        assert_eq!(cluster_shown(after, &down), ClusterState::Deleting);
        let none = intents(false, false, &[], &[]);
        assert_eq!(cluster_shown(after, &none), ClusterState::Running);
    }

    #[test]
    fn runs_that_stop_leave_error_and_never_created_clusters_are_error() {
        let none = intents(false, false, &[], &[]);
        for kind in [OpKind::Up, OpKind::Down] {
            let s = cluster_settled(kind, End::Stopped, Settled::Is(RUNNING));
            assert_eq!(cluster_shown(s, &none), ClusterState::Error);
        }
        let s = cluster_settled(OpKind::Up, End::Withdrawn, Settled::Never);
        assert_eq!(cluster_shown(s, &none), ClusterState::Error);
        let s = cluster_settled(OpKind::Down, End::Succeeded, Settled::Is(ERROR));
        assert_eq!(
            cluster_shown(s, &intents(true, true, &[], &[])),
            ClusterState::Deleted
        );
    }

    #[test]
    fn pools() {
        let none = intents(false, false, &[], &[]);
        let never = Settled::read(PoolState::Provisioning.settled(), None);
        // A pool add that never ran: the record goes.
        let s = pool_settled(OpKind::AddPool, End::Withdrawn, true, never);
        assert_eq!(pool_shown(s, &none, "p"), None);
        // ... unless a remove queued for it still holds it.
        assert_eq!(
            pool_shown(s, &intents(false, false, &[], &["p"]), "p"),
            Some(PoolState::Stopping)
        );
        // A pool remove that never ran: the pool shows its settled state again.
        let stopping = Settled::read(PoolState::Stopping.settled(), Some(RUNNING));
        let s = pool_settled(OpKind::RemovePool, End::Withdrawn, true, stopping);
        assert_eq!(pool_shown(s, &none, "p"), Some(PoolState::Running));
        let s = pool_settled(OpKind::RemovePool, End::Stopped, true, stopping);
        assert_eq!(pool_shown(s, &none, "p"), Some(PoolState::Error));
        let s = pool_settled(OpKind::RemovePool, End::Succeeded, true, stopping);
        assert_eq!(pool_shown(s, &none, "p"), None);
        // `up` ensures recorded pools, not those a later add has yet to create.
        let s = pool_settled(OpKind::Up, End::Succeeded, false, Settled::Is(ERROR));
        assert_eq!(s, Settled::Is(RUNNING));
        let s = pool_settled(OpKind::Up, End::Succeeded, false, never);
        assert_eq!(
            pool_shown(s, &intents(false, false, &["p"], &[]), "p"),
            Some(PoolState::Provisioning)
        );
        // A new cluster's `up` that never ran keeps its first pool for the next `up`.
        let s = pool_settled(OpKind::Up, End::Withdrawn, true, never);
        assert_eq!(pool_shown(s, &none, "p"), Some(PoolState::Error));
    }

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
