//! `PATCH .../nodePools/{pool}`: a pool resize. The update (AIP-134 `updateMask` and
//! body) and the new bounds are checked by Kinetic's rules ([`crate::domain::resize`]),
//! a failover pair's on-demand pool follows its spot pool where it must, the regional
//! quota is checked for the growth of each pool's minimum (and a reservation-bound
//! pool's reservation for as many free VMs), flex-start pools keep minNodes 0, and an UPDATE_NODE_POOL
//! operation is planned and enqueued on the cluster's queue.
//!
//! Invariant: a resize is accepted only for RUNNING pools of a live cluster with no
//! other resize of them unfinished (checked again under the cluster's row lock, with
//! the bounds it was computed from), and nothing is written before every check has
//! passed; the bounds the operation sets are fixed here, with the price estimate at
//! them, so the preview and the operation carry the same numbers. A resize whose bounds
//! equal the pool's is accepted (its step sets GKE's autoscaling to the recorded bounds
//! again): a repeated PATCH is harmless.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::cloud::Cloud;
use crate::domain::accelerators::{self, Choice, Resolved};
use crate::domain::policy::{Ask, PoolUse};
use crate::domain::provisioning::Provisioning;
use crate::domain::resize::{self, Bounds, ResizeError, Update};
use crate::domain::resource_names::ClusterNames;
use crate::domain::{PoolId, PoolState, quota};
use crate::ops::kinds::OperationKind;
use crate::ops::workflows::cluster::ClusterOpInput;
use crate::ops::workflows::cluster::resize::{PoolBounds, Resize, ResizeInput};
use crate::plan::resize::{PoolResize, plan};
use crate::store::node_pools::NodePoolRecord;
use crate::store::persisted::CostRecord;
use crate::store::{self, clusters::ClusterRecord};

use super::super::{Error, Result, Services};
use super::guard::{self, Guard};
use super::pools::{QuotaAsk, check_region_quota};
use super::reservations;
use super::{Begin, Mutation, OpRequest, Submitted, approval, begin, live, not_deleting, submit};

/// The body of `PATCH .../nodePools/{pool}`: the pool's autoscaling bounds (per zone).
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResizeRequest {
    /// Nodes kept warm (per zone). Multi-host TPU: whole slices. Named in `updateMask`
    /// but absent: reset to 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_nodes: Option<u32>,
    /// Most nodes the autoscaler may add (per zone; 1..=1000, at least minNodes; whole
    /// slices for multi-host TPUs). Named in `updateMask` but absent: Kinetic's default
    /// for the new minNodes (minNodes + 10 for GPUs, + one slice for TPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_nodes: Option<u32>,
}

fn resize_error(e: ResizeError) -> Error {
    let reason = e.reason();
    let mut err = Error::invalid(reason, e.to_string());
    if let ResizeError::UnknownField(f) = &e {
        err = err.with("field", f);
    }
    err
}

/// One pool of the resize: its record, accelerator, bounds before and after, and why.
struct Change {
    rec: NodePoolRecord,
    acc: Resolved,
    from: Bounds,
    to: Bounds,
    reason: String,
}

fn bounds(rec: &NodePoolRecord) -> Bounds {
    let n = |v: i64| u32::try_from(v.max(0)).unwrap_or(u32::MAX);
    Bounds {
        min: n(rec.spec.min_nodes),
        max: n(rec.spec.max_nodes),
    }
}

/// The accelerator a pool record was made for (spot as recorded).
fn accelerator(rec: &NodePoolRecord) -> Result<Resolved> {
    match accelerators::parse(&rec.spec.accelerator) {
        Ok(Choice::Accelerator(mut r)) => {
            r.spot = rec.spec.spot;
            Ok(r)
        }
        _ => Err(Error::precondition(
            "NODE_POOL_NOT_RESIZABLE",
            format!(
                "node pool {} records accelerator {:?}, which this kineticd does not know: it cannot be resized here",
                rec.pool_id, rec.spec.accelerator
            ),
        )),
    }
}

/// The provisioning mode a pool record was made with (none recorded: on demand / spot).
fn mode(rec: &NodePoolRecord) -> Provisioning {
    rec.spec.provisioning.unwrap_or_default()
}

fn running(rec: &NodePoolRecord) -> Result<()> {
    if rec.state == PoolState::Running {
        return Ok(());
    }
    Err(Error::precondition(
        "NODE_POOL_NOT_RUNNING",
        format!(
            "node pool {} is {}, not RUNNING: wait for its operation to finish (or repair it with up) before resizing it",
            rec.pool_id,
            rec.state.as_str()
        ),
    )
    .with("pool", &rec.pool_id)
    .with("state", rec.state.as_str()))
}

async fn pool(svc: &Services, c: &ClusterRecord, id: &str) -> Result<Option<NodePoolRecord>> {
    Ok(store::node_pools::get(&svc.db, c.id, id).await?)
}

