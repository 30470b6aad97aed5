//! Helpers of the reservation tests: make a reservation through the production Compute
//! client (on either clock), read its `inUseCount`, post a pool and its preview that
//! must both be refused, and the production Kubernetes client on a simulated cluster.

use kineticd::cloud::gcp::types::reservation::{
    AllocationSpecificSkuReservation, Reservation, ReservedAccelerator, ReservedInstanceProperties,
    ShareSettings, ShareSettingsProjectConfig,
};
use kineticd::cloud::kube::{AccessToken, ClusterAccess, KubeClients, KubeCluster, KubeError};
use reqwest::StatusCode;
use serde_json::Value;
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

pub fn pool_of(op: &Value) -> String {
    let target = op["metadata"]["target"].as_str().unwrap();
    target.rsplit('/').next().unwrap().to_owned()
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

pub type TokenFuture = futures::future::BoxFuture<'static, Result<Option<AccessToken>, KubeError>>;

pub fn kube(env: &Env, cluster: &str) -> KubeCluster {
    let clients = KubeClients::new(|| -> TokenFuture { Box::pin(async { Ok(None) }) });
    clients.cluster(ClusterAccess {
        key: format!("test/{cluster}"),
        endpoint: format!("{}/kube/{PROJECT}.{ZONE}.{cluster}", env.sim.url()),
        ca_certificate: None,
    })
}
