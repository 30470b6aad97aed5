//! `/v1/operations`: get, list, and the custom methods `:cancel`, `:wait`, `:watch`,
//! `:approve` and `:reject`.

use super::idempotency::{RequestIdQuery, RequestKey};
use std::convert::Infallible;

use axum::Json;
use axum::http::HeaderValue;
use axum::http::header::CONTENT_TYPE;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::state::AppState;
use crate::model::Operation;
use crate::service::operations::WatchEvent;
use crate::service::provision::approval::Decision;
use crate::service::{self, Caller};

use super::call::{Call, Reply};
use super::error::ApiError;
use super::extract::{ApiJsonOrEmpty, ApiPath, ApiQuery, split_verb, unknown_verb};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_operations))
        // `{operation}` may carry a custom verb (`id:watch`, `id:cancel`, `id:wait`).
        .route("/v1/operations/{operation}", get(get_or_watch).post(verb))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ListOperationsQuery {
    /// Terms joined by AND: `done=true|false`, `state=RUNNING`, `type=UP_CLUSTER`,
    /// `target="projects/p/zones/z/clusters/c"`, `team=ml`, `createdBy="a@x"`.
    pub filter: Option<String>,
    pub page_size: Option<i32>,
    pub page_token: Option<String>,
}

list_response!(ListOperationsResponse, operations: Operation);

/// Operations of the caller's teams, newest first.
#[utoipa::path(get, path = "/v1/operations", operation_id = "listOperations", tag = "operations", params(ListOperationsQuery),
    responses((status = 200, description = "One page of operations, newest first", body = ListOperationsResponse)))]
async fn list_operations(
    Call(s, caller): Call,
    ApiQuery(q): ApiQuery<ListOperationsQuery>,
) -> Reply<ListOperationsResponse> {
    let page = service::PageRequest {
        size: q.page_size.map(i64::from),
        token: q.page_token,
        key: s.page_key.clone(),
    };
    let filter = q.filter.unwrap_or_default();
    let page = service::operations::list(&s.db, &caller, &filter, &page).await?;
    Ok(Json(page.into()))
}

/// An operation.
#[utoipa::path(get, path = "/v1/operations/{operation}", operation_id = "getOperation", tag = "operations",
    params(("operation" = String, Path, description = "operation id")),
    responses((status = 200, description = "The operation", body = Operation)))]
pub async fn get_operation(s: &AppState, caller: &Caller, id: &str) -> Result<Response, ApiError> {
    // The JSON text as rendered (or kept, for a finished operation): the same bytes and
    // content type as `Json(operation)`, without serialising again.
    let json = service::operations::get_json(&s.db, caller, id).await?;
    Ok(([(CONTENT_TYPE, APPLICATION_JSON)], json).into_response())
}

/// The content type axum's `Json` answers with.
const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");

/// Server-sent events: one `progress` event (the Operation) per change, then `done`
/// with the final Operation. A stream that ends without `done` (this replica shut down)
/// is reconnected.
#[utoipa::path(get, path = "/v1/operations/{operation}:watch", operation_id = "watchOperation", tag = "operations",
    params(("operation" = String, Path, description = "operation id")),
    responses((status = 200, description = "text/event-stream of `progress` and `done` events, each carrying an Operation", content_type = "text/event-stream", body = Operation)))]
pub async fn watch_operation(
    s: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<Response, ApiError> {
    let permit = s.auth.limits.watch_permit(&caller.email)?;
    let stream = service::operations::watch(s.db.clone(), s.events.clone(), caller, id).await?;
    let events = stream.map(move |e| {
        // Held as long as the stream lives: dropping the stream frees the place.
        let _held = &permit;
        let (name, op) = match e {
            WatchEvent::Progress(op) => ("progress", op),
            WatchEvent::Done(op) => ("done", op),
        };
        let data = serde_json::to_string(&op).unwrap_or_default();
        Ok::<_, Infallible>(Event::default().event(name).data(data))
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response())
}

async fn get_or_watch(
    Call(s, caller): Call,
    ApiPath(segment): ApiPath<String>,
) -> Result<Response, ApiError> {
    match split_verb(&segment) {
        None => get_operation(&s, &caller, &segment).await,
        Some((id, "watch")) => watch_operation(&s, &caller, id).await,
        _ => Err(unknown_verb(&format!("GET /v1/operations/{segment}"))),
    }
}

/// Request cancellation. A queued operation is cancelled at once; a running one stops
/// at its next safe point (a long cloud wait is abandoned at once) and ends CANCELLED
/// with error code 1.
#[utoipa::path(post, path = "/v1/operations/{operation}:cancel", operation_id = "cancelOperation", tag = "operations",
    params(("operation" = String, Path, description = "operation id"), RequestIdQuery),
    responses((status = 200, description = "The operation once cancellation is requested", body = Operation)))]
