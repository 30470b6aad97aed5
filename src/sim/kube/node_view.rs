//! What the scheduler, the autoscaler and the device plugin read of a node: its
//! labels, taints, allocatable resources (in thousandths) and address.
//!
//! Invariant: read from the Node object as the API server stores it; a field that is
//! absent or of the wrong type reads as empty, never as an error.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::cloud::kube::quantity;

/// Resource amounts in thousandths (see [`quantity::milli`]).
pub type Res = BTreeMap<String, i128>;

/// What the scheduler needs to know about a node.
#[derive(Debug, Clone)]
pub struct NodeView {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// (key, value, effect)
    pub taints: Vec<(String, String, String)>,
    pub allocatable: Res,
    pub unschedulable: bool,
    pub ip: String,
}

pub(super) fn string_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn res_map(v: &Value) -> Res {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), quantity::milli(v.as_str()?)?)))
                .collect()
        })
        .unwrap_or_default()
}

impl NodeView {
    pub fn from_json(n: &Value) -> NodeView {
        let s = |v: &Value| v.as_str().unwrap_or("").to_owned();
        NodeView {
            name: s(&n["metadata"]["name"]),
            labels: string_map(&n["metadata"]["labels"]),
            taints: n["spec"]["taints"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| (s(&t["key"]), s(&t["value"]), s(&t["effect"])))
                .collect(),
            allocatable: res_map(&n["status"]["allocatable"]),
            unschedulable: n["spec"]["unschedulable"].as_bool().unwrap_or(false),
            ip: n["status"]["addresses"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|a| a["type"] == "InternalIP")
                .map(|a| s(&a["address"]))
                .unwrap_or_default(),
        }
    }
}
