//! Conversions between the store's spec records and the API model's node pool.
//!
//! Invariant: `spec_of(&pool_of(spec)) == spec` for every stored spec, so a pool read
//! and written back is unchanged; the API-only fields (name, state, create time) are
//! filled by the renderer from the record, never from the spec.

use crate::domain::gpu_sharing;
use crate::model::{EstimatedCost, FailoverRef, GpuSharing, NodePool, Taint};
use crate::store::PoolSpecRecord;
use crate::store::records::{CostRecord, FailoverRecord, SharingRecord, TaintRecord};

/// `gpuUnitsPerNode` of a stored pool: set only when its GPUs are shared or partitioned.
fn units_of(s: &PoolSpecRecord) -> Option<i64> {
    let units = gpu_sharing::units_per_node(
        s.gke_accelerator_type.as_deref()?,
        u32::try_from(s.accelerator_count.unwrap_or(1)).ok()?,
        s.partition_size.as_deref(),
        s.sharing.as_ref().map(|x| x.max_clients_per_gpu),
    )?;
    Some(i64::from(units))
}

/// The API's pool for a stored spec (name, state and create time left to the caller).
pub fn pool_of(s: PoolSpecRecord) -> NodePool {
    // Only flex-start modes are stored; the others follow from spot and reservation.
    let mode = s.provisioning.clone().unwrap_or_else(|| {
        if s.spot {
            "SPOT"
        } else if s.reservation.is_some() {
            "RESERVATION"
        } else {
            "ON_DEMAND"
        }
        .to_owned()
    });
    let gpu_units_per_node = units_of(&s);
    NodePool {
        gpu_units_per_node,
        sharing: s.sharing.map(|x| GpuSharing {
            strategy: x.strategy,
            max_clients_per_gpu: x.max_clients_per_gpu,
        }),
        partition_size: s.partition_size,
        pool_id: s.pool_id,
        accelerator: s.accelerator,
        kind: s.kind,
        machine_type: s.machine_type,
        gke_accelerator_type: s.gke_accelerator_type,
        accelerator_count: s.accelerator_count,
        tpu_topology: s.tpu_topology,
        hosts_per_slice: s.hosts_per_slice,
        min_nodes: s.min_nodes,
        max_nodes: s.max_nodes,
        spot: s.spot,
        reservation: s.reservation,
        zones: s.zones,
        taints: s
            .taints
            .into_iter()
            .map(|t| Taint {
                key: t.key,
                value: t.value,
                effect: t.effect,
            })
            .collect(),
        labels: s.labels,
        provisioning: Some(mode),
        max_run_duration: s.max_run_duration,
        driver_version: s.driver_version,
        failover: s.failover.map(|f| FailoverRef {
            role: f.role,
            paired_pool: f.paired_pool,
        }),
        estimated_hourly_cost: s.estimated_hourly_cost.map(|c| EstimatedCost {
            currency: c.currency,
            per_node: c.per_node,
            at_min: c.at_min,
            at_max: c.at_max,
        }),
        ..NodePool::default()
    }
}

/// The spec to store for a pool being added.
pub fn spec_of(p: &NodePool) -> PoolSpecRecord {
    PoolSpecRecord {
        pool_id: p.pool_id.clone(),
        accelerator: p.accelerator.clone(),
        kind: p.kind.clone(),
        machine_type: p.machine_type.clone(),
        gke_accelerator_type: p.gke_accelerator_type.clone(),
        accelerator_count: p.accelerator_count,
        tpu_topology: p.tpu_topology.clone(),
        hosts_per_slice: p.hosts_per_slice,
        min_nodes: p.min_nodes,
        max_nodes: p.max_nodes,
        spot: p.spot,
        reservation: p.reservation.clone(),
        zones: p.zones.clone(),
        taints: p
            .taints
            .iter()
            .map(|t| TaintRecord {
                key: t.key.clone(),
                value: t.value.clone(),
                effect: t.effect.clone(),
            })
            .collect(),
        labels: p.labels.clone(),
        max_run_duration: p.max_run_duration.clone(),
        driver_version: p.driver_version.clone(),
        provisioning: crate::plan::pools::flex_mode(p),
        failover: p.failover.as_ref().map(|f| FailoverRecord {
            role: f.role.clone(),
            paired_pool: f.paired_pool.clone(),
        }),
        estimated_hourly_cost: p.estimated_hourly_cost.as_ref().map(|c| CostRecord {
            currency: c.currency.clone(),
            per_node: c.per_node,
            at_min: c.at_min,
            at_max: c.at_max,
        }),
        sharing: p.sharing.as_ref().map(|x| SharingRecord {
            strategy: x.strategy.clone(),
            max_clients_per_gpu: x.max_clients_per_gpu,
        }),
        partition_size: p.partition_size.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_survive_the_model() {
        let spec: PoolSpecRecord = serde_json::from_value(serde_json::json!({
            "poolId": "gpu-l4-ab12", "accelerator": "gpu-l4", "kind": "GPU",
            "machineType": "g2-standard-8", "gkeAcceleratorType": "nvidia-l4",
            "acceleratorCount": 1, "minNodes": 0, "maxNodes": 4, "spot": true,
            "zones": ["us-central1-a"], "labels": {"a": "b"}, "driverVersion": "LATEST",
            "taints": [{"key": "k", "value": "v", "effect": "NO_SCHEDULE"}],
            "failover": {"role": "SPOT", "pairedPool": "gpu-l4-od12"},
            "estimatedHourlyCost": {"currency": "USD", "perNode": 0.85, "atMin": 0.0, "atMax": 3.4}
        }))
        .unwrap();
        assert_eq!(spec_of(&pool_of(spec.clone())), spec);
        assert_eq!(pool_of(spec).gpu_units_per_node, None, "whole GPUs");
        let shared: PoolSpecRecord = serde_json::from_value(serde_json::json!({
            "poolId": "gpu-a100-ab12", "accelerator": "gpu-a100x2", "kind": "GPU",
            "machineType": "a2-highgpu-2g", "gkeAcceleratorType": "nvidia-tesla-a100",
            "acceleratorCount": 2, "minNodes": 0, "maxNodes": 10, "spot": false,
            "partitionSize": "1g.5gb",
            "sharing": {"strategy": "TIME_SHARING", "maxClientsPerGpu": 3}
        }))
        .unwrap();
        assert_eq!(spec_of(&pool_of(shared.clone())), shared);
        assert_eq!(pool_of(shared).gpu_units_per_node, Some(2 * 7 * 3));
    }
}
