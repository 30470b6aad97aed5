//! Home: the caller's teams, their clusters (state, pools, accelerators, estimated cost
//! per hour) and the operations running now.
//!
//! Invariant: what is listed is what the API's `/v1/me`, `/v1/clusters` and
//! `/v1/operations?filter=done=false` show the same caller.

use std::collections::{BTreeMap, BTreeSet};

use askama::Template;
use axum::response::Response;

use crate::model::{Cluster, Operation};
use crate::service::clusters::ListClusters;
use crate::service::{self, Caller, PageRequest};

use super::ConsoleState;
use super::error::PageError;
use super::identity::Visit;
use super::view::{self, Chrome};

pub struct ClusterRow {
    pub name: String,
    pub key: String,
    pub href: String,
    pub project: String,
    pub zone: String,
    pub state: String,
    pub state_class: String,
    pub pools: usize,
    pub accelerators: String,
    pub cost: String,
}

impl ClusterRow {
    pub fn of(c: &Cluster) -> ClusterRow {
        let short = c.name.rsplit('/').next().unwrap_or(&c.name).to_owned();
        let accelerators: BTreeSet<&str> = c
            .node_pools
            .iter()
            .map(|p| p.accelerator.as_str())
            .collect();
        let mut currency = None;
        let (mut lo, mut hi) = (0.0, 0.0);
        for cost in c
            .node_pools
            .iter()
            .filter_map(|p| p.estimated_hourly_cost.as_ref())
        {
            currency.get_or_insert(cost.currency.clone());
            lo += cost.at_min;
            hi += cost.at_max;
        }
        ClusterRow {
            key: format!("{}/{}/{short}", c.project, c.zone),
            href: view::cluster_href(&c.name).unwrap_or_default(),
            name: short,
            project: c.project.clone(),
            zone: c.zone.clone(),
            state: c.state.as_str().to_owned(),
            state_class: view::state_class(c.state.as_str()),
            pools: c.node_pools.len(),
            accelerators: accelerators.into_iter().collect::<Vec<_>>().join(", "),
            cost: currency.map_or_else(|| "–".to_owned(), |cur| view::cost_range(&cur, lo, hi)),
        }
    }
}

pub struct OpRow {
    pub id: String,
    pub href: String,
    pub op_type: String,
    pub target: String,
    pub target_href: Option<String>,
    pub state: String,
    pub state_class: String,
    pub percent: u32,
    pub created_by: String,
    pub created: String,
}

impl OpRow {
    pub fn of(o: &Operation) -> OpRow {
        let m = &o.metadata;
        OpRow {
            id: o
                .name
                .strip_prefix("operations/")
                .unwrap_or(&o.name)
                .to_owned(),
            href: view::operation_href(&o.name),
            op_type: m.op_type.to_string(),
            target: m.target.clone(),
            target_href: view::cluster_href(&m.target),
            state: m.state.as_str().to_owned(),
            state_class: view::state_class(m.state.as_str()),
            percent: m.progress.percent,
            created_by: m.created_by.clone(),
            created: view::short_time(&m.create_time),
        }
    }
}

pub struct TeamGroup {
    pub team: String,
    pub href: String,
    pub role: String,
    pub clusters: Vec<ClusterRow>,
}

#[derive(Template)]
#[template(path = "home.html")]
struct Home {
    chrome: Chrome,
    teams: Vec<TeamGroup>,
    running: Vec<OpRow>,
    cluster_count: usize,
}

/// Every cluster the caller may see (all pages).
pub async fn all_clusters(
    s: &ConsoleState,
    caller: &Caller,
    list: impl Fn() -> ListClusters,
) -> Result<Vec<Cluster>, PageError> {
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let page = PageRequest {
            size: Some(service::page::MAX_PAGE_SIZE),
            token,
            key: s.services.page_key.clone(),
        };
        let page = service::clusters::list(&s.services.db, caller, list(), &page).await?;
        out.extend(page.items);
        match page.next_page_token {
            Some(t) => token = Some(t),
            None => return Ok(out),
        }
    }
}

/// The caller's unfinished operations, newest first (one page).
pub async fn running_operations(
    s: &ConsoleState,
    caller: &Caller,
    filter: &str,
) -> Result<Vec<Operation>, PageError> {
    let page = PageRequest {
        size: Some(100),
        token: None,
        key: s.services.page_key.clone(),
    };
    Ok(
        service::operations::list(&s.services.db, caller, filter, &page)
            .await?
            .items,
    )
}

pub async fn page(Visit(s, v): Visit) -> Result<Response, PageError> {
    let me = service::teams::me(&s.services.db, &v.caller).await?;
    let clusters = all_clusters(&s, &v.caller, ListClusters::default).await?;
    let running = running_operations(&s, &v.caller, "done=false").await?;
    let mut groups: BTreeMap<String, TeamGroup> = BTreeMap::new();
    let group = |team: &str, role: &str| TeamGroup {
        team: team.to_owned(),
        href: format!("/console/teams/{team}"),
        role: role.to_owned(),
        clusters: Vec::new(),
    };
    for t in &me.teams {
        let id = t.team.strip_prefix("teams/").unwrap_or(&t.team);
        groups.insert(id.to_owned(), group(id, t.role.as_str()));
    }
    let cluster_count = clusters.len();
    for c in &clusters {
        let id = c.team.strip_prefix("teams/").unwrap_or(&c.team);
        let role = if v.caller.admin { "OWNER (admin)" } else { "" };
        groups
            .entry(id.to_owned())
            .or_insert_with(|| group(id, role))
            .clusters
            .push(ClusterRow::of(c));
    }
    view::render(&Home {
        chrome: Chrome::new(&v, "Home", "/console/"),
        teams: groups.into_values().collect(),
        running: running.iter().map(OpRow::of).collect(),
        cluster_count,
    })
}
