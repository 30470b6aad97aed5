//! A cluster's live status: every resource `up` creates, read from Google Cloud and the
//! cluster's Kubernetes API at request time, compared with the records.
//!
//! Invariant: the MISSING part of `drift` is exactly what `up` would re-create: it is
//! read off [`crate::plan::up::plan`] run with the live facts (actions whose reason is
//! [`crate::plan::up::MISSING_REASON`]), never computed separately. A resource that could not
//! be checked (any Google error but 404) is reported with its `error` and is never
//! counted as missing; only when nothing at all could be read does the request fail
//! (503 CLOUD_UNAVAILABLE). A DELETED record expects nothing in the cloud: its drift
//! lists what still exists (UNRECORDED leftovers) except the project's state bucket,
//! which `down` keeps by design. A settled record's drift also lists its access drift
//! ([`access`]): a managed RBAC binding the roster justifies and the cluster lacks
//! (MISSING), one it no longer justifies (UNRECORDED), or one binding another role or
//! subject (DIFFERENT), each repaired by `:syncAccess`.

use std::collections::{BTreeMap, BTreeSet};

use crate::cloud::Cloud;
use crate::cloud::gcp::GcpError;
use crate::cloud::gcp::types::artifact_registry::Repository;
use crate::cloud::gcp::types::compute::{Network, Router};
use crate::cloud::gcp::types::container::{Cluster as GkeCluster, NodePool as GkePool};
use crate::cloud::gcp::types::iam::ServiceAccount;
use crate::cloud::gcp::types::storage::Bucket;
use crate::cloud::kube::manifests::NVIDIA_DRIVER_DAEMONSET;
use crate::cloud::kube::{ClusterAccess, ObjectKind};
use crate::domain::pricing::PriceTable;
use crate::domain::resource_names::{APIS, ClusterNames, KSA_NAME, KSA_NAMESPACE};
use crate::domain::{ClusterState, RpcCode};
use crate::model;
use crate::model::status::{
    BucketStatus, BucketsStatus, ClusterLive, ClusterStatus, Drift, DriftProblem, GkeClusterStatus,
    KubernetesStatus, PoolStatus, RepositoryStatus, ResourceStatus, RouterStatus,
    ServiceAccountsStatus,
};
use crate::plan::resources::cluster_resources;
use crate::plan::up::{self, LiveState, UpInput};
use crate::store;

use super::Services;

use super::accelerators::catalog_name;
use super::clusters::{ClusterPath, record};
use super::{Caller, Error, Result};
use pools::{DEFAULT_POOL, KubePools, Recorded, accelerator_of, kube_pools, pool_drift};

pub mod access;
pub mod pools;

/// One read of one resource: there, absent (404), or unknown (any other error).
enum Probe<T> {
    Found(T),
    Absent,
    Unknown(GcpError),
}

