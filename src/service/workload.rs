//! `:checkWorkload`: read the cluster's pool records, its nodes and pods (Kubernetes),
//! its GKE version and the region's accelerator quota, and judge the workload with
//! [`crate::domain::workload::check`].
//!
//! Invariant: read-only (VIEWER+ of the owning team, 404 like the other cluster reads);
//! nothing is written to the records or the cloud. The reads and their errors are
//! [`super::live`]'s: a quota that cannot be read is not judged; a Kubernetes API that
//! cannot be read fails the request (503), since "fits now" cannot be known without it.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::Value;

use crate::cloud::Cloud;
use crate::cloud::gcp::types::compute::Region;
use crate::cloud::kube::{NodeInfo, PodInfo, quantity};
use crate::domain::accelerators::{self, Choice, Kind};
use crate::domain::gpu_sharing::GpuSharing;
use crate::domain::provisioning::Provisioning;
use crate::domain::quota;
use crate::domain::resource_names::ClusterNames;
use crate::domain::workload::{
    self, Amounts, ClusterFacts, GPU, NodeFacts, ParseError, PoolFacts, PoolKind, QuotaFacts, TPU,
    Taint,
};
use crate::model::workload::WorkloadCheck;
use crate::store::{Db, PoolSpecRecord};

use super::clusters::{ClusterPath, record};
use super::live::{self, Timing};
use super::{Caller, Error, Result};

/// Judge `body` (a decoded manifest) on the cluster at `path`; with what each read and
/// the judgement cost.
pub async fn check(
    db: &Db,
    cloud: &Cloud,
    caller: &Caller,
    path: &ClusterPath,
    body: &Value,
) -> Result<(WorkloadCheck, Timing)> {
    let rec = record(db, caller, path).await?;
    let w = workload::parse(body, quantity::milli).map_err(parse_error)?;
    let pools = live::pool_records(db, rec.id).await?;
    let n = ClusterNames::new(&path.project, &path.zone, &path.cluster);
    let mut live = live::read(cloud, &n).await?;
    let started = Instant::now();
    let facts = cluster_facts(
        &pools,
        live.gke.current_master_version.clone(),
        &live.nodes,
        &live.pods,
        quotas(live.region.as_ref(), &pools),
        path.zone.as_str(),
    );
    let report = (&workload::check(&w, &facts)).into();
    live.timing.compute = started.elapsed();
    Ok((report, live.timing))
}

fn parse_error(e: ParseError) -> Error {
    let reason = match &e {
        ParseError::NotObject => "BODY_NOT_OBJECT",
        ParseError::UnknownKind(_) => "UNSUPPORTED_KIND",
        ParseError::Field { .. } => "INVALID_WORKLOAD",
    };
    let mut err = Error::invalid(reason, e.to_string());
    if let ParseError::UnknownKind(_) = e {
        let kinds: Vec<&str> = workload::SUPPORTED_KINDS.iter().map(|(k, _)| *k).collect();
        err = err.with("supportedKinds", kinds.join(","));
    }
    err
}

/// The resolved accelerator of a pool record, if the catalog knows it.
fn resolved(p: &PoolSpecRecord) -> Option<accelerators::Resolved> {
    match accelerators::parse(&p.accelerator).ok()? {
        Choice::Accelerator(r) => Some(r),
        Choice::Cpu => None,
    }
}

/// The quota metric a pool's nodes are charged to.
fn metric(p: &PoolSpecRecord) -> Option<String> {
    quota::metric(&resolved(p)?, quota::preemptible(p.spot, p.provisioning))
}

/// The region's accelerator quotas the pools are charged to (empty when unread).
fn quotas(region: Option<&Region>, pools: &[PoolSpecRecord]) -> BTreeMap<String, QuotaFacts> {
    let Some(region) = region else {
        return BTreeMap::new();
    };
    pools
        .iter()
        .filter_map(metric)
        .filter_map(|m| {
            let q = region.quota(&m)?;
            Some((
                m,
                QuotaFacts {
                    limit: q.limit,
                    usage: q.usage,
                },
            ))
        })
        .collect()
}

