//! The capacity computation: from plain node and pod views (as listed from Kubernetes),
//! pool facts (ceilings, quota headroom) and the price table to the capacity report.
//!
//! Invariant: pure and deterministic (no I/O, no clock): the same views give the same
//! report, so it is tested with hand-made views and benchmarked apart from the list
//! calls. A pod holds accelerators on the node it is bound to until it finishes
//! (Succeeded/Failed), as kube-scheduler counts them; a pod waits when it is bound to no
//! node.

use std::collections::{BTreeMap, HashMap};

use crate::cloud::kube::{NodeInfo, PodInfo};
use crate::domain::pricing::{PriceTable, cents};
use crate::model::capacity::{
    AcceleratorCapacity, CapacitySummary, ClusterCapacity, Counts, GpuUnits, HourlyCost,
    NodeCapacity, PendingPod, PoolCapacity,
};

use super::pending::{FreeByNode, judge};
use super::pools::{Pool, PoolFacts, Resource, pools};

/// Everything the computation needs, read by the service.
pub struct Facts<'a> {
    pub nodes: &'a [NodeInfo],
    pub pods: &'a [PodInfo],
    pub pools: &'a [PoolFacts],
    pub prices: &'a PriceTable,
}

/// The report without `name` and `checkTime` (the service sets them).
pub fn compute(f: &Facts<'_>) -> ClusterCapacity {
    let pools = pools(f.nodes, f.pools);
    let used = usage(f.pods);
    let mut free: FreeByNode = HashMap::new();
    let node_pools: Vec<PoolCapacity> = pools
        .iter()
        .map(|p| pool_capacity(p, &used, f.prices, &mut free))
        .collect();
    let pending: Vec<PendingPod> = f
        .pods
        .iter()
        .filter(|p| waiting(p))
        .filter_map(|p| {
            let (r, amount) = Resource::of_pod(p)?;
            Some(judge(p, r, amount, &pools, &free))
        })
        .collect();
    let accelerators = by_type(&node_pools);
    let summary = summary(&node_pools, &pending, f.prices);
    ClusterCapacity {
        summary,
        accelerators,
        node_pools,
        pending_pods: pending,
        ..ClusterCapacity::default()
    }
}

/// Pods holding a node's resources: bound and not finished.
fn holds(p: &PodInfo) -> Option<&str> {
    let node = p.node.as_deref().filter(|n| !n.is_empty())?;
    (!matches!(p.phase.as_str(), "Succeeded" | "Failed")).then_some(node)
}

/// Pods waiting for a node.
fn waiting(p: &PodInfo) -> bool {
    p.is_pending() && p.node.as_deref().is_none_or(str::is_empty)
}

/// Per node: (GPUs, TPUs, pods requesting accelerators) held there.
fn usage(pods: &[PodInfo]) -> HashMap<&str, (u64, u64, u32)> {
    let mut used: HashMap<&str, (u64, u64, u32)> = HashMap::new();
    for p in pods {
        let Some(node) = holds(p) else { continue };
        if p.requests.gpus == 0 && p.requests.tpus == 0 {
            continue;
        }
        let u = used.entry(node).or_default();
        u.0 += p.requests.gpus;
        u.1 += p.requests.tpus;
        u.2 += 1;
    }
    used
}

/// One level's counts from its nodes' counts.
fn sum(nodes: impl Iterator<Item = Counts>) -> Counts {
    nodes.fold(Counts::default(), |a, n| Counts {
        allocatable: a.allocatable + n.allocatable,
        requested: a.requested + n.requested,
        free: a.free + n.free,
        stranded: a.stranded + n.stranded,
        largest_placeable_request: a.largest_placeable_request.max(n.largest_placeable_request),
    })
}

fn node_capacity(n: &NodeInfo, r: Resource, used: &HashMap<&str, (u64, u64, u32)>) -> NodeCapacity {
    let allocatable = Resource::of_node(n).map_or(0, |x| x.1);
    let (gpus, tpus, pods) = used.get(n.name.as_str()).copied().unwrap_or_default();
    let requested = match r {
        Resource::Gpu => gpus,
        Resource::Tpu => tpus,
    };
    let free = allocatable.saturating_sub(requested);
    let schedulable = n.ready && !n.unschedulable;
    NodeCapacity {
        name: n.name.clone(),
        schedulable,
        accelerator_pods: pods,
        counts: Counts {
            allocatable,
            requested,
            free,
            stranded: if requested > 0 { free } else { 0 },
            largest_placeable_request: if schedulable { free } else { 0 },
        },
    }
}

/// Free units times their price: a unit of a partitioned or shared GPU costs the GPU's
/// price over its units.
fn idle_cost(
    prices: &PriceTable,
    accelerator_type: &str,
    spot: bool,
    free: u64,
    units_per_gpu: u32,
) -> Option<f64> {
    let u = prices.per_unit_hour.get(accelerator_type)?;
    let unit = if spot { u.spot } else { u.on_demand };
    Some(cents(unit * free as f64 / f64::from(units_per_gpu.max(1))))
}

