//! HTTP handlers of the simulated GKE API and its `/sim/v1/stockouts` admin endpoint.
//!
//! Invariant: each handler checks armed faults first (a faulted call changes nothing),
//! parses bodies strictly (unknown fields -> 400), takes the world lock without holding
//! it across an `.await`, and tags every response with its Google method.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::cloud::gcp::types::container::{
    Cluster, CreateClusterRequest, CreateNodePoolRequest, ListNodePoolsResponse, NodePool,
    Operation, SetNodePoolSizeRequest,
};
use crate::sim::body::strict;
use crate::sim::error::SimError;
use crate::sim::faults::FaultKind;
use crate::sim::gcp::compute::catalog;
use crate::sim::gcp::method::Service;
use crate::sim::{Sim, tag};

use super::lookup::{
    F, SVC, cluster_ref, find_cluster, find_pool, invalid, key, not_found, required,
};
use super::model::{ClusterRec, Effect, PoolRec};
use super::ops::{self, begin};
use super::{region_of, validate};

/// A requested pool, validated, as it starts: PROVISIONING at its initial node count.
fn provisioning_pool(p: &NodePool, location: &str) -> Result<PoolRec, SimError> {
    let (spec, shape, zones) = validate::pool(p, location)?;
    Ok(PoolRec {
        spec,
        shape,
        zones,
        size: u32::try_from(p.initial_node_count.unwrap_or(0)).unwrap_or(0),
        status: "PROVISIONING".into(),
        status_message: None,
        conditions: Vec::new(),
    })
}

/// The fault kinds a method that starts an operation reports through that operation.
pub(super) const FORWARDED: &[FaultKind] = &[FaultKind::QuotaExceeded, FaultKind::Stockout];

type Cp = Path<(String, String, String)>;
type Pp = Path<(String, String, String, String)>;

/// GKE, whose operation-starting methods report quota and stockouts through the
/// operation.
pub(super) const API: Service = Service {
    name: SVC,
    flavor: F,
    forwarded: FORWARDED,
};

pub fn create_cluster(
    sim: &Sim,
    forced: Option<FaultKind>,
    Path((project, location)): Path<(String, String)>,
    body: Bytes,
) -> Result<Json<Operation>, SimError> {
    let (project, location) = (project.as_str(), location.as_str());
    let req: CreateClusterRequest = strict(F, &body)?;
    let mut cluster = required(req.cluster, "cluster")?;
    let region = region_of(location)
        .ok_or_else(|| {
            invalid(format!(
                "Location \"{location}\" is not a valid zone or region."
            ))
        })?
        .to_owned();
    validate::cluster(project, &cluster)?;
    let mut requested = std::mem::take(&mut cluster.node_pools);
    if requested.is_empty() {
        requested.push(NodePool {
            name: "default-pool".into(),
            initial_node_count: Some(cluster.initial_node_count.unwrap_or(3)),
            ..NodePool::default()
        });
    }
    let pools = requested
        .iter()
        .map(|p| provisioning_pool(p, location))
        .collect::<Result<Vec<_>, _>>()?;
    let clock = sim.clock();
    let mut w = sim.world();
    let k = key(project, location, &cluster.name);
    let target = cluster_ref(project, location, &cluster.name);
    if w.container.clusters.contains_key(&k) {
        return Err(SimError::already_exists(F, &target));
    }
    let mut rec = ClusterRec {
        project: project.to_owned(),
        location: location.to_owned(),
        region: region.clone(),
        kube_key: format!("{project}.{location}.{}", cluster.name),
        base_url: sim.url(),
        version: ClusterRec::version_for(&cluster, &sim.config().gke_version),
        spec: cluster,
        pools,
        id: uuid::Uuid::new_v4().simple().to_string(),
        create_time: String::new(),
        status: "PROVISIONING".into(),
        status_message: None,
    };
    let net = rec.network_name().to_owned();
    if net != "default" && !w.compute.has_network(project, &net) {
        return Err(invalid(format!(
            "Network \"{net}\" does not exist in project \"{project}\"."
        )));
    }
    let forced_at = rec
        .pools
        .iter()
        .position(|p| p.shape.accelerator().is_some())
        .unwrap_or(0);
    let failure = rec.pools.iter().enumerate().find_map(|(i, p)| {
        let f = if i == forced_at { forced } else { None };
        let mut fail = ops::decide(
            sim, &w, project, &region, &p.shape, &p.zones, p.size, true, f,
        )?;
        fail.pool = Some(p.spec.name.clone());
        Some(fail)
    });
    rec.create_time = w.container.stamp(clock, clock.now());
    let link = rec.self_link();
    w.container.clusters.insert(k.clone(), rec);
    Ok(Json(begin(
        sim,
        &mut w,
        (project, location, &k),
        link,
        Effect::CreateCluster,
        failure,
    )))
}

