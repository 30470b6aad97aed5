//! The JSON the store keeps in `clusters.spec` and `node_pools.spec`, as the store's own
//! types (not the API model), and the strict decoding of stored states and specs.
//!
//! Invariant: a stored value that does not decode is a [`Corrupt`] error naming its
//! table, row and column; it never becomes a default. Every spec ever written decodes:
//! a cluster spec's fields all have defaults (the column defaults to `{}`); a pool spec
//! needs the fields that make the pool (accelerator, kind, machine type, bounds, spot).

use std::collections::BTreeMap;
use std::fmt::Display;
use std::str::FromStr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::states::UnknownState;

/// A stored value that does not decode: which row, which column, what it holds and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("stored record {table} {id}: column {column} holds {value}: {why}")]
pub struct Corrupt {
    pub table: &'static str,
    /// The row's key (`{uuid}`, `{cluster}/{pool}`).
    pub id: String,
    pub column: &'static str,
    /// The stored value, cut to 200 characters.
    pub value: String,
    pub why: String,
}

/// Which row a value comes from; decodes its columns into [`Corrupt`] errors.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a, I: Display> {
    pub table: &'static str,
    pub id: &'a I,
}

impl<I: Display> Row<'_, I> {
    fn corrupt(&self, column: &'static str, value: String, why: String) -> Corrupt {
        Corrupt {
            table: self.table,
            id: self.id.to_string(),
            column,
            value: value.chars().take(200).collect(),
            why,
        }
    }

    /// A state column into its enum.
    pub fn state<S: FromStr<Err = UnknownState>>(
        &self,
        column: &'static str,
        value: &str,
    ) -> Result<S, Corrupt> {
        value
            .parse()
            .map_err(|e: UnknownState| self.corrupt(column, format!("{value:?}"), e.to_string()))
    }

    /// A nullable state column into its enum.
    pub fn opt_state<S: FromStr<Err = UnknownState>>(
        &self,
        column: &'static str,
        value: Option<&str>,
    ) -> Result<Option<S>, Corrupt> {
        value.map(|v| self.state(column, v)).transpose()
    }

    /// A JSON column into its record type.
    pub fn json<T: DeserializeOwned>(
        &self,
        column: &'static str,
        value: Value,
    ) -> Result<T, Corrupt> {
        serde_json::from_value(value.clone())
            .map_err(|e| self.corrupt(column, value.to_string(), e.to_string()))
    }
}

fn yes() -> bool {
    true
}

/// `clusters.spec`: what `up` was asked for. Written by `up` (every field) and by tests
/// (some); the column's default is `{}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSpecRecord {
    /// The first pool's accelerator (`cpu` for none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_nodes: Option<u32>,
    /// `down` empties non-empty buckets (true unless `up` said otherwise).
    #[serde(default = "yes")]
    pub force_destroy: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spot: Option<bool>,
    #[serde(default)]
    pub reservation: Option<String>,
}

impl Default for ClusterSpecRecord {
    fn default() -> Self {
        ClusterSpecRecord {
            accelerator: None,
            min_nodes: None,
            force_destroy: true,
            spot: None,
            reservation: None,
        }
    }
}

/// A node taint as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaintRecord {
    pub key: String,
    pub value: String,
    /// NO_SCHEDULE | PREFER_NO_SCHEDULE | NO_EXECUTE
    pub effect: String,
}

/// A spot/on-demand pair's link, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailoverRecord {
    /// SPOT | ON_DEMAND
    pub role: String,
    pub paired_pool: String,
}

/// A pool's GPU sharing, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SharingRecord {
    /// TIME_SHARING | MPS
    pub strategy: String,
    pub max_clients_per_gpu: u32,
}

/// The price estimate made when the pool was added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CostRecord {
    pub currency: String,
    #[serde(serialize_with = "crate::domain::pricing::serialize_cents")]
    pub per_node: f64,
    #[serde(serialize_with = "crate::domain::pricing::serialize_cents")]
    pub at_min: f64,
    #[serde(serialize_with = "crate::domain::pricing::serialize_cents")]
    pub at_max: f64,
}

/// `node_pools.spec`: the pool's full desired shape, fixed when it was added. Rows
/// written before this type also hold the API's presentation fields (`name`, `state`,
/// `createTime`, empty there); they are ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolSpecRecord {
    #[serde(default)]
    pub pool_id: String,
    pub accelerator: String,
    /// GPU | TPU
    pub kind: String,
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
    pub provisioning: Option<String>,
    /// GPU time-sharing or MPS (absent in rows written before sharing existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<SharingRecord>,
    /// MIG partition size (`1g.5gb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_size: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::ClusterState;

    const ROW: Row<'static, &str> = Row {
        table: "clusters",
        id: &"c1",
    };

    #[test]
    fn cluster_specs_every_writer_made_decode() {
        for v in [
            json!({}),
            json!({"forceDestroy": true}),
            json!({"accelerator": "gpu-l4", "minNodes": 0, "forceDestroy": false,
                   "spot": false, "reservation": null}),
        ] {
            let s: ClusterSpecRecord = ROW.json("spec", v.clone()).unwrap();
            assert_eq!(
                s.force_destroy,
                v.get("forceDestroy") != Some(&json!(false))
            );
        }
    }

    #[test]
    fn corrupt_values_name_their_row() {
        let e = ROW
            .json::<ClusterSpecRecord>("spec", json!({"forceDestroy": "yes"}))
            .unwrap_err();
        assert_eq!(
            (e.table, e.id.as_str(), e.column),
            ("clusters", "c1", "spec")
        );
        assert!(e.to_string().contains("forceDestroy"), "{e}");
        assert!(ROW.json::<PoolSpecRecord>("spec", json!({})).is_err());
        assert!(ROW.json::<ClusterSpecRecord>("spec", json!("x")).is_err());
        let s = ROW.state::<ClusterState>("state", "RUNNNING").unwrap_err();
        assert!(s.why.contains("RUNNING"), "{s}");
    }

    #[test]
    fn pool_specs_round_trip() {
        let v = json!({"name": "", "poolId": "p", "accelerator": "gpu-l4", "kind": "GPU",
            "machineType": "g2-standard-8", "minNodes": 0, "maxNodes": 4, "spot": true,
            "state": "", "createTime": "", "taints": [{"key": "k", "value": "v", "effect": "NO_SCHEDULE"}],
            "estimatedHourlyCost": {"currency": "USD", "perNode": 0.85, "atMin": 0.0, "atMax": 3.4}});
        let s: PoolSpecRecord = ROW.json("spec", v).unwrap();
        let back: PoolSpecRecord = ROW.json("spec", serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
}
