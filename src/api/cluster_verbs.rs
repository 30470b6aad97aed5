//! The cluster's custom methods that are POSTs on `{cluster}:verb` (AIP-136):
//! `:checkWorkload`, `:diagnose`, `:syncAccess` and the previews of `up` and `down`
//! (`:previewApply`, `:previewDelete`) share one route, since the router sees one path
//! segment; this module only dispatches, each verb's handler is documented in its own
//! module ([`super::check_workload`], [`super::diagnose`]).
//!
//! Invariant: an unknown verb is 404 `METHOD_NOT_FOUND`, never a
//! handler; the cluster path is validated before any handler runs.

use axum::extract::{FromRequestParts, Request};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use utoipa_axum::router::OpenApiRouter;

use super::call::Call;
use super::error::ApiError;
use super::extract::{ApiPath, ClusterTarget, IfMatch, split_verb, unknown_verb};
use super::preview;
use super::provision::MutationParts;
use super::state::AppState;
use crate::service::clusters::ClusterPath;

pub fn router() -> OpenApiRouter<AppState> {
    // Custom methods share the cluster's path segment (`{cluster}:checkWorkload`).
    OpenApiRouter::new().route(
        "/v1/projects/{project}/zones/{zone}/clusters/{cluster}",
        post(cluster_verb),
    )
}

async fn cluster_verb(
    Call(s, caller): Call,
    ApiPath((project, zone, segment)): ApiPath<(String, String, String)>,
    req: Request,
) -> Result<Response, ApiError> {
    match split_verb(&segment) {
        Some((cluster, "checkWorkload")) => {
            let path = ClusterPath::parse(&project, &zone, cluster)?;
            let body = super::check_workload::manifest(req, &s).await?;
            super::check_workload::check_workload(&s, &caller, &path, &body).await
        }
        Some((cluster, verb @ ("previewApply" | "previewDelete"))) => {
            let path = ClusterPath::parse(&project, &zone, cluster)?;
            let (mut parts, body) = req.into_parts();
            let r = MutationParts::from_request_parts(&mut parts, &s).await?;
            let IfMatch(if_match) = IfMatch::from_request_parts(&mut parts, &s).await?;
            let t = ClusterTarget(path, if_match);
            if verb == "previewDelete" {
                return preview::preview_delete_cluster(&s, r, t).await;
            }
            let b = preview::body_of(parts, body, &s).await?;
            preview::preview_apply_cluster(&s, r, t, b).await
        }
        Some((cluster, "syncAccess")) => {
            let path = ClusterPath::parse(&project, &zone, cluster)?;
            super::sync_access::sync_cluster_access(&s, &caller, &path).await
        }
        Some((cluster, "snooze")) => {
            let path = ClusterPath::parse(&project, &zone, cluster)?;
            Ok(super::snooze::snooze_cluster(&s, &caller, &path, req)
                .await?
                .into_response())
        }
        Some((cluster, "diagnose")) => {
            let path = ClusterPath::parse(&project, &zone, cluster)?;
            let q = super::diagnose::query(&req)?;
            super::diagnose::diagnose_cluster(&s, &caller, &path, &q).await
        }
        _ => Err(unknown_verb(&format!(
            "POST /v1/projects/{project}/zones/{zone}/clusters/{segment}"
        ))),
    }
}
