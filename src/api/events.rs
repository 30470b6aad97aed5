//! `/v1/teams/{team}/events` (a team's audit trail, for its members) and `/v1/events`
//! (every team's, for service admins).

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::error::ApiError;
use super::extract::{ApiPath, ApiQuery};
use super::state::AppState;
use crate::domain::TeamId;
use crate::model::event::Event;
use crate::service::{self, Caller, PageRequest};

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
    /// Results per page: default 50, at most 1000 (larger values are lowered).
    pub page_size: Option<i32>,
    /// `nextPageToken` of the previous page.
    pub page_token: Option<String>,
}

impl ListEventsQuery {
    fn page(&self, s: &AppState) -> PageRequest {
        PageRequest {
            size: self.page_size.map(i64::from),
            token: self.page_token.clone(),
            key: s.page_key.clone(),
        }
    }
}

list_response!(ListEventsResponse, events: Event);

/// The team's audit trail, newest first: requests that changed (or tried to change) its
/// resources, its operations' states, membership, policy and credentials given out.
/// Every member of the team (any role).
#[utoipa::path(get, path = "/v1/teams/{team}/events", operation_id = "listTeamEvents", tag = "teams",
    params(("team" = String, Path, description = "team id"), ListEventsQuery),
    responses((status = 200, description = "One page of the team's events, newest first", body = ListEventsResponse)))]
async fn list_team_events(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(team): ApiPath<String>,
    ApiQuery(q): ApiQuery<ListEventsQuery>,
) -> Result<Json<ListEventsResponse>, ApiError> {
    let team = TeamId::parse(&team)?;
    let filter = q.filter.clone().unwrap_or_default();
    let page = service::audit::list_team(&s.db, &caller, &team, &filter, &q.page(&s)).await?;
    Ok(Json(page.into()))
}

/// Every team's audit trail (and the events of no team, such as refused team
/// creations), newest first. Service admins only.
#[utoipa::path(get, path = "/v1/events", operation_id = "listEvents", tag = "teams",
    params(ListEventsQuery),
    responses((status = 200, description = "One page of events, newest first", body = ListEventsResponse)))]
async fn list_events(
    State(s): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ListEventsQuery>,
) -> Result<Json<ListEventsResponse>, ApiError> {
    let filter = q.filter.clone().unwrap_or_default();
    let page = service::audit::list_all(&s.db, &caller, &filter, &q.page(&s)).await?;
    Ok(Json(page.into()))
}
