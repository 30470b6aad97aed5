//! HTTP handlers for simulated Compute networks, routers and operations.
//!
//! Invariant: each handler checks armed faults first, parses bodies strictly, replays a
//! known `requestId` before any other check (so a retried insert never gets a 409 for
//! its own earlier attempt), and tags every response with its Google method.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query};
use serde::Deserialize;

use crate::cloud::gcp::types::compute::{
    Network, NetworkRoutingConfig, Operation, OperationError, OperationErrorItem, Router,
};
use crate::sim::Sim;
use crate::sim::body::strict;
use crate::sim::clock::Clock;
use crate::sim::error::{Flavor, SimError};
use crate::sim::faults::FaultKind;
use crate::sim::gcp::container;
use crate::sim::gcp::method::Service;
use crate::sim::world::World;

use super::{Effect, OpRec, State as Compute, catalog, durations, operation};

pub(super) const SVC: &str = "compute";
pub(super) const F: Flavor = Flavor::Compute;
/// Compute, whose inserts report QUOTA_EXCEEDED through a failed operation.
pub(super) const API: Service = Service {
    name: SVC,
    flavor: F,
    forwarded: FORWARDED,
};

#[derive(Debug, Default, Deserialize)]
pub struct Rq {
    #[serde(rename = "requestId")]
    request_id: Option<String>,
}

pub(super) fn base(sim: &Sim, project: &str) -> String {
    format!("{}/compute/v1/projects/{project}", sim.url())
}

fn invalid(msg: impl Into<String>) -> SimError {
    SimError::invalid(F, msg)
}

/// Compute's 404 for a region it does not have.
pub(super) fn check_region(project: &str, region: &str) -> Result<(), SimError> {
    if catalog::is_region(region) {
        return Ok(());
    }
    let what = format!("projects/{project}/regions/{region}");
    Err(SimError::not_found(F, &what))
}

/// Compute's 404 for `path` (`reservations/{name}`, `operations/{name}`, ...; empty: the
/// zone itself) in zone `zone` of `project`.
pub(super) fn zonal_not_found(project: &str, zone: &str, path: &str) -> SimError {
    let zone = format!("projects/{project}/zones/{zone}");
    let what = if path.is_empty() {
        zone
    } else {
        format!("{zone}/{path}")
    };
    SimError::not_found(F, &what)
}

/// Compute's 404 for a zone it does not have.
pub(super) fn check_zone(project: &str, zone: &str) -> Result<(), SimError> {
    if catalog::zone_region(zone).is_some() {
        return Ok(());
    }
    Err(zonal_not_found(project, zone, ""))
}

fn check_name(field: &str, name: &str) -> Result<(), SimError> {
    if crate::sim::gcp::is_lowercase_label(name, 63) {
        return Ok(());
    }
    Err(invalid(format!(
        "Invalid value for field '{field}': '{name}'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{{0,61}}[a-z0-9])?)'"
    )))
}

pub(super) fn request_id(q: &Rq) -> Result<Option<String>, SimError> {
    let Some(raw) = q.request_id.as_deref().filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    match uuid::Uuid::parse_str(raw) {
        Ok(u) if !u.is_nil() => Ok(Some(u.to_string())),
        _ => Err(invalid(format!(
            "Invalid value for field 'requestId': '{raw}'. The requestId must be a valid UUID with the \
             exception that zero UUID is not supported (00000000-0000-0000-0000-000000000000)."
        ))),
    }
}

/// The operation a requestId already started.
fn replay(state: &Compute, rid: Option<&str>) -> Option<Operation> {
    named_operation(state, state.request_ids.get(rid?)?)
}

/// The operation named `name` as it stands now (names are unique: the newest is it).
fn named_operation(state: &Compute, name: &str) -> Option<Operation> {
    state.operations.named(name).map(|o| o.op.clone())
}

struct Start<'a> {
    project: &'a str,
    region: Option<&'a str>,
    base: String,
    operation_type: &'static str,
    target_link: String,
    target_id: Option<String>,
    effect: Effect,
    duration: std::time::Duration,
    request_id: Option<String>,
    failure: Option<(OperationError, i32, String)>,
}

/// The fault kinds an insert reports through its operation: QUOTA_EXCEEDED becomes a
/// failed operation (Compute reports resource quotas there).
const FORWARDED: &[FaultKind] = &[FaultKind::QuotaExceeded];

fn quota_failure(
    forced: Option<FaultKind>,
    metric: &str,
    scope: &str,
) -> Option<(OperationError, i32, String)> {
    forced?;
    let error = OperationError {
        errors: vec![OperationErrorItem {
            code: "QUOTA_EXCEEDED".into(),
            message: format!("Quota '{metric}' exceeded.  Limit: 0.0 {scope}."),
            location: None,
        }],
    };
    Some((error, 403, "FORBIDDEN".into()))
}

