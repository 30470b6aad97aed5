//! `.../clusters/{c}/status` and `.../clusters/{c}/accelerators` against the simulator:
//! resources created directly with the production clients, records inserted directly
//! (no `up`), drift (MISSING / UNRECORDED / DIFFERENT), per-resource errors, an
//! unreachable Kubernetes API, access rules, DELETED records, and `live` accelerators.

use std::collections::BTreeMap;
use std::time::Duration;

use kineticd::cloud::gcp::GcpClients;
use kineticd::cloud::gcp::types::artifact_registry::Repository;
use kineticd::cloud::gcp::types::compute::{self, Network};
use kineticd::cloud::gcp::types::container::{Cluster, NodePool};
use kineticd::cloud::gcp::types::storage::Bucket;
use kineticd::domain::resource_names::ClusterNames;
use kineticd::domain::{ClusterName, ProjectId, ZoneName};
use kineticd::sim::Sim;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::common::gke::{autoscaled_pool, create_cluster_and_wait, default_pool, gke_done};
use crate::common::{TestApp, fresh_db};
use crate::support::{ALICE, BOB, C, EVE, NOPE, P, Z, expect_error, expect_not_found, ok, pool};

const STATUS: &str = "/v1/projects/acme-project/zones/us-central1-a/clusters/kc/status";
const ACCELERATORS: &str = "/v1/projects/acme-project/zones/us-central1-a/clusters/kc/accelerators";
const WAIT: Duration = Duration::from_secs(120);

/// An app on the simulator where ALICE's team `acme` holds project P; its GCP clients.
async fn acme_on_sim() -> (TestApp, Sim, GcpClients) {
    let (app, sim) = TestApp::spawn_sim().await;
    app.team(ALICE, "acme", &[P]).await;
    let gcp = app.state.cloud.gcp.clone();
    (app, sim, gcp)
}

fn names() -> ClusterNames {
    ClusterNames::new(
        &ProjectId::parse(P).unwrap(),
        &ZoneName::parse(Z).unwrap(),
        &ClusterName::parse(C).unwrap(),
    )
}

/// A recorded pool's spec (the `model::NodePool` fields that status compares); spot
/// when the accelerator is spelt `...:spot`.
fn spec(accelerator: &str, min: i64, max: i64) -> Value {
    let spot = accelerator.ends_with(":spot");
    json!({"accelerator": accelerator, "kind": "GPU", "machineType": "g2-standard-4",
           "gkeAcceleratorType": "nvidia-l4", "acceleratorCount": 1,
           "minNodes": min, "maxNodes": max, "spot": spot, "reservation": null})
}

/// An L4 pool as GKE holds it: `nodes` nodes, autoscaling `nodes..nodes+10`.
fn l4_pool(name: &str, nodes: i32, spot: bool) -> NodePool {
    let mut pool = autoscaled_pool(name, "g2-standard-4", "nvidia-l4", 1, nodes);
    if let Some(config) = pool.config.as_mut() {
        config.spot = spot.then_some(true);
    }
    pool
}

async fn add_gke_pool(gcp: &GcpClients, pool: &NodePool) {
    let op = gcp
        .container
        .create_node_pool(P, Z, C, pool)
        .await
        .expect("create pool");
    gke_done(gcp, &op, WAIT, "pool done").await;
}

/// Wait for Compute Engine operation `op`, which must succeed; `what` names it.
async fn compute_done(gcp: &GcpClients, op: &compute::Operation, what: &str) {
    gcp.compute
        .wait_operation(op, &CancellationToken::new(), WAIT)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e:?}"));
}

async fn network(gcp: &GcpClients, n: &ClusterNames) {
    let net = Network {
        name: n.network.clone(),
        auto_create_subnetworks: Some(true),
        ..Default::default()
    };
    let op = gcp
        .compute
        .insert_network(P, &net, Uuid::new_v4())
        .await
        .expect("network");
    compute_done(gcp, &op, "network done").await;
}

