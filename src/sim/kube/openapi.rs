//! The OpenAPI v3 documents of a simulated API server (`/openapi/v3` and
//! `/openapi/v3/{api/v1 | apis/{group}/{version}}`), enough for `kubectl`: the PATCH
//! operation of every kind advertises the `fieldValidation` query parameter (so kubectl
//! validates through the server, `fieldValidation=Strict`) and the component schemas of
//! the built-in kinds the simulator models (Pod, Deployment, StatefulSet, DaemonSet,
//! ReplicaSet, Job, Namespace, ConfigMap, Secret) describe their fields for
//! `kubectl explain` and for the server's strict field validation ([`unknown_fields`]).
//! Custom kinds carry their CRD's `openAPIV3Schema`.
//!
//! Invariant: a kind's schema is the one strict validation checks against: a field is
//! reported unknown exactly when the schema (an object without
//! `x-kubernetes-preserve-unknown-fields`) does not declare it.

use serde_json::{Map, Value, json};

use super::objects::ApiStore;
use super::resources::{self, ResourceDef};

/// Field types: `string`, `integer`, `boolean`, `map` (string to string), `quantities`,
/// `any` (free-form), `[]X` (array of X), `@Type` (a schema below).
type Fields = &'static [(&'static str, &'static str)];

const META: Fields = &[
    ("name", "string"),
    ("generateName", "string"),
    ("namespace", "string"),
    ("labels", "map"),
    ("annotations", "map"),
    ("uid", "string"),
    ("resourceVersion", "string"),
    ("generation", "integer"),
    ("creationTimestamp", "string"),
    ("deletionTimestamp", "string"),
    ("deletionGracePeriodSeconds", "integer"),
    ("ownerReferences", "[]any"),
    ("finalizers", "[]string"),
    ("managedFields", "[]any"),
    ("selfLink", "string"),
];
const RESOURCES: Fields = &[
    ("requests", "quantities"),
    ("limits", "quantities"),
    ("claims", "[]any"),
];
const TOLERATION: Fields = &[
    ("key", "string"),
    ("operator", "string"),
    ("value", "string"),
    ("effect", "string"),
    ("tolerationSeconds", "integer"),
];
const CONTAINER: Fields = &[
    ("name", "string"),
    ("image", "string"),
    ("command", "[]string"),
    ("args", "[]string"),
    ("workingDir", "string"),
    ("ports", "[]any"),
    ("env", "[]any"),
    ("envFrom", "[]any"),
    ("resources", "@ResourceRequirements"),
    ("volumeMounts", "[]any"),
    ("volumeDevices", "[]any"),
    ("livenessProbe", "any"),
    ("readinessProbe", "any"),
    ("startupProbe", "any"),
    ("lifecycle", "any"),
    ("imagePullPolicy", "string"),
    ("securityContext", "any"),
    ("stdin", "boolean"),
    ("stdinOnce", "boolean"),
    ("tty", "boolean"),
    ("terminationMessagePath", "string"),
    ("terminationMessagePolicy", "string"),
    ("resizePolicy", "[]any"),
    ("restartPolicy", "string"),
];
const POD_SPEC: Fields = &[
    ("containers", "[]@Container"),
    ("initContainers", "[]@Container"),
    ("ephemeralContainers", "[]any"),
    ("nodeSelector", "map"),
    ("tolerations", "[]@Toleration"),
    ("affinity", "any"),
    ("nodeName", "string"),
    ("serviceAccountName", "string"),
    ("serviceAccount", "string"),
    ("restartPolicy", "string"),
    ("terminationGracePeriodSeconds", "integer"),
    ("volumes", "[]any"),
    ("priorityClassName", "string"),
    ("priority", "integer"),
    ("hostNetwork", "boolean"),
    ("hostIPC", "boolean"),
    ("hostPID", "boolean"),
    ("dnsPolicy", "string"),
    ("dnsConfig", "any"),
    ("schedulerName", "string"),
    ("securityContext", "any"),
    ("imagePullSecrets", "[]any"),
    ("subdomain", "string"),
    ("hostname", "string"),
    ("automountServiceAccountToken", "boolean"),
    ("activeDeadlineSeconds", "integer"),
    ("runtimeClassName", "string"),
    ("topologySpreadConstraints", "[]any"),
    ("overhead", "quantities"),
    ("resources", "@ResourceRequirements"),
    ("schedulingGates", "[]any"),
    ("readinessGates", "[]any"),
    ("enableServiceLinks", "boolean"),
    ("preemptionPolicy", "string"),
    ("shareProcessNamespace", "boolean"),
    ("hostAliases", "[]any"),
    ("os", "any"),
    ("resourceClaims", "[]any"),
    ("setHostnameAsFQDN", "boolean"),
    ("hostUsers", "boolean"),
];
const TEMPLATE: Fields = &[("metadata", "@ObjectMeta"), ("spec", "@PodSpec")];
const SELECTOR: Fields = &[("matchLabels", "map"), ("matchExpressions", "[]any")];
const DEPLOYMENT_SPEC: Fields = &[
    ("replicas", "integer"),
    ("selector", "@LabelSelector"),
    ("template", "@PodTemplateSpec"),
    ("strategy", "any"),
    ("minReadySeconds", "integer"),
    ("revisionHistoryLimit", "integer"),
    ("paused", "boolean"),
    ("progressDeadlineSeconds", "integer"),
];
const STATEFULSET_SPEC: Fields = &[
    ("replicas", "integer"),
    ("selector", "@LabelSelector"),
    ("template", "@PodTemplateSpec"),
    ("serviceName", "string"),
    ("volumeClaimTemplates", "[]any"),
    ("podManagementPolicy", "string"),
    ("updateStrategy", "any"),
    ("revisionHistoryLimit", "integer"),
    ("minReadySeconds", "integer"),
    ("persistentVolumeClaimRetentionPolicy", "any"),
    ("ordinals", "any"),
];
const DAEMONSET_SPEC: Fields = &[
    ("selector", "@LabelSelector"),
    ("template", "@PodTemplateSpec"),
    ("updateStrategy", "any"),
    ("minReadySeconds", "integer"),
    ("revisionHistoryLimit", "integer"),
];
const REPLICASET_SPEC: Fields = &[
    ("replicas", "integer"),
    ("selector", "@LabelSelector"),
    ("template", "@PodTemplateSpec"),
    ("minReadySeconds", "integer"),
];
const JOB_SPEC: Fields = &[
    ("template", "@PodTemplateSpec"),
    ("parallelism", "integer"),
    ("completions", "integer"),
    ("backoffLimit", "integer"),
    ("activeDeadlineSeconds", "integer"),
    ("ttlSecondsAfterFinished", "integer"),
    ("completionMode", "string"),
    ("suspend", "boolean"),
    ("selector", "@LabelSelector"),
    ("manualSelector", "boolean"),
    ("podFailurePolicy", "any"),
    ("backoffLimitPerIndex", "integer"),
    ("maxFailedIndexes", "integer"),
    ("podReplacementPolicy", "string"),
    ("successPolicy", "any"),
    ("managedBy", "string"),
];
const TOP: [(&str, &str); 3] = [
    ("apiVersion", "string"),
    ("kind", "string"),
    ("metadata", "@ObjectMeta"),
];

