//! Cluster and node-pool records (read side). `up`/`down` and pool changes arrive with
//! the operation engine.

use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::call::{Call, Paged, Reply};
use super::extract::{ApiPath, ApiQuery, ClusterAt, PoolAt};
use super::state::AppState;
use super::{ClusterParams, PoolParams};
use crate::domain::{PoolId, ProjectId, ZoneName};
use crate::model::{Cluster, NodePool};
use crate::service;
use crate::service::clusters::ListClusters;

use super::PageQuery;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_clusters))
        .routes(routes!(list_project_clusters))
        .routes(routes!(
            get_cluster,
            super::provision::up_cluster,
            super::provision::down_cluster
        ))
        .routes(routes!(list_node_pools, super::provision::add_node_pool))
        .routes(routes!(super::preview::preview_create_node_pool))
        .routes(routes!(
            get_node_pool,
            super::provision::remove_node_pool,
            super::resize::resize_node_pool
        ))
        // `{pool}` may carry a custom verb (`pool:drill`).
        .route(
            super::pool_verbs::POOL_PATH,
            axum::routing::post(super::pool_verbs::pool_verb),
        )
}

list_response!(ListClustersResponse, clusters: Cluster);

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ListClustersQuery {
    /// Only this team's clusters (`ml-research` or `teams/ml-research`).
    pub team: Option<String>,
    /// Only clusters in this state.
    #[param(value_type = Option<crate::domain::ClusterState>)]
    pub state: Option<String>,
    pub page_size: Option<i32>,
    pub page_token: Option<String>,
}

/// Clusters of the caller's teams.
#[utoipa::path(get, path = "/v1/clusters", operation_id = "listClusters", tag = "clusters", params(ListClustersQuery),
    responses((status = 200, description = "One page of the clusters of the caller's teams", body = ListClustersResponse)))]
async fn list_clusters(
    Call(s, caller): Call,
    ApiQuery(q): ApiQuery<ListClustersQuery>,
) -> Reply<ListClustersResponse> {
    let page = PageQuery {
        page_size: q.page_size,
        page_token: q.page_token,
    };
    let list = ListClusters::from_query(q.team.as_deref(), q.state.as_deref())?;
    let page = service::clusters::list(&s.db, &caller, list, &page.request(&s.page_key)).await?;
    Ok(Json(page.into()))
}

/// Clusters of one project; `{zone}` is a zone or `-` for every zone.
#[utoipa::path(get, path = "/v1/projects/{project}/zones/{zone}/clusters", operation_id = "listProjectClusters", tag = "clusters",
    params(("project" = String, Path), ("zone" = String, Path, description = "a zone, or - for all"), PageQuery),
    responses((status = 200, description = "One page of the project's clusters", body = ListClustersResponse)))]
async fn list_project_clusters(
    Call(s, caller): Call,
    ApiPath((project, zone)): ApiPath<(String, String)>,
    Paged(page): Paged,
) -> Reply<ListClustersResponse> {
    let list = ListClusters {
        project: Some(ProjectId::parse(&project)?),
        zone: (zone != "-").then(|| ZoneName::parse(&zone)).transpose()?,
        ..ListClusters::default()
    };
    let page = service::clusters::list(&s.db, &caller, list, &page).await?;
    Ok(Json(page.into()))
}

/// A cluster record with its node pools.
#[utoipa::path(get, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}", operation_id = "getCluster", tag = "clusters",
    params(ClusterParams),
    responses((status = 200, description = "The cluster record with its node pools", body = Cluster)))]
async fn get_cluster(Call(s, caller): Call, ClusterAt(path): ClusterAt) -> Reply<Cluster> {
    Ok(Json(service::clusters::get(&s.db, &caller, &path).await?))
}

list_response!(ListNodePoolsResponse, node_pools: NodePool);

/// Node pools of a cluster.
#[utoipa::path(get, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools", operation_id = "listNodePools", tag = "nodePools",
    params(ClusterParams, PageQuery),
    responses((status = 200, description = "One page of the cluster's node pools", body = ListNodePoolsResponse)))]
async fn list_node_pools(
    Call(s, caller): Call,
    ClusterAt(path): ClusterAt,
    Paged(page): Paged,
) -> Reply<ListNodePoolsResponse> {
    let page = service::clusters::list_pools(&s.db, &caller, &path, &page).await?;
    Ok(Json(page.into()))
}

/// One node pool.
#[utoipa::path(get, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}", operation_id = "getNodePool", tag = "nodePools",
    params(PoolParams),
    responses((status = 200, description = "The node pool record", body = NodePool)))]
async fn get_node_pool(Call(s, caller): Call, PoolAt(path, pool): PoolAt) -> Reply<NodePool> {
    let pool = PoolId::parse(&pool)?;
    Ok(Json(
        service::clusters::get_pool(&s.db, &caller, &path, &pool).await?,
    ))
}
