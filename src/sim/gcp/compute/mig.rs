//! Simulated zonal managed instance groups: the group behind each zone of a GKE node pool
//! (`instanceGroupUrls`, `gke-{cluster}-{pool}-grp`), whose instances are the pool's
//! Kubernetes nodes in that zone. `listManagedInstances` lists them; `deleteInstances`
//! takes them away as a spot preemption does: the Kubernetes side reclaims the pool
//! (nodes vanish, their pods go Pending, no spot capacity for `RECLAIM_BACKOFF`), and
//! once that capacity is back the group is restored to the pool's minimum size, as GKE
//! keeps a pool at its minimum.
//!
//! Invariant: a group's instances are exactly the nodes the Kubernetes side has for the
//! pool in that zone (names from [`nodes::node_name`]), so what Compute lists and what
//! `kubectl get nodes` shows never disagree; a deletion takes effect before its (DONE)
//! operation is returned.

use std::collections::BTreeMap;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query};
use serde::Serialize;

use crate::cloud::gcp::types::compute::Operation;
use crate::cloud::gcp::types::mig::{DeleteInstancesRequest, ManagedInstance, ManagedInstanceList};
use crate::sim::Sim;
use crate::sim::body::strict;
use crate::sim::clock::{Clock, SimTime};
use crate::sim::error::SimError;
use crate::sim::kube::cluster::RECLAIM_BACKOFF;
use crate::sim::kube::nodes;
use crate::sim::world::World;

use super::handlers::{F, Rq, base, request_id, zonal_not_found};
use super::operation;

/// What the groups remember: reclaims to restore, and the operation each `requestId`
/// started (a retried `deleteInstances` returns it instead of deleting again).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Groups {
    pub restores: Vec<Restore>,
    pub requests: BTreeMap<String, Operation>,
}

/// A group restored to its pool's minimum once spot capacity is back.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Restore {
    pub kube_key: String,
    pub pool: String,
    pub at: SimTime,
}

/// The cluster (Kubernetes key) and pool behind group `name` in `project`/`zone`.
struct Group {
    kube_key: String,
    pool: String,
    url: String,
}

fn group(w: &World, sim: &Sim, project: &str, zone: &str, name: &str) -> Result<Group, SimError> {
    let found = w.container.clusters.values().find_map(|c| {
        if c.project != project {
            return None;
        }
        let p = c.pools.iter().find(|p| {
            p.status != "ERROR"
                && p.zones.iter().any(|z| z == zone)
                && format!("gke-{}-{}-grp", c.spec.name, p.spec.name) == name
        })?;
        Some((c.kube_key.clone(), p.spec.name.clone()))
    });
    let what = format!("instanceGroupManagers/{name}");
    let (kube_key, pool) = found.ok_or_else(|| zonal_not_found(project, zone, &what))?;
    Ok(Group {
        kube_key,
        pool,
        url: format!(
            "{}/zones/{zone}/instanceGroupManagers/{name}",
            base(sim, project)
        ),
    })
}

/// Names of the group's instances: the pool's nodes in `zone`.
fn instance_names(w: &World, g: &Group, zone: &str) -> Vec<String> {
    let count = w.kube.pool_node_count(&g.kube_key, &g.pool).unwrap_or(0);
    (0..count)
        .map(|i| nodes::node_name(&g.kube_key, &g.pool, zone, i))
        .collect()
}

fn instance_url(sim: &Sim, project: &str, zone: &str, name: &str) -> String {
    format!("{}/zones/{zone}/instances/{name}", base(sim, project))
}

pub fn list_managed_instances(
    sim: &Sim,
    Path((project, zone, igm)): Path<(String, String, String)>,
) -> Result<Json<ManagedInstanceList>, SimError> {
    let w = sim.world();
    let g = group(&w, sim, &project, &zone, &igm)?;
    let managed_instances = instance_names(&w, &g, &zone)
        .into_iter()
        .map(|name| ManagedInstance {
            instance: Some(instance_url(sim, &project, &zone, &name)),
            name: Some(name),
            instance_status: Some("RUNNING".into()),
            current_action: Some("NONE".into()),
        })
        .collect();
    Ok(Json(ManagedInstanceList {
        managed_instances,
        next_page_token: None,
    }))
}

/// `(zone, name)` of an instance reference (`.../zones/{z}/instances/{name}`).
fn instance_ref(s: &str) -> Option<(&str, &str)> {
    let segs: Vec<&str> = s.split('/').collect();
    let i = segs.iter().rposition(|x| *x == "zones")?;
    match segs.get(i..)? {
        ["zones", zone, "instances", name] if !zone.is_empty() && !name.is_empty() => {
            Some((zone, name))
        }
        _ => None,
    }
}