fn describe(from: Bounds, to: Bounds) -> String {
    if from == to {
        format!(
            "already minNodes {}, maxNodes {}: GKE's autoscaling is set to them again",
            to.min, to.max
        )
    } else {
        format!(
            "resize: minNodes {} -> {}, maxNodes {} -> {}",
            from.min, to.min, from.max, to.max
        )
    }
}

/// The pools a resize of `rec` sets: the pool, and its on-demand fallback when the pool
/// is a spot pool whose new maximum the fallback does not cover. A fallback resized on
/// its own must still cover its spot pool.
async fn changes(
    svc: &Services,
    c: &ClusterRecord,
    rec: NodePoolRecord,
    u: &Update,
) -> Result<Vec<Change>> {
    let acc = accelerator(&rec)?;
    let from = bounds(&rec);
    let to = resize::target(&acc, from, u).map_err(resize_error)?;
    resize::check_mode(mode(&rec), to).map_err(|e| resize_error(e).with("field", "minNodes"))?;
    let partner = match &rec.spec.failover {
        Some(f) => pool(svc, c, &f.paired_pool).await?,
        None => None,
    };
    let spot = rec.spec.is_spot_of_pair();
    let first = Change {
        reason: describe(from, to),
        rec,
        acc,
        from,
        to,
    };
    let Some(partner) = partner else {
        return Ok(vec![first]);
    };
    let pb = bounds(&partner);
    if !spot {
        resize::check_fallback(to, pb, &partner.pool_id).map_err(resize_error)?;
        return Ok(vec![first]);
    }
    let Some(follow) = resize::fallback_follows(to, pb) else {
        return Ok(vec![first]);
    };
    running(&partner)?;
    let acc = accelerator(&partner)?;
    let reason = format!(
        "on-demand fallback of {}: maxNodes {} -> {} so every pod of the spot pool can fail over (minNodes kept)",
        first.rec.pool_id, pb.max, follow.max
    );
    Ok(vec![
        first,
        Change {
            rec: partner,
            acc,
            from: pb,
            to: follow,
            reason,
        },
    ])
}

/// Check the regional quota for the growth of a pool's minimum; warnings when it could
/// not be checked (409 QUOTA_INSUFFICIENT when it does not fit).
async fn check_growth(
    cloud: &Cloud,
    n: &ClusterNames,
    ch: &Change,
    preview: bool,
) -> Result<Vec<String>> {
    let growth = resize::min_growth(ch.from, ch.to);
    let Some(metric) = quota::metric(&ch.acc, ch.rec.spec.spot).filter(|_| growth > 0) else {
        return Ok(Vec::new());
    };
    let zones = ch.rec.spec.zones.len().max(1) as u64;
    let pool = &ch.rec.pool_id;
    let need = |needed: u64| {
        format!(
            "raising minNodes of {pool} from {} to {} needs {needed} more",
            ch.from.min, ch.to.min
        )
    };
    let ask = QuotaAsk {
        metric: &metric,
        needed: u64::from(growth) * u64::from(ch.acc.per_node()) * zones,
        need: &need,
        instead: "resize less",
        preview,
    };
    check_region_quota(cloud, n, ask)
        .await
        .map_err(|e| match e.reason.as_str() {
            "QUOTA_INSUFFICIENT" => e.with("pool", pool),
            _ => e,
        })
}

/// 409 NODE_POOL_BUSY when an unfinished resize already sets one of `pools`: its bounds
/// were computed from the record before it changes, so a second one computed now could
/// undo half of it (read under the cluster's lock, this sees every accepted operation).
async fn not_resizing(
    ex: &mut sqlx::PgConnection,
    cluster_id: uuid::Uuid,
    pools: &[String],
) -> Result<()> {
    for op in store::operations::unfinished_on_cluster(&mut *ex, cluster_id).await? {
        if op.op_type != Resize::TYPE.as_str() {
            continue;
        }
        let resize: ClusterOpInput<ResizeInput> = op.input_as()?;
        if let Some(p) = pools.iter().find(|p| resize.pools.contains(p)) {
            return Err(Error::precondition(
                "NODE_POOL_BUSY",
                format!(
                    "node pool {p} has a resize still unfinished: wait for it (GET /v1/operations?filter=type=UPDATE_NODE_POOL AND done=false), then send this one again"
                ),
            )
            .with("pool", p));
        }
    }
    Ok(())
}

fn estimate(svc: &Services, ch: &Change) -> Option<CostRecord> {
    let e = svc.prices.estimate(&ch.acc, ch.to.min, ch.to.max)?;
    Some(CostRecord {
        currency: svc.prices.currency.clone(),
        per_node: e.per_node,
        at_min: e.at_min,
        at_max: e.at_max,
    })
}