pub fn get_cluster(
    sim: &Sim,
    Path((project, location, cluster)): Cp,
) -> Result<Json<Cluster>, SimError> {
    let w = sim.world();
    find_cluster(&w, &project, &location, &cluster).map(|c| Json(c.to_wire(&w.kube)))
}

/// PUT `.../clusters/{cluster}` (`clusters.update`): the node pool autoscaling subset.
pub fn update_cluster(
    sim: &Sim,
    forced: Option<FaultKind>,
    Path((project, location, cluster)): Cp,
    body: Bytes,
) -> Result<Json<Operation>, SimError> {
    let at = (project.as_str(), location.as_str(), cluster.as_str());
    super::autoscaling::update_cluster(sim, at, &body, forced).map(Json)
}

pub fn delete_cluster(
    sim: &Sim,
    Path((project, location, cluster)): Cp,
) -> Result<Json<Operation>, SimError> {
    let mut w = sim.world();
    let k = key(&project, &location, &cluster);
    let link = find_cluster(&w, &project, &location, &cluster)?.self_link();
    ops::ensure_idle(&w.container, &k, &cluster)?;
    if let Some(c) = w.container.clusters.get_mut(&k) {
        c.status = "STOPPING".into();
        c.pools
            .iter_mut()
            .for_each(|p| p.status = "STOPPING".into());
    }
    Ok(Json(begin(
        sim,
        &mut w,
        (&project, &location, &k),
        link,
        Effect::DeleteCluster,
        None,
    )))
}

pub fn create_pool(
    sim: &Sim,
    forced: Option<FaultKind>,
    Path((project, location, cluster)): Cp,
    body: Bytes,
) -> Result<Json<Operation>, SimError> {
    let (project, location, cluster) = (project.as_str(), location.as_str(), cluster.as_str());
    let req: CreateNodePoolRequest = strict(F, &body)?;
    let pool = required(req.node_pool, "nodePool")?;
    let mut w = sim.world();
    let k = key(project, location, cluster);
    let c = find_cluster(&w, project, location, cluster)?;
    let link = format!("{}/nodePools/{}", c.self_link(), pool.name);
    if c.pool(&pool.name).is_some() {
        let what = format!(
            "{}/nodePools/{}",
            cluster_ref(project, location, cluster),
            pool.name
        );
        return Err(SimError::already_exists(F, &what));
    }
    let rec = provisioning_pool(&pool, location)?;
    super::flex::check(&rec, &c.version())?;
    ops::ensure_idle(&w.container, &k, cluster)?;
    if c.status != "RUNNING" {
        return Err(SimError::precondition(
            F,
            format!(
                "Cluster {cluster} is {}; node pools can only be added to a RUNNING cluster.",
                c.status
            ),
        ));
    }
    let region = c.region.clone();
    let failure = ops::decide(
        sim, &w, project, &region, &rec.shape, &rec.zones, rec.size, true, forced,
    );
    if let Some(c) = w.container.clusters.get_mut(&k) {
        c.pools.push(rec);
    }
    Ok(Json(begin(
        sim,
        &mut w,
        (project, location, &k),
        link,
        Effect::CreatePool(pool.name),
        failure,
    )))
}

pub fn list_pools(
    sim: &Sim,
    Path((project, location, cluster)): Cp,
) -> Result<Json<ListNodePoolsResponse>, SimError> {
    let w = sim.world();
    find_cluster(&w, &project, &location, &cluster).map(|c| {
        Json(ListNodePoolsResponse {
            node_pools: c.pools.iter().map(|p| p.to_wire(c)).collect(),
        })
    })
}

pub fn get_pool(
    sim: &Sim,
    Path((project, location, cluster, pool)): Pp,
) -> Result<Json<NodePool>, SimError> {
    let w = sim.world();
    find_pool(&w, (&project, &location, &cluster), &pool).map(|(c, p)| Json(p.to_wire(c)))
}

pub fn delete_pool(
    sim: &Sim,
    Path((project, location, cluster, pool)): Pp,
) -> Result<Json<Operation>, SimError> {
    let mut w = sim.world();
    let k = key(&project, &location, &cluster);
    let (c, _) = find_pool(&w, (&project, &location, &cluster), &pool)?;
    let link = format!("{}/nodePools/{pool}", c.self_link());
    ops::ensure_idle(&w.container, &k, &cluster)?;
    if let Some(p) = w
        .container
        .clusters
        .get_mut(&k)
        .and_then(|c| c.pool_mut(&pool))
    {
        p.status = "STOPPING".into();
    }
    Ok(Json(begin(
        sim,
        &mut w,
        (&project, &location, &k),
        link,
        Effect::DeletePool(pool.clone()),
        None,
    )))
}

