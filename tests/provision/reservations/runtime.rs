//! Reservations after a pool was accepted: the pool-create step reads the reservation
//! again (gone or consumed in between: the operation fails with the reason and no pool
//! is created), the simulated autoscaler stops at the reservation's free VMs, and a
//! reservation that cannot be read is a warning, not a refusal.

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use reqwest::StatusCode;
use serde_json::json;
use uuid::Uuid;

use super::support::*;
use crate::support::*;

#[tokio::test]
async fn the_pool_step_checks_again_and_creates_no_pool_when_the_reservation_is_gone() {
    let mut env = env_up("kg").await;
    reserve(&env, l4("going", 2)).await;
    reserve(&env, l4("taken", 1)).await;
    env.pause().await;
    let gone = env.add_pool("kg", l4_on("going", Some(1))).await;
    let taken = env.add_pool("kg", l4_on("taken", Some(1))).await;
    let compute = env.gcp().compute;
    let del = compute
        .delete_reservation(PROJECT, ZONE, "going", Uuid::new_v4())
        .await
        .unwrap();
    env.wait_compute(&del).await;
    env.resume();

    let failed = env.done(&gone).await;
    assert_eq!(failed["metadata"]["state"], "FAILED", "{failed}");
    let d = &failed["error"]["details"][0];
    assert_eq!(d["reason"], "RESERVATION_NOT_FOUND", "{failed}");
    let pool = pool_of(&gone);
    assert_eq!(d["metadata"]["step"], format!("pool:{pool}"), "{failed}");
    let created = env.ok_calls("container", "nodePools.create").await;
    assert!(
        !created
            .iter()
            .any(|e| e["body"]["nodePool"]["name"] == pool.as_str()),
        "no pool created for a reservation that is gone"
    );
    env.ok(&taken).await;
    assert_eq!(in_use(&env, PROJECT, ZONE, "taken").await, 1);

    // Consumed between accept and run: exhausted inside the step.
    reserve(&env, l4("one-left", 1)).await;
    env.pause().await;
    let late = env.add_pool("kg", l4_on("one-left", Some(1))).await;
    let first = env.add_pool("kg", l4_on("one-left", Some(1))).await;
    env.resume();
    let a = env.done(&late).await;
    let b = env.done(&first).await;
    let states = [
        a["metadata"]["state"].clone(),
        b["metadata"]["state"].clone(),
    ];
    assert!(
        states.contains(&json!("SUCCEEDED")) && states.contains(&json!("FAILED")),
        "{a} {b}"
    );
    let failed = if a["metadata"]["state"] == "FAILED" {
        a
    } else {
        b
    };
    let d = &failed["error"]["details"][0];
    assert_eq!(d["reason"], "RESERVATION_EXHAUSTED", "{failed}");
    assert_eq!(
        exhausted_counts(&d["metadata"]),
        (Some("1"), Some("1"), Some("1"))
    );
}

#[tokio::test]
async fn the_autoscaler_stops_at_the_reservations_free_vms() {
    let env = explicit_clock_up("ka").await;
    reserve(&env, l4("two", 2)).await;
    let add = env.add_pool("ka", l4_on("two", None)).await;
    assert_eq!(env.run_out(&add).await["metadata"]["state"], "SUCCEEDED");
    let pool = pool_of(&add);
    let k = kube(&env, "ka");
    let api: Api<Pod> = Api::namespaced(k.client().await.expect("client"), "default");
    for i in 0..3 {
        let p: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("w{i}")},
            "spec": {
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
            },
        }))
        .unwrap();
        api.create(&PostParams::default(), &p)
            .await
            .expect("create pod");
    }
    for _ in 0..6 {
        env.advance(61.0).await;
    }
    let nodes = env
        .sim
        .world()
        .kube
        .pool_node_count(&format!("{PROJECT}.{ZONE}.ka"), &pool);
    assert_eq!(
        nodes,
        Some(2),
        "two reserved VMs, two nodes; the third pod waits"
    );
    assert_eq!(in_use(&env, PROJECT, ZONE, "two").await, 2);
    let pods = k.pods(Some("default")).await.unwrap();
    let pending: Vec<&str> = pods
        .iter()
        .filter(|p| p.phase == "Pending")
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(pending.len(), 1, "{pending:?}");
}

#[tokio::test]
async fn a_reservation_that_cannot_be_read_is_a_warning_not_a_refusal() {
    let env = env_up("kw").await;
    env.arm("compute", "reservations.get", "HTTP_500", 1000)
        .await;
    let r = env.preview_pool("kw", l4_on("unread", None)).await;
    let disarm = env
        .app
        .http
        .delete(format!("{}/sim/v1/faults", env.sim.url()))
        .send()
        .await
        .expect("disarm");
    assert!(disarm.status().is_success());
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let warnings = r.body["warnings"].as_array().cloned().unwrap_or_default();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("reservation unread not checked"))),
        "{}",
        r.body
    );
    // Readable again: the same request is refused for what it is.
    let r = env.preview_pool("kw", l4_on("unread", None)).await;
    assert_eq!(r.reason(), "RESERVATION_NOT_FOUND", "{}", r.body);
}
