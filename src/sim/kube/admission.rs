//! Mutating admission of pods as a GKE API server performs it, on create and update
//! (also of pods the simulator's controllers create from templates):
//!
//! - defaulting: a container resource with a limit but no request is requested at its
//!   limit (the core API's pod defaults);
//! - `ExtendedResourceToleration` (enabled on GKE): a pod requesting an extended
//!   resource (`nvidia.com/gpu`, `google.com/tpu`) tolerates `{key: <resource>,
//!   operator: Exists, effect: NoSchedule}`, so it may land on the tainted accelerator
//!   nodes;
//! - `DefaultTolerationSeconds` (on by default): a pod tolerates the
//!   `node.kubernetes.io/not-ready` and `node.kubernetes.io/unreachable` NoExecute taints
//!   for 300 s unless it says otherwise;
//! - custom ComputeClasses: a pod selecting `cloud.google.com/compute-class: NAME`
//!   tolerates the `cloud.google.com/compute-class=NAME:NoSchedule` taint GKE asks
//!   manually created node pools of that class to carry.
//!
//! Invariant: admission only adds (requests equal to existing limits, tolerations not
//! already present), so admitting an admitted pod changes nothing.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::quantities::is_extended;

/// The node label (and taint key) of GKE's custom compute classes.
pub const COMPUTE_CLASS_KEY: &str = "cloud.google.com/compute-class";

const CONTAINER_LISTS: [&str; 2] = ["initContainers", "containers"];

/// Requests default to limits, per container.
fn default_requests(spec: &mut Value) {
    for list in CONTAINER_LISTS {
        for c in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(limits) = c["resources"]["limits"].as_object().cloned() else {
                continue;
            };
            if !c["resources"]["requests"].is_object() {
                c["resources"]["requests"] = json!({});
            }
            if let Some(req) = c["resources"]["requests"].as_object_mut() {
                for (k, v) in limits {
                    req.entry(k).or_insert(v);
                }
            }
        }
    }
}

/// Extended resources the pod's containers request, sorted.
fn extended_requests(spec: &Value) -> BTreeSet<String> {
    CONTAINER_LISTS
        .iter()
        .flat_map(|l| spec[*l].as_array().into_iter().flatten())
        .flat_map(|c| {
            let r = &c["resources"];
            [&r["requests"], &r["limits"]]
                .into_iter()
                .filter_map(Value::as_object)
                .flat_map(|m| m.keys().cloned())
                .collect::<Vec<_>>()
        })
        .filter(|k| is_extended(k))
        .collect()
}

/// Append `t` unless an identical toleration is already there.
fn add_toleration(spec: &mut Value, t: Value) {
    if !spec["tolerations"].is_array() {
        spec["tolerations"] = json!([]);
    }
    if let Some(list) = spec["tolerations"].as_array_mut()
        && !list.contains(&t)
    {
        list.push(t);
    }
}

/// The tolerations GKE's admission adds to a pod with `spec` (before defaulting).
pub fn added_tolerations(spec: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = extended_requests(spec)
        .into_iter()
        .map(|r| json!({"key": r, "operator": "Exists", "effect": "NoSchedule"}))
        .collect();
    if let Some(class) = spec["nodeSelector"][COMPUTE_CLASS_KEY].as_str() {
        out.push(json!({
            "key": COMPUTE_CLASS_KEY, "operator": "Equal", "value": class, "effect": "NoSchedule",
        }));
    }
    out
}

/// The NoExecute taints a pod tolerates for [`DEFAULT_TOLERATION_SECONDS`] by default.
const DEFAULT_NO_EXECUTE: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];
pub const DEFAULT_TOLERATION_SECONDS: u64 = 300;

/// DefaultTolerationSeconds: skipped per taint when the pod already tolerates it.
fn default_tolerations(spec: &mut Value) {
    for key in DEFAULT_NO_EXECUTE {
        let covered = spec["tolerations"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| {
                (t["key"] == key || t["key"].as_str().unwrap_or("").is_empty())
                    && matches!(t["effect"].as_str(), None | Some("") | Some("NoExecute"))
            });
        if !covered {
            add_toleration(
                spec,
                json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}),
            );
        }
    }
}

/// Admit a pod spec in place (see the module doc).
pub fn admit_pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    let added = added_tolerations(spec);
    default_requests(spec);
    for t in added {
        add_toleration(spec, t);
    }
    default_tolerations(spec);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_request_gets_the_accelerator_toleration() {
        let mut spec = json!({"containers": [
            {"name": "a", "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "1"}}},
            {"name": "b", "resources": {"requests": {"google.com/tpu": "4"}, "limits": {"google.com/tpu": "4"}}},
        ]});
        admit_pod_spec(&mut spec);
        assert_eq!(
            spec["tolerations"],
            json!([
                {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ])
        );
        assert_eq!(
            spec["containers"][0]["resources"]["requests"],
            json!({"nvidia.com/gpu": "1", "cpu": "1"}),
            "requests default to limits"
        );
        let once = spec.clone();
        admit_pod_spec(&mut spec);
        assert_eq!(spec, once, "admission is idempotent");
    }

    #[test]
    fn plain_pods_and_native_resources_get_nothing() {
        let mut spec = json!({"containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}}}],
            "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-l4"}});
        admit_pod_spec(&mut spec);
        let keys: Vec<&str> = spec["tolerations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["key"].as_str().unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "node.kubernetes.io/not-ready",
                "node.kubernetes.io/unreachable"
            ],
            "only the defaults"
        );
    }

    #[test]
    fn compute_class_selection_tolerates_the_class_taint() {
        let mut spec = json!({
            "nodeSelector": {"cloud.google.com/compute-class": "l4-spot-first"},
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}],
        });
        admit_pod_spec(&mut spec);
        assert_eq!(
            spec["tolerations"],
            json!([
                {"operator": "Exists"},
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "cloud.google.com/compute-class", "operator": "Equal", "value": "l4-spot-first", "effect": "NoSchedule"},
            ])
        );
    }
}
