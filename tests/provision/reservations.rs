//! Reservations that are checked: a reservation made in the simulator through the
//! production Compute client; a pool bound to it is accepted and its nodes consume it;
//! each refusal (not found, another zone, machine type or accelerator, too few free
//! VMs, a shared reservation not shared with the pool's project) is a 409 with its
//! reason before anything is queued, in a preview too; the pool-create step checks again;
//! `up` with a reservation is checked; the simulated autoscaler stops at the reservation.

use k8s_openapi::api::core::v1::Pod;
use kineticd::cloud::gcp::types::reservation::{
    AllocationSpecificSkuReservation, Reservation, ReservedAccelerator, ReservedInstanceProperties,
    ShareSettings, ShareSettingsProjectConfig,
};
use kineticd::cloud::kube::{AccessToken, ClusterAccess, KubeClients, KubeCluster, KubeError};
use kube::Api;
use kube::api::PostParams;
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::*;

/// Another project, owner of shared reservations.
const OWNER_PROJECT: &str = "res-owner";

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
async fn in_use(env: &Env, project: &str, zone: &str, name: &str) -> i64 {
    let r = env
        .gcp()
        .compute
        .get_reservation(project, zone, name)
        .await
        .expect("reservations.get");
    r.specific_reservation.unwrap().in_use_count.unwrap_or(0)
}

fn pool_of(op: &Value) -> String {
    let target = op["metadata"]["target"].as_str().unwrap();
    target.rsplit('/').next().unwrap().to_owned()
}

/// POST the pool (and its preview); both refused with 409 `reason`; the metadata.
async fn refused(env: &Env, cluster: &str, body: Value, reason: &str) -> Value {
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
async fn the_pool_step_checks_again_and_creates_no_pool_when_the_reservation_is_gone() {
    let mut env = env().await;
    env.up_ok("kg", json!({"accelerator": "cpu"})).await;
    reserve(&env, l4("going", 2)).await;
    reserve(&env, l4("taken", 1)).await;
    env.pause().await;
    let gone = env
        .add_pool(
            "kg",
            json!({"accelerator": "l4", "minNodes": 1, "reservation": "going"}),
        )
        .await;
    let taken = env
        .add_pool(
            "kg",
            json!({"accelerator": "l4", "minNodes": 1, "reservation": "taken"}),
        )
        .await;
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
    let late = env
        .add_pool(
            "kg",
            json!({"accelerator": "l4", "minNodes": 1, "reservation": "one-left"}),
        )
        .await;
    let first = env
        .add_pool(
            "kg",
            json!({"accelerator": "l4", "minNodes": 1, "reservation": "one-left"}),
        )
        .await;
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
        (
            d["metadata"]["count"].as_str(),
            d["metadata"]["inUseCount"].as_str(),
            d["metadata"]["needed"].as_str()
        ),
        (Some("1"), Some("1"), Some("1"))
    );
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

type TokenFuture = futures::future::BoxFuture<'static, Result<Option<AccessToken>, KubeError>>;

fn kube(env: &Env, cluster: &str) -> KubeCluster {
    let clients = KubeClients::new(|| -> TokenFuture { Box::pin(async { Ok(None) }) });
    clients.cluster(ClusterAccess {
        key: format!("test/{cluster}"),
        endpoint: format!("{}/kube/{PROJECT}.{ZONE}.{cluster}", env.sim.url()),
        ca_certificate: None,
    })
}

#[tokio::test]
async fn the_autoscaler_stops_at_the_reservations_free_vms() {
    let env = explicit_clock().await;
    let up = env.up("ka", json!({"accelerator": "cpu"})).await;
    assert_eq!(env.run_out(&up).await["metadata"]["state"], "SUCCEEDED");
    reserve(&env, l4("two", 2)).await;
    let add = env
        .add_pool("ka", json!({"accelerator": "l4", "reservation": "two"}))
        .await;
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
    let env = env().await;
    env.up_ok("kw", json!({"accelerator": "cpu"})).await;
    env.arm("compute", "reservations.get", "HTTP_500", 1000)
        .await;
    let path = format!("{}/nodePools?validateOnly=true", cluster_path("kw"));
    let r = env
        .app
        .post(
            OWNER,
            &path,
            json!({"accelerator": "l4", "reservation": "unread"}),
        )
        .await;
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
    let r = env
        .app
        .post(
            OWNER,
            &path,
            json!({"accelerator": "l4", "reservation": "unread"}),
        )
        .await;
    assert_eq!(r.reason(), "RESERVATION_NOT_FOUND", "{}", r.body);
}
