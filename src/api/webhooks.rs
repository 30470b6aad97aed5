//! `/v1/teams/{team}/webhooks` (POST, GET), `/v1/teams/{team}/webhooks/{webhook}` (GET,
//! DELETE) and `.../deliveries` (GET): a team's signed notifications (issue 30).
//!
//! Invariant: the handlers only parse; the service authorises (members read, ADMIN and
//! OWNER add and delete), validates and records.

use axum::Json;
use axum::http::StatusCode;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::PageQuery;
use super::call::{Call, Paged, Reply};
use super::error::ApiError;
use super::extract::{ApiJson, TeamAt, TeamItemAt};
use super::state::AppState;
use crate::service;
use crate::service::webhooks::{CreateWebhookRequest, Delivery, Webhook};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_webhook, list_webhooks))
        .routes(routes!(get_webhook, delete_webhook))
        .routes(routes!(list_deliveries))
}

/// `{webhooks}`: a team has few (at most 20), so one page holds them all.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ListWebhooksResponse {
    pub webhooks: Vec<Webhook>,
}

/// Add a webhook (ADMIN or OWNER). The reply holds the signing `secret`, shown this
/// once: every delivery carries `X-Kinetic-Signature: t=<unix>,v1=<hex HMAC-SHA256 of
/// "<t>.<body>">`, `X-Kinetic-Delivery` (its id, to de-duplicate: deliveries are at
/// least once) and `X-Kinetic-Event`. A URL whose host is link-local, the metadata
/// server, or (unless the deployment allows them) loopback or private is 400
/// WEBHOOK_URL_REFUSED; a bad field is 400 INVALID_WEBHOOK naming it.
#[utoipa::path(post, path = "/v1/teams/{team}/webhooks", operation_id = "createWebhook", tag = "teams",
    request_body = CreateWebhookRequest,
    params(("team" = String, Path, description = "team id")),
    responses((status = 201, description = "The webhook, with its secret (shown once)", body = Webhook)))]
async fn create_webhook(
    Call(s, caller): Call,
    TeamAt(team): TeamAt,
    ApiJson(body): ApiJson<CreateWebhookRequest>,
) -> Result<(StatusCode, Json<Webhook>), ApiError> {
    let w = service::webhooks::create(&s.services, &caller, &team, body).await?;
    Ok((StatusCode::CREATED, Json(w)))
}

/// The team's webhooks, oldest first, without their secrets (any member).
#[utoipa::path(get, path = "/v1/teams/{team}/webhooks", operation_id = "listWebhooks", tag = "teams",
    params(("team" = String, Path, description = "team id")),
    responses((status = 200, description = "The team's webhooks", body = ListWebhooksResponse)))]
async fn list_webhooks(Call(s, caller): Call, TeamAt(team): TeamAt) -> Reply<ListWebhooksResponse> {
    let webhooks = service::webhooks::list(&s.db, &caller, &team).await?;
    Ok(Json(ListWebhooksResponse { webhooks }))
}

/// One webhook, without its secret (any member).
#[utoipa::path(get, path = "/v1/teams/{team}/webhooks/{webhook}", operation_id = "getWebhook", tag = "teams",
    params(("team" = String, Path, description = "team id"), ("webhook" = String, Path, description = "webhook id (`wh-1a2b3c4d`)")),
    responses((status = 200, description = "The webhook", body = Webhook)))]
async fn get_webhook(
    Call(s, caller): Call,
    TeamItemAt(team, webhook): TeamItemAt,
) -> Reply<Webhook> {
    Ok(Json(
        service::webhooks::get(&s.db, &caller, &team, &webhook).await?,
    ))
}

/// Delete a webhook (ADMIN or OWNER): its pending deliveries are removed with it and
/// never sent, and its delivery log goes too.
#[utoipa::path(delete, path = "/v1/teams/{team}/webhooks/{webhook}", operation_id = "deleteWebhook", tag = "teams",
    params(("team" = String, Path, description = "team id"), ("webhook" = String, Path, description = "webhook id")),
    responses((status = 204, description = "Deleted")))]
async fn delete_webhook(
    Call(s, caller): Call,
    TeamItemAt(team, webhook): TeamItemAt,
) -> Result<StatusCode, ApiError> {
    service::webhooks::delete(&s.db, &caller, &team, &webhook).await?;
    Ok(StatusCode::NO_CONTENT)
}

list_response!(ListDeliveriesResponse, deliveries: Delivery);

/// A webhook's deliveries, newest first: state, tries, the last status or error, and
/// when the next try is due (any member).
#[utoipa::path(get, path = "/v1/teams/{team}/webhooks/{webhook}/deliveries", operation_id = "listWebhookDeliveries", tag = "teams",
    params(("team" = String, Path, description = "team id"), ("webhook" = String, Path, description = "webhook id"), PageQuery),
    responses((status = 200, description = "One page of deliveries, newest first", body = ListDeliveriesResponse)))]
async fn list_deliveries(
    Call(s, caller): Call,
    TeamItemAt(team, webhook): TeamItemAt,
    Paged(page): Paged,
) -> Reply<ListDeliveriesResponse> {
    let page = service::webhooks::deliveries(&s.db, &caller, &team, &webhook, &page).await?;
    Ok(Json(page.into()))
}
