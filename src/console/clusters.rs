//! The cluster page: the record, the live status with its drift, the node pools (kind,
//! accelerator, min/max, spot, failover pair, state) and the capacity picture: one bar
//! per node with its accelerators used and free, grouped by pool, stranded ones marked,
//! and the pending pods with why each waits.
//!
//! Invariant: the record read decides visibility (404 for outsiders, like the API);
//! the live reads (status, capacity) may fail on their own without failing the page:
//! each shows its service error in place.

use askama::Template;
use axum::response::Response;

use crate::domain::ClusterState;
use crate::model::capacity::{ClusterCapacity, Counts, NodeCapacity};
use crate::model::status::ClusterStatus;
use crate::model::{Cluster, NodePool};
use crate::service::{self};

use super::error::PageError;
use super::identity::Visit;
use super::paths::ConsoleCluster;
use super::view::{self, Chrome};

pub struct PoolRow {
    pub id: String,
    pub kind: String,
    pub accelerator: String,
    pub machine_type: String,
    pub min: i64,
    pub max: i64,
    pub spot: bool,
    pub failover: String,
    pub state: String,
    pub state_class: String,
    pub gke: String,
    pub nodes: String,
    pub cost: String,
    pub remove_href: String,
}

pub struct Slot {
    pub x: String,
    pub w: String,
    pub class: &'static str,
}

pub struct NodeBar {
    pub name: String,
    pub used: u64,
    pub free: u64,
    pub stranded: u64,
    pub allocatable: u64,
    pub schedulable: bool,
    pub slots: Vec<Slot>,
    pub label: String,
}

pub struct PoolGroup {
    pub id: String,
    pub accelerator: String,
    pub summary: String,
    pub nodes: Vec<NodeBar>,
}

pub struct PendingRow {
    pub pod: String,
    pub resource: String,
    pub requested: u64,
    pub reason: String,
    pub message: String,
}

pub struct CapacityView {
    pub summary: String,
    pub pools: Vec<PoolGroup>,
    pub pending: Vec<PendingRow>,
}

pub struct DriftRow {
    pub resource: String,
    pub resource_type: String,
    pub problem: String,
    pub message: String,
}

pub struct ResourceRow {
    pub what: &'static str,
    pub name: String,
    pub exists: String,
}

/// The "Connect" disclosure: the commands that write a kubeconfig for the cluster (shown
/// only while it is RUNNING or RECONCILING, when credentials are given).
pub struct ConnectView {
    pub gcloud: String,
    pub kn: String,
    pub curl: String,
}

impl ConnectView {
    fn of(c: &Cluster, cluster: &str) -> Option<ConnectView> {
        if !matches!(c.state, ClusterState::Running | ClusterState::Reconciling) {
            return None;
        }
        Some(ConnectView {
            gcloud: format!(
                "gcloud container clusters get-credentials {cluster} --zone {} --project {}",
                c.zone, c.project
            ),
            kn: format!("kn kubeconfig {} --write", c.name),
            curl: format!(
                "curl -fsS -H \"Authorization: Bearer $TOKEN\" \"$KN_URL/v1/{}/credentials\" > kubeconfig.yaml",
                c.name
            ),
        })
    }
}

pub struct StatusView {
    pub gke: String,
    pub version: String,
    pub kubernetes: String,
    pub resources: Vec<ResourceRow>,
    pub drift: Vec<DriftRow>,
}

#[derive(Template)]
#[template(path = "cluster.html")]
struct ClusterPage {
    chrome: Chrome,
    name: String,
    full_name: String,
    project: String,
    zone: String,
    team: String,
    state: String,
    state_class: String,
    created_by: String,
    pools: Vec<PoolRow>,
    status: Result<StatusView, PageError>,
    capacity: Result<CapacityView, PageError>,
    connect: Option<ConnectView>,
    base: String,
    up_href: String,
}

/// Percent string for SVG lengths.
fn pct(v: f64) -> String {
    format!("{v:.3}%")
}

