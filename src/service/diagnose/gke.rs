//! The GKE checks: the cluster's status, the version skew between the control plane
//! and the node pools, the node pools against their records (GKE status and errors,
//! nodes Ready vs wanted), and the region's quota headroom for each pool's metric.
//!
//! Invariant: pure functions of the shared reads ([`Shared`]); the skew judgement
//! ([`skew`]) is a plain function of the versions, unit-tested here.

use std::collections::{BTreeMap, BTreeSet};

use crate::cloud::gcp::types::container::NodePool as GkePool;
use crate::domain::PoolState;
use crate::domain::resource_names::DEFAULT_POOL;
use crate::model::diagnose::{CheckStatus, DiagnosisCheck};
use crate::store::node_pools::NodePoolRecord;

use super::{Read, Shared, check, count, ok};

/// GKE: node pools may be up to two minor versions older than the control plane, never
/// newer (cloud.google.com/kubernetes-engine/versioning, "Version support").
pub const MAX_MINOR_SKEW: i64 = 2;

fn gke_describe(s: &Shared) -> String {
    format!(
        "gcloud container clusters describe {} --zone={} --project={}",
        s.n.cluster, s.n.zone, s.n.project
    )
}

pub fn cluster(s: &Shared) -> Vec<DiagnosisCheck> {
    const ID: &str = "gke-cluster";
    let c = match &s.gke {
        Read::Found(c) => c,
        Read::Absent => {
            return vec![check(
                ID,
                CheckStatus::Fail,
                format!("GKE has no cluster {}", s.n.gke_cluster()),
                format!(
                    "{}: it re-creates the cluster and its recorded pools",
                    s.up()
                ),
            )];
        }
        other => return vec![s.unread(ID, "the GKE cluster", other)],
    };
    let status = c.status.as_deref().unwrap_or("STATUS_UNSPECIFIED");
    let master = c.current_master_version.as_deref().unwrap_or("unknown");
    let detail = c
        .status_message
        .as_deref()
        .filter(|m| !m.is_empty())
        .map(|m| format!(": {m}"))
        .unwrap_or_default();
    let message = format!(
        "GKE cluster {} is {status}{detail} (master {master}, {} node pools)",
        s.n.cluster,
        c.node_pools.len()
    );
    let c = match status {
        "RUNNING" if c.endpoint.is_some() => ok(ID, message),
        "RUNNING" => check(
            ID,
            CheckStatus::Warn,
            format!("{message}, but it has no endpoint yet"),
            format!("wait a minute, then diagnose again; {}", gke_describe(s)),
        ),
        "PROVISIONING" | "RECONCILING" => check(
            ID,
            CheckStatus::Warn,
            message,
            format!(
                "wait for GKE's operation to finish (gcloud container operations list --zone={} --project={}), then diagnose again",
                s.n.zone, s.n.project
            ),
        ),
        _ => check(
            ID,
            CheckStatus::Fail,
            message,
            format!(
                "{} shows GKE's reason; repair or recreate the cluster",
                gke_describe(s)
            ),
        ),
    };
    vec![c]
}

