//! Reading cluster and node-pool records. Clusters are created by `up` (an operation);
//! here they are only read.
//!
//! Invariant: a cluster is visible only through the team that owns its project; anyone
//! else gets 404 PROJECT_NOT_FOUND / CLUSTER_NOT_FOUND, never a hint it exists.

use crate::domain::{ClusterName, ClusterState, PoolId, ProjectId, Role, TeamId, ZoneName};
use crate::model::{self, Cluster, ClusterResources, NodePool};
use crate::store::{
    self, Db, Row, StoreError,
    clusters::{ClusterFilter, ClusterKey, ClusterRecord, Pick},
    node_pools::NodePoolRecord,
};

use super::access::{self, Caller};
use super::{Error, Page, PageRequest, Result};

pub fn cluster_name(project: &str, zone: &str, name: &str) -> String {
    format!("projects/{project}/zones/{zone}/clusters/{name}")
}

/// A pool's AIP-154 etag: every change to its record moves `update_time`.
pub fn pool_etag(p: &NodePoolRecord) -> String {
    model::etag(0, p.update_time)
}

pub fn render_pool(c: &ClusterRecord, p: NodePoolRecord) -> NodePool {
    let mut pool = NodePool::from(&p.spec);
    pool.etag = pool_etag(&p);
    pool.name = format!(
        "{}/nodePools/{}",
        cluster_name(&c.project_id, &c.zone, &c.name),
        p.pool_id
    );
    pool.pool_id = p.pool_id;
    pool.state = p.state;
    pool.create_time = model::timestamp(p.create_time);
    pool
}

/// The API's cluster for its record; resources that do not decode are a corrupt record.
pub fn render_cluster(c: ClusterRecord, pools: Vec<NodePoolRecord>) -> Result<Cluster> {
    let stored = Row {
        table: "clusters",
        id: &c.id,
    };
    let resources: ClusterResources = stored
        .json("resources", c.resources.clone())
        .map_err(StoreError::from)?;
    let node_pools = pools.into_iter().map(|p| render_pool(&c, p)).collect();
    let region = ZoneName::parse(&c.zone)
        .map(|z| z.region().to_owned())
        .unwrap_or_default();
    Ok(Cluster {
        name: cluster_name(&c.project_id, &c.zone, &c.name),
        region,
        cluster_id: c.id.to_string(),
        team: format!("teams/{}", c.team_id),
        state: c.state,
        force_destroy: c.spec.force_destroy,
        resources,
        endpoint: c.endpoint,
        node_pools,
        create_time: model::timestamp(c.create_time),
        update_time: model::timestamp(c.update_time),
        created_by: c.created_by,
        reconciling: c.reconciling,
        expire_time: c.expire_time.map(model::timestamp),
        etag: model::etag(c.version, c.update_time),
        project: c.project_id,
        zone: c.zone,
    })
}

fn project_not_found(project: &str) -> Error {
    Error::not_found(
        "PROJECT_NOT_FOUND",
        format!("project {project} does not belong to any of your teams: ask a team ADMIN to add it (PATCH /v1/teams/TEAM)"),
    )
    .with("project", project)
}

/// The team owning `project` if the caller holds at least `need` in it.
pub async fn project_team(
    db: &Db,
    caller: &Caller,
    project: &ProjectId,
    need: Role,
    action: &str,
) -> Result<String> {
    let team = store::teams::project_team(db, project.as_str())
        .await?
        .ok_or_else(|| project_not_found(project.as_str()))?;
    let role = access::team_role(db, caller, &team)
        .await?
        .ok_or_else(|| project_not_found(project.as_str()))?;
    access::check(role, need, action, &team)?;
    Ok(team)
}

pub fn cluster_not_found(name: &str) -> Error {
    Error::not_found("CLUSTER_NOT_FOUND", format!("cluster {name} not found")).with("cluster", name)
}

/// Parsed `{project}/{zone}/{cluster}` path parts.
pub struct ClusterPath {
    pub project: ProjectId,
    pub zone: ZoneName,
    pub cluster: ClusterName,
}

impl ClusterPath {
    /// (project, zone, cluster), as the store looks a cluster up.
    pub fn key(&self) -> [&str; 3] {
        [
            self.project.as_str(),
            self.zone.as_str(),
            self.cluster.as_str(),
        ]
    }

    pub fn parse(project: &str, zone: &str, cluster: &str) -> Result<Self> {
        Ok(ClusterPath {
            project: ProjectId::parse(project)?,
            zone: ZoneName::parse(zone)?,
            cluster: ClusterName::parse(cluster)?,
        })
    }

    pub fn name(&self) -> String {
        cluster_name(
            self.project.as_str(),
            self.zone.as_str(),
            self.cluster.as_str(),
        )
    }
}

/// The cluster record the caller may read (404 otherwise).
pub async fn record(db: &Db, caller: &Caller, path: &ClusterPath) -> Result<ClusterRecord> {
    project_team(db, caller, &path.project, Role::Viewer, "reading clusters").await?;
    let c = store::clusters::by_name(db, Pick::LiveOrLastDeleted, path.key())
        .await?
        .ok_or_else(|| cluster_not_found(&path.name()))?;
    // The project may have changed hands since the record was made.
    if access::team_role(db, caller, &c.team_id).await?.is_none() {
        return Err(cluster_not_found(&path.name()));
    }
    Ok(c)
}

