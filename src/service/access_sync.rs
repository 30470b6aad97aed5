//! Access follows the roster (issue 28): every member change enqueues a SYNC_ACCESS for
//! each of the team's live clusters, in the transaction that changes the roster, and
//! `:syncAccess` enqueues one on demand.
//!
//! Invariant: a roster change is committed only together with the syncs that converge
//! it, so no change is ever left without one; a sync already QUEUED for a cluster covers
//! the change (it reads the roster when it runs), so member changes in a burst make one
//! sync per cluster, not one each.

use sqlx::PgConnection;

use crate::domain::Role;
use crate::model::Operation;
use crate::ops::queue;
use crate::ops::workflows::cluster::access::{self, SyncReason, SyncTarget};
use crate::store::{self, Db};

use super::clusters::{ClusterPath, cluster_not_found, project_team};
use super::noop_operations::enqueue_error;
use super::{Caller, Result};

/// Enqueue a sync of each live cluster of `team` (inside the roster change's `tx`).
pub async fn enqueue_team(
    tx: &mut PgConnection,
    team: &str,
    by: &str,
    reason: SyncReason,
) -> Result<usize> {
    let clusters = store::access::team_clusters(&mut *tx, team).await?;
    for (id, project, zone, name) in &clusters {
        let t = SyncTarget {
            cluster_id: *id,
            project,
            zone,
            cluster: name,
            team,
        };
        let req = access::request(&t, by, reason).map_err(enqueue_error)?;
        queue::enqueue_coalesced(tx, &req)
            .await
            .map_err(enqueue_error)?;
    }
    Ok(clusters.len())
}

/// `:syncAccess`: a SYNC_ACCESS of the cluster (MEMBER+), or the one already queued.
pub async fn sync_cluster(db: &Db, caller: &Caller, path: &ClusterPath) -> Result<Operation> {
    let team = project_team(db, caller, &path.project, Role::Member, "syncing access").await?;
    let mut tx = super::provision::transaction(db).await?;
    let c = store::clusters::by_name(
        &mut *tx,
        store::clusters::Pick::LiveOrLastDeleted,
        path.key(),
    )
    .await?
    .filter(|c| c.state != crate::domain::ClusterState::Deleted)
    .ok_or_else(|| cluster_not_found(&path.name()))?;
    let t = SyncTarget {
        cluster_id: c.id,
        project: &c.project_id,
        zone: &c.zone,
        cluster: &c.name,
        team: &team,
    };
    let req =
        access::request(&t, caller.email.as_str(), SyncReason::OnDemand).map_err(enqueue_error)?;
    let r = queue::enqueue_coalesced(&mut tx, &req)
        .await
        .map_err(enqueue_error)?;
    tx.commit().await.map_err(store::StoreError::from)?;
    super::operations::render(&r.op)
}
