//! Authentication and RBAC authorization of the simulated API servers. A bearer token
//! `user:EMAIL` (optionally followed by `,group:NAME` for each group the user is in)
//! authenticates as the user `EMAIL`, in the groups named and `system:authenticated`;
//! any other credentials, or none, are the cluster's administrator, as before RBAC was
//! simulated. A user's request is authorised by [`rules`] over the stored Roles,
//! ClusterRoles and bindings plus the [`defaults`]; a denied request gets
//! kube-apiserver's 403 `Forbidden` Status. [`review`] answers
//! the self reviews (`kubectl auth can-i`, also `--list`); [`validation`] checks
//! bindings as kube-apiserver does before they are stored.
//!
//! Invariant: the administrator's requests never evaluate RBAC (no cost on that path); a
//! user's request is authorised before anything else reads or changes the cluster, with
//! the bindings as they are at that moment (a deleted binding grants nothing at once).

pub mod defaults;
pub mod proto;
pub mod review;
pub mod rules;
#[cfg(test)]
mod tests;
pub mod validation;

use axum::http::Method;
use serde_json::json;

use super::objects::ApiStore;
use super::request::{Req, Target};
use super::status::KStatus;

/// An authenticated user (not the administrator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub user: String,
    pub groups: Vec<String>,
}

/// Who sent a request, from its `Authorization` header: `Ok(None)` is the cluster's
/// administrator; `Err` a malformed `user:` token (401).
pub fn authenticate(header: Option<&str>) -> Result<Option<Caller>, KStatus> {
    let token = header
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim)
        .unwrap_or("");
    let Some(rest) = token.strip_prefix("user:") else {
        return Ok(None);
    };
    let mut parts = rest.split(',');
    let user = parts.next().unwrap_or("").trim();
    let mut groups = Vec::new();
    for p in parts {
        match p.trim().strip_prefix("group:") {
            Some(g) if !g.is_empty() => groups.push(g.to_owned()),
            _ => return Err(unauthorized()),
        }
    }
    if user.is_empty() {
        return Err(unauthorized());
    }
    groups.push(defaults::AUTHENTICATED.to_owned());
    Ok(Some(Caller {
        user: user.to_owned(),
        groups,
    }))
}

fn unauthorized() -> KStatus {
    KStatus::new(401, "Unauthorized", "Unauthorized")
}

/// What RBAC decides on (kube-apiserver's request attributes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs {
    pub verb: String,
    pub resource_request: bool,
    /// Non-resource requests: the URL path.
    pub path: String,
    pub group: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub namespace: String,
    pub name: String,
}

/// The attributes of a request for `target` (`path`: the URL path after the cluster).
pub fn attributes(target: &Target, path: &str, req: &Req) -> Attrs {
    let watch = super::watch::is_watch(req);
    let verb = |named: bool| -> &'static str {
        match (&req.method, named) {
            (&Method::POST, _) => "create",
            (&Method::GET | &Method::HEAD, _) if watch => "watch",
            (&Method::GET | &Method::HEAD, true) => "get",
            (&Method::GET | &Method::HEAD, false) => "list",
            (&Method::PUT, _) => "update",
            (&Method::PATCH, _) => "patch",
            (&Method::DELETE, true) => "delete",
            (&Method::DELETE, false) => "deletecollection",
            _ => "",
        }
    };
    match target {
        Target::Collection {
            group,
            plural,
            namespace,
            ..
        } => {
            let name = req
                .param("fieldSelector")
                .into_iter()
                .flat_map(|f| f.split(','))
                .find_map(|f| f.trim().strip_prefix("metadata.name="))
                .filter(|_| !matches!(req.method, Method::POST))
                .unwrap_or("");
            Attrs {
                verb: verb(false).to_owned(),
                resource_request: true,
                group: group.clone(),
                resource: plural.clone(),
                namespace: namespace.clone().unwrap_or_default(),
                name: name.to_owned(),
                ..Attrs::default()
            }
        }
        Target::Object {
            group,
            plural,
            namespace,
            name,
            sub,
            ..
        } => {
            // kube-apiserver puts a Namespace's own requests in that namespace.
            let ns = match namespace {
                None if group.is_empty() && plural == "namespaces" => name.clone(),
                other => other.clone().unwrap_or_default(),
            };
            Attrs {
                verb: verb(true).to_owned(),
                resource_request: true,
                group: group.clone(),
                resource: plural.clone(),
                subresource: sub.clone(),
                namespace: ns,
                name: name.clone(),
                ..Attrs::default()
            }
        }
        _ => Attrs {
            verb: req.method.as_str().to_ascii_lowercase(),
            path: format!("/{}", path.trim_start_matches('/')),
            ..Attrs::default()
        },
    }
}

/// kube-apiserver's 403 for a denied request.
pub fn forbidden(caller: &Caller, a: &Attrs) -> KStatus {
    let user = &caller.user;
    if !a.resource_request {
        return KStatus::new(
            403,
            "Forbidden",
            format!(
                "forbidden: User {user:?} cannot {} path {:?}",
                a.verb, a.path
            ),
        );
    }
    let resource = match &a.subresource {
        Some(sub) => format!("{}/{sub}", a.resource),
        None => a.resource.clone(),
    };
    let scope = if a.namespace.is_empty() {
        "at the cluster scope".to_owned()
    } else {
        format!("in the namespace {:?}", a.namespace)
    };
    let why = format!(
        "User {user:?} cannot {} resource {resource:?} in API group {:?} {scope}",
        a.verb, a.group
    );
    let qualified = if a.group.is_empty() {
        a.resource.clone()
    } else {
        format!("{}.{}", a.resource, a.group)
    };
    let message = if a.name.is_empty() {
        format!("{qualified} is forbidden: {why}")
    } else {
        format!("{qualified} {:?} is forbidden: {why}", a.name)
    };
    let mut details = json!({"kind": a.resource});
    if !a.group.is_empty() {
        details["group"] = json!(a.group);
    }
    if !a.name.is_empty() {
        details["name"] = json!(a.name);
    }
    KStatus {
        details: Some(details),
        ..KStatus::new(403, "Forbidden", message)
    }
}

/// Authorise `caller`'s request: Ok, or the 403 to answer.
pub fn authorize(store: &ApiStore, caller: &Caller, a: &Attrs) -> Result<(), KStatus> {
    match rules::allowed_by(store, caller, a) {
        Some(_) => Ok(()),
        None => Err(forbidden(caller, a)),
    }
}
