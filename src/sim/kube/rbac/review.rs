//! The self reviews of `authorization.k8s.io/v1`, in JSON or (as kubectl sends them)
//! protobuf, answered 201 with the review and its `status` as kube-apiserver does:
//! `SelfSubjectAccessReview` (may the caller do what `spec.resourceAttributes` or
//! `spec.nonResourceAttributes` describe? `kubectl auth can-i` prints `yes` or `no`) and
//! `SelfSubjectRulesReview` (every rule the caller holds in `spec.namespace`; `kubectl
//! auth can-i --list`).
//!
//! Invariant: a review is decided by the same evaluation as a request ([`super::rules`]);
//! it is not stored, and the administrator is allowed everything.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{Attrs, Caller, proto, rules};
use crate::sim::kube::objects::ApiStore;
use crate::sim::kube::request::{Reply, Req, Target};
use crate::sim::kube::status::KStatus;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const GROUP: &str = "authorization.k8s.io";
const ACCESS: &str = "selfsubjectaccessreviews";
const RULES: &str = "selfsubjectrulesreviews";

/// The answer to a POST of a self review; `None` when `target` is no review.
pub fn serve(
    store: &ApiStore,
    caller: Option<&Caller>,
    target: &Target,
    req: &Req,
) -> Option<Reply> {
    let Target::Collection {
        group,
        plural,
        namespace: None,
        ..
    } = target
    else {
        return None;
    };
    if group != GROUP {
        return None;
    }
    let (kind, spec) = match plural.as_str() {
        ACCESS => (
            "SelfSubjectAccessReview",
            proto::review_spec as fn(&[u8]) -> Option<Value>,
        ),
        RULES => (
            "SelfSubjectRulesReview",
            proto::rules_review_spec as fn(&[u8]) -> Option<Value>,
        ),
        _ => return None,
    };
    let spec = if req.media == PROTOBUF {
        spec(&req.body).ok_or_else(|| format!("not a {kind} in protobuf"))
    } else {
        serde_json::from_slice::<Value>(&req.body)
            .map(|mut v| v["spec"].take())
            .map_err(|e| e.to_string())
    };
    let spec = match spec {
        Ok(spec) => spec,
        Err(e) => return Some(KStatus::bad_request(format!("invalid review body: {e}")).into()),
    };
    let status = match plural.as_str() {
        ACCESS => access(store, caller, &spec),
        _ => Ok(rules_status(store, caller, &spec)),
    };
    Some(match status {
        Ok(status) => Reply::Json(
            StatusCode::CREATED,
            json!({
                "kind": kind,
                "apiVersion": "authorization.k8s.io/v1",
                "metadata": {"creationTimestamp": null},
                "spec": spec,
                "status": status,
            }),
        ),
        Err(s) => s.into(),
    })
}

fn text(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or("").to_owned()
}

/// The attributes a review's `spec` asks about.
fn attrs(spec: &Value) -> Result<Attrs, KStatus> {
    let invalid = |m: &str| {
        KStatus::new(
            422,
            "Invalid",
            format!("SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: {m}"),
        )
    };
    match (
        spec.get("resourceAttributes"),
        spec.get("nonResourceAttributes"),
    ) {
        (Some(r), None) => {
            let sub = text(r, "subresource");
            Ok(Attrs {
                verb: text(r, "verb"),
                resource_request: true,
                group: text(r, "group"),
                resource: text(r, "resource"),
                subresource: (!sub.is_empty()).then_some(sub),
                namespace: text(r, "namespace"),
                name: text(r, "name"),
                ..Attrs::default()
            })
        }
        (None, Some(n)) => Ok(Attrs {
            verb: text(n, "verb"),
            path: text(n, "path"),
            ..Attrs::default()
        }),
        (Some(_), Some(_)) => Err(invalid(
            "spec.nonResourceAttributes: Invalid value: \"\": cannot be specified in combination with resourceAttributes",
        )),
        (None, None) => Err(invalid(
            "spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
    }
}

/// The status of an access review by `caller` (`None`: the administrator).
fn access(store: &ApiStore, caller: Option<&Caller>, spec: &Value) -> Result<Value, KStatus> {
    let a = attrs(spec)?;
    Ok(match caller {
        None => json!({"allowed": true}),
        Some(c) => match rules::allowed_by(store, c, &a) {
            Some(reason) => json!({"allowed": true, "reason": reason}),
            None => json!({"allowed": false}),
        },
    })
}

/// The status of a rules review: the caller's rules split as kube lists them.
fn rules_status(store: &ApiStore, caller: Option<&Caller>, spec: &Value) -> Value {
    let all = match caller {
        None => vec![
            json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
            json!({"verbs": ["*"], "nonResourceURLs": ["*"]}),
        ],
        Some(c) => rules::rules_of(store, c, spec["namespace"].as_str().unwrap_or("")),
    };
    let (non_resource, resource): (Vec<Value>, Vec<Value>) = all
        .into_iter()
        .partition(|r| r.get("nonResourceURLs").is_some());
    json!({"resourceRules": resource, "nonResourceRules": non_resource, "incomplete": false})
}
