//! Simulated GKE (container v1) under `/container/v1/`: clusters, node pools and their
//! long-running operations (each listed per location or across them, as gcloud reads
//! them), plus `/sim/v1/stockouts`.
//!
//! Invariant: every mutation is an operation that moves PENDING -> RUNNING -> DONE on the
//! simulator clock and applies its effect (cluster RUNNING with its Kubernetes API, pool
//! nodes, removal) only when DONE, in [`tick`]; a cluster runs one operation at a time;
//! quota and stockout outcomes are decided when the operation starts and reported as a
//! DONE operation with `error`, like GKE.

mod autoscaling;
mod effects;
mod flex;
mod handlers;
mod list;
mod lookup;
pub(crate) mod model;
mod ops;
mod validate;

use std::collections::{BTreeMap, BTreeSet};

use axum::Router;
use axum::routing::{get, post};
use serde::Serialize;

use crate::sim::Sim;
use crate::sim::clock::{Clock, SimTime};
use crate::sim::gcp::compute::{self, catalog};
use crate::sim::gcp::method::Forcing;
use crate::sim::gcp::operations::{Named, Operations};
use crate::sim::world::World;

pub use model::{ClusterRec, DEFAULT_VERSION, OpRec, PoolRec, Shape};

/// Virtual durations of GKE operations.
pub mod durations {
    use std::time::Duration;
    pub const PENDING: Duration = Duration::from_secs(5);
    pub const CREATE_CLUSTER: Duration = Duration::from_secs(300);
    pub const DELETE_CLUSTER: Duration = Duration::from_secs(180);
    pub const CREATE_NODE_POOL: Duration = Duration::from_secs(90);
    pub const DELETE_NODE_POOL: Duration = Duration::from_secs(60);
    pub const SET_NODE_POOL_SIZE: Duration = Duration::from_secs(30);
    pub const SET_NODE_POOL_AUTOSCALING: Duration = Duration::from_secs(10);
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// By `{project}/{location}/{name}`.
    pub clusters: BTreeMap<String, ClusterRec>,
    /// Every operation, in creation order.
    pub operations: Operations<OpRec>,
    /// `{zone}/{acceleratorType}` pairs out of stock (added through `/sim/v1/stockouts`).
    pub stockouts: BTreeSet<String>,
}

impl State {
    /// RFC 3339 wall-clock stamp of virtual time `t`.
    pub(crate) fn stamp(&mut self, clock: &Clock, t: SimTime) -> String {
        clock
            .wall(t)
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    }
}

impl Named for OpRec {
    fn name(&self) -> &str {
        &self.op.name
    }
}

/// Whether `zone` is out of `accelerator` (configured or added at run time).
pub fn stocked_out(sim: &Sim, state: &State, zone: &str, accelerator: &str) -> bool {
    state.stockouts.contains(&format!("{zone}/{accelerator}"))
        || sim
            .config()
            .stockouts
            .iter()
            .any(|(z, a)| z == zone && a == accelerator)
}

/// Quota used in one (project, region), by metric.
pub type Usage = BTreeMap<&'static str, f64>;

/// Quota usage in `project`/`region` by metric, from the node pools that hold nodes
/// (or are being given them).
pub fn usage(world: &World, project: &str, region: &str) -> Usage {
    let mut out = Usage::new();
    for c in world.container.clusters.values() {
        if c.project == project && c.region == region {
            add_usage(world, c, &mut out);
        }
    }
    out
}

/// Quota usage of every (project, region) that has a cluster, in one pass over the
/// clusters (a tick runs before every call: one filtered pass per region would make
/// each call cost regions x clusters).
fn usages(world: &World) -> BTreeMap<(&str, &str), Usage> {
    let mut out: BTreeMap<(&str, &str), Usage> = BTreeMap::new();
    for c in world.container.clusters.values() {
        let usage = out
            .entry((c.project.as_str(), c.region.as_str()))
            .or_default();
        add_usage(world, c, usage);
    }
    out
}

/// Add what `c`'s node pools hold (or are being given) to `out`, by metric.
fn add_usage(world: &World, c: &ClusterRec, out: &mut Usage) {
    let kube = world.kube.clusters.get(&c.kube_key);
    for p in &c.pools {
        if p.status == "ERROR" {
            continue;
        }
        let per_zone = kube
            .and_then(|k| k.pools.get(&p.spec.name))
            .map_or(p.size, |n| n.count);
        let nodes = f64::from(per_zone) * p.zones.len() as f64;
        for (metric, units) in p.shape.units() {
            *out.entry(metric).or_insert(0.0) += units * nodes;
        }
    }
}

/// Names of the GKE clusters (`projects/{p}/locations/{l}/clusters/{c}`) on `network`.
pub fn network_users(world: &World, project: &str, network: &str) -> Vec<String> {
    world
        .container
        .clusters
        .values()
        .filter(|c| c.project == project && c.network_name() == network)
        .map(|c| {
            format!(
                "projects/{}/locations/{}/clusters/{}",
                c.project, c.location, c.spec.name
            )
        })
        .collect()
}

