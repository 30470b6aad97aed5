//! Read-only live views of one cluster: `.../status` (Google Cloud and Kubernetes read
//! now, with the drift from the records) and `.../accelerators` (the catalog with `live`).
//!
//! Invariant: both answer like the other cluster reads (VIEWER+ of the owning team,
//! 404 otherwise) and change nothing, in the records or in the cloud.

use axum::Json;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::ClusterParams;
use super::call::{Call, Reply};
use super::extract::ClusterAt;
use super::state::AppState;
use crate::model::status::ClusterStatus;
use crate::service;

use super::accelerators::ListAcceleratorsResponse;
use super::error::ErrorBody;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_cluster_status))
        .routes(routes!(list_cluster_accelerators))
}

/// Live status from Google Cloud and the cluster's Kubernetes API: the GKE cluster, each
/// bucket, the repository, network, router and NAT, service accounts, every node pool
/// (GKE status, nodes ready/total, accelerators allocatable) and `drift[]` between the
/// records and the cloud. A resource that cannot be read carries an `error` instead of
/// failing the request; an unreachable Kubernetes API is reported in `kubernetes`.
#[utoipa::path(get, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/status", operation_id = "getClusterStatus", tag = "clusters",
    params(ClusterParams),
    responses((status = 200, description = "Live status of the cluster's resources and drift from the records", body = ClusterStatus),
        (status = 503, body = ErrorBody, description = "CLOUD_UNAVAILABLE: none of the cluster's cloud resources could be read")))]
async fn get_cluster_status(
    Call(s, caller): Call,
    ClusterAt(path): ClusterAt,
) -> Reply<ClusterStatus> {
    Ok(Json(service::status::get(&s, &caller, &path).await?))
}

/// The accelerator catalog with `live: true` on the entries the cluster has a node pool
/// of (from its records).
#[utoipa::path(get, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/accelerators", operation_id = "listClusterAccelerators", tag = "accelerators",
    params(ClusterParams),
    responses((status = 200, description = "The accelerator catalog, with live set on the cluster's accelerators", body = ListAcceleratorsResponse)))]
async fn list_cluster_accelerators(
    Call(s, caller): Call,
    ClusterAt(path): ClusterAt,
) -> Reply<ListAcceleratorsResponse> {
    Ok(Json(ListAcceleratorsResponse {
        accelerators: service::accelerators::for_cluster(&s.db, &caller, &path, &s.prices).await?,
    }))
}
