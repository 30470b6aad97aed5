//! Adoption (issue 31): `up` of a cluster GKE has with kinetic's mark and kineticd has
//! no record of is Kinetic's second `up` (every pool kept and imported, `accelerator`
//! ignored, nothing created twice, no drift after); `:discoverClusters` lists what a
//! team's projects hold unrecorded; `nodePools/{pool}:import` records one pool; what
//! lacks kinetic's mark is refused.

use std::time::Duration;

use kineticd::cloud::gcp::types::container::NodePool;
use kineticd::domain::resource_names::ClusterNames;
use kineticd::ops::workflows::cluster::wire;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::checks::names_flagged;
use crate::common::gke::{create_cluster_and_wait, gke_done};
use crate::support::{Env, OWNER, PROJECT, ZONE, assert_error, cluster_path, env, pool_path};

/// A team's cluster as `kinetic up` leaves it: an L4 pool kept at 2 nodes and a spot
/// TPU pool; the L4 pool's id and the TPU pool's.
async fn legacy(env: &Env) -> (String, String) {
    env.up_ok("legacy", json!({"accelerator": "gpu-l4", "minNodes": 2}))
        .await;
    let tpu = env
        .added_pool(
            "legacy",
            json!({"accelerator": "tpu-v5litepod-4", "spot": true}),
        )
        .await;
    let pools = env.pools("legacy").await["nodePools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let l4 = pools
        .iter()
        .map(|p| p["poolId"].as_str().unwrap().to_owned())
        .find(|id| id != &tpu)
        .expect("the L4 pool");
    (l4, tpu)
}

/// The record fields adoption must reproduce.
fn shape(p: &Value) -> Value {
    json!({
        "poolId": p["poolId"], "accelerator": p["accelerator"], "minNodes": p["minNodes"],
        "maxNodes": p["maxNodes"], "spot": p["spot"], "provisioning": p["provisioning"],
        "reservation": p["reservation"], "maxRunDuration": p["maxRunDuration"],
        "estimatedHourlyCost": p["estimatedHourlyCost"],
    })
}

fn shapes(pools: &Value) -> Vec<Value> {
    let mut v: Vec<Value> = pools["nodePools"]
        .as_array()
        .expect("nodePools")
        .iter()
        .map(shape)
        .collect();
    v.sort_by_key(|p| p["poolId"].as_str().unwrap_or("").to_owned());
    v
}

fn action<'a>(plan: &'a Value, id: &str) -> &'a Value {
    plan["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .find(|a| a["id"] == id)
        .unwrap_or_else(|| panic!("no action {id} in {plan}"))
}

#[tokio::test]
async fn up_of_an_unrecorded_cluster_adopts_it_as_the_second_up() {
    let env = env().await;
    let (l4, tpu) = legacy(&env).await;
    let before = shapes(&env.pools("legacy").await);
    let lost = env.lost_database().await;

    // The preview reads the cloud: everything exists, so nothing is created, and it
    // lists the pools it imports; the accelerator asked for is ignored.
    let plan = lost
        .preview_up("legacy", json!({"accelerator": "gpu-a100"}))
        .await;
    // Only the caller's profile is written.
    let changed: Vec<&Value> = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["action"] != "KEEP")
        .collect();
    assert_eq!(changed.len(), 1, "{plan}");
    assert_eq!(changed[0]["type"], "kineticd.profile");
    let cluster = action(&plan, "cluster");
    assert!(
        cluster["reason"].as_str().unwrap().contains("adopted"),
        "{cluster}"
    );
    let pool_ids: Vec<&str> = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["type"] == "container.nodePool")
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(pool_ids.len(), 2, "{plan}");
    let l4_action = action(&plan, &format!("pool:{l4}"));
    assert_eq!(l4_action["details"]["minNodes"], 2, "{l4_action}");
    assert!(l4_action["reason"].as_str().unwrap().contains("imported"));
    assert_eq!(
        action(&plan, &format!("pool:{tpu}"))["details"]["spot"],
        true
    );
    let warnings = plan["warnings"].to_string();
    assert!(warnings.contains("accelerator is ignored"), "{warnings}");
    assert!(
        warnings.contains("adopting") && warnings.contains(&l4),
        "{warnings}"
    );

    // The apply adds no pool and records both as GKE has them.
    let done = lost
        .up_ok("legacy", json!({"accelerator": "gpu-a100"}))
        .await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED");
    // (The journal starts when the second kineticd was set up.)
    for method in ["nodePools.create", "clusters.create"] {
        let sent = lost.journal("container", method).await;
        assert!(sent.is_empty(), "adoption sent {method}: {sent:?}");
    }
    assert_eq!(shapes(&lost.pools("legacy").await), before);
    assert_eq!(lost.api_state("legacy").await, "RUNNING");

    // After it, status shows no drift.
    let status = lost.status("legacy").await;
    assert_eq!(status["drift"], json!([]), "{status}");

    // A second up is an ordinary reconcile: it keeps the pools, imports nothing more.
    let again = lost.preview_up("legacy", json!({})).await;
    assert!(
        !again["warnings"].to_string().contains("adopting"),
        "{again}"
    );
}

