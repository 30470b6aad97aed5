//! `pool add` and `pool remove`: pool names fixed at enqueue time, shapes checked
//! (no CPU pools, no spot with a reservation, whole TPU slices), the regional quota
//! checked before anything is created, and a failover pair tied to its compute class
//! (refused on GKE versions without custom compute classes; removed with the pair).

use crate::cloud::Cloud;
use crate::domain::accelerators::{Choice, Kind, Resolved};
use crate::domain::compute_class::{ClassName, MIN_VERSION, join_class};
use crate::domain::pools::{FailoverRole, PoolError, PoolShape, shape, spot_of};
use crate::domain::provisioning::Resolution;
use crate::domain::resource_names::{ClusterNames, derived_suffix, pool_id, pool_id_placeholder};
use crate::domain::{PoolId, PoolState, ZoneName, quota};
use crate::ops::workflows::cluster::{AddPool, Provisioning, RemovePool};
use crate::plan::computeclass::class_of;
use crate::plan::pools::{PoolToAdd, add, pool_record, remove};
use crate::store::{self, Db, PoolSpecRecord, clusters::ClusterRecord};

use super::super::clusters::ClusterPath;
use super::super::{Error, Result, Services};
use super::flex;
use super::guard::{self, Guard};
use super::placement::check_placement;
pub use super::pool_request::AddPoolRequest;
use super::version;
use super::{
    Begin, Mutation, OpRequest, Plan, Submitted, approval, begin, live, not_deleting,
    parse_accelerator, pool_error, submit,
};

/// GKE's `gpuDriverVersion` values a pool may ask for.
const DRIVER_VERSIONS: [&str; 3] = ["DEFAULT", "LATEST", "INSTALLATION_DISABLED"];

fn random_suffix() -> u16 {
    (uuid::Uuid::new_v4().as_u128() & 0xffff) as u16
}

/// Ids of the `count` pools a request adds, none of them in `existing`: derived from the
/// request (`seed`) when it has a request id, so its preview names the pools its apply
/// creates; random for an apply without one; stand-ins (`gpu-l4-xxxx`, the plan says
/// why) for a preview without one.
pub fn new_pool_ids(
    prefix: &str,
    count: usize,
    existing: &[String],
    seed: Option<&str>,
    validate_only: bool,
) -> Vec<String> {
    if seed.is_none() && validate_only {
        return (0..count).map(|i| pool_id_placeholder(prefix, i)).collect();
    }
    let mut ids: Vec<String> = Vec::with_capacity(count);
    let mut attempt = 0u32;
    while ids.len() < count {
        let suffix = match seed {
            Some(s) => derived_suffix(s, ids.len(), attempt),
            None => random_suffix(),
        };
        let id = pool_id(prefix, suffix);
        if existing.contains(&id) || ids.contains(&id) {
            attempt += 1;
        } else {
            ids.push(id);
            attempt = 0;
        }
    }
    ids
}

/// The region's quota `metric` as Compute reports it now (`regions.get`): its limit and
/// usage, or the warning to give when it cannot be read (the pre-check is then skipped).
async fn region_quota(
    cloud: &Cloud,
    n: &ClusterNames,
    metric: &str,
) -> std::result::Result<crate::cloud::gcp::types::compute::Quota, String> {
    let region = match cloud.gcp.compute.get_region(&n.project, &n.region).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, project = %n.project, region = %n.region, "quota pre-check skipped");
            return Err(format!("quota {metric} not checked: {e}"));
        }
    };
    region
        .quota(metric)
        .cloned()
        .ok_or_else(|| format!("region {} reports no quota {metric}; not checked", n.region))
}

/// What a quota pre-check is for: the request that needs `needed` more of `metric`, as
/// the refusal says it (`need(needed)`: "this pool needs 8 to start") and what else the
/// caller can do (`instead`: "choose another accelerator or region").
pub struct QuotaAsk<'a> {
    pub metric: &'a str,
    pub needed: u64,
    pub need: &'a (dyn Fn(u64) -> String + Sync),
    pub instead: &'a str,
    pub preview: bool,
}

