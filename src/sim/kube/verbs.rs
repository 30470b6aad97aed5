//! The verbs on objects: list (label and field selectors, no watch), get, create (POST,
//! with `generateName`), server-side apply and merge patches (PATCH), update (PUT) and
//! delete (cascading for namespaces and CRDs), with the API server's validation.
//!
//! Invariant: nothing is stored unless it passed validation (apiVersion and kind match
//! the path, name and namespace agree with the URL, the namespace exists, CRDs are
//! well-formed), and every successful write marks the cluster for reconciliation.

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use super::admission;
use super::cluster::{ClusterKube, initial_status, namespaced_keys};
use super::http::{Reply, Req};
use super::objects::{KStatus, ObjKey, Outcome, Write, write_existing};
use super::openapi;
use super::quantities;
use super::resources::{CRD_GROUP, CRD_PLURAL, ResourceDef, crd_defs};
use super::table;

fn key(def: &ResourceDef, ns: Option<&str>, name: &str) -> ObjKey {
    ObjKey::new(&def.group, &def.plural, ns.unwrap_or(""), name)
}

fn object(code: StatusCode, def: &ResourceDef, k: ObjKey) -> Reply {
    Reply::Object(code, k, def.api_version())
}

/// A request body: JSON, or YAML for apply patches.
fn parse_body(req: &Req) -> Result<Value, KStatus> {
    if req.body.is_empty() {
        return Err(KStatus::bad_request("the request body is empty"));
    }
    let v = match serde_json::from_slice::<Value>(&req.body) {
        Ok(v) => v,
        Err(json_err) if req.media.contains("yaml") => {
            let text = std::str::from_utf8(&req.body)
                .map_err(|_| KStatus::bad_request("the body is not UTF-8"))?;
            serde_saphyr::from_str::<Value>(text).map_err(|e| {
                KStatus::bad_request(format!("error decoding YAML: {e} ({json_err})"))
            })?
        }
        Err(e) => return Err(KStatus::bad_request(format!("error decoding JSON: {e}"))),
    };
    if v.is_object() {
        Ok(v)
    } else {
        Err(KStatus::bad_request(
            "the body must be a JSON or YAML object",
        ))
    }
}

fn valid_name(def: &ResourceDef, name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 253
        || name.contains(['/', '%'])
        || name == "."
        || name == ".."
    {
        return Err(format!("metadata.name: Invalid value: {name:?}"));
    }
    if def.plural == "namespaces" {
        let label = name.len() <= 63
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !name.starts_with('-')
            && !name.ends_with('-');
        if !label {
            return Err(format!(
                "metadata.name: Invalid value: {name:?}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"
            ));
        }
    }
    Ok(())
}

