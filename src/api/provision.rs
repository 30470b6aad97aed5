//! Mutations of clusters and node pools: `up` (PUT), `down` (DELETE), `pool add`
//! (POST nodePools), `pool remove` (DELETE a pool). Each answers 202 with the operation,
//! or 200 with the plan when `validateOnly=true`.
//!
//! Invariant: the four handlers have one shape: parse the cluster path, build one
//! [`Mutation`] (caller, path, validate-only, request id bound to the request's
//! fingerprint, `If-Match`), call the service, answer with [`respond`]. The etag is
//! checked by the service, under the cluster's row lock, never here.

use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use crate::model::Operation;
use crate::service::Caller;
use crate::service::clusters::ClusterPath;
use crate::service::provision::pools::AddPoolRequest;
use crate::service::provision::up::UpRequest;
use crate::service::provision::{self, Mutation, Plan, Submitted};

use super::error::ApiError;
use super::extract::{ApiJson, ApiJsonOrEmpty, ApiQuery};
use super::extract::{ClusterTarget, PoolTarget};
use super::state::AppState;
use super::{ClusterParams, PoolParams};
use super::{IfMatchHeader, idempotency};

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct MutateQuery {
    /// Return the plan (200) instead of starting an operation; nothing changes (AIP-163).
    /// Served but not published: the document lists the `:preview…` methods instead.
    #[serde(default)]
    pub validate_only: bool,
    /// AIP-155 request id (or send the Idempotency-Key header).
    pub request_id: Option<String>,
}

pub(super) fn respond<P: serde::Serialize>(s: Submitted<P>) -> Response {
    match s {
        Submitted::Plan(p) => (StatusCode::OK, Json(p)).into_response(),
        Submitted::Operation(op) => (StatusCode::ACCEPTED, Json(op)).into_response(),
    }
}

/// What a mutation request says besides its path, `If-Match` and body: extracted the
/// same way for all four.
pub struct MutationParts {
    caller: Caller,
    headers: HeaderMap,
    query: MutateQuery,
}

impl FromRequestParts<AppState> for MutationParts {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, ApiError> {
        let caller = Caller::from_request_parts(parts, s).await?;
        let ApiQuery(query) = ApiQuery::from_request_parts(parts, s).await?;
        Ok(MutationParts {
            caller,
            headers: parts.headers.clone(),
            query,
        })
    }
}

/// Which resource a request's `If-Match` names.
pub(super) enum IfMatchOf {
    /// The cluster (up, down, pool add): checked when the cluster is read and again under
    /// its row lock in the enqueue transaction.
    Cluster(Option<String>),
    /// The node pool the request names (remove, resize, drill): checked when the pool is read.
    Pool(Option<String>),
}

impl MutationParts {
    /// The same request as a preview: plan only. A request id is kept: it records
    /// nothing, and names in the plan the pools the mutation sent with it will create.
    pub(super) fn previewing(mut self) -> Self {
        self.query.validate_only = true;
        self
    }

    /// The mutation context of `method` on `resource` (a path below `/v1/`) of the cluster
    /// at `path`, with the request id bound to a fingerprint of `body` and `if_match` as
    /// the service checks it.
    pub(super) fn mutation(
        self,
        path: ClusterPath,
        if_match: IfMatchOf,
        method: &str,
        resource: &str,
        body: &impl Serialize,
    ) -> Result<Mutation, ApiError> {
        let idempotency = idempotency::for_request(
            self.query.request_id.as_deref(),
            &self.headers,
            method,
            resource,
            body,
        )?;
        let (if_match, pool_if_match) = match if_match {
            IfMatchOf::Cluster(e) => (e, None),
            IfMatchOf::Pool(e) => (None, e),
        };
        Ok(Mutation {
            caller: self.caller,
            path,
            validate_only: self.query.validate_only,
            idempotency,
            if_match,
            pool_if_match,
            approving: None,
        })
    }
}

/// **up**: create the cluster (with its first accelerator pool) or reconcile it. With no
/// body at all, an existing cluster is reconciled as it is. `POST {cluster}:previewApply`
/// answers the plan instead.
#[utoipa::path(put, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}", operation_id = "applyCluster", tag = "clusters",
    params(ClusterParams, MutateQuery, IfMatchHeader),
    request_body(content = Option<UpRequest>, description = "optional: with no body at all, an existing cluster is reconciled as it is"),
    responses((status = 202, description = "UP_CLUSTER operation", body = Operation),
              (status = 200, description = "validateOnly: the plan", body = Plan)))]
