//! Admin endpoints of the Kubernetes side: the simulator's own manifests
//! (`GET /sim/v1/manifests/{file}`, counted in `State::manifest_downloads`, failing
//! with 503 while a fault for service `manifests` is armed) and spot reclaims
//! (`POST /sim/v1/kube/{key}/pools/{pool}:reclaim`).
//!
//! Invariant: a reclaim takes effect before its response is sent: the pool's nodes are
//! gone and their pods are back to Pending (or already rescheduled elsewhere).

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use super::manifests;
use crate::sim::Sim;

pub fn routes() -> Router<Sim> {
    Router::new()
        .route("/sim/v1/manifests/{file}", get(manifest))
        .route("/sim/v1/kube/{key}/pools/{action}", post(pool_action))
}

async fn manifest(State(sim): State<Sim>, Path(file): Path<String>) -> Response {
    let Some(body) = manifests::by_file(&file) else {
        return (StatusCode::NOT_FOUND, "no such manifest\n").into_response();
    };
    if sim.faults().take("manifests", &file).is_some() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "download site unavailable (simulated)\n",
        )
            .into_response();
    }
    *sim.world().kube.manifest_downloads.entry(file).or_default() += 1;
    ([(header::CONTENT_TYPE, "application/yaml")], body).into_response()
}

fn error(code: u16, message: String) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST);
    (
        status,
        axum::Json(json!({"error": {"code": code, "message": message}})),
    )
        .into_response()
}

async fn pool_action(
    State(sim): State<Sim>,
    Path((key, action)): Path<(String, String)>,
) -> Response {
    let Some(pool) = action.strip_suffix(":reclaim") else {
        return error(
            404,
            format!("unknown pool action {action:?} (supported: {{pool}}:reclaim)"),
        );
    };
    let clock = sim.clock();
    let mut world = sim.world();
    match world.kube.reclaim_pool(&key, pool, clock.now()) {
        Ok(report) => {
            if let Some(c) = world.kube.clusters.get_mut(&key) {
                c.reconcile(clock);
            }
            axum::Json(report).into_response()
        }
        Err((code, message)) => error(code, message),
    }
}
