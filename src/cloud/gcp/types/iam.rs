//! IAM v1 wire types: service accounts and the IAM `Policy` (also used, unchanged, by
//! Cloud Resource Manager v3 project policies).
//!
//! Invariant: every field name is one the discovery documents (`iam.v1.json`,
//! `cloudresourcemanager.v3.json`) define; requests serialise only what the caller set.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Policy version needed for conditional role bindings; kineticd always writes it.
pub const POLICY_VERSION: i32 = 3;

/// `google.iam.v1.Policy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Policy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bindings: Vec<Binding>,
    /// Kept opaque and sent back as read (a set without `updateMask` leaves them alone).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub audit_configs: Vec<Value>,
    /// Base64; a set carrying a stale etag fails with 409 ABORTED.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub etag: String,
}

/// `google.iam.v1.Binding`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Binding {
    pub role: String,
    pub members: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<Expr>,
}

/// `google.type.Expr` (a CEL condition on a binding).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Expr {
    pub expression: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub title: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub location: String,
}

impl Policy {
    /// Grant `role` to `member` (unconditionally). Returns whether the policy changed.
    pub fn add_binding(&mut self, role: &str, member: &str) -> bool {
        match self
            .bindings
            .iter_mut()
            .find(|b| b.role == role && b.condition.is_none())
        {
            Some(b) if b.members.iter().any(|m| m == member) => false,
            Some(b) => {
                b.members.push(member.to_owned());
                true
            }
            None => {
                self.bindings.push(Binding {
                    role: role.to_owned(),
                    members: vec![member.to_owned()],
                    condition: None,
                });
                true
            }
        }
    }

    /// Revoke the unconditional grant of `role` to `member`; drops bindings left empty.
    /// Returns whether the policy changed.
    pub fn remove_binding(&mut self, role: &str, member: &str) -> bool {
        let mut changed = false;
        for b in self
            .bindings
            .iter_mut()
            .filter(|b| b.role == role && b.condition.is_none())
        {
            let before = b.members.len();
            b.members.retain(|m| m != member);
            changed |= b.members.len() != before;
        }
        self.bindings.retain(|b| !b.members.is_empty());
        changed
    }

    /// Grant each `(role, member)`; returns whether anything changed.
    pub fn add_bindings(&mut self, grants: &[(&str, &str)]) -> bool {
        grants
            .iter()
            .fold(false, |changed, (r, m)| self.add_binding(r, m) | changed)
    }

    /// Revoke each `(role, member)`; returns whether anything changed.
    pub fn remove_bindings(&mut self, grants: &[(&str, &str)]) -> bool {
        grants
            .iter()
            .fold(false, |changed, (r, m)| self.remove_binding(r, m) | changed)
    }

    /// Whether `member` holds `role` unconditionally.
    pub fn has_binding(&self, role: &str, member: &str) -> bool {
        self.bindings.iter().any(|b| {
            b.role == role && b.condition.is_none() && b.members.iter().any(|m| m == member)
        })
    }
}

/// `GetIamPolicyRequest` (Resource Manager: the body of `:getIamPolicy`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetIamPolicyRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<GetPolicyOptions>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetPolicyOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_policy_version: Option<i32>,
}

/// `SetIamPolicyRequest`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SetIamPolicyRequest {
    pub policy: Policy,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_mask: Option<String>,
}

/// `ServiceAccount`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceAccount {
    /// `projects/{p}/serviceAccounts/{email}` (output).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub project_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub unique_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub email: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub etag: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub oauth2_client_id: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
}

/// `CreateServiceAccountRequest`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CreateServiceAccountRequest {
    pub account_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ServiceAccount>,
}

/// `Role`: a predefined (`roles/...`) or custom (`projects/{p}/roles/{r}`,
/// `organizations/{o}/roles/{r}`) role and the permissions it grants.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Role {
    /// The role's full name (output; never set in a create request).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub title: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub included_permissions: Vec<String>,
    /// ALPHA (omitted on output) | BETA | GA | DEPRECATED | DISABLED | EAP. A DISABLED
    /// role grants nothing.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub stage: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub etag: String,
    /// A deleted custom role (kept for 7 days) grants nothing.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
}

impl Role {
    /// Whether a binding of this role grants `permission` now (not deleted, not
    /// DISABLED, and listed).
    pub fn grants(&self, permission: &str) -> bool {
        !self.deleted
            && self.stage != "DISABLED"
            && self.included_permissions.iter().any(|p| p == permission)
    }
}

/// `CreateRoleRequest`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CreateRoleRequest {
    pub role_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
}

/// Whether `role` names a custom role (`projects/{p}/roles/{r}` or
/// `organizations/{o}/roles/{r}`), which only IAM's `roles.get` can describe.
pub fn is_custom_role(role: &str) -> bool {
    ["projects/", "organizations/"].iter().any(|scope| {
        role.strip_prefix(scope)
            .and_then(|r| r.split_once("/roles/"))
            .is_some_and(|(owner, name)| {
                !owner.is_empty() && !owner.contains('/') && !name.is_empty() && !name.contains('/')
            })
    })
}

/// Email of the service account `account_id` in `project`.
pub fn service_account_email(account_id: &str, project: &str) -> String {
    format!("{account_id}@{project}.iam.gserviceaccount.com")
}

/// Check an `accountId` as IAM does: 6-30 characters matching `[a-z]([-a-z0-9]*[a-z0-9])`.
pub fn validate_account_id(id: &str) -> Result<(), String> {
    let bytes = id.as_bytes();
    let ok_len = (6..=30).contains(&bytes.len());
    let ok_chars = bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes
            .last()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && bytes
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if ok_len && ok_chars {
        Ok(())
    } else {
        Err(format!(
            "Invalid account ID {id:?}: it must be 6 to 30 characters matching \
             [a-z]([-a-z0-9]*[a-z0-9])"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_edit() {
        let mut p = Policy::default();
        assert!(p.add_binding("roles/a", "user:x"));
        assert!(!p.add_binding("roles/a", "user:x"));
        assert!(p.add_binding("roles/a", "user:y"));
        assert!(p.has_binding("roles/a", "user:y"));
        assert!(p.remove_binding("roles/a", "user:x"));
        assert!(p.remove_binding("roles/a", "user:y"));
        assert!(p.bindings.is_empty());
        assert!(!p.remove_binding("roles/a", "user:y"));
    }

    #[test]
    fn account_ids() {
        assert!(validate_account_id("kn-demo-nodes").is_ok());
        assert!(validate_account_id("short").is_err());
        assert!(validate_account_id("1abcdef").is_err());
        assert!(validate_account_id("abcdef-").is_err());
        assert!(validate_account_id("Abcdefg").is_err());
        assert!(validate_account_id(&"a".repeat(31)).is_err());
    }
}
