//! The resources a simulated API server serves: a fixed table of built-in kinds plus
//! every served version of every CustomResourceDefinition stored in the cluster, and
//! the discovery documents (legacy and aggregated) describing them.
//!
//! Invariant: discovery and request routing read the same list ([`all`]), so a kind is
//! listed by discovery exactly when its paths answer (a custom kind from the moment its
//! CRD exists until it is deleted).

use serde_json::{Value, json};

use super::objects::ApiStore;
use super::status::KStatus;

/// One served (group, version, resource).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceDef {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
}

impl ResourceDef {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `deployments.apps` / `pods`, as Kubernetes names resources in messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// 404 NotFound for the object `name` of this resource.
    pub fn not_found(&self, name: &str) -> KStatus {
        KStatus::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", self.qualified()),
        )
    }

    /// 422 Invalid for the object `name` of this resource.
    pub fn invalid(&self, name: &str, message: impl Into<String>) -> KStatus {
        KStatus::new(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {}", self.kind, message.into()),
        )
    }
}

pub const CRD_GROUP: &str = "apiextensions.k8s.io";
pub const CRD_PLURAL: &str = "customresourcedefinitions";

/// (group, version, plural, kind, namespaced, short names)
type Builtin = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
);

const BUILTINS: &[Builtin] = &[
    ("", "v1", "namespaces", "Namespace", false, &["ns"]),
    ("", "v1", "nodes", "Node", false, &["no"]),
    ("", "v1", "pods", "Pod", true, &["po"]),
    ("", "v1", "serviceaccounts", "ServiceAccount", true, &["sa"]),
    ("", "v1", "configmaps", "ConfigMap", true, &["cm"]),
    ("", "v1", "secrets", "Secret", true, &[]),
    ("", "v1", "services", "Service", true, &["svc"]),
    ("", "v1", "events", "Event", true, &["ev"]),
    ("apps", "v1", "deployments", "Deployment", true, &["deploy"]),
    ("apps", "v1", "daemonsets", "DaemonSet", true, &["ds"]),
    ("apps", "v1", "statefulsets", "StatefulSet", true, &["sts"]),
    ("apps", "v1", "replicasets", "ReplicaSet", true, &["rs"]),
    ("batch", "v1", "jobs", "Job", true, &[]),
    ("", "v1", "podtemplates", "PodTemplate", true, &[]),
    // GKE serves ProvisioningRequests (flex-start with queued provisioning) in every
    // cluster; [`super::provisioning_request`] acts on them.
    (
        "autoscaling.x-k8s.io",
        "v1",
        "provisioningrequests",
        "ProvisioningRequest",
        true,
        &["provreq", "provreqs"],
    ),
    (
        "autoscaling.x-k8s.io",
        "v1beta1",
        "provisioningrequests",
        "ProvisioningRequest",
        true,
        &["provreq", "provreqs"],
    ),
    (
        CRD_GROUP,
        "v1",
        CRD_PLURAL,
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        false,
        &[],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        false,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        true,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
        &[],
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        false,
        &["pc"],
    ),
    (
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
        &["pdb"],
    ),
    ("coordination.k8s.io", "v1", "leases", "Lease", true, &[]),
    // GKE installs the ComputeClass CRD (computeclasses.cloud.google.com) in every
    // cluster; here it is served as a built-in kind.
    (
        "cloud.google.com",
        "v1",
        "computeclasses",
        "ComputeClass",
        false,
        &[],
    ),
];

/// Verbs the simulator implements (no watch, no deletecollection).
const VERBS: [&str; 6] = ["create", "delete", "get", "list", "patch", "update"];

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The served versions of one stored CRD (nothing if its spec is unusable).
pub fn crd_defs(crd: &Value) -> Vec<ResourceDef> {
    let spec = &crd["spec"];
    let names = &spec["names"];
    let (Some(group), Some(plural), Some(kind)) = (
        spec["group"].as_str(),
        names["plural"].as_str(),
        names["kind"].as_str(),
    ) else {
        return Vec::new();
    };
    let singular = names["singular"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| kind.to_ascii_lowercase());
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"].as_bool().unwrap_or(true))
        .filter_map(|v| v["name"].as_str())
        .map(|version| ResourceDef {
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
            singular: singular.clone(),
            kind: kind.to_owned(),
            namespaced,
            short_names: strs(&names["shortNames"]),
        })
        .collect()
}