pub async fn up_cluster(
    State(s): State<AppState>,
    r: MutationParts,
    t: ClusterTarget,
    ApiJsonOrEmpty(req): ApiJsonOrEmpty<UpRequest>,
) -> Result<Response, ApiError> {
    Ok(respond(apply(&s, r, t, req).await?))
}

/// `up` of the target's cluster (the operation, or the plan when previewing).
pub(super) async fn apply(
    s: &AppState,
    r: MutationParts,
    ClusterTarget(path, if_match): ClusterTarget,
    req: UpRequest,
) -> Result<Submitted, ApiError> {
    let resource = path.name();
    let m = r.mutation(path, IfMatchOf::Cluster(if_match), "PUT", &resource, &req)?;
    Ok(provision::up::up(s, &m, req).await?)
}

/// **down**: delete the cluster and everything `up` made for it (APIs, the state bucket
/// and profiles stay). `POST {cluster}:previewDelete` answers the plan instead.
#[utoipa::path(delete, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}", operation_id = "deleteCluster", tag = "clusters",
    params(ClusterParams, MutateQuery, IfMatchHeader),
    responses((status = 202, description = "DOWN_CLUSTER operation", body = Operation),
              (status = 200, description = "validateOnly: the plan", body = Plan)))]
pub async fn down_cluster(
    State(s): State<AppState>,
    r: MutationParts,
    t: ClusterTarget,
) -> Result<Response, ApiError> {
    Ok(respond(down(&s, r, t).await?))
}

/// `down` of the target's cluster.
pub(super) async fn down(
    s: &AppState,
    r: MutationParts,
    ClusterTarget(path, if_match): ClusterTarget,
) -> Result<Submitted, ApiError> {
    let resource = path.name();
    let m = r.mutation(path, IfMatchOf::Cluster(if_match), "DELETE", &resource, &())?;
    Ok(provision::down::down(s, &m).await?)
}

/// **pool add**: a GPU or TPU node pool (two for `failover`); the new pool id is in
/// `metadata.target` at once. `POST .../nodePools:previewCreate` answers the plan instead.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools", operation_id = "createNodePool", tag = "nodePools",
    params(ClusterParams, MutateQuery, IfMatchHeader),
    request_body = AddPoolRequest,
    responses((status = 202, description = "ADD_NODE_POOL operation", body = Operation),
              (status = 200, description = "validateOnly: the plan", body = Plan)))]
pub async fn add_node_pool(
    State(s): State<AppState>,
    r: MutationParts,
    t: ClusterTarget,
    ApiJson(req): ApiJson<AddPoolRequest>,
) -> Result<Response, ApiError> {
    Ok(respond(add_pool(&s, r, t, req).await?))
}

/// `pool add` on the target's cluster.
pub(super) async fn add_pool(
    s: &AppState,
    r: MutationParts,
    ClusterTarget(path, if_match): ClusterTarget,
    req: AddPoolRequest,
) -> Result<Submitted, ApiError> {
    let resource = format!("{}/nodePools", path.name());
    // Adding a pool changes the cluster's pool list: If-Match is the cluster's etag.
    let m = r.mutation(path, IfMatchOf::Cluster(if_match), "POST", &resource, &req)?;
    Ok(provision::pools::add_pool(s, &m, req).await?)
}

/// **pool remove**: delete a node pool (a failover pair goes together).
/// `POST .../nodePools/{pool}:previewDelete` answers the plan instead.
#[utoipa::path(delete, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}", operation_id = "deleteNodePool", tag = "nodePools",
    params(PoolParams, MutateQuery, IfMatchHeader),
    responses((status = 202, description = "REMOVE_NODE_POOL operation", body = Operation),
              (status = 200, description = "validateOnly: the plan", body = Plan)))]
pub async fn remove_node_pool(
    State(s): State<AppState>,
    r: MutationParts,
    t: PoolTarget,
) -> Result<Response, ApiError> {
    Ok(respond(remove_pool(&s, r, t).await?))
}

/// `pool remove` of the target's node pool.
pub(super) async fn remove_pool(
    s: &AppState,
    r: MutationParts,
    PoolTarget(path, pool, if_match): PoolTarget,
) -> Result<Submitted, ApiError> {
    let resource = format!("{}/nodePools/{pool}", path.name());
    let m = r.mutation(path, IfMatchOf::Pool(if_match), "DELETE", &resource, &())?;
    Ok(provision::pools::remove_pool(s, &m, &pool).await?)
}
