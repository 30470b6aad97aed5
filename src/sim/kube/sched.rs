//! A small kube-scheduler: binds pending pods to nodes honouring resource requests
//! (cpu, memory, pods, extended resources such as `nvidia.com/gpu`), NoSchedule and
//! NoExecute taints against tolerations, `nodeSelector` and required node affinity,
//! and explains failures the way kube-scheduler does
//! ("0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated
//! taint {nvidia.com/gpu: present}.").
//!
//! Invariant: filters run in kube-scheduler's order (unschedulable, taints, affinity,
//! resources) and a node reports only the first filter it fails; a pod's status is
//! rewritten only when it changes, so an idle cluster keeps its resourceVersions.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::events::{self, EventType};
use super::objects::{ApiStore, ObjKey, now_rfc3339};

/// The scheduler's name in events.
const SCHEDULER: &str = "default-scheduler";

pub use super::node_view::{NodeView, Res};
use super::node_view::{res_map, string_map};

/// A pod's requests (containers summed, init containers by maximum; a resource with
/// only a limit is requested at its limit), plus one `pods` slot.
pub fn pod_requests(pod: &Value) -> Res {
    let of = |c: &Value| -> Res {
        let mut r = res_map(&c["resources"]["limits"]);
        r.extend(res_map(&c["resources"]["requests"]));
        r
    };
    let mut total = Res::new();
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        for (k, v) in of(c) {
            *total.entry(k).or_default() += v;
        }
    }
    for c in pod["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for (k, v) in of(c) {
            let e = total.entry(k).or_default();
            *e = (*e).max(v);
        }
    }
    total.insert("pods".into(), 1000);
    total.retain(|_, v| *v > 0);
    total
}

fn tolerates(tolerations: &[Value], key: &str, value: &str, effect: &str) -> bool {
    tolerations.iter().any(|t| {
        let s = |k: &str| t[k].as_str().unwrap_or("");
        let effect_ok = s("effect").is_empty() || s("effect") == effect;
        let key_ok = s("key").is_empty() || s("key") == key;
        let value_ok = match s("operator") {
            "Exists" => true,
            _ => !s("key").is_empty() && s("value") == value,
        };
        effect_ok && key_ok && value_ok
    })
}

/// The first NoSchedule/NoExecute taint of `node` the pod does not tolerate.
fn untolerated<'a>(spec: &Value, node: &'a NodeView) -> Option<&'a (String, String, String)> {
    let tols = spec["tolerations"].as_array().cloned().unwrap_or_default();
    node.taints
        .iter()
        .filter(|(_, _, e)| e == "NoSchedule" || e == "NoExecute")
        .find(|(k, v, e)| !tolerates(&tols, k, v, e))
}

