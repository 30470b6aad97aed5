//! The recording layer of the audit trail: every state-changing request (API and
//! console), accepted or refused, becomes one event once its response is made
//! ([`crate::service::audit`] decides which requests and what they act on).
//!
//! Invariant: every request runs in its audit scope (the events services append while
//! it runs, such as CREDENTIALS_ISSUED on a GET, carry its `x-request-id`); one that is
//! not recorded (every GET and HEAD, previews, read-only custom methods) costs nothing
//! more, no database work; a recorded one costs one INSERT after its answer is ready,
//! and the answer goes out whether or not the event could be written.

use axum::extract::{Request, State};
use axum::http::header::LOCATION;
use axum::http::{HeaderName, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use super::error::ApiError;
use super::state::AppState;
use crate::service::audit::{self, RequestOutcome};

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Middleware: run the request inside its audit scope and record it if it changes state.
pub async fn record(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let request_id = req
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Some(resource) =
        audit::recorded(req.method().as_str(), req.uri().path(), req.uri().query())
    else {
        return audit::scoped(request_id, false, next.run(req)).await.0;
    };
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    // Refused before any handler authenticated it (an unknown query parameter, a body
    // too large): the caller is still who their credentials say.
    let headers = path.starts_with("/v1/").then(|| req.headers().clone());
    let (resp, actor) = audit::scoped(request_id.clone(), true, next.run(req)).await;
    let actor = match (actor, headers) {
        (Some(a), _) => Some(a),
        (None, Some(h)) if resp.status() != StatusCode::UNAUTHORIZED => s
            .auth
            .identity
            .authenticate(&h, None)
            .await
            .ok()
            .map(|p| p.email.as_str().to_owned()),
        (None, _) => None,
    };
    let reason = resp
        .extensions()
        .get::<ApiError>()
        .map(|e| e.reason.as_str())
        .or_else(|| {
            resp.extensions()
                .get::<audit::Refusal>()
                .map(|r| r.0.as_str())
        });
    let location = resp.headers().get(LOCATION).and_then(|v| v.to_str().ok());
    audit::record_request(
        &s.db,
        RequestOutcome {
            resource,
            actor: actor.as_deref(),
            request_id: request_id.as_deref(),
            method: method.as_str(),
            path: &path,
            status: resp.status().as_u16(),
            reason,
            location,
        },
    )
    .await;
    resp
}
