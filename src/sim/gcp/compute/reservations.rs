//! Simulated zonal reservations (`/compute/v1/projects/{p}/zones/{z}/reservations`):
//! `get`, `list`, `aggregatedList` (what `gcloud compute reservations list` calls) and
//! `zoneOperations.get` / `wait` (`insert` and `delete` are in
//! [`super::reservation_writes`]); plus what the GKE side needs: how many VMs each reservation
//! has in use and how far a bound pool may grow ([`cap`]).
//!
//! Invariant: `inUseCount` is never stored: it is the nodes, per zone, of every pool
//! (in any project) whose `reservationAffinity` names the reservation and whose project
//! may consume it (the owner, or one its `shareSettings` lists), so it grows and
//! shrinks with the Kubernetes side; a pool of a project it is not shared with consumes
//! nothing and cannot grow, as Compute answers such VMs "not found".

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use serde::Serialize;

use crate::cloud::gcp::types::compute::Operation;
use crate::cloud::gcp::types::reservation::{Reservation, ShareSettings};
use crate::sim::Sim;
use crate::sim::clock::{Clock, SimTime};
use crate::sim::error::SimError;
use crate::sim::gcp::container::model::{ClusterRec, PoolRec};
use crate::sim::gcp::list::{AggregatedList, ComputeList, PageQuery};
use crate::sim::world::World;

use super::handlers::{F, SVC, base, check_zone, zonal_not_found};
use super::{list, operation};

/// Reservations (by `{project}/{zone}/{name}`, without `inUseCount`), their zonal
/// operations and the operation each `requestId` started.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reservations {
    pub items: BTreeMap<String, Reservation>,
    pub operations: Vec<ZoneOp>,
    pub requests: BTreeMap<String, String>,
}

/// A zonal operation and what it does when DONE (`None`: nothing, a delete done at once).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ZoneOp {
    pub op: Operation,
    pub project: String,
    pub zone: String,
    pub done_at: SimTime,
    pub insert: Option<(String, Reservation)>,
}

pub(super) fn key(project: &str, zone: &str, name: &str) -> String {
    format!("{project}/{zone}/{name}")
}

/// Compute's 404 for the reservation `name` of `project` in `zone`.
fn missing(project: &str, zone: &str, name: &str) -> SimError {
    zonal_not_found(project, zone, &format!("reservations/{name}"))
}

impl Reservations {
    /// The reservation `name` of `project` in `zone`, or Compute's 404 for it.
    pub(super) fn find(
        &self,
        project: &str,
        zone: &str,
        name: &str,
    ) -> Result<&Reservation, SimError> {
        let found = self.items.get(&key(project, zone, name));
        found.ok_or_else(|| missing(project, zone, name))
    }

    /// Take out the reservation `name` of `project` in `zone`, or Compute's 404 for it.
    pub(super) fn take(
        &mut self,
        project: &str,
        zone: &str,
        name: &str,
    ) -> Result<Reservation, SimError> {
        let found = self.items.remove(&key(project, zone, name));
        found.ok_or_else(|| missing(project, zone, name))
    }
}

/// The reservation a GKE pool's `reservationAffinity` names: (owner project, name).
fn bound(c: &ClusterRec, p: &PoolRec) -> Option<(String, String)> {
    let a = p.spec.config.as_ref()?.reservation_affinity.as_ref()?;
    if a.consume_reservation_type != "SPECIFIC_RESERVATION" {
        return None;
    }
    let v = a.values.first()?;
    match v.split('/').collect::<Vec<_>>().as_slice() {
        [name] => Some((c.project.clone(), (*name).to_owned())),
        ["projects", owner, "reservations", name] => {
            Some(((*owner).to_owned(), (*name).to_owned()))
        }
        _ => None,
    }
}

/// VMs of reservation `project`/`zone`/`name` that pool nodes use now.
fn in_use(w: &World, project: &str, zone: &str, name: &str, r: &Reservation) -> i64 {
    let mut n = 0i64;
    for c in w.container.clusters.values() {
        for p in &c.pools {
            let mine = bound(c, p).is_some_and(|(o, r)| o == project && r == name);
            let shared = ShareSettings::shared_with(r.share_settings.as_ref(), project, &c.project);
            if mine && shared && p.zones.iter().any(|z| z == zone) {
                n += i64::from(
                    w.kube
                        .pool_node_count(&c.kube_key, &p.spec.name)
                        .unwrap_or(0),
                );
            }
        }
    }
    n
}

/// The reservation as `get` shows it: with its current `inUseCount`.
fn view(w: &World, project: &str, zone: &str, r: &Reservation) -> Reservation {
    let mut r = r.clone();
    let used = in_use(w, project, zone, &r.name.clone(), &r);
    if let Some(s) = r.specific_reservation.as_mut() {
        s.in_use_count = Some(used);
    }
    r
}

