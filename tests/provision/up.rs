//! `up`: exactly the calls and bodies the reference implies (gpu-l4, tpu-v5litepod-16,
//! cpu), a second `up` that creates nothing, repair of a deleted resource, previews,
//! and the profile `up` saves.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::checks::names_flagged;
use crate::support::*;

/// The writes that create nothing: API enables, IAM policies, server-side applies.
const OTHER_WRITES: [(&str, &str); 3] = [
    ("serviceusage", "services.batchEnable"),
    ("cloudresourcemanager", "projects.setIamPolicy"),
    ("kube", "kube.apply"),
];

/// Every mutating method: [`CREATES`], then [`OTHER_WRITES`].
fn mutations() -> impl Iterator<Item = (&'static str, &'static str)> {
    CREATES.into_iter().chain(OTHER_WRITES)
}

/// 2xx counts of every mutating method, for comparing before/after.
async fn create_counts(env: &Env) -> Vec<usize> {
    let mut out = Vec::new();
    for (s, m) in mutations() {
        out.push(env.ok_calls(s, m).await.len());
    }
    out
}

/// An end later than any call of a test.
const EVER: &str = "9999-12-31T23:59:59Z";

/// The successful `service`/`method` calls made by `end` ([`Env::ok_calls_by`]).
async fn up_calls(env: &Env, end: &str, service: &str, method: &str) -> Vec<Value> {
    env.ok_calls_by(service, method, end).await
}

/// The one successful `service`/`method` call made by `end` (asserting there was
/// exactly one).
async fn only_call(env: &Env, end: &str, service: &str, method: &str) -> Value {
    let mut calls = up_calls(env, end, service, method).await;
    assert_eq!(calls.len(), 1, "{service} {method}: {calls:?}");
    calls.remove(0)
}

#[track_caller]
fn assert_path_has(call: &Value, text: &str) {
    let path = call["path"].as_str().unwrap_or_default();
    assert!(path.contains(text), "{path}");
}

fn body_of<'a>(calls: &'a [Value], path_has: &str) -> &'a Value {
    &calls
        .iter()
        .find(|e| {
            e["path"].as_str().unwrap_or("").contains(path_has)
                || e["body"].to_string().contains(path_has)
        })
        .unwrap_or_else(|| panic!("no call with {path_has}"))["body"]
}

fn labels_ok(l: &Value) {
    assert_eq!(l["kinetic"], "true", "{l}");
    assert_eq!(l["goog-packaged-solution"], "kinetic", "{l}");
}

