//! Operations stored by an older kineticd still run, and previews did not change: an
//! `up` and a `pool add` whose plan and steps were written by the code before plan
//! actions were typed (fixtures captured from commit e007833,
//! `tests/fixtures/stored_operations/`) are put verbatim into the queued operation, and a
//! worker claims and finishes them. The same `up` made now answers `validateOnly` with
//! the same bytes and stores exactly that JSON.
//!
//! The fixture `pool add` is a failover pair, whose plan changed on purpose when pairs
//! got a GKE compute class: both pools now carry the class's label and taint (the spot
//! pool's `gpu-pool-type` taint gave way to it) and a `compute-class` action follows
//! them. The test checks the preview is the old one plus exactly that change
//! ([`with_compute_class`]); the old stored row still runs as it was stored.

use std::time::Duration;

use kineticd::ops::WorkerPool;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::{TestApp, spot_pool, test_worker_config};
use crate::support::*;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/stored_operations"
);

/// (plan, steps as stored text) of an operation.
async fn stored(app: &TestApp, op: &Value) -> (Value, String) {
    let (plan, steps): (Value, String) =
        sqlx::query_as("SELECT plan, steps::text FROM operations WHERE id = $1")
            .bind(op_id(op))
            .fetch_one(&app.db)
            .await
            .expect("operation row");
    (without_policy(plan), steps)
}

/// A plan without `policy`: plans gained the team policy's verdict (issue 29), an
/// optional field; a plan stored without it still decodes and runs.
fn without_policy(mut plan: Value) -> Value {
    if let Some(fields) = plan.as_object_mut() {
        fields.shift_remove("policy");
    }
    plan
}

fn op_id(op: &Value) -> Uuid {
    let name = op["name"].as_str().expect("operation name");
    name.trim_start_matches("operations/")
        .parse()
        .expect("operation id")
}

/// The fixture `name`: (plan, steps text) as the old code stored them.
fn fixture(name: &str) -> (Value, String) {
    let read = |ext: &str| {
        std::fs::read_to_string(format!("{FIXTURES}/{name}.{ext}.json"))
            .unwrap_or_else(|e| panic!("fixture {name}.{ext}.json: {e}"))
    };
    let plan = serde_json::from_str(&read("plan")).expect("fixture plan");
    (plan, read("steps").trim_end().to_owned())
}

/// The `validateOnly` answer to `method path` with `body`, as the bytes sent, checked
/// against the preview fixture `name` (what the old code answered, byte for byte).
async fn preview_as_before(app: &TestApp, method: Method, path: &str, body: &Value, name: &str) {
    let r = app
        .request_as(OWNER, method, path)
        .json(body)
        .send()
        .await
        .expect("preview");
    assert_eq!(r.status(), StatusCode::OK, "{name} preview");
    let text = r.text().await.expect("preview body");
    // Previews have since gained `access` (the preview of `up`: what the sync after it
    // grants, issue 28) and `policy` (the team policy's verdict, issue 29), fields the
    // old code did not have; everything else is the same bytes.
    let mut plan = without_policy(serde_json::from_str(&text).expect("preview JSON"));
    if let Some(fields) = plan.as_object_mut() {
        fields.shift_remove("access");
    }
    let text = serde_json::to_string(&plan).expect("preview JSON");
    let file = format!("{FIXTURES}/{name}.preview.json");
    let before = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(
        text,
        before.trim_end(),
        "{name}: the preview is the same bytes"
    );
}

/// The old preview of a failover pair (`plan`) with the change compute classes made:
/// both pools tied to the class (label and taint, the spot taint gone) and the class's
/// action after them.
fn with_compute_class(mut plan: Value) -> Value {
    let id = |i: usize, plan: &Value| {
        plan["actions"][i]["id"]
            .as_str()
            .and_then(|s| s.strip_prefix("pool:"))
            .expect("pool action")
            .to_owned()
    };
    let (spot, on_demand) = (id(0, &plan), id(1, &plan));
    let class = format!("kinetic-{spot}");
    for i in 0..2 {
        let d = &mut plan["actions"][i]["details"];
        d["labels"]["cloud.google.com/compute-class"] = json!(class);
        d["taints"] = json!([{"effect": "NO_SCHEDULE", "key": "cloud.google.com/compute-class", "value": class}]);
    }
    let action = kineticd::plan::computeclass::apply_action(&spot, &on_demand);
    plan["actions"]
        .as_array_mut()
        .expect("actions")
        .push(serde_json::to_value(action).expect("action"));
    plan
}

/// The `validateOnly` answer to `method path` with `body`, compared as JSON with the
/// preview fixture `name` changed by `change`.
async fn preview_changed(
    app: &TestApp,
    path: &str,
    body: &Value,
    name: &str,
    change: fn(Value) -> Value,
) {
    let r = app.post(OWNER, path, body.clone()).await;
    assert_eq!(r.status, StatusCode::OK, "{name} preview: {}", r.body);
    let file = format!("{FIXTURES}/{name}.preview.json");
    let before = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let before: Value = serde_json::from_str(&before).expect("preview fixture");
    assert_eq!(
        without_policy(r.body),
        change(before),
        "{name}: the preview changed as documented"
    );
}

