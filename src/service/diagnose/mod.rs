//! `POST .../clusters/{c}:diagnose`: Kinetic's `doctor` for a shared cluster. Every
//! check looks at one thing `up` or pool creation should have made (named by
//! [`ClusterNames`], as `up` names it), through the production clients, and says OK,
//! WARN or FAIL with its figures and a concrete fix.
//!
//! Invariant: read-only (Google GETs and `getIamPolicy`, Kubernetes GETs and LISTs; no
//! record is written, no operation created) and bounded in time: every check, and the
//! shared reads it builds on, must finish by one deadline (`checkTimeout` after the
//! start); a check that does not is reported WARN "not checked within Ns", never left
//! out, so the whole call ends by that deadline (plus the record read and a 200 ms
//! grace). A missing GKE cluster is a FAIL of `gke-cluster` (the checks that need its
//! API server say "not checked"), not an error. VIEWER+ of the owning team may call it;
//! others get the same 404 as for every cluster read. The `access` check reads the
//! team's roster (the records) besides the cloud, as the SYNC_ACCESS it checks does.

/// The value of `r`, or (returned from the check function it stands in) the one check
/// `r` failed with: how a check that needs the cluster's API server, or a read shared
/// with other checks, starts.
macro_rules! or_return {
    ($r:expr) => {
        match $r {
            Ok(v) => v,
            Err(c) => return vec![c],
        }
    };
}

mod access;
mod gke;
mod kube;
mod nodes;
mod project;
mod quota;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::Instant;

use crate::cloud::Cloud;
use crate::cloud::gcp::types::compute::Region;
use crate::cloud::gcp::types::container::Cluster as GkeCluster;
use crate::cloud::kube::health::NodeHealth;
use crate::cloud::kube::{ClusterAccess, KubeCluster, KubeError, PodInfo};
use crate::domain::PoolState;
use crate::domain::resource_names::ClusterNames;
use crate::model;
use crate::model::diagnose::{CHECK_IDS, CheckStatus, Diagnosis, DiagnosisCheck, DiagnosisSummary};
use crate::store::node_pools::NodePoolRecord;
use crate::store::{self, Db};

use super::clusters::{ClusterPath, record};
use super::live::Timing;
use super::{Caller, Error, Result};

/// The deadline of every check when the caller names none.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(10);
/// How long past the deadline a check may take to report its own timed-out reads.
const GRACE: Duration = Duration::from_millis(200);
/// The longest deadline a caller may ask for.
pub const MAX_CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// The diagnosis and what its reads cost.
#[derive(Debug, Clone)]
pub struct Report {
    pub diagnosis: Diagnosis,
    pub timing: Timing,
}

/// `checkTimeout` as sent (`5s`, `500ms`), default [`DEFAULT_CHECK_TIMEOUT`].
pub fn parse_check_timeout(s: Option<&str>) -> Result<Duration> {
    let Some(s) = s.filter(|s| !s.trim().is_empty()) else {
        return Ok(DEFAULT_CHECK_TIMEOUT);
    };
    let d = crate::domain::duration::parse(s, MAX_CHECK_TIMEOUT).map_err(|e| {
        Error::invalid(
            "INVALID_TIMEOUT",
            format!("checkTimeout {e}; send a duration like 10s or 500ms, at most 30s"),
        )
        .with("limit", "30s")
    })?;
    if d.is_zero() {
        return Err(Error::invalid(
            "INVALID_TIMEOUT",
            "checkTimeout must be more than 0; send a duration like 10s or 500ms, at most 30s",
        ));
    }
    Ok(d)
}

/// One read: found, absent (404), failed, or not answered by the deadline.
#[derive(Debug, Clone)]
pub(super) enum Read<T> {
    Found(T),
    Absent,
    Failed(String),
    TimedOut,
}

impl<T> Read<T> {
    pub(super) fn found(&self) -> Option<&T> {
        match self {
            Read::Found(v) => Some(v),
            _ => None,
        }
    }
}

