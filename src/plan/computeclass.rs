//! The GKE ComputeClass of a failover pair (`cloud.google.com/v1`, cluster-scoped) as a
//! typed object, the plan actions that apply and delete it, and what a workload needs
//! to use it (node selector, tolerations, a ready-to-paste YAML snippet).
//!
//! Invariant: the class names exactly the pair's two pools, the spot pool in the first
//! priority rule and the on-demand pool in the second, with active migration to the
//! higher rule on and no scale-up outside the rules; the object a preview shows is the
//! object the step applies (it travels in the action's details).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::accelerators::Kind;
use crate::domain::compute_class::{CLASS_KEY, ClassName};

pub use super::class_object::{
    ActiveMigration, ClassMetadata, ClassSpec, ComputeClass, NodePoolAutoCreation, PriorityRule,
};
use super::details::KubeObjectDetails;
use super::{Action, ActionKind, Resource, StepId};

pub const API_VERSION: &str = "cloud.google.com/v1";
pub const KIND: &str = "ComputeClass";

/// The class of the pair `spot` (first) and `on_demand` (fallback).
pub fn for_pair(spot: &str, on_demand: &str) -> ComputeClass {
    ComputeClass {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        metadata: ClassMetadata {
            name: ClassName::for_pair(spot).to_string(),
            labels: BTreeMap::from([("kinetic".to_owned(), "true".to_owned())]),
        },
        spec: ClassSpec {
            priorities: vec![
                PriorityRule {
                    nodepools: vec![spot.to_owned()],
                },
                PriorityRule {
                    nodepools: vec![on_demand.to_owned()],
                },
            ],
            active_migration: ActiveMigration {
                optimize_rule_priority: true,
            },
            node_pool_auto_creation: NodePoolAutoCreation { enabled: false },
            when_unsatisfiable: "DoNotScaleUp".into(),
        },
    }
}

/// The action's resource name (`computeclasses/{name}`).
pub fn object_name(class: &ComputeClass) -> String {
    format!("computeclasses/{}", class.metadata.name)
}

fn action(class: ComputeClass, kind: ActionKind, reason: String, after: &[StepId]) -> Action {
    let name = object_name(&class);
    let details = KubeObjectDetails {
        annotations: BTreeMap::new(),
        compute_class: Some(class),
    };
    Action::new(
        StepId::ComputeClass,
        kind,
        Resource::KubernetesObject(Some(details)),
        name,
        reason,
        after,
    )
}

/// Apply the pair's class once both pools exist.
pub fn apply_action(spot: &str, on_demand: &str) -> Action {
    let reason = format!(
        "failover pair: GKE scales up {spot} (spot) first, {on_demand} (on demand) only when spot cannot, and moves pods back to spot when it returns"
    );
    let after = [StepId::pool(spot), StepId::pool(on_demand)];
    action(
        for_pair(spot, on_demand),
        ActionKind::Create,
        reason,
        &after,
    )
}

/// Delete the pair's class after the pool deletions `after` (the pools of the pair the
/// removal still finds).
pub fn delete_action(spot: &str, on_demand: &str, after: &[StepId]) -> Action {
    action(
        for_pair(spot, on_demand),
        ActionKind::Delete,
        "the failover pair's compute class goes with its pools".into(),
        after,
    )
}

/// One toleration of a pod spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Toleration {
    pub key: String,
    pub operator: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub value: Option<String>,
    pub effect: String,
}

/// What a pod needs to run on the pair: its node selector, tolerations and both as YAML.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSelection {
    pub compute_class: String,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
    /// `nodeSelector` and `tolerations` as YAML to paste under a pod template's `spec:`.
    pub snippet: String,
}

/// The selection for `class` on nodes with accelerators of `kind`: GKE adds both
/// tolerations on its own (for pods selecting a class, and ExtendedResourceToleration
/// for pods requesting `nvidia.com/gpu` / `google.com/tpu`); they are spelled out so the
/// spec works wherever it is applied.
pub fn workload(class: &str, kind: Kind) -> WorkloadSelection {
    let accelerator = match kind {
        Kind::Gpu => "nvidia.com/gpu",
        Kind::Tpu => "google.com/tpu",
    };
    let tolerations = vec![
        Toleration {
            key: CLASS_KEY.into(),
            operator: "Equal".into(),
            value: Some(class.to_owned()),
            effect: "NoSchedule".into(),
        },
        Toleration {
            key: accelerator.into(),
            operator: "Exists".into(),
            value: None,
            effect: "NoSchedule".into(),
        },
    ];
    let mut snippet = format!(
        "# GKE adds these tolerations itself (to pods that select the class, and to pods that\n\
         # request {accelerator}); they are spelled out so the spec works on any cluster.\n\
         nodeSelector:\n  {CLASS_KEY}: {class}\ntolerations:\n"
    );
    for t in &tolerations {
        snippet.push_str(&format!("- key: {}\n  operator: {}\n", t.key, t.operator));
        if let Some(v) = &t.value {
            snippet.push_str(&format!("  value: {v}\n"));
        }
        snippet.push_str(&format!("  effect: {}\n", t.effect));
    }
    WorkloadSelection {
        compute_class: class.to_owned(),
        node_selector: BTreeMap::from([(CLASS_KEY.to_owned(), class.to_owned())]),
        tolerations,
        snippet,
    }
}

/// The class a pool record belongs to (its `cloud.google.com/compute-class` label).
pub fn class_of(labels: &BTreeMap<String, String>) -> Option<&str> {
    labels.get(CLASS_KEY).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_prefers_spot_and_serializes_as_the_crd_spells_it() {
        let c = for_pair("gpu-l4-1a2b", "gpu-l4-3c4d");
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            serde_json::json!({
                "apiVersion": "cloud.google.com/v1",
                "kind": "ComputeClass",
                "metadata": {"name": "kinetic-gpu-l4-1a2b", "labels": {"kinetic": "true"}},
                "spec": {
                    "priorities": [{"nodepools": ["gpu-l4-1a2b"]}, {"nodepools": ["gpu-l4-3c4d"]}],
                    "activeMigration": {"optimizeRulePriority": true},
                    "nodePoolAutoCreation": {"enabled": false},
                    "whenUnsatisfiable": "DoNotScaleUp",
                }
            })
        );
        let a = apply_action("gpu-l4-1a2b", "gpu-l4-3c4d");
        assert_eq!(a.id.to_string(), "compute-class");
        assert_eq!(a.name, "computeclasses/kinetic-gpu-l4-1a2b");
        let back: Action = serde_json::from_value(serde_json::to_value(&a).unwrap()).unwrap();
        assert_eq!(back, a);
    }

    #[test]
    fn the_snippet_is_the_selector_and_tolerations_as_yaml() {
        let w = workload("kinetic-gpu-l4-1a2b", Kind::Gpu);
        let parsed: serde_json::Value = serde_saphyr::from_str(&w.snippet).unwrap();
        assert_eq!(
            parsed["nodeSelector"],
            serde_json::to_value(&w.node_selector).unwrap()
        );
        assert_eq!(
            parsed["tolerations"],
            serde_json::to_value(&w.tolerations).unwrap()
        );
        assert_eq!(w.tolerations[1].key, "nvidia.com/gpu");
    }
}
