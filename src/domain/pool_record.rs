//! A node pool's record: its whole desired shape, fixed when the pool is added and kept
//! as JSON in `node_pools.spec`. It is the one source of a pool: plans and steps rebuild
//! the pool from it, the API's view (`model::NodePool`) and GKE's wire form are derived
//! from it one way, and nothing is converted back.
//!
//! Invariant: enums stay enums until serialised, with the exact spellings rows have
//! always held (`GPU`, `SPOT`, `TIME_SHARING`, `NO_SCHEDULE`, `FLEX_START`); a stored
//! value outside them does not decode (the store reports it as corrupt). Rows written
//! before a field existed decode (`default`), and absent options are not written, so
//! old rows stay byte-identical.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::accelerators::Kind;
use super::gpu_sharing::Strategy;
use super::pools::{FailoverRole, TaintEffect};
use super::provisioning::Provisioning;

/// A node taint as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaintRecord {
    pub key: String,
    pub value: String,
    pub effect: TaintEffect,
}

/// A spot/on-demand pair's link, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailoverRecord {
    pub role: FailoverRole,
    pub paired_pool: String,
}

/// A pool's GPU sharing, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SharingRecord {
    pub strategy: Strategy,
    pub max_clients_per_gpu: u32,
}

/// The price estimate made when the pool was added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CostRecord {
    pub currency: String,
    #[serde(serialize_with = "super::pricing::serialize_cents")]
    pub per_node: f64,
    #[serde(serialize_with = "super::pricing::serialize_cents")]
    pub at_min: f64,
    #[serde(serialize_with = "super::pricing::serialize_cents")]
    pub at_max: f64,
}

/// `node_pools.spec`: the pool's full desired shape, fixed when it was added. Rows
/// written before this type also hold the API's presentation fields (`name`, `state`,
/// `createTime`, empty there); they are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolSpecRecord {
    #[serde(default)]
    pub pool_id: String,
    pub accelerator: String,
    pub kind: Kind,
    pub machine_type: String,
    #[serde(default)]
    pub gke_accelerator_type: Option<String>,
    #[serde(default)]
    pub accelerator_count: Option<i64>,
    #[serde(default)]
    pub tpu_topology: Option<String>,
    #[serde(default)]
    pub hosts_per_slice: Option<i64>,
    pub min_nodes: i64,
    pub max_nodes: i64,
    pub spot: bool,
    #[serde(default)]
    pub reservation: Option<String>,
    #[serde(default)]
    pub zones: Vec<String>,
    #[serde(default)]
    pub taints: Vec<TaintRecord>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub max_run_duration: Option<String>,
    #[serde(default)]
    pub driver_version: Option<String>,
    #[serde(default)]
    pub failover: Option<FailoverRecord>,
    #[serde(default)]
    pub estimated_hourly_cost: Option<CostRecord>,
    /// FLEX_START | QUEUED; absent for every other mode (they follow from `spot` and
    /// `reservation`), so rows written before flex-start stay byte-identical.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning: Option<Provisioning>,
    /// GPU time-sharing or MPS (absent in rows written before sharing existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<SharingRecord>,
    /// MIG partition size (`1g.5gb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_size: Option<String>,
    /// GKE's autoscaling `locationPolicy`: `ANY` for a spot pool added with
    /// `zones: ["auto"]` (the autoscaler picks whichever zone has capacity); absent:
    /// GKE's default (BALANCED), and rows written before it stay byte-identical.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location_policy: Option<String>,
}

impl PoolSpecRecord {
    /// How the pool's nodes are obtained: the stored flex-start mode, else what `spot`
    /// and `reservation` say.
    pub fn mode(&self) -> Provisioning {
        self.provisioning.unwrap_or(if self.spot {
            Provisioning::Spot
        } else if self.reservation.is_some() {
            Provisioning::Reservation
        } else {
            Provisioning::OnDemand
        })
    }

    /// The spot pool of a failover pair.
    pub fn is_spot_of_pair(&self) -> bool {
        self.failover
            .as_ref()
            .is_some_and(|f| f.role == FailoverRole::Spot)
    }

    /// A GPU pool without GKE-managed drivers needs the NVIDIA driver installer.
    pub fn needs_driver_installer(&self) -> bool {
        self.kind == Kind::Gpu
            && !matches!(self.driver_version.as_deref(), Some("DEFAULT" | "LATEST"))
    }
}

/// Unit tests fill the fields they care about; a pool has no default kind outside them.
#[cfg(test)]
impl Default for PoolSpecRecord {
    fn default() -> Self {
        PoolSpecRecord {
            pool_id: String::new(),
            accelerator: String::new(),
            kind: Kind::Gpu,
            machine_type: String::new(),
            gke_accelerator_type: None,
            accelerator_count: None,
            tpu_topology: None,
            hosts_per_slice: None,
            min_nodes: 0,
            max_nodes: 0,
            spot: false,
            reservation: None,
            zones: Vec::new(),
            taints: Vec::new(),
            labels: BTreeMap::new(),
            max_run_duration: None,
            driver_version: None,
            failover: None,
            estimated_hourly_cost: None,
            provisioning: None,
            sharing: None,
            partition_size: None,
            location_policy: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pool_specs_round_trip() {
        let v = json!({"name": "", "poolId": "p", "accelerator": "gpu-l4", "kind": "GPU",
            "machineType": "g2-standard-8", "minNodes": 0, "maxNodes": 4, "spot": true,
            "state": "", "createTime": "", "taints": [{"key": "k", "value": "v", "effect": "NO_SCHEDULE"}],
            "estimatedHourlyCost": {"currency": "USD", "perNode": 0.85, "atMin": 0.0, "atMax": 3.4}});
        let s: PoolSpecRecord = serde_json::from_value(v.clone()).unwrap();
        let back: PoolSpecRecord =
            serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        assert_eq!(s.kind, Kind::Gpu);
        assert_eq!(s.taints[0].effect, TaintEffect::NoSchedule);
    }

    #[test]
    fn enums_keep_their_stored_spellings() {
        let v = json!({"poolId": "p", "accelerator": "gpu-l4", "kind": "TPU",
            "machineType": "ct5lp-hightpu-4t", "minNodes": 0, "maxNodes": 1, "spot": false,
            "zones": [], "taints": [{"key": "k", "value": "v", "effect": "PREFER_NO_SCHEDULE"}],
            "labels": {}, "failover": {"role": "ON_DEMAND", "pairedPool": "q"},
            "provisioning": "QUEUED", "sharing": {"strategy": "TIME_SHARING", "maxClientsPerGpu": 2}});
        let s: PoolSpecRecord = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(s.mode(), Provisioning::Queued);
        assert_eq!(
            s.sharing.as_ref().map(|x| x.strategy),
            Some(Strategy::TimeSharing)
        );
        let back = serde_json::to_value(&s).unwrap();
        for k in ["kind", "taints", "failover", "provisioning", "sharing"] {
            assert_eq!(back[k], v[k], "{k}");
        }
        let mut bad = v.clone();
        bad["kind"] = json!("gpu");
        assert!(serde_json::from_value::<PoolSpecRecord>(bad).is_err());
        let mut bad = v;
        bad["failover"]["role"] = json!("PREEMPTIBLE");
        assert!(serde_json::from_value::<PoolSpecRecord>(bad).is_err());
    }
}