/// Bound `f` by `deadline`; `absent` tells a 404 apart from other errors.
pub(super) async fn read<T, E: std::fmt::Display>(
    deadline: Instant,
    f: impl Future<Output = std::result::Result<T, E>>,
    absent: impl Fn(&E) -> bool,
) -> Read<T> {
    match tokio::time::timeout_at(deadline, f).await {
        Ok(Ok(v)) => Read::Found(v),
        Ok(Err(e)) if absent(&e) => Read::Absent,
        Ok(Err(e)) => Read::Failed(e.to_string()),
        Err(_) => Read::TimedOut,
    }
}

/// What every check may read: the names, the records, the GKE cluster, the region's
/// quotas and the cluster's nodes and pods (each read once, bounded by the deadline).
pub(super) struct Shared {
    pub n: ClusterNames,
    /// `projects/{p}/zones/{z}/clusters/{c}`.
    pub name: String,
    /// The pool records that are not DELETED.
    pub records: Vec<NodePoolRecord>,
    pub gke: Read<GkeCluster>,
    pub region: Read<Region>,
    pub kube: Option<KubeCluster>,
    pub nodes: Read<Vec<NodeHealth>>,
    pub pods: Read<Vec<PodInfo>>,
    pub timeout: Duration,
    /// When every check must be done.
    pub deadline: Instant,
}

impl Shared {
    /// `PUT /v1/projects/{p}/zones/{z}/clusters/{c}` (run `up` again).
    pub fn up(&self) -> String {
        format!("run up again (PUT /v1/{})", self.name)
    }

    /// Why a check that needs the cluster's Kubernetes API could not run, if it cannot.
    pub fn kube_or_why(&self, id: &str) -> std::result::Result<&KubeCluster, DiagnosisCheck> {
        if let Some(k) = &self.kube {
            return Ok(k);
        }
        let why = match &self.gke {
            Read::Found(_) => "the GKE cluster has no endpoint yet".to_owned(),
            Read::Absent => format!("GKE has no cluster {}", self.n.gke_cluster()),
            Read::Failed(e) => format!("the GKE cluster could not be read: {e}"),
            Read::TimedOut => format!("the GKE cluster was not read within {}", secs(self.timeout)),
        };
        Err(check(
            id,
            CheckStatus::Warn,
            format!("not checked: {why}"),
            "see the gke-cluster check, then diagnose again".into(),
        ))
    }

    /// A list read up front (`what`: the nodes, the pods) when the cluster's API server
    /// could be reached and the list was read; else the check that says why not.
    pub fn kube_read<'a, T>(
        &'a self,
        id: &str,
        what: &str,
        r: &'a Read<T>,
    ) -> std::result::Result<&'a T, DiagnosisCheck> {
        self.kube_or_why(id)?;
        match r {
            Read::Found(v) => Ok(v),
            other => Err(self.unread(id, what, other)),
        }
    }

    /// FAIL: what `up` installs from a pinned manifest (`manifest`: LWS, installer) is
    /// missing, as `message` says.
    pub fn not_applied(&self, id: &str, message: String, manifest: &str) -> DiagnosisCheck {
        let fix = format!("{}: it applies the pinned {manifest} manifest", self.up());
        check(id, CheckStatus::Fail, message, fix)
    }

    /// [`unread`] within this diagnosis's timeout.
    pub fn unread<T>(&self, id: &str, what: &str, r: &Read<T>) -> DiagnosisCheck {
        unread(id, what, r, self.timeout)
    }
}

/// `1 pool`, `2 pools`.
pub(super) fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `12s`, `1.5s`.
pub(super) fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

pub(super) fn check(id: &str, status: CheckStatus, message: String, fix: String) -> DiagnosisCheck {
    DiagnosisCheck {
        id: id.to_owned(),
        status,
        message,
        fix,
    }
}