/// Check the queued `op` stored what the old code stored (its plan changed by `change`
/// if given; the steps, one per action, then change with it), put the old JSON in
/// verbatim, and run it to SUCCEEDED with a fresh worker pool.
async fn run_as_stored_before(
    app: &TestApp,
    op: &Value,
    name: &str,
    change: Option<fn(Value) -> Value>,
) {
    let (now_plan, now_steps) = stored(app, op).await;
    let (plan, steps) = fixture(name);
    match change {
        None => {
            assert_eq!(now_plan, plan, "{name}: the plan is stored as before");
            // The same JSON (keys may be written in another order: the column is `json`).
            let parse = |s: &str| serde_json::from_str::<Value>(s).expect("steps JSON");
            assert_eq!(
                parse(&now_steps),
                parse(&steps),
                "{name}: the steps are stored as before"
            );
        }
        Some(f) => assert_eq!(
            now_plan,
            f(plan.clone()),
            "{name}: the plan changed as documented"
        ),
    }
    let updated = sqlx::query(
        "UPDATE operations SET plan = $2, steps = $3::json WHERE id = $1 AND state = 'QUEUED'",
    )
    .bind(op_id(op))
    .bind(&plan)
    .bind(&steps)
    .execute(&app.db)
    .await
    .expect("store the old operation");
    runs_to_success(app, op, name, updated).await;
}

/// `updated` put the old row of `op` back while it was still queued; a fresh worker pool
/// runs it to SUCCEEDED: the final operation.
async fn runs_to_success(
    app: &TestApp,
    op: &Value,
    name: &str,
    updated: sqlx::postgres::PgQueryResult,
) -> Value {
    assert_eq!(updated.rows_affected(), 1, "{name}: still queued");
    let workers: WorkerPool = app.workers(test_worker_config(2));
    let done = app
        .wait_done(OWNER, op["name"].as_str().expect("operation name"))
        .await;
    assert!(done["error"].is_null(), "{name} failed: {}", done["error"]);
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    workers.shutdown(Duration::from_secs(60)).await;
    done
}

#[tokio::test]
async fn an_up_and_a_pool_add_stored_before_typed_plans_are_claimed_and_finished() {
    let (app, _sim) = TestApp::spawn_sim_with(speed_zero()).await;
    app.team(OWNER, "ml-team", &[PROJECT]).await;
    let path = cluster_path("compat");
    let up_body = json!({"accelerator": "l4"});
    let up_path = format!("{path}?validateOnly=true&requestId=compat-up");
    preview_as_before(&app, Method::PUT, &up_path, &up_body, "up").await;
    let up = app
        .put(OWNER, &format!("{path}?requestId=compat-up"), up_body)
        .await;
    assert_eq!(up.status, StatusCode::ACCEPTED, "{}", up.body);
    run_as_stored_before(&app, &up.body, "up", None).await;
    let add_body = l4_failover_pair();
    let add_path = format!("{path}/nodePools?validateOnly=true&requestId=compat-add");
    preview_changed(&app, &add_path, &add_body, "pool-add", with_compute_class).await;
    let add = app
        .post(
            OWNER,
            &format!("{path}/nodePools?requestId=compat-add"),
            add_body,
        )
        .await;
    assert_eq!(add.status, StatusCode::ACCEPTED, "{}", add.body);
    run_as_stored_before(&app, &add.body, "pool-add", Some(with_compute_class)).await;
}

/// One stored operation as the code that queued it wrote it: its type, target, input,
/// plan and steps, with the values a run makes up (the cluster's id, the pools' ids)
/// replaced by placeholders (`{{cluster}}`, `{{pool:N}}`), so that one captured run
/// stands for any later one.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct StoredRow {
    op_type: String,
    target: String,
    input: Value,
    plan: Option<Value>,
    steps: Value,
}

/// The values a run makes up, in order of first appearance in the operation's input:
/// the cluster id, then every pool id.
fn made_up(input: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    if let Some(id) = input["clusterId"].as_str() {
        out.push(("{{cluster}}".into(), id.to_owned()));
    }
    let mut pools: Vec<String> = Vec::new();
    let mut note = |p: Option<&str>| {
        if let Some(p) = p
            && !pools.iter().any(|q| q == p)
        {
            pools.push(p.to_owned());
        }
    };
    for p in input["pools"].as_array().into_iter().flatten() {
        note(p.as_str());
    }
    let req = &input["request"];
    for p in req["pools"].as_array().into_iter().flatten() {
        note(p["poolId"].as_str());
    }
    note(req["spotPool"].as_str());
    note(req["fallbackPool"].as_str());
    for (i, p) in pools.into_iter().enumerate() {
        out.push((format!("{{{{pool:{i}}}}}"), p));
    }
    out
}

