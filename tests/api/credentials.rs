//! `GET .../clusters/{c}/credentials` against the simulator: a member's kubeconfig names
//! context, cluster and user `gke_{project}_{zone}_{cluster}` and carries the endpoint
//! and CA the simulated GKE answers, the `gke-gcloud-auth-plugin` exec user and the
//! namespace of the member's profile; the JSON form holds the same text; outsiders and
//! unknown clusters get 404, a cluster that is not RUNNING 409. The real kubectl is the
//! oracle that the file is a kubeconfig: it reads it, names its context, and (with a
//! stand-in plugin on its PATH) lists the simulated cluster's namespaces through it.
//! Skipped with a message where kubectl is not installed, unless
//! KINETIC_REQUIRE_KUBECTL=1.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use kineticd::cloud::gcp::types::container::Cluster;
use kineticd::domain::ClusterState;
use kineticd::store;
use kineticd::store::clusters::ClusterRecord;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::gke::{create_cluster_and_wait, default_pool};
use crate::common::shell::stdout_of;
use crate::common::{Resp, TestApp};
use crate::support::{ACME_KC, ALICE, BOB, C, EVE, NOPE, P, Z, expect_error, expect_not_found};

const CREDENTIALS: &str = "/v1/projects/acme-project/zones/us-central1-a/clusters/kc/credentials";
const CONTEXT: &str = "gke_acme-project_us-central1-a_kc";

/// An app on the simulator: ALICE's team `acme` (BOB a VIEWER) with cluster `kc`
/// recorded RUNNING and created in the simulated GKE; the GKE cluster as it answers, and
/// the record.
pub(crate) async fn acme_kc() -> (TestApp, kineticd::sim::Sim, Cluster, ClusterRecord) {
    let (app, sim) = TestApp::spawn_sim().await;
    app.team(ALICE, "acme", &[P]).await;
    app.member(ALICE, "acme", BOB, "VIEWER").await;
    let rec = app.cluster("acme", P, Z, C).await;
    let cluster = Cluster {
        name: C.into(),
        node_pools: vec![default_pool()],
        ..Default::default()
    };
    let gcp = &app.state.cloud.gcp;
    let gke = create_cluster_and_wait(gcp, P, Z, &cluster, Duration::from_secs(120)).await;
    (app, sim, gke, rec)
}

/// `GET CREDENTIALS` as `user` with `accept` (none: no header).
async fn credentials(app: &TestApp, user: &str, path: &str, accept: Option<&str>) -> Resp {
    let mut req = app.request_as(user, Method::GET, path);
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    TestApp::read(req.send().await.expect("request")).await
}

fn header<'a>(r: &'a Resp, name: &str) -> &'a str {
    r.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// The YAML text of a 200 answer, parsed.
fn yaml(r: &Resp) -> (String, Value) {
    assert_eq!(r.status, 200, "{:#}", r.body);
    let text = r.body.as_str().expect("a YAML text body").to_owned();
    let v: Value = serde_saphyr::from_str(&text).expect("the kubeconfig parses as YAML");
    (text, v)
}

#[tokio::test]
async fn a_member_gets_gclouds_kubeconfig() {
    let (app, _sim, gke, _) = acme_kc().await;
    let r = credentials(&app, BOB, CREDENTIALS, None).await;
    assert_eq!(header(&r, "content-type"), "application/yaml");
    assert_eq!(header(&r, "cache-control"), "no-store");
    let (text, v) = yaml(&r);
    let endpoint = gke
        .endpoint
        .clone()
        .expect("the simulated GKE has an endpoint");
    let ca = gke.master_auth.and_then(|m| m.cluster_ca_certificate);
    assert!(ca.is_some(), "the simulated GKE has a CA");
    assert_eq!(
        v,
        json!({
            "apiVersion": "v1",
            "kind": "Config",
            "preferences": {},
            "current-context": CONTEXT,
            "clusters": [{"name": CONTEXT, "cluster": {
                "server": endpoint, "certificate-authority-data": ca}}],
            "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT}}],
            "users": [{"name": CONTEXT, "user": {"exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": "gke-gcloud-auth-plugin",
                "installHint": "Install gke-gcloud-auth-plugin for use with kubectl by following https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin",
                "provideClusterInfo": true}}}],
        }),
        "{text}"
    );

    // The JSON form holds the same text.
    let j = credentials(&app, BOB, CREDENTIALS, Some("application/json")).await;
    assert_eq!(j.status, 200, "{:#}", j.body);
    assert_eq!(header(&j, "cache-control"), "no-store");
    assert_eq!(j.body, json!({ "kubeconfig": text }));
    // An explicit YAML preference is YAML.
    let y = credentials(
        &app,
        BOB,
        CREDENTIALS,
        Some("application/yaml, application/json"),
    )
    .await;
    assert_eq!(yaml(&y).0, text);

    // With a profile of the cluster, its namespace is the context's.
    let p = app
        .put(
            BOB,
            "/v1/profiles/work",
            json!({"cluster": ACME_KC, "namespace": "bob-ns"}),
        )
        .await;
    assert_eq!(p.status, 200, "{:#}", p.body);
    let (text, v) = yaml(&credentials(&app, BOB, CREDENTIALS, None).await);
    assert_eq!(v["contexts"][0]["context"]["namespace"], "bob-ns", "{text}");
    // ALICE's answer does not take BOB's profile.
    let (_, v) = yaml(&credentials(&app, ALICE, CREDENTIALS, None).await);
    assert_eq!(v["contexts"][0]["context"].get("namespace"), None, "{v}");

    kubectl_reads(&text, &endpoint).await;
}