pub async fn cancel_operation(
    s: &AppState,
    caller: &Caller,
    id: &str,
    key: &RequestKey,
) -> Reply<Operation> {
    let idem = key.bind(&())?;
    Ok(Json(
        service::operations::cancel(&s.db, caller, id, idem.as_ref()).await?,
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// How long to wait, e.g. `30s` or `500ms` (default 30s, at most 60s).
    pub timeout: Option<String>,
}

/// Long-poll: returns when the operation is done or at the timeout, whichever first (or
/// early, in the same shape, when this replica shuts down: ask again).
#[utoipa::path(post, path = "/v1/operations/{operation}:wait", operation_id = "waitOperation", tag = "operations",
    params(("operation" = String, Path, description = "operation id"), WaitQuery),
    responses((status = 200, description = "The operation: done, or still running at the timeout or at this replica's shutdown", body = Operation)))]
pub async fn wait_operation(
    s: &AppState,
    caller: &Caller,
    id: &str,
    q: &WaitQuery,
) -> Reply<Operation> {
    let timeout = service::operations::parse_timeout(q.timeout.as_deref())?;
    Ok(Json(
        service::operations::wait(&s.db, &s.events, caller, id, timeout).await?,
    ))
}

/// The body of `:approve` and `:reject`.
#[derive(Debug, Default, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecisionRequest {
    /// Why (kept with the decision; a rejection's comment is in the operation's error).
    pub comment: Option<String>,
}

/// What `:approve` and `:reject` answer.
type Decided = Result<Json<Operation>, ApiError>;

/// Approve an operation waiting for approval (PENDING_APPROVAL): an ADMIN or OWNER of
/// its team other than its requester. The request is checked again as its requester
/// (the policy under the team's lock: a DENIED re-check is 403 POLICY_VIOLATION and
/// the operation keeps waiting) and the operation joins its cluster's queue.
#[utoipa::path(post, path = "/v1/operations/{operation}:approve", operation_id = "approveOperation", tag = "operations",
    request_body = DecisionRequest,
    params(("operation" = String, Path, description = "operation id")),
    responses((status = 200, description = "The operation, QUEUED", body = Operation)))]
pub async fn approve_operation(s: &AppState, c: &Caller, id: &str, b: DecisionRequest) -> Decided {
    decide(s, c, id, Decision::Approve(b.comment)).await
}

/// Reject an operation waiting for approval: it ends CANCELLED with reason
/// APPROVAL_REJECTED and the comment. Same callers as `:approve`.
#[utoipa::path(post, path = "/v1/operations/{operation}:reject", operation_id = "rejectOperation", tag = "operations",
    request_body = DecisionRequest,
    params(("operation" = String, Path, description = "operation id")),
    responses((status = 200, description = "The operation, CANCELLED", body = Operation)))]
pub async fn reject_operation(s: &AppState, c: &Caller, id: &str, b: DecisionRequest) -> Decided {
    decide(s, c, id, Decision::Reject(b.comment)).await
}

async fn decide(s: &AppState, caller: &Caller, id: &str, d: Decision) -> Decided {
    Ok(Json(
        service::provision::approval::decide(&s.services, caller, id, d).await?,
    ))
}

async fn verb(
    Call(s, caller): Call,
    ApiPath(segment): ApiPath<String>,
    ApiQuery(q): ApiQuery<WaitQuery>,
    key: RequestKey,
    ApiJsonOrEmpty(body): ApiJsonOrEmpty<DecisionRequest>,
) -> Reply<Operation> {
    match split_verb(&segment) {
        Some((id, "cancel")) => cancel_operation(&s, &caller, id, &key).await,
        Some((id, "wait")) => wait_operation(&s, &caller, id, &q).await,
        Some((id, "approve")) => approve_operation(&s, &caller, id, body).await,
        Some((id, "reject")) => reject_operation(&s, &caller, id, body).await,
        _ => Err(unknown_verb(&format!("POST /v1/operations/{segment}"))),
    }
}
