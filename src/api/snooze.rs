//! `POST .../clusters/{cluster}:snooze` and `.../nodePools/{pool}:snooze`: a member
//! postpones the idle rules (and, for a cluster, its TTL) for a while, within the team
//! policy's `idle.maxSnooze`. The verbs share their resource's path segment, so the
//! cluster's and the pool's verb routes dispatch here; the OpenAPI document lists each as
//! its own path.
//!
//! Invariant: the handlers only parse; the service authorises (MEMBER+), bounds the
//! snooze and writes it with its IDLE_SNOOZED audit event in one transaction.

use axum::Json;
use axum::extract::{FromRequest, Request};

use crate::service::idle::{SnoozeRequest, Snoozed};
use crate::service::{self, Caller, clusters::ClusterPath};

use super::call::Reply;
use super::extract::ApiJson;
use super::state::AppState;
use super::{ClusterParams, PoolParams};

/// **snooze** a cluster: no idle action on it or any of its pools, and no TTL expiry,
/// before now + `duration` (MEMBER+; at most the policy's `idle.maxSnooze`, default a
/// day). Recorded as an IDLE_SNOOZED event.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}:snooze", operation_id = "snoozeCluster", tag = "clusters",
    params(ClusterParams),
    request_body = SnoozeRequest,
    responses((status = 200, description = "What is postponed, and to when", body = Snoozed)))]
pub async fn snooze_cluster(
    s: &AppState,
    caller: &Caller,
    path: &ClusterPath,
    req: Request,
) -> Reply<Snoozed> {
    let ApiJson(body) = ApiJson::<SnoozeRequest>::from_request(req, s).await?;
    Ok(Json(
        service::idle::snooze_cluster(s, caller, path, &body).await?,
    ))
}

/// **snooze** a node pool: no idle action on it before now + `duration` (MEMBER+; at
/// most the policy's `idle.maxSnooze`, default a day). Recorded as an IDLE_SNOOZED event.
#[utoipa::path(post, path = "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}:snooze", operation_id = "snoozeNodePool", tag = "nodePools",
    params(PoolParams),
    request_body = SnoozeRequest,
    responses((status = 200, description = "What is postponed, and to when", body = Snoozed)))]
pub async fn snooze_node_pool(
    s: &AppState,
    caller: &Caller,
    path: &ClusterPath,
    pool: &str,
    req: Request,
) -> Reply<Snoozed> {
    let ApiJson(body) = ApiJson::<SnoozeRequest>::from_request(req, s).await?;
    Ok(Json(
        service::idle::snooze_pool(s, caller, path, pool, &body).await?,
    ))
}
