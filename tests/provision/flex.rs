//! Flex-start and queued-provisioning pools end to end: the bodies kineticd sends GKE
//! (field by field, and every field checked against the discovery document's schemas),
//! the queued pool's ProvisioningRequest template in the response, the refusals made
//! before anything is queued (contradictions, run durations over 7 days, old GKE
//! versions, unsupported accelerators, quota on the preemptible metric), GKE's own
//! refusals in the simulator, and the preview's mode and cost. The simulator's
//! autoscaling of these pools is in [`crate::flex_sim`].

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::*;

const SCHEMAS: &str = include_str!("../fixtures/discovery/container.v1.nodepool.json");

/// Every field of `v` is a property of discovery schema `schema` (following `$ref`s
/// and array items), and every enum value is one the schema lists.
fn conforms(v: &Value, schema: &Value, all: &Value, at: &str) {
    if let Some(r) = schema["$ref"].as_str() {
        return conforms(v, &all[r], all, at);
    }
    if let Some(values) = schema["enum"].as_array() {
        assert!(values.contains(v), "{at}: {v} is not one of {values:?}");
    }
    match (v, schema["type"].as_str()) {
        (Value::Object(m), Some("object")) => {
            for (k, x) in m {
                let prop = if let Some(p) = schema["properties"].get(k) {
                    p
                } else {
                    let extra = &schema["additionalProperties"];
                    assert!(
                        extra.is_object(),
                        "{at}.{k} is not in the discovery document"
                    );
                    extra
                };
                conforms(x, prop, all, &format!("{at}.{k}"));
            }
        }
        (Value::Array(items), Some("array")) => {
            for (i, x) in items.iter().enumerate() {
                conforms(x, &schema["items"], all, &format!("{at}[{i}]"));
            }
        }
        (Value::Bool(_), Some("boolean")) | (Value::Number(_), Some("integer" | "number")) => {}
        (Value::String(_), Some("string")) => {}
        // int64 fields travel as strings.
        (Value::String(_), Some("integer")) if schema["format"] == "int64" => {}
        (other, t) => panic!("{at}: {other} does not match discovery type {t:?}"),
    }
}

fn check_against_discovery(request: &Value) {
    let doc: Value = serde_json::from_str(SCHEMAS).expect("schemas");
    let all = &doc["schemas"];
    conforms(
        request,
        &all["CreateNodePoolRequest"],
        all,
        "CreateNodePoolRequest",
    );
}

fn created(calls: &[Value], pool: &str) -> Value {
    calls
        .iter()
        .find(|e| e["body"]["nodePool"]["name"] == pool)
        .unwrap_or_else(|| panic!("no nodePools.create for {pool}"))["body"]
        .clone()
}

