//! How the simulated GKE names and finds what a request addresses: the service's error
//! flavor, the store keys and resource names of clusters and node pools, and the
//! lookups that answer GKE's 404 for a missing one.
//!
//! Invariant: a cluster is stored under [`key`] `{project}/{location}/{cluster}` and
//! named `projects/{p}/locations/{l}/clusters/{c}` in every message; a lookup never
//! changes the world.

use crate::sim::error::{Flavor, SimError};
use crate::sim::world::World;

use super::model::{ClusterRec, PoolRec};

pub(super) const SVC: &str = "container";
pub(super) const F: Flavor = Flavor::Aip193;

/// `(project, location, cluster)` of a request.
pub(super) type At<'a> = (&'a str, &'a str, &'a str);

pub(super) fn invalid(msg: impl Into<String>) -> SimError {
    SimError::invalid(F, msg)
}

/// The request's `field`, or GKE's 400 when it is missing.
pub(super) fn required<T>(value: Option<T>, field: &str) -> Result<T, SimError> {
    value.ok_or_else(|| invalid(format!("{field} is required.")))
}

pub(super) fn not_found(what: &str) -> SimError {
    SimError::new(
        F,
        404,
        "NOT_FOUND",
        "NOT_FOUND",
        format!("Not found: {what}."),
    )
}

pub(super) fn key(project: &str, location: &str, cluster: &str) -> String {
    format!("{project}/{location}/{cluster}")
}

pub(super) fn cluster_ref(project: &str, location: &str, cluster: &str) -> String {
    format!("projects/{project}/locations/{location}/clusters/{cluster}")
}

/// The cluster `(project, location, cluster)`, or GKE's 404 for it.
pub(super) fn find_cluster<'w>(
    w: &'w World,
    project: &str,
    location: &str,
    cluster: &str,
) -> Result<&'w ClusterRec, SimError> {
    let found = w.container.clusters.get(&key(project, location, cluster));
    found.ok_or_else(|| not_found(&cluster_ref(project, location, cluster)))
}

/// The node pool `pool` of a cluster, with that cluster, or GKE's 404 for the pool.
pub(super) fn find_pool<'w>(
    w: &'w World,
    (project, location, cluster): At<'_>,
    pool: &str,
) -> Result<(&'w ClusterRec, &'w PoolRec), SimError> {
    let found = w.container.clusters.get(&key(project, location, cluster));
    found
        .and_then(|c| c.pool(pool).map(|p| (c, p)))
        .ok_or_else(|| {
            let cluster = cluster_ref(project, location, cluster);
            not_found(&format!("{cluster}/nodePools/{pool}"))
        })
}
