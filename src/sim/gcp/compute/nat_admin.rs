//! `DELETE /sim/v1/compute/projects/{project}/regions/{region}/routers/{router}/nats`:
//! take every Cloud NAT off a router behind kineticd's back (a NAT someone deleted by
//! hand), so tests and `--dev` users can see what status and `:diagnose` make of it.
//!
//! Invariant: only the router's `nats` change, at once and without an operation; the
//! answer says how many were removed (404 when the router does not exist).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::sim::Sim;

pub async fn remove_nats(
    State(sim): State<Sim>,
    Path((project, region, router)): Path<(String, String, String)>,
) -> Response {
    let mut w = sim.world();
    match w
        .compute
        .routers
        .get_mut(&format!("{project}/{region}/{router}"))
    {
        Some(r) => {
            let removed = std::mem::take(&mut r.nats).len();
            Json(json!({ "removed": removed })).into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({"error": {"code": 404, "message": format!("router {project}/{region}/{router} not found")}})),
        )
            .into_response(),
    }
}
