//! Server-side apply of multi-document manifests.

use kineticd::cloud::gcp::RetryClass;
use kineticd::cloud::kube::KubeError;
use kineticd::cloud::kube::apply::APPLY_TRIES;
use kineticd::sim::faults::{FaultKind, FaultSpec};

use super::{calls, sim_cluster};

/// Deliberately out of order: the custom resource and the deployment come before the
/// namespace and the CRD they need.
const MANIFEST: &str = r#"
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  namespace: demo
spec:
  size: 3
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
---
# no namespace: lands in "default"
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: v1
kind: Namespace
metadata:
  name: demo
"#;

#[tokio::test]
async fn apply_twice_changes_nothing() {
    let (sim, cluster) = sim_cluster().await;
    let first = cluster.apply_yaml(MANIFEST).await.expect("first apply");
    let order: Vec<String> = first.iter().map(|a| a.describe()).collect();
    assert_eq!(
        order,
        [
            "Namespace demo",
            "CustomResourceDefinition widgets.example.com",
            "Widget demo/w1",
            "Deployment demo/web",
            "ConfigMap default/settings",
        ]
    );
    assert!(first.iter().all(|a| a.resource_version.is_some()));
    assert_eq!(calls(&sim, "kube.apply"), 5);

    let rv_before = sim.world().kube.clusters["k1"].api.resource_version;
    let second = cluster.apply_yaml(MANIFEST).await.expect("second apply");
    assert_eq!(first, second, "same objects, same resourceVersions");
    assert_eq!(
        sim.world().kube.clusters["k1"].api.resource_version,
        rv_before,
        "the second apply changed nothing in the cluster"
    );
    assert_eq!(calls(&sim, "kube.apply"), 10);

    // The simulator's state dump shows the objects.
    let state: serde_json::Value = kineticd::app::http_client()
        .expect("http")
        .get(format!("{}/sim/v1/state", sim.url()))
        .send()
        .await
        .expect("state")
        .json()
        .await
        .expect("json");
    let objects = state["kube"]["clusters"]["k1"]["api"]["objects"]
        .as_object()
        .expect("objects in the dump");
    assert!(
        objects.contains_key("example.com/widgets/demo/w1"),
        "{objects:?}"
    );

    // What the server stored: field manager, namespace defaulting, the custom resource.
    let w = sim.world();
    let objects = &w.kube.clusters["k1"].api.objects;
    let cm = objects
        .iter()
        .find(|(k, _)| k.plural == "configmaps" && k.name == "settings")
        .map(|(_, v)| v.clone())
        .expect("configmap");
    assert_eq!(cm["metadata"]["namespace"], "default");
    assert_eq!(cm["metadata"]["managedFields"][0]["manager"], "kineticd");
    assert_eq!(cm["metadata"]["managedFields"][0]["operation"], "Apply");
    let widget = objects
        .iter()
        .find(|(k, _)| k.plural == "widgets")
        .map(|(_, v)| v.clone())
        .expect("widget");
    assert_eq!(widget["spec"]["size"], 3);
    // Every apply asked for the force flag.
    let applies = sim.journal().entries();
    assert!(
        applies
            .iter()
            .filter(|e| e.method == "kube.apply")
            .all(|e| e.query.contains("fieldManager=kineticd") && e.query.contains("force=true"))
    );
}

#[tokio::test]
async fn changes_bump_generation_and_removed_fields_go() {
    let (sim, cluster) = sim_cluster().await;
    cluster.apply_yaml(MANIFEST).await.expect("apply");
    let changed = MANIFEST
        .replace("replicas: 2", "replicas: 3")
        .replace("  labels: {app: web}\nspec:", "spec:");
    let out = cluster.apply_yaml(&changed).await.expect("apply changed");
    let web = out.iter().find(|a| a.name == "web").expect("web");
    assert_eq!(web.generation, Some(2));
    let w = sim.world();
    let dep = w.kube.clusters["k1"]
        .api
        .objects
        .iter()
        .find(|(k, _)| k.plural == "deployments")
        .map(|(_, v)| v.clone())
        .expect("deployment");
    assert_eq!(dep["spec"]["replicas"], 3);
    assert!(dep["metadata"]["labels"].is_null(), "{dep}");
    assert_eq!(
        dep["status"]["availableReplicas"], 3,
        "status kept and updated"
    );
}

