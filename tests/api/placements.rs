//! `POST /v1/teams/{team}/placements:search` against the simulator (issue 31): a GKE
//! cluster with an L4 pool of two nodes (one GPU in use), a reservation with free L4
//! VMs in another zone, and the region's other zones for new pools; the ranking, the
//! stockout history and Compute's advice lowering a zone, quota headroom, an unreadable
//! cloud answer as a warning, and every bad input as 400.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kineticd::cloud::gcp::types::container::Cluster;
use kineticd::cloud::kube::ClusterAccess;
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::TestApp;
use crate::common::gke::{autoscaled_pool, create_cluster_and_wait, default_pool, l4_reservation};
use crate::support::{
    ACME_KC, ALICE, BOB, C, EVE, P, Z, expect_invalid, expect_not_found, meta, ok,
};

const SEARCH: &str = "/v1/teams/acme/placements:search";
const POOL: &str = "gpu-l4-aa11";
/// The zone of the reservation.
const RZ: &str = "us-central1-b";

fn sim_config(stockouts: &[(&str, &str)]) -> kineticd::sim::SimConfig {
    kineticd::sim::SimConfig {
        clock: kineticd::sim::clock::ClockMode::Auto { speed: 0.0 },
        stockouts: stockouts
            .iter()
            .map(|(z, a)| ((*z).to_owned(), (*a).to_owned()))
            .collect(),
        ..Default::default()
    }
}

/// Team acme (ALICE owns, BOB views) with cluster kc: an L4 pool of two g2-standard-4
/// nodes, one GPU requested by a pod; and reservation `r-l4` of 3 L4 VMs in [`RZ`].
async fn fleet(stockouts: &[(&str, &str)]) -> (TestApp, kineticd::sim::Sim) {
    let (app, sim) = TestApp::spawn_sim_with(sim_config(stockouts)).await;
    app.team(ALICE, "acme", &[P]).await;
    app.member(ALICE, "acme", BOB, "VIEWER").await;
    app.cluster("acme", P, Z, C).await;
    let gcp = &app.state.cloud.gcp;
    let mut pool = autoscaled_pool(POOL, "g2-standard-4", "nvidia-l4", 1, 2);
    if let Some(a) = pool.autoscaling.as_mut() {
        a.max_node_count = Some(2);
    }
    let cluster = Cluster {
        name: C.into(),
        node_pools: vec![default_pool(), pool],
        ..Default::default()
    };
    let live = create_cluster_and_wait(gcp, P, Z, &cluster, Duration::from_secs(120)).await;
    let k = app
        .state
        .cloud
        .kube
        .cluster(ClusterAccess::for_gke(&live).expect("endpoint"));
    let pods: Api<Pod> = Api::namespaced(k.client().await.expect("client"), "default");
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "busy", "namespace": "default"},
        "spec": {
            "nodeSelector": {"cloud.google.com/gke-nodepool": POOL},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "image": "busybox",
                "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create pod");
    let r = l4_reservation("r-l4", 3);
    let op = gcp
        .compute
        .insert_reservation(P, RZ, &r, Uuid::new_v4())
        .await
        .expect("reservation");
    gcp.compute
        .wait_operation(&op, &Default::default(), Duration::from_secs(120))
        .await
        .expect("reservation done");
    (app, sim)
}

fn placements(v: &Value) -> Vec<Value> {
    v["placements"].as_array().cloned().unwrap_or_default()
}

fn new_pool<'a>(v: &'a [Value], zone: &str) -> &'a Value {
    v.iter()
        .find(|p| p["kind"] == "NEW_POOL" && p["zone"] == zone)
        .unwrap_or_else(|| panic!("no NEW_POOL in {zone}: {v:#?}"))
}