fn start(w: &mut World, clock: &Clock, s: Start<'_>) -> Operation {
    let now = clock.now();
    let state = &mut w.compute;
    let ms = chrono::Utc::now().timestamp_millis();
    let name = format!(
        "operation-{ms}-{:013x}-{:08x}-{:08x}",
        rand::random::<u64>() & 0x1f_ffff_ffff_ffff,
        rand::random::<u32>(),
        rand::random::<u32>()
    );
    let scope = match s.region {
        Some(r) => format!("{}/regions/{r}", s.base),
        None => format!("{}/global", s.base),
    };
    let stamp = state.stamp(clock, now);
    let op = Operation {
        target_link: Some(s.target_link),
        target_id: s.target_id,
        region: s.region.map(|_| scope.clone()),
        ..operation::pending(&scope, &name, s.operation_type, &stamp)
    };
    state.operations.push(OpRec {
        op,
        project: s.project.to_owned(),
        region: s.region.map(str::to_owned),
        running_at: now + durations::PENDING,
        done_at: now + s.duration,
        effect: s.effect,
        failure: s.failure,
    });
    if let Some(rid) = s.request_id {
        state.request_ids.insert(rid, name.clone());
    }
    super::tick(w, clock);
    named_operation(&w.compute, &name).unwrap_or_default()
}

fn not_ready(what: &str) -> SimError {
    SimError::new(
        F,
        400,
        "FAILED_PRECONDITION",
        "resourceNotReady",
        format!("The resource '{what}' is not ready"),
    )
}

/// A network (global) or router (regional) of `project`: where it is stored and how
/// Compute names it.
struct Res<'a> {
    project: &'a str,
    /// `None`: a global resource.
    region: Option<&'a str>,
    /// `networks`, `routers`.
    plural: &'static str,
    name: &'a str,
}

impl Res<'_> {
    /// The store key: `{project}/{name}` or `{project}/{region}/{name}`.
    fn key(&self) -> String {
        match self.region {
            Some(r) => format!("{}/{r}/{}", self.project, self.name),
            None => format!("{}/{}", self.project, self.name),
        }
    }

    /// `global/networks/{name}` or `regions/{region}/routers/{name}`.
    fn path(&self) -> String {
        let scope = self
            .region
            .map_or("global".to_owned(), |r| format!("regions/{r}"));
        format!("{scope}/{}/{}", self.plural, self.name)
    }

    /// The resource name in Compute's messages.
    fn what(&self) -> String {
        format!("projects/{}/{}", self.project, self.path())
    }

    fn link(&self, base: &str) -> String {
        format!("{base}/{}", self.path())
    }
}

/// `{resource}.get`: the stored resource, or Compute's 404.
fn get<T: Clone>(
    items: &std::collections::BTreeMap<String, T>,
    res: &Res<'_>,
) -> Result<Json<T>, SimError> {
    let found = items.get(&res.key()).map(|r| Json(r.clone()));
    found.ok_or_else(|| SimError::not_found(F, &res.what()))
}

/// What an insert gives the resource it creates.
struct Created {
    key: String,
    id: String,
    link: String,
    stamp: String,
}

/// The part every insert shares once its body is checked (and a known requestId
/// replayed): 409 when the resource exists or an operation on it runs, then an insert
/// operation whose effect `effect` makes from what the resource is given.
fn insert(
    sim: &Sim,
    w: &mut World,
    res: &Res<'_>,
    exists: bool,
    request_id: Option<String>,
    (duration, failure): (std::time::Duration, Option<(OperationError, i32, String)>),
    effect: impl FnOnce(Created) -> Effect,
) -> Result<Operation, SimError> {
    let key = res.key();
    if exists || w.compute.pending_on(&key).is_some() {
        return Err(SimError::already_exists(F, &res.what()));
    }
    let base = base(sim, res.project);
    let link = res.link(&base);
    let id = rand::random::<u64>().to_string();
    let stamp = w.compute.stamp(sim.clock(), sim.clock().now());
    Ok(start(
        w,
        sim.clock(),
        Start {
            project: res.project,
            region: res.region,
            base,
            operation_type: "insert",
            target_link: link.clone(),
            target_id: Some(id.clone()),
            effect: effect(Created {
                key,
                id,
                link,
                stamp,
            }),
            duration,
            request_id,
            failure,
        },
    ))
}