#[tokio::test]
async fn outsiders_and_unknown_clusters_get_404() {
    let (app, _sim, _, _) = acme_kc().await;
    let r = credentials(&app, EVE, CREDENTIALS, None).await;
    expect_not_found(&r, "PROJECT_NOT_FOUND");
    let r = credentials(&app, BOB, &format!("{NOPE}/credentials"), None).await;
    expect_not_found(&r, "CLUSTER_NOT_FOUND");
}

#[tokio::test]
async fn a_cluster_that_is_not_running_is_409() {
    let (app, _sim, _, rec) = acme_kc().await;
    for state in [
        ClusterState::Provisioning,
        ClusterState::Deleting,
        ClusterState::Error,
    ] {
        store::clusters::set_state(&app.db, rec.id, state, false)
            .await
            .expect("set state");
        let r = credentials(&app, BOB, CREDENTIALS, None).await;
        expect_error(&r, 409, "FAILED_PRECONDITION", "CLUSTER_STATE_NOT_RUNNING");
        assert_eq!(
            r.body["error"]["details"][0]["metadata"]["state"],
            state.as_str()
        );
    }
    // While `up` runs again the API server serves: credentials are given.
    store::clusters::set_state(&app.db, rec.id, ClusterState::Reconciling, true)
        .await
        .expect("set state");
    let r = credentials(&app, BOB, CREDENTIALS, None).await;
    assert_eq!(r.status, 200, "{:#}", r.body);
}

/// Whether kubectl runs here (false: skip, after saying so).
fn kubectl_here() -> bool {
    let ok = Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("KINETIC_REQUIRE_KUBECTL").as_deref() != Ok("1"),
            "kubectl is required (KINETIC_REQUIRE_KUBECTL=1) but does not run"
        );
        eprintln!("SKIPPED: kubectl is not installed (KINETIC_REQUIRE_KUBECTL=1 fails instead)");
    }
    ok
}

/// A directory of its own, removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `kubectl ARGS` with the kubeconfig `config` and `bin` first on its PATH; its stdout.
/// (Awaited: the simulator it talks to runs on this test's runtime.)
async fn kubectl(dir: &Path, bin: &Path, args: &[&str]) -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin.to_owned()];
    paths.extend(std::env::split_paths(&path));
    let mut cmd = tokio::process::Command::new("kubectl");
    cmd.args(args)
        .arg("--kubeconfig")
        .arg(dir.join("config"))
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .env("PATH", std::env::join_paths(paths).expect("PATH"));
    stdout_of(&mut cmd, &format!("kubectl {args:?}")).await
}

/// kubectl reads the kubeconfig `text` as written: its view of the file, its current
/// context, and a list of namespaces of the cluster at `endpoint` through it, the exec
/// plugin stood in for by a script answering the simulator's administrator token.
async fn kubectl_reads(text: &str, endpoint: &str) {
    if !kubectl_here() {
        return;
    }
    let dir = TempDir(std::env::temp_dir().join(format!(
        "kineticd-credentials-{}",
        uuid::Uuid::new_v4().simple()
    )));
    let bin = dir.0.join("bin");
    std::fs::create_dir_all(&bin).expect("bin dir");
    std::fs::write(dir.0.join("config"), text).expect("write kubeconfig");
    let plugin = bin.join("gke-gcloud-auth-plugin");
    std::fs::write(
        &plugin,
        "#!/bin/sh\nprintf '%s' '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"simulated\"}}'\n",
    )
    .expect("write plugin");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).expect("chmod");

    let view: Value = serde_json::from_str(
        &kubectl(&dir.0, &bin, &["config", "view", "-o", "json", "--raw"]).await,
    )
    .expect("kubectl config view: JSON");
    assert_eq!(view["current-context"], CONTEXT, "{view:#}");
    assert_eq!(
        view["clusters"][0]["cluster"]["server"], endpoint,
        "{view:#}"
    );
    assert_eq!(
        view["users"][0]["user"]["exec"]["command"], "gke-gcloud-auth-plugin",
        "{view:#}"
    );
    let current = kubectl(&dir.0, &bin, &["config", "current-context"]).await;
    assert_eq!(current.trim(), CONTEXT);
    let namespaces = kubectl(&dir.0, &bin, &["get", "namespaces", "-o", "name"]).await;
    assert!(
        namespaces.lines().any(|l| l == "namespace/default"),
        "{namespaces}"
    );
}
