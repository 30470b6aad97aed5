//! Leased claims and fenced writes: a worker whose lease expired loses the operation to
//! another, and its late writes change nothing. Graceful shutdown hands leases back.

use std::time::{Duration, Instant};

use serde_json::json;

use kineticd::store::operations as store;

use crate::common::test_worker_config;
use crate::{USER, app_with_team, noop, op_id};

#[tokio::test]
async fn expired_lease_moves_to_another_worker_and_fences_the_first() {
    let app = app_with_team().await;
    let op = app.noop(USER, noop(2, json!({}))).await;
    let id = uuid::Uuid::parse_str(&op_id(&op)).unwrap();
    let deadlines = vec![("NOOP".to_string(), 600.0)];

    // A lease no slow machine outlives by accident; it ends below when a's last
    // heartbeat gives it no time left (as if a stopped heartbeating).
    let a = store::claim(&app.db, "worker-a", 600.0, &deadlines)
        .await
        .unwrap()
        .expect("claimed by a");
    assert_eq!(a.id, id);
    assert_eq!(a.state.as_str(), "RUNNING");
    // While a's lease is live nobody else can take it.
    assert!(
        store::claim(&app.db, "worker-b", 30.0, &deadlines)
            .await
            .unwrap()
            .is_none()
    );

    // a's lease runs out (its last heartbeat extended it by nothing); b takes over.
    assert_eq!(
        store::heartbeat(&app.db, id, a.generation, 0.0)
            .await
            .unwrap(),
        Some(false)
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let b = loop {
        if let Some(b) = store::claim(&app.db, "worker-b", 30.0, &deadlines)
            .await
            .unwrap()
        {
            break b;
        }
        assert!(Instant::now() < deadline, "lease never expired");
        tokio::task::yield_now().await;
    };
    assert_eq!(b.id, id);
    assert_eq!(b.generation, a.generation + 1);
    assert_eq!(b.lease_owner.as_deref(), Some("worker-b"));
    assert_eq!(b.attempt, 2);

    // a's late writes are all rejected by the fence.
    let stale = json!([{"id": "step-0", "description": "x", "state": "DONE"}]);
    assert!(
        !store::save_steps(&app.db, id, a.generation, &stale)
            .await
            .unwrap()
    );
    assert_eq!(
        store::heartbeat(&app.db, id, a.generation, 30.0)
            .await
            .unwrap(),
        None
    );
    let f = store::Finish {
        state: kineticd::domain::OperationState::Succeeded,
        steps: &stale,
        response: None,
        error: None,
    };
    assert!(!store::finish(&app.db, id, a.generation, f).await.unwrap());
    let row = store::get(&app.db, id).await.unwrap().unwrap();
    assert_eq!(row.state.as_str(), "RUNNING");
    assert_eq!(
        row.steps, b.steps,
        "the fenced-out worker changed the steps"
    );

    // b's writes go through.
    assert_eq!(
        store::heartbeat(&app.db, id, b.generation, 30.0)
            .await
            .unwrap(),
        Some(false)
    );
    let f = store::Finish {
        state: kineticd::domain::OperationState::Succeeded,
        steps: &b.steps,
        response: None,
        error: None,
    };
    assert!(store::finish(&app.db, id, b.generation, f).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_releases_the_lease_and_another_pool_resumes() {
    let app = app_with_team().await;
    // Steps long enough that the shutdown below lands before the last one, whatever the load.
    let op = app.noop(USER, noop(6, json!({"stepMillis": 500}))).await;
    let id = uuid::Uuid::parse_str(&op_id(&op)).unwrap();
    let pool = app.workers(test_worker_config(1));
    // Wait until a step is done, then shut down mid-operation.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let row = store::get(&app.db, id).await.unwrap().unwrap();
        if row
            .steps
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["state"] == "DONE")
        {
            break;
        }
        assert!(Instant::now() < deadline, "no step finished");
        tokio::task::yield_now().await;
    }
    pool.shutdown(Duration::from_secs(5)).await;
    let row = store::get(&app.db, id).await.unwrap().unwrap();
    assert!(
        row.end_time.is_none(),
        "shutdown should not finish the operation"
    );
    assert!(row.lease_owner.is_none(), "lease not released");
    let done_before = row
        .steps
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["state"] == "DONE")
        .count();
    assert!(done_before < 6);

    // Another pool resumes at once (no lease wait) and completes it.
    let pool = app.workers(test_worker_config(1));
    let done = app.wait_done(USER, &format!("operations/{id}")).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED");
    assert_eq!(done["metadata"]["attempt"], 2);
    pool.shutdown(Duration::from_secs(5)).await;
    let effects = store::noop_effect_counts(&app.db).await.unwrap();
    assert_eq!(effects.len(), 6);
    assert!(
        effects.iter().all(|(_, _, n)| *n == 1),
        "a step's effect was applied twice"
    );
}
