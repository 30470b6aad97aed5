//! Reservations that are checked: a reservation made in the simulator through the
//! production Compute client; a pool bound to it is accepted and its nodes consume it;
//! each refusal (not found, another zone, machine type or accelerator, too few free
//! VMs, a shared reservation not shared with the pool's project) is a 409 with its
//! reason before anything is queued, in a preview too; the pool-create step checks again;
//! `up` with a reservation is checked; the simulated autoscaler stops at the reservation.

mod runtime;
mod support;

use reqwest::StatusCode;
use serde_json::json;

use support::{OWNER_PROJECT, assert_mismatch, exhausted_counts, in_use, l4_on, refused};
pub use support::{l4, reserve};

use crate::support::*;

/// One L4 GPU a VM, as [`l4`] reserves.
const L4_GPU: Option<(&str, i32)> = Some(("nvidia-l4", 1));

/// `n` T4 GPUs a VM.
fn t4s(n: i32) -> Option<(&'static str, i32)> {
    Some(("nvidia-tesla-t4", n))
}

#[tokio::test]
async fn a_pool_bound_to_a_matching_reservation_is_accepted_and_its_nodes_consume_it() {
    let env = env_up("kr").await;
    let made = reserve(&env, l4("l4-res", 3)).await;
    let sku = made.specific_reservation.as_ref().unwrap();
    assert_eq!((sku.count, sku.in_use_count), (Some(3), Some(0)));
    assert_eq!(made.status.as_deref(), Some("READY"));
    let listed = env
        .gcp()
        .compute
        .list_reservations(PROJECT, ZONE)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "l4-res");

    let op = env.add_pool("kr", l4_on("l4-res", Some(2))).await;
    env.ok(&op).await;
    assert_eq!(
        in_use(&env, PROJECT, ZONE, "l4-res").await,
        2,
        "the pool's 2 nodes use it"
    );
    // Only one VM is left: a second pool of 2 is refused as exhausted.
    let m = refused(
        &env,
        "kr",
        l4_on("l4-res", Some(2)),
        "RESERVATION_EXHAUSTED",
    )
    .await;
    assert_eq!(
        exhausted_counts(&m),
        (Some("3"), Some("2"), Some("2")),
        "{m}"
    );
    assert_eq!(m["reservation"], "l4-res");
    // Removing the pool gives the VMs back.
    let pool = pool_of(&op);
    env.remove_pool("kr", &pool).await;
    assert_eq!(in_use(&env, PROJECT, ZONE, "l4-res").await, 0);
    // The check read the reservation with reservations.get.
    assert!(!env.ok_calls("compute", "reservations.get").await.is_empty());
}

#[tokio::test]
async fn each_mismatch_and_a_missing_reservation_are_refused_before_anything_is_queued() {
    let env = env_up("km").await;
    reserve(&env, l4("in-b", 2).in_zone("us-central1-b")).await;
    reserve(&env, l4("bigger", 2).of("g2-standard-8", L4_GPU)).await;
    reserve(&env, l4("t4s", 2).of("n1-standard-4", t4s(1))).await;
    let before = env.operations_of("ADD_NODE_POOL").await;

    let m = refused(&env, "km", l4_on("nope", None), "RESERVATION_NOT_FOUND").await;
    assert_eq!(
        (m["reservation"].as_str(), m["project"].as_str()),
        (Some("nope"), Some(PROJECT))
    );

    let m = refused(&env, "km", l4_on("in-b", None), "RESERVATION_MISMATCH").await;
    assert_mismatch(&m, "zone", ZONE, "us-central1-b");
    // The same reservation is fine for a pool in its zone.
    let op = env
        .add_pool(
            "km",
            json!({"accelerator": "l4", "reservation": "in-b", "zones": ["us-central1-b"]}),
        )
        .await;
    env.ok(&op).await;

    let m = refused(&env, "km", l4_on("bigger", None), "RESERVATION_MISMATCH").await;
    assert_mismatch(&m, "machineType", "g2-standard-4", "g2-standard-8");

    for (accelerator, reservation) in [("t4x2", "t4s"), ("t4", "bigger")] {
        let body = json!({"accelerator": accelerator, "reservation": reservation});
        let m = refused(&env, "km", body, "RESERVATION_MISMATCH").await;
        assert_eq!(m["field"], "machineType", "{m}");
    }

    // Another accelerator on the same machine type: N1 with T4 against a T4 reservation
    // wanting two GPUs per VM.
    reserve(&env, l4("t4-pairs", 2).of("n1-standard-4", t4s(2))).await;
    let body = json!({"accelerator": "t4", "reservation": "t4-pairs"});
    let m = refused(&env, "km", body, "RESERVATION_MISMATCH").await;
    assert_mismatch(
        &m,
        "guestAccelerators",
        "1 x nvidia-tesla-t4",
        "2 x nvidia-tesla-t4",
    );

    assert_eq!(
        env.operations_of("ADD_NODE_POOL").await["operations"]
            .as_array()
            .map(Vec::len),
        before["operations"].as_array().map(|a| a.len() + 1),
        "only the pool in zone b was queued"
    );
}

