//! Node pool plans (`pool add`, `pool remove`; a failover pair's include its compute
//! class) and the pool record a shape becomes.
//!
//! Invariant: a pool's record ([`pool_record`]) holds its whole shape, fixed when the
//! pool is added; every later plan and step rebuilds the pool from it.

use crate::domain::pool_record::{
    CostRecord, FailoverRecord, PoolSpecRecord, SharingRecord, TaintRecord,
};
use crate::domain::pools::PoolShape;
use crate::domain::pricing::PriceTable;
use crate::domain::resource_names::{ClusterNames, is_pool_id_placeholder};
use crate::model;

use super::computeclass;
use super::details::{PoolDetails, PoolTaint};
use super::{Action, ActionKind, Cost, Plan, Resource, StepId};

/// One pool to add: its generated id and shape.
pub struct PoolToAdd<'a> {
    pub id: &'a str,
    pub shape: &'a PoolShape,
    pub driver_version: Option<&'a str>,
    pub zones: &'a [String],
    /// The other pool of a failover pair.
    pub paired_pool: Option<&'a str>,
}

/// The record of a pool being added: its whole shape, the one source every later plan,
/// step and view reads.
pub fn pool_record(p: &PoolToAdd<'_>, prices: &PriceTable) -> PoolSpecRecord {
    let s = p.shape;
    let a = &s.accelerator;
    let estimate = prices.estimate_in(a, s.provisioning, s.min_nodes, s.max_nodes);
    PoolSpecRecord {
        pool_id: p.id.to_owned(),
        accelerator: a.base_name(),
        kind: a.kind,
        machine_type: a.machine_type.into(),
        gke_accelerator_type: Some(a.gke_accelerator_type.into()),
        accelerator_count: Some(i64::from(a.count)),
        tpu_topology: a.topology.map(str::to_owned),
        hosts_per_slice: a.hosts_per_slice.map(i64::from),
        min_nodes: i64::from(s.min_nodes),
        max_nodes: i64::from(s.max_nodes),
        spot: s.spot,
        reservation: s.reservation.clone(),
        zones: p.zones.to_vec(),
        taints: s
            .taints
            .iter()
            .map(|t| TaintRecord {
                key: t.key.clone(),
                value: t.value.clone(),
                effect: t.effect,
            })
            .collect(),
        labels: s.labels.clone(),
        max_run_duration: s.max_run_duration.clone(),
        driver_version: p.driver_version.map(str::to_owned),
        // Only the flex-start modes are stored: the others follow from spot and reservation.
        provisioning: s.provisioning.is_flex_start().then_some(s.provisioning),
        failover: s
            .failover
            .zip(p.paired_pool)
            .map(|(role, other)| FailoverRecord {
                role,
                paired_pool: other.to_owned(),
            }),
        estimated_hourly_cost: estimate.map(|e| CostRecord {
            currency: prices.currency.clone(),
            per_node: e.per_node,
            at_min: e.at_min,
            at_max: e.at_max,
        }),
        sharing: s
            .gpu_sharing
            .as_ref()
            .and_then(|g| g.sharing)
            .map(|x| SharingRecord {
                strategy: x.strategy,
                max_clients_per_gpu: x.max_clients_per_gpu,
            }),
        partition_size: s
            .gpu_sharing
            .as_ref()
            .and_then(|g| g.partition)
            .map(|(size, _)| size.to_owned()),
        location_policy: None,
    }
}

/// The plan details of a pool (what a preview shows).
pub fn pool_details(p: &PoolSpecRecord) -> PoolDetails {
    let multi_host = p.hosts_per_slice.unwrap_or(1) > 1;
    PoolDetails {
        accelerator: p.accelerator.clone(),
        driver_version: p.driver_version.clone(),
        estimated_hourly_cost: None,
        labels: Some(p.labels.clone()),
        machine_type: p.machine_type.clone(),
        max_nodes: p.max_nodes,
        max_run_duration: p.max_run_duration.clone(),
        min_nodes: p.min_nodes,
        partition_size: p.partition_size.clone(),
        placement_topology: p.tpu_topology.clone().filter(|_| multi_host),
        provisioning: p.provisioning.map(|m| m.as_str().to_owned()),
        reservation: p.reservation.clone(),
        sharing: p.sharing.as_ref().map(model::GpuSharing::from),
        resized_from: None,
        spot: p.spot,
        taints: Some(
            p.taints
                .iter()
                .map(|t| PoolTaint {
                    effect: t.effect.as_str().to_owned(),
                    key: t.key.clone(),
                    value: t.value.clone(),
                })
                .collect(),
        ),
        zones: Some(p.zones.clone()),
    }
}