#[tokio::test]
async fn a_cluster_without_kinetics_mark_is_refused_and_discovered_as_not_adoptable() {
    let env = env().await;
    let gcp = env.gcp();
    let n = ClusterNames::new(
        &PROJECT.parse().unwrap(),
        &ZONE.parse().unwrap(),
        &"alien".parse().unwrap(),
    );
    let net = kineticd::cloud::gcp::types::compute::Network {
        name: n.network.clone(),
        auto_create_subnetworks: Some(true),
        ..Default::default()
    };
    let op = gcp
        .compute
        .insert_network(PROJECT, &net, uuid::Uuid::new_v4())
        .await
        .expect("network");
    env.wait_compute(&op).await;
    let mut c = wire::cluster(&n);
    c.resource_labels.clear();
    create_cluster_and_wait(&gcp, PROJECT, ZONE, &c, Duration::from_secs(60)).await;

    // Neither a preview nor an up takes it over.
    let alien = cluster_path("alien");
    for path in [format!("{alien}?validateOnly=true"), alien] {
        let r = env
            .app
            .put(OWNER, &path, json!({"accelerator": "gpu-l4"}))
            .await;
        assert_eq!(r.status, StatusCode::CONFLICT, "{path}: {}", r.body);
        assert_eq!(r.reason(), "RESOURCE_NOT_OURS", "{path}: {}", r.body);
    }

    let d = discover(&env).await;
    let alien = d["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str().unwrap().ends_with("/clusters/alien"))
        .unwrap_or_else(|| panic!("{d}"));
    assert_eq!(alien["adoptable"], false);
    assert!(
        alien["reason"].as_str().unwrap().contains("kinetic=true"),
        "{alien}"
    );
}

async fn discover(env: &Env) -> Value {
    let r = env
        .app
        .get(OWNER, "/v1/teams/ml-team:discoverClusters")
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body
}

/// A pool made in GKE behind kineticd's back: with kinetic's mark (as the `kinetic`
/// CLI's `pool add` makes it) or without.
async fn gke_pool(env: &Env, cluster: &str, id: &str, ours: bool) {
    let n = ClusterNames::new(
        &PROJECT.parse().unwrap(),
        &ZONE.parse().unwrap(),
        &cluster.parse().unwrap(),
    );
    let acc = match kineticd::domain::accelerators::parse("gpu-l4").unwrap() {
        kineticd::domain::accelerators::Choice::Accelerator(r) => r,
        kineticd::domain::accelerators::Choice::Cpu => unreachable!(),
    };
    let shape = kineticd::domain::pools::shape(&acc, 1, false, None, None).unwrap();
    let prices = kineticd::domain::pricing::PriceTable::default();
    let record = kineticd::plan::pools::pool_record(
        &kineticd::plan::pools::PoolToAdd {
            id,
            shape: &shape,
            driver_version: Some("DEFAULT"),
            zones: &[],
            paired_pool: None,
        },
        &prices,
    );
    let mut pool: NodePool = wire::node_pool(&n, &record);
    if !ours && let Some(c) = pool.config.as_mut() {
        c.labels.clear();
    }
    let gcp = env.gcp();
    let op = gcp
        .container
        .create_node_pool(PROJECT, ZONE, cluster, &pool)
        .await
        .expect("create pool");
    gke_done(&gcp, &op, Duration::from_secs(60), "pool created").await;
}

#[tokio::test]
async fn unrecorded_pools_are_offered_for_import_and_imported_once() {
    let env = env().await;
    env.up_ok("kc", json!({"accelerator": "cpu"})).await;
    gke_pool(&env, "kc", "gpu-l4-cli1", true).await;
    gke_pool(&env, "kc", "gpu-l4-hand", false).await;

    // Status says which to import and which to remove.
    let status = env.status("kc").await;
    let drift = status["drift"].as_array().unwrap();
    let about = |id: &str| {
        drift
            .iter()
            .find(|d| d["resource"].as_str().unwrap().ends_with(id))
            .unwrap_or_else(|| panic!("{status}"))["message"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(about("gpu-l4-cli1").contains(":import"), "{status}");
    assert!(
        about("gpu-l4-hand").contains("remove it in GKE"),
        "{status}"
    );

    // Discovery lists both on the recorded cluster, importable or not.
    let d = discover(&env).await;
    let offered = d["unrecordedPools"].as_array().unwrap();
    let find = |id: &str| {
        offered
            .iter()
            .find(|p| p["pool"]["name"] == id)
            .unwrap_or_else(|| panic!("{d}"))["pool"]
            .clone()
    };
    assert_eq!(find("gpu-l4-cli1")["importable"], true);
    assert_eq!(find("gpu-l4-cli1")["accelerator"], "gpu-l4");
    assert_eq!(find("gpu-l4-hand")["importable"], false);
    assert!(!d["clusters"].to_string().contains("/clusters/kc\""), "{d}");

    // Import records it as GKE has it, once, with an event; then there is no drift.
    let import = |id: &str| format!("{}:import", pool_path("kc", id));
    // The cluster unreadable (its other pools decide a failover pair's link): refused,
    // nothing recorded.
    env.arm("container", "clusters.get", "HTTP_403", 1).await;
    let unreadable = env.app.post(OWNER, &import("gpu-l4-cli1"), json!({})).await;
    assert_error(&unreadable, 503, "CLOUD_UNAVAILABLE");
    assert!(env.events("POOL_IMPORTED").await.is_empty());
    let r = env.app.post(OWNER, &import("gpu-l4-cli1"), json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["accelerator"], "gpu-l4");
    assert_eq!(r.body["minNodes"], 1);
    assert_eq!(r.body["state"], "RUNNING");
    let again = env.app.post(OWNER, &import("gpu-l4-cli1"), json!({})).await;
    assert_error(&again, 409, "NODE_POOL_RECORDED");
    let events = env.events("POOL_IMPORTED").await;
    assert_eq!(events.len(), 1, "{events:?}");

    let foreign = env.app.post(OWNER, &import("gpu-l4-hand"), json!({})).await;
    assert_error(&foreign, 409, "RESOURCE_NOT_OURS");
    let missing = env.app.post(OWNER, &import("gpu-l4-none"), json!({})).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.body);

    let status = env.status("kc").await;
    let drift = status["drift"].to_string();
    assert!(!drift.contains("gpu-l4-cli1"), "{status}");
    assert!(drift.contains("gpu-l4-hand"), "{status}");
}

#[tokio::test]
async fn discovery_lists_a_lost_cluster_with_what_up_would_adopt() {
    let env = env().await;
    let (l4, tpu) = legacy(&env).await;
    let lost = env.lost_database().await;
    let d = discover(&lost).await;
    let c = d["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == format!("projects/{PROJECT}/zones/{ZONE}/clusters/legacy"))
        .unwrap_or_else(|| panic!("{d}"))
        .clone();
    assert_eq!(c["adoptable"], true, "{c}");
    let pools = names_flagged(&c, "nodePools", "importable");
    assert!(
        pools.contains(&l4.as_str()) && pools.contains(&tpu.as_str()),
        "{c}"
    );
    assert_eq!(d["warnings"], json!([]));
    // What is recorded is not offered.
    assert!(
        discover(&env).await["clusters"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // The console shows the same, with the `up` that adopts it; outsiders get nothing.
    let page = |who: &'static str| {
        lost.app
            .request_as(who, reqwest::Method::GET, "/console/teams/ml-team/discover")
            .send()
    };
    let r = page(OWNER).await.expect("page");
    assert_eq!(r.status(), StatusCode::OK);
    let html = r.text().await.expect("html");
    let doc = scraper::Html::parse_document(&html);
    let sel = scraper::Selector::parse("tr[data-testid=discover-cluster]").unwrap();
    let row: Vec<String> = doc
        .select(&sel)
        .map(|r| r.text().collect::<String>())
        .collect();
    assert_eq!(row.len(), 1, "{html}");
    assert!(
        row[0].contains("clusters/legacy") && row[0].contains(&l4),
        "{row:?}"
    );
    assert!(row[0].contains("PUT /v1/projects/"), "{row:?}");
    let outsider = page("mallory@example.com").await.expect("page");
    assert_eq!(outsider.status(), StatusCode::NOT_FOUND);
}
