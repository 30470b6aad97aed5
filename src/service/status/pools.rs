//! Node pools in a status: recorded pools and GKE's, their nodes from the Kubernetes
//! API, and how a pool's record and GKE's view of it can differ.
//!
//! Invariant: a pool's record (spot, reservation, autoscaling bounds) is the truth;
//! GKE's configuration is only ever compared with it here, never written back.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::cloud::Cloud;
use crate::cloud::gcp::types::container::{Cluster as GkeCluster, NodeConfig, NodePool as GkePool};
use crate::cloud::kube::{ClusterAccess, Inventory};
use crate::domain::PoolState;
use crate::domain::resource_names::ClusterNames;
use crate::model::status::{Drift, DriftProblem, KubernetesStatus, NodeCounts};
use crate::store::PoolSpecRecord;

use super::Probe;

pub use super::super::adopt::import::DEFAULT_POOL;
use super::super::adopt::import::{self, NotImportable};
/// How long the Kubernetes API may take before it counts as unreachable.
pub(super) const KUBE_TIMEOUT: Duration = Duration::from_secs(20);

/// A recorded pool: its state and the shape it was created with.
pub struct Recorded {
    pub state: PoolState,
    pub spec: PoolSpecRecord,
}

impl Recorded {
    /// Not DELETED.
    pub fn live(&self) -> bool {
        self.state != PoolState::Deleted
    }
}

/// Per GKE pool: (ready/total nodes, allocatable accelerators), or why Kubernetes could
/// not be read.
pub type KubePools = Option<BTreeMap<String, (NodeCounts, u64)>>;

pub(super) async fn kube_pools(
    cloud: &Cloud,
    gke: &Probe<GkeCluster>,
) -> (KubernetesStatus, KubePools) {
    let unreachable = |message: String| {
        (
            KubernetesStatus {
                reachable: false,
                message: Some(message),
            },
            None,
        )
    };
    let access = match gke {
        Probe::Found(c) => ClusterAccess::for_gke(c),
        Probe::Absent => return unreachable("the GKE cluster does not exist".into()),
        Probe::Unknown(_) => return unreachable("the GKE cluster could not be read".into()),
    };
    let Some(access) = access else {
        return unreachable("the GKE cluster has no endpoint yet".into());
    };
    let nodes = tokio::time::timeout(KUBE_TIMEOUT, cloud.kube.cluster(access).nodes()).await;
    match nodes {
        Ok(Ok(nodes)) => {
            let inv = Inventory {
                nodes,
                pods: Vec::new(),
            };
            let by = inv
                .pools()
                .into_iter()
                .map(|s| {
                    let counts = NodeCounts {
                        ready: s.ready,
                        total: s.nodes,
                    };
                    (s.pool, (counts, s.gpus + s.tpus))
                })
                .collect();
            (
                KubernetesStatus {
                    reachable: true,
                    message: None,
                },
                Some(by),
            )
        }
        Ok(Err(e)) => unreachable(e.to_string()),
        Err(_) => unreachable(format!(
            "the Kubernetes API did not answer within {}s",
            KUBE_TIMEOUT.as_secs()
        )),
    }
}

/// UNRECORDED GKE pools and recorded pools whose live shape differs.
pub fn pool_drift(
    n: &ClusterNames,
    pools: &BTreeMap<String, Recorded>,
    gke_pools: &BTreeMap<&str, &GkePool>,
) -> Vec<Drift> {
    let name = |id: &str| format!("{}/nodePools/{id}", n.gke_cluster());
    let mut out = Vec::new();
    for (id, live) in gke_pools {
        if *id == DEFAULT_POOL {
            continue;
        }
        match pools.get(*id).filter(|r| r.live()) {
            None => out.push(Drift {
                resource: name(id),
                resource_type: "container.nodePool".into(),
                problem: DriftProblem::Unrecorded,
                message: unrecorded_advice(live),
            }),
            Some(r) => {
                let diffs = differences(&r.spec, live);
                if !diffs.is_empty() {
                    out.push(Drift {
                        resource: name(id),
                        resource_type: "container.nodePool".into(),
                        problem: DriftProblem::Different,
                        message: format!(
                            "GKE's configuration differs from the record: {}",
                            diffs.join("; ")
                        ),
                    });
                }
            }
        }
    }
    out
}

