//! `/v1/profiles`: the caller's own profiles, and the `:activate` custom method.

use super::idempotency::{RequestIdQuery, RequestKey};
use axum::Json;
use axum::http::StatusCode;
use axum::routing::post;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::state::AppState;
use crate::domain::ProfileId;
use crate::model::Profile;
use crate::service::{self, Caller};

use super::PageQuery;
use super::call::{Call, Paged, Reply};
use super::error::ApiError;
use super::extract::{ApiJson, ApiPath, split_verb, unknown_verb};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_profiles))
        .routes(routes!(get_profile, put_profile, delete_profile))
        // Custom methods share the resource's path segment (`{profile}:activate`);
        // the router cannot split a segment, so one handler dispatches on the verb.
        .route("/v1/profiles/{profile}", post(profile_verb))
}

list_response!(ListProfilesResponse, profiles: Profile);

/// The caller's profiles.
#[utoipa::path(get, path = "/v1/profiles", operation_id = "listProfiles", tag = "profiles", params(PageQuery),
    responses((status = 200, description = "One page of the caller's profiles", body = ListProfilesResponse)))]
async fn list_profiles(Call(s, caller): Call, Paged(page): Paged) -> Reply<ListProfilesResponse> {
    let page = service::profiles::list(&s.db, &caller, &page).await?;
    Ok(Json(page.into()))
}

/// One of the caller's profiles.
#[utoipa::path(get, path = "/v1/profiles/{profile}", operation_id = "getProfile", tag = "profiles",
    params(("profile" = String, Path, description = "profile id")),
    responses((status = 200, description = "The profile", body = Profile)))]
async fn get_profile(Call(s, caller): Call, ApiPath(id): ApiPath<String>) -> Reply<Profile> {
    let id = ProfileId::parse(&id)?;
    Ok(Json(service::profiles::get(&s.db, &caller, &id).await?))
}

#[derive(Debug, Deserialize, serde::Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PutProfileRequest {
    /// `projects/{p}/zones/{z}/clusters/{c}`
    #[schema(example = "projects/my-gcp-project/zones/us-central1-a/clusters/kinetic-cluster")]
    pub cluster: String,
    /// Kubernetes namespace; default `default`.
    pub namespace: Option<String>,
}

/// Create or replace a profile (keeps whether it is active).
#[utoipa::path(put, path = "/v1/profiles/{profile}", operation_id = "replaceProfile", tag = "profiles",
    request_body = PutProfileRequest,
    params(("profile" = String, Path, description = "profile id"), RequestIdQuery),
    responses((status = 200, description = "The profile as stored", body = Profile)))]
async fn put_profile(
    Call(s, caller): Call,
    ApiPath(id): ApiPath<String>,
    key: RequestKey,
    ApiJson(req): ApiJson<PutProfileRequest>,
) -> Reply<Profile> {
    let id = ProfileId::parse(&id)?;
    let idem = key.bind(&req)?;
    let namespace = req.namespace.as_deref();
    let put = service::profiles::put(&s.db, &caller, &id, &req.cluster, namespace, idem.as_ref());
    Ok(Json(put.await?.0))
}

/// Delete one of the caller's profiles.
#[utoipa::path(delete, path = "/v1/profiles/{profile}", operation_id = "deleteProfile", tag = "profiles",
    params(("profile" = String, Path, description = "profile id"), RequestIdQuery),
    responses((status = 204, description = "deleted")))]
async fn delete_profile(
    Call(s, caller): Call,
    ApiPath(id): ApiPath<String>,
    key: RequestKey,
) -> Result<StatusCode, ApiError> {
    let id = ProfileId::parse(&id)?;
    service::profiles::delete(&s.db, &caller, &id, key.bind(&())?.as_ref()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Make this profile the caller's only active one.
#[utoipa::path(post, path = "/v1/profiles/{profile}:activate", operation_id = "activateProfile", tag = "profiles",
    params(("profile" = String, Path, description = "profile id"), RequestIdQuery),
    responses((status = 200, description = "The profile, now the caller's active one", body = Profile)))]
pub async fn activate_profile(
    s: &AppState,
    caller: &Caller,
    id: &str,
    key: &RequestKey,
) -> Reply<Profile> {
    let id = ProfileId::parse(id)?;
    let idem = key.bind(&())?;
    Ok(Json(
        service::profiles::activate(&s.db, caller, &id, idem.as_ref()).await?,
    ))
}

async fn profile_verb(
    Call(s, caller): Call,
    ApiPath(segment): ApiPath<String>,
    key: RequestKey,
) -> Reply<Profile> {
    match split_verb(&segment) {
        Some((id, "activate")) => activate_profile(&s, &caller, id, &key).await,
        _ => Err(unknown_verb(&format!("POST /v1/profiles/{segment}"))),
    }
}
