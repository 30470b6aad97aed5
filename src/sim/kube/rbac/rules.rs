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

/// A ClusterRole's rules: its own and those of the roles it aggregates.
fn cluster_role_rules<'a>(
    store: &'a ApiStore,
    role: &'a Value,
    depth: u8,
    out: &mut Vec<&'a Value>,
) {
    out.extend(strs_rules(role));
    let Some(selectors) = role["aggregationRule"]["clusterRoleSelectors"].as_array() else {
        return;
    };
    if depth >= MAX_AGGREGATION_DEPTH {
        return;
    }
    let name = &role["metadata"]["name"];
    for r in all_cluster_roles(store)
        .filter(|r| &r["metadata"]["name"] != name)
        .filter(|r| {
            selectors
                .iter()
                .any(|s| selects(s, &r["metadata"]["labels"]))
        })
    {
        cluster_role_rules(store, r, depth + 1, out);
    }
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

/// The rules of the role a binding (in namespace `ns`, "" for a ClusterRoleBinding)
/// refers to; none when the role does not exist.
fn binding_rules<'a>(store: &'a ApiStore, binding: &Value, ns: &str) -> Vec<&'a Value> {
    let role_ref = &binding["roleRef"];
    let name = role_ref["name"].as_str().unwrap_or("");
    let mut out = Vec::new();
    match role_ref["kind"].as_str() {
        Some("ClusterRole") => {
            if let Some(r) = object(store, "clusterroles", "", name) {
                cluster_role_rules(store, r, 0, &mut out);
            }
        }
        Some("Role") if !ns.is_empty() => {
            out.extend(
                object(store, "roles", ns, name)
                    .into_iter()
                    .flat_map(strs_rules),
            );
        }
        _ => {}
    }
    out
}

/// The bindings naming the caller that count in namespace `ns` (the ClusterRoleBindings,
/// then the RoleBindings of `ns`), each with its namespace ("" for cluster bindings).
fn caller_bindings<'a>(
    store: &'a ApiStore,
    caller: &'a Caller,
    ns: &'a str,
) -> impl Iterator<Item = (&'a Value, &'a str)> {
    let stored = store
        .list(RBAC, "clusterrolebindings", None)
        .map(|(_, b)| b);
    let defaults = defaults::cluster_role_bindings().iter().filter(move |d| {
        let name = d["metadata"]["name"].as_str().unwrap_or("");
        store
            .get(&ObjKey::new(RBAC, "clusterrolebindings", "", name))
            .is_none()
    });
    let cluster = stored.chain(defaults).map(|b| (b, ""));
    let local = (!ns.is_empty())
        .then(|| store.list(RBAC, "rolebindings", Some(ns)))
        .into_iter()
        .flatten()
        .map(move |(_, b)| (b, ns));
    cluster
        .chain(local)
        .filter(|(b, bns)| binds(b, bns, caller))
}

/// Why the request is allowed (kube-apiserver's RBAC reason), or `None`: denied.
pub fn allowed_by(store: &ApiStore, caller: &Caller, a: &Attrs) -> Option<String> {
    let (b, ns) = caller_bindings(store, caller, &a.namespace).find(|(b, ns)| {
        binding_rules(store, b, ns)
            .iter()
            .any(|r| rule_allows(r, a))
    })?;
    let kind = b["kind"].as_str().unwrap_or("ClusterRoleBinding");
    let name = b["metadata"]["name"].as_str().unwrap_or("");
    let role_kind = b["roleRef"]["kind"].as_str().unwrap_or("");
    let role = b["roleRef"]["name"].as_str().unwrap_or("");
    let at = if ns.is_empty() {
        format!("{kind} {name:?}")
    } else {
        format!("{kind} \"{name}/{ns}\"")
    };
    Some(format!(
        "RBAC: allowed by {at} of {role_kind} {role:?} to User {:?}",
        caller.user
    ))
}

/// Every rule the caller holds in namespace `ns` (cluster-wide ones included), as
/// `SelfSubjectRulesReview` lists them.
pub fn rules_of(store: &ApiStore, caller: &Caller, ns: &str) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for (b, bns) in caller_bindings(store, caller, ns) {
        for r in binding_rules(store, b, bns) {
            if !out.contains(r) {
                out.push(r.clone());
            }
        }
    }
    out
}
