//! A request to a simulated API server as its handlers see it: what the path names
//! ([`Target`], parsed from the path after `/kube/{key}/`), the method, query, media
//! types and body ([`Req`]), the served resource it addresses ([`resolve`]), and what a
//! handler sends back ([`Reply`]).
//!
//! Invariant: a path names a resource only through the served list (`resources::all`),
//! and only in the scope the resource has (a namespaced collection may also be listed
//! across namespaces); a [`Reply::Object`] is read from the store after reconcile.

use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use serde_json::Value;

use super::objects::ObjKey;
use super::resources::{self, ResourceDef};
use super::status::KStatus;

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Version,
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3` (None) or `/openapi/v3/{gv path}`.
    OpenApiV3(Option<String>),
    CoreVersions,
    Groups,
    Group(String),
    Resources {
        group: String,
        version: String,
    },
    Collection {
        group: String,
        version: String,
        plural: String,
        namespace: Option<String>,
    },
    Object {
        group: String,
        version: String,
        plural: String,
        namespace: Option<String>,
        name: String,
        sub: Option<String>,
    },
}

fn resource_path(group: &str, version: &str, rest: &[&str]) -> Option<Target> {
    let s = |x: &str| x.to_owned();
    let coll = |plural: &str, ns: Option<&str>| Target::Collection {
        group: s(group),
        version: s(version),
        plural: s(plural),
        namespace: ns.map(s),
    };
    let obj = |plural: &str, ns: Option<&str>, name: &str, sub: Option<&str>| Target::Object {
        group: s(group),
        version: s(version),
        plural: s(plural),
        namespace: ns.map(s),
        name: s(name),
        sub: sub.map(s),
    };
    Some(match rest {
        ["namespaces", ns, plural] if !matches!(*plural, "status" | "finalize") => {
            coll(plural, Some(ns))
        }
        ["namespaces", ns, plural, name] => obj(plural, Some(ns), name, None),
        ["namespaces", ns, plural, name, sub] => obj(plural, Some(ns), name, Some(sub)),
        [plural] => coll(plural, None),
        [plural, name] => obj(plural, None, name, None),
        [plural, name, sub] => obj(plural, None, name, Some(sub)),
        _ => return None,
    })
}

/// Parse the path after `/kube/{key}/`.
pub fn parse(rest: &str) -> Option<Target> {
    let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["version"] => Some(Target::Version),
        ["openapi", "v2"] => Some(Target::OpenApiV2),
        ["openapi", "v3"] => Some(Target::OpenApiV3(None)),
        ["openapi", "v3", gv @ ..] => Some(Target::OpenApiV3(Some(gv.join("/")))),
        ["api"] => Some(Target::CoreVersions),
        ["api", v] => Some(Target::Resources {
            group: String::new(),
            version: (*v).to_owned(),
        }),
        ["api", v, rest @ ..] => resource_path("", v, rest),
        ["apis"] => Some(Target::Groups),
        ["apis", g] => Some(Target::Group((*g).to_owned())),
        ["apis", g, v] => Some(Target::Resources {
            group: (*g).to_owned(),
            version: (*v).to_owned(),
        }),
        ["apis", g, v, rest @ ..] => resource_path(g, v, rest),
        _ => None,
    }
}

/// A parsed request.
pub struct Req {
    pub method: Method,
    pub query: Vec<(String, String)>,
    pub accept: String,
    pub media: String,
    pub body: Bytes,
}

impl Req {
    pub fn param(&self, k: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(q, _)| q == k)
            .map(|(_, v)| v.as_str())
    }
}

/// What to send back; objects are read after reconcile.
pub enum Reply {
    Json(StatusCode, Value),
    Aggregated(Value),
    Object(StatusCode, ObjKey, String),
    Error(KStatus),
}

impl From<KStatus> for Reply {
    fn from(s: KStatus) -> Self {
        Reply::Error(s)
    }
}

/// The served resource, if the path's scope fits it (a namespaced collection may be
/// listed across namespaces).
pub fn resolve(
    defs: &[ResourceDef],
    group: &str,
    version: &str,
    plural: &str,
    namespace: Option<&str>,
    collection: bool,
) -> Option<ResourceDef> {
    let def = resources::find(defs, group, version, plural)?;
    match (def.namespaced, namespace) {
        (true, Some(_)) | (false, None) => Some(def),
        (true, None) if collection => Some(def),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(parse("version"), Some(Target::Version));
        assert_eq!(
            parse("api/v1/namespaces/foo"),
            Some(Target::Object {
                group: String::new(),
                version: "v1".into(),
                plural: "namespaces".into(),
                namespace: None,
                name: "foo".into(),
                sub: None,
            })
        );
        assert!(matches!(
            parse("api/v1/namespaces/foo/pods"),
            Some(Target::Collection { namespace: Some(ns), .. }) if ns == "foo"
        ));
        assert!(matches!(
            parse("api/v1/namespaces/foo/status"),
            Some(Target::Object { sub: Some(s), .. }) if s == "status"
        ));
        assert!(matches!(
            parse("apis/apps/v1/namespaces/x/deployments/d"),
            Some(Target::Object { group, name, .. }) if group == "apps" && name == "d"
        ));
        assert_eq!(parse("nope"), None);
    }
}
