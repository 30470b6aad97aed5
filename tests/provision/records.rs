//! The records after every way a provisioning operation can end: each operation type
//! (UP_CLUSTER of a new cluster, DOWN_CLUSTER, ADD_NODE_POOL, REMOVE_NODE_POOL) x
//! {cancelled while queued, cancelled while running, failed at each step, succeeded}.
//! After each end the cluster and pool records hold the state the table says, `status`
//! shows it, no request is refused (every one previews), and `up`, pool add, pool
//! remove and `down` then all run to SUCCEEDED. Steps that never started end SKIPPED.
//!
//! An operation stays QUEUED while the workers are stopped; it is cancelled while
//! running on an explicit simulator clock (its first long-running cloud operation never
//! ends until time moves). The failures reuse the fault tables of `faults`.

use std::time::{Duration, Instant};

use kineticd::sim::SimConfig;
use kineticd::sim::clock::ClockMode;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::faults::{
    At, CLUSTER, arm_fault, assert_failed_at, close, cluster_state, each, gpu, make, names,
    pool_of, pool_state, resolve, steps, unmake,
};
use crate::support::*;

/// The operation under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `up` of a new cluster.
    Up,
    /// `up` of an existing cluster (reconcile).
    Reconcile,
    Down,
    AddPool,
    /// Removes the cluster's first pool.
    RemovePool,
}

/// How it ends.
#[derive(Debug, Clone, Copy)]
enum How {
    CancelledQueued,
    CancelledRunning,
    Failed(At),
    Succeeded,
}

impl How {
    fn name(&self) -> String {
        match self {
            How::CancelledQueued => "cancelled while queued".into(),
            How::CancelledRunning => "cancelled while running".into(),
            How::Failed(a) => format!("failed at {}", a.name(a.terminal.0)),
            How::Succeeded => "succeeded".into(),
        }
    }
}