/// `{resource}.delete`: a known requestId replayed, else 404 when the resource is not
/// there, `resourceNotReady` while an operation on it runs, `in_use`'s refusal, then a
/// delete operation.
fn delete(
    sim: &Sim,
    q: &Rq,
    res: &Res<'_>,
    id: impl FnOnce(&Compute, &str) -> Option<Option<String>>,
    in_use: impl FnOnce(&World) -> Result<(), SimError>,
    (effect, duration): (fn(String) -> Effect, std::time::Duration),
) -> Result<Json<Operation>, SimError> {
    let rid = request_id(q)?;
    let mut w = sim.world();
    if let Some(op) = replay(&w.compute, rid.as_deref()) {
        return Ok(Json(op));
    }
    let key = res.key();
    let what = res.what();
    let id = id(&w.compute, &key).ok_or_else(|| SimError::not_found(F, &what))?;
    if w.compute.pending_on(&key).is_some() {
        return Err(not_ready(&what));
    }
    in_use(&w)?;
    let base = base(sim, res.project);
    Ok(Json(start(
        &mut w,
        sim.clock(),
        Start {
            project: res.project,
            region: res.region,
            target_link: res.link(&base),
            base,
            operation_type: "delete",
            target_id: id,
            effect: effect(key),
            duration,
            request_id: rid,
            failure: None,
        },
    )))
}

fn network<'a>(project: &'a str, name: &'a str) -> Res<'a> {
    Res {
        project,
        region: None,
        plural: "networks",
        name,
    }
}

fn router<'a>(project: &'a str, region: &'a str, name: &'a str) -> Res<'a> {
    Res {
        project,
        region: Some(region),
        plural: "routers",
        name,
    }
}

pub fn insert_network(
    sim: &Sim,
    forced: Option<FaultKind>,
    Path(project): Path<String>,
    Query(q): Query<Rq>,
    body: Bytes,
) -> Result<Json<Operation>, SimError> {
    let mut n: Network = strict(F, &body)?;
    check_name("resource.name", &n.name)?;
    let rid = request_id(&q)?;
    let mut w = sim.world();
    if let Some(op) = replay(&w.compute, rid.as_deref()) {
        return Ok(Json(op));
    }
    let name = n.name.clone();
    let exists = w.compute.has_network(&project, &name);
    let failure = quota_failure(forced, "NETWORKS", "globally");
    let how = (durations::NETWORK, failure);
    insert(
        sim,
        &mut w,
        &network(&project, &name),
        exists,
        rid,
        how,
        |c| {
            n.id = Some(c.id);
            n.kind = Some("compute#network".into());
            n.self_link = Some(c.link);
            n.creation_timestamp = Some(c.stamp);
            n.auto_create_subnetworks.get_or_insert(true);
            n.mtu.get_or_insert(1460);
            n.routing_config.get_or_insert(NetworkRoutingConfig {
                routing_mode: Some("REGIONAL".into()),
            });
            Effect::InsertNetwork(c.key, n)
        },
    )
    .map(Json)
}

pub fn get_network(
    sim: &Sim,
    Path((project, name)): Path<(String, String)>,
) -> Result<Json<Network>, SimError> {
    get(&sim.world().compute.networks, &network(&project, &name))
}

/// `(project, name)` of a network reference (`projects/p/global/networks/n`, a URL, or
/// `global/networks/n` relative to `project`).
fn network_ref(s: &str, project: &str) -> Option<(String, String)> {
    let segs: Vec<&str> = s.split('/').collect();
    let i = segs.iter().rposition(|x| *x == "networks")?;
    let name = segs.get(i + 1).filter(|n| !n.is_empty())?;
    let p = segs
        .iter()
        .rposition(|x| *x == "projects")
        .and_then(|j| segs.get(j + 1))
        .map_or(project, |p| p);
    Some((p.to_owned(), (*name).to_owned()))
}

/// 400 resourceInUseByAnotherResource while a router or a GKE cluster uses the network.
fn network_unused(w: &World, project: &str, network: &str) -> Result<(), SimError> {
    let routers = w.compute.routers.iter().filter_map(|(k, r)| {
        let (p, n) = network_ref(&r.network, project)?;
        (p == project && n == network).then(|| {
            let (_, rest) = k.split_once('/').unwrap_or(("", k));
            let (region, name) = rest.split_once('/').unwrap_or(("", rest));
            format!("projects/{project}/regions/{region}/routers/{name}")
        })
    });
    let users: Vec<String> = routers
        .chain(container::network_users(w, project, network))
        .collect();
    match users.first() {
        Some(user) => Err(SimError::new(
            F,
            400,
            "FAILED_PRECONDITION",
            "resourceInUseByAnotherResource",
            format!(
                "The network resource 'projects/{project}/global/networks/{network}' is already being used by '{user}'"
            ),
        )),
        None => Ok(()),
    }
}

pub fn delete_network(
    sim: &Sim,
    Path((project, name)): Path<(String, String)>,
    Query(q): Query<Rq>,
) -> Result<Json<Operation>, SimError> {
    delete(
        sim,
        &q,
        &network(&project, &name),
        |c, key| c.networks.get(key).map(|n| n.id.clone()),
        |w| network_unused(w, &project, &name),
        (Effect::DeleteNetwork, durations::NETWORK),
    )
}

