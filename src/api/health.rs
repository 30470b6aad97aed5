//! Unauthenticated service endpoints: liveness, readiness.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::call::Reply;
use super::state::AppState;

use super::error::{ApiError, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    #[schema(example = "ok")]
    pub status: String,
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", operation_id = "getHealth", tag = "service", security(),
    responses((status = 200, description = "The process is up", body = Health)))]
async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

/// The database answers and every migration is applied.
#[utoipa::path(get, path = "/readyz", operation_id = "getReadiness", tag = "service", security(),
    responses((status = 200, description = "Ready: the database answers and every migration is applied", body = Health), (status = 503, description = "NOT_READY: the database does not answer or a migration is not applied", body = ErrorBody)))]
async fn readyz(State(s): State<AppState>) -> Reply<Health> {
    let unavailable =
        |why: &str| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "NOT_READY", why.to_owned());
    match s.ready().await {
        Ok(true) => Ok(Json(Health {
            status: "ready".into(),
        })),
        Ok(false) => Err(unavailable("database migrations are not all applied")),
        Err(e) => {
            tracing::warn!(error = %super::error::ErrorChain(&e), "readiness check failed");
            Err(unavailable("database unreachable"))
        }
    }
}
