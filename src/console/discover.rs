//! The team's discovery page (`/console/teams/{team}/discover`, any member): the GKE
//! clusters of the team's projects that kineticd does not record, each with whether
//! `up` would adopt it and the command that does, and the unrecorded pools of recorded
//! clusters with the import that records each.
//!
//! Invariant: it reads through `service::adopt::discover`, so the page shows exactly what
//! `GET /v1/teams/{team}:discoverClusters` answers, warnings included; it changes nothing.

use askama::Template;
use axum::response::Response;

use crate::service::adopt::discover::{DiscoveredPool, Discovery};

use super::error::PageError;
use super::identity::Visit;
use super::paths::ConsoleTeam;
use super::view::{self, Chrome};

/// A pool as a line of the page.
pub struct PoolLine {
    pub name: String,
    pub accelerator: String,
    pub verdict: String,
    pub importable: bool,
}

pub struct ClusterLine {
    pub name: String,
    pub location: String,
    pub status: String,
    pub adoptable: bool,
    pub verdict: String,
    /// The `up` that adopts it (for an adoptable cluster).
    pub adopt: String,
    pub pools: Vec<PoolLine>,
}

pub struct UnrecordedLine {
    pub cluster: String,
    pub pool: PoolLine,
    /// The import that records it (for an importable pool).
    pub import: String,
}

#[derive(Template)]
#[template(path = "discover.html")]
struct DiscoverPage {
    chrome: Chrome,
    team: String,
    clusters: Vec<ClusterLine>,
    unrecorded: Vec<UnrecordedLine>,
    warnings: Vec<String>,
}

fn pool_line(p: &DiscoveredPool) -> PoolLine {
    PoolLine {
        name: p.name.clone(),
        accelerator: p.accelerator.clone().unwrap_or_else(|| "none".into()),
        verdict: match (&p.record, &p.reason) {
            (Some(r), _) => format!("imported as {r}"),
            (None, Some(why)) => format!("left as it is: {why}"),
            (None, None) => String::new(),
        },
        importable: p.importable,
    }
}

fn lines(d: &Discovery) -> (Vec<ClusterLine>, Vec<UnrecordedLine>) {
    let clusters = d
        .clusters
        .iter()
        .map(|c| ClusterLine {
            name: c.name.clone(),
            location: c.location.clone(),
            status: c.status.clone().unwrap_or_default(),
            adoptable: c.adoptable,
            verdict: c
                .reason
                .clone()
                .unwrap_or_else(|| "up adopts it: pools kept and recorded".into()),
            adopt: format!("PUT /v1/{} (or kinetic up)", c.name),
            pools: c.node_pools.iter().map(pool_line).collect(),
        })
        .collect();
    let unrecorded = d
        .unrecorded_pools
        .iter()
        .map(|u| UnrecordedLine {
            cluster: u.cluster.clone(),
            import: format!("POST /v1/{}/nodePools/{}:import", u.cluster, u.pool.name),
            pool: pool_line(&u.pool),
        })
        .collect();
    (clusters, unrecorded)
}

/// `GET /console/teams/{team}/discover`.
pub async fn page(Visit(s, v): Visit, ConsoleTeam(id): ConsoleTeam) -> Result<Response, PageError> {
    let svc = &s.services;
    let d =
        crate::service::adopt::discover::discover(&svc.db, &svc.cloud, &svc.prices, &v.caller, &id)
            .await?;
    let (clusters, unrecorded) = lines(&d);
    let here = format!("/console/teams/{}/discover", id.as_str());
    view::render(&DiscoverPage {
        chrome: Chrome::new(&v, format!("Team {} discovery", id.as_str()), here),
        team: id.as_str().to_owned(),
        clusters,
        unrecorded,
        warnings: d.warnings,
    })
}
