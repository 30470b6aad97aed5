//! The node pool's custom methods, POSTs on `{pool}:verb` (AIP-136): `:drill` and the
//! previews of the pool's mutations (`:previewDelete`, `:previewUpdate`,
//! `:previewDrill`) share one route, since the router sees one path segment; this module
//! only dispatches, each verb's handler is documented in its own module
//! ([`super::drill`], [`super::preview`]).
//!
//! Invariant: an unknown verb is 404 `METHOD_NOT_FOUND`, never a handler; the cluster
//! path is validated before any handler runs.

use axum::extract::{FromRequestParts, Request};
use axum::response::{IntoResponse, Response};

use crate::service::clusters::ClusterPath;

use super::call::Call;
use super::drill::drill_node_pool;
use super::error::ApiError;
use super::extract::{ApiPath, ApiQuery, IfMatch, PoolTarget, split_verb, unknown_verb};
use super::preview::{self, body_of};
use super::provision::{MutationParts, respond};

/// The pool path the verbs hang on.
pub const POOL_PATH: &str =
    "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}";

/// POST on a pool: its custom methods (the drill and the previews of the pool's
/// mutations).
pub async fn pool_verb(
    Call(s, caller): Call,
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
    if verb == "import" {
        let r = super::adopt::import_node_pool(&s, &caller, &path, pool).await?;
        return Ok(r.into_response());
    }
    if verb == "snooze" {
        let r = super::snooze::snooze_node_pool(&s, &caller, &path, pool, req).await?;
        return Ok(r.into_response());
    }
    let (mut parts, body) = req.into_parts();
    let r = MutationParts::from_request_parts(&mut parts, &s).await?;
    let IfMatch(if_match) = IfMatch::from_request_parts(&mut parts, &s).await?;
    let name = path.name();
    let t = PoolTarget(path, pool.to_owned(), if_match);
    match verb {
        "drill" => {
            let b = body_of(parts, body, &s).await?;
            Ok(respond(drill_node_pool(&s, r, t, b).await?))
        }
        "previewDrill" => {
            let b = body_of(parts, body, &s).await?;
            preview::preview_drill_node_pool(&s, r, t, b).await
        }
        "previewDelete" => preview::preview_delete_node_pool(&s, r, t).await,
        "previewUpdate" => {
            let ApiQuery(q) = ApiQuery::from_request_parts(&mut parts, &s).await?;
            let b = body_of(parts, body, &s).await?;
            preview::preview_update_node_pool(&s, r, t, q, b).await
        }
        _ => Err(unknown_verb(&format!("POST {name}/nodePools/{segment}"))),
    }
}