fn validate_crd(def: &ResourceDef, name: &str, obj: &Value) -> Result<(), KStatus> {
    let spec = &obj["spec"];
    let (group, plural) = (
        spec["group"].as_str().unwrap_or(""),
        spec["names"]["plural"].as_str().unwrap_or(""),
    );
    let fail = |m: String| Err(KStatus::invalid(def, name, m));
    if group.is_empty()
        || plural.is_empty()
        || spec["names"]["kind"].as_str().unwrap_or("").is_empty()
    {
        return fail("spec.group, spec.names.plural and spec.names.kind are required".into());
    }
    if name != format!("{plural}.{group}") {
        return fail(format!(
            "metadata.name: Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"
        ));
    }
    if !matches!(spec["scope"].as_str(), Some("Namespaced" | "Cluster")) {
        return fail("spec.scope: Unsupported value: must be Namespaced or Cluster".into());
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    let storage = versions.iter().filter(|v| v["storage"] == true).count();
    if versions.is_empty() || storage != 1 {
        return fail(
            "spec.versions: Invalid value: must have exactly one version marked as storage version"
                .into(),
        );
    }
    if crd_defs(obj).is_empty() {
        return fail("spec.versions: no served version".into());
    }
    Ok(())
}

/// Check and normalise an incoming object; returns its name.
fn validate(
    c: &ClusterKube,
    def: &ResourceDef,
    ns: Option<&str>,
    url_name: Option<&str>,
    body: &mut Value,
    require_types: bool,
) -> Result<String, KStatus> {
    for (field, want) in [
        ("apiVersion", def.api_version()),
        ("kind", def.kind.clone()),
    ] {
        match body[field].as_str() {
            None if require_types => {
                return Err(KStatus::bad_request(format!("{field} must be set")));
            }
            None => body[field] = json!(want),
            Some(got) if got != want => {
                return Err(KStatus::bad_request(format!(
                    "the {field} in the data ({got}) does not match the expected {field} ({want})"
                )));
            }
            Some(_) => {}
        }
    }
    if !body["metadata"].is_object() {
        body["metadata"] = Value::Object(Map::new());
    }
    let meta = &mut body["metadata"];
    let name = match (meta["name"].as_str().map(str::to_owned), url_name) {
        (Some(b), Some(u)) if b != u => {
            return Err(KStatus::bad_request(format!(
                "the name of the object ({b}) does not match the name on the URL ({u})"
            )));
        }
        (Some(b), _) => b,
        (None, Some(u)) => u.to_owned(),
        (None, None) => match meta["generateName"].as_str() {
            Some(prefix) => {
                let suffix: String = uuid::Uuid::new_v4()
                    .simple()
                    .to_string()
                    .chars()
                    .take(5)
                    .collect();
                format!("{prefix}{suffix}")
            }
            None => {
                return Err(KStatus::invalid(
                    def,
                    "",
                    "metadata.name: Required value: name or generateName is required",
                ));
            }
        },
    };
    meta["name"] = json!(name);
    valid_name(def, &name).map_err(|m| KStatus::invalid(def, &name, m))?;
    if def.namespaced {
        let ns = ns.unwrap_or("default");
        if meta["namespace"].as_str().is_some_and(|b| b != ns) {
            return Err(KStatus::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        meta["namespace"] = json!(ns);
        if !c.has_namespace(ns) {
            return Err(KStatus::new(
                404,
                "NotFound",
                format!("namespaces \"{ns}\" not found"),
            ));
        }
    } else if let Some(m) = meta.as_object_mut() {
        m.remove("namespace");
    }
    if def.group == CRD_GROUP && def.plural == CRD_PLURAL {
        validate_crd(def, &name, body)?;
    }
    quantities::normalise(&def.kind, body).map_err(|e| e.status(def, &name))?;
    if def.group.is_empty()
        && def.plural == "pods"
        && let Some(spec) = body.get_mut("spec")
    {
        admission::admit_pod_spec(spec);
    }
    Ok(name)
}

/// The server's strict field validation (`fieldValidation=Strict`, what kubectl sends
/// by default): unknown fields of a modelled kind are refused with its message.
fn field_validation(
    def: &ResourceDef,
    req: &Req,
    body: &Value,
    apply: bool,
) -> Result<(), KStatus> {
    if req.param("fieldValidation") != Some("Strict") {
        return Ok(());
    }
    let unknown = openapi::unknown_fields(&def.kind, body);
    if unknown.is_empty() {
        return Ok(());
    }
    let (kind, version) = (&def.kind, &def.version);
    Err(KStatus::bad_request(if apply {
        let fields: Vec<String> = unknown
            .iter()
            .map(|f| format!(".{f}: field not declared in schema"))
            .collect();
        format!(
            "failed to create typed patch object ({}/{version}, Kind={kind}): {}",
            def.group,
            fields.join(", ")
        )
    } else {
        let fields: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field \"{f}\""))
            .collect();
        format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
            fields.join(", ")
        )
    }))
}

