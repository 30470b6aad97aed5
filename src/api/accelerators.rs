//! `/v1/accelerators`: the catalog, and resolving any accepted spelling.

use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::call::{Call, Reply};
use super::state::AppState;
use crate::model::accelerator::Accelerator;
use crate::service;

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
async fn list_accelerators(Call(s, _): Call) -> Json<ListAcceleratorsResponse> {
    Json(ListAcceleratorsResponse {
        accelerators: service::accelerators::list(&s.prices),
    })
}

/// Resolve any accepted spelling (`a100x4`, `gpu:4`, `v5e-16`, `l4:spot`).
#[utoipa::path(get, path = "/v1/accelerators/{spec}", operation_id = "getAccelerator", tag = "accelerators",
    params(("spec" = String, Path, description = "any accepted spelling")),
    responses((status = 200, description = "The accelerator the spelling resolves to", body = Accelerator)))]
async fn get_accelerator(Call(s, _): Call, ApiPath(spec): ApiPath<String>) -> Reply<Accelerator> {
    Ok(Json(service::accelerators::resolve(&spec, &s.prices)?))
}
