//! `down`: deletes what `up` made (emptying buckets unless forceDestroy is false), keeps
//! APIs, the state bucket and profiles (stale), ends DELETED; cleans a half-created
//! cluster; a later `up` of the same name works.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::*;

async fn down(env: &Env, name: &str) -> serde_json::Value {
    let r = env.app.delete(OWNER, &cluster_path(name)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["metadata"]["type"], "DOWN_CLUSTER");
    r.body
}

#[tokio::test]
async fn down_deletes_everything_up_made_but_the_apis_state_bucket_and_profiles() {
    let env = env().await;
    let first = env.up_ok("kd", json!({"accelerator": "gpu-l4"})).await;
    let gcp = env.gcp();
    for b in ["ml-proj-kn-kd-jobs", "ml-proj-kn-kd-builds"] {
        gcp.storage
            .upload_object(b, "data/x.txt", b"hello".to_vec(), "text/plain")
            .await
            .unwrap();
    }
    let op = down(&env, "kd").await;
    let done = env.ok(&op).await;
    for (service, method, n) in [
        ("storage", "buckets.delete", 2),
        ("storage", "objects.delete", 2),
        ("container", "nodePools.delete", 1),
        ("container", "clusters.delete", 1),
        ("compute", "routers.delete", 1),
        ("compute", "networks.delete", 1),
        ("iam", "serviceAccounts.delete", 2),
        ("artifactregistry", "repositories.delete", 1),
    ] {
        assert_eq!(
            env.ok_calls(service, method).await.len(),
            n,
            "{service} {method}"
        );
    }
    let deleted: Vec<String> = env
        .ok_calls("storage", "buckets.delete")
        .await
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        deleted.iter().all(|p| !p.contains("kinetic-state")),
        "{deleted:?}"
    );
    gcp.storage
        .get_bucket("ml-proj-kinetic-state")
        .await
        .expect("the state bucket stays");
    assert!(
        env.journal("serviceusage", "services.disable")
            .await
            .is_empty()
    );
    // Project roles revoked.
    let policy = env
        .ok_calls("cloudresourcemanager", "projects.setIamPolicy")
        .await;
    let last = policy.last().unwrap()["body"]["policy"].to_string();
    assert!(
        !last.contains("kn-kd-nodes") && !last.contains("kn-kd-builds"),
        "{last}"
    );
    // Records.
    let c = env.app.get(OWNER, &cluster_path("kd")).await;
    assert_eq!(c.status, StatusCode::OK);
    assert_eq!(c.body["state"], "DELETED");
    let live = env
        .app
        .get(OWNER, &format!("/v1/projects/{PROJECT}/zones/-/clusters"))
        .await
        .body;
    assert_eq!(
        live["clusters"],
        json!([]),
        "DELETED clusters are not listed"
    );
    let profiles = env.app.get(OWNER, "/v1/profiles").await.body;
    assert_eq!(profiles["profiles"][0]["profileId"], "kd");
    assert_eq!(profiles["profiles"][0]["stale"], true, "{profiles}");
    assert!(
        done["metadata"]["plan"]["warnings"]
            .to_string()
            .contains("state bucket")
    );
    // The same name comes back as a new cluster.
    let again = env.up_ok("kd", json!({"accelerator": "cpu"})).await;
    let c = env.app.get(OWNER, &cluster_path("kd")).await.body;
    assert_eq!(c["state"], "RUNNING");
    assert_ne!(again["metadata"]["target"], json!(null));
    assert_ne!(c["clusterId"], first["metadata"]["clusterId"]);
    let profiles = env.app.get(OWNER, "/v1/profiles").await.body;
    assert_eq!(profiles["profiles"][0]["stale"], false);
}

/// A bucket check that fails says "try again": 503 CLOUD_UNAVAILABLE with Retry-After
/// (it was 409 BUCKET_CHECK_FAILED, kept one release as `deprecatedReason`); nothing is
/// enqueued, and down goes through once the check does.
#[tokio::test]
async fn a_failed_bucket_check_is_unavailable_with_retry_after() {
    let env = env().await;
    env.up_ok("kb", json!({"accelerator": "cpu", "forceDestroy": false}))
        .await;
    env.arm("storage", "objects.list", "HTTP_403", 1).await;
    let r = env.app.delete(OWNER, &cluster_path("kb")).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
    assert_eq!(r.reason(), "CLOUD_UNAVAILABLE");
    let meta = &r.body["error"]["details"][0]["metadata"];
    assert_eq!(
        meta["deprecatedReason"], "BUCKET_CHECK_FAILED",
        "{}",
        r.body
    );
    assert_eq!(meta["method"], "objects.list", "{}", r.body);
    assert_eq!(r.headers["retry-after"], "5");
    let ops = env.operations_of("DOWN_CLUSTER").await;
    assert_eq!(ops["operations"], json!([]));
    env.ok(&down(&env, "kb").await).await;
}