#[tokio::test]
async fn legacy_discovery_fallback() {
    let (sim, cluster) = sim_cluster().await;
    sim.world()
        .kube
        .clusters
        .get_mut("k1")
        .expect("k1")
        .aggregated_discovery = false;
    let out = cluster.apply_yaml(MANIFEST).await.expect("apply");
    assert_eq!(out.len(), 5);
    let paths: Vec<String> = sim
        .journal()
        .entries()
        .into_iter()
        .filter(|e| e.method == "kube.discovery")
        .map(|e| e.path)
        .collect();
    assert!(
        paths.iter().any(|p| p.ends_with("/apis/apps/v1")),
        "{paths:?}"
    );
    assert!(
        paths.iter().any(|p| p.ends_with("/apis/example.com/v1")),
        "{paths:?}"
    );
}

#[tokio::test]
async fn unknown_kind_and_invalid_objects_are_terminal() {
    let (_sim, cluster) = sim_cluster().await;
    let cr = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n";
    let e = cluster.apply_yaml(cr).await.expect_err("no CRD");
    assert!(matches!(e, KubeError::UnknownKind { .. }), "{e}");
    assert_eq!(e.retry(), RetryClass::Terminal);

    let bad = "apiVersion: v1\nkind: Namespace\nmetadata: {name: Bad_Name}\n";
    let e = cluster.apply_yaml(bad).await.expect_err("invalid name");
    assert_eq!(e.http_status(), Some(422), "{e}");
    assert_eq!(e.retry(), RetryClass::Terminal);

    let missing_ns = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: nope}\n";
    let e = cluster
        .apply_yaml(missing_ns)
        .await
        .expect_err("no namespace");
    assert!(e.is_not_found(), "{e}");
    assert!(
        e.to_string().contains("namespaces \"nope\" not found"),
        "{e}"
    );

    let e = cluster.apply_yaml("a: [").await.expect_err("bad yaml");
    assert!(matches!(e, KubeError::Manifest(_)), "{e}");
}

/// Fewer transient errors than [`APPLY_TRIES`] on one object are ridden out inside the
/// apply (each object sent again), so a long manifest is not started over for them.
#[tokio::test]
async fn transient_errors_of_one_object_are_sent_again() {
    let (sim, cluster) = sim_cluster().await;
    let before = calls(&sim, "kube.apply");
    sim.faults().arm(FaultSpec {
        service: "kube".into(),
        method: "kube.apply".into(),
        kind: FaultKind::Http503,
        count: Some(APPLY_TRIES - 1),
        probability: None,
    });
    let applied = cluster.apply_yaml(MANIFEST).await.expect("ridden out");
    assert_eq!(applied.len(), 5);
    assert_eq!(
        calls(&sim, "kube.apply") - before,
        5 + (APPLY_TRIES - 1) as usize,
        "each faulted apply sent again, nothing else"
    );
}

#[tokio::test]
async fn server_errors_are_retryable() {
    let (sim, cluster) = sim_cluster().await;
    // More in a row than one apply rides out: the error reaches the step.
    sim.faults().arm(FaultSpec {
        service: "kube".into(),
        method: "kube.apply".into(),
        kind: FaultKind::Http503,
        count: Some(APPLY_TRIES),
        probability: None,
    });
    let e = cluster.apply_yaml(MANIFEST).await.expect_err("fault");
    assert_eq!(e.http_status(), Some(503), "{e}");
    assert_eq!(e.retry(), RetryClass::Retryable);
    cluster.apply_yaml(MANIFEST).await.expect("retry succeeds");
}