/// One requirement of a label selector (`k=v`, `k==v`, `k!=v`, `k`, `!k`,
/// `k in (a,b)`, `k notin (a,b)`).
fn requirement_matches(req: &str, labels: &Value) -> bool {
    let req = req.trim();
    let get = |k: &str| labels[k.trim()].as_str();
    let set = |rest: &str| -> Vec<String> {
        rest.trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .split(',')
            .map(|s| s.trim().to_owned())
            .collect()
    };
    if let Some((k, rest)) = req.split_once(" notin ") {
        return get(k).is_none_or(|v| !set(rest).iter().any(|s| s == v));
    }
    if let Some((k, rest)) = req.split_once(" in ") {
        return get(k).is_some_and(|v| set(rest).iter().any(|s| s == v));
    }
    if let Some((k, v)) = req.split_once("!=") {
        return get(k) != Some(v.trim());
    }
    if let Some((k, v)) = req.split_once("==").or_else(|| req.split_once('=')) {
        return get(k) == Some(v.trim());
    }
    match req.strip_prefix('!') {
        Some(k) => get(k).is_none(),
        None => req.is_empty() || get(req).is_some(),
    }
}

/// Split a selector on commas outside parentheses.
fn requirements(sel: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for ch in sel.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    out.push(cur);
    out
}

