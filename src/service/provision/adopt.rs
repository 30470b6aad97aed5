//! `up` of a cluster GKE has with kinetic's mark and kineticd has no record of
//! (made by the `kinetic` CLI, or by a deployment that lost its database): Kinetic's
//! second `up`. The preview reads the cloud for every resource (KEEP what exists, CREATE
//! what is missing) and lists the pools it imports; the apply records the cluster and
//! every importable pool, then runs the reconcile.
//!
//! Invariant: adoption adds no node pool and ignores `accelerator`; it records only pools
//! that carry kinetic's mark (the others are named in the plan's warnings and left as
//! they are); the records are written in the transaction that enqueues the reconcile.

use crate::domain::resource_names::ClusterNames;
use crate::domain::{ClusterState, PoolState};
use crate::ops::workflows::cluster::{Provisioning, Up};
use crate::plan::up::{UpInput, plan};
use crate::store::{self, ClusterSpecRecord, PoolSpecRecord};

use super::super::adopt;
use super::super::status::up_live_state;
use super::super::{Result, Services};
use super::up_parts::{UpRequest, access_preview, expiry_note, insert_cluster, up_operation};
use super::{Mutation, Submitted, submit, transaction, ttl};

/// A cluster GKE has with kinetic's mark and kineticd has no record of: Kinetic's
/// second `up` (every pool kept and imported as a record, `accelerator` ignored, what is
/// missing repaired).
pub(super) async fn adopt(
    svc: &Services,
    m: &Mutation,
    team: &str,
    req: UpRequest,
    found: adopt::Found,
) -> Result<Submitted> {
    let n = m.names();
    let records: Vec<PoolSpecRecord> = found.pools.records.into_values().collect();
    let ids: Vec<String> = records.iter().map(|p| p.pool_id.clone()).collect();
    let force_destroy = req.force_destroy.unwrap_or(true);
    let expire = ttl::expiry(&svc.cloud, req.ttl.as_deref(), req.expire_time.as_deref()).await?;
    let live = up_live_state(&svc.cloud, &n, &ids).await;
    let mut p = plan(&UpInput {
        names: &n,
        cluster_exists: true,
        existing_pools: &ids,
        existing_need_driver: records.iter().any(|r| r.needs_driver_installer()),
        first_pool: None,
        accelerator_requested: req.accelerator.is_some(),
        force_destroy,
        prices: &svc.prices,
        live: Some(&live),
    });
    crate::plan::up::adopt::adopted(&mut p, &records, &svc.prices);
    p.warnings.push(adoption_note(&n, &records));
    p.warnings.extend(
        found
            .pools
            .refused
            .iter()
            .map(|(id, why)| format!("node pool {id} is left as it is and unrecorded: {why}")),
    );
    p.warnings.extend(expire.map(expiry_note));
    // What exists already costs already: recording it never waits for the policy.
    p.policy = Some(crate::domain::policy::PolicyCheck::allowed());
    if m.validate_only {
        p.access = access_preview(svc, m, team).await?;
        return Ok(Submitted::Plan(p));
    }
    let first = records.first();
    let spec = ClusterSpecRecord {
        accelerator: Some(first.map_or_else(|| "cpu".to_owned(), |r| r.accelerator.clone())),
        min_nodes: Some(first.map_or(0, |r| u32::try_from(r.min_nodes).unwrap_or(0))),
        force_destroy,
        spot: Some(first.is_some_and(|r| r.spot)),
        reservation: first.and_then(|r| r.reservation.clone()),
    };
    let mut tx = transaction(&svc.db).await?;
    let record = insert_cluster(&mut tx, m, team, spec, ClusterState::Running).await?;
    if expire.is_some() {
        store::clusters::set_expire_time(&mut *tx, record.id, expire).await?;
    }
    for r in &records {
        let by = m.caller.email.as_str();
        store::node_pools::insert(&mut *tx, record.id, &r.pool_id, PoolState::Running, r, by)
            .await?;
    }
    store::clusters::set_state(&mut *tx, record.id, ClusterState::Reconciling, true).await?;
    let op = up_operation(m, team, record.id, Vec::new(), false, &req);
    submit::<Provisioning<Up>, _>(tx, m, op, &p).await
}

/// The plan's note of what adoption records.
fn adoption_note(n: &ClusterNames, records: &[PoolSpecRecord]) -> String {
    let pools = if records.is_empty() {
        "it has no accelerator pool to import".to_owned()
    } else {
        let each: Vec<String> = records
            .iter()
            .map(|r| format!("{} ({})", r.pool_id, crate::plan::up::adopt::summary(r)))
            .collect();
        format!(
            "its node pools are kept and imported as records: {}",
            each.join("; ")
        )
    };
    format!(
        "adopting {}: GKE has it with kinetic's mark and kineticd had no record of it; {pools}",
        n.gke_cluster()
    )
}
