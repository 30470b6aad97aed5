//! `:drill` on a node pool of a failover pair: the request checked (mode, deadline), the
//! pair found from either of its pools (the drill always reclaims the spot one), and a
//! FAILOVER_DRILL operation planned and enqueued on the cluster's queue.
//!
//! Invariant: a drill is accepted only for a pair whose two pools are recorded and
//! RUNNING, and it is serialized behind every operation already accepted on the cluster
//! (same queue key); it changes no record state, so a drill that fails leaves the
//! cluster and its pools as they were.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::domain::pools::FailoverRole;
use crate::domain::{PoolId, PoolState, duration};
use crate::model::drill::DrillMode;
use crate::ops::workflows::cluster::drill::{Drill, DrillInput as OpInput};
use crate::plan::drill::{DrillInput, plan};
use crate::plan::{DrillStep, Plan};
use crate::store::{self, clusters::ClusterRecord};

use super::super::{Error, Result, Services};
use super::{Begin, Mutation, OpRequest, Submitted, begin, enqueue, live, not_deleting, operation};

/// The longest a drill may watch.
pub const MAX_DEADLINE: Duration = Duration::from_secs(6 * 3600);
/// How long a drill watches unless told.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(900);

/// The body of `POST .../nodePools/{pool}:drill`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DrillRequest {
    /// RECLAIM_NODES (default: delete the spot pool's VMs, as a preemption does) or
    /// DELETE_POOL (delete the spot pool and create it again exactly).
    #[schema(value_type = Option<crate::model::drill::DrillMode>)]
    pub mode: Option<String>,
    /// How long to watch for recovery (default `900s`, at most `21600s`); when it passes
    /// the drill FAILS with the timeline so far.
    pub deadline: Option<String>,
}

fn mode(req: &DrillRequest) -> Result<DrillMode> {
    match req.mode.as_deref() {
        None | Some("RECLAIM_NODES") => Ok(DrillMode::ReclaimNodes),
        Some("DELETE_POOL") => Ok(DrillMode::DeletePool),
        Some(other) => Err(Error::invalid(
            "INVALID_DRILL_MODE",
            format!("mode {other:?} is not RECLAIM_NODES (delete the spot pool's VMs, the default) or DELETE_POOL (delete and re-create the spot pool)"),
        )
        .with("mode", other)),
    }
}

fn deadline(req: &DrillRequest) -> Result<Duration> {
    let Some(text) = req.deadline.as_deref() else {
        return Ok(DEFAULT_DEADLINE);
    };
    let bad = |why: String| {
        Error::invalid(
            "INVALID_DEADLINE",
            format!(
                "deadline: {why}; give a duration like \"900s\" between 1s and {}s",
                MAX_DEADLINE.as_secs()
            ),
        )
        .with("deadline", text)
    };
    let d = duration::parse(text, MAX_DEADLINE).map_err(|e| bad(e.to_string()))?;
    if d < Duration::from_secs(1) {
        return Err(bad(format!("{text:?} is shorter than 1s")));
    }
    Ok(d)
}

/// The pair's pools, spot first, as recorded (409 when `pool` has no partner, or the
/// pair is not RUNNING).
async fn pair(
    svc: &Services,
    m: &Mutation,
    c: &ClusterRecord,
    pool: &PoolId,
) -> Result<(
    store::node_pools::NodePoolRecord,
    store::node_pools::NodePoolRecord,
)> {
    let name = format!("{}/nodePools/{pool}", m.path.name());
    let get = |id: String| async move { store::node_pools::get(&svc.db, c.id, &id).await };
    let rec = get(pool.to_string()).await?.ok_or_else(|| {
        Error::not_found("NODE_POOL_NOT_FOUND", format!("node pool {name} not found"))
    })?;
    super::check_pool_etag(m, &rec)?;
    let no_pair = || {
        Error::precondition(
            "NO_FAILOVER_PAIR",
            format!("node pool {name} has no failover partner: a drill needs a spot pool with an on-demand fallback (add one with POST .../nodePools and \"failover\": true)"),
        )
        .with("pool", pool.as_str())
    };
    let f = rec.spec.failover.clone().ok_or_else(no_pair)?;
    let other = get(f.paired_pool.clone()).await?.ok_or_else(no_pair)?;
    let (spot, fallback) = if f.role == FailoverRole::Spot {
        (rec, other)
    } else {
        (other, rec)
    };
    for p in [&spot, &fallback] {
        if p.state != PoolState::Running {
            return Err(Error::precondition(
                "NODE_POOL_NOT_RUNNING",
                format!(
                    "node pool {} is {:?}, not RUNNING: wait for its operation to finish (or repair it with up) before a drill",
                    p.pool_id, p.state
                ),
            )
            .with("pool", &p.pool_id));
        }
    }
    Ok((spot, fallback))
}

/// `:drill`: a FAILOVER_DRILL operation on the pair `pool` belongs to.
pub async fn drill(
    svc: &Services,
    m: &Mutation,
    pool: &str,
    req: DrillRequest,
) -> Result<Submitted<Plan<DrillStep>>> {
    let pool = PoolId::parse(pool)?;
    let mode = mode(&req)?;
    let deadline = deadline(&req)?;
    let (team, c) = match begin(&svc.db, m, "running failover drills").await? {
        Begin::Repeat(op) => return Ok(Submitted::Operation(op)),
        Begin::Go { team, cluster } => (team, live(cluster, &m.path)?),
    };
    not_deleting(&c, &m.path)?;
    let (spot, fallback) = pair(svc, m, &c, &pool).await?;
    let names = m.names();
    let p = plan(&DrillInput {
        names: &names,
        mode,
        spot: &spot.spec,
        fallback_pool: &fallback.pool_id,
        deadline,
    });
    if m.validate_only {
        return Ok(Submitted::Plan(p));
    }
    let (tx, c) = super::lock_live_cluster(&svc.db, m).await?;
    let input = OpInput {
        mode,
        spot_pool: spot.pool_id.clone(),
        fallback_pool: fallback.pool_id.clone(),
        deadline_seconds: deadline.as_secs_f64(),
    };
    let pools = vec![spot.pool_id.clone(), fallback.pool_id.clone()];
    let op = OpRequest::on_pools(m, &team, c.id, &spot.pool_id, pools, input);
    let e = operation::<Drill, _>(m, op, &p)?;
    Ok(Submitted::Operation(Box::new(enqueue(tx, &e).await?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_deadlines() {
        let r = |mode: Option<&str>, deadline: Option<&str>| DrillRequest {
            mode: mode.map(str::to_owned),
            deadline: deadline.map(str::to_owned),
        };
        assert_eq!(mode(&r(None, None)).unwrap(), DrillMode::ReclaimNodes);
        assert_eq!(
            mode(&r(Some("DELETE_POOL"), None)).unwrap(),
            DrillMode::DeletePool
        );
        assert!(mode(&r(Some("delete_pool"), None)).is_err());
        assert_eq!(deadline(&r(None, None)).unwrap(), DEFAULT_DEADLINE);
        assert_eq!(
            deadline(&r(None, Some("75s"))).unwrap(),
            Duration::from_secs(75)
        );
        for bad in ["0s", "soon", "-5s", "99999s"] {
            assert!(deadline(&r(None, Some(bad))).is_err(), "{bad}");
        }
    }
}