/// `text` with every `(placeholder, value)` applied one way or the other.
fn substitute(text: &str, pairs: &[(String, String)], to_placeholder: bool) -> String {
    pairs.iter().fold(text.to_owned(), |t, (ph, v)| {
        if to_placeholder {
            t.replace(v.as_str(), ph)
        } else {
            t.replace(ph.as_str(), v)
        }
    })
}

/// The queued operation `op` as stored now.
async fn row_of(app: &TestApp, op: &Value) -> StoredRow {
    let (op_type, target, input, plan, steps): (String, String, Value, Option<Value>, Value) =
        sqlx::query_as(
            "SELECT op_type, target, input, plan, steps::jsonb FROM operations WHERE id = $1",
        )
        .bind(op_id(op))
        .fetch_one(&app.db)
        .await
        .expect("operation row");
    let plan = plan.map(without_policy);
    StoredRow {
        op_type,
        target,
        input,
        plan,
        steps,
    }
}

/// Check the queued `op` stores what the old code stored for it (the fixture
/// `kinds/{name}.json`, or write that fixture when `KINETIC_CAPTURE_STORED_OPERATIONS`
/// is set), put the old row in verbatim, and run it to SUCCEEDED.
async fn old_row_runs(app: &TestApp, op: &Value, name: &str) -> Value {
    let now = row_of(app, op).await;
    let pairs = made_up(&now.input);
    let file = format!("{FIXTURES}/kinds/{name}.json");
    if std::env::var_os("KINETIC_CAPTURE_STORED_OPERATIONS").is_some() {
        let text = serde_json::to_string_pretty(&now).expect("row JSON");
        std::fs::create_dir_all(format!("{FIXTURES}/kinds")).expect("fixture dir");
        std::fs::write(&file, substitute(&text, &pairs, true) + "\n").expect("write fixture");
    }
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let old: StoredRow =
        serde_json::from_str(&substitute(&text, &pairs, false)).expect("fixture row");
    assert_eq!(now, old, "{name}: stored as the old code stored it");
    let updated = sqlx::query(
        "UPDATE operations SET input = $2, plan = $3, steps = $4::json WHERE id = $1 AND state = 'QUEUED'",
    )
    .bind(op_id(op))
    .bind(&old.input)
    .bind(&old.plan)
    .bind(old.steps.to_string())
    .execute(&app.db)
    .await
    .expect("store the old operation");
    runs_to_success(app, op, name, updated).await
}

/// Accepted (202): the operation.
fn accepted(r: crate::common::Resp) -> Value {
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    r.body
}

/// Every kind of operation, queued by the code before operation kinds were types
/// (fixtures `tests/fixtures/stored_operations/kinds/`, captured from commit 6b02ebd),
/// is stored the same way now and runs to the end: UP_CLUSTER, ADD_NODE_POOL (a
/// failover pair), UPDATE_NODE_POOL, FAILOVER_DRILL, REMOVE_NODE_POOL, DOWN_CLUSTER and
/// NOOP.
#[tokio::test]
async fn every_kind_stored_by_the_old_code_runs_to_the_end() {
    let (app, _sim) = TestApp::spawn_sim().await;
    app.team(OWNER, "ml-team", &[PROJECT]).await;
    let path = cluster_path("kinds");
    let up = accepted(app.put(OWNER, &path, json!({"accelerator": "cpu"})).await);
    old_row_runs(&app, &up, "up").await;
    let add = app
        .post(
            OWNER,
            &format!("{path}/nodePools"),
            json!({"accelerator": "l4", "failover": true, "minNodes": 1}),
        )
        .await;
    let add = accepted(add);
    old_row_runs(&app, &add, "pool-add").await;
    let pools = app.get(OWNER, &format!("{path}/nodePools")).await.body;
    let spot = spot_pool(&pools);
    let pool_path = format!("{path}/nodePools/{spot}");
    let resize = app
        .patch(
            OWNER,
            &format!("{pool_path}?updateMask=minNodes,maxNodes"),
            json!({"minNodes": 0, "maxNodes": 5}),
        )
        .await;
    old_row_runs(&app, &accepted(resize), "resize").await;
    let drill = app
        .post(
            OWNER,
            &format!("{pool_path}:drill"),
            json!({"deadline": "1s"}),
        )
        .await;
    old_row_runs(&app, &accepted(drill), "drill").await;
    let remove = accepted(app.delete(OWNER, &pool_path).await);
    old_row_runs(&app, &remove, "pool-remove").await;
    let down = accepted(app.delete(OWNER, &path).await);
    old_row_runs(&app, &down, "down").await;
    let noop = app
        .post(
            OWNER,
            "/v1/testing/noopOperations",
            json!({"team": "ml-team", "target": "noop/kinds", "steps": 3, "failRetryable": {"1": 1}}),
        )
        .await;
    old_row_runs(&app, &accepted(noop), "noop").await;
}
