//! Ensure semantics at the edges: a resource with our name that is not ours stops `up`
//! with a clear error (and nothing of it is touched); a cancelled `up` ends at once,
//! leaving records that `down` and `up` both work from.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use kineticd::cloud::gcp::types::compute::Network;
use kineticd::cloud::gcp::types::storage::Bucket;

use crate::support::*;

/// `up` of `cluster` with `body` runs to its end and fails with `reason` at one of
/// `steps`; the failed operation.
async fn up_fails_at(env: &Env, cluster: &str, body: Value, reason: &str, steps: &[&str]) -> Value {
    let failed = env.done(&env.up(cluster, body).await).await;
    assert_eq!(failed["metadata"]["state"], "FAILED", "{failed}");
    let d = &failed["error"]["details"][0];
    assert_eq!(d["reason"], reason, "{failed}");
    let step = d["metadata"]["step"].as_str().unwrap_or_default();
    assert!(steps.contains(&step), "{step}");
    failed
}

#[tokio::test]
async fn foreign_resources_with_our_names_stop_up_clearly() {
    let env = env().await;
    let gcp = env.gcp();
    // Someone else's bucket and network where kineticd's would go.
    gcp.storage
        .insert_bucket(
            PROJECT,
            &Bucket {
                name: "ml-proj-kn-kf-jobs".into(),
                location: "US".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let op = gcp
        .compute
        .insert_network(
            PROJECT,
            &Network {
                name: "kn-kf".into(),
                auto_create_subnetworks: Some(false),
                ..Default::default()
            },
            uuid::Uuid::new_v4(),
        )
        .await
        .unwrap();
    env.wait_compute(&op).await;

    let body = json!({"accelerator": "cpu"});
    let steps = ["jobs-bucket", "network"];
    let failed = up_fails_at(&env, "kf", body, "RESOURCE_NOT_OURS", &steps).await;
    let msg = failed["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("ml-proj-kn-kf-jobs") || msg.contains("kn-kf"),
        "{msg}"
    );
    // Both refusals are in the steps; neither resource was modified or deleted.
    let steps = failed["metadata"]["progress"]["steps"].as_array().unwrap();
    let failed_steps: Vec<&str> = steps
        .iter()
        .filter(|s| s["state"] == "FAILED")
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(!failed_steps.is_empty());
    assert!(env.journal("storage", "buckets.delete").await.is_empty());
    assert!(env.journal("compute", "networks.delete").await.is_empty());
    assert!(
        env.ok_calls("container", "clusters.create")
            .await
            .is_empty(),
        "no cluster on a foreign network"
    );
    assert_eq!(env.api_state("kf").await, "ERROR");

    // Once the names are free, up again completes.
    gcp.storage
        .delete_bucket("ml-proj-kn-kf-jobs")
        .await
        .unwrap();
    let op = gcp
        .compute
        .delete_network(PROJECT, "kn-kf", uuid::Uuid::new_v4())
        .await
        .unwrap();
    env.wait_compute(&op).await;
    env.up_ok("kf", json!({})).await;
    assert_eq!(env.api_state("kf").await, "RUNNING");
}

#[tokio::test]
async fn a_cancelled_up_stops_at_once_and_down_cleans_up() {
    let env = explicit_clock().await;
    let o = env.up("kz", json!({"accelerator": "gpu-l4"})).await;
    // Wait until GKE is creating the cluster (the clock does not move: it never ends).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let cur = env.op(&o).await;
        let cluster = op_step(&cur, "cluster");
        if cluster["state"] == "RUNNING"
            && !env
                .ok_calls("container", "clusters.create")
                .await
                .is_empty()
        {
            break;
        }
        // Other LROs (network, router, repository) need time to pass too.
        env.advance(5.0).await;
        assert!(std::time::Instant::now() < deadline, "{cur}");
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let started = std::time::Instant::now();
    let r = env
        .app
        .post(
            OWNER,
            &format!("/v1/{}:cancel", o["name"].as_str().unwrap()),
            json!(null),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let done = env.done(&o).await;
    // Without the cancel, the frozen clock would keep the GKE wait going until its
    // 45-minute deadline; the bound only has to be far below that, whatever the load.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "cancel took {:?}",
        started.elapsed()
    );
    assert_eq!(done["metadata"]["state"], "CANCELLED", "{done}");
    assert_eq!(done["error"]["code"], 1);
    assert_eq!(env.api_state("kz").await, "ERROR");

    // down deletes the half-made cluster (time moves again).
    let d = env.app.delete(OWNER, &cluster_path("kz")).await;
    assert_eq!(d.status, StatusCode::ACCEPTED, "{}", d.body);
    let done = env.run_out(&d.body).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    assert_eq!(env.api_state("kz").await, "DELETED");
    assert!(
        env.gcp()
            .container
            .get_cluster(PROJECT, ZONE, "kz")
            .await
            .unwrap_err()
            .is_not_found()
    );
}

fn kube_steps(op: &Value) -> Vec<Value> {
    op["metadata"]["progress"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| ["ksa", "lws", "nvidia-driver"].contains(&s["id"].as_str().unwrap()))
        .cloned()
        .collect()
}

#[tokio::test]
async fn kubernetes_faults_fail_or_retry_the_in_cluster_steps() {
    // Terminal (403 Forbidden from the API server): the step that hit it fails, saying
    // so; up again completes, applying each object again (server-side apply: no-op).
    let env = env().await;
    env.arm("kube", "kube.apply", "QUOTA_EXCEEDED", 1).await;
    let body = json!({"accelerator": "gpu-l4"});
    let steps = ["ksa", "lws", "nvidia-driver"];
    let failed = up_fails_at(&env, "kk", body, "CLOUD_PERMISSION_DENIED", &steps).await;
    let meta = &failed["error"]["details"][0]["metadata"];
    assert_eq!(meta["service"], "kubernetes");
    // The API server's own reason is kept, not answered as kineticd's.
    assert_eq!(meta["cloudReason"], "Forbidden", "{failed}");
    assert_eq!(meta["deprecatedReason"], "Forbidden", "{failed}");
    env.up_ok("kk", json!({})).await;
    let applied = env.ok_calls("kube", "kube.apply").await;
    let ksa = applied
        .iter()
        .filter(|e| {
            e["path"]
                .as_str()
                .unwrap()
                .ends_with("/serviceaccounts/kinetic")
        })
        .count();
    assert!((1..=2).contains(&ksa), "{ksa}");
    assert_eq!(env.api_state("kk").await, "RUNNING");

    // Retryable (503): the object's apply is sent again (by the apply itself, or by the
    // runner retrying the step once the apply's own tries are spent); the operation
    // succeeds and every faulted apply was followed by a successful one.
    let env = crate::support::env().await;
    env.arm("kube", "kube.apply", "HTTP_503", 2).await;
    let done = env.up_ok("kr", json!({"accelerator": "gpu-l4"})).await;
    let applies = env.journal("kube", "kube.apply").await;
    let faulted: Vec<&Value> = applies.iter().filter(|e| e["status"] == 503).collect();
    assert_eq!(faulted.len(), 2, "{applies:#?}");
    for f in faulted {
        assert!(
            env.ok_calls("kube", "kube.apply")
                .await
                .iter()
                .any(|e| e["path"] == f["path"]),
            "{} was never applied: {:?}",
            f["path"],
            kube_steps(&done)
        );
    }
    assert_eq!(env.ok_calls("container", "clusters.create").await.len(), 1);
}
