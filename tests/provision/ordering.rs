//! Concurrent pool adds: on one cluster they run one after another, in creation order;
//! on two clusters they run together. The simulator's clock is explicit, so a pool
//! creation stays in progress until the test moves time on.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

fn step<'a>(op: &'a Value, prefix: &str) -> &'a Value {
    op["metadata"]["progress"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"].as_str().unwrap().starts_with(prefix))
        .unwrap()
}

#[tokio::test]
async fn pool_adds_queue_per_cluster_and_run_together_across_clusters() {
    let env = explicit_clock().await;
    for c in ["c1", "c2"] {
        let o = env.up(c, json!({"accelerator": "cpu"})).await;
        let done = env.run_out_by(&o, 30.0).await;
        assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    }
    let a1 = env.add_pool("c1", json!({"accelerator": "l4"})).await;
    let a2 = env.add_pool("c1", json!({"accelerator": "t4"})).await;
    let b1 = env.add_pool("c2", json!({"accelerator": "l4"})).await;
    // Without time moving, both first pools are being created at the same time while
    // the second pool of c1 waits its turn.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (x, y, z) = (env.op(&a1).await, env.op(&a2).await, env.op(&b1).await);
        let creating = |o: &Value| step(o, "pool:")["state"] == "RUNNING";
        if creating(&x) && creating(&z) {
            assert_eq!(y["metadata"]["state"], "QUEUED", "{y}");
            break;
        }
        assert_eq!(y["metadata"]["state"], "QUEUED", "{y}");
        assert!(std::time::Instant::now() < deadline, "{x}\n{z}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (x, z) = (
        env.run_out_by(&a1, 30.0).await,
        env.run_out_by(&b1, 30.0).await,
    );
    let y = env.run_out_by(&a2, 30.0).await;
    for o in [&x, &y, &z] {
        assert_eq!(o["metadata"]["state"], "SUCCEEDED", "{o}");
    }
    let t = |o: &Value, k: &str| {
        chrono::DateTime::parse_from_rfc3339(o["metadata"][k].as_str().unwrap()).unwrap()
    };
    assert!(
        t(&y, "startTime") >= t(&x, "endTime"),
        "c1's second pool started before the first ended"
    );
    assert!(t(&z, "startTime") < t(&x, "endTime"), "c2 waited for c1");
}

#[tokio::test]
async fn a_down_queued_behind_an_up_keeps_the_cluster_deleting_and_runs_after_it() {
    let env = explicit_clock().await;
    let up = env.up("cq", json!({"accelerator": "cpu"})).await;
    // With time frozen, up waits on its first long-running operation.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while env.op(&up).await["metadata"]["state"] != "RUNNING" {
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let down = env.app.delete(OWNER, &cluster_path("cq")).await;
    assert_eq!(down.status, reqwest::StatusCode::ACCEPTED, "{}", down.body);
    let c = env.app.get(OWNER, &cluster_path("cq")).await.body;
    assert_eq!(c["state"], "DELETING");
    // Nothing else may start on a cluster being deleted.
    let r = env.app.put(OWNER, &cluster_path("cq"), json!({})).await;
    assert_eq!(r.reason(), "CLUSTER_DELETING", "{}", r.body);
    let r = env.post_pool("cq", json!({"accelerator": "l4"})).await;
    assert_eq!(r.reason(), "CLUSTER_DELETING", "{}", r.body);
    let u = env.run_out_by(&up, 30.0).await;
    assert_eq!(u["metadata"]["state"], "SUCCEEDED", "{u}");
    assert_eq!(
        env.api_state("cq").await,
        "DELETING",
        "the up's end leaves the queued down's state"
    );
    let d = env.run_out_by(&down.body, 30.0).await;
    assert_eq!(d["metadata"]["state"], "SUCCEEDED", "{d}");
    assert_eq!(env.api_state("cq").await, "DELETED");
}
