//! Room for a pod template in a pool that passes the static rules: pods that fit on
//! its nodes now, and how many more the autoscaler could make room for within the
//! pool's maximum and the accelerator quota; and placing a group's pods so the next
//! group of the same workload sees that room taken.
//!
//! Invariant: only CPU, memory and the accelerators are counted, a node that is not
//! Ready or is cordoned offers nothing, and a new node never takes the pool above its
//! maximum (GKE's per-zone maximum times its zones).

use super::reasons::{Failure, Reason};
use super::selectors::zones_allowed;
use super::{Amounts, ClusterFacts, GPU, NodeFacts, PodFacts, PoolFacts, PoolKind, TPU};

/// kubelet's default pod limit per node: the ceiling for pods that request nothing.
const MAX_PODS_PER_NODE: u64 = 110;

/// A pool that passes the static rules: pods placeable now and after scale-up.
#[derive(Debug, Clone, PartialEq)]
pub struct Room {
    pub now: u64,
    pub later: u64,
    /// Nodes the autoscaler would add for the rest, and what stops it adding enough.
    pub added_nodes: u64,
    pub blocked: Option<Failure>,
}

/// How many pods with `req` fit in `free` (only CPU, memory and accelerators count;
/// a resource the node does not report counts as absent when `strict`).
fn pods_in(req: &Amounts, free: &Amounts, strict: bool) -> u64 {
    let mut n = MAX_PODS_PER_NODE;
    for key in ["cpu", "memory", GPU, TPU] {
        let want = req.get(key).copied().unwrap_or(0);
        if want <= 0 {
            continue;
        }
        let have = match free.get(key) {
            Some(h) => *h,
            None if strict || key == GPU || key == TPU => 0,
            None => continue,
        };
        n = n.min(u64::try_from(have.max(0) / want).unwrap_or(0));
    }
    n
}

/// What a new node of the pool offers (its allocatable when seen, its accelerators
/// otherwise).
fn new_node(pool: &PoolFacts) -> Amounts {
    let mut a = pool.node_allocatable.clone().unwrap_or_default();
    let acc = i128::from(pool.units_per_node()) * 1000;
    match pool.kind {
        PoolKind::Gpu => a.entry(GPU.into()).or_insert(acc),
        PoolKind::Tpu => a.entry(TPU.into()).or_insert(acc),
        PoolKind::Cpu => return a,
    };
    a
}

pub fn room(pod: &PodFacts, replicas: u64, pool: &PoolFacts, cluster: &ClusterFacts) -> Room {
    let req = pod.requests();
    let zones: Vec<&String> = zones_allowed(pod, pool).collect();
    let now: u64 = pool
        .nodes
        .iter()
        .filter(|n| n.schedulable && (n.zone.is_empty() || zones.contains(&&n.zone)))
        .map(|n| pods_in(&req, &n.free, true))
        .sum();
    let per_new = pods_in(&req, &new_node(pool), false);
    let need = replicas.saturating_sub(now);
    if need == 0 {
        return Room {
            now,
            later: 0,
            added_nodes: 0,
            blocked: None,
        };
    }
    if per_new == 0 {
        let blocked = Failure {
            reason: Reason::AcceleratorCountTooLarge,
            message: format!(
                "one pod asks for more than a new node of pool {} ({}) can hold",
                pool.pool_id, pool.machine_type
            ),
            fix: "lower the pod's cpu/memory requests, or add a pool of a larger machine type"
                .into(),
        };
        return Room {
            now,
            later: 0,
            added_nodes: 0,
            blocked: Some(blocked),
        };
    }
    let nodes_needed = need.div_ceil(per_new);
    let headroom = u64::from(pool.max_total()).saturating_sub(pool.nodes.len() as u64);
    let per_node_acc = u64::from(pool.accelerators_per_node);
    let quota = pool
        .quota_metric
        .as_ref()
        .and_then(|m| Some((m, cluster.quotas.get(m)?)))
        .filter(|_| per_node_acc > 0);
    let affordable = quota.map_or(u64::MAX, |(_, q)| {
        ((q.limit - q.usage).max(0.0) as u64) / per_node_acc
    });
    let added = nodes_needed.min(headroom).min(affordable);
    let blocked = (added < nodes_needed).then(|| {
        let id = &pool.pool_id;
        if headroom <= affordable {
            Failure {
                reason: Reason::PoolAtMax,
                message: format!("pool {id} has {} of at most {} nodes; {need} more pods need {nodes_needed} more nodes", pool.nodes.len(), pool.max_total()),
                fix: format!("raise pool {id}'s maximum node count to at least {} per zone, or run fewer replicas", (pool.nodes.len() as u64 + nodes_needed).div_ceil(pool.zones.len().max(1) as u64)),
            }
        } else {
            let (metric, q) = quota.expect("quota binds only when read");
            Failure {
                reason: Reason::QuotaExhausted,
                message: format!("adding {nodes_needed} nodes to pool {id} needs {} accelerators of quota {metric}, which has {} of {} in use", nodes_needed * per_node_acc, q.usage, q.limit),
                fix: format!("request more {metric} quota (console.cloud.google.com/iam-admin/quotas), free some, or run fewer replicas"),
            }
        }
    });
    Room {
        now,
        later: added * per_new,
        added_nodes: added,
        blocked,
    }
}

fn subtract(free: &mut Amounts, req: &Amounts) {
    for (k, v) in req {
        if let Some(f) = free.get_mut(k) {
            *f -= v;
        }
    }
}

/// Take up to `count` pods of `pod` from the pool, as the scheduler and autoscaler
/// would: free room on its nodes first, then new nodes up to its maximum. Returns the
/// pods placed and the nodes added (which stay in the pool, so a later pod group of the
/// same workload sees them taken).
pub fn consume(pod: &PodFacts, count: u64, pool: &mut PoolFacts) -> (u64, u64) {
    let req = pod.requests();
    let zones: Vec<String> = zones_allowed(pod, pool).cloned().collect();
    let mut placed = 0;
    for n in pool
        .nodes
        .iter_mut()
        .filter(|n| n.schedulable && (n.zone.is_empty() || zones.contains(&n.zone)))
    {
        while placed < count && pods_in(&req, &n.free, true) > 0 {
            subtract(&mut n.free, &req);
            placed += 1;
        }
    }
    let mut added = 0;
    while placed < count && (pool.nodes.len() as u64) < u64::from(pool.max_total()) {
        let mut free = new_node(pool);
        if pods_in(&req, &free, false) == 0 {
            break;
        }
        while placed < count && pods_in(&req, &free, false) > 0 {
            subtract(&mut free, &req);
            placed += 1;
        }
        pool.nodes.push(NodeFacts {
            name: format!("{}-new-{}", pool.pool_id, pool.nodes.len()),
            zone: zones.first().cloned().unwrap_or_default(),
            schedulable: true,
            free,
        });
        added += 1;
    }
    (placed, added)
}