#[tokio::test]
async fn force_destroy_false_refuses_at_once_naming_the_buckets() {
    let env = env().await;
    env.up_ok("kn", json!({"accelerator": "cpu", "forceDestroy": false}))
        .await;
    let c = env.app.get(OWNER, &cluster_path("kn")).await.body;
    assert_eq!(c["forceDestroy"], false);
    let gcp = env.gcp();
    gcp.storage
        .upload_object("ml-proj-kn-kn-builds", "img", b"x".to_vec(), "text/plain")
        .await
        .unwrap();
    let r = env.app.delete(OWNER, &cluster_path("kn")).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.reason(), "BUCKETS_NOT_EMPTY");
    assert_eq!(
        r.body["error"]["details"][0]["metadata"]["buckets"],
        "ml-proj-kn-kn-builds"
    );
    assert_message_has(&r, "ml-proj-kn-kn-builds");
    let ops = env.operations_of("DOWN_CLUSTER").await;
    assert_eq!(ops["operations"], json!([]));
    assert_eq!(env.api_state("kn").await, "RUNNING");
    // The down step itself refuses too if objects appear after the request.
    gcp.storage
        .delete_object("ml-proj-kn-kn-builds", "img")
        .await
        .unwrap();
    let op = down(&env, "kn").await;
    let done = env.done(&op).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    // forceDestroy can be changed by a later up; then down empties the buckets.
    env.up_ok("kn", json!({"accelerator": "cpu", "forceDestroy": false}))
        .await;
    gcp.storage
        .upload_object("ml-proj-kn-kn-jobs", "o", b"x".to_vec(), "text/plain")
        .await
        .unwrap();
    env.up_ok("kn", json!({"forceDestroy": true})).await;
    assert_eq!(
        env.app.get(OWNER, &cluster_path("kn")).await.body["forceDestroy"],
        true
    );
    env.ok(&down(&env, "kn").await).await;
}

#[tokio::test]
async fn down_cleans_up_exactly_what_a_failed_up_left() {
    let env = env().await;
    env.arm("container", "clusters.create", "QUOTA_EXCEEDED", 1)
        .await;
    let op = env.up("kh", json!({"accelerator": "gpu-l4"})).await;
    let failed = env.done(&op).await;
    assert_eq!(failed["metadata"]["state"], "FAILED", "{failed}");
    let details = &failed["error"]["details"][0];
    assert_eq!(details["metadata"]["step"], "cluster", "{failed}");
    assert_eq!(details["metadata"]["method"], "clusters.create");
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cluster"),
        "{failed}"
    );
    let c = env.app.get(OWNER, &cluster_path("kh")).await.body;
    assert_eq!(c["state"], "ERROR");
    let pool = &c["nodePools"][0];
    assert_eq!(pool["state"], "ERROR");

    // GKE reports the quota failure on the creation's operation and leaves the cluster
    // in ERROR; down deletes it.
    let gke = env
        .gcp()
        .container
        .get_cluster(PROJECT, ZONE, "kh")
        .await
        .unwrap();
    assert_eq!(gke.status.as_deref(), Some("ERROR"));

    let done = env.ok(&down(&env, "kh").await).await;
    let outcome = |id: &str| done["response"]["outcomes"][id].clone();
    assert_eq!(outcome("cluster"), "deleted");
    assert_eq!(
        outcome(&format!("pool:{}", pool["poolId"].as_str().unwrap())),
        "absent"
    );
    assert_eq!(outcome("network"), "deleted");
    assert_eq!(outcome("jobs-bucket"), "deleted");
    assert_eq!(env.ok_calls("container", "clusters.delete").await.len(), 1);
    assert_eq!(env.api_state("kh").await, "DELETED");
}

#[tokio::test]
async fn down_preview_lists_the_deletions_and_changes_nothing() {
    let env = env().await;
    env.up_ok("kw", json!({"accelerator": "gpu-l4"})).await;
    let before = env.journal("", "").await.len();
    let r = env
        .app
        .delete(OWNER, &format!("{}?validateOnly=true", cluster_path("kw")))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let actions = r.body["actions"].as_array().unwrap();
    assert!(actions.iter().all(|a| a["action"] == "DELETE"));
    let ids: Vec<&str> = actions.iter().map(|a| a["id"].as_str().unwrap()).collect();
    for must in [
        "jobs-bucket",
        "builds-bucket",
        "cluster",
        "router",
        "network",
        "node-sa",
        "build-sa",
        "repository",
    ] {
        assert!(ids.contains(&must), "{ids:?}");
    }
    assert!(!ids.contains(&"state-bucket") && !ids.contains(&"apis"));
    assert_eq!(env.journal("", "").await.len(), before);
    assert_eq!(env.api_state("kw").await, "RUNNING");
}

#[tokio::test]
async fn down_after_an_up_that_failed_before_the_cluster_deletes_only_what_exists() {
    let env = env().await;
    env.arm("compute", "networks.insert", "QUOTA_EXCEEDED", 1)
        .await;
    let failed = env
        .done(&env.up("kx", json!({"accelerator": "gpu-l4"})).await)
        .await;
    assert_eq!(failed["metadata"]["state"], "FAILED", "{failed}");
    let details = &failed["error"]["details"][0];
    assert_eq!(details["metadata"]["step"], "network");
    assert_eq!(details["metadata"]["service"], "compute");
    assert_eq!(details["metadata"]["method"], "networks.insert");
    assert_eq!(env.api_state("kx").await, "ERROR");
    let done = env.ok(&down(&env, "kx").await).await;
    let o = &done["response"]["outcomes"];
    for absent in ["cluster", "router", "network"] {
        assert_eq!(o[absent], "absent", "{absent}: {o}");
    }
    for deleted in [
        "jobs-bucket",
        "builds-bucket",
        "node-sa",
        "build-sa",
        "repository",
    ] {
        assert_eq!(o[deleted], "deleted", "{deleted}: {o}");
    }
    assert!(
        env.ok_calls("container", "clusters.delete")
            .await
            .is_empty()
    );
    assert!(env.ok_calls("compute", "networks.delete").await.is_empty());
    assert_eq!(env.api_state("kx").await, "DELETED");
}