/// GPU partition size and sharing: recorded vs GKE's accelerator config.
fn sharing_differences(spec: &PoolSpecRecord, cfg: &NodeConfig) -> Vec<String> {
    let acc = cfg.accelerators.first();
    let show = |v: Option<String>| v.unwrap_or_else(|| "none".into());
    let mut out = Vec::new();
    let partition = acc
        .and_then(|a| a.gpu_partition_size.clone())
        .filter(|s| !s.is_empty());
    if partition != spec.partition_size {
        out.push(format!(
            "gpuPartitionSize: recorded {}, GKE {}",
            show(spec.partition_size.clone()),
            show(partition)
        ));
    }
    let live = acc.and_then(|a| a.gpu_sharing_config.as_ref()).map(|s| {
        format!(
            "{} x{}",
            s.gpu_sharing_strategy, s.max_shared_clients_per_gpu
        )
    });
    let recorded = spec
        .sharing
        .as_ref()
        .map(|s| format!("{} x{}", s.strategy.as_str(), s.max_clients_per_gpu));
    if live != recorded {
        out.push(format!(
            "gpuSharingConfig: recorded {}, GKE {}",
            show(recorded),
            show(live)
        ));
    }
    out
}

/// What differs between a pool's record and GKE: spot, reservation, GPU partitions and
/// sharing, autoscaling bounds.
pub fn differences(spec: &PoolSpecRecord, live: &GkePool) -> Vec<String> {
    let mut out = Vec::new();
    let cfg = live.config.clone().unwrap_or_default();
    let spot = cfg.spot.unwrap_or(false);
    if spot != spec.spot {
        out.push(format!("spot: recorded {}, GKE {spot}", spec.spot));
    }
    let reservation = cfg
        .reservation_affinity
        .as_ref()
        .filter(|a| a.consume_reservation_type == "SPECIFIC_RESERVATION")
        .and_then(|a| a.values.first().cloned());
    if reservation != spec.reservation {
        let show = |r: &Option<String>| r.clone().unwrap_or_else(|| "none".into());
        out.push(format!(
            "reservation: recorded {}, GKE {}",
            show(&spec.reservation),
            show(&reservation)
        ));
    }
    out.extend(sharing_differences(spec, &cfg));
    match import::bounds(live) {
        None => out.push(format!(
            "autoscaling: recorded {}..{}, GKE off",
            spec.min_nodes, spec.max_nodes
        )),
        Some((min, max)) if (min, max) != (spec.min_nodes, spec.max_nodes) => {
            out.push(format!(
                "autoscaling: recorded {}..{}, GKE {min}..{max}",
                spec.min_nodes, spec.max_nodes
            ));
        }
        Some(_) => {}
    }
    out
}

/// The catalog entry a GKE pool's configuration matches (for unrecorded pools).
pub fn accelerator_of(p: &GkePool) -> Option<String> {
    import::accelerator_of(p).map(|r| r.base_name())
}