/// Why a previewed pool shows a stand-in id.
pub const ID_AT_APPLY: &str = "its id is assigned when the request is applied (the -xxxx here stands for it): \
     send the same requestId (or Idempotency-Key) with the preview and the apply to preview the exact id";

/// `reason`, plus [`ID_AT_APPLY`] when `id` is a stand-in.
pub fn pool_reason(id: &str, reason: &str) -> String {
    if is_pool_id_placeholder(id) {
        format!("{reason}; {ID_AT_APPLY}")
    } else {
        reason.to_owned()
    }
}

/// The full name of pool `id` of the cluster.
pub fn pool_name(n: &ClusterNames, id: &str) -> String {
    format!("{}/nodePools/{id}", n.gke_cluster())
}

pub fn pool_action(n: &ClusterNames, id: &str, kind: ActionKind, reason: &str) -> Action {
    Action::new(
        StepId::pool(id),
        kind,
        Resource::NodePool(None),
        pool_name(n, id),
        pool_reason(id, reason),
        &[],
    )
}

pub fn driver_action(after: &[StepId]) -> Action {
    Action::new(
        StepId::NvidiaDriver,
        ActionKind::Create,
        Resource::KubernetesObject(None),
        "daemonsets/kube-system/nvidia-driver-installer".into(),
        "GPU pool without GKE-managed drivers",
        after,
    )
}

/// `pool add`: create each new pool (a failover pair is two), then the driver installer
/// when a GPU pool needs it.
pub fn add(n: &ClusterNames, pools: &[PoolSpecRecord], prices: &PriceTable) -> Plan {
    let mut actions = Vec::new();
    for p in pools {
        let mut a = pool_action(n, &p.pool_id, ActionKind::Create, "requested pool");
        a.resource = Resource::NodePool(Some(Box::new(pool_details(p))));
        actions.push(a);
    }
    let gpu: Vec<StepId> = pools
        .iter()
        .filter(|p| p.needs_driver_installer())
        .map(|p| StepId::pool(&p.pool_id))
        .collect();
    if !gpu.is_empty() {
        actions.push(driver_action(&gpu));
    }
    if let Some((spot, on_demand)) = class_pair(pools) {
        actions.push(computeclass::apply_action(spot, on_demand));
    }
    Plan {
        actions,
        warnings: Vec::new(),
        estimated_hourly_cost: total_cost(pools.iter(), prices),
        ..Plan::default()
    }
}

/// The estimated hourly cost of `pools` together (`None` when none is priced).
pub fn total_cost<'a>(
    pools: impl Iterator<Item = &'a PoolSpecRecord>,
    prices: &PriceTable,
) -> Option<Cost> {
    let (mut at_min, mut at_max, mut priced) = (0.0, 0.0, false);
    for c in pools.filter_map(|p| p.estimated_hourly_cost.as_ref()) {
        at_min += c.at_min;
        at_max += c.at_max;
        priced = true;
    }
    priced.then(|| Cost {
        currency: prices.currency.clone(),
        at_min,
        at_max,
    })
}

/// The (spot, on-demand) pools of `pools` that form a failover pair tied to a compute
/// class (pairs added before classes existed have no class label: `None`).
pub fn class_pair(pools: &[PoolSpecRecord]) -> Option<(&str, &str)> {
    let spot = pools
        .iter()
        .find(|p| p.is_spot_of_pair() && computeclass::class_of(&p.labels).is_some())?;
    let paired = &spot.failover.as_ref()?.paired_pool;
    let on_demand = pools.iter().find(|p| &p.pool_id == paired)?;
    Some((&spot.pool_id, &on_demand.pool_id))
}

