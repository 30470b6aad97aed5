//! `nodePools.setAutoscaling` of the simulated GKE (and the same change through
//! `clusters.update`'s `desiredNodePoolAutoscaling`, which gcloud's `node-pools update
//! --enable-autoscaling` sends): the request checked as GKE checks it
//! (strict body, `name` matching the path, `0 <= min <= max`, `max >= 1`, per-zone and
//! total bounds not mixed, whole TPU slices) and an UPDATE_CLUSTER operation; its
//! effect when DONE is applied in `effects`.
//!
//! Invariant: like every other GKE mutation here, a faulted or refused call changes
//! nothing, and the effect is applied once, when the operation is DONE. Growing to the
//! new minimum is checked against quota and stock when the call is made (as `setSize`
//! is); when it does not fit, the operation ends DONE with GKE's error and the pool
//! keeps its old autoscaling (a simulator simplification: GKE would accept the bounds
//! and let the autoscaler fail to scale up).

use axum::body::Bytes;
use serde_json::Value;

use crate::cloud::gcp::types::container::{Operation, SetNodePoolAutoscalingRequest};
use crate::sim::Sim;
use crate::sim::body::strict;
use crate::sim::error::SimError;
use crate::sim::faults::FaultKind;

use super::lookup::{At, F, find_pool, invalid, key, required};
use super::model::Effect;
use super::{ops, validate};

/// POST `.../nodePools/{pool}:setAutoscaling`.
pub fn set(
    sim: &Sim,
    (project, location, cluster): At<'_>,
    pool: &str,
    body: &Bytes,
    forced: Option<FaultKind>,
) -> Result<Operation, SimError> {
    let req: SetNodePoolAutoscalingRequest = strict(F, body)?;
    let a = required(req.autoscaling, "autoscaling")?;
    let path =
        format!("projects/{project}/locations/{location}/clusters/{cluster}/nodePools/{pool}");
    if let Some(name) = req.name.as_deref().filter(|n| !n.is_empty())
        && name != path
    {
        return Err(invalid(format!(
            "name \"{name}\" does not match the node pool of the URL \"{path}\"."
        )));
    }
    let mut w = sim.world();
    let k = key(project, location, cluster);
    let (c, p) = find_pool(&w, (project, location, cluster), pool)?;
    validate::autoscaling(&p.shape, &a)?;
    ops::ensure_idle(&w.container, &k, cluster)?;
    if !matches!(p.status.as_str(), "RUNNING" | "RUNNING_WITH_ERROR") {
        return Err(SimError::precondition(
            F,
            format!(
                "Node pool {pool} is {}; its autoscaling can only be changed while it is RUNNING.",
                p.status
            ),
        ));
    }
    let current = w.kube.pool_node_count(&c.kube_key, pool).unwrap_or(p.size);
    let mut after = p.clone();
    after.spec.autoscaling = Some(a.clone());
    let added = after.to_kube(current).min.saturating_sub(current);
    let effect = Effect::SetAutoscaling(pool.to_owned(), a);
    let at = (project, location, cluster);
    ops::begin_pool_change(sim, &mut w, at, pool, added, forced, effect)
}

/// `clusters.update` as gcloud's `node-pools update --enable-autoscaling` sends it
/// (`{"update": {"desiredNodePoolId", "desiredNodePoolAutoscaling"}}`): the same change
/// as `setAutoscaling`. Other `ClusterUpdate` fields are real GKE fields the simulator
/// does not implement: 400 saying so, never a silent success.
pub fn update_cluster(
    sim: &Sim,
    at: At<'_>,
    body: &Bytes,
    forced: Option<FaultKind>,
) -> Result<Operation, SimError> {
    let (project, location, cluster) = at;
    let req: Value = serde_json::from_slice(if body.is_empty() { b"{}" } else { body })
        .map_err(|e| invalid(format!("Invalid JSON payload received. {e}")))?;
    let known = ["update", "name", "projectId", "zone", "clusterId"];
    if let Some(k) = req
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
        .find(|k| !known.contains(&k.as_str()))
    {
        return Err(invalid(format!(
            "Invalid JSON payload received. Unknown name \"{k}\": Cannot find field."
        )));
    }
    let update = req["update"].as_object().cloned().unwrap_or_default();
    if let Some(k) = update
        .keys()
        .find(|k| !["desiredNodePoolId", "desiredNodePoolAutoscaling"].contains(&k.as_str()))
    {
        return Err(invalid(format!(
            "The simulator implements only desiredNodePoolId with desiredNodePoolAutoscaling of clusters.update, not {k}."
        )));
    }
    let a = update.get("desiredNodePoolAutoscaling").ok_or_else(|| {
        invalid("update.desiredNodePoolAutoscaling is required (the only update simulated).")
    })?;
    let pool = match update.get("desiredNodePoolId").and_then(Value::as_str) {
        Some(p) => p.to_owned(),
        None => {
            let w = sim.world();
            let c = w.container.clusters.get(&key(project, location, cluster));
            match c.map(|c| c.pools.as_slice()) {
                Some([only]) => only.spec.name.clone(),
                _ => {
                    return Err(invalid(
                        "desiredNodePoolId is required when the cluster has more than one node pool.",
                    ));
                }
            }
        }
    };
    let body = serde_json::to_vec(&serde_json::json!({"autoscaling": a})).unwrap_or_default();
    set(sim, at, &pool, &Bytes::from(body), forced)
}