#[tokio::test]
async fn flex_start_and_queued_pools_are_created_as_gke_documents_them() {
    let env = env_up("kf").await;
    let zones = json!(["us-central1-a", "us-central1-b"]);
    let flex_body = json!({"maxRunDuration": "3600s", "zones": zones});
    let flex = env
        .add_pool("kf", provisioned("l4", "FLEX_START", flex_body))
        .await;
    let queued_body = json!({"maxRunDuration": "86400s"});
    let queued = env
        .add_pool("kf", provisioned("l4x2", "QUEUED", queued_body))
        .await;
    env.ok(&flex).await;
    let done = env.ok(&queued).await;
    let (flex_id, queued_id) = (pool_of(&flex), pool_of(&queued));
    let calls = env.ok_calls("container", "nodePools.create").await;

    let body = created(&calls, &flex_id);
    check_against_discovery(&body);
    let p = &body["nodePool"];
    assert_eq!(p["initialNodeCount"], 0);
    assert_eq!(p["config"]["flexStart"], true);
    assert_eq!(p["config"]["machineType"], "g2-standard-4");
    assert_eq!(p["config"]["maxRunDuration"], "3600s");
    assert!(p["config"].get("spot").is_none(), "{p}");
    assert_eq!(
        p["config"]["reservationAffinity"],
        json!({"consumeReservationType": "NO_RESERVATION"})
    );
    assert_eq!(
        p["autoscaling"],
        json!({"enabled": true, "totalMinNodeCount": 0, "totalMaxNodeCount": 20, "locationPolicy": "ANY"}),
        "10 per zone, as the record says, over two zones"
    );
    assert_eq!(
        p["management"],
        json!({"autoRepair": false, "autoUpgrade": true})
    );
    assert!(p.get("queuedProvisioning").is_none(), "{p}");

    let body = created(&calls, &queued_id);
    check_against_discovery(&body);
    let q = &body["nodePool"];
    assert_eq!(q["queuedProvisioning"], json!({"enabled": true}));
    assert_eq!(q["config"]["flexStart"], true);
    assert_eq!(
        q["config"]["accelerators"][0]["acceleratorType"],
        "nvidia-l4"
    );
    assert_eq!(q["config"]["accelerators"][0]["acceleratorCount"], "2");
    assert!(
        q["config"].get("maxRunDuration").is_none(),
        "a queued pool's run duration is each request's: {q}"
    );
    assert_eq!(q["autoscaling"]["locationPolicy"], "ANY");
    assert_eq!(q["management"]["autoRepair"], false);
    assert_eq!(q["initialNodeCount"], 0);

    // The records and the API say the mode.
    let path = |id: &str| format!("{}/nodePools/{id}", cluster_path("kf"));
    let f = env.app.get(OWNER, &path(&flex_id)).await.body;
    assert_eq!(
        (&f["provisioning"], &f["maxRunDuration"], &f["spot"]),
        (&json!("FLEX_START"), &json!("3600s"), &json!(false))
    );
    let q = env.app.get(OWNER, &path(&queued_id)).await.body;
    assert_eq!(q["provisioning"], "QUEUED");
    assert_eq!(q["maxRunDuration"], "86400s");

    // GKE's pools match their records: no drift (totals are per zone times zones).
    let status = env.status("kf").await;
    assert_eq!(status["drift"], json!([]), "{status}");

    // The queued pool's response: the ProvisioningRequest a job needs, naming the pool.
    let r = &done["response"];
    let pr = &r["provisioningRequest"];
    assert_eq!(pr["apiVersion"], "autoscaling.x-k8s.io/v1");
    assert_eq!(pr["kind"], "ProvisioningRequest");
    assert_eq!(
        pr["spec"]["provisioningClassName"],
        "queued-provisioning.gke.io"
    );
    assert_eq!(pr["spec"]["parameters"]["maxRunDurationSeconds"], "86400");
    let template = format!("{queued_id}-template");
    assert_eq!(pr["spec"]["podSets"][0]["podTemplateRef"]["name"], template);
    assert_eq!(r["podTemplate"]["metadata"]["name"], template);
    assert_eq!(
        r["nodeSelector"],
        json!({"cloud.google.com/gke-nodepool": queued_id})
    );
    let spec = &r["podTemplate"]["template"]["spec"];
    assert_eq!(spec["nodeSelector"], r["nodeSelector"]);
    assert_eq!(
        spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
        "2"
    );
    assert_eq!(
        r["podAnnotations"]["cluster-autoscaler.kubernetes.io/consume-provisioning-request"],
        pr["metadata"]["name"]
    );
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(r["snippet"].as_str().expect("snippet")).expect("YAML");
    assert_eq!(docs, [r["podTemplate"].clone(), pr.clone()]);
    // The flex-start pool's operation carries no template.
    assert!(
        env.op(&flex).await["response"]
            .get("provisioningRequest")
            .is_none()
    );
}