/// The instances of the request that belong to the group (errors as Compute gives them).
fn members(
    req: &DeleteInstancesRequest,
    zone: &str,
    current: &[String],
) -> Result<usize, SimError> {
    if req.instances.is_empty() {
        return Err(SimError::invalid(
            F,
            "Invalid value for field 'resource.instances': ''. At least one instance must be specified.",
        ));
    }
    let skip = req.skip_instances_on_validation_error.unwrap_or(false);
    let mut n = 0;
    for url in &req.instances {
        let Some((z, name)) = instance_ref(url) else {
            return Err(SimError::invalid(
                F,
                format!(
                    "Invalid value for field 'resource.instances[]': '{url}'. Malformed instance URL."
                ),
            ));
        };
        if z != zone {
            return Err(SimError::invalid(
                F,
                format!(
                    "Invalid value for field 'resource.instances[]': '{url}'. The instance is not in the group's zone {zone}."
                ),
            ));
        }
        if current.iter().any(|c| c == name) {
            n += 1;
        } else if !skip {
            return Err(SimError::invalid(
                F,
                format!(
                    "Invalid value for field 'resource.instances[]': '{url}'. The instance is not a member of the managed instance group."
                ),
            ));
        }
    }
    Ok(n)
}

pub fn delete_instances(
    sim: &Sim,
    Path((project, zone, igm)): Path<(String, String, String)>,
    Query(q): Query<Rq>,
    body: Bytes,
) -> Result<Json<Operation>, SimError> {
    let req: DeleteInstancesRequest = strict(F, &body)?;
    let rid = request_id(&q)?;
    let clock = sim.clock();
    let mut w = sim.world();
    if let Some(op) = rid.as_ref().and_then(|r| w.compute.migs.requests.get(r)) {
        return Ok(Json(op.clone()));
    }
    let g = group(&w, sim, &project, &zone, &igm)?;
    let current = instance_names(&w, &g, &zone);
    let deleting = members(&req, &zone, &current)?;
    if deleting > 0 {
        take_away(&mut w, &g, deleting, clock.now());
    }
    let stamp = w.compute.stamp(clock, clock.now());
    let name = format!(
        "operation-{}-{:016x}",
        chrono::Utc::now().timestamp_millis(),
        rand::random::<u64>()
    );
    let zone_url = format!("{}/zones/{zone}", base(sim, &project));
    let kind = "compute.instanceGroupManagers.deleteInstances";
    let op = Operation {
        target_link: Some(g.url),
        zone: Some(zone_url.clone()),
        ..operation::done(&zone_url, &name, kind, &stamp)
    };
    if let Some(r) = rid {
        w.compute.migs.requests.insert(r, op.clone());
    }
    Ok(Json(op))
}

/// Delete `n` instances of the group: a spot pool is reclaimed (all its nodes go, as
/// when spot capacity is taken back) and restored to its minimum after the backoff; an
/// on-demand pool shrinks by `n` nodes per zone.
fn take_away(w: &mut World, g: &Group, n: usize, now: SimTime) {
    let spot = w
        .kube
        .clusters
        .get(&g.kube_key)
        .and_then(|c| c.pools.get(&g.pool))
        .is_some_and(|p| p.spot);
    if spot {
        if w.kube.reclaim_pool(&g.kube_key, &g.pool, now).is_ok() {
            w.compute.migs.restores.push(Restore {
                kube_key: g.kube_key.clone(),
                pool: g.pool.clone(),
                at: now + RECLAIM_BACKOFF,
            });
        }
        return;
    }
    let count = w.kube.pool_node_count(&g.kube_key, &g.pool).unwrap_or(0);
    let left = count.saturating_sub(u32::try_from(n).unwrap_or(u32::MAX));
    w.kube.set_pool_size(&g.kube_key, &g.pool, left);
}

/// Restore reclaimed groups whose backoff is over to their pool's minimum.
/// Returns whether a restore came due (a pool's node count may have changed).
pub fn tick(w: &mut World, clock: &Clock) -> bool {
    let (due, waiting): (Vec<Restore>, Vec<Restore>) = std::mem::take(&mut w.compute.migs.restores)
        .into_iter()
        .partition(|r| clock.is_due(r.at));
    w.compute.migs.restores = waiting;
    let changed = !due.is_empty();
    for r in due {
        let min = w
            .kube
            .clusters
            .get(&r.kube_key)
            .and_then(|c| c.pools.get(&r.pool))
            .map(|p| (p.min, p.count));
        if let Some((min, count)) = min
            && count < min
        {
            w.kube.set_pool_size(&r.kube_key, &r.pool, min);
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_refs() {
        assert_eq!(
            instance_ref("https://x/compute/v1/projects/p/zones/us-central1-a/instances/gke-a-1"),
            Some(("us-central1-a", "gke-a-1"))
        );
        assert_eq!(instance_ref("zones/z/instances/n"), Some(("z", "n")));
        assert_eq!(instance_ref("zones/z/disks/n"), None);
        let req = DeleteInstancesRequest {
            instances: vec![
                "zones/z/instances/a".into(),
                "zones/z/instances/gone".into(),
            ],
            skip_instances_on_validation_error: Some(true),
        };
        assert_eq!(members(&req, "z", &["a".into()]).ok(), Some(1));
        let strict = DeleteInstancesRequest {
            skip_instances_on_validation_error: None,
            ..req
        };
        assert!(members(&strict, "z", &["a".into()]).is_err());
    }
}