fn check_nats(r: &Router) -> Result<(), SimError> {
    for (i, nat) in r.nats.iter().enumerate() {
        check_name(&format!("resource.nats[{i}].name"), &nat.name)?;
        if !["AUTO_ONLY", "MANUAL_ONLY"].contains(&nat.nat_ip_allocate_option.as_str()) {
            return Err(invalid(format!(
                "Invalid value for field 'resource.nats[{i}].natIpAllocateOption': '{}'. Must be AUTO_ONLY or MANUAL_ONLY.",
                nat.nat_ip_allocate_option
            )));
        }
        let ranges = [
            "ALL_SUBNETWORKS_ALL_IP_RANGES",
            "ALL_SUBNETWORKS_ALL_PRIMARY_IP_RANGES",
            "LIST_OF_SUBNETWORKS",
        ];
        if !ranges.contains(&nat.source_subnetwork_ip_ranges_to_nat.as_str()) {
            return Err(invalid(format!(
                "Invalid value for field 'resource.nats[{i}].sourceSubnetworkIpRangesToNat': '{}'.",
                nat.source_subnetwork_ip_ranges_to_nat
            )));
        }
    }
    Ok(())
}

pub fn insert_router(
    sim: &Sim,
    forced: Option<FaultKind>,
    Path((project, region)): Path<(String, String)>,
    Query(q): Query<Rq>,
    body: Bytes,
) -> Result<Json<Operation>, SimError> {
    let mut r: Router = strict(F, &body)?;
    check_name("resource.name", &r.name)?;
    check_nats(&r)?;
    let rid = request_id(&q)?;
    check_region(&project, &region)?;
    let (net_project, net) = network_ref(&r.network, &project).ok_or_else(|| {
        invalid(format!(
            "Invalid value for field 'resource.network': '{}'. The URL is malformed.",
            r.network
        ))
    })?;
    let mut w = sim.world();
    if let Some(op) = replay(&w.compute, rid.as_deref()) {
        return Ok(Json(op));
    }
    if !w.compute.has_network(&net_project, &net) {
        return Err(SimError::not_found(
            F,
            &format!("projects/{net_project}/global/networks/{net}"),
        ));
    }
    let name = r.name.clone();
    let res = router(&project, &region, &name);
    let exists = w.compute.routers.contains_key(&res.key());
    let failure = quota_failure(forced, "ROUTERS", &format!("in region {region}"));
    let base = base(sim, &project);
    insert(
        sim,
        &mut w,
        &res,
        exists,
        rid,
        (durations::ROUTER, failure),
        |c| {
            r.id = Some(c.id);
            r.kind = Some("compute#router".into());
            r.region = Some(format!("{base}/regions/{region}"));
            r.network = format!(
                "{}/compute/v1/projects/{net_project}/global/networks/{net}",
                sim.url()
            );
            r.self_link = Some(c.link);
            r.creation_timestamp = Some(c.stamp);
            Effect::InsertRouter(c.key, r)
        },
    )
    .map(Json)
}

pub fn get_router(
    sim: &Sim,
    Path((project, region, name)): Path<(String, String, String)>,
) -> Result<Json<Router>, SimError> {
    let res = router(&project, &region, &name);
    get(&sim.world().compute.routers, &res)
}

pub fn delete_router(
    sim: &Sim,
    Path((project, region, name)): Path<(String, String, String)>,
    Query(q): Query<Rq>,
) -> Result<Json<Operation>, SimError> {
    delete(
        sim,
        &q,
        &router(&project, &region, &name),
        |c, key| c.routers.get(key).map(|r| r.id.clone()),
        |_| Ok(()),
        (Effect::DeleteRouter, durations::ROUTER),
    )
}

fn find_op(
    sim: &Sim,
    project: &str,
    region: Option<&str>,
    name: &str,
) -> Result<Json<Operation>, SimError> {
    let w = sim.world();
    w.compute
        .operations
        .named(name)
        .filter(|o| o.project == project && o.region.as_deref() == region)
        .map(|o| Json(o.op.clone()))
        .ok_or_else(|| {
            let scope = region.map_or("global".to_owned(), |r| format!("regions/{r}"));
            SimError::not_found(F, &format!("projects/{project}/{scope}/operations/{name}"))
        })
}

pub fn get_region_operation(
    sim: &Sim,
    Path((project, region, name)): Path<(String, String, String)>,
) -> Result<Json<Operation>, SimError> {
    find_op(sim, &project, Some(&region), &name)
}

pub fn get_global_operation(
    sim: &Sim,
    Path((project, name)): Path<(String, String)>,
) -> Result<Json<Operation>, SimError> {
    find_op(sim, &project, None, &name)
}
