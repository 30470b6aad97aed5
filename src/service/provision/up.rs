//! `up` (PUT a cluster): create the cluster with its first pool, or reconcile an
//! existing one (pools kept, accelerator ignored, missing resources repaired).

use crate::domain::accelerators::{Choice, Resolved};
use crate::domain::pools::{PoolShape, shape, spot_of};
use crate::domain::resource_names::ClusterNames;
use crate::domain::{ClusterState, PoolState};
use crate::ops::workflows::cluster::{Provisioning, Up};
use crate::plan::pools::{PoolToAdd, pool_record};
use crate::plan::up::{NewPool, UpInput, plan};
use crate::store::{self, ClusterSpecRecord, PoolSpecRecord, clusters::ClusterRecord};

use super::super::status::up_live_state;
use super::super::{Error, Result, Services};
use super::guard::{self, Guard};
use super::placement::check_placement;
use super::pools::{check_quota, new_pool_ids};
use super::ttl;
pub use super::up_parts::UpRequest;
use super::up_parts::{access_preview, expiry_note, insert_cluster, up_operation};
use super::{
    Begin, Mutation, Plan, Submitted, approval, begin, parse_accelerator, pool_error, submit,
    transaction,
};

/// `up`: reconcile the cluster if it exists, create it otherwise.
pub async fn up(svc: &Services, m: &Mutation, req: UpRequest) -> Result<Submitted> {
    match begin(&svc.db, m, "running up").await? {
        Begin::Repeat(op) => Ok(Submitted::Operation(op)),
        Begin::Go {
            team,
            cluster: Some(c),
        } => reconcile(svc, m, &team, *c, req).await,
        Begin::Go {
            team,
            cluster: None,
        } => create(svc, m, &team, req).await,
    }
}

/// An existing cluster: pools kept, accelerator ignored, missing resources repaired.
async fn reconcile(
    svc: &Services,
    m: &Mutation,
    team: &str,
    c: ClusterRecord,
    req: UpRequest,
) -> Result<Submitted> {
    super::not_deleting(&c, &m.path)?;
    if c.team_id != team {
        return Err(Error::not_found(
            "CLUSTER_NOT_FOUND",
            format!("cluster {} not found", m.path.name()),
        ));
    }
    let force_destroy = req.force_destroy.unwrap_or(c.spec.force_destroy);
    let expire = ttl::expiry(&svc.cloud, req.ttl.as_deref(), req.expire_time.as_deref()).await?;
    let mut p = reconcile_plan(svc, m, &c, req.accelerator.is_some(), force_destroy).await?;
    p.warnings.extend(expire.map(expiry_note));
    // A reconcile adds nothing the policy counts (its pools are counted already): a
    // tightened policy never blocks a repair.
    p.policy = Some(crate::domain::policy::PolicyCheck::allowed());
    if m.validate_only {
        p.access = access_preview(svc, m, team).await?;
        return Ok(Submitted::Plan(p));
    }
    let (mut tx, c) = super::lock_live_cluster(&svc.db, m).await?;
    let spec = ClusterSpecRecord {
        force_destroy,
        ..c.spec.clone()
    };
    store::clusters::set_spec(&mut *tx, c.id, &spec).await?;
    if expire.is_some() {
        store::clusters::set_expire_time(&mut *tx, c.id, expire).await?;
    }
    store::clusters::set_state(&mut *tx, c.id, ClusterState::Reconciling, true).await?;
    let op = up_operation(m, team, c.id, Vec::new(), false, &req);
    submit::<Provisioning<Up>, _>(tx, m, op, &p).await
}

