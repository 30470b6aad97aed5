//! Adoption: clusters and pools that exist in GKE with kinetic's mark but that
//! kineticd has no record of (made by the `kinetic` CLI, or by a deployment that lost
//! its database). `up` adopts such a cluster as Kinetic's second `up` does (every pool
//! kept and imported, `accelerator` ignored, what is missing repaired);
//! `:discoverClusters` lists them; `nodePools/{pool}:import` records one pool of a
//! recorded cluster.
//!
//! Invariant: nothing without kinetic's mark is ever adopted or imported (400
//! RESOURCE_NOT_OURS, as the ensure steps refuse it), and adoption writes records only:
//! no cloud resource is created or changed by the decision to adopt.

pub mod discover;
pub mod import;
pub mod pool;

use crate::cloud::Cloud;
use crate::cloud::gcp::types::container::Cluster as GkeCluster;
use crate::domain::RpcCode;
use crate::domain::pricing::PriceTable;
use crate::domain::resource_names::{ClusterNames, is_ours};

use super::{Error, Result};

/// A GKE cluster found without a record, and what becomes of its pools.
pub struct Found {
    pub gke: GkeCluster,
    pub pools: import::Sorted,
}

/// The GKE cluster `n` when it exists (`None` when GKE has none, or the project's GKE
/// API is not enabled, so it cannot have one): 400 RESOURCE_NOT_OURS when it lacks
/// kinetic's mark, 503 CLOUD_UNAVAILABLE when GKE cannot be read.
pub async fn found(cloud: &Cloud, n: &ClusterNames, prices: &PriceTable) -> Result<Option<Found>> {
    let gke = match cloud
        .gcp
        .container
        .get_cluster(&n.project, &n.zone, &n.cluster)
        .await
    {
        Ok(c) => c,
        Err(e) if e.is_not_found() || e.is_service_disabled() => return Ok(None),
        Err(e) => return Err(super::live::gke_unreadable(&e)),
    };
    if !is_ours(&gke.resource_labels) {
        return Err(not_ours(
            "GKE cluster",
            &n.gke_cluster(),
            "it has no label kinetic=true",
        ));
    }
    let pools = import::sort(&gke.node_pools, &n.zone, prices);
    Ok(Some(Found { gke, pools }))
}

/// 400 RESOURCE_NOT_OURS: `what` exists without kinetic's mark.
pub fn not_ours(what: &str, name: &str, why: &str) -> Error {
    Error::new(
        RpcCode::FailedPrecondition,
        "RESOURCE_NOT_OURS",
        format!(
            "{what} {name} already exists but was not created by kinetic ({why}): kineticd adopts only what kinetic made; delete or rename it, or use another name"
        ),
    )
    .with("resource", name)
}