/// Check `ask` against the region's quota: warnings when it could not be read; 409
/// QUOTA_INSUFFICIENT (metric, limit, usage, needed and region in its metadata) when it
/// does not fit.
pub async fn check_region_quota(
    cloud: &Cloud,
    n: &ClusterNames,
    ask: QuotaAsk<'_>,
) -> Result<Vec<String>> {
    let q = match region_quota(cloud, n, ask.metric).await {
        Ok(q) => q,
        Err(warning) => return Ok(vec![warning]),
    };
    quota::check(ask.metric, q.limit, q.usage, ask.needed).map_err(|f| {
        Error::precondition(
            "QUOTA_INSUFFICIENT",
            format!(
                "quota {} in {} is {} with {} in use, and {}{}: request more (console.cloud.google.com/iam-admin/quotas), free some, or {}",
                f.metric,
                n.region,
                f.limit,
                f.usage,
                (ask.need)(f.needed),
                if ask.preview { " (preview)" } else { "" },
                ask.instead
            ),
        )
        .with("metric", &f.metric)
        .with("limit", f.limit)
        .with("usage", f.usage)
        .with("needed", f.needed)
        .with("region", &n.region)
    })?;
    Ok(Vec::new())
}

/// Check the regional quota for a pool; returns warnings when it could not be checked.
pub async fn check_quota(
    cloud: &Cloud,
    n: &ClusterNames,
    s: &PoolShape,
    validate_only: bool,
) -> Result<Vec<String>> {
    // Flex-start VMs are charged to the PREEMPTIBLE_ metrics, like spot VMs
    // ([`quota::metric_for`]).
    let Some(metric) = quota::metric_for(&s.accelerator, s.provisioning) else {
        return Ok(Vec::new());
    };
    let ask = QuotaAsk {
        metric: &metric,
        needed: quota::needed(&s.accelerator, s.min_nodes),
        need: &|n| format!("this pool needs {n} to start"),
        instead: "choose another accelerator or region",
        preview: validate_only,
    };
    check_region_quota(cloud, n, ask).await
}

/// The spelling of `zones` that asks the placement advice to choose (spot pools only).
pub const AUTO_ZONES: &str = "auto";

/// Whether `zones` is `["auto"]` (400 INVALID_ZONE when `auto` is mixed with zones).
fn wants_auto(req: &AddPoolRequest) -> Result<bool> {
    let Some(z) = &req.zones else {
        return Ok(false);
    };
    if !z.iter().any(|s| s == AUTO_ZONES) {
        return Ok(false);
    }
    if z.len() > 1 {
        return Err(Error::invalid(
            "INVALID_ZONE",
            "zones [\"auto\"] stands alone: name zones, or let the placement advice choose them",
        )
        .with("zone", AUTO_ZONES));
    }
    Ok(true)
}

/// For `zones: ["auto"]`: every pool a spot pool (400 INVALID_ZONE otherwise), and the
/// zones the placement advice ranks, with the plan notes saying which and why.
async fn auto_zones(
    svc: &Services,
    m: &Mutation,
    acc: &Resolved,
    shapes: &[PoolShape],
) -> Result<(Vec<String>, Vec<String>)> {
    if shapes.iter().any(|s| !s.spot) {
        return Err(Error::invalid(
            "INVALID_ZONE",
            "zones [\"auto\"] is for spot pools (\"spot\": true or provisioning SPOT, no failover): on-demand and reserved capacity should be placed in named zones",
        )
        .with("zone", AUTO_ZONES));
    }
    let nodes = shapes.first().map_or(0, |s| s.min_nodes);
    let picked =
        crate::service::placements::auto_zones::choose(svc, &m.names(), acc, nodes).await?;
    Ok((picked.zones, picked.notes))
}

fn zones(path: &ClusterPath, req: &AddPoolRequest) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for z in req.zones.iter().flatten() {
        let zone = ZoneName::parse(z)?;
        if zone.region() != path.zone.region() {
            return Err(Error::invalid(
                "INVALID_ZONE",
                format!(
                    "zone {z} is not in the cluster's region {}",
                    path.zone.region()
                ),
            )
            .with("zone", z));
        }
        if !out.contains(&zone.to_string()) {
            out.push(zone.to_string());
        }
    }
    Ok(out)
}

