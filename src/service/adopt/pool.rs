//! `POST .../clusters/{c}/nodePools/{pool}:import`: record a pool GKE has on a recorded
//! cluster without a record (added by the `kinetic` CLI, or by an `up` of a kineticd
//! that lost it), as `up` of an unrecorded cluster imports every pool.
//!
//! Invariant: only a pool carrying kinetic's mark whose machine is an accelerator of the
//! catalogue is imported; the record, the POOL_IMPORTED event and the lock on the
//! cluster's record are one transaction, so two imports of one pool make one record
//! (the second is 409 NODE_POOL_RECORDED). Nothing in the cloud changes.

use serde_json::json;

use crate::domain::states::EventType;
use crate::domain::{PoolId, PoolState, Role};
use crate::model::NodePool;
use crate::store;

use super::super::audit;
use super::super::clusters::{ClusterPath, cluster_not_found, project_team, render_pool};
use super::super::{Caller, Error, Result, Services};
use super::import::{self, NotImportable};

/// Import GKE pool `pool` of cluster `path` as a record (MEMBER+, as adding a pool).
pub async fn import(
    svc: &Services,
    caller: &Caller,
    path: &ClusterPath,
    pool: &str,
) -> Result<NodePool> {
    let pool = PoolId::parse(pool)?;
    let team = project_team(
        &svc.db,
        caller,
        &path.project,
        Role::Member,
        "importing node pools",
    )
    .await?;
    let n = super::super::provision::names(path);
    let (gke, listed) = tokio::join!(
        svc.cloud
            .gcp
            .container
            .get_cluster(&n.project, &n.zone, &n.cluster),
        svc.cloud
            .gcp
            .container
            .get_node_pool(&n.project, &n.zone, &n.cluster, pool.as_str()),
    );
    let live = listed.map_err(|e| {
        if e.is_not_found() {
            Error::not_found(
                "NODE_POOL_NOT_FOUND",
                format!(
                    "GKE has no node pool {}/nodePools/{pool}: nothing to import",
                    n.gke_cluster()
                ),
            )
            .with("pool", pool.as_str())
        } else {
            super::super::live::gke_unreadable(&e)
        }
    })?;
    // The cluster's other pools decide a failover pair's link: without them the record
    // would be made wrong, so an unreadable cluster refuses the import (nothing written).
    let all = gke
        .map_err(|e| super::super::live::gke_unreadable(&e))?
        .node_pools;
    let record = import::record_of(&live, &all, &n.zone, &svc.prices).map_err(|e| match e {
        NotImportable::NotOurs => super::not_ours(
            "node pool",
            &format!("{}/nodePools/{pool}", path.name()),
            "its nodes lack the label kinetic=true",
        ),
        why => Error::precondition(
            "NODE_POOL_NOT_IMPORTABLE",
            format!("node pool {pool} cannot be imported: {why}"),
        )
        .with("pool", pool.as_str()),
    })?;
    let mut tx = svc.db.begin().await.map_err(store::StoreError::from)?;
    let c = store::clusters::by_name(&mut *tx, store::clusters::Pick::LockLive, path.key())
        .await?
        .filter(|c| c.team_id == team)
        .ok_or_else(|| cluster_not_found(&path.name()))?;
    let existing = store::node_pools::get(&mut *tx, c.id, pool.as_str()).await?;
    if existing
        .as_ref()
        .is_some_and(|p| p.state != PoolState::Deleted)
    {
        return Err(Error::exists(
            "NODE_POOL_RECORDED",
            format!(
                "node pool {}/nodePools/{pool} has a record already",
                path.name()
            ),
        )
        .with("pool", pool.as_str()));
    }
    if existing.is_some() {
        // A DELETED record of the same id (a pool removed, then made again outside
        // kineticd) is history the new record replaces.
        store::node_pools::delete(&mut *tx, c.id, &[pool.to_string()]).await?;
    }
    let by = caller.email.as_str();
    let row = store::node_pools::insert(
        &mut *tx,
        c.id,
        pool.as_str(),
        PoolState::Running,
        &record,
        by,
    )
    .await?;
    let target = format!("{}/nodePools/{pool}", path.name());
    let details = json!({"record": crate::plan::up::adopt::summary(&record)});
    audit::append_by(
        &mut *tx,
        caller,
        Some(&team),
        EventType::PoolImported,
        &target,
        details,
    )
    .await?;
    tx.commit().await.map_err(store::StoreError::from)?;
    Ok(render_pool(&c, row))
}
