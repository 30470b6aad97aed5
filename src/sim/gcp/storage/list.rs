//! Storage `buckets.list` (`gcloud storage buckets list`): the buckets of one project,
//! optionally those whose name starts with `prefix`, paged with `maxResults`/`pageToken`.
//!
//! Invariant: a listed bucket is exactly what `buckets.get` returns for it; buckets of
//! other projects never appear, though they share one namespace.

use axum::Json;
use axum::extract::Query;
use serde::{Deserialize, Serialize};

use super::{F, storage_error};
use crate::cloud::gcp::types::storage::Bucket;
use crate::sim::Sim;
use crate::sim::error::SimError;
use crate::sim::gcp::list::{Limits, PageQuery};

const LIMITS: Limits = Limits {
    field: "maxResults",
    default: 1000,
    max: 1000,
    refuse_above_max: false,
    flavor: F,
};

#[derive(Debug, Default, Deserialize)]
pub(super) struct Scope {
    project: Option<String>,
    prefix: Option<String>,
}

/// `Buckets`: one page.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Buckets {
    kind: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    items: Vec<Bucket>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_page_token: Option<String>,
}

pub(super) fn buckets(
    sim: &Sim,
    Query(scope): Query<Scope>,
    Query(q): Query<PageQuery>,
) -> Result<Json<Buckets>, SimError> {
    let project = scope
        .project
        .as_deref()
        .filter(|p| !p.is_empty())
        .ok_or_else(|| storage_error(400, "required", "Required parameter: project"))?;
    let prefix = scope.prefix.as_deref().unwrap_or("");
    let all = sim
        .world()
        .storage
        .buckets
        .values()
        .filter(|r| r.project == project && r.bucket.name.starts_with(prefix))
        .map(|r| (r.bucket.name.clone(), r.bucket.clone()))
        .collect();
    let page = LIMITS.page(all, &q)?;
    Ok(Json(Buckets {
        kind: "storage#buckets",
        items: page.items,
        next_page_token: page.next_page_token,
    }))
}
