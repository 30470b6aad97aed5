//! Simulated Compute Engine (compute v1) under `/compute/v1/`: VPC networks (global
//! operations), Cloud Routers with NAT (regional operations), regions with quotas,
//! zones, accelerator and machine types per zone, zonal reservations, capacity advice, with the list and
//! aggregated-list calls gcloud makes; plus `/sim/v1/quotas` and
//! `/sim/v1/compute/.../routers/{router}/nats`.
//!
//! Invariant: inserts and deletes are operations that move PENDING -> RUNNING -> DONE on
//! the simulator clock and change the resources only when DONE (in [`tick`]); a
//! `requestId` seen before returns the operation it started instead of acting twice.

mod advice;
pub mod catalog;
mod handlers;
mod info;
mod list;
pub mod mig;
mod nat_admin;
mod operation;
pub mod quota;
mod reservation_writes;
pub mod reservations;

use std::collections::BTreeMap;

use axum::Router;
use axum::routing::{get, post};
use serde::Serialize;

use crate::cloud::gcp::types::compute::{Network, Operation, OperationError, Router as CRouter};
use crate::sim::Sim;
use crate::sim::clock::{Clock, SimTime};
use crate::sim::gcp::method::Forcing;
use crate::sim::gcp::operations::{Named, Operations};
use crate::sim::world::World;

/// Virtual durations of Compute operations.
pub mod durations {
    use std::time::Duration;
    pub const PENDING: Duration = Duration::from_secs(1);
    pub const NETWORK: Duration = Duration::from_secs(20);
    pub const ROUTER: Duration = Duration::from_secs(10);
}

/// What an operation does when DONE.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Effect {
    InsertNetwork(String, Network),
    DeleteNetwork(String),
    InsertRouter(String, CRouter),
    DeleteRouter(String),
}

