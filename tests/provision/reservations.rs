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

use support::{OWNER_PROJECT, in_use, pool_of, refused};
pub use support::{Res, l4, reserve};

use crate::support::*;

#[tokio::test]
async fn a_pool_bound_to_a_matching_reservation_is_accepted_and_its_nodes_consume_it() {
    let env = env().await;
    env.up_ok("kr", json!({"accelerator": "cpu"})).await;
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

    let op = env
        .add_pool(
            "kr",
            json!({"accelerator": "l4", "minNodes": 2, "reservation": "l4-res"}),
        )
        .await;
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
        json!({"accelerator": "l4", "minNodes": 2, "reservation": "l4-res"}),
        "RESERVATION_EXHAUSTED",
    )
    .await;
    assert_eq!(
        (
            m["count"].as_str(),
            m["inUseCount"].as_str(),
            m["needed"].as_str()
        ),
        (Some("3"), Some("2"), Some("2")),
        "{m}"
    );
    assert_eq!(m["reservation"], "l4-res");
    // Removing the pool gives the VMs back.
    let pool = pool_of(&op);
    let r = env
        .app
        .delete(OWNER, &format!("{}/nodePools/{pool}", cluster_path("kr")))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    env.ok(&r.body).await;
    assert_eq!(in_use(&env, PROJECT, ZONE, "l4-res").await, 0);
    // The check read the reservation with reservations.get.
    assert!(!env.ok_calls("compute", "reservations.get").await.is_empty());
}

