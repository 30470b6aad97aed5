//! Quantities on the way in, as the API server decodes and validates them: every
//! quantity an object of a known kind holds (container requests and limits in pods and
//! in the pod templates of workloads, pod overhead, node capacity and allocatable,
//! ResourceQuota, LimitRange, claims) is rewritten to its canonical string, so a YAML
//! `nvidia.com/gpu: 1` (a JSON number) is stored as `"1"` and `"1000m"` as `"1"`.
//!
//! Invariant: after [`normalise`] succeeds, every quantity at those places is a
//! canonical string that [`quantity::milli`] parses; a value that is no quantity is
//! refused as the server refuses it (400 when it cannot be decoded, 422 when it breaks
//! a validation rule: negative, fractional extended resource, extended request without
//! an equal limit), and nothing else in the object changes.

use serde_json::Value;

use super::resources::ResourceDef;
use super::status::KStatus;
use crate::cloud::kube::quantity;

/// The regular expression the API server names when a quantity cannot be decoded.
const QUANTITY_RE: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

/// Where the pod specs of an object of `kind` are, as paths of keys (`*`: every array item).
fn pod_spec_paths(kind: &str) -> &'static [&'static [&'static str]] {
    match kind {
        "Pod" => &[&["spec"]],
        "PodTemplate" => &[&["template", "spec"]],
        "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "ReplicaSet"
        | "Job"
        | "ReplicationController" => &[&["spec", "template", "spec"]],
        "CronJob" => &[&["spec", "jobTemplate", "spec", "template", "spec"]],
        "JobSet" => &[&[
            "spec",
            "replicatedJobs",
            "*",
            "template",
            "spec",
            "template",
            "spec",
        ]],
        "LeaderWorkerSet" => &[
            &["spec", "leaderWorkerTemplate", "leaderTemplate", "spec"],
            &["spec", "leaderWorkerTemplate", "workerTemplate", "spec"],
        ],
        _ => &[],
    }
}

/// Other quantity maps of `kind` (each path ends at a map of name -> quantity).
fn quantity_map_paths(kind: &str) -> &'static [&'static [&'static str]] {
    match kind {
        "Node" => &[&["status", "capacity"], &["status", "allocatable"]],
        "ResourceQuota" => &[&["spec", "hard"], &["status", "hard"], &["status", "used"]],
        "LimitRange" => &[
            &["spec", "limits", "*", "max"],
            &["spec", "limits", "*", "min"],
            &["spec", "limits", "*", "default"],
            &["spec", "limits", "*", "defaultRequest"],
            &["spec", "limits", "*", "maxLimitRequestRatio"],
        ],
        "PersistentVolumeClaim" => &[
            &["spec", "resources", "requests"],
            &["spec", "resources", "limits"],
        ],
        "PersistentVolume" => &[&["spec", "capacity"]],
        "StatefulSet" => &[
            &[
                "spec",
                "volumeClaimTemplates",
                "*",
                "spec",
                "resources",
                "requests",
            ],
            &[
                "spec",
                "volumeClaimTemplates",
                "*",
                "spec",
                "resources",
                "limits",
            ],
        ],
        _ => &[],
    }
}

/// Every value at `path` under `v`, with its field path (`spec.containers[0]`).
fn at_path<'a>(
    v: &'a mut Value,
    path: &[&str],
    prefix: String,
    out: &mut Vec<(String, &'a mut Value)>,
) {
    let Some((first, rest)) = path.split_first() else {
        out.push((prefix, v));
        return;
    };
    let join = |p: &str, k: &str| {
        if p.is_empty() {
            k.to_owned()
        } else {
            format!("{p}.{k}")
        }
    };
    if *first == "*" {
        if let Some(items) = v.as_array_mut() {
            for (i, item) in items.iter_mut().enumerate() {
                at_path(item, rest, format!("{prefix}[{i}]"), out);
            }
        }
    } else if let Some(child) = v.get_mut(*first) {
        at_path(child, rest, join(&prefix, first), out);
    }
}

