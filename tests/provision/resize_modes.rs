//! Resize across provisioning modes: a flex-start or QUEUED pool is resized with the
//! autoscaling GKE creates such pools with (total bounds, total minimum 0, location
//! policy ANY) and keeps minNodes 0 (400 PROVISIONING_CONFLICT otherwise, preview and
//! apply, nothing queued); GKE's simulated setAutoscaling refuses per-zone bounds mixed
//! with total ones; a reservation-bound pool's minimum grows only into free VMs of its
//! reservation (409 RESERVATION_EXHAUSTED, preview and apply).

use kineticd::cloud::gcp::types::container::NodePoolAutoscaling;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::checks::strs;
use crate::reservations::{l4, reserve};
use crate::support::*;

/// The preview and the PATCH are both refused with `status` and `reason`; the metadata.
async fn refused(
    env: &Env,
    cluster: &str,
    pool: &str,
    body: Value,
    status: StatusCode,
    reason: &str,
) -> Value {
    let p = env
        .patch_pool(cluster, pool, "?validateOnly=true", body.clone())
        .await;
    assert_eq!(p.status, status, "preview: {}", p.body);
    assert_eq!(p.reason(), reason, "{}", p.body);
    let r = env.patch_pool(cluster, pool, "", body).await;
    assert_eq!(r.status, status, "{}", r.body);
    assert_eq!(r.reason(), reason, "{}", r.body);
    r.body["error"]["details"][0]["metadata"].clone()
}

async fn set_autoscaling_bodies(env: &Env, pool: &str) -> Vec<Value> {
    env.ok_calls("container", "nodePools.setAutoscaling")
        .await
        .into_iter()
        .filter(|e| {
            e["path"]
                .as_str()
                .is_some_and(|p| p.ends_with(&format!("/nodePools/{pool}:setAutoscaling")))
        })
        .map(|e| e["body"].clone())
        .collect()
}

