//! `GET /v1/teams/{team}:discoverClusters`: the GKE clusters in the team's projects that
//! kineticd has no record of, with their pools and what `up` would adopt, and the
//! unrecorded pools of the clusters it does record (each offered for `:import`).
//!
//! Invariant: every member (VIEWER and up) reads; it changes nothing. Each project is
//! listed once (`clusters.list` of every location), all projects at once under one
//! deadline; a project that cannot be read is a warning naming it, never a failure of
//! the whole answer nor an empty list passed off as "nothing to adopt".

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Serialize;
use utoipa::ToSchema;

use crate::cloud::Cloud;
use crate::cloud::gcp::types::container::{Cluster as GkeCluster, NodePool as GkePool};
use crate::domain::pricing::PriceTable;
use crate::domain::resource_names::is_ours;
use crate::domain::{PoolState, Role, TeamId};
use crate::store::{self, Db, clusters::ClusterFilter};

use super::super::Result;
use super::super::access::{self, Caller};
use super::import::{self, DEFAULT_POOL};

/// How long the projects' cluster lists may take together.
const DEADLINE: Duration = Duration::from_secs(10);

/// A GKE pool as discovery sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveredPool {
    /// The GKE node pool's name (its pool id once imported).
    pub name: String,
    /// The catalogue accelerator its machine matches (`gpu-l4x2`), when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub accelerator: Option<String>,
    /// It would be imported (by `up` of its cluster, or `:import`).
    pub importable: bool,
    /// Why it cannot be, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reason: Option<String>,
    /// What its record would say (`gpu-l4, 2..12 nodes, SPOT`), when importable.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub record: Option<String>,
    /// GKE's status (RUNNING, PROVISIONING, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub status: Option<String>,
}

/// A GKE cluster kineticd has no record of.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveredCluster {
    /// `projects/{p}/zones/{z}/clusters/{c}`: the path `up` adopts it at.
    pub name: String,
    pub project: String,
    /// GKE's location (a zone; a region for a regional cluster).
    pub location: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub status: Option<String>,
    /// `up` of `name` would adopt it (it carries kinetic's mark and is zonal).
    pub adoptable: bool,
    /// Why not, when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reason: Option<String>,
    /// Every pool but GKE's default pool.
    pub node_pools: Vec<DiscoveredPool>,
}

/// A pool GKE has on a cluster kineticd records, without a record of its own.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnrecordedPool {
    /// The recorded cluster, `projects/{p}/zones/{z}/clusters/{c}`.
    pub cluster: String,
    pub pool: DiscoveredPool,
}

/// `GET /v1/teams/{team}:discoverClusters`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Discovery {
    pub clusters: Vec<DiscoveredCluster>,
    /// Pools offered for `POST .../nodePools/{pool}:import`.
    pub unrecorded_pools: Vec<UnrecordedPool>,
    /// What could not be read (a project's GKE), so the lists may be short.
    pub warnings: Vec<String>,
}

/// What team `team`'s projects hold that kineticd does not record.
pub async fn discover(
    db: &Db,
    cloud: &Cloud,
    prices: &PriceTable,
    caller: &Caller,
    team: &TeamId,
) -> Result<Discovery> {
    let team = team.as_str();
    access::require(db, caller, team, Role::Viewer, "discovering clusters").await?;
    let projects = store::teams::get_team(db, team)
        .await?
        .ok_or_else(|| access::team_not_found(team))?
        .projects;
    let lists = tokio::time::timeout(
        DEADLINE,
        futures::future::join_all(
            projects
                .iter()
                .map(|p| cloud.gcp.container.list_clusters(p, "-")),
        ),
    )
    .await;
    let mut out = Discovery {
        clusters: Vec::new(),
        unrecorded_pools: Vec::new(),
        warnings: Vec::new(),
    };
    let Ok(lists) = lists else {
        out.warnings.push(format!(
            "GKE did not list the clusters of {} within {}s: nothing could be discovered",
            projects.join(", "),
            DEADLINE.as_secs()
        ));
        return Ok(out);
    };
    for (project, listed) in projects.iter().zip(lists) {
        match listed {
            Ok(r) => {
                for z in &r.missing_zones {
                    out.warnings.push(format!(
                        "GKE could not list the clusters of {project} in {z}"
                    ));
                }
                sort_project(db, prices, project, r.clusters, &mut out).await?;
            }
            Err(e) if e.is_service_disabled() => {}
            Err(e) => out.warnings.push(format!(
                "the clusters of {project} could not be listed: GKE answered {} {} ({})",
                e.http_status, e.reason, e.message
            )),
        }
    }
    Ok(out)
}

/// Sort one project's GKE clusters into unrecorded clusters and unrecorded pools of
/// recorded ones.
async fn sort_project(
    db: &Db,
    prices: &PriceTable,
    project: &str,
    gke: Vec<GkeCluster>,
    out: &mut Discovery,
) -> Result<()> {
    let filter = ClusterFilter {
        project: Some(project.to_owned()),
        ..ClusterFilter::default()
    };
    let recorded: BTreeMap<(String, String), uuid::Uuid> =
        store::clusters::list(db, &filter, None, 10_000)
            .await?
            .into_iter()
            .map(|c| ((c.zone, c.name), c.id))
            .collect();
    for c in gke {
        let location = c.location.clone().unwrap_or_default();
        let name = format!("projects/{project}/zones/{location}/clusters/{}", c.name);
        match recorded.get(&(location.clone(), c.name.clone())) {
            Some(id) => {
                let pools = store::node_pools::list(db, *id, None, 10_000).await?;
                let known: BTreeSet<String> = pools
                    .into_iter()
                    .filter(|p| p.state != PoolState::Deleted)
                    .map(|p| p.pool_id)
                    .collect();
                for p in c.node_pools.iter().filter(|p| !known.contains(&p.name)) {
                    if p.name != DEFAULT_POOL {
                        out.unrecorded_pools.push(UnrecordedPool {
                            cluster: name.clone(),
                            pool: pool_of(p, &c.node_pools, &location, prices),
                        });
                    }
                }
            }
            None => out
                .clusters
                .push(cluster_of(project, &location, name, &c, prices)),
        }
    }
    Ok(())
}

fn cluster_of(
    project: &str,
    location: &str,
    name: String,
    c: &GkeCluster,
    prices: &PriceTable,
) -> DiscoveredCluster {
    let zonal = crate::domain::ZoneName::parse(location).is_ok();
    let reason = if !is_ours(&c.resource_labels) {
        Some("it has no label kinetic=true: it was not made by kinetic".to_owned())
    } else if !zonal {
        Some(format!(
            "it is regional ({location}): kineticd manages zonal clusters"
        ))
    } else {
        None
    };
    DiscoveredCluster {
        name,
        project: project.to_owned(),
        location: location.to_owned(),
        status: c.status.clone(),
        adoptable: reason.is_none(),
        reason,
        node_pools: c
            .node_pools
            .iter()
            .filter(|p| p.name != DEFAULT_POOL)
            .map(|p| pool_of(p, &c.node_pools, location, prices))
            .collect(),
    }
}

fn pool_of(p: &GkePool, all: &[GkePool], zone: &str, prices: &PriceTable) -> DiscoveredPool {
    let imported = import::record_of(p, all, zone, prices);
    DiscoveredPool {
        name: p.name.clone(),
        accelerator: import::accelerator_of(p).map(|r| r.base_name()),
        importable: imported.is_ok(),
        reason: imported.as_ref().err().map(ToString::to_string),
        record: imported.ok().map(|r| crate::plan::up::adopt::summary(&r)),
        status: p.status.clone(),
    }
}
