//! What kube-apiserver checks on RoleBindings and ClusterRoleBindings before storing
//! one: `roleRef` names a role of a kind the binding may refer to (a RoleBinding a Role
//! or a ClusterRole, a ClusterRoleBinding a ClusterRole) in `rbac.authorization.k8s.io`,
//! every subject is a `User` or `Group` (API group `rbac.authorization.k8s.io`) or a
//! `ServiceAccount` (core group; its namespace given in a ClusterRoleBinding) with a
//! name, and an existing binding's `roleRef` never changes (delete and recreate it).
//!
//! Invariant: a binding that fails here is refused with 422 Invalid and nothing is stored.

use serde_json::Value;

use crate::sim::kube::resources::ResourceDef;
use crate::sim::kube::status::KStatus;

const RBAC: &str = "rbac.authorization.k8s.io";

fn is_binding(def: &ResourceDef) -> bool {
    def.group == RBAC && matches!(def.plural.as_str(), "rolebindings" | "clusterrolebindings")
}

fn unsupported(field: &str, got: &Value, supported: &[&str]) -> String {
    let got = got.as_str().unwrap_or("");
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    format!(
        "{field}: Unsupported value: {got:?}: supported values: {}",
        list.join(", ")
    )
}

/// The problems of a binding's `roleRef` and `subjects`, as kube words them.
fn problems(def: &ResourceDef, obj: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let role_ref = &obj["roleRef"];
    if role_ref["apiGroup"] != RBAC {
        out.push(unsupported(
            "roleRef.apiGroup",
            &role_ref["apiGroup"],
            &[RBAC],
        ));
    }
    let kinds: &[&str] = if def.plural == "rolebindings" {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.iter().any(|k| role_ref["kind"] == *k) {
        out.push(unsupported("roleRef.kind", &role_ref["kind"], kinds));
    }
    if role_ref["name"].as_str().is_none_or(str::is_empty) {
        out.push("roleRef.name: Required value".to_owned());
    }
    let subjects = obj["subjects"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for (i, s) in subjects.iter().enumerate() {
        let at = format!("subjects[{i}]");
        if s["name"].as_str().is_none_or(str::is_empty) {
            out.push(format!("{at}.name: Required value"));
        }
        let group = s["apiGroup"].as_str().unwrap_or("");
        match s["kind"].as_str() {
            Some("User" | "Group") if group != RBAC => {
                out.push(unsupported(
                    &format!("{at}.apiGroup"),
                    &s["apiGroup"],
                    &[RBAC],
                ));
            }
            Some("ServiceAccount") if !group.is_empty() => {
                out.push(unsupported(
                    &format!("{at}.apiGroup"),
                    &s["apiGroup"],
                    &[""],
                ));
            }
            Some("ServiceAccount")
                if def.plural == "clusterrolebindings"
                    && s["namespace"].as_str().is_none_or(str::is_empty) =>
            {
                out.push(format!("{at}.namespace: Required value"));
            }
            Some("User" | "Group" | "ServiceAccount") => {}
            _ => out.push(unsupported(
                &format!("{at}.kind"),
                &s["kind"],
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    out
}

/// Check a binding about to be stored (`existing`: the stored version it replaces).
pub fn check_binding(
    def: &ResourceDef,
    name: &str,
    obj: &Value,
    existing: Option<&Value>,
) -> Result<(), KStatus> {
    if !is_binding(def) {
        return Ok(());
    }
    let mut found = problems(def, obj);
    if let Some(old) = existing
        && old["roleRef"] != obj["roleRef"]
    {
        found.push(format!(
            "roleRef: Invalid value: {}: cannot change roleRef",
            obj["roleRef"]
        ));
    }
    match found.as_slice() {
        [] => Ok(()),
        [one] => Err(def.invalid(name, one.as_str())),
        many => Err(def.invalid(name, format!("[{}]", many.join(", ")))),
    }
}
