//! Regional quotas: limits come from `SimConfig::quotas` (every region) overridden per
//! region through `POST /sim/v1/quotas {"region","metric","limit"}`; usage is computed
//! from the GKE node pools that exist (see `container::usage`), never stored.
//!
//! Invariant: usage is derived on every read, so creating, resizing and deleting pools
//! consume and release quota with no bookkeeping that could drift.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::sim::Sim;
use crate::sim::gcp::container;
use crate::sim::world::World;

use super::catalog::is_region;

/// The limit of `metric` in `region`, if any.
pub fn limit(world: &World, region: &str, metric: &str) -> Option<f64> {
    world
        .compute
        .quota_overrides
        .get(region)
        .and_then(|m| m.get(metric))
        .or_else(|| world.compute.default_quotas.get(metric))
        .copied()
}

/// Every metric with a limit in `region`, with its limit.
pub fn limits(world: &World, region: &str) -> BTreeMap<String, f64> {
    let mut out = world.compute.default_quotas.clone();
    if let Some(o) = world.compute.quota_overrides.get(region) {
        out.extend(o.iter().map(|(k, v)| (k.clone(), *v)));
    }
    out
}

/// The first metric that adding `extra` to the current usage would push over its limit:
/// `(metric, limit)`. Metrics without a limit are not checked.
pub fn exceeded(
    world: &World,
    project: &str,
    region: &str,
    extra: &BTreeMap<String, f64>,
) -> Option<(String, f64)> {
    let usage = container::usage(world, project, region);
    extra.iter().find_map(|(metric, add)| {
        let lim = limit(world, region, metric)?;
        let used = usage.get(metric.as_str()).copied().unwrap_or(0.0);
        (*add > 0.0 && used + add > lim).then(|| (metric.clone(), lim))
    })
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuotaOverride {
    pub region: String,
    pub metric: String,
    pub limit: f64,
}

fn bad(msg: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"error": {"code": 400, "message": msg}})),
    )
        .into_response()
}

/// `POST /sim/v1/quotas`.
pub async fn set(State(sim): State<Sim>, body: axum::body::Bytes) -> Response {
    let q: QuotaOverride = match serde_json::from_slice(&body) {
        Ok(q) => q,
        Err(e) => return bad(format!("bad quota override: {e}")),
    };
    if !is_region(&q.region) || q.metric.is_empty() || !q.limit.is_finite() || q.limit < 0.0 {
        return bad("region must be a region name, metric non-empty, limit >= 0".into());
    }
    let mut w = sim.world();
    w.compute
        .quota_overrides
        .entry(q.region.clone())
        .or_default()
        .insert(q.metric.clone(), q.limit);
    Json(json!({"region": q.region, "metric": q.metric, "limit": q.limit})).into_response()
}

/// `GET /sim/v1/quotas`: the overrides.
pub async fn list(State(sim): State<Sim>) -> Response {
    let w = sim.world();
    Json(json!({"overrides": w.compute.quota_overrides})).into_response()
}

/// `DELETE /sim/v1/quotas`: back to the configured limits.
pub async fn clear(State(sim): State<Sim>) -> Response {
    sim.world().compute.quota_overrides.clear();
    StatusCode::NO_CONTENT.into_response()
}