#[tokio::test]
async fn contradictions_and_limits_are_refused_before_anything_is_queued() {
    let env = env_up("kx").await;
    // (accelerator, provisioning, further fields, reason, what the message says)
    let cases = [
        (
            "l4",
            "SPOT",
            json!({"spot": false}),
            "PROVISIONING_CONFLICT",
            "spot: false",
        ),
        (
            "l4",
            "FLEX_START",
            json!({"spot": true}),
            "PROVISIONING_CONFLICT",
            "spot",
        ),
        (
            "l4:spot",
            "QUEUED",
            json!({}),
            "PROVISIONING_CONFLICT",
            "spot",
        ),
        (
            "l4",
            "FLEX_START",
            json!({"reservation": "res-a"}),
            "PROVISIONING_CONFLICT",
            "reservation",
        ),
        (
            "l4",
            "FLEX_START",
            json!({"failover": true}),
            "PROVISIONING_CONFLICT",
            "failover",
        ),
        (
            "l4",
            "QUEUED",
            json!({"minNodes": 1}),
            "PROVISIONING_CONFLICT",
            "minNodes",
        ),
        (
            "l4",
            "ON_DEMAND",
            json!({"reservation": "res-a"}),
            "PROVISIONING_CONFLICT",
            "RESERVATION",
        ),
        (
            "l4",
            "RESERVATION",
            json!({}),
            "RESERVATION_REQUIRED",
            "reservation",
        ),
        (
            "l4",
            "flex",
            json!({}),
            "INVALID_PROVISIONING",
            "FLEX_START",
        ),
        (
            "l4",
            "FLEX_START",
            json!({"maxRunDuration": "604801s"}),
            "INVALID_MAX_RUN_DURATION",
            "7 days",
        ),
        (
            "l4",
            "QUEUED",
            json!({"maxRunDuration": "8d"}),
            "INVALID_MAX_RUN_DURATION",
            "86400s",
        ),
        (
            "t4",
            "FLEX_START",
            json!({}),
            "FLEX_START_UNSUPPORTED",
            "N1",
        ),
        (
            "v5e-16",
            "FLEX_START",
            json!({}),
            "FLEX_START_UNSUPPORTED",
            "QUEUED",
        ),
    ];
    for (accelerator, provisioning, extra, reason, says) in cases {
        let body = provisioned(accelerator, provisioning, extra);
        for query in ["?validateOnly=true", ""] {
            let path = format!("{}/nodePools{query}", cluster_path("kx"));
            let r = env.app.post(OWNER, &path, body.clone()).await;
            assert_refused(&r, &body, reason, says);
        }
    }
    let r = env
        .post_pool(
            "kx",
            json!({"accelerator": "l4", "provisioning": "QUEUED", "maxRunDuration": "700000s"}),
        )
        .await;
    let meta = &r.body["error"]["details"][0]["metadata"];
    assert_eq!(meta["maximum"], "604800s", "{}", r.body);
    assert_eq!(
        env.operations_of("ADD_NODE_POOL").await["operations"],
        json!([])
    );
    assert!(
        env.ok_calls("container", "nodePools.create")
            .await
            .is_empty()
    );
    // The old fields keep working, and agree with their modes.
    let spot = provisioned("l4", "SPOT", json!({"spot": true}));
    let op = env.add_pool("kx", spot).await;
    env.ok(&op).await;
    let rec = env
        .app
        .get(
            OWNER,
            &format!("{}/nodePools/{}", cluster_path("kx"), pool_of(&op)),
        )
        .await;
    assert_eq!(
        (&rec.body["provisioning"], &rec.body["spot"]),
        (&json!("SPOT"), &json!(true))
    );
}

#[tokio::test]
async fn an_old_gke_version_is_refused_with_the_version_found_and_the_minimum() {
    let env = env_up_on_gke("1.32.1-gke.1200000", "ko").await;
    for (acc, mode, minimum) in [
        ("l4", "FLEX_START", "1.32.2-gke.1652000"),
        ("a100", "QUEUED", "1.32.2-gke.1652000"),
        ("v5e-8", "FLEX_START", "1.33.0-gke.1712000"),
    ] {
        for q in ["?validateOnly=true", ""] {
            let body = provisioned(acc, mode, json!({}));
            let meta = gke_too_old(&env, "ko", q, body, "1.32.1-gke.1200000").await;
            assert_eq!(meta["minimumVersion"], minimum, "{acc} {mode}");
            assert_eq!(meta["provisioning"], mode);
        }
    }
    assert_eq!(
        env.operations_of("ADD_NODE_POOL").await["operations"],
        json!([])
    );
    // GKE refuses it too (the simulator, asked directly through the production client).
    let mut pool = kineticd::cloud::gcp::types::container::NodePool {
        name: "direct".into(),
        ..Default::default()
    };
    pool.config = Some(kineticd::cloud::gcp::types::container::NodeConfig {
        machine_type: Some("g2-standard-4".into()),
        flex_start: Some(true),
        reservation_affinity: Some(
            kineticd::cloud::gcp::types::container::ReservationAffinity {
                consume_reservation_type: "NO_RESERVATION".into(),
                ..Default::default()
            },
        ),
        ..Default::default()
    });
    pool.initial_node_count = Some(0);
    pool.autoscaling = Some(
        kineticd::cloud::gcp::types::container::NodePoolAutoscaling {
            enabled: Some(true),
            total_max_node_count: Some(2),
            location_policy: Some("ANY".into()),
            ..Default::default()
        },
    );
    pool.management = Some(kineticd::cloud::gcp::types::container::NodeManagement {
        auto_repair: Some(false),
        auto_upgrade: Some(true),
    });
    let gke = env.gcp().container;
    let e = gke
        .create_node_pool(PROJECT, ZONE, "ko", &pool)
        .await
        .expect_err("too old");
    assert!(e.to_string().contains("1.32.2-gke.1652000"), "{e}");
    // On demand is fine on this version.
    env.ok(&env.add_pool("ko", json!({"accelerator": "l4"})).await)
        .await;
}

