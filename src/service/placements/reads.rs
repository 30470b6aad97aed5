//! The cloud reads of a placement search, all started at once and all bounded by one
//! deadline: per team cluster its GKE cluster and its nodes and pods (the free
//! accelerators); per candidate region its quotas and zones, then per zone whether it
//! offers the accelerator, Compute's capacity advice and the project's reservations.
//!
//! A cluster's endpoint is remembered between searches ([`AccessCache`]), so a search
//! asks GKE only for clusters it has not reached in the last ten minutes.
//!
//! Invariant: nothing here fails the search: a read that errs or misses the deadline
//! is a warning naming what was not read, and what depended on it is left out (a
//! cluster's free accelerators, a zone) or left unjudged (quota, advice: `None`).

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::join_all;
use tokio::time::{Instant, timeout_at};

use crate::cloud::Cloud;
use crate::cloud::gcp::types::advice::{
    CapacityAdviceRequest, DistributionPolicy, InstanceFlexibilityPolicy, InstanceProperties,
    InstanceSelection, Scheduling, ZoneConfiguration,
};
use crate::cloud::gcp::types::compute::Region;
use crate::cloud::gcp::types::reservation::{Reservation, ReservedAccelerator};
use crate::cloud::kube::{ClusterAccess, NodeInfo, PodInfo};
use crate::domain::accelerators::{Kind, Resolved};
use crate::domain::provisioning::Provisioning;
use crate::domain::resource_names::ClusterNames;

use super::super::live;
use super::super::provision::placement::offered;
use super::access_cache::AccessCache;

/// One team cluster as read: its nodes and pods (`Err`: the warning).
pub struct ClusterRead {
    pub names: ClusterNames,
    pub read: Result<(Vec<NodeInfo>, Vec<PodInfo>), String>,
}

/// One zone of a candidate region as read.
pub struct ZoneRead {
    pub zone: String,
    /// Whether the zone offers the accelerator (`None`: could not tell).
    pub offered: Option<bool>,
    /// Compute's obtainability for the zone (`None`: no answer).
    pub obtainability: Option<f64>,
    /// The project's reservations in the zone (`None`: not read, or not asked).
    pub reservations: Option<Vec<Reservation>>,
}

/// One candidate (project, region) as read.
pub struct RegionRead {
    pub project: String,
    pub region: String,
    /// `Err`: why the region could not be read (HTTP 404 says it does not exist).
    pub region_read: Result<Region, (u16, String)>,
    pub zones: Vec<ZoneRead>,
}

/// What a search reads, and the warnings of what it could not.
pub struct Reads {
    pub clusters: Vec<ClusterRead>,
    pub regions: Vec<RegionRead>,
    pub warnings: Vec<String>,
}

/// The question the reads are for.
pub struct Ask<'a> {
    pub acc: &'a Resolved,
    pub mode: Provisioning,
    /// VMs (nodes) a new pool would start.
    pub vms: u32,
    /// Only these zones (empty: every zone of each region).
    pub zones: &'a [String],
    /// Read reservations (modes that can consume them).
    pub reservations: bool,
}

fn late(what: &str, deadline: Duration) -> String {
    format!(
        "{what} did not answer within the search's {} ms deadline",
        deadline.as_millis()
    )
}

/// Read everything for `ask`: `clusters` and `regions` ((project, region) pairs) at
/// once, each bounded by `budget` from now.
pub async fn read(
    cloud: &Cloud,
    cache: &AccessCache,
    ask: &Ask<'_>,
    clusters: Vec<ClusterNames>,
    regions: Vec<(String, String)>,
    budget: Duration,
) -> Reads {
    let deadline = Instant::now() + budget;
    let cluster_reads = join_all(
        clusters
            .into_iter()
            .map(|n| read_cluster(cloud, cache, n, deadline, budget)),
    );
    let region_reads = join_all(
        regions
            .into_iter()
            .map(|(p, r)| read_region(cloud, ask, p, r, deadline, budget)),
    );
    let (clusters, regions) = tokio::join!(cluster_reads, region_reads);
    let mut warnings = Vec::new();
    for c in &clusters {
        if let Err(w) = &c.read {
            warnings.push(w.clone());
        }
    }
    let regions = regions
        .into_iter()
        .map(|(r, w)| {
            warnings.extend(w);
            r
        })
        .collect();
    Reads {
        clusters,
        regions,
        warnings,
    }
}

async fn read_cluster(
    cloud: &Cloud,
    cache: &AccessCache,
    n: ClusterNames,
    deadline: Instant,
    budget: Duration,
) -> ClusterRead {
    let name = format!("cluster {}", n.gke_cluster());
    let key = n.gke_cluster();
    let work = async {
        if let Some(access) = cache.get(&key) {
            match lists(cloud, access).await {
                Ok(r) => return Ok(r),
                // Perhaps recreated: ask GKE again below.
                Err(_) => cache.forget(&key),
            }
        }
        let gke = live::gke(cloud, &n).await.map_err(|e| e.to_string())?;
        let access = live::access(&gke).map_err(|e| e.to_string())?;
        cache.put(&key, access.clone());
        lists(cloud, access)
            .await
            .inspect_err(|_| cache.forget(&key))
    };
    let read = match timeout_at(deadline, work).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(format!(
            "{name} not read, its free accelerators are left out: {e}"
        )),
        Err(_) => Err(format!(
            "{}; its free accelerators are left out",
            late(&name, budget)
        )),
    };
    ClusterRead { names: n, read }
}