/// Region of a GKE location (zone or region).
pub(crate) fn region_of(location: &str) -> Option<&str> {
    catalog::region_of(location)
}

pub fn routes() -> Router<Sim> {
    use handlers::API as G;
    const P: &str = "/container/v1/projects/{project}/locations/{location}";
    Router::new()
        .route(
            &format!("{P}/clusters"),
            post(G.method("clusters.create", Forcing(handlers::create_cluster)))
                .get(G.method("clusters.list", list::clusters)),
        )
        .route(
            &format!("{P}/clusters/{{cluster}}"),
            get(G.method("clusters.get", handlers::get_cluster))
                .put(G.method("clusters.update", Forcing(handlers::update_cluster)))
                .delete(G.method("clusters.delete", handlers::delete_cluster)),
        )
        .route(
            &format!("{P}/clusters/{{cluster}}/nodePools"),
            post(G.method("nodePools.create", Forcing(handlers::create_pool)))
                .get(G.method("nodePools.list", handlers::list_pools)),
        )
        .route(
            &format!("{P}/clusters/{{cluster}}/nodePools/{{pool}}"),
            get(G.method("nodePools.get", handlers::get_pool))
                .delete(G.method("nodePools.delete", handlers::delete_pool))
                .post(handlers::pool_verb),
        )
        .route(
            &format!("{P}/operations"),
            get(G.method("operations.list", list::operations)),
        )
        .route(
            &format!("{P}/operations/{{operation}}"),
            get(G.method("operations.get", handlers::get_operation)),
        )
        .route(
            "/sim/v1/stockouts",
            post(handlers::add_stockout)
                .get(handlers::list_stockouts)
                .delete(handlers::clear_stockouts),
        )
}

/// Move operations along: RUNNING when their pending time has passed, DONE (with their
/// effect) when their duration has.
/// Returns whether an operation finished.
pub fn tick(world: &mut World, clock: &Clock) -> bool {
    ops::advance(world, clock)
}

/// Tell the Kubernetes side how far the region's quota lets each pool grow (nodes per
/// zone), as GKE's cluster autoscaler is bounded by Compute quota: a scale-up past it
/// would fail with QUOTA_EXCEEDED, so the simulated autoscaler does not plan it.
/// Computed from usage at the start of the tick: pools sharing a metric may together
/// overshoot it by the scale-ups planned within that tick.
pub fn quota_caps(world: &mut World) {
    // Computed under a shared borrow, cluster by cluster and pool by pool in the
    // clusters' order (`None`: the pool has no nodes on the Kubernetes side), then
    // handed over in the same order: one lookup of each cluster's Kubernetes side a pass.
    let usages = usages(world);
    let none = Usage::new();
    let caps: Vec<Vec<Option<QuotaCap>>> = world
        .container
        .clusters
        .values()
        .map(|c| {
            let usage = usages
                .get(&(c.project.as_str(), c.region.as_str()))
                .unwrap_or(&none);
            let kube = world.kube.clusters.get(&c.kube_key);
            c.pools
                .iter()
                .map(|p| {
                    let count = kube?.pools.get(&p.spec.name)?.count;
                    Some(pool_cap(world, c, p, count, usage))
                })
                .collect()
        })
        .collect();
    let World {
        container, kube, ..
    } = world;
    for (c, caps) in container.clusters.values().zip(caps) {
        let Some(k) = kube.clusters.get_mut(&c.kube_key) else {
            continue;
        };
        for (p, cap) in c.pools.iter().zip(caps) {
            if let Some(cap) = cap {
                k.set_quota_cap(&p.spec.name, cap);
            }
        }
    }
}

/// The most nodes per zone a pool may reach and the metric or reservation that bounds
/// it (`None`: no bound).
type QuotaCap = Option<(u32, String)>;

/// [`QuotaCap`] of pool `p` of `c`, at `count` nodes per zone, under `usage`.
fn pool_cap(world: &World, c: &ClusterRec, p: &PoolRec, count: u32, usage: &Usage) -> QuotaCap {
    let zones = p.zones.len().max(1) as f64;
    let cap = p
        .shape
        .units()
        .into_iter()
        .filter(|(_, units)| *units > 0.0)
        .filter_map(|(metric, units)| {
            let limit = compute::quota::limit(world, &c.region, metric)?;
            let free = (limit - usage.get(metric).copied().unwrap_or(0.0)).max(0.0);
            Some((metric, (free / (units * zones)).floor() as u32))
        })
        .min_by_key(|(_, more)| *more)
        .map(|(metric, more)| (count.saturating_add(more), metric.to_owned()));
    compute::reservations::tighter(cap, compute::reservations::cap(world, c, p, count))
}
