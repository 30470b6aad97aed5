//! Operation engine tests: real PostgreSQL, real HTTP, the in-process worker pool.

#[path = "../common/mod.rs"]
mod common;

mod cancel;
mod corrupt;
mod idempotency;
mod kept_renderings;
mod lease;
mod ordering;
mod retention;
mod retry;
mod waiting;

use kineticd::ops::WorkerPool;
use serde_json::{Value, json};

use common::TestApp;

pub const USER: &str = "ops@example.com";
pub const TEAM: &str = "engine-team";

/// An app with a team `TEAM` owned by `USER`.
pub async fn app_with_team() -> TestApp {
    let app = TestApp::spawn().await;
    app.team(USER, TEAM, &["engine-project"]).await;
    app
}

/// [`app_with_team`] with one worker running.
pub async fn app_with_worker() -> (TestApp, WorkerPool) {
    let app = app_with_team().await;
    let pool = app.workers(common::test_worker_config(1));
    (app, pool)
}

pub fn noop(steps: u32, extra: Value) -> Value {
    let mut v = json!({"team": TEAM, "steps": steps});
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        for (k, val) in e {
            o.insert(k.clone(), val.clone());
        }
    }
    v
}

pub fn op_id(op: &Value) -> String {
    op["name"]
        .as_str()
        .and_then(|n| n.strip_prefix("operations/"))
        .expect("operation name")
        .to_owned()
}