#[tokio::test]
async fn flex_start_and_queued_pools_resize_with_total_bounds_and_keep_min_zero() {
    let env = env_up("kq").await;
    let zones = json!({"zones": ["us-central1-a", "us-central1-b"]});
    let flex = env
        .add_pool("kq", provisioned("l4", "FLEX_START", zones))
        .await;
    let queued = env
        .add_pool("kq", provisioned("l4x2", "QUEUED", json!({})))
        .await;
    env.ok(&flex).await;
    env.ok(&queued).await;
    let (flex, queued) = (pool_of(&flex), pool_of(&queued));

    // maxNodes per zone 6 over two zones: GKE's total maximum 12, total minimum 0, ANY.
    let r = env
        .patch_pool("kq", &flex, "", json!({"maxNodes": 6}))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    env.ok(&r.body).await;
    let sent = set_autoscaling_bodies(&env, &flex).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    let a = &sent[0]["autoscaling"];
    assert_eq!(a["enabled"], true, "{a}");
    assert_eq!(a["totalMinNodeCount"], 0, "{a}");
    assert_eq!(a["totalMaxNodeCount"], 12, "{a}");
    assert_eq!(a["locationPolicy"], "ANY", "{a}");
    assert!(
        a.get("minNodeCount").is_none() && a.get("maxNodeCount").is_none(),
        "{a}"
    );
    let rec = env.pool("kq", &flex).await;
    assert_eq!(
        (rec["minNodes"].as_i64(), rec["maxNodes"].as_i64()),
        (Some(0), Some(6)),
        "{rec}"
    );
    assert_eq!(rec["provisioning"], "FLEX_START", "{rec}");

    // The queued pool too (one zone: total = per zone).
    let r = env
        .patch_pool(
            "kq",
            &queued,
            "?updateMask=maxNodes",
            json!({"maxNodes": 4}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    env.ok(&r.body).await;
    let a = &set_autoscaling_bodies(&env, &queued).await[0]["autoscaling"];
    assert_eq!(
        (
            a["totalMinNodeCount"].as_i64(),
            a["totalMaxNodeCount"].as_i64()
        ),
        (Some(0), Some(4)),
        "{a}"
    );
    assert_eq!(a["locationPolicy"], "ANY", "{a}");

    // Warm nodes are refused on both, in a preview too, and nothing is sent to GKE.
    for (pool, mode) in [(&flex, "FLEX_START"), (&queued, "QUEUED")] {
        let m = refused(
            &env,
            "kq",
            pool,
            json!({"minNodes": 2}),
            StatusCode::BAD_REQUEST,
            "PROVISIONING_CONFLICT",
        )
        .await;
        assert_eq!(m["field"], "minNodes", "{m}");
        let r = env
            .patch_pool("kq", pool, "", json!({"minNodes": 1, "maxNodes": 8}))
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
        assert_message_has(&r, mode);
        assert_message_has(&r, "send minNodes 0");
    }
    let r = env
        .patch_pool("kq", &queued, "", json!({"minNodes": 3}))
        .await;
    assert_message_has(&r, "ProvisioningRequest");
    assert_eq!(set_autoscaling_bodies(&env, &flex).await.len(), 1);
    assert_eq!(set_autoscaling_bodies(&env, &queued).await.len(), 1);
    // minNodes 0 stays accepted.
    let body = json!({"minNodes": 0, "maxNodes": 3});
    env.preview_patch("kq", &flex, body).await;
}

#[tokio::test]
async fn gkes_set_autoscaling_refuses_per_zone_bounds_mixed_with_total_ones() {
    let env = env_up("km").await;
    let pool = env
        .added_pool("km", provisioned("l4", "FLEX_START", json!({})))
        .await;
    let gke = &env.gcp().container;
    // Enabled with location policy ANY, and the bounds of each case.
    let enabled_any = |bounds: NodePoolAutoscaling| NodePoolAutoscaling {
        enabled: Some(true),
        location_policy: Some("ANY".into()),
        ..bounds
    };
    let mixed = NodePoolAutoscaling {
        min_node_count: Some(1),
        total_max_node_count: Some(4),
        ..Default::default()
    };
    let total_below = NodePoolAutoscaling {
        total_min_node_count: Some(5),
        total_max_node_count: Some(4),
        ..Default::default()
    };
    for (bounds, refused, says) in [
        (mixed, "mixed bounds refused", "mutually exclusive"),
        (
            total_below,
            "total min above total max refused",
            "Invalid autoscaling limits",
        ),
    ] {
        let e = gke
            .set_node_pool_autoscaling(PROJECT, ZONE, "km", &pool, &enabled_any(bounds))
            .await
            .expect_err(refused);
        assert!(e.to_string().contains(says), "{e}");
    }
}

#[tokio::test]
async fn a_reservation_bound_pool_grows_its_minimum_only_into_free_reserved_vms() {
    let env = env_up("kv").await;
    reserve(&env, l4("l4-res", 3)).await;
    let pool = env
        .added_pool(
            "kv",
            json!({"accelerator": "l4", "minNodes": 1, "reservation": "l4-res"}),
        )
        .await;
    // One VM in use, two free: growing the minimum by three is refused.
    let m = refused(
        &env,
        "kv",
        &pool,
        json!({"minNodes": 4}),
        StatusCode::CONFLICT,
        "RESERVATION_EXHAUSTED",
    )
    .await;
    assert_eq!(
        strs(&m, ["count", "inUseCount", "needed"]),
        [Some("3"), Some("1"), Some("3")],
        "{m}"
    );
    assert_eq!(m["reservation"], "l4-res");
    assert!(
        set_autoscaling_bodies(&env, &pool).await.is_empty(),
        "nothing sent"
    );
    // Growing by two fits; shrinking or raising only maxNodes needs no free VM.
    let r = env
        .patch_pool("kv", &pool, "", json!({"minNodes": 3}))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    env.ok(&r.body).await;
    let rec = env.pool("kv", &pool).await;
    assert_eq!(rec["minNodes"], 3, "{rec}");
    env.preview_patch("kv", &pool, json!({"maxNodes": 20}))
        .await;
    let r = env
        .patch_pool("kv", &pool, "?validateOnly=true", json!({"minNodes": 4}))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.reason(), "RESERVATION_EXHAUSTED");
}
