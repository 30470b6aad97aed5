//! Adoption's routes: `GET /v1/teams/{team}:discoverClusters` (what the team's projects
//! hold that kineticd does not record) and `POST .../nodePools/{pool}:import` (record one
//! such pool). The verbs share their resource's path segment, so the team's GET and the
//! pool's verb route dispatch here; the OpenAPI document lists each as its own path.
//! (`up` of an unrecorded cluster adopts it: see `service::provision::adopt`.)
//!
//! Invariant: the handlers only parse; the service authorises (discovery VIEWER+, import
//! MEMBER+) and reads the cloud.

use axum::Json;

use crate::domain::TeamId;
use crate::model::NodePool;
use crate::service::adopt::discover::Discovery;
use crate::service::{self, Caller, clusters::ClusterPath};

use super::PoolParams;
use super::call::Reply;
use super::state::AppState;

/// **discoverClusters**: the GKE clusters in the team's projects that kineticd has no
/// record of, each with its pools and whether `up` of its path would adopt it, and the
/// unrecorded pools of recorded clusters (each offered for `:import`). Read-only
/// (VIEWER+); a project GKE cannot list is a warning.
#[utoipa::path(get, path = "/v1/teams/{team}:discoverClusters", operation_id = "discoverClusters", tag = "teams",
    params(("team" = String, Path, description = "team id")),
    responses((status = 200, description = "Unrecorded clusters and pools", body = Discovery)))]
pub async fn discover_clusters(s: &AppState, caller: &Caller, team: &str) -> Reply<Discovery> {
    let team = TeamId::parse(team)?;
    Ok(Json(
        service::adopt::discover::discover(&s.db, &s.cloud, &s.prices, caller, &team).await?,
    ))
}

/// **import** a node pool GKE has on this cluster without a record: it is recorded as it
/// is in GKE (accelerator, bounds, spot, reservation, failover pair, sharing,
/// provisioning), with a POOL_IMPORTED event (MEMBER+). Only a pool carrying kinetic's
/// mark is imported; nothing in the cloud changes.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}:import", operation_id = "importNodePool", tag = "nodePools",
    params(PoolParams),
    responses((status = 200, description = "The pool's new record", body = NodePool)))]
pub async fn import_node_pool(
    s: &AppState,
    caller: &Caller,
    path: &ClusterPath,
    pool: &str,
) -> Reply<NodePool> {
    Ok(Json(
        service::adopt::pool::import(s, caller, path, pool).await?,
    ))
}
