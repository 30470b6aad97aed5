//! The drill's reclaim: the cluster observed first (which pods run on the spot pool),
//! then the spot pool taken away: each of its managed instance groups (the pool's
//! `instanceGroupUrls`) deletes its VMs, as a preemption would (RECLAIM_NODES), or the
//! pool itself is deleted (DELETE_POOL; the `drill-recreate` step creates it again).
//!
//! Invariant: the observation is made before anything is deleted, so `podsAffected` is
//! what the reclaim really hit; a step run again lists the groups' instances afresh and
//! deletes only those still there (`skipInstancesOnValidationError`), never twice.

use serde_json::Value;
use uuid::Uuid;

use crate::cloud::gcp::compute::mig::MigRef;
use crate::cloud::gcp::types::mig::DeleteInstancesRequest;
use crate::model::drill::DrillMode;
use crate::ops::steps::{ErrorClass, RpcCode, StepError};
use crate::store;

use super::super::kube::cluster;
use super::super::results::result;
use super::super::{gcp_error, gke, kube_error, store_error};
use super::DrillInput;
use super::Step;
use super::track::Before;

/// The spot pool's minimum over all its zones, from its record.
async fn spot_min(s: &Step<'_>, pool: &str) -> Result<u32, StepError> {
    let rec = store::node_pools::get(&s.env.db, s.cluster_id, pool)
        .await
        .map_err(store_error)?;
    Ok(rec.map_or(0, |r| {
        let zones = r.spec.zones.len().max(1) as i64;
        u32::try_from(r.spec.min_nodes * zones).unwrap_or(0)
    }))
}

/// Delete every VM of the pool's managed instance groups; returns how many, and whether
/// every deletion is already DONE (the VMs are gone).
async fn delete_vms(s: &Step<'_>, pool: &str) -> Result<(u32, bool), StepError> {
    let n = s.names;
    let gcp = &s.env.cloud.gcp;
    let np = gcp
        .container
        .get_node_pool(&n.project, &n.zone, &n.cluster, pool)
        .await
        .map_err(gcp_error)?;
    let (mut deleted, mut all_done) = (0, true);
    for url in &np.instance_group_urls {
        let mig = MigRef::parse(url).ok_or_else(|| {
            StepError::terminal(
                RpcCode::FailedPrecondition,
                "UNEXPECTED_INSTANCE_GROUP",
                format!("node pool {pool} names {url:?}, not a zonal managed instance group"),
            )
        })?;
        let instances: Vec<String> = gcp
            .compute
            .list_managed_instances(&mig)
            .await
            .map_err(gcp_error)?
            .into_iter()
            .filter_map(|i| i.instance)
            .collect();
        if instances.is_empty() {
            continue;
        }
        let count = instances.len() as u32;
        let req = DeleteInstancesRequest {
            instances,
            skip_instances_on_validation_error: Some(true),
        };
        let op = gcp
            .compute
            .delete_instances(&mig, &req, Uuid::new_v4())
            .await
            .map_err(gcp_error)?;
        if let Some(e) = op.error.as_ref().filter(|e| !e.errors.is_empty()) {
            let first = &e.errors[0];
            return Err(StepError::from_cloud(
                ErrorClass::Terminal,
                400,
                "FAILED_PRECONDITION",
                &first.code,
                &first.message,
                format!("deleting the VMs of {}: {}", mig.name, first.message),
            )
            .with("service", "compute")
            .with("method", "instanceGroupManagers.deleteInstances"));
        }
        deleted += count;
        all_done &= op.is_done();
    }
    Ok((deleted, all_done))
}

pub async fn reclaim(s: &Step<'_>, d: &DrillInput) -> Result<Value, StepError> {
    let k = cluster(s).await?;
    let inv = k.inventory().await.map_err(kube_error)?;
    let mut before = Before::of(&inv, &d.spot_pool, &d.fallback_pool);
    before.mode = d.mode;
    before.spot_min_nodes = spot_min(s, &d.spot_pool).await?;
    before.started = chrono::Utc::now();
    match d.mode {
        DrillMode::ReclaimNodes => {
            let (deleted, done) = delete_vms(s, &d.spot_pool).await?;
            before.instances_deleted = deleted;
            if done {
                before.gone_at = Some(chrono::Utc::now());
            }
        }
        DrillMode::DeletePool => {
            gke::delete_pool(s, &d.spot_pool).await?;
            before.gone_at = Some(chrono::Utc::now());
        }
    }
    result(before)
}
