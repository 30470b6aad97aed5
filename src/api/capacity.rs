//! `GET .../clusters/{c}/capacity`: accelerators allocatable, requested and free per
//! accelerator type, pool and node; fragmentation; pending pods and why they wait; idle
//! cost. The time spent reading the cloud and Kubernetes and computing is in the
//! `Server-Timing` header (`cloud`, `kube`, `nodes`, `pods`, `compute`, in milliseconds).
//!
//! Invariant: a read like the other cluster reads (VIEWER+ of the owning team, 404
//! otherwise); it changes nothing, in the records or in the cloud.

use axum::Json;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::ClusterParams;
use super::call::Call;
use super::error::{ApiError, ErrorBody};
use super::extract::ClusterAt;
use super::state::AppState;
use crate::model::capacity::ClusterCapacity;
use crate::service;
use crate::service::capacity::Timing;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_cluster_capacity))
}

/// Accelerator capacity read live from the cluster's Kubernetes API: per accelerator
/// type, node pool and node the accelerators allocatable, requested by pods bound there
/// and free; free accelerators stranded on partly used nodes; the largest single-pod
/// request placeable now; pending pods that want accelerators, each with the `reason` it
/// waits; the hourly cost of idle accelerators; and a one-line summary. The
/// `Server-Timing` header reports the cloud reads, the node and pod lists and the
/// computation apart.
#[utoipa::path(get, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/capacity", operation_id = "getClusterCapacity", tag = "clusters",
    params(ClusterParams),
    responses((status = 200, description = "Accelerator capacity, fragmentation and pending pods", body = ClusterCapacity,
            headers(("Server-Timing" = String, description = "cloud, kube (both lists), nodes, pods and compute durations in ms"))),
        (status = 409, body = ErrorBody, description = "GKE_CLUSTER_NOT_FOUND or CLUSTER_NOT_READY: no API server to read"),
        (status = 503, body = ErrorBody, description = "GKE_UNAVAILABLE or KUBERNETES_UNAVAILABLE: the cluster could not be read")))]
async fn get_cluster_capacity(
    Call(s, caller): Call,
    ClusterAt(path): ClusterAt,
) -> Result<Response, ApiError> {
    let report = service::capacity::get(&s, &caller, &path).await?;
    Ok(with_server_timing(
        Json(report.capacity).into_response(),
        &report.timing,
    ))
}

/// `response` with a `Server-Timing` header of `timing` (see [`server_timing`]).
pub fn with_server_timing(mut response: Response, timing: &Timing) -> Response {
    if let Ok(v) = HeaderValue::from_str(&server_timing(timing)) {
        response.headers_mut().insert("server-timing", v);
    }
    response
}

/// `cloud;dur=1.2, kube;dur=5.6, nodes;dur=3.4, pods;dur=5.6, compute;dur=0.7` (W3C
/// Server Timing; `kube` is the wall time of the node and pod lists, which run at once).
pub fn server_timing(t: &Timing) -> String {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    format!(
        "cloud;dur={:.3}, kube;dur={:.3}, nodes;dur={:.3}, pods;dur={:.3}, compute;dur={:.3}",
        ms(t.cloud),
        ms(t.kube),
        ms(t.list_nodes),
        ms(t.list_pods),
        ms(t.compute)
    )
}
