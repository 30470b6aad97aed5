//! `POST /v1/teams/{team}/placements:search`: where the team can get accelerators now,
//! ranked (issue 31).
//!
//! Invariant: the handler only parses; the service authorises (every member: the
//! search changes nothing), checks the question and reads the cloud.

use axum::Json;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::call::{Call, Reply};
use super::error::ErrorBody;
use super::extract::{ApiJson, TeamAt};
use super::state::AppState;
use crate::model::placement::{PlacementQuery, PlacementSearch};
use crate::service;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(search_placements))
}

/// Where `count` accelerators of a type can be had now (any member; changes nothing):
/// free accelerators on the team's running nodes first (EXISTING_CAPACITY), then free
/// VMs of reservations in its projects (RESERVATION), then new pools in the zones that
/// offer the type (NEW_POOL), ranked by quota headroom, price, Compute's capacity
/// advice and kineticd's record of capacity failures per zone in the last 7 days. The
/// cloud is read at once under one deadline; what did not answer is in `warnings`. An
/// unknown accelerator is 400 UNKNOWN_ACCELERATOR; a count outside 1..10000, a bad
/// provisioning or a zone out of the team's projects' reach is 400
/// INVALID_PLACEMENT_QUERY with `metadata.field`.
#[utoipa::path(post, path = "/v1/teams/{team}/placements:search", operation_id = "searchPlacements", tag = "teams",
    params(("team" = String, Path, description = "team id")),
    request_body = PlacementQuery,
    responses((status = 200, description = "Placements, best first, and warnings", body = PlacementSearch),
        (status = 400, body = ErrorBody, description = "INVALID_PLACEMENT_QUERY (metadata.field) or UNKNOWN_ACCELERATOR")))]
async fn search_placements(
    Call(s, caller): Call,
    TeamAt(team): TeamAt,
    ApiJson(body): ApiJson<PlacementQuery>,
) -> Reply<PlacementSearch> {
    Ok(Json(
        service::placements::search(&s, &caller, &team, &body).await?,
    ))
}