pub async fn get(db: &Db, caller: &Caller, path: &ClusterPath) -> Result<Cluster> {
    // One statement on the way to a 200: the record, its pools and the caller's roles.
    let parts = [
        path.project.as_str(),
        path.zone.as_str(),
        path.cluster.as_str(),
    ];
    if let Some(r) = store::reads::cluster(db, parts, caller.email.as_str()).await? {
        let role = access::role_from(caller, r.project_role)
            .ok_or_else(|| project_not_found(path.project.as_str()))?;
        access::check(role, Role::Viewer, "reading clusters", &r.project_team)?;
        // The project may have changed hands since the record was made.
        if access::role_from(caller, r.record_role).is_none() {
            return Err(cluster_not_found(&path.name()));
        }
        return render_cluster(r.cluster, r.pools);
    }
    // No team owns the project, or no record has the name: the step-by-step reads say
    // which, in the order a caller may learn it.
    let c = record(db, caller, path).await?;
    let pools = store::node_pools::list(db, c.id, None, 10_000).await?;
    render_cluster(c, pools)
}

/// What `GET /v1/clusters` and `GET .../zones/{zone}/clusters` filter on, parsed.
#[derive(Debug, Default)]
pub struct ListClusters {
    pub team: Option<TeamId>,
    pub state: Option<ClusterState>,
    pub project: Option<ProjectId>,
    pub zone: Option<ZoneName>,
}

impl ListClusters {
    /// `team` (`ml` or `teams/ml`) and `state` as sent in a query; empty means "any".
    pub fn from_query(team: Option<&str>, state: Option<&str>) -> Result<ListClusters> {
        fn given(v: Option<&str>) -> Option<&str> {
            v.map(str::trim).filter(|v| !v.is_empty())
        }
        let team = given(team)
            .map(|t| TeamId::parse(t.strip_prefix("teams/").unwrap_or(t)))
            .transpose()?;
        // An empty state is not a state (the document's enum has no "").
        let state = state
            .map(str::trim)
            .map(ClusterState::parse)
            .transpose()
            .map_err(|e| {
                Error::invalid(
                    "INVALID_FILTER",
                    format!("state {:?} is not one of {}", e.value, e.known),
                )
            })?;
        Ok(ListClusters {
            team,
            state,
            ..ListClusters::default()
        })
    }
}

pub async fn list(
    db: &Db,
    caller: &Caller,
    q: ListClusters,
    page: &PageRequest,
) -> Result<Page<Cluster>> {
    if let Some(p) = &q.project {
        project_team(db, caller, p, Role::Viewer, "listing clusters").await?;
    }
    if let Some(t) = &q.team {
        access::require(db, caller, t.as_str(), Role::Viewer, "listing clusters").await?;
    }
    let filter = ClusterFilter {
        teams: None,
        member: access::visible_member(caller),
        team: q.team.map(|t| t.to_string()),
        state: q.state,
        project: q.project.map(|p| p.to_string()),
        zone: q.zone.map(|z| z.to_string()),
    };
    let scope = format!(
        "clusters?{:?}{:?}{:?}{:?}",
        filter.team,
        filter.state.map(ClusterState::as_str),
        filter.project,
        filter.zone
    );
    let after: Option<ClusterKey> = page.after(&scope)?;
    // One statement: the page (visibility looked up inside it) with its pools.
    let rows = store::reads::cluster_page(db, &filter, after.as_ref(), page.limit()? + 1).await?;
    let page = page.page(
        &scope,
        rows,
        |(c, _)| (c.project_id.clone(), c.zone.clone(), c.name.clone(), c.id),
        |r| r,
    )?;
    let items = page
        .items
        .into_iter()
        .map(|(c, pools)| render_cluster(c, pools))
        .collect::<Result<_>>()?;
    Ok(Page {
        items,
        next_page_token: page.next_page_token,
    })
}

pub async fn list_pools(
    db: &Db,
    caller: &Caller,
    path: &ClusterPath,
    page: &PageRequest,
) -> Result<Page<NodePool>> {
    let c = record(db, caller, path).await?;
    let scope = format!("pools/{}", c.id);
    let after: Option<String> = page.after(&scope)?;
    let rows = store::node_pools::list(db, c.id, after.as_deref(), page.limit()? + 1).await?;
    page.page(&scope, rows, |p| p.pool_id.clone(), |p| render_pool(&c, p))
}

pub async fn get_pool(
    db: &Db,
    caller: &Caller,
    path: &ClusterPath,
    pool: &PoolId,
) -> Result<NodePool> {
    let c = record(db, caller, path).await?;
    let p = store::node_pools::get(db, c.id, pool.as_str())
        .await?
        .ok_or_else(|| {
            Error::not_found(
                "NODE_POOL_NOT_FOUND",
                format!("node pool {}/nodePools/{pool} not found", path.name()),
            )
        })?;
    Ok(render_pool(&c, p))
}