/// (schema name, its package, fields) of the helper types.
const TYPES: &[(&str, &str, Fields)] = &[
    ("ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1", META),
    (
        "LabelSelector",
        "io.k8s.apimachinery.pkg.apis.meta.v1",
        SELECTOR,
    ),
    ("ResourceRequirements", "io.k8s.api.core.v1", RESOURCES),
    ("Toleration", "io.k8s.api.core.v1", TOLERATION),
    ("Container", "io.k8s.api.core.v1", CONTAINER),
    ("PodSpec", "io.k8s.api.core.v1", POD_SPEC),
    ("PodTemplateSpec", "io.k8s.api.core.v1", TEMPLATE),
    ("DeploymentSpec", "io.k8s.api.apps.v1", DEPLOYMENT_SPEC),
    ("StatefulSetSpec", "io.k8s.api.apps.v1", STATEFULSET_SPEC),
    ("DaemonSetSpec", "io.k8s.api.apps.v1", DAEMONSET_SPEC),
    ("ReplicaSetSpec", "io.k8s.api.apps.v1", REPLICASET_SPEC),
    ("JobSpec", "io.k8s.api.batch.v1", JOB_SPEC),
];

/// The fields of a modelled kind besides apiVersion, kind and metadata.
fn kind_fields(kind: &str) -> Option<&'static [(&'static str, &'static str)]> {
    Some(match kind {
        "Pod" => &[("spec", "@PodSpec"), ("status", "any")],
        "Deployment" => &[("spec", "@DeploymentSpec"), ("status", "any")],
        "StatefulSet" => &[("spec", "@StatefulSetSpec"), ("status", "any")],
        "DaemonSet" => &[("spec", "@DaemonSetSpec"), ("status", "any")],
        "ReplicaSet" => &[("spec", "@ReplicaSetSpec"), ("status", "any")],
        "Job" => &[("spec", "@JobSpec"), ("status", "any")],
        "Namespace" => &[("spec", "any"), ("status", "any")],
        "ConfigMap" => &[
            ("data", "map"),
            ("binaryData", "map"),
            ("immutable", "boolean"),
        ],
        "Secret" => &[
            ("data", "map"),
            ("stringData", "map"),
            ("type", "string"),
            ("immutable", "boolean"),
        ],
        _ => return None,
    })
}