/// A refusal of the object, as the API server words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuantityError {
    /// The body cannot be decoded (400 BadRequest).
    Decode(String),
    /// A field breaks a validation rule (422 Invalid): `field: message`.
    Invalid(String),
}

impl QuantityError {
    pub fn status(self, def: &ResourceDef, name: &str) -> KStatus {
        match self {
            QuantityError::Decode(m) => KStatus::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: {m}",
                def.kind, def.version, def.kind
            )),
            QuantityError::Invalid(m) => def.invalid(name, m),
        }
    }
}

/// Rewrite one map of quantities in place.
fn canonical_map(map: &mut Value) -> Result<(), QuantityError> {
    let Some(m) = map.as_object_mut() else {
        return Ok(());
    };
    for v in m.values_mut() {
        match quantity::canonical_json(v) {
            Some(c) => *v = Value::String(c),
            None => {
                return Err(QuantityError::Decode(format!(
                    "quantities must match the regular expression '{QUANTITY_RE}'"
                )));
            }
        }
    }
    Ok(())
}

/// An extended resource (`nvidia.com/gpu`): not overcommittable, whole numbers only.
pub fn is_extended(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/")
}

/// The API server's checks of one container's (canonical) resources.
fn validate_resources(res: &Value, path: &str) -> Result<(), QuantityError> {
    let map = |k: &str| res[k].as_object().cloned().unwrap_or_default();
    let (requests, limits) = (map("requests"), map("limits"));
    let bad = |m: String| Err(QuantityError::Invalid(m));
    for (kind, m) in [("requests", &requests), ("limits", &limits)] {
        for (name, v) in m {
            let q = v.as_str().unwrap_or("");
            let milli = quantity::milli(q).unwrap_or(0);
            let field = format!("{path}.resources.{kind}[{name}]");
            if milli < 0 {
                return bad(format!(
                    "{field}: Invalid value: \"{q}\": must be greater than or equal to 0"
                ));
            }
            if is_extended(name) && milli % 1000 != 0 {
                return bad(format!(
                    "{field}: Invalid value: \"{q}\": must be an integer"
                ));
            }
        }
    }
    for (name, v) in &requests {
        let q = v.as_str().unwrap_or("");
        let field = format!("{path}.resources.requests");
        match limits.get(name).and_then(Value::as_str) {
            Some(l) if is_extended(name) && quantity::milli(l) != quantity::milli(q) => {
                return bad(format!(
                    "{field}: Invalid value: \"{q}\": must be equal to {name} limit of {l}"
                ));
            }
            Some(l) if quantity::milli(q) > quantity::milli(l) => {
                return bad(format!(
                    "{field}: Invalid value: \"{q}\": must be less than or equal to {name} limit of {l}"
                ));
            }
            None if is_extended(name) => {
                return bad(format!(
                    "{path}.resources.limits: Required value: Limit must be set for non overcommitable resources"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Canonicalise and check the containers and overhead of one pod spec.
fn pod_spec(spec: &mut Value, path: &str) -> Result<(), QuantityError> {
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        let Some(items) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for (i, c) in items.iter_mut().enumerate() {
            let Some(res) = c.get_mut("resources") else {
                continue;
            };
            for k in ["requests", "limits"] {
                if let Some(m) = res.get_mut(k) {
                    canonical_map(m)?;
                }
            }
            validate_resources(res, &format!("{path}.{list}[{i}]"))?;
        }
    }
    if let Some(m) = spec.get_mut("overhead") {
        canonical_map(m)?;
    }
    if let Some(res) = spec.get_mut("resources") {
        for k in ["requests", "limits"] {
            if let Some(m) = res.get_mut(k) {
                canonical_map(m)?;
            }
        }
    }
    Ok(())
}

/// Normalise every quantity of an incoming object of `kind` (see the module doc).
pub fn normalise(kind: &str, obj: &mut Value) -> Result<(), QuantityError> {
    each_pod_spec(kind, obj, pod_spec)?;
    for path in quantity_map_paths(kind) {
        let mut maps = Vec::new();
        at_path(obj, path, String::new(), &mut maps);
        for (_, m) in maps {
            canonical_map(m)?;
        }
    }
    Ok(())
}

/// Run `f` on every pod spec of an object of `kind` (with its field path), in order.
pub fn each_pod_spec<E>(
    kind: &str,
    obj: &mut Value,
    mut f: impl FnMut(&mut Value, &str) -> Result<(), E>,
) -> Result<(), E> {
    for path in pod_spec_paths(kind) {
        let mut specs = Vec::new();
        at_path(obj, path, String::new(), &mut specs);
        for (p, spec) in specs {
            f(spec, &p)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_and_forms_become_canonical_strings() {
        let mut d = json!({"spec": {"template": {"spec": {
            "initContainers": [{"resources": {"requests": {"cpu": "1000m"}}}],
            "containers": [{"resources": {
                "requests": {"cpu": 0.5, "memory": "2048Mi"},
                "limits": {"nvidia.com/gpu": 1, "memory": "2Gi"}}}]}}}});
        normalise("Deployment", &mut d).unwrap();
        let spec = &d["spec"]["template"]["spec"];
        assert_eq!(
            spec["initContainers"][0]["resources"]["requests"]["cpu"],
            "1"
        );
        let r = &spec["containers"][0]["resources"];
        assert_eq!(r["requests"], json!({"cpu": "500m", "memory": "2Gi"}));
        assert_eq!(r["limits"]["nvidia.com/gpu"], "1");

        let mut node = json!({"status": {"allocatable": {"pods": 110, "memory": "1024Ki"}}});
        normalise("Node", &mut node).unwrap();
        assert_eq!(
            node["status"]["allocatable"],
            json!({"pods": "110", "memory": "1Mi"})
        );

        let mut lws = json!({"spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {
            "containers": [{"resources": {"limits": {"google.com/tpu": 4}}}]}}}}});
        normalise("LeaderWorkerSet", &mut lws).unwrap();
        assert_eq!(
            lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["resources"]
                ["limits"]["google.com/tpu"],
            "4"
        );
        let mut seen = Vec::new();
        each_pod_spec("LeaderWorkerSet", &mut lws, |_, p| {
            seen.push(p.to_owned());
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(seen, ["spec.leaderWorkerTemplate.workerTemplate.spec"]);
        let mut cm = json!({"data": {"cpu": 1}});
        normalise("ConfigMap", &mut cm).unwrap();
        assert_eq!(cm["data"]["cpu"], 1, "other kinds are left alone");
    }

    #[test]
    fn refusals_match_the_api_server() {
        let pod = |res: Value| json!({"spec": {"containers": [{"resources": res}]}});
        let err = |res: Value| normalise("Pod", &mut pod(res)).unwrap_err();
        assert!(
            matches!(err(json!({"requests": {"cpu": "abc"}})), QuantityError::Decode(m) if m.contains("regular expression"))
        );
        assert_eq!(
            err(json!({"requests": {"cpu": "-1"}})),
            QuantityError::Invalid("spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0".into())
        );
        assert_eq!(
            err(json!({"limits": {"nvidia.com/gpu": "500m"}})),
            QuantityError::Invalid("spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: \"500m\": must be an integer".into())
        );
        assert_eq!(
            err(json!({"requests": {"nvidia.com/gpu": 1}})),
            QuantityError::Invalid("spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources".into())
        );
        assert!(
            matches!(err(json!({"requests": {"nvidia.com/gpu": 2}, "limits": {"nvidia.com/gpu": 1}})), QuantityError::Invalid(m) if m.contains("must be equal to nvidia.com/gpu limit of 1"))
        );
        assert!(
            matches!(err(json!({"requests": {"cpu": "2"}, "limits": {"cpu": 1}})), QuantityError::Invalid(m) if m.contains("must be less than or equal to cpu limit of 1"))
        );
        normalise(
            "Pod",
            &mut pod(json!({"requests": {"cpu": "250m"}, "limits": {"cpu": "1"}})),
        )
        .unwrap();
    }
}
