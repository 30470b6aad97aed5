//! RBAC evaluation as kube-apiserver's RBAC authorizer does it: the ClusterRoleBindings,
//! then (for a namespaced request) the RoleBindings of the request's namespace, whose
//! subjects name the caller (a `User` by name, a `Group` the caller is in, a
//! `ServiceAccount` by its `system:serviceaccount:{ns}:{name}` user); the role a binding
//! refers to (a Role of the binding's namespace, or a ClusterRole, aggregated from the
//! ClusterRoles its `aggregationRule` selects) allows the request when one of its rules
//! matches verb, API group, resource (`resource/subresource`, `*`, `*/subresource`),
//! resource name, or non-resource URL (exact, or a prefix ending in `*`).
//!
//! Invariant: only allows are computed (RBAC has no deny); a binding to a role that does
//! not exist grants nothing; the defaults ([`super::defaults`]) count as stored objects
//! unless a stored object of the same name replaces them.

use serde_json::Value;

use super::defaults;
use super::{Attrs, Caller};
use crate::sim::kube::objects::{ApiStore, ObjKey};

const RBAC: &str = "rbac.authorization.k8s.io";
/// How deep aggregated ClusterRoles are followed (admin <- edit <- view <- ...).
const MAX_AGGREGATION_DEPTH: u8 = 4;

fn strs(v: &Value) -> impl Iterator<Item = &str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str)
}

fn has(list: &Value, want: &str) -> bool {
    strs(list).any(|s| s == "*" || s == want)
}

/// Whether one PolicyRule allows the request.
fn rule_allows(rule: &Value, a: &Attrs) -> bool {
    if !has(&rule["verbs"], &a.verb) {
        return false;
    }
    if !a.resource_request {
        return strs(&rule["nonResourceURLs"]).any(|u| {
            u == a.path
                || u.strip_suffix('*')
                    .is_some_and(|pre| a.path.starts_with(pre))
        });
    }
    if !has(&rule["apiGroups"], &a.group) {
        return false;
    }
    let combined = match &a.subresource {
        Some(sub) => format!("{}/{sub}", a.resource),
        None => a.resource.clone(),
    };
    let resource_ok = strs(&rule["resources"]).any(|r| {
        r == "*"
            || r == combined
            || a.subresource
                .as_deref()
                .is_some_and(|sub| r.strip_prefix("*/") == Some(sub))
    });
    let names: Vec<&str> = strs(&rule["resourceNames"]).collect();
    resource_ok && (names.is_empty() || names.contains(&a.name.as_str()))
}

/// The stored object `name` of an RBAC kind, else the default of that name.
fn object<'a>(store: &'a ApiStore, plural: &str, ns: &str, name: &str) -> Option<&'a Value> {
    store
        .get(&ObjKey::new(RBAC, plural, ns, name))
        .or_else(|| match plural {
            "clusterroles" => defaults::cluster_roles()
                .iter()
                .find(|r| r["metadata"]["name"] == name),
            _ => None,
        })
}

/// Every ClusterRole: the stored ones, then the defaults not replaced by one.
fn all_cluster_roles(store: &ApiStore) -> impl Iterator<Item = &Value> {
    let stored = store.list(RBAC, "clusterroles", None).map(|(_, v)| v);
    let defaults = defaults::cluster_roles().iter().filter(move |d| {
        let name = d["metadata"]["name"].as_str().unwrap_or("");
        store
            .get(&ObjKey::new(RBAC, "clusterroles", "", name))
            .is_none()
    });
    stored.chain(defaults)
}

/// Whether `labels` carry every pair of a selector's `matchLabels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    selector["matchLabels"]
        .as_object()
        .is_some_and(|want| want.iter().all(|(k, v)| &labels[k] == v))
}

