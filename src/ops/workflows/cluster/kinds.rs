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

impl Provision for Up {
    const TYPE: OperationType = OperationType::UpCluster;
    const DEADLINE: Duration = Duration::from_secs(3 * 3600);
    const RECORDS: ClusterRecords = ClusterRecords {
        intent: Intent::Up,
        cluster: up_cluster,
        pool: up_pool,
    };
}

impl Provision for Down {
    const TYPE: OperationType = OperationType::DownCluster;
    const DEADLINE: Duration = Duration::from_secs(3 * 3600);
    const RECORDS: ClusterRecords = ClusterRecords {
        intent: Intent::Down,
        cluster: down_cluster,
        pool: down_pool,
    };
}

impl Provision for AddPool {
    const TYPE: OperationType = OperationType::AddNodePool;
    const DEADLINE: Duration = Duration::from_secs(2 * 3600);
    const RECORDS: ClusterRecords = ClusterRecords {
        intent: Intent::AddPools,
        cluster: cluster_unchanged,
        pool: add_pool,
    };
}

impl Provision for RemovePool {
    const TYPE: OperationType = OperationType::RemoveNodePool;
    const DEADLINE: Duration = Duration::from_secs(2 * 3600);
    const RECORDS: ClusterRecords = ClusterRecords {
        intent: Intent::RemovePools,
        cluster: cluster_unchanged,
        pool: remove_pool,
    };
}

fn up_cluster(end: End, before: Settled) -> Settled {
    match end {
        End::Succeeded => Settled::Is(RUNNING),
        End::Stopped => Settled::Is(ERROR),
        End::Withdrawn => before,
    }
}

fn down_cluster(end: End, before: Settled) -> Settled {
    match end {
        End::Succeeded => Settled::Is(DELETED),
        End::Stopped => Settled::Is(ERROR),
        End::Withdrawn => before,
    }
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
