//! `POST .../clusters/{cluster}:checkWorkload`: would this workload schedule, and if
//! not, why. The body is a Kubernetes manifest as JSON, or as YAML with
//! `Content-Type: application/yaml`.
//!
//! Invariant: the body is decoded here (JSON through [`ApiJson`], YAML by serde-saphyr
//! with its line and column on error) into one object, and judged by the service; a
//! body that is not one object never reaches it.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::ClusterParams;
use super::error::{ApiError, ErrorBody};
use super::extract::ApiJson;
use super::state::AppState;

use crate::model::workload::WorkloadCheck;
use crate::service::clusters::ClusterPath;
use crate::service::{self, Caller};

/// Judge a Pod, Deployment, StatefulSet, Job, JobSet (`jobset.x-k8s.io/v1alpha2`) or
/// LeaderWorkerSet (`leaderworkerset.x-k8s.io/v1`) against the cluster's pools, nodes,
/// pods and accelerator quota, as GKE would admit and schedule it: per pool whether its
/// pods fit NOW, AFTER_SCALE_UP or NEVER and why, and `problems[]` with a fix each.
/// Read-only (VIEWER+). Body: the manifest as JSON, or YAML with
/// `Content-Type: application/yaml`.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}:checkWorkload", operation_id = "checkWorkload", tag = "clusters",
    params(ClusterParams),
    request_body(description = "A Kubernetes workload manifest", content((Object = "application/json"), (Object = "application/yaml"))),
    responses((status = 200, description = "Whether, when and where the workload would schedule", body = WorkloadCheck,
            headers(("Server-Timing" = String, description = "cloud, kube (both lists), nodes, pods and compute (the judgement) durations in ms"))),
        (status = 409, body = ErrorBody, description = "GKE_CLUSTER_NOT_FOUND or CLUSTER_NOT_READY: the GKE cluster is missing or has no endpoint yet"),
        (status = 503, body = ErrorBody, description = "GKE_UNAVAILABLE or KUBERNETES_UNAVAILABLE: the cluster could not be read")))]
pub async fn check_workload(
    s: &AppState,
    caller: &Caller,
    path: &ClusterPath,
    body: &Value,
) -> Result<Response, ApiError> {
    let (report, timing) = service::workload::check(&s.db, &s.cloud, caller, path, body).await?;
    Ok(super::capacity::with_server_timing(
        Json(report).into_response(),
        &timing,
    ))
}

/// The essence of the request's content type, lower-cased.
fn media(req: &Request) -> String {
    req.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The manifest: a YAML body when declared so, JSON otherwise (415 for anything else).
pub(super) async fn manifest(req: Request, s: &AppState) -> Result<Value, ApiError> {
    let ct = media(&req);
    let yaml = matches!(
        ct.as_str(),
        "application/yaml" | "application/x-yaml" | "text/yaml" | "text/x-yaml"
    );
    if !yaml {
        let json = ct == "application/json" || ct.ends_with("+json");
        if !json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "UNSUPPORTED_MEDIA_TYPE",
                "send the manifest as JSON (Content-Type: application/json) or YAML (Content-Type: application/yaml)",
            ));
        }
        let ApiJson(v) = ApiJson::<Value>::from_request(req, s).await?;
        return Ok(v);
    }
    let bytes = Bytes::from_request(req, s).await.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "BODY_TOO_LARGE",
                "request body is larger than the 1 MiB limit",
            )
        } else {
            ApiError::invalid("BAD_BODY", e.body_text())
        }
    })?;
    from_yaml(&bytes)
}

/// One YAML document holding an object.
fn from_yaml(bytes: &[u8]) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        ApiError::invalid(
            "MALFORMED_YAML",
            format!(
                "request body is not valid YAML: invalid UTF-8 at byte {}",
                e.valid_up_to()
            ),
        )
    })?;
    let v: Value = serde_saphyr::from_str(text).map_err(|e| {
        ApiError::invalid(
            "MALFORMED_YAML",
            format!("request body is not valid YAML: {e}"),
        )
    })?;
    if v.is_object() {
        Ok(v)
    } else {
        Err(ApiError::invalid(
            "BODY_NOT_OBJECT",
            "request body must be one YAML mapping (apiVersion, kind, metadata, spec), not a scalar or a list",
        ))
    }
}