/// The units view of a pool whose GPUs are partitioned or shared.
fn gpu_units(p: &Pool<'_>, counts: &Counts) -> Option<GpuUnits> {
    let g = p.gpu_sharing.as_ref()?;
    let per = g.units_per_gpu();
    Some(GpuUnits {
        units_per_gpu: per,
        physical_gpus: counts.allocatable / u64::from(per.max(1)),
        partition_size: g.partition.map(|(s, _)| s.to_owned()),
        sharing_strategy: g.sharing.map(|s| s.strategy.as_str().to_owned()),
        max_clients_per_gpu: g.sharing.map(|s| s.max_clients_per_gpu),
    })
}

fn pool_capacity<'a>(
    p: &Pool<'a>,
    used: &HashMap<&str, (u64, u64, u32)>,
    prices: &PriceTable,
    free: &mut FreeByNode<'a>,
) -> PoolCapacity {
    let nodes: Vec<NodeCapacity> = p
        .nodes
        .iter()
        .map(|n| node_capacity(n, p.resource, used))
        .collect();
    for (n, c) in p.nodes.iter().zip(&nodes) {
        let n: &'a NodeInfo = n;
        if c.schedulable {
            free.insert(n.name.as_str(), c.counts.free);
        }
    }
    let counts = sum(nodes.iter().map(|n| n.counts));
    PoolCapacity {
        pool_id: p.id.to_owned(),
        resource: p.resource.name().to_owned(),
        accelerator_type: p.accelerator_type.clone(),
        spot: p.spot,
        per_node: p.per_node,
        node_count: u32::try_from(nodes.len()).unwrap_or(u32::MAX),
        max_nodes: p.max_nodes(),
        counts,
        idle_cost: idle_cost(
            prices,
            &p.accelerator_type,
            p.spot,
            counts.free,
            p.gpu_sharing.as_ref().map_or(1, |g| g.units_per_gpu()),
        )
        .map(|amount| HourlyCost {
            currency: prices.currency.clone(),
            amount,
        }),
        gpu_units: gpu_units(p, &counts),
        nodes,
    }
}

fn by_type(pools: &[PoolCapacity]) -> Vec<AcceleratorCapacity> {
    let mut by: BTreeMap<(&str, &str), Vec<Counts>> = BTreeMap::new();
    for p in pools {
        by.entry((p.accelerator_type.as_str(), p.resource.as_str()))
            .or_default()
            .push(p.counts);
    }
    by.into_iter()
        .map(|((t, r), counts)| AcceleratorCapacity {
            resource: r.to_owned(),
            accelerator_type: t.to_owned(),
            counts: sum(counts.into_iter()),
        })
        .collect()
}

fn summary(pools: &[PoolCapacity], pending: &[PendingPod], prices: &PriceTable) -> CapacitySummary {
    let c = sum(pools.iter().map(|p| p.counts));
    let idle = cents(
        pools
            .iter()
            .filter_map(|p| p.idle_cost.as_ref())
            .map(|i| i.amount)
            .sum(),
    );
    let mut parts = Vec::new();
    if let Some(pct) = (c.requested * 100).checked_div(c.allocatable) {
        parts.push(format!(
            "{} of {} accelerators requested ({pct}%)",
            c.requested, c.allocatable
        ));
        parts.push(format!(
            "{} free, {} of them stranded on partly used nodes",
            c.free, c.stranded
        ));
        parts.push(format!(
            "largest request placeable now: {}",
            c.largest_placeable_request
        ));
        let shared: Vec<&str> = pools
            .iter()
            .filter(|p| p.gpu_units.is_some())
            .map(|p| p.pool_id.as_str())
            .collect();
        if !shared.is_empty() {
            parts.push(format!(
                "pools {} count nvidia.com/gpu units (GPU partitions or shares), not physical GPUs",
                shared.join(", ")
            ));
        }
    } else {
        parts.push("no accelerators allocatable".to_owned());
    }
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for p in pending {
        let r = serde_json::to_value(p.reason).ok();
        let r = r.as_ref().and_then(|v| v.as_str()).unwrap_or("").to_owned();
        *reasons.entry(r).or_default() += 1;
    }
    if !pending.is_empty() {
        let why: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
        parts.push(format!(
            "{} pods pending for accelerators ({})",
            pending.len(),
            why.join(", ")
        ));
    }
    parts.push(format!(
        "idle accelerators cost {} {idle:.2}/hour",
        prices.currency
    ));
    CapacitySummary {
        text: parts.join("; "),
        allocatable: c.allocatable,
        requested: c.requested,
        free: c.free,
        stranded: c.stranded,
        pending_pods: pending.len() as u64,
        idle_cost: HourlyCost {
            currency: prices.currency.clone(),
            amount: idle,
        },
    }
}

#[cfg(test)]
#[path = "compute_tests.rs"]
mod tests;
