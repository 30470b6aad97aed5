//! Mutations of clusters and node pools: `up` (PUT), `down` (DELETE), `pool add`
//! (POST nodePools), `pool remove` (DELETE a pool). Each answers 202 with the operation,
//! or 200 with the plan when `validateOnly=true`.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::app::AppState;
use crate::model::Operation;
use crate::plan::Plan;
use crate::service::Caller;
use crate::service::clusters::ClusterPath;
use crate::service::provision::pools::AddPoolRequest;
use crate::service::provision::up::UpRequest;
use crate::service::provision::{self, Submitted};

use super::error::ApiError;
use super::extract::{ApiJson, ApiJsonOrEmpty, ApiPath, ApiQuery, IfMatch};
use super::{BodyErrorResponses, ErrorResponses, IfMatchHeader, idempotency};

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct MutateQuery {
    /// Return the plan (200) instead of starting an operation; nothing changes (AIP-163).
    #[serde(default)]
    pub validate_only: bool,
    /// AIP-155 request id (or send the Idempotency-Key header).
    pub request_id: Option<String>,
}

fn respond(s: Submitted) -> Response {
    match s {
        Submitted::Plan(p) => (StatusCode::OK, Json(p)).into_response(),
        Submitted::Operation(op) => (StatusCode::ACCEPTED, Json(op)).into_response(),
    }
}

/// AIP-154: with `If-Match`, the cluster must exist and still carry that etag. The
/// operation then works from the records as they are when it runs.
///
/// Known gap: this reads the record before the enqueue transaction, not under its row
/// lock, so a change landing between the two is not caught; the typed mutation context
/// (issue 12) is to carry the etag into `service::provision::lock`.
async fn check_etag(
    s: &AppState,
    caller: &Caller,
    path: &ClusterPath,
    if_match: Option<&str>,
) -> Result<(), ApiError> {
    if if_match.is_none() {
        return Ok(());
    }
    let current = crate::service::clusters::get(&s.db, caller, path).await?;
    crate::service::etag::check(if_match, &current.etag, &current.name).map_err(ApiError::from)
}

fn idem(
    q: &MutateQuery,
    headers: &HeaderMap,
    method: &str,
    path: &str,
    body: &serde_json::Value,
) -> Result<Option<crate::ops::queue::Idempotency>, ApiError> {
    idempotency::for_request(q.request_id.as_deref(), headers, method, path, body)
}

/// **up**: create the cluster (with its first accelerator pool) or reconcile it. With no
/// body at all, an existing cluster is reconciled as it is.
#[utoipa::path(put, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}", tag = "clusters",
    params(("project" = String, Path), ("zone" = String, Path), ("cluster" = String, Path), MutateQuery, IfMatchHeader),
    request_body(content = Option<UpRequest>, description = "optional: with no body at all, an existing cluster is reconciled as it is"),
    responses((status = 202, description = "UP_CLUSTER operation", body = Operation),
              (status = 200, description = "validateOnly: the plan", body = Plan), ErrorResponses, BodyErrorResponses))]
pub async fn up_cluster(
    State(s): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiPath((project, zone, cluster)): ApiPath<(String, String, String)>,
    ApiQuery(q): ApiQuery<MutateQuery>,
    IfMatch(if_match): IfMatch,
    ApiJsonOrEmpty(req): ApiJsonOrEmpty<UpRequest>,
) -> Result<Response, ApiError> {
    let path = ClusterPath::parse(&project, &zone, &cluster)?;
    check_etag(&s, &caller, &path, if_match.as_deref()).await?;
    let body = serde_json::to_value(&req).unwrap_or_default();
    let idem = idem(&q, &headers, "PUT", &path.name(), &body)?;
    let r = provision::up::up(
        &s.db,
        &s.cloud,
        &s.prices,
        &caller,
        &path,
        req,
        q.validate_only,
        idem,
    )
    .await?;
    Ok(respond(r))
}

/// **down**: delete the cluster and everything `up` made for it (APIs, the state bucket
/// and profiles stay).
#[utoipa::path(delete, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}", tag = "clusters",
    params(("project" = String, Path), ("zone" = String, Path), ("cluster" = String, Path), MutateQuery, IfMatchHeader),
    responses((status = 202, description = "DOWN_CLUSTER operation", body = Operation),
              (status = 200, description = "validateOnly: the plan", body = Plan), ErrorResponses))]
pub async fn down_cluster(
    State(s): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiPath((project, zone, cluster)): ApiPath<(String, String, String)>,
    ApiQuery(q): ApiQuery<MutateQuery>,
    IfMatch(if_match): IfMatch,
) -> Result<Response, ApiError> {
    let path = ClusterPath::parse(&project, &zone, &cluster)?;
    check_etag(&s, &caller, &path, if_match.as_deref()).await?;
    let idem = idem(
        &q,
        &headers,
        "DELETE",
        &path.name(),
        &serde_json::Value::Null,
    )?;
    let r = provision::down::down(&s.db, &s.cloud, &caller, &path, q.validate_only, idem).await?;
    Ok(respond(r))
}

/// **pool add**: a GPU or TPU node pool (two for `failover`); the new pool id is in
/// `metadata.target` at once.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools", tag = "nodePools",
    params(("project" = String, Path), ("zone" = String, Path), ("cluster" = String, Path), MutateQuery),
    request_body = AddPoolRequest,
    responses((status = 202, description = "ADD_NODE_POOL operation", body = Operation),
              (status = 200, description = "validateOnly: the plan", body = Plan), ErrorResponses, BodyErrorResponses))]
pub async fn add_node_pool(
    State(s): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiPath((project, zone, cluster)): ApiPath<(String, String, String)>,
    ApiQuery(q): ApiQuery<MutateQuery>,
    ApiJson(req): ApiJson<AddPoolRequest>,
) -> Result<Response, ApiError> {
    let path = ClusterPath::parse(&project, &zone, &cluster)?;
    let body = serde_json::to_value(&req).unwrap_or_default();
    let idem = idem(
        &q,
        &headers,
        "POST",
        &format!("{}/nodePools", path.name()),
        &body,
    )?;
    let r = provision::pools::add_pool(
        &s.db,
        &s.cloud,
        &s.prices,
        &caller,
        &path,
        req,
        q.validate_only,
        idem,
    )
    .await?;
    Ok(respond(r))
}

/// **pool remove**: delete a node pool (a failover pair goes together).
#[utoipa::path(delete, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}", tag = "nodePools",
    params(("project" = String, Path), ("zone" = String, Path), ("cluster" = String, Path), ("pool" = String, Path), MutateQuery),
    responses((status = 202, description = "REMOVE_NODE_POOL operation", body = Operation),
              (status = 200, description = "validateOnly: the plan", body = Plan), ErrorResponses))]
pub async fn remove_node_pool(
    State(s): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiPath((project, zone, cluster, pool)): ApiPath<(String, String, String, String)>,
    ApiQuery(q): ApiQuery<MutateQuery>,
) -> Result<Response, ApiError> {
    let path = ClusterPath::parse(&project, &zone, &cluster)?;
    let idem = idem(
        &q,
        &headers,
        "DELETE",
        &format!("{}/nodePools/{pool}", path.name()),
        &serde_json::Value::Null,
    )?;
    let r =
        provision::pools::remove_pool(&s.db, &caller, &path, &pool, q.validate_only, idem).await?;
    Ok(respond(r))
}