fn package(group: &str) -> String {
    match group {
        "" => "io.k8s.api.core.v1".into(),
        g => format!("io.k8s.api.{}.v1", g.split('.').next().unwrap_or(g)),
    }
}

fn full_name(short: &str) -> String {
    TYPES
        .iter()
        .find(|(n, _, _)| *n == short)
        .map_or_else(|| short.to_owned(), |(n, p, _)| format!("{p}.{n}"))
}

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

fn field_schema(ty: &str) -> Value {
    let reference = |n: &str| json!({"allOf": [{"$ref": format!("#/components/schemas/{}", full_name(n))}], "default": {}});
    match ty {
        "string" => json!({"type": "string"}),
        "integer" => json!({"type": "integer", "format": "int32"}),
        "boolean" => json!({"type": "boolean"}),
        "map" => {
            json!({"type": "object", "additionalProperties": {"type": "string", "default": ""}})
        }
        "quantities" => {
            json!({"type": "object", "additionalProperties": {"$ref": format!("#/components/schemas/{QUANTITY}")}})
        }
        "any" => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        t => match (t.strip_prefix("[]"), t.strip_prefix('@')) {
            (Some(item), _) => json!({"type": "array", "items": field_schema(item)}),
            (None, Some(n)) => reference(n),
            _ => json!({}),
        },
    }
}

fn object_schema(fields: &[(&str, &str)], description: &str) -> Value {
    let props: Map<String, Value> = fields
        .iter()
        .map(|(f, t)| ((*f).to_owned(), field_schema(t)))
        .collect();
    json!({"type": "object", "description": description, "properties": props})
}