fn expression_matches(e: &Value, values_of: &BTreeMap<String, String>) -> bool {
    let key = e["key"].as_str().unwrap_or("");
    let values: Vec<&str> = e["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let got = values_of.get(key).map(String::as_str);
    let num = |s: Option<&str>| s.and_then(|s| s.parse::<i64>().ok());
    match e["operator"].as_str().unwrap_or("") {
        "In" => got.is_some_and(|g| values.contains(&g)),
        "NotIn" => got.is_none_or(|g| !values.contains(&g)),
        "Exists" => got.is_some(),
        "DoesNotExist" => got.is_none(),
        "Gt" => matches!((num(got), num(values.first().copied())), (Some(a), Some(b)) if a > b),
        "Lt" => matches!((num(got), num(values.first().copied())), (Some(a), Some(b)) if a < b),
        _ => false,
    }
}

fn term_matches(term: &Value, node: &NodeView) -> bool {
    let exprs = term["matchExpressions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let fields = term["matchFields"].as_array().cloned().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return false; // an empty term matches no node
    }
    let name_map = BTreeMap::from([("metadata.name".to_owned(), node.name.clone())]);
    exprs.iter().all(|e| expression_matches(e, &node.labels))
        && fields.iter().all(|e| expression_matches(e, &name_map))
}

/// `nodeSelector` and required node affinity.
fn affinity_matches(spec: &Value, node: &NodeView) -> bool {
    let selector_ok = string_map(&spec["nodeSelector"])
        .iter()
        .all(|(k, v)| node.labels.get(k) == Some(v));
    let required =
        &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    let affinity_ok = match required["nodeSelectorTerms"].as_array() {
        Some(terms) => terms.iter().any(|t| term_matches(t, node)),
        None => true,
    };
    selector_ok && affinity_ok
}

/// Whether a pod with `spec` may run on `node` at all (taints and affinity; resources
/// are not considered): what the DaemonSet controller checks.
pub fn placement_ok(spec: &Value, node: &NodeView) -> bool {
    !node.unschedulable && untolerated(spec, node).is_none() && affinity_matches(spec, node)
}

/// Whether a pod fits `node` given what is `used` there; else the node's failure reasons.
pub fn check(spec: &Value, req: &Res, node: &NodeView, used: &Res) -> Result<(), Vec<String>> {
    if node.unschedulable {
        return Err(vec!["node(s) were unschedulable".into()]);
    }
    if let Some((k, v, _)) = untolerated(spec, node) {
        return Err(vec![format!("node(s) had untolerated taint {{{k}: {v}}}")]);
    }
    if !affinity_matches(spec, node) {
        return Err(vec![
            "node(s) didn't match Pod's node affinity/selector".into(),
        ]);
    }
    let mut reasons = Vec::new();
    for (r, amount) in req {
        let have = node.allocatable.get(r).copied().unwrap_or(0);
        let taken = used.get(r).copied().unwrap_or(0);
        if taken + amount > have {
            reasons.push(if r == "pods" {
                "Too many pods".to_owned()
            } else {
                format!("Insufficient {r}")
            });
        }
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(reasons)
    }
}

/// kube-scheduler's FitError message.
pub fn fit_message(total_nodes: usize, failures: &[Vec<String>]) -> String {
    if total_nodes == 0 {
        return "no nodes available to schedule pods".to_owned();
    }
    let mut hist: BTreeMap<&str, usize> = BTreeMap::new();
    for reason in failures.iter().flatten() {
        *hist.entry(reason).or_default() += 1;
    }
    let mut parts: Vec<String> = hist.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    format!("0/{total_nodes} nodes are available: {}.", parts.join(", "))
}

fn is_terminal(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

pub fn add(into: &mut Res, req: &Res) {
    for (k, v) in req {
        *into.entry(k.clone()).or_default() += v;
    }
}

/// A pod's status once it is running on `node`.
fn running_status(pod: &Value, node: &NodeView) -> Value {
    let h = pod["metadata"]["uid"]
        .as_str()
        .unwrap_or("")
        .bytes()
        .fold(7_u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    let cond = |t: &str| json!({"type": t, "status": "True"});
    let started = now_rfc3339();
    let containers: Vec<Value> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            json!({
                "name": c["name"], "image": c["image"], "imageID": "",
                "containerID": format!("containerd://{h:016x}"),
                "ready": true, "started": true, "restartCount": 0,
                "state": {"running": {"startedAt": started}},
            })
        })
        .collect();
    json!({
        "phase": "Running",
        "conditions": [cond("PodScheduled"), cond("Initialized"), cond("ContainersReady"), cond("Ready")],
        "hostIP": node.ip,
        "podIP": format!("10.{}.{}.{}", 64 + (h % 64), (h >> 8) & 0xff, 2 + ((h >> 16) % 250)),
        "startTime": started,
        "containerStatuses": containers,
    })
}

/// A pending pod's status.
pub fn pending_status(message: Option<&str>) -> Value {
    match message {
        Some(m) => json!({
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": m}],
        }),
        None => json!({"phase": "Pending"}),
    }
}

/// Nodes as the scheduler sees them, in name order.
pub fn node_views(store: &ApiStore) -> Vec<NodeView> {
    store
        .list("", "nodes", None)
        .map(|(_, n)| NodeView::from_json(n))
        .collect()
}

/// Bind every pending pod that fits somewhere (creation order); mark the others
/// Unschedulable. Returns whether anything changed and the pods left unschedulable.
pub fn schedule(store: &mut ApiStore) -> (bool, Vec<ObjKey>) {
    let nodes = node_views(store);
    let mut used: BTreeMap<String, Res> = BTreeMap::new();
    let mut pending: Vec<(String, ObjKey)> = Vec::new();
    for (k, pod) in store.list("", "pods", None) {
        if is_terminal(pod) {
            continue;
        }
        match pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
            Some(n) => add(used.entry(n.to_owned()).or_default(), &pod_requests(pod)),
            None => {
                let created = pod["metadata"]["creationTimestamp"].as_str().unwrap_or("");
                pending.push((created.to_owned(), k.clone()));
            }
        }
    }
    pending.sort();
    let mut changed = false;
    let mut unschedulable = Vec::new();
    for (_, key) in pending {
        let Some(pod) = store.get(&key).cloned() else {
            continue;
        };
        if !pod["spec"].is_object() {
            continue; // not a schedulable pod (the real API server would have refused it)
        }
        let req = pod_requests(&pod);
        let mut failures = Vec::new();
        let mut chosen = None;
        for node in &nodes {
            let u = used.get(&node.name).cloned().unwrap_or_default();
            match check(&pod["spec"], &req, node, &u) {
                Ok(()) => {
                    chosen = Some(node);
                    break;
                }
                Err(r) => failures.push(r),
            }
        }
        match chosen {
            Some(node) => {
                let refused = super::device_plugin::refusal(&pod, node);
                if refused.is_none() {
                    add(used.entry(node.name.clone()).or_default(), &req);
                }
                let mut bound = pod.clone();
                bound["spec"]["nodeName"] = json!(node.name);
                bound["status"] = match &refused {
                    Some(m) => super::device_plugin::failed_status(m),
                    None => running_status(&pod, node),
                };
                store.put(key.clone(), bound);
                let message = format!(
                    "Successfully assigned {}/{} to {}",
                    key.namespace, key.name, node.name
                );
                events::on_pod(
                    store,
                    &key,
                    EventType::Normal,
                    "Scheduled",
                    &message,
                    SCHEDULER,
                );
                changed = true;
            }
            None => {
                let message = fit_message(nodes.len(), &failures);
                if store.set_status(&key, pending_status(Some(&message))) {
                    let t = EventType::Warning;
                    events::on_pod(store, &key, t, "FailedScheduling", &message, SCHEDULER);
                    changed = true;
                }
                unschedulable.push(key);
            }
        }
    }
    (changed, unschedulable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, gpus: &str, taints: Value) -> NodeView {
        NodeView::from_json(&json!({
            "metadata": {"name": name, "labels": {"pool": name}},
            "spec": {"taints": taints},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110", "nvidia.com/gpu": gpus}},
        }))
    }

    #[test]
    fn filters_and_message() {
        let gpu_taint =
            json!([{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]);
        let nodes = [
            node("a", "0", json!([])),
            node("b", "1", gpu_taint.clone()),
            node("c", "1", gpu_taint),
        ];
        let pod =
            json!({"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}});
        let req = pod_requests(&pod);
        assert_eq!(req["nvidia.com/gpu"], 1000);
        let failures: Vec<Vec<String>> = nodes
            .iter()
            .filter_map(|n| check(&pod["spec"], &req, n, &Res::new()).err())
            .collect();
        assert_eq!(
            fit_message(3, &failures),
            "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint {nvidia.com/gpu: present}."
        );
        let tolerant = json!({"spec": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["c"]}]}]}}},
            "containers": [{"resources": {"requests": {"nvidia.com/gpu": "1", "cpu": "500m"}}}]}});
        let req = pod_requests(&tolerant);
        assert!(check(&tolerant["spec"], &req, &nodes[1], &Res::new()).is_err());
        assert!(check(&tolerant["spec"], &req, &nodes[2], &Res::new()).is_ok());
        assert_eq!(fit_message(0, &[]), "no nodes available to schedule pods");
    }
}
