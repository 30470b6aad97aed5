//! The four provisioning kinds (UP_CLUSTER, DOWN_CLUSTER, ADD_NODE_POOL,
//! REMOVE_NODE_POOL): what each is, how long it may take, and what its records show.
//!
//! Invariant: each kind says, for every way an operation can end, what its cluster and
//! its pools settle to: the tables below are matches over `End` with no arm for "any
//! other kind", so a new kind decides its records or does not compile.

use std::time::Duration;

use crate::domain::OperationType;
use crate::ops::record_states::{ClusterRecords, DELETED, ERROR, End, Intent, RUNNING, Settled};

/// One provisioning kind (a type parameter of [`super::Provisioning`]).
pub trait Provision: Send + Sync + 'static {
    const TYPE: OperationType;
    const DEADLINE: Duration;
    const RECORDS: ClusterRecords;
}

/// `up`: creates or repairs the cluster and every recorded pool.
pub struct Up;
/// `down`: deletes the cluster and what `up` made.
pub struct Down;
/// Pool add (a failover pair counts as one).
pub struct AddPool;
/// Pool remove (with its failover pair).
pub struct RemovePool;

/// Each provisioning kind's registration: type, deadline and what its records show
/// (see [`ClusterRecords`]), one row a kind.
macro_rules! provision {
    ($($kind:ident: $ty:ident, $hours:literal h, $intent:ident, cluster $cluster:ident, pool $pool:ident;)*) => {$(
        impl Provision for $kind {
            const TYPE: OperationType = OperationType::$ty;
            const DEADLINE: Duration = Duration::from_secs($hours * 3600);
            const RECORDS: ClusterRecords = ClusterRecords {
                intent: Intent::$intent,
                cluster: $cluster,
                pool: $pool,
            };
        }
    )*};
}

provision! {
    Up: UpCluster, 3 h, Up, cluster up_cluster, pool up_pool;
    Down: DownCluster, 3 h, Down, cluster down_cluster, pool down_pool;
    AddPool: AddNodePool, 2 h, AddPools, cluster cluster_unchanged, pool add_pool;
    RemovePool: RemoveNodePool, 2 h, RemovePools, cluster cluster_unchanged, pool remove_pool;
}

/// `up` and `down`'s cluster: its end state when they succeed, ERROR when stopped.
fn cluster_after(end: End, before: Settled, succeeded: Settled) -> Settled {
    match end {
        End::Succeeded => succeeded,
        End::Stopped => Settled::Is(ERROR),
        End::Withdrawn => before,
    }
}

fn up_cluster(end: End, before: Settled) -> Settled {
    cluster_after(end, before, Settled::Is(RUNNING))
}

fn down_cluster(end: End, before: Settled) -> Settled {
    cluster_after(end, before, Settled::Is(DELETED))
}

/// Pool add and remove leave the cluster as it was, however they end.
fn cluster_unchanged(end: End, before: Settled) -> Settled {
    match end {
        End::Succeeded | End::Stopped | End::Withdrawn => before,
    }
}

/// `up` ensures every pool recorded before it ran, and its own; a stopped run leaves its
/// own pool ERROR.
fn up_pool(end: End, named: bool, before: Settled) -> Settled {
    match end {
        End::Succeeded if named || before != Settled::Never => Settled::Is(RUNNING),
        End::Stopped if named => Settled::Is(ERROR),
        End::Succeeded | End::Stopped | End::Withdrawn => before,
    }
}

fn down_pool(end: End, _named: bool, before: Settled) -> Settled {
    match end {
        End::Succeeded => Settled::Is(DELETED),
        End::Stopped | End::Withdrawn => before,
    }
}

/// A pool add that never ran created nothing: its pool is forgotten.
fn add_pool(end: End, named: bool, before: Settled) -> Settled {
    match (end, named) {
        (End::Succeeded, true) => Settled::Is(RUNNING),
        (End::Stopped, true) => Settled::Is(ERROR),
        (End::Withdrawn, true) if before == Settled::Never => Settled::Gone,
        (End::Succeeded | End::Stopped | End::Withdrawn, _) => before,
    }
}

fn remove_pool(end: End, named: bool, before: Settled) -> Settled {
    match (end, named) {
        (End::Succeeded, true) => Settled::Gone,
        (End::Stopped, true) => Settled::Is(ERROR),
        (End::Succeeded | End::Stopped | End::Withdrawn, _) => before,
    }
}

#[cfg(test)]
#[path = "kinds_tests.rs"]
mod tests;
