//! The drill's watch: the cluster's nodes and pods listed every poll interval (the
//! Kubernetes wait interval of the provisioning steps) until the pods run again and
//! spot capacity is back, or the deadline passes.
//!
//! Invariant: every observation is stamped with the real time it was made, so the
//! timeline is what a person watching `kubectl get pods -w` would have seen (to within
//! one poll); at the deadline the drill FAILS with the report as far as it got, in the
//! error's metadata, and pods not yet running again counted as never recovered.

use chrono::Utc;
use serde_json::Value;

use crate::model::drill::{DrillReport, HourlyCost};
use crate::ops::steps::{RpcCode, StepError};
use crate::plan::DrillStep;
use crate::store;

use super::super::kube::cluster;
use super::super::results::result;
use super::super::{kube_error, store_error};
use super::DrillInput;
use super::Step;
use super::track::{Before, Tracker};

/// The reclaim step's observation (this step reads it).
fn before(s: &Step<'_>) -> Result<Before, StepError> {
    let id = DrillStep::Reclaim.to_string();
    let v = s.ctx.results.get(&id).cloned().unwrap_or(Value::Null);
    serde_json::from_value(v).map_err(|e| {
        StepError::terminal(
            RpcCode::Internal,
            "BAD_STEP_RESULT",
            format!("the {id} step's result: {e}"),
        )
    })
}

/// The on-demand price of one fallback node, from the pool's record.
async fn fallback_price(s: &Step<'_>, pool: &str) -> Result<Option<HourlyCost>, StepError> {
    let rec = store::node_pools::get(&s.env.db, s.cluster_id, pool)
        .await
        .map_err(store_error)?;
    Ok(rec
        .and_then(|r| r.spec.estimated_hourly_cost)
        .map(|c| HourlyCost {
            currency: c.currency,
            amount: c.per_node,
        }))
}

fn deadline_error(r: &DrillReport, deadline: std::time::Duration) -> StepError {
    let why = if r.pods_never_recovered > 0 {
        format!(
            "{} of {} pods never ran again{}",
            r.pods_never_recovered,
            r.pods_affected,
            if r.fallback_nodes_added == 0 {
                " and the fallback pool added no node (quota, stockout, its maximum, or pods it cannot take?)"
            } else {
                ""
            }
        )
    } else {
        "the pods run again but the spot pool is not back to its minimum".to_owned()
    };
    StepError::terminal(
        RpcCode::DeadlineExceeded,
        "DRILL_DEADLINE_EXCEEDED",
        format!(
            "the failover did not complete within the drill's deadline of {}: {why}",
            crate::model::drill::duration_json(deadline)
        ),
    )
    .with("report", text(r))
    .with("timeline", text(&r.timeline))
    .with("podsAffected", r.pods_affected)
    .with("podsNeverRecovered", r.pods_never_recovered)
    .with("fallbackNodesAdded", r.fallback_nodes_added)
}

/// JSON text of a report part (plain data: it always serializes).
fn text(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

pub async fn watch(s: &Step<'_>, d: &DrillInput) -> Result<Value, StepError> {
    let before = before(s)?;
    let end = before.started
        + chrono::Duration::from_std(d.deadline()).unwrap_or(chrono::Duration::zero());
    let price = fallback_price(s, &d.fallback_pool).await?;
    let mut t = Tracker::new(before, &d.spot_pool, &d.fallback_pool);
    let k = cluster(s).await?;
    let poll = s.env.timing.kube.poll;
    loop {
        let inv = k.inventory().await.map_err(kube_error)?;
        let now = Utc::now();
        t.observe(&inv, now);
        if t.finished() {
            return result(t.report(price));
        }
        if now >= end {
            return Err(deadline_error(&t.report(price), d.deadline()));
        }
        let left = (end - now).to_std().unwrap_or_default();
        tokio::select! {
            _ = s.ctx.cancel.cancelled() => {
                return Err(StepError::terminal(RpcCode::Cancelled, "CANCELLED", "the drill was cancelled"));
            }
            _ = tokio::time::sleep(poll.min(left)) => {}
        }
    }
}