#[tokio::test]
async fn the_simulated_gke_refuses_flex_start_with_spot_or_a_reservation() {
    let env = env_up("kg").await;
    let ok = serde_json::from_value::<kineticd::cloud::gcp::types::container::NodePool>(json!({
        "name": "flex",
        "initialNodeCount": 0,
        "config": {"machineType": "g2-standard-4", "flexStart": true,
                   "reservationAffinity": {"consumeReservationType": "NO_RESERVATION"}},
        "autoscaling": {"enabled": true, "totalMaxNodeCount": 2, "locationPolicy": "ANY"},
        "management": {"autoRepair": false},
    }))
    .expect("pool");
    let gke = env.gcp().container;
    let cluster = "kg";
    let bad = |f: &dyn Fn(&mut kineticd::cloud::gcp::types::container::NodePool)| {
        let mut p = ok.clone();
        f(&mut p);
        p
    };
    for (pool, says) in [
        (
            bad(&|p| p.config.as_mut().unwrap().spot = Some(true)),
            "Spot",
        ),
        (
            bad(&|p| {
                p.config.as_mut().unwrap().reservation_affinity = None;
            }),
            "NO_RESERVATION",
        ),
        (
            bad(&|p| p.config.as_mut().unwrap().max_run_duration = Some("700000s".into())),
            "7 days",
        ),
        (bad(&|p| p.management = None), "auto-repair"),
        (
            bad(&|p| p.autoscaling.as_mut().unwrap().location_policy = Some("BALANCED".into())),
            "ANY",
        ),
    ] {
        let e = gke
            .create_node_pool(PROJECT, ZONE, cluster, &pool)
            .await
            .expect_err(says);
        assert!(e.to_string().contains(says), "{says}: {e}");
    }
}

#[tokio::test]
async fn the_preview_shows_the_mode_and_cost_and_quota_is_checked_on_the_preemptible_metric() {
    let env = env_with_quota("PREEMPTIBLE_NVIDIA_A100_GPUS", 4.0).await;
    env.up_ok("kp", json!({"accelerator": "cpu"})).await;
    let flex = provisioned("l4", "FLEX_START", json!({}));
    let r = env.preview_pool("kp", flex).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let a = &r.body["actions"][0];
    assert_eq!(a["type"], "container.nodePool");
    assert_eq!(a["details"]["provisioning"], "FLEX_START");
    assert_eq!(a["details"]["spot"], false);
    assert_eq!(a["details"]["maxRunDuration"], "604800s");
    // No flex-start price in the built-in table: the on-demand upper bound, said so.
    assert_eq!(r.body["estimatedHourlyCost"]["atMax"], 7.1, "{}", r.body);
    let warnings = r.body["warnings"].to_string();
    assert!(warnings.contains("flex-start price"), "{warnings}");
    // An on-demand preview shows no mode (as before).
    let r = env.preview_pool("kp", json!({"accelerator": "l4"})).await;
    assert!(
        r.body["actions"][0]["details"]
            .get("provisioning")
            .is_none()
    );

    // Flex-start VMs are charged to the preemptible metric.
    for validate_only in [true, false] {
        let queued = provisioned("a100x8", "QUEUED", json!({}));
        let r = if validate_only {
            env.preview_pool("kp", queued).await
        } else {
            env.post_pool("kp", queued).await
        };
        let m = quota_refusal(&r);
        assert_eq!(m["metric"], "PREEMPTIBLE_NVIDIA_A100_GPUS");
        assert_eq!(m["needed"], "8");
    }
    // On demand uses the other metric (not limited here).
    let r = env
        .preview_pool("kp", json!({"accelerator": "a100x8"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}
