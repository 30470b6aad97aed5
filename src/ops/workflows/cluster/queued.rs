//! What a job needs to get nodes from a queued-provisioning pool: a PodTemplate that
//! lands on the pool, a ProvisioningRequest (`autoscaling.x-k8s.io/v1`, class
//! `queued-provisioning.gke.io`) whose pod set references it, and the annotations the
//! job's pods carry to consume the request — as in GKE's "Run a large-scale workload
//! with flex-start with queued provisioning" (standalone ProvisioningRequest, without
//! Kueue).
//!
//! Invariant: the template is a pure function of the pool's record, so the operation's
//! response names exactly the pool that was created, its accelerators per node and its
//! run duration.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::domain::accelerators::Kind;
use crate::domain::provisioning::Provisioning;
use crate::store::PoolSpecRecord;

/// GKE's provisioning class for flex-start with queued provisioning.
pub const QUEUED_CLASS: &str = "queued-provisioning.gke.io";
/// The taint GKE puts on queued-provisioning nodes.
pub const QUEUED_TAINT: &str = "cloud.google.com/gke-queued";

/// The objects and fields a workload uses to consume a queued pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuedTemplate {
    pub provisioning_request: Value,
    pub pod_template: Value,
    /// On the job's pod template: which request its pods consume.
    pub pod_annotations: Value,
    pub node_selector: Value,
    pub tolerations: Value,
    /// Both objects as one YAML document stream (PodTemplate first).
    pub snippet: String,
}

/// The template for queued pool `p` (None for any other pool).
pub fn template(p: &PoolSpecRecord) -> Option<QueuedTemplate> {
    if p.provisioning != Some(Provisioning::Queued) {
        return None;
    }
    let pool = &p.pool_id;
    let (resource, per_node, taint) = if p.kind == Kind::Tpu {
        let hosts = p.hosts_per_slice.unwrap_or(1).max(1);
        let chips = p.accelerator_count.unwrap_or(1) / hosts;
        ("google.com/tpu", chips.max(1), "google.com/tpu")
    } else {
        (
            "nvidia.com/gpu",
            p.accelerator_count.unwrap_or(1),
            "nvidia.com/gpu",
        )
    };
    // One pod per node; a multi-host TPU slice needs all its hosts at once.
    let count = p.hosts_per_slice.unwrap_or(1).max(1);
    let seconds = p
        .max_run_duration
        .as_deref()
        .and_then(|d| d.strip_suffix('s'))
        .unwrap_or("604800")
        .to_owned();
    let template_name = format!("{pool}-template");
    let request_name = format!("{pool}-request");
    let node_selector = json!({"cloud.google.com/gke-nodepool": pool});
    let tolerations = json!([
        {"key": taint, "operator": "Exists", "effect": "NoSchedule"},
        {"key": QUEUED_TAINT, "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    ]);
    let pod_template = json!({
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": template_name, "namespace": "default"},
        "template": {"spec": {
            "nodeSelector": node_selector,
            "tolerations": tolerations,
            "restartPolicy": "Never",
            "containers": [{
                "name": "main",
                "image": "busybox:1.36",
                "command": ["sleep", "infinity"],
                "resources": {
                    "requests": {resource: per_node.to_string()},
                    "limits": {resource: per_node.to_string()},
                },
            }],
        }},
    });
    let provisioning_request = json!({
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": {"name": request_name, "namespace": "default"},
        "spec": {
            "provisioningClassName": QUEUED_CLASS,
            "parameters": {"maxRunDurationSeconds": seconds},
            "podSets": [{"count": count, "podTemplateRef": {"name": template_name}}],
        },
    });
    let pod_annotations = json!({
        "cluster-autoscaler.kubernetes.io/consume-provisioning-request": request_name,
        "cluster-autoscaler.kubernetes.io/provisioning-class-name": QUEUED_CLASS,
    });
    let snippet = serde_saphyr::to_string_multiple(&[&pod_template, &provisioning_request])
        .unwrap_or_default();
    Some(QueuedTemplate {
        provisioning_request,
        pod_template,
        pod_annotations,
        node_selector,
        tolerations,
        snippet,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_queued_pools_get_a_template_and_it_names_the_pool() {
        let mut p = PoolSpecRecord {
            pool_id: "gpu-h100-1a2b".into(),
            accelerator_count: Some(8),
            max_run_duration: Some("86400s".into()),
            ..Default::default()
        };
        assert!(template(&p).is_none());
        p.provisioning = Some(Provisioning::Queued);
        let t = template(&p).unwrap();
        let spec = &t.provisioning_request["spec"];
        assert_eq!(spec["provisioningClassName"], QUEUED_CLASS);
        assert_eq!(spec["parameters"]["maxRunDurationSeconds"], "86400");
        assert_eq!(
            spec["podSets"][0]["podTemplateRef"]["name"],
            "gpu-h100-1a2b-template"
        );
        assert_eq!(
            t.pod_template["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-nodepool"],
            "gpu-h100-1a2b"
        );
        assert_eq!(
            t.pod_template["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
            "8"
        );
        let docs: Vec<Value> = serde_saphyr::from_multiple(&t.snippet).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1], t.provisioning_request);
    }
}
