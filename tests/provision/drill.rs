//! The failover drill (`POST .../nodePools/{pool}:drill`) end to end: a failover pair
//! (spot preferred through its ComputeClass) with a GPU Deployment on its spot pool, reclaimed through Compute's managed
//! instance groups (or by deleting and re-creating the pool), watched through the
//! cluster's Kubernetes API until the pods run on the fallback and spot capacity is
//! back; a workload that cannot fail over (no on-demand quota) ending at the drill's deadline;
//! refusals.
//!
//! The simulator's clock is explicit: the test moves it on while the drill runs (scale-up
//! and the spot pool's backoff are virtual minutes); the drill stamps what it sees with
//! real time.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kineticd::cloud::gcp::compute::mig::MigRef;
use kineticd::cloud::gcp::types::mig::DeleteInstancesRequest;
use kineticd::cloud::kube::{ClusterAccess, KubeCluster};
use kube::Api;
use kube::api::PostParams;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::Resp;
use crate::support::{Env, OWNER, PROJECT, ZONE, cluster_path, explicit_clock, op_step};

/// A RUNNING cluster `name` with a failover pair (spot kept at 2 nodes); (spot, fallback).
async fn pair(env: &Env, name: &str) -> (String, String) {
    let op = env.up(name, json!({"accelerator": "cpu"})).await;
    assert_eq!(env.run_out(&op).await["metadata"]["state"], "SUCCEEDED");
    let op = env
        .add_pool(
            name,
            json!({"accelerator": "l4", "failover": true, "minNodes": 2}),
        )
        .await;
    assert_eq!(env.run_out(&op).await["metadata"]["state"], "SUCCEEDED");
    let pools = env.pools(name).await;
    let id = |spot: bool| {
        pools["nodePools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["spot"] == spot)
            .and_then(|p| p["poolId"].as_str())
            .unwrap()
            .to_owned()
    };
    (id(true), id(false))
}

/// [`pair`] on an explicit clock with [`workload`] running on it; (env, pair, its
/// Kubernetes side).
async fn drill_ready(name: &str) -> (Env, (String, String), KubeCluster) {
    let env = explicit_clock().await;
    let pair = pair(&env, name).await;
    let k = kube_of(&env, name).await;
    workload(&env, &k, name).await;
    (env, pair, k)
}

async fn kube_of(env: &Env, name: &str) -> KubeCluster {
    let gke = env.gke_cluster(name).await;
    let access = ClusterAccess::for_gke(&gke).expect("endpoint");
    env.app.state.cloud.kube.cluster(access)
}

/// A Deployment of two replicas asking for a GPU each, written as people write it (the
/// count a number, a limit only) and selecting the pair's ComputeClass: GKE's admission
/// adds the class and GPU tolerations, the class prefers the spot pool.
async fn workload(env: &Env, k: &KubeCluster, cluster: &str) {
    let class =
        env.pools(cluster).await["nodePools"][0]["labels"]["cloud.google.com/compute-class"]
            .as_str()
            .expect("the pair's class label")
            .to_owned();
    let api: Api<Deployment> = Api::namespaced(k.client().await.expect("client"), "default");
    let d: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "infer"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "infer"}},
            "template": {
                "metadata": {"labels": {"app": "infer"}},
                "spec": {
                    "nodeSelector": {"cloud.google.com/compute-class": class},
                    "containers": [{"name": "infer", "image": "us-docker.pkg.dev/x/infer:1",
                                    "resources": {"limits": {"nvidia.com/gpu": 1}}}]
                }
            }
        }
    }))
    .unwrap();
    api.create(&PostParams::default(), &d)
        .await
        .expect("create deployment");
}

/// Arm the region's on-demand L4 quota at what is used: the fallback pool cannot grow.
async fn no_on_demand_quota(env: &Env) {
    let r = env
        .app
        .http
        .post(format!("{}/sim/v1/quotas", env.sim.url()))
        .json(&json!({"region": "us-central1", "metric": "NVIDIA_L4_GPUS", "limit": 0.0}))
        .send()
        .await
        .expect("set quota");
    assert!(r.status().is_success(), "{}", r.status());
}

/// Nodes of the pods named `infer-*` (None: not running).
async fn placements(k: &KubeCluster) -> Vec<(String, Option<String>)> {
    k.pods(Some("default"))
        .await
        .expect("pods")
        .into_iter()
        .filter(|p| p.name.starts_with("infer-"))
        .map(|p| (p.phase.clone(), p.node))
        .collect()
}

/// POST a drill of `pool` of `cluster`, as the owner.
async fn post_drill(env: &Env, cluster: &str, pool: &str, body: Value) -> Resp {
    env.app.post(OWNER, &drill_path(cluster, pool), body).await
}