pub(super) fn ok(id: &str, message: String) -> DiagnosisCheck {
    check(id, CheckStatus::Ok, message, String::new())
}

/// A read that failed or timed out: WARN, with what to check.
pub(super) fn unread<T>(id: &str, what: &str, r: &Read<T>, timeout: Duration) -> DiagnosisCheck {
    let message = match r {
        Read::TimedOut => format!(
            "not checked within {}: {what} did not answer",
            secs(timeout)
        ),
        Read::Failed(e) => format!("not checked: {what} could not be read: {e}"),
        _ => format!("not checked: {what}"),
    };
    check(
        id,
        CheckStatus::Warn,
        message,
        "check that kineticd's service account may read it, then diagnose again".into(),
    )
}

type CheckFuture<'a> = Pin<Box<dyn Future<Output = Vec<DiagnosisCheck>> + Send + 'a>>;

/// Diagnose the cluster at `path` (VIEWER+; 404 like the other cluster reads).
pub async fn run(
    db: &Db,
    cloud: &Cloud,
    caller: &Caller,
    path: &ClusterPath,
    timeout: Duration,
) -> Result<Report> {
    let rec = record(db, caller, path).await?;
    let records: Vec<NodePoolRecord> = store::node_pools::list(db, rec.id, None, 10_000)
        .await?
        .into_iter()
        .filter(|p| p.state != PoolState::Deleted)
        .collect();
    let started = Instant::now();
    let deadline = started + timeout;
    // Every cloud call retries within the diagnosis deadline, not past it (the reads'
    // own bound, `read`, ends first and says "not checked within").
    let cloud = &cloud.with_budget(cloud.gcp.http.budget().until(deadline + GRACE / 2));
    let check_time = model::timestamp(chrono::Utc::now());
    let n = ClusterNames::new(&path.project, &path.zone, &path.cluster);
    let name = path.name();
    let who = access::Record {
        id: rec.id,
        team: rec.team_id.clone(),
    };

    let project_checks = project::checks(cloud, &n, &name, deadline, timeout);
    let cluster_checks = async {
        let (shared, timing) =
            shared(cloud, n.clone(), name.clone(), records, deadline, timeout).await;
        let checks_started = Instant::now();
        let futures: Vec<CheckFuture<'_>> = vec![
            Box::pin(async { gke::cluster(&shared) }),
            Box::pin(async { gke::version_skew(&shared) }),
            Box::pin(async { gke::node_pools(&shared) }),
            Box::pin(kube::lws(&shared)),
            Box::pin(kube::workload_identity(cloud, &shared)),
            Box::pin(kube::nvidia_driver(&shared)),
            Box::pin(async { nodes::nodes(&shared) }),
            Box::pin(async { nodes::pending_pods(&shared) }),
            Box::pin(nodes::warning_events(&shared)),
            Box::pin(async { quota::quota(&shared) }),
            Box::pin(access::access(db, cloud, &who, &shared)),
        ];
        let checks = bounded(futures, deadline).await;
        (checks, timing, checks_started.elapsed())
    };
    let (project_checks, (cluster_checks, mut timing, checks_time)) = tokio::join!(
        bounded(vec![Box::pin(project_checks)], deadline),
        cluster_checks
    );
    timing.compute = checks_time;
    let checks = in_order(
        project_checks.into_iter().chain(cluster_checks).collect(),
        timeout,
    );
    let summary = DiagnosisSummary::of(&checks);
    Ok(Report {
        diagnosis: Diagnosis {
            name,
            check_time,
            checks,
            summary,
        },
        timing,
    })
}

