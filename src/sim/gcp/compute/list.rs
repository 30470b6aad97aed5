//! Compute's list calls over what kineticd creates, as gcloud reads them:
//! `networks.list`, `routers.list` and `routers.aggregatedList` (`gcloud compute routers
//! list`), and `acceleratorTypes.aggregatedList` (`gcloud compute accelerator-types
//! list`), paged with `maxResults`/`pageToken`.
//!
//! Invariant: a list shows exactly what the matching `get` would return for each item
//! at the time of the call (networks and routers once their insert is DONE, until their
//! delete is); a `filter` is accepted and not applied (gcloud filters client-side too).

use axum::Json;
use axum::extract::{Path, Query};

use crate::cloud::gcp::types::compute::{AcceleratorType, Network, Router};
use crate::sim::Sim;
use crate::sim::error::SimError;
use crate::sim::gcp::list::{AggregatedList, ComputeList, PageQuery, under};

use super::catalog;
use super::handlers::{base, check_region};
use super::info::accelerator_type;

pub fn networks(
    sim: &Sim,
    Path(project): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Json<ComputeList<Network>>, SimError> {
    let all = under(&sim.world().compute.networks, &format!("{project}/"));
    let link = format!("{}/global/networks", base(sim, &project));
    let kind = "compute#networkList";
    ComputeList::page(kind, link, all, &q).map(Json)
}

pub fn routers(
    sim: &Sim,
    Path((project, region)): Path<(String, String)>,
    Query(q): Query<PageQuery>,
) -> Result<Json<ComputeList<Router>>, SimError> {
    check_region(&project, &region)?;
    let all = under(
        &sim.world().compute.routers,
        &format!("{project}/{region}/"),
    );
    let link = format!("{}/regions/{region}/routers", base(sim, &project));
    let kind = "compute#routerList";
    ComputeList::page(kind, link, all, &q).map(Json)
}

pub fn aggregated_routers(
    sim: &Sim,
    Path(project): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Json<AggregatedList<Router>>, SimError> {
    let all = under(&sim.world().compute.routers, &format!("{project}/"))
        .into_iter()
        .filter_map(|(region_name, r)| {
            let (region, name) = region_name.split_once('/')?;
            Some((format!("regions/{region}"), name.to_owned(), r))
        })
        .collect();
    let kind = ("compute#routerAggregatedList", "routers");
    aggregated(sim, &project, kind, all, &q)
}

pub fn aggregated_accelerator_types(
    sim: &Sim,
    Path(project): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Json<AggregatedList<AcceleratorType>>, SimError> {
    let base = base(sim, &project);
    let all = catalog::all_zones()
        .into_iter()
        .flat_map(|zone| {
            let zone_url = format!("{base}/zones/{zone}");
            catalog::gpus_in_zone(&zone)
                .into_iter()
                .map(move |g| {
                    let t = accelerator_type(&zone_url, &zone, g);
                    (format!("zones/{zone}"), t.name.clone(), t)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let kind = ("compute#acceleratorTypeAggregatedList", "acceleratorTypes");
    aggregated(sim, &project, kind, all, &q)
}

/// One page of `project`'s aggregated list of `collection` (of `kind`, e.g.
/// `compute#routerAggregatedList` of `routers`): `all` is `(scope, name, item)`.
pub(super) fn aggregated<T>(
    sim: &Sim,
    project: &str,
    (kind, collection): (&str, &'static str),
    all: Vec<(String, String, T)>,
    q: &PageQuery,
) -> Result<Json<AggregatedList<T>>, SimError> {
    let link = format!("{}/aggregated/{collection}", base(sim, project));
    AggregatedList::page((kind, collection), link, all, q).map(Json)
}