/// Every component schema of group `group` version `version` of `defs`.
fn schemas(store: &ApiStore, defs: &[&ResourceDef]) -> Map<String, Value> {
    let mut out = Map::new();
    for (n, p, fields) in TYPES {
        out.insert(
            format!("{p}.{n}"),
            object_schema(
                fields,
                &format!("{n} as the simulated API server models it."),
            ),
        );
    }
    out.insert(QUANTITY.into(), json!({"description": "Quantity is a fixed-point representation of a number.", "oneOf": [{"type": "string"}, {"type": "number"}]}));
    for d in defs {
        let gvk = json!([{"group": d.group, "version": d.version, "kind": d.kind}]);
        let mut schema = match kind_fields(&d.kind) {
            Some(extra) => {
                let mut f: Vec<(&str, &str)> = TOP.to_vec();
                f.extend_from_slice(extra);
                object_schema(&f, &format!("{} (simulated).", d.kind))
            }
            None => crd_schema(store, d).unwrap_or_else(|| {
                let mut s = object_schema(&TOP, &format!("{} (simulated).", d.kind));
                s["x-kubernetes-preserve-unknown-fields"] = json!(true);
                s
            }),
        };
        schema["x-kubernetes-group-version-kind"] = gvk;
        out.insert(format!("{}.{}", package(&d.group), d.kind), schema);
    }
    out
}

fn crd_schema(store: &ApiStore, d: &ResourceDef) -> Option<Value> {
    let v = resources::crd_version(store, d)?;
    let mut s = v["schema"]["openAPIV3Schema"].clone();
    if !s.is_object() {
        return None;
    }
    s["properties"]["metadata"] = field_schema("@ObjectMeta");
    Some(s)
}

/// The paths part: one PATCH operation per kind, advertising `fieldValidation`.
fn paths(defs: &[&ResourceDef]) -> Map<String, Value> {
    defs.iter()
        .map(|d| {
            let prefix = if d.group.is_empty() { "/api/v1".to_owned() } else { format!("/apis/{}/{}", d.group, d.version) };
            let ns = if d.namespaced { "/namespaces/{namespace}" } else { "" };
            let op = json!({
                "operationId": format!("patch{}", d.kind),
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {"group": d.group, "version": d.version, "kind": d.kind},
                "parameters": [
                    {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "force", "in": "query", "schema": {"type": "boolean", "uniqueItems": true}},
                ],
                "responses": {"200": {"description": "OK"}},
            });
            (format!("{prefix}{ns}/{}/{{name}}", d.plural), json!({"patch": op}))
        })
        .collect()
}

/// `api/v1` or `apis/{group}/{version}`.
fn gv_path(d: &ResourceDef) -> String {
    if d.group.is_empty() {
        "api/v1".into()
    } else {
        format!("apis/{}/{}", d.group, d.version)
    }
}