/// `metadata.name=x,spec.nodeName!=y`: a missing field reads as "".
fn field_matches(sel: &str, obj: &Value) -> bool {
    sel.split(',').filter(|r| !r.trim().is_empty()).all(|r| {
        let (path, want, negate) = match r.split_once("!=") {
            Some((p, v)) => (p, v, true),
            None => match r.split_once("==").or_else(|| r.split_once('=')) {
                Some((p, v)) => (p, v, false),
                None => return false,
            },
        };
        let mut cur = obj;
        for seg in path.trim().split('.') {
            cur = &cur[seg];
        }
        let got = match cur {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        (got == want.trim()) != negate
    })
}

/// Whether `o` matches a label selector and a field selector (both may be "").
pub fn selected(labels: &str, fields: &str, o: &Value) -> bool {
    requirements(labels)
        .iter()
        .all(|r| requirement_matches(r, &o["metadata"]["labels"]))
        && field_matches(fields, o)
}

/// The objects a list request selects, with their apiVersion.
pub fn list_items(c: &ClusterKube, def: &ResourceDef, ns: Option<&str>, req: &Req) -> Vec<Value> {
    let labels = req.param("labelSelector").unwrap_or("");
    let fields = req.param("fieldSelector").unwrap_or("");
    c.api
        .list(&def.group, &def.plural, ns)
        .map(|(_, o)| o)
        .filter(|o| selected(labels, fields, o))
        .map(|o| {
            let mut o = o.clone();
            o["apiVersion"] = json!(def.api_version());
            o
        })
        .collect()
}

pub fn list(c: &ClusterKube, def: &ResourceDef, ns: Option<&str>, req: &Req) -> Reply {
    let items = list_items(c, def, ns, req);
    let rv = c.api.resource_version.to_string();
    if table::wants_table(&req.accept) {
        return Reply::Json(StatusCode::OK, table::table(&c.api, def, &items, &rv, true));
    }
    Reply::Json(
        StatusCode::OK,
        json!({
            "kind": format!("{}List", def.kind),
            "apiVersion": def.api_version(),
            "metadata": {"resourceVersion": rv},
            "items": items,
        }),
    )
}

pub fn get(c: &ClusterKube, def: &ResourceDef, ns: Option<&str>, name: &str, req: &Req) -> Reply {
    let k = key(def, ns, name);
    let Some(obj) = c.api.get(&k) else {
        return KStatus::not_found(def, name).into();
    };
    if table::wants_table(&req.accept) {
        let rv = c.api.resource_version.to_string();
        return Reply::Json(
            StatusCode::OK,
            table::table(&c.api, def, &[obj.clone()], &rv, true),
        );
    }
    object(StatusCode::OK, def, k)
}

pub fn create(c: &mut ClusterKube, def: &ResourceDef, ns: Option<&str>, req: &Req) -> Reply {
    let result = (|| {
        let mut body = parse_body(req)?;
        field_validation(def, req, &body, false)?;
        let name = validate(c, def, ns, None, &mut body, false)?;
        let k = key(def, ns, &name);
        if c.api.get(&k).is_some() {
            return Err(KStatus::new(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", def.qualified()),
            ));
        }
        let manager = req.param("fieldManager").unwrap_or("kube-client");
        c.api.create(
            k.clone(),
            &body,
            manager,
            "Update",
            initial_status(&def.kind),
        );
        Ok(k)
    })();
    match result {
        Ok(k) => {
            c.mark_dirty();
            object(StatusCode::CREATED, def, k)
        }
        Err(e) => e.into(),
    }
}

pub fn patch(
    c: &mut ClusterKube,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
    req: &Req,
) -> Reply {
    let k = key(def, ns, name);
    let write = match req.media.as_str() {
        "application/apply-patch+yaml" => {
            let Some(manager) = req.param("fieldManager").filter(|m| !m.is_empty()) else {
                return KStatus::invalid(
                    def,
                    name,
                    "fieldManager: Required value: is required for apply patch",
                )
                .into();
            };
            Write::Apply {
                manager: manager.to_owned(),
                force: req.param("force") == Some("true"),
            }
        }
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => Write::Merge {
            manager: req
                .param("fieldManager")
                .unwrap_or("kube-client")
                .to_owned(),
        },
        other => {
            return KStatus::new(415, "UnsupportedMediaType", format!("the body of the request was in an unknown format ({other}) - accepted media types include: application/apply-patch+yaml, application/merge-patch+json, application/strategic-merge-patch+json")).into();
        }
    };
    let mut body = match parse_body(req) {
        Ok(b) => b,
        Err(e) => return e.into(),
    };
    let apply = matches!(write, Write::Apply { .. });
    if let Err(e) = field_validation(def, req, &body, apply) {
        return e.into();
    }
    let existing = c.api.get(&k).cloned();
    match (&write, existing) {
        (Write::Apply { manager, .. }, None) => {
            if let Err(e) = validate(c, def, ns, Some(name), &mut body, true) {
                return e.into();
            }
            c.api.create(
                k.clone(),
                &body,
                manager,
                "Apply",
                initial_status(&def.kind),
            );
            c.mark_dirty();
            object(StatusCode::CREATED, def, k)
        }
        (_, None) => KStatus::not_found(def, name).into(),
        (_, Some(existing)) => {
            if matches!(write, Write::Apply { .. })
                && let Err(e) = validate(c, def, ns, Some(name), &mut body, true)
            {
                return e.into();
            }
            store_write(c, def, k, &existing, &body, &write)
        }
    }
}

fn store_write(
    c: &mut ClusterKube,
    def: &ResourceDef,
    k: ObjKey,
    existing: &Value,
    body: &Value,
    write: &Write,
) -> Reply {
    match write_existing(existing, body, write) {
        Ok(Outcome::Unchanged) => object(StatusCode::OK, def, k),
        Ok(Outcome::Changed(obj)) => {
            c.api.put(k.clone(), obj);
            c.mark_dirty();
            object(StatusCode::OK, def, k)
        }
        Err(e) => e.into(),
    }
}

pub fn update(
    c: &mut ClusterKube,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
    req: &Req,
) -> Reply {
    let k = key(def, ns, name);
    let mut body = match parse_body(req) {
        Ok(b) => b,
        Err(e) => return e.into(),
    };
    let Some(existing) = c.api.get(&k).cloned() else {
        return KStatus::not_found(def, name).into();
    };
    if let Err(e) = field_validation(def, req, &body, false) {
        return e.into();
    }
    if let Err(e) = validate(c, def, ns, Some(name), &mut body, false) {
        return e.into();
    }
    if let Some(rv) = body["metadata"]["resourceVersion"].as_str()
        && Some(rv) != existing["metadata"]["resourceVersion"].as_str()
    {
        return KStatus::new(409, "Conflict", format!("Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again", def.qualified())).into();
    }
    let manager = req
        .param("fieldManager")
        .unwrap_or("kube-client")
        .to_owned();
    store_write(c, def, k, &existing, &body, &Write::Update { manager })
}

pub fn delete(c: &mut ClusterKube, def: &ResourceDef, ns: Option<&str>, name: &str) -> Reply {
    let k = key(def, ns, name);
    let Some(removed) = c.api.remove(&k) else {
        return KStatus::not_found(def, name).into();
    };
    if def.group.is_empty() && def.plural == "namespaces" {
        for k in namespaced_keys(&c.api, name) {
            c.api.remove(&k);
        }
    }
    if def.group == CRD_GROUP && def.plural == CRD_PLURAL {
        for d in crd_defs(&removed) {
            for k in c.api.keys_of(&d.group, &d.plural) {
                c.api.remove(&k);
            }
        }
    }
    c.mark_dirty();
    let mut removed = removed;
    removed["apiVersion"] = json!(def.api_version());
    Reply::Json(StatusCode::OK, removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::clock::{Clock, ClockMode};
    use crate::sim::kube::PoolNodes;
    use axum::http::Method;

    fn post(body: Value) -> Req {
        Req {
            method: Method::POST,
            query: vec![("fieldValidation".into(), "Strict".into())],
            accept: "application/json".into(),
            media: "application/json".into(),
            body: body.to_string().into(),
        }
    }

    fn pool(name: &str, machine: &str, gpus: Option<&str>) -> PoolNodes {
        let mut p = PoolNodes {
            pool: name.into(),
            machine_type: machine.into(),
            zones: vec!["us-central1-a".into()],
            count: 1,
            max: 1,
            ..PoolNodes::default()
        };
        if let Some(n) = gpus {
            p.allocatable.insert("nvidia.com/gpu".into(), n.into());
            p.taints.push((
                "nvidia.com/gpu".into(),
                "present".into(),
                "NoSchedule".into(),
            ));
        }
        p
    }

    /// Regression: `nvidia.com/gpu: 1` as a JSON number used to read as "asks for
    /// nothing", and the pod landed on the CPU node.
    #[test]
    fn a_gpu_count_written_as_a_number_lands_on_a_gpu_node() {
        let clock = Clock::new(ClockMode::Explicit);
        let mut c = ClusterKube::new("k");
        c.pools
            .insert("cpu".into(), pool("cpu", "e2-standard-4", None));
        c.pools
            .insert("gpu".into(), pool("gpu", "g2-standard-4", Some("1")));
        c.reconcile(&clock);
        let defs = super::super::resources::all(&c.api);
        let def = super::super::resources::find(&defs, "", "v1", "pods").unwrap();
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i",
                "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": 0.5}}}]}});
        assert!(matches!(
            create(&mut c, &def, Some("default"), &post(pod)),
            Reply::Object(..)
        ));
        c.reconcile(&clock);
        let stored = c.api.get(&ObjKey::new("", "pods", "default", "p")).unwrap();
        let res = &stored["spec"]["containers"][0]["resources"];
        assert_eq!(res["limits"], json!({"nvidia.com/gpu": "1", "cpu": "500m"}));
        assert_eq!(res["requests"], res["limits"], "requests default to limits");
        let node = stored["spec"]["nodeName"].as_str().unwrap();
        assert!(node.starts_with("gke-gpu-"), "{node}");

        let bad = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "half"}}}]}});
        let Reply::Error(e) = create(&mut c, &def, Some("default"), &post(bad)) else {
            panic!("accepted")
        };
        assert_eq!((e.code, e.reason), (400, "BadRequest"), "{}", e.message);
        let typo = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "r"},
            "spec": {"containers": [{"name": "c", "imagePullPolcy": "Always"}]}});
        let Reply::Error(e) = create(&mut c, &def, Some("default"), &post(typo)) else {
            panic!("accepted")
        };
        assert!(
            e.message.ends_with(
                r#"strict decoding error: unknown field "spec.containers[0].imagePullPolcy""#
            ),
            "{}",
            e.message
        );
    }

    #[test]
    fn selectors() {
        let labels = json!({"app": "x", "tier": "web"});
        let all = |s: &str| {
            requirements(s)
                .iter()
                .all(|r| requirement_matches(r, &labels))
        };
        assert!(all("app=x,tier"));
        assert!(all("app in (x, y),!missing"));
        assert!(!all("app notin (x)"));
        assert!(!all("tier!=web"));
        assert!(all(""));
        let pod = json!({"metadata": {"name": "p"}, "status": {"phase": "Pending"}});
        assert!(field_matches("status.phase=Pending,spec.nodeName=", &pod));
        assert!(!field_matches("metadata.name!=p", &pod));
    }
}