/// What a pool request is about: a repeat's operation, or the project's team and the
/// live cluster (404 when gone, refused while it is being deleted).
enum Target {
    Repeat(Submitted),
    Live(String, Box<ClusterRecord>),
}

async fn target(db: &Db, m: &Mutation, action: &str) -> Result<Target> {
    match begin(db, m, action).await? {
        Begin::Repeat(op) => Ok(Target::Repeat(Submitted::Operation(op))),
        Begin::Go { team, cluster } => {
            let c = live(cluster, &m.path)?;
            not_deleting(&c, &m.path)?;
            Ok(Target::Live(team, Box::new(c)))
        }
    }
}

/// The accelerator of a new pool: required, and not `cpu`.
fn pool_accelerator(req: &AddPoolRequest) -> Result<Resolved> {
    let Some(spec) = req.accelerator.as_deref() else {
        return Err(Error::invalid(
            "ACCELERATOR_REQUIRED",
            "a node pool needs \"accelerator\" (GET /v1/accelerators lists them)",
        ));
    };
    match parse_accelerator(spec)? {
        Choice::Cpu => Err(Error::invalid(
            "CPU_POOL_NOT_ALLOWED",
            "node pools are for accelerators: the cluster's default pool runs CPU work; choose a GPU or TPU (GET /v1/accelerators)",
        )),
        Choice::Accelerator(r) => Ok(r),
    }
}

/// `driverVersion`: GPU pools only, one of GKE's values.
fn check_driver_version(acc: &Resolved, req: &AddPoolRequest) -> Result<()> {
    let Some(v) = &req.driver_version else {
        return Ok(());
    };
    if acc.kind != Kind::Gpu {
        return Err(Error::invalid(
            "INVALID_DRIVER_VERSION",
            "driverVersion applies to GPU pools only",
        ));
    }
    if !DRIVER_VERSIONS.contains(&v.as_str()) {
        return Err(Error::invalid(
            "INVALID_DRIVER_VERSION",
            format!(
                "driverVersion {v:?} is not one of {}",
                DRIVER_VERSIONS.join(", ")
            ),
        ));
    }
    Ok(())
}

/// The shapes of the pools a request adds: one, or a spot pool and its on-demand
/// failover partner at 0 nodes; each in the request's provisioning mode.
fn shapes(acc: &Resolved, req: &AddPoolRequest, r: &Resolution) -> Result<Vec<PoolShape>> {
    let min = req.min_nodes.unwrap_or(0);
    let spot = spot_of(acc, r.spot).map_err(pool_error)?;
    let reservation = r.reservation.as_deref();
    if !req.failover.unwrap_or(false) {
        let mut s = shape(acc, min, spot, reservation, None).map_err(pool_error)?;
        s.apply_provisioning(r);
        return Ok(vec![s]);
    }
    if reservation.is_some() && spot {
        return Err(pool_error(PoolError::SpotWithReservation));
    }
    let mut pair = vec![
        shape(acc, min, true, None, Some(FailoverRole::Spot)).map_err(pool_error)?,
        shape(acc, 0, false, reservation, Some(FailoverRole::OnDemand)).map_err(pool_error)?,
    ];
    if let Some(d) = &r.max_run_duration {
        pair.iter_mut()
            .for_each(|s| s.max_run_duration = Some(d.clone()));
    }
    Ok(pair)
}

/// Warnings of the placement and quota checks (errors when they fail).
async fn check_pools(
    cloud: &Cloud,
    m: &Mutation,
    acc: &Resolved,
    shapes: &[PoolShape],
    zones: &[String],
) -> Result<Vec<String>> {
    let n = m.names();
    let placed = if zones.is_empty() {
        std::slice::from_ref(&n.zone)
    } else {
        zones
    };
    let mut warnings = check_placement(cloud, &n.project, placed, Some(acc)).await?;
    for s in shapes {
        warnings.extend(check_quota(cloud, &n, s, m.validate_only).await?);
    }
    warnings.extend(super::reservations::check_reservations(cloud, &n, shapes, zones).await?);
    Ok(warnings)
}

