//! What the API server checks before it stores an object: the body decodes (JSON, or
//! YAML for apply patches), apiVersion and kind match the path, name and namespace
//! agree with the URL and are valid, the namespace exists, CRDs are well-formed,
//! quantities are canonicalised ([`quantities`]), pods are admitted ([`admission`]),
//! RBAC bindings are well-formed ([`rbac::validation`]),
//! and, when asked (`fieldValidation=Strict`), no field is unknown ([`openapi`]).
//!
//! Invariant: [`validate`] either fails without changing the cluster or leaves the
//! body exactly as it will be stored (normalised and admitted).

use serde_json::{Map, Value, json};

use super::admission;
use super::cluster::ClusterKube;
use super::openapi;
use super::quantities;
use super::rbac;
use super::request::Req;
use super::resources::{CRD_GROUP, CRD_PLURAL, ResourceDef, crd_defs};
use super::status::KStatus;

/// A request body: JSON, or YAML for apply patches.
pub fn parse_body(req: &Req) -> Result<Value, KStatus> {
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
    let fail = |m: String| Err(def.invalid(name, m));
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
pub fn validate(
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
                return Err(def.invalid(
                    "",
                    "metadata.name: Required value: name or generateName is required",
                ));
            }
        },
    };
    meta["name"] = json!(name);
    valid_name(def, &name).map_err(|m| def.invalid(&name, m))?;
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
    normalise_and_admit(def, &name, body)?;
    Ok(name)
}

/// Canonical quantities and, for pods, admission: what every stored version of an
/// object goes through (created, applied, patched or replaced).
pub fn normalise_and_admit(def: &ResourceDef, name: &str, body: &mut Value) -> Result<(), KStatus> {
    quantities::normalise(&def.kind, body).map_err(|e| e.status(def, name))?;
    rbac::validation::check_binding(def, name, body, None)?;
    if def.group.is_empty()
        && def.plural == "pods"
        && let Some(spec) = body.get_mut("spec")
    {
        admission::admit_pod_spec(spec);
    }
    Ok(())
}

/// The server's strict field validation (`fieldValidation=Strict`, what kubectl sends
/// by default): unknown fields of a modelled kind are refused with its message.
pub fn field_validation(
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
    // Each unknown field as the server words it, joined with ", ".
    let listed = |each: fn(&String) -> String| -> String {
        unknown.iter().map(each).collect::<Vec<_>>().join(", ")
    };
    Err(KStatus::bad_request(if apply {
        let fields = listed(|f| format!(".{f}: field not declared in schema"));
        format!(
            "failed to create typed patch object ({}/{version}, Kind={kind}): {fields}",
            def.group
        )
    } else {
        let fields = listed(|f| format!("unknown field \"{f}\""));
        format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {fields}"
        )
    }))
}
