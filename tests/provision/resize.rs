//! Pool resize (`PATCH .../nodePools/{pool}`, UPDATE_NODE_POOL) end to end: GKE's
//! `nodePools.setAutoscaling` body as the journal saw it, the record updated, the
//! simulated nodes following the new bounds; previews that queue nothing; the quota
//! pre-check on growth; a failover pair resized together; AIP-134 update masks; whole
//! TPU slices; refusals for missing and busy pools; an idempotent repeat.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::entry;
use crate::support::*;

/// `PATCH`, asserting 202, and run the operation to success.
async fn resize_ok(env: &Env, cluster: &str, pool: &str, query: &str, body: Value) -> Value {
    let r = env.patch_pool(cluster, pool, query, body).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["metadata"]["type"], "UPDATE_NODE_POOL");
    env.ok(&r.body).await
}

/// A cluster without accelerators plus one pool added with `body`; returns the pool ids.
async fn cluster_with_pool(env: &Env, cluster: &str, body: Value) -> Vec<String> {
    env.up_ok(cluster, json!({"accelerator": "cpu"})).await;
    let done = env.ok(&env.add_pool(cluster, body).await).await;
    done["response"]["nodePools"]
        .as_array()
        .expect("pools")
        .iter()
        .map(|p| p.as_str().expect("pool id").to_owned())
        .collect()
}

/// Nodes (total) of a pool as the cluster's status reads them live.
async fn nodes(env: &Env, cluster: &str, id: &str) -> u64 {
    let s = env.status(cluster).await;
    s["nodePools"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["poolId"] == id))
        .and_then(|p| p["nodes"]["total"].as_u64())
        .unwrap_or_else(|| panic!("no node count for {id}: {s}"))
}

/// Successful setAutoscaling calls, as (pool name from the path, body).
async fn set_autoscaling_calls(env: &Env) -> Vec<(String, Value)> {
    env.ok_calls("container", "nodePools.setAutoscaling")
        .await
        .into_iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap_or_default().to_owned(),
                e["body"].clone(),
            )
        })
        .collect()
}

/// A pool record's (minNodes, maxNodes).
fn bounds(p: &Value) -> (Option<i64>, Option<i64>) {
    (p["minNodes"].as_i64(), p["maxNodes"].as_i64())
}

fn gke_pool(cluster: &str, id: &str) -> String {
    format!("projects/ml-proj/locations/us-central1-a/clusters/{cluster}/nodePools/{id}")
}

#[tokio::test]
async fn resize_up_then_down_sets_gke_autoscaling_the_record_and_the_nodes() {
    let env = env().await;
    let ids = cluster_with_pool(&env, "kr", json!({"accelerator": "l4"})).await;
    let id = &ids[0];
    assert_eq!(nodes(&env, "kr", id).await, 0);

    let done = resize_ok(&env, "kr", id, "", json!({"minNodes": 2})).await;
    assert_eq!(done["response"]["nodePools"][0]["minNodes"], 2);
    let calls = set_autoscaling_calls(&env).await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(
        calls[0]
            .0
            .ends_with(&format!("{}:setAutoscaling", gke_pool("kr", id))),
        "{}",
        calls[0].0
    );
    assert_eq!(
        calls[0].1,
        json!({"autoscaling": {"enabled": true, "minNodeCount": 2, "maxNodeCount": 10},
               "name": gke_pool("kr", id)})
    );
    let p = env.pool("kr", id).await;
    assert_eq!(bounds(&p), (Some(2), Some(10)), "{p}");
    assert_eq!(p["state"], "RUNNING");
    assert_eq!(p["estimatedHourlyCost"]["atMin"], 1.42, "{p}");
    assert_eq!(p["estimatedHourlyCost"]["atMax"], 7.1, "{p}");
    assert_eq!(
        nodes(&env, "kr", id).await,
        2,
        "the autoscaler honours the new minimum"
    );
    let gke = env
        .gcp()
        .container
        .get_node_pool("ml-proj", "us-central1-a", "kr", id)
        .await
        .expect("GKE pool");
    let a = gke.autoscaling.expect("autoscaling");
    assert_eq!((a.min_node_count, a.max_node_count), (Some(2), Some(10)));

    // Down: minNodes reset to 0 by the mask, maxNodes 1: one idle node goes.
    resize_ok(
        &env,
        "kr",
        id,
        "?updateMask=minNodes,maxNodes",
        json!({"maxNodes": 1}),
    )
    .await;
    let p = env.pool("kr", id).await;
    assert_eq!(bounds(&p), (Some(0), Some(1)), "{p}");
    assert_eq!(p["estimatedHourlyCost"]["atMax"], 0.71, "{p}");
    assert_eq!(
        nodes(&env, "kr", id).await,
        1,
        "idle nodes above the new maximum go"
    );
    let calls = set_autoscaling_calls(&env).await;
    assert_eq!(
        calls[1].1["autoscaling"],
        json!({"enabled": true, "minNodeCount": 0, "maxNodeCount": 1})
    );

    // A later up rebuilds the pool from its record: the new bounds stay.
    env.up_ok("kr", json!({})).await;
    let p = env.pool("kr", id).await;
    assert_eq!(bounds(&p), (Some(0), Some(1)), "{p}");
}