#[tokio::test]
async fn each_mismatch_and_a_missing_reservation_are_refused_before_anything_is_queued() {
    let env = env().await;
    env.up_ok("km", json!({"accelerator": "cpu"})).await;
    reserve(
        &env,
        Res {
            zone: "us-central1-b",
            ..l4("in-b", 2)
        },
    )
    .await;
    reserve(
        &env,
        Res {
            machine: "g2-standard-8",
            ..l4("bigger", 2)
        },
    )
    .await;
    reserve(
        &env,
        Res {
            machine: "n1-standard-4",
            gpus: Some(("nvidia-tesla-t4", 1)),
            ..l4("t4s", 2)
        },
    )
    .await;
    let before = env.operations_of("ADD_NODE_POOL").await;

    let m = refused(
        &env,
        "km",
        json!({"accelerator": "l4", "reservation": "nope"}),
        "RESERVATION_NOT_FOUND",
    )
    .await;
    assert_eq!(
        (m["reservation"].as_str(), m["project"].as_str()),
        (Some("nope"), Some(PROJECT))
    );

    let m = refused(
        &env,
        "km",
        json!({"accelerator": "l4", "reservation": "in-b"}),
        "RESERVATION_MISMATCH",
    )
    .await;
    assert_eq!(
        (
            m["field"].as_str(),
            m["wanted"].as_str(),
            m["found"].as_str()
        ),
        (Some("zone"), Some(ZONE), Some("us-central1-b")),
        "{m}"
    );
    // The same reservation is fine for a pool in its zone.
    let op = env
        .add_pool(
            "km",
            json!({"accelerator": "l4", "reservation": "in-b", "zones": ["us-central1-b"]}),
        )
        .await;
    env.ok(&op).await;

    let m = refused(
        &env,
        "km",
        json!({"accelerator": "l4", "reservation": "bigger"}),
        "RESERVATION_MISMATCH",
    )
    .await;
    assert_eq!(
        (
            m["field"].as_str(),
            m["wanted"].as_str(),
            m["found"].as_str()
        ),
        (
            Some("machineType"),
            Some("g2-standard-4"),
            Some("g2-standard-8")
        ),
        "{m}"
    );

    let m = refused(
        &env,
        "km",
        json!({"accelerator": "t4x2", "reservation": "t4s"}),
        "RESERVATION_MISMATCH",
    )
    .await;
    assert_eq!(m["field"], "machineType", "{m}");
    let m = refused(
        &env,
        "km",
        json!({"accelerator": "t4", "reservation": "bigger"}),
        "RESERVATION_MISMATCH",
    )
    .await;
    assert_eq!(m["field"], "machineType", "{m}");

    // Another accelerator on the same machine type: N1 with T4 against a T4 reservation
    // wanting two GPUs per VM.
    reserve(
        &env,
        Res {
            machine: "n1-standard-4",
            gpus: Some(("nvidia-tesla-t4", 2)),
            ..l4("t4-pairs", 2)
        },
    )
    .await;
    let m = refused(
        &env,
        "km",
        json!({"accelerator": "t4", "reservation": "t4-pairs"}),
        "RESERVATION_MISMATCH",
    )
    .await;
    assert_eq!(
        (
            m["field"].as_str(),
            m["wanted"].as_str(),
            m["found"].as_str()
        ),
        (
            Some("guestAccelerators"),
            Some("1 x nvidia-tesla-t4"),
            Some("2 x nvidia-tesla-t4")
        ),
        "{m}"
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
    let env = env().await;
    env.up_ok("ks", json!({"accelerator": "cpu"})).await;
    reserve(
        &env,
        Res {
            project: OWNER_PROJECT,
            share_with: &[PROJECT],
            ..l4("shared", 2)
        },
    )
    .await;
    reserve(
        &env,
        Res {
            project: OWNER_PROJECT,
            share_with: &["someone-else"],
            ..l4("theirs", 2)
        },
    )
    .await;
    reserve(
        &env,
        Res {
            project: OWNER_PROJECT,
            ..l4("local", 2)
        },
    )
    .await;

    let shared = format!("projects/{OWNER_PROJECT}/reservations/shared");
    let op = env
        .add_pool(
            "ks",
            json!({"accelerator": "l4", "minNodes": 1, "reservation": shared}),
        )
        .await;
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

    for name in ["theirs", "local"] {
        let m = refused(
            &env,
            "ks",
            json!({"accelerator": "l4", "reservation": format!("projects/{OWNER_PROJECT}/reservations/{name}")}),
            "RESERVATION_NOT_FOUND",
        )
        .await;
        assert_eq!(m["project"], OWNER_PROJECT, "{m}");
    }
    let m = refused(
        &env,
        "ks",
        json!({"accelerator": "l4", "reservation": format!("projects/{OWNER_PROJECT}/reservations/missing")}),
        "RESERVATION_NOT_FOUND",
    )
    .await;
    assert_eq!(m["project"], OWNER_PROJECT, "{m}");
    // A malformed shared form is a 400.
    let r = env
        .post_pool(
            "ks",
            json!({"accelerator": "l4", "reservation": "projects/x/reservations/r"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.reason(), "INVALID_RESERVATION");
}

#[tokio::test]
async fn up_with_a_reservation_is_checked() {
    let env = env().await;
    let r = env
        .app
        .put(
            OWNER,
            &cluster_path("ku"),
            json!({"accelerator": "l4", "minNodes": 1, "reservation": "absent"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.reason(), "RESERVATION_NOT_FOUND");
    let preview = format!("{}?validateOnly=true", cluster_path("ku"));
    let p = env
        .app
        .put(
            OWNER,
            &preview,
            json!({"accelerator": "l4", "minNodes": 1, "reservation": "absent"}),
        )
        .await;
    assert_eq!(p.reason(), "RESERVATION_NOT_FOUND", "{}", p.body);
    assert!(
        env.ok_calls("container", "clusters.create")
            .await
            .is_empty()
    );

    reserve(
        &env,
        Res {
            machine: "g2-standard-8",
            ..l4("up-res", 2)
        },
    )
    .await;
    let r = env
        .app
        .put(
            OWNER,
            &cluster_path("ku"),
            json!({"accelerator": "l4", "reservation": "up-res"}),
        )
        .await;
    assert_eq!(r.reason(), "RESERVATION_MISMATCH", "{}", r.body);
    reserve(&env, l4("up-ok", 1)).await;
    env.up_ok(
        "ku",
        json!({"accelerator": "l4", "minNodes": 1, "reservation": "up-ok"}),
    )
    .await;
    assert_eq!(in_use(&env, PROJECT, ZONE, "up-ok").await, 1);
}
