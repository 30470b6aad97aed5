//! `/v1/me`, `/v1/teams`, `/v1/teams/{team}/members`.

use super::idempotency::{RequestIdQuery, RequestKey};
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::state::AppState;
use crate::domain::access::Member as RosterEntry;
use crate::domain::{Role, TeamId};
use crate::model::{Me, Member, Team};
use crate::service;

use super::call::{Call, Paged, Reply};
use super::error::ApiError;
use super::extract::{
    ApiJson, ApiPath, ApiQuery, IfMatch, TeamAt, TeamItemAt, split_verb, unknown_verb,
};
use super::{IfMatchHeader, PageQuery};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(me))
        .routes(routes!(create_team, list_teams))
        .routes(routes!(get_team, update_team, delete_team))
        .routes(routes!(list_members))
        .routes(routes!(put_member, delete_member))
}

/// Who am I: email, admin flag, teams with roles, active profile.
#[utoipa::path(get, path = "/v1/me", operation_id = "getCaller", tag = "identity",
    responses((status = 200, description = "The caller", body = Me)))]
async fn me(Call(s, caller): Call) -> Reply<Me> {
    Ok(Json(service::teams::me(&s.db, &caller).await?))
}

#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateTeamRequest {
    /// `^[a-z][a-z0-9-]{2,39}$`
    #[schema(example = "ml-research")]
    pub team_id: String,
    pub display_name: Option<String>,
    /// GCP projects the team owns; each can belong to one team only.
    #[serde(default)]
    pub projects: Vec<String>,
}

/// Create a team; the caller becomes its OWNER. Each project it names must be one the
/// caller may bind: a service admin, or a caller whom the project's IAM policy grants
/// `roles/owner` (or `resourcemanager.projects.setIamPolicy`); otherwise 403
/// PROJECT_OWNERSHIP_REQUIRED (PROJECT_POLICY_UNREADABLE when kineticd may not read
/// the policy) and nothing is created.
#[utoipa::path(post, path = "/v1/teams", operation_id = "createTeam", tag = "teams", request_body = CreateTeamRequest,
    params(RequestIdQuery),
    responses((status = 201, description = "The created team", body = Team)))]
async fn create_team(
    Call(s, caller): Call,
    key: RequestKey,
    ApiJson(req): ApiJson<CreateTeamRequest>,
) -> Result<(StatusCode, Json<Team>), ApiError> {
    let idem = key.bind(&req)?;
    let team = service::teams::create(
        &s.db,
        &s.cloud,
        &caller,
        service::teams::NewTeam {
            team_id: req.team_id,
            display_name: req.display_name,
            projects: req.projects,
        },
        idem.as_ref(),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(team)))
}

list_response!(ListTeamsResponse, teams: Team);

/// Teams the caller belongs to (service admins: all teams).
#[utoipa::path(get, path = "/v1/teams", operation_id = "listTeams", tag = "teams", params(PageQuery),
    responses((status = 200, description = "One page of the caller's teams", body = ListTeamsResponse)))]
async fn list_teams(Call(s, caller): Call, Paged(page): Paged) -> Reply<ListTeamsResponse> {
    let page = service::teams::list(&s.db, &caller, &page).await?;
    Ok(Json(page.into()))
}

/// A team (VIEWER or more).
#[utoipa::path(get, path = "/v1/teams/{team}", operation_id = "getTeam", tag = "teams",
    params(("team" = String, Path, description = "team id")),
    responses((status = 200, description = "The team", body = Team)))]
async fn get_team(
    Call(s, caller): Call,
    ApiPath(team): ApiPath<String>,
) -> Result<Response, ApiError> {
    // Custom methods share the team's path segment (`{team}:discoverClusters`).
    match split_verb(&team) {
        Some((team, "discoverClusters")) => Ok(super::adopt::discover_clusters(&s, &caller, team)
            .await?
            .into_response()),
        Some(_) => Err(unknown_verb(&format!("GET /v1/teams/{team}"))),
        None => {
            let team = TeamId::parse(&team)?;
            Ok(Json(service::teams::get(&s.db, &caller, &team).await?).into_response())
        }
    }
}

#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateTeamRequest {
    pub display_name: Option<String>,
    /// The complete new project list (a project with clusters cannot be removed).
    pub projects: Option<Vec<String>>,
    /// The etag last read (or send If-Match): a stale one is 409 ABORTED.
    pub etag: Option<String>,
}

/// `?updateMask=` (AIP-134).
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct UpdateTeamQuery {
    /// Comma-separated fields to change (`displayName`, `projects`, or `*`); a masked
    /// field absent from the body is cleared. Omitted: the fields present in the body.
    pub update_mask: Option<String>,
}

