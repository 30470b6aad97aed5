//! Previews (AIP-163 as custom methods): `POST {cluster}:previewApply`,
//! `{cluster}:previewDelete`, `nodePools:previewCreate`, `{pool}:previewDelete`,
//! `{pool}:previewUpdate` and `{pool}:previewDrill` answer 200 with the plan the matching
//! mutation would carry out. Each runs the mutation's own code with `validateOnly` set,
//! so a preview and the mutation's `?validateOnly=true` (kept for curl and scripts, not
//! published) give the same plan, and every route of the document has one success type.
//!
//! Invariant: a preview never enqueues or records anything (its `requestId` only names
//! the pools the mutation sent with that id will create), and a service answer other
//! than a plan is INTERNAL.

use axum::Json;
use axum::body::Body;
use axum::extract::{FromRequest, Request, State};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::service::provision::drill::DrillRequest;
use crate::service::provision::pools::AddPoolRequest;
use crate::service::provision::resize::ResizeRequest;
use crate::service::provision::up::UpRequest;
use crate::service::provision::{Plan, Submitted};

use super::IfMatchHeader;
use super::error::ApiError;
use super::extract::{ApiJson, ApiJsonOrEmpty};
use super::extract::{ClusterTarget, PoolTarget};
use super::provision::MutationParts;
use super::resize::UpdateMaskQuery;
use super::state::AppState;
use super::{ClusterParams, PoolParams};

/// `?requestId=` of a preview.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct PreviewQuery {
    /// The request id the mutation will be sent with: the plan then names the node pools
    /// that mutation creates (without one, new pools get stand-in ids such as
    /// `gpu-l4-xxxx`). Nothing is recorded under it.
    pub request_id: Option<String>,
}

/// A preview that got an operation instead of a plan (a bug: never answered as such).
#[derive(Debug, thiserror::Error)]
#[error("a preview started operation {0}")]
struct PreviewEnqueued(String);

/// 200 with the plan of a previewed mutation.
pub(super) fn preview<P: Serialize>(s: Submitted<P>) -> Result<Response, ApiError> {
    match s {
        Submitted::Plan(p) => Ok(Json(p).into_response()),
        Submitted::Operation(op) => Err(ApiError::internal(&PreviewEnqueued(op.name))),
    }
}

/// The JSON body (absent: the default) of a request already split for its headers.
pub(super) async fn body_of<T: DeserializeOwned + Default>(
    parts: Parts,
    body: Body,
    s: &AppState,
) -> Result<T, ApiError> {
    let ApiJsonOrEmpty(b) =
        ApiJsonOrEmpty::from_request(Request::from_parts(parts, body), s).await?;
    Ok(b)
}

/// **preview up**: the plan `PUT {cluster}` with this body would carry out; nothing changes.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}:previewApply", operation_id = "previewApplyCluster", tag = "clusters",
    params(ClusterParams, PreviewQuery, IfMatchHeader),
    request_body(content = Option<UpRequest>, description = "as for applyCluster"),
    responses((status = 200, description = "The plan of the UP_CLUSTER operation", body = Plan)))]
pub(super) async fn preview_apply_cluster(
    s: &AppState,
    r: MutationParts,
    t: ClusterTarget,
    req: UpRequest,
) -> Result<Response, ApiError> {
    preview(super::provision::apply(s, r.previewing(), t, req).await?)
}

/// **preview down**: the plan `DELETE {cluster}` would carry out; nothing changes.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}:previewDelete", operation_id = "previewDeleteCluster", tag = "clusters",
    params(ClusterParams, PreviewQuery, IfMatchHeader),
    responses((status = 200, description = "The plan of the DOWN_CLUSTER operation", body = Plan)))]
pub(super) async fn preview_delete_cluster(
    s: &AppState,
    r: MutationParts,
    t: ClusterTarget,
) -> Result<Response, ApiError> {
    preview(super::provision::down(s, r.previewing(), t).await?)
}

/// **preview pool add**: the plan `POST .../nodePools` with this body would carry out;
/// nothing changes.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools:previewCreate", operation_id = "previewCreateNodePool", tag = "nodePools",
    params(ClusterParams, PreviewQuery, IfMatchHeader),
    request_body = AddPoolRequest,
    responses((status = 200, description = "The plan of the ADD_NODE_POOL operation", body = Plan)))]
pub(super) async fn preview_create_node_pool(
    State(s): State<AppState>,
    r: MutationParts,
    t: ClusterTarget,
    ApiJson(req): ApiJson<AddPoolRequest>,
) -> Result<Response, ApiError> {
    preview(super::provision::add_pool(&s, r.previewing(), t, req).await?)
}

/// **preview pool remove**: the plan `DELETE .../nodePools/{pool}` would carry out.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}:previewDelete", operation_id = "previewDeleteNodePool", tag = "nodePools",
    params(PoolParams, PreviewQuery, IfMatchHeader),
    responses((status = 200, description = "The plan of the REMOVE_NODE_POOL operation", body = Plan)))]
pub(super) async fn preview_delete_node_pool(
    s: &AppState,
    r: MutationParts,
    t: PoolTarget,
) -> Result<Response, ApiError> {
    preview(super::provision::remove_pool(s, r.previewing(), t).await?)
}

/// **preview pool resize**: the plan `PATCH .../nodePools/{pool}` with this mask and body
/// would carry out.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}:previewUpdate", operation_id = "previewUpdateNodePool", tag = "nodePools",
    params(PoolParams, UpdateMaskQuery, PreviewQuery, IfMatchHeader),
    request_body(content = Option<ResizeRequest>, description = "as for updateNodePool"),
    responses((status = 200, description = "The plan of the UPDATE_NODE_POOL operation", body = Plan)))]
pub(super) async fn preview_update_node_pool(
    s: &AppState,
    r: MutationParts,
    t: PoolTarget,
    q: UpdateMaskQuery,
    req: ResizeRequest,
) -> Result<Response, ApiError> {
    preview(super::resize::update(s, r.previewing(), t, q, req).await?)
}

/// **preview drill**: the plan `POST .../nodePools/{pool}:drill` with this body would
/// carry out.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}:previewDrill", operation_id = "previewDrillNodePool", tag = "nodePools",
    params(PoolParams, PreviewQuery, IfMatchHeader),
    request_body(content = Option<DrillRequest>, description = "as for drillNodePool"),
    responses((status = 200, description = "The plan of the FAILOVER_DRILL operation", body = Plan)))]
pub(super) async fn preview_drill_node_pool(
    s: &AppState,
    r: MutationParts,
    t: PoolTarget,
    req: DrillRequest,
) -> Result<Response, ApiError> {
    preview(super::drill::drill_node_pool(s, r.previewing(), t, req).await?)
}