#[tokio::test]
async fn up_with_gpu_l4_sends_exactly_the_reference_resources() {
    let env = env().await;
    let done = env.up_ok("kc", json!({"accelerator": "gpu-l4"})).await;
    // What `up` itself sent: the SYNC_ACCESS that follows it writes policies too.
    let end = done["metadata"]["endTime"]
        .as_str()
        .expect("endTime")
        .to_owned();
    let pool = done["response"]["nodePools"][0]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        pool.starts_with("gpu-l4-") && pool.len() == "gpu-l4-".len() + 4,
        "{pool}"
    );

    // APIs: the seven of the reference, once.
    let apis = only_call(&env, &end, "serviceusage", "services.batchEnable").await;
    let mut ids: Vec<&str> = apis["body"]["serviceIds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            "artifactregistry.googleapis.com",
            "cloudbuild.googleapis.com",
            "compute.googleapis.com",
            "container.googleapis.com",
            "iam.googleapis.com",
            "secretmanager.googleapis.com",
            "storage.googleapis.com"
        ]
    );

    // Buckets: state (US, versioned), jobs (region), builds (registry location); uniform
    // access; 30-day lifecycle on jobs and builds.
    let buckets = up_calls(&env, &end, "storage", "buckets.insert").await;
    assert_eq!(buckets.len(), 3);
    let state = body_of(&buckets, "ml-proj-kinetic-state");
    assert_eq!(state["location"], "US");
    assert_eq!(state["versioning"]["enabled"], true);
    assert_eq!(
        state["iamConfiguration"]["uniformBucketLevelAccess"]["enabled"],
        true
    );
    let jobs = body_of(&buckets, "ml-proj-kn-kc-jobs");
    assert_eq!(jobs["location"], "US-CENTRAL1");
    let builds = body_of(&buckets, "ml-proj-kn-kc-builds");
    assert_eq!(builds["location"], "US");
    for b in [jobs, builds] {
        assert_eq!(
            b["iamConfiguration"]["uniformBucketLevelAccess"]["enabled"],
            true
        );
        assert_eq!(b["lifecycle"]["rule"][0]["action"]["type"], "Delete");
        assert_eq!(b["lifecycle"]["rule"][0]["condition"]["age"], 30);
        labels_ok(&b["labels"]);
    }

    // Network (auto subnets), router with the NAT.
    let net = only_call(&env, &end, "compute", "networks.insert").await;
    assert_eq!(net["body"]["name"], "kn-kc");
    assert_eq!(net["body"]["autoCreateSubnetworks"], true);
    let router = only_call(&env, &end, "compute", "routers.insert").await;
    assert_path_has(&router, "/regions/us-central1/");
    let r = &router["body"];
    assert_eq!(r["name"], "kn-kc-router");
    assert!(
        r["network"]
            .as_str()
            .unwrap()
            .ends_with("/global/networks/kn-kc")
    );
    assert_eq!(r["nats"][0]["name"], "kn-kc-nat");
    assert_eq!(r["nats"][0]["natIpAllocateOption"], "AUTO_ONLY");
    assert_eq!(
        r["nats"][0]["sourceSubnetworkIpRangesToNat"],
        "ALL_SUBNETWORKS_ALL_IP_RANGES"
    );

    // Service accounts, repository.
    let sas = up_calls(&env, &end, "iam", "serviceAccounts.create").await;
    let mut sa_ids: Vec<&str> = sas
        .iter()
        .map(|e| e["body"]["accountId"].as_str().unwrap())
        .collect();
    sa_ids.sort();
    assert_eq!(sa_ids, ["kn-kc-builds", "kn-kc-nodes"]);
    let repo = only_call(&env, &end, "artifactregistry", "repositories.create").await;
    assert_path_has(&repo, "/locations/us/");
    assert!(
        repo["query"]
            .as_str()
            .unwrap()
            .contains("repositoryId=kn-kc")
    );
    assert_eq!(repo["body"]["format"], "DOCKER");

    // The GKE cluster.
    let cl = only_call(&env, &end, "container", "clusters.create").await;
    assert_path_has(&cl, "/locations/us-central1-a/");
    let c = &cl["body"]["cluster"];
    assert_eq!(c["name"], "kc");
    assert_eq!(c["releaseChannel"]["channel"], "STABLE");
    assert_eq!(c["network"], "kn-kc");
    assert_eq!(c["privateClusterConfig"]["enablePrivateNodes"], true);
    assert_eq!(c["privateClusterConfig"]["enablePrivateEndpoint"], false);
    assert_eq!(
        c["privateClusterConfig"]["masterIpv4CidrBlock"],
        "172.16.0.0/28"
    );
    assert_eq!(
        c["workloadIdentityConfig"]["workloadPool"],
        "ml-proj.svc.id.goog"
    );
    assert_eq!(c["addonsConfig"]["gcsFuseCsiDriverConfig"]["enabled"], true);
    labels_ok(&c["resourceLabels"]);
    let dp = &c["nodePools"][0];
    assert_eq!(dp["name"], "default-pool");
    assert_eq!(dp["initialNodeCount"], 1);
    assert_eq!(dp["config"]["machineType"], "e2-standard-4");
    assert_eq!(dp["config"]["diskSizeGb"], 50);

    // The accelerator pool.
    let np = only_call(&env, &end, "container", "nodePools.create").await;
    let p = &np["body"]["nodePool"];
    assert_eq!(p["name"], pool.as_str());
    assert_eq!(p["initialNodeCount"], 0);
    assert_eq!(p["autoscaling"]["enabled"], true);
    assert_eq!(p["autoscaling"]["minNodeCount"], 0);
    assert_eq!(p["autoscaling"]["maxNodeCount"], 10);
    assert_eq!(p["management"]["autoRepair"], true);
    assert_eq!(p["management"]["autoUpgrade"], true);
    let cfg = &p["config"];
    assert_eq!(cfg["machineType"], "g2-standard-4");
    assert_eq!(cfg["accelerators"][0]["acceleratorType"], "nvidia-l4");
    assert_eq!(cfg["accelerators"][0]["acceleratorCount"], "1");
    assert_eq!(
        cfg["serviceAccount"],
        "kn-kc-nodes@ml-proj.iam.gserviceaccount.com"
    );
    assert_eq!(
        cfg["oauthScopes"],
        json!(["https://www.googleapis.com/auth/cloud-platform"])
    );
    assert_eq!(cfg["workloadMetadataConfig"]["mode"], "GKE_METADATA");
    assert_eq!(cfg["maxRunDuration"], "86400s");
    labels_ok(&cfg["labels"]);
    assert!(
        cfg.get("spot").is_none() && cfg.get("reservationAffinity").is_none(),
        "{cfg}"
    );
    assert!(p.get("placementPolicy").is_none());

    // IAM: project roles of both accounts, bucket and repository roles, Workload Identity.
    let policy = env
        .ok_calls("cloudresourcemanager", "projects.setIamPolicy")
        .await;
    let last = &policy.last().unwrap()["body"]["policy"]["bindings"];
    let has = |bindings: &Value, role: &str, member: &str| {
        bindings.as_array().unwrap().iter().any(|b| {
            b["role"] == role && b["members"].as_array().unwrap().iter().any(|m| m == member)
        })
    };
    let node = "serviceAccount:kn-kc-nodes@ml-proj.iam.gserviceaccount.com";
    let build = "serviceAccount:kn-kc-builds@ml-proj.iam.gserviceaccount.com";
    for role in [
        "roles/logging.logWriter",
        "roles/monitoring.metricWriter",
        "roles/container.defaultNodeServiceAccount",
    ] {
        assert!(has(last, role, node), "{role} for node SA: {last}");
    }
    for role in [
        "roles/logging.logWriter",
        "roles/secretmanager.secretAccessor",
    ] {
        assert!(has(last, role, build), "{role} for build SA: {last}");
    }
    let bucket_policies = up_calls(&env, &end, "storage", "buckets.setIamPolicy").await;
    assert_eq!(bucket_policies.len(), 2);
    for b in &bucket_policies {
        for role in [
            "roles/storage.objectAdmin",
            "roles/storage.legacyBucketReader",
        ] {
            assert!(
                has(&b["body"]["bindings"], role, node) && has(&b["body"]["bindings"], role, build),
                "{b}"
            );
        }
    }
    let repo_policy = env
        .ok_calls("artifactregistry", "repositories.setIamPolicy")
        .await;
    let rb = &repo_policy.last().unwrap()["body"]["policy"]["bindings"];
    assert!(
        has(rb, "roles/artifactregistry.reader", node)
            && has(rb, "roles/artifactregistry.writer", build),
        "{rb}"
    );
    let wi = up_calls(&env, &end, "iam", "serviceAccounts.setIamPolicy").await;
    assert!(has(
        &wi.last().unwrap()["body"]["policy"]["bindings"],
        "roles/iam.workloadIdentityUser",
        "serviceAccount:ml-proj.svc.id.goog[default/kinetic]"
    ));

    // In the cluster: the KSA annotated for Workload Identity, LWS, the driver installer.
    let applied = up_calls(&env, &end, "kube", "kube.apply").await;
    let paths: Vec<&str> = applied
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with("/namespaces/default/serviceaccounts/kinetic")),
        "{paths:?}"
    );
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with("/namespaces/lws-system/deployments/lws-controller-manager"))
    );
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with("/namespaces/kube-system/daemonsets/nvidia-driver-installer"))
    );
    let ksa = body_of(&applied, "serviceaccounts/kinetic");
    assert_eq!(
        ksa["metadata"]["annotations"]["iam.gke.io/gcp-service-account"],
        "kn-kc-nodes@ml-proj.iam.gserviceaccount.com"
    );

    // Records: cluster RUNNING with resources and endpoint, pool RUNNING with its shape.
    let c = env.app.get(OWNER, &cluster_path("kc")).await.body;
    assert_eq!(c["state"], "RUNNING");
    assert_eq!(c["reconciling"], false);
    assert!(
        c["endpoint"]
            .as_str()
            .unwrap()
            .contains("/kube/ml-proj.us-central1-a.kc")
    );
    assert_eq!(
        c["resources"]["jobsBucket"],
        "projects/_/buckets/ml-proj-kn-kc-jobs"
    );
    assert_eq!(c["nodePools"][0]["poolId"], pool.as_str());
    assert_eq!(c["nodePools"][0]["state"], "RUNNING");
    assert_eq!(c["nodePools"][0]["maxNodes"], 10);

    // The profile named after the cluster, active for the caller.
    let profiles = env.app.get(OWNER, "/v1/profiles").await.body;
    let p = &profiles["profiles"][0];
    assert_eq!(p["profileId"], "kc");
    assert_eq!(
        p["cluster"],
        "projects/ml-proj/zones/us-central1-a/clusters/kc"
    );
    assert_eq!(p["active"], true);
    assert_eq!(p["stale"], false);

    // A second up creates nothing new, keeps the pool, says the accelerator is ignored.
    let before = create_counts(&env).await;
    let second = env
        .up_ok("kc", json!({"accelerator": "tpu-v5litepod-4"}))
        .await;
    let warnings = &second["metadata"]["plan"]["warnings"];
    assert!(
        warnings.to_string().contains("accelerator is ignored"),
        "{warnings}"
    );
    let after = create_counts(&env).await;
    // The only writes allowed: IAM read-modify-writes find nothing to add (no
    // setIamPolicy), batchEnable and server-side applies are idempotent by design.
    for (i, (s, m)) in mutations().enumerate() {
        if !["services.batchEnable", "kube.apply"].contains(&m) {
            assert_eq!(before[i], after[i], "{s} {m} called again by the second up");
        }
    }
    let pools = env.pools("kc").await;
    assert_eq!(pools["nodePools"].as_array().unwrap().len(), 1, "{pools}");
    let steps = second["metadata"]["progress"]["steps"].as_array().unwrap();
    assert!(steps.iter().all(|s| s["state"] == "DONE"));
}

