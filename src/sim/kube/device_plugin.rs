//! GKE's NVIDIA device plugin at pod admission on nodes whose GPUs are shared
//! (time-sharing, MPS): a container may be allocated at most one `nvidia.com/gpu` unless
//! the node has a single GPU (or MIG partition); otherwise the kubelet fails the pod with
//! `UnexpectedAdmissionError` (GoogleCloudPlatform/container-engine-accelerators,
//! `pkg/gpu/nvidia/gpusharing`, `ValidateRequest`).
//!
//! Invariant: only nodes carrying GKE's sharing labels are judged; a refused pod is
//! Failed (terminal), so it holds nothing on the node.

use serde_json::{Value, json};

use crate::domain::gpu_sharing::{MAX_CLIENTS_LABEL, STRATEGY_LABEL};

use super::node_view::NodeView;
use super::objects::now_rfc3339;

const GPU: &str = "nvidia.com/gpu";

/// Whole `nvidia.com/gpu` a container asks for (its request, else its limit).
fn container_gpus(c: &Value) -> i64 {
    let r = &c["resources"];
    let q = r["requests"][GPU].clone();
    let q = if q.is_null() {
        r["limits"][GPU].clone()
    } else {
        q
    };
    match q {
        Value::String(s) => s.parse().unwrap_or(0),
        Value::Number(n) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

/// The kubelet's refusal of `pod` on `node`, when the device plugin refuses it.
pub fn refusal(pod: &Value, node: &NodeView) -> Option<String> {
    let strategy = node.labels.get(STRATEGY_LABEL)?;
    let clients: i128 = node.labels.get(MAX_CLIENTS_LABEL)?.parse().ok()?;
    let units = node.allocatable.get(GPU).copied().unwrap_or(0) / 1000;
    let devices = units / clients.max(1);
    let most = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(container_gpus)
        .max()
        .unwrap_or(0);
    (most > 1 && devices > 1).then(|| {
        format!(
            "Pod Allocate failed due to rpc error: code = Unknown desc = [invalid request for sharing GPU ({strategy}), at most 1 {GPU} can be requested on nodes which have more than 1 physical GPU or MIG partitions], which is unexpected"
        )
    })
}

/// A pod's status once the kubelet refused it.
pub fn failed_status(message: &str) -> Value {
    json!({
        "phase": "Failed",
        "reason": "UnexpectedAdmissionError",
        "message": message,
        "startTime": now_rfc3339(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(gpus: &str, clients: &str) -> NodeView {
        let mut n = NodeView::from_json(&json!({
            "metadata": {"name": "n", "labels": {
                STRATEGY_LABEL: "time-sharing", MAX_CLIENTS_LABEL: clients}},
            "status": {"allocatable": {GPU: gpus}},
        }));
        n.name = "n".into();
        n
    }

    fn pod(gpus: Value) -> Value {
        json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {GPU: gpus}}}]}})
    }

    #[test]
    fn more_than_one_share_per_container_only_on_single_device_nodes() {
        // Two GPUs shared by 4: 8 units, 2 devices.
        let two = node("8", "4");
        assert!(
            refusal(&pod(json!("2")), &two)
                .unwrap()
                .contains("at most 1")
        );
        assert!(refusal(&pod(json!(1)), &two).is_none());
        // One GPU shared by 4: a container may take several shares.
        assert!(refusal(&pod(json!(2)), &node("4", "4")).is_none());
        // Not a shared node.
        let mut whole = node("8", "4");
        whole.labels.clear();
        assert!(refusal(&pod(json!(2)), &whole).is_none());
        assert_eq!(failed_status("m")["reason"], "UnexpectedAdmissionError");
    }
}