#[tokio::test]
async fn a_preview_returns_the_plan_and_queues_nothing() {
    let env = env().await;
    let ids = cluster_with_pool(&env, "kp", json!({"accelerator": "l4"})).await;
    let preview = env
        .preview_patch("kp", &ids[0], json!({"minNodes": 1, "maxNodes": 4}))
        .await;
    let a = &preview["actions"][0];
    assert_eq!(a["action"], "UPDATE");
    assert_eq!(a["id"], format!("pool:{}", ids[0]));
    assert_eq!(a["type"], "container.nodePool");
    assert_eq!(
        a["details"]["resizedFrom"],
        json!({"maxNodes": 10, "minNodes": 0})
    );
    assert_eq!(
        (
            a["details"]["minNodes"].as_i64(),
            a["details"]["maxNodes"].as_i64()
        ),
        (Some(1), Some(4))
    );
    assert_eq!(a["details"]["estimatedHourlyCost"]["atMax"], 2.84, "{a}");
    assert_eq!(preview["estimatedHourlyCost"]["atMin"], 0.71);
    assert!(
        env.operations_of("UPDATE_NODE_POOL").await["operations"]
            .as_array()
            .is_none_or(|o| o.is_empty())
    );
    assert!(set_autoscaling_calls(&env).await.is_empty());
    let p = env.pool("kp", &ids[0]).await;
    assert_eq!(p["minNodes"], 0, "nothing changed");
}

#[tokio::test]
async fn growth_beyond_the_regions_quota_is_refused_before_anything_is_queued() {
    let env = env_with_quota("NVIDIA_L4_GPUS", 2.0).await;
    let ids = cluster_with_pool(&env, "kq", json!({"accelerator": "l4"})).await;
    for q in ["?validateOnly=true", ""] {
        let r = env
            .patch_pool("kq", &ids[0], q, json!({"minNodes": 3}))
            .await;
        let m = quota_refusal(&r);
        assert_eq!(m["metric"], "NVIDIA_L4_GPUS");
        assert_eq!(m["limit"], "2");
        assert_eq!(m["needed"], "3");
        assert_eq!(m["pool"], ids[0].as_str());
        assert_message_has(&r, "raising minNodes");
    }
    assert!(set_autoscaling_calls(&env).await.is_empty());
    // Within quota, and shrinking, are accepted.
    resize_ok(&env, "kq", &ids[0], "", json!({"minNodes": 2})).await;
    resize_ok(&env, "kq", &ids[0], "", json!({"minNodes": 0})).await;
}