/// Everything `up` would create for `kc`, made directly in the simulator, with the GKE
/// cluster holding `default-pool` and `pools`.
async fn provision(gcp: &GcpClients, pools: &[NodePool]) {
    let n = names();
    for (name, location) in [
        (&n.state_bucket, "US"),
        (&n.jobs_bucket, "US-CENTRAL1"),
        (&n.builds_bucket, "US"),
    ] {
        let b = Bucket {
            name: name.clone(),
            location: location.into(),
            ..Default::default()
        };
        gcp.storage.insert_bucket(P, &b).await.expect("bucket");
    }
    let repo = Repository {
        format: "DOCKER".into(),
        ..Default::default()
    };
    gcp.artifact_registry
        .create_repository(P, &n.repository_location, &n.repository, &repo)
        .await
        .expect("repository");
    network(gcp, &n).await;
    // The router and NAT exactly as `up` makes them.
    let router = kineticd::ops::workflows::cluster::wire::router(&n);
    let op = gcp
        .compute
        .insert_router(P, &n.region, &router, Uuid::new_v4())
        .await
        .expect("router");
    compute_done(gcp, &op, "router done").await;
    for id in [&n.node_sa_id, &n.build_sa_id] {
        gcp.iam
            .create_service_account(P, id, "", "")
            .await
            .expect("service account");
    }
    let mut node_pools = vec![default_pool()];
    node_pools.extend(pools.iter().cloned());
    let cluster = Cluster {
        name: C.into(),
        network: Some(n.network.clone()),
        node_pools,
        ..Default::default()
    };
    create_cluster_and_wait(gcp, P, Z, &cluster, WAIT).await;
}

/// The status `s` reports exactly one drift: `problem` of `resource`, of type `kind`.
#[track_caller]
fn assert_only_drift(s: &Value, problem: &str, kind: &str, resource: &str) {
    let want = (problem.to_owned(), kind.to_owned(), resource.to_owned());
    assert_eq!(drift(s), [want], "{s:#}");
}

