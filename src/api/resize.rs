//! `PATCH .../nodePools/{pool}`: a pool resize (AIP-134 update of `minNodes` /
//! `maxNodes`), answered like every mutation (202 UPDATE_NODE_POOL operation, or 200
//! Plan with `validateOnly=true`).
//!
//! Invariant: the handler only parses (path, `updateMask`, body with unknown fields
//! refused); the service checks the mask, the bounds, the pair and the quota before
//! anything is written. The request id is bound to the mask and the body together.

use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;
use utoipa::IntoParams;

use crate::model::Operation;
use crate::service::provision::resize::{ResizeRequest, resize};
use crate::service::provision::{Plan, Submitted};

use super::IfMatchHeader;
use super::PoolParams;
use super::error::ApiError;
use super::extract::PoolTarget;
use super::extract::{ApiJsonOrEmpty, ApiQuery};
use super::provision::{IfMatchOf, MutateQuery, MutationParts, respond};
use super::state::AppState;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct UpdateMaskQuery {
    /// AIP-134 field mask: comma-separated `minNodes`, `maxNodes` (or `*` for both).
    /// Absent: the fields present in the body. A field named here but absent from the
    /// body is reset to its default (minNodes 0; maxNodes Kinetic's default for the new
    /// minNodes); body fields not named here are ignored (the plan warns).
    pub update_mask: Option<String>,
}

/// **pool resize**: set a node pool's autoscaling bounds (per zone).
///
/// Carried out by GKE's `nodePools.setAutoscaling`. Resizing the spot pool of a failover pair raises its
/// on-demand fallback's maxNodes to the spot pool's when below it (the fallback keeps
/// its minNodes); the fallback resized alone must keep maxNodes >= its spot pool's. A
/// growth of minNodes is checked against the region's quota first (409
/// QUOTA_INSUFFICIENT). Bounds equal to the pool's are accepted: the operation sets
/// GKE's autoscaling to them again. The pools' records change when GKE has applied
/// the bounds; the operation's `response` is `{cluster, nodePools: [{poolId, minNodes,
/// maxNodes, estimatedHourlyCost}]}`. Refusals: 404 NODE_POOL_NOT_FOUND; 409
/// NODE_POOL_NOT_RUNNING, NODE_POOL_BUSY (a resize of it still unfinished),
/// QUOTA_INSUFFICIENT; 400 INVALID_UPDATE_MASK,
/// NOTHING_TO_UPDATE, INVALID_MIN_NODES, INVALID_MAX_NODES,
/// TPU_MIN_NODES_NOT_WHOLE_SLICES, TPU_MAX_NODES_NOT_WHOLE_SLICES, FAILOVER_MAX_TOO_SMALL.
#[utoipa::path(patch, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}", operation_id = "updateNodePool", tag = "nodePools",
    params(PoolParams, MutateQuery, UpdateMaskQuery, IfMatchHeader),
    request_body(content = Option<ResizeRequest>, description = "the new bounds; may be empty when updateMask names the fields to reset"),
    responses((status = 202, description = "UPDATE_NODE_POOL operation", body = Operation),
              (status = 200, description = "validateOnly: the plan", body = Plan)))]
pub async fn resize_node_pool(
    State(s): State<AppState>,
    r: MutationParts,
    ApiQuery(q): ApiQuery<UpdateMaskQuery>,
    t: PoolTarget,
    ApiJsonOrEmpty(req): ApiJsonOrEmpty<ResizeRequest>,
) -> Result<Response, ApiError> {
    Ok(respond(update(&s, r, t, q, req).await?))
}

/// The resize of the target's node pool (the operation, or the plan when previewing).
pub(super) async fn update(
    s: &AppState,
    r: MutationParts,
    PoolTarget(path, pool, if_match): PoolTarget,
    q: UpdateMaskQuery,
    req: ResizeRequest,
) -> Result<Submitted, ApiError> {
    let resource = format!("{}/nodePools/{pool}", path.name());
    let asked = json!({"updateMask": q.update_mask, "body": req});
    let m = r.mutation(path, IfMatchOf::Pool(if_match), "PATCH", &resource, &asked)?;
    Ok(resize(s, &m, &pool, q.update_mask.as_deref(), req).await?)
}