#[tokio::test]
async fn up_with_a_multi_host_tpu_places_it_compactly_without_a_driver_installer() {
    let env = env().await;
    let done = env
        .up_ok(
            "tk",
            json!({"accelerator": "tpu-v5litepod-16", "minNodes": 4}),
        )
        .await;
    let np = only_call(&env, EVER, "container", "nodePools.create").await;
    let p = &np["body"]["nodePool"];
    assert!(p["name"].as_str().unwrap().starts_with("tpu-v5litepod-"));
    assert_eq!(p["initialNodeCount"], 4);
    assert_eq!(p["autoscaling"]["minNodeCount"], 4);
    assert_eq!(
        p["autoscaling"]["maxNodeCount"], 8,
        "min + hosts of one slice"
    );
    assert_eq!(p["config"]["machineType"], "ct5lp-hightpu-4t");
    assert_eq!(p["placementPolicy"]["type"], "COMPACT");
    assert_eq!(p["placementPolicy"]["tpuTopology"], "4x4");
    assert_eq!(p["config"]["maxRunDuration"], "86400s");
    assert!(
        p["config"].get("accelerators").is_none(),
        "TPUs come with the machine type"
    );
    let steps: Vec<&str> = done["metadata"]["progress"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(!steps.contains(&"nvidia-driver"), "{steps:?}");
    let applied = env.ok_calls("kube", "kube.apply").await;
    assert!(
        !applied
            .iter()
            .any(|e| e["path"].as_str().unwrap().contains("nvidia"))
    );
}

#[tokio::test]
async fn up_with_cpu_makes_a_cluster_without_accelerator_pools() {
    let env = env_up("cc").await;
    assert!(
        env.ok_calls("container", "nodePools.create")
            .await
            .is_empty()
    );
    assert_eq!(env.ok_calls("container", "clusters.create").await.len(), 1);
    let c = env.app.get(OWNER, &cluster_path("cc")).await.body;
    assert_eq!(c["state"], "RUNNING");
    assert_eq!(c["nodePools"], json!([]));
    assert!(
        !env.ok_calls("kube", "kube.apply")
            .await
            .iter()
            .any(|e| e["path"].as_str().unwrap().contains("nvidia"))
    );
}

/// Found by the long soak: in a European zone the registry's multi-region is `europe`,
/// which Cloud Storage refuses as a bucket location (its multi-region is `EU`); every
/// `up` there failed at the builds bucket.
#[tokio::test]
async fn up_in_a_european_zone_puts_the_builds_bucket_in_eu() {
    let env = env().await;
    let path = format!("/v1/projects/{PROJECT}/zones/europe-west4-a/clusters/eu");
    let r = env
        .app
        .put(OWNER, &path, json!({"accelerator": "cpu"}))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let done = env.done(&r.body).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    let inserts = env.ok_calls("storage", "buckets.insert").await;
    let location = |suffix: &str| {
        inserts
            .iter()
            .find(|e| e["body"]["name"].as_str().unwrap().ends_with(suffix))
            .map(|e| e["body"]["location"].clone())
            .unwrap_or_else(|| panic!("no {suffix} bucket in {inserts:?}"))
    };
    assert_eq!(location("-builds"), "EU");
    assert_eq!(location("-jobs"), "EUROPE-WEST4");
    let repo = only_call(&env, EVER, "artifactregistry", "repositories.create").await;
    assert!(
        repo["path"]
            .as_str()
            .unwrap()
            .contains("/locations/europe/"),
        "{repo}"
    );
}

#[tokio::test]
async fn a_second_up_repairs_a_deleted_bucket() {
    let env = env().await;
    env.up_ok("kr", json!({"accelerator": "gpu-l4", "forceDestroy": true}))
        .await;
    let gcp = env.gcp();
    gcp.storage
        .delete_bucket("ml-proj-kn-kr-jobs")
        .await
        .unwrap();
    let status = env.status("kr").await;
    assert!(
        status["drift"].to_string().contains("ml-proj-kn-kr-jobs"),
        "{status}"
    );
    // The preview says it will be re-created.
    env.preview_up("kr", json!({})).await;
    let done = env.up_ok("kr", json!({})).await;
    let step = op_step(&done, "jobs-bucket");
    assert_eq!(step["state"], "DONE");
    gcp.storage
        .get_bucket("ml-proj-kn-kr-jobs")
        .await
        .expect("the bucket is back");
    let status = env.status("kr").await;
    assert_eq!(status["drift"], json!([]), "{status}");
}

#[tokio::test]
async fn validate_only_returns_the_plan_and_changes_nothing() {
    let env = env().await;
    let plan = env
        .preview_up("kv", json!({"accelerator": "a100x4", "minNodes": 1}))
        .await;
    let actions = plan["actions"].as_array().unwrap();
    assert!(
        actions
            .iter()
            .all(|a| a["action"] == "CREATE" || a["action"] == "UPDATE"),
        "{plan}"
    );
    let pool = actions
        .iter()
        .find(|a| a["type"] == "container.nodePool")
        .unwrap();
    assert_eq!(pool["details"]["machineType"], "a2-highgpu-4g");
    assert_eq!(pool["details"]["maxNodes"], 11);
    assert!(
        plan["estimatedHourlyCost"]["atMin"].as_f64().unwrap() > 0.0,
        "{plan}"
    );
    // Nothing recorded, nothing queued, nothing sent to the cloud but reads.
    assert_eq!(
        env.app.get(OWNER, &cluster_path("kv")).await.status,
        StatusCode::NOT_FOUND
    );
    let ops = env.app.get(OWNER, "/v1/operations").await.body;
    assert_eq!(ops["operations"], json!([]), "{ops}");
    let journal = env.journal("", "").await;
    assert!(
        journal.iter().all(|e| e["httpMethod"] == "GET"),
        "{journal:?}"
    );
}

#[tokio::test]
async fn bad_up_requests_are_refused_before_anything_is_written() {
    let env = env().await;
    let cases = [
        (json!({}), "ACCELERATOR_REQUIRED"),
        (json!({"accelerator": "h101"}), "UNKNOWN_ACCELERATOR"),
        (
            json!({"accelerator": "l4", "spot": true, "reservation": "r1"}),
            "SPOT_WITH_RESERVATION",
        ),
        (
            json!({"accelerator": "tpu-v5litepod-16", "minNodes": 3}),
            "TPU_MIN_NODES_NOT_WHOLE_SLICES",
        ),
        (
            json!({"accelerator": "cpu", "minNodes": 2}),
            "NO_ACCELERATOR_POOL",
        ),
        (json!({"accelerator": "l4", "colour": "red"}), ""),
    ];
    for (body, reason) in cases {
        let r = env.app.put(OWNER, &cluster_path("kb"), body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        if !reason.is_empty() {
            assert_eq!(r.reason(), reason, "{body}: {}", r.body);
        }
    }
    let r = env
        .app
        .put(OWNER, &cluster_path("kb"), json!({"accelerator": "h101"}))
        .await;
    assert!(
        r.body["error"]["details"][0]["metadata"]["suggestions"]
            .as_str()
            .unwrap()
            .contains("h100"),
        "{}",
        r.body
    );
    assert_eq!(
        env.app.get(OWNER, &cluster_path("kb")).await.status,
        StatusCode::NOT_FOUND
    );
    assert!(
        env.journal("", "")
            .await
            .iter()
            .all(|e| e["httpMethod"] == "GET")
    );
}

#[tokio::test]
async fn status_after_up_reads_everything_live_with_no_drift() {
    let env = env().await;
    let done = env
        .up_ok("ks", json!({"accelerator": "gpu-l4x2", "minNodes": 1}))
        .await;
    let pool = done["response"]["nodePools"][0]
        .as_str()
        .unwrap()
        .to_owned();
    let s = env
        .app
        .get(OWNER, &format!("{}/status", cluster_path("ks")))
        .await;
    assert_eq!(s.status, StatusCode::OK, "{}", s.body);
    let s = s.body;
    assert_eq!(s["cluster"]["gke"]["status"], "RUNNING", "{s}");
    for b in ["jobs", "builds", "state"] {
        assert_eq!(s["buckets"][b]["exists"], true, "{b}: {s}");
    }
    assert_eq!(s["buckets"]["jobs"]["location"], "US-CENTRAL1");
    assert_eq!(s["repository"]["exists"], true);
    assert_eq!(s["repository"]["location"], "us");
    let p = s["nodePools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["poolId"] == pool.as_str())
        .cloned()
        .unwrap();
    assert_eq!(p["gkeStatus"], "RUNNING");
    assert_eq!(p["nodes"], json!({"ready": 1, "total": 1}), "{p}");
    assert_eq!(p["acceleratorsAllocatable"], 2, "{p}");
    assert_eq!(s["drift"], json!([]), "{s}");
    // The cluster's catalog marks the pool's accelerator live.
    let cat = env
        .app
        .get(OWNER, &format!("{}/accelerators", cluster_path("ks")))
        .await
        .body;
    let live = names_flagged(&cat, "accelerators", "live");
    assert_eq!(live, ["gpu-l4x2"]);
}

#[tokio::test]
async fn a_put_without_a_body_reconciles_an_existing_cluster() {
    let env = env().await;
    let r = env
        .app
        .call(OWNER, reqwest::Method::PUT, &cluster_path("ke"), None)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.reason(), "ACCELERATOR_REQUIRED");
    env.up_ok("ke", json!({"accelerator": "cpu"})).await;
    let r = env
        .app
        .call(OWNER, reqwest::Method::PUT, &cluster_path("ke"), None)
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    env.ok(&r.body).await;
}

#[tokio::test]
async fn a_second_up_restores_a_missing_cloud_nat() {
    let env = env_up("kn").await;
    // Someone removes the NAT: the router is rebuilt without it.
    let gcp = env.gcp();
    let mut bare = gcp
        .compute
        .get_router(PROJECT, "us-central1", "kn-kn-router")
        .await
        .unwrap();
    let op = gcp
        .compute
        .delete_router(PROJECT, "us-central1", "kn-kn-router", uuid::Uuid::new_v4())
        .await
        .unwrap();
    env.wait_compute(&op).await;
    bare.nats.clear();
    let bare = kineticd::cloud::gcp::types::compute::Router {
        name: bare.name,
        network: bare.network,
        description: bare.description,
        nats: Vec::new(),
        ..Default::default()
    };
    let op = gcp
        .compute
        .insert_router(PROJECT, "us-central1", &bare, uuid::Uuid::new_v4())
        .await
        .unwrap();
    env.wait_compute(&op).await;
    let status = env.status("kn").await;
    assert!(
        status["drift"].to_string().contains("kn-kn-router"),
        "{status}"
    );

    let done = env.up_ok("kn", json!({})).await;
    assert_eq!(
        done["response"]["outcomes"]["router"], "recreated",
        "{done}"
    );
    let r = gcp
        .compute
        .get_router(PROJECT, "us-central1", "kn-kn-router")
        .await
        .unwrap();
    assert_eq!(r.nats.len(), 1);
    assert_eq!(r.nats[0].name, "kn-kn-nat");
    let status = env.status("kn").await;
    assert_eq!(status["drift"], json!([]), "{status}");
}
