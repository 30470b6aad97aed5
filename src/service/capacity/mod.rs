//! A cluster's accelerator capacity (`GET .../clusters/{c}/capacity`): reads the GKE
//! cluster (endpoint, pool ceilings), the region's quotas, the pool records and the
//! cluster's nodes and pods through the production clients, then hands plain views to
//! the pure [`compute`] step.
//!
//! Invariant: all I/O is here and all judgement in [`compute`]; the time spent in each
//! read is measured apart from the computation and returned with the report
//! ([`Timing`]), so a slow Kubernetes API is never mistaken for a slow computation.
//! VIEWER+ may read; others get the same 404 as for every cluster read.

pub mod compute;
pub mod pending;
pub mod pools;

use std::collections::BTreeMap;
use std::time::Instant;

use crate::cloud::gcp::types::compute::Region;
use crate::cloud::gcp::types::container::{Cluster as GkeCluster, NodePool as GkePool};
use crate::cloud::kube::NodeInfo;
use crate::cloud::kube::inventory::{GPU_RESOURCE, NODEPOOL_LABEL, TPU_RESOURCE, Taint};
use crate::domain::accelerators::{self, Choice, Kind};
use crate::domain::gpu_sharing::GpuSharing;
use crate::domain::quota;
use crate::domain::resource_names::ClusterNames;
use crate::model;
use crate::model::capacity::ClusterCapacity;
use crate::store::PoolSpecRecord;

use super::Services;

use super::clusters::{ClusterPath, record};
use super::live;
use super::{Caller, Result};
use compute::{Facts, compute};
use pools::{GPU_TYPE_LABEL, PoolFacts, TPU_TYPE_LABEL};

pub use super::live::Timing;

/// The report and what it cost to make.
#[derive(Debug, Clone)]
pub struct Report {
    pub capacity: ClusterCapacity,
    pub timing: Timing,
}

/// Capacity of the cluster at `path` (VIEWER+; 404 like the other cluster reads).
pub async fn get(svc: &Services, caller: &Caller, path: &ClusterPath) -> Result<Report> {
    let (db, cloud, prices) = (&svc.db, svc.cloud.as_ref(), svc.prices.as_ref());
    let rec = record(db, caller, path).await?;
    let records: BTreeMap<String, PoolSpecRecord> = live::pool_records(db, rec.id)
        .await?
        .into_iter()
        .map(|p| (p.pool_id.clone(), p))
        .collect();
    let n = ClusterNames::new(&path.project, &path.zone, &path.cluster);
    let mut live = live::read(cloud, &n).await?;
    let facts = pool_facts(&live.gke, &records, live.region.as_ref());
    let started = Instant::now();
    let mut capacity = compute(&Facts {
        nodes: &live.nodes,
        pods: &live.pods,
        pools: &facts,
        prices,
    });
    live.timing.compute = started.elapsed();
    capacity.name = path.name();
    capacity.check_time = model::timestamp(chrono::Utc::now());
    Ok(Report {
        capacity,
        timing: live.timing,
    })
}

/// Per pool (recorded or in GKE): the ceiling, the quota headroom and a template node.
fn pool_facts(
    gke: &GkeCluster,
    records: &BTreeMap<String, PoolSpecRecord>,
    region: Option<&Region>,
) -> Vec<PoolFacts> {
    let live: BTreeMap<&str, &GkePool> = gke
        .node_pools
        .iter()
        .map(|p| (p.name.as_str(), p))
        .collect();
    let ids: std::collections::BTreeSet<&str> = records
        .keys()
        .map(String::as_str)
        .chain(live.keys().copied())
        .collect();
    ids.into_iter()
        .map(|id| {
            let rec = records.get(id);
            let gke_pool = live.get(id).copied();
            PoolFacts {
                pool_id: id.to_owned(),
                max_nodes: max_nodes(rec, gke_pool),
                quota_headroom: rec.and_then(|r| headroom(r, region)),
                template: rec.and_then(|r| template(id, r)),
            }
        })
        .collect()
}

/// The ceiling in nodes across zones: the record's bounds (per zone, like GKE's), else
/// GKE's autoscaling, else the fixed size GKE reports.
fn max_nodes(rec: Option<&PoolSpecRecord>, gke: Option<&GkePool>) -> Option<u32> {
    let zones = |n: usize| u32::try_from(n.max(1)).unwrap_or(1);
    if let Some(r) = rec {
        let per_zone = u32::try_from(r.max_nodes).ok()?;
        let z = gke.map_or(r.zones.len(), |g| g.locations.len().max(r.zones.len()));
        return Some(per_zone * zones(z));
    }
    let g = gke?;
    let z = zones(g.locations.len());
    match g.autoscaling.as_ref().filter(|a| a.enabled == Some(true)) {
        Some(a) => match (a.total_max_node_count, a.max_node_count) {
            (Some(t), _) => u32::try_from(t).ok(),
            (None, Some(m)) => u32::try_from(m).ok().map(|m| m * z),
            _ => None,
        },
        None => u32::try_from(g.initial_node_count?).ok().map(|n| n * z),
    }
}

/// Accelerators the region's quota still allows for a recorded pool's metric.
fn headroom(rec: &PoolSpecRecord, region: Option<&Region>) -> Option<u64> {
    let Ok(Choice::Accelerator(acc)) = accelerators::parse(&rec.accelerator) else {
        return None;
    };
    let preemptible = quota::preemptible(rec.spot, rec.provisioning);
    let q = region?.quota(&quota::metric(&acc, preemptible)?)?;
    Some((q.limit - q.usage).max(0.0) as u64)
}

