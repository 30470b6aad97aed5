//! `POST .../clusters/{cluster}:diagnose`: Kinetic's `doctor` for a shared cluster, a
//! list of checks with OK / WARN / FAIL, a message and a fix each. Dispatched by the
//! cluster's custom-method route (see [`super::cluster_verbs`]); documented here.
//!
//! Invariant: read-only and bounded in time (the service's contract); the time spent in
//! the shared cloud and Kubernetes reads and in the checks is in `Server-Timing`.

use axum::Json;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use super::ClusterParams;
use super::error::ApiError;
use super::state::AppState;
use crate::model::diagnose::Diagnosis;
use crate::service::clusters::ClusterPath;
use crate::service::{self, Caller};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct DiagnoseQuery {
    /// How long every check may take, e.g. `10s` or `500ms` (default 10s, at most 30s);
    /// a check not done by then is WARN "not checked within ...".
    pub check_timeout: Option<String>,
}

/// The query of a `:diagnose` request (400 INVALID_QUERY when it does not parse).
pub fn query(req: &Request) -> Result<DiagnoseQuery, ApiError> {
    axum::extract::Query::<DiagnoseQuery>::try_from_uri(req.uri())
        .map(|q| q.0)
        .map_err(|r| ApiError::invalid("INVALID_QUERY", format!("query string: {}", r.body_text())))
}

/// Diagnose the cluster like Kinetic's `doctor`: APIs enabled, service accounts and
/// their roles, buckets and lifecycle, repository, network, router and NAT, GKE status
/// and version skew, node pools against their records, the LeaderWorkerSet controller,
/// the job KSA's Workload Identity, the NVIDIA driver installer, nodes NotReady or under
/// pressure, Pending pods, the last hour's Warning events and quota headroom per pool.
/// Each check is OK, WARN or FAIL with its figures and a fix. Read-only (VIEWER+): no
/// operation, nothing changed; every check is bounded by `checkTimeout`.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}:diagnose", operation_id = "diagnoseCluster", tag = "clusters",
    params(ClusterParams, DiagnoseQuery),
    responses((status = 200, description = "Every check with its status, message and fix, and a summary", body = Diagnosis,
            headers(("Server-Timing" = String, description = "cloud (GKE cluster and region), kube (both lists), nodes, pods and compute (the checks) durations in ms")))))]
pub async fn diagnose_cluster(
    s: &AppState,
    caller: &Caller,
    path: &ClusterPath,
    q: &DiagnoseQuery,
) -> Result<Response, ApiError> {
    let timeout = service::diagnose::parse_check_timeout(q.check_timeout.as_deref())?;
    let report = service::diagnose::run(&s.db, &s.cloud, caller, path, timeout).await?;
    Ok(super::capacity::with_server_timing(
        Json(report.diagnosis).into_response(),
        &report.timing,
    ))
}