/// `(major, minor)` of a GKE version such as `1.30.5-gke.1014001`.
fn minor(version: &str) -> Option<(i64, i64)> {
    let mut parts = version.split(['.', '-']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// How a node pool's version stands to the control plane's: minor versions behind
/// (negative: ahead), and the status that earns.
pub fn skew(master: &str, pool: &str) -> Option<(i64, CheckStatus)> {
    let (mj, mm) = minor(master)?;
    let (pj, pm) = minor(pool)?;
    let behind = (mj - pj) * 100 + (mm - pm);
    let status = if !(0..=MAX_MINOR_SKEW).contains(&behind) {
        CheckStatus::Fail
    } else if behind == MAX_MINOR_SKEW {
        CheckStatus::Warn
    } else {
        CheckStatus::Ok
    };
    Some((behind, status))
}

pub fn version_skew(s: &Shared) -> Vec<DiagnosisCheck> {
    const ID: &str = "version-skew";
    let Some(c) = s.gke.found() else {
        return vec![s.unread(ID, "the GKE cluster", &s.gke)];
    };
    let Some(master) = c.current_master_version.as_deref() else {
        return vec![check(
            ID,
            CheckStatus::Warn,
            "GKE reports no master version yet".into(),
            "diagnose again once the cluster is RUNNING".into(),
        )];
    };
    let mut worst = CheckStatus::Ok;
    let mut off = Vec::new();
    let mut fixes = Vec::new();
    let mut max_behind = 0;
    for p in &c.node_pools {
        let Some((behind, status)) = p.version.as_deref().and_then(|v| skew(master, v)) else {
            continue;
        };
        max_behind = max_behind.max(behind);
        if status == CheckStatus::Ok {
            continue;
        }
        worst = worst.max(status);
        let v = p.version.as_deref().unwrap_or_default();
        off.push(if behind < 0 {
            format!("{} runs {v}, newer than the master", p.name)
        } else {
            format!("{} runs {v}, {behind} minor versions behind", p.name)
        });
        fixes.push(format!(
            "gcloud container clusters upgrade {} --node-pool={} --cluster-version={master} --zone={} --project={}",
            s.n.cluster, p.name, s.n.zone, s.n.project
        ));
    }
    let rule = format!(
        "GKE supports node pools up to {MAX_MINOR_SKEW} minor versions older than the control plane, never newer"
    );
    if worst == CheckStatus::Ok {
        return vec![ok(
            ID,
            format!(
                "master {master}; {} node pools at most {max_behind} minor versions behind ({rule})",
                c.node_pools.len()
            ),
        )];
    }
    vec![check(
        ID,
        worst,
        format!("master {master}: {} ({rule})", off.join("; ")),
        fixes.join("; "),
    )]
}

/// Nodes per zone times the zones: what a pool of `rec` has at least.
fn wanted_nodes(rec: &NodePoolRecord, gke: Option<&GkePool>) -> i64 {
    let zones = gke
        .map_or(0, |g| g.locations.len())
        .max(rec.spec.zones.len())
        .max(1);
    rec.spec.min_nodes.max(0) * i64::try_from(zones).unwrap_or(1)
}

/// (status, line, fix) of one recorded pool.
fn pool_line(
    s: &Shared,
    rec: &NodePoolRecord,
    gke: Option<&GkePool>,
    ready: Option<&BTreeMap<&str, (i64, i64)>>,
) -> (CheckStatus, String, Option<String>) {
    let id = rec.pool_id.as_str();
    let describe = format!(
        "gcloud container node-pools describe {id} --cluster={} --zone={} --project={}",
        s.n.cluster, s.n.zone, s.n.project
    );
    let Some(g) = gke else {
        if rec.state == PoolState::Provisioning {
            return (
                CheckStatus::Warn,
                format!("{id} is being created (record PROVISIONING, not in GKE yet)"),
                Some(format!(
                    "wait for its operation (GET /v1/operations?filter=target=\"{}\")",
                    s.name
                )),
            );
        }
        return (
            CheckStatus::Fail,
            format!("{id} is recorded {} but missing in GKE", rec.state),
            Some(format!("{}: it re-creates recorded pools", s.up())),
        );
    };
    let status = g.status.as_deref().unwrap_or("STATUS_UNSPECIFIED");
    let mut errors: Vec<String> = g
        .status_message
        .iter()
        .filter(|m| !m.is_empty())
        .cloned()
        .collect();
    errors.extend(g.conditions.iter().filter_map(|c| c.message.clone()));
    let errors = if errors.is_empty() {
        String::new()
    } else {
        format!(" ({})", errors.join("; "))
    };
    let want = wanted_nodes(rec, Some(g));
    // Without the node list, readiness is not judged.
    let (have, line) = match ready {
        Some(r) => {
            let (have, total) = r.get(id).copied().unwrap_or((0, 0));
            let line = format!(
                "{id}: GKE {status}{errors}, {have} of {want} wanted nodes Ready ({total} in all)"
            );
            (have, line)
        }
        None => (want, format!("{id}: GKE {status}{errors}, nodes not read")),
    };
    match status {
        "ERROR" | "RUNNING_WITH_ERROR" | "STOPPING" => (CheckStatus::Fail, line, Some(describe)),
        "PROVISIONING" | "RECONCILING" => (
            CheckStatus::Warn,
            line,
            Some(format!("wait for GKE; {describe}")),
        ),
        _ if have < want => (
            CheckStatus::Warn,
            line,
            Some(format!(
                "kubectl get nodes -l cloud.google.com/gke-nodepool={id}; {describe}"
            )),
        ),
        _ => (CheckStatus::Ok, line, None),
    }
}

pub fn node_pools(s: &Shared) -> Vec<DiagnosisCheck> {
    const ID: &str = "node-pools";
    let Some(c) = s.gke.found() else {
        return vec![s.unread(ID, "the GKE cluster", &s.gke)];
    };
    let gke: BTreeMap<&str, &GkePool> = c.node_pools.iter().map(|p| (p.name.as_str(), p)).collect();
    // pool -> (Ready nodes, nodes)
    let ready: Option<BTreeMap<&str, (i64, i64)>> = s.nodes.found().map(|nodes| {
        let mut m: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
        for n in nodes {
            if let Some(p) = n.info.pool.as_deref() {
                let e = m.entry(p).or_default();
                e.0 += i64::from(n.info.ready);
                e.1 += 1;
            }
        }
        m
    });
    let mut worst = CheckStatus::Ok;
    let mut lines = Vec::new();
    let mut fixes = Vec::new();
    for rec in &s.records {
        let (st, line, fix) = pool_line(
            s,
            rec,
            gke.get(rec.pool_id.as_str()).copied(),
            ready.as_ref(),
        );
        worst = worst.max(st);
        lines.push(line);
        fixes.extend(fix);
    }
    let recorded: BTreeSet<&str> = s.records.iter().map(|r| r.pool_id.as_str()).collect();
    for id in gke
        .keys()
        .filter(|id| **id != DEFAULT_POOL && !recorded.contains(*id))
    {
        worst = worst.max(CheckStatus::Warn);
        lines.push(format!("{id}: in GKE but not recorded by kineticd"));
        fixes.push(format!(
            "delete it (gcloud container node-pools delete {id} --cluster={} --zone={} --project={}) or leave it unmanaged",
            s.n.cluster, s.n.zone, s.n.project
        ));
    }
    if lines.is_empty() {
        return vec![ok(
            ID,
            "no node pools recorded besides GKE's default-pool".into(),
        )];
    }
    if matches!(s.nodes, Read::TimedOut | Read::Failed(_)) && worst == CheckStatus::Ok {
        return vec![s.unread(ID, "the cluster's nodes", &s.nodes)];
    }
    let message = format!(
        "{}: {}",
        count(lines.len(), "pool", "pools"),
        lines.join("; ")
    );
    if worst == CheckStatus::Ok {
        return vec![ok(ID, message)];
    }
    vec![check(ID, worst, message, fixes.join("; "))]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_skew_rules() {
        for (node, want) in [
            ("1.30.5-gke.1", (0, CheckStatus::Ok)),
            ("1.29.8-gke.2", (1, CheckStatus::Ok)),
            ("1.28.8-gke.2", (2, CheckStatus::Warn)),
            ("1.27.1-gke.2", (3, CheckStatus::Fail)),
            ("1.31.0-gke.2", (-1, CheckStatus::Fail)),
        ] {
            assert_eq!(skew("1.30.5-gke.1", node), Some(want), "node {node}");
        }
        assert_eq!(skew("latest", "1.30"), None);
    }
}