/// The drift of the cloud resources (not access drift: these clusters were made in the
/// simulator, never synced; tests/provision/access_view.rs covers access drift).
fn drift(s: &Value) -> Vec<(String, String, String)> {
    s["drift"]
        .as_array()
        .unwrap_or_else(|| panic!("no drift array: {s:#}"))
        .iter()
        .filter(|d| !d["type"].as_str().unwrap_or("").starts_with("rbac."))
        .map(|d| {
            (
                d["problem"].as_str().unwrap_or("").to_owned(),
                d["type"].as_str().unwrap_or("").to_owned(),
                d["resource"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn status_reads_everything_live_and_reports_drift() {
    let (app, _sim, gcp) = acme_on_sim().await;
    let n = names();
    let rec = app.cluster("acme", P, Z, C).await;
    app.pool(rec.id, "gpu-l4-ab12", spec("gpu-l4", 1, 11)).await;
    provision(&gcp, &[l4_pool("gpu-l4-ab12", 1, false)]).await;

    // Everything present: no drift, live facts filled in.
    let s = ok(app.get(ALICE, STATUS).await);
    assert_eq!(drift(&s), [], "{s:#}");
    assert_eq!(
        s["name"],
        "projects/acme-project/zones/us-central1-a/clusters/kc"
    );
    assert!(
        chrono::DateTime::parse_from_rfc3339(s["checkTime"].as_str().unwrap()).is_ok(),
        "{s:#}"
    );
    assert_eq!(s["cluster"]["state"], "RUNNING");
    let gke = &s["cluster"]["gke"];
    assert_eq!(gke["exists"], true);
    assert_eq!(gke["status"], "RUNNING");
    assert_eq!(gke["location"], Z);
    assert!(gke["endpoint"].as_str().is_some_and(|e| !e.is_empty()));
    assert!(gke["currentMasterVersion"].is_string());
    assert_eq!(
        gke["name"],
        "projects/acme-project/locations/us-central1-a/clusters/kc"
    );
    for (which, location) in [("jobs", "US-CENTRAL1"), ("builds", "US"), ("state", "US")] {
        let b = &s["buckets"][which];
        assert_eq!(b["exists"], true, "{which}: {s:#}");
        assert_eq!(b["location"], location, "{which}");
        assert!(b.get("error").is_none(), "{which}");
    }
    assert_eq!(
        s["buckets"]["jobs"]["name"],
        format!("projects/_/buckets/{}", n.jobs_bucket)
    );
    assert_eq!(s["repository"]["exists"], true);
    assert_eq!(s["repository"]["format"], "DOCKER");
    assert_eq!(s["repository"]["location"], "us");
    assert_eq!(s["network"]["exists"], true);
    assert_eq!(s["router"]["exists"], true);
    assert_eq!(s["router"]["nat"]["exists"], true);
    assert_eq!(s["serviceAccounts"]["node"]["exists"], true);
    assert_eq!(s["serviceAccounts"]["build"]["exists"], true);
    assert_eq!(s["kubernetes"]["reachable"], true, "{s:#}");
    assert_eq!(s["nodePools"].as_array().unwrap().len(), 1, "{s:#}");
    let p = pool(&s, "gpu-l4-ab12");
    assert_eq!(p["recorded"], true);
    assert_eq!(p["recordState"], "RUNNING");
    assert_eq!(p["gkeStatus"], "RUNNING");
    assert_eq!(p["nodes"], json!({"ready": 1, "total": 1}));
    assert_eq!(p["acceleratorsAllocatable"], 1);
    assert_eq!(p["accelerator"], "gpu-l4");
    assert_eq!(s["defaultPool"]["poolId"], "default-pool");
    assert_eq!(s["defaultPool"]["recorded"], false);
    assert_eq!(s["defaultPool"]["nodes"]["total"], 1);

    // A deleted bucket is MISSING (the same action `up` would re-create).
    gcp.storage
        .delete_bucket(&n.jobs_bucket)
        .await
        .expect("delete bucket");
    let s = ok(app.get(ALICE, STATUS).await);
    assert_eq!(s["buckets"]["jobs"]["exists"], false);
    let bucket = format!("projects/_/buckets/{}", n.jobs_bucket);
    assert_only_drift(&s, "MISSING", "storage.bucket", &bucket);
    assert!(
        s["drift"][0]["message"]
            .as_str()
            .unwrap()
            .contains("re-creates")
    );

    // A GKE pool without a record is UNRECORDED (and listed, with its accelerator).
    add_gke_pool(&gcp, &l4_pool("gpu-l4-zz99", 1, false)).await;
    // A recorded pool GKE has with another shape is DIFFERENT.
    app.pool(rec.id, "gpu-l4-sp01", spec("gpu-l4:spot", 0, 10))
        .await;
    add_gke_pool(&gcp, &l4_pool("gpu-l4-sp01", 0, false)).await;
    // A recorded pool GKE does not have is MISSING.
    app.pool(rec.id, "gpu-l4-gone", spec("gpu-l4", 0, 10)).await;
    let s = ok(app.get(ALICE, STATUS).await);
    let d = drift(&s);
    let pools = "projects/acme-project/locations/us-central1-a/clusters/kc/nodePools";
    for want in [
        (
            "UNRECORDED",
            "container.nodePool",
            format!("{pools}/gpu-l4-zz99"),
        ),
        (
            "DIFFERENT",
            "container.nodePool",
            format!("{pools}/gpu-l4-sp01"),
        ),
        (
            "MISSING",
            "container.nodePool",
            format!("{pools}/gpu-l4-gone"),
        ),
        (
            "MISSING",
            "storage.bucket",
            format!("projects/_/buckets/{}", n.jobs_bucket),
        ),
    ] {
        let want = (want.0.to_owned(), want.1.to_owned(), want.2);
        assert!(d.contains(&want), "{want:?} not in {d:?}");
    }
    assert_eq!(d.len(), 4, "{d:?}");
    let different = s["drift"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["problem"] == "DIFFERENT")
        .unwrap();
    assert!(
        different["message"].as_str().unwrap().contains("spot"),
        "{different}"
    );
    let z = pool(&s, "gpu-l4-zz99");
    assert_eq!(z["recorded"], false);
    assert_eq!(z["accelerator"], "gpu-l4");
    assert_eq!(z["nodes"]["total"], 1);
    let gone = pool(&s, "gpu-l4-gone");
    assert_eq!(gone["recorded"], true);
    assert_eq!(gone["gkeStatus"], Value::Null);
    assert_eq!(gone["nodes"], json!({"ready": 0, "total": 0}));
    assert_eq!(s["nodePools"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn unreadable_resources_and_kubernetes_do_not_fail_the_request() {
    let (app, sim, gcp) = acme_on_sim().await;
    let rec = app.cluster("acme", P, Z, C).await;
    app.pool(rec.id, "gpu-l4-ab12", spec("gpu-l4", 1, 11)).await;
    provision(&gcp, &[l4_pool("gpu-l4-ab12", 1, false)]).await;

    let arm = |body: Value| {
        let url = format!("{}/sim/v1/faults", sim.url());
        async move {
            let r = kineticd::app::http_client()
                .unwrap()
                .post(url)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "{}", r.status());
        }
    };
    // Every time: a read is sent again within the request's budget before it is given up.
    arm(json!({"service": "storage", "method": "buckets.get", "kind": "HTTP_500"})).await;
    arm(json!({"service": "kube", "kind": "HTTP_503"})).await;
    let s = ok(app.get(ALICE, STATUS).await);
    for which in ["jobs", "builds", "state"] {
        let b = &s["buckets"][which];
        assert_eq!(b["exists"], Value::Null, "{which}: {s:#}");
        assert!(
            b["error"].as_str().is_some_and(|e| e.contains("500")),
            "{b}"
        );
    }
    assert_eq!(s["kubernetes"]["reachable"], false, "{s:#}");
    assert!(s["kubernetes"]["message"].is_string());
    let p = pool(&s, "gpu-l4-ab12");
    assert_eq!(p["gkeStatus"], "RUNNING");
    assert_eq!(p["nodes"], Value::Null);
    assert_eq!(p["acceleratorsAllocatable"], Value::Null);
    // Unknown is not missing.
    assert_eq!(drift(&s), [], "{s:#}");
}

#[tokio::test]
async fn viewers_read_status_and_others_get_404() {
    let (app, _sim, _) = acme_on_sim().await;
    app.member(ALICE, "acme", BOB, "VIEWER").await;
    app.cluster("acme", P, Z, C).await;

    // Nothing exists in the cloud: every resource is MISSING, Kubernetes unreachable.
    let s = ok(app.get(BOB, STATUS).await);
    assert_eq!(s["cluster"]["gke"]["exists"], false);
    assert_eq!(s["kubernetes"]["reachable"], false);
    let d = drift(&s);
    let types: Vec<&str> = d.iter().map(|x| x.1.as_str()).collect();
    for t in [
        "container.cluster",
        "compute.network",
        "compute.router",
        "artifactregistry.repository",
        "iam.serviceAccount",
        "storage.bucket",
    ] {
        assert!(types.contains(&t), "{t} not in {d:?}");
    }
    assert!(d.iter().all(|x| x.0 == "MISSING"), "{d:?}");

    for path in [STATUS, ACCELERATORS] {
        let r = app.get(EVE, path).await;
        expect_not_found(&r, "PROJECT_NOT_FOUND");
    }
    let r = app.get(ALICE, &format!("{NOPE}/status")).await;
    expect_not_found(&r, "CLUSTER_NOT_FOUND");
}

#[tokio::test]
async fn deleted_records_report_leftovers_only() {
    let (app, _sim, gcp) = acme_on_sim().await;
    let n = names();
    crate::teams::deleted_cluster(&app, "acme", P, C, json!({"forceDestroy": true})).await;
    // down leaves the state bucket on purpose; the network is a leftover.
    let b = Bucket {
        name: n.state_bucket.clone(),
        location: "US".into(),
        ..Default::default()
    };
    gcp.storage.insert_bucket(P, &b).await.unwrap();
    network(&gcp, &n).await;

    let s = ok(app.get(ALICE, STATUS).await);
    assert_eq!(s["cluster"]["state"], "DELETED");
    assert_eq!(s["cluster"]["gke"]["exists"], false);
    assert_eq!(s["buckets"]["state"]["exists"], true);
    let network = format!("projects/{P}/global/networks/{}", n.network);
    assert_only_drift(&s, "UNRECORDED", "compute.network", &network);
}

#[tokio::test]
async fn no_readable_cloud_is_503() {
    // The default test app's cloud points at a closed port.
    let (db, url) = fresh_db().await;
    let app = TestApp::spawn_with(db, url, |s| s).await;
    app.team(ALICE, "acme", &[P]).await;
    app.cluster("acme", P, Z, C).await;
    let r = app.get(ALICE, STATUS).await;
    expect_error(&r, 503, "UNAVAILABLE", "CLOUD_UNAVAILABLE");
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn cluster_accelerators_mark_recorded_pools_live() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[P]).await;
    app.member(ALICE, "acme", BOB, "VIEWER").await;
    let rec = app.cluster("acme", P, Z, C).await;
    app.pool(rec.id, "gpu-l4-ab12", spec("gpu-l4:spot", 0, 10))
        .await;
    app.pool(rec.id, "tpu-v5litepod-cd34", spec("tpu-v5litepod-16", 0, 4))
        .await;

    let r = ok(app.get(BOB, ACCELERATORS).await);
    let list = r["accelerators"].as_array().unwrap();
    let live: BTreeMap<&str, bool> = list
        .iter()
        .map(|a| (a["name"].as_str().unwrap(), a["live"].as_bool().unwrap()))
        .collect();
    let on: Vec<&str> = live.iter().filter(|(_, v)| **v).map(|(k, _)| *k).collect();
    assert_eq!(on, ["gpu-l4", "tpu-v5litepod-16"]);
    assert_eq!(live.len(), list.len(), "every entry has live");

    // The plain catalog has no `live`.
    let plain = ok(app.get(BOB, "/v1/accelerators").await);
    assert!(
        plain["accelerators"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a.get("live").is_none())
    );
}