/// How many nodes per zone a pool bound to a reservation may reach (its count now plus
/// the reservation's free VMs; 0 more when the reservation is missing or not shared),
/// and why; `None` for a pool bound to none.
pub fn cap(w: &World, c: &ClusterRec, p: &PoolRec, count: u32) -> Option<(u32, String)> {
    let (owner, name) = bound(c, p)?;
    let why = format!("reservation projects/{owner}/reservations/{name}");
    let found = p.zones.iter().find_map(|z| {
        let r = w.compute.reservations.items.get(&key(&owner, z, &name))?;
        Some((z, r))
    });
    let Some((zone, r)) = found else {
        return Some((count, why));
    };
    if !ShareSettings::shared_with(r.share_settings.as_ref(), &owner, &c.project) {
        return Some((count, why));
    }
    let sku = r.specific_reservation.clone().unwrap_or_default();
    let free = (sku.count.unwrap_or(0) - in_use(w, &owner, zone, &name, r)).max(0);
    Some((
        count.saturating_add(u32::try_from(free).unwrap_or(u32::MAX)),
        why,
    ))
}

/// The smaller of two caps (the quota's and the reservation's).
pub fn tighter(a: Option<(u32, String)>, b: Option<(u32, String)>) -> Option<(u32, String)> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
        (a, b) => a.or(b),
    }
}

pub fn get(
    sim: &Sim,
    Path((project, zone, name)): Path<(String, String, String)>,
) -> Result<Json<Reservation>, SimError> {
    check_zone(&project, &zone)?;
    let w = sim.world();
    let r = w.compute.reservations.find(&project, &zone, &name)?;
    Ok(Json(view(&w, &project, &zone, r)))
}

/// Each reservation of `project` as `reservations.get` shows it: `(zone, name, view)`.
fn views(w: &World, project: &str) -> Vec<(String, String, Reservation)> {
    let prefix = format!("{project}/");
    let items = w.compute.reservations.items.iter();
    items
        .filter_map(|(k, r)| {
            let (zone, name) = k.strip_prefix(&prefix)?.split_once('/')?;
            Some((zone.to_owned(), name.to_owned(), view(w, project, zone, r)))
        })
        .collect()
}

pub fn list(
    sim: &Sim,
    Path((project, zone)): Path<(String, String)>,
    Query(q): Query<PageQuery>,
) -> Result<Json<ComputeList<Reservation>>, SimError> {
    check_zone(&project, &zone)?;
    let all = views(&sim.world(), &project)
        .into_iter()
        .filter(|(z, ..)| *z == zone)
        .map(|(_, name, v)| (name, v))
        .collect();
    let link = format!("{}/zones/{zone}/reservations", base(sim, &project));
    ComputeList::page("compute#reservationList", link, all, &q).map(Json)
}

pub fn aggregated(
    sim: &Sim,
    Path(project): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Json<AggregatedList<Reservation>>, SimError> {
    let all = views(&sim.world(), &project)
        .into_iter()
        .map(|(zone, name, v)| (format!("zones/{zone}"), name, v))
        .collect();
    let kind = ("compute#reservationAggregatedList", "reservations");
    list::aggregated(sim, &project, kind, all, &q)
}

/// `zoneOperations.get` (the reservations' operations).
pub fn get_operation(
    sim: &Sim,
    Path((project, zone, name)): Path<(String, String, String)>,
) -> Result<Json<Operation>, SimError> {
    zone_op(sim, &project, &zone, &name)
        .map(Json)
        .ok_or_else(|| zonal_not_found(&project, &zone, &format!("operations/{name}")))
}

/// The zonal operation `name` of `project` in `zone`, as it is now.
fn zone_op(sim: &Sim, project: &str, zone: &str, name: &str) -> Option<Operation> {
    let w = sim.world();
    let ops = &w.compute.reservations.operations;
    ops.iter()
        .find(|o| o.op.name == name && o.project == project && o.zone == zone)
        .map(|o| o.op.clone())
}

/// `zoneOperations.wait` (what gcloud polls with): the operation once DONE, or as it is
/// after a short while (Google answers within two minutes, DONE or not).
pub async fn wait_operation(
    State(sim): State<Sim>,
    Path((project, zone, name)): Path<(String, String, String)>,
) -> Response {
    for _ in 0..40 {
        match zone_op(&sim, &project, &zone, &name) {
            Some(op) if op.status != "DONE" => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            _ => break,
        }
    }
    sim.serve((SVC, F), "zoneOperations.wait", || {
        get_operation(&sim, Path((project, zone, name)))
    })
    .await
}

/// Move the zonal operations along; a DONE insert adds its reservation.
/// Returns whether an operation finished (a reservation may have appeared).
pub fn tick(world: &mut World, clock: &Clock) -> bool {
    let mut done = Vec::new();
    for o in &world.compute.reservations.operations {
        if o.op.status != "DONE" && clock.is_due(o.done_at) {
            done.push(o.op.name.clone());
        }
    }
    let changed = !done.is_empty();
    for name in done {
        let end = world.compute.stamp(clock, clock.now());
        let state = &mut world.compute.reservations;
        let Some(o) = state.operations.iter_mut().find(|o| o.op.name == name) else {
            continue;
        };
        operation::finish(&mut o.op, end);
        if let Some((k, r)) = o.insert.clone() {
            state.items.insert(k, r);
        }
    }
    for o in world.compute.reservations.operations.iter_mut() {
        if o.op.status == "PENDING" {
            operation::run(&mut o.op);
        }
    }
    changed
}
