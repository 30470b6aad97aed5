//! GKE's list calls as gcloud makes them: `clusters.list` and `operations.list` for one
//! location or for every location (`locations/-`), answered whole (GKE does not page
//! them) with an empty `missingZones`.
//!
//! Invariant: a list shows each cluster exactly as `clusters.get` would at the same
//! moment, and each operation as `operations.get` would; nothing of another project.

use axum::Json;
use axum::extract::Path;
use serde::Serialize;

use crate::cloud::gcp::types::container::{Cluster, Operation};
use crate::sim::Sim;

/// `ListClustersResponse`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListClustersResponse {
    pub clusters: Vec<Cluster>,
    pub missing_zones: Vec<String>,
}

/// `ListOperationsResponse`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListOperationsResponse {
    pub operations: Vec<Operation>,
    pub missing_zones: Vec<String>,
}

/// Whether `location` is what the caller asked for (`-`: every location).
fn asked(location: &str, wanted: &str) -> bool {
    wanted == "-" || location == wanted
}

pub fn clusters(
    sim: &Sim,
    Path((project, location)): Path<(String, String)>,
) -> Json<ListClustersResponse> {
    let w = sim.world();
    let clusters = w
        .container
        .clusters
        .values()
        .filter(|c| c.project == project && asked(&c.location, &location))
        .map(|c| c.to_wire(&w.kube))
        .collect();
    Json(ListClustersResponse {
        clusters,
        missing_zones: Vec::new(),
    })
}

pub fn operations(
    sim: &Sim,
    Path((project, location)): Path<(String, String)>,
) -> Json<ListOperationsResponse> {
    let w = sim.world();
    let operations = w
        .container
        .operations
        .iter()
        .filter(|o| {
            o.project == project && asked(o.op.location.as_deref().unwrap_or(""), &location)
        })
        .map(|o| o.op.clone())
        .collect();
    Json(ListOperationsResponse {
        operations,
        missing_zones: Vec::new(),
    })
}
