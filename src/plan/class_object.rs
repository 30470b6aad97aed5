//! The GKE ComputeClass object (`cloud.google.com/v1`, cluster-scoped) as kineticd writes
//! it: plain data that a plan action's details carry ([`super::details`]) and that
//! [`super::computeclass`] builds for a failover pair.
//!
//! Invariant: only the fields kineticd sets, with the JSON names GKE's CRD gives them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A ComputeClass object (the fields kineticd sets; GKE's CRD has more).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComputeClass {
    /// `cloud.google.com/v1`.
    pub api_version: String,
    /// `ComputeClass`.
    pub kind: String,
    pub metadata: ClassMetadata,
    pub spec: ClassSpec,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ClassMetadata {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClassSpec {
    /// In order: GKE scales the first rule's pools first.
    pub priorities: Vec<PriorityRule>,
    pub active_migration: ActiveMigration,
    /// Off: the class scales the pair's pools only, never pools GKE would create.
    pub node_pool_auto_creation: NodePoolAutoCreation,
    /// `DoNotScaleUp`: when no rule can be met, pods stay Pending.
    pub when_unsatisfiable: String,
}

/// A `nodepools` rule: manually created pools, tied to the class by label and taint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PriorityRule {
    pub nodepools: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActiveMigration {
    /// Move pods to nodes of a higher rule when it can take them again (back to spot).
    pub optimize_rule_priority: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct NodePoolAutoCreation {
    pub enabled: bool,
}