/// `GET /openapi/v3`: the group-version documents served.
pub fn root(store: &ApiStore) -> Value {
    let defs = resources::all(store);
    let mut paths = Map::new();
    for d in &defs {
        let p = gv_path(d);
        let hash = format!(
            "{:016X}",
            crate::domain::hash::fnv1a(format!("{p}/{}", store.resource_version).bytes())
        );
        paths.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/{gv}`, if served.
pub fn group_version(store: &ApiStore, gv: &str) -> Option<Value> {
    let all = resources::all(store);
    let defs: Vec<&ResourceDef> = all.iter().filter(|d| gv_path(d) == gv).collect();
    if defs.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.5-gke.1000"},
        "paths": paths(&defs),
        "components": {"schemas": schemas(store, &defs)},
    }))
}

/// `GET /openapi/v2` as JSON (Swagger 2.0, for clients that read it as JSON): every
/// served kind's schema under `definitions` (references rebased there; Quantity a string,
/// as Kubernetes' v2 document has it), no paths.
pub fn v2(store: &ApiStore) -> Value {
    let all = resources::all(store);
    let defs: Vec<&ResourceDef> = all.iter().collect();
    let mut definitions = Value::Object(schemas(store, &defs));
    rebase_refs(&mut definitions);
    definitions[QUANTITY] = json!({"description": "Quantity is a fixed-point representation of a number.", "type": "string"});
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.33.5-gke.1000"},
        "paths": {},
        "definitions": definitions,
    })
}

/// `#/components/schemas/X` references become `#/definitions/X`, everywhere in `v`.
fn rebase_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match (k.as_str(), x.as_str()) {
                    ("$ref", Some(r)) => {
                        if let Some(name) = r.strip_prefix("#/components/schemas/") {
                            *x = Value::String(format!("#/definitions/{name}"));
                        }
                    }
                    _ => rebase_refs(x),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(rebase_refs),
        _ => {}
    }
}

fn unknown_in(fields: &[(&str, &str)], v: &Value, path: &str, out: &mut Vec<String>) {
    let Some(obj) = v.as_object() else { return };
    let join = |k: &str| {
        if path.is_empty() {
            k.to_owned()
        } else {
            format!("{path}.{k}")
        }
    };
    for (k, child) in obj.iter().filter(|(k, _)| !k.starts_with('$')) {
        match fields.iter().find(|(f, _)| f == k) {
            None => out.push(join(k)),
            Some((_, ty)) => unknown_typed(ty, child, &join(k), out),
        }
    }
}

fn unknown_typed(ty: &str, v: &Value, path: &str, out: &mut Vec<String>) {
    if let Some(item) = ty.strip_prefix("[]") {
        for (i, x) in v.as_array().into_iter().flatten().enumerate() {
            unknown_typed(item, x, &format!("{path}[{i}]"), out);
        }
    } else if let Some(name) = ty.strip_prefix('@')
        && let Some((_, _, fields)) = TYPES.iter().find(|(n, _, _)| *n == name)
    {
        unknown_in(fields, v, path, out);
    }
}

/// Fields of `obj` (a `kind` the simulator models) that its schema does not declare,
/// as `spec.template.spec.containers[0].imagePullPolcy`; nothing for other kinds.
pub fn unknown_fields(kind: &str, obj: &Value) -> Vec<String> {
    let Some(extra) = kind_fields(kind) else {
        return Vec::new();
    };
    let mut fields: Vec<(&str, &str)> = TOP.to_vec();
    fields.extend_from_slice(extra);
    fields.push(("status", "any"));
    let mut out = Vec::new();
    unknown_in(&fields, obj, "", &mut out);
    // Sorted: the same message whatever order the JSON map keeps its keys in.
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_validation_finds_typos_only() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "labels": {"a": "b"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [
                {"name": "c", "image": "i", "imagePullPolcy": "Always", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
                "affinity": {"anything": {"goes": 1}}}}, "bogus": true}});
        assert_eq!(
            unknown_fields("Deployment", &d),
            [
                "spec.bogus",
                "spec.template.spec.containers[0].imagePullPolcy"
            ]
        );
        assert!(unknown_fields("Widget", &d).is_empty());
    }

    #[test]
    fn documents_advertise_field_validation_and_schemas() {
        let store = ApiStore::default();
        let root = root(&store);
        assert!(
            root["paths"]["apis/apps/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/apis/apps/v1?hash=")
        );
        let apps = group_version(&store, "apis/apps/v1").unwrap();
        let op = &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(op["x-kubernetes-group-version-kind"]["kind"], "Deployment");
        assert!(
            op["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        let dep = &apps["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            dep["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
        assert!(group_version(&store, "apis/nope/v1").is_none());
    }

    #[test]
    fn the_v2_document_holds_every_kind_with_its_references_inside() {
        let doc = v2(&ApiStore::default());
        assert_eq!(doc["swagger"], "2.0");
        let defs = doc["definitions"].as_object().unwrap();
        let dep = &defs["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            dep["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
        assert_eq!(defs[QUANTITY]["type"], "string");
        let text = doc.to_string();
        assert!(!text.contains("#/components/"), "no v3 references left");
        // Every reference names a definition of the document.
        for r in text.split("\"$ref\":\"#/definitions/").skip(1) {
            let name = &r[..r.find('"').unwrap()];
            assert!(defs.contains_key(name), "dangling reference {name}");
        }
    }
}
