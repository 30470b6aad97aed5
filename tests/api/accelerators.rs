//! `/v1/accelerators`: the catalog and spelling resolution over HTTP.

use reqwest::StatusCode;

use crate::common::{TestApp, ids};

const U: &str = "someone@example.com";

#[tokio::test]
async fn catalog_lists_every_canonical_name_with_prices() {
    let app = TestApp::spawn().await;
    let r = app.get(U, "/v1/accelerators").await;
    assert_eq!(r.status, StatusCode::OK);
    let names = ids(&r.body, "accelerators", "name");
    for must in [
        "gpu-l4",
        "gpu-l4x8",
        "gpu-a100x16",
        "gpu-h100x8",
        "tpu-v5litepod-4",
        "tpu-v5litepod-256",
        "tpu-v4-4096",
        "tpu-v6e-16",
        "tpu-v5p-32",
        "tpu-v3-2048",
    ] {
        assert!(names.contains(&must), "{must} missing");
    }
    let list = r.body["accelerators"].as_array().unwrap();
    let l4 = list.iter().find(|a| a["name"] == "gpu-l4").unwrap();
    assert_eq!(l4["kind"], "GPU");
    assert_eq!(l4["gkeAcceleratorType"], "nvidia-l4");
    assert_eq!(l4["machineType"], "g2-standard-4");
    assert_eq!(l4["count"], 1);
    assert_eq!(l4["prices"]["currency"], "USD");
    assert!(
        l4["prices"]["spotPerNodeHour"].as_f64().unwrap()
            < l4["prices"]["onDemandPerNodeHour"].as_f64().unwrap()
    );
    let v5e = list
        .iter()
        .find(|a| a["name"] == "tpu-v5litepod-16")
        .unwrap();
    assert_eq!(v5e["chips"], 16);
    assert_eq!(v5e["topology"], "4x4");
    assert_eq!(v5e["hostsPerSlice"], 4);
    assert!(
        v5e["aliases"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "v5e-16")
    );
}

#[tokio::test]
async fn any_spelling_resolves_and_unknown_ones_get_suggestions() {
    let app = TestApp::spawn().await;
    for (spelling, name, spot) in [
        ("a100x4", "gpu-a100x4", false),
        ("gpu:4", "gpu-h100x4", false),
        ("v5e-16", "tpu-v5litepod-16", false),
        ("l4:spot", "gpu-l4", true),
        ("nvidia-tesla-t4", "gpu-t4", false),
        ("tpu-v4-2x2x4", "tpu-v4-16", false),
    ] {
        let r = app.get(U, &format!("/v1/accelerators/{spelling}")).await;
        assert_eq!(r.status, StatusCode::OK, "{spelling}: {:?}", r.body);
        assert_eq!(r.body["name"], name, "{spelling}");
        assert_eq!(r.body["spot"], spot);
    }
    let r = app.get(U, "/v1/accelerators/l5").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.reason(), "UNKNOWN_ACCELERATOR");
    assert!(
        r.body["error"]["details"][0]["metadata"]["suggestions"]
            .as_str()
            .unwrap()
            .contains("gpu-l4")
    );
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did you mean")
    );
    let r = app.get(U, "/v1/accelerators/cpu").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}