impl Effect {
    fn key(&self) -> &str {
        match self {
            Effect::InsertNetwork(k, _)
            | Effect::DeleteNetwork(k)
            | Effect::InsertRouter(k, _)
            | Effect::DeleteRouter(k) => k,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpRec {
    pub op: Operation,
    pub project: String,
    /// None: a global operation.
    pub region: Option<String>,
    pub running_at: SimTime,
    pub done_at: SimTime,
    pub effect: Effect,
    /// Decided when the operation started: the DONE operation carries this error (with
    /// its HTTP status) and the effect is not applied.
    pub failure: Option<(OperationError, i32, String)>,
}

impl Named for OpRec {
    fn name(&self) -> &str {
        &self.op.name
    }
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// By `{project}/{name}`.
    pub networks: BTreeMap<String, Network>,
    /// By `{project}/{region}/{name}`.
    pub routers: BTreeMap<String, CRouter>,
    pub operations: Operations<OpRec>,
    /// requestId -> the operation it started.
    pub request_ids: BTreeMap<String, String>,
    /// metric -> limit in every region (`SimConfig::quotas`, copied when the world is made).
    pub default_quotas: BTreeMap<String, f64>,
    /// region -> metric -> limit (from `POST /sim/v1/quotas`).
    pub quota_overrides: BTreeMap<String, BTreeMap<String, f64>>,
    /// Managed instance groups: reclaims waiting for spot capacity, requestIds ([`mig`]).
    pub migs: mig::Groups,
    /// Zonal reservations and their operations ([`reservations`]).
    pub reservations: reservations::Reservations,
}

impl State {
    /// Whether network `name` exists in `project` (the implicit `default` always does).
    pub fn has_network(&self, project: &str, name: &str) -> bool {
        name == "default" || self.networks.contains_key(&format!("{project}/{name}"))
    }

    /// An operation not yet DONE whose effect targets `key`.
    fn pending_on(&self, key: &str) -> Option<&OpRec> {
        self.operations
            .iter()
            .find(|o| o.op.status != "DONE" && o.effect.key() == key)
    }

    /// RFC 3339 wall-clock stamp of virtual time `t`.
    pub(crate) fn stamp(&mut self, clock: &Clock, t: SimTime) -> String {
        clock
            .wall(t)
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    }
}

pub fn routes() -> Router<Sim> {
    use handlers::API as C;
    const P: &str = "/compute/v1/projects/{project}";
    Router::new()
        .route(
            &format!("{P}/global/networks"),
            post(C.method("networks.insert", Forcing(handlers::insert_network)))
                .get(C.method("networks.list", list::networks)),
        )
        .route(
            &format!("{P}/global/networks/{{network}}"),
            get(C.method("networks.get", handlers::get_network))
                .delete(C.method("networks.delete", handlers::delete_network)),
        )
        .route(
            &format!("{P}/regions/{{region}}/routers"),
            post(C.method("routers.insert", Forcing(handlers::insert_router)))
                .get(C.method("routers.list", list::routers)),
        )
        .route(
            &format!("{P}/aggregated/routers"),
            get(C.method("routers.aggregatedList", list::aggregated_routers)),
        )
        .route(
            &format!("{P}/aggregated/acceleratorTypes"),
            get(C.method(
                "acceleratorTypes.aggregatedList",
                list::aggregated_accelerator_types,
            )),
        )
        .route(
            &format!("{P}/regions/{{region}}/routers/{{router}}"),
            get(C.method("routers.get", handlers::get_router))
                .delete(C.method("routers.delete", handlers::delete_router)),
        )
        .route(
            &format!("{P}/regions/{{region}}"),
            get(C.method("regions.get", info::get_region)),
        )
        .route(
            &format!("{P}/regions/{{region}}/advice/capacity"),
            post(C.method("advice.capacity", advice::capacity)),
        )
        .route(
            &format!("{P}/regions/{{region}}/operations/{{operation}}"),
            get(C.method("regionOperations.get", handlers::get_region_operation)),
        )
        .route(
            &format!("{P}/global/operations/{{operation}}"),
            get(C.method("globalOperations.get", handlers::get_global_operation)),
        )
        .route(
            &format!("{P}/zones/{{zone}}/acceleratorTypes"),
            get(C.method("acceleratorTypes.list", info::list_accelerator_types)),
        )
        .route(
            &format!("{P}/zones/{{zone}}/acceleratorTypes/{{accelerator_type}}"),
            get(C.method("acceleratorTypes.get", info::get_accelerator_type)),
        )
        .route(
            &format!("{P}/zones/{{zone}}/machineTypes/{{machine_type}}"),
            get(C.method("machineTypes.get", info::get_machine_type)),
        )
        .route(
            &format!("{P}/zones/{{zone}}/instanceGroupManagers/{{igm}}/listManagedInstances"),
            post(C.method(
                "instanceGroupManagers.listManagedInstances",
                mig::list_managed_instances,
            )),
        )
        .route(
            &format!("{P}/zones/{{zone}}/instanceGroupManagers/{{igm}}/deleteInstances"),
            post(C.method(
                "instanceGroupManagers.deleteInstances",
                mig::delete_instances,
            )),
        )
        .route(
            &format!("{P}/zones/{{zone}}/reservations"),
            post(C.method("reservations.insert", reservation_writes::insert))
                .get(C.method("reservations.list", reservations::list)),
        )
        .route(
            &format!("{P}/zones/{{zone}}/reservations/{{reservation}}"),
            get(C.method("reservations.get", reservations::get))
                .delete(C.method("reservations.delete", reservation_writes::delete)),
        )
        .route(
            &format!("{P}/aggregated/reservations"),
            get(C.method("reservations.aggregatedList", reservations::aggregated)),
        )
        .route(
            &format!("{P}/zones/{{zone}}/operations/{{operation}}"),
            get(C.method("zoneOperations.get", reservations::get_operation)),
        )
        .route(
            &format!("{P}/zones/{{zone}}/operations/{{operation}}/wait"),
            post(reservations::wait_operation),
        )
        .route(
            &format!("{P}/zones"),
            get(C.method("zones.list", info::list_zones)),
        )
        .route(
            &format!("{P}/zones/{{zone}}"),
            get(C.method("zones.get", info::get_zone)),
        )
        .route(
            "/sim/v1/compute/projects/{project}/regions/{region}/routers/{router}/nats",
            axum::routing::delete(nat_admin::remove_nats),
        )
        .route(
            "/sim/v1/quotas",
            post(quota::set).get(quota::list).delete(quota::clear),
        )
}

/// Move operations along; apply the effects of those that are DONE. Returns whether
/// anything quota caps read changed (nodes restored, a reservation made).
pub fn tick(world: &mut World, clock: &Clock) -> bool {
    let changed = mig::tick(world, clock) | reservations::tick(world, clock);
    let state = &mut world.compute;
    for i in 0..state.operations.len() {
        let o = &state.operations[i];
        if o.op.status == "DONE" {
            continue;
        }
        if clock.is_due(o.done_at) {
            let done_at = o.done_at;
            let end = state.stamp(clock, done_at);
            let o = &mut state.operations[i];
            operation::finish(&mut o.op, end);
            if let Some((error, code, message)) = o.failure.clone() {
                o.op.error = Some(error);
                o.op.http_error_status_code = Some(code);
                o.op.http_error_message = Some(message);
                continue;
            }
            match o.effect.clone() {
                Effect::InsertNetwork(k, n) => {
                    state.networks.insert(k, n);
                }
                Effect::DeleteNetwork(k) => {
                    state.networks.remove(&k);
                }
                Effect::InsertRouter(k, r) => {
                    state.routers.insert(k, r);
                }
                Effect::DeleteRouter(k) => {
                    state.routers.remove(&k);
                }
            }
        } else if o.op.status == "PENDING" && clock.is_due(o.running_at) {
            operation::run(&mut state.operations[i].op);
        }
    }
    changed
}