/// `pool remove`: delete the pool (and its failover partner), then the pair's compute
/// class (`class`: its spot and on-demand pools) once both are gone.
pub fn remove(n: &ClusterNames, pool_ids: &[String], class: Option<(&str, &str)>) -> Plan {
    let mut actions: Vec<Action> = pool_ids
        .iter()
        .map(|id| pool_action(n, id, ActionKind::Delete, "requested removal"))
        .collect();
    if let Some((spot, on_demand)) = class {
        let after: Vec<StepId> = pool_ids.iter().map(|id| StepId::pool(id)).collect();
        actions.push(computeclass::delete_action(spot, on_demand, &after));
    }
    Plan {
        actions,
        ..Plan::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::accelerators::{Choice, parse};
    use crate::domain::compute_class::{ClassName, join_class};
    use crate::domain::pools::{FailoverRole, shape};

    fn names() -> ClusterNames {
        crate::plan::test_names("proj-1")
    }

    fn record(acc: &str, id: &str, driver: Option<&str>) -> PoolSpecRecord {
        let Choice::Accelerator(r) = parse(acc).unwrap() else {
            panic!()
        };
        let s = shape(&r, 0, false, None, None).unwrap();
        pool_record(
            &PoolToAdd {
                id,
                shape: &s,
                driver_version: driver,
                zones: &[],
                paired_pool: None,
            },
            &PriceTable::default(),
        )
    }

    #[test]
    fn a_failover_pair_costs_whole_cents_and_stand_in_ids_say_so() {
        let Choice::Accelerator(r) = parse("a100x4").unwrap() else {
            panic!()
        };
        let prices = PriceTable::default();
        let mut spot = shape(&r, 0, false, None, Some(FailoverRole::Spot)).unwrap();
        let mut od = shape(&r, 0, false, None, Some(FailoverRole::OnDemand)).unwrap();
        let ids = ["gpu-a100-xxxx", "gpu-a100-yyyy"];
        let class = ClassName::for_pair(ids[0]);
        join_class(&mut spot, &class);
        join_class(&mut od, &class);
        let records: Vec<PoolSpecRecord> = [(&spot, 0), (&od, 1)]
            .into_iter()
            .map(|(s, i)| {
                pool_record(
                    &PoolToAdd {
                        id: ids[i],
                        shape: s,
                        driver_version: None,
                        zones: &[],
                        paired_pool: Some(ids[1 - i]),
                    },
                    &prices,
                )
            })
            .collect();
        let p = add(&names(), &records, &prices);
        let json = serde_json::to_value(&p).unwrap();
        // 58.8 + 146.8 = 205.60000000000002 before rounding.
        assert_eq!(json["estimatedHourlyCost"]["atMax"].to_string(), "205.6");
        assert!(
            p.actions[0].reason.contains(ID_AT_APPLY),
            "{:?}",
            p.actions[0]
        );
        p.validate().unwrap();
        let cc = p.actions.last().unwrap();
        assert_eq!(cc.id, StepId::ComputeClass);
        assert_eq!(cc.name, "computeclasses/kinetic-gpu-a100-xxxx");
        assert_eq!(
            cc.depends_on,
            [StepId::pool(ids[0]), StepId::pool(ids[1])],
            "the class names pools that exist"
        );
        let r = remove(&names(), &ids.map(String::from), class_pair(&records));
        assert_eq!(r.actions.last().unwrap().action, ActionKind::Delete);
        r.validate().unwrap();
        // The partner already gone: the class is still deleted, after the one pool.
        let r = remove(&names(), &[ids[1].to_owned()], class_pair(&records));
        r.validate().unwrap();
        assert_eq!(r.actions[1].depends_on, [StepId::pool(ids[1])]);
        let real = record("l4", "gpu-l4-0001", None);
        let p = add(&names(), &[real], &prices);
        assert_eq!(p.actions[0].reason, "requested pool");
    }

    #[test]
    fn add_plans_the_driver_installer_only_for_gpu_pools_without_managed_drivers() {
        let n = names();
        let gpu = record("l4", "gpu-l4-0001", None);
        assert_eq!(gpu.accelerator, "gpu-l4");
        assert_eq!((gpu.min_nodes, gpu.max_nodes), (0, 10));
        let p = add(&n, std::slice::from_ref(&gpu), &PriceTable::default());
        p.validate().unwrap();
        let ids: Vec<String> = p.actions.iter().map(|a| a.id.to_string()).collect();
        assert_eq!(ids, ["pool:gpu-l4-0001", "nvidia-driver"]);
        assert!(p.estimated_hourly_cost.is_some());
        let managed = record("l4", "gpu-l4-0002", Some("LATEST"));
        let tpu = record("tpu-v5litepod-16", "tpu-v5litepod-0003", None);
        assert_eq!(tpu.max_nodes, 4);
        let p = add(&n, &[managed, tpu], &PriceTable::default());
        assert_eq!(p.actions.len(), 2, "no installer: {:?}", p.actions);
        let Resource::NodePool(Some(tpu)) = &p.actions[1].resource else {
            panic!("{:?}", p.actions[1])
        };
        assert_eq!(tpu.placement_topology.as_deref(), Some("4x4"));
        let r = remove(&n, &["gpu-l4-0001".into()], None);
        assert_eq!(r.actions[0].action, ActionKind::Delete);
        assert_eq!(
            r.actions[0].name,
            "projects/proj-1/locations/us-central1-a/clusters/kc/nodePools/gpu-l4-0001"
        );
    }
}