/// The cluster's nodes and pods (listed at once).
async fn lists(
    cloud: &Cloud,
    access: ClusterAccess,
) -> Result<(Vec<NodeInfo>, Vec<PodInfo>), String> {
    let k = cloud.kube.cluster(access);
    let (nodes, pods) = tokio::join!(k.nodes(), k.pods(None));
    let nodes = nodes.map_err(|e| format!("its nodes could not be listed: {e}"))?;
    let pods = pods.map_err(|e| format!("its pods could not be listed: {e}"))?;
    Ok((nodes, pods))
}

/// Compute's provisioning model for a kineticd mode.
fn model(mode: Provisioning) -> &'static str {
    match mode {
        Provisioning::Spot => "SPOT",
        Provisioning::FlexStart | Provisioning::Queued => "FLEX_START",
        Provisioning::OnDemand | Provisioning::Reservation => "STANDARD",
    }
}

/// The advice request for `ask` in one zone.
pub fn advice_request(ask: &Ask<'_>, zone: &str) -> CapacityAdviceRequest {
    let acc = ask.acc;
    let guest = match acc.kind {
        Kind::Gpu => vec![ReservedAccelerator {
            accelerator_type: acc.gke_accelerator_type.to_owned(),
            accelerator_count: i32::try_from(acc.count).ok(),
        }],
        Kind::Tpu => Vec::new(),
    };
    CapacityAdviceRequest {
        size: i32::try_from(ask.vms).ok(),
        distribution_policy: Some(DistributionPolicy {
            target_shape: Some("ANY_SINGLE_ZONE".into()),
            zones: vec![ZoneConfiguration {
                zone: format!("zones/{zone}"),
            }],
        }),
        instance_flexibility_policy: Some(InstanceFlexibilityPolicy {
            instance_selections: BTreeMap::from([(
                "kinetic".to_owned(),
                InstanceSelection {
                    machine_types: vec![acc.machine_type.to_owned()],
                    guest_accelerators: guest,
                },
            )]),
        }),
        instance_properties: Some(InstanceProperties {
            scheduling: Some(Scheduling {
                provisioning_model: Some(model(ask.mode).into()),
            }),
        }),
    }
}

async fn read_region(
    cloud: &Cloud,
    ask: &Ask<'_>,
    project: String,
    region: String,
    deadline: Instant,
    budget: Duration,
) -> (RegionRead, Vec<String>) {
    let compute = &cloud.gcp.compute;
    let mut warnings = Vec::new();
    let what = format!("region {region} of project {project}");
    let region_read = match timeout_at(deadline, compute.get_region(&project, &region)).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err((e.http_status, e.to_string())),
        Err(_) => Err((0, late(&what, budget))),
    };
    let zones: Vec<String> = match &region_read {
        Ok(r) => r
            .zones
            .iter()
            .filter_map(|z| z.rsplit('/').next())
            .filter(|z| ask.zones.is_empty() || ask.zones.iter().any(|w| w == z))
            .map(str::to_owned)
            .collect(),
        Err((404, _)) => Vec::new(),
        Err((_, e)) => {
            warnings.push(format!(
                "{what} not read, its quota and zones are not judged: {e}"
            ));
            Vec::new()
        }
    };
    let reads = join_all(zones.into_iter().map(|z| {
        let project = project.as_str();
        let region = region.as_str();
        async move {
            let offered = timeout_at(deadline, offered(cloud, project, &z, ask.acc));
            let req = advice_request(ask, &z);
            let advice = timeout_at(deadline, compute.capacity_advice(project, region, &req));
            let reservations = async {
                if ask.reservations {
                    Some(timeout_at(deadline, compute.list_reservations(project, &z)).await)
                } else {
                    None
                }
            };
            let (offered, advice, reservations) = tokio::join!(offered, advice, reservations);
            let mut w = Vec::new();
            let offered = match offered {
                Ok(Ok(o)) => Some(o),
                Ok(Err(e)) => {
                    w.push(format!(
                        "whether zone {z} offers {} could not be read: {e}",
                        ask.acc.base_name()
                    ));
                    None
                }
                Err(_) => {
                    w.push(late(&format!("zone {z}'s accelerator types"), budget));
                    None
                }
            };
            let obtainability = match advice {
                Ok(Ok(a)) => a.obtainability(),
                Ok(Err(e)) => {
                    w.push(format!(
                        "Compute's capacity advice for zone {z} is not available: {e}"
                    ));
                    None
                }
                Err(_) => {
                    w.push(late(&format!("Compute's capacity advice for {z}"), budget));
                    None
                }
            };
            let reservations = match reservations {
                None => None,
                Some(Ok(Ok(r))) => Some(r),
                Some(Ok(Err(e))) => {
                    w.push(format!(
                        "the reservations of project {project} in zone {z} could not be read: {e}"
                    ));
                    None
                }
                Some(Err(_)) => {
                    w.push(late(&format!("the reservations in {z}"), budget));
                    None
                }
            };
            (
                ZoneRead {
                    zone: z,
                    offered,
                    obtainability,
                    reservations,
                },
                w,
            )
        }
    }))
    .await;
    let mut out = Vec::new();
    for (z, w) in reads {
        warnings.extend(w);
        out.push(z);
    }
    (
        RegionRead {
            project,
            region,
            region_read,
            zones: out,
        },
        warnings,
    )
}
