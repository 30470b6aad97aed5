//! The JSON the store keeps in `clusters.spec` and `node_pools.spec`, as the store's own
//! types (not the API model), and the strict decoding of stored states and specs.
//!
//! Invariant: a stored value that does not decode is a [`Corrupt`] error naming its
//! table, row and column; it never becomes a default. Every spec ever written decodes:
//! a cluster spec's fields all have defaults (the column defaults to `{}`); a pool spec
//! ([`PoolSpecRecord`], a domain type: the one source of a pool's API view and GKE
//! wire form) needs the fields that make the pool (accelerator, kind, machine type,
//! bounds, spot).

use std::fmt::Display;
use std::str::FromStr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::domain::pool_record::{
    CostRecord, FailoverRecord, PoolSpecRecord, SharingRecord, TaintRecord,
};
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

    /// A record row's `state` and `spec` columns (clusters, node pools), in that order.
    pub fn state_and_spec<S: FromStr<Err = UnknownState>, T: DeserializeOwned>(
        &self,
        state: &str,
        spec: Value,
    ) -> Result<(S, T), Corrupt> {
        Ok((self.state("state", state)?, self.json("spec", spec)?))
    }

    /// A record row's shown `state` and last `settled_state` (`None`: never settled).
    pub fn states<S: FromStr<Err = UnknownState>, T: FromStr<Err = UnknownState>>(
        &self,
        state: &str,
        settled: Option<&str>,
    ) -> Result<(S, Option<T>), Corrupt> {
        Ok((
            self.state("state", state)?,
            self.opt_state("settled_state", settled)?,
        ))
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

/// A row type whose columns [`Row`] checks: the one way stored rows become records.
pub(super) trait Stored {
    type Record;
    fn decode(self) -> Result<Self::Record, Corrupt>;
}

/// A stored row as its record.
pub(super) fn one<R: Stored>(row: R) -> Result<R::Record, super::StoreError> {
    Ok(row.decode()?)
}

/// A stored row, if any, as its record.
pub(super) fn maybe<R: Stored>(row: Option<R>) -> Result<Option<R::Record>, super::StoreError> {
    row.map(one).transpose()
}

/// Stored rows as their records (the first that does not decode fails them all).
pub(super) fn all<R: Stored>(rows: Vec<R>) -> Result<Vec<R::Record>, super::StoreError> {
    rows.into_iter().map(one).collect()
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
}