/// Change a team's display name or projects (ADMIN or more). A project added must be
/// one the caller may bind, as for create (403 PROJECT_OWNERSHIP_REQUIRED otherwise);
/// projects the team holds already are not checked again.
#[utoipa::path(patch, path = "/v1/teams/{team}", operation_id = "updateTeam", tag = "teams", request_body = UpdateTeamRequest,
    params(("team" = String, Path, description = "team id"), UpdateTeamQuery, RequestIdQuery, IfMatchHeader),
    responses((status = 200, description = "The updated team", body = Team)))]
async fn update_team(
    Call(s, caller): Call,
    TeamAt(team): TeamAt,
    ApiQuery(q): ApiQuery<UpdateTeamQuery>,
    IfMatch(if_match): IfMatch,
    key: RequestKey,
    ApiJson(req): ApiJson<UpdateTeamRequest>,
) -> Reply<Team> {
    let idem = key.bind(&(&q.update_mask, &req))?;
    let patch = service::teams::TeamPatch {
        display_name: req.display_name,
        projects: req.projects,
        etag: service::etag::expected(if_match.as_deref(), req.etag.as_deref())?,
    }
    .masked(q.update_mask.as_deref())?;
    Ok(Json(
        service::teams::update(&s.db, &s.cloud, &caller, &team, patch, idem.as_ref()).await?,
    ))
}

/// Delete a team (OWNER; refused while it has clusters).
#[utoipa::path(delete, path = "/v1/teams/{team}", operation_id = "deleteTeam", tag = "teams",
    params(("team" = String, Path, description = "team id"), RequestIdQuery, IfMatchHeader),
    responses((status = 204, description = "deleted")))]
async fn delete_team(
    Call(s, caller): Call,
    TeamAt(team): TeamAt,
    IfMatch(if_match): IfMatch,
    key: RequestKey,
) -> Result<StatusCode, ApiError> {
    let idem = key.bind(&())?;
    service::teams::delete(&s.db, &caller, &team, if_match.as_deref(), idem.as_ref()).await?;
    Ok(StatusCode::NO_CONTENT)
}

list_response!(ListMembersResponse, members: Member);

/// Members of a team (VIEWER or more).
#[utoipa::path(get, path = "/v1/teams/{team}/members", operation_id = "listMembers", tag = "teams",
    params(("team" = String, Path, description = "team id"), PageQuery),
    responses((status = 200, description = "One page of the team's members", body = ListMembersResponse)))]
async fn list_members(
    Call(s, caller): Call,
    TeamAt(team): TeamAt,
    Paged(page): Paged,
) -> Reply<ListMembersResponse> {
    let page = service::teams::list_members(&s.db, &caller, &team, &page).await?;
    Ok(Json(page.into()))
}

#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PutMemberRequest {
    pub role: Role,
}

/// Add a member or change a role (ADMIN or more; OWNER to grant or change OWNER).
#[utoipa::path(put, path = "/v1/teams/{team}/members/{email}", operation_id = "replaceMember", tag = "teams",
    request_body = PutMemberRequest,
    params(("team" = String, Path, description = "team id"),
           ("email" = String, Path, description = "member: an address (a person or service account), or group:ADDRESS for a Google group"), RequestIdQuery, IfMatchHeader),
    responses((status = 200, description = "The member with its role", body = Member)))]
async fn put_member(
    Call(s, caller): Call,
    TeamItemAt(team, email): TeamItemAt,
    IfMatch(if_match): IfMatch,
    key: RequestKey,
    ApiJson(req): ApiJson<PutMemberRequest>,
) -> Reply<Member> {
    let member = RosterEntry::parse(&email)?;
    let etag = if_match.as_deref();
    let idem = key.bind(&req)?;
    let m = service::teams::put_member(
        &s.db,
        &caller,
        &team,
        &member,
        req.role,
        etag,
        idem.as_ref(),
    );
    Ok(Json(m.await?))
}

/// Remove a member (ADMIN or more, or yourself; never the last OWNER).
#[utoipa::path(delete, path = "/v1/teams/{team}/members/{email}", operation_id = "deleteMember", tag = "teams",
    params(("team" = String, Path, description = "team id"),
           ("email" = String, Path, description = "member: an address (a person or service account), or group:ADDRESS for a Google group"), RequestIdQuery, IfMatchHeader),
    responses((status = 204, description = "removed")))]
async fn delete_member(
    Call(s, caller): Call,
    TeamItemAt(team, email): TeamItemAt,
    IfMatch(if_match): IfMatch,
    key: RequestKey,
) -> Result<StatusCode, ApiError> {
    let member = RosterEntry::parse(&email)?;
    let (etag, idem) = (if_match.as_deref(), key.bind(&())?);
    service::teams::delete_member(&s.db, &caller, &team, &member, etag, idem.as_ref()).await?;
    Ok(StatusCode::NO_CONTENT)
}