/// The slots of one node's bar: used, then stranded, then other free accelerators.
pub fn slots(c: &Counts) -> Vec<Slot> {
    let total = c.allocatable.max(1) as f64;
    let stranded = c.stranded.min(c.free);
    let parts = [
        (c.requested.min(c.allocatable), "slot used"),
        (stranded, "slot stranded"),
        (c.free - stranded, "slot free"),
    ];
    let mut out = Vec::new();
    let mut at = 0u64;
    // One rect per accelerator while they are few enough to tell apart, else one per part.
    let per_slot = c.allocatable <= 64;
    for (n, class) in parts {
        if per_slot {
            for i in 0..n {
                out.push(Slot {
                    x: pct((at + i) as f64 / total * 100.0),
                    w: pct(100.0 / total * 0.92),
                    class,
                });
            }
        } else if n > 0 {
            out.push(Slot {
                x: pct(at as f64 / total * 100.0),
                w: pct(n as f64 / total * 100.0),
                class,
            });
        }
        at += n;
    }
    out
}

fn node_bar(n: &NodeCapacity) -> NodeBar {
    let c = &n.counts;
    NodeBar {
        label: format!(
            "{}: {} of {} used, {} free{}",
            n.name,
            c.requested,
            c.allocatable,
            c.free,
            if c.stranded > 0 {
                format!(", {} stranded", c.stranded)
            } else {
                String::new()
            }
        ),
        name: n.name.clone(),
        used: c.requested,
        free: c.free,
        stranded: c.stranded,
        allocatable: c.allocatable,
        schedulable: n.schedulable,
        slots: slots(c),
    }
}

pub fn capacity_view(c: &ClusterCapacity) -> CapacityView {
    CapacityView {
        summary: c.summary.text.clone(),
        pools: c
            .node_pools
            .iter()
            .map(|p| PoolGroup {
                id: p.pool_id.clone(),
                accelerator: p.accelerator_type.clone(),
                summary: format!(
                    "{} node(s){}, {} of {} {} used, {} free, {} stranded",
                    p.node_count,
                    p.max_nodes
                        .map_or_else(String::new, |m| format!(" of max {m}")),
                    p.counts.requested,
                    p.counts.allocatable,
                    p.resource,
                    p.counts.free,
                    p.counts.stranded
                ),
                nodes: p.nodes.iter().map(node_bar).collect(),
            })
            .collect(),
        pending: c
            .pending_pods
            .iter()
            .map(|p| PendingRow {
                pod: format!("{}/{}", p.namespace, p.name),
                resource: p.resource.clone(),
                requested: p.requested,
                reason: wire_name(p.reason),
                message: p.message.clone(),
            })
            .collect(),
    }
}

fn exists(e: Option<bool>, err: &Option<String>) -> String {
    match (e, err) {
        (Some(true), _) => "present".to_owned(),
        (Some(false), _) => "missing".to_owned(),
        (None, Some(e)) => format!("unknown: {e}"),
        (None, None) => "unknown".to_owned(),
    }
}

fn status_view(s: &ClusterStatus) -> StatusView {
    let row = |what, name: &str, e, err: &Option<String>| ResourceRow {
        what,
        name: name.to_owned(),
        exists: exists(e, err),
    };
    let b = &s.buckets;
    StatusView {
        gke: s
            .cluster
            .gke
            .status
            .clone()
            .unwrap_or_else(|| exists(s.cluster.gke.exists, &s.cluster.gke.error)),
        version: s
            .cluster
            .gke
            .current_master_version
            .clone()
            .unwrap_or_default(),
        kubernetes: if s.kubernetes.reachable {
            "reachable".to_owned()
        } else {
            format!(
                "not reachable{}",
                s.kubernetes
                    .message
                    .as_deref()
                    .map_or_else(String::new, |m| format!(": {m}"))
            )
        },
        resources: vec![
            row(
                "network",
                &s.network.name,
                s.network.exists,
                &s.network.error,
            ),
            row("router", &s.router.name, s.router.exists, &s.router.error),
            row(
                "NAT",
                &s.router.nat.name,
                s.router.nat.exists,
                &s.router.nat.error,
            ),
            row("jobs bucket", &b.jobs.name, b.jobs.exists, &b.jobs.error),
            row(
                "builds bucket",
                &b.builds.name,
                b.builds.exists,
                &b.builds.error,
            ),
            row(
                "state bucket",
                &b.state.name,
                b.state.exists,
                &b.state.error,
            ),
            row(
                "repository",
                &s.repository.name,
                s.repository.exists,
                &s.repository.error,
            ),
            row(
                "node service account",
                &s.service_accounts.node.name,
                s.service_accounts.node.exists,
                &s.service_accounts.node.error,
            ),
            row(
                "build service account",
                &s.service_accounts.build.name,
                s.service_accounts.build.exists,
                &s.service_accounts.build.error,
            ),
        ],
        drift: s
            .drift
            .iter()
            .map(|d| DriftRow {
                resource: d.resource.clone(),
                resource_type: d.resource_type.clone(),
                problem: wire_name(d.problem),
                message: d.message.clone(),
            })
            .collect(),
    }
}

