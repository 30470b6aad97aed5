//! Compute's list calls over what kineticd creates, as gcloud reads them:
//! `networks.list`, `routers.list` and `routers.aggregatedList` (`gcloud compute routers
//! list`), and `acceleratorTypes.aggregatedList` (`gcloud compute accelerator-types
//! list`), paged with `maxResults`/`pageToken`.
//!
//! Invariant: a list shows exactly what the matching `get` would return for each item
//! at the time of the call (networks and routers once their insert is DONE, until their
//! delete is); a `filter` is accepted and not applied (gcloud filters client-side too).

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::Response;

use crate::sim::Sim;
use crate::sim::gcp::list::{AggregatedList, ComputeList, PageQuery, under};

use super::catalog;
use super::handlers::{F, SVC, base, check_region};
use super::info::accelerator_type;

pub async fn networks(
    State(sim): State<Sim>,
    Path(project): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    sim.serve((SVC, F), "networks.list", || {
        let all = under(&sim.world().compute.networks, &format!("{project}/"));
        let link = format!("{}/global/networks", base(&sim, &project));
        let kind = "compute#networkList";
        ComputeList::page(kind, link, all, &q).map(Json)
    })
    .await
}

pub async fn routers(
    State(sim): State<Sim>,
    Path((project, region)): Path<(String, String)>,
    Query(q): Query<PageQuery>,
) -> Response {
    sim.serve((SVC, F), "routers.list", || {
        check_region(&project, &region)?;
        let all = under(
            &sim.world().compute.routers,
            &format!("{project}/{region}/"),
        );
        let link = format!("{}/regions/{region}/routers", base(&sim, &project));
        let kind = "compute#routerList";
        ComputeList::page(kind, link, all, &q).map(Json)
    })
    .await
}

pub async fn aggregated_routers(
    State(sim): State<Sim>,
    Path(project): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    sim.serve((SVC, F), "routers.aggregatedList", || {
        let all = under(&sim.world().compute.routers, &format!("{project}/"))
            .into_iter()
            .filter_map(|(region_name, r)| {
                let (region, name) = region_name.split_once('/')?;
                Some((format!("regions/{region}"), name.to_owned(), r))
            })
            .collect();
        let link = format!("{}/aggregated/routers", base(&sim, &project));
        let kind = ("compute#routerAggregatedList", "routers");
        AggregatedList::page(kind, link, all, &q).map(Json)
    })
    .await
}

pub async fn aggregated_accelerator_types(
    State(sim): State<Sim>,
    Path(project): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    sim.serve((SVC, F), "acceleratorTypes.aggregatedList", || {
        let base = base(&sim, &project);
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
        let link = format!("{base}/aggregated/acceleratorTypes");
        let kind = ("compute#acceleratorTypeAggregatedList", "acceleratorTypes");
        AggregatedList::page(kind, link, all, &q).map(Json)
    })
    .await
}