/// POST `.../nodePools/{pool}:{verb}`: `setSize` and `setAutoscaling`.
pub async fn pool_verb(
    State(sim): State<Sim>,
    Path((project, location, cluster, segment)): Pp,
    body: Bytes,
) -> Response {
    if let Some((pool, "setAutoscaling")) = segment.split_once(':') {
        let pool = pool.to_owned();
        return sim
            .serve_forcing((SVC, F), "nodePools.setAutoscaling", FORWARDED, |forced| {
                let at = (project.as_str(), location.as_str(), cluster.as_str());
                super::autoscaling::set(&sim, at, &pool, &body, forced).map(Json)
            })
            .await;
    }
    let Some((pool, "setSize")) = segment.split_once(':') else {
        let e = SimError::no_method(F, &segment);
        return tag("nodePools.unknownVerb", e);
    };
    sim.serve_forcing((SVC, F), "nodePools.setSize", FORWARDED, |forced| {
        do_set_size(&sim, &project, &location, &cluster, pool, &body, forced).map(Json)
    })
    .await
}

fn do_set_size(
    sim: &Sim,
    project: &str,
    location: &str,
    cluster: &str,
    pool: &str,
    body: &Bytes,
    forced: Option<FaultKind>,
) -> Result<Operation, SimError> {
    let req: SetNodePoolSizeRequest = strict(F, body)?;
    let n = required(req.node_count, "nodeCount")?;
    if n < 0 {
        return Err(invalid("nodeCount must be >= 0."));
    }
    let mut w = sim.world();
    let k = key(project, location, cluster);
    let (c, p) = find_pool(&w, (project, location, cluster), pool)?;
    validate::node_count(&p.shape, n, "nodeCount")?;
    ops::ensure_idle(&w.container, &k, cluster)?;
    let current = w.kube.pool_node_count(&c.kube_key, pool).unwrap_or(p.size);
    let n = n as u32;
    let added = n.saturating_sub(current);
    let effect = Effect::SetSize(pool.to_owned(), n);
    let at = (project, location, cluster);
    ops::begin_pool_change(sim, &mut w, at, pool, added, forced, effect)
}

pub fn get_operation(
    sim: &Sim,
    Path((project, location, name)): Cp,
) -> Result<Json<Operation>, SimError> {
    let w = sim.world();
    w.container
        .operations
        .named(&name)
        .filter(|o| o.project == project && o.op.location.as_deref() == Some(&location))
        .map(|o| Json(o.op.clone()))
        .ok_or_else(|| {
            not_found(&format!(
                "projects/{project}/locations/{location}/operations/{name}"
            ))
        })
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Stockout {
    zone: String,
    accelerator_type: String,
}

/// `POST /sim/v1/stockouts {"zone","acceleratorType"}`.
pub async fn add_stockout(State(sim): State<Sim>, body: Bytes) -> Response {
    let s = match serde_json::from_slice::<Stockout>(&body) {
        Ok(s) if catalog::zone_region(&s.zone).is_some() && !s.accelerator_type.is_empty() => s,
        Ok(_) => return bad("zone must be a zone name and acceleratorType non-empty".into()),
        Err(e) => return bad(format!("bad stockout: {e}")),
    };
    sim.world()
        .container
        .stockouts
        .insert(format!("{}/{}", s.zone, s.accelerator_type));
    Json(json!({"zone": s.zone, "acceleratorType": s.accelerator_type})).into_response()
}

/// `GET /sim/v1/stockouts`: configured and added.
pub async fn list_stockouts(State(sim): State<Sim>) -> Response {
    let w = sim.world();
    let mut out: Vec<_> = sim
        .config()
        .stockouts
        .iter()
        .map(|(z, a)| json!({"zone": z, "acceleratorType": a}))
        .collect();
    out.extend(w.container.stockouts.iter().filter_map(|s| {
        let (z, a) = s.split_once('/')?;
        Some(json!({"zone": z, "acceleratorType": a}))
    }));
    Json(json!({ "stockouts": out })).into_response()
}

/// `DELETE /sim/v1/stockouts`: forget the added ones (configured ones stay).
pub async fn clear_stockouts(State(sim): State<Sim>) -> Response {
    sim.world().container.stockouts.clear();
    StatusCode::NO_CONTENT.into_response()
}

fn bad(msg: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"error": {"code": 400, "message": msg}})),
    )
        .into_response()
}
