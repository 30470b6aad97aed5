//! Live reads shared by the cluster read views (`.../capacity`, `:checkWorkload`): the
//! GKE cluster and the region's quotas (concurrently), then the cluster's nodes and pods
//! through its Kubernetes API (concurrently, each bounded in time), and the pool records.
//!
//! Invariant: every read is timed apart ([`Timing`]), so a view reports what its own
//! judgement cost separately from the cloud's latency; errors are the views' common
//! contract: no GKE cluster 409 GKE_CLUSTER_NOT_FOUND, no endpoint yet 503
//! CLUSTER_NOT_READY (with Retry-After: it is transient), GKE or Kubernetes unreadable
//! 503 CLOUD_UNAVAILABLE / KUBERNETES_UNAVAILABLE. An unreadable region only leaves quota unjudged.

use std::time::{Duration, Instant};

use crate::cloud::Cloud;
use crate::cloud::gcp::types::compute::Region;
use crate::cloud::gcp::types::container::Cluster as GkeCluster;
use crate::cloud::kube::{ClusterAccess, NodeInfo, PodInfo};
use crate::domain::resource_names::ClusterNames;
use crate::domain::{PoolState, RpcCode};
use crate::store::{self, Db, PoolSpecRecord};

use super::{Error, Result};

/// How long the Kubernetes API may take to list nodes or pods.
const KUBE_TIMEOUT: Duration = Duration::from_secs(20);

/// How long each read took, and the view's own computation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timing {
    /// GKE `clusters.get` and Compute `regions.get` (concurrent).
    pub cloud: Duration,
    /// Both Kubernetes lists, which run concurrently (wall time).
    pub kube: Duration,
    /// The Kubernetes node list.
    pub list_nodes: Duration,
    /// The Kubernetes pod list (all namespaces).
    pub list_pods: Duration,
    /// The view's pure computation (set by the view).
    pub compute: Duration,
}

/// What the cloud says about one cluster now.
#[derive(Debug, Clone)]
pub struct Live {
    pub gke: GkeCluster,
    /// `None` when Compute could not be read (logged).
    pub region: Option<Region>,
    pub nodes: Vec<NodeInfo>,
    pub pods: Vec<PodInfo>,
    pub timing: Timing,
}

/// The cluster's pool records that are not deleted, spec carrying its pool id.
pub async fn pool_records(db: &Db, cluster_id: uuid::Uuid) -> Result<Vec<PoolSpecRecord>> {
    Ok(store::node_pools::list(db, cluster_id, None, 10_000)
        .await?
        .into_iter()
        .filter(|p| p.state != PoolState::Deleted)
        .map(|p| PoolSpecRecord {
            pool_id: p.pool_id,
            ..p.spec
        })
        .collect())
}

/// Read the cluster `n` live (see the module's error contract).
pub async fn read(cloud: &Cloud, n: &ClusterNames) -> Result<Live> {
    let started = Instant::now();
    let (gke, region) = tokio::join!(
        gke(cloud, n),
        cloud.gcp.compute.get_region(&n.project, &n.region),
    );
    let cloud_time = started.elapsed();
    let gke = gke?;
    let region = region
        .inspect_err(|e| tracing::warn!(error = %e, region = %n.region, "region quotas not read; quota not judged"))
        .ok();
    let access = access(&gke)?;
    let k = cloud.kube.cluster(access);
    let started = Instant::now();
    let (nodes, pods) = tokio::join!(
        timed("list nodes", k.nodes()),
        timed("list pods", k.pods(None))
    );
    let kube = started.elapsed();
    let ((nodes, list_nodes), (pods, list_pods)) = (nodes?, pods?);
    Ok(Live {
        gke,
        region,
        nodes,
        pods,
        timing: Timing {
            cloud: cloud_time,
            kube,
            list_nodes,
            list_pods,
            compute: Duration::ZERO,
        },
    })
}

/// The GKE cluster `n` (`clusters.get`): 409 GKE_CLUSTER_NOT_FOUND when GKE has none,
/// 503 CLOUD_UNAVAILABLE when it cannot be read.
pub async fn gke(cloud: &Cloud, n: &ClusterNames) -> Result<GkeCluster> {
    cloud
        .gcp
        .container
        .get_cluster(&n.project, &n.zone, &n.cluster)
        .await
        .map_err(|e| {
            if e.is_not_found() {
                Error::precondition(
                    "GKE_CLUSTER_NOT_FOUND",
                    format!(
                        "GKE has no cluster {}; run up to create it",
                        n.gke_cluster()
                    ),
                )
            } else {
                gke_unreadable(&e)
            }
        })
}

/// 503 CLOUD_UNAVAILABLE: GKE's `clusters.get` answered `e`.
pub fn gke_unreadable(e: &crate::cloud::gcp::GcpError) -> Error {
    unavailable(
        "CLOUD_UNAVAILABLE",
        format!("the GKE cluster could not be read: {e}"),
    )
    .with("service", e.service)
    .with("method", e.method)
    .with("cloudReason", &e.reason)
    .was("GKE_UNAVAILABLE")
}

/// How to reach the API server of `gke`: 503 CLUSTER_NOT_READY (with Retry-After) until
/// it has an endpoint.
pub fn access(gke: &GkeCluster) -> Result<ClusterAccess> {
    ClusterAccess::for_gke(gke).ok_or_else(|| {
        Error::unavailable(
            "CLUSTER_NOT_READY",
            "the GKE cluster has no endpoint yet; retry once it is RUNNING",
            30,
        )
    })
}

/// One Kubernetes list, bounded by [`KUBE_TIMEOUT`], and how long it took.
async fn timed<T, E: std::fmt::Display>(
    what: &str,
    f: impl Future<Output = std::result::Result<T, E>>,
) -> Result<(T, Duration)> {
    let started = Instant::now();
    let out = tokio::time::timeout(KUBE_TIMEOUT, f)
        .await
        .map_err(|_| {
            unavailable(
                "KUBERNETES_UNAVAILABLE",
                format!(
                    "the cluster's Kubernetes API did not {what} within {}s",
                    KUBE_TIMEOUT.as_secs()
                ),
            )
        })?
        .map_err(|e| {
            unavailable(
                "KUBERNETES_UNAVAILABLE",
                format!("the cluster's Kubernetes API could not be read: {e}"),
            )
        })?;
    Ok((out, started.elapsed()))
}

fn unavailable(reason: &str, message: String) -> Error {
    Error::new(RpcCode::Unavailable, reason, message)
}