/// The reconcile plan, from the records and the resources checked live (as a status is):
/// what exists is KEPT, what is gone is CREATED.
async fn reconcile_plan(
    svc: &Services,
    m: &Mutation,
    c: &ClusterRecord,
    accelerator_requested: bool,
    force_destroy: bool,
) -> Result<Plan> {
    let n = m.names();
    let pools = store::node_pools::list(&svc.db, c.id, None, 10_000).await?;
    let ids: Vec<String> = pools.iter().map(|p| p.pool_id.clone()).collect();
    let need_driver = pools.iter().any(|p| p.spec.needs_driver_installer());
    let live = up_live_state(&svc.cloud, &n, &ids).await;
    Ok(plan(&UpInput {
        names: &n,
        cluster_exists: true,
        existing_pools: &ids,
        existing_need_driver: need_driver,
        first_pool: None,
        accelerator_requested,
        force_destroy,
        prices: &svc.prices,
        live: Some(&live),
    }))
}

/// A new cluster's first accelerator pool: its id, record and shape.
struct FirstPool {
    id: String,
    record: PoolSpecRecord,
    shape: PoolShape,
}

/// A new cluster, with its first pool unless it is a cpu cluster; a cluster GKE already
/// has is adopted instead ([`super::adopt`]).
async fn create(svc: &Services, m: &Mutation, team: &str, req: UpRequest) -> Result<Submitted> {
    if let Some(found) = super::super::adopt::found(&svc.cloud, &m.names(), &svc.prices).await? {
        return super::adopt::adopt(svc, m, team, req, found).await;
    }
    let choice = requested_accelerator(m, &req)?;
    let expire = ttl::expiry(&svc.cloud, req.ttl.as_deref(), req.expire_time.as_deref()).await?;
    let acc = match &choice {
        Choice::Accelerator(r) => Some(r),
        Choice::Cpu => None,
    };
    let mut shape = acc.map(|r| first_shape(r, &req)).transpose()?;
    let mut warnings = create_checks(svc, m, acc, shape.as_ref()).await?;
    // The policy: read with the plan for a preview; for an apply, under the team's lock
    // in the enqueue transaction (see [`guard`]).
    let (mut held, guard) = if m.validate_only {
        (None, Guard::read(&svc.db, team).await?)
    } else {
        let mut tx = transaction(&svc.db).await?;
        let g = Guard::locked(&mut tx, team).await?;
        (Some(tx), g)
    };
    let zone = m.path.zone.to_string();
    let shapes = shape.as_mut().map(std::slice::from_mut).unwrap_or_default();
    let (check, notes) = guard::fit_and_judge(&guard, &svc.prices, shapes, &[], &zone, true);
    warnings.extend(notes);
    let first = acc.zip(shape).map(|(r, s)| first_pool(svc, m, r, s));
    let force_destroy = req.force_destroy.unwrap_or(true);
    let mut p = create_plan(svc, m, first.as_ref(), force_destroy);
    p.warnings.extend(warnings);
    p.warnings.extend(expire.map(expiry_note));
    p.policy = Some(check.clone());
    let Some(mut tx) = held.take() else {
        p.access = access_preview(svc, m, team).await?;
        return Ok(Submitted::Plan(p));
    };
    let waits = guard::enforce(&check)?;
    let pools: Vec<String> = first.iter().map(|f| f.id.clone()).collect();
    if waits && m.approving.is_none() {
        let op = up_operation(m, team, uuid::Uuid::now_v7(), pools, true, &req);
        let verb = approval::Verb::Up { body: req };
        return approval::pend::<Provisioning<Up>, _>(svc, tx, m, op, &p, verb, &check).await;
    }
    let spec = ClusterSpecRecord {
        accelerator: Some(match &choice {
            Choice::Cpu => "cpu".to_owned(),
            Choice::Accelerator(r) => r.base_name(),
        }),
        min_nodes: Some(req.min_nodes.unwrap_or(0)),
        force_destroy,
        spot: Some(first.as_ref().is_some_and(|f| f.shape.spot)),
        reservation: req.reservation.clone(),
    };
    let record = insert_cluster(&mut tx, m, team, spec, ClusterState::Provisioning).await?;
    if expire.is_some() {
        store::clusters::set_expire_time(&mut *tx, record.id, expire).await?;
    }
    if let Some(f) = &first {
        store::node_pools::insert(
            &mut *tx,
            record.id,
            &f.id,
            PoolState::Provisioning,
            &f.record,
            m.caller.email.as_str(),
        )
        .await?;
    }
    let op = up_operation(m, team, record.id, pools, true, &req);
    submit::<Provisioning<Up>, _>(tx, m, op, &p).await
}