fn pool_row(base: &str, p: &NodePool, status: Option<&ClusterStatus>) -> PoolRow {
    let live = status.and_then(|s| s.node_pools.iter().find(|l| l.pool_id == p.pool_id));
    PoolRow {
        id: p.pool_id.clone(),
        kind: p.kind.as_str().to_owned(),
        accelerator: p.accelerator.clone(),
        machine_type: p.machine_type.clone(),
        min: p.min_nodes,
        max: p.max_nodes,
        spot: p.spot,
        failover: p.failover.as_ref().map_or_else(String::new, |f| {
            format!("{} of {}", f.role.as_str(), f.paired_pool)
        }),
        state: p.state.as_str().to_owned(),
        state_class: view::state_class(p.state.as_str()),
        gke: live.and_then(|l| l.gke_status.clone()).unwrap_or_default(),
        nodes: live
            .and_then(|l| l.nodes.as_ref())
            .map_or_else(String::new, |n| format!("{}/{} ready", n.ready, n.total)),
        cost: p.estimated_hourly_cost.as_ref().map_or_else(
            || "–".to_owned(),
            |c| view::cost_range(&c.currency, c.at_min, c.at_max),
        ),
        remove_href: format!("{base}/pools/{}/remove", p.pool_id),
    }
}

pub fn base_href(c: &Cluster) -> String {
    view::cluster_href(&c.name).unwrap_or_default()
}

pub async fn page(
    Visit(s, v): Visit,
    ConsoleCluster(path): ConsoleCluster,
) -> Result<Response, PageError> {
    let svc = &s.services;
    let c = service::clusters::get(&svc.db, &v.caller, &path).await?;
    let (status, capacity) = tokio::join!(
        service::status::get(svc, &v.caller, &path),
        service::capacity::get(svc, &v.caller, &path),
    );
    let base = base_href(&c);
    let pools = c
        .node_pools
        .iter()
        .map(|p| pool_row(&base, p, status.as_ref().ok()))
        .collect();
    view::render(&ClusterPage {
        chrome: Chrome::new(
            &v,
            format!("Cluster {}", path.cluster.as_str()),
            base.clone(),
        ),
        name: path.cluster.as_str().to_owned(),
        full_name: c.name.clone(),
        up_href: format!(
            "/console/up?project={}&zone={}&cluster={}",
            c.project,
            c.zone,
            path.cluster.as_str()
        ),
        connect: ConnectView::of(&c, path.cluster.as_str()),
        project: c.project,
        zone: c.zone,
        team: c.team.strip_prefix("teams/").unwrap_or(&c.team).to_owned(),
        state: c.state.as_str().to_owned(),
        state_class: view::state_class(c.state.as_str()),
        created_by: c.created_by,
        pools,
        status: status
            .as_ref()
            .map(status_view)
            .map_err(|e| e.clone().into()),
        capacity: capacity
            .map(|r| capacity_view(&r.capacity))
            .map_err(PageError::from),
        base,
    })
}

/// How the API spells an enum value (`NODE_SELECTOR_MATCHES_NOTHING`), for the page.
fn wire_name(v: impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