/// Every resource served right now: built-ins, then custom kinds.
pub fn all(store: &ApiStore) -> Vec<ResourceDef> {
    let mut defs: Vec<ResourceDef> = BUILTINS
        .iter()
        .map(|(g, v, p, k, ns, short)| ResourceDef {
            group: (*g).to_owned(),
            version: (*v).to_owned(),
            plural: (*p).to_owned(),
            singular: k.to_ascii_lowercase(),
            kind: (*k).to_owned(),
            namespaced: *ns,
            short_names: short.iter().map(|s| (*s).to_owned()).collect(),
        })
        .collect();
    for (_, crd) in store.list(CRD_GROUP, CRD_PLURAL, None) {
        defs.extend(crd_defs(crd));
    }
    defs
}

pub fn find(defs: &[ResourceDef], group: &str, version: &str, plural: &str) -> Option<ResourceDef> {
    defs.iter()
        .find(|d| d.group == group && d.version == version && d.plural == plural)
        .cloned()
}

/// Groups in discovery order (core excluded), each with its versions.
fn groups(defs: &[ResourceDef]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for d in defs.iter().filter(|d| !d.group.is_empty()) {
        match out.iter_mut().find(|(g, _)| *g == d.group) {
            Some((_, vs)) if !vs.contains(&d.version) => vs.push(d.version.clone()),
            Some(_) => {}
            None => out.push((d.group.clone(), vec![d.version.clone()])),
        }
    }
    out
}

/// The discovery categories of a resource (`kubectl get all` lists the `all` ones).
fn categories(d: &ResourceDef) -> Vec<&'static str> {
    let all = matches!(
        (d.group.as_str(), d.plural.as_str()),
        ("", "pods" | "services")
            | (
                "apps",
                "deployments" | "replicasets" | "statefulsets" | "daemonsets"
            )
            | ("batch", "jobs")
    );
    if all { vec!["all"] } else { Vec::new() }
}

/// `GET /api`.
pub fn api_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.2:443"}],
    })
}

/// `GET /apis` (legacy).
pub fn group_list(defs: &[ResourceDef]) -> Value {
    let groups: Vec<Value> = groups(defs)
        .into_iter()
        .map(|(g, vs)| group_doc(&g, &vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn group_doc(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

/// `GET /apis/{group}`, if served.
pub fn group(defs: &[ResourceDef], group: &str) -> Option<Value> {
    groups(defs)
        .into_iter()
        .find(|(g, _)| g == group)
        .map(|(g, vs)| group_doc(&g, &vs))
}

/// `GET /api/v1` or `GET /apis/{group}/{version}`, if served.
pub fn resource_list(defs: &[ResourceDef], group: &str, version: &str) -> Option<Value> {
    let resources: Vec<Value> = defs
        .iter()
        .filter(|d| d.group == group && d.version == version)
        .map(|d| {
            json!({
                "name": d.plural,
                "singularName": d.singular,
                "namespaced": d.namespaced,
                "kind": d.kind,
                "verbs": VERBS,
                "shortNames": d.short_names,
                "categories": categories(d),
            })
        })
        .collect();
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

/// Aggregated discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`) of the core
/// group (`/api`) or of every other group (`/apis`).
pub fn aggregated(defs: &[ResourceDef], core: bool) -> Value {
    let group_names: Vec<(String, Vec<String>)> = if core {
        vec![(String::new(), vec!["v1".to_owned()])]
    } else {
        groups(defs)
    };
    let items: Vec<Value> = group_names
        .into_iter()
        .map(|(g, vs)| {
            let versions: Vec<Value> = vs
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = defs
                        .iter()
                        .filter(|d| d.group == g && d.version == *v)
                        .map(|d| {
                            json!({
                                "resource": d.plural,
                                "responseKind": {"group": d.group, "version": d.version, "kind": d.kind},
                                "scope": if d.namespaced { "Namespaced" } else { "Cluster" },
                                "singularResource": d.singular,
                                "verbs": VERBS,
                                "shortNames": d.short_names,
                                "categories": categories(d),
                            })
                        })
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": g}, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

/// The content type of aggregated discovery responses.
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an `Accept` header asks for aggregated discovery (v2 or v2beta1).
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let p: Vec<&str> = part.split(';').map(str::trim).collect();
        p.contains(&"g=apidiscovery.k8s.io")
            && p.contains(&"as=APIGroupDiscoveryList")
            && (p.contains(&"v=v2") || p.contains(&"v=v2beta1"))
    })
}

/// The served version entry (`spec.versions[]`) of the CRD that defines `def`, if a CRD
/// defines it.
pub fn crd_version<'a>(store: &'a ApiStore, def: &ResourceDef) -> Option<&'a Value> {
    let name = format!("{}.{}", def.plural, def.group);
    let crd = store
        .list(CRD_GROUP, CRD_PLURAL, None)
        .find(|(k, _)| k.name == name)?
        .1;
    crd["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == def.version.as_str())
}