/// The ids of the cluster's pools (new ids never reuse one).
async fn existing_ids(db: &Db, c: &ClusterRecord) -> Result<Vec<String>> {
    Ok(store::node_pools::list(db, c.id, None, 10_000)
        .await?
        .into_iter()
        .map(|p| p.pool_id)
        .collect())
}

/// The records of the new pools, their ids fixed now (never reused within the cluster).
fn pool_records(
    svc: &Services,
    m: &Mutation,
    existing: &[String],
    acc: &Resolved,
    shapes: &[PoolShape],
    zones: &[String],
    req: &AddPoolRequest,
) -> Vec<PoolSpecRecord> {
    let seed = m.id_seed();
    let ids = new_pool_ids(
        &acc.pool_prefix(),
        shapes.len(),
        existing,
        seed.as_deref(),
        m.validate_only,
    );
    let mut shapes = shapes.to_vec();
    if shapes.len() == 2 {
        // A failover pair: both pools are tied to the class named after the spot pool.
        let class = ClassName::for_pair(&ids[0]);
        shapes.iter_mut().for_each(|s| join_class(s, &class));
    }
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let pair = (shapes.len() == 2).then(|| ids[1 - i].as_str());
            pool_record(
                &PoolToAdd {
                    id: &ids[i],
                    shape: s,
                    driver_version: req.driver_version.as_deref(),
                    zones,
                    paired_pool: pair,
                },
                &svc.prices,
            )
        })
        .collect()
}

/// A failover pair needs a GKE version with custom compute classes: the cluster's
/// `currentMasterVersion` as GKE reports it now. A version that cannot be read (GKE
/// unreachable, the cluster still being created) is a warning: the step that applies
/// the class checks the running cluster's version again.
async fn check_version(cloud: &Cloud, m: &Mutation) -> Result<Vec<String>> {
    let n = m.names();
    let unread = |e: &str| format!("({e}); the compute class step checks it");
    let needs = format!(
        "a failover pair needs custom compute classes, which need GKE {MIN_VERSION} or later: upgrade the cluster (gcloud container clusters upgrade {} --master --cluster-version=...) or add a pool without \"failover\"",
        n.cluster
    );
    version::require(cloud, m, &MIN_VERSION, unread, &needs).await
}

/// `pool add`: one pool (or a failover pair), checked, named and planned.
pub async fn add_pool(svc: &Services, m: &Mutation, req: AddPoolRequest) -> Result<Submitted> {
    let (team, c) = match target(&svc.db, m, "adding node pools").await? {
        Target::Live(team, c) => (team, *c),
        Target::Repeat(op) => return Ok(op),
    };
    let acc = pool_accelerator(&req)?;
    check_driver_version(&acc, &req)?;
    let auto = wants_auto(&req)?;
    let mut zones = if auto {
        Vec::new()
    } else {
        zones(&m.path, &req)?
    };
    let mode = flex::resolve(&acc, &req)?;
    let mut shapes = shapes(&acc, &req, &mode)?;
    let mut auto_notes = Vec::new();
    if auto {
        (zones, auto_notes) = auto_zones(svc, m, &acc, &shapes).await?;
    }
    let gpu = super::sharing::check(&acc, &req)?;
    shapes.iter_mut().for_each(|s| s.gpu_sharing = gpu.clone());
    let mut warnings = super::sharing::check_version(&svc.cloud, m, gpu.as_ref()).await?;
    if shapes.len() == 2 {
        warnings.extend(check_version(&svc.cloud, m).await?);
    }
    warnings.extend(flex::check_version(&svc.cloud, m, mode.mode, &acc).await?);
    warnings.extend(flex::price_warning(&svc.prices, &acc, mode.mode));
    warnings.extend(check_pools(&svc.cloud, m, &acc, &shapes, &zones).await?);
    let existing = existing_ids(&svc.db, &c).await?;
    // The policy: read with the plan for a preview; for an apply, under the cluster's
    // and the team's locks in the enqueue transaction (see [`guard`]).
    let (mut held, guard) = Guard::hold(&svc.db, m, &team).await?;
    let zone = m.path.zone.to_string();
    let (check, notes) =
        guard::fit_and_judge(&guard, &svc.prices, &mut shapes, &zones, &zone, false);
    let mut records = pool_records(svc, m, &existing, &acc, &shapes, &zones, &req);
    if auto {
        // GKE's autoscaler picks whichever of the zones has capacity.
        records
            .iter_mut()
            .for_each(|r| r.location_policy = Some("ANY".into()));
    }
    let mut p = add(&m.names(), &records, &svc.prices);
    p.warnings.extend(auto_notes);
    p.warnings.extend(warnings);
    p.warnings.extend(notes);
    p.policy = Some(check.clone());
    let Some((mut tx, c)) = held.take() else {
        return Ok(Submitted::Plan(p));
    };
    let waits = guard::enforce(&check)?;
    let ids: Vec<String> = records.iter().map(|r| r.pool_id.clone()).collect();
    let request = serde_json::to_value(&req).unwrap_or_default();
    let first = ids[0].clone();
    let op = OpRequest::on_pools(m, &team, c.id, &first, ids, request);
    if waits && m.approving.is_none() {
        let verb = approval::Verb::AddPool { body: req };
        return approval::pend::<Provisioning<AddPool>, _>(svc, tx, m, op, &p, verb, &check).await;
    }
    for r in &records {
        let by = m.caller.email.as_str();
        store::node_pools::insert(&mut *tx, c.id, &r.pool_id, PoolState::Provisioning, r, by)
            .await?;
    }
    submit::<Provisioning<AddPool>, _>(tx, m, op, &p).await
}

