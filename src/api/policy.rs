//! `/v1/teams/{team}/policy` (GET, PATCH) and `policy:evaluate`: a team's guardrails
//! (issue 29).
//!
//! Invariant: the handlers only parse; the service authorises (every member reads,
//! ADMIN and OWNER change), validates the whole policy and checks the etag.

use axum::Json;
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::IfMatchHeader;
use super::call::{Call, Reply};
use super::extract::{ApiJson, ApiQuery, IfMatch, TeamAt};
use super::idempotency::{RequestIdQuery, RequestKey};
use super::state::AppState;
use crate::service;
use crate::service::policy::{PolicyEvaluation, PolicyPatch, TeamPolicy};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_policy, update_policy))
        .routes(routes!(evaluate_policy))
}

/// A team's policy (any member). Every field is optional: an unset one limits nothing.
#[utoipa::path(get, path = "/v1/teams/{team}/policy", operation_id = "getTeamPolicy", tag = "teams",
    params(("team" = String, Path, description = "team id")),
    responses((status = 200, description = "The team's policy", body = TeamPolicy)))]
async fn get_policy(Call(s, caller): Call, TeamAt(team): TeamAt) -> Reply<TeamPolicy> {
    Ok(Json(service::policy::get(&s.db, &caller, &team).await?))
}

/// `?updateMask=` (AIP-134).
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct UpdatePolicyQuery {
    /// Comma-separated policy fields to change (`maxAccelerators`, `allowedZones`, ...,
    /// or `*` for the whole policy); a masked field absent from the body is cleared.
    /// Omitted: the fields present in the body.
    pub update_mask: Option<String>,
}

/// Change a team's policy (ADMIN or OWNER). The new policy applies to every later
/// request; what it leaves over a limit is reported by `policy:evaluate`, never
/// destroyed. A bad field is 400 INVALID_POLICY naming it; a stale etag (in the body or
/// If-Match) is 409 ABORTED.
#[utoipa::path(patch, path = "/v1/teams/{team}/policy", operation_id = "updateTeamPolicy", tag = "teams",
    request_body = TeamPolicy,
    params(("team" = String, Path, description = "team id"), UpdatePolicyQuery, RequestIdQuery, IfMatchHeader),
    responses((status = 200, description = "The stored policy", body = TeamPolicy)))]
async fn update_policy(
    Call(s, caller): Call,
    TeamAt(team): TeamAt,
    ApiQuery(q): ApiQuery<UpdatePolicyQuery>,
    IfMatch(if_match): IfMatch,
    key: RequestKey,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> Reply<TeamPolicy> {
    let idem = key.bind(&(&q.update_mask, &body))?;
    let etag = body.get("etag").and_then(Value::as_str);
    let patch = PolicyPatch {
        etag: service::etag::expected(if_match.as_deref(), etag)?,
        body,
        mask: q.update_mask,
    };
    Ok(Json(
        service::policy::update(&s.db, &caller, &team, patch, idem.as_ref()).await?,
    ))
}

/// The team's usage (its pools at their maximum sizes, clusters, pools, cost) against
/// each limit of its policy (any member); `exceeded` marks what a tightened policy left
/// over a limit.
#[utoipa::path(get, path = "/v1/teams/{team}/policy:evaluate", operation_id = "evaluateTeamPolicy", tag = "teams",
    params(("team" = String, Path, description = "team id")),
    responses((status = 200, description = "Usage against each limit", body = PolicyEvaluation)))]
async fn evaluate_policy(Call(s, caller): Call, TeamAt(team): TeamAt) -> Reply<PolicyEvaluation> {
    Ok(Json(
        service::policy::evaluate(&s.db, &caller, &team).await?,
    ))
}