#[tokio::test]
async fn a_failover_pair_is_resized_together_where_the_fallback_must_follow() {
    let env = env().await;
    let ids = cluster_with_pool(&env, "kf", l4_failover_pair()).await;
    let listed = env.pools("kf").await;
    let role = |id: &str| entry(&listed, "nodePools", "poolId", id)["failover"]["role"].clone();
    let (spot, od) = if role(&ids[0]) == "SPOT" {
        (ids[0].clone(), ids[1].clone())
    } else {
        (ids[1].clone(), ids[0].clone())
    };

    // The spot pool's maximum goes past the fallback's: both are set, spot first.
    let body = json!({"minNodes": 1, "maxNodes": 20});
    let preview = env.preview_patch("kf", &spot, body.clone()).await;
    let actions = preview["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 2, "{preview}");
    assert_eq!(actions[1]["id"], format!("pool:{od}"));
    assert_eq!(actions[1]["dependsOn"], json!([format!("pool:{spot}")]));
    resize_ok(&env, "kf", &spot, "", body).await;
    let calls = set_autoscaling_calls(&env).await;
    let names: Vec<&str> = calls
        .iter()
        .map(|(_, b)| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [gke_pool("kf", &spot), gke_pool("kf", &od)]);
    assert_eq!(
        calls[1].1["autoscaling"],
        json!({"enabled": true, "minNodeCount": 0, "maxNodeCount": 20})
    );
    let o = env.pool("kf", &od).await;
    assert_eq!(
        (o["minNodes"].as_i64(), o["maxNodes"].as_i64()),
        (Some(0), Some(20)),
        "{o}"
    );

    // Shrinking the spot pool leaves the fallback alone.
    resize_ok(&env, "kf", &spot, "", json!({"maxNodes": 5})).await;
    assert_eq!(set_autoscaling_calls(&env).await.len(), 3);
    assert_eq!(env.pool("kf", &od).await["maxNodes"], 20);

    // The fallback alone: within its rule only.
    let r = env.patch_pool("kf", &od, "", json!({"maxNodes": 4})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.reason(), "FAILOVER_MAX_TOO_SMALL");
    assert_message_has(&r, &spot);
    resize_ok(&env, "kf", &od, "", json!({"minNodes": 1, "maxNodes": 5})).await;
    let calls = set_autoscaling_calls(&env).await;
    assert_eq!(calls.len(), 4, "the fallback alone");
    assert_eq!(env.pool("kf", &spot).await["maxNodes"], 5);
}

#[tokio::test]
async fn update_masks_follow_aip_134() {
    let env = env().await;
    let ids = cluster_with_pool(&env, "km", json!({"accelerator": "l4", "minNodes": 1})).await;
    let id = &ids[0];
    let preview = |q: &'static str, body: Value| {
        let env = &env;
        async move {
            env.patch_pool("km", id, &format!("?validateOnly=true{q}"), body)
                .await
        }
    };
    let r = preview("&updateMask=minNodes,spot", json!({"minNodes": 2})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.reason(), "INVALID_UPDATE_MASK");
    assert_eq!(r.body["error"]["details"][0]["metadata"]["field"], "spot");
    let r = preview("", json!({"minNodes": 2, "size": 3})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_message_has(&r, "size");
    let r = preview("", json!({})).await;
    assert_eq!(r.reason(), "NOTHING_TO_UPDATE", "{}", r.body);
    let r = preview("", json!({"minNodes": -1})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let r = preview("", json!({"minNodes": 12})).await;
    assert_eq!(r.reason(), "INVALID_MAX_NODES", "{}", r.body);
    assert_message_has(&r, "22");
    let r = preview("", json!({"maxNodes": 1001})).await;
    assert_eq!(r.reason(), "INVALID_MAX_NODES", "{}", r.body);
    // A field named but absent resets it; `*` names both.
    let r = preview("&updateMask=minNodes,maxNodes", json!({"minNodes": 12})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["actions"][0]["details"]["maxNodes"], 22);
    let r = preview("&updateMask=*", json!({})).await;
    let d = &r.body["actions"][0]["details"];
    assert_eq!(
        (d["minNodes"].as_i64(), d["maxNodes"].as_i64()),
        (Some(0), Some(10)),
        "{}",
        r.body
    );
    // A body field the mask does not name is ignored, and the plan says so.
    let r = preview(
        "&updateMask=maxNodes",
        json!({"minNodes": 5, "maxNodes": 8}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let d = &r.body["actions"][0]["details"];
    assert_eq!(
        (d["minNodes"].as_i64(), d["maxNodes"].as_i64()),
        (Some(1), Some(8))
    );
    assert!(
        r.body["warnings"][0]
            .as_str()
            .unwrap()
            .contains("minNodes is in the body but not in updateMask"),
        "{}",
        r.body
    );
    // The same bounds: accepted, KEEP (GKE's autoscaling set again).
    let r = preview("", json!({"minNodes": 1})).await;
    assert_eq!(r.body["actions"][0]["action"], "KEEP", "{}", r.body);
}

#[tokio::test]
async fn multi_host_tpu_pools_resize_in_whole_slices() {
    let env = env().await;
    let ids = cluster_with_pool(&env, "kt", json!({"accelerator": "tpu-v5litepod-16"})).await;
    let id = &ids[0];
    let r = env
        .patch_pool(
            "kt",
            id,
            "?validateOnly=true",
            json!({"minNodes": 6, "maxNodes": 12}),
        )
        .await;
    assert_eq!(r.reason(), "TPU_MIN_NODES_NOT_WHOLE_SLICES", "{}", r.body);
    assert_message_has(&r, "use 4 or 8");
    let r = env
        .patch_pool("kt", id, "?validateOnly=true", json!({"maxNodes": 6}))
        .await;
    assert_eq!(r.reason(), "TPU_MAX_NODES_NOT_WHOLE_SLICES", "{}", r.body);
    let r = env
        .patch_pool(
            "kt",
            id,
            "?validateOnly=true&updateMask=*",
            json!({"minNodes": 4}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let d = &r.body["actions"][0]["details"];
    assert_eq!(
        (d["minNodes"].as_i64(), d["maxNodes"].as_i64()),
        (Some(4), Some(8)),
        "one slice more"
    );
    resize_ok(&env, "kt", id, "", json!({"maxNodes": 8})).await;
    let calls = set_autoscaling_calls(&env).await;
    assert_eq!(calls[0].1["autoscaling"]["maxNodeCount"], 8);
}

#[tokio::test]
async fn missing_and_busy_pools_are_refused() {
    let mut env = explicit_clock().await;
    let _ = &mut env;
    let op = env.up("kb", json!({"accelerator": "cpu"})).await;
    env.run_out(&op).await;
    let r = env
        .patch_pool("kb", "gpu-l4-ffff", "", json!({"minNodes": 1}))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    assert_eq!(r.reason(), "NODE_POOL_NOT_FOUND");
    let r = env
        .patch_pool("nope", "gpu-l4-ffff", "", json!({"minNodes": 1}))
        .await;
    assert_eq!(r.reason(), "CLUSTER_NOT_FOUND", "{}", r.body);
    // A pool whose creation has not finished is not RUNNING.
    let add = env.add_pool("kb", json!({"accelerator": "l4"})).await;
    let id = pool_of(&add);
    let r = env.patch_pool("kb", &id, "", json!({"minNodes": 1})).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.reason(), "NODE_POOL_NOT_RUNNING");
    env.run_out(&add).await;
    let r = env.patch_pool("kb", &id, "", json!({"minNodes": 1})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let done = env.run_out(&r.body).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
}

#[tokio::test]
async fn a_repeat_with_the_same_request_id_returns_the_same_operation() {
    let env = env().await;
    let ids = cluster_with_pool(&env, "ki", json!({"accelerator": "l4"})).await;
    let q = "?requestId=6f1c1c52-3f7e-4a7e-9d8b-2f1f0a9b0c11";
    let first = env
        .patch_pool("ki", &ids[0], q, json!({"minNodes": 1}))
        .await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{}", first.body);
    env.ok(&first.body).await;
    let again = env
        .patch_pool("ki", &ids[0], q, json!({"minNodes": 1}))
        .await;
    assert_eq!(again.status, StatusCode::ACCEPTED, "{}", again.body);
    assert_eq!(again.body["name"], first.body["name"]);
    let ops = env.operations_of("UPDATE_NODE_POOL").await;
    assert_eq!(ops["operations"].as_array().map(Vec::len), Some(1), "{ops}");
    assert_eq!(set_autoscaling_calls(&env).await.len(), 1);
    // Another body under the same id is refused, not silently answered.
    let other = env
        .patch_pool("ki", &ids[0], q, json!({"minNodes": 2}))
        .await;
    assert!(other.status.is_client_error(), "{}", other.body);
}

#[tokio::test]
async fn faults_at_set_autoscaling_are_retried_or_leave_the_record_as_it_was() {
    let env = env().await;
    let ids = cluster_with_pool(&env, "kx", json!({"accelerator": "l4"})).await;
    let id = &ids[0];
    // GKE busy with another operation: the step waits and sends the same request again.
    env.arm("container", "nodePools.setAutoscaling", "GKE_BUSY", 1)
        .await;
    let done = resize_ok(&env, "kx", id, "", json!({"maxNodes": 6})).await;
    let step = crate::support::op_step(&done, &format!("pool:{id}"));
    assert_eq!(step["attempts"], 2, "{step}");
    let sent = env.journal("container", "nodePools.setAutoscaling").await;
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["body"], sent[1]["body"], "the same request again");
    assert_eq!(env.pool("kx", id).await["maxNodes"], 6);

    // GKE's operation ends with QUOTA_EXCEEDED: the operation fails with kineticd's
    // QUOTA_INSUFFICIENT (GKE's reason kept in cloudReason), the record keeps its bounds
    // and its state.
    env.arm("container", "nodePools.setAutoscaling", "QUOTA_EXCEEDED", 1)
        .await;
    let r = env.patch_pool("kx", id, "", json!({"minNodes": 1})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let failed = env.done(&r.body).await;
    assert_eq!(failed["metadata"]["state"], "FAILED", "{failed}");
    let d = &failed["error"]["details"][0];
    assert_eq!(d["reason"], "QUOTA_INSUFFICIENT", "{failed}");
    assert_eq!(d["metadata"]["cloudReason"], "QUOTA_EXCEEDED", "{failed}");
    let p = env.pool("kx", id).await;
    assert_eq!(bounds(&p), (Some(0), Some(6)), "{p}");
    assert_eq!(p["state"], "RUNNING");
    // The next resize goes through.
    resize_ok(&env, "kx", id, "", json!({"minNodes": 1})).await;
    assert_eq!(env.pool("kx", id).await["minNodes"], 1);
}

#[tokio::test]
async fn the_simulator_checks_set_autoscaling_as_gke_does() {
    let env = env().await;
    let ids = cluster_with_pool(&env, "ks", json!({"accelerator": "l4"})).await;
    let url = format!(
        "{}/container/v1/{}:setAutoscaling",
        env.sim.url(),
        gke_pool("ks", &ids[0])
    );
    let send = |body: Value| {
        let (http, url) = (env.app.http.clone(), url.clone());
        async move {
            let r = http.post(&url).json(&body).send().await.expect("send");
            (r.status().as_u16(), r.text().await.unwrap_or_default())
        }
    };
    let bad = [
        json!({}),
        json!({"autoscaling": {"enabled": true, "minNodeCount": 3, "maxNodeCount": 2}}),
        json!({"autoscaling": {"enabled": true, "minNodeCount": 0, "maxNodeCount": 0}}),
        json!({"autoscaling": {"enabled": true, "minNodeCount": 0, "maxNodeCount": 2, "totalMaxNodeCount": 4}}),
        json!({"autoscaling": {"enabled": true, "maxNodeCount": 2, "size": 1}}),
        json!({"autoscaling": {"enabled": true, "maxNodeCount": 2}, "name": gke_pool("ks", "other")}),
    ];
    for body in bad {
        let (status, text) = send(body.clone()).await;
        assert_eq!(status, 400, "{body}: {text}");
    }
    let (status, text) =
        send(json!({"autoscaling": {"enabled": true, "minNodeCount": 1, "maxNodeCount": 3}})).await;
    assert_eq!(status, 200, "{text}");
    let op: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(op["operationType"], "UPDATE_CLUSTER", "{op}");
    assert_eq!(
        nodes(&env, "ks", &ids[0]).await,
        1,
        "grown to the new minimum"
    );
}

#[tokio::test]
async fn a_resize_in_flight_holds_the_next_and_a_cancel_leaves_the_record() {
    let env = explicit_clock().await;
    let op = env.up("kc", json!({"accelerator": "cpu"})).await;
    env.run_out(&op).await;
    let add = env.add_pool("kc", json!({"accelerator": "l4"})).await;
    env.run_out(&add).await;
    let id = pool_of(&add);
    let r = env.patch_pool("kc", &id, "", json!({"minNodes": 1})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    // The clock is held: GKE's operation stays RUNNING while the step waits on it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while set_autoscaling_calls(&env).await.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "setAutoscaling never sent"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // A second resize of the pool waits for the first to finish.
    let busy = env.patch_pool("kc", &id, "", json!({"maxNodes": 4})).await;
    assert_eq!(busy.status, StatusCode::CONFLICT, "{}", busy.body);
    assert_eq!(busy.reason(), "NODE_POOL_BUSY");
    let name = r.body["name"].as_str().unwrap();
    let c = env.app.op_action(OWNER, name, "cancel").await;
    assert_eq!(c.status, StatusCode::OK, "{}", c.body);
    let done = env.done(&r.body).await;
    assert_eq!(done["metadata"]["state"], "CANCELLED", "{done}");
    let p = env.pool("kc", &id).await;
    assert_eq!(
        (p["minNodes"].as_i64(), p["state"].as_str()),
        (Some(0), Some("RUNNING")),
        "{p}"
    );
    // GKE finishes what it was sent; the record says what kineticd saw confirmed. The
    // same resize again sets GKE to it once more and records it.
    env.advance(60.0).await;
    let again = env.patch_pool("kc", &id, "", json!({"minNodes": 1})).await;
    assert_eq!(again.status, StatusCode::ACCEPTED, "{}", again.body);
    let done = env.run_out(&again.body).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    assert_eq!(env.pool("kc", &id).await["minNodes"], 1);
}
