//! `POST .../nodePools/{pool}:drill`: the failover drill of a spot pool and its
//! on-demand fallback, answered like every mutation (202 Operation, or 200 Plan with
//! `validateOnly=true`). The pool path carries the verb (`{pool}:drill`), so one POST
//! route on the pool dispatches it; the OpenAPI document lists it as its own path.
//!
//! Invariant: the handler only parses; the service checks the pair, the mode and the
//! deadline before anything is written.

use axum::extract::{FromRequestParts, Request, State};
use axum::response::Response;

use crate::model::Operation;
use crate::service::clusters::ClusterPath;
use crate::service::provision::drill::DrillRequest;
use crate::service::provision::{self, Plan, Submitted};

use super::error::ApiError;
use super::extract::{ApiPath, ApiQuery, IfMatch, split_verb, unknown_verb};
use super::preview::{self, body_of};
use super::provision::{IfMatchOf, MutateQuery, MutationParts, respond};
use super::state::AppState;
use super::{BodyErrorResponses, ErrorResponses, IfMatchHeader};

/// The pool path the verb hangs on.
pub const POOL_PATH: &str =
    "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}";

/// **drill**: reclaim the spot pool of the failover pair `pool` belongs to (either pool
/// may be named), watch the pods fail over, and report the timeline in the operation's
/// `response` (a DrillReport). At its `deadline` the drill FAILS (DEADLINE_EXCEEDED,
/// reason DRILL_DEADLINE_EXCEEDED) with the report so far in `error.details[0].metadata.report`.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}:drill", operation_id = "drillNodePool", tag = "nodePools",
    params(("project" = String, Path), ("zone" = String, Path), ("cluster" = String, Path), ("pool" = String, Path), MutateQuery, IfMatchHeader),
    request_body(content = Option<DrillRequest>, description = "optional: RECLAIM_NODES with a 900s deadline when absent"),
    responses((status = 202, description = "FAILOVER_DRILL operation; its response is a DrillReport", body = Operation),
              (status = 200, description = "validateOnly: the plan", body = Plan), ErrorResponses, BodyErrorResponses))]
pub async fn drill_node_pool(
    s: &AppState,
    r: MutationParts,
    path: ClusterPath,
    pool: &str,
    if_match: Option<String>,
    req: DrillRequest,
) -> Result<Submitted<impl serde::Serialize>, ApiError> {
    let resource = format!("{}/nodePools/{pool}:drill", path.name());
    let m = r.mutation(path, IfMatchOf::Pool(if_match), "POST", &resource, &req)?;
    Ok(provision::drill::drill(s, &m, pool, req).await?)
}

/// POST on a pool: its custom methods (the drill and the previews of the pool's
/// mutations).
pub async fn pool_verb(
    State(s): State<AppState>,
    ApiPath((project, zone, cluster, segment)): ApiPath<(String, String, String, String)>,
    req: Request,
) -> Result<Response, ApiError> {
    let path = ClusterPath::parse(&project, &zone, &cluster)?;
    let Some((pool, verb)) = split_verb(&segment) else {
        return Err(unknown_verb(&format!(
            "POST {}/nodePools/{segment}",
            path.name()
        )));
    };
    let (mut parts, body) = req.into_parts();
    let r = MutationParts::from_request_parts(&mut parts, &s).await?;
    let IfMatch(if_match) = IfMatch::from_request_parts(&mut parts, &s).await?;
    match verb {
        "drill" => {
            let b = body_of(parts, body, &s).await?;
            Ok(respond(
                drill_node_pool(&s, r, path, pool, if_match, b).await?,
            ))
        }
        "previewDrill" => {
            let b = body_of(parts, body, &s).await?;
            preview::preview_drill_node_pool(&s, r, path, pool, if_match, b).await
        }
        "previewDelete" => preview::preview_delete_node_pool(&s, r, path, pool, if_match).await,
        "previewUpdate" => {
            let ApiQuery(q) = ApiQuery::from_request_parts(&mut parts, &s).await?;
            let b = body_of(parts, body, &s).await?;
            preview::preview_update_node_pool(&s, r, path, pool, if_match, q, b).await
        }
        _ => Err(unknown_verb(&format!(
            "POST {}/nodePools/{segment}",
            path.name()
        ))),
    }
}