/// Whether a ClusterRole (its own rules, and those of the roles it aggregates) allows.
fn cluster_role_allows(store: &ApiStore, role: &Value, a: &Attrs, depth: u8) -> bool {
    if strs_rules(role).any(|r| rule_allows(r, a)) {
        return true;
    }
    let Some(selectors) = role["aggregationRule"]["clusterRoleSelectors"].as_array() else {
        return false;
    };
    if depth >= MAX_AGGREGATION_DEPTH {
        return false;
    }
    let name = &role["metadata"]["name"];
    all_cluster_roles(store)
        .filter(|r| &r["metadata"]["name"] != name)
        .filter(|r| {
            selectors
                .iter()
                .any(|s| selects(s, &r["metadata"]["labels"]))
        })
        .any(|r| cluster_role_allows(store, r, a, depth + 1))
}

fn strs_rules(role: &Value) -> impl Iterator<Item = &Value> {
    role["rules"].as_array().into_iter().flatten()
}

/// Whether a binding (in namespace `ns`, "" for a ClusterRoleBinding) names the caller.
fn binds(binding: &Value, ns: &str, caller: &Caller) -> bool {
    binding["subjects"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|s| {
            let name = s["name"].as_str().unwrap_or("");
            match s["kind"].as_str() {
                Some("User") => name == caller.user,
                Some("Group") => caller.groups.iter().any(|g| g == name),
                Some("ServiceAccount") => {
                    let sa_ns = s["namespace"]
                        .as_str()
                        .filter(|n| !n.is_empty())
                        .unwrap_or(ns);
                    caller.user == format!("system:serviceaccount:{sa_ns}:{name}")
                }
                _ => false,
            }
        })
}

/// Whether the role a binding refers to allows the request.
fn role_allows(store: &ApiStore, binding: &Value, ns: &str, a: &Attrs) -> bool {
    let role_ref = &binding["roleRef"];
    let name = role_ref["name"].as_str().unwrap_or("");
    match role_ref["kind"].as_str() {
        Some("ClusterRole") => object(store, "clusterroles", "", name)
            .is_some_and(|r| cluster_role_allows(store, r, a, 0)),
        Some("Role") if !ns.is_empty() => object(store, "roles", ns, name)
            .is_some_and(|r| strs_rules(r).any(|rule| rule_allows(rule, a))),
        _ => false,
    }
}

/// Why the request is allowed (kube-apiserver's RBAC reason), or `None`: denied.
pub fn allowed_by(store: &ApiStore, caller: &Caller, a: &Attrs) -> Option<String> {
    let describe = |binding: &Value, ns: &str| {
        let kind = binding["kind"].as_str().unwrap_or("ClusterRoleBinding");
        let name = binding["metadata"]["name"].as_str().unwrap_or("");
        let role_kind = binding["roleRef"]["kind"].as_str().unwrap_or("");
        let role = binding["roleRef"]["name"].as_str().unwrap_or("");
        let at = if ns.is_empty() {
            format!("{kind} {name:?}")
        } else {
            format!("{kind} \"{name}/{ns}\"")
        };
        format!(
            "RBAC: allowed by {at} of {role_kind} {role:?} to User {:?}",
            caller.user
        )
    };
    let stored = store
        .list(RBAC, "clusterrolebindings", None)
        .map(|(_, b)| b);
    let defaults = defaults::cluster_role_bindings().iter().filter(|d| {
        let name = d["metadata"]["name"].as_str().unwrap_or("");
        store
            .get(&ObjKey::new(RBAC, "clusterrolebindings", "", name))
            .is_none()
    });
    if let Some(b) = stored
        .chain(defaults)
        .find(|b| binds(b, "", caller) && role_allows(store, b, "", a))
    {
        return Some(describe(b, ""));
    }
    if a.namespace.is_empty() {
        return None;
    }
    let ns = a.namespace.as_str();
    store
        .list(RBAC, "rolebindings", Some(ns))
        .map(|(_, b)| b)
        .find(|b| binds(b, ns, caller) && role_allows(store, b, ns, a))
        .map(|b| describe(b, ns))
}
