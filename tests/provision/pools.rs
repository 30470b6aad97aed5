//! pool add / list / get / remove: names fixed at enqueue, shapes per the reference,
//! refusals before any operation exists, quota pre-check, spot and reservation kept by
//! every later operation, failover pairs, ordering per cluster.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::gke::gke_done;
use crate::support::*;

#[tokio::test]
async fn pools_are_named_at_once_and_shaped_per_the_reference() {
    let env = env_up("kp").await;

    // Spot GPU: named now, spot, keeps the 24 h limit.
    let op = env
        .add_pool("kp", json!({"accelerator": "l4:spot", "minNodes": 1}))
        .await;
    let spot = pool_of(&op);
    assert!(spot.starts_with("gpu-l4-"), "{spot}");
    let rec = env
        .app
        .get(OWNER, &format!("{}/nodePools/{spot}", cluster_path("kp")))
        .await;
    assert_eq!(rec.status, StatusCode::OK, "{}", rec.body);
    // The workers may already have finished it (the simulator's clock runs at speed 0):
    // what matters is that the record exists at once, under the id the operation named.
    assert!(
        ["PROVISIONING", "RUNNING"].contains(&rec.body["state"].as_str().unwrap_or("")),
        "{}",
        rec.body
    );
    assert_eq!(rec.body["poolId"], spot.as_str(), "{}", rec.body);
    env.ok(&op).await;
    // Reservation GPU, two zones (the reservation in the first).
    let a100s = Some(("nvidia-tesla-a100", 2));
    let team_res = crate::reservations::l4("team-res", 2).of("a2-highgpu-2g", a100s);
    crate::reservations::reserve(&env, team_res).await;
    let op = env
        .add_pool("kp", json!({"accelerator": "a100x2", "reservation": "team-res", "zones": ["us-central1-a", "us-central1-b"], "driverVersion": "LATEST"}))
        .await;
    let reserved = pool_of(&op);
    env.ok(&op).await;
    // Spot TPU: no max run duration.
    let op = env
        .add_pool(
            "kp",
            json!({"accelerator": "tpu-v5litepod-4", "spot": true}),
        )
        .await;
    let tpu = pool_of(&op);
    assert!(tpu.starts_with("tpu-v5litepod-"), "{tpu}");
    env.ok(&op).await;

    let calls = env.ok_calls("container", "nodePools.create").await;
    assert_eq!(calls.len(), 3);
    let p = created_pool(&calls, &spot);
    assert_eq!(p["config"]["spot"], true);
    assert_eq!(p["config"]["maxRunDuration"], "86400s");
    assert_eq!(p["initialNodeCount"], 1);
    assert_eq!(
        (
            p["autoscaling"]["minNodeCount"].clone(),
            p["autoscaling"]["maxNodeCount"].clone()
        ),
        (json!(1), json!(11))
    );
    let p = created_pool(&calls, &reserved);
    assert_eq!(
        p["config"]["reservationAffinity"],
        json!({"consumeReservationType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name", "values": ["team-res"]})
    );
    assert!(p["config"].get("spot").is_none());
    assert_eq!(p["locations"], json!(["us-central1-a", "us-central1-b"]));
    assert_eq!(p["config"]["machineType"], "a2-highgpu-2g");
    assert_eq!(
        p["config"]["accelerators"][0]["gpuDriverInstallationConfig"]["gpuDriverVersion"],
        "LATEST"
    );
    let p = created_pool(&calls, &tpu);
    assert_eq!(p["config"]["spot"], true);
    assert!(
        p["config"].get("maxRunDuration").is_none(),
        "spot TPU pools have no max run duration: {p}"
    );
    assert!(
        p.get("placementPolicy").is_none(),
        "single-host TPU: no placement"
    );

    // List and get from the records.
    let list = env.pools("kp").await;
    let ids = crate::common::ids(&list, "nodePools", "poolId");
    assert_eq!(ids.len(), 3);
    let r = env
        .app
        .get(
            OWNER,
            &format!("{}/nodePools/{reserved}", cluster_path("kp")),
        )
        .await
        .body;
    assert_eq!(r["state"], "RUNNING");
    assert_eq!(r["reservation"], "team-res");
    assert_eq!(r["zones"], json!(["us-central1-a", "us-central1-b"]));
    assert_eq!(r["driverVersion"], "LATEST");
    assert!(
        r["estimatedHourlyCost"]["perNode"].as_f64().unwrap() > 0.0,
        "{r}"
    );

    // The driver installer is applied only for the GPU pool without managed drivers.
    let steps = |op: &Value| -> Vec<String> {
        op["metadata"]["progress"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let ops = env.operations_of("ADD_NODE_POOL").await;
    let with_driver: Vec<bool> = ops["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| steps(o).contains(&"nvidia-driver".to_owned()))
        .collect();
    assert_eq!(
        with_driver.iter().filter(|b| **b).count(),
        1,
        "{with_driver:?} {:?}",
        ops["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(steps)
            .collect::<Vec<_>>()
    );

    // Spot and reservation survive later operations: a second up that repairs a pool
    // deleted behind kineticd's back rebuilds it from its record.
    let gcp = env.gcp();
    for pool in [&spot, &reserved] {
        let del = gcp
            .container
            .delete_node_pool(PROJECT, ZONE, "kp", pool)
            .await
            .unwrap();
        gke_done(&gcp, &del, Duration::from_secs(120), "pool deleted").await;
    }
    env.up_ok("kp", json!({})).await;
    let calls = env.ok_calls("container", "nodePools.create").await;
    assert_eq!(
        calls.len(),
        5,
        "both missing pools re-created, nothing else"
    );
    let again: Vec<&Value> = calls
        .iter()
        .filter(|e| e["body"]["nodePool"]["name"] == spot.as_str())
        .map(|e| &e["body"]["nodePool"])
        .collect();
    assert_eq!(again.len(), 2);
    assert_eq!(again[0], again[1], "the re-created spot pool is identical");
    let again: Vec<&Value> = calls
        .iter()
        .filter(|e| e["body"]["nodePool"]["name"] == reserved.as_str())
        .map(|e| &e["body"]["nodePool"])
        .collect();
    assert_eq!(
        again[0], again[1],
        "the re-created reservation pool is identical"
    );

    // Remove one: gone from GKE and from the records.
    let r = env
        .app
        .delete(OWNER, &format!("{}/nodePools/{tpu}", cluster_path("kp")))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["metadata"]["type"], "REMOVE_NODE_POOL");
    env.ok(&r.body).await;
    let deletes = env.ok_calls("container", "nodePools.delete").await;
    let of_tpu = deletes
        .iter()
        .filter(|e| e["path"].as_str().unwrap().ends_with(&tpu))
        .count();
    assert_eq!(of_tpu, 1);
    let r = env
        .app
        .get(OWNER, &format!("{}/nodePools/{tpu}", cluster_path("kp")))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.reason(), "NODE_POOL_NOT_FOUND");
}

#[tokio::test]
async fn bad_pools_are_refused_before_any_operation_exists() {
    let env = env_up("kb").await;
    let path = format!("{}/nodePools", cluster_path("kb"));
    let cases = [
        (json!({"accelerator": "cpu"}), "CPU_POOL_NOT_ALLOWED"),
        (
            json!({"accelerator": "l4", "spot": true, "reservation": "r"}),
            "SPOT_WITH_RESERVATION",
        ),
        (
            json!({"accelerator": "l4:spot", "reservation": "r"}),
            "SPOT_WITH_RESERVATION",
        ),
        (json!({"accelerator": "a100x3"}), "UNKNOWN_ACCELERATOR"),
        (
            json!({"accelerator": "tpu-v5litepod-16", "minNodes": 2}),
            "TPU_MIN_NODES_NOT_WHOLE_SLICES",
        ),
        (
            json!({"accelerator": "l4", "zones": ["europe-west4-a"]}),
            "INVALID_ZONE",
        ),
        (
            json!({"accelerator": "tpu-v5litepod-4", "driverVersion": "LATEST"}),
            "INVALID_DRIVER_VERSION",
        ),
        (
            json!({"accelerator": "l4", "driverVersion": "NEWEST"}),
            "INVALID_DRIVER_VERSION",
        ),
        (json!({}), "ACCELERATOR_REQUIRED"),
    ];
    for (body, reason) in cases {
        let r = env.app.post(OWNER, &path, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        assert_eq!(r.reason(), reason, "{body}: {}", r.body);
    }
    let r = env
        .app
        .post(OWNER, &path, json!({"accelerator": "a100x3"}))
        .await;
    let suggestions = r.body["error"]["details"][0]["metadata"]["suggestions"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        suggestions.contains("gpu-a100x2") || suggestions.contains("gpu-a100x4"),
        "{suggestions}"
    );
    let ops = env.operations_of("ADD_NODE_POOL").await;
    assert_eq!(ops["operations"], json!([]));
    let pools = env.app.get(OWNER, &path).await.body;
    assert_eq!(pools["nodePools"], json!([]));
    // A pool of a cluster that does not exist.
    let r = env.post_pool("nope", json!({"accelerator": "l4"})).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.reason(), "CLUSTER_NOT_FOUND");
}

#[tokio::test]
async fn the_quota_pre_check_names_metric_limit_usage_and_need() {
    let env = env_with_quota("NVIDIA_A100_GPUS", 6.0).await;
    env.up_ok("kq", json!({"accelerator": "cpu"})).await;
    let path = format!("{}/nodePools", cluster_path("kq"));
    // Preview and real request answer the same.
    for p in [format!("{path}?validateOnly=true"), path.clone()] {
        let r = env
            .app
            .post(OWNER, &p, json!({"accelerator": "a100x8"}))
            .await;
        let m = quota_refusal(&r);
        assert_eq!(m["metric"], "NVIDIA_A100_GPUS");
        assert_eq!(m["limit"], "6");
        assert_eq!(m["usage"], "0");
        assert_eq!(m["needed"], "8");
    }
    assert!(
        env.ok_calls("container", "nodePools.create")
            .await
            .is_empty()
    );
    // Within quota: accepted.
    let op = env
        .add_pool("kq", json!({"accelerator": "a100x4", "minNodes": 1}))
        .await;
    env.ok(&op).await;
    // Now 4 of 6 are used: another 4 do not fit.
    let r = env
        .app
        .post(OWNER, &path, json!({"accelerator": "a100x4"}))
        .await;
    assert_eq!(r.reason(), "QUOTA_INSUFFICIENT", "{}", r.body);
    assert_eq!(r.body["error"]["details"][0]["metadata"]["usage"], "4");
}

#[tokio::test]
async fn a_failover_pair_is_added_and_removed_together() {
    let env = env_up("kf").await;
    let op = env.add_pool("kf", l4_failover_pair()).await;
    env.ok(&op).await;
    let pools = env.pools("kf").await;
    let pools = pools["nodePools"].as_array().unwrap().clone();
    assert_eq!(pools.len(), 2);
    let spot = pools.iter().find(|p| p["spot"] == true).unwrap();
    let od = pools.iter().find(|p| p["spot"] == false).unwrap();
    assert_eq!(spot["failover"]["role"], "SPOT");
    assert_eq!(spot["failover"]["pairedPool"], od["poolId"]);
    assert_eq!(od["failover"]["role"], "ON_DEMAND");
    assert_eq!(od["minNodes"], 0);
    assert_eq!(spot["labels"]["gpu-pool-type"], "spot");
    assert_eq!(od["labels"]["gpu-pool-type"], "on-demand");
    // Both pools carry their compute class's taint (tests/provision/computeclass.rs).
    let class = format!("kinetic-{}", spot["poolId"].as_str().unwrap());
    let taint =
        json!([{"key": "cloud.google.com/compute-class", "value": class, "effect": "NO_SCHEDULE"}]);
    assert_eq!(spot["taints"], taint);
    assert_eq!(od["taints"], taint);
    let calls = env.ok_calls("container", "nodePools.create").await;
    let sp = created_pool(&calls, spot["poolId"].as_str().unwrap());
    assert_eq!(sp["config"]["taints"], taint);
    assert_eq!(sp["config"]["labels"]["gpu-pool-type"], "spot");
    let r = env
        .app
        .delete(
            OWNER,
            &format!(
                "{}/nodePools/{}",
                cluster_path("kf"),
                spot["poolId"].as_str().unwrap()
            ),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    env.ok(&r.body).await;
    assert_eq!(env.ok_calls("container", "nodePools.delete").await.len(), 2);
    let pools = env.pools("kf").await;
    assert_eq!(pools["nodePools"], json!([]));
}

#[tokio::test]
async fn a_stockout_fails_the_pool_step_with_its_reason_and_leaves_records_consistent() {
    let env = env_up("ks").await;
    env.arm("container", "nodePools.create", "STOCKOUT", 1)
        .await;
    let op = env.add_pool("ks", json!({"accelerator": "h100x8"})).await;
    let pool = pool_of(&op);
    let failed = env.done(&op).await;
    assert_eq!(failed["metadata"]["state"], "FAILED", "{failed}");
    let d = &failed["error"]["details"][0];
    assert_eq!(d["reason"], "ZONE_RESOURCE_EXHAUSTED", "{failed}");
    assert_eq!(failed["error"]["code"], 8, "RESOURCE_EXHAUSTED: {failed}");
    assert_eq!(d["metadata"]["cloudReason"], "GCE_STOCKOUT", "{failed}");
    assert_eq!(
        d["metadata"]["deprecatedReason"], "GCE_STOCKOUT",
        "{failed}"
    );
    assert!(
        d["metadata"]["cloudMessage"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{failed}"
    );
    assert_eq!(d["metadata"]["step"], format!("pool:{pool}"));
    assert_eq!(d["metadata"]["method"], "nodePools.create");
    let rec = env
        .app
        .get(OWNER, &format!("{}/nodePools/{pool}", cluster_path("ks")))
        .await
        .body;
    assert_eq!(rec["state"], "ERROR");
    // Removing the failed pool works, whatever GKE kept of it.
    env.remove_pool("ks", &pool).await;
    let pools = env.pools("ks").await;
    assert_eq!(pools["nodePools"], json!([]));
}

#[tokio::test]
async fn a_repeated_request_id_returns_the_same_operation_and_changes_nothing() {
    let env = env().await;
    let path = format!(
        "{}?requestId=3f8a2c9e-0d4b-4a57-9a41-6f1e2b7c8d90",
        cluster_path("ki")
    );
    let a = env
        .app
        .put(OWNER, &path, json!({"accelerator": "cpu"}))
        .await;
    let b = env
        .app
        .put(OWNER, &path, json!({"accelerator": "cpu"}))
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    assert_eq!(b.status, StatusCode::ACCEPTED, "{}", b.body);
    assert_eq!(a.body["name"], b.body["name"]);
    env.ok(&a.body).await;
    let c = env
        .app
        .put(OWNER, &path, json!({"accelerator": "cpu"}))
        .await;
    assert_eq!(c.body["name"], a.body["name"], "a repeat after the end too");
    let r = env
        .app
        .put(OWNER, &path, json!({"accelerator": "gpu-l4"}))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(r.reason(), "REQUEST_ID_REUSED");
    let ops = env.operations_of("UP_CLUSTER").await;
    assert_eq!(ops["operations"].as_array().unwrap().len(), 1);
    assert_eq!(env.ok_calls("container", "clusters.create").await.len(), 1);
}