impl<T> Probe<T> {
    fn of(r: std::result::Result<T, GcpError>) -> Probe<T> {
        match r {
            Ok(v) => Probe::Found(v),
            Err(e) if e.is_not_found() => Probe::Absent,
            Err(e) => Probe::Unknown(e),
        }
    }
    fn exists(&self) -> Option<bool> {
        match self {
            Probe::Found(_) => Some(true),
            Probe::Absent => Some(false),
            Probe::Unknown(_) => None,
        }
    }
    fn error(&self) -> Option<String> {
        match self {
            Probe::Unknown(e) => Some(e.to_string()),
            _ => None,
        }
    }
    fn found(&self) -> Option<&T> {
        match self {
            Probe::Found(v) => Some(v),
            _ => None,
        }
    }
    fn unknown(&self) -> Option<&GcpError> {
        match self {
            Probe::Unknown(e) => Some(e),
            _ => None,
        }
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

fn resource<T>(name: &Option<String>, p: &Probe<T>) -> ResourceStatus {
    ResourceStatus {
        name: name.clone().unwrap_or_default(),
        exists: p.exists(),
        error: p.error(),
    }
}

fn bucket(name: &Option<String>, p: &Probe<Bucket>) -> BucketStatus {
    BucketStatus {
        name: name.clone().unwrap_or_default(),
        exists: p.exists(),
        location: p.found().and_then(|b| non_empty(&b.location)),
        error: p.error(),
    }
}

/// (plan action id, exists, the error when unknown).
type Each<'a> = (&'static str, Option<bool>, Option<&'a GcpError>);

/// What Google Cloud says, right now, about each resource `up` creates.
struct Live {
    state_bucket: Probe<Bucket>,
    jobs_bucket: Probe<Bucket>,
    builds_bucket: Probe<Bucket>,
    repository: Probe<Repository>,
    network: Probe<Network>,
    router: Probe<Router>,
    node_sa: Probe<ServiceAccount>,
    build_sa: Probe<ServiceAccount>,
    gke: Probe<GkeCluster>,
}

impl Live {
    /// Every read at once.
    async fn read(cloud: &Cloud, n: &ClusterNames) -> Live {
        let g = &cloud.gcp;
        let p = n.project.as_str();
        let (node_email, build_email) = (n.node_sa_email(), n.build_sa_email());
        let (state, jobs, builds, repo, network, router, node_sa, build_sa, gke) = tokio::join!(
            g.storage.get_bucket(&n.state_bucket),
            g.storage.get_bucket(&n.jobs_bucket),
            g.storage.get_bucket(&n.builds_bucket),
            g.artifact_registry
                .get_repository(p, &n.repository_location, &n.repository),
            g.compute.get_network(p, &n.network),
            g.compute.get_router(p, &n.region, &n.router),
            g.iam.get_service_account(p, &node_email),
            g.iam.get_service_account(p, &build_email),
            g.container.get_cluster(p, &n.zone, &n.cluster),
        );
        Live {
            state_bucket: Probe::of(state),
            jobs_bucket: Probe::of(jobs),
            builds_bucket: Probe::of(builds),
            repository: Probe::of(repo),
            network: Probe::of(network),
            router: Probe::of(router),
            node_sa: Probe::of(node_sa),
            build_sa: Probe::of(build_sa),
            gke: Probe::of(gke),
        }
    }

    /// (plan action id, exists, the error when unknown) of every resource.
    fn by_action(&self) -> [Each<'_>; 9] {
        fn e<'a, T>(id: &'static str, p: &'a Probe<T>) -> Each<'a> {
            (id, p.exists(), p.unknown())
        }
        [
            e("state-bucket", &self.state_bucket),
            e("jobs-bucket", &self.jobs_bucket),
            e("builds-bucket", &self.builds_bucket),
            e("repository", &self.repository),
            e("network", &self.network),
            e("router", &self.router),
            e("node-sa", &self.node_sa),
            e("build-sa", &self.build_sa),
            e("cluster", &self.gke),
        ]
    }

    /// GKE's pools by name (empty unless the cluster was read).
    fn gke_pools(&self) -> BTreeMap<&str, &GkePool> {
        self.gke
            .found()
            .map(|c| c.node_pools.iter().map(|p| (p.name.as_str(), p)).collect())
            .unwrap_or_default()
    }

    /// Whether the router carries the NAT (`None` unless the router was read).
    fn nat(&self, n: &ClusterNames) -> Option<bool> {
        self.router
            .found()
            .map(|r| r.nats.iter().any(|x| x.name == n.nat))
    }
}

/// Live status of the cluster at `path` (VIEWER+; 404 like the other cluster reads).
pub async fn get(svc: &Services, caller: &Caller, path: &ClusterPath) -> Result<ClusterStatus> {
    let (db, cloud, prices) = (&svc.db, svc.cloud.as_ref(), svc.prices.as_ref());
    let rec = record(db, caller, path).await?;
    let pools: BTreeMap<String, Recorded> = store::node_pools::list(db, rec.id, None, 10_000)
        .await?
        .into_iter()
        .map(|p| {
            let r = Recorded {
                state: p.state,
                spec: p.spec,
            };
            (p.pool_id, r)
        })
        .collect();
    let n = ClusterNames::new(&path.project, &path.zone, &path.cluster);
    let live = Live::read(cloud, &n).await;
    // Nothing readable at all (no credentials, no network): an error, not a status.
    let errors: Vec<&GcpError> = live.by_action().iter().filter_map(|(_, _, e)| *e).collect();
    if let [first, ..] = errors[..]
        && errors.len() == live.by_action().len()
    {
        return Err(cloud_unavailable(&n.project, first));
    }
    let ((kubernetes, by_pool), access) = tokio::join!(
        kube_pools(cloud, &live.gke),
        access_drift(svc, &rec, path, &live.gke)
    );
    let drift = if rec.state == ClusterState::Deleted {
        leftovers(&n, prices, &live)
    } else {
        let mut d = drift(&n, path, prices, rec.spec.force_destroy, &live, &pools);
        d.extend(access?);
        d
    };
    Ok(render(
        path, rec.state, &n, &live, &pools, kubernetes, by_pool, drift,
    ))
}

/// Access drift of a settled record (RUNNING or ERROR): the managed RBAC bindings
/// missing, extra or different ([`access::gaps`]). None while an operation of the
/// cluster is under way (`up`, which a sync follows, or a SYNC_ACCESS itself: either
/// converges access when it ends), and none when the Kubernetes API does not answer
/// (as for the other Kubernetes reads).
async fn access_drift(
    svc: &Services,
    rec: &store::clusters::ClusterRecord,
    path: &ClusterPath,
    gke: &Probe<GkeCluster>,
) -> Result<Vec<Drift>> {
    if !matches!(rec.state, ClusterState::Running | ClusterState::Error) {
        return Ok(Vec::new());
    }
    let Some(k) = gke
        .found()
        .and_then(ClusterAccess::for_gke)
        .map(|a| svc.cloud.kube.cluster(a))
    else {
        return Ok(Vec::new());
    };
    if access::sync_under_way(&svc.db, rec.id).await?.is_some() {
        return Ok(Vec::new());
    }
    let cluster = path.name();
    let want = access::wanted(&svc.db, &rec.team_id, &cluster).await?;
    let Ok(Ok(have)) = tokio::time::timeout(pools::KUBE_TIMEOUT, k.managed_bindings()).await else {
        return Ok(Vec::new());
    };
    Ok(access::gaps(&want.bindings, &have)
        .iter()
        .map(|g| access::drift(&cluster, g))
        .collect())
}

/// Plan action ids of the resources (and `existing_pools`) the cloud says are gone.
fn missing(live: &Live, existing_pools: &[String]) -> BTreeSet<String> {
    let mut missing: BTreeSet<String> = live
        .by_action()
        .iter()
        .filter(|(_, exists, _)| *exists == Some(false))
        .map(|(id, _, _)| (*id).to_owned())
        .collect();
    let gke_pools = live.gke_pools();
    for id in existing_pools {
        let gone = match &live.gke {
            Probe::Absent => true,
            Probe::Found(_) => !gke_pools.contains_key(id.as_str()),
            Probe::Unknown(_) => false,
        };
        if gone {
            missing.insert(format!("pool:{id}"));
        }
    }
    missing
}

/// The Kubernetes objects `up` applies: (plan action id, kind, namespace, name).
const KUBE_OBJECTS: [(&str, ObjectKind, &str, &str); 3] = [
    ("ksa", ObjectKind::ServiceAccount, KSA_NAMESPACE, KSA_NAME),
    (
        "lws",
        ObjectKind::Deployment,
        "lws-system",
        "lws-controller-manager",
    ),
    (
        "nvidia-driver",
        ObjectKind::DaemonSet,
        "kube-system",
        NVIDIA_DRIVER_DAEMONSET,
    ),
];

/// Whether some API `up` enables is known to be off (an unreadable one is not assumed off).
async fn apis_off(cloud: &Cloud, project: &str) -> bool {
    let su = &cloud.gcp.service_usage;
    futures::future::join_all(APIS.iter().map(|id| su.get_service(project, id)))
        .await
        .iter()
        .any(|r| r.as_ref().is_ok_and(|s| !s.is_enabled()))
}

/// Plan action ids of the Kubernetes objects known to be missing: all of them when the
/// GKE cluster is gone, those the API server answers 404 for otherwise.
async fn kube_missing(cloud: &Cloud, gke: &Probe<GkeCluster>) -> BTreeSet<String> {
    let all = || KUBE_OBJECTS.iter().map(|o| o.0.to_owned()).collect();
    let access = match gke {
        Probe::Absent => return all(),
        Probe::Found(c) => ClusterAccess::for_gke(c),
        Probe::Unknown(_) => None,
    };
    let Some(access) = access else {
        return BTreeSet::new();
    };
    let k = cloud.kube.cluster(access);
    let reads = futures::future::join_all(KUBE_OBJECTS.iter().map(|(_, kind, ns, name)| {
        tokio::time::timeout(pools::KUBE_TIMEOUT, k.exists(*kind, ns, name))
    }));
    KUBE_OBJECTS
        .iter()
        .zip(reads.await)
        .filter(|(_, r)| matches!(r, Ok(Ok(false))))
        .map(|(o, _)| o.0.to_owned())
        .collect()
}

/// What `up` plans with on an existing cluster: the resources a status checks, plus the
/// project's APIs and the Kubernetes objects `up` applies, all read now.
pub async fn up_live_state(
    cloud: &Cloud,
    n: &ClusterNames,
    existing_pools: &[String],
) -> LiveState {
    let live = Live::read(cloud, n).await;
    let (apis, kube) = tokio::join!(apis_off(cloud, &n.project), kube_missing(cloud, &live.gke));
    let mut missing = missing(&live, existing_pools);
    if apis {
        missing.insert("apis".to_owned());
    }
    missing.extend(kube);
    LiveState { missing }
}

/// The up plan over the live facts: MISSING resources are the actions it would re-create.
fn live_plan(
    n: &ClusterNames,
    prices: &PriceTable,
    live: &Live,
    existing_pools: &[String],
    force_destroy: bool,
) -> crate::plan::Plan {
    let missing = missing(live, existing_pools);
    up::plan(&UpInput {
        names: n,
        cluster_exists: true,
        existing_pools,
        // Kubernetes objects (the driver installer among them) are not checked here.
        existing_need_driver: false,
        first_pool: None,
        accelerator_requested: false,
        force_destroy,
        prices,
        live: Some(&LiveState { missing }),
    })
}

/// Drift of a live record: MISSING (from the plan), a router without its NAT, and the
/// pools GKE has without a record or with another shape.
fn drift(
    n: &ClusterNames,
    path: &ClusterPath,
    prices: &PriceTable,
    force_destroy: bool,
    live: &Live,
    pools: &BTreeMap<String, Recorded>,
) -> Vec<Drift> {
    let recorded: Vec<String> = pools
        .iter()
        .filter(|(_, r)| r.live())
        .map(|(id, _)| id.clone())
        .collect();
    let plan = live_plan(n, prices, live, &recorded, force_destroy);
    let cluster = path.name();
    let mut out: Vec<Drift> = plan
        .actions
        .iter()
        .filter(|a| a.reason == up::MISSING_REASON)
        .map(|a| Drift {
            resource: a.name.clone(),
            resource_type: a.resource.type_name().to_owned(),
            problem: DriftProblem::Missing,
            message: format!(
                "recorded but missing in the cloud; up (PUT /v1/{cluster}) re-creates it"
            ),
        })
        .collect();
    if live.nat(n) == Some(false) {
        out.push(Drift {
            resource: cluster_resources(n).nat.unwrap_or_default(),
            resource_type: "compute.router".into(),
            problem: DriftProblem::Different,
            message: format!(
                "router {} has no Cloud NAT {}: private nodes cannot reach the internet; \
                 up re-creates it",
                n.router, n.nat
            ),
        });
    }
    out.extend(pool_drift(n, pools, &live.gke_pools()));
    out
}

/// A DELETED record expects nothing: UNRECORDED for every resource that still exists,
/// except the project's state bucket (shared, and kept by `down`).
fn leftovers(n: &ClusterNames, prices: &PriceTable, live: &Live) -> Vec<Drift> {
    let present: BTreeSet<&str> = live
        .by_action()
        .iter()
        .filter(|(id, exists, _)| *exists == Some(true) && *id != "state-bucket")
        .map(|(id, _, _)| *id)
        .collect();
    live_plan(n, prices, live, &[], true)
        .actions
        .into_iter()
        .filter(|a| present.contains(a.id.to_string().as_str()))
        .map(|a| Drift {
            resource: a.name,
            resource_type: a.resource.type_name().to_owned(),
            problem: DriftProblem::Unrecorded,
            message: "still exists although the cluster record is DELETED; delete it, or run \
                      up to adopt it"
                .into(),
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn render(
    path: &ClusterPath,
    state: ClusterState,
    n: &ClusterNames,
    live: &Live,
    pools: &BTreeMap<String, Recorded>,
    kubernetes: KubernetesStatus,
    by_pool: KubePools,
    drift: Vec<Drift>,
) -> ClusterStatus {
    let res = cluster_resources(n);
    let gke_pools = live.gke_pools();
    let pool_status = |id: &str| {
        let rec = pools.get(id);
        let gke = gke_pools.get(id).copied();
        let kube = by_pool
            .as_ref()
            .map(|m| m.get(id).cloned().unwrap_or_default());
        PoolStatus {
            pool_id: id.to_owned(),
            recorded: rec.is_some_and(Recorded::live),
            record_state: rec.map(|r| r.state),
            gke_status: gke.and_then(|p| p.status.clone()),
            nodes: kube.as_ref().map(|k| k.0.clone()),
            accelerators_allocatable: kube.as_ref().map(|k| k.1),
            accelerator: rec
                .and_then(|r| catalog_name(&r.spec.accelerator))
                .or_else(|| gke.and_then(accelerator_of)),
        }
    };
    let ids: BTreeSet<&str> = pools
        .keys()
        .map(String::as_str)
        .chain(gke_pools.keys().copied())
        .filter(|id| *id != DEFAULT_POOL)
        .collect();
    let gke = live.gke.found();
    let repo = live.repository.found();
    ClusterStatus {
        name: path.name(),
        check_time: model::timestamp(chrono::Utc::now()),
        cluster: ClusterLive {
            name: path.name(),
            state,
            gke: GkeClusterStatus {
                name: res.gke_cluster.clone().unwrap_or_default(),
                exists: live.gke.exists(),
                status: gke.and_then(|c| c.status.clone()),
                endpoint: gke.and_then(|c| c.endpoint.clone()),
                location: gke.and_then(|c| c.location.clone()),
                current_master_version: gke.and_then(|c| c.current_master_version.clone()),
                error: live.gke.error(),
            },
        },
        buckets: BucketsStatus {
            jobs: bucket(&res.jobs_bucket, &live.jobs_bucket),
            builds: bucket(&res.builds_bucket, &live.builds_bucket),
            state: bucket(&res.state_bucket, &live.state_bucket),
        },
        repository: RepositoryStatus {
            name: res.artifact_repository.clone().unwrap_or_default(),
            exists: live.repository.exists(),
            location: repo.map(|r| {
                let mut segs = r.name.split('/').skip_while(|s| *s != "locations");
                segs.nth(1).unwrap_or(&n.repository_location).to_owned()
            }),
            format: repo.and_then(|r| non_empty(&r.format)),
            error: live.repository.error(),
        },
        network: resource(&res.network, &live.network),
        router: RouterStatus {
            name: res.router.clone().unwrap_or_default(),
            exists: live.router.exists(),
            nat: ResourceStatus {
                name: res.nat.clone().unwrap_or_default(),
                exists: live.nat(n).or(live.router.exists()),
                error: live.router.error(),
            },
            error: live.router.error(),
        },
        service_accounts: ServiceAccountsStatus {
            node: resource(&res.node_service_account, &live.node_sa),
            build: resource(&res.build_service_account, &live.build_sa),
        },
        node_pools: ids.iter().map(|id| pool_status(id)).collect(),
        default_pool: gke_pools
            .contains_key(DEFAULT_POOL)
            .then(|| pool_status(DEFAULT_POOL)),
        kubernetes,
        drift,
    }
}

/// Every read failed: say which call and how, not the transport's internals.
fn cloud_unavailable(project: &str, first: &GcpError) -> Error {
    Error::new(
        RpcCode::Unavailable,
        "CLOUD_UNAVAILABLE",
        format!(
            "none of the cluster's cloud resources could be read ({}.{} answered {} {}); \
             check that kineticd's service account may read project {project}, then retry",
            first.service, first.method, first.status, first.reason
        ),
    )
    .with("project", project)
    .with("service", first.service)
    .with("cloudReason", &first.reason)
}
