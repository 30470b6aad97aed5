//! The provisioning kinds' record tables, with what the records then show.

use super::*;
use crate::domain::{ClusterState, PoolState};
use crate::ops::record_states::{Intents, cluster_shown, pool_shown};

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
    let after = (Down::RECORDS.cluster)(End::Withdrawn, before);
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
    let after = (Up::RECORDS.cluster)(End::Succeeded, before);
    assert_eq!(after, Settled::Is(RUNNING));
    assert_eq!(cluster_shown(after, &down), ClusterState::Deleting);
    let none = intents(false, false, &[], &[]);
    assert_eq!(cluster_shown(after, &none), ClusterState::Running);
}

#[test]
fn runs_that_stop_leave_error_and_never_created_clusters_are_error() {
    let none = intents(false, false, &[], &[]);
    for records in [Up::RECORDS, Down::RECORDS] {
        let s = (records.cluster)(End::Stopped, Settled::Is(RUNNING));
        assert_eq!(cluster_shown(s, &none), ClusterState::Error);
    }
    let s = (Up::RECORDS.cluster)(End::Withdrawn, Settled::Never);
    assert_eq!(cluster_shown(s, &none), ClusterState::Error);
    let s = (Down::RECORDS.cluster)(End::Succeeded, Settled::Is(ERROR));
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
    let s = (AddPool::RECORDS.pool)(End::Withdrawn, true, never);
    assert_eq!(pool_shown(s, &none, "p"), None);
    // ... unless a remove queued for it still holds it.
    assert_eq!(
        pool_shown(s, &intents(false, false, &[], &["p"]), "p"),
        Some(PoolState::Stopping)
    );
    // A pool remove that never ran: the pool shows its settled state again.
    let stopping = Settled::read(PoolState::Stopping.settled(), Some(RUNNING));
    let s = (RemovePool::RECORDS.pool)(End::Withdrawn, true, stopping);
    assert_eq!(pool_shown(s, &none, "p"), Some(PoolState::Running));
    let s = (RemovePool::RECORDS.pool)(End::Stopped, true, stopping);
    assert_eq!(pool_shown(s, &none, "p"), Some(PoolState::Error));
    let s = (RemovePool::RECORDS.pool)(End::Succeeded, true, stopping);
    assert_eq!(pool_shown(s, &none, "p"), None);
    // `up` ensures recorded pools, not those a later add has yet to create.
    let s = (Up::RECORDS.pool)(End::Succeeded, false, Settled::Is(ERROR));
    assert_eq!(s, Settled::Is(RUNNING));
    let s = (Up::RECORDS.pool)(End::Succeeded, false, never);
    assert_eq!(
        pool_shown(s, &intents(false, false, &["p"], &[]), "p"),
        Some(PoolState::Provisioning)
    );
    // A new cluster's `up` that never ran keeps its first pool for the next `up`.
    let s = (Up::RECORDS.pool)(End::Withdrawn, true, never);
    assert_eq!(pool_shown(s, &none, "p"), Some(PoolState::Error));
}