#[tokio::test]
async fn free_capacity_first_then_reservations_then_new_pools() {
    let (app, _sim) = fleet(&[]).await;
    // A VIEWER may ask: it changes nothing.
    let v = ok(app
        .post(BOB, SEARCH, json!({"accelerator": "l4", "count": 2}))
        .await);
    assert_eq!(v["warnings"], json!([]), "{v:#}");
    let p = placements(&v);
    let kinds: Vec<&str> = p.iter().map(|x| x["kind"].as_str().unwrap()).collect();
    let first_new = kinds.iter().position(|k| *k == "NEW_POOL").unwrap();
    assert_eq!(
        kinds[..first_new],
        ["EXISTING_CAPACITY", "RESERVATION"],
        "{v:#}"
    );
    assert!(kinds[first_new..].iter().all(|k| *k == "NEW_POOL"), "{v:#}");
    let scores: Vec<f64> = p.iter().map(|x| x["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");

    // One of the two L4s is requested: one free, half of the two asked for.
    let e = &p[0];
    assert_eq!(e["cluster"], ACME_KC);
    assert_eq!(e["pool"], POOL);
    assert_eq!(e["zone"], Z);
    assert_eq!(e["freeAccelerators"], 1);
    assert_eq!(e["hourlyCostUsd"], 0.0);
    assert_eq!(e["score"], 250.0);
    // Three reserved VMs of one L4 each: they cover the two.
    let r = &p[1];
    assert_eq!(
        r["reservation"],
        format!("projects/{P}/zones/{RZ}/reservations/r-l4")
    );
    assert_eq!(r["zone"], RZ);
    assert_eq!(r["freeAccelerators"], 3);
    assert_eq!(r["cluster"], ACME_KC);
    assert_eq!(r["score"], 200.0);
    // Quota: 32 L4s in the simulator's regions, the cluster's two nodes hold 2.
    for x in &p {
        assert_eq!(x["quotaHeadroom"], 30, "{x:#}");
        assert_eq!(x["recentStockouts"], 0, "{x:#}");
    }
    let n = new_pool(&p, "us-central1-c");
    assert_eq!(n["cluster"], ACME_KC);
    // Two on-demand L4s at USD 0.71.
    assert_eq!(n["hourlyCostUsd"], 1.42);
    assert_eq!(
        n["obtainability"], 0.89,
        "the simulator's advice for 2 VMs: {n:#}"
    );
    let reasons = n["reasons"].to_string();
    assert!(
        reasons.contains("quota NVIDIA_L4_GPUS in us-central1: 30 free, 2 needed"),
        "{reasons}"
    );
}

#[tokio::test]
async fn stockouts_recorded_and_advised_lower_a_zone() {
    // Compute's advice: us-central1-c is out of L4s now.
    let (app, _sim) = fleet(&[("us-central1-c", "nvidia-l4")]).await;
    // kineticd's own record: a pool create failed for capacity in us-central1-b this week.
    let cluster: Uuid = sqlx::query_scalar("SELECT id FROM clusters WHERE name = $1")
        .bind(C)
        .fetch_one(&app.db)
        .await
        .expect("cluster");
    let error = json!({"code": 8, "status": "RESOURCE_EXHAUSTED", "message": "no capacity",
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "ZONE_RESOURCE_EXHAUSTED",
            "domain": "kineticd", "metadata": {"cloudReason": "GCE_STOCKOUT",
            "cloudMessage": "GCE_STOCKOUT: The zone 'projects/acme-project/zones/us-central1-b' does not have enough resources"}}]});
    sqlx::query(
        "INSERT INTO operations (id, op_type, target, serial_key, team_id, cluster_id, created_by, state, error, end_time) \
         VALUES ($1, 'ADD_POOL', 'x', 'x', 'acme', $2, 'alice@example.com', 'FAILED', $3, now() - interval '2 days')",
    )
    .bind(Uuid::new_v4())
    .bind(cluster)
    .bind(&error)
    .execute(&app.db)
    .await
    .expect("failed operation");
    let zones = json!(["us-central1-a", "us-central1-b", "us-central1-c"]);
    let v = ok(app
        .post(
            ALICE,
            SEARCH,
            json!({"accelerator": "l4", "count": 2, "zones": zones}),
        )
        .await);
    let p = placements(&v);
    let (a, b, c) = (
        new_pool(&p, "us-central1-a"),
        new_pool(&p, "us-central1-b"),
        new_pool(&p, "us-central1-c"),
    );
    assert_eq!(b["recentStockouts"], 1, "{b:#}");
    assert_eq!(a["recentStockouts"], 0);
    assert_eq!(c["obtainability"], 0.0, "{c:#}");
    let score = |x: &Value| x["score"].as_f64().unwrap();
    assert!(score(a) > score(b) && score(b) > score(c), "{p:#?}");
    let order: Vec<&str> = p
        .iter()
        .filter(|x| x["kind"] == "NEW_POOL")
        .map(|x| x["zone"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["us-central1-a", "us-central1-b", "us-central1-c"]);
    assert!(
        b["reasons"]
            .to_string()
            .contains("1 operation failed for lack of capacity"),
        "{b:#}"
    );
    // Only the zones asked about.
    assert!(
        p.iter()
            .all(|x| zones.as_array().unwrap().contains(&x["zone"])),
        "{p:#?}"
    );
}

