//! `POST .../clusters/{cluster}:syncAccess`: converge the cluster's IAM grants and RBAC
//! bindings with its team's roster now (issue 28). Member changes and every `up` enqueue
//! the same operation on their own.
//!
//! Invariant: the handler only parses; the service authorises (MEMBER+) and enqueues at
//! most one queued sync per cluster (a second request while one is queued answers with
//! that one).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::model::Operation;
use crate::service::{self, Caller, clusters::ClusterPath};

use super::ClusterParams;
use super::error::ApiError;
use super::state::AppState;

/// **syncAccess**: a SYNC_ACCESS operation that grants every member of the cluster's
/// team what its role needs (IAM on the project, the buckets, the repository and the
/// builds service account; Kubernetes RBAC labelled `managed-by: kineticd`) and revokes
/// what kineticd granted that the roster no longer justifies. Its response is an
/// AccessSyncReport. When a sync of the cluster is already queued, that operation is
/// returned instead of a new one.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}:syncAccess", operation_id = "syncClusterAccess", tag = "clusters",
    params(ClusterParams),
    responses((status = 202, description = "SYNC_ACCESS operation; its response is an AccessSyncReport", body = Operation)))]
pub async fn sync_cluster_access(
    s: &AppState,
    caller: &Caller,
    path: &ClusterPath,
) -> Result<Response, ApiError> {
    let op = service::access_sync::sync_cluster(&s.db, caller, path).await?;
    Ok((StatusCode::ACCEPTED, Json(op)).into_response())
}
