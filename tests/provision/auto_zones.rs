//! `pool add` with `zones: ["auto"]` (issue 31): a spot pool spreads over the zones of
//! the cluster's region that the placement advice ranks, created with GKE's
//! `locationPolicy: ANY`, and the plan says which zones and why; a zone Compute's advice
//! finds out of stock is left out; auto is refused for on-demand pools and when mixed
//! with named zones.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn a_spot_pool_with_zones_auto_spreads_over_the_ranked_zones() {
    let env = env_with(kineticd::sim::SimConfig {
        stockouts: vec![("us-central1-c".into(), "nvidia-l4".into())],
        ..speed_zero()
    })
    .await;
    env.up_ok("kz", json!({"accelerator": "cpu"})).await;
    let ask = json!({"accelerator": "l4", "spot": true, "zones": ["auto"]});
    let preview = env.preview_pool("kz", ask.clone()).await;
    assert_eq!(preview.status, StatusCode::OK, "{}", preview.body);
    let warnings = preview.body["warnings"].to_string();
    assert!(
        warnings.contains("zones auto: the spot pool spreads over 3 zones of us-central1"),
        "{warnings}"
    );
    assert!(
        warnings.contains("us-central1-c left out: Compute's capacity advice says no spot"),
        "{warnings}"
    );
    assert!(warnings.contains("locationPolicy ANY"), "{warnings}");

    let op = env.add_pool("kz", ask).await;
    let pool = pool_of(&op);
    env.ok(&op).await;
    let calls = env.ok_calls("container", "nodePools.create").await;
    let p = created_pool(&calls, &pool);
    let mut locations: Vec<&str> = p["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|z| z.as_str().unwrap())
        .collect();
    locations.sort_unstable();
    assert_eq!(
        locations,
        ["us-central1-a", "us-central1-b", "us-central1-f"],
        "{p:#}"
    );
    assert_eq!(p["autoscaling"]["locationPolicy"], "ANY", "{p:#}");
    assert_eq!(p["config"]["spot"], true);
    // The record keeps the zones chosen.
    let rec = env.pool("kz", &pool).await;
    assert_eq!(rec["zones"].as_array().unwrap().len(), 3, "{rec:#}");
}

#[tokio::test]
async fn zones_auto_is_for_spot_pools_alone() {
    let env = env_up("ky").await;
    for body in [
        json!({"accelerator": "l4", "zones": ["auto"]}),
        json!({"accelerator": "l4", "spot": true, "failover": true, "zones": ["auto"]}),
        json!({"accelerator": "l4", "spot": true, "zones": ["auto", "us-central1-a"]}),
    ] {
        let r = env.post_pool("ky", body.clone()).await;
        assert_refused(&r, &body, "INVALID_ZONE", "auto");
    }
    assert!(
        env.ok_calls("container", "nodePools.create")
            .await
            .is_empty()
    );
}
