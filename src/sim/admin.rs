//! `/sim/v1/`: faults, journal, state dump, clock.

use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{delete, get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Sim;
use super::faults::FaultSpec;

pub fn routes() -> Router<Sim> {
    Router::new()
        .route(
            "/sim/v1/faults",
            post(arm).get(list_faults).delete(disarm_all),
        )
        .route("/sim/v1/faults/{id}", delete(disarm))
        .route("/sim/v1/journal", get(journal).delete(clear_journal))
        .route("/sim/v1/state", get(state))
        .route("/sim/v1/clock", get(clock))
        .route("/sim/v1/clock:advance", post(advance))
}

async fn arm(State(sim): State<Sim>, body: axum::body::Bytes) -> impl IntoResponse {
    match serde_json::from_slice::<FaultSpec>(&body) {
        Ok(spec) => (StatusCode::OK, Json(json!(sim.faults().arm(spec)))),
        Err(e) => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": {"code": 400, "message": format!("bad fault: {e}")}})),
        ),
    }
}

async fn list_faults(State(sim): State<Sim>) -> Json<Value> {
    Json(json!({"faults": sim.faults().list()}))
}

async fn disarm_all(State(sim): State<Sim>) -> Json<Value> {
    Json(json!({"disarmed": sim.faults().disarm(None)}))
}

async fn disarm(State(sim): State<Sim>, Path(id): Path<u64>) -> Json<Value> {
    Json(json!({"disarmed": sim.faults().disarm(Some(id))}))
}

#[derive(Debug, Deserialize)]
struct JournalQuery {
    service: Option<String>,
    method: Option<String>,
    /// Substring of the path.
    path: Option<String>,
    #[serde(rename = "httpMethod")]
    http_method: Option<String>,
}

async fn journal(State(sim): State<Sim>, Query(q): Query<JournalQuery>) -> Json<Value> {
    let entries: Vec<_> = sim
        .journal()
        .entries()
        .into_iter()
        .filter(|e| q.service.as_ref().is_none_or(|s| &e.service == s))
        .filter(|e| q.method.as_ref().is_none_or(|m| &e.method == m))
        .filter(|e| q.path.as_ref().is_none_or(|p| e.path.contains(p.as_str())))
        .filter(|e| {
            q.http_method
                .as_ref()
                .is_none_or(|m| e.http_method.eq_ignore_ascii_case(m))
        })
        .collect();
    Json(json!({ "entries": entries }))
}

async fn clear_journal(State(sim): State<Sim>) -> StatusCode {
    sim.journal().clear();
    StatusCode::NO_CONTENT
}

async fn state(State(sim): State<Sim>) -> Json<Value> {
    let w = sim.world();
    Json(serde_json::to_value(&*w).unwrap_or(Value::Null))
}

/// The virtual clock: its mode, seconds since the simulator started, and the calendar
/// time they stand for (`time`, RFC 3339: the cloud's clock kineticd reads in `--dev`).
async fn clock(State(sim): State<Sim>) -> Json<Value> {
    let c = sim.clock();
    let now = c.now();
    Json(json!({
        "mode": format!("{:?}", c.mode()),
        "nowSeconds": now.as_secs_f64(),
        "time": c.wall(now).to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    }))
}

#[derive(Debug, Deserialize)]
struct Advance {
    seconds: f64,
}

/// The most one `clock:advance` may move virtual time (ten years).
pub const MAX_ADVANCE_SECONDS: f64 = 10.0 * 365.0 * 86_400.0;

/// `seconds` as a duration, or why not (the message names the limit).
fn advance_by(seconds: f64) -> Result<std::time::Duration, String> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(format!(
            "seconds must be a finite number >= 0 (got {seconds})"
        ));
    }
    if seconds > MAX_ADVANCE_SECONDS {
        return Err(format!(
            "seconds must be at most {MAX_ADVANCE_SECONDS} (ten years) per call (got {seconds})"
        ));
    }
    std::time::Duration::try_from_secs_f64(seconds).map_err(|e| e.to_string())
}

async fn advance(State(sim): State<Sim>, Json(a): Json<Advance>) -> impl IntoResponse {
    let by = match advance_by(a.seconds) {
        Ok(by) => by,
        Err(message) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(
                    json!({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": message}}),
                ),
            );
        }
    };
    sim.clock().advance(by);
    drop(sim.world()); // apply what became due
    (
        StatusCode::OK,
        Json(json!({
            "nowSeconds": sim.clock().now().as_secs_f64(),
            "time": sim.clock().wall_now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        })),
    )
}
