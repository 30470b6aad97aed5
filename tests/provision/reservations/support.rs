//! Helpers of the reservation tests: make a reservation through the production Compute
//! client (on either clock), read its `inUseCount`, post a pool and its preview that
//! must both be refused, and the production Kubernetes client on a simulated cluster.

use kineticd::cloud::gcp::types::reservation::{
    AllocationSpecificSkuReservation, Reservation, ReservedAccelerator, ReservedInstanceProperties,
    ShareSettings, ShareSettingsProjectConfig,
};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::*;

/// Another project, owner of shared reservations.
pub const OWNER_PROJECT: &str = "res-owner";

/// A reservation to make: `count` VMs of `machine` (with `gpus` listed) in `zone`.
pub struct Res<'a> {
    pub project: &'a str,
    pub zone: &'a str,
    pub name: &'a str,
    pub machine: &'a str,
    pub gpus: Option<(&'a str, i32)>,
    pub count: i64,
    /// Projects it is shared with (SPECIFIC_PROJECTS), none: LOCAL.
    pub share_with: &'a [&'a str],
}

/// `count` L4 VMs (`g2-standard-4`) in the test project's zone.
pub fn l4(name: &str, count: i64) -> Res<'_> {
    Res {
        project: PROJECT,
        zone: ZONE,
        name,
        machine: "g2-standard-4",
        gpus: Some(("nvidia-l4", 1)),
        count,
        share_with: &[],
    }
}

impl<'a> Res<'a> {
    /// In `zone` instead.
    pub fn in_zone(self, zone: &'a str) -> Self {
        Res { zone, ..self }
    }

    /// Of `machine` VMs with `gpus` (type, count per VM) instead.
    pub fn of(self, machine: &'a str, gpus: Option<(&'a str, i32)>) -> Self {
        Res {
            machine,
            gpus,
            ..self
        }
    }

    /// Made in `project` (the owner of a shared reservation), shared with `share_with`.
    pub fn owned_by(self, project: &'a str, share_with: &'a [&'a str]) -> Self {
        Res {
            project,
            share_with,
            ..self
        }
    }
}

/// The body of an L4 pool bound to `reservation`, of `min_nodes` when given.
pub fn l4_on(reservation: &str, min_nodes: Option<u32>) -> Value {
    let mut body = json!({"accelerator": "l4", "reservation": reservation});
    if let Some(n) = min_nodes {
        body["minNodes"] = json!(n);
    }
    body
}

/// Asserts a RESERVATION_MISMATCH's metadata `m`: `field` wanted `wanted`, found `found`.
#[track_caller]
pub fn assert_mismatch(m: &Value, field: &str, wanted: &str, found: &str) {
    assert_eq!(
        (
            m["field"].as_str(),
            m["wanted"].as_str(),
            m["found"].as_str()
        ),
        (Some(field), Some(wanted), Some(found)),
        "{m}"
    );
}

/// The `count`, `inUseCount` and `needed` of a RESERVATION_EXHAUSTED's metadata `m`.
pub fn exhausted_counts(m: &Value) -> (Option<&str>, Option<&str>, Option<&str>) {
    (
        m["count"].as_str(),
        m["inUseCount"].as_str(),
        m["needed"].as_str(),
    )
}

/// Make the reservation through the production client and wait for its operation.
pub async fn reserve(env: &Env, r: Res<'_>) -> Reservation {
    let body = Reservation {
        name: r.name.into(),
        specific_reservation: Some(AllocationSpecificSkuReservation {
            count: Some(r.count),
            instance_properties: Some(ReservedInstanceProperties {
                machine_type: r.machine.into(),
                guest_accelerators: r
                    .gpus
                    .iter()
                    .map(|(t, n)| ReservedAccelerator {
                        accelerator_type: (*t).into(),
                        accelerator_count: Some(*n),
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        specific_reservation_required: Some(true),
        share_settings: (!r.share_with.is_empty()).then(|| ShareSettings {
            share_type: Some("SPECIFIC_PROJECTS".into()),
            project_map: r
                .share_with
                .iter()
                .map(|p| {
                    (
                        (*p).to_owned(),
                        ShareSettingsProjectConfig {
                            project_id: Some((*p).to_owned()),
                        },
                    )
                })
                .collect(),
        }),
        ..Default::default()
    };
    let compute = env.gcp().compute;
    let op = compute
        .insert_reservation(r.project, r.zone, &body, Uuid::new_v4())
        .await
        .expect("reservations.insert");
    // Moving the clock on makes this work on an explicit clock too (harmless at speed 0).
    let (scope, name) = kineticd::cloud::gcp::compute::operation_ref(&op).expect("zonal operation");
    assert!(name.starts_with("operation-"), "{name}");
    for _ in 0..100 {
        let now = compute
            .get_operation(&scope, &name)
            .await
            .expect("zoneOperations.get");
        if now.is_done() {
            assert!(now.error.is_none(), "reservations.insert failed: {now:?}");
            break;
        }
        env.advance(5.0).await;
    }
    compute
        .get_reservation(r.project, r.zone, r.name)
        .await
        .expect("reservations.get")
}

/// `inUseCount` of a reservation now.
pub async fn in_use(env: &Env, project: &str, zone: &str, name: &str) -> i64 {
    let r = env
        .gcp()
        .compute
        .get_reservation(project, zone, name)
        .await
        .expect("reservations.get");
    r.specific_reservation.unwrap().in_use_count.unwrap_or(0)
}

/// POST the pool (and its preview); both refused with 409 `reason`; the metadata.
pub async fn refused(env: &Env, cluster: &str, body: Value, reason: &str) -> Value {
    let preview = format!("{}/nodePools?validateOnly=true", cluster_path(cluster));
    let p = env.app.post(OWNER, &preview, body.clone()).await;
    assert_eq!(p.status, StatusCode::CONFLICT, "preview: {}", p.body);
    assert_eq!(p.reason(), reason, "{}", p.body);
    let r = env.post_pool(cluster, body).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.reason(), reason, "{}", r.body);
    assert_eq!(
        p.body["error"]["details"][0]["metadata"], r.body["error"]["details"][0]["metadata"],
        "a preview refuses the same way"
    );
    r.body["error"]["details"][0]["metadata"].clone()
}