#[tokio::test]
async fn an_unreadable_cloud_answer_is_a_warning() {
    let (app, sim) = fleet(&[]).await;
    let r = kineticd::app::http_client()
        .unwrap()
        .post(format!("{}/sim/v1/faults", sim.url()))
        .json(&json!({"service": "compute", "method": "advice.capacity", "kind": "HTTP_500"}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let v = ok(app
        .post(ALICE, SEARCH, json!({"accelerator": "l4", "count": 1}))
        .await);
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("capacity advice for zone us-central1-a is not available"),
        "{warnings}"
    );
    let p = placements(&v);
    let n = new_pool(&p, "us-central1-a");
    assert!(n.get("obtainability").is_none(), "{n:#}");
    assert!(
        n["reasons"].to_string().contains("no capacity advice"),
        "{n:#}"
    );
    // The rest still answers.
    assert_eq!(p[0]["kind"], "EXISTING_CAPACITY");
}

#[tokio::test]
async fn bad_questions_are_400_and_outsiders_404() {
    let (app, _sim) = TestApp::spawn_sim_with(sim_config(&[])).await;
    app.team(ALICE, "acme", &[P]).await;
    let ask = |body: Value| app.post(ALICE, SEARCH, body);
    let r = ask(json!({"accelerator": "l5", "count": 1})).await;
    expect_invalid(&r, "UNKNOWN_ACCELERATOR", "l5");
    for (body, field, text) in [
        (json!({"count": 1}), "accelerator", "required"),
        (
            json!({"accelerator": "cpu", "count": 1}),
            "accelerator",
            "GPU or TPU",
        ),
        (json!({"accelerator": "l4"}), "count", "required"),
        (
            json!({"accelerator": "l4", "count": 0}),
            "count",
            "between 1 and 10000",
        ),
        (
            json!({"accelerator": "l4", "count": 10_001}),
            "count",
            "between 1 and 10000",
        ),
        (
            json!({"accelerator": "l4", "count": 1, "provisioning": "CHEAP"}),
            "provisioning",
            "CHEAP",
        ),
        (
            json!({"accelerator": "l4:spot", "count": 1, "provisioning": "ON_DEMAND"}),
            "provisioning",
            "spot",
        ),
        (
            json!({"accelerator": "l4", "count": 1, "zones": ["x"]}),
            "zones",
            "\"x\"",
        ),
        // Not a zone of its region, and a region Compute does not have.
        (
            json!({"accelerator": "l4", "count": 1, "zones": ["us-central1-z"]}),
            "zones",
            "us-central1-z",
        ),
        (
            json!({"accelerator": "l4", "count": 1, "zones": ["mars-north1-a"]}),
            "zones",
            "mars-north1-a",
        ),
    ] {
        let r = ask(body.clone()).await;
        expect_invalid(&r, "INVALID_PLACEMENT_QUERY", text);
        assert_eq!(meta(&r, "field"), field, "{body}");
    }
    let r = app
        .post(EVE, SEARCH, json!({"accelerator": "l4", "count": 1}))
        .await;
    expect_not_found(&r, "TEAM_NOT_FOUND");
}

/// The console asks the same question from a small form and shows the ranked table; a
/// refused question is shown above the form; outsiders get the 404 page.
#[tokio::test]
async fn the_console_page_asks_and_ranks() {
    let (app, _sim) = fleet(&[]).await;
    let page = |user: &'static str, query: &'static str| {
        let path = format!("/console/teams/acme/placements{query}");
        let req = app.request_as(user, reqwest::Method::GET, &path);
        async move {
            let r = req.send().await.expect("page");
            (r.status(), r.text().await.expect("html"))
        }
    };
    let sel = |s: &str| scraper::Selector::parse(s).expect("selector");
    let (status, html) = page(BOB, "").await;
    assert_eq!(status, reqwest::StatusCode::OK, "{html}");
    let doc = scraper::Html::parse_document(&html);
    assert!(
        doc.select(&sel(
            "form[data-testid=placements-form] label[for=placements-count]"
        ))
        .next()
        .is_some(),
        "{html}"
    );
    assert!(
        doc.select(&sel("tr[data-testid=placement-row]"))
            .next()
            .is_none()
    );

    let (status, html) = page(BOB, "?accelerator=l4&count=2").await;
    assert_eq!(status, reqwest::StatusCode::OK, "{html}");
    let doc = scraper::Html::parse_document(&html);
    let kinds: Vec<&str> = doc
        .select(&sel("tr[data-testid=placement-row]"))
        .filter_map(|r| r.value().attr("data-kind"))
        .collect();
    assert_eq!(kinds[..2], ["EXISTING_CAPACITY", "RESERVATION"], "{html}");
    assert!(
        kinds[2..].iter().all(|k| *k == "NEW_POOL") && kinds.len() > 2,
        "{kinds:?}"
    );
    let first: String = doc
        .select(&sel("tr[data-testid=placement-row]"))
        .next()
        .unwrap()
        .text()
        .collect();
    assert!(first.contains(POOL) && first.contains("250.0"), "{first}");

    let (status, html) = page(BOB, "?accelerator=l4&count=0").await;
    assert_eq!(status, reqwest::StatusCode::OK, "{html}");
    let doc = scraper::Html::parse_document(&html);
    let reason: String = doc
        .select(&sel("[data-testid=form-error-reason]"))
        .flat_map(|e| e.text())
        .collect();
    assert_eq!(reason, "INVALID_PLACEMENT_QUERY", "{html}");

    let (status, _) = page(EVE, "?accelerator=l4&count=2").await;
    assert_eq!(status, reqwest::StatusCode::NOT_FOUND);
    let (status, _) = page(EVE, "").await;
    assert_eq!(status, reqwest::StatusCode::NOT_FOUND);
}
