//! `up`: every resource of the reference, a second `up` that creates nothing, repair.

use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn up_with_a_gpu_pool_creates_everything_and_a_second_up_creates_nothing() {
    let env = env().await;
    let done = env.up_ok("kc", json!({"accelerator": "gpu-l4"})).await;
    let journal = env.journal("", "").await;
    for e in &journal {
        println!(
            "{} {} {} {}",
            e["status"], e["service"], e["method"], e["path"]
        );
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&done["metadata"]["progress"]).unwrap()
    );
    let c = env.app.get(OWNER, &cluster_path("kc")).await;
    assert_eq!(c.body["state"], "RUNNING", "{}", c.body);
}
