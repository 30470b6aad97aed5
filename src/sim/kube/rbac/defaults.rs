//! The default ClusterRoles and ClusterRoleBindings every simulated cluster has, as
//! kube-apiserver bootstraps them: the user-facing `cluster-admin`, `admin`, `edit` and
//! `view` (the last three aggregated from ClusterRoles labelled
//! `rbac.authorization.k8s.io/aggregate-to-{name}`, the `system:aggregate-to-*` roles
//! among them), and the discovery and self-review roles bound to every authenticated
//! user. Their rules are derived from Kubernetes' bootstrap policy for the kinds the
//! simulator serves; `view` and `edit` also cover LeaderWorkerSets, as they do once the
//! LWS release aggregates its roles into them.
//!
//! Invariant: the defaults are built in, not stored (listing ClusterRoles shows only
//! what was created); a stored object of the same name takes a default's place.

use std::sync::LazyLock;

use serde_json::{Value, json};

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// The group every authenticated user is in.
pub const AUTHENTICATED: &str = "system:authenticated";
const AGGREGATE: &str = "rbac.authorization.k8s.io/aggregate-to-";

fn rule(verbs: &[&str], group: &str, resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": [group], "resources": resources})
}

fn paths(urls: &[&str]) -> Value {
    json!({"verbs": ["get"], "nonResourceURLs": urls})
}

/// A ClusterRole with `rules`, labelled to aggregate into the roles `into`, itself
/// aggregating the roles labelled for `from`.
fn role(name: &str, into: &[&str], from: Option<&str>, rules: Vec<Value>) -> Value {
    let labels: serde_json::Map<String, Value> = into
        .iter()
        .map(|r| (format!("{AGGREGATE}{r}"), json!("true")))
        .chain([(
            "kubernetes.io/bootstrapping".to_owned(),
            json!("rbac-defaults"),
        )])
        .collect();
    let mut role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels},
        "rules": rules,
    });
    if let Some(from) = from {
        role["aggregationRule"] = json!({
            "clusterRoleSelectors": [{"matchLabels": {format!("{AGGREGATE}{from}"): "true"}}]
        });
    }
    role
}

fn view_rules() -> Vec<Value> {
    vec![
        rule(
            READ,
            "",
            &[
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        rule(
            READ,
            "",
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        rule(READ, "", &["namespaces"]),
        rule(READ, "discovery.k8s.io", &["endpointslices"]),
        rule(
            READ,
            "apps",
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/status",
                "statefulsets/scale",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/status",
                "deployments/scale",
                "replicasets",
                "replicasets/status",
                "replicasets/scale",
            ],
        ),
        rule(
            READ,
            "autoscaling",
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        rule(
            READ,
            "batch",
            &["jobs", "jobs/status", "cronjobs", "cronjobs/status"],
        ),
        rule(
            READ,
            "policy",
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        rule(
            READ,
            "networking.k8s.io",
            &["ingresses", "ingresses/status", "networkpolicies"],
        ),
        rule(
            READ,
            "leaderworkerset.x-k8s.io",
            &["leaderworkersets", "leaderworkersets/status"],
        ),
    ]
}

fn edit_rules() -> Vec<Value> {
    vec![
        rule(&["impersonate"], "", &["serviceaccounts"]),
        rule(
            WRITE,
            "",
            &[
                "pods",
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
            ],
        ),
        rule(&["create"], "", &["pods/eviction"]),
        rule(
            WRITE,
            "",
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ],
        ),
        rule(&["create"], "", &["serviceaccounts/token"]),
        rule(
            WRITE,
            "apps",
            &[
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ],
        ),
        rule(WRITE, "autoscaling", &["horizontalpodautoscalers"]),
        rule(WRITE, "batch", &["jobs", "cronjobs"]),
        rule(WRITE, "policy", &["poddisruptionbudgets"]),
        rule(
            WRITE,
            "networking.k8s.io",
            &["ingresses", "networkpolicies"],
        ),
        rule(WRITE, "leaderworkerset.x-k8s.io", &["leaderworkersets"]),
        rule(
            READ,
            "",
            &[
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ],
        ),
    ]
}

fn admin_rules() -> Vec<Value> {
    vec![
        rule(
            &["create"],
            "authorization.k8s.io",
            &["localsubjectaccessreviews"],
        ),
        rule(
            READ_WRITE,
            "rbac.authorization.k8s.io",
            &["roles", "rolebindings"],
        ),
    ]
}

static CLUSTER_ROLES: LazyLock<Vec<Value>> = LazyLock::new(|| {
    vec![
        role(
            "cluster-admin",
            &[],
            None,
            vec![
                json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
                json!({"verbs": ["*"], "nonResourceURLs": ["*"]}),
            ],
        ),
        role("admin", &[], Some("admin"), Vec::new()),
        role("edit", &["admin"], Some("edit"), Vec::new()),
        role("view", &["edit"], Some("view"), Vec::new()),
        role("system:aggregate-to-admin", &["admin"], None, admin_rules()),
        role("system:aggregate-to-edit", &["edit"], None, edit_rules()),
        role("system:aggregate-to-view", &["view"], None, view_rules()),
        role(
            "system:discovery",
            &[],
            None,
            vec![paths(&[
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ])],
        ),
        role(
            "system:basic-user",
            &[],
            None,
            vec![rule(
                &["create"],
                "authorization.k8s.io",
                &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            )],
        ),
        role(
            "system:public-info-viewer",
            &[],
            None,
            vec![paths(&[
                "/healthz",
                "/livez",
                "/readyz",
                "/version",
                "/version/",
            ])],
        ),
    ]
});

static CLUSTER_ROLE_BINDINGS: LazyLock<Vec<Value>> = LazyLock::new(|| {
    ["system:discovery", "system:basic-user", "system:public-info-viewer"]
        .iter()
        .map(|name| {
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": AUTHENTICATED}],
            })
        })
        .collect()
});

/// The default ClusterRoles.
pub fn cluster_roles() -> &'static [Value] {
    &CLUSTER_ROLES
}

/// The default ClusterRoleBindings.
pub fn cluster_role_bindings() -> &'static [Value] {
    &CLUSTER_ROLE_BINDINGS
}
