//! `/v1/teams/{team}/events` (a team's audit trail, for its members) and `/v1/events`
//! (every team's, for service admins).

use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::PageQuery;
use super::call::{Call, Paged, Reply};
use super::extract::{ApiQuery, TeamAt};
use super::state::AppState;
use crate::model::event::Event;
use crate::service;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_team_events))
        .routes(routes!(list_events))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ListEventsQuery {
    /// Terms joined by AND: `actor="a@x"`, `type=MEMBER_ADDED`, `target="teams/t"`, and
    /// `time` compared with `=`, `>=`, `>`, `<=` or `<` to an RFC 3339 timestamp
    /// (`time >= "2026-12-01T00:00:00Z"`).
    pub filter: Option<String>,
}

list_response!(ListEventsResponse, events: Event);

/// The team's audit trail, newest first: requests that changed (or tried to change) its
/// resources, its operations' states, membership, policy and credentials given out.
/// Every member of the team (any role).
#[utoipa::path(get, path = "/v1/teams/{team}/events", operation_id = "listTeamEvents", tag = "teams",
    params(("team" = String, Path, description = "team id"), ListEventsQuery, PageQuery),
    responses((status = 200, description = "One page of the team's events, newest first", body = ListEventsResponse)))]
async fn list_team_events(
    Call(s, caller): Call,
    TeamAt(team): TeamAt,
    ApiQuery(q): ApiQuery<ListEventsQuery>,
    Paged(page): Paged,
) -> Reply<ListEventsResponse> {
    let filter = q.filter.unwrap_or_default();
    let page = service::audit::list_team(&s.db, &caller, &team, &filter, &page).await?;
    Ok(Json(page.into()))
}

/// Every team's audit trail (and the events of no team, such as refused team
/// creations), newest first. Service admins only.
#[utoipa::path(get, path = "/v1/events", operation_id = "listEvents", tag = "teams",
    params(ListEventsQuery, PageQuery),
    responses((status = 200, description = "One page of events, newest first", body = ListEventsResponse)))]
async fn list_events(
    Call(s, caller): Call,
    ApiQuery(q): ApiQuery<ListEventsQuery>,
    Paged(page): Paged,
) -> Reply<ListEventsResponse> {
    let filter = q.filter.unwrap_or_default();
    let page = service::audit::list_all(&s.db, &caller, &filter, &page).await?;
    Ok(Json(page.into()))
}
