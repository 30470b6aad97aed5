//! `SelfSubjectAccessReview` (`POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`):
//! may the caller do what the review's `spec` describes (`resourceAttributes` or
//! `nonResourceAttributes`; in JSON or, as kubectl sends it, protobuf)? Answered 201 with the review and its `status`, as
//! kube-apiserver does; `kubectl auth can-i` prints `yes` or `no` from it.
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
const PLURAL: &str = "selfsubjectaccessreviews";

/// Whether `target` is the review collection.
pub fn addresses(target: &Target) -> bool {
    matches!(target, Target::Collection { group, plural, namespace: None, .. }
        if group == GROUP && plural == PLURAL)
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

/// Answer a review by `caller` (`None`: the administrator).
pub fn self_subject(store: &ApiStore, caller: Option<&Caller>, req: &Req) -> Reply {
    let spec = if req.media == PROTOBUF {
        proto::review_spec(&req.body)
            .ok_or_else(|| "not a SelfSubjectAccessReview in protobuf".to_owned())
    } else {
        serde_json::from_slice::<Value>(&req.body)
            .map(|mut v| v["spec"].take())
            .map_err(|e| e.to_string())
    };
    let spec = match spec {
        Ok(spec) => spec,
        Err(e) => return KStatus::bad_request(format!("invalid review body: {e}")).into(),
    };
    let spec = &spec;
    let a = match attrs(spec) {
        Ok(a) => a,
        Err(s) => return s.into(),
    };
    let status = match caller {
        None => json!({"allowed": true}),
        Some(c) => match rules::allowed_by(store, c, &a) {
            Some(reason) => json!({"allowed": true, "reason": reason}),
            None => json!({"allowed": false}),
        },
    };
    Reply::Json(
        StatusCode::CREATED,
        json!({
            "kind": "SelfSubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": null},
            "spec": spec,
            "status": status,
        }),
    )
}
