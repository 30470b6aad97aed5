//! Compute reservations client against the simulator: insert (a zonal operation waited
//! through its selfLink), get, list, delete; the body on the wire (int64 count as a
//! string); requestId deduplication; 409 for a taken name; strict bodies and Compute's
//! checks (machine type and GPU offered in the zone, share settings); armed faults.

use std::time::Duration;

use kineticd::cloud::gcp::GcpClients;
use kineticd::cloud::gcp::types::reservation::{Reservation, ShareSettings};
use serde_json::json;
use uuid::Uuid;

use super::container::{P, Z};
use crate::common::{get_json, start_sim};
use crate::storage::simctl::{
    Want, arm, assert_not_found, assert_unknown_field, failed_with, journal,
};

use crate::common::gke::l4_reservation as l4;

async fn wait(gcp: &GcpClients, op: &kineticd::cloud::gcp::types::compute::Operation) {
    gcp.compute
        .wait_operation(op, &Default::default(), Duration::from_secs(120))
        .await
        .expect("zonal operation");
}

#[tokio::test]
async fn insert_get_list_delete() {
    let (sim, gcp) = start_sim().await;
    let c = &gcp.compute;
    let rid = Uuid::new_v4();
    let op = c
        .insert_reservation(P, Z, &l4("r-one", 4), rid)
        .await
        .unwrap();
    assert_eq!(op.operation_type, "insert");
    assert!(
        op.zone
            .as_deref()
            .is_some_and(|z| z.ends_with(&format!("/zones/{Z}")))
    );
    let again = c
        .insert_reservation(P, Z, &l4("r-one", 4), rid)
        .await
        .unwrap();
    assert_eq!(op.name, again.name, "same requestId, same operation");
    wait(&gcp, &op).await;
    assert_eq!(
        journal(&sim, "compute", "zoneOperations.get").await.len(),
        1
    );

    let j = journal(&sim, "compute", "reservations.insert").await;
    assert_eq!(j[0]["query"], format!("requestId={rid}"));
    assert_eq!(
        j[0]["body"],
        json!({"name": "r-one", "specificReservation": {"count": "4", "instanceProperties":
            {"machineType": "g2-standard-4", "guestAccelerators": [{"acceleratorCount": 1, "acceleratorType": "nvidia-l4"}]}},
            "specificReservationRequired": true})
    );
    let r = c.get_reservation(P, Z, "r-one").await.unwrap();
    assert_eq!(r.status.as_deref(), Some("READY"));
    assert!(r.zone.as_deref().is_some_and(|z| z.ends_with(Z)));
    let sku = r.specific_reservation.unwrap();
    assert_eq!((sku.count, sku.in_use_count), (Some(4), Some(0)));
    assert_eq!(
        r.share_settings.and_then(|s| s.share_type).as_deref(),
        Some("LOCAL")
    );
    let url = format!(
        "{}/compute/v1/projects/{P}/zones/{Z}/reservations/r-one",
        sim.url()
    );
    let raw = get_json(&kineticd::app::http_client().unwrap(), &url).await;
    assert_eq!(
        raw["specificReservation"]["count"], "4",
        "int64 as a string: {raw}"
    );
    assert_eq!(raw["specificReservation"]["inUseCount"], "0", "{raw}");

    // A taken name is 409, a new request id or not.
    let e = c
        .insert_reservation(P, Z, &l4("r-one", 1), Uuid::new_v4())
        .await;
    failed_with(e, 409, Want::Status("ALREADY_EXISTS"), "taken name");

    let op = c
        .insert_reservation(P, Z, &l4("r-two", 1), Uuid::new_v4())
        .await
        .unwrap();
    wait(&gcp, &op).await;
    let names: Vec<String> = c
        .list_reservations(P, Z)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["r-one", "r-two"]);
    let page = c.list_reservations_page(P, Z, Some(1), None).await.unwrap();
    assert_eq!(page.items.len(), 1);
    assert!(page.next_page_token.is_some());
    assert!(
        c.list_reservations(P, "us-central1-b")
            .await
            .unwrap()
            .is_empty()
    );

    let op = c
        .delete_reservation(P, Z, "r-one", Uuid::new_v4())
        .await
        .unwrap();
    wait(&gcp, &op).await;
    assert_not_found(c.get_reservation(P, Z, "r-one").await);
    assert_not_found(c.get_reservation(P, "us-central1-q", "r-two").await);
}

#[tokio::test]
async fn bad_reservations_are_refused_like_compute_does() {
    let (sim, gcp) = start_sim().await;
    let c = &gcp.compute;
    let mut no_gpu_here = l4("r-x", 1);
    no_gpu_here
        .specific_reservation
        .as_mut()
        .unwrap()
        .instance_properties
        .as_mut()
        .unwrap()
        .machine_type = "a3-highgpu-8g".into();
    let cases = [
        (
            Reservation {
                name: "Bad_Name".into(),
                ..l4("", 1)
            },
            Z,
            "resource.name",
        ),
        (l4("r-zero", 0), Z, "count"),
        (no_gpu_here, "us-central1-f", "machineType"),
        (
            Reservation {
                share_settings: Some(ShareSettings {
                    share_type: Some("SPECIFIC_PROJECTS".into()),
                    ..Default::default()
                }),
                ..l4("r-share", 1)
            },
            Z,
            "projectMap",
        ),
    ];
    for (r, zone, field) in cases {
        let e = c.insert_reservation(P, zone, &r, Uuid::new_v4()).await;
        let e = failed_with(e, 400, Want::Reason("invalid"), field);
        assert!(e.message.contains(field), "{field}: {e}");
    }
    // Unknown fields are refused.
    let path = format!("/compute/v1/projects/{P}/zones/{Z}/reservations");
    assert_unknown_field(&sim, &path, json!({"name": "r-u", "vmCount": 2}), "vmCount").await;

    // An armed fault answers before anything changes.
    arm(&sim, "compute", "reservations.get", "HTTP_503", 1).await;
    let op = c
        .insert_reservation(P, Z, &l4("r-f", 1), Uuid::new_v4())
        .await
        .unwrap();
    wait(&gcp, &op).await;
    let e = c.get_reservation(P, Z, "r-f").await;
    failed_with(e, 503, Want::Status("UNAVAILABLE"), "armed 503");
    assert!(
        c.get_reservation(P, Z, "r-f").await.is_ok(),
        "then the answer"
    );
}