/// `PATCH .../nodePools/{pool}`: an UPDATE_NODE_POOL operation (or its plan).
pub async fn resize(
    svc: &Services,
    m: &Mutation,
    pool_id: &str,
    mask: Option<&str>,
    req: ResizeRequest,
) -> Result<Submitted> {
    let pool_id = PoolId::parse(pool_id)?;
    let u = resize::update(mask, req.min_nodes, req.max_nodes).map_err(resize_error)?;
    let (team, c) = match begin(&svc.db, m, "resizing node pools").await? {
        Begin::Repeat(op) => return Ok(Submitted::Operation(op)),
        Begin::Go { team, cluster } => (team, live(cluster, &m.path)?),
    };
    not_deleting(&c, &m.path)?;
    let rec = pool(svc, &c, pool_id.as_str()).await?.ok_or_else(|| {
        Error::not_found(
            "NODE_POOL_NOT_FOUND",
            format!("node pool {}/nodePools/{pool_id} not found", m.path.name()),
        )
        .with("pool", pool_id.as_str())
    })?;
    super::check_pool_etag(m, &rec)?;
    running(&rec)?;
    let changes = changes(svc, &c, rec, &u).await?;
    let names = m.names();
    let mut warnings: Vec<String> = u
        .ignored
        .iter()
        .map(|f| format!("{f} is in the body but not in updateMask: ignored (AIP-134); add it to updateMask to change it"))
        .collect();
    for ch in &changes {
        warnings.extend(check_growth(&svc.cloud, &names, ch, m.validate_only).await?);
        if let Some(r) = ch.rec.spec.reservation.as_deref() {
            let growth = resize::min_growth(ch.from, ch.to);
            warnings.extend(
                reservations::check_resize_growth(
                    &svc.cloud,
                    &names,
                    &ch.acc,
                    r,
                    &ch.rec.spec.zones,
                    growth,
                )
                .await?,
            );
        }
    }
    let costs: Vec<_> = changes.iter().map(|ch| estimate(svc, ch)).collect();
    let resizes: Vec<PoolResize<'_>> = changes
        .iter()
        .zip(&costs)
        .map(|(ch, cost)| PoolResize {
            pool: &ch.rec.spec,
            to: ch.to,
            cost: cost.clone(),
            reason: ch.reason.clone(),
        })
        .collect();
    let mut p = plan(&names, &resizes, &svc.prices.currency);
    p.warnings.extend(warnings);
    // The policy: read with the plan for a preview; for an apply, under the cluster's
    // and the team's locks in the enqueue transaction (see [`guard`]).
    let (mut held, guard) = Guard::hold(&svc.db, m, &team).await?;
    let check = guard.judge(&policy_ask(&changes, m.path.zone.as_str()));
    p.policy = Some(check.clone());
    let Some((mut tx, c)) = held.take() else {
        return Ok(Submitted::Plan(p));
    };
    let waits = guard::enforce(&check)?;
    let ids: Vec<String> = changes.iter().map(|ch| ch.rec.pool_id.clone()).collect();
    not_resizing(&mut tx, c.id, &ids).await?;
    for ch in &changes {
        let now = store::node_pools::get(&mut *tx, c.id, &ch.rec.pool_id).await?;
        match now {
            Some(r) if bounds(&r) == ch.from => running(&r)?,
            _ => {
                return Err(Error::aborted(
                    "NODE_POOL_CHANGED",
                    format!(
                        "node pool {} changed while the request was prepared; send it again",
                        ch.rec.pool_id
                    ),
                ));
            }
        }
    }
    let input = ResizeInput {
        asked: json!({"updateMask": mask, "minNodes": req.min_nodes, "maxNodes": req.max_nodes}),
        pools: changes
            .iter()
            .zip(&costs)
            .map(|(ch, cost)| PoolBounds {
                pool_id: ch.rec.pool_id.clone(),
                min_nodes: i64::from(ch.to.min),
                max_nodes: i64::from(ch.to.max),
                estimated_hourly_cost: cost.clone(),
            })
            .collect(),
    };
    let op = OpRequest::on_pools(m, &team, c.id, pool_id.as_str(), ids, input);
    if waits && m.approving.is_none() {
        let verb = approval::Verb::Resize {
            pool: pool_id.to_string(),
            update_mask: mask.map(str::to_owned),
            body: req,
        };
        return approval::pend::<Resize, _>(svc, tx, m, op, &p, verb, &check).await;
    }
    submit::<Resize, _>(tx, m, op, &p).await
}

/// A resize as the policy sees it: each pool's new bounds replacing its old ones (the
/// bounds asked for are never lowered to fit).
fn policy_ask(changes: &[Change], cluster_zone: &str) -> Ask {
    let mut ask = Ask::default();
    for ch in changes {
        let mut to = ch.rec.spec.clone();
        to.min_nodes = i64::from(ch.to.min);
        to.max_nodes = i64::from(ch.to.max);
        ask.replaces
            .extend(PoolUse::of_record(&ch.rec.spec, cluster_zone));
        ask.pools.extend(PoolUse::of_record(&to, cluster_zone));
    }
    ask
}
