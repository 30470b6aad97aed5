//! `GET .../clusters/{c}/credentials`: a kubeconfig for the caller, the one `gcloud
//! container clusters get-credentials` writes, as YAML (`application/yaml`, the default)
//! or, for `Accept: application/json`, as JSON `{"kubeconfig": "<the YAML>"}`.
//!
//! Invariant: a read like the other cluster reads (VIEWER+ of the owning team, 404
//! otherwise) that changes nothing; the answer is never stored by a cache
//! (`Cache-Control: no-store`) and is chosen by `Accept` alone (no query parameter).

use axum::Json;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::ClusterParams;
use super::call::Call;
use super::error::{ApiError, ErrorBody};
use super::extract::ClusterAt;
use super::state::AppState;
use crate::service;

/// The YAML media type of the default answer.
const YAML: &str = "application/yaml";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_cluster_credentials))
}

/// The kubeconfig as JSON (`Accept: application/json`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterCredentials {
    /// The kubeconfig file, YAML text: write it to a file and point `KUBECONFIG` at it.
    pub kubeconfig: String,
}

/// A kubeconfig for the cluster, as `gcloud container clusters get-credentials` writes
/// it: the cluster's endpoint and CA certificate, a user that runs
/// `gke-gcloud-auth-plugin` (so kubectl authenticates as you, with your own Google
/// credentials), and one context named `gke_{project}_{zone}_{cluster}`, made current,
/// whose namespace is that of your profile of the cluster if you have one. YAML by
/// default; `Accept: application/json` answers `{"kubeconfig": "<the YAML>"}`. Only for
/// a RUNNING (or RECONCILING) cluster. VIEWER+.
#[utoipa::path(get, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/credentials", operation_id = "getClusterCredentials", tag = "clusters",
    params(ClusterParams),
    responses((status = 200, description = "A kubeconfig for the cluster (YAML, or JSON with Accept: application/json)",
            content((ClusterCredentials = "application/json"), (String = "application/yaml")),
            headers(("Cache-Control" = String, description = "no-store"))),
        (status = 409, body = ErrorBody, description = "CLUSTER_STATE_NOT_RUNNING or GKE_CLUSTER_NOT_FOUND: no cluster to connect to"),
        (status = 503, body = ErrorBody, description = "CLUSTER_NOT_READY or CLOUD_UNAVAILABLE: the GKE cluster has no endpoint yet or could not be read")))]
async fn get_cluster_credentials(
    Call(s, caller): Call,
    ClusterAt(path): ClusterAt,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let kubeconfig = service::credentials::kubeconfig(&s, &caller, &path).await?;
    let mut response = if wants_json(&headers) {
        Json(ClusterCredentials { kubeconfig }).into_response()
    } else {
        ([(CONTENT_TYPE, HeaderValue::from_static(YAML))], kubeconfig).into_response()
    };
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// Whether `Accept` prefers JSON: its first media range that names JSON or YAML is
/// `application/json` (quality values are not weighed; `*/*` or none is YAML).
fn wants_json(headers: &HeaderMap) -> bool {
    super::extract::accepted(headers)
        .into_iter()
        .find(|m| m == "application/json" || m.ends_with("yaml"))
        .is_some_and(|m| m == "application/json")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header::ACCEPT;

    fn accept(v: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in v {
            h.append(ACCEPT, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn json_only_when_asked_before_yaml() {
        assert!(!wants_json(&accept(&[])));
        assert!(!wants_json(&accept(&["*/*"])));
        assert!(wants_json(&accept(&["application/json"])));
        assert!(wants_json(&accept(&["text/html, Application/JSON;q=0.9"])));
        assert!(!wants_json(&accept(&[
            "application/yaml, application/json"
        ])));
        assert!(wants_json(&accept(&["text/plain", "application/json"])));
    }
}