/// What a node has left: allocatable minus the requests of the pods bound to it that
/// have not finished.
fn free_of(node: &NodeInfo, pods: &[&PodInfo]) -> Amounts {
    let mut used = [0u64; 4];
    for p in pods
        .iter()
        .filter(|p| p.phase != "Succeeded" && p.phase != "Failed")
    {
        let r = &p.requests;
        for (u, v) in used
            .iter_mut()
            .zip([r.cpu_millis, r.memory_bytes, r.gpus, r.tpus])
        {
            *u += v;
        }
    }
    let alloc = [node.cpu_millis, node.memory_bytes, node.gpus, node.tpus];
    let scale = [1i128, 1000, 1000, 1000];
    ["cpu", "memory", GPU, TPU]
        .iter()
        .zip(alloc.iter().zip(used).zip(scale))
        .map(|(k, ((a, u), s))| ((*k).to_owned(), i128::from(a.saturating_sub(u)) * s))
        .collect()
}

fn allocatable(node: &NodeInfo) -> Amounts {
    free_of(node, &[])
}

/// The judgement's facts: one entry per recorded pool, plus live pools without a record
/// (GKE's default-pool).
pub fn cluster_facts(
    pools: &[PoolSpecRecord],
    gke_version: Option<String>,
    nodes: &[NodeInfo],
    pods: &[PodInfo],
    quotas: BTreeMap<String, QuotaFacts>,
    cluster_zone: &str,
) -> ClusterFacts {
    let mut by_node: BTreeMap<&str, Vec<&PodInfo>> = BTreeMap::new();
    for p in pods {
        if let Some(n) = p.node.as_deref() {
            by_node.entry(n).or_default().push(p);
        }
    }
    let live = |pool: &str| -> Vec<&NodeInfo> {
        nodes
            .iter()
            .filter(|n| n.pool.as_deref() == Some(pool))
            .collect()
    };
    let node_facts = |ns: &[&NodeInfo]| -> Vec<NodeFacts> {
        ns.iter()
            .map(|n| NodeFacts {
                name: n.name.clone(),
                zone: n.zone.clone().unwrap_or_default(),
                schedulable: n.ready && !n.unschedulable,
                free: free_of(n, by_node.get(n.name.as_str()).map_or(&[], Vec::as_slice)),
            })
            .collect()
    };
    let mut out: Vec<PoolFacts> = pools
        .iter()
        .map(|p| {
            let ns = live(&p.pool_id);
            recorded_pool(p, &ns, node_facts(&ns), cluster_zone)
        })
        .collect();
    let mut unrecorded: Vec<&str> = nodes
        .iter()
        .filter_map(|n| n.pool.as_deref())
        .filter(|id| !pools.iter().any(|p| p.pool_id == *id))
        .collect();
    unrecorded.sort_unstable();
    unrecorded.dedup();
    for id in unrecorded {
        let ns = live(id);
        out.push(unrecorded_pool(id, &ns, node_facts(&ns), cluster_zone));
    }
    ClusterFacts {
        gke_version,
        pools: out,
        quotas,
    }
}