/// What a removal takes: the pool and its failover partner if it has one, and the
/// pair's compute class as (spot pool, on-demand pool) when the pools carry one.
struct Removal {
    pools: Vec<String>,
    class: Option<(String, String)>,
}

/// The pools a removal takes: the pool, and its failover partner if it has one.
async fn pools_to_remove(
    db: &Db,
    m: &Mutation,
    c: &ClusterRecord,
    pool: &PoolId,
) -> Result<Removal> {
    let rec = store::node_pools::get(db, c.id, pool.as_str())
        .await?
        .ok_or_else(|| {
            Error::not_found(
                "NODE_POOL_NOT_FOUND",
                format!("node pool {}/nodePools/{pool} not found", m.path.name()),
            )
        })?;
    super::check_pool_etag(m, &rec)?;
    let mut ids = vec![pool.to_string()];
    let mut class = None;
    if let Some(f) = &rec.spec.failover {
        if store::node_pools::get(db, c.id, &f.paired_pool)
            .await?
            .is_some()
        {
            ids.push(f.paired_pool.clone());
        }
        // Pairs added before compute classes carry no class label: nothing to delete.
        if class_of(&rec.spec.labels).is_some() {
            let (me, other) = (pool.to_string(), f.paired_pool.clone());
            class = Some(if f.role == FailoverRole::Spot {
                (me, other)
            } else {
                (other, me)
            });
        }
    }
    Ok(Removal { pools: ids, class })
}

/// `pool remove`: a pool (a failover pair goes together).
pub async fn remove_pool(svc: &Services, m: &Mutation, pool: &str) -> Result<Submitted> {
    let pool = PoolId::parse(pool)?;
    let (team, c) = match target(&svc.db, m, "removing node pools").await? {
        Target::Live(team, c) => (team, *c),
        Target::Repeat(op) => return Ok(op),
    };
    let Removal { pools: ids, class } = pools_to_remove(&svc.db, m, &c, &pool).await?;
    let class = class.as_ref().map(|(s, o)| (s.as_str(), o.as_str()));
    let p: Plan = remove(&m.names(), &ids, class);
    if m.validate_only {
        return Ok(Submitted::Plan(p));
    }
    let (mut tx, c) = super::lock_live_cluster(&svc.db, m).await?;
    store::node_pools::set_state(&mut *tx, c.id, Some(&ids), PoolState::Stopping, &[]).await?;
    let op = OpRequest::on_pools(m, &team, c.id, pool.as_str(), ids, serde_json::Value::Null);
    submit::<Provisioning<RemovePool>, _>(tx, m, op, &p).await
}
