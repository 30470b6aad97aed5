//! `/v1/accelerators`: the catalog, and resolving any accepted spelling.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::state::AppState;
use crate::model::accelerator::Accelerator;
use crate::service::{self, Caller};

use super::error::ApiError;
use super::extract::ApiPath;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_accelerators))
        .routes(routes!(get_accelerator))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ListAcceleratorsResponse {
    pub accelerators: Vec<Accelerator>,
}

/// Every canonical accelerator with its GKE type, machine type, shape, aliases and
/// estimated prices.
#[utoipa::path(get, path = "/v1/accelerators", operation_id = "listAccelerators", tag = "accelerators",
    responses((status = 200, description = "The accelerator catalog", body = ListAcceleratorsResponse)))]
async fn list_accelerators(
    State(s): State<AppState>,
    _caller: Caller,
) -> Json<ListAcceleratorsResponse> {
    Json(ListAcceleratorsResponse {
        accelerators: service::accelerators::list(&s.prices),
    })
}

/// Resolve any accepted spelling (`a100x4`, `gpu:4`, `v5e-16`, `l4:spot`).
#[utoipa::path(get, path = "/v1/accelerators/{spec}", operation_id = "getAccelerator", tag = "accelerators",
    params(("spec" = String, Path, description = "any accepted spelling")),
    responses((status = 200, description = "The accelerator the spelling resolves to", body = Accelerator)))]
async fn get_accelerator(
    State(s): State<AppState>,
    _caller: Caller,
    ApiPath(spec): ApiPath<String>,
) -> Result<Json<Accelerator>, ApiError> {
    Ok(Json(service::accelerators::resolve(&spec, &s.prices)?))
}
