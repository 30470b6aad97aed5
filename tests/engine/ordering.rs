//! Two workers, 200 operations across 20 clusters: each step runs exactly once,
//! operations of one cluster run one at a time in creation order, clusters in parallel.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::common::test_worker_config;

type Ts = DateTime<Utc>;
/// (target, create, start, end)
type Run = (String, Ts, Ts, Ts);
use crate::{USER, app_with_team, noop};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_200_operations_20_clusters() {
    let app = app_with_team().await;
    let mut names = Vec::new();
    for i in 0..200 {
        let target = format!(
            "projects/engine-project/zones/us-central1-a/clusters/c{}",
            i % 20
        );
        let op = app
            .noop(USER, noop(3, json!({"target": target, "stepMillis": 2})))
            .await;
        names.push(op["name"].as_str().unwrap().to_owned());
    }
    // Two independent pools (distinct lease owners), one worker each.
    let a = app.workers(test_worker_config(1));
    let b = app.workers(test_worker_config(1));
    for n in &names {
        let done = app.wait_done(USER, n).await;
        assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    }
    a.shutdown(std::time::Duration::from_secs(5)).await;
    b.shutdown(std::time::Duration::from_secs(5)).await;

    // Exactly one effect per step.
    let effects = kineticd::store::operations::noop_effect_counts(&app.db)
        .await
        .unwrap();
    assert_eq!(effects.len(), 600);
    assert!(effects.iter().all(|(_, _, n)| *n == 1), "a step ran twice");

    // Per cluster: creation order == run order, and no overlap.
    let rows: Vec<Run> = sqlx::query_as(
        "SELECT target, create_time, start_time, end_time FROM operations ORDER BY create_time, id",
    )
    .fetch_all(&app.db)
    .await
    .unwrap();
    let mut by_target: HashMap<String, Vec<(Ts, Ts)>> = HashMap::new();
    for (t, _, s, e) in &rows {
        by_target.entry(t.clone()).or_default().push((*s, *e));
    }
    assert_eq!(by_target.len(), 20);
    for (t, runs) in &by_target {
        for w in runs.windows(2) {
            assert!(
                w[1].0 >= w[0].1,
                "{t}: an operation started before its predecessor ended"
            );
        }
    }
    // Parallelism: some operations of different clusters overlapped in time.
    let overlapping = rows.iter().enumerate().any(|(i, a)| {
        rows.iter()
            .skip(i + 1)
            .any(|b| a.0 != b.0 && a.2 < b.3 && b.2 < a.3)
    });
    assert!(
        overlapping,
        "no two clusters ever progressed at the same time"
    );
}

/// Creation order per cluster is commit order: an operation enqueued in a transaction
/// that commits late still runs before one enqueued on the same cluster after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_order_on_one_cluster_is_commit_order() {
    use kineticd::ops::queue::{self, Enqueue};
    use kineticd::ops::steps::StepRecord;
    let app = app_with_team().await;
    let req = |n: u32| Enqueue {
        op_type: kineticd::domain::OperationType::Noop,
        target: "projects/engine-project/zones/us-central1-a/clusters/same".into(),
        serial_key: "projects/engine-project/zones/us-central1-a/clusters/same".into(),
        team_id: crate::TEAM.into(),
        cluster_id: None,
        created_by: USER.into(),
        input: json!({ "n": n }),
        plan: None,
        steps: vec![StepRecord::new("step-0", "no-op")],
        idempotency: None,
    };
    // A enqueues inside a transaction that stays open.
    let mut tx = app.db.begin().await.unwrap();
    let a = queue::enqueue_in(&mut tx, &req(1)).await.unwrap().op;
    // B enqueues on the same cluster meanwhile: it must wait for A's commit.
    let db = app.db.clone();
    let b_req = req(2);
    let b = tokio::spawn(async move { queue::enqueue(&db, &b_req).await.unwrap().op });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_xact_lock%'",
        )
        .fetch_one(&app.db)
        .await
        .unwrap();
        if waiting == 1 {
            break;
        }
        assert!(
            !b.is_finished(),
            "B was not held back by A's open transaction"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "B never reached the lock"
        );
        tokio::task::yield_now().await;
    }
    tx.commit().await.unwrap();
    let b = b.await.unwrap();
    assert!(
        b.create_time > a.create_time,
        "creation order must follow commit order"
    );
    // The claim runs A first, and B only after A ends.
    let deadlines = vec![("NOOP".to_string(), 600.0)];
    let first = kineticd::store::operations::claim(&app.db, "w", 30.0, &deadlines)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.id, a.id);
    assert!(
        kineticd::store::operations::claim(&app.db, "w2", 30.0, &deadlines)
            .await
            .unwrap()
            .is_none(),
        "B must wait for A"
    );
}

/// A NOOP's target is the caller's choice; its serialisation key must not be (issue 24):
/// another team naming this team's cluster queues behind nothing of ours and holds
/// nothing of ours back, while our own NOOPs on the cluster keep the cluster's key.
#[tokio::test]
async fn a_noop_naming_another_teams_cluster_never_blocks_it() {
    const MALLORY: &str = "mallory@example.com";
    let app = app_with_team().await;
    app.team(MALLORY, "intruders", &["mallory-project"]).await;
    let target = "projects/engine-project/zones/us-central1-a/clusters/prod";
    let mallorys = |hang: bool| {
        let mut body = json!({"team": "intruders", "steps": 1, "target": target});
        if hang {
            body["hangAt"] = json!(0);
        }
        body
    };
    let m1 = app.noop(MALLORY, mallorys(true)).await;
    let u1 = app.noop(USER, noop(1, json!({"target": target}))).await;
    let m2 = app.noop(MALLORY, mallorys(false)).await;
    let u2 = app.noop(USER, noop(1, json!({"target": target}))).await;
    let id = |op: &serde_json::Value| crate::op_id(op);
    // The target is shown as given.
    assert_eq!(m1["metadata"]["target"], target, "{m1}");

    let deadlines = vec![("NOOP".to_string(), 600.0)];
    let claim = |owner: &'static str| {
        let db = app.db.clone();
        let deadlines = deadlines.clone();
        async move {
            kineticd::store::operations::claim(&db, owner, 30.0, &deadlines)
                .await
                .unwrap()
                .map(|o| o.id.to_string())
        }
    };
    // Mallory's hanging NOOP runs first (it is the oldest)...
    assert_eq!(claim("w1").await, Some(id(&m1)));
    // ...and our own operation on the cluster runs beside it, not behind it.
    assert_eq!(
        claim("w2").await,
        Some(id(&u1)),
        "another team's NOOP held back an operation on our cluster"
    );
    // Each team's NOOPs still run one at a time per target.
    assert_eq!(
        claim("w3").await,
        None,
        "{m2} or {u2} ran beside its predecessor"
    );
    // Ours share the key of the cluster's real operations (up, down, pools).
    let key: String = sqlx::query_scalar("SELECT serial_key FROM operations WHERE id::text = $1")
        .bind(id(&u1))
        .fetch_one(&app.db)
        .await
        .unwrap();
    assert_eq!(key, target);
}