/// What the records hold after an end: the cluster's state, and each named pool's
/// (`None`: no record).
struct Expect {
    cluster: &'static str,
    pools: Vec<(String, Option<&'static str>)>,
}

/// The table: the records after `op` ended `how`. `first` is the pool the cluster had
/// before (`None` for a new cluster), `touched` the pool the operation adds or removes.
fn expect(op: Op, how: &How, first: Option<&str>, touched: Option<&str>) -> Expect {
    let ran = !matches!(how, How::CancelledQueued);
    let ok = matches!(how, How::Succeeded);
    let (cluster, touched_state) = match op {
        Op::Up if ok => ("RUNNING", Some("RUNNING")),
        // Never created, or half made: ERROR, which `up` completes.
        Op::Up => ("ERROR", Some("ERROR")),
        Op::Reconcile if ok || !ran => ("RUNNING", None),
        Op::Reconcile => ("ERROR", None),
        Op::Down if ok => ("DELETED", None),
        Op::Down if ran => ("ERROR", None),
        Op::Down => ("RUNNING", None),
        Op::AddPool if ok => ("RUNNING", Some("RUNNING")),
        Op::AddPool if ran => ("RUNNING", Some("ERROR")),
        // Nothing was created: the record goes.
        Op::AddPool => ("RUNNING", None),
        Op::RemovePool if ok => ("RUNNING", None),
        Op::RemovePool if ran => ("RUNNING", Some("ERROR")),
        Op::RemovePool => ("RUNNING", Some("RUNNING")),
    };
    let first_state = match op {
        Op::Down if ok => Some("DELETED"),
        Op::RemovePool => touched_state,
        _ => Some("RUNNING"),
    };
    let mut pools = Vec::new();
    if let Some(p) = first {
        pools.push((p.to_owned(), first_state));
    }
    if let Some(p) = touched.filter(|t| Some(*t) != first) {
        pools.push((p.to_owned(), touched_state));
    }
    Expect { cluster, pools }
}

/// Send the request of `op` (accepted); returns the operation and the pool it adds or
/// removes.
async fn request(env: &Env, op: Op, first: Option<&str>) -> (Value, Option<String>) {
    let path = cluster_path(CLUSTER);
    let r = match op {
        Op::Up => env.app.put(OWNER, &path, gpu()).await,
        Op::Reconcile => env.app.put(OWNER, &path, json!({})).await,
        Op::Down => env.app.delete(OWNER, &path).await,
        Op::AddPool => {
            env.app
                .post(OWNER, &format!("{path}/nodePools"), gpu())
                .await
        }
        Op::RemovePool => {
            let p = first.expect("a pool to remove");
            env.app
                .delete(OWNER, &format!("{path}/nodePools/{p}"))
                .await
        }
    };
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let touched = match op {
        Op::Up => Some(pool_of(&r.body)),
        Op::AddPool => r.body["metadata"]["target"]
            .as_str()
            .and_then(|t| t.rsplit('/').next())
            .map(str::to_owned),
        Op::RemovePool => first.map(str::to_owned),
        Op::Reconcile | Op::Down => None,
    };
    (r.body, touched)
}

async fn cancel(env: &Env, op: &Value) -> Value {
    let name = op["name"].as_str().expect("operation name");
    let r = env.app.op_action(OWNER, name, "cancel").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body
}

/// Wait until `op` runs a step (it then waits on the frozen clock).
async fn started(env: &Env, op: &Value) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let cur = env.op(op).await;
        assert_ne!(
            cur["done"], true,
            "ended before it could be cancelled: {cur}"
        );
        if cur["metadata"]["state"] == "RUNNING"
            && steps(&cur).iter().any(|s| s["state"] == "RUNNING")
        {
            return;
        }
        assert!(Instant::now() < deadline, "never started: {cur}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// No step is left PENDING: those that never started are SKIPPED.
#[track_caller]
fn assert_unstarted_skipped(op: &Value) {
    for s in steps(op) {
        let never = s["attempts"] == 0;
        assert_eq!(never, s["state"] == "SKIPPED", "{s}");
    }
}

/// Path of a preview of `request` (a path and method) on the cluster.
async fn previews(env: &Env, method: &str, path: &str, body: Value) {
    let path = format!("{path}?validateOnly=true");
    let r = match method {
        "PUT" => env.app.put(OWNER, &path, body).await,
        "POST" => env.app.post(OWNER, &path, body).await,
        _ => env.app.delete(OWNER, &path).await,
    };
    assert_eq!(r.status, StatusCode::OK, "{method} {path}: {}", r.body);
}

/// `status` shows the records: the cluster's state and each recorded pool's.
async fn assert_status_explains(env: &Env, e: &Expect) {
    let r = env
        .app
        .get(OWNER, &format!("{}/status", cluster_path(CLUSTER)))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["cluster"]["state"], e.cluster, "{}", r.body);
    let listed = r.body["nodePools"].as_array().cloned().unwrap_or_default();
    for (pool, state) in &e.pools {
        let entry = listed.iter().find(|p| p["poolId"] == pool.as_str());
        match (state, entry) {
            (Some("DELETED"), _) => {}
            (Some(s), Some(p)) => {
                assert_eq!(p["recorded"], true, "{p}");
                assert_eq!(p["recordState"], *s, "{p}");
                if p["gkeStatus"].is_null() {
                    // Recorded, not in GKE: drift says `up` makes it.
                    let drift = r.body["drift"].as_array().cloned().unwrap_or_default();
                    assert!(
                        drift.iter().any(|d| d["problem"] == "MISSING"
                            && d["resource"]
                                .as_str()
                                .unwrap_or("")
                                .ends_with(pool.as_str())),
                        "pool {pool} missing without drift: {}",
                        r.body["drift"]
                    );
                }
            }
            (Some(_), None) => panic!("pool {pool} not in status: {}", r.body),
            (None, p) => assert!(
                p.is_none_or(|p| p["recorded"] == false),
                "pool {pool} still recorded: {}",
                r.body
            ),
        }
    }
}

/// Run a request to SUCCEEDED.
async fn succeeds(env: &Env, op: Value) -> Value {
    let done = env.run_out(&op).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    done
}

/// The records hold `e`; `status` shows it; every request previews; then `up`, pool
/// add, pool remove and `down` run to SUCCEEDED.
async fn works_from_here(env: &Env, e: &Expect) {
    assert_eq!(cluster_state(env).await, e.cluster);
    for (pool, state) in &e.pools {
        assert_eq!(
            pool_state(env, pool).await.as_deref(),
            *state,
            "pool {pool}"
        );
    }
    assert_status_explains(env, e).await;
    let path = cluster_path(CLUSTER);
    let body = if e.cluster == "DELETED" {
        gpu()
    } else {
        previews(env, "PUT", &path, json!({})).await;
        previews(env, "POST", &format!("{path}/nodePools"), gpu()).await;
        let recorded = e.pools.iter().find(|(_, s)| s.is_some());
        if let Some((pool, _)) = recorded {
            previews(
                env,
                "DELETE",
                &format!("{path}/nodePools/{pool}"),
                json!(null),
            )
            .await;
        }
        previews(env, "DELETE", &path, json!(null)).await;
        json!({})
    };
    succeeds(env, env.up(CLUSTER, body).await).await;
    assert_eq!(cluster_state(env).await, "RUNNING");
    for (pool, state) in &e.pools {
        if state.is_some_and(|s| s != "DELETED") {
            assert_eq!(pool_state(env, pool).await.as_deref(), Some("RUNNING"));
        }
    }
    let added = succeeds(env, env.add_pool(CLUSTER, gpu()).await).await;
    let target = added["metadata"]["target"].as_str().unwrap();
    let pool = target.rsplit('/').next().unwrap();
    assert_eq!(pool_state(env, pool).await.as_deref(), Some("RUNNING"));
    let r = env
        .app
        .delete(OWNER, &format!("{path}/nodePools/{pool}"))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    succeeds(env, r.body).await;
    assert_eq!(pool_state(env, pool).await, None);
    let r = env.app.delete(OWNER, &path).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    succeeds(env, r.body).await;
    assert_eq!(cluster_state(env).await, "DELETED");
}

/// One row of the table.
async fn case(op: Op, how: How) {
    let clock = match how {
        How::CancelledRunning => ClockMode::Explicit,
        _ => ClockMode::Auto { speed: 0.0 },
    };
    let mut env = env_with(SimConfig {
        clock,
        ..Default::default()
    })
    .await;
    let first = match op {
        Op::Up => None,
        _ => Some(pool_of(&succeeds(&env, env.up(CLUSTER, gpu()).await).await)),
    };
    if let How::Failed(a) = how {
        let n = names();
        for s in a.prepare {
            match op {
                Op::Down => unmake(&env, &n, s).await,
                _ => make(&env, &n, s).await,
            }
        }
        arm_fault(&env, a.service, a.method, a.terminal).await;
    }
    if let How::CancelledQueued = how {
        env.pause().await;
    }
    let (sent, touched) = request(&env, op, first.as_deref()).await;
    let ended = match how {
        How::CancelledQueued => {
            assert_eq!(sent["metadata"]["state"], "QUEUED", "{sent}");
            let ended = cancel(&env, &sent).await;
            env.resume();
            ended
        }
        How::CancelledRunning => {
            started(&env, &sent).await;
            cancel(&env, &sent).await;
            let ended = env.run_out(&sent).await;
            // A cancel abandons the wait, not Google's own operation: a delete the
            // cancelled `down` had asked for still finishes in the cloud. Let that time
            // pass first, as it would; an `up` sent at once can meet the resource
            // vanishing under it (NOT_FOUND at a later step) and must then be sent again.
            env.advance(3600.0).await;
            ended
        }
        How::Failed(a) => {
            let failed = env.run_out(&sent).await;
            let pool = touched.as_deref().or(first.as_deref()).unwrap_or("");
            assert_failed_at(&failed, &resolve(a.steps, pool), a.terminal.2);
            failed
        }
        How::Succeeded => succeeds(&env, sent).await,
    };
    if !matches!(how, How::Succeeded | How::Failed(_)) {
        assert_eq!(ended["metadata"]["state"], "CANCELLED", "{ended}");
    }
    assert_unstarted_skipped(&ended);
    let e = expect(op, &how, first.as_deref(), touched.as_deref());
    works_from_here(&env, &e).await;
    close(env).await;
}

/// Every end of `op`: cancelled while queued, while running, failed at each of
/// `failures`, succeeded.
async fn table(op: Op, failures: &[At]) {
    let ends = [How::CancelledQueued, How::CancelledRunning, How::Succeeded]
        .into_iter()
        .chain(failures.iter().map(|a| How::Failed(*a)));
    each(ends.map(|how| (format!("{op:?} {}", how.name()), case(op, how)))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_end_of_up_leaves_records_every_request_works_from() {
    table(Op::Up, &crate::faults::up::UP_AT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_end_of_reconcile_leaves_records_every_request_works_from() {
    table(Op::Reconcile, &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_end_of_down_leaves_records_every_request_works_from() {
    table(Op::Down, &crate::faults::down::DOWN_AT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_end_of_pool_add_leaves_records_every_request_works_from() {
    table(Op::AddPool, &[crate::faults::up::POOL_CREATE_AT]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_end_of_pool_remove_leaves_records_every_request_works_from() {
    table(Op::RemovePool, &[crate::faults::down::POOL_DELETE_AT]).await;
}

/// The reported defect: with a pool add running, `down` is queued (the cluster shows
/// DELETING) and then cancelled: the cluster is RUNNING again, nothing answers
/// CLUSTER_DELETING, and every request works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_down_cancelled_behind_a_running_pool_add_does_not_strand_the_cluster() {
    let env = explicit_clock().await;
    let first = pool_of(&succeeds(&env, env.up(CLUSTER, gpu()).await).await);
    let add = env.add_pool(CLUSTER, gpu()).await;
    started(&env, &add).await;
    let path = cluster_path(CLUSTER);
    let down = env.app.delete(OWNER, &path).await;
    assert_eq!(down.status, StatusCode::ACCEPTED, "{}", down.body);
    assert_eq!(down.body["metadata"]["state"], "QUEUED");
    assert_eq!(cluster_state(&env).await, "DELETING");
    let r = env.app.put(OWNER, &path, json!({})).await;
    assert_eq!(r.reason(), "CLUSTER_DELETING", "{}", r.body);

    let cancelled = cancel(&env, &down.body).await;
    assert_eq!(cancelled["metadata"]["state"], "CANCELLED", "{cancelled}");
    assert_unstarted_skipped(&cancelled);
    assert_eq!(cluster_state(&env).await, "RUNNING");
    previews(&env, "PUT", &path, json!({})).await;
    previews(&env, "POST", &format!("{path}/nodePools"), gpu()).await;

    let added = succeeds(&env, add).await;
    let second = added["metadata"]["target"].as_str().unwrap();
    let second = second.rsplit('/').next().unwrap().to_owned();
    let e = Expect {
        cluster: "RUNNING",
        pools: vec![(first, Some("RUNNING")), (second, Some("RUNNING"))],
    };
    works_from_here(&env, &e).await;
}

/// Intents stack: with an `up` and a `down` queued, cancelling the `up` keeps the
/// cluster DELETING (the `down` still holds it); cancelling the `down` then shows the
/// cluster as it was before either was asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_queued_up_and_down_restores_the_cluster() {
    let mut env = env().await;
    let first = pool_of(&succeeds(&env, env.up(CLUSTER, gpu()).await).await);
    env.pause().await;
    let up = env.up(CLUSTER, json!({})).await;
    assert_eq!(cluster_state(&env).await, "RECONCILING");
    let path = cluster_path(CLUSTER);
    let down = env.app.delete(OWNER, &path).await;
    assert_eq!(down.status, StatusCode::ACCEPTED, "{}", down.body);
    assert_eq!(cluster_state(&env).await, "DELETING");
    cancel(&env, &up).await;
    assert_eq!(
        cluster_state(&env).await,
        "DELETING",
        "the down still holds it"
    );
    cancel(&env, &down.body).await;
    env.resume();
    let e = Expect {
        cluster: "RUNNING",
        pools: vec![(first, Some("RUNNING"))],
    };
    works_from_here(&env, &e).await;
}