fn drill_path(cluster: &str, pool: &str) -> String {
    format!("{}/nodePools/{pool}:drill", cluster_path(cluster))
}

/// The drill once its watch is running and has looked at least once (the clock held).
async fn watching(env: &Env, op: &Value) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let cur = env.op(op).await;
        if op_step(&cur, "drill-watch")["state"] == "RUNNING" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "watch never started: {cur}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The watch polls every 500 ms in tests (the provisioning steps' Kubernetes wait).
    tokio::time::sleep(Duration::from_millis(1200)).await;
}

fn phases(timeline: &Value) -> Vec<String> {
    let events = timeline.as_array().expect("timeline");
    let times: Vec<chrono::DateTime<chrono::Utc>> = events
        .iter()
        .map(|e| e["time"].as_str().unwrap().parse().expect("RFC 3339"))
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "times in order: {timeline}"
    );
    events
        .iter()
        .map(|e| e["phase"].as_str().unwrap().to_owned())
        .collect()
}

fn seconds(d: &Value) -> f64 {
    d.as_str()
        .and_then(|s| s.strip_suffix('s'))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a duration: {d}"))
}

#[tokio::test]
async fn a_drill_reclaims_the_spot_vms_and_times_the_failover() {
    let (env, (spot, fallback), k) = drill_ready("kd").await;
    let before = placements(&k).await;
    assert_eq!(before.len(), 2);
    for (phase, node) in &before {
        assert_eq!(phase, "Running");
        assert!(
            node.as_deref()
                .unwrap()
                .starts_with(&format!("gke-{spot}-")),
            "{before:?}"
        );
    }

    // Preview, then the drill named by the fallback pool: the spot one is reclaimed.
    let r = env
        .app
        .post(
            OWNER,
            &format!("{}?validateOnly=true", drill_path("kd", &fallback)),
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let ids = crate::common::ids(&r.body, "actions", "id");
    assert_eq!(ids, ["drill-reclaim", "drill-watch"]);
    assert!(
        env.journal("compute", "instanceGroupManagers.deleteInstances")
            .await
            .is_empty()
    );

    let r = post_drill(&env, "kd", &fallback, json!({})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["metadata"]["type"], "FAILOVER_DRILL");
    assert!(
        r.body["metadata"]["target"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/nodePools/{spot}"))
    );
    watching(&env, &r.body).await;
    let done = env.run_out_by(&r.body, 10.0).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    let rep = &done["response"];
    assert_eq!(
        phases(&rep["timeline"]),
        [
            "RECLAIM_STARTED",
            "SPOT_NODES_GONE",
            "PODS_PENDING",
            "FALLBACK_SCALED_UP",
            "PODS_RUNNING",
            "SPOT_CAPACITY_BACK"
        ],
        "{rep}"
    );
    assert_eq!(
        (rep["podsAffected"].as_u64(), rep["podsRecovered"].as_u64()),
        (Some(2), Some(2)),
        "{rep}"
    );
    assert_eq!(rep["podsNeverRecovered"], 0);
    assert_eq!(rep["fallbackNodesAdded"], 2, "one L4 node per pod: {rep}");
    assert!(seconds(&rep["timeToRecovery"]) > 0.0, "{rep}");
    assert_eq!(rep["hourlyCostOnFallback"]["currency"], "USD");
    assert!(
        rep["hourlyCostOnFallback"]["amount"].as_f64().unwrap() > 0.0,
        "{rep}"
    );
    assert_eq!(
        (rep["spotPool"].as_str(), rep["mode"].as_str()),
        (Some(spot.as_str()), Some("RECLAIM_NODES"))
    );

    // What Compute was asked: list the group's VMs, delete them by URL.
    let lists = env
        .ok_calls("compute", "instanceGroupManagers.listManagedInstances")
        .await;
    assert_eq!(lists.len(), 1, "one zone, one group");
    let deletes = env
        .ok_calls("compute", "instanceGroupManagers.deleteInstances")
        .await;
    assert_eq!(deletes.len(), 1);
    let body = &deletes[0]["body"];
    assert_eq!(body["skipInstancesOnValidationError"], true);
    let urls = body["instances"].as_array().unwrap();
    assert_eq!(urls.len(), 2);
    assert!(
        urls.iter().all(|u| u
            .as_str()
            .unwrap()
            .contains(&format!("/zones/{ZONE}/instances/gke-{spot}-"))),
        "{body}"
    );

    // Spot is back, so the class's active migration has moved the pods back to it; the
    // pair's records are as they were.
    let after = placements(&k).await;
    assert_eq!(after.len(), 2, "{after:?}");
    for (phase, node) in &after {
        assert_eq!(phase, "Running");
        let node = node.as_deref().unwrap();
        assert!(node.starts_with(&format!("gke-{spot}-")), "{after:?}");
    }
    for p in env.pools("kd").await["nodePools"].as_array().unwrap() {
        assert_eq!(p["state"], "RUNNING", "{p}");
    }
    assert_eq!(env.api_state("kd").await, "RUNNING");
}

#[tokio::test]
async fn delete_pool_mode_deletes_and_recreates_the_spot_pool_exactly() {
    let (env, (spot, _), _) = drill_ready("kp").await;
    let r = post_drill(
        &env,
        "kp",
        &spot,
        json!({"mode": "DELETE_POOL", "deadline": "600s"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let done = env.run_out_by(&r.body, 10.0).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    let rep = &done["response"];
    assert_eq!(rep["mode"], "DELETE_POOL");
    let seen = phases(&rep["timeline"]);
    assert_eq!(seen[..2], ["RECLAIM_STARTED", "SPOT_NODES_GONE"], "{rep}");
    assert!(
        seen.contains(&"PODS_RUNNING".to_owned())
            && seen.contains(&"SPOT_CAPACITY_BACK".to_owned()),
        "{rep}"
    );
    assert_eq!(
        (rep["podsAffected"].as_u64(), rep["podsRecovered"].as_u64()),
        (Some(2), Some(2)),
        "{rep}"
    );

    let deleted = env.ok_calls("container", "nodePools.delete").await;
    assert_eq!(deleted.len(), 1);
    assert!(
        deleted[0]["path"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/nodePools/{spot}"))
    );
    let created: Vec<Value> = env
        .ok_calls("container", "nodePools.create")
        .await
        .into_iter()
        .filter(|e| e["body"]["nodePool"]["name"] == spot.as_str())
        .map(|e| e["body"].clone())
        .collect();
    assert_eq!(created.len(), 2, "added, then re-created by the drill");
    assert_eq!(created[0], created[1], "the same body");
    assert!(
        env.journal("compute", "instanceGroupManagers.deleteInstances")
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn a_workload_that_cannot_fail_over_ends_at_the_deadline_never_recovered() {
    let env = explicit_clock().await;
    let (spot, fallback) = pair(&env, "kq").await;
    let k = kube_of(&env, "kq").await;
    // The region has no on-demand L4 quota left: the fallback pool cannot scale up.
    no_on_demand_quota(&env).await;
    workload(&env, &k, "kq").await;
    let r = post_drill(&env, "kq", &spot, json!({"deadline": "3s"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    watching(&env, &r.body).await;
    // Two virtual minutes: past the autoscaler's delay, short of spot capacity's return.
    for _ in 0..4 {
        env.advance(30.0).await;
    }
    let done = env.done(&r.body).await;
    assert_eq!(done["metadata"]["state"], "FAILED", "{done}");
    let error = &done["error"];
    assert_eq!(error["code"], 4, "DEADLINE_EXCEEDED: {error}");
    let info = &error["details"][0];
    assert_eq!(info["reason"], "DRILL_DEADLINE_EXCEEDED", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("2 of 2 pods never ran again"), "{message}");
    assert!(
        message.contains("the fallback pool added no node"),
        "{message}"
    );
    assert_eq!(info["metadata"]["step"], "drill-watch");
    assert_eq!(info["metadata"]["podsNeverRecovered"], "2");
    let rep: Value = serde_json::from_str(info["metadata"]["report"].as_str().unwrap()).unwrap();
    // The same report as a typed detail beside the ErrorInfo.
    let typed = &error["details"][1];
    assert_eq!(typed["@type"], "DrillReport", "{error}");
    assert_eq!(typed["timeline"], rep["timeline"]);
    assert_eq!(typed["podsNeverRecovered"], 2);
    assert_eq!(
        phases(&rep["timeline"]),
        ["RECLAIM_STARTED", "SPOT_NODES_GONE", "PODS_PENDING"],
        "{rep}"
    );
    assert_eq!(
        (
            rep["podsAffected"].as_u64(),
            rep["podsNeverRecovered"].as_u64()
        ),
        (Some(2), Some(2))
    );
    assert_eq!(rep["fallbackNodesAdded"], 0);
    assert!(rep.get("timeToRecovery").is_none());
    assert!(
        placements(&k)
            .await
            .iter()
            .all(|(phase, _)| phase == "Pending")
    );
    // A failed drill leaves the pair as it was recorded.
    for p in env.pools("kq").await["nodePools"].as_array().unwrap() {
        assert_eq!(p["state"], "RUNNING", "{p}");
    }
    assert!(
        env.pools("kq").await["nodePools"]
            .to_string()
            .contains(&fallback)
    );
}

#[tokio::test]
async fn drills_are_refused_without_a_pair_or_with_bad_input() {
    let env = explicit_clock().await;
    let op = env.up("kr", json!({"accelerator": "gpu-l4"})).await;
    let done = env.run_out(&op).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED");
    let lone = env.pools("kr").await["nodePools"][0]["poolId"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = post_drill(&env, "kr", &lone, json!({})).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.body["error"]["status"], "FAILED_PRECONDITION");
    assert_eq!(r.body["error"]["details"][0]["reason"], "NO_FAILOVER_PAIR");

    let bad = [
        (
            json!({"mode": "PREEMPT"}),
            "INVALID_DRILL_MODE",
            "RECLAIM_NODES",
        ),
        (
            json!({"deadline": "0s"}),
            "INVALID_DEADLINE",
            "between 1s and",
        ),
        (
            json!({"deadline": "soon"}),
            "INVALID_DEADLINE",
            "duration like",
        ),
        (json!({"deadline": "99999s"}), "INVALID_DEADLINE", "limit"),
    ];
    for (body, reason, says) in bad {
        let r = post_drill(&env, "kr", &lone, body.clone()).await;
        crate::support::assert_refused(&r, &body, reason, says);
    }
    let r = post_drill(&env, "kr", &lone, json!({"mood": "calm"})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    crate::support::assert_message_has(&r, "mood");
    let r = post_drill(&env, "kr", "gpu-l4-ffff", json!({})).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let r = env
        .app
        .post(
            OWNER,
            &format!("{}/nodePools/{lone}:shake", cluster_path("kr")),
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let r = env.app.get(OWNER, &drill_path("kr", &lone)).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{}", r.body);
    assert!(
        env.operations_of("FAILOVER_DRILL").await["operations"]
            .as_array()
            .is_none_or(|a| a.is_empty())
    );
}

#[tokio::test]
async fn a_running_drill_is_cancelled_at_once_and_the_groups_answer_as_compute_does() {
    let (env, (spot, _), _) = drill_ready("kc").await;

    // The simulator's groups, through the production client: the pool's VMs by URL;
    // a VM that is not a member is refused unless skipped; an unknown group is 404.
    let gcp = env.gcp();
    let np = gcp
        .container
        .get_node_pool(PROJECT, ZONE, "kc", &spot)
        .await
        .expect("pool");
    assert_eq!(np.instance_group_urls.len(), 1, "one zone");
    let mig = MigRef::parse(&np.instance_group_urls[0]).expect("a zonal group");
    let vms = gcp
        .compute
        .list_managed_instances(&mig)
        .await
        .expect("list");
    assert_eq!(vms.len(), 2, "{vms:?}");
    assert!(
        vms[0]
            .instance
            .as_deref()
            .unwrap()
            .contains(&format!("/zones/{ZONE}/instances/gke-{spot}-"))
    );
    let stranger = DeleteInstancesRequest {
        instances: vec![format!("zones/{ZONE}/instances/not-a-member")],
        skip_instances_on_validation_error: None,
    };
    let e = gcp
        .compute
        .delete_instances(&mig, &stranger, uuid::Uuid::new_v4())
        .await
        .expect_err("not a member");
    assert_eq!(e.http_status, 400, "{e}");
    let skipped = DeleteInstancesRequest {
        skip_instances_on_validation_error: Some(true),
        ..stranger
    };
    let id = uuid::Uuid::new_v4();
    let op = gcp
        .compute
        .delete_instances(&mig, &skipped, id)
        .await
        .expect("skipped");
    assert!(op.is_done() && op.error.is_none(), "{op:?}");
    let again = gcp
        .compute
        .delete_instances(&mig, &skipped, id)
        .await
        .unwrap();
    assert_eq!(
        again.name, op.name,
        "a repeated requestId returns its operation"
    );
    assert_eq!(
        gcp.compute
            .list_managed_instances(&mig)
            .await
            .unwrap()
            .len(),
        2,
        "nothing deleted"
    );
    let unknown = MigRef {
        name: "gke-kc-nope-grp".into(),
        ..mig.clone()
    };
    let e = gcp
        .compute
        .list_managed_instances(&unknown)
        .await
        .expect_err("unknown group");
    assert_eq!(e.http_status, 404, "{e}");

    // A drill that cannot finish (pods pinned to spot, the clock held) stops at a cancel.
    let r = post_drill(&env, "kc", &spot, json!({})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    watching(&env, &r.body).await;
    let name = r.body["name"].as_str().unwrap();
    let c = env.app.op_action(OWNER, name, "cancel").await;
    assert_eq!(c.status, StatusCode::OK, "{}", c.body);
    let done = env.done(&r.body).await;
    assert_eq!(done["metadata"]["state"], "CANCELLED", "{done}");
    for p in env.pools("kc").await["nodePools"].as_array().unwrap() {
        assert_eq!(p["state"], "RUNNING", "{p}");
    }
}