/// A node as a recorded pool creates it (labels and taints as GKE sets them).
fn template(id: &str, rec: &PoolSpecRecord) -> Option<NodeInfo> {
    let Ok(Choice::Accelerator(acc)) = accelerators::parse(&rec.accelerator) else {
        return None;
    };
    // A partitioned or shared GPU is advertised as several units, labelled by GKE.
    let sharing = GpuSharing::from_stored(
        acc.gke_accelerator_type,
        rec.partition_size.as_deref(),
        rec.sharing.as_ref().map(|s| s.strategy),
        rec.sharing.as_ref().map(|s| s.max_clients_per_gpu),
    )
    .filter(|_| acc.kind == Kind::Gpu);
    let per_node =
        u64::from(acc.per_node()) * u64::from(sharing.as_ref().map_or(1, |g| g.units_per_gpu()));
    let (type_label, resource) = match acc.kind {
        Kind::Gpu => (GPU_TYPE_LABEL, GPU_RESOURCE),
        Kind::Tpu => (TPU_TYPE_LABEL, TPU_RESOURCE),
    };
    let mut labels = rec.labels.clone();
    labels.insert(NODEPOOL_LABEL.into(), id.into());
    labels.insert(type_label.into(), acc.gke_accelerator_type.into());
    if rec.spot {
        labels.insert("cloud.google.com/gke-spot".into(), "true".into());
    }
    for (k, v) in sharing.iter().flat_map(GpuSharing::node_labels) {
        labels.insert(k.into(), v);
    }
    let mut taints: Vec<Taint> = rec
        .taints
        .iter()
        .map(|t| Taint {
            key: t.key.clone(),
            value: Some(t.value.clone()),
            effect: t.effect.kube_str().to_owned(),
        })
        .collect();
    taints.push(Taint {
        key: resource.into(),
        value: Some("present".into()),
        effect: "NoSchedule".into(),
    });
    let (gpus, tpus) = match acc.kind {
        Kind::Gpu => (per_node, 0),
        Kind::Tpu => (0, per_node),
    };
    Some(NodeInfo {
        uid: String::new(),
        name: format!("{id} (template)"),
        pool: Some(id.into()),
        zone: None,
        instance_type: Some(rec.machine_type.clone()),
        spot: rec.spot,
        ready: false,
        unschedulable: false,
        labels,
        taints,
        gpus,
        tpus,
        cpu_millis: 0,
        memory_bytes: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::gcp::types::container::NodePoolAutoscaling;
    use crate::store::persisted::TaintRecord;

    fn gke(locations: usize, autoscaling: Option<(Option<i32>, Option<i32>)>) -> GkePool {
        GkePool {
            name: "p".into(),
            initial_node_count: Some(2),
            locations: (0..locations).map(|i| format!("us-central1-{i}")).collect(),
            autoscaling: autoscaling.map(|(per_zone, total)| NodePoolAutoscaling {
                enabled: Some(true),
                max_node_count: per_zone,
                total_max_node_count: total,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn ceilings_from_records_then_gke() {
        let rec = PoolSpecRecord {
            max_nodes: 4,
            ..Default::default()
        };
        // Records hold GKE's per-zone bounds: 4 a zone in 2 zones.
        assert_eq!(max_nodes(Some(&rec), Some(&gke(2, None))), Some(8));
        assert_eq!(max_nodes(Some(&rec), None), Some(4));
        assert_eq!(
            max_nodes(None, Some(&gke(2, Some((Some(3), None))))),
            Some(6)
        );
        assert_eq!(
            max_nodes(None, Some(&gke(2, Some((Some(3), Some(5)))))),
            Some(5)
        );
        // No autoscaling: the fixed size in every zone.
        assert_eq!(max_nodes(None, Some(&gke(1, None))), Some(2));
        assert_eq!(max_nodes(None, None), None);
    }

    #[test]
    fn template_node_of_a_recorded_pool() {
        let rec = PoolSpecRecord {
            accelerator: "tpu-v5litepod-16".into(),
            machine_type: "ct5lp-hightpu-4t".into(),
            spot: true,
            taints: vec![TaintRecord {
                key: "gpu-pool-type".into(),
                value: "spot".into(),
                effect: crate::domain::pools::TaintEffect::NoSchedule,
            }],
            ..Default::default()
        };
        let t = template("tpu-v5litepod-ab12", &rec).expect("template");
        // A v5e-16 slice is 4 hosts of 4 chips.
        assert_eq!((t.gpus, t.tpus, t.spot), (0, 4, true));
        assert_eq!(t.labels[NODEPOOL_LABEL], "tpu-v5litepod-ab12");
        assert_eq!(t.labels[TPU_TYPE_LABEL], "tpu-v5-lite-podslice");
        let taints: Vec<String> = t.taints.iter().map(pools::show_taint).collect();
        assert_eq!(
            taints,
            [
                "gpu-pool-type=spot:NoSchedule",
                "google.com/tpu=present:NoSchedule"
            ]
        );
        let cpu = PoolSpecRecord {
            accelerator: "cpu".into(),
            ..Default::default()
        };
        assert!(template("x", &cpu).is_none());
    }
}