/// Labels and taints every live node of the pool carries.
fn common_labels_taints(ns: &[&NodeInfo]) -> (BTreeMap<String, String>, Vec<Taint>) {
    let Some((first, rest)) = ns.split_first() else {
        return Default::default();
    };
    let per_node = [
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/zone",
    ];
    let labels = first
        .labels
        .iter()
        .filter(|(k, v)| {
            !per_node.contains(&k.as_str()) && rest.iter().all(|n| n.labels.get(*k) == Some(v))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let taints = first
        .taints
        .iter()
        .filter(|t| {
            !t.key.starts_with("node.kubernetes.io/") && rest.iter().all(|n| n.taints.contains(t))
        })
        .map(|t| Taint {
            key: t.key.clone(),
            value: t.value.clone().unwrap_or_default(),
            effect: t.effect.clone(),
        })
        .collect();
    (labels, taints)
}

fn recorded_pool(
    p: &PoolSpecRecord,
    ns: &[&NodeInfo],
    nodes: Vec<NodeFacts>,
    zone: &str,
) -> PoolFacts {
    let (mut labels, mut taints) = common_labels_taints(ns);
    labels.extend(p.labels.clone());
    let sharing = p.gke_accelerator_type.as_deref().and_then(|t| {
        GpuSharing::from_stored(
            t,
            p.partition_size.as_deref(),
            p.sharing.as_ref().map(|s| s.strategy),
            p.sharing.as_ref().map(|s| s.max_clients_per_gpu),
        )
    });
    // The partition and sharing labels GKE puts on the pool's nodes.
    for (k, v) in sharing.iter().flat_map(GpuSharing::node_labels) {
        labels.entry(k.to_owned()).or_insert(v);
    }
    for t in &p.taints {
        let t = Taint {
            key: t.key.clone(),
            value: t.value.clone(),
            effect: t.effect.kube_str().to_owned(),
        };
        if !taints.contains(&t) {
            taints.push(t);
        }
    }
    // What GKE adds to flex-start nodes: a queued pool's taint keeps every pod but a
    // ProvisioningRequest's (which tolerates it) off its nodes.
    let mode = p.provisioning;
    for (k, v) in mode.map(Provisioning::node_labels).unwrap_or_default() {
        labels.entry(k.to_owned()).or_insert_with(|| v.to_owned());
    }
    for (key, value, effect) in mode.map(Provisioning::node_taints).unwrap_or_default() {
        let t = Taint {
            key: key.to_owned(),
            value: value.to_owned(),
            effect: effect.to_owned(),
        };
        if !taints.contains(&t) {
            taints.push(t);
        }
    }
    let r = resolved(p);
    let kind = match p.kind {
        Kind::Gpu => PoolKind::Gpu,
        Kind::Tpu => PoolKind::Tpu,
    };
    let per_node = r
        .as_ref()
        .map(accelerators::Resolved::per_node)
        .unwrap_or_else(|| {
            let count = p.accelerator_count.unwrap_or(0) / p.hosts_per_slice.unwrap_or(1).max(1);
            u32::try_from(count).unwrap_or(0)
        });
    PoolFacts {
        pool_id: p.pool_id.clone(),
        kind,
        machine_type: p.machine_type.clone(),
        accelerator_type: p.gke_accelerator_type.clone(),
        accelerators_per_node: per_node,
        tpu_topology: p.tpu_topology.clone(),
        zones: if p.zones.is_empty() {
            vec![zone.to_owned()]
        } else {
            p.zones.clone()
        },
        labels,
        taints,
        min_nodes: u32::try_from(p.min_nodes).unwrap_or(0),
        max_nodes: u32::try_from(p.max_nodes).unwrap_or(0),
        spot: p.spot,
        failover_pair: p.failover.as_ref().map(|f| f.paired_pool.clone()),
        driver_version: p.driver_version.clone(),
        node_allocatable: ns.first().map(|n| allocatable(n)),
        nodes,
        quota_metric: metric(p),
        units_per_gpu: sharing.as_ref().map_or(1, GpuSharing::units_per_gpu),
    }
    .with_gke_defaults()
}

/// A pool only the cluster knows (GKE's default-pool): as its nodes are, no autoscaling.
fn unrecorded_pool(id: &str, ns: &[&NodeInfo], nodes: Vec<NodeFacts>, zone: &str) -> PoolFacts {
    let (labels, taints) = common_labels_taints(ns);
    let first = ns.first();
    let gpus = first.map_or(0, |n| n.gpus);
    let tpus = first.map_or(0, |n| n.tpus);
    let mut zones: Vec<String> = ns.iter().filter_map(|n| n.zone.clone()).collect();
    zones.sort();
    zones.dedup();
    if zones.is_empty() {
        zones.push(zone.to_owned());
    }
    let count = u32::try_from(ns.len()).unwrap_or(u32::MAX);
    PoolFacts {
        pool_id: id.to_owned(),
        kind: if gpus > 0 {
            PoolKind::Gpu
        } else if tpus > 0 {
            PoolKind::Tpu
        } else {
            PoolKind::Cpu
        },
        machine_type: first
            .and_then(|n| n.instance_type.clone())
            .unwrap_or_default(),
        accelerator_type: labels.get("cloud.google.com/gke-accelerator").cloned(),
        accelerators_per_node: u32::try_from(gpus.max(tpus)).unwrap_or(0),
        tpu_topology: labels.get("cloud.google.com/gke-tpu-topology").cloned(),
        min_nodes: count,
        // Per zone, as GKE counts: the pool stays as it is.
        max_nodes: count.div_ceil(u32::try_from(zones.len()).unwrap_or(1).max(1)),
        zones,
        labels,
        taints,
        spot: first.is_some_and(|n| n.spot),
        failover_pair: None,
        driver_version: None,
        node_allocatable: first.map(|n| allocatable(n)),
        nodes,
        quota_metric: None,
        // The nodes' allocatable is already in units.
        units_per_gpu: 1,
    }
    .with_gke_defaults()
}