/// The accelerator a new cluster asks for (required; pool options only with one).
fn requested_accelerator(m: &Mutation, req: &UpRequest) -> Result<Choice> {
    let Some(acc) = req.accelerator.as_deref() else {
        return Err(Error::invalid(
            "ACCELERATOR_REQUIRED",
            format!(
                "cluster {} does not exist: creating it needs \"accelerator\" (for example \"gpu-l4\", \"tpu-v5litepod-4\", or \"cpu\" for none; GET /v1/accelerators lists them)",
                m.path.name()
            ),
        ));
    };
    let choice = parse_accelerator(acc)?;
    if matches!(choice, Choice::Cpu)
        && (req.spot.is_some() || req.reservation.is_some() || req.min_nodes.is_some())
    {
        return Err(Error::invalid(
            "NO_ACCELERATOR_POOL",
            "minNodes, spot and reservation describe the first accelerator pool; a cpu cluster has none",
        ));
    }
    Ok(choice)
}

/// The shape of a new cluster's first pool.
fn first_shape(r: &Resolved, req: &UpRequest) -> Result<PoolShape> {
    let spot = spot_of(r, req.spot).map_err(pool_error)?;
    shape(
        r,
        req.min_nodes.unwrap_or(0),
        spot,
        req.reservation.as_deref(),
        None,
    )
    .map_err(pool_error)
}

/// The first pool of a new cluster: named (from the request id when there is one) and
/// priced.
fn first_pool(svc: &Services, m: &Mutation, r: &Resolved, s: PoolShape) -> FirstPool {
    let seed = m.id_seed();
    let id = new_pool_ids(&r.pool_prefix(), 1, &[], seed.as_deref(), m.validate_only).remove(0);
    let record = pool_record(
        &PoolToAdd {
            id: &id,
            shape: &s,
            driver_version: None,
            zones: &[],
            paired_pool: None,
        },
        &svc.prices,
    );
    FirstPool {
        id,
        record,
        shape: s,
    }
}

/// The checks before a creation is planned: the zone, the accelerator's availability
/// there, the quota and the reservation (warnings where they could not be checked).
async fn create_checks(
    svc: &Services,
    m: &Mutation,
    acc: Option<&Resolved>,
    shape: Option<&PoolShape>,
) -> Result<Vec<String>> {
    let n: ClusterNames = m.names();
    let mut warnings =
        check_placement(&svc.cloud, &n.project, std::slice::from_ref(&n.zone), acc).await?;
    if let Some(s) = shape {
        warnings.extend(check_quota(&svc.cloud, &n, s, m.validate_only).await?);
        let first = std::slice::from_ref(s);
        warnings.extend(super::reservations::check_reservations(&svc.cloud, &n, first, &[]).await?);
    }
    Ok(warnings)
}

/// The creation plan.
fn create_plan(
    svc: &Services,
    m: &Mutation,
    first: Option<&FirstPool>,
    force_destroy: bool,
) -> Plan {
    let n: ClusterNames = m.names();
    plan(&UpInput {
        names: &n,
        cluster_exists: false,
        existing_pools: &[],
        existing_need_driver: false,
        first_pool: first.map(|f| NewPool {
            id: &f.id,
            shape: &f.shape,
            driver_version: None,
        }),
        accelerator_requested: true,
        force_destroy,
        prices: &svc.prices,
        live: None,
    })
}