#[tokio::test]
async fn a_shared_reservation_of_another_project_is_used_only_when_shared() {
    let env = env_up("ks").await;
    reserve(&env, l4("shared", 2).owned_by(OWNER_PROJECT, &[PROJECT])).await;
    let theirs = l4("theirs", 2).owned_by(OWNER_PROJECT, &["someone-else"]);
    reserve(&env, theirs).await;
    reserve(&env, l4("local", 2).owned_by(OWNER_PROJECT, &[])).await;

    let shared = format!("projects/{OWNER_PROJECT}/reservations/shared");
    let op = env.add_pool("ks", l4_on(&shared, Some(1))).await;
    env.ok(&op).await;
    let calls = env.ok_calls("container", "nodePools.create").await;
    assert_eq!(
        calls.last().unwrap()["body"]["nodePool"]["config"]["reservationAffinity"]["values"],
        json!([shared]),
        "GKE gets the shared form as given"
    );
    assert_eq!(in_use(&env, OWNER_PROJECT, ZONE, "shared").await, 1);
    let got = env.journal("compute", "reservations.get").await;
    assert!(
        got.iter()
            .any(|e| e["path"].as_str().is_some_and(|p| p.contains(&format!(
                "projects/{OWNER_PROJECT}/zones/{ZONE}/reservations/shared"
            )))),
        "read from the owner project: {got:?}"
    );

    for name in ["theirs", "local", "missing"] {
        let theirs = format!("projects/{OWNER_PROJECT}/reservations/{name}");
        let m = refused(&env, "ks", l4_on(&theirs, None), "RESERVATION_NOT_FOUND").await;
        assert_eq!(m["project"], OWNER_PROJECT, "{m}");
    }
    // A malformed shared form is a 400.
    let r = env
        .post_pool("ks", l4_on("projects/x/reservations/r", None))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.reason(), "INVALID_RESERVATION");
}

#[tokio::test]
async fn up_with_a_reservation_is_checked() {
    let env = env().await;
    let absent = l4_on("absent", Some(1));
    let r = env
        .app
        .put(OWNER, &cluster_path("ku"), absent.clone())
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.reason(), "RESERVATION_NOT_FOUND");
    let preview = format!("{}?validateOnly=true", cluster_path("ku"));
    let p = env.app.put(OWNER, &preview, absent).await;
    assert_eq!(p.reason(), "RESERVATION_NOT_FOUND", "{}", p.body);
    assert!(
        env.ok_calls("container", "clusters.create")
            .await
            .is_empty()
    );

    reserve(&env, l4("up-res", 2).of("g2-standard-8", L4_GPU)).await;
    let r = env
        .app
        .put(OWNER, &cluster_path("ku"), l4_on("up-res", None))
        .await;
    assert_eq!(r.reason(), "RESERVATION_MISMATCH", "{}", r.body);
    reserve(&env, l4("up-ok", 1)).await;
    env.up_ok("ku", l4_on("up-ok", Some(1))).await;
    assert_eq!(in_use(&env, PROJECT, ZONE, "up-ok").await, 1);
}
