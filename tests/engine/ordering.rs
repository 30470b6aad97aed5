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
