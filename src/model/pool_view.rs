//! The API's view of a node pool, derived one way from its record
//! ([`PoolSpecRecord`], the one source of a pool's shape): enums become their stored
//! spellings here, when the view is serialised, and nothing converts a view back.
//!
//! Invariant: every field of the record reaches the view unchanged; the API-only fields
//! (name, state, create time) are left for the renderer, which fills them from the
//! pool's row; `gpuUnitsPerNode` and `provisioning` are computed from the record.

use crate::domain::PoolState;
use crate::domain::gpu_sharing;
use crate::domain::pool_record::{
    CostRecord, FailoverRecord, PoolSpecRecord, SharingRecord, TaintRecord,
};

use super::cluster::{EstimatedCost, FailoverRef, GpuSharing, NodePool, Taint};

impl From<&CostRecord> for EstimatedCost {
    fn from(c: &CostRecord) -> Self {
        EstimatedCost {
            currency: c.currency.clone(),
            per_node: c.per_node,
            at_min: c.at_min,
            at_max: c.at_max,
        }
    }
}

impl From<&SharingRecord> for GpuSharing {
    fn from(x: &SharingRecord) -> Self {
        GpuSharing {
            strategy: x.strategy.as_str().to_owned(),
            max_clients_per_gpu: x.max_clients_per_gpu,
        }
    }
}

impl From<&TaintRecord> for Taint {
    fn from(t: &TaintRecord) -> Self {
        Taint {
            key: t.key.clone(),
            value: t.value.clone(),
            effect: t.effect,
        }
    }
}

impl From<&FailoverRecord> for FailoverRef {
    fn from(f: &FailoverRecord) -> Self {
        FailoverRef {
            role: f.role,
            paired_pool: f.paired_pool.clone(),
        }
    }
}

/// `gpuUnitsPerNode` of a pool: set only when its GPUs are shared or partitioned.
fn units_of(s: &PoolSpecRecord) -> Option<i64> {
    let units = gpu_sharing::units_per_node(
        s.gke_accelerator_type.as_deref()?,
        u32::try_from(s.accelerator_count.unwrap_or(1)).ok()?,
        s.partition_size.as_deref(),
        s.sharing.as_ref().map(|x| x.max_clients_per_gpu),
    )?;
    Some(i64::from(units))
}

impl From<&PoolSpecRecord> for NodePool {
    /// The API's pool for a record (name, state and create time left to the caller).
    fn from(s: &PoolSpecRecord) -> Self {
        NodePool {
            gpu_units_per_node: units_of(s),
            sharing: s.sharing.as_ref().map(GpuSharing::from),
            partition_size: s.partition_size.clone(),
            pool_id: s.pool_id.clone(),
            accelerator: s.accelerator.clone(),
            kind: s.kind,
            machine_type: s.machine_type.clone(),
            gke_accelerator_type: s.gke_accelerator_type.clone(),
            accelerator_count: s.accelerator_count,
            tpu_topology: s.tpu_topology.clone(),
            hosts_per_slice: s.hosts_per_slice,
            min_nodes: s.min_nodes,
            max_nodes: s.max_nodes,
            spot: s.spot,
            reservation: s.reservation.clone(),
            zones: s.zones.clone(),
            taints: s.taints.iter().map(Taint::from).collect(),
            labels: s.labels.clone(),
            provisioning: Some(s.mode()),
            max_run_duration: s.max_run_duration.clone(),
            driver_version: s.driver_version.clone(),
            failover: s.failover.as_ref().map(FailoverRef::from),
            estimated_hourly_cost: s.estimated_hourly_cost.as_ref().map(EstimatedCost::from),
            // Filled by the renderer from the pool's row.
            name: String::new(),
            state: PoolState::default(),
            create_time: String::new(),
            etag: String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::domain::provisioning::Provisioning;

    /// The view's JSON holds every field of the record's JSON, spelled the same.
    fn assert_view_keeps(record: Value) {
        let spec: PoolSpecRecord = serde_json::from_value(record.clone()).unwrap();
        let view = serde_json::to_value(NodePool::from(&spec)).unwrap();
        for (k, v) in record.as_object().unwrap() {
            assert_eq!(&view[k], v, "{k}");
        }
    }

    #[test]
    fn the_view_shows_the_record() {
        let whole = json!({
            "poolId": "gpu-l4-ab12", "accelerator": "gpu-l4", "kind": "GPU",
            "machineType": "g2-standard-8", "gkeAcceleratorType": "nvidia-l4",
            "acceleratorCount": 1, "minNodes": 0, "maxNodes": 4, "spot": true,
            "zones": ["us-central1-a"], "labels": {"a": "b"}, "driverVersion": "LATEST",
            "taints": [{"key": "k", "value": "v", "effect": "NO_SCHEDULE"}],
            "failover": {"role": "SPOT", "pairedPool": "gpu-l4-od12"},
            "estimatedHourlyCost": {"currency": "USD", "perNode": 0.85, "atMin": 0.0, "atMax": 3.4}
        });
        assert_view_keeps(whole.clone());
        let spec: PoolSpecRecord = serde_json::from_value(whole).unwrap();
        let view = NodePool::from(&spec);
        assert_eq!(view.gpu_units_per_node, None, "whole GPUs");
        assert_eq!(view.provisioning, Some(Provisioning::Spot));
        let shared = json!({
            "poolId": "gpu-a100-ab12", "accelerator": "gpu-a100x2", "kind": "GPU",
            "machineType": "a2-highgpu-2g", "gkeAcceleratorType": "nvidia-tesla-a100",
            "acceleratorCount": 2, "minNodes": 0, "maxNodes": 10, "spot": false,
            "partitionSize": "1g.5gb", "provisioning": "FLEX_START",
            "sharing": {"strategy": "TIME_SHARING", "maxClientsPerGpu": 3}
        });
        assert_view_keeps(shared.clone());
        let spec: PoolSpecRecord = serde_json::from_value(shared).unwrap();
        assert_eq!(NodePool::from(&spec).gpu_units_per_node, Some(2 * 7 * 3));
    }
}
