//! `POST .../nodePools/{pool}:drill`: the failover drill of a spot pool and its
//! on-demand fallback, answered like every mutation (202 Operation, or 200 Plan with
//! `validateOnly=true`). The pool path carries the verb (`{pool}:drill`), so one POST
//! route on the pool dispatches it ([`super::pool_verbs`]); the OpenAPI document lists it
//! as its own path.
//!
//! Invariant: the handler only parses; the service checks the pair, the mode and the
//! deadline before anything is written.

use crate::model::Operation;
use crate::service::provision::drill::DrillRequest;
use crate::service::provision::{self, Plan, Submitted};

use super::IfMatchHeader;
use super::PoolParams;
use super::error::ApiError;
use super::extract::PoolTarget;
use super::provision::{IfMatchOf, MutateQuery, MutationParts};
use super::state::AppState;

/// **drill**: reclaim the spot pool of the failover pair `pool` belongs to (either pool
/// may be named), watch the pods fail over, and report the timeline in the operation's
/// `response` (a DrillReport). At its `deadline` the drill FAILS (DEADLINE_EXCEEDED,
/// reason DRILL_DEADLINE_EXCEEDED) with the report so far in `error.details[1]` (a
/// DrillReport; also as text in `error.details[0].metadata.report`).
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}:drill", operation_id = "drillNodePool", tag = "nodePools",
    params(PoolParams, MutateQuery, IfMatchHeader),
    request_body(content = Option<DrillRequest>, description = "optional: RECLAIM_NODES with a 900s deadline when absent"),
    responses((status = 202, description = "FAILOVER_DRILL operation; its response is a DrillReport", body = Operation),
              (status = 200, description = "validateOnly: the plan", body = Plan)))]
pub async fn drill_node_pool(
    s: &AppState,
    r: MutationParts,
    PoolTarget(path, pool, if_match): PoolTarget,
    req: DrillRequest,
) -> Result<Submitted<impl serde::Serialize>, ApiError> {
    let resource = format!("{}/nodePools/{pool}:drill", path.name());
    let m = r.mutation(path, IfMatchOf::Pool(if_match), "POST", &resource, &req)?;
    Ok(provision::drill::drill(s, &m, &pool, req).await?)
}
