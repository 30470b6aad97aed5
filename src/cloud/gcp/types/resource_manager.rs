//! Cloud Resource Manager v3 wire types: projects; the IAM policy types are IAM's own
//! (`cloudresourcemanager.v3.json` defines the same `Policy`, `Binding` and `Expr`).
//!
//! Invariant: every field name is one `cloudresourcemanager.v3.json` defines.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::iam::{
    Binding, Expr, GetIamPolicyRequest, GetPolicyOptions, POLICY_VERSION, Policy,
    SetIamPolicyRequest,
};

/// `Project` (output only, as kineticd reads it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Project {
    /// `projects/{number}`.
    pub name: String,
    pub project_id: String,
    /// ACTIVE | DELETE_REQUESTED.
    pub state: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub parent: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub etag: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub create_time: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub update_time: String,
}

impl Project {
    /// The project number from `name` (`projects/123`), when it is one.
    pub fn number(&self) -> Option<u64> {
        self.name.strip_prefix("projects/")?.parse().ok()
    }
}
