//! Artifact Registry list calls as gcloud makes them: `repositories.list` in one
//! location, and `locations.list` (v1, and the v1beta2 path `gcloud artifacts
//! repositories list` without `--location` reads first: the Compute catalogue's regions
//! and the multi-regions), paged with `pageSize` and `pageToken`.
//!
//! Invariant: a listed repository is exactly what `repositories.get` returns for it
//! (from the moment its create is done until its delete is); a `filter` or `orderBy` is
//! accepted and not applied (gcloud filters and sorts client-side too).

use axum::Json;
use axum::extract::{Path, Query};
use serde::Serialize;

use super::{MULTI_REGIONS, Phase, check_location};
use crate::cloud::gcp::types::artifact_registry::Repository;
use crate::sim::Sim;
use crate::sim::error::SimError;
use crate::sim::gcp::compute::catalog;
use crate::sim::gcp::list::{AipList, Limits, PageQuery, aip158};

const LIMITS: Limits = aip158(1000, 1000);

/// `google.cloud.location.Location`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Location {
    name: String,
    location_id: String,
}

pub(super) fn repositories(
    sim: &Sim,
    Path((project, location)): Path<(String, String)>,
    Query(q): Query<PageQuery>,
) -> Result<Json<AipList<Repository>>, SimError> {
    check_location(&location)?;
    let parent = format!("projects/{project}/locations/{location}/repositories/");
    let all = sim
        .world()
        .artifact_registry
        .repositories
        .iter()
        .filter(|(name, r)| name.starts_with(&parent) && r.phase != Phase::Creating)
        .map(|(name, r)| (name.clone(), r.repository.clone()))
        .collect();
    AipList::page(&LIMITS, "repositories", all, &q).map(Json)
}

pub(super) fn locations(
    _: &Sim,
    Path(project): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Json<AipList<Location>>, SimError> {
    let ids = catalog::REGIONS
        .iter()
        .map(|(region, _)| *region)
        .chain(MULTI_REGIONS);
    let all = ids
        .map(|id| {
            let location = Location {
                name: format!("projects/{project}/locations/{id}"),
                location_id: id.to_owned(),
            };
            (id.to_owned(), location)
        })
        .collect();
    AipList::page(&LIMITS, "locations", all, &q).map(Json)
}