/// Run every future to `deadline` (plus [`GRACE`]); one that does not finish yields
/// nothing (its ids are then reported "not checked" by [`in_order`]).
async fn bounded(futures: Vec<CheckFuture<'_>>, deadline: Instant) -> Vec<DiagnosisCheck> {
    // The reads inside end at `deadline` and say which read it was; the grace lets their
    // own "not checked" answers through before this coarser bound cuts a check off.
    let end = deadline + GRACE;
    let each = futures
        .into_iter()
        .map(|f| async move { tokio::time::timeout_at(end, f).await.unwrap_or_default() });
    futures::future::join_all(each)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// The checks in [`CHECK_IDS`] order, each id once; a missing id did not finish in time.
fn in_order(mut got: Vec<DiagnosisCheck>, timeout: Duration) -> Vec<DiagnosisCheck> {
    CHECK_IDS
        .iter()
        .map(|id| match got.iter().position(|c| c.id == *id) {
            Some(i) => got.swap_remove(i),
            None => check(
                id,
                CheckStatus::Warn,
                format!("not checked within {}", secs(timeout)),
                format!(
                    "diagnose again, with a longer checkTimeout (at most {}) if the cloud is slow",
                    secs(MAX_CHECK_TIMEOUT)
                ),
            ),
        })
        .collect()
}

/// The shared reads: GKE cluster and region at once, then nodes and pods at once.
async fn shared(
    cloud: &Cloud,
    n: ClusterNames,
    name: String,
    records: Vec<NodePoolRecord>,
    deadline: Instant,
    timeout: Duration,
) -> (Shared, Timing) {
    let mut timing = Timing::default();
    let started = Instant::now();
    let (gke, region) = tokio::join!(
        read(
            deadline,
            cloud
                .gcp
                .container
                .get_cluster(&n.project, &n.zone, &n.cluster),
            |e| e.is_not_found()
        ),
        read(
            deadline,
            cloud.gcp.compute.get_region(&n.project, &n.region),
            |e| e.is_not_found()
        ),
    );
    timing.cloud = started.elapsed();
    let kube = gke
        .found()
        .and_then(ClusterAccess::for_gke)
        .map(|a| cloud.kube.cluster(a));
    let (mut nodes, mut pods) = (Read::TimedOut, Read::TimedOut);
    if let Some(k) = &kube {
        let started = Instant::now();
        let ((n_read, n_time), (p_read, p_time)) = tokio::join!(
            timed(read(deadline, k.node_health(), KubeError::is_not_found)),
            timed(read(deadline, k.pods(None), KubeError::is_not_found)),
        );
        (nodes, pods) = (n_read, p_read);
        timing.list_nodes = n_time;
        timing.list_pods = p_time;
        timing.kube = started.elapsed();
    }
    let shared = Shared {
        n,
        name,
        records,
        gke,
        region,
        kube,
        nodes,
        pods,
        timeout,
        deadline,
    };
    (shared, timing)
}

/// `f`'s output and how long it took.
async fn timed<T>(f: impl Future<Output = T>) -> (T, Duration) {
    let t = Instant::now();
    let out = f.await;
    (out, t.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_once_in_order_missing_ones_not_checked() {
        let got = vec![
            ok("quota", "fine".into()),
            check("apis", CheckStatus::Fail, "off".into(), "enable".into()),
        ];
        let all = in_order(got, Duration::from_millis(1500));
        let ids: Vec<&str> = all.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, CHECK_IDS);
        assert_eq!(all[0].status, CheckStatus::Fail);
        assert_eq!(all[15].status, CheckStatus::Ok);
        assert_eq!(all[1].status, CheckStatus::Warn);
        assert_eq!(all[1].message, "not checked within 1.5s");
        assert!(all[1].fix.contains("checkTimeout"));
    }

    #[test]
    fn check_timeout_bounds() {
        assert_eq!(parse_check_timeout(None).unwrap(), DEFAULT_CHECK_TIMEOUT);
        assert_eq!(
            parse_check_timeout(Some("500ms")).unwrap(),
            Duration::from_millis(500)
        );
        assert!(parse_check_timeout(Some("0")).is_err());
        assert!(parse_check_timeout(Some("31s")).is_err());
    }
}
