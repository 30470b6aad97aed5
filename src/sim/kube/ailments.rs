//! Injected ailments of one simulated cluster: a Deployment or DaemonSet held not ready,
//! a node held NotReady or under pressure, until lifted. `POST
//! /sim/v1/kube/{key}/ailments` with `{"kind": "Deployment"|"DaemonSet"|"Node",
//! "namespace", "name", "condition"?}` (`condition` of a node: `NotReady` (default),
//! `MemoryPressure`, `DiskPressure` or `PIDPressure`); `GET` lists them, `DELETE` lifts
//! them all.
//!
//! Invariant: an ailment is part of the state the controllers and the node sync derive
//! status from (never a one-off status write), so reconciling keeps it in place and
//! lifting it restores exactly the healthy status.

use std::collections::BTreeSet;

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::objects::ObjKey;
use crate::sim::Sim;

/// What may ail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum AilingKind {
    Deployment,
    DaemonSet,
    Node,
}

/// Node conditions an ailment may set.
const NODE_CONDITIONS: [&str; 4] = ["NotReady", "MemoryPressure", "DiskPressure", "PIDPressure"];

/// One ailment.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ailment {
    pub kind: AilingKind,
    #[serde(default)]
    pub namespace: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

/// The ailments of one cluster.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Ailments(pub BTreeSet<Ailment>);

impl Ailments {
    /// Whether the workload at `key` (an apps Deployment or DaemonSet) is held not ready.
    pub fn holds(&self, key: &ObjKey) -> bool {
        let kind = match key.plural.as_str() {
            "deployments" => AilingKind::Deployment,
            "daemonsets" => AilingKind::DaemonSet,
            _ => return false,
        };
        self.0
            .iter()
            .any(|a| a.kind == kind && a.namespace == key.namespace && a.name == key.name)
    }

    /// Set the ailing nodes' conditions in `node` (a node object about to be synced).
    pub fn apply_to_node(&self, node: &mut Value) {
        let name = node["metadata"]["name"].as_str().unwrap_or("").to_owned();
        for a in self
            .0
            .iter()
            .filter(|a| a.kind == AilingKind::Node && a.name == name)
        {
            let cond = a.condition.as_deref().unwrap_or("NotReady");
            let Some(conds) = node["status"]["conditions"].as_array_mut() else {
                continue;
            };
            if cond == "NotReady" {
                for c in conds.iter_mut().filter(|c| c["type"] == "Ready") {
                    c["status"] = json!("False");
                    c["reason"] = json!("KubeletNotReady");
                    c["message"] = json!("container runtime network not ready (simulated)");
                }
            } else {
                conds.retain(|c| c["type"] != cond);
                conds.push(json!({
                    "type": cond, "status": "True", "reason": format!("KubeletHas{cond}"),
                    "message": format!("kubelet has {cond} (simulated)"),
                }));
            }
        }
    }
}

pub fn routes() -> Router<Sim> {
    Router::new().route(
        "/sim/v1/kube/{key}/ailments",
        post(add).get(list).delete(clear),
    )
}

fn error(code: StatusCode, message: String) -> Response {
    (
        code,
        Json(json!({"error": {"code": code.as_u16(), "message": message}})),
    )
        .into_response()
}

async fn add(State(sim): State<Sim>, Path(key): Path<String>, body: axum::body::Bytes) -> Response {
    let a: Ailment = match serde_json::from_slice(&body) {
        Ok(a) => a,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("bad ailment: {e}")),
    };
    if let Some(c) = a.condition.as_deref()
        && (a.kind != AilingKind::Node || !NODE_CONDITIONS.contains(&c))
    {
        return error(
            StatusCode::BAD_REQUEST,
            format!("condition {c:?}: only a Node takes one of {NODE_CONDITIONS:?}"),
        );
    }
    let clock = sim.clock();
    let mut w = sim.world();
    let Some(c) = w.kube.clusters.get_mut(&key) else {
        return error(StatusCode::NOT_FOUND, format!("cluster {key} not found"));
    };
    c.ailments.0.insert(a.clone());
    c.reconcile(clock);
    Json(json!(a)).into_response()
}

async fn list(State(sim): State<Sim>, Path(key): Path<String>) -> Response {
    let w = sim.world();
    match w.kube.clusters.get(&key) {
        Some(c) => Json(json!({"ailments": c.ailments.0})).into_response(),
        None => error(StatusCode::NOT_FOUND, format!("cluster {key} not found")),
    }
}

async fn clear(State(sim): State<Sim>, Path(key): Path<String>) -> Response {
    let clock = sim.clock();
    let mut w = sim.world();
    let Some(c) = w.kube.clusters.get_mut(&key) else {
        return error(StatusCode::NOT_FOUND, format!("cluster {key} not found"));
    };
    let lifted = std::mem::take(&mut c.ailments.0).len();
    c.reconcile(clock);
    Json(json!({ "lifted": lifted })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_and_node_conditions() {
        let mut a = Ailments::default();
        a.0.insert(Ailment {
            kind: AilingKind::Deployment,
            namespace: "lws-system".into(),
            name: "lws-controller-manager".into(),
            condition: None,
        });
        a.0.insert(Ailment {
            kind: AilingKind::Node,
            namespace: String::new(),
            name: "n1".into(),
            condition: Some("DiskPressure".into()),
        });
        assert!(a.holds(&ObjKey::new(
            "apps",
            "deployments",
            "lws-system",
            "lws-controller-manager"
        )));
        assert!(!a.holds(&ObjKey::new(
            "apps",
            "daemonsets",
            "lws-system",
            "lws-controller-manager"
        )));
        let mut node = json!({"metadata": {"name": "n1"}, "status": {"conditions": [
            {"type": "Ready", "status": "True"}]}});
        a.apply_to_node(&mut node);
        let conds = node["status"]["conditions"].as_array().unwrap();
        assert_eq!(conds.len(), 2);
        assert_eq!(conds[1]["type"], "DiskPressure");
        assert_eq!(conds[0]["status"], "True", "still Ready");
    }
}