/// What to do about a pool GKE has and kineticd has no record of: import it when it
/// can be, else remove it.
fn unrecorded_advice(live: &GkePool) -> String {
    match import::importable(live) {
        Ok(_) => format!(
            "GKE has this node pool but kineticd has no record of it; it carries kinetic's \
             mark: import it with POST .../nodePools/{}:import (or run up, which imports \
             every such pool)",
            live.name
        ),
        Err(why @ (NotImportable::NotOurs | NotImportable::NoAccelerator(_))) => format!(
            "GKE has this node pool but kineticd has no record of it, and cannot import it \
             ({why}); remove it in GKE or it keeps costing money unseen"
        ),
        Err(why) => format!("GKE has this node pool but kineticd has no record of it ({why})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::gcp::types::container::{
        AcceleratorConfig, NodeConfig, NodePoolAutoscaling, PlacementPolicy, ReservationAffinity,
    };

    fn gke(machine: &str, gpu: Option<(&str, i64)>, topology: Option<&str>) -> GkePool {
        GkePool {
            name: "p".into(),
            config: Some(NodeConfig {
                machine_type: Some(machine.into()),
                accelerators: gpu
                    .map(|(t, c)| AcceleratorConfig {
                        accelerator_type: t.into(),
                        accelerator_count: c,
                        ..Default::default()
                    })
                    .into_iter()
                    .collect(),
                ..Default::default()
            }),
            placement_policy: topology.map(|t| PlacementPolicy {
                kind: Some("COMPACT".into()),
                tpu_topology: Some(t.into()),
            }),
            autoscaling: Some(NodePoolAutoscaling {
                enabled: Some(true),
                min_node_count: Some(0),
                max_node_count: Some(10),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn accelerators_of_gke_pools() {
        let of = |p: GkePool| accelerator_of(&p);
        let l4 = of(gke("g2-standard-24", Some(("nvidia-l4", 2)), None));
        assert_eq!(l4.as_deref(), Some("gpu-l4x2"));
        let v5e = of(gke("ct5lp-hightpu-4t", None, Some("4x4")));
        assert_eq!(v5e.as_deref(), Some("tpu-v5litepod-16"));
        let single = of(gke("ct5lp-hightpu-4t", None, None));
        assert_eq!(single.as_deref(), Some("tpu-v5litepod-4"));
        assert_eq!(of(gke("e2-standard-4", None, None)), None);
    }

    #[test]
    fn differences_in_spot_reservation_and_autoscaling() {
        let spec = PoolSpecRecord {
            min_nodes: 0,
            max_nodes: 10,
            ..Default::default()
        };
        let same = gke("g2-standard-4", Some(("nvidia-l4", 1)), None);
        assert!(differences(&spec, &same).is_empty());
        let mut other = same.clone();
        if let Some(c) = other.config.as_mut() {
            c.spot = Some(true);
            c.reservation_affinity = Some(ReservationAffinity {
                consume_reservation_type: "SPECIFIC_RESERVATION".into(),
                key: Some("compute.googleapis.com/reservation-name".into()),
                values: vec!["r1".into()],
            });
        }
        other.autoscaling = None;
        let d = differences(&spec, &other);
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d[0].starts_with("spot") && d[1].contains("r1") && d[2].contains("off"));
    }

    #[test]
    fn differences_in_gpu_partitions_and_sharing() {
        let spec = PoolSpecRecord {
            min_nodes: 0,
            max_nodes: 10,
            partition_size: Some("1g.5gb".into()),
            sharing: Some(crate::store::persisted::SharingRecord {
                strategy: crate::domain::gpu_sharing::Strategy::TimeSharing,
                max_clients_per_gpu: 3,
            }),
            ..Default::default()
        };
        let mut live = gke("a2-highgpu-1g", Some(("nvidia-tesla-a100", 1)), None);
        fn acc(p: &mut GkePool) -> &mut AcceleratorConfig {
            &mut p.config.as_mut().expect("config").accelerators[0]
        }
        acc(&mut live).gpu_partition_size = Some("1g.5gb".into());
        acc(&mut live).gpu_sharing_config =
            Some(crate::cloud::gcp::types::container::GpuSharingConfig {
                gpu_sharing_strategy: "TIME_SHARING".into(),
                max_shared_clients_per_gpu: 3,
            });
        assert!(differences(&spec, &live).is_empty());
        acc(&mut live).gpu_partition_size = Some("2g.10gb".into());
        acc(&mut live).gpu_sharing_config = None;
        assert_eq!(
            differences(&spec, &live),
            [
                "gpuPartitionSize: recorded 1g.5gb, GKE 2g.10gb",
                "gpuSharingConfig: recorded TIME_SHARING x3, GKE none"
            ]
        );
    }
}
